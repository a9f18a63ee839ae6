"""Summaries of the audit trail for people and scripts."""

from respawn.audit import AuditTrail, EventType
from respawn.config import ClusterConfig


def incidents(config: ClusterConfig, job_id: int | None = None) -> list[dict]:
    """One row per incident: what was detected, what it was, what was decided, where it stands."""
    audit = AuditTrail(config.audit_db)
    by_incident: dict[str, dict] = {}
    for row in audit.query(cluster=config.cluster, job_id=job_id, limit=1_000_000):
        if row.incident_id is None:
            continue
        summary = by_incident.setdefault(row.incident_id, {
            "incident_id": row.incident_id, "job_id": row.job_id, "attempt": row.attempt,
            "opened": row.at.isoformat(), "failure_class": None, "nodes": "", "action": None,
            "acted": None, "phase": "open", "reason": "",
        })
        if row.event_type is EventType.DECIDED:
            summary.update(failure_class=row.failure_class, nodes=",".join(row.nodes), action=row.action,
                           acted="acted" if row.acted else "recommended", reason=row.details.get("reason", ""))
        elif row.event_type is EventType.INCIDENT_CLOSED:
            summary["phase"] = row.details.get("phase", "closed")
    audit.close()
    return list(by_incident.values())


def jobs(config: ClusterConfig) -> list[dict]:
    audit = AuditTrail(config.audit_db)
    rows = audit.query(cluster=config.cluster, event_types=[EventType.ENROLLED, EventType.NOT_ENROLLED],
                       limit=1_000_000)
    audit.close()
    latest: dict[int, dict] = {}
    for row in rows:
        enrolled = row.event_type is EventType.ENROLLED
        latest[row.job_id] = {
            "job_id": row.job_id, "enrolled": "yes" if enrolled else "no",
            "environment": row.details.get("environment"), "mode": row.details.get("mode"),
            "reason": row.details.get("note") if enrolled else row.details.get("reason"),
        }
    return list(latest.values())
