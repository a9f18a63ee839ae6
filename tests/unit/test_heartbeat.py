"""activities/heartbeat.py: an activity beats while its block runs (assess_attempt, the scheduler actions)."""

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
