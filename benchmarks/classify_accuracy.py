"""How well `respawn classify` agrees with a labelled corpus.

    python benchmarks/classify_accuracy.py [CORPUS.jsonl]

The corpus (default: ../shared/corpus/dev.jsonl from the repository root) holds
`id`, `text` and the labels `failure_class`, `cause_layer`, `node_implicated`,
`recoverable_by_restart`. Prints failure-class accuracy, benign lines flagged as
failures, node-implicated precision and recall, cause-layer accuracy where the
label is not `ambiguous`, a per-class table and every confusion.
"""

import argparse
import io
import json
import math
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from respawn.attribution.classify import run  # noqa: E402

DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus" / "dev.jsonl"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.corpus.read_text().splitlines() if line.strip()]
    out = io.StringIO()
    run(io.StringIO("".join(json.dumps({"id": r["id"], "text": r["text"]}) + "\n" for r in rows)), out)
    got = {a["id"]: a for a in map(json.loads, out.getvalue().splitlines())}
    report(rows, got)
    return 0


def _ratio(num: int, den: int) -> str:
    if not den:
        return "n/a (0/0)"
    low, high = wilson(num, den)
    return f"{num / den:.3f} ({num}/{den}; 95% Wilson {low:.3f}-{high:.3f})"


def wilson(num: int, den: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion: honest at small n and at 0 or 1."""
    p = num / den
    centre = (p + z * z / (2 * den)) / (1 + z * z / den)
    half = z * math.sqrt(p * (1 - p) / den + z * z / (4 * den * den)) / (1 + z * z / den)
    return max(0.0, centre - half), min(1.0, centre + half)


def report(rows: list[dict], got: dict[str, dict]) -> None:
    errors = [r["id"] for r in rows if "error" in got[r["id"]]]
    ok = [r for r in rows if "error" not in got[r["id"]]]
    right = [r for r in ok if got[r["id"]]["failure_class"] == r["failure_class"]]
    benign = [r for r in ok if r["failure_class"] == "benign"]
    flagged = [r["id"] for r in benign if got[r["id"]]["failure_class"] != "benign"]
    missed = [r["id"] for r in ok if r["failure_class"] != "benign" and got[r["id"]]["failure_class"] == "benign"]
    said = [r for r in ok if got[r["id"]]["node_implicated"]]
    truly = [r for r in ok if r["node_implicated"]]
    both = [r for r in said if r["node_implicated"]]
    layered = [r for r in ok if r["cause_layer"] != "ambiguous"]
    layer_right = [r for r in layered if got[r["id"]]["cause_layer"] == r["cause_layer"]]
    verdicts = [r for r in ok if isinstance(r["recoverable_by_restart"], bool)]
    verdict_right = [r for r in verdicts if got[r["id"]]["recoverable_by_restart"] is r["recoverable_by_restart"]]

    print(f"excerpts                       {len(rows)}  (errors: {len(errors)} {errors or ''})")
    print(f"failure-class accuracy         {_ratio(len(right), len(ok))}")
    print(f"benign excerpts flagged        {len(flagged)} of {len(benign)} {flagged or ''}")
    failures = len(ok) - len(benign)
    print(
        f"failures called benign         {len(missed)} of {failures} ({len(missed) / failures:.1%}) {missed or ''}"
        if failures
        else "failures called benign         0 of 0"
    )
    print(f"node-implicated precision      {_ratio(len(both), len(said))}")
    print(f"node-implicated recall         {_ratio(len(both), len(truly))}")
    print(f"cause-layer accuracy (labelled non-ambiguous)  {_ratio(len(layer_right), len(layered))}")
    print(f"recoverable_by_restart agrees (labelled true/false)  {_ratio(len(verdict_right), len(verdicts))}")
    certain = [r for r in ok if not r.get("uncertain")]
    if len(certain) < len(ok):
        # The held-back sets' collectors mark `uncertain` the rows whose label comes from the
        # thread's later discussion, not from the text (holdout-5.md): the rest is what text can decide.
        sure_right = sum(got[r["id"]]["failure_class"] == r["failure_class"] for r in certain)
        sure_layered = [r for r in certain if r["cause_layer"] != "ambiguous"]
        sure_layer_right = sum(got[r["id"]]["cause_layer"] == r["cause_layer"] for r in sure_layered)
        print(
            f"not marked uncertain ({len(certain)}): class {_ratio(sure_right, len(certain))}; "
            f"layer {_ratio(sure_layer_right, len(sure_layered))}"
        )

    print("\nper class (by label)          n   right  recall  precision")
    predicted = Counter(got[r["id"]]["failure_class"] for r in ok)
    correct = Counter(r["failure_class"] for r in right)
    for cls, n in sorted(Counter(r["failure_class"] for r in ok).items()):
        precision = f"{correct[cls] / predicted[cls]:.2f}" if predicted[cls] else "  - "
        print(f"  {cls:<26} {n:>3}  {correct[cls]:>5}  {correct[cls] / n:>6.2f}  {precision:>9}")

    confusions: dict[tuple[str, str], list[str]] = defaultdict(list)
    for r in ok:
        if got[r["id"]]["failure_class"] != r["failure_class"]:
            confusions[(r["failure_class"], got[r["id"]]["failure_class"])].append(r["id"])
    print("\nconfusions (label -> classified)")
    for (want, have), ids in sorted(confusions.items()):
        print(f"  {want} -> {have}: {', '.join(ids)}")
    print("\ncause-layer misses (label -> classified)")
    for r in layered:
        if got[r["id"]]["cause_layer"] != r["cause_layer"]:
            print(
                f"  {r['id']}: {r['cause_layer']} -> {got[r['id']]['cause_layer']} "
                f"({got[r['id']]['failure_class']}, {got[r['id']]['pattern']})"
            )
    print("\nnode-implicated disagreements (label -> classified)")
    for r in ok:
        if bool(r["node_implicated"]) != got[r["id"]]["node_implicated"]:
            print(
                f"  {r['id']}: {r['node_implicated']} -> {got[r['id']]['node_implicated']} "
                f"({got[r['id']]['failure_class']}, {got[r['id']]['pattern']})"
            )


if __name__ == "__main__":
    sys.exit(main())
