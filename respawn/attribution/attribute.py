"""Evidence to attribution: which failure, which layer, which nodes to blame.

How the evidence is read (root cause over symptoms):

- Every line goes through the combined matcher. The failure with the highest
  runbook priority decides, so a fatal Xid outranks the NCCL timeouts it
  provokes and an OOM on one rank outranks the dump signals of the others.
  Among equal priorities the earliest line (lowest `seq`) decides: the first
  rank to fail, not the last one to notice.
- Tracebacks are read as a block: a frame (`File "...", line N` and the source
  line printed under it) is never matched, only the exception line that ends
  the block, so code that merely mentions an error does not count as one. The
  block's header stands for an exception no pattern knows, so it is vetoed
  where a benign pattern vetoes the exception line (a clean-up the program
  printed and went on from) or Python's notice before the block that it ignored
  the exception (`Exception ignored in: ...`). A message that printed a
  traceback as its own text, the header at the end of its line, is such a notice
  for the block's exception line (a library logging an optional import it went
  on without).
- Slurm's facts are written as scheduler lines in Slurm's own formats
  (`JobState=TIMEOUT ExitCode=0`, `NodeName=n3 State=DOWN+NOT_RESPONDING`) and
  matched like any other line: what a job state or a down node means lives in
  the runbooks, where an operator can change it.

Respawn's own findings are lines too, matched by the runbooks like the rest:
the detector's (`respawn-detector: hang: no progress from rank 2 on node3 ...`,
from the job's progress rhythm) and the GPU metrics' (`respawn-metrics:
Hostname=node2 gpu=0 DCGM_FI_DEV_XID_ERRORS=79 ...`). They come only from
Respawn (sources DETECTOR and METRICS); a job line that poses as one is dropped.

Which nodes: only failures whose runbook (or pattern) node rule blames a node
name one, and only where the evidence points at it: the host the line names
(NCCL's `host:pid:tid [dev]` prefix, `srun: error: node17: task 3`, `*** JOB 12
ON node17 CANCELLED`, a syslog host), the node whose kernel log or Slurm record
the line is, the node a rank-tagged line's rank runs on (placement), or the
node whose kernel log reports a failing GPU at the PCI bus id the line names.
Hosts outside the attempt's allocation are never blamed: a peer address in an
NCCL error, or any name a user prints, cannot push another job's node out.

When nothing matches but the attempt failed, the answer is `process_crash` with
an ambiguous cause and pattern None: the one restart its ladder allows is the
cheapest experiment that tells a transient fault from a deterministic one, and
a recurrence stops the job. A death by signal is recognised by the runbooks
from the exit code (process_crash's `exit-by-signal` pattern) before it gets here.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

import re2

from respawn.attribution.matcher import Hit, Matcher
from respawn.attribution.runbook import Catalogue, NodeRule
from respawn.sources.joblog import rank_tag, untagged
from respawn.wire.attribution import Attribution
from respawn.wire.evidence import Evidence, LineSource, claims_trust
from respawn.wire.taxonomy import CauseLayer, FailureClass

_FRAME = 'File "'  # a traceback frame header, after indentation
_HEADER = "Traceback (most recent call last):"  # a traceback's first line, after indentation
_LOOK_BACK = 64  # lines searched back for the previous line of the same rank, interleaved with others

# Hosts that lines name in the formats of the software that prints them. RE2: the
# line may be a hostile 100 KB of word characters.
_HOST = re2.compile(
    r"(?P<nccl>[A-Za-z][\w.-]*):\d+:\d+ \[\d+\] "  # NCCL: host:pid:tid [cudaDev]
    r"|srun: error: (?P<srun>[\w.-]+): tasks? [\d,-]+: "
    r"|\*\*\* (?:JOB|STEP) \S+ ON (?P<slurm>[\w.-]+) CANCELLED"
    r"|slurmstepd-(?P<stepd>[\w.-]+): "  # slurmstepd names its node when slurmd runs as several
    # a syslog line of the node's kernel or of its Slurm daemons (slurmd[pid]: ..., slurmstepd[pid]: ...)
    r"|^\w{3} +\d+ [\d:]+ (?P<syslog>[\w.-]+) (?:kernel|slurmd|slurmstepd)(?:\[\d+\])?:"
    r"|Message from syslogd@(?P<syslogd>[\w.-]+)"
)
_HOST_MAX = 253  # the longest DNS name: anything longer is not a host
_PCI = re2.compile(r"([0-9a-f]{2}):([0-9a-f]{2})(?:\.\d)?$")  # bus:device at the end of a bus id

_UNMATCHED = FailureClass.PROCESS_CRASH
_UNKNOWN_TAIL = 10  # the lines an unknown failure is reported with
# Slurm states of an attempt that ended badly. In any other state (RUNNING,
# COMPLETED) and with a zero exit code, evidence that matches nothing is benign.
_FAILED_STATES = {"FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "TIMEOUT", "BOOT_FAIL", "DEADLINE", "PREEMPTED", "CANCELLED"}
_AUDIT_LINE = 1000  # the deciding line is kept for the audit trail, bounded


@dataclass(frozen=True, slots=True)
class _Line:
    text: str
    source: LineSource = LineSource.JOB
    node: str | None = None
    rank: int | None = None
    seq: int = 0


@dataclass(frozen=True, slots=True)
class _Failure:
    hit: Hit
    line: _Line  # with the rank from its tag when the line carried one
    order: int  # position in the evidence, the last tie-break


def attribute(catalogue: Catalogue, matcher: Matcher, evidence: Evidence) -> Attribution:
    """Attribute a failed attempt: a pure function of the runbooks and the evidence."""
    allocation = frozenset(evidence.nodes)
    lines = [
        _Line(ln.text, ln.source, ln.node, ln.rank, ln.seq)
        for ln in evidence.lines
        # A kernel log of a node the attempt did not run on tells nothing about it.
        if not (allocation and ln.source is not LineSource.JOB and ln.node and ln.node not in allocation)
        # The job posing as Respawn's detector or metrics: forged, never believed.
        and not (ln.source is LineSource.JOB and claims_trust(ln.text))
    ] + _scheduler_facts(evidence)
    found = _read(matcher, [ln.text for ln in lines], lines.__getitem__)
    if not found:
        if _failed(evidence):
            return _unmatched(catalogue, evidence)
        return _benign()
    where = _Where(allocation, evidence.placement, _failing_gpus(found))
    return _conclude(found, where, recurrence_blames=True)


def classify_text(catalogue: Catalogue, matcher: Matcher, text: str) -> Attribution:
    """Attribute one log excerpt on its own, as `respawn classify` does.

    There is no job around it: no placement, no allocation, no history, and no
    sign the job failed, so text that matches nothing is benign. Classes whose
    node rule is `recurrence` blame no node, since one excerpt cannot show a
    recurrence. A long text is read only in the regions where the matcher's
    block scan finds a failure may be (with the lines a traceback frame looks
    back over): its healthy stretches are never split into lines.
    """
    found: list[_Failure] = []
    before = 0  # lines of the regions before: `seq` keeps the text's order
    for region in matcher.regions(text, lead=_LOOK_BACK):
        texts = region.splitlines()
        found += _read(matcher, texts, partial(_excerpt_line, texts, before))
        before += len(texts)
    if not found:
        return _benign()
    return _conclude(found, _Where(frozenset(), {}, {}, believe_any=True), recurrence_blames=False)


def _excerpt_line(texts: Sequence[str], before: int, i: int) -> _Line:
    return _Line(texts[i], seq=before + i)


def _read(matcher: Matcher, texts: Sequence[str], line_at: Callable[[int], _Line]) -> list[_Failure]:
    """The failure lines among `texts`, with tracebacks read as blocks.

    `line_at(i)` tells where line i came from; it is only asked about the few
    lines that matter, so a million healthy lines cost one RE2 scan per block,
    and no Python code of their own.
    """
    found: list[_Failure] = []
    vetoed: dict[int, int] = {}  # exception lines of tracebacks a benign pattern vetoes, to what priority
    for i, hit in matcher.scan(texts):
        line = _tagged(line_at(i), texts[i])
        if hit.priority <= vetoed.get(i, -1) or _in_frame(i, line, texts, line_at):
            continue
        if untagged(texts[i]).lstrip().startswith(_HEADER):
            end = _exception_line(i, line, texts, line_at)
            veto = _traceback_veto(matcher, hit, texts, _previous(i, line, texts, line_at), end)
            if veto is not None:
                if end is not None:
                    vetoed[end] = veto
                continue
        elif _notice_veto(matcher, hit, texts, _previous(i, line, texts, line_at)) is not None:
            continue  # an exception printed without frames (no Python code raised it) after that notice
        elif _notice_veto(matcher, hit, texts, _message_header(i, line, texts, line_at)) is not None:
            continue  # the end of a traceback a message printed as its own text, with the notice
        found.append(_Failure(hit, line, i))
    return found


def _tagged(line: _Line, text: str) -> _Line:
    """`line` with the rank its tag names, unless the gatherer already set one."""
    if line.rank is not None:
        return line
    rank, _ = rank_tag(text)
    return _Line(line.text, line.source, line.node, rank, line.seq)


def _in_frame(i: int, line: _Line, texts: Sequence[str], line_at: Callable[[int], _Line]) -> bool:
    """Whether line i is part of a traceback frame: the `File "..."` header, or the
    indented source line right under it in the same stream (same rank). Tags off:
    joblog.rank_tag's `[rank3]:` (PyTorch) or `3: ` (`srun --label`)."""
    body = untagged(texts[i])
    if body.lstrip().startswith(_FRAME):
        return True
    if not _indented(body):
        return False
    j = _previous(i, line, texts, line_at)
    return j is not None and untagged(texts[j]).lstrip().startswith(_FRAME)


