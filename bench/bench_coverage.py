"""Coverage of the evaluation intervals: how often a nominal-95 % interval holds the true score.

Synthetic collections with known truth (``models.synthetic``, Algorithm 10; documents spread over
20 topics by doc number mod 20) and 6 runs ranking each topic by truth + Gaussian noise of sd
0.3, 0.6, 0.9, 1.2, 1.6, 2.5 (the setting of issue #34). Per seed and method (fitted without
gold; ``oracle``: the generator's exact posterior, the bound a calibrated posterior reaches):
the run scores on the true labels, the posterior intervals (independent per-task draws), the
posterior intervals whose draws also draw the annotators' confusion matrices
(``posterior+theta``, ``models.evaluation.parameters``), for GP fits those drawn jointly from
the GP's posterior of f (``posterior+joint``, ``models.evaluation.joint``; as a bound,
``joint+truth-calibrated``: the same with P(relevant) mapped by an isotonic regression on every
task's truth, what a perfect calibration map of the fit would give), and the
prediction-powered ones from a random ``--gold-share`` of the pairs labelled with the truth.
Prints, per method, measure and interval kind, the share of (seed, run) intervals that hold the
true mean over topics and their mean width; ``--json`` writes the rows.

    nice -n 10 python bench/bench_coverage.py --tasks 1000 --seeds 10 --methods ds magp
    nice -n 5 python bench/bench_coverage.py --tasks 600 --seeds 20 --methods oracle \
        oracle-noruns --kinds posterior
    # the synthetic evaluation of issue #34 (12 intervals: 6 runs x P@10, AP)
    nice -n 10 python bench/bench_coverage.py --tasks 2000 --seeds 1 --first-seed 7 \
        --methods magp --measures P@10 AP --samples 500
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

KINDS = ("posterior", "posterior+theta", "ppi", "posterior+joint", "joint+truth-calibrated")
NOISE = (0.3, 0.6, 0.9, 1.2, 1.6, 2.5)
N_TOPICS = 20


def collection(n_tasks: int, seed: int, noise: tuple[float, float]):  # type: ignore[no-untyped-def]
    """(AnnotationData without gold, the generator's data (``truth``, ...), runs {name: {topic:
    [doc...]}}, the runs' scores (R, J) they rank by)."""
    from dataclasses import replace

    from models.synthetic import generate

    synth = generate(n_tasks, 60, noise_level=noise, redundancy=5, random_state=seed)
    data = synth.to_annotation_data(with_features=False)
    docs = data.doc_ids
    topics = np.array([f"t{i % N_TOPICS:02d}" for i in range(len(docs))], dtype=object)
    data = replace(data, topic_ids=topics, gold=None)
    rng = np.random.default_rng([seed, 99])
    runs, scores = {}, []
    for r, sd in enumerate(NOISE):
        score = synth.truth + sd * rng.standard_normal(len(docs))
        scores.append(score)
        runs[f"run{r}"] = {t: [str(docs[i]) for i in np.flatnonzero(topics == t)[
            np.argsort(-score[topics == t], kind="stable")]] for t in np.unique(topics)}
    return data, synth, runs, np.array(scores)


def oracle(synth, scores: np.ndarray | None) -> np.ndarray:  # type: ignore[no-untyped-def]
    """(J, 2) the exact posterior of the generator (Algorithm 10 and the runs) with its
    parameters known: P(y_i | x_i, judgments, run scores) ∝ ½ N(x_i | μ_y, I)
    Π_a Φ(s_a y / √(‖x_i − μ_y‖² + σ_j²)) Π_r N(s_ri | [y = 1], sd_r²), y = ±1. The runs (and
    so every score of a run) are functions of the run scores: credible intervals from this
    posterior hold the truth 95 % of the time on average over collections, the bound. Without
    ``scores`` (``oracle-noruns``): calibrated task by task, yet blind to what the runs know of
    the labels, so its run-score intervals do not cover (docs/benchmarks.md)."""
    from scipy.special import log_ndtr

    x, sign = synth.features, 2.0 * synth.label - 1.0
    logp = []
    for y, mu in ((-1.0, np.array([0.0, 1.0])), (1.0, np.array([1.0, 0.0]))):
        task_noise = np.sum((x - mu) ** 2, axis=1)
        sd = np.sqrt(task_noise[synth.task] + synth.annotator_noise[synth.annotator])
        votes = np.bincount(synth.task, log_ndtr(sign * y / sd), minlength=x.shape[0])
        runs = 0.0 if scores is None else -0.5 * np.sum(
            (scores - (y > 0)) ** 2 / np.square(NOISE)[:, None], axis=0)
        logp.append(-0.5 * task_noise + votes + runs)
    p1 = 1.0 / (1.0 + np.exp(np.clip(logp[0] - logp[1], -700, 700)))
    return np.column_stack([1.0 - p1, p1])


def fit(method: str, data, runs, seed: int,  # type: ignore[no-untyped-def]
        params: dict | None = None):
    """(P (J, 2), the GP's joint loadings ``models.gp.joint`` or None, the share they keep)."""
    from models.features import build_features
    from models.registry import make_aggregator  # noqa: I001

    if method in ("magp", "lk", "gpmv"):
        tasks = list(zip(data.topic_ids.tolist(), data.doc_ids.tolist(), strict=True))
        features = build_features(tasks, runs=runs)
        data = data.with_features(features.as_dict(), dim=features.dim)
    from models.registry import get_method

    seeded = "random_state" in get_method(method).params
    model = make_aggregator(method, {**({"random_state": seed} if seeded else {}),
                                     **(params or {})})
    proba = np.asarray(model.fit(data).proba_, dtype=np.float64)
    joint = None
    if method in ("magp", "lk", "gpmv"):
        from models.gp.joint import joint_loadings

        joint = joint_loadings(model)
    return proba, joint


