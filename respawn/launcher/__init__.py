"""The in-job launcher (issue 14): runs the training step inside the allocation, and
the file channel over which an incident tells it to relaunch, relaunch without
some nodes, or give up (docs/launcher.md).

The launcher runs on the job's batch host: this package imports nothing heavy
(no Temporal, no SQLite).
"""
