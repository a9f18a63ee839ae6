"""The Slurm adapter: one interface (`Slurm`) over two transports (local, ssh)."""

from respawn.scheduler.errors import (
    CommandTimeout,
    InvalidJobId,
    InvalidNodeName,
    JobFinished,
    JobNotFound,
    JobNotPending,
    JobPending,
    OperationDisabled,
    SchedulerError,
    SchedulerUnavailable,
    SlurmCommandError,
    TransportError,
    error_from,
)
from respawn.scheduler.slurm import JobInfo, NodeInfo, Slurm, parse_sinfo_json, parse_squeue_json
from respawn.scheduler.transport import CommandResult, LocalTransport, SshTransport, Transport

__all__ = [
    "CommandResult",
    "CommandTimeout",
    "InvalidJobId",
    "InvalidNodeName",
    "JobFinished",
    "JobInfo",
    "JobNotFound",
    "JobNotPending",
    "JobPending",
    "LocalTransport",
    "NodeInfo",
    "OperationDisabled",
    "SchedulerError",
    "SchedulerUnavailable",
    "Slurm",
    "SlurmCommandError",
    "SshTransport",
    "Transport",
    "TransportError",
    "error_from",
    "parse_sinfo_json",
    "parse_squeue_json",
]
