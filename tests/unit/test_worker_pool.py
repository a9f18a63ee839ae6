"""What a worker takes on at once: its activities read and write on a thread pool of its own
(temporal.blocking_threads), not asyncio's default of cpu_count + 4 threads (in a storm every
incident's evidence queued behind others' reads, BENCHMARKS.md, "A failure storm"), and its
slots are sized together."""

import asyncio
import threading
import time
from pathlib import Path

from respawn.config.cluster import ClusterConfig, TemporalSettings
from respawn.workers.worker import run_worker, worker_options
from tests.ports import unused_port


def test_the_workers_blocking_calls_run_on_its_own_pool_of_the_configured_size(tmp_path: Path):
    config = ClusterConfig.model_validate(
        {
            "cluster": "pool",
            "environments": {"demo": {"max_mode": "observe"}},
            "logs": {"job_output": str(tmp_path / "slurm-{job_id}.out")},
            "audit_db": str(tmp_path / "audit.db"),
            "temporal": {"address": f"127.0.0.1:{unused_port()}", "blocking_threads": 3},
        }
    )

    def blocking() -> str:
        time.sleep(0.2)
        return threading.current_thread().name

    async def worker_then_blocking_calls() -> list[str]:
        # No Temporal there, and told to stop before it connects: its pool is already in place.
        stop = asyncio.Event()
        stop.set()
        await run_worker(config, stop=stop)
        return await asyncio.gather(*(asyncio.to_thread(blocking) for _ in range(8)))

    # A loop of its own: the worker sets its loop's default executor, which the tests' shared loop must not get.
    names = asyncio.run(worker_then_blocking_calls())
    assert all(name.startswith("respawn-io") for name in names)
    assert len(set(names)) == 3


def test_every_workflow_task_the_worker_takes_has_a_slot_for_its_audit_row() -> None:
    """The audit rows are local activities inside the workflow task that writes them: the SDK's
    100 local-activity slots against 200 workflow tasks would leave tasks open waiting for a slot."""
    settings = TemporalSettings(max_concurrent_workflow_tasks=300)
    options = worker_options(settings)
    assert options["max_concurrent_local_activities"] == options["max_concurrent_workflow_tasks"] == 300
