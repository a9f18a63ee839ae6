"""The `respawn` command."""

import argparse
import asyncio
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from respawn.attribution.runbook import RunbookError
from respawn.config.cluster import ClusterConfig, ConfigError, load_config

if TYPE_CHECKING:
    from respawn.audit.cost import CostReport, Part, PartCost


_NOISY_LOGGERS = ("httpx", "alembic.runtime.plugins")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["launch"]:
        # Its arguments end with the step's own command line (`-- python train.py ...`),
        # which only the launcher may parse. It runs inside the job and imports little.
        from respawn.workers.launcher import main as launch

        return launch(argv[1:])
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=os.environ.get("RESPAWN_LOG", "INFO"), format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )
    if logging.getLogger().level > logging.DEBUG:
        # Libraries' INFO per call is noise beside Respawn's own lines: httpx logs every request
        # (`respawn status` printed one among its table), alembic every plugin it sets up.
        # RESPAWN_LOG=DEBUG shows them.
        for noisy in _NOISY_LOGGERS:
            logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        return args.func(args) or 0
    except (ConfigError, RunbookError) as exc:
        print(f"respawn: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader left (`respawn trail | head`): stop as the shell's tools do, and point
        # stdout at nothing so that the interpreter's own flush at exit does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, the status a shell reports for `yes | head`


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="respawn",
        description="Automatic recovery of training jobs on Slurm.",
        epilog="respawn launch [--spares N] -- CMD ...: in a batch script, run the training "
        "step under the in-job launcher (docs/launcher.md)",
    )
    sub = p.add_subparsers(required=True, metavar="COMMAND")

    def command(name: str, func, help: str, config: bool = False) -> argparse.ArgumentParser:
        c = sub.add_parser(name, help=help, description=help)
        c.set_defaults(func=func)
        if config:
            c.add_argument(
                "--config",
                type=Path,
                default=None,
                help="cluster configuration (default: $RESPAWN_CONFIG, else the sandbox's)",
            )
        return c

    s = command("sandbox", _sandbox, "start, stop or inspect the local stack (Slurm, Temporal, sshd)")
    s.add_argument(
        "action",
        choices=["up", "down", "status", "reset"],
        help="reset: cancel every job, resume every node, heal every simulated GPU",
    )
    s.add_argument("--nodes", type=int, default=4)
    s.add_argument(
        "--store",
        choices=["sqlite", "postgresql"],
        default="sqlite",
        help="with up: the audit store, the lab's SQLite file (default) or Debian's PostgreSQL started"
        " in the lab on port 25432 (docs/store.md)",
    )
    s.add_argument("--json", action="store_true", help="with status: as JSON")
    s.add_argument(
        "--backend",
        choices=["slurmd", "containers"],
        default="slurmd",
        help="slurmd (default): every node a slurmd on this host; containers: every node its own "
        "container, through Podman or Docker (docs/containers.md)",
    )
    s.add_argument(
        "--slurm",
        choices=["host", "24.11"],
        default="host",
        help="host (default): the Slurm installed here; 24.11: Debian 13's Slurm 24.11 in a chroot"
        " built with debootstrap and cached (its own lab folder and ports, beside the default)",
    )

    command("worker", _worker, "run the recovery worker (incident workflows and activities)", config=True)
    command("detector", _detector, "run the detector for one cluster", config=True)
    command("serve", _serve, "run the HTTP server (Advisor API, console)", config=True)
    c = command("controller", _controller, "reference controller: apply the Advisor API's advice to Slurm", config=True)
    c.add_argument("--server", required=True, help="the Respawn server, e.g. http://127.0.0.1:8080")
    c.add_argument(
        "--token-file",
        type=Path,
        default=None,
        help="a file holding a bearer token with read and write scopes (mode 600); without it, $RESPAWN_TOKEN",
    )
    c.add_argument("--token", action=_NoTokenOnTheCommandLine, nargs="?", help=argparse.SUPPRESS)
    c.add_argument("--interval", type=float, default=1.0, help="seconds between polls")

    c = command("incidents", _incidents, "list incidents from the audit trail", config=True)
    c.add_argument("--job", type=int)
    c.add_argument("--json", action="store_true")

    c = command(
        "report",
        _report,
        "what interruptions cost over a range: lost GPU-hours by part, ETTR, interruptions per"
        " 1,000 GPU-hours, MTBF per job size (docs/cost.md)",
        config=True,
    )
    c.add_argument("--since", type=_since, default="7d", help="how far back: 30m, 12h, 7d (default 7d)")
    c.add_argument("--json", action="store_true")

    c = command("audit", _audit, "show audit-trail events", config=True)
    c.add_argument("--job", type=int)
    c.add_argument("--type", dest="event_type", action="append", help="event type (repeatable)")
    c.add_argument("--after", type=int, default=0, help="cursor: only events with a larger id")
    c.add_argument("--limit", type=int, default=200)
    c.add_argument("--json", action="store_true")

    c = command("jobs", _jobs, "list the jobs the detector has seen: enrolled or not, and why", config=True)
    c.add_argument("--json", action="store_true")

    c = command(
        "replay",
        _replay,
        "decide the recorded incidents again with other runbooks or budgets; print what would change",
        config=True,
    )
    c.add_argument("--runbooks", type=Path, help="a runbooks folder (default: the configuration's)")
    c.add_argument("--since", type=_since, default="7d", help="how far back: 30m, 12h, 7d (default 7d)")
    c.add_argument(
        "--budget", action="append", default=[], metavar="KEY=VALUE", help="a budget changed, e.g. max_restarts=5"
    )
    c.add_argument("--all", action="store_true", help="every incident, not only those whose decision changes")
    c.add_argument("--json", action="store_true")

    c = command(
        "status",
        _status,
        "check that Temporal, Slurm, Prometheus and the detector answer;"
        " show the detector's lag and the open incidents (exit 1: something required is down)",
        config=True,
    )
    c.add_argument("--json", action="store_true")
    c.add_argument("--timeout", type=float, default=3.0, help="seconds each check may take (default 3)")

    c = command(
        "check",
        _check,
        "check the signals Respawn reads (Slurm, logs, Prometheus, Temporal, the audit store) before the first"
        " job: pass, warn or fail, why, and how to fix it (exit 1: something failed; docs/check.md)",
        config=True,
    )
    c.add_argument("--json", action="store_true")
    c.add_argument("--timeout", type=float, default=10.0, help="seconds each check may take (default 10)")
    c.add_argument("--job", type=int, default=None, help="the job whose output to look for (default: a running one)")
    c.add_argument(
        "--kernel-log-age",
        type=_since,
        default="24h",
        help="a kernel log older than this warns: 30m, 12h, 7d (default 24h)",
    )

    c = command("override", _override, "take over a job's open incident by hand", config=True)
    c.add_argument("job", type=int)
    what = c.add_mutually_exclusive_group(required=True)
    for action in ("stop", "restart", "release", "approve", "deny"):
        what.add_argument(f"--{action}", dest="action", action="store_const", const=action)
    c.add_argument("--exclude", default="", help="with --restart: nodes to exclude, comma-separated")
    c.add_argument("--reason", required=True, help="why: goes to the audit trail")
    c.add_argument("--who", default=None, help="who is overriding (default: the login name)")
    c.add_argument("--incident", default=None, help="the incident id, when not the job's newest open one")

    c = command("classify", _classify, "classify log excerpts (JSON Lines in, JSON Lines out)")
    c.add_argument("file", nargs="?", default="-")
    c.add_argument("--runbooks", type=Path, default=None)

    c = command("inject", _inject, "inject a fault into a sandbox job")
    c.add_argument("--job", type=int, required=True)
    c.add_argument("--node", required=True)
    c.add_argument("--fault", required=True)

    c = command("demo", _demo, "show the recovery loop on the local stack")
    c.add_argument("--json", action="store_true", help="print the result as one JSON object")
    c.add_argument(
        "--transport",
        choices=["local", "ssh", "advisor"],
        default="local",
        help="advisor: Respawn advises, the reference controller acts on Slurm",
    )
    c.add_argument("--fault", default="xid")
    c.add_argument("--node", default="node2")
    c.add_argument(
        "--hostile-neighbours",
        action="store_true",
        help="run hostile jobs on node1 beside the demo's (respawn/sandbox/workload/hostile.py): a 2-node job on the others",
    )

    c = command(
        "config",
        _config_check,
        "validate a cluster configuration file, and the files holding its secrets"
        " (exit 1: a secret file missing, unreadable or readable by others; 2: an invalid file)",
    )
    c.add_argument("path", type=Path)
    return p


