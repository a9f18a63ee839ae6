"""A digest of everything `classify_text` answers on the labelled corpora, to show that a
change to the matcher's speed changes no answer.

    python benchmarks/classify_digest.py [--tree DIR] [--tagged] [--long] [CORPUS.jsonl ...]

For each corpus (default: benchmarks/corpus/*.jsonl and ../shared/corpus/dev.jsonl)
it prints the SHA-256 of every excerpt's whole attribution (class, layer, nodes,
pattern, the deciding line, ...), in order. `--tagged` also classifies each excerpt
with its lines rank-tagged as torchrun and `srun --label` print them; `--long`, each
excerpt inside a few hundred healthy lines of a generated log (tqdm's carriage returns
among them), so that it straddles the places where a long text is cut into blocks. Run it with the classifier
of two trees (`--tree`, default this one) and compare: equal digests, equal answers. It prints no text
of the excerpts, so it can run on the held-back sets.
"""

import argparse
import hashlib
import importlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CORPORA = [*sorted((ROOT / "benchmarks" / "corpus").glob("*.jsonl")), ROOT.parent / "shared" / "corpus" / "dev.jsonl"]
# Healthy lines of a few trainers and of NCCL, with and without rank tags.
HEALTHY = (
    " iteration {i:>6}/ 100000 | elapsed time per iteration (ms): 1001.2 | lm loss: 2.1E+00 | grad norm: 0.9 |",
    "[rank{r}]: step {i} loss 1.2345 tokens/s 182133",
    "gpu-{r:03d}:1234:1234 [{r}] NCCL INFO Channel 03/0 : {r}[{r}] -> 1[0] [send] via NET/IB/0/GDRDMA",
    "{r}: [2030-01-01 10:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] step={i}, skipped=0",
    "{{'loss': 1.2, 'grad_norm': 0.8, 'learning_rate': 1.9e-05, 'epoch': 0.{i}}}",
)
# How launchers tag a rank's lines: torchrun's `[rankN]:`, srun --label's `N: `, after indentation.
TAGS = ("[rank3]:", "[rank0]: ", "12: ", "  [rank1]:", " 7: ")


def tagged(text: str) -> str:
    return "\n".join(TAGS[i % len(TAGS)] + line for i, line in enumerate(text.splitlines()))


def inside_a_log(text: str, seed: int) -> str:
    """`text` after and before healthy lines, as many as `seed` picks, every 37th of
    them a tqdm bar redrawn by "\r"."""
    count = seed % 401 + seed % 7 * 300
    lines = [HEALTHY[(i + seed) % len(HEALTHY)].format(i=i, r=i % 8) for i in range(count)]
    for i in range(0, len(lines), 37):
        lines[i] = "\r".join(f" {p}%|{'█' * (p // 10)}| {p}/100" for p in range(0, 101, 25))
    cut = seed * 7919 % (len(lines) + 1)
    return "\n".join([*lines[:cut], text, *lines[cut:]])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=ROOT, help="the repository whose classifier runs")
    parser.add_argument("--tagged", action="store_true")
    parser.add_argument("--long", action="store_true")
    parser.add_argument("corpora", nargs="*", type=Path, default=CORPORA)
    args = parser.parse_args()
    sys.path.insert(0, str(args.tree.resolve()))
    classify_text = importlib.import_module("respawn.attribution.attribute").classify_text
    catalogue = importlib.import_module("respawn.attribution.runbook").Catalogue.load()
    matcher = importlib.import_module("respawn.attribution.matcher").Matcher.from_catalogue(catalogue)
    print(f"classifier of {Path(sys.modules['respawn'].__file__).parent.parent}")
    for corpus in args.corpora:
        digest = hashlib.sha256()
        rows = [json.loads(line) for line in corpus.read_text().splitlines() if line.strip()]
        for n, row in enumerate(rows):
            texts = [row["text"], tagged(row["text"])] if args.tagged else [row["text"]]
            texts += [inside_a_log(t, n) for t in texts] if args.long else []
            for text in texts:
                digest.update(classify_text(catalogue, matcher, text).model_dump_json().encode() + b"\n")
        print(f"{digest.hexdigest()[:16]}  {len(rows):4d} excerpts  {corpus.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
