from pathlib import Path

import pytest

from respawn.attribution.runbook import Action, Catalogue, Pattern, Runbook, RunbookError, Rung
from respawn.wire.taxonomy import CauseLayer, FailureClass

GOOD = """\
failure_class: storage
cause_layer: storage
recoverable_by_restart: true
patterns:
  - id: disk-full
    regex: 'No space left on device'
    recoverable_by_restart: false
ladder:
  - action: restart
"""


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text)
    return path


def test_built_in_catalogue_covers_every_failure_class():
    catalogue = Catalogue.load()
    assert set(catalogue.runbooks) == set(FailureClass)
    for failure_class, book in catalogue.runbooks.items():
        assert book.failure_class is failure_class and book.ladder


def test_built_in_ladders():
    catalogue = Catalogue.load()
    rung = lambda cls, n: catalogue.runbook(cls).rung_for(n)  # noqa: E731
    # Finest first: in the allocation (when the job runs the launcher), then the requeue.
    assert [rung(FailureClass.GPU_HARDWARE, n) for n in (1, 2, 3, 4)] == [
        Action.REPLACE_NODE,
        Action.RESTART_EXCLUDING,
        Action.RESTART_EXCLUDING,
        Action.STOP,
    ]
    assert [rung(FailureClass.GPU_FAULT, n) for n in (1, 2, 3, 4)] == [
        Action.RESTART_IN_PLACE,
        Action.REPLACE_NODE,
        Action.RESTART_EXCLUDING,
        Action.STOP,
    ]
    assert [rung(FailureClass.COMM_TIMEOUT, n) for n in (1, 2, 3)] == [
        Action.RESTART_IN_PLACE,
        Action.RESTART,
        Action.RESTART_EXCLUDING,
    ]
    assert [rung(FailureClass.PROCESS_CRASH, n) for n in (1, 2)] == [Action.RESTART_IN_PLACE, Action.STOP]
    # Without a launcher each in-job rung is the requeue it falls back to: the ladders of before.
    assert [a.fallback for a in Action] == [
        Action.RESTART,
        Action.RESTART_EXCLUDING,
        Action.RESTART,
        Action.RESTART_EXCLUDING,
        Action.STOP,
    ]
    for cls in (FailureClass.APP_ERROR, FailureClass.GPU_OOM, FailureClass.HOST_OOM, FailureClass.NUMERICAL):
        assert rung(cls, 1) is Action.STOP
    assert rung(FailureClass.SCHEDULER_LIMIT, 50) is Action.RESTART


def test_rung_for_walks_the_ladder_then_stops():
    book = Runbook(
        failure_class=FailureClass.HANG,
        cause_layer=CauseLayer.AMBIGUOUS,
        recoverable_by_restart=True,
        ladder=[Rung(action=Action.RESTART, times=2), Rung(action=Action.RESTART_EXCLUDING)],
    )
    assert [book.rung_for(n) for n in (1, 2, 3, 4)] == [
        Action.RESTART,
        Action.RESTART,
        Action.RESTART_EXCLUDING,
        Action.STOP,
    ]


def test_a_good_file_loads(tmp_path):
    write(tmp_path, "storage.yaml", GOOD)
    catalogue = Catalogue.load(tmp_path)
    assert catalogue.runbook(FailureClass.STORAGE).patterns[0].recoverable(True) is False


def test_explicit_null_override_means_unknown():
    assert Pattern(id="a", regex="x", recoverable_by_restart=None).recoverable(True) is None
    assert Pattern(id="a", regex="x").recoverable(True) is True


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("failure_class: storage\n  bad: [indent", "storage.yaml: "),
        (GOOD.replace("regex: 'No space left on device'", "regex: '(?<=no)space'"), "not an RE2 regex"),
        (GOOD.replace("ladder:\n  - action: restart\n", "ladder: []\n"), "ladder must have at least one rung"),
        (GOOD.replace("cause_layer: storage", "cause_layer: disks"), "cause_layer"),
        (GOOD + "colour: blue\n", "colour: not a setting here (known: cascade, cause_layer,"),
        (
            GOOD.replace("  - id: disk-full", "  - id: disk-full\n    prority: 3"),
            "patterns.0.prority: not a setting here; did you mean 'priority'?",
        ),
        (GOOD.replace("    recoverable_by_restart: false\n", "    xid_codes: [79]\n"), "needs a (?P<xid>...) group"),
        (GOOD.replace("id: disk-full", "id: Disk Full"), "patterns.0.id"),
        (GOOD + "  - action: explode\n", "ladder.1.action"),
        (
            GOOD.replace("    recoverable_by_restart: false\n", "    vetoes: traceback\n"),
            "only a benign pattern vetoes a traceback: disk-full",
        ),
    ],
)
def test_a_bad_runbook_is_one_line_error(tmp_path, text, expected):
    write(tmp_path, "storage.yaml", text)
    with pytest.raises(RunbookError) as raised:
        Catalogue.load(tmp_path)
    message = str(raised.value)
    assert "\n" not in message and expected in message and "storage.yaml" in message


def test_every_mistake_of_a_runbook_is_named_at_once(tmp_path):
    text = GOOD.replace("cause_layer: storage", "cause_layer: disks").replace(
        "  - id: disk-full", "  - id: disk-full\n    regx: x"
    )
    write(tmp_path, "storage.yaml", text)
    with pytest.raises(RunbookError) as raised:
        Catalogue.load(tmp_path)
    assert str(raised.value).splitlines()[1:] == [
        "  cause_layer: Input should be 'hardware', 'infrastructure_network', 'system_software', 'storage', "
        "'scheduler', 'application', 'benign' or 'ambiguous'",
        "  patterns.0.regx: not a setting here; did you mean 'regex'?",
    ]


def test_second_runbook_for_a_class_is_refused(tmp_path):
    write(tmp_path, "a.yaml", GOOD)
    write(tmp_path, "b.yaml", GOOD.replace("disk-full", "other"))
    with pytest.raises(RunbookError, match="second runbook for storage"):
        Catalogue.load(tmp_path)


def test_pattern_ids_are_unique_across_runbooks(tmp_path):
    write(tmp_path, "a.yaml", GOOD)
    write(tmp_path, "b.yaml", GOOD.replace("failure_class: storage", "failure_class: launch"))
    with pytest.raises(RunbookError, match="pattern ids used twice: disk-full"):
        Catalogue.load(tmp_path)


def test_empty_directory_is_refused(tmp_path):
    with pytest.raises(RunbookError, match="no runbook files"):
        Catalogue.load(tmp_path)


def test_communication_failures_are_the_cascades(catalogue):
    """The classes an incident waits on for a dead node (runbooks' `cascade: true`)."""
    assert {b.failure_class.value for b in catalogue.runbooks.values() if b.cascade} == {"comm_error", "comm_timeout"}
