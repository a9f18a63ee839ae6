"""The reference controller while the Advisor API does not answer (respawn/advisor/controller.py):
it tries again less and less often, doubling its wait, instead of a warning at every poll."""

import asyncio
import logging
import time

import httpx

from respawn.advisor.controller import Controller
from respawn.scheduler.slurm import Slurm
from respawn.scheduler.transport import LocalTransport
from tests.ports import unused_port


async def test_an_unreachable_advisor_api_is_tried_again_less_and_less_often(caplog):
    port = unused_port()
    caplog.set_level(logging.WARNING, logger="respawn.advisor.controller")
    stop = asyncio.Event()
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as api:
        running = asyncio.create_task(Controller(Slurm(LocalTransport()), api).run(stop, interval_s=0.05))
        deadline = time.monotonic() + 10
        while len(caplog.records) < 4:
            assert time.monotonic() < deadline, caplog.text
            await asyncio.sleep(0.02)
        stop.set()
        await asyncio.wait_for(running, timeout=5)
    waits = [r.getMessage().rsplit("trying again in ", 1)[1] for r in caplog.records[:4]]
    assert waits == ["0.1 s", "0.2 s", "0.4 s", "0.8 s"]
