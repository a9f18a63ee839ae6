"""Where an incident's time went, read from its Temporal history (the storm benchmark's breakdown).

For each workflow: when it started, and for its workflow tasks and each kind of activity,
the wait from scheduled to started (the task queue: no worker slot free, or the worker's
poller behind) and the run from started to closed (the work itself). Folded over many
workflows as medians and 90th percentiles, it tells a worker short of slots from slow
activities from a slow Temporal server: the first shows as queue waits, the second as long
runs, the third as long gaps between one task's close and the next task's schedule.
"""

import asyncio
import statistics
from collections import defaultdict
from datetime import datetime

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

_WORKFLOW_TASK = "workflow task"
# A workflow task not started in time on the worker's sticky queue (or not completed in time):
# the server schedules it again on the shared queue, where the worker that takes it may have
# to replay the incident from its start.
_TIMED_OUT = "workflow task timed out"


def _at(event) -> datetime:
    return event.event_time.ToDatetime()


async def timings(client: Client, workflow_id: str) -> dict[str, list[tuple[float, float]]]:
    """Kind of task -> (queued s, ran s) for each of the workflow's tasks, and "started" -> the
    workflow's start as epoch seconds (queued) and its length so far (ran)."""
    scheduled: dict[int, tuple[str, datetime]] = {}
    started: dict[int, datetime] = {}
    found: dict[str, list[tuple[float, float]]] = defaultdict(list)
    first = last = None
    async for event in client.get_workflow_handle(workflow_id).fetch_history_events():
        at = _at(event)
        first, last = first or at, at
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
            scheduled[event.event_id] = (_WORKFLOW_TASK, at)
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            scheduled[event.event_id] = (name, at)
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            started[event.workflow_task_started_event_attributes.scheduled_event_id] = at
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            started[event.activity_task_started_event_attributes.scheduled_event_id] = at
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            _close(found, scheduled, started, event.workflow_task_completed_event_attributes.scheduled_event_id, at)
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
            attributes = event.workflow_task_timed_out_event_attributes
            found[_TIMED_OUT].append(_waits(scheduled, started, attributes.scheduled_event_id, at))
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            _close(found, scheduled, started, event.activity_task_completed_event_attributes.scheduled_event_id, at)
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
            _close(found, scheduled, started, event.activity_task_failed_event_attributes.scheduled_event_id, at)
    if first is not None and last is not None:
        found["started"].append((first.timestamp(), (last - first).total_seconds()))
    return found


def _close(found, scheduled, started, scheduled_id: int, at: datetime) -> None:
    found[scheduled[scheduled_id][0]].append(_waits(scheduled, started, scheduled_id, at))


def _waits(scheduled, started, scheduled_id: int, at: datetime) -> tuple[float, float]:
    """(queued s, ran s) of the task scheduled as `scheduled_id`, closed `at`: one never started
    (a workflow task that timed out on its queue) waited all that time."""
    queued_at = scheduled[scheduled_id][1]
    began = started.get(scheduled_id, at)
    return (began - queued_at).total_seconds(), (at - began).total_seconds()


def _quantiles(values: list[float]) -> dict[str, float]:
    values = sorted(values)
    p90 = values[min(len(values) - 1, int(0.9 * len(values)))]
    return {"p50": round(statistics.median(values), 2), "p90": round(p90, 2), "max": round(values[-1], 2)}


async def breakdown(client: Client, workflow_ids: list[str], origin: float, concurrency: int = 20) -> dict:
    """Medians and 90th percentiles of queue waits and runs per kind of task, over the workflows,
    and when they started, in seconds after `origin` (epoch seconds: the fault)."""
    gate = asyncio.Semaphore(concurrency)

    async def one(workflow_id: str) -> dict[str, list[tuple[float, float]]]:
        async with gate:
            return await timings(client, workflow_id)

    merged: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for found in await asyncio.gather(*(one(w) for w in workflow_ids)):
        for name, pairs in found.items():
            merged[name] += pairs
    starts = merged.pop("started", [])
    result: dict = {"workflows": len(workflow_ids)}
    if starts:
        result["started_after_fault_s"] = _quantiles([s - origin for s, _ in starts])
    for name, pairs in sorted(merged.items()):
        result[name] = {
            "count": len(pairs),
            "queued_s": _quantiles([q for q, _ in pairs]),
            "ran_s": _quantiles([r for _, r in pairs]),
        }
    return result
