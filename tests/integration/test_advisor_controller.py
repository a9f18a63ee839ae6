"""Both ends of a piece of advice without the sandbox: the reference controller against
the Advisor API (in process) and a scripted Slurm, and the worker's activities that
publish advice and wait for its reconciliation."""

import os
from datetime import UTC, datetime

import httpx
import pytest
from temporalio.testing import ActivityEnvironment

from respawn.activities.advice import AdviceActivities
from respawn.advisor.advice import AdviceRef, AdviceRequest, AdviceStore, Desired, Status
from respawn.advisor.controller import Controller
from respawn.audit.trail import EventType
from respawn.scheduler.errors import JobNotFound
from respawn.scheduler.slurm import JobInfo, NodeInfo
from respawn.services import build_services
from respawn.surfaces.server.app import create_app
from tests.integration.test_advisor_api import WRITE, make_config


class ScriptedSlurm:
    """Slurm as the controller sees it: jobs, nodes, and every change made, in order."""

    def __init__(self, *jobs: JobInfo) -> None:
        self.jobs_ = {j.job_id: j for j in jobs}
        self.nodes_ = {n: NodeInfo(name=n, state="idle") for n in ("node1", "node2", "node3", "node4")}
        self.changes: list[str] = []

    async def job(self, job_id: int, exclusions: bool = True) -> JobInfo:
        if job_id not in self.jobs_:
            raise JobNotFound(f"squeue: no job {job_id}")
        return self.jobs_[job_id]

    async def node(self, name: str) -> NodeInfo:
        return self.nodes_[name]

    def _update(self, change: str, job_id: int, **fields) -> None:
        self.changes.append(f"{change} {job_id}")
        self.jobs_[job_id] = self.jobs_[job_id].model_copy(update=fields)

    async def requeue_hold(self, job_id: int) -> None:
        restarts = self.jobs_[job_id].restart_count + 1
        self._update("requeue_hold", job_id, state="PENDING", state_reason="JobHeldAdmin", restart_count=restarts)

    async def hold(self, job_id: int) -> None:
        self._update("hold", job_id, state_reason="JobHeldAdmin")

    async def set_excluded_nodes(self, job_id: int, nodes: list[str]) -> None:
        self._update("exclude", job_id, excluded_nodes=list(nodes))

    async def release(self, job_id: int) -> None:
        self._update("release", job_id, state_reason="None")

    async def start_now(self, job_id: int) -> None:
        self._update("start_now", job_id, state="RUNNING")

    async def cancel(self, job_id: int) -> None:
        self._update("cancel", job_id, state="CANCELLED")

    async def drain(self, node: str, reason: str) -> None:
        self.changes.append(f"drain {node}")
        self.nodes_[node] = self.nodes_[node].model_copy(update={"flags": ["DRAIN"]})


@pytest.fixture
def config(tmp_path):
    return make_config(tmp_path)


@pytest.fixture
def store(config):
    store = AdviceStore(config.audit_db)
    yield store
    store.close()


@pytest.fixture
async def api(config):
    transport = httpx.ASGITransport(app=create_app(config))
    async with httpx.AsyncClient(
        transport=transport, base_url="http://advisor", headers={"Authorization": f"Bearer {WRITE}"}
    ) as client:
        yield client


def advise(store: AdviceStore, job_id: int, desired: Desired, attempt: int = 0, **fields):
    return store.publish(
        AdviceRequest(
            incident_id=f"incident-c1-{job_id}-{attempt}",
            cluster="c1",
            job_id=job_id,
            attempt=attempt,
            desired=desired,
            **fields,
        )
    )


async def test_restart_advice_is_applied_once_and_reported_converged(store, api):
    slurm = ScriptedSlurm(JobInfo(job_id=7, state="FAILED", nodes=["node1", "node2", "node3"]))
    advise(store, 7, Desired.RESTART, exclude=["node2"], drain=["node2"], reason="xid")
    reported = await Controller(slurm, api).reconcile_once()
    assert [(a.job_id, status) for a, status in reported] == [(7, Status.CONVERGED)]
    assert slurm.changes == ["requeue_hold 7", "exclude 7", "release 7", "start_now 7", "drain node2"]
    advice = store.current("c1", 7)
    assert advice.status is Status.CONVERGED and advice.controller == "writer"
    assert "excluded node2" in advice.detail
    assert await Controller(slurm, api).reconcile_once() == [] and len(slurm.changes) == 5  # nothing twice


