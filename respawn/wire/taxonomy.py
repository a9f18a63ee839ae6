"""The shared vocabulary of ../shared/taxonomy.md: failure classes and cause layers."""

from enum import StrEnum


class FailureClass(StrEnum):
    GPU_HARDWARE = "gpu_hardware"
    GPU_FAULT = "gpu_fault"
    INTERCONNECT = "interconnect"
    COMM_TIMEOUT = "comm_timeout"
    COMM_ERROR = "comm_error"
    GPU_OOM = "gpu_oom"
    HOST_OOM = "host_oom"
    APP_ERROR = "app_error"
    NUMERICAL = "numerical"
    PROCESS_CRASH = "process_crash"
    STORAGE = "storage"
    SCHEDULER_LIMIT = "scheduler_limit"
    NODE_FAILURE = "node_failure"
    LAUNCH = "launch"
    SLOWDOWN = "slowdown"
    HANG = "hang"
    BENIGN = "benign"


class CauseLayer(StrEnum):
    HARDWARE = "hardware"
    INFRASTRUCTURE_NETWORK = "infrastructure_network"
    SYSTEM_SOFTWARE = "system_software"
    STORAGE = "storage"
    SCHEDULER = "scheduler"
    APPLICATION = "application"
    BENIGN = "benign"
    AMBIGUOUS = "ambiguous"
