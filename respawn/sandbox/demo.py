"""`respawn demo`: the whole recovery loop on the local stack, measured.

Brings the sandbox up, starts a detector and a worker, submits a 3-node DDP job
enrolled in action mode, injects a fault on one node once the job has saved a
checkpoint, and prints the timeline read back from the audit trail.
"""

import asyncio
import json
import os
import subprocess
import sys
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

from respawn import sandbox
from respawn.audit.details import DecidedDetails, JobEndDetails, ResumedDetails
from respawn.audit.report import describe, timeline_entry
from respawn.audit.trail import AuditRow, AuditTrail, EventType
from respawn.config.cluster import ClusterConfig, SchedulerAccess, load_config
from respawn.sandbox import procs
from respawn.sandbox.lab import Lab
from respawn.sandbox.labconfig import SERVER_PORT, WRITE_TOKEN, write_lab_config
from respawn.sandbox.polling import until, wait
from respawn.sandbox.workload.faults import FaultKind, fired_at, inject
from respawn.sandbox.workload.hostile import NODE as HOSTILE_NODE
from respawn.sandbox.workload.hostile import Hostility, submit_hostile
from respawn.sandbox.workload.submit import submit
from respawn.scheduler.slurm import Slurm
from respawn.scheduler.transport import LocalTransport

COMMENT = '{"respawn":{"environment":"demo","mode":"action"}}'


def run_demo(
    *, as_json: bool, transport: str = "local", fault: str = "xid", node: str = "node2", hostile: bool = False
) -> int:
    lab = sandbox.lab()
    say = (lambda *_: None) if as_json else (lambda msg: print(msg, flush=True))
    say("bringing the local stack up (Slurm, Temporal, sshd)...")
    sandbox.up(lab)
    config_path = write_lab_config(lab, SchedulerAccess(transport))
    config = load_config(config_path)
    # With the advisor transport Respawn only advises: the reference controller acts on Slurm.
    with RespawnProcesses(lab, config_path, controller=config.scheduler.transport is SchedulerAccess.ADVISOR):
        result = asyncio.run(_run(lab, config, FaultKind(fault), node, say, hostile))
    if as_json:
        print(json.dumps(result, default=str))
    else:
        _print_timeline(result, say)
    return 0 if result["final_state"] == "COMPLETED" else 1


class RespawnProcesses:
    """A worker, a detector and the HTTP server as child processes (and, with `controller`,
    the reference controller carrying out the advice of the advisor transport), stopped
    with SIGTERM on exit."""

    def __init__(self, lab: Lab, config_path: Path, controller: bool = False) -> None:
        self._lab, self._config, self._controller = lab, config_path, controller
        self._procs: list[subprocess.Popen] = []

    def __enter__(self) -> "RespawnProcesses":
        """Started, and the detector through its first poll (`wait_for_first_poll`)."""
        commands = {role: [role, "--config", str(self._config)] for role in ("worker", "detector", "serve")}
        if self._controller:
            commands["controller"] = [
                "controller",
                "--config",
                str(self._config),
                "--interval",
                "0.5",
                "--server",
                f"http://127.0.0.1:{SERVER_PORT}",
            ]
        for role, args in commands.items():
            log = open(self._lab.log_dir / f"respawn-{role}.log", "ab")
            self._procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "respawn.surfaces.cli", *args],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=os.environ | {"RESPAWN_TOKEN": WRITE_TOKEN},
                )
            )
        try:
            detector = self._procs[list(commands).index("detector")]
            wait_for_first_poll(self._config, detector, self._lab.log_dir / "respawn-detector.log")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self._procs:
            proc.terminate()
        for proc in self._procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


def wait_for_first_poll(config_path: Path, detector: subprocess.Popen, log: Path) -> None:
    """Until the detector started from `config_path` has made its first poll (its metrics say so):
    a job that ended before the detector started is history to it, not news (`detector.catch_up_s`,
    0 in the sandbox). Without metrics configured there is nothing to tell by: no wait."""
    listen = load_config(config_path).telemetry.detector
    if listen is None:
        return

    def polled() -> bool:
        if detector.poll() is not None:
            # Its last lines, here: CI shows a failed test's output, not the lab's files.
            raise RuntimeError(
                f"the detector exited {detector.returncode}; last lines of {log}:\n{procs.log_tail(log)}"
            )
        try:
            with urllib.request.urlopen(f"http://{listen.host}:{listen.port}/metrics", timeout=2) as reply:
                return b"respawn_jobs_monitored{" in reply.read()  # set at the end of each poll
        except OSError:
            return False

    wait(polled, 90, "the detector's first poll")