def _indented(body: str) -> bool:
    """Whether a line without its rank tag is indented, the space PyTorch prints after
    `[rank3]:` aside: a frame's lines are, an exception line is not."""
    return body.removeprefix(" ")[:1].isspace()


def _stream(line: _Line) -> tuple[LineSource, str | None, int | None]:
    """Who printed a line: its source, node and rank; a traceback is one stream's lines."""
    return line.source, line.node, line.rank


def _previous(i: int, line: _Line, texts: Sequence[str], line_at: Callable[[int], _Line]) -> int | None:
    """The line before line i in the same stream, within `_LOOK_BACK`."""
    for j in range(i - 1, max(-1, i - _LOOK_BACK), -1):
        if _stream(_tagged(line_at(j), texts[j])) == _stream(line):
            return j
    return None


def _message_header(i: int, line: _Line, texts: Sequence[str], line_at: Callable[[int], _Line]) -> int | None:
    """The line that opened the traceback whose exception line is line i, when a message
    printed the traceback as its own text, the header at the end of its first line
    (`Import of x failed with: Traceback (most recent call last):`, a logger given
    traceback.format_exc()): that message says what became of the exception. None
    otherwise. Only the `_LOOK_BACK` lines before line i are searched, whatever their
    stream, so that a job printing many failure lines pays no more per line than
    `_previous` costs: such a message's traceback is a few frames long."""
    if _indented(untagged(texts[i])):
        return None
    stream = _stream(line)
    for j in range(i - 1, max(-1, i - _LOOK_BACK), -1):
        if _stream(_tagged(line_at(j), texts[j])) != stream:
            continue
        body = untagged(texts[j])
        if not _indented(body):
            opening = body.strip()
            return j if opening.endswith(_HEADER) and opening != _HEADER else None
    return None


