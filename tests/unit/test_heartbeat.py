"""activities/heartbeat.py: an activity beats while its block runs (assess_attempt, the scheduler actions)."""

import asyncio
import dataclasses

import pytest
from temporalio.testing import ActivityEnvironment

from respawn.activities.heartbeat import beating
from respawn.sandbox.polling import until


async def test_a_block_under_beating_heartbeats_while_it_runs():
    env = ActivityEnvironment()
    beats: list[tuple] = []
    env.on_heartbeat = lambda *details: beats.append(details)

    async def work() -> int:
        async with beating():
            await until(lambda: beats, 5, "a heartbeat")  # the block waits for its own beat
        return len(beats)

    assert await env.run(work) >= 1


@pytest.mark.parametrize("local", [False, True])
async def test_a_local_activity_does_not_beat(local):
    """A local activity has no heartbeat to send (assess_attempt under patch `local-assessment`);
    the same block as a plain activity beats as soon as it yields to the loop."""
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, is_local=local)
    beats: list[tuple] = []
    env.on_heartbeat = lambda *details: beats.append(details)

    async def work() -> None:
        async with beating():
            for _ in range(3):
                await asyncio.sleep(0)  # the beat's task runs at the loop's next turn

    await env.run(work)
    assert bool(beats) is not local
