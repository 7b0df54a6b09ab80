"""Evaluating runs on a qrels posterior: vectorised over draws vs one ir_measures call per draw.

Times are wall clock and CPU time of this process (the CPU time is the fair figure on a shared
machine; the compiled code runs on one thread). Synthetic TREC-like set-up (seeded): per topic
5,000 candidate documents with a latent relevance; each run scores every candidate by latent +
its own noise and keeps its top ``--depth``; the pool (the judged documents) is the union of
every run's top ``--pool``; each judged document gets a crowd posterior P(relevant) (Beta around
its latent label). Prints the time and the peak memory of ``evaluate_runs`` (most probable qrels
+ ``--samples`` draws) and of the report, and the time of ir_measures on ``--baseline-draws``
draws, extrapolated to ``--samples`` draws.

    .venv/bin/python bench/bench_evaluation.py                 # 100 runs x 50 topics x 1000 x 1000
    .venv/bin/python bench/bench_evaluation.py --runs 20 --topics 10   # a quick look
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models.evaluation.measures import parse_measures  # noqa: E402
from models.evaluation.scoring import evaluate_runs, report  # noqa: E402
from models.evaluation.uncertainty import Posterior, draw_classes  # noqa: E402

IR_MEASURES_SET = ["P@10", "AP", "nDCG@10", "R@100", "Rprec", "Bpref", "RR"]
FULL_SET = IR_MEASURES_SET + ["PRES@1000", "nP@95", "LastRel", "unjudged@10"]


def make_data(n_runs: int, n_topics: int, depth: int, pool: int, candidates: int,
              seed: int) -> tuple[Posterior, dict[str, dict[str, list[str]]], dict]:
    rng = np.random.default_rng(seed)
    names = np.array([f"doc{i}" for i in range(candidates)], dtype=object)
    runs: dict[str, dict[str, list[str]]] = {f"run{r:03d}": {} for r in range(n_runs)}
    scores_of: dict[str, dict[str, np.ndarray]] = {name: {} for name in runs}
    topics, docs, p_rel = [], [], []
    for t in range(n_topics):
        topic = f"{401 + t}"
        latent = rng.random(candidates) < 0.05
        judged = np.zeros(candidates, dtype=bool)
        for r, name in enumerate(runs):
            quality = 0.5 + 2.5 * (r / max(n_runs - 1, 1))
            score = quality * latent + rng.normal(size=candidates)
            top = np.argsort(-score, kind="stable")[:depth]
            runs[name][topic] = names[top].tolist()
            scores_of[name][topic] = score[top]
            judged[top[:pool]] = True
        ids = np.flatnonzero(judged)
        topics += [topic] * len(ids)
        docs += names[ids].tolist()
        p_rel.append(np.where(latent[ids], rng.beta(6, 2, len(ids)), rng.beta(1, 8, len(ids))))
    posterior = Posterior.binary(topics, docs, np.concatenate(p_rel))
    return posterior, runs, scores_of


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--topics", type=int, default=50)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--pool", type=int, default=20, help="pool depth per run")
    parser.add_argument("--candidates", type=int, default=5000)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--baseline-draws", type=int, default=2,
                        help="draws scored with ir_measures (0: skip the baseline)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    start = time.perf_counter()
    posterior, runs, scores_of = make_data(args.runs, args.topics, args.depth, args.pool,
                                           args.candidates, args.seed)
    print(f"data: {args.runs} runs x {args.topics} topics x depth {args.depth}; "
          f"{posterior.n_tasks} judged tasks ({posterior.n_tasks / args.topics:.0f} per topic); "
          f"built in {time.perf_counter() - start:.1f} s; peak RSS {peak_mib():.0f} MiB")

    # Compile (or load the cached machine code) once, outside the timings.
    first = next(iter(runs))
    evaluate_runs(posterior, {first: runs[first]}, parse_measures(FULL_SET), samples=2, seed=0)
    for label, names in (("ir_measures' measures", IR_MEASURES_SET), ("all measures", FULL_SET)):
        measures = parse_measures(names)
        start, cpu = time.perf_counter(), time.process_time()
        scores = evaluate_runs(posterior, runs, measures, samples=args.samples, seed=1)
        scored, scored_cpu = time.perf_counter() - start, time.process_time() - cpu
        start, cpu = time.perf_counter(), time.process_time()
        out = report(scores)
        reported, reported_cpu = time.perf_counter() - start, time.process_time() - cpu
        print(f"vectorised, {label} ({len(names)}): {args.samples} draws scored in "
              f"{scored:.1f} s wall / {scored_cpu:.1f} s CPU, report ({len(out['results'])} "
              f"results, {len(out['pairs'])} pairs) in {reported:.1f} s wall / "
              f"{reported_cpu:.1f} s CPU; peak RSS so far {peak_mib():.0f} MiB", flush=True)
        if label.startswith("ir_measures"):
            ours = scored_cpu + reported_cpu
    if args.baseline_draws <= 0:
        return 0

    import ir_measures

    reference = [ir_measures.parse_measure(n) for n in IR_MEASURES_SET]
    run_rows = [ir_measures.ScoredDoc(t, d, float(s)) for name in runs for t in runs[name]
                for d, s in zip(runs[name][t], scores_of[name][t], strict=True)]
    per_run = {name: [ir_measures.ScoredDoc(t, d, float(s)) for t in runs[name]
                      for d, s in zip(runs[name][t], scores_of[name][t], strict=True)]
               for name in runs}
    del run_rows
    rng = np.random.default_rng(2)
    classes = draw_classes(posterior.proba, args.baseline_draws, rng)
    start = time.process_time()
    for s in range(args.baseline_draws):
        qrels = [ir_measures.Qrel(t, d, int(c)) for t, d, c in
                 zip(posterior.topics, posterior.docs, classes[s], strict=True)]
        evaluator = ir_measures.evaluator(reference, qrels)
        for name in runs:
            list(evaluator.iter_calc(per_run[name]))
    per_draw = (time.process_time() - start) / args.baseline_draws
    print(f"ir_measures, one evaluator per draw (all runs, {len(IR_MEASURES_SET)} measures): "
          f"{per_draw:.1f} s CPU per draw, measured on {args.baseline_draws} draws -> "
          f"{per_draw * args.samples:.0f} s CPU for {args.samples} draws (extrapolated); "
          f"ratio {per_draw * args.samples / ours:.0f}x the vectorised CPU time "
          f"({ours:.1f} s incl. report)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
