"""The hold watchdog against a real audit trail and a recording stand-in for Slurm."""

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from respawn.audit.trail import AuditEvent, AuditTrail, EventType
from respawn.config.cluster import ClusterConfig
from respawn.detection.watchdog import REQUEUE_HELD, Watchdog
from respawn.scheduler.errors import SchedulerUnavailable
from respawn.scheduler.slurm import JobInfo

CLUSTER = "c1"
INCIDENT = "incident-c1-7-0"


class FakeSlurm:
    """Records the changes asked of it; `failures` makes the next releases fail; `current` is
    the job as a read of it finds it (None: as the listing has it)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []
        self.failures = 0
        self.current: JobInfo | None = None
        self.reads = 0

    async def job(self, job_id: int) -> JobInfo:
        self.reads += 1
        return self.current or _job()

    async def release(self, job_id: int) -> None:
        if self.failures:
            self.failures -= 1
            raise SchedulerUnavailable("scontrol release: Unable to contact slurm controller")
        self.calls.append(("release", job_id))

    async def start_now(self, job_id: int) -> None:
        self.calls.append(("start_now", job_id))


def _config(tmp_path: Path, timeout: float) -> ClusterConfig:
    return ClusterConfig.model_validate(
        {
            "cluster": CLUSTER,
            "environments": {"e": {"max_mode": "action"}},
            "logs": {"job_output": str(tmp_path / "{job_id}.out")},
            "audit_db": str(tmp_path / "audit.db"),
            "watchdog": {"hold_timeout_s": timeout},
        }
    )


@pytest.fixture
def audit(tmp_path: Path) -> Iterator[AuditTrail]:
    trail = AuditTrail(tmp_path / "audit.db")
    yield trail
    trail.close()


def _record(
    audit: AuditTrail,
    event: EventType,
    *,
    ago_s: float = 0.0,
    acted: bool = True,
    incident: str = INCIDENT,
    attempt: int = 0,
) -> None:
    audit.record(
        AuditEvent(
            key=f"{incident}/{event.value}",
            event_type=event,
            cluster=CLUSTER,
            job_id=7,
            attempt=attempt,
            incident_id=incident,
            acted=acted,
            at=datetime.now(UTC) - timedelta(seconds=ago_s),
        )
    )


def _job(
    *, reason: str = "JobHeldUser", description: str = REQUEUE_HELD, restarts: int = 1, state: str = "PENDING"
) -> JobInfo:
    return JobInfo(job_id=7, state=state, state_reason=reason, state_description=description, restart_count=restarts)


def _watchdog(tmp_path: Path, audit: AuditTrail, slurm: FakeSlurm, timeout: float = 10.0) -> Watchdog:
    return Watchdog(_config(tmp_path, timeout), slurm, audit)  # type: ignore[arg-type]


def _rows(audit: AuditTrail) -> list[EventType]:
    return [r.event_type for r in audit.query(event_types=[EventType.WATCHDOG_RELEASED])]


async def test_a_hold_past_the_timeout_is_released_once_and_recorded(tmp_path, audit):
    slurm = FakeSlurm()
    _record(audit, EventType.DECIDED, ago_s=30)
    _record(audit, EventType.HELD, ago_s=30)
    watchdog = _watchdog(tmp_path, audit, slurm)

    released = await watchdog.check([_job()])

    assert [(r.incident_id, r.job_id) for r in released] == [(INCIDENT, 7)]
    assert released[0].held_for_s >= 30
    assert slurm.calls == [("release", 7), ("start_now", 7)]
    row = audit.query(event_types=[EventType.WATCHDOG_RELEASED])[0]
    assert row.key == f"{INCIDENT}/watchdog_released" and row.incident_id == INCIDENT and row.acted is True
    # Slurm has not caught up yet and still shows the hold: nothing happens twice,
    # neither in this watchdog nor in one started after a detector restart.
    assert await watchdog.check([_job()]) == []
    assert await _watchdog(tmp_path, audit, slurm).check([_job()]) == []
    assert slurm.calls == [("release", 7), ("start_now", 7)] and _rows(audit) == [EventType.WATCHDOG_RELEASED]


async def test_a_hold_within_the_timeout_is_left_to_the_incident(tmp_path, audit):
    slurm = FakeSlurm()
    _record(audit, EventType.DECIDED, ago_s=3)
    _record(audit, EventType.HELD, ago_s=3)
    assert await _watchdog(tmp_path, audit, slurm).check([_job()]) == []
    assert slurm.calls == []


async def test_without_a_held_row_the_clock_starts_when_the_watchdog_sees_the_hold(tmp_path, audit):
    # A worker killed inside the requeue leaves the decision but no `held` row.
    slurm = FakeSlurm()
    _record(audit, EventType.DECIDED, ago_s=3600)
    watchdog = _watchdog(tmp_path, audit, slurm, timeout=1e-6)
    assert await watchdog.check([_job()]) == []  # first sight: held for 0 s
    assert [r.job_id for r in await watchdog.check([_job()])] == [7]


@pytest.mark.parametrize(
    "job",
    [
        _job(reason="JobHeldAdmin", description=""),  # `scontrol hold` by an admin
        _job(reason="JobHeldUser", description=""),  # `scontrol uhold` by the owner
        _job(restarts=2),  # the hold of a later attempt, not this incident's
        _job(state="RUNNING", reason="None", description=""),  # released by someone else
    ],
    ids=["admin-hold", "user-hold", "other-attempt", "running"],
)
async def test_a_job_not_in_this_incidents_requeue_hold_is_never_touched(tmp_path, audit, job):
    slurm = FakeSlurm()
    _record(audit, EventType.DECIDED, ago_s=3600)
    _record(audit, EventType.HELD, ago_s=3600)
    assert await _watchdog(tmp_path, audit, slurm).check([job]) == []
    assert slurm.calls == [] and _rows(audit) == []


@pytest.mark.parametrize("closing", [EventType.RELEASED, EventType.STOPPED, EventType.INCIDENT_CLOSED])
async def test_an_incident_that_released_stopped_or_closed_is_not_watched(tmp_path, audit, closing):
    slurm = FakeSlurm()
    _record(audit, EventType.DECIDED, ago_s=3600)
    _record(audit, EventType.HELD, ago_s=3600)
    _record(audit, closing, ago_s=3500)
    assert await _watchdog(tmp_path, audit, slurm).check([_job()]) == []
    assert slurm.calls == []


async def test_no_decision_to_act_means_no_watch(tmp_path, audit):
    slurm = FakeSlurm()
    _record(audit, EventType.DECIDED, ago_s=3600, acted=False)  # observe mode: a recommendation
    _record(audit, EventType.HELD, ago_s=3600, incident="incident-c1-7-9")  # no decision at all
    assert await _watchdog(tmp_path, audit, slurm).check([_job()]) == []
    assert slurm.calls == []


async def test_an_operators_override_to_act_is_watched_like_a_decision(tmp_path, audit):
    slurm = FakeSlurm()
    _record(audit, EventType.DECIDED, ago_s=60, acted=False)  # observe mode...
    _record(audit, EventType.OVERRIDE, ago_s=60)  # ...and an operator said restart
    _record(audit, EventType.HELD, ago_s=60)
    assert len(await _watchdog(tmp_path, audit, slurm).check([_job()])) == 1


async def test_a_failed_release_is_tried_again_and_recorded_only_once_done(tmp_path, audit):
    slurm = FakeSlurm()
    slurm.failures = 1
    _record(audit, EventType.DECIDED, ago_s=60)
    _record(audit, EventType.HELD, ago_s=60)
    watchdog = _watchdog(tmp_path, audit, slurm)
    assert await watchdog.check([_job()]) == []  # logged, not raised: detection carries on
    assert _rows(audit) == []
    assert len(await watchdog.check([_job()])) == 1
    assert _rows(audit) == [EventType.WATCHDOG_RELEASED]


async def test_the_job_is_read_before_its_release_and_left_alone_when_no_longer_held(tmp_path, audit):
    """The listing can be a poll old: the job read by itself says whether the hold still stands."""
    slurm = FakeSlurm()
    slurm.current = _job(state="PENDING", reason="BeginTime", description="")  # the incident released it meanwhile
    _record(audit, EventType.DECIDED, ago_s=60)
    _record(audit, EventType.HELD, ago_s=60)
    watchdog = _watchdog(tmp_path, audit, slurm)
    assert await watchdog.check([_job()]) == []
    assert slurm.reads == 1 and slurm.calls == [] and _rows(audit) == []


async def test_a_job_gone_from_the_controller_is_forgotten(tmp_path, audit):
    slurm = FakeSlurm()
    _record(audit, EventType.DECIDED, ago_s=3600)
    watchdog = _watchdog(tmp_path, audit, slurm, timeout=1e-6)
    assert await watchdog.check([]) == []
    assert await watchdog.check([_job()]) == []  # not even a first sight: it was dropped
    assert slurm.calls == []
