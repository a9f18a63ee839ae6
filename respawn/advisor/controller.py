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
from collections.abc import Mapping
from pathlib import Path

import httpx

from respawn.advisor.advice import Advice, Desired, Status
from respawn.scheduler import actions
from respawn.scheduler.errors import JobCompleting, JobGone, JobNotFound, SchedulerError
from respawn.scheduler.slurm import Slurm

log = logging.getLogger("respawn.advisor.controller")

_UNREACHABLE_MAX_S = 30.0  # the longest wait between tries while the Advisor API does not answer


class NotYet(Exception):
    """Slurm is between states (a requeued job still completing): try again at the next poll."""


class Abandon(Exception):
    """The advice cannot be carried out; the message says why."""


class Controller:
    def __init__(self, slurm: Slurm, api: httpx.AsyncClient) -> None:
        self._slurm, self._api = slurm, api

    async def run(self, stop: asyncio.Event, interval_s: float) -> None:
        wait = interval_s
        while not stop.is_set():
            try:
                await self.reconcile_once()
            except httpx.HTTPError as exc:
                # A server down for an hour was a warning a second: back off, doubling to 30 s.
                wait = min(2 * wait, max(interval_s, _UNREACHABLE_MAX_S))
                log.warning("Advisor API unreachable (%s); trying again in %g s", exc, wait)
            else:
                if wait != interval_s:
                    log.info("Advisor API answers again")
                wait = interval_s
            try:
                await asyncio.wait_for(stop.wait(), timeout=wait)
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
                log.warning(
                    "job %s generation %s: Slurm unavailable, trying again: %s", advice.job_id, advice.generation, exc
                )
                return None
            detail, status = f"{type(exc).__name__}: {exc}", Status.ABANDONED
        except Abandon as exc:
            detail, status = str(exc), Status.ABANDONED
        else:
            status = Status.CONVERGED
        return status if await self._report(advice, status, detail) else None

    async def _report(self, advice: Advice, status: Status, detail: str) -> bool:
        """False when the API refuses it as stale or final: newer advice replaced this one."""
        answer = await self._api.post(
            f"/api/v1/jobs/{advice.job_id}/advice/{advice.generation}/status",
            json={"status": status.value, "detail": detail[:1000]},
        )
        if answer.status_code == 409:
            log.info("job %s generation %s: %s", advice.job_id, advice.generation, answer.json().get("detail"))
            return False
        answer.raise_for_status()
        log.info(
            "job %s generation %s (%s): %s: %s",
            advice.job_id,
            advice.generation,
            advice.desired.value,
            status.value,
            detail,
        )
        return True

    async def _apply(self, advice: Advice) -> str:
        try:
            return await self._carry_out(advice)
        except JobCompleting as exc:
            raise NotYet(str(exc)) from None
        except JobGone as exc:
            raise Abandon(f"job {advice.job_id}: {exc}: nothing left to restart") from None

    async def _carry_out(self, advice: Advice) -> str:
        try:
            job = await self._slurm.job(advice.job_id)
        except JobNotFound:
            if advice.desired is Desired.STOP:
                return "the job is gone"
            raise Abandon(f"Slurm knows no job {advice.job_id}") from None
        if advice.desired is Desired.STOP:
            return (await actions.cancel(self._slurm, job)).detail
        if advice.desired is Desired.RELEASE:
            return (await actions.release(self._slurm, job.job_id)).detail
        return await self._restart(advice)

    async def _restart(self, advice: Advice) -> str:
        """Hold, exclude, release and drain, as the worker's activities would, each only if needed."""
        done = [await actions.hold(self._slurm, advice.job_id, advice.attempt)]
        job = await self._slurm.job(advice.job_id)
        if job.state == "PENDING" or job.completing:
            done.append(await actions.exclude(self._slurm, advice.job_id, advice.exclude))
            done.append(await actions.release(self._slurm, advice.job_id))
        else:
            done.append(actions.Outcome(False, f"attempt {job.restart_count} already {job.state}"))
        drained = await actions.drain(self._slurm, advice.drain, f"respawn {advice.incident_id}: {advice.reason}")
        changed = [o.detail for o in done if o.changed] + [f"drained {node}" for node in drained]
        return "; ".join(changed) or "already in the desired state"


TOKEN_ENV = "RESPAWN_TOKEN"


class TokenError(ValueError):
    """No usable token for the controller; the message is one line and never holds the token."""


def controller_token(token_file: Path | None, environ: Mapping[str, str]) -> str:
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
