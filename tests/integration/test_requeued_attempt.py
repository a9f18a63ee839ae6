"""The race CI found under load, on the sandbox's real Slurm: Slurm requeues a job (PENDING again,
no nodes listed) before its incident reads the evidence. The detector's detection carries the
attempt's nodes as Slurm listed them, and the evidence reads the attempt on those nodes: its ranks
placed, a dead node among them still blamable (activities/evidence.py `as_attempt_ran`)."""

import subprocess

from respawn.activities.evidence import EvidenceActivities
from respawn.detection.detector import Detector
from respawn.sandbox import Lab
from respawn.sandbox.labconfig import lab_config
from respawn.sandbox.polling import until
from respawn.services import build_services
from respawn.wire.evidence import LineSource
from respawn.wire.incident import DetectionKind, GatherRequest
from tests.recovery_stack import sbatch

ACTION = '{"respawn":{"environment":"demo","mode":"action"}}'
FAILURE = "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered"


class Accepting:
    """Temporal, taking every detection: this test reads the ones the poll returns."""

    async def start_workflow(self, *args: object, **kwargs: object) -> None:
        return None


async def test_evidence_of_an_attempt_slurm_already_requeued_is_read_on_its_nodes(sandbox: Lab) -> None:
    services = build_services(lab_config(sandbox))
    detector = Detector(services, Accepting())  # type: ignore[arg-type]
    job_id = sbatch(
        sandbox, "-N2", "--ntasks-per-node=1", "--requeue", f"--comment={ACTION}",
        "--wrap", f"sleep 2; echo '{FAILURE}'; exec sleep 300",
    )  # fmt: skip
    try:

        async def failure_seen() -> list:
            return [d for d in await detector.poll_once() if d.kind is DetectionKind.LOG_LINE and d.job_id == job_id]

        [seen] = await until(failure_seen, 30, "the failure line to be detected")
        ran_on = (await services.slurm.job(job_id)).nodes
        assert len(ran_on) == 2 and seen.allocation == ran_on

        subprocess.run(["scontrol", "requeuehold", str(job_id)], env=sandbox.env(), check=True, timeout=30)

        async def requeued() -> bool:
            job = await services.slurm.job(job_id)
            return job.state == "PENDING" and job.restart_count == 1

        await until(requeued, 15, "Slurm to requeue the job")
        assert (await services.slurm.job(job_id)).nodes == []  # what the race leaves the incident

        req = GatherRequest(
            incident_id="i", job_id=job_id, attempt=0, log_offset=seen.log_offset, detections=[seen]
        )  # fmt: skip
        gathered = await EvidenceActivities(services).gather_evidence(req)
        assert gathered.evidence.nodes == ran_on
        [line] = [x for x in gathered.evidence.lines if x.source is LineSource.JOB and x.text == FAILURE]
        assert line.node == ran_on[1]
    finally:
        subprocess.run(["scancel", str(job_id)], env=sandbox.env(), timeout=30)
        await services.close()
