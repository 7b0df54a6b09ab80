"""Why the GP's joint AP intervals under-cover (issue #34 item 4; docs/benchmarks.md, "Interval
coverage", "Why AP's joint intervals miss").

For seeds of ``bench_coverage.py``'s collection (Algorithm 10, 600 tasks, 20 topics, 6 runs),
fit MAGP with run features (the defaults, or ``--params``), draw the qrels jointly as the bench's
``posterior+joint`` does (200 draws, the same seeds, so the same intervals) and report:

- per measure and run: coverage, misses below / above, the mean of truth − estimate, its sd
  across seeds against the draws' own sd, and z = (truth − estimate) / draws' sd (a calibrated
  interval has mean z 0, sd z 1);
- per rank position of the best run (run0, sd .3): the true share of relevant documents, the
  mean P(relevant) and the draws' share;
- per topic, its count R of relevant documents: z of the true R against the draws', the share of
  topics whose true R lies in the lower / upper 2.5 % of the draws, and the slope of the error
  (R − the draws' mean R) on the true R (0: the draws follow each topic's R; 1: they ignore it);
- run0's AP bias with the labels of its ranks 1–9, 10–20 or 21–30 set to the truth in every
  draw (how much of the bias each part of the ranking carries).

``--evidence true`` replaces the fit's judgments evidence (logit p − logit of the class prior)
by the generator's own (Algorithm 10's likelihood ratio of the task's judgments, with its true
annotator and task noise), keeping the fit's class prior and weight draws: a bound on what a
right evidence gives. ``--cache DIR`` keeps each fit's P(relevant), layer loadings, weight
draws and CPU seconds there (the summary's CPU s per fit is over the fits made in this run).

    nice -n 5 python bench/coverage_ap_diagnosis.py --seeds 30
    nice -n 5 python bench/coverage_ap_diagnosis.py --seeds 30 \
        --params '{"class_prior_by": "topic"}'
    nice -n 5 python bench/coverage_ap_diagnosis.py --seeds 30 --evidence true
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy.special import expit, log_ndtr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_coverage as bc  # noqa: E402

from models.evaluation.joint import JointDraws, JointLoadings  # noqa: E402
from models.evaluation.measures import parse_measures  # noqa: E402
from models.evaluation.scoring import _rows_by_topic, evaluate_runs, report  # noqa: E402
from models.evaluation.uncertainty import Posterior  # noqa: E402

SPANS = {"ranks 1-9": (0, 9), "ranks 10-20": (9, 20), "ranks 21-30": (20, 30)}
POSITIONS = ((0, 3), (3, 6), (6, 9), (9, 12), (12, 15), (15, 20), (20, 25), (25, 30))


def fitted(seed: int, args: argparse.Namespace, ns: argparse.Namespace):  # type: ignore[no-untyped-def]
    """(collection, P(relevant) (J, 2), JointLoadings of the fit's layer, accuracy)."""
    data, truth, runs, synth, _ = bc.collection(args.tasks, seed, ns)
    path = None if args.cache is None else Path(args.cache) / f"fit{args.tag}{seed}.npz"
    if path is not None and path.exists():
        f = np.load(path)
        proba, loadings, prior, draws = f["proba"], f["loadings"], f["prior"], f["draws"]
        cpu = float(f["cpu"]) if "cpu" in f else float("nan")
    else:
        from models.gp.joint import layer_draws, layer_loadings

        start = time.process_time()  # the fit's CPU seconds (every thread), draws included
        model = bc.fit("magp", data, runs, seed, json.loads(args.params or "{}"))
        cpu = time.process_time() - start
        loadings, prior, _ = layer_loadings(model)
        proba, draws = np.asarray(model.proba_), layer_draws(model)
        if path is not None:
            np.savez(path, proba=proba, loadings=loadings, prior=prior, draws=draws, cpu=cpu)
    if args.evidence == "true":  # the generator's evidence with the fit's class prior
        p1 = expit(log_ndtr(prior) - log_ndtr(-prior) + true_evidence(synth))
        proba = np.column_stack([1.0 - p1, p1])
    joint = JointLoadings(data.topic_ids, data.doc_ids, loadings, prior=prior, draws=draws)
    # the fit's evidence (logit p − logit prior), the generator's, the prior's logit, the truth
    p = np.clip(proba[:, 1], 1e-12, 1.0 - 1e-12)
    prior_logit = log_ndtr(prior) - log_ndtr(-prior)
    evidence = np.column_stack([np.log(p) - np.log1p(-p) - prior_logit, true_evidence(synth),
                                prior_logit, truth])
    return ((data, truth, runs), proba, joint, float(np.mean((proba[:, 1] >= 0.5) == truth)),
            evidence, cpu)


def true_evidence(synth) -> np.ndarray:  # type: ignore[no-untyped-def]
    """(J,) log P(judgments | relevant) − log P(judgments | not), Algorithm 10's parameters."""
    x, sign = synth.features, 2.0 * synth.label - 1.0
    out = []
    for y, mu in ((-1.0, np.array([0.0, 1.0])), (1.0, np.array([1.0, 0.0]))):
        task_noise = np.sum((x - mu) ** 2, axis=1)
        sd = np.sqrt(task_noise[synth.task] + synth.annotator_noise[synth.annotator])
        out.append(np.bincount(synth.task, log_ndtr(sign * y / sd), minlength=x.shape[0]))
    return out[1] - out[0]


def average_precision(labels: np.ndarray) -> np.ndarray:
    """(S,) AP of labels (S, n) in rank order, every document judged (0 without relevant)."""
    hits = np.cumsum(labels, axis=1)
    r = labels.sum(axis=1)
    total = (labels * hits / np.arange(1, labels.shape[1] + 1)).sum(axis=1)
    return np.where(r > 0, total / np.maximum(r, 1), 0.0)


def one_seed(seed: int, args: argparse.Namespace, ns: argparse.Namespace) -> dict:
    (data, truth, runs), proba, joint, accuracy, evidence, cpu = fitted(seed, args, ns)
    measures = parse_measures(["P@10", "AP", "nDCG@10"])
    post = Posterior(topics=data.topic_ids, docs=data.doc_ids, proba=proba,
                     classes=np.array([0, 1]), relevant_index=1)
    true = evaluate_runs(Posterior.binary(data.topic_ids, data.doc_ids, truth.astype(float)),
                         runs, measures, samples=0)
    scores = evaluate_runs(post, runs, measures, samples=args.samples, seed=seed, joint=joint)
    intervals = []
    for row in report(scores)["results"]:
        if row["topic"] != "all":
            continue
        r = scores.runs.index(row["run"])
        intervals.append({"run": row["run"], "measure": row["measure"],
                          "truth": float(true.mean_value(row["measure"])[r]),
                          "estimate": row["estimate"], "low": row["low"], "high": row["high"],
                          "sd": float(scores.mean_draws(row["measure"])[:, r].std())})
    # the same label draws as evaluate_runs' (its generators), per topic
    latent = JointDraws(post, joint, args.samples, np.random.default_rng([seed, 0, 2]))
    by_topic = _rows_by_topic(post, sorted(set(data.topic_ids.tolist())))
    column = {d: i for i, d in enumerate(data.doc_ids.tolist())}
    topics, positions, bias = [], [], {k: [] for k in ("none", *SPANS)}
    for ti, t in enumerate(sorted(by_topic)):
        rows = by_topic[t]
        labels = latent.topic_labels(rows, np.random.default_rng([seed, ti])).astype(float)
        topics.append((float(truth[rows].sum()), labels.sum(axis=1)))
        at = {int(i): j for j, i in enumerate(rows)}
        order = [at[column[d]] for d in runs["run0"][t]]
        ranked, y = labels[:, order], truth[rows][order].astype(float)
        positions.append(np.column_stack([y, proba[rows][order, 1], ranked.mean(axis=0)]))
        target = average_precision(y[None, :])[0]
        for name, span in (("none", None), *SPANS.items()):
            drawn = ranked.copy()
            if span is not None:
                drawn[:, span[0]:span[1]] = y[span[0]:span[1]]
            bias[name].append(target - average_precision(drawn).mean())
    return {"seed": seed, "accuracy": accuracy, "cpu": cpu, "evidence": evidence,
            "intervals": intervals, "topics": topics, "positions": np.stack(positions),
            "bias": {k: float(np.mean(v)) for k, v in bias.items()}}


def logistic_scales(prior_logit: np.ndarray, evidence: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(a, b) maximising Σ log σ(±(a prior_logit + b evidence)) over the tasks' true labels."""
    from scipy.optimize import minimize

    def loss(ab: np.ndarray) -> float:
        eta = ab[0] * prior_logit + ab[1] * evidence
        return float(np.sum(np.logaddexp(0.0, eta) - y * eta))

    return minimize(loss, np.ones(2), method="Nelder-Mead").x


def summarise(out: list[dict]) -> None:
    print("accuracy per seed: " + " ".join(f"{o['accuracy']:.3f}" for o in out))
    print(f"mean accuracy {np.mean([o['accuracy'] for o in out]):.4f}; CPU s per fit (mean over"
          f" the fits made now, not the cached) {np.nanmean([o['cpu'] for o in out]):.2f}")
    rows = [dict(r, seed=o["seed"]) for o in out for r in o["intervals"]]
    print("measure\trun\tcoverage\tbelow\tabove\tmean(t-e)\tsd(t-e)\tdraws' sd\tmean z\tsd z")
    for m in ("P@10", "AP", "nDCG@10"):
        for run in ["all", *sorted({r["run"] for r in rows})]:
            sel = [r for r in rows if r["measure"] == m and run in ("all", r["run"])]
            err = np.array([r["truth"] - r["estimate"] for r in sel])
            sd = np.array([max(r["sd"], 1e-9) for r in sel])
            print(f"{m}\t{run}\t{np.mean([r['low'] <= r['truth'] <= r['high'] for r in sel]):.3f}"
                  f"\t{sum(r['truth'] < r['low'] for r in sel)}"
                  f"\t{sum(r['truth'] > r['high'] for r in sel)}\t{err.mean():+.4f}"
                  f"\t{err.std():.4f}\t{sd.mean():.4f}\t{(err / sd).mean():+.2f}"
                  f"\t{(err / sd).std():.2f}")
    print(f"all\tall\t{np.mean([r['low'] <= r['truth'] <= r['high'] for r in rows]):.3f}")
    pos = np.concatenate([o["positions"] for o in out])  # (topics, 30, 3)
    print("run0 ranks\ttrue share relevant\tmean P(relevant)\tdraws' share")
    for lo, hi in POSITIONS:
        cell = pos[:, lo:hi].reshape(-1, 3).mean(axis=0)
        print(f"{lo + 1}-{hi}\t{cell[0]:.4f}\t{cell[1]:.4f}\t{cell[2]:.4f}")
    r_true = np.array([t[0] for o in out for t in o["topics"]])
    r_draws = [t[1] for o in out for t in o["topics"]]
    err = r_true - np.array([d.mean() for d in r_draws])
    sd = np.array([d.std() for d in r_draws])
    pit = np.array([np.mean(d < r) + 0.5 * np.mean(d == r) for r, d in zip(r_true, r_draws,
                                                                            strict=True)])
    print(f"topic R: true mean {r_true.mean():.2f} sd {r_true.std():.2f}; error sd {err.std():.2f}"
          f" against the draws' sd {sd.mean():.2f}; z sd {(err / np.maximum(sd, 1e-9)).std():.2f};"
          f" true R below the draws' 2.5 % {np.mean(pit < 0.025):.3f}, above their 97.5 %"
          f" {np.mean(pit > 0.975):.3f}; slope of the error on true R"
          f" {np.polyfit(r_true - r_true.mean(), err, 1)[0]:.3f}")
    ev = np.concatenate([o["evidence"] for o in out])
    fit_ev, true_ev, prior_logit, y = ev.T
    corr = np.corrcoef(fit_ev, true_ev)[0, 1]
    print(f"the fit's evidence against the generator's: corr {corr:.3f},"
          f" slope {np.polyfit(true_ev, fit_ev, 1)[0]:.3f}; the truth's logistic regression on"
          f" (prior logit, evidence): scales {np.round(logistic_scales(prior_logit, fit_ev, y), 3)}"
          " (1, 1 if both are calibrated)")
    for name in ("none", *SPANS):
        print(f"run0 AP bias (truth − draws' mean), {name} set to the truth: "
              f"{np.mean([o['bias'][name] for o in out]):+.4f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=600)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--params", help="MAGP's parameters (JSON)")
    parser.add_argument("--evidence", choices=("fit", "true"), default="fit")
    parser.add_argument("--cache", help="a folder for the fits (reused when present)")
    parser.add_argument("--tag", default="", help="the cached fits' name prefix")
    args = parser.parse_args(argv)
    ns = argparse.Namespace(data="algorithm10", noise=[4.0, 8.0], redundancy=5, annotators=60,
                            run_noise=list(bc.NOISE))
    out = [one_seed(seed, args, ns) for seed in range(args.first_seed,
                                                      args.first_seed + args.seeds)]
    summarise(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