def _exception_line(i: int, line: _Line, texts: Sequence[str], line_at: Callable[[int], _Line]) -> int | None:
    """The exception line of the traceback whose header is line i: the first line after it in
    the same stream that is not indented; None for a traceback cut off before it.

    The search stops at the stream's next line that is not indented (a second header at the
    latest), so the lines of one stream are searched once in all; of other streams' lines,
    interleaved, at most `_LOOK_BACK` are passed over per header."""
    others = 0
    for j in range(i + 1, len(texts)):
        if _stream(_tagged(line_at(j), texts[j])) != _stream(line):
            others += 1
            if others > _LOOK_BACK:
                return None
            continue
        body = untagged(texts[j])
        if body.strip() and not _indented(body):
            return j
    return None


def _traceback_veto(
    matcher: Matcher, header: Hit, texts: Sequence[str], notice: int | None, end: int | None
) -> int | None:
    """The priority up to which a benign pattern vetoes the traceback whose header is `header`,
    if one does: the line printed just before it in the same stream (`notice`), Python's word
    that it ignored the exception (`Veto.TRACEBACK`), vetoes the block up to its own priority;
    a benign pattern that vetoes the block's exception line (`end`) vetoes the header with it."""
    priority = _notice_veto(matcher, header, texts, notice)
    if priority is not None:
        return priority
    if end is not None:
        body = untagged(texts[end])
        if matcher.failure(body) is None and matcher.vetoes(body, header.priority):
            return header.priority
    return None


