from temporalio import activity

from respawn.audit.trail import AuditEvent
from respawn.services import Services
from respawn.surfaces import telemetry


class AuditActivities:
    def __init__(self, services: Services) -> None:
        self._audit = services.audit

    @activity.defn(name="record_event")
    async def record_event(self, event: AuditEvent) -> bool:
        new = self._audit.record(event)
        if new:
            telemetry.recorded(event, self._audit)
        return new