class _NoTokenOnTheCommandLine(argparse.Action):
    """`--token` is refused (rather than read as an abbreviation of --token-file), and its value never echoed."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        parser.error(
            "--token is not accepted: a token on the command line is visible to every user of the host;"
            " use --token-file FILE (mode 600) or set RESPAWN_TOKEN"
        )


def _config(args: argparse.Namespace) -> ClusterConfig:
    path = args.config or (Path(os.environ["RESPAWN_CONFIG"]) if "RESPAWN_CONFIG" in os.environ else None)
    if path is None:
        from respawn.sandbox.lab import lab

        path = lab().root / "respawn.yaml"
    return load_config(path)


def _sandbox(args: argparse.Namespace) -> int:
    from respawn import sandbox
    from respawn.config.cluster import SchedulerAccess
    from respawn.sandbox.labconfig import write_lab_config

    if args.backend == "containers":
        return _container_sandbox(args)
    if args.slurm == "24.11":
        return _chroot_sandbox(args)
    lab = sandbox.lab()
    if args.action == "up":
        with _waiting("sandbox up", lambda: [n for n, s in sandbox.status(lab).items() if s != "running"]):
            sandbox.up(lab, nodes=args.nodes)
        audit_db, store = None, ""
        if args.store == "postgresql":
            from respawn.sandbox import postgres

            server = postgres.of_lab(lab)
            postgres.start(server)
            audit_db, store = server.url(), f", PostgreSQL {server.host}:{server.port}"
        for transport in SchedulerAccess:
            write_lab_config(lab, transport, audit_db)
        print(
            f"sandbox up in {lab.root}: Slurm ({', '.join(lab.nodes)}), Temporal {lab.temporal_address}"
            f" (Web UI http://127.0.0.1:8233), sshd 127.0.0.1:22022{store}"
        )
        print(f"export SLURM_CONF={lab.slurm_conf} RESPAWN_CONFIG={lab.root / 'respawn.yaml'}")
    elif args.action == "down":
        print("sandbox down: stopping every component and job...", file=sys.stderr, flush=True)
        sandbox.down(lab)
        print("sandbox down")
    elif args.action == "reset":
        print("sandbox reset: cancelling every job, resuming every node...", file=sys.stderr, flush=True)
        sandbox.reset(lab)
        print(f"sandbox reset: {', '.join(lab.nodes)} idle, no jobs")
    elif args.json:
        _json(sandbox.status(lab))
    else:
        _table(
            [{"component": name, "state": state} for name, state in sandbox.status(lab).items()], ["component", "state"]
        )
    return 0


def _chroot_sandbox(args: argparse.Namespace) -> int:
    """The Slurm 24.11 lab: Debian 13's packages in a chroot (respawn/sandbox/chroot.py)."""
    from respawn.config.cluster import SchedulerAccess
    from respawn.sandbox import chroot
    from respawn.sandbox.labconfig import write_lab_config

    lab = chroot.chroot_lab()
    if args.action == "up":
        started = time.monotonic()
        chroot.up(lab, nodes=args.nodes)
        write_lab_config(lab, SchedulerAccess.LOCAL)
        print(
            f"sandbox (Slurm {chroot.version(lab)}, chroot {lab.rootfs}) up in {lab.root} in"
            f" {time.monotonic() - started:.1f} s: nodes {', '.join(lab.nodes)}, slurmctld port {lab.slurmctld_port},"
            f" Temporal {lab.temporal_address} (Web UI http://127.0.0.1:{lab.temporal_ui_port})"
        )
        print(f"export PATH={lab.bin_dir}:$PATH SLURM_CONF={lab.slurm_conf} RESPAWN_CONFIG={lab.root / 'respawn.yaml'}")
    elif args.action == "down":
        chroot.down(lab)
        print("sandbox (Slurm 24.11) down; the root filesystem stays cached")
    elif args.action == "reset":
        chroot.reset(lab)
        print(f"sandbox (Slurm 24.11) reset: {', '.join(lab.nodes)} idle, no jobs")
    elif args.json:
        _json(chroot.status(lab))
    else:
        _table([{"component": n, "state": s} for n, s in chroot.status(lab).items()], ["component", "state"])
    return 0


