"""What endpoints share: the configuration and a connection to the audit trail per request."""

from collections.abc import Iterator

from fastapi import Request

from respawn.audit.trail import AuditTrail
from respawn.config.cluster import ClusterConfig


def cluster_config(request: Request) -> ClusterConfig:
    return request.app.state.config


def audit_trail(request: Request) -> Iterator[AuditTrail]:
    # One connection per request: SQLite connections are cheap, and endpoints run in threads.
    audit = AuditTrail(request.app.state.config.audit_db)
    try:
        yield audit
    finally:
        audit.close()
