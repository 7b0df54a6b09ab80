"""The discrete truth layer: P(relevant) as the posterior of a two-valued true label
(``label_layer="discrete"`` of MAGP and LK; docs/gp.md, "The discrete truth layer").

The thesis defines a task's true label as a class y_i = ±1 (Algorithm 10 draws the latent at
exactly ±1 and each judgment as [y_i + ε > 0]); the fitted GP's latent f_i is Gaussian, centred
between the two classes, and reading P(relevant) as P(f_i > 0) under a Gaussian q(f_i) puts mass
near f = 0, where the sign is unsure, which softens the ends. Here the label is a discrete
variable of its own, read out after EM:

    y_i ∈ {−1, +1},   P(y_i = +1 | x_i, the other tasks) = π_i = Φ(m_c,i / √v_c,i)
    f_i | y_i ~ N(c y_i, s²)
    P(y_a = 1 | f_i) = Φ((f_i + μ_i + μ_j) / √(1 + σ_i² + σ_j²))   (the fit's likelihood)

N(m_c,i, v_c,i) is the fit's cavity of f_i (q(f_i) divided by its site: what the GP, the
features and the other tasks say before task i's own judgments), so π_i is the fitted model's
own P(f > 0) before the task's judgments: the class prior given x_i. c (how far the classes sit
from the boundary, in the likelihood's units) and s (a task's own deviation from its class)
maximise the layer's marginal likelihood, every other parameter at the fit:

    Σ_i log Σ_y π_i(y) Z_i(y),     Z_i(y) = ∫ N(f; c y, s²) Π_{a ∈ i} P(y_a | f) df

(Gauss–Hermite over f): each task's judgments predicted from the others' evidence. Then

    P(relevant)_i = P(y_i = +1 | everything) = π_i Z_i(+1) / Σ_y π_i(y) Z_i(y),

and a task nobody judged keeps π_i = Φ(m_i / √v_i), the read-out P(f > 0) (so ``predict_proba``
for new tasks is unchanged); with the regression prior (``"discrete-regression"``) it keeps
that prior, ``regression_prior``. Numpy, with the passes over judgments and tasks compiled
(``models.gp.truth_kernels``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.linalg
from scipy.optimize import minimize, minimize_scalar
from scipy.special import k0e, logsumexp, ndtr

from models.gp.constants import M_STEP_MAX_TASKS
from models.gp.truth_kernels import mixture_log_likelihood, mixture_terms, node_sums

# Gauss–Hermite nodes of the integral over f around each class.
NODES = 16
# Bounds of c and s, and L-BFGS-B's iterations (two parameters: it stops after 10–20).
C_BOUNDS = (0.05, 20.0)
S_BOUNDS = (0.0, 10.0)
MAX_ITER = 100
# A fit that stops at s below this is checked against s = S_PROBE (``fit_layer``).
S_PROBE = 0.05
# Tasks that fit (c, s) (``fit_layer``): the GP's M-step subset size.
LAYER_MAX_TASKS = M_STEP_MAX_TASKS


@dataclass(frozen=True)
class TruthLayer:
    """The fitted layer."""

    p_relevant: np.ndarray  # (n,) P(y_i = +1 | everything)
    prior: np.ndarray  # (n,) π_i
    separation: float  # c
    deviation: float  # s²
    log_likelihood: float  # Σ_i log Σ_y π_i(y) Z_i(y) at (c, s)
    log_z: np.ndarray | None = None  # (2, n) log Z_i(y) at (c, s), y = +1, −1
    prior_sd: Any = None  # the regression prior's weight sd τ (float or per weight; None: none)


@dataclass(frozen=True)
class LayerJudgments:
    """The judgments in long format, with what the fit fixed for each."""

    task: np.ndarray  # (A,) task index
    sign: np.ndarray  # (A,) ±1 (relevant / not)
    shift: np.ndarray  # (A,) μ_i + μ_j
    scale: np.ndarray  # (A,) √(1 + σ_i² + σ_j²)
    n_tasks: int


def cavity(m_f: np.ndarray, v_f: np.ndarray, nat1: np.ndarray, nat2: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray]:
    """(mean, variance) of q(f_i) / t_i(f_i): the fit's belief about f_i before task i's own
    judgments (a task without judgments has a zero site: q itself)."""
    precision = np.maximum(1.0 / v_f - nat2, 1e-12)
    return (m_f / v_f - nat1) / precision, 1.0 / precision


def _label_joint(prior: np.ndarray, log_z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(2, n) log π_i(y) Z_i(y) for y = +1, −1, and (n,) their log sum over y."""
    joint = np.log(np.clip(np.stack([prior, 1.0 - prior]), 1e-300, 1.0)) + log_z
    return joint, np.logaddexp(joint[0], joint[1])


