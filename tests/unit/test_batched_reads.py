"""A storm's reads and commands: many jobs' states wanted at once read in one call, and the
cluster's nodes and partitions likewise (respawn/scheduler/batched.py), and a process's Slurm
commands taking turns."""

import asyncio
from collections.abc import Sequence

import pytest

from respawn.scheduler.batched import MAX_BATCH, BatchedReads
from respawn.scheduler.errors import JobNotFound, SchedulerUnavailable
from respawn.scheduler.slurm import Slurm
from respawn.scheduler.transport import CommandResult
from tests.unit._slurm_replay import folder


class Controller:
    """A read_many that records each call's ids and answers only once `release` is set."""

    def __init__(self, known: set[int]) -> None:
        self.known, self.calls = known, []  # type: ignore[var-annotated]
        self.release = asyncio.Event()
        self.fail: Exception | None = None

    async def read_many(self, ids: Sequence[int]) -> dict[int, str]:
        self.calls.append(list(ids))
        await self.release.wait()
        if self.fail is not None:
            raise self.fail
        return {i: f"job {i} at call {len(self.calls)}" for i in ids if i in self.known}


async def test_reads_asked_together_are_one_call() -> None:
    slurm = Controller(known=set(range(1, 201)))
    reads = BatchedReads(slurm.read_many)
    asked = [asyncio.ensure_future(reads.read(i)) for i in range(1, 201)]
    await asyncio.sleep(0)
    slurm.release.set()
    assert await asyncio.gather(*asked) == [f"job {i} at call 1" for i in range(1, 201)]
    assert slurm.calls == [list(range(1, 201))]


async def test_a_read_asked_during_a_call_waits_for_the_next() -> None:
    """No answer is older than its question: the call in flight started before it."""
    slurm = Controller(known={1, 2})
    reads = BatchedReads(slurm.read_many)
    early = asyncio.ensure_future(reads.read(1))
    await asyncio.sleep(0)  # the first call has started
    late = [asyncio.ensure_future(reads.read(1)), asyncio.ensure_future(reads.read(2))]
    await asyncio.sleep(0)
    slurm.release.set()
    assert await early == "job 1 at call 1"
    assert await asyncio.gather(*late) == ["job 1 at call 2", "job 2 at call 2"]
    assert slurm.calls == [[1], [1, 2]]


async def test_a_job_the_call_did_not_list_is_not_found_and_the_others_are_answered() -> None:
    slurm = Controller(known={1})
    slurm.release.set()
    reads = BatchedReads(slurm.read_many)
    found, missing = await asyncio.gather(reads.read(1), reads.read(7), return_exceptions=True)
    assert found == "job 1 at call 1" and isinstance(missing, JobNotFound)


async def test_a_failed_call_fails_every_read_it_answered_and_the_next_call_is_made() -> None:
    slurm = Controller(known={1, 2})
    slurm.fail = SchedulerUnavailable("slurmctld down")
    slurm.release.set()
    reads = BatchedReads(slurm.read_many)
    outcomes = await asyncio.gather(reads.read(1), reads.read(2), return_exceptions=True)
    assert all(isinstance(o, SchedulerUnavailable) for o in outcomes)
    slurm.fail = None
    assert await reads.read(2) == "job 2 at call 2"


async def test_a_cancelled_reader_leaves_the_others_answered() -> None:
    """An activity that timed out while its read waited: the call still answers the rest."""
    slurm = Controller(known={1, 2})
    reads = BatchedReads(slurm.read_many)
    gone, kept = asyncio.ensure_future(reads.read(1)), asyncio.ensure_future(reads.read(2))
    await asyncio.sleep(0)
    gone.cancel()
    slurm.release.set()
    assert await kept == "job 2 at call 1"
    with pytest.raises(asyncio.CancelledError):
        await gone


async def test_a_call_names_at_most_max_batch_jobs() -> None:
    slurm = Controller(known=set(range(MAX_BATCH + 10)))
    slurm.release.set()
    reads = BatchedReads(slurm.read_many)
    await asyncio.gather(*(reads.read(i) for i in range(MAX_BATCH + 10)))
    assert [len(ids) for ids in slurm.calls] == [MAX_BATCH, 10]


async def test_a_call_asked_for_while_one_ran_waits_the_interval_and_a_lone_read_does_not() -> None:
    """Reads asked while a call runs (a storm's follows) make the next call, the interval after
    that one started: back to back, a cheap call would be a controller RPC each as fast as squeue
    answers. A read asked while none runs (an action on a quiet cluster) is made at once."""
    loop = asyncio.get_running_loop()
    calls: list[tuple[float, list[int]]] = []

    async def read_many(ids: Sequence[int]) -> dict[int, int]:
        calls.append((loop.time(), list(ids)))
        await asyncio.sleep(0.01)  # the call takes a while
        return {job_id: job_id for job_id in ids}

    reads = BatchedReads(read_many, min_interval_s=0.2)
    first = asyncio.ensure_future(reads.read(1))
    await asyncio.sleep(0)  # its call has started
    assert await asyncio.gather(reads.read(2), reads.read(3), first) == [2, 3, 1]
    assert await reads.read(1) == 1  # after both calls answered: none runs
    assert [ids for _, ids in calls] == [[1], [2, 3], [1]]
    (one, _), (two, _), (three, _) = calls
    assert two - one >= 0.2 - 1e-3 and three - two < 0.2


class Cluster:
    """A transport answering sinfo with a real 22.05 capture and scontrol with one partition;
    each command takes a while, and every command is recorded."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def run(self, argv: Sequence[str], timeout: float = 30.0, env: object = None) -> CommandResult:
        self.calls.append(argv[0])
        await asyncio.sleep(0.01)
        if argv[0] == "sinfo":
            return CommandResult(0, (folder("22.05") / "sinfo.json").read_text(), "")
        return CommandResult(0, "PartitionName=debug Nodes=node[1-4] State=UP\n", "")

    async def close(self) -> None:
        return None


async def test_the_nodes_and_partitions_many_evidences_ask_for_at_once_are_read_once() -> None:
    """A storm's incidents gather their evidence together, each reading the cluster's nodes and
    partitions: one sinfo and one scontrol answer them all."""
    transport = Cluster()
    slurm = Slurm(transport)  # type: ignore[arg-type]
    read = await asyncio.gather(*(slurm.nodes() for _ in range(5)), *(slurm.partitions() for _ in range(5)))
    assert sorted(transport.calls) == ["scontrol", "sinfo"]
    assert all(len(nodes) == 4 for nodes in read[:5]) and all(p["debug"]["State"] == "UP" for p in read[5:])
    await slurm.nodes()  # asked once those calls answered: a call of its own
    assert transport.calls.count("sinfo") == 2


class SlowSlurm:
    """A transport whose commands take a while; it counts how many run at once."""

    def __init__(self) -> None:
        self.running = self.most = 0

    async def run(self, argv: Sequence[str], timeout: float = 30.0, env: object = None) -> CommandResult:
        self.running += 1
        self.most = max(self.most, self.running)
        await asyncio.sleep(0.01)
        self.running -= 1
        return CommandResult(0, "", "")

    async def close(self) -> None:
        return None


async def test_a_process_runs_at_most_its_share_of_slurm_commands_at_once() -> None:
    """A storm's hundreds of holds at once: their commands take turns (scheduler.max_concurrent_commands)."""
    transport = SlowSlurm()
    slurm = Slurm(transport, concurrency=4)  # type: ignore[arg-type]
    await asyncio.gather(*(slurm.requeue_hold(job_id) for job_id in range(1, 41)))
    assert transport.most == 4
