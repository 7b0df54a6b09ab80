"""Coverage of a probit class prior on the GP's features, and its in-sample bound (issue 34;
docs/gp.md, "The class prior as a probit regression on the features").

One collection of ``bench_coverage.py`` (Algorithm 10, 600 tasks, 6 runs): fit MAGP with the
Gaussian read-out, take its judgments layer (``models.gp.truth``), give it a class prior
Φ(x̃·w) on the same features and report how often the nominal-95 % intervals of the runs' P@10,
AP and nDCG@10 hold the true score, with independent label draws (``labels``) and with draws of
the weights from their Laplace posterior (``joint``). MODE:

- a number s: w ~ N(0, s²), fitted by the layer's marginal likelihood (the service's default is
  s = 1, ``label_layer="discrete-regression"``);
- ``ev``: one common s by the Laplace evidence over a grid; ``ard``: one s per weight (MacKay);
- ``truth``: w fitted to the true labels (in sample, no weight uncertainty): the bound of a
  probit prior on these features.

    python bench/coverage_probit_bound.py SEED [normal|log_rr|both] MODE

Prints the calibration of P(relevant) by bins and the coverage; writes
/tmp/runfeat_out/probit_<transform>_<mode>_<stack>_<seed>.json when that folder exists.
"""
import argparse
import json
import os
import sys

import numpy as np
from scipy.optimize import minimize
from scipy.special import log_ndtr, ndtr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_coverage as bc  # noqa: E402

from models.evaluation.measures import parse_measures  # noqa: E402
from models.evaluation.scoring import evaluate_runs, report  # noqa: E402
from models.evaluation.uncertainty import Posterior  # noqa: E402
from models.features import build_features  # noqa: E402
from models.gp import truth as layer_lib  # noqa: E402
from models.registry import make_aggregator  # noqa: E402

RUN_NOISE = [0.3, 0.6, 0.9, 1.2, 1.6, 2.5]