def _objective(theta: np.ndarray, d: LayerJudgments, prior: np.ndarray, nodes: int
               ) -> tuple[float, np.ndarray, np.ndarray]:
    """(−Σ_i log Σ_y π_i(y) Z_i(y), its gradient in (c, s), P(y_i = +1) per task)."""
    c, s = float(theta[0]), float(theta[1])
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    log_w = np.log(w / np.sqrt(2.0 * np.pi))
    ys = (1.0, -1.0)
    # per task at each (class, node): ell = Σ_a log Φ(u_a), slope = Σ_a ∂ log Φ(u_a) /
    # ∂(y c + s x_k), the gradient's judgment sums from the same log Φ(u) (one compiled pass)
    ell, slope = node_sums(d.task, d.sign / d.scale, d.shift, c, s, x, d.n_tasks, True)
    log_z = logsumexp(ell + log_w[None, :, None], axis=1)  # (2, n)
    joint, total = _label_joint(prior, log_z)
    resp = np.exp(joint - total[None, :])  # P(y | everything)
    node_w = np.exp(ell + log_w[None, :, None] - log_z[:, None, :])  # within a class
    per_node = np.sum(resp[:, None, :] * node_w * slope, axis=2)  # (2, nodes)
    grad = np.array([float(np.sum(np.asarray(ys)[:, None] * per_node)),
                     float(np.sum(x[None, :] * per_node))])
    return -float(np.sum(total)), -grad, resp[0]


def subset(judgments: LayerJudgments, prior: np.ndarray, max_tasks: int
           ) -> tuple[LayerJudgments, np.ndarray]:
    """The judgments and priors of at most ``max_tasks`` tasks drawn at random (seeded: the same
    subset every fit of the same data), renumbered; all of them when there are no more."""
    if judgments.n_tasks <= max_tasks:
        return judgments, prior
    keep = np.sort(np.random.default_rng(0).choice(judgments.n_tasks, max_tasks, replace=False))
    index = np.full(judgments.n_tasks, -1, dtype=np.int64)
    index[keep] = np.arange(max_tasks)
    rows = index[judgments.task] >= 0
    return LayerJudgments(task=index[judgments.task[rows]], sign=judgments.sign[rows],
                          shift=judgments.shift[rows], scale=judgments.scale[rows],
                          n_tasks=max_tasks), prior[keep]


