"""How well can MAGP's regression class prior be calibrated on the synthetic grid at all? (issue
34; docs/gp.md, "Why the grid misses .03 in some cells")

MAGP's default P(relevant) (``label_layer="discrete-regression"``) is Bayes' rule over the class
y = ±1 with a probit class prior Φ(x̃·w) on the standardised features, w ~ N(0, 1), fitted by the
layer's marginal likelihood Σ_i log Σ_y Φ(y x̃_i·w) Z_i(y), and each task's evidence Z_i(y) taken
from the GP fit. This script leaves the GP out and gives the same prior fit
(``models.gp.truth``'s objective, its Laplace covariance, its moderated prior, its MCMC draws)
evidence computed from the generator's own parameters, so what is left of the ECE is the prior's:

- ``exact``: Z_i(y) = Π_a P(label | y) with Algorithm 10's task noise under class y,
  σ_i²(y) = |x_i − μ_y|² (the generator's: a task's noise depends on its class);
- ``shared``: the same with σ_i² = 2 (its mean) under both classes: the most the thesis' model,
  one σ_i² per task whatever its class, can know;
- ``oracle``: the generator's own class prior σ(x₁ − x₂) with the exact evidence, the Bayes
  posterior: the ECE of perfectly calibrated P on these 2,000 tasks (the sampling floor).

For each evidence: the weights (the MAP, per standardised feature), and the ECE of P read with
the MAP prior Φ(x̃·ŵ), with the moderated prior Φ(x̃·ŵ / √(1 + x̃ᵀΣx̃)) (MAGP's read-out) and as
the mean over the weights' MCMC draws (the exact posterior marginal).

    python bench/grid_layer_bound.py [--seeds 0-9] [--noise 0-2,4-8] [--redundancy 3,5]
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.optimize import minimize
from scipy.special import log_ndtr

from models.evaluation.reliability import reliability
from models.gp import truth
from models.synthetic import NOISE_LEVELS, generate


def log_evidence(syn, noise_pos: np.ndarray, noise_neg: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    """(2, n) log Z_i(y), y = +1, −1, from the generator's parameters: label 1 when
    y + ε > 0, ε ~ N(0, σ_i²(y) + σ_j²)."""
    t, a = syn.task, syn.annotator
    sign = np.where(syn.label == 1, 1.0, -1.0)
    out = np.empty((2, syn.truth.shape[0]))
    for row, (y, noise) in enumerate(((1.0, noise_pos), (-1.0, noise_neg))):
        u = sign * y / np.sqrt(noise[t] + syn.annotator_noise[a])
        out[row] = np.bincount(t, log_ndtr(u), minlength=syn.truth.shape[0])
    return out


def bayes(log_prior_pos: np.ndarray, log_prior_neg: np.ndarray, log_z: np.ndarray) -> np.ndarray:
    """P(y = +1 | judgments) with the class prior's two logs and the evidence."""
    a, b = log_prior_pos + log_z[0], log_prior_neg + log_z[1]
    return np.exp(a - np.logaddexp(a, b))


def readouts(design: np.ndarray, log_z: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """The MAP weights and P by the MAP prior, the moderated prior and the MCMC draws' mean."""
    wb = minimize(truth._regression_objective, np.zeros(design.shape[1]),
                  args=(design, log_z, truth.PRIOR_SD), jac=True, method="L-BFGS-B",
                  options={"maxiter": 500}).x
    laplace = np.linalg.inv(truth._regression_hessian(wb, design, log_z, truth.PRIOR_SD))
    eta = design @ wb
    q2 = np.einsum("nd,de,ne->n", design, laplace, design)
    moderated = eta / np.sqrt(1.0 + q2)
    draws, _ = truth.weight_draws(design, log_z, wb, laplace)
    p_draws = np.mean([bayes(log_ndtr(design @ w), log_ndtr(-(design @ w)), log_z)
                       for w in draws], axis=0)
    return wb, [bayes(log_ndtr(eta), log_ndtr(-eta), log_z),
                bayes(log_ndtr(moderated), log_ndtr(-moderated), log_z), p_draws]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-9", help="first-last")
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--noise", default="0-2,4-8")
    parser.add_argument("--redundancy", default="3,5")
    args = parser.parse_args(argv)
    first, last = (int(s) for s in args.seeds.split("-"))
    print("| noise | β | seed | w exact | ECE exact: MAP / moderated / draws | w shared | "
          "ECE shared: MAP / moderated / draws | ECE oracle |")
    print("|---|---|---|---|---|---|---|---:|")
    summary: dict[tuple[str, int], list[list[float]]] = {}
    for noise in args.noise.split(","):
        for beta in (int(b) for b in args.redundancy.split(",")):
            for seed in range(first, last + 1):
                syn = generate(args.tasks, 60, noise_level=NOISE_LEVELS[noise],
                               redundancy=beta, random_state=seed)
                x, y = syn.features, syn.truth == 1
                design = np.column_stack([(x - x.mean(0)) / x.std(0), np.ones(x.shape[0])])
                exact = log_evidence(syn, np.sum((x - [1.0, 0.0]) ** 2, axis=1),
                                     np.sum((x - [0.0, 1.0]) ** 2, axis=1))
                shared = log_evidence(syn, *(np.full(x.shape[0], 2.0),) * 2)
                cells, eces = [], []
                for log_z in (exact, shared):
                    wb, ps = readouts(design, log_z)
                    e = [reliability(p, y).ece for p in ps]
                    eces += e
                    cells += [f"{wb[0]:.2f}, {wb[1]:.2f}", " / ".join(f"{v:.3f}" for v in e)]
                log_odds = x[:, 0] - x[:, 1]  # the generator's P(y = +1 | x) = σ(x₁ − x₂)
                oracle = reliability(bayes(-np.logaddexp(0.0, -log_odds),
                                           -np.logaddexp(0.0, log_odds), exact), y).ece
                eces.append(oracle)
                summary.setdefault((noise, beta), []).append(eces)
                print(f"| {noise} | {beta} | {seed} | " + " | ".join(cells)
                      + f" | {oracle:.3f} |", flush=True)
    print("\nMean ECE over the seeds (how many > .03): exact MAP / moderated / draws; "
          "shared MAP / moderated / draws; oracle")
    for (noise, beta), rows in summary.items():
        r = np.array(rows)
        print(f"| {noise} | {beta} | " + " | ".join(
            f"{m:.3f} ({k})" for m, k in zip(r.mean(0), (r > 0.03).sum(0), strict=True)) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