def fit_prior(X: np.ndarray, log_z: np.ndarray, prior_sd: float | np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ŵ with the intercept last, the Hessian of −log posterior, the design [X, 1])."""
    design = np.column_stack([X, np.ones(len(X))])
    sd = np.broadcast_to(np.asarray(prior_sd, dtype=float), (X.shape[1],))

    def objective(wb: np.ndarray) -> tuple[float, np.ndarray]:
        eta = design @ wb
        total = np.logaddexp(log_ndtr(eta) + log_z[0], log_ndtr(-eta) + log_z[1])
        phi = np.exp(-0.5 * eta**2 - 0.5 * np.log(2 * np.pi))
        g_eta = phi * (np.exp(log_z[0] - total) - np.exp(log_z[1] - total))
        pen = 0.5 * np.sum(wb[:-1] ** 2 / sd**2)
        return -float(total.sum()) + pen, -(design.T @ g_eta) + np.r_[wb[:-1] / sd**2, 0.0]

    wb = minimize(objective, np.zeros(design.shape[1]), jac=True, method="L-BFGS-B").x
    k, h = len(wb), 1e-5
    hess = np.zeros((k, k))
    for j in range(k):
        e = np.zeros(k)
        e[j] = h
        hess[:, j] = (objective(wb + e)[1] - objective(wb - e)[1]) / (2 * h)
    return wb, 0.5 * (hess + hess.T), design


def evidence(X: np.ndarray, log_z: np.ndarray, sd: float
             ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """The Laplace evidence of a common prior scale sd, with the fit."""
    wb, hess, design = fit_prior(X, log_z, sd)
    eta = design @ wb
    ll = np.logaddexp(log_ndtr(eta) + log_z[0], log_ndtr(-eta) + log_z[1]).sum()
    k = len(wb) - 1
    value = (ll - 0.5 * np.sum(wb[:-1] ** 2) / sd**2 - k * np.log(sd)
             - 0.5 * np.linalg.slogdet(hess)[1])
    return value, wb, hess, design


def ard(X: np.ndarray, log_z: np.ndarray, sds: np.ndarray
        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """MacKay's fixed point for one prior scale per weight."""
    for _ in range(30):
        wb, hess, _ = fit_prior(X, log_z, sds)
        gamma = 1 - np.diag(np.linalg.inv(hess))[:-1] / sds**2
        new = np.clip(np.sqrt(wb[:-1] ** 2 / np.maximum(gamma, 1e-6)), 1e-3, 100)
        converged = np.max(np.abs(np.log(new) - np.log(sds))) < 1e-3
        sds = new
        if converged:
            break
    wb, hess, design = fit_prior(X, log_z, sds)
    return wb, hess, design, sds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seed", type=int)
    parser.add_argument("transform", choices=("normal", "log_rr", "both"))
    parser.add_argument("mode", help="a prior sd, 'ev', 'ard' or 'truth'")
    parser.add_argument("stack", nargs="?", default="",
                        help="'gp': the GP cavity's z as one more feature")
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args()
    seed, mode, samples = args.seed, args.mode, args.samples
    ns = argparse.Namespace(data="algorithm10", annotators=60, noise=[4, 8], redundancy=5,
                            run_noise=RUN_NOISE)
    data, truth, runs, _, _ = bc.collection(600, seed, ns)
    tasks = list(zip(data.topic_ids.tolist(), data.doc_ids.tolist(), strict=True))
    features = build_features(tasks, runs=runs, rank_transform=args.transform)
    data = data.with_features(features.as_dict(), dim=features.dim)
    model = make_aggregator("magp", {"random_state": seed, "label_layer": "gaussian"}).fit(data)
    p0 = model.proba_[:, 1]
    judgments, cavity_prior = layer_lib.layer_inputs(model.core_)
    layer = layer_lib.fit_layer(judgments, cavity_prior)
    c, s = layer.separation, np.sqrt(layer.deviation)
    X = features.matrix
    if args.stack == "gp":
        from scipy.special import ndtri

        X = np.column_stack([ndtri(np.clip(cavity_prior, 1e-300, 1 - 1e-16)), X])
    sds = np.ones(X.shape[1])
    used: object = mode
    for _ in range(4):
        log_z = layer_lib.log_evidence(judgments, c, s)
        if mode == "truth":  # the bound: a probit of the truth on the features (in sample)
            truth_z = np.where(np.stack([truth == 1, truth == 0]), 0.0, -50.0)
            wb, hess, design = fit_prior(X, truth_z, 100.0)
            hess = hess * 1e6  # no weight uncertainty
        elif mode == "ard":
            wb, hess, design, sds = ard(X, log_z, sds)
            used = np.round(sds, 2)
        elif mode == "ev":
            grid = np.exp(np.linspace(np.log(0.1), np.log(20), 25))
            fits = [evidence(X, log_z, g) for g in grid]
            best = int(np.argmax([f[0] for f in fits]))
            used = grid[best]
            _, wb, hess, design = fits[best]
        else:
            used = float(mode)
            wb, hess, design = fit_prior(X, log_z, float(mode))
        sigma = np.linalg.inv(hess)
        q2 = np.einsum("ij,jk,ik->i", design, sigma, design)
        layer = layer_lib.fit_layer(judgments, ndtr(design @ wb / np.sqrt(1 + q2)))
        c, s = layer.separation, np.sqrt(layer.deviation)
    p = layer.p_relevant
    print(f"seed {seed}: prior sd {used}; c {c:.3f} s {s:.3f} w {np.round(wb, 2)} accuracy "
          f"gaussian {np.mean((p0 >= .5) == truth):.3f} "
          f"probit prior {np.mean((p >= .5) == truth):.3f}")
    bins = [0, .01, .05, .2, .5, .8, .95, .99, 1.0001]
    for lo, hi in zip(bins[:-1], bins[1:], strict=True):
        m = (p >= lo) & (p < hi)
        if m.any():
            print(f"  P in [{lo},{hi}): n={m.sum()} mean P {p[m].mean():.3f} "
                  f"share relevant {truth[m].mean():.3f}")
    measures = parse_measures(["P@10", "AP", "nDCG@10"])
    true = evaluate_runs(Posterior.binary(data.topic_ids, data.doc_ids, truth.astype(float)),
                         runs, measures, samples=0)
    post = Posterior(topics=data.topic_ids, docs=data.doc_ids, proba=np.column_stack([1 - p, p]),
                     classes=np.array([0, 1]), relevant_index=1)
    scores = evaluate_runs(post, runs, measures, samples=samples, seed=seed)
    rows = {}
    for row in report(scores)["results"]:
        if row["topic"] == "all":
            t = float(true.mean_value(row["measure"])[scores.runs.index(row["run"])])
            rows[(row["run"], row["measure"])] = (t, row["low"] <= t <= row["high"])
    # joint: the weights from their Laplace posterior, the labels from the layer given the prior
    rng = np.random.default_rng([seed, 11])
    chol = np.linalg.cholesky(np.linalg.inv(hess))
    log_z = layer_lib.log_evidence(judgments, c, s)
    values: dict[tuple[str, str], list[float]] = {k: [] for k in rows}
    for _ in range(samples):
        eta = design @ (wb + chol @ rng.standard_normal(len(wb)))
        a, b = log_ndtr(eta) + log_z[0], log_ndtr(-eta) + log_z[1]
        labels = (rng.random(len(a)) < np.exp(a - np.logaddexp(a, b))).astype(float)
        drawn = evaluate_runs(Posterior.binary(data.topic_ids, data.doc_ids, labels), runs,
                              measures, samples=0)
        for run, measure in rows:
            values[(run, measure)].append(float(drawn.mean_value(measure)[drawn.runs.index(run)]))
    out = []
    for (run, measure), (t, holds) in rows.items():
        lo, hi = np.quantile(values[(run, measure)], [.025, .975])
        out.append({"seed": seed, "run": run, "measure": measure, "truth": t, "labels": holds,
                    "joint": bool(lo <= t <= hi), "lo": lo, "hi": hi,
                    "accuracy": float(np.mean((p >= .5) == truth))})
    print(f"  labels {np.mean([o['labels'] for o in out]):.3f} "
          f"joint {np.mean([o['joint'] for o in out]):.3f}")
    for o in out:
        if o["measure"] == "AP":
            print(f"   {o['run']} AP {o['truth']:.3f} [{o['lo']:.3f}, {o['hi']:.3f}] {o['joint']}")
    if os.path.isdir("/tmp/runfeat_out"):
        name = f"/tmp/runfeat_out/probit_{args.transform}_{mode}_{args.stack}_{seed}.json"
        with open(name, "w") as fh:
            json.dump(out, fh)


if __name__ == "__main__":
    main()
