"""The room an exclusion must leave a job (activities/evidence.py `_eligible`): its partitions'
nodes that are up and not drained, read from Slurm's own words; None where Slurm does not say."""

from types import SimpleNamespace

from respawn.activities.evidence import EvidenceActivities
from respawn.scheduler.errors import SchedulerError
from respawn.scheduler.slurm import JobInfo, NodeInfo

NODES = [
    NodeInfo(name="n1", state="idle"),
    NodeInfo(name="n2", state="allocated"),
    NodeInfo(name="n3", state="idle", flags=["DRAIN"]),
    NodeInfo(name="n4", state="down"),
    NodeInfo(name="n5", state="idle", flags=["NOT_RESPONDING"]),
    NodeInfo(name="g1", state="idle"),
]


class Slurm:
    def __init__(self, partitions: dict[str, dict[str, str]] | Exception) -> None:
        self._partitions = partitions

    async def partitions(self) -> dict[str, dict[str, str]]:
        if isinstance(self._partitions, Exception):
            raise self._partitions
        return self._partitions


async def eligible(partition: str, partitions) -> list[str] | None:
    evidence = EvidenceActivities(SimpleNamespace(slurm=Slurm(partitions)))  # type: ignore[arg-type]
    job = JobInfo(job_id=7, state="RUNNING", partition=partition)
    return await evidence._eligible(job, NODES)


async def test_the_jobs_partitions_nodes_that_are_up_and_not_drained():
    parts = {"batch": {"Nodes": "n[1-5]"}, "gpu": {"Nodes": "g1"}}
    assert await eligible("batch", parts) == ["n1", "n2"]
    assert await eligible("batch,gpu", parts) == ["g1", "n1", "n2"]  # a job submitted to several
    assert await eligible("gpu", {"gpu": {"Nodes": "ALL"}}) == ["g1", "n1", "n2"]


async def test_where_slurm_does_not_say_every_node_counts_as_before():
    assert await eligible("batch", SchedulerError("scontrol: timed out")) is None
    assert await eligible("batch", {"other": {"Nodes": "n1"}}) is None  # not listed
    assert await eligible("batch", {"batch": {"Nodes": "(null)"}}) is None  # no nodes at all: not trusted
    assert await eligible("batch", {"batch": {"Nodes": "n[1-"}}) is None  # not a hostlist
    assert await eligible("", {"batch": {"Nodes": "n1"}}) is None