def _container_sandbox(args: argparse.Namespace) -> int:
    from respawn.config.cluster import SchedulerAccess
    from respawn.sandbox import containers
    from respawn.sandbox.containers import engine
    from respawn.sandbox.containers import lab as ports
    from respawn.sandbox.labconfig import write_lab_config

    lab = containers.container_lab()
    try:
        if args.action == "up":
            containers.up(lab, nodes=args.nodes)
            for transport in SchedulerAccess:
                write_lab_config(lab, transport)
            print(
                f"container sandbox up in {lab.root}: Slurm ({', '.join(lab.nodes)}), one container each;"
                f" slurmctld {ports.HOST}:{ports.SLURMCTLD_PORT}, sshd {ports.HOST}:{ports.SSH_PORT},"
                f" Temporal {lab.temporal_address} (Web UI http://{ports.HOST}:{ports.TEMPORAL_UI_PORT})"
            )
            print(f"export SLURM_CONF={lab.slurm_conf} RESPAWN_CONFIG={lab.root / 'respawn.yaml'}")
        elif args.action == "down":
            containers.down(lab)
            print("container sandbox down")
        elif args.action == "reset":
            containers.reset(lab)
            print(f"container sandbox reset: {', '.join(lab.nodes)} idle, no jobs")
        elif args.json:
            _json(containers.status(lab))
        else:
            _table([{"component": n, "state": s} for n, s in containers.status(lab).items()], ["component", "state"])
    except engine.EngineError as exc:
        print(f"respawn sandbox: {exc}", file=sys.stderr)
        return 1
    return 0


