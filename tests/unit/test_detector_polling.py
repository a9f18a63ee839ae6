"""The detector's poll (issue 17): one listing shared with the hold watchdog, one hand-off to a
thread whatever the number of jobs, a job Slurm lists unchanged and whose rules can find nothing
costs no read of its output, and jobs that left Slurm are forgotten. Slurm and Temporal are
stand-ins; the job output files and the audit trail are real."""

import asyncio
import dataclasses
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from respawn.audit.trail import EventType
from respawn.config.cluster import ClusterConfig
from respawn.detection import detector as detector_module
from respawn.detection.detector import Detector
from respawn.launcher import channel
from respawn.launcher.channel import Status, StepState
from respawn.sandbox.polling import until
from respawn.scheduler.slurm import JobInfo, NodeInfo
from respawn.services import build_services

ENROLLED = '{"respawn":{"environment":"demo","mode":"action"}}'
FAILURE = "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error"


class ListingSlurm:
    """Slurm's listing as the test sets it; counts the listings and the one-job reads."""

    transport = None  # no node-side probe of stalled tasks

    def __init__(self) -> None:
        self.listing: list[JobInfo] = []
        self.listings = 0
        self.reads = 0

    async def jobs(self) -> list[JobInfo]:
        self.listings += 1
        return list(self.listing)

    async def job(self, job_id: int) -> JobInfo:
        self.reads += 1
        return next(j for j in self.listing if j.job_id == job_id)

    async def nodes(self) -> list[NodeInfo]:
        return [NodeInfo(name=f"node{i}", state="allocated") for i in range(1, 5)]


class Temporal:
    def __init__(self) -> None:
        self.started: list[str] = []

    async def start_workflow(self, *args, id: str, **kwargs):
        self.started.append(id)


@pytest.fixture
def polled(tmp_path: Path) -> tuple[Detector, ListingSlurm, Temporal, Path]:
    config = ClusterConfig.model_validate(
        {
            "cluster": "c1",
            "environments": {"demo": {"max_mode": "action"}},
            "logs": {"job_output": str(tmp_path / "slurm-{job_id}.out")},
            "audit_db": str(tmp_path / "audit.db"),
        }
    )
    slurm, temporal = ListingSlurm(), Temporal()
    services = dataclasses.replace(build_services(config), slurm=slurm)  # type: ignore[arg-type]
    return Detector(services, temporal), slurm, temporal, tmp_path  # type: ignore[arg-type]


def _job(job_id: int, state: str, **fields) -> JobInfo:
    now = datetime.now(UTC)
    started = {"start_time": now, "nodes": ["node1"]} if state != "PENDING" else {}
    ended = {"end_time": now} if state not in ("RUNNING", "PENDING") else {}
    return JobInfo(
        job_id=job_id,
        state=state,
        comment=ENROLLED,
        submit_time=now - timedelta(seconds=5),
        **started,
        **ended,
        **fields,
    )


async def test_an_ended_job_listed_unchanged_is_not_read_again(polled) -> None:
    detector, slurm, temporal, folder = polled
    done = _job(1, "COMPLETED")
    slurm.listing = [done]
    assert await detector.poll_once() == []
    assert [r.event_type for r in detector._s.audit.query(job_id=1)] == [EventType.ENROLLED, EventType.JOB_COMPLETED]
    offset = detector.watches[1].log_offset
    (folder / "slurm-1.out").write_text(FAILURE + "\n")  # after its end: no news, and not read
    for _ in range(3):
        slurm.listing = [done.model_copy()]  # an equal record, as a new listing prints it
        assert await detector.poll_once() == []
    assert detector.watches[1].log_offset == offset and temporal.started == []


async def test_a_running_job_is_read_every_poll_and_its_failure_signalled_once(polled) -> None:
    detector, slurm, temporal, folder = polled
    running = _job(2, "RUNNING")
    slurm.listing = [running]
    await detector.poll_once()
    (folder / "slurm-2.out").write_text(FAILURE + "\n")
    found = await detector.poll_once()
    assert [d.kind.value for d in found] == ["log_line"] and len(temporal.started) == 1
    assert await detector.poll_once() == [] and len(temporal.started) == 1


async def test_a_pending_job_that_never_ran_is_read_when_it_starts(polled) -> None:
    detector, slurm, _, folder = polled
    pending = _job(3, "PENDING")
    slurm.listing = [pending]
    await detector.poll_once()
    await detector.poll_once()
    assert detector.watches[3].log_offset == 0
    slurm.listing = [_job(3, "RUNNING")]
    (folder / "slurm-3.out").write_text(FAILURE + "\n")
    assert [d.kind.value for d in await detector.poll_once()] == ["log_line"]


async def test_jobs_that_left_slurm_are_forgotten_once_missing_a_while(polled, monkeypatch) -> None:
    detector, slurm, _, _ = polled
    clock = [1000.0]
    monkeypatch.setattr(detector_module.time, "monotonic", lambda: clock[0])
    slurm.listing = [_job(i, "PENDING") for i in range(1, 6)]
    await detector.poll_once()
    assert set(detector.watches) == {1, 2, 3, 4, 5}
    whole, slurm.listing = slurm.listing, slurm.listing[3:]
    await detector.poll_once()
    assert set(detector.watches) == {1, 2, 3, 4, 5}  # one listing without them: kept (a requeue's)
    slurm.listing = whole[2:]  # job 3 is back
    clock[0] += 61
    await detector.poll_once()
    clock[0] += 1
    await detector.poll_once()
    assert set(detector.watches) == {3, 4, 5}


