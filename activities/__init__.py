"""Activities: every side effect of an incident, each idempotent.

They read the scheduler's state before changing it, and write their audit row
with a key that names the step, so a retry after a crash neither acts nor
records twice.
"""

from collections.abc import Callable
from typing import Any

from respawn.activities.advice import AdviceActivities
from respawn.activities.assessment import AssessmentActivities
from respawn.activities.audit import AuditActivities
from respawn.activities.evidence import EvidenceActivities
from respawn.activities.follow import FollowActivities
from respawn.activities.in_job import InJobActivities
from respawn.activities.probe import ProbeActivities
from respawn.activities.scheduler import SchedulerActivities
from respawn.services import Services


def all_activities(services: Services) -> list[Callable[..., Any]]:
    evidence = EvidenceActivities(services)
    assessment = AssessmentActivities(services)
    scheduler = SchedulerActivities(services)
    follow = FollowActivities(services)
    audit = AuditActivities(services)
    advice = AdviceActivities(services)
    in_job = InJobActivities(services)
    probe = ProbeActivities(services)
    return [
        evidence.gather_evidence,
        assessment.assess,
        assessment.assess_attempt,
        scheduler.hold_job,
        scheduler.exclude_nodes,
        scheduler.release_job,
        scheduler.drain_nodes,
        scheduler.mark_nodes_down,
        follow.await_next_attempt,
        follow.await_progress,
        audit.record_event,
        advice.publish_advice,
        advice.await_reconciliation,
        in_job.relaunch_step,
        in_job.give_up_step,
        in_job.await_step_end,
        probe.probe_nodes,
    ]
