"""The in-job launcher's process (docs/launcher.md), run by the batch script:

    exec python -m respawn.workers.launcher --spares 1 [--min-nodes N] [--channel DIR] [--wait-s S] [--prepare torch] -- python train.py ...

It runs on the job's batch host only, and imports nothing heavy.
"""

import argparse
import os
import sys
from pathlib import Path

from respawn.launcher.runner import Launcher, default_channel_dir
from respawn.scheduler.hostlist import expand


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="respawn-launcher", description=__doc__.splitlines()[0])
    parser.add_argument("--spares", type=int, default=0, help="nodes of the allocation held back for relaunches")
    parser.add_argument(
        "--channel",
        type=Path,
        default=os.environ.get("RESPAWN_CHANNEL_DIR") or None,
        help="the channel directory (default: $RESPAWN_CHANNEL_DIR, else .respawn-<job id>/ beside the job's output)",
    )
    parser.add_argument("--wait-s", type=float, default=60.0, help="how long a failed step waits for an instruction")
    parser.add_argument(
        "--prepare",
        type=lambda text: [m for m in text.split(",") if m],
        default=[],
        metavar="MODULES",
        help="start the next relaunch ahead, these modules imported (e.g. torch); the command must be python SCRIPT or -m",
    )
    parser.add_argument(
        "--min-nodes",
        type=int,
        default=None,
        help="the fewest nodes the step can run on (it can shrink when no spare is left); default: as many as it starts on",
    )
    parser.add_argument(
        "--ntasks-per-node", type=int, default=int(os.environ.get("SLURM_NTASKS_PER_NODE", "1").split("(")[0] or 1)
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the step's command")
    args = parser.parse_args(argv)
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if not args.command:
        parser.error("no command: give it after --")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    job_id = int(os.environ["SLURM_JOB_ID"])
    nodes = expand(os.environ["SLURM_JOB_NODELIST"])
    launcher = Launcher(
        args.command,
        nodes=nodes,
        spares=args.spares,
        wait_s=args.wait_s,
        job_id=job_id,
        channel_dir=args.channel or default_channel_dir(job_id),
        tasks_per_node=args.ntasks_per_node,
        prepare=args.prepare,
        min_nodes=args.min_nodes,
    )
    return launcher.run()


if __name__ == "__main__":
    sys.exit(main())