def fit_layer(judgments: LayerJudgments, prior: np.ndarray, nodes: int = NODES,
              start: tuple[float, float] = (1.0, 0.5), max_tasks: int = LAYER_MAX_TASKS
              ) -> TruthLayer:
    """(c, s) by L-BFGS-B from ``start`` (c, s), and each task's P(y = +1).

    Two numbers shared by every task: past ``max_tasks`` tasks they are fitted on a random
    subset of that many (about 1/√5,000 = 1.4 % of sampling error, as the GP's own M step,
    ``M_STEP_MAX_TASKS``), then every task's P(y = +1) and the log likelihood are those of all
    the tasks at that (c, s). A 1,000,000-judgment fit costs a pass over the judgments per
    evaluation otherwise (about 2.5 s of CPU each, 15-20 evaluations a fit). A fit that stops
    at s < ``S_PROBE`` goes on from s = ``S_PROBE`` when the likelihood is higher there (s = 0
    is a stationary point of the objective, which is even in s)."""
    fitted, fitted_prior = subset(judgments, prior, max_tasks)

    def fit(x0: np.ndarray) -> Any:
        return minimize(lambda t: _objective(t, fitted, fitted_prior, nodes)[:2],
                        np.clip(x0, [C_BOUNDS[0], S_BOUNDS[0]], [C_BOUNDS[1], S_BOUNDS[1]]),
                        jac=True, method="L-BFGS-B", bounds=[C_BOUNDS, S_BOUNDS],
                        options={"maxiter": MAX_ITER})

    result = fit(np.asarray(start, dtype=np.float64))
    if result.x[1] < S_PROBE:
        # The objective is even in s (the nodes come in ± pairs), so s = 0 is always a
        # stationary point and L-BFGS-B can stop there when a step lands on the bound, whether
        # or not it is a maximum: go on from s = S_PROBE when the likelihood is higher there.
        probe = np.array([result.x[0], S_PROBE])
        if _objective(probe, fitted, fitted_prior, nodes)[0] < result.fun:
            result = min(result, fit(probe), key=lambda r: float(r.fun))
    c, s = float(result.x[0]), float(result.x[1])
    log_z = log_evidence(judgments, c, s, nodes)
    joint, total = _label_joint(prior, log_z)
    return TruthLayer(p_relevant=np.exp(joint[0] - total), prior=prior, separation=c,
                      deviation=s**2, log_likelihood=float(np.sum(total)), log_z=log_z)


def readout(core: Any, nodes: int = NODES) -> TruthLayer:
    """The truth layer of a fitted ``CrowdGPCore`` with the Gaussian–Bernoulli likelihood (after
    the task difficulties are estimated)."""
    judgments, prior = layer_inputs(core)
    return fit_layer(judgments, prior, nodes)


def layer_inputs(core: Any) -> tuple[LayerJudgments, np.ndarray]:
    """The judgments with what the fit fixed for each, and the cavity's class prior Φ(m_c/√v_c)."""
    lik = core.likelihood
    m_f, v_f = (t.numpy() for t in core.q())
    m_c, v_c = cavity(m_f, v_f, core.nat1.numpy(), core.nat2.numpy())
    task = core.task.numpy()
    annotator = core.annotator.numpy()
    judgments = LayerJudgments(
        task=task, sign=core.sign.numpy(),
        shift=lik.task_bias.numpy()[task] + lik.annotator_bias.numpy()[annotator],
        scale=np.sqrt(1.0 + lik.task_variance.numpy()[task]
                      + lik.annotator_variance.numpy()[annotator]),
        n_tasks=core.n_tasks,
    )
    return judgments, ndtr(m_c / np.sqrt(v_c))


# -- the class prior as a probit regression on the features (label_layer="discrete-regression")
# Rounds of (weights | c, s) then (c, s | weights); the weights' N(0, PRIOR_SD²) prior on
# standardised features, the intercept flat.
REGRESSION_ROUNDS = 4
PRIOR_SD = 1.0
# The weights' posterior moments by importance sampling (``weight_moments``): proposals per
# stage, the Student-t proposal's degrees of freedom and its scale over the Laplace covariance,
# and the tasks whose likelihood the weights are scored on (a random subset past that many, its
# log likelihood scaled by n / subset: about 1/√5,000 = 1.4 % of sampling error, as the M step).
MOMENT_PROPOSALS = 4000
MOMENT_DF = 4.0
MOMENT_SCALE = 1.5
MOMENT_MAX_TASKS = M_STEP_MAX_TASKS
# The weights' prior sd τ by type-II maximum likelihood (``prior_sd=None``, ``weight_prior:
# "evidence"``; docs/gp.md, "The weights' prior scale by the evidence"): the Laplace
# approximation of the layer's marginal likelihood maximised over log τ within these bounds
# (a numerical guard: a quasi-separable collection's evidence can keep rising with τ).
PRIOR_SD_BOUNDS = (0.05, 20.0)


