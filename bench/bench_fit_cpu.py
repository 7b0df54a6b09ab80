"""CPU seconds of one default fit per data set, for comparing two trees in the same session.

    python bench/bench_fit_cpu.py /work/main ibcc      # then the branch, alternately:
    python bench/bench_fit_cpu.py /work/dcal3 ibcc

``TREE`` goes first on ``sys.path`` (its ``models`` is the one timed). Data: RF10 binary and graded,
the Algorithm-10 grid's noise 4-8 β 5 cell (2,000 tasks, 60 annotators, seed 7), and the weak
4-grade crowd of ``bench_robust.py crowds`` (2,000 tasks, 1,000 workers, accuracy .35-.85, seed 0).
Mean process CPU time of ``--repeats`` fits (default 3) after one warm-up fit. No gold. A script,
never part of the test run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree")
    parser.add_argument("method")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(args.tree).resolve()))
    from app.cli.loading import load_annotation_data
    from models.registry import make_aggregator
    from models.synthetic import NOISE_LEVELS, crowd_dataset, generate

    rf10 = Path(os.environ.get("CROWDQRELS_RF10_FILE",
                               "/work/shared/data/trec-rf10-crowd/trec-rf10-data.txt")).read_bytes()
    sets = {
        "rf10 binary": load_annotation_data(rf10, relevant_from=1, ignore=(-2,)),
        "rf10 graded": load_annotation_data(rf10, graded=True),
        "grid 4-8 β5": generate(2000, 60, noise_level=NOISE_LEVELS["4-8"], redundancy=5,
                                random_state=7).to_annotation_data(with_features=False),
        "weak 4 grades": crowd_dataset(2000, 1000, grades=4, alpha=0.0, accuracy=(0.35, 0.85),
                                       random_state=0).to_annotation_data(with_features=False),
    }
    params = {"random_state": 0} if args.method in ("mace", "ebcc") else {}
    make_aggregator(args.method, params).fit(replace(sets["grid 4-8 β5"], gold=None))  # warm-up
    cells = []
    for name, data in sets.items():
        data = replace(data, gold=None)
        start = time.process_time()
        for _ in range(args.repeats):
            make_aggregator(args.method, params).fit(data)
        cells.append(f"{name}: {(time.process_time() - start) / args.repeats:.3f}")
    print(f"{args.tree} {args.method} " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
