"""An attempt's evidence as the workflow hands it to attribution: job 12 on three nodes, rank
i on node i+1, the job's lines in order and each node's kernel lines; FAILED with exit code 1
unless a case says otherwise."""

from respawn.wire.evidence import Evidence, LineSource, LogLine


def evidence(*texts: str, kernel: dict[str, list[str]] | None = None, **fields) -> Evidence:
    lines = [LogLine(text=t, seq=i) for i, t in enumerate(texts)]
    for node, kernel_lines in (kernel or {}).items():
        lines += [LogLine(text=t, source=LineSource.KERNEL, node=node, seq=i) for i, t in enumerate(kernel_lines)]
    fields.setdefault("job_state", "FAILED")
    fields.setdefault("exit_code", 1)
    return Evidence(
        cluster="lab",
        job_id=12,
        attempt=0,
        nodes=["node1", "node2", "node3"],
        placement={0: "node1", 1: "node2", 2: "node3"},
        lines=lines,
        **fields,
    )