def log_evidence(judgments: LayerJudgments, separation: float, deviation_sd: float,
                 nodes: int = NODES) -> np.ndarray:
    """(2, n) log Z_i(y) for y = +1, −1: each task's judgments given its class."""
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    log_w = np.log(w / np.sqrt(2.0 * np.pi))
    ell, _ = node_sums(judgments.task, judgments.sign / judgments.scale, judgments.shift,
                       separation, deviation_sd, x, judgments.n_tasks)
    return logsumexp(ell + log_w[None, :, None], axis=1)


def _regression_objective(wb: np.ndarray, design: np.ndarray, log_z: np.ndarray,
                          prior_sd: float) -> tuple[float, np.ndarray]:
    """−Σ_i log Σ_y Φ(y η_i) Z_i(y) + Σ_j w_j² / 2 prior_sd_j² and its gradient (intercept
    flat; ``prior_sd`` a float or one per weight)."""
    total, g_eta = mixture_terms(design @ wb, log_z[0], log_z[1])
    w = wb[:-1]
    precision = 1.0 / np.square(prior_sd)  # a float, or one per weight
    value = -float(np.sum(total)) + 0.5 * float(np.sum(w * w * precision))
    return value, -(design.T @ g_eta) + np.r_[w * precision, 0.0]


def _regression_hessian(wb: np.ndarray, design: np.ndarray, log_z: np.ndarray,
                        prior_sd: float) -> np.ndarray:
    """The objective's Hessian in (w, b), by central differences of the analytic gradient
    (d + 1 gradients: a handful of columns)."""
    k = wb.shape[0]
    h = 1e-5
    H = np.empty((k, k))
    for j in range(k):
        e = np.zeros(k)
        e[j] = h
        H[:, j] = (_regression_objective(wb + e, design, log_z, prior_sd)[1]
                   - _regression_objective(wb - e, design, log_z, prior_sd)[1]) / (2.0 * h)
    H = 0.5 * (H + H.T)
    # positive definite for the Laplace covariance (the prior makes it so but for the intercept)
    eigval, eigvec = np.linalg.eigh(H)
    return (eigvec * np.maximum(eigval, 1e-8)) @ eigvec.T


def _laplace_evidence(log_sd: np.ndarray, wb: np.ndarray, design: np.ndarray,
                      log_z: np.ndarray) -> tuple[float, np.ndarray]:
    """(−log p(judgments | τ) + const by the Laplace approximation, the mode) at τ = exp(log_sd)
    (one sd shared by the weights, or one per weight): the layer's marginal likelihood
    ∫ Π_j N(w_j; 0, τ_j²) Π_i Σ_y Φ(y x̃_i·w) Z_i(y) dw db (the intercept b flat)
    ≈ −J(ŵ) − Σ_j log τ_j − ½ log |H|, J the penalised objective (``_regression_objective``),
    H its Hessian at its mode ŵ."""
    d = design.shape[1] - 1
    log_tau = np.broadcast_to(np.asarray(log_sd, dtype=np.float64), (d,))
    tau = np.exp(log_tau)
    result = minimize(_regression_objective, wb, args=(design, log_z, tau), jac=True,
                      method="L-BFGS-B", options={"maxiter": 500})
    hessian = _regression_hessian(result.x, design, log_z, tau)
    log_det = float(np.linalg.slogdet(hessian)[1])
    return float(result.fun) + float(np.sum(log_tau)) + 0.5 * log_det, result.x


def evidence_prior_sd(design: np.ndarray, log_z: np.ndarray, wb: np.ndarray,
                      bounds: tuple[float, float] = PRIOR_SD_BOUNDS, per_weight: bool = False
                      ) -> float | np.ndarray:
    """The weights' prior sd τ that maximises the layer's Laplace-approximated marginal
    likelihood (type-II maximum likelihood, as the GP's own hyperparameters; docs/gp.md, "The
    weights' prior scale by the evidence"), searched over log τ from the mode ``wb``: one τ
    shared by the weights (a float), or with ``per_weight`` one per weight (automatic relevance
    determination, an array: L-BFGS-B on the log sds, numerical gradient)."""
    lo, hi = np.log(bounds[0]), np.log(bounds[1])
    if not per_weight:
        result = minimize_scalar(lambda t: _laplace_evidence(np.asarray(t), wb, design, log_z)[0],
                                 bounds=(lo, hi), method="bounded", options={"xatol": 1e-2})
        return float(np.exp(result.x))
    d = design.shape[1] - 1
    found = minimize(lambda t: _laplace_evidence(t, wb, design, log_z)[0], np.zeros(d),
                     method="L-BFGS-B", bounds=[(lo, hi)] * d,
                     options={"maxiter": 50, "eps": 1e-4})
    return np.exp(found.x)


