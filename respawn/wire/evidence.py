"""What an incident knows about a failed attempt: the input of attribution."""

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, Field

from respawn.sources.joblog import rank_tag


class LineSource(StrEnum):
    JOB = "job"  # the job's own output: untrusted, any user can print anything
    KERNEL = "kernel"  # a node's kernel log: trusted node-level evidence
    SCHEDULER = "scheduler"  # what Slurm itself reports
    DETECTOR = "detector"  # Respawn's own findings from the job's progress (hang, straggler)
    METRICS = "metrics"  # what the nodes' GPU metrics (DCGM, through Prometheus) say


# Lines Respawn writes itself start with these, so runbooks can match its
# findings. A job's output that carries one is forged and is never believed.
DETECTOR_PREFIX = "respawn-detector: "
METRICS_PREFIX = "respawn-metrics: "
_TRUSTED = ("respawn-detector:", "respawn-metrics:")


def claims_trust(text: str) -> bool:
    """Whether a line poses as one of Respawn's own: never true of honest job output.

    After optional whitespace, an optional rank tag (PyTorch's `[rank3]:`, `srun
    --label`'s `3: `) and more whitespace. Plain string code, linear in the line:
    a regex with two `\\s*` around an optional tag backtracks quadratically on a
    few KB of whitespace.
    """
    _, tag = rank_tag(text)
    return text[tag:].lstrip().startswith(_TRUSTED)


class LogLine(BaseModel):
    text: str
    source: LineSource = LineSource.JOB
    node: str | None = None  # the node the line came from, when known
    rank: int | None = None  # the rank that printed it, when the line is tagged
    seq: int = 0  # position in its stream, so "earliest" is well defined


class Evidence(BaseModel):
    cluster: str
    job_id: int
    attempt: int
    job_state: str | None = None  # Slurm's state when evidence was gathered
    exit_code: int | None = None
    nodes: list[str] = Field(default_factory=list)  # the attempt's allocation
    placement: dict[int, str] = Field(default_factory=dict)  # rank -> node
    lines: list[LogLine] = Field(default_factory=list)
    down_nodes: list[str] = Field(default_factory=list)  # nodes Slurm saw DOWN / NOT_RESPONDING
    gathered_at: datetime | None = None
