import io
import json

from respawn.attribution.classify import run
from respawn.attribution.runbook import Catalogue


def classify(catalogue: Catalogue, *lines: str) -> tuple[int, list[dict]]:
    out = io.StringIO()
    status = run(io.StringIO("".join(line + "\n" for line in lines)), out, catalogue)
    return status, [json.loads(line) for line in out.getvalue().splitlines()]


def item(ident, text: str) -> str:
    return json.dumps({"id": ident, "text": text, "source": "test"})


def test_answers_in_input_order_with_the_contract_fields(catalogue):
    status, answers = classify(
        catalogue,
        item("x1", "gpu9:1:2 [0] NCCL WARN NET/IB : Got completion from peer 10.1.1.1<9> with error 12, opcode 0"),
        item("x2", "KeyError: 'pixel_values'"),
        item(3, "all good: step 12 loss 0.4"),
    )
    assert status == 0
    assert [a["id"] for a in answers] == ["x1", "x2", 3]
    assert answers[0] == {
        "id": "x1",
        "failure_class": "interconnect",
        "cause_layer": "infrastructure_network",
        "node_implicated": True,
        "nodes": ["gpu9"],
        "recoverable_by_restart": True,
        "pattern": "nccl-ib-completion-error",
    }
    assert answers[1]["failure_class"] == "app_error" and answers[1]["recoverable_by_restart"] is False
    assert answers[2] == {
        "id": 3,
        "failure_class": "benign",
        "cause_layer": "benign",
        "node_implicated": False,
        "nodes": [],
        "recoverable_by_restart": None,
        "pattern": None,
    }


def test_malformed_lines_get_an_error_in_place_and_the_run_goes_on(catalogue):
    status, answers = classify(
        catalogue,
        "{not json",
        item("ok1", "Killed"),
        json.dumps(["a", "list"]),
        json.dumps({"id": "no-text"}),
        json.dumps({"text": "no id"}),
        json.dumps({"id": "bad-text", "text": 42}),
        "",
        item("ok2", "OSError: [Errno 28] No space left on device"),
    )
    assert status == 0
    assert len(answers) == 8
    assert [set(a) for a in answers if "error" in a] == [{"id", "error"}] * 6
    assert answers[0]["id"] is None and answers[3]["id"] == "no-text" and answers[5]["id"] == "bad-text"
    assert answers[1]["id"] == "ok1" and answers[1]["failure_class"] == "host_oom"
    assert answers[7]["id"] == "ok2" and answers[7]["failure_class"] == "storage"


def test_multi_line_excerpt_is_one_answer(catalogue):
    text = 'Traceback (most recent call last):\n  File "t.py", line 1, in <module>\nImportError: cannot import x'
    status, answers = classify(catalogue, item("tb", text))
    assert status == 0 and len(answers) == 1 and answers[0]["pattern"] == "python-import-error"


def test_empty_input_writes_nothing(catalogue):
    assert classify(catalogue) == (0, [])


class _Unreadable(io.StringIO):
    def __iter__(self):
        raise OSError("device not ready")


def test_unreadable_input_exits_non_zero(catalogue, capsys):
    assert run(_Unreadable(), io.StringIO(), catalogue) != 0
    assert "cannot read input" in capsys.readouterr().err


def test_loads_the_built_in_runbooks_by_default():
    out = io.StringIO()
    assert run(io.StringIO(item("a", "RuntimeError: CUDA error: uncorrectable ECC error encountered") + "\n"), out) == 0
    assert json.loads(out.getvalue())["failure_class"] == "gpu_hardware"


def test_bad_utf8_on_a_byte_stream_is_one_malformed_line(catalogue):
    raw = (
        (item("a", "Killed") + "\n").encode() + b'{"id": "b", "text": "\xff\xfe"}\n' + (item("c", "x") + "\n").encode()
    )
    stream = io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8")
    out = io.StringIO()
    assert run(stream, out, catalogue) == 0
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [a["id"] for a in answers] == ["a", "b", "c"]
    assert answers[1]["failure_class"] == "benign"
