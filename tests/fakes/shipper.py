"""A test-side log shipper: tails the sandbox's job output files and the nodes' kernel-log
files and pushes their new lines to a log server through its documented ingestion API, as
Promtail or Grafana Alloy (Loki) and Vector or Fluent Bit (VictoriaLogs) do at a site. With it,
an end-to-end test switches `logs.source` and Respawn reads only the server.

- Loki: `POST /loki/api/v1/push`, JSON body `{"streams": [{"stream": {labels}, "values":
  [["<ns>", "<line>"], ...]}]}` (grafana.com/docs/loki/latest/reference/loki-http-api/#ingest-logs);
- VictoriaLogs: `POST /insert/jsonline?_stream_fields=...&_msg_field=_msg&_time_field=_time`,
  one JSON object per line (docs.victoriametrics.com/victorialogs/data-ingestion/).

Labels as the documentation recommends a site sets them: a job's output gets its job id from
the file's path (`slurm-<id>.out`, Slurm's own naming), never from what the job prints; a
kernel log gets its node from its file name. Lines are stamped when shipped (as Promtail does
without a timestamp stage), in order. Only complete lines are shipped. Files already there
when the shipper starts are shipped from their end: their past is history, not news.
"""

import json
import re
import threading
import time
import urllib.request
from pathlib import Path

_JOB_FILE = re.compile(r"^slurm-(\d+)\.out$")
_BATCH_BYTES = 1 << 20  # read per file per round at most


class Shipper:
    def __init__(self, source: str, url: str, out_dir: Path, kernel_dir: Path, interval_s: float = 0.1) -> None:
        if source not in ("loki", "victorialogs"):
            raise ValueError(f"no shipper for {source}")
        self.source, self.url = source, url.rstrip("/")
        self.out_dir, self.kernel_dir = out_dir, kernel_dir
        self.interval_s = interval_s
        self.shipped = 0  # lines
        self._offsets: dict[Path, int] = {}
        self._last_ns = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "Shipper":
        for path in self._files():
            self._offsets[path] = path.stat().st_size
        self._thread = threading.Thread(target=self._run, name=f"shipper-{self.source}", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _files(self) -> list[Path]:
        jobs = [p for p in self.out_dir.glob("slurm-*.out") if _JOB_FILE.match(p.name)]
        return jobs + list(self.kernel_dir.glob("*.log"))

    def _labels(self, path: Path) -> dict[str, str]:
        job = _JOB_FILE.match(path.name)
        if path.parent == self.out_dir and job:
            return {"job_id": job.group(1), "stream": "stdout"}
        return {"node": path.stem, "stream": "kernel"}

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.ship_once()
            except OSError:
                pass  # the server is down or a file went away: the next round ships from the same offsets

    def ship_once(self) -> None:
        batch: list[tuple[dict[str, str], list[str]]] = []
        moved: dict[Path, int] = {}
        for path in self._files():
            offset = self._offsets.get(path, 0)
            try:
                if path.stat().st_size <= offset:
                    continue  # nothing new (the sandbox's files only grow)
                with open(path, "rb") as f:
                    f.seek(offset)
                    data = f.read(_BATCH_BYTES)
            except OSError:
                continue
            end = data.rfind(b"\n") + 1
            if end:
                lines = data[:end].decode("utf-8", "replace").splitlines()
                batch.append((self._labels(path), lines))
                moved[path] = offset + end
        if not batch:
            return
        self._push(batch)
        self._offsets.update(moved)  # only once the server took them: nothing lost
        self.shipped += sum(len(lines) for _, lines in batch)

    def _stamp(self) -> int:
        self._last_ns = max(time.time_ns(), self._last_ns + 1)
        return self._last_ns

    def _push(self, batch: list[tuple[dict[str, str], list[str]]]) -> None:
        if self.source == "loki":
            streams = [
                {"stream": labels, "values": [[str(self._stamp()), t] for t in lines]} for labels, lines in batch
            ]
            body, path = json.dumps({"streams": streams}).encode(), "/loki/api/v1/push"
            kind = "application/json"
        else:
            rows = [
                json.dumps({"_time": _rfc3339(self._stamp()), "_msg": t, **labels})
                for labels, lines in batch
                for t in lines
            ]
            body = "".join(r + "\n" for r in rows).encode()
            path = "/insert/jsonline?_stream_fields=job_id,node,stream&_msg_field=_msg&_time_field=_time"
            kind = "application/stream+json"
        request = urllib.request.Request(self.url + path, data=body, method="POST", headers={"Content-Type": kind})
        with urllib.request.urlopen(request, timeout=5) as answer:
            answer.read()


def _rfc3339(ns: int) -> str:
    seconds, frac = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{frac:09d}Z"
