"""How well a fit's annotator competence ranks RF10's annotators by their accuracy against the
NIST gold: the GP methods' competence (the chance that a judgment is the task's label or grade,
``models.gp.competence``) against the share of probit variance 1 / (1 + σ_j²) they reported
before 2026-11-25.

    python bench/bench_competence.py [--methods lk ordinal-gp] [--min-gold 20] [--top 20]

Per method: Spearman's ρ between each column and the accuracy against gold of the annotators
with at least ``--min-gold`` judgments of gold tasks, and the mean gold accuracy of the ``--top``
annotators by each column (what ``/next``'s best-first order proposes). ``ordinal-gp`` reads
RF10 graded (exact-grade accuracy), the others binary. Not part of the tests.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.cli.loading import load_annotation_data  # noqa: E402
from models.registry import make_aggregator  # noqa: E402

RF10 = Path(os.environ.get(
    "CROWDQRELS_RF10_FILE",
    Path(__file__).resolve().parents[1].parent / "shared" / "data" / "trec-rf10-crowd"
    / "trec-rf10-data.txt",
))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", nargs="+", default=["lk", "ordinal-gp"])
    parser.add_argument("--min-gold", type=int, default=20)
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    raw = RF10.read_bytes()
    for method in args.methods:
        data = load_annotation_data(raw, graded=method.startswith("ordinal"))
        columns = make_aggregator(method, {"random_state": 0}).fit(data).result(
            data).annotator_columns
        n, right = data.gold_agreement()
        keep = n >= args.min_gold
        accuracy = right[keep] / n[keep]
        print(f"{method}: {int(keep.sum())} annotators with >= {args.min_gold} gold judgments, "
              f"mean accuracy {accuracy.mean():.3f}")
        for name, column in (("competence", columns["competence"][keep]),
                             ("1/(1+noise_variance)",
                              1.0 / (1.0 + columns["noise_variance"][keep]))):
            top = np.argsort(-column, kind="stable")[:args.top]
            print(f"  {name:22s} spearman {spearmanr(column, accuracy)[0]:.3f}  "
                  f"top-{args.top} mean accuracy {accuracy[top].mean():.3f}")


if __name__ == "__main__":
    main()
