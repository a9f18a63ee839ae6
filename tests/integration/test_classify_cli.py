"""The `respawn classify` contract (../shared/taxonomy.md), through the installed command.

Each test runs the real console script in a subprocess, so argument parsing,
standard input as bytes, file opening and the exit status are what an operator
or a pipeline gets.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

RESPAWN = Path(sys.executable).with_name("respawn")  # the console script of this environment
FIELDS = {"id", "failure_class", "cause_layer", "node_implicated", "nodes", "recoverable_by_restart", "pattern"}

# Lines these tests write themselves, one per kind of answer.
EXCERPTS = [
    ("oom", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB.", "gpu_oom"),
    ("disk", "OSError: [Errno 28] No space left on device: '/ckpt/step_900'", "storage"),
    ("ok", "step 1200 loss 0.412 lr 3e-4", "benign"),
    (
        "ib",
        "gpu4:811:902 [3] NCCL WARN NET/IB : Got completion from peer 10.2.0.7<4001> with error 12, "
        "opcode 0, len 0, vendor err 129 (Recv)",
        "interconnect",
    ),
    (
        "key",
        'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n'
        "    batch['labels']\nKeyError: 'labels'",
        "app_error",
    ),
]


def classify(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    assert RESPAWN.exists(), f"{RESPAWN} missing: install the package (pip install -e .)"
    return subprocess.run([str(RESPAWN), "classify", *args], input=stdin, capture_output=True, timeout=60, check=False)


def answers(done: subprocess.CompletedProcess[bytes]) -> list[dict]:
    return [json.loads(line) for line in done.stdout.decode().splitlines()]


def jsonl(items: list[dict]) -> bytes:
    return "".join(json.dumps(i) + "\n" for i in items).encode()


def test_a_file_is_answered_line_for_line_in_order(tmp_path):
    items = [{"id": f"{name}-{n}", "text": text} for n in range(40) for name, text, _ in EXCERPTS]
    items.insert(7, {"id": 7, "text": "Killed"})  # ids are echoed as given, numbers too
    path = tmp_path / "excerpts.jsonl"
    path.write_bytes(jsonl(items))

    done = classify(str(path))
    assert done.returncode == 0, done.stderr
    got = answers(done)
    assert [a["id"] for a in got] == [i["id"] for i in items]
    assert all(set(a) == FIELDS for a in got)
    expected = {name: cls for name, _, cls in EXCERPTS}
    for a in got:
        want = "host_oom" if a["id"] == 7 else expected[a["id"].rsplit("-", 1)[0]]
        assert a["failure_class"] == want, a
    ib = next(a for a in got if a["id"] == "ib-0")
    assert ib["nodes"] == ["gpu4"] and ib["node_implicated"] is True


@pytest.mark.parametrize("args", [(), ("-",)], ids=["no-argument", "dash"])
def test_standard_input_is_read_when_there_is_no_file(args):
    done = classify(*args, stdin=jsonl([{"id": "a", "text": EXCERPTS[0][1]}, {"id": "b", "text": "all fine"}]))
    assert done.returncode == 0, done.stderr
    assert [(a["id"], a["failure_class"]) for a in answers(done)] == [("a", "gpu_oom"), ("b", "benign")]


def test_malformed_lines_are_answered_in_place_and_the_run_goes_on():
    lines = [
        json.dumps({"id": "first", "text": EXCERPTS[1][1]}).encode(),
        b"{this is not json",
        b"",
        json.dumps(["a", "list"]).encode(),
        json.dumps({"id": "no-text"}).encode(),
        json.dumps({"text": "an excerpt without id"}).encode(),
        json.dumps({"id": "numeric-text", "text": 42}).encode(),
        b'{"id": "bad-utf8", "text": "\xff\xfe"}',
        json.dumps({"id": "last", "text": EXCERPTS[0][1]}).encode(),  # no newline after the last line
    ]
    done = classify(stdin=b"\n".join(lines))
    assert done.returncode == 0, done.stderr
    got = answers(done)
    assert len(got) == len(lines)
    assert got[0]["id"] == "first" and got[0]["failure_class"] == "storage"
    assert got[-1]["id"] == "last" and got[-1]["failure_class"] == "gpu_oom"
    errors = got[1:-1]
    assert [set(a) for a in errors[:-1]] == [{"id", "error"}] * 6
    assert [a["id"] for a in errors[:-1]] == [None, None, None, "no-text", None, "numeric-text"]
    assert all(isinstance(a["error"], str) and a["error"] for a in errors[:-1])
    # Bad UTF-8 spoils only its own line: decoded with replacement, it is still an excerpt.
    assert errors[-1]["id"] == "bad-utf8" and "error" not in errors[-1]


def test_empty_input_answers_nothing_and_succeeds():
    done = classify(stdin=b"")
    assert (done.returncode, done.stdout) == (0, b"")


@pytest.mark.parametrize("name", ["missing.jsonl", "a-directory"])
def test_input_that_cannot_be_opened_is_a_clear_error(tmp_path, name):
    (tmp_path / "a-directory").mkdir()
    path = tmp_path / name
    done = classify(str(path))
    assert done.returncode != 0
    assert done.stdout == b""
    message = done.stderr.decode()
    assert f"cannot read {path}" in message and "Traceback" not in message


def test_a_reader_that_leaves_early_ends_the_run_quietly(tmp_path):
    """`respawn classify big.jsonl | head -1`: the answers stop where the reader left, with the
    status a shell's own tools give (141, SIGPIPE) and no traceback."""
    corpus = tmp_path / "big.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "text": EXCERPTS[i % 5][1]}) + "\n" for i in range(20_000)))
    proc = subprocess.Popen([str(RESPAWN), "classify", str(corpus)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert json.loads(proc.stdout.readline())["id"] == 0
    proc.stdout.close()  # far more than a pipe holds is still to come
    stderr = proc.stderr.read()
    assert proc.wait(timeout=60) == 141
    assert stderr == b""
