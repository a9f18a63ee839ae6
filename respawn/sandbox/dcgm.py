"""A fake DCGM exporter per sandbox node. THE GPUS ARE SIMULATED.

The sandbox's nodes have no GPUs. So that Respawn's Prometheus queries run
unchanged against a real cluster, each node gets a small HTTP server
(prometheus_client) publishing what NVIDIA's dcgm-exporter publishes: the same
metric names (`DCGM_FI_DEV_GPU_UTIL`, `DCGM_FI_DEV_SM_CLOCK`,
`DCGM_FI_DEV_CLOCK_THROTTLE_REASONS`, `DCGM_FI_DEV_GPU_TEMP`,
`DCGM_FI_DEV_XID_ERRORS`, `DCGM_FI_DEV_ECC_DBE_VOL_TOTAL`) and labels
(`gpu`, `UUID`, `pci_bus_id`, `device`, `modelName`, `Hostname`). Every HELP
text starts with "SIMULATED" and the model name says so too.

Each node has one GPU, at the PCI bus the demo job's Xid lines name. Its values
are a healthy, busy GPU's unless the fault injector (respawn/sandbox/workload/faults.py) has set
others in the node's state file, `<lab>/gpus/<node>.json`, read at each scrape.

`start`/`stop` run one exporter process per node of the lab (`main(NODE PORT
STATE_FILE)`), with pid files like the other daemons.
"""

import ctypes
import json
import os
import shutil
import sys
import threading
import urllib.request
from collections.abc import Iterator, Mapping
from functools import partial
from pathlib import Path

from prometheus_client import start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from respawn.sandbox import procs
from respawn.sandbox.lab import Lab

HOST = "127.0.0.1"
# dcgm-exporter listens on 9400; 19400 keeps clear of a real one on this host.
# Node i (1-based, in slurm.conf order) listens on 19400 + i.
BASE_PORT = 19400
COMM = "dcgm-exporter"  # the process name, so a stale pid file never points at another process
START_TIMEOUT = 20.0
PCI_BUS_ID = "00000000:3B:00.0"  # the kernel's 0000:3b:00 in the demo job's Xid lines
SIMULATED = "SIMULATED GPU (respawn sandbox, no real GPU): "
# Not `-m`: the package imports this module first, and runpy warns about running it twice.
_MAIN = "import sys; from respawn.sandbox.dcgm import main; main(sys.argv[1:])"

# name -> (dcgm-exporter's help text, a healthy busy GPU's value). dcgm-exporter
# exposes the ECC total as a counter; it is a gauge here because prometheus_client
# would rename a counter's family to ..._TOTAL_total. Queries see the same series.
METRICS: dict[str, tuple[str, float]] = {
    "DCGM_FI_DEV_GPU_UTIL": ("GPU utilization (in %).", 97.0),
    "DCGM_FI_DEV_SM_CLOCK": ("SM clock frequency (in MHz).", 1980.0),
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": ("Current clock throttle reasons (NVML bitmask).", 0.0),
    "DCGM_FI_DEV_GPU_TEMP": ("GPU temperature (in C).", 55.0),
    "DCGM_FI_DEV_XID_ERRORS": ("Value of the last XID error encountered.", 0.0),
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": ("Total number of double-bit volatile ECC errors.", 0.0),
}
LABELS = ["gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname"]


class SimulatedGpus(Collector):
    """One simulated GPU of one node, read from its state file at every scrape."""

    def __init__(self, node: str, state: Path) -> None:
        self._node, self._state = node, state

    def collect(self) -> Iterator[GaugeMetricFamily]:
        values = {name: healthy for name, (_, healthy) in METRICS.items()} | _overrides(self._state)
        labels = [
            "0",
            f"GPU-SIMULATED-{self._node}-0",
            PCI_BUS_ID,
            "nvidia0",
            "Simulated GPU (respawn sandbox)",
            self._node,
        ]
        for name, (help_text, _) in METRICS.items():
            family = GaugeMetricFamily(name, SIMULATED + help_text, labels=LABELS)
            family.add_metric(labels, values[name])
            yield family


def _overrides(state: Path) -> dict[str, float]:
    try:
        data = json.loads(state.read_text())
    except (FileNotFoundError, ValueError):  # no fault set, or caught mid-write by a careless writer
        return {}
    return {k: float(v) for k, v in data.items() if k in METRICS}


def state_path(lab: Lab, node: str) -> Path:
    return lab.root / "gpus" / f"{node}.json"


def set_gpu(lab: Lab, node: str, values: Mapping[str, float]) -> None:
    """Set some of `node`'s simulated GPU metrics (the rest keep their values)."""
    unknown = set(values) - set(METRICS)
    if unknown:
        raise ValueError(f"not a simulated DCGM metric: {', '.join(sorted(unknown))}")
    path = state_path(lab, node)
    path.parent.mkdir(parents=True, exist_ok=True)
    current = _overrides(path)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(current | dict(values)))
    os.replace(tmp, path)  # a scrape sees all of it or none


def heal(lab: Lab, node: str) -> None:
    """`node`'s simulated GPU back to healthy."""
    state_path(lab, node).unlink(missing_ok=True)


def reset(lab: Lab) -> None:
    """Every simulated GPU healthy: a fresh cluster's."""
    shutil.rmtree(lab.root / "gpus", ignore_errors=True)


def port(lab: Lab, node: str) -> int:
    return BASE_PORT + lab.nodes.index(node) + 1


def component(node: str) -> str:
    return f"dcgm-{node}"


def pid(lab: Lab, node: str) -> int | None:
    return procs.running_pid(lab.pid_file(component(node)), COMM)


def start(lab: Lab) -> None:
    """An exporter for every node (idempotent); returns once each serves metrics."""
    for node in lab.nodes:
        if pid(lab, node) is None:
            argv = [sys.executable, "-c", _MAIN, node, str(port(lab, node)), str(state_path(lab, node))]
            procs.spawn_detached(argv, lab.log_dir / f"{component(node)}.log", lab.pid_file(component(node)))
    for node in lab.nodes:
        log = lab.log_dir / f"{component(node)}.log"
        if not procs.wait_until(partial(_up, lab, node), START_TIMEOUT, 0.1):
            raise RuntimeError(
                f"{component(node)} not serving on {HOST}:{port(lab, node)}; last lines of {log}:\n"
                f"{procs.log_tail(log)}"
            )


def _up(lab: Lab, node: str) -> bool:
    return pid(lab, node) is not None and _serving(lab, node)


def stop(lab: Lab) -> None:
    procs.terminate([p for p in (pid(lab, n) for n in lab.nodes) if p is not None])


def _serving(lab: Lab, node: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://{HOST}:{port(lab, node)}/metrics", timeout=1) as reply:
            return reply.status == 200
    except OSError:
        return False


def _name_process(name: str) -> None:
    """Set /proc/self/comm, which `procs.running_pid` checks against the pid file."""
    libc = ctypes.CDLL(None)
    libc.prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME


def main(argv: list[str]) -> None:
    node, listen, state = argv
    _name_process(COMM)
    registry = CollectorRegistry()
    registry.register(SimulatedGpus(node, Path(state)))
    start_http_server(int(listen), addr=HOST, registry=registry)
    threading.Event().wait()  # serve until SIGTERM
