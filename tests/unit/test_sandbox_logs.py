"""The sandbox's logs keep their tail when they grow past the limit, and a daemon that still
writes to one goes on at its new end."""

from pathlib import Path

from respawn.sandbox import procs


def _lines(first: int, last: int) -> bytes:
    return b"".join(b"line %04d\n" % i for i in range(first, last))


def test_a_log_past_the_limit_keeps_its_last_whole_lines(tmp_path: Path) -> None:
    log = tmp_path / "temporal.log"
    log.write_bytes(_lines(0, 100))  # 1,000 bytes
    procs.trim_logs(tmp_path, limit=500, kept=105)
    # The last 105 bytes start mid-line: the partial line goes, ten whole lines stay.
    assert log.read_bytes() == _lines(90, 100)


def test_a_writer_still_appending_goes_on_at_the_new_end(tmp_path: Path) -> None:
    log = tmp_path / "slurmctld.log"
    with open(log, "ab") as daemon:  # as the daemons open theirs
        daemon.write(_lines(0, 100))
        daemon.flush()
        procs.trim_logs(tmp_path, limit=500, kept=100)
        daemon.write(b"after the trim\n")
        daemon.flush()
    assert log.read_bytes() == _lines(90, 100) + b"after the trim\n"


def test_small_logs_and_other_files_are_left_alone(tmp_path: Path) -> None:
    small, other = tmp_path / "munged.log", tmp_path / "slurm.conf"
    small.write_bytes(_lines(0, 10))
    other.write_bytes(_lines(0, 100))
    procs.trim_logs(tmp_path, limit=500, kept=100)
    assert small.read_bytes() == _lines(0, 10)
    assert other.read_bytes() == _lines(0, 100)
