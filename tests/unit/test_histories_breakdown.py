"""The breakdown of an incident's history (benchmarks/histories.py) counts a workflow task that
timed out apart from those that completed: in a storm a task left on the worker's sticky
queue past its timeout is scheduled again, and the benchmarks count both (BENCHMARKS.md)."""

import asyncio
import importlib.util
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent


def _load() -> ModuleType:
    """benchmarks/ is scripts, not a package: load the module from its file."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "histories.py"
    spec = importlib.util.spec_from_file_location("histories", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["histories"] = module
    spec.loader.exec_module(module)
    return module


histories = _load()
T0 = datetime(2026, 12, 2, tzinfo=UTC)


def _event(event_id: int, kind: int, at_s: float, **attributes) -> HistoryEvent:
    event = HistoryEvent(event_id=event_id, event_type=kind, **attributes)
    event.event_time.FromDatetime(T0 + timedelta(seconds=at_s))
    return event


class _Client:
    """What timings() asks of a client: one workflow's history events."""

    def __init__(self, events: list[HistoryEvent]) -> None:
        self._events = events

    def get_workflow_handle(self, workflow_id: str) -> "_Client":
        return self

    async def fetch_history_events(self):
        for event in self._events:
            yield event


def test_a_timed_out_workflow_task_is_counted_apart_with_its_wait():
    scheduled, started, completed = (
        EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    )
    events = [
        _event(1, scheduled, 0.0),
        _event(2, started, 0.5, workflow_task_started_event_attributes={"scheduled_event_id": 1}),
        _event(3, completed, 0.6, workflow_task_completed_event_attributes={"scheduled_event_id": 1}),
        # On the sticky queue, never started within its 2 s: timed out, scheduled again.
        _event(4, scheduled, 1.0),
        _event(
            5,
            EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
            3.0,
            workflow_task_timed_out_event_attributes={"scheduled_event_id": 4},
        ),
        _event(6, scheduled, 3.0),
        _event(7, started, 4.0, workflow_task_started_event_attributes={"scheduled_event_id": 6}),
        _event(8, completed, 4.25, workflow_task_completed_event_attributes={"scheduled_event_id": 6}),
    ]
    found = asyncio.run(histories.timings(_Client(events), "incident-c-5-0"))
    assert found["workflow task"] == [(0.5, pytest.approx(0.1)), (1.0, 0.25)]
    assert found["workflow task timed out"] == [(2.0, 0.0)]  # queued 2 s, never ran
