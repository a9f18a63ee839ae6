"""The test-side shipper (tests/fakes/shipper.py) through each fake's ingestion API: what the
end-to-end log-server tests rely on to put the sandbox's lines where Respawn reads them."""

from collections.abc import Iterator

import pytest

from tests.fakes._http import FakeServer
from tests.fakes.loki import FakeLoki
from tests.fakes.shipper import Shipper
from tests.fakes.victorialogs import FakeVictoriaLogs


@pytest.fixture(params=["loki", "victorialogs"])
def fake(request: pytest.FixtureRequest) -> Iterator[FakeServer]:
    server: FakeServer = FakeLoki() if request.param == "loki" else FakeVictoriaLogs()
    server.source = request.param  # type: ignore[attr-defined]
    server.start()
    yield server
    server.down()


def test_new_complete_lines_are_pushed_once_labelled_from_the_paths_in_order(tmp_path, fake):
    out, kernel = tmp_path / "out", tmp_path / "kernel"
    out.mkdir(), kernel.mkdir()
    (out / "slurm-7.out").write_text("history\n")
    shipper = Shipper(fake.source, fake.url, out, kernel, interval_s=3600)  # type: ignore[attr-defined]
    with shipper:
        with open(out / "slurm-7.out", "a") as f:
            f.write("step 1\nstep 2\npartial")
        (kernel / "node2.log").write_text("2026-12-01T17:25:04+00:00 node2 kernel: NVRM: Xid 79\n")
        (out / "notes.txt").write_text("not a job's output\n")
        shipper.ship_once()
        shipper.ship_once()  # nothing new: nothing pushed again
    got = [(labels, line) for labels, _, line in sorted(fake.entries, key=lambda e: e[1])]  # type: ignore[attr-defined]
    job = [line for labels, line in got if labels.get("job_id") == "7" and labels.get("stream") == "stdout"]
    assert job == ["step 1", "step 2"]  # no history, no partial line
    assert [line for labels, line in got if labels.get("node") == "node2"] == [
        "2026-12-01T17:25:04+00:00 node2 kernel: NVRM: Xid 79"
    ]
    assert len(got) == 3 and len(fake.pushes) == 1


def test_lines_the_server_refused_are_pushed_again(tmp_path, fake):
    out, kernel = tmp_path / "out", tmp_path / "kernel"
    out.mkdir(), kernel.mkdir()
    shipper = Shipper(fake.source, fake.url, out, kernel, interval_s=3600)  # type: ignore[attr-defined]
    with shipper:
        (out / "slurm-8.out").write_text("step 1\n")
        fake.down()
        with pytest.raises(OSError):
            shipper.ship_once()
        fake.up()
        shipper.ship_once()
    assert [line for _, _, line in fake.entries] == ["step 1"]  # type: ignore[attr-defined]