def _notice_veto(matcher: Matcher, hit: Hit, texts: Sequence[str], notice: int | None) -> int | None:
    """The priority up to which the line printed just before a failure line in the same
    stream (`notice`) vetoes what follows it, when that is Python's word that it ignored
    an exception (`Veto.TRACEBACK`) and reaches the failure's priority."""
    if notice is None:
        return None
    priority = matcher.traceback_veto(untagged(texts[notice]))
    return priority if priority is not None and priority >= hit.priority else None


def _scheduler_facts(evidence: Evidence) -> list[_Line]:
    """What Slurm said, as lines in scontrol's format for the runbooks to read."""
    facts = []
    state = _state(evidence)
    if state or evidence.exit_code is not None:
        code = f" ExitCode={evidence.exit_code}" if evidence.exit_code is not None else ""
        facts.append(_Line(f"slurm: JobState={state or 'UNKNOWN'}{code}", LineSource.SCHEDULER))
    for node in evidence.down_nodes:
        facts.append(_Line(f"slurm: NodeName={node} State=DOWN+NOT_RESPONDING", LineSource.SCHEDULER, node))
    return facts


def _state(evidence: Evidence) -> str:
    """Slurm's job state word: "CANCELLED by 1000" is CANCELLED."""
    words = (evidence.job_state or "").split()
    return words[0].upper() if words else ""


def _failed(evidence: Evidence) -> bool:
    return _state(evidence) in _FAILED_STATES or evidence.exit_code not in (None, 0)