def fit_regression_prior(judgments: LayerJudgments, features: np.ndarray,
                         start: TruthLayer, *, prior_sd: float | None = PRIOR_SD,
                         rounds: int = REGRESSION_ROUNDS, nodes: int = NODES,
                         moments: bool = False, per_weight: bool = False
                         ) -> tuple[TruthLayer, np.ndarray, np.ndarray, np.ndarray]:
    """The layer with its class prior a probit regression on the (standardised) features,
    fitted by the layer's marginal likelihood Σ_i log Σ_y Φ(y x̃_i·w) Z_i(y) with w ~ N(0, 1)
    (Raykar et al. 2010, "Learning from crowds", with the GP fit's likelihood), alternating with
    (c, s) from ``start`` (the cavity layer). The prior each task gets is the regression's
    predictive probability under a Gaussian posterior N(w̄, Σ) of w, Φ(x̃·w̄ / √(1 + q²)),
    q² = x̃ᵀ Σ x̃: with ``moments`` w̄ and Σ are the posterior's own mean and
    covariance (``weight_moments``), else (the default) the Laplace approximation (mode,
    inverse Hessian). ``prior_sd`` None: the weights' prior sd τ is estimated each round by the
    layer's marginal likelihood (``evidence_prior_sd``; ``per_weight``: one per weight), the
    layer records it (``prior_sd``).

    Returns (layer, w̄ (d + 1,), Σ (d + 1, d + 1), loadings X̃ chol(Σ) (n, d + 1))."""
    design = np.column_stack([np.asarray(features, dtype=np.float64),
                              np.ones(features.shape[0])])
    layer = start
    wb = np.zeros(design.shape[1])
    mean, sigma = wb, np.eye(design.shape[1])
    tau = PRIOR_SD
    for _ in range(rounds):
        log_z = layer.log_z if layer.log_z is not None else log_evidence(
            judgments, layer.separation, float(np.sqrt(layer.deviation)), nodes)
        if prior_sd is None:
            # from w = 0 each round: a steep start (a large τ of an earlier round) sits where
            # the probit saturates and the likelihood is flat, and L-BFGS stops there
            wb = np.zeros(design.shape[1])
            tau = evidence_prior_sd(design, log_z, wb, per_weight=per_weight)
        else:
            tau = prior_sd
        result = minimize(_regression_objective, wb, args=(design, log_z, tau), jac=True,
                          method="L-BFGS-B", options={"maxiter": 500})
        wb = result.x
        laplace = np.linalg.inv(_regression_hessian(wb, design, log_z, tau))
        mean, sigma = (weight_moments(design, log_z, wb, laplace, tau) if moments
                       else (wb, laplace))
        loadings = design @ np.linalg.cholesky(0.5 * (sigma + sigma.T))
        q2 = np.sum(loadings * loadings, axis=1)
        prior = ndtr(design @ mean / np.sqrt(1.0 + q2))
        # a cold start each round: s = 0 is a stationary point of the objective (the nodes
        # come in ± pairs), so a round started where the last ended at s = 0 stays there
        layer = fit_layer(judgments, prior, nodes)
    loadings = design @ np.linalg.cholesky(0.5 * (sigma + sigma.T))
    return replace(layer, prior_sd=tau), mean, sigma, loadings


def _log_posterior(weights: np.ndarray, design: np.ndarray, log_z: np.ndarray,
                   prior_sd: float, scale: float) -> np.ndarray:
    """(M,) log p(w | the judgments) + const of M weight vectors (rows): scale × Σ_i log Σ_y
    Φ(y x̃_i·w) Z_i(y) − |w|² / 2 prior_sd² (intercept flat)."""
    out = np.empty(weights.shape[0])
    for lo in range(0, weights.shape[0], 256):  # (256, n) temporaries
        out[lo:lo + 256] = scale * mixture_log_likelihood(weights[lo:lo + 256] @ design.T,
                                                          log_z[0], log_z[1])
    return out - 0.5 * np.sum(weights[:, :-1] ** 2 / np.square(prior_sd), axis=1)


