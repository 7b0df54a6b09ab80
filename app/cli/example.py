"""``crowdqrels example DIR``: a small, self-contained collection to try every command on (the
README's walk-through runs on it). Generated from a seed, so the same seed writes the same
files byte for byte:

- ``judgments.tsv``: topic, doc, annotator, label (0/1/2, -2: could not judge) and gold (the
  expert grade for about a third of the tasks, else empty), crowd workers of mixed reliability;
- ``gold.qrels``: the same gold as TREC qrels (``topic 0 doc grade``);
- ``topics.tsv``, ``docs.tsv``: ``id<TAB>text``, documents that use their topic's words more
  the more relevant they are;
- ``runs/run1.txt`` … ``runs/run3.txt``: TREC runs ranking every document of each topic, the
  unjudged ones too (a sampling has something to draw), better and worse systems;
- ``llm.qrels``: an LLM judge's grades for every document (right about four times in five).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

TOPICS, DOCS, JUDGED, WORKERS, RUNS = 5, 40, 24, 12, 3
WORDS = ("river", "solar", "violin", "glacier", "harbour", "orchard", "comet", "lantern", "falcon",
         "quartz", "meadow", "tunnel", "saffron", "beacon", "canyon", "pepper", "marble", "copper",
         "willow", "thunder", "island", "garden", "anchor", "summit", "velvet")


def _ids() -> tuple[list[str], dict[str, list[str]]]:
    topics = [str(401 + t) for t in range(TOPICS)]
    return topics, {t: [f"doc-{t}-{d:02d}" for d in range(DOCS)] for t in topics}


def write_example(directory: Path, seed: int = 0) -> list[Path]:
    """Write the collection into ``directory`` (created); the paths written."""
    rng = np.random.default_rng(seed)
    topics, docs = _ids()
    grade = {(t, d): int(rng.choice(3, p=[0.55, 0.25, 0.2])) for t in topics for d in docs[t]}
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "runs").mkdir(exist_ok=True)
    files = {name: directory / name for name in (
        "judgments.tsv", "gold.qrels", "topics.tsv", "docs.tsv", "llm.qrels")}
    topic_words = {t: [WORDS[(5 * i + k) % len(WORDS)] for k in range(3)]
                   for i, t in enumerate(topics)}
    files["topics.tsv"].write_text("".join(f"{t}\t{' '.join(topic_words[t])}\n" for t in topics))
    lines = []
    for t in topics:
        for d in docs[t]:
            noise = list(rng.choice(WORDS, size=8))
            lines.append(f"{d}\t{' '.join(noise + topic_words[t] * grade[(t, d)])}\n")
    files["docs.tsv"].write_text("".join(lines))
    _write_judgments(files["judgments.tsv"], files["gold.qrels"], rng, topics, docs, grade)
    files["llm.qrels"].write_text("".join(
        f"{t} 0 {d} {grade[(t, d)] if rng.random() < 0.8 else int(rng.integers(3))}\n"
        for t in topics for d in docs[t]))
    runs = []
    for r in range(RUNS):
        skill = 1.5 - 0.5 * r  # run1 the best
        path = directory / "runs" / f"run{r + 1}.txt"
        rows = []
        for t in topics:
            scores = {d: skill * grade[(t, d)] + rng.normal() for d in docs[t]}
            ranked = sorted(docs[t], key=lambda d: (-scores[d], d))
            rows += [f"{t} Q0 {d} {k + 1} {scores[d]:.4f} run{r + 1}\n"
                     for k, d in enumerate(ranked)]
        path.write_text("".join(rows))
        runs.append(path)
    return [*files.values(), *runs]


def _write_judgments(judgments: Path, gold: Path, rng: np.random.Generator, topics: list[str],
                     docs: dict[str, list[str]], grade: dict[tuple[str, str], int]) -> None:
    """Crowd labels for the first JUDGED documents of each topic, 3 to 5 workers each; workers
    1-4 careful, 5-9 middling, 10-12 close to random; 1 label in 30 is -2."""
    accuracy = np.r_[np.full(4, 0.9), np.full(5, 0.7), np.full(WORKERS - 9, 0.4)]
    rows, qrels = ["topic\tdoc\tannotator\tlabel\tgold\n"], []
    for t in topics:
        for d in docs[t][:JUDGED]:
            truth = grade[(t, d)]
            has_gold = rng.random() < 0.35
            if has_gold:
                qrels.append(f"{t} 0 {d} {truth}\n")
            for w in sorted(rng.choice(WORKERS, size=int(rng.integers(3, 6)), replace=False)):
                if rng.random() < 1 / 30:
                    label = -2
                elif rng.random() < accuracy[w]:
                    label = truth
                else:
                    label = int(rng.choice([g for g in range(3) if g != truth]))
                rows.append(f"{t}\t{d}\tw{w + 1:02d}\t{label}\t{truth if has_gold else ''}\n")
    judgments.write_text("".join(rows))
    gold.write_text("".join(qrels))


def _example(args: argparse.Namespace) -> int:
    written = write_example(Path(args.directory), seed=args.seed)
    print(f"crowdqrels example: wrote {len(written)} files to {args.directory}")
    return 0


def add_command(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    command = subparsers.add_parser(
        "example", help="write a small self-contained collection to try the commands on",
        description="Write judgments.tsv (with a gold column), gold.qrels, topics.tsv, docs.tsv, "
                    "runs/run1-3.txt (ranking unjudged documents too) and llm.qrels into "
                    "DIRECTORY: the README's walk-through runs on them.")
    command.add_argument("directory", metavar="DIRECTORY", help="created if needed")
    command.add_argument("--seed", type=int, default=0,
                         help="the same seed writes the same files (default 0)")
    command.set_defaults(func=_example)
