"""Sending an operator's override to the open incident of a job."""

from temporalio.client import WorkflowUpdateFailedError
from temporalio.service import RPCError

from respawn.config.cluster import ClusterConfig
from respawn.services import connect_temporal, why
from respawn.wire.incident import Override


class OverrideError(RuntimeError):
    """Why an override could not be delivered; one line for the operator."""


async def send_override(config: ClusterConfig, job_id: int, override: Override, incident: str | None = None) -> str:
    try:
        client = await connect_temporal(config)
        if incident is None:
            incident = await _open_incident(client, config, job_id)
    except OverrideError:
        raise
    except (RuntimeError, RPCError) as err:  # connect fails with a RuntimeError, a lost server with an RPCError
        raise OverrideError(f"cannot reach Temporal at {config.temporal.address}: {why(err)}") from None
    handle = client.get_workflow_handle(incident)
    try:
        return await handle.execute_update("apply_override", override)
    except WorkflowUpdateFailedError as err:
        raise OverrideError(f"{incident} refused the override: {getattr(err.cause, 'message', err.cause)}") from None
    except RPCError as err:
        raise OverrideError(f"{incident}: {err.message}") from None


async def _open_incident(client, config: ClusterConfig, job_id: int) -> str:
    query = f'RespawnJobId="{job_id}" AND RespawnCluster="{config.cluster}"'
    running = [wf async for wf in client.list_workflows(f'{query} AND ExecutionStatus="Running"')]
    if running:
        # Newest first: the incident of the current attempt.
        return max(running, key=lambda wf: wf.start_time).id
    closed = [wf async for wf in client.list_workflows(query, limit=1)]
    if closed:
        raise OverrideError(f"job {job_id}'s last incident {closed[0].id} is closed ({closed[0].status.name.lower()})")
    raise OverrideError(f"job {job_id} has no incident on cluster {config.cluster}")
