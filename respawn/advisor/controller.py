"""`respawn controller`: the reference controller for the advisor transport.

It polls the Advisor API for open advice, brings Slurm to the desired state and
reports back: pending when it starts on a generation, converged once Slurm is
there, abandoned when it cannot be done. Every step reads the job first and
changes only what differs, so applying the same advice twice (a restart of the
controller, a lost report) changes nothing twice: like the worker's scheduler
activities, the restart count witnesses a requeue. A cluster's own controller
implements the same contract (docs/advisor-api.md); this one is what the tests use.
"""

import asyncio
import logging
import os
from pathlib import Path

import httpx

from respawn.advisor.advice import Advice, Desired, Status
from respawn.config.cluster import ClusterConfig
from respawn.scheduler.errors import JobNotFound, JobPending, SchedulerError
from respawn.scheduler.slurm import JobInfo, Slurm
from respawn.scheduler.states import ENDED, REQUEUED_BY_SLURM
from respawn.scheduler.transport import LocalTransport

log = logging.getLogger("respawn.advisor.controller")

_HELD_REASONS = {"jobhelduser", "jobheldadmin"}
# States a job does not leave by itself: a stopped job in one of them is already where it should be.
_STAYS_ENDED = ENDED - REQUEUED_BY_SLURM


class NotYet(Exception):
    """Slurm is between states (a requeued job still completing): try again at the next poll."""


class Abandon(Exception):
    """The advice cannot be carried out; the message says why."""


class Controller:
    def __init__(self, slurm: Slurm, api: httpx.AsyncClient) -> None:
        self._slurm, self._api = slurm, api

    async def run(self, stop: asyncio.Event, interval_s: float) -> None:
        while not stop.is_set():
            try:
                await self.reconcile_once()
            except httpx.HTTPError as exc:
                log.warning("Advisor API unreachable, trying again: %s", exc)
            try:
                await asyncio.wait_for(stop.wait(), timeout=interval_s)
            except TimeoutError:
                pass

    async def reconcile_once(self) -> list[tuple[Advice, Status]]:
        """Work on every open piece of advice once; what was reported for each."""
        reported = []
        for advice in await self._open_advice():
            status = await self._reconcile(advice)
            if status is not None:
                reported.append((advice, status))
        return reported

    async def _open_advice(self) -> list[Advice]:
        found, cursor = [], 0
        while cursor is not None:
            page = await self._api.get("/api/v1/advice", params={"open": "true", "after_job": cursor})
            page.raise_for_status()
            body = page.json()
            found += [Advice.model_validate(a) for a in body["advice"]]
            cursor = body["next_cursor"]
        return found

    async def _reconcile(self, advice: Advice) -> Status | None:
        if advice.status is Status.PUBLISHED and not await self._report(advice, Status.PENDING, "working on it"):
            return None
        try:
            detail = await self._apply(advice)
        except NotYet as exc:
            log.info("job %s generation %s: not yet (%s)", advice.job_id, advice.generation, exc)
            return None
        except SchedulerError as exc:
            if exc.retryable:
                log.warning("job %s generation %s: Slurm unavailable, trying again: %s",
                            advice.job_id, advice.generation, exc)
                return None
            detail, status = f"{type(exc).__name__}: {exc}", Status.ABANDONED
        except Abandon as exc:
            detail, status = str(exc), Status.ABANDONED
        else:
            status = Status.CONVERGED
        return status if await self._report(advice, status, detail) else None

    async def _report(self, advice: Advice, status: Status, detail: str) -> bool:
        """False when the API refuses it as stale or final: newer advice replaced this one."""
        answer = await self._api.post(f"/api/v1/jobs/{advice.job_id}/advice/{advice.generation}/status",
                                      json={"status": status.value, "detail": detail[:1000]})
        if answer.status_code == 409:
            log.info("job %s generation %s: %s", advice.job_id, advice.generation, answer.json().get("detail"))
            return False
        answer.raise_for_status()
        log.info("job %s generation %s (%s): %s: %s", advice.job_id, advice.generation, advice.desired.value,
                 status.value, detail)
        return True

    async def _apply(self, advice: Advice) -> str:
        try:
            job = await self._slurm.job(advice.job_id)
        except JobNotFound:
            if advice.desired is Desired.STOP:
                return "the job is gone"
            raise Abandon(f"Slurm knows no job {advice.job_id}") from None
        if advice.desired is Desired.STOP:
            return await self._stop(job)
        if advice.desired is Desired.RELEASE:
            return await self._release(job)
        return await self._restart(job, advice)

    async def _restart(self, job: JobInfo, advice: Advice) -> str:
        done = []
        if job.restart_count <= advice.attempt and job.state != "PENDING":
            if job.state in ("COMPLETED", "CANCELLED"):
                raise Abandon(f"job {job.job_id} is {job.state}: nothing left to restart")
            try:
                await self._slurm.requeue_hold(job.job_id)
                done.append("requeued held")
            except JobPending:
                pass  # Slurm requeued it itself meanwhile (a node failure)
            job = await self._slurm.job(job.job_id)
        if job.completing:  # 22.05: COMPLETING; 24.11: PENDING + the COMPLETING flag
            raise NotYet(f"job {job.job_id} is still completing")
        if job.state == "PENDING":
            if sorted(job.excluded_nodes) != sorted(advice.exclude):
                await self._slurm.set_excluded_nodes(job.job_id, advice.exclude)
                done.append(f"excluded {','.join(advice.exclude) or 'none'}")
            done.append(await self._release(job))
        elif job.restart_count > advice.attempt:
            done.append(f"attempt {job.restart_count} already {job.state}")
        for node in advice.drain:
            info = await self._slurm.node(node)
            if "DRAIN" not in info.flags and not info.state.startswith("drain"):
                await self._slurm.drain(node, f"respawn {advice.incident_id}: {advice.reason}"[:200])
                done.append(f"drained {node}")
        return "; ".join(done) or "already in the desired state"

    async def _release(self, job: JobInfo) -> str:
        if job.state != "PENDING":
            return f"already {job.state}"
        if job.state_reason.lower() in _HELD_REASONS:
            await self._slurm.release(job.job_id)
        await self._slurm.start_now(job.job_id)  # skip the back-off that follows a requeue
        return "released"

    async def _stop(self, job: JobInfo) -> str:
        if job.state in _STAYS_ENDED:
            return f"already {job.state}"
        await self._slurm.cancel(job.job_id)
        return f"cancelled ({job.state})"