@dataclass(frozen=True, slots=True)
class _Where:
    """What the job knows about where its lines came from."""

    allocation: frozenset[str]  # empty: unknown
    placement: Mapping[int, str]  # rank -> node
    failing_gpus: Mapping[str, frozenset[str]]  # "bus:device" -> nodes whose kernel log reports it failing
    # With no allocation known, whether a host the text names is believed: for a lone
    # excerpt (`classify`), yes; for a job, never: its output could name any host.
    believe_any: bool = False

    def nodes_of(self, failure: _Failure) -> list[str]:
        """The node the evidence points at for this failure line, if any."""
        line, groups = failure.line, failure.hit.groups
        named = groups.get("host") or _named_host(line.text)
        placed = self.placement.get(line.rank) if line.rank is not None else None
        gpu = self.failing_gpus.get(_bus(groups["pci"]), frozenset()) if "pci" in groups else frozenset()
        if failure.hit.node_rule is NodeRule.NAMED:
            ordered = [named, line.node, placed, *sorted(gpu)]
        else:  # RANK and RECURRENCE: where the process that printed it ran
            ordered = [placed, line.node, named, *sorted(gpu)]
        for host in ordered:
            node = self._in_allocation(host)
            if node is not None:
                return [node]
        return []

    def _in_allocation(self, host: str | None) -> str | None:
        if not host or len(host) > _HOST_MAX:
            return None
        if not self.allocation:
            return host if self.believe_any else None
        if host in self.allocation:
            return host
        short = host.split(".", 1)[0]  # NCCL prints the FQDN where Slurm has the short name
        return short if short in self.allocation else None


def _named_host(text: str) -> str | None:
    match = _HOST.search(text)
    if match is None:
        return None
    return next((v for v in match.groupdict().values() if v), None)


def _bus(pci: str) -> str:
    """A PCI bus id as `bus:device`, whatever domain and function the printer added."""
    found = _PCI.search(pci.lower())
    return f"{found.group(1)}:{found.group(2)}" if found else pci.lower()


def _failing_gpus(found: list[_Failure]) -> dict[str, frozenset[str]]:
    nodes: dict[str, set[str]] = {}
    for f in found:
        if f.line.source is LineSource.KERNEL and f.line.node and "pci" in f.hit.groups:
            nodes.setdefault(_bus(f.hit.groups["pci"]), set()).add(f.line.node)
    return {bus: frozenset(n) for bus, n in nodes.items()}


def _conclude(found: list[_Failure], where: _Where, *, recurrence_blames: bool) -> Attribution:
    decider = min(found, key=lambda f: (-f.hit.priority, f.line.seq, f.order))
    hit = decider.hit
    blaming = {NodeRule.NAMED, NodeRule.RANK} | ({NodeRule.RECURRENCE} if recurrence_blames else set())
    same = [f for f in found if f.hit.failure_class is hit.failure_class and f.hit.node_rule in blaming]
    nodes = sorted({n for f in same for n in where.nodes_of(f)})
    # NAMED / RANK blame a node even when none can be named here (the workflow
    # then knows the placement); RECURRENCE only offers the nodes where it struck,
    # for the decision to compare with earlier incidents.
    implicated = any(f.hit.node_rule is not NodeRule.RECURRENCE for f in same) or bool(nodes)
    return Attribution(
        failure_class=hit.failure_class,
        cause_layer=hit.cause_layer,
        node_implicated=implicated,
        nodes=nodes,
        recoverable_by_restart=hit.recoverable_by_restart,
        pattern=hit.pattern,
        line=decider.line.text[:_AUDIT_LINE],
    )


def _unmatched(catalogue: Catalogue, evidence: Evidence) -> Attribution:
    """A failed attempt whose text no runbook knows: said so, with its last lines, and
    decided by the ladder of the class an unexplained death falls under (one restart tells
    a transient fault from a deterministic one). No pattern is claimed."""
    book = catalogue.runbooks.get(_UNMATCHED)
    last = [ln.text for ln in evidence.lines if ln.source is LineSource.JOB][-_UNKNOWN_TAIL:]
    return Attribution(
        failure_class=_UNMATCHED,
        cause_layer=book.cause_layer if book else CauseLayer.AMBIGUOUS,
        recoverable_by_restart=book.recoverable_by_restart if book else None,
        line=f"no runbook pattern matched; job state {evidence.job_state}, exit code {evidence.exit_code}",
        unknown=True,
        last_lines=[t[:_AUDIT_LINE] for t in last],
    )


def _benign() -> Attribution:
    return Attribution(failure_class=FailureClass.BENIGN, cause_layer=CauseLayer.BENIGN)
