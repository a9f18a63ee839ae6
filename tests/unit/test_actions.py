"""The scheduler actions (respawn/scheduler/actions.py) against a scripted Slurm: the races a
busy cluster runs into, where Slurm is faster than Respawn."""

import pytest

from respawn.scheduler import actions
from respawn.scheduler.errors import JobCompleting, JobNotPending
from respawn.scheduler.slurm import JobInfo, NodeInfo


class StartedMeanwhile:
    """A held job that Slurm starts right after its release, before the start time is moved."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def job(self, job_id: int, exclusions: bool = True) -> JobInfo:
        return JobInfo(job_id=job_id, state="PENDING", state_reason="JobHeldUser", restart_count=1)

    async def release(self, job_id: int) -> None:
        self.calls.append("release")

    async def start_now(self, job_id: int) -> None:
        self.calls.append("start_now")
        raise JobNotPending("slurm_update error: Job is no longer pending execution")


async def test_a_job_slurm_started_before_its_start_time_was_moved_is_released_not_failed():
    slurm = StartedMeanwhile()
    outcome = await actions.release(slurm, 7)  # type: ignore[arg-type]
    assert slurm.calls == ["release", "start_now"]
    assert outcome.changed and "Slurm started it" in outcome.detail


class Nodes:
    """Nodes as Slurm lists them, and the DOWNs asked of it."""

    def __init__(self, **states: str) -> None:
        self.states = states
        self.marked: list[tuple[str, str]] = []

    async def node(self, name: str) -> NodeInfo:
        return NodeInfo(name=name, state=self.states[name], address="10.0.0.1", port=6818)

    async def mark_down(self, node: str, reason: str) -> None:
        self.marked.append((node, reason))
        self.states[node] = "down"


async def test_a_node_still_silent_is_marked_down_once_one_answering_now_or_down_already_is_left_alone():
    slurm = Nodes(n2="allocated", n3="allocated", n4="down")
    asked: list[str] = []

    async def silent(node: NodeInfo) -> bool:
        asked.append(node.name)
        return node.name != "n2"  # n2's slurmd answers the second probe: a restart, a blip

    marked, answered = await actions.mark_down(slurm, ["n2", "n3", "n4"], "respawn i: silent", silent)  # type: ignore[arg-type]
    assert (marked, answered) == (["n3"], ["n2"]) and asked == ["n2", "n3"]
    assert slurm.marked == [("n3", "respawn i: silent")]
    again = await actions.mark_down(slurm, ["n3"], "respawn i: silent", silent)  # type: ignore[arg-type]
    assert again == ([], []) and len(slurm.marked) == 1  # a retry after a crash acts no more


class Completing:
    """A held job whose requeue completes after `reads` reads."""

    def __init__(self, reads: int) -> None:
        self.left, self.reads = reads, 0

    async def job(self, job_id: int, exclusions: bool = True) -> JobInfo:
        self.reads += 1
        self.left -= 1
        state = "COMPLETING" if self.left >= 0 else "PENDING"
        return JobInfo(job_id=job_id, state=state, state_reason="JobHeldUser", restart_count=1)


async def test_the_wait_after_a_down_ends_when_the_job_lets_go_and_gives_up_at_its_bound():
    slurm = Completing(reads=2)
    assert await actions.until_not_completing(slurm, 7, within_s=5, every_s=0.01)  # type: ignore[arg-type]
    assert slurm.reads == 3
    stuck = Completing(reads=10**6)
    assert not await actions.until_not_completing(stuck, 7, within_s=0.05, every_s=0.01)  # type: ignore[arg-type]


class RequeuedBySlurm:
    """A job Slurm requeued itself (its node called DOWN): pending at its BeginTime, not held."""

    def __init__(self, reason: str) -> None:
        self.reason, self.calls = reason, []

    async def job(self, job_id: int, exclusions: bool = True) -> JobInfo:
        return JobInfo(job_id=job_id, state="PENDING", state_reason=self.reason, restart_count=1)

    async def hold(self, job_id: int) -> None:
        self.calls.append("hold")


async def test_a_requeue_slurm_made_is_held_so_it_waits_for_its_exclusions_and_a_held_one_is_left():
    slurm = RequeuedBySlurm("BeginTime")
    outcome = await actions.hold(slurm, 7, attempt=0)  # type: ignore[arg-type]
    assert slurm.calls == ["hold"] and outcome.changed and "Slurm made" in outcome.detail
    held = RequeuedBySlurm("JobHeldUser")  # our own requeuehold, before a crash
    assert not (await actions.hold(held, 7, attempt=0)).changed and held.calls == []  # type: ignore[arg-type]


async def test_a_requeue_still_completing_is_retried_before_it_is_held_or_not():
    # 22.05 prints the requeue COMPLETING until every node let go: held or not is known after.
    slurm = RequeuedBySlurm("None")
    completing = JobInfo(job_id=7, state="COMPLETING", state_reason="None", restart_count=1)

    async def job(job_id: int, exclusions: bool = True) -> JobInfo:
        return completing

    slurm.job = job  # type: ignore[method-assign]
    with pytest.raises(JobCompleting):
        await actions.hold(slurm, 7, attempt=0)  # type: ignore[arg-type]
    assert slurm.calls == []


class CompletingOnSomeNodes:
    """A job Slurm lists, while it completes, with only the nodes still completing."""

    def __init__(self, completing_reads: int) -> None:
        self.reads, self.completing_reads = 0, completing_reads

    async def job(self, job_id: int, exclusions: bool = True) -> JobInfo:
        self.reads += 1
        if self.reads <= self.completing_reads:
            return JobInfo(job_id=job_id, state="COMPLETING", flags=["COMPLETING"], nodes=["node1", "node3"])
        return JobInfo(job_id=job_id, state="FAILED", nodes=["node1", "node2", "node3"])


async def test_an_ended_job_is_read_whole_once_its_nodes_have_completed() -> None:
    """Evidence read while node2 had finished its epilog would miss node2's kernel log and move
    rank 1 onto node3 (Slurm lists only the completing nodes then)."""
    job = await actions.settled(CompletingOnSomeNodes(completing_reads=3), 7, within_s=5, every_s=0.01)  # type: ignore[arg-type]
    assert job.nodes == ["node1", "node2", "node3"] and not job.completing


async def test_a_job_still_completing_after_the_wait_is_read_as_it_is() -> None:
    """A dead node keeps it completing until it is called DOWN: the evidence goes on."""
    job = await actions.settled(CompletingOnSomeNodes(completing_reads=1000), 7, within_s=0.05, every_s=0.01)  # type: ignore[arg-type]
    assert job.completing and job.nodes == ["node1", "node3"]


class Reads:
    """A held, requeued job; records whether each read asked for its excluded nodes."""

    def __init__(self) -> None:
        self.asked: list[bool] = []

    async def job(self, job_id: int, exclusions: bool = True) -> JobInfo:
        self.asked.append(exclusions)
        excluded = [] if exclusions else None  # as Slurm.job answers each
        return JobInfo(
            job_id=job_id, state="PENDING", state_reason="JobHeldUser", restart_count=1, excluded_nodes=excluded
        )

    async def set_excluded_nodes(self, job_id: int, nodes: list[str]) -> None:
        return None

    async def release(self, job_id: int) -> None:
        return None

    async def start_now(self, job_id: int) -> None:
        return None


async def test_hold_and_release_read_without_exclusions_and_exclude_and_the_evidence_with_them() -> None:
    """Hold and release say they do not look at the job's excluded nodes: in a storm their reads
    are then among many jobs' in one call (respawn/scheduler/batched.py). Exclude reads them, and
    the settled read keeps them for the evidence, so the decision keeps an earlier exclusion."""
    slurm = Reads()
    await actions.hold(slurm, 7, attempt=0)  # type: ignore[arg-type]
    await actions.release(slurm, 7)  # type: ignore[arg-type]
    assert slurm.asked == [False, False]
    assert (await actions.settled(slurm, 7, within_s=1.0)).excluded_nodes == []  # type: ignore[arg-type]
    assert (await actions.exclude(slurm, 7, ["node2"])).added == ("node2",)  # type: ignore[arg-type]
    assert slurm.asked == [False, False, True, True]