def _likelihood_subset(design: np.ndarray, log_z: np.ndarray, max_tasks: int,
                       rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, float]:
    """Past ``max_tasks`` tasks, a seeded random subset of the weights' likelihood terms and the
    factor n / subset that scales it back (the M step's subset, as in ``fit_regression_prior``)."""
    n = design.shape[0]
    if n <= max_tasks:
        return design, log_z, 1.0
    keep = rng.choice(n, max_tasks, replace=False)
    return design[keep], log_z[:, keep], n / max_tasks


def weight_moments(design: np.ndarray, log_z: np.ndarray, mode: np.ndarray,
                   laplace: np.ndarray, prior_sd: float = PRIOR_SD,
                   proposals: int = MOMENT_PROPOSALS, max_tasks: int = MOMENT_MAX_TASKS,
                   stages: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """(mean, covariance) of the weights' posterior p(w | judgments) ∝ N(w; 0, prior_sd²)
    Π_i Σ_y Φ(y x̃_i·w) Z_i(y), by self-normalised importance sampling (docs/gp.md, "The
    weights' posterior"): a Student-t proposal around the mode with ``MOMENT_SCALE`` times the
    Laplace covariance, then (``stages`` 2) one around the first stage's moments. The Laplace
    approximation (mode, inverse Hessian) misses the skew of a near-separable likelihood: on the
    steep side it levels off (a task that contradicts a steep prior costs at most its own
    evidence ratio), on the flat side it falls, so the posterior leans towards steeper weights.
    Seeded: the same moments every fit of the same data."""
    rng = np.random.default_rng(0)
    design, log_z, scale = _likelihood_subset(design, log_z, max_tasks, rng)
    k = mode.shape[0]
    centre, cov = mode, laplace
    for _ in range(stages):
        chol = np.linalg.cholesky(0.5 * (cov + cov.T)) * MOMENT_SCALE
        g = rng.standard_normal((proposals, k))
        chi = rng.chisquare(MOMENT_DF, proposals) / MOMENT_DF
        w = centre + (g @ chol.T) / np.sqrt(chi)[:, None]
        u = np.sum(scipy.linalg.solve_triangular(chol, (w - centre).T, lower=True) ** 2, axis=0)
        log_q = -0.5 * (MOMENT_DF + k) * np.log1p(u / MOMENT_DF)
        log_w = _log_posterior(w, design, log_z, prior_sd, scale) - log_q
        p = np.exp(log_w - logsumexp(log_w))
        centre = p @ w
        cov = (w - centre).T @ ((w - centre) * p[:, None])
        cov = 0.5 * (cov + cov.T) + 1e-10 * np.eye(k)
    return centre, cov


# The weights' posterior by MCMC (``weight_draws``, ``weight_posterior: "draws"``): parallel
# random-walk Metropolis chains, the burn-in steps (adapting the step's scale towards the
# acceptance rate ACCEPT, then the proposal's covariance to the chains' own), and the draws kept
# (every THIN-th step of every chain). The Student-t prior's degrees of freedom (``prior_df``).
DRAW_CHAINS = 8
DRAW_BURN_IN = 800
DRAW_THIN = 10
WEIGHT_DRAWS = 400
ACCEPT = 0.25
PRIOR_DF = 7.0


def log_hierarchical_prior(weights: np.ndarray, scale: float = PRIOR_SD) -> np.ndarray:
    """Elementwise log p(w_j) + const of the hierarchical prior w_j | τ_j ~ N(0, τ_j²),
    τ_j ~ half-normal(scale), with τ_j integrated out in closed form (docs/gp.md, "A scale per
    weight, integrated over"):

        p(w) = ∫₀^∞ N(w; 0, τ²) HN(τ; scale) dτ = K₀(|w| / scale) / (π scale),

    K₀ the modified Bessel function of the second kind: w is a product of two independent
    N(0, 1) times ``scale``, so E w² = scale² (the fixed prior's variance) and every moment
    exists (tails ∝ exp(−|w| / scale) / √|w|). In log space (K₀ = k0e · e^{−x}) since K₀
    underflows past x ≈ 700; the log singularity at w = 0 is integrable (a guard of 1e-300)."""
    x = np.maximum(np.abs(weights) / scale, 1e-300)
    return np.log(k0e(x)) - x


def _log_prior(weights: np.ndarray, prior_sd: float, prior_df: float | None,
               hierarchical: bool = False) -> np.ndarray:
    """(M,) log p(w) + const of weight rows (intercept flat): N(0, prior_sd²) per weight, or with
    ``prior_df`` a Student-t of that many degrees of freedom and scale ``prior_sd``, or with
    ``hierarchical`` a per-weight scale under a half-normal(prior_sd) integrated out
    (``log_hierarchical_prior``)."""
    if hierarchical:
        return np.sum(log_hierarchical_prior(weights[:, :-1], prior_sd), axis=1)
    w = weights[:, :-1] / prior_sd
    if prior_df is None:
        return -0.5 * np.sum(w * w, axis=1)
    return -0.5 * (prior_df + 1.0) * np.sum(np.log1p(w * w / prior_df), axis=1)


def _log_target(weights: np.ndarray, design: np.ndarray, log_z: np.ndarray, prior_sd: float,
                prior_df: float | None, scale: float, hierarchical: bool = False) -> np.ndarray:
    """(M,) log p(w | the judgments) + const: the layer's likelihood × the prior."""
    like = mixture_log_likelihood(weights @ design.T, log_z[0], log_z[1])
    return scale * like + _log_prior(weights, prior_sd, prior_df, hierarchical)


def weight_draws(design: np.ndarray, log_z: np.ndarray, mode: np.ndarray, laplace: np.ndarray,
                 prior_sd: float = PRIOR_SD, prior_df: float | None = None,
                 draws: int = WEIGHT_DRAWS, chains: int = DRAW_CHAINS,
                 burn_in: int = DRAW_BURN_IN, thin: int = DRAW_THIN,
                 max_tasks: int = MOMENT_MAX_TASKS, hierarchical: bool = False
                 ) -> tuple[np.ndarray, float]:
    """(draws (draws, d + 1), the sampling phase's acceptance rate) of the weights' posterior
    p(w | judgments) ∝ p(w) Π_i Σ_y Φ(y x̃_i·w) Z_i(y) (docs/gp.md, "Drawing the weights"):
    ``chains`` random-walk Metropolis chains started from the Laplace approximation, their
    proposal N(0, h² C) with C the Laplace covariance and h adapted during the first half of the
    burn-in towards an acceptance rate of ACCEPT, then C the chains' own covariance over the
    burn-in's second half (the posterior is skewed and, on the steep side, wider than the
    Laplace fit), h adapted again. The weight vector is low-dimensional (a feature per run and
    an intercept), so a few thousand steps mix. Past ``max_tasks`` tasks the likelihood is that
    of a seeded random subset scaled by n / subset (as ``weight_moments``). ``hierarchical``:
    the prior is ``log_hierarchical_prior`` with scale ``prior_sd`` (each weight's own prior sd
    drawn with it, integrated out), else N(0, prior_sd²) or the Student-t. Seeded."""
    rng = np.random.default_rng(0)
    design, log_z, scale = _likelihood_subset(design, log_z, max_tasks, rng)
    k = mode.shape[0]

    def target(w: np.ndarray) -> np.ndarray:
        return _log_target(w, design, log_z, prior_sd, prior_df, scale, hierarchical)

    chol = np.linalg.cholesky(0.5 * (laplace + laplace.T) + 1e-10 * np.eye(k))
    w = mode + 0.5 * rng.standard_normal((chains, k)) @ chol.T
    lp = target(w)
    step = 2.38 / np.sqrt(k)
    history = []
    steps = (draws + chains - 1) // chains * thin
    kept, accepted = [], 0
    for t in range(burn_in + steps):
        if t == burn_in // 2:  # the chains' own covariance (the proposal's shape)
            pooled = np.concatenate(history)
            cov = np.cov(pooled.T) + 1e-8 * np.eye(k)
            chol = np.linalg.cholesky(0.5 * (cov + cov.T))
            step = 2.38 / np.sqrt(k)
        proposal = w + step * rng.standard_normal((chains, k)) @ chol.T
        lq = target(proposal)
        accept = np.log(rng.random(chains)) < lq - lp
        w = np.where(accept[:, None], proposal, w)
        lp = np.where(accept, lq, lp)
        if t < burn_in:
            # Robbins–Monro on log h towards the acceptance rate ACCEPT
            step *= float(np.exp((np.mean(accept) - ACCEPT) / np.sqrt(1.0 + t % (burn_in // 2))))
            if t >= burn_in // 4:
                history.append(w.copy())
            continue
        accepted += int(np.sum(accept))
        if (t - burn_in + 1) % thin == 0:
            kept.append(w.copy())
    out = np.concatenate(kept)[:draws]
    return out, accepted / max(chains * steps, 1)


def whitened_weight_draws(design: np.ndarray, log_z: np.ndarray, mean: np.ndarray,
                          covariance: np.ndarray, prior_sd: float = PRIOR_SD,
                          hierarchical: bool = False) -> tuple[np.ndarray, float]:
    """(ζ (draws, d + 1), acceptance rate): ``weight_draws`` of the weights' posterior written
    as ζ^s = chol(Σ)⁻¹ (w^s − w̄) in the frame of the Gaussian N(w̄, Σ) whose loadings
    l = X̃ chol(Σ) the fit stores, so that η̂_i + l_i ζ^s = x̃_i·w^s exactly: the evaluation's
    joint draws (``models.evaluation.joint``) read them in place of ζ ~ N(0, I)."""
    draws, rate = weight_draws(design, log_z, mean, covariance, prior_sd,
                               hierarchical=hierarchical)
    chol = np.linalg.cholesky(0.5 * (covariance + covariance.T))
    zeta = scipy.linalg.solve_triangular(chol, (draws - mean).T, lower=True).T
    return zeta, rate


def regression_prior(features: np.ndarray, weights: np.ndarray, covariance: np.ndarray,
                     topics: Any = None, seen_topics: np.ndarray | None = None,
                     prior_sd: float = PRIOR_SD) -> np.ndarray:
    """The regression class prior Φ(x̃·ŵ / √(1 + x̃ᵀ Σ x̃ + e)) of standardised feature rows
    (x̃ = [x, the topic columns of a fit with topic offsets, 1]): what ``fit_regression_prior``
    gives each task, for tasks nobody judged. ``topics``: the rows' topics (None: unknown) when
    the fit saw ``seen_topics``; ``e``, for a topic the fit never saw, is its weight's prior
    variance ``prior_sd``² (the fit's τ)."""
    design = np.asarray(features, dtype=np.float64)
    unseen: np.ndarray | float = 0.0
    if seen_topics is not None:
        from models.gp.topics import row_codes

        code, known = row_codes(topics, seen_topics, design.shape[0])
        design = np.column_stack([design, topic_columns(code, seen_topics.shape[0])])
        unseen = np.where(known, 0.0, prior_sd**2)
    design = np.column_stack([design, np.ones(design.shape[0])])
    q2 = np.einsum("nd,de,ne->n", design, covariance, design) + unseen
    return ndtr(design @ weights / np.sqrt(1.0 + np.maximum(q2, 0.0)))


def topic_columns(code: np.ndarray, n_topics: int) -> np.ndarray:
    """One column per topic the fit saw (1 on its tasks); a row of an unseen topic (code
    ``n_topics``) is all zeros and takes its weight's prior variance instead."""
    columns = np.zeros((code.shape[0], n_topics))
    seen = code < n_topics
    columns[np.flatnonzero(seen), code[seen].astype(np.int64)] = 1.0
    return columns
