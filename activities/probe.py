"""Ask the job's nodes directly whether they are there, instead of waiting for Slurm to notice.

A communication error that names no culprit is most often the echo of a peer that died, and
Slurm calls a dead node not responding only after SlurmdTimeout's pings (seconds to
minutes). A TCP connection to each node's slurmd (its NodeAddr and Port, as Slurm lists
them) answers at once: refused or timed out means the daemon, and most likely the node, is
gone. It is a proxy for Slurm's own ping, not the ping itself: it needs the worker to reach
the nodes' slurmd port, and where it reaches none of them it cannot tell anything (the
verdict is UNKNOWN and the incident waits for Slurm, as without the probe).
"""

import asyncio
import time

from temporalio import activity

from respawn.activities.errors import as_activity_error
from respawn.scheduler.errors import SchedulerError
from respawn.scheduler.slurm import NodeInfo
from respawn.services import Services
from respawn.wire.incident import Probed, ProbeRequest, ProbeVerdict


class ProbeActivities:
    def __init__(self, services: Services) -> None:
        self._s = services

    @activity.defn(name="probe_nodes")
    async def probe_nodes(self, req: ProbeRequest) -> Probed:
        """Every node of `req.nodes` at once, each bounded by `req.timeout_s`."""
        try:
            listed = {n.name: n for n in await self._s.slurm.nodes()}
        except SchedulerError as exc:
            raise as_activity_error(exc) from exc
        began = time.monotonic()
        wanted = [n for n in req.nodes if n in listed]
        answers = await asyncio.gather(*(_answers(listed[n].address, listed[n].port, req.timeout_s) for n in wanted))
        unknown = sorted(set(req.nodes) - {n for n, a in zip(wanted, answers, strict=True) if a is not None})
        silent = sorted(n for n, a in zip(wanted, answers, strict=True) if a is False)
        answered = sorted(n for n, a in zip(wanted, answers, strict=True) if a is True)
        if not answered:
            verdict = ProbeVerdict.UNKNOWN  # nobody answered: the worker's view, not the nodes', may be the problem
        else:
            verdict = ProbeVerdict.SILENT if silent else ProbeVerdict.ALL_ANSWERED
        return Probed(
            verdict=verdict,
            silent=silent if verdict is ProbeVerdict.SILENT else [],
            answered=answered,
            unknown=unknown,
            seconds=round(time.monotonic() - began, 3),
        )


async def silent(node: NodeInfo, timeout_s: float) -> bool:
    """Whether `node`'s slurmd refuses or ignores a connection (a node Slurm lists no address for is not)."""
    return await _answers(node.address, node.port, timeout_s) is False


async def _answers(address: str | None, port: int | None, timeout_s: float) -> bool | None:
    """True: slurmd accepted a connection; False: refused or no answer in time; None: not asked."""
    if not address or port is None:
        return None
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(address, port), timeout=timeout_s)
    except (TimeoutError, OSError):
        return False
    writer.close()
    try:
        await asyncio.wait_for(writer.wait_closed(), timeout=timeout_s)
    except (TimeoutError, OSError):
        pass
    return True
