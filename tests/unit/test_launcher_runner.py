"""The launcher's rules that need no Slurm (respawn/launcher/runner.py): where a relaunch
excluding nodes runs, and when a prepared step spanning other nodes may serve it."""

import json
import stat
from pathlib import Path

import pytest

from respawn.launcher.runner import Launcher


def launcher(tmp_path: Path, nodes: str, spares: int, min_nodes: int | None = None) -> Launcher:
    return Launcher(
        ["python", "train.py"],
        nodes=nodes.split(","),
        spares=spares,
        channel_dir=tmp_path,
        wait_s=1,
        srun=str(tmp_path / "srun"),
        min_nodes=min_nodes,
    )


def test_an_excluded_node_is_replaced_by_a_spare_in_its_place(tmp_path):
    job = launcher(tmp_path, "node1,node2,node3,node4", spares=1)
    assert job.step_nodes == ["node1", "node2", "node3"] and job.spares == ["node4"]
    assert job._exclude(["node2"]) is None
    # The spare takes node2's ranks: rank 0 stays on node1, the step keeps its width.
    assert job.step_nodes == ["node1", "node4", "node3"] and job.spares == [] and job.excluded == ["node2"]


def test_with_no_spare_left_a_job_that_can_shrink_runs_on_fewer_nodes(tmp_path):
    job = launcher(tmp_path, "node1,node2,node3,node4", spares=1, min_nodes=2)
    assert job._exclude(["node2", "node3"]) is None
    assert job.step_nodes == ["node1", "node4"] and job.spares == []
    refused = job._exclude(["node4"])
    assert refused == "1 node(s) to replace and 0 spare(s) left (the step needs 2)"
    assert job.step_nodes == ["node1", "node4"]  # a refusal changes nothing


def test_a_job_that_cannot_shrink_refuses_what_its_spares_cannot_cover(tmp_path):
    job = launcher(tmp_path, "node1,node2,node3", spares=1)
    assert job._exclude(["node1", "node2"]) == "2 node(s) to replace and 1 spare(s) left (the step needs 2)"
    assert job._exclude(["node9"]) == "not in this job's allocation: node9"
    with pytest.raises(ValueError, match="cannot need 3"):
        launcher(tmp_path, "node1,node2,node3", spares=1, min_nodes=3)


def sinfo_printing(tmp_path: Path, output: str, code: int = 0) -> None:
    """A `sinfo` beside the launcher's srun that prints `output` (what Slurm's would, --format=%N %T)."""
    sinfo = tmp_path / "sinfo"
    sinfo.write_text(f"#!/bin/sh\nprintf '%s' '{output}'\nexit {code}\n")
    sinfo.chmod(sinfo.stat().st_mode | stat.S_IXUSR)


@pytest.mark.parametrize(
    ("listing", "code", "why"),
    [
        ("node2 drained\nnode4 idle\n", 0, None),  # a drained node ends no step
        ("node2 mixed\nnode4 idle*\n", 0, "nodes not up: node4 idle*"),  # not responding
        ("node2 down*\nnode4 idle\n", 0, "nodes not up: node2 down*"),
        ("node4 idle\n", 0, "nodes not up: node2 not listed"),
        ("", 1, "sinfo exited 1: "),
    ],
)
def test_a_prepared_step_serves_only_where_every_node_it_spans_beyond_the_step_is_up(tmp_path, listing, code, why):
    job = launcher(tmp_path, "node1,node2,node3,node4", spares=1)
    sinfo_printing(tmp_path, listing, code)
    assert job._unusable(["node2", "node4"]) == why
    assert job._unusable([]) is None  # nothing beyond the step: no sinfo at all


def test_a_relaunch_started_cold_carries_the_plan_that_ranks_it_as_a_prepared_one(tmp_path):
    """srun ranks a step by Slurm's node order; after a replacement the launcher's plan puts the
    spare in the excluded node's place, as the go plan of a prepared step does."""
    srun = tmp_path / "srun"
    seen = tmp_path / "seen"
    srun.write_text(f'#!/bin/sh\nprintf "%s" "${{RESPAWN_GO_PLAN:-none}}" > {seen}\n')
    srun.chmod(srun.stat().st_mode | stat.S_IXUSR)
    job = launcher(tmp_path, "node1,node2,node3,node4", spares=1)
    job._start()
    job._wait_step()
    assert seen.read_text() == "none"  # the first start: srun's ranks are the plan's
    assert job._exclude(["node2"]) is None
    job.restarts = 1
    job._start()
    job._wait_step()
    plan = Path(seen.read_text())
    assert plan.parent == tmp_path and json.loads(plan.read_text()) == {
        "nodes": ["node1", "node4", "node3"],
        "tasks_per_node": 1,
    }
