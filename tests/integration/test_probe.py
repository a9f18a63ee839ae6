"""The node probe (activities/probe.py) against the sandbox's real slurmds: every node
answers; a node whose slurmd was killed is silent at once, long before Slurm calls it down."""

import time

from respawn.activities.probe import ProbeActivities
from respawn.sandbox import kill_node, start_node
from respawn.sandbox.labconfig import lab_config
from respawn.services import build_services
from respawn.wire.incident import ProbeRequest, ProbeVerdict

NODES = ["node1", "node2", "node3", "node4"]


async def test_the_live_nodes_answer_and_a_killed_one_is_silent(sandbox):
    probe = ProbeActivities(build_services(lab_config(sandbox)))
    alive = await probe.probe_nodes(ProbeRequest(nodes=NODES, timeout_s=1.0))
    assert (alive.verdict, alive.answered, alive.silent) == (ProbeVerdict.ALL_ANSWERED, NODES, [])

    kill_node(sandbox, "node4")
    try:
        began = time.monotonic()
        dead = await probe.probe_nodes(ProbeRequest(nodes=NODES, timeout_s=1.0))
        assert (dead.verdict, dead.silent, dead.answered) == (ProbeVerdict.SILENT, ["node4"], NODES[:3])
        assert time.monotonic() - began < 2.5  # bounded by the timeout, not by Slurm's SlurmdTimeout
        # A name Slurm does not list is not asked, and says so.
        unknown = await probe.probe_nodes(ProbeRequest(nodes=["node9"], timeout_s=1.0))
        assert (unknown.verdict, unknown.unknown) == (ProbeVerdict.UNKNOWN, ["node9"])
    finally:
        start_node(sandbox, "node4")
