"""The Loki client against the fake Loki (tests/fakes/loki.py): the shared cases, and Loki's request shapes."""

from collections.abc import Iterator

import pytest

from respawn.sources.logstream import Selector, Status
from tests.fakes.loki import FakeLoki
from tests.unit._logstream_cases import *  # noqa: F403 (the cases both servers pass)
from tests.unit._logstream_cases import JOB7, NODE1, XID, Backend, Follower, S


@pytest.fixture
def backend() -> Iterator[Backend]:
    fake = FakeLoki()
    fake.start()
    try:
        yield Backend("loki", fake, "/loki/api/v1/query_range", "/loki/api/v1/series", fake.push)
    finally:
        fake.stop()


def test_requests_are_loki_query_range_with_the_sites_labels(backend: Backend) -> None:
    backend.line({"cluster": "gpu-a", "slurm_job": "7", "src": "stdout"}, "hello", S)
    backend.line({"cluster": "gpu-a", "host": "node1", "src": "kern"}, XID, S)
    labels = {
        "job_id": "slurm_job",
        "node": "host",
        "stream": "src",
        "job_stream": "stdout",
        "kernel_stream": "kern",
        "match": {"cluster": "gpu-a"},
    }
    stream = backend.stream(labels=labels, tenant="team-a", max_lines=100)
    follow = Follower(stream, [JOB7, Selector.job(12), NODE1, Selector.kernel("node2.rack-1")], backend.start())
    polls = follow.poll()
    assert follow.read[JOB7] == ["hello"] and follow.read[NODE1] == [XID]
    jobs, kernels = backend.queries()[:2]
    assert jobs.method == "GET"
    assert jobs.param("query") == '{cluster="gpu-a", src="stdout", slurm_job=~"12|7"}'
    assert kernels.param("query") == '{cluster="gpu-a", src="kern", host=~"node1|node2\\\\.rack\\\\-1"}'
    assert jobs.param("direction") == "forward" and jobs.param("limit") == "200"
    assert jobs.param("start") == str(backend.t0) and int(jobs.param("end") or 0) > backend.t0
    assert jobs.headers["x-scope-orgid"] == "team-a"
    series = [r for r in backend.fake.requests if r.path == "/loki/api/v1/series"]
    assert [r.param("match[]") for r in series] == [
        '{cluster="gpu-a", src="stdout", slurm_job="12"}',
        '{cluster="gpu-a", src="kern", host="node2.rack-1"}',
    ]
    assert polls[Selector.job(12)].status is Status.MISSING


def test_a_stream_that_fills_a_shared_answer_is_asked_for_alone(backend: Backend) -> None:
    for n in range(300):
        backend.push_job(1, f"flood {n}", n * S // 1000)
    backend.push_job(2, "quiet", 1 * S)
    follow = Follower(backend.stream(max_lines=50), [Selector.job(1), Selector.job(2)], backend.start())
    follow.poll()
    assert follow.read[Selector.job(2)] == ["quiet"]
    follow.poll()
    queries = [r.param("query") for r in backend.queries()]
    assert queries[0] == '{job_id=~"1|2"}'
    assert queries[1] == '{job_id="2"}'  # the same poll: the quiet stream again, without the flood
    assert queries[2:4] == ['{job_id="2"}', '{job_id="1"}']  # then the others together first, the flood alone
    assert all(int(r.param("limit") or 0) <= 5000 for r in backend.queries())


def test_the_query_limit_respects_lokis_max_entries(backend: Backend) -> None:
    backend.fake.max_entries = 100  # type: ignore[attr-defined]
    for n in range(150):
        backend.push_job(7, f"line {n}", (n + 1) * S // 100)
    follow = Follower(backend.stream(max_lines=5000, max_entries_per_query=100), [JOB7], backend.start())
    for _ in range(3):
        follow.poll()
    assert follow.read[JOB7] == [f"line {n}" for n in range(150)]