def one_seed(method: str, n_tasks: int, seed: int, args: argparse.Namespace) -> list[dict]:
    from models.evaluation.joint import JointLoadings
    from models.evaluation.measures import parse_measures
    from models.evaluation.parameters import AnnotatorDraws
    from models.evaluation.scoring import evaluate_runs, report
    from models.evaluation.uncertainty import Posterior

    data, synth, runs, run_scores = collection(n_tasks, seed, tuple(args.noise))
    truth = synth.truth
    measures = parse_measures(args.measures)
    start = time.perf_counter()
    if method in ("oracle", "oracle-noruns"):
        proba, joint = oracle(synth, run_scores if method == "oracle" else None), None
    else:
        proba, joint = fit(method, data, runs, seed, json.loads(args.params or "{}"))
    fit_s = time.perf_counter() - start
    loadings = None if joint is None else JointLoadings(data.topic_ids, data.doc_ids, joint[0])
    post = Posterior(topics=data.topic_ids, docs=data.doc_ids, proba=proba,
                     classes=np.array([0, 1]), relevant_index=1)
    true = evaluate_runs(Posterior.binary(data.topic_ids, data.doc_ids, truth.astype(float)),
                         runs, measures, samples=0)
    rng = np.random.default_rng([seed, 7])
    gold = np.where(rng.random(len(truth)) < args.gold_share, truth, -1)
    theta = AnnotatorDraws.draw(proba, data.task, data.annotator, data.label, 2, args.samples,
                                np.random.default_rng([seed, 11]))
    out = []
    kinds = [("posterior", None, None, None), ("posterior+theta", None, theta, None),
             ("ppi", gold, None, None)]
    if loadings is not None:
        kinds.append(("posterior+joint", None, None, loadings))
        kinds.append(("joint+truth-calibrated", None, None, loadings))
    for kind, gold_class, params, joint_draws in kinds:
        if kind not in args.kinds:
            continue
        draw_from = post
        if kind == "joint+truth-calibrated":  # a bound: P mapped by isotonic regression on the
            from models.calibration import Isotonic  # truth of every task (in sample)

            p = Isotonic.fit(proba[:, 1], truth)(proba[:, 1])
            draw_from = Posterior.binary(data.topic_ids, data.doc_ids, p)
        scores = evaluate_runs(draw_from, runs, measures, samples=args.samples, seed=seed,
                               gold_class=gold_class, parameters=params, joint=joint_draws)
        for row in report(scores)["results"]:
            if row["topic"] != "all":
                continue
            target = float(true.mean_value(row["measure"])[scores.runs.index(row["run"])])
            out.append({"method": method, "seed": seed, "kind": kind, "run": row["run"],
                        "measure": row["measure"], "truth": target, "value": row["value"],
                        "estimate": row["estimate"], "low": row["low"], "high": row["high"],
                        "holds": row["low"] <= target <= row["high"],
                        "holds_estimate": row["low"] <= row["estimate"] <= row["high"],
                        "accuracy": float(np.mean((proba[:, 1] >= 0.5) == truth)),
                        "fit_s": fit_s, "joint_kept": None if joint is None else joint[1]})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--methods", nargs="+", default=["ds", "magp"])
    parser.add_argument("--measures", nargs="+", default=["P@10", "AP", "nDCG@10"])
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--gold-share", type=float, default=0.10)
    parser.add_argument("--noise", type=float, nargs=2, default=[4.0, 8.0])
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS,
                        help="interval kinds (posterior+joint: GP methods only)")
    parser.add_argument("--params", help="model parameters (JSON) for every fitted method")
    parser.add_argument("--json", help="write every interval here")
    args = parser.parse_args(argv)
    rows: list[dict] = []
    for method in args.methods:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            rows += one_seed(method, args.tasks, seed, args)
            kept = rows[-1]["joint_kept"]
            print(f"{method} seed {seed}: fit {rows[-1]['fit_s']:.1f} s, accuracy "
                  f"{rows[-1]['accuracy']:.3f}"
                  + ("" if kept is None else f", joint loadings keep {kept:.3f}"),
                  file=sys.stderr)
    print("method\tmeasure\tkind\tintervals\tcoverage\tmean width\testimate inside")
    keys = sorted({(r["method"], r["measure"], r["kind"]) for r in rows})
    for method, measure, kind in keys:
        sel = [r for r in rows if (r["method"], r["measure"], r["kind"]) == (method, measure, kind)]
        width = np.mean([r["high"] - r["low"] for r in sel])
        print(f"{method}\t{measure}\t{kind}\t{len(sel)}\t{np.mean([r['holds'] for r in sel]):.3f}"
              f"\t{width:.3f}\t{np.mean([r['holds_estimate'] for r in sel]):.3f}")
    for method in args.methods:
        for kind in args.kinds:
            sel = [r for r in rows if r["method"] == method and r["kind"] == kind]
            if not sel:
                continue
            print(f"{method}\tall\t{kind}\t{len(sel)}\t{np.mean([r['holds'] for r in sel]):.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