TOKEN_ENV = "RESPAWN_TOKEN"


class TokenError(ValueError):
    """No usable token for the controller; the message is one line and never holds the token."""


def controller_token(token_file: Path | None, environ: dict[str, str]) -> str:
    """The controller's bearer token: from `token_file` when given, else from $RESPAWN_TOKEN.

    Never from the command line, where every user of the host reads it (`ps`,
    /proc/PID/cmdline) and shell history keeps it."""
    if token_file is not None:
        try:
            token = token_file.read_text().strip()
        except OSError as exc:
            raise TokenError(f"cannot read token file {token_file}: {exc.strerror}") from None
        try:
            if token_file.stat().st_mode & 0o077:
                log.warning("token file %s is open to group or others: chmod 600 %s", token_file, token_file)
        except OSError:
            pass
        where = f"token file {token_file}"
    elif environ.get(TOKEN_ENV):
        token, where = environ[TOKEN_ENV].strip(), f"${TOKEN_ENV}"
    else:
        raise TokenError(f"give --token-file FILE or set {TOKEN_ENV} (a token is never taken from the command line)")
    if not token or any(c.isspace() for c in token):
        raise TokenError(f"{where}: expected one token on one line")
    return token


def controller_slurm(config: ClusterConfig) -> Slurm:
    """Slurm through local commands: a controller runs where scheduler credentials are."""
    env = dict(os.environ)
    if config.scheduler.slurm_conf is not None:
        env["SLURM_CONF"] = str(config.scheduler.slurm_conf)
    return Slurm(LocalTransport(env=env, bin_dir=config.scheduler.slurm_bin_dir),
                 timeout=config.scheduler.command_timeout_s)


async def run_controller(config: ClusterConfig, server: str, token: str, interval_s: float,
                         stop: asyncio.Event) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    slurm = controller_slurm(config)
    try:
        async with httpx.AsyncClient(base_url=server, headers=headers, timeout=10.0) as api:
            await Controller(slurm, api).run(stop, interval_s)
    finally:
        await slurm.transport.close()
