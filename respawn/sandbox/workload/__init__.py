"""The demo workload: a DDP training job for the sandbox cluster, its submission and its faults."""
