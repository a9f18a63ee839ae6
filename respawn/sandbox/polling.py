"""Waiting for something to become true: polled with a deadline, never slept on blindly."""

import asyncio
import inspect
import time
from collections.abc import Callable


class Timeout(AssertionError):
    """The condition did not hold in time (an AssertionError, so tests read it as a failure)."""


async def until(probe: Callable[[], object], timeout: float, what: str, interval: float = 0.2):
    """Poll `probe` (plain or async) until it returns something true, and return that."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = probe()
        if inspect.isawaitable(last):
            last = await last
        if last:
            return last
        await asyncio.sleep(interval)
    raise Timeout(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})")


def wait(probe: Callable[[], object], timeout: float, what: str, interval: float = 0.2):
    """`until` for code that has no event loop (a context manager's __enter__)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    raise Timeout(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})")
