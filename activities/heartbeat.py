"""Heartbeats for activities that run a while without a long poll of their own."""

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from temporalio import activity


@asynccontextmanager
async def beating() -> AsyncIterator[None]:
    """Beat every second while the block runs, so a worker that dies in it is replaced within
    the activity's heartbeat timeout instead of its whole start-to-close timeout.

    Run as a local activity (assess_attempt, patch `local-assessment`) it beats not: a local
    activity has no heartbeat, its workflow task's timeout notices a worker that died in it."""
    if activity.info().is_local:
        yield
        return
    task = asyncio.create_task(_beat())
    try:
        yield
    finally:
        task.cancel()


async def _beat() -> None:
    while True:
        activity.heartbeat()
        await asyncio.sleep(1.0)