async def test_a_restart_slurm_already_requeued_is_held_not_requeued_again_then_released(store, api):
    # Slurm's own requeue (a node failure) waits for its BeginTime: held, so it cannot start
    # before its exclusions are in place; requeued no second time.
    job = JobInfo(job_id=8, state="PENDING", state_reason="BeginTime", restart_count=1, excluded_nodes=["node2"])
    slurm = ScriptedSlurm(job)
    advise(store, 8, Desired.RESTART, exclude=["node2"])
    await Controller(slurm, api).reconcile_once()
    assert slurm.changes == ["hold 8", "release 8", "start_now 8"]
    assert store.current("c1", 8).status is Status.CONVERGED


async def test_a_job_still_completing_is_left_pending_until_the_next_poll(store, api):
    slurm = ScriptedSlurm(JobInfo(job_id=9, state="COMPLETING", restart_count=1))
    advise(store, 9, Desired.RESTART, exclude=["node2"])
    assert await Controller(slurm, api).reconcile_once() == []
    assert store.current("c1", 9).status is Status.PENDING and slurm.changes == []


async def test_stop_cancels_what_is_left_and_a_vanished_job_is_abandoned(store, api):
    slurm = ScriptedSlurm(JobInfo(job_id=10, state="PENDING"), JobInfo(job_id=11, state="FAILED"))
    advise(store, 10, Desired.STOP)
    advise(store, 11, Desired.STOP)
    advise(store, 12, Desired.RELEASE)
    reported = {a.job_id: status for a, status in await Controller(slurm, api).reconcile_once()}
    assert reported == {10: Status.CONVERGED, 11: Status.CONVERGED, 12: Status.ABANDONED}
    assert slurm.changes == ["cancel 10"]
    assert "no job 12" in store.current("c1", 12).detail


async def test_only_the_current_generation_is_worked_on(store, api):
    slurm = ScriptedSlurm(JobInfo(job_id=13, state="FAILED"))
    advise(store, 13, Desired.RESTART, exclude=["node2"])
    advise(store, 13, Desired.STOP, attempt=1)  # a later incident of the same job
    reported = await Controller(slurm, api).reconcile_once()
    assert [(a.generation, a.desired) for a, _ in reported] == [(2, Desired.STOP)]
    assert store.get("c1", 13, 1).status is Status.PUBLISHED and slurm.changes == []


@pytest.fixture
def services(config):
    services = build_services(config)
    yield services
    services.audit.close()


@pytest.fixture
def activities(services):
    return AdviceActivities(services)


def ref(advice, timeout_s: float = 60) -> AdviceRef:
    return AdviceRef(
        incident_id=advice.incident_id,
        cluster="c1",
        job_id=advice.job_id,
        attempt=advice.attempt,
        generation=advice.generation,
        timeout_s=timeout_s,
    )


async def test_publishing_twice_is_one_piece_of_advice_recorded_once(services, activities):
    env = ActivityEnvironment()
    req = AdviceRequest(
        incident_id="incident-c1-20-0", cluster="c1", job_id=20, attempt=0, desired=Desired.RESTART, exclude=["node2"]
    )
    first, again = await env.run(activities.publish_advice, req), await env.run(activities.publish_advice, req)
    assert first.generation == again.generation == 1
    rows = services.audit.query(job_id=20, event_types=[EventType.ADVISED])
    assert len(rows) == 1 and rows[0].details["generation"] == 1 and rows[0].nodes == ["node2"]


