"""The recovery actions on Slurm, written once: hold, exclude, release, drain, mark down, cancel.

Each reads the scheduler's state first and acts only when the desired state does
not hold yet, so a retry after a crash, or a controller applying the same advice
again, never acts twice. The incident's activities (respawn/activities/scheduler.py)
and the reference controller (respawn/advisor/controller.py) both act through
these; only what they record and how they report errors differ.

Each read is among the many a storm's incidents make at once, read in one call
(respawn/scheduler/batched.py), not a controller call or two each. `hold` and `release` do
not look at a job's excluded nodes and say so (`exclusions=False`), sparing the read beside
the job's; `exclude` reads them, and `settled` keeps them for the evidence (the decision
keeps an earlier attempt's exclusions).
"""

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from respawn.scheduler.errors import JobCompleting, JobGone, JobNotPending, JobPending
from respawn.scheduler.slurm import JobInfo, NodeInfo, Slurm
from respawn.scheduler.states import ENDED, ENDED_AS_MEANT, REQUEUED_BY_SLURM, NodeState

# Pending for one of these reasons: held, so a release is due before it can start.
HELD_REASONS = frozenset({"jobhelduser", "jobheldadmin"})
# Ended for good: a stopped job in one of these is already where it should be.
_STAYS_ENDED = ENDED - REQUEUED_BY_SLURM
_NODE_REASON = 200  # characters of a drain or down reason kept: Slurm shows it in every `sinfo -R`


@dataclass(frozen=True, slots=True)
class Outcome:
    changed: bool  # False: the state already held (done before a crash, or by Slurm itself)
    detail: str
    added: tuple[str, ...] = ()  # exclude: the nodes it excluded that were not excluded before


async def hold(slurm: Slurm, job_id: int, attempt: int) -> Outcome:
    """Requeue the attempt in held state, once. Slurm's restart count is the durable
    witness: once it is past the attempt, the requeue happened (by us before a
    crash, or by Slurm itself after a node failure) and must not happen again."""
    job = await slurm.job(job_id, exclusions=False)
    if job.restart_count > attempt:
        # Whether the requeue is held is known once it completed (22.05 prints COMPLETING
        # in place of PENDING until then): the caller retries.
        not_completing(job)
        if job.state == "PENDING" and job.state_reason.lower() not in HELD_REASONS:
            # Slurm requeued it itself (its node called DOWN): held now, so it does not start
            # at its BeginTime before its exclusions are in place.
            await slurm.hold(job_id)
            return Outcome(True, f"held the requeue Slurm made (restart count {job.restart_count})")
        return Outcome(False, f"already requeued (restart count {job.restart_count})")
    if job.state in ENDED_AS_MEANT:
        # The owner cancelled it, or it finished: recovery has nothing left to do.
        raise JobGone(f"job is {job.state}")
    if job.state == "PENDING":
        return Outcome(False, f"already pending ({job.state_reason})")
    try:
        await slurm.requeue_hold(job_id)
    except JobPending:
        # Slurm requeued it between our read and our call (a node failure).
        return Outcome(False, "requeued by Slurm meanwhile")
    return Outcome(True, f"requeued held from {job.state}")


async def exclude(slurm: Slurm, job_id: int, nodes: list[str]) -> Outcome:
    """Set the job's excluded nodes to exactly `nodes`."""
    job = await slurm.job(job_id)
    not_completing(job)
    excluded = job.excluded_nodes or []  # a job's own read always says
    if sorted(excluded) == sorted(nodes):
        return Outcome(False, "exclusions already in place")
    await slurm.set_excluded_nodes(job_id, nodes)
    added = tuple(sorted(set(nodes) - set(excluded)))
    return Outcome(True, f"excluded {','.join(nodes) or 'none'}", added)


async def release(slurm: Slurm, job_id: int) -> Outcome:
    """Release the held job and ask for an immediate start (no requeue back-off)."""
    job = await slurm.job(job_id, exclusions=False)
    not_completing(job)
    if job.state != "PENDING":
        return Outcome(False, f"already {job.state}")
    if job.state_reason.lower() in HELD_REASONS:
        await slurm.release(job_id)
    try:
        await slurm.start_now(job_id)
    except JobNotPending:
        # Slurm started it between the release and the start-time update (a storm, issue 17):
        # the release did its work; nothing failed.
        return Outcome(True, "released; Slurm started it before the start time was moved")
    return Outcome(True, "released")


async def drain(slurm: Slurm, nodes: list[str], reason: str) -> list[str]:
    """Take the nodes out of the pool with the reason on them; returns those drained now."""
    drained = []
    for name in nodes:
        node = await slurm.node(name)
        if node.drained:
            continue
        await slurm.drain(name, reason[:_NODE_REASON])
        drained.append(name)
    return drained


async def mark_down(
    slurm: Slurm, nodes: list[str], reason: str, silent: Callable[[NodeInfo], Awaitable[bool]]
) -> tuple[list[str], list[str]]:
    """Call DOWN each node whose slurmd is still `silent` when asked once more; returns those
    marked now and those that answered this time (left alone: a daemon restarting, a blip).
    A node Slurm already calls DOWN is left as it is."""
    marked, answered = [], []
    for name in nodes:
        node = await slurm.node(name)
        if node.state is NodeState.DOWN:
            continue
        if not await silent(node):
            answered.append(name)
            continue
        await slurm.mark_down(name, reason[:_NODE_REASON])
        marked.append(name)
    return marked, answered


async def until_not_completing(slurm: Slurm, job_id: int, within_s: float, every_s: float = 0.25) -> bool:
    """Whether the job let go of its nodes within `within_s`, read every `every_s`: after a node
    is called DOWN, Slurm's requeue completes once the other nodes' steps are killed, and the
    hold and exclusion can go on at once rather than at a retry's back-off."""
    deadline = time.monotonic() + within_s
    while True:
        if not (await slurm.job(job_id, exclusions=False)).completing:
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(every_s)


async def settled(slurm: Slurm, job_id: int, within_s: float, every_s: float = 0.25) -> JobInfo:
    """The job read whole once it has stopped completing, waiting at most `within_s`. While a job
    completes, Slurm lists as its nodes only those still completing (job_mgr.c packs
    node_bitmap_cg), so a read then would miss the nodes that finished first, and a rank's
    placement would shift onto the wrong node. A node that does not answer keeps the job
    completing until it is called DOWN: then the read as it is, after `within_s`."""
    job = await slurm.job(job_id)  # whole: the evidence carries its exclusions to the decision
    if job.completing and await until_not_completing(slurm, job_id, within_s, every_s):
        job = await slurm.job(job_id)
    return job


async def cancel(slurm: Slurm, job: JobInfo) -> Outcome:
    """Cancel the job unless it is in a state it does not leave by itself."""
    if job.state in _STAYS_ENDED:
        return Outcome(False, f"already {job.state}")
    await slurm.cancel(job.job_id)
    return Outcome(True, f"cancelled ({job.state})")


def not_completing(job: JobInfo) -> None:
    """A requeued job stays completing until every node let go of it (a dead node:
    until Slurm declares it DOWN): 22.05 prints it COMPLETING, 24.11 PENDING with
    the COMPLETING flag. The caller retries, with backoff, until no node holds it."""
    if job.completing:
        raise JobCompleting(f"job {job.job_id} is still completing")
