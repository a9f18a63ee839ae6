"""The recovery worker: runs incident workflows and their activities for one cluster.

Scale out by starting more of these on the same task queue; Temporal spreads
the work and hands an incident to a survivor when a worker dies.
"""

import asyncio
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

from temporalio.worker import PollerBehaviorAutoscaling, UnsandboxedWorkflowRunner, Worker, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from respawn.activities import all_activities
from respawn.config.cluster import ClusterConfig, TemporalSettings
from respawn.services import wait_for_services, wait_for_temporal
from respawn.surfaces import telemetry
from respawn.workers.signals import stop_on_signals
from respawn.workflows.incident import IncidentWorkflow


def workflow_runner(settings: TemporalSettings) -> WorkflowRunner:
    """How the worker runs IncidentWorkflow's code: without the SDK's sandbox unless
    `temporal.workflow_sandbox` asks for it.

    The sandbox refuses a call that would break an incident's replay (the clock, the
    environment, I/O) as the workflow's code makes it. The tests run every workflow in it and
    replay the recorded histories in it (tests/workflow/), which is where such a call is caught,
    before a release. In a running worker it finds only what the tests did not run, and the
    incident that made the call stalls either way (its workflow task failing at once in the
    sandbox; without it, at a replay whose commands differ) until a fixed worker is deployed.
    What it costs there is a third of the worker's one interpreter in a storm: the workflow's
    module imported afresh for each incident, and code run inside the sandbox for every payload
    the SDK converts (BENCHMARKS.md, "A failure storm", runs 40-55)."""
    return SandboxedWorkflowRunner() if settings.workflow_sandbox else UnsandboxedWorkflowRunner()


def worker_options(settings: TemporalSettings) -> dict[str, Any]:
    """How much the worker takes on at once, and how it runs and polls for it."""
    return {
        "workflow_runner": workflow_runner(settings),
        "sticky_queue_schedule_to_start_timeout": timedelta(seconds=settings.sticky_timeout_s),
        "max_concurrent_activities": settings.max_concurrent_activities,
        "max_concurrent_workflow_tasks": settings.max_concurrent_workflow_tasks,
        # An incident's audit rows and its assessment are local activities, run inside the
        # workflow task that asks for them, which stays open until they are done, one at a time:
        # as many slots as workflow tasks, so that no task waits for another's (the SDK's default
        # is 100, against 200 workflow tasks).
        "max_concurrent_local_activities": settings.max_concurrent_workflow_tasks,
        # The SDK polls with at most 5 calls per kind: in a storm the workflow tasks waited on
        # the server for a poll while the worker had free slots (benchmarks/storm.py: queued
        # 54 s at p90; 8.6 s with these). Pollers follow the backlog as the server reports it
        # (1 to 100 calls).
        "workflow_task_poller_behavior": PollerBehaviorAutoscaling(),
        "activity_task_poller_behavior": PollerBehaviorAutoscaling(),
    }


async def run_worker(config: ClusterConfig, stop: asyncio.Event | None = None) -> None:
    stop = stop or stop_on_signals()
    # Every asyncio.to_thread of the activities runs here (TemporalSettings.blocking_threads).
    blocking = ThreadPoolExecutor(max_workers=config.temporal.blocking_threads, thread_name_prefix="respawn-io")
    asyncio.get_running_loop().set_default_executor(blocking)
    # Served while the servers are waited for: a liveness probe sees the process alive.
    telemetry.expose(config.telemetry.worker)
    services = await wait_for_services(config, stop)
    if services is None:
        return
    telemetry.count_scheduler_errors(services)
    try:
        client = await wait_for_temporal(config, stop)
        if client is None:
            return
        worker = Worker(
            client,
            task_queue=config.task_queue,
            workflows=[IncidentWorkflow],
            activities=all_activities(services),
            graceful_shutdown_timeout=timedelta(seconds=5),
            **worker_options(config.temporal),
        )
        async with worker:
            await stop.wait()
    finally:
        await services.close()