async def _run(lab: Lab, config: ClusterConfig, fault: FaultKind, node: str, say, hostile: bool) -> dict:
    shape: dict = {"nodes": 3}
    neighbours = []
    if hostile:
        # Hostile jobs on their node; the demo's job keeps to the other three, two at a time,
        # so there is room for it without its faulty node.
        neighbours = [submit_hostile(lab, kind, COMMENT) for kind in Hostility]
        say(f"submitted hostile jobs {', '.join(map(str, neighbours))} on {HOSTILE_NODE} ({', '.join(Hostility)})")
        shape = {"nodes": 2, "extra_sbatch_args": [f"--exclude={HOSTILE_NODE}"]}
    try:
        return await _recover(lab, config, fault, node, say, shape)
    finally:
        if neighbours:
            subprocess.run(["scancel", *map(str, neighbours)], env=lab.env(), check=False)


async def _recover(lab: Lab, config: ClusterConfig, fault: FaultKind, node: str, say, shape: dict) -> dict:
    job_id = submit(lab, steps=40, checkpoint_every=10, step_seconds=0.5, comment=COMMENT, name="demo", **shape)
    say(f"submitted job {job_id} ({shape['nodes']} of the 4 nodes, checkpoint every 10 steps), enrolled: {COMMENT}")
    output = config.job_output(job_id)

    def saved_checkpoint() -> bool:
        return output.exists() and "saved checkpoint step 10" in output.read_text(errors="replace")

    await until(saved_checkpoint, 120, "the job to save its first checkpoint")
    placed = (await Slurm(LocalTransport(env=lab.env())).job(job_id)).nodes
    node = node if node in placed else placed[0]  # a 2-node job beside hostile ones may not hold node2
    say(f"job {job_id} is training and saved a checkpoint; injecting '{fault.value}' on {node}")
    inject(lab, job_id, node, fault)

    audit = AuditTrail(config.audit_db)
    try:
        # The detector's record of the end, not a glance at Slurm: between
        # attempts Slurm can show a state the next attempt soon replaces.
        ended = await until(
            lambda: audit.query(job_id=job_id, event_types=[EventType.JOB_COMPLETED]),
            240,
            "the job to complete after recovery",
        )
    finally:
        audit.close()
    final_state = ended[0].detail(JobEndDetails).state or "COMPLETED"
    return _result(config, job_id, fired_at(lab, job_id, node), final_state)


def _result(config: ClusterConfig, job_id: int, fault_at: float | None, final_state: str) -> dict:
    audit = AuditTrail(config.audit_db)
    rows = audit.query(cluster=config.cluster, job_id=job_id)
    audit.close()
    first: dict[EventType, AuditRow] = {}
    for row in rows:
        first.setdefault(row.event_type, row)

    def at(event: EventType) -> datetime | None:
        return first[event].at if event in first else None

    fault_time = datetime.fromtimestamp(fault_at, UTC) if fault_at else None
    # Handed back to Slurm: released by Respawn, or by the controller that reports it converged.
    detected, released = at(EventType.DETECTED), at(EventType.RELEASED) or at(EventType.RECONCILED)
    decided = first.get(EventType.DECIDED)
    resumed = first.get(EventType.RESUMED)
    incident = decided.incident_id if decided else None
    return {
        "job_id": job_id,
        "fault_at": fault_time,
        "detected_at": detected,
        "action_at": released,
        "resumed_at": at(EventType.RESUMED),
        "completed_at": at(EventType.JOB_COMPLETED),
        "detection_latency_s": _seconds(fault_time, detected),
        "action_latency_s": _seconds(detected, released),
        "failure_class": decided.failure_class if decided else None,
        "pattern": decided.pattern if decided else None,
        "excluded_nodes": decided.detail(DecidedDetails).exclude if decided else [],
        "final_state": final_state,
        "resumed_from_step": resumed.detail(ResumedDetails).resumed_from if resumed else None,
        "incident_id": incident,
        "temporal_ui": config.temporal.workflow_url(incident) if incident else None,
        "timeline": [
            {
                "at": r.at,
                "event": r.event_type.value,
                "nodes": r.nodes,
                "pattern": r.pattern,
                "action": r.action,
                "detail": describe(r),
            }
            for r in rows
            if r.event_type is not EventType.ENROLLED
        ],
    }


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    return round((end - start).total_seconds(), 3) if start and end else None


def _print_timeline(result: dict, say) -> None:
    say("")
    say(f"timeline of job {result['job_id']}:")
    if result["fault_at"]:
        say(f"  {result['fault_at']:%H:%M:%S.%f}"[:-3] + "  fault injected")
    for step in result["timeline"]:
        extra = timeline_entry(step["nodes"], step["pattern"], step["action"], step["detail"])
        say(f"  {step['at']:%H:%M:%S.%f}"[:-3] + f"  {step['event']:<16} {extra}")
    say("")
    say(f"failure class     {result['failure_class']} (pattern {result['pattern']})")
    say(f"excluded nodes    {', '.join(result['excluded_nodes']) or 'none'}")
    say(f"resumed from step {result['resumed_from_step']}")
    say(f"final state       {result['final_state']}")
    say(f"detection latency {result['detection_latency_s']} s (fault -> incident started)")
    say(f"action latency    {result['action_latency_s']} s (incident started -> job released)")
    say(f"Temporal Web UI   {result['temporal_ui']}")
