"""A storm's reads and commands: many jobs' states wanted at once read in one call
(respawn/scheduler/batched.py), and a process's Slurm commands taking turns."""

import asyncio
import itertools
from collections.abc import Sequence

import pytest

from respawn.scheduler.batched import MAX_BATCH, BatchedReads
from respawn.scheduler.errors import JobNotFound, SchedulerUnavailable
from respawn.scheduler.slurm import Slurm
from respawn.scheduler.transport import CommandResult


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


async def test_calls_start_no_closer_than_the_interval_and_each_answers_every_follow() -> None:
    """Three follows reading again as soon as answered: five calls, each naming all three,
    started at least the interval apart (back to back they would be a controller RPC each
    as fast as squeue answers)."""
    slurm = Controller(known={1, 2, 3})
    slurm.release.set()
    loop = asyncio.get_running_loop()
    started: list[float] = []

    async def timed(ids: Sequence[int]) -> dict[int, str]:
        started.append(loop.time())
        return await slurm.read_many(ids)

    reads = BatchedReads(timed, min_interval_s=0.05)

    async def follow(job_id: int) -> None:
        for _ in range(5):
            await reads.read(job_id)

    await asyncio.gather(*(follow(job_id) for job_id in (1, 2, 3)))
    assert slurm.calls == [[1, 2, 3]] * 5
    assert all(later - earlier >= 0.05 - 1e-3 for earlier, later in itertools.pairwise(started))


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
