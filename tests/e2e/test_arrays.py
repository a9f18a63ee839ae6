"""Job arrays end to end (issue 16): a 4-task array on the sandbox's four nodes (one task per
node), real Slurm, real Temporal, Respawn's detector and worker. A task is recovered on its own;
tasks failing the same way stop the whole array."""

import subprocess

import pytest

from respawn.audit.trail import EventType
from respawn.sandbox.workload.faults import FaultKind, inject
from respawn.sandbox.workload.submit import submit
from tests.recovery_stack import Cluster, respawn_running, until

ACTION = '{"respawn":{"environment":"demo","mode":"action"}}'


@pytest.fixture(scope="module")
def cluster(sandbox):
    with respawn_running(sandbox, "arrays") as config:
        yield Cluster(sandbox, config)


async def running_tasks(cluster: Cluster, array_id: int, count: int = 4) -> dict[int, tuple[int, str]]:
    """Task id -> (its job id, its node), once every task runs."""

    async def probe() -> dict[int, tuple[int, str]] | None:
        jobs = [j for j in await cluster.slurm.jobs() if j.array_job_id == array_id and j.state == "RUNNING"]
        tasks = {j.array_task_id: (j.job_id, j.nodes[0]) for j in jobs if j.array_task_id is not None and j.nodes}
        return tasks if len(tasks) == count else None

    return await until(probe, 120, f"the {count} tasks of array {array_id} to run")


def submit_array(cluster: Cluster, steps: int) -> int:
    array_id = submit(
        cluster.lab, nodes=1, steps=steps, checkpoint_every=5, step_seconds=0.3, comment=ACTION, name="e2e-array",
        extra_sbatch_args=["--array=0-3", "--exclusive"],
    )  # fmt: skip
    return array_id


@pytest.fixture
def arrays(cluster):
    submitted: list[int] = []
    yield submitted
    for array_id in submitted:
        subprocess.run(["scancel", str(array_id)], env=cluster.lab.env(), capture_output=True, timeout=30, check=False)


async def test_an_xid_in_one_task_requeues_that_task_alone_without_its_node(cluster, arrays):
    array_id = submit_array(cluster, steps=40)
    arrays.append(array_id)
    tasks = await running_tasks(cluster, array_id)
    job_id, node = tasks[2]
    await cluster.wait_checkpoint(job_id, step=5)
    inject(cluster.lab, job_id, node, FaultKind.XID)

    job = await cluster.wait_state(job_id, {"COMPLETED"}, timeout=180, min_restarts=1)
    assert node in job.excluded_nodes and node not in job.nodes
    decided = next(r for r in cluster.events(job_id) if r.event_type is EventType.DECIDED)
    assert (decided.failure_class, decided.nodes, decided.details["array_job_id"]) == ("gpu_hardware", [node], array_id)
    for task, (other, _) in tasks.items():
        if task != 2:  # the other tasks were left alone
            assert (await cluster.wait_state(other, {"COMPLETED"}, timeout=120)).restart_count == 0


async def test_tasks_failing_the_same_way_stop_the_whole_array(cluster, arrays):
    array_id = submit_array(cluster, steps=400)
    arrays.append(array_id)
    tasks = await running_tasks(cluster, array_id)
    decisions = []
    for task in (0, 1, 2):  # one after another: each incident decided before the next fault
        job_id, node = tasks[task]
        await cluster.wait_checkpoint(job_id, step=5)
        inject(cluster.lab, job_id, node, FaultKind.CRASH)
        decided = await until(
            lambda j=job_id: next((r for r in cluster.events(j) if r.event_type is EventType.DECIDED), None),
            90,
            f"task {task}'s decision",
        )
        decisions.append((decided.action, decided.details["reason"]))
    assert decisions[0][0] == "restart"  # one task failing is that task's incident
    for action, reason in decisions[1:]:
        assert action == "stop" and f"systemic across array {array_id}" in reason, reason
