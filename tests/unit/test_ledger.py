from respawn.config.cluster import Budgets
from respawn.decision.ledger import NodeRecord, NodeVerdict, judge_nodes, to_mark_down

BUDGETS = Budgets(node_incidents_to_drain=3, systemic_node_share=0.25)
CLUSTER = [f"n{i}" for i in range(1, 17)]


def test_a_node_implicated_again_and_again_is_recommended_for_drain():
    record = NodeRecord(in_drain_window={"n2": 2, "n3": 1})
    verdict = judge_nodes(["n2"], backed=set(), record=record, budgets=BUDGETS, cluster_nodes=CLUSTER)
    assert verdict.drain == ["n2"] and not verdict.systemic
    # recommended, but only node-level evidence may act on it
    assert verdict.drain_backed == []
    backed = judge_nodes(["n2"], backed={"n2"}, record=record, budgets=BUDGETS, cluster_nodes=CLUSTER)
    assert backed.drain_backed == ["n2"]


def test_below_the_threshold_nothing_is_drained():
    verdict = judge_nodes(
        ["n3"], backed={"n3"}, record=NodeRecord(in_drain_window={"n3": 1}), budgets=BUDGETS, cluster_nodes=CLUSTER
    )
    assert verdict.drain == [] and verdict.drain_backed == []


def test_many_nodes_at_once_is_systemic_and_isolates_nothing():
    record = NodeRecord(in_systemic_window={"n1", "n4", "n5", "n6"}, in_drain_window={"n7": 5})
    verdict = judge_nodes(["n7"], backed={"n7"}, record=record, budgets=BUDGETS, cluster_nodes=CLUSTER)
    assert verdict.systemic and verdict.drain == [] and "5 of 16" in verdict.reason


def test_no_suspect_is_never_systemic():
    record = NodeRecord(in_systemic_window=set(CLUSTER))
    assert not judge_nodes([], backed=set(), record=record, budgets=BUDGETS, cluster_nodes=CLUSTER).systemic


def test_a_node_silent_to_the_probe_is_marked_down_only_when_excluded_and_never_when_systemic():
    assert to_mark_down(["n3"], ["n2", "n3"], NodeVerdict()) == ["n3"]
    assert to_mark_down(["n3"], ["n2"], NodeVerdict()) == []  # silent, but the decision keeps it: Slurm decides
    assert to_mark_down([], ["n3"], NodeVerdict()) == []  # excluded on a job's word or the kernel's: not silent
    assert to_mark_down(["n3", "n4"], ["n3", "n4"], NodeVerdict(systemic=True)) == []
