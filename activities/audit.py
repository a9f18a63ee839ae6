"""Writing the incident's audit rows: off the worker's event loop, counted once."""

import asyncio

from temporalio import activity

from respawn.audit.trail import AuditEvent, AuditTrail
from respawn.services import Services
from respawn.surfaces import telemetry


async def record(audit: AuditTrail, event: AuditEvent) -> bool:
    """Write the row in a thread (SQLite blocks, and the worker's loop runs every other
    activity and workflow task); True when it is new, and only then is it counted."""
    return await asyncio.to_thread(_record, audit, event)


def _record(audit: AuditTrail, event: AuditEvent) -> bool:
    new = audit.record(event)
    if new:
        telemetry.recorded(event, audit)
    return new


class AuditActivities:
    def __init__(self, services: Services) -> None:
        self._audit = services.audit

    @activity.defn(name="record_event")
    async def record_event(self, event: AuditEvent) -> bool:
        return await record(self._audit, event)
