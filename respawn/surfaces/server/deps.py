"""What endpoints share: the configuration, the audit trail and the advice store of the app."""

from fastapi import Request

from respawn.advisor.advice import AdviceStore
from respawn.audit.trail import AuditTrail
from respawn.config.cluster import ClusterConfig


def cluster_config(request: Request) -> ClusterConfig:
    return request.app.state.config


# One of each per app, opened with it: their engines pool connections (PostgreSQL's are not
# cheap) and are safe to share between the threads endpoints run in.
def audit_trail(request: Request) -> AuditTrail:
    return request.app.state.audit


def advice_store(request: Request) -> AdviceStore:
    return request.app.state.advice
