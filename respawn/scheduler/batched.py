"""Reads many callers ask for at once, made as one controller call: jobs' states and their
excluded nodes by id, and the cluster's nodes and partitions (one key each).

In a storm every incident follows its job (`await_next_attempt`, four reads a second) and
checks it before acting: one `squeue` process and one controller RPC per incident and read
would grow with the number of incidents (500 incidents: 2,000 a second, the worker's CPU and
slurmctld's RPC queue gone to them; BENCHMARKS.md, "A failure storm"). Here a read waits for
the next call, which asks for every job wanted until it starts: whatever the number of
incidents, one call at a time. A call answers only requests made before it started, so no
answer is older than its question.

A call that follows another at once (reads were asked while that one ran) starts at least
MIN_INTERVAL_S after it. Back to back, a cheap call (the text read of 500 followed jobs takes
0.04-0.1 s) made up to 40 calls a second, each one a controller RPC loading every job, to answer
follows that read four times a second (BENCHMARKS.md, "The follows' reads"). A read asked
while no call runs is made at once: an action's read on a quiet cluster waits for nothing, and
one follow alone reads no later, its own pause being as long.

Each incident's evidence also reads the cluster's nodes and partitions whole, and it and each
exclude read the job's excluded nodes: 500 incidents, 2,000 more processes and RPCs, now as
many calls as the pace allows.
"""

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Generic, TypeVar

from respawn.scheduler.errors import JobNotFound

Key = TypeVar("Key", bound=Hashable)  # what a read asks for (a job id; one key for the whole cluster)
Value = TypeVar("Value")  # what it answers (a JobInfo, its excluded nodes; the nodes or partitions)

# Job ids in one call: an argv of a few kilobytes, and an answer no larger than a listing's.
MAX_BATCH = 500
# Between the starts of two calls one after the other: a follow's fastest pace (activities/follow.py).
MIN_INTERVAL_S = 0.25


class BatchedReads(Generic[Key, Value]):
    """`read(key)` for many callers, made as `read_many(keys)` calls one after another."""

    def __init__(
        self,
        read_many: Callable[[Sequence[Key]], Awaitable[dict[Key, Value]]],
        min_interval_s: float = MIN_INTERVAL_S,
    ) -> None:
        self._read_many = read_many
        self._interval = min_interval_s
        self._waiting: dict[Key, list[asyncio.Future[Value]]] = {}
        self._caller: asyncio.Task[None] | None = None

    async def read(self, key: Key) -> Value:
        """What a controller call made after this request read for `key`; JobNotFound when
        that call did not answer it (a job it did not list), the call's own error when it failed."""
        answer: asyncio.Future[Value] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, []).append(answer)
        if self._caller is None or self._caller.done() or self._caller.get_loop() is not answer.get_loop():
            self._caller = asyncio.create_task(self._call())
        return await answer

    async def _call(self) -> None:
        loop = asyncio.get_running_loop()
        last: float | None = None  # when this task's previous call started
        while self._waiting:
            if last is not None and (early := last + self._interval - loop.time()) > 0:
                await asyncio.sleep(early)  # reads asked meanwhile join this call
            last = loop.time()
            keys = list(self._waiting)[:MAX_BATCH]
            batch = {key: self._waiting.pop(key) for key in keys}
            try:
                found = await self._read_many(keys)
            except Exception as exc:  # every request of this call gets the call's error
                for answers in batch.values():
                    _settle(answers, exc)
                continue
            for key, answers in batch.items():
                value = found.get(key)
                _settle(answers, JobNotFound(f"squeue: no job {key}") if value is None else value)


def _settle(answers: list[asyncio.Future[Value]], outcome: Value | Exception) -> None:
    for answer in answers:
        if answer.done() or answer.get_loop().is_closed():  # its caller was cancelled, or gave up
            continue
        if isinstance(outcome, Exception):
            answer.set_exception(outcome)
        else:
            answer.set_result(outcome)