async def test_one_thread_hand_off_per_poll_whatever_the_number_of_jobs(polled, monkeypatch) -> None:
    detector, slurm, _, _ = polled
    hand_offs = 0
    to_thread = asyncio.to_thread

    async def counting(func, /, *args, **kwargs):
        nonlocal hand_offs
        hand_offs += 1
        return await to_thread(func, *args, **kwargs)

    monkeypatch.setattr(detector_module.asyncio, "to_thread", counting)
    for count in (10, 300):
        slurm.listing = [_job(i, "RUNNING") for i in range(1, count + 1)]
        hand_offs = 0
        await detector.poll_once()
        assert hand_offs == 2  # the kernel logs, and every job


async def test_the_watchdog_uses_the_polls_listing(polled) -> None:
    detector, slurm, _, _ = polled
    slurm.listing = [_job(1, "RUNNING")]
    await detector.poll_once()
    await detector.check_holds()
    await detector.check_holds()
    assert slurm.listings == 1 and slurm.reads == 0


async def test_a_launched_jobs_detections_say_so_and_a_planted_channel_is_only_a_plain_job(polled) -> None:
    """The incident's settle ends on the launcher's word only for a job whose channel has a
    status (docs/launcher.md, "Settle"); the channel is the job's own, so what is planted in it
    costs the job that shorter settle and nothing else."""
    detector, slurm, _, folder = polled
    slurm.listing = [_job(3, "RUNNING"), _job(4, "RUNNING"), _job(5, "RUNNING")]
    await detector.poll_once()
    launched = channel.channel_dir(folder / "slurm-3.out", 3)
    channel.create_channel(launched)
    status = Status(
        job_id=3, state=StepState.FAILED, step_nodes=["node1"], spares=[], excluded=[], updated_at=channel.now()
    )
    channel.write_status(launched, status)
    planted = channel.channel_dir(folder / "slurm-4.out", 4)
    planted.symlink_to(launched)  # a link to another job's channel is no channel
    for job_id in (3, 4, 5):
        (folder / f"slurm-{job_id}.out").write_text(FAILURE + "\n")
    found = {d.job_id: d.launched for d in await detector.poll_once()}
    assert found == {3: True, 4: False, 5: False}


class HeldTemporal:
    """Holds the starts of job `held`'s incidents until `release` is set, as a loaded server
    answers late; records each start's job and detection."""

    def __init__(self, held: int) -> None:
        self.held, self.release = held, asyncio.Event()
        self.asked: list[int] = []
        self.started: list[tuple[int, str]] = []

    async def start_workflow(self, *args, start_signal_args, **kwargs):
        detection = start_signal_args[0]
        self.asked.append(detection.job_id)
        if detection.job_id == self.held:
            await self.release.wait()
        self.started.append((detection.job_id, detection.kind.value))


async def test_a_start_temporal_answers_late_holds_no_other_jobs_detection(polled) -> None:
    detector, slurm, _, folder = polled
    temporal = HeldTemporal(held=1)
    detector._client = temporal  # type: ignore[assignment]
    slurm.listing = [_job(1, "RUNNING")]
    stop = asyncio.Event()
    running = asyncio.create_task(detector.run(stop))
    try:
        await until(lambda: 1 in detector.watches, 10, "job 1 watched", interval=0.01)
        (folder / "slurm-1.out").write_text(FAILURE + "\n")
        await until(lambda: 1 in temporal.asked, 10, "job 1's failure line sent", interval=0.01)
        # Job 1 ends while its first start waits on Temporal; job 2 fails.
        slurm.listing = [_job(1, "FAILED"), _job(2, "FAILED")]
        await until(lambda: (2, "job_ended") in temporal.started, 10, "job 2's incident started", interval=0.01)
        assert temporal.started == [(2, "job_ended")]  # job 1's end waits behind its line
        temporal.release.set()
        await until(lambda: len(temporal.started) == 3, 10, "job 1's detections delivered", interval=0.01)
    finally:
        stop.set()
        temporal.release.set()
        await running
    assert temporal.started[1:] == [(1, "log_line"), (1, "job_ended")]  # in the order they were made
    assert detector._delivering == {}


async def test_a_stopping_detector_waits_for_its_deliveries_within_a_bound(polled, monkeypatch) -> None:
    """Temporal that never answers does not keep a stopping detector: its delivery is cancelled
    after the bound (the next detector's catch-up finds the job's end again)."""
    detector, slurm, _, _ = polled
    temporal = HeldTemporal(held=3)  # never released
    detector._client = temporal  # type: ignore[assignment]
    monkeypatch.setattr(detector_module, "_DRAIN_S", 0.2)
    slurm.listing = [_job(3, "FAILED")]
    stop = asyncio.Event()
    running = asyncio.create_task(detector.run(stop))
    await until(lambda: 3 in temporal.asked, 10, "job 3's start asked", interval=0.01)
    stop.set()
    await asyncio.wait_for(running, timeout=10)
    assert temporal.started == [] and detector._delivering == {}  # ended when the detector did, not later
