"""The VictoriaLogs client against the fake (tests/fakes/victorialogs.py): the shared cases, and its request shapes."""

from collections.abc import Iterator

import pytest

from respawn.sources.logstream import Selector
from respawn.sources.logstream.victorialogs import format_ns, parse_ns
from tests.fakes.victorialogs import FakeVictoriaLogs
from tests.unit._logstream_cases import *  # noqa: F403 (the cases both servers pass)
from tests.unit._logstream_cases import JOB7, NODE1, XID, Backend, Follower, S


@pytest.fixture
def backend() -> Iterator[Backend]:
    fake = FakeVictoriaLogs()
    fake.start()
    try:
        yield Backend("victorialogs", fake, "/select/logsql/query", "/select/logsql/field_values", fake.push)
    finally:
        fake.stop()


def test_requests_are_logsql_queries_bounded_per_stream(backend: Backend) -> None:
    backend.line({"cluster": "gpu-a", "slurm.job": "7", "src": "stdout"}, "hello", S)
    backend.line({"cluster": "gpu-a", "host.name": "node1", "src": "kern"}, XID, S)
    labels = {
        "job_id": "slurm.job",
        "node": "host.name",
        "stream": "src",
        "job_stream": "stdout",
        "kernel_stream": "kern",
        "match": {"cluster": "gpu-a"},
    }
    follow = Follower(
        backend.stream(labels=labels, tenant="12", max_lines=100), [JOB7, Selector.job(12), NODE1], backend.start()
    )
    follow.poll()
    assert follow.read[JOB7] == ["hello"] and follow.read[NODE1] == [XID]
    jobs, kernels = backend.queries()[:2]
    assert jobs.param("query") == (
        'cluster:="gpu-a" src:="stdout" slurm.job:in("12", "7")'
        " | sort by (_time) limit 100 partition by (slurm.job) | fields _time, slurm.job, _msg"
    )
    assert kernels.param("query") == (
        'cluster:="gpu-a" src:="kern" host.name:="node1"'
        " | sort by (_time) limit 100 partition by (host.name) | fields _time, host.name, _msg"
    )
    assert jobs.param("start") == format_ns(backend.t0)
    assert jobs.headers["accountid"] == "12"
    probes = [r for r in backend.fake.requests if r.path == "/select/logsql/field_values"]
    assert [(r.param("query"), r.param("field")) for r in probes] == [
        ('cluster:="gpu-a" src:="stdout" slurm.job:="12"', "slurm.job")
    ]


def test_time_stamps_keep_their_nanoseconds() -> None:
    assert parse_ns("2026-12-01T17:25:04.123456789Z") == parse_ns("2026-12-01T19:25:04.123456789+02:00")
    ns = parse_ns("2026-12-01T17:25:04.123456789Z")
    assert ns is not None and ns % 1_000_000_000 == 123456789
    assert format_ns(ns) == "2026-12-01T17:25:04.123456789Z"
    assert parse_ns("2026-12-01T17:25:04Z") == ns - 123456789
    assert parse_ns("yesterday") is None and parse_ns("2026-13-01T00:00:00Z") is None
