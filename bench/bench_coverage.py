"""Coverage of the evaluation intervals: how often a nominal-95 % interval holds the true score.

Synthetic collections with known truth (``models.synthetic``, Algorithm 10; documents spread over
20 topics by doc number mod 20) and 6 runs ranking each topic by truth + Gaussian noise of sd
0.3, 0.6, 0.9, 1.2, 1.6, 2.5 (the setting of issue #34). Per seed and method (fitted without
gold): the run scores on the true labels, the posterior intervals of independent per-task draws
(``posterior/labels``), those whose draws first draw the annotators' parameters from their
posterior (``posterior/parameters``: ``models.evaluation.parameters.draw_parameters``, the code
path of the service's and the CLI's parameter draws for DS, IBCC, EBCC, MACE, ordinal-ds), and
the prediction-powered ones from a random ``--gold-share`` of the pairs labelled with the truth;
for GP fits those drawn jointly from the GP's posterior of f (``posterior+joint``,
``models.evaluation.joint``; as a bound, ``joint+truth-calibrated``: the same with P(relevant)
mapped by an isotonic regression on every task's truth, what a perfect calibration map of the fit
would give). ``oracle`` / ``oracle-noruns`` (Algorithm 10 only) are the generator's exact
posterior with and without what the runs know: the bound a calibrated posterior reaches.
``--data ds`` draws a Dawid-Skene-true collection instead (each annotator a random confusion
matrix, ``--redundancy`` random annotators per task out of ``--annotators``): the model is then
true, and an interval of the right width covers at its nominal rate.
Prints, per method, measure and interval kind, the share of (seed, run) intervals that hold the
true mean over topics and their mean width; ``--json`` writes the rows.

    nice -n 10 python bench/bench_coverage.py --tasks 1000 --seeds 10 --methods ds magp
    nice -n 5 python bench/bench_coverage.py --tasks 600 --seeds 20 --methods oracle \
        oracle-noruns --kinds posterior/labels
    nice -n 5 python bench/bench_coverage.py --data ds --tasks 1000 --annotators 100 \
        --redundancy 2 --seeds 10 --methods ds mace --samples 200
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

KINDS = ("posterior/labels", "posterior/parameters", "ppi", "posterior+joint",
         "joint+truth-calibrated")
NOISE = (0.3, 0.6, 0.9, 1.2, 1.6, 2.5)
N_TOPICS = 20


def collection(n_tasks: int, seed: int, args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """(AnnotationData without gold, truth (J,), runs {name: {topic: [doc...]}}, the
    generator's data (Algorithm 10; None for ``--data ds``), the runs' scores (R, J))."""
    from dataclasses import replace

    synth = None
    if args.data == "ds":
        data, truth = ds_collection(n_tasks, seed, args.annotators, args.redundancy)
    else:
        from models.synthetic import generate

        synth = generate(n_tasks, args.annotators, noise_level=tuple(args.noise),
                         redundancy=args.redundancy, random_state=seed)
        data, truth = synth.to_annotation_data(with_features=False), synth.truth
    docs = data.doc_ids
    topics = np.array([f"t{i % N_TOPICS:02d}" for i in range(len(docs))], dtype=object)
    data = replace(data, topic_ids=topics, gold=None)
    rng = np.random.default_rng([seed, 99])
    runs, scores = {}, []
    for r, sd in enumerate(args.run_noise):
        score = truth + sd * rng.standard_normal(len(docs))
        scores.append(score)
        runs[f"run{r}"] = {t: [str(docs[i]) for i in np.flatnonzero(topics == t)[
            np.argsort(-score[topics == t], kind="stable")]] for t in np.unique(topics)}
    return data, truth, runs, synth, np.array(scores)


def ds_collection(n_tasks: int, seed: int, n_annotators: int, redundancy: int):  # type: ignore[no-untyped-def]
    """A Dawid-Skene-true binary collection: P(relevant) .3; annotator j says relevant with
    probability s_j on a relevant task and 1 - c_j on another (s_j, c_j ~ Beta(4, 1.5): mean
    .73, some near chance); ``redundancy`` distinct random annotators per task."""
    from models.data import AnnotationData

    rng = np.random.default_rng([seed, 5])
    truth = (rng.random(n_tasks) < 0.3).astype(np.int64)
    sens, spec = rng.beta(4.0, 1.5, n_annotators), rng.beta(4.0, 1.5, n_annotators)
    annotator = np.argsort(rng.random((n_tasks, n_annotators)), axis=1)[:, :redundancy].ravel()
    task = np.repeat(np.arange(n_tasks), redundancy)
    p_rel = np.where(truth[task] == 1, sens[annotator], 1.0 - spec[annotator])
    label = (rng.random(len(task)) < p_rel).astype(np.int64)
    data = AnnotationData.from_rows(["t"] * len(task), [f"d{i:05d}" for i in task],
                                    [f"w{j:03d}" for j in annotator], label.tolist())
    return data, truth[np.array([int(d[1:]) for d in data.doc_ids])]


def oracle(synth, scores: np.ndarray | None,  # type: ignore[no-untyped-def]
           run_noise: tuple[float, ...]) -> np.ndarray:
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
            (scores - (y > 0)) ** 2 / np.square(run_noise)[:, None], axis=0)
        logp.append(-0.5 * task_noise + votes + runs)
    p1 = 1.0 / (1.0 + np.exp(np.clip(logp[0] - logp[1], -700, 700)))
    return np.column_stack([1.0 - p1, p1])


def fit(method: str, data, runs, seed: int,  # type: ignore[no-untyped-def]
        params: dict | None = None, rank_transform: str = "normal"):
    from models.features import build_features
    from models.registry import make_aggregator  # noqa: I001

    if method in ("magp", "lk", "gpmv"):
        tasks = list(zip(data.topic_ids.tolist(), data.doc_ids.tolist(), strict=True))
        features = build_features(tasks, runs=runs, rank_transform=rank_transform)
        data = data.with_features(features.as_dict(), dim=features.dim)
    from models.registry import get_method

    seeded = "random_state" in get_method(method).params
    model = make_aggregator(method, {**({"random_state": seed} if seeded else {}),
                                     **(params or {})})
    return model.fit(data)


def parameter_draws(method: str, model, data, proba: np.ndarray, samples: int, seed: int,  # type: ignore[no-untyped-def]
                    params: dict | None = None):
    """The service's parameter draws for ``method``'s fit (None for a method without them)."""
    from models.evaluation.parameters import RowPrior, draw_parameters, parameter_family
    from models.tempering import plugin_posterior, readout_info

    family = parameter_family(method)
    if family is None:
        return None
    mace = family == "mace"
    # as the service's job: the draws tilt the fit's own posterior, not its gold-free read-out
    # (models.tempering), with the fit's own prior on a confusion row
    proba = plugin_posterior(proba, data.task, data.n_tasks, readout_info(model))
    return draw_parameters(family, proba, data.task, data.annotator, data.label,
                           samples=samples, seed=seed,
                           competence=model.competence_ if mace else None,
                           spam=model.spam_dist_ if mace else None,
                           class_prior=not mace or model.class_prior_used_ == "learned",
                           row_prior=RowPrior.of_fit(method, params, {
                               "confusion_prior": getattr(model, "prior_used_", None),
                               "class_prior": getattr(model, "class_prior_used_", None)}))


def one_seed(method: str, n_tasks: int, seed: int, args: argparse.Namespace) -> list[dict]:
    from models.evaluation.joint import JointLoadings
    from models.evaluation.measures import parse_measures
    from models.evaluation.scoring import evaluate_runs, report
    from models.evaluation.uncertainty import Posterior

    data, truth, runs, synth, run_scores = collection(n_tasks, seed, args)
    measures = parse_measures(args.measures)
    start = time.perf_counter()
    model, joint = None, None
    if method in ("oracle", "oracle-noruns"):
        if synth is None:
            raise SystemExit("the oracles are Algorithm 10's exact posterior: --data algorithm10")
        proba = oracle(synth, run_scores if method == "oracle" else None,
                       tuple(args.run_noise))
    else:
        model = fit(method, data, runs, seed, json.loads(args.params or "{}"),
                    args.rank_transform)
        proba = np.asarray(model.proba_, dtype=np.float64)
        if method in ("magp", "lk", "gpmv"):
            from models.gp.joint import joint_loadings, layer_draws, layer_loadings

            joint = joint_loadings(model)
            layer = layer_loadings(model)
    fit_s = time.perf_counter() - start
    loadings = None if joint is None else JointLoadings(data.topic_ids, data.doc_ids, joint[0])
    if model is not None and method in ("magp", "lk", "gpmv") and layer is not None:
        # the discrete truth layer's draws (models.evaluation.joint)
        loadings = JointLoadings(data.topic_ids, data.doc_ids, layer[0], prior=layer[1],
                                 draws=layer_draws(model))
        joint = (layer[0], layer[2])
    post = Posterior(topics=data.topic_ids, docs=data.doc_ids, proba=proba,
                     classes=np.array([0, 1]), relevant_index=1)
    true = evaluate_runs(Posterior.binary(data.topic_ids, data.doc_ids, truth.astype(float)),
                         runs, measures, samples=0)
    rng = np.random.default_rng([seed, 7])
    gold = np.where(rng.random(len(truth)) < args.gold_share, truth, -1)
    start = time.perf_counter()
    theta = (None if model is None or "posterior/parameters" not in args.kinds
             else parameter_draws(method, model, data, proba, args.samples, seed,
                                  json.loads(args.params or "{}")))
    draw_s = time.perf_counter() - start
    kinds = [("posterior/labels", None, None, None), ("ppi", gold, None, None)]
    if theta is not None:
        kinds.append(("posterior/parameters", None, theta, None))
    if loadings is not None:
        kinds += [("posterior+joint", None, None, loadings),
                  ("joint+truth-calibrated", None, None, loadings)]
    out = []
    for kind, gold_class, params, joint_draws in kinds:
        if kind not in args.kinds:
            continue
        draw_from = post
        if kind == "joint+truth-calibrated":  # a bound: P mapped by isotonic regression on the
            from models.calibration import Isotonic  # truth of every task (in sample)

            p = Isotonic.fit(proba[:, 1], truth)(proba[:, 1])
            draw_from = Posterior.binary(data.topic_ids, data.doc_ids, p)
        start = time.perf_counter()
        scores = evaluate_runs(draw_from, runs, measures, samples=args.samples, seed=seed,
                               gold_class=gold_class, parameters=params, joint=joint_draws)
        score_s = time.perf_counter() - start + (draw_s if params is not None else 0.0)
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
                        "fit_s": fit_s, "score_s": score_s,
                        "joint_kept": None if joint is None else joint[1]})
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
    parser.add_argument("--run-noise", type=float, nargs="+", default=list(NOISE),
                        help="one run per value: truth + Gaussian noise of this sd. Runs built "
                             "from the truth select on it: a crowd-only posterior, blind to the "
                             "runs, underestimates a good run's score however calibrated it is; "
                             "large values (e.g. 1000) give runs independent of the truth")
    parser.add_argument("--data", choices=("algorithm10", "ds"), default="algorithm10",
                        help="the generator: the thesis' Algorithm 10, or Dawid-Skene-true")
    parser.add_argument("--annotators", type=int, default=60)
    parser.add_argument("--redundancy", type=int, default=5)
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS,
                        help="interval kinds (posterior+joint: GP methods only)")
    parser.add_argument("--params", help="model parameters (JSON) for every fitted method")
    parser.add_argument("--rank-transform", default="normal", choices=("normal", "log_rr", "both"),
                        help="the GP methods' ranking features (models.features.ranking): the "
                             "runs' Blom normal scores (default), or log rank and reciprocal rank "
                             "(the features until 2026-11-27)")
    parser.add_argument("--json", help="write every interval here")
    args = parser.parse_args(argv)
    rows: list[dict] = []
    for method in args.methods:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            rows += one_seed(method, args.tasks, seed, args)
            kept = rows[-1]["joint_kept"] if rows else None
            print(f"{method} seed {seed}: fit {rows[-1]['fit_s']:.1f} s, accuracy "
                  f"{rows[-1]['accuracy']:.3f}"
                  + ("" if kept is None else f", joint loadings keep {kept:.3f}"),
                  file=sys.stderr)
    print("method\tmeasure\tkind\tintervals\tcoverage\tmean width\testimate inside"
          "\tscoring s (mean)")
    keys = sorted({(r["method"], r["measure"], r["kind"]) for r in rows})
    for method, measure, kind in keys:
        sel = [r for r in rows if (r["method"], r["measure"], r["kind"]) == (method, measure, kind)]
        width = np.mean([r["high"] - r["low"] for r in sel])
        print(f"{method}\t{measure}\t{kind}\t{len(sel)}\t{np.mean([r['holds'] for r in sel]):.3f}"
              f"\t{width:.3f}\t{np.mean([r['holds_estimate'] for r in sel]):.3f}"
              f"\t{np.mean([r['score_s'] for r in sel]):.2f}")
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