def _worker(args: argparse.Namespace) -> int:
    from respawn.workers.worker import run_worker

    asyncio.run(run_worker(_config(args)))
    return 0


def _detector(args: argparse.Namespace) -> int:
    from respawn.workers.detector import run_detector

    asyncio.run(run_detector(_config(args)))
    return 0


def _serve(args: argparse.Namespace) -> int:
    from respawn.workers.server import run_server

    run_server(_config(args))
    return 0


def _controller(args: argparse.Namespace) -> int:
    from respawn.advisor.controller import TOKEN_ENV, TokenError, controller_token
    from respawn.workers.controller import run_controller
    from respawn.workers.signals import stop_on_signals

    try:
        token = controller_token(args.token_file, os.environ)
    except TokenError as exc:
        print(f"respawn controller: {exc}", file=sys.stderr)
        return 2
    os.environ.pop(TOKEN_ENV, None)  # not handed on to the scontrol and squeue it runs
    config = _config(args)

    async def run() -> None:
        await run_controller(config, args.server, token, args.interval, stop_on_signals())

    asyncio.run(run())
    return 0


def _incidents(args: argparse.Namespace) -> int:
    from respawn.audit.report import incidents

    rows = incidents(_config(args), job_id=args.job)
    if args.json:
        _json(rows)
        return 0
    _table(rows, ["incident_id", "opened", "failure_class", "nodes", "action", "acted", "phase", "reason"])
    return 0