async def test_reconciliation_ends_converged_superseded_or_timed_out(services, activities, store):
    env = ActivityEnvironment()
    converged = advise(store, 21, Desired.RESTART)
    store.report("c1", 21, 1, Status.CONVERGED, "released", "ctl")
    outcome = await env.run(activities.await_reconciliation, ref(converged))
    assert outcome.converged and outcome.detail == "ctl: converged: released"
    row = services.audit.query(job_id=21, event_types=[EventType.RECONCILED])[0]
    assert row.acted is True and row.details["controller"] == "ctl"

    old = advise(store, 22, Desired.RESTART)
    advise(store, 22, Desired.STOP, attempt=1)
    outcome = await env.run(activities.await_reconciliation, ref(old))
    assert not outcome.converged and outcome.detail == "superseded by generation 2"

    late = advise(store, 23, Desired.RESTART)
    assert late.published_at <= datetime.now(UTC)
    outcome = await env.run(activities.await_reconciliation, ref(late, timeout_s=0.01))
    assert not outcome.converged and "no controller reconciled it" in outcome.detail


# --- `respawn controller` takes its token from a file or $RESPAWN_TOKEN, never the command line. ---


@pytest.fixture
def controller_cli(tmp_path, monkeypatch):
    """`respawn controller` up to the point it would poll: the token it would use, or its exit and stderr."""
    import yaml

    import respawn.workers.controller
    from respawn.surfaces.cli import main

    path = tmp_path / "respawn.yaml"
    path.write_text(yaml.safe_dump(make_config(tmp_path).model_dump(mode="json", exclude_defaults=True)))
    used: list[str] = []

    async def run_controller(config, server, token, interval_s, stop):
        used.append(token)
        assert os.environ.get("RESPAWN_TOKEN") is None  # not handed on to the Slurm commands it runs

    monkeypatch.setattr(respawn.workers.controller, "run_controller", run_controller)
    monkeypatch.delenv("RESPAWN_TOKEN", raising=False)

    def run(*args: str) -> tuple[int, list[str]]:
        try:
            rc = main(["controller", "--config", str(path), "--server", "http://127.0.0.1:9", *args])
        except SystemExit as exc:  # argparse's refusals
            rc = exc.code
        return rc, used

    return run


def token_file(tmp_path, text: str, mode: int = 0o600):
    path = tmp_path / "controller.token"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_controller_token_from_a_file_preferred_to_the_environment(controller_cli, tmp_path, monkeypatch):
    monkeypatch.setenv("RESPAWN_TOKEN", "from-the-environment-0123")
    assert controller_cli("--token-file", str(token_file(tmp_path, WRITE + "\n"))) == (0, [WRITE])
    monkeypatch.setenv("RESPAWN_TOKEN", "from-the-environment-0123")
    assert controller_cli() == (0, [WRITE, "from-the-environment-0123"])


def test_controller_without_a_token_or_with_an_unusable_file_is_one_line(controller_cli, tmp_path, capsys):
    assert controller_cli() == (2, [])
    assert (
        capsys.readouterr().err
        == "respawn controller: give --token-file FILE or set RESPAWN_TOKEN (a token is never taken from the command line)\n"
    )
    assert controller_cli("--token-file", str(tmp_path / "missing.token")) == (2, [])
    assert (
        capsys.readouterr().err
        == f"respawn controller: cannot read token file {tmp_path}/missing.token: No such file or directory\n"
    )
    assert controller_cli("--token-file", str(token_file(tmp_path, "two\nlines\n"))) == (2, [])
    err = capsys.readouterr().err
    assert err.endswith("controller.token: expected one token on one line\n") and "lines" not in err


def test_controller_refuses_a_token_on_the_command_line_without_echoing_it(controller_cli, capsys):
    for args in (["--token", WRITE], [f"--token={WRITE}"], ["--tok", WRITE]):
        rc, used = controller_cli(*args)
        err = capsys.readouterr().err
        assert rc == 2 and used == [] and WRITE not in err and "--token" in err
    assert "--token-file FILE" in err or "ambiguous" in err


def test_controller_warns_of_a_token_file_others_can_read(controller_cli, tmp_path, caplog):
    path = token_file(tmp_path, WRITE, mode=0o644)
    assert controller_cli("--token-file", str(path)) == (0, [WRITE])
    assert f"chmod 600 {path}" in caplog.text and WRITE not in caplog.text