def _since(text: str) -> timedelta:
    from respawn.audit.cost import parse_since

    try:
        return parse_since(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _report(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from respawn.audit.cost import report_from_trail
    from respawn.audit.trail import AuditTrail

    config = _config(args)
    until = datetime.now(UTC)
    audit = AuditTrail(config.audit_db)
    try:
        report = report_from_trail(audit, config.cluster, config.accounting, until - args.since, until)
    finally:
        audit.close()
    if args.json:
        print(report.model_dump_json(indent=2))
        return 0
    _print_report(report)
    return 0


def _print_report(report: "CostReport") -> None:
    """The cost report for people: totals, the parts, MTBF per job size, the costliest incidents, the
    checkpoint advice per job and per size."""

    def num(value: float | None, digits: int = 2) -> str:
        return "-" if value is None else f"{value:,.{digits}f}"

    print(f"cluster {report.cluster}, {report.since:%Y-%m-%d %H:%M} to {report.until:%Y-%m-%d %H:%M} UTC")
    print(
        f"interruptions: {report.interruptions}   lost: {num(report.lost_gpu_hours)} GPU-hours"
        f" ({num(report.lost_seconds / 3600)} job-hours)   GPUs: {report.gpus_basis.value}"
    )
    print(
        f"ETTR: {num(report.ettr, 4)} (weighted by {report.ettr_weighting})   interruptions per 1,000 GPU-hours:"
        f" {num(report.interruptions_per_1k_gpu_hours)}   GPU-hours run: {num(report.wall_gpu_hours)}"
    )
    print()
    _table(
        [
            {
                "part": p.part.value,
                "gpu_hours": num(p.gpu_hours),
                "job_hours": num(p.seconds / 3600, 3),
                "share": "-" if p.share is None else f"{p.share:.0%}",
                "unknown_in": p.incidents_unknown,
            }
            for p in report.parts
        ],
        ["part", "gpu_hours", "job_hours", "share", "unknown_in"],
    )
    print()
    _table(
        [
            {
                "gpus": b.gpus,
                "jobs": b.jobs,
                "interruptions": b.interruptions,
                "wall_hours": num(b.wall_hours),
                "mtbf_hours": num(b.mtbf_hours),
            }
            for b in report.mtbf
        ],
        ["gpus", "jobs", "interruptions", "wall_hours", "mtbf_hours"],
    )
    print()
    costliest = sorted((c for c in report.incidents if c.interrupted), key=lambda c: -c.lost_seconds)[:20]
    _table(
        [
            {
                "incident_id": c.incident_id,
                "detected": f"{c.detected_at:%m-%d %H:%M:%S}",
                "class": c.failure_class,
                "action": c.action,
                "gpus": c.gpus,
                **{p.part.value: _part_cell(p) for p in c.parts},
                "lost_gpu_h": num(c.lost_gpu_hours),
            }
            for c in costliest
        ],
        ["incident_id", "detected", "class", "action", "gpus", *(p.value for p in _parts()), "lost_gpu_h"],
    )
    print()
    print("checkpoint interval advice (Young/Daly, from the measured interval, save time and MTBF of the job's size):")
    for a in report.advice:
        print(f"  job {a.job_id} ({a.gpus} GPUs): {a.sentence}")
    for a in report.size_advice:
        print(f"  jobs of {a.gpus} GPUs: {a.sentence}")
    if not report.advice:
        print("  (no job in the range)")
    for note in report.notes:
        print(f"note: {note}")


def _parts() -> "tuple[Part, ...]":
    from respawn.audit.cost import PARTS

    return PARTS


def _part_cell(part: "PartCost") -> str:
    """Seconds, marked `~` when estimated and `?` when unknown."""
    if part.seconds is None:
        return "?"
    return f"{'~' if part.basis.value == 'estimated' else ''}{part.seconds:,.1f}s"


def _audit(args: argparse.Namespace) -> int:
    from respawn.audit.details import reason_or_detail
    from respawn.audit.trail import AuditTrail, EventType

    config = _config(args)
    try:
        types = [EventType(t) for t in args.event_type or []]
    except ValueError as exc:
        print(f"respawn: {exc}; known types: {', '.join(t.value for t in EventType)}", file=sys.stderr)
        return 2
    rows = AuditTrail(config.audit_db).query(
        cluster=config.cluster, job_id=args.job, event_types=types, after_id=args.after, limit=args.limit
    )
    if args.json:
        _json([r.model_dump(mode="json") for r in rows])
        return 0
    _table(
        [
            {
                "id": r.id,
                "at": r.at.strftime("%H:%M:%S.%f")[:-3],
                "job": r.job_id,
                "attempt": r.attempt,
                "event": r.event_type.value,
                "class": r.failure_class,
                "pattern": r.pattern,
                "nodes": ",".join(r.nodes),
                "action": r.action,
                "acted": {True: "acted", False: "recommended", None: ""}[r.acted],
                "detail": reason_or_detail(r.typed_details),
            }
            for r in rows
        ],
        ["id", "at", "job", "attempt", "event", "class", "pattern", "nodes", "action", "acted", "detail"],
    )
    return 0


def _jobs(args: argparse.Namespace) -> int:
    from respawn.audit.report import jobs

    rows = jobs(_config(args))
    if args.json:
        _json(rows)
        return 0
    _table(rows, ["job_id", "enrolled", "environment", "mode", "reason"])
    return 0


def _replay(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from respawn.attribution.runbook import Catalogue
    from respawn.audit.cost import report_from_trail
    from respawn.audit.trail import AuditTrail
    from respawn.surfaces.replay import read_rows, replay

    config = _config(args)
    try:
        since = datetime.now(UTC) - args.since
        changes = dict(item.split("=", 1) for item in args.budget)
        budgets = config.budgets.model_validate(config.budgets.model_dump() | changes)
    except ValueError as exc:
        print(f"respawn: {' '.join(str(exc).split())[:300]}", file=sys.stderr)
        return 2
    catalogue = Catalogue.load(args.runbooks or config.runbooks)
    trail = AuditTrail(config.audit_db)
    costs = report_from_trail(trail, config.cluster, config.accounting, since, datetime.now(UTC)).incidents
    results = replay(read_rows(trail, config.cluster), catalogue, budgets, since, costs)
    shown = [r.row() for r in results if args.all or r.changed or not r.replayable]
    if args.json:
        _json(shown)
        return 0
    _table(shown, ["incident_id", "failure_class", "before", "after", "after_exclude", "effect_seconds", "why"])
    changed = sum(r.changed for r in results)
    stale = sum(not r.replayable for r in results)
    print(
        f"\n{len(results)} incidents since {since:%Y-%m-%d %H:%M} UTC: {changed} would be decided otherwise, {stale} not replayable"
    )
    return 0


def _status(args: argparse.Namespace) -> int:
    from respawn.surfaces.status import report

    if args.timeout <= 0:
        print("respawn status: --timeout must be positive", file=sys.stderr)
        return 2
    result = asyncio.run(report(_config(args), args.timeout))
    if args.json:
        _json(result)
    else:
        said = {True: "ok", None: "-"}
        _table(
            [
                {**c, "status": said.get(c["ok"], "DOWN" if c["required"] else "down (optional)")}
                for c in result["checks"]
            ],
            ["name", "status", "target", "detail"],
        )
        for warning in result["warnings"]:
            print(f"warning: {warning}")
        print(f"\nopen incidents: {len(result['open_incidents'])}")
        if result["open_incidents"]:
            _table(result["open_incidents"], ["incident_id", "opened", "failure_class", "nodes", "action"])
    _leave(0 if result["ok"] else 1)


def _check(args: argparse.Namespace) -> int:
    from respawn.surfaces.check import run_checks

    if args.timeout <= 0:
        print("respawn check: --timeout must be positive", file=sys.stderr)
        return 2
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per query would bury the table
    result = asyncio.run(run_checks(_config(args), args.timeout, args.job, args.kernel_log_age.total_seconds()))
    if args.json:
        _json(result)
    else:
        checks = result["checks"]
        width = max(len(c["name"]) for c in checks)
        print(f"{'CHECK'.ljust(width)}  STATUS  WHY")
        for c in checks:
            print(f"{c['name'].ljust(width)}  {c['status'].upper().ljust(6)}  {c['why']}")
            if c["fix"] and c["status"] in ("warn", "fail"):
                print(f"{''.ljust(width)}          fix: {c['fix']}")
        counts = {s: sum(c["status"] == s for c in checks) for s in ("pass", "warn", "fail", "skip")}
        print("\n" + ", ".join(f"{n} {s}" for s, n in counts.items()))
    _leave(0 if result["ok"] else 1)


def _override(args: argparse.Namespace) -> int:
    import getpass

    from pydantic import ValidationError

    from respawn.surfaces.override import OverrideError, send_override
    from respawn.wire.incident import Override

    who = args.who or os.environ.get("SUDO_USER") or getpass.getuser()
    try:
        override = Override(
            action=args.action, reason=args.reason, who=who, exclude=[n for n in args.exclude.split(",") if n]
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "override"
        print(f"respawn override: {where}: {first['msg']}", file=sys.stderr)
        return 2
    try:
        answer = asyncio.run(send_override(_config(args), args.job, override, args.incident))
        print(answer)
        rc = 0
    except OverrideError as exc:
        print(f"respawn override: {exc}", file=sys.stderr)
        rc = 1
    _leave(rc)


def _leave(rc: int) -> NoReturn:
    """Exit after a command that used a Temporal client.

    The client's native threads can call into Python while the interpreter
    finalises and abort it (PyGILState_Release; a known, open upstream bug:
    temporalio/sdk-python#300): with everything said and flushed, leave
    without finalising.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)


def _classify(args: argparse.Namespace) -> int:
    from respawn.attribution.classify import run
    from respawn.attribution.runbook import Catalogue

    catalogue = Catalogue.load(args.runbooks) if args.runbooks else None
    if args.file == "-":
        return run(sys.stdin, sys.stdout, catalogue)
    try:
        handle = open(args.file, encoding="utf-8", errors="replace")
    except OSError as exc:
        print(f"respawn classify: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return 2
    with handle:  # a failed write (the reader gone) is not this file's: main() handles it
        return run(handle, sys.stdout, catalogue)


def _inject(args: argparse.Namespace) -> int:
    from respawn.sandbox.lab import lab
    from respawn.sandbox.workload.faults import FaultKind, inject

    try:
        kind = FaultKind(args.fault)
    except ValueError:
        print(f"respawn: unknown fault {args.fault!r}; one of {', '.join(k.value for k in FaultKind)}", file=sys.stderr)
        return 2
    inject(lab(), args.job, args.node, kind)
    return 0


def _demo(args: argparse.Namespace) -> int:
    from respawn.sandbox.demo import run_demo

    return run_demo(
        as_json=args.json, transport=args.transport, fault=args.fault, node=args.node, hostile=args.hostile_neighbours
    )


def _config_check(args: argparse.Namespace) -> int:
    from respawn.config.secretfiles import check

    config = load_config(args.path)
    findings = check(config, args.path)  # the files its secrets are in: there, readable, and only by their owner
    for finding in findings:
        print(f"{args.path}: {finding}", file=sys.stderr)
    problems = sum(f.problem for f in findings)
    if problems:
        print(f"{args.path}: {problems} problem(s) with secret files", file=sys.stderr)
        return 1
    print(f"{args.path}: ok (cluster {config.cluster}, {len(config.environments)} environments)")
    return 0


def _json(data) -> None:
    """What a listing command prints for scripts, with --json."""
    print(json.dumps(data, indent=2, default=str))


@contextmanager
def _waiting(what: str, pending: Callable[[], list[str]]) -> Iterator[None]:
    """While the block runs, say on stderr which parts it still waits for, whenever that changes."""
    done, began = threading.Event(), time.monotonic()

    def watch() -> None:
        said = None
        while not done.wait(0.5):
            try:
                waiting = pending()
            except OSError:  # the parts are being set up: ask again next time
                continue
            if waiting != said:
                news = f"waiting for {', '.join(waiting)}" if waiting else "all started, waiting until they answer"
                print(f"{what}: {news} ({time.monotonic() - began:.0f} s)", file=sys.stderr, flush=True)
                said = waiting

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


def _table(rows: list[dict], columns: list[str]) -> None:
    cells = [[("" if r.get(c) is None else str(r.get(c)))[:60] for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    print("  ".join(c.upper().ljust(w) for c, w in zip(columns, widths, strict=True)))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))
    if not rows:
        print("(none)")


if __name__ == "__main__":
    sys.exit(main())
