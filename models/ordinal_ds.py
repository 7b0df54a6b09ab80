"""Ordinal Dawid–Skene: confusion rows that respect the order of the grades.

True grade T_i ∈ {0, …, K−1} with prior ρ. Annotator j perceives z = T_i + s_j ε (ε ~ N(0, 1))
and reports the grade l whose interval (c_{j,l−1}, c_{j,l}] holds z (c_{j,−1} = −∞,
c_{j,K−1} = +∞); with probability ε_j it instead answers from its own label distribution ξ_j
(MACE's spamming, Hovy et al. 2013):

    π_j[t, l] = (1 − ε_j) [Φ((c_{j,l} − t) / s_j) − Φ((c_{j,l−1} − t) / s_j)] + ε_j ξ_j[l]

a discretised Gaussian around the true grade (a cumulative-probit link). Each annotator's cut
points are the shared ones shifted by −b_j (b_j > 0: a lenient annotator, who grades too high;
b_j < 0 a strict one) with the gaps between them stretched by exp(γ_j,·) (how the annotator uses
the middle of the scale); s_j is the spread in grade units. A Dawid–Skene confusion matrix
(Dawid & Skene 1979) has K(K − 1) free numbers per annotator; this one K + 1 that keep the order:
saying 1 for a 2 is more likely than saying 0. The spam part gives the Gaussian heavy tails:
without it a task judged {0, 2} is best explained by the middle grade.

EM on the MAP objective Σ_i log Σ_t ρ_t Π_a π_{j(a)}[t, y_a] + log p(θ): the E step is
Dawid–Skene's (log space: a task's likelihood is a product over its judgments, which underflows);
the M step works on the expected counts N_j[t, l] = Σ_{a by j, y_a = l} P(T_i = t)
(n_annotators × K × K, segment sums over judgments): split by responsibility between the ordinal
and the spam part (generalised EM), then one damped Newton step per annotator on
θ_j = (b_j, log s_j, γ_j) — all annotators at once, analytic P × P Hessian blocks — and the
closed-form MAP of ε_j (Beta prior) and ξ_j. The shared cut points are the halfway points l + ½:
they define the truth (an unbiased annotator's responses centre on it). Learning them
(``learn_cutpoints``, a few L-BFGS steps per M step) lets EM slide them against the truth's
locations and empty a grade
(Algorithm-10 data at noise 4–8: grade-2 prior 0.11 for a uniform truth, accuracy below majority
vote), so it is off by default. Priors:
b_j from the crowd's prior (``bias_prior_sd=None``, the default): Student's t with 4 degrees of
freedom around a centre μ_b with a scale σ_b, both learned by EM on the hierarchy
(``_update_bias_prior``); a number fixes b_j ~ N(0, ``bias_prior_sd``²) (the default until
2026-12-02: N(0, 1)). log s_j ~ N(log ``spread_prior``, 1), γ ~ N(0,
``scale_use_prior_sd``²) (0: every annotator uses the shared gaps), ε_j ~ Beta with mode
``spam_prior`` (0 disables the spam part) and ``spam_strength`` pseudo-judgments. They keep
annotators with few judgments near the population and pin the cut points' location. With a
fixed N(0, 1) a worker of six judgments could take a bias of a grade and more from them, which
on sparse crowds of many workers put ordinal-ds .02-.03 below majority vote (docs/models.md,
"Ordinal-ds: the crowd's prior of the biases").

``class_prior_by="topic"`` (the default): one class prior ρ_g per topic instead of one for the
collection (relevance rates and grade mixes differ widely between a test collection's topics),
each the posterior mean (c_g + ν₀) / (n_g + Σ ν₀) of the topic's expected grade counts c_g under
a Dirichlet ν₀ that is type-II maximum likelihood over the topics (``models.dirichlet``, as IBCC's
empirical per-topic prior): topics alike give a large ν₀ and priors near the collection's. One
topic is the collection prior. With ``use_gold`` the clamped tasks enter c_g, so gold teaches
each topic its grade mix. ``"collection"``: one prior for all tasks (the default before
2026-11-24; docs/models.md, "Topics whose grade mixes differ", has the measurements that moved
it).

``task_difficulty`` (off by default; docs/models.md, "Per-task difficulty", has the measurements):
each task has a difficulty d_i, noise that every judgment of it shares, added to the judge's
as variances as in the thesis' multi-annotator GP (eq. 4.15: sqrt(1 + σ_i² + σ_j²)): the ordinal
part of a judgment of task i by j has spread σ_ij = sqrt(s_j² + d_i²). d_i is integrated out,
not point-estimated (a task has a handful of judgments): its prior is a distribution ω over the
levels ``DIFFICULTY_GRID`` whose weights are type-II maximum likelihood (EM: the judged tasks'
mean posterior over the levels), so the data set how much difficulty there is and d = 0 for
every task is today's model. The E step is over (grade, level) jointly,

    P(T_i = t, d_i = d_q | y) ∝ ρ_t ω_q Π_a π_{j(a)}(d_q)[t, y_a],

and the M step's counts N_j[t, l, q] gain a level axis; the Newton step on θ_j sums the levels'
cells, with ∂ log σ_qj / ∂ log s_j = s_j² / σ_qj². Outputs ``difficulty_`` = E[d_i² | y] (grade
units², as MAGP's σ_i²) and the weights ``difficulty_weights_``; ``confusion_`` is then each
judge's confusion on a task of the collection's mix of difficulties, Σ_q ω_q π_j(d_q).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Self

import numpy as np
import scipy.optimize

from models.base import AggregationResult, Aggregator, ProgressCallback, no_progress
from models.data import AnnotationData
from models.dawid_skene import HALF_TOL, Judgments, e_step, majority_start
from models.dependence import Dependence, wanted
from models.dirichlet import ClassPrior, Grouping
from models.ordinal_scale import (
    _log_diff_ndtr,
    _log_ndtr,
    check_ordinal_scale,
    grade_columns,
)
from models.params import (
    MAX_PRIOR,
    MIN_PRIOR,
    InnerIterations1,
    Iterations,
    Prior,
    PriorOrZero,
    Range,
    TemperFolds,
    Tolerance,
    validated,
)
from models.tempering import check_folds, temper_readout

_EPS = 1e-10
_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)
# ``task_difficulty``: the levels d (grade units) a task's difficulty is integrated over. A
# discretisation of [0, ∞), not a prior: the weight of each level is learned. Doubling steps
# from half a grade (below that, one task's handful of judgments cannot tell it from 0) to 8,
# where a judgment barely depends on the grade (σ ≥ 8: P(0 | t = 0) / P(0 | t = 2) = 1.23).
DIFFICULTY_GRID = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0)
# ``bias_prior_sd=None``: the judges' biases b_j have the crowd's prior, Student's t with
# ``BIAS_PRIOR_DOF`` degrees of freedom around a centre μ_b with a scale σ_b, both learned
# (``_update_bias_prior``); the fit starts from the fixed prior's N(0, 1). μ_b ~ N(0, σ_μ²) with
# σ_μ = 1 grade: the fixed prior's own pull on the judges' mean bias; σ_b kept in [0.01, 3].
# ν = 4: the usual robust choice (heavy tails, finite variance): most judges near the crowd's
# typical bias, a few strongly lenient or strict without pulling the scale up for everyone.
BIAS_START_SD = 1.0
BIAS_PRIOR_DOF = 4.0
BIAS_CENTRE_PRIOR_SD = 1.0
BIAS_SD_BOUNDS = (0.01, 3.0)


def thresholds_from(bias: np.ndarray, log_gaps: np.ndarray, centre: float) -> np.ndarray:
    """Each annotator's cut points (n_annotators, K−1): gaps exp(log_gaps) laid end to end,
    centred on ``centre`` − b_j (so b_j shifts every cut point: a lenient annotator's are lower)."""
    n = bias.shape[0]
    pos = np.concatenate([np.zeros((n, 1)), np.cumsum(np.exp(log_gaps), axis=1)], axis=1)
    return pos - pos.mean(axis=1, keepdims=True) + centre - bias[:, None]


def confusion_from(cuts: np.ndarray, spread: np.ndarray) -> np.ndarray:
    """π[j, t, l] of the discretised Gaussian for every annotator (n_annotators, K, K)."""
    return np.ascontiguousarray(np.moveaxis(np.exp(_log_confusion(cuts, spread)), -1, 0))


# The M step keeps its per-annotator arrays cell-major, (K, K, n_annotators) indexed [t, l, j]:
# every elementwise operation and every sum over t or l then runs over contiguous rows of
# n_annotators numbers (an annotator-major (J, K, K) array makes numpy loop over rows of K).


def _standardised_ends(cuts: np.ndarray, spread: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """u[t, l, j] = (c_{j,l} − t) / s_j and v[t, l, j] = (c_{j,l−1} − t) / s_j for every cell,
    cell-major (K, K, J), and 1 / s_j (J,). The ends beyond the scale — u in the last column
    l = K − 1 (+∞) and v in the first (−∞) — are stored as 0: every user treats those two
    columns apart (``_log_cells``; φ(±∞) = 0 in ``_CellDerivatives``), so no array carries an
    infinity and no elementwise pass has to test for one."""
    n, k = cuts.shape[0], cuts.shape[1] + 1
    zero = np.zeros((1, n))
    upper = np.concatenate([cuts.T, zero])[None]  # c_{j,l}: (1, K, J)
    lower = np.concatenate([zero, cuts.T])[None]  # c_{j,l−1}
    t = np.arange(k, dtype=np.float64)[:, None, None]
    inv_s = 1.0 / spread
    u, v = (upper - t) * inv_s, (lower - t) * inv_s
    u[:, k - 1] = 0.0
    v[:, 0] = 0.0
    return u, v, inv_s


def _standardised_ends_grid(cuts: np.ndarray, spread: np.ndarray
                            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``_standardised_ends`` with one spread per difficulty level and annotator, ``spread``
    (Q, J): u, v (K, K, Q, J) indexed [t, l, q, j] and 1 / σ (Q, J); the ends beyond the scale
    stored as 0 as there."""
    n, k = cuts.shape[0], cuts.shape[1] + 1
    zero = np.zeros((1, n))
    upper = np.concatenate([cuts.T, zero])[None, :, None, :]  # c_{j,l}: (1, K, 1, J)
    lower = np.concatenate([zero, cuts.T])[None, :, None, :]  # c_{j,l−1}
    t = np.arange(k, dtype=np.float64)[:, None, None, None]
    inv_s = 1.0 / spread
    u, v = (upper - t) * inv_s, (lower - t) * inv_s
    u[:, k - 1] = 0.0
    v[:, 0] = 0.0
    return u, v, inv_s


def _log_confusion(cuts: np.ndarray, spread: np.ndarray) -> np.ndarray:
    """log π[t, l, j] with truth t at location t, cell-major (K, K, n_annotators)."""
    u, v, _ = _standardised_ends(cuts, spread)
    return _log_cells(u, v)


def _log_cells(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """log π[t, l, j] = log(Φ(u) − Φ(v)) for every cell from ``_standardised_ends``' ends: the
    first grade's cell is log Φ(u) (v = −∞), the last one's log Φ(−v) (u = +∞), the others the
    stable difference."""
    k = u.shape[1]
    out = np.empty_like(u)
    out[:, 0] = _log_ndtr(u[:, 0])
    out[:, k - 1] = _log_ndtr(-v[:, k - 1])
    if k > 2:
        out[:, 1:k - 1] = _log_diff_ndtr(u[:, 1:k - 1], v[:, 1:k - 1])
    return out


# (u, v, 1 / s) of ``_standardised_ends``
_Ends = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass
class _AtTheta:
    """What the M step knows at one (θ, shared parameters): log π (cell-major), the standardised
    ends it came from and, once asked for, π = exp(log π) floored at 1e-10 (the spam update and
    the mixture both need it)."""

    theta: np.ndarray
    shared: np.ndarray
    log_p: np.ndarray
    ends: _Ends
    _pi: np.ndarray | None = None

    def pi(self) -> np.ndarray:
        if self._pi is None:
            self._pi = np.clip(np.exp(self.log_p), _EPS, None)
        return self._pi


@dataclass(frozen=True)
class _CellDerivatives:
    """Derivatives of L = log π[j, t, l] = log(Φ(u) − Φ(v)) for every cell (each cell-major,
    (K, K, J)) with respect to the cell's upper cut point c_{j,l} (``up``), lower cut point
    c_{j,l−1} (``lo``) and ℓ = log s_j (``ls``); ``second`` holds (up·up, lo·lo, up·lo, up·ls,
    lo·ls, ls·ls).

    With a = φ(u) / P and b = φ(v) / P (P = Φ(u) − Φ(v); a = 0 at u = +∞, b = 0 at v = −∞):
    L_u = a, L_v = −b, L_uu = −u a − a², L_vv = v b − b², L_uv = a b; and u = (c_l − t) e^{−ℓ},
    so ∂u/∂c_l = 1/s, ∂u/∂ℓ = −u (the same for v). The chain rule gives

        ∂L/∂c_l = a / s,   ∂L/∂c_{l−1} = −b / s,   ∂L/∂ℓ = −(u a − v b),
        ∂²L/∂c_l² = L_uu / s²,   ∂²L/∂c_{l−1}² = L_vv / s²,   ∂²L/∂c_l ∂c_{l−1} = L_uv / s²,
        ∂²L/∂c_l ∂ℓ = −(u L_uu + v L_uv + a) / s,   ∂²L/∂c_{l−1} ∂ℓ = −(u L_uv + v L_vv − b) / s,
        ∂²L/∂ℓ² = u a − v b + u² L_uu + 2 u v L_uv + v² L_vv.

    An infinite end contributes nothing (φ(±∞) = 0 kills every term it appears in); such ends
    arrive as 0 from ``_standardised_ends`` and their a or b is set to 0."""

    up: np.ndarray
    lo: np.ndarray
    ls: np.ndarray
    second: tuple[np.ndarray, ...] | None

    @classmethod
    def at(cls, u: np.ndarray, v: np.ndarray, inv_s: np.ndarray, log_p: np.ndarray, *,
           second: bool) -> _CellDerivatives:
        # the ends beyond the scale are stored as 0 (``_standardised_ends``); φ there is 0
        k = u.shape[1]
        with np.errstate(over="ignore", invalid="ignore"):
            a = np.exp(-0.5 * u**2 - _LOG_SQRT_2PI - log_p)
            b = np.exp(-0.5 * v**2 - _LOG_SQRT_2PI - log_p)
        a[:, k - 1] = 0.0
        b[:, 0] = 0.0
        ua, vb = u * a, v * b
        ls = vb - ua
        if not second:
            return cls(a * inv_s, -b * inv_s, ls, None)
        l_uu = -a * (u + a)
        l_vv = b * (v - b)
        l_uv = a * b
        inv_s2 = inv_s * inv_s
        u_uu_v_uv = u * l_uu + v * l_uv
        u_uv_v_vv = u * l_uv + v * l_vv
        hessian = (l_uu * inv_s2, l_vv * inv_s2, l_uv * inv_s2,
                   -(u_uu_v_uv + a) * inv_s, -(u_uv_v_vv - b) * inv_s,
                   -ls + u * u_uu_v_uv + v * u_uv_v_vv)
        return cls(a * inv_s, -b * inv_s, ls, hessian)


def _ascent_step(hess: np.ndarray, grad: np.ndarray, floor: float = 1e-3) -> np.ndarray:
    """Per annotator the Newton step −H⁻¹ g (hess (P, P, J), grad (J, P)) with the eigenvalues
    of H capped at −``floor`` (an ascent direction even where the objective is not concave).
    Where H is already that negative definite (−H − floor·I is positive definite) the cap does
    nothing and the step is solved directly (P ≤ 3: closed forms; else the Cholesky factor of
    −H), vectorised over annotators; only the other blocks need eigenvectors."""
    p = hess.shape[0]
    step = np.empty_like(grad)
    if p <= 3:  # K ≤ 3 grades: closed forms (Sylvester's criterion, the adjugate)
        ok = _positive_definite_small(-hess - np.eye(p)[:, :, None] * floor)
        if ok.any():
            step[ok] = _solve_small(-hess[:, :, ok], grad[ok].T).T
    else:
        _, ok = _batched_cholesky(-hess - np.eye(p)[:, :, None] * floor)
        if ok.any():
            low, _ = _batched_cholesky(-hess[:, :, ok])
            step[ok] = _cholesky_solve(low, grad[ok].T).T
    if not ok.all():
        w, vecs = np.linalg.eigh(np.moveaxis(hess[:, :, ~ok], -1, 0))
        w = np.minimum(w, -floor)
        coef = np.einsum("jcb,jc->jb", vecs, grad[~ok]) / w
        step[~ok] = -np.einsum("jab,jb->ja", vecs, coef)
    return step


def _positive_definite_small(a: np.ndarray) -> np.ndarray:
    """Whether each symmetric (P, P) matrix stacked on the last axis (P ≤ 3) is positive
    definite: its leading principal minors are positive (Sylvester's criterion)."""
    p = a.shape[0]
    ok = a[0, 0] > 0
    if p >= 2:
        ok &= a[0, 0] * a[1, 1] - a[0, 1] ** 2 > 0
    if p == 3:
        ok &= _det3(a) > 0
    return ok


def _det3(a: np.ndarray) -> np.ndarray:
    return (a[0, 0] * (a[1, 1] * a[2, 2] - a[1, 2] ** 2)
            - a[0, 1] * (a[0, 1] * a[2, 2] - a[0, 2] * a[1, 2])
            + a[0, 2] * (a[0, 1] * a[1, 2] - a[0, 2] * a[1, 1]))


def _solve_small(a: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """x (P, n) with a x = rhs for symmetric positive definite (P, P, n) stacks, P ≤ 3, by the
    adjugate (Cramer's rule): a handful of elementwise products instead of a factorisation."""
    p = a.shape[0]
    if p == 1:
        return rhs / a[0, 0]
    if p == 2:
        det = a[0, 0] * a[1, 1] - a[0, 1] ** 2
        return np.stack([a[1, 1] * rhs[0] - a[0, 1] * rhs[1],
                         a[0, 0] * rhs[1] - a[0, 1] * rhs[0]]) / det
    c00 = a[1, 1] * a[2, 2] - a[1, 2] ** 2
    c01 = a[0, 2] * a[1, 2] - a[0, 1] * a[2, 2]
    c02 = a[0, 1] * a[1, 2] - a[0, 2] * a[1, 1]
    c11 = a[0, 0] * a[2, 2] - a[0, 2] ** 2
    c12 = a[0, 1] * a[0, 2] - a[0, 0] * a[1, 2]
    c22 = a[0, 0] * a[1, 1] - a[0, 1] ** 2
    det = a[0, 0] * c00 + a[0, 1] * c01 + a[0, 2] * c02
    return np.stack([c00 * rhs[0] + c01 * rhs[1] + c02 * rhs[2],
                     c01 * rhs[0] + c11 * rhs[1] + c12 * rhs[2],
                     c02 * rhs[0] + c12 * rhs[1] + c22 * rhs[2]]) / det


def _batched_cholesky(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower Cholesky factors of small symmetric matrices stacked on the last axis (P, P, n) by
    the textbook recursion, vectorised over the stack, and whether each matrix is positive
    definite (the factor of a matrix that is not is garbage)."""
    p = a.shape[0]
    low = np.zeros_like(a)
    ok = np.ones(a.shape[2], dtype=bool)
    for c in range(p):
        d = a[c, c] - np.sum(low[c, :c] ** 2, axis=0)
        ok &= d > 0
        root = np.sqrt(np.where(d > 0, d, 1.0))
        low[c, c] = root
        for r in range(c + 1, p):
            low[r, c] = (a[r, c] - np.sum(low[r, :c] * low[c, :c], axis=0)) / root
    return low, ok


def _cholesky_solve(low: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """x (P, n) with L Lᵀ x = rhs per stacked matrix: forward then back substitution."""
    p = low.shape[0]
    y = np.empty_like(rhs)
    for r in range(p):
        y[r] = (rhs[r] - np.sum(low[r, :r] * y[:r], axis=0)) / low[r, r]
    x = np.empty_like(rhs)
    for r in reversed(range(p)):
        x[r] = (y[r] - np.sum(low[r + 1:, r] * x[r + 1:], axis=0)) / low[r, r]
    return x


@dataclass(frozen=True)
class _Terms:
    """The M-step objective per annotator (J,), its gradient w.r.t. θ_j (J, P), w.r.t. the
    shared parameters (summed), the Hessian blocks (P, P, J) if asked, and log π (K, K, J)."""

    value: np.ndarray
    grad: np.ndarray
    grad_shared: np.ndarray
    hess: np.ndarray | None
    log_p: np.ndarray


def _e_step_difficulty(
    idx: Judgments, prior: np.ndarray, log_confusion: np.ndarray, log_weights: np.ndarray,
    log_prior_rows: np.ndarray | None = None,
) -> tuple[float, np.ndarray]:
    """The joint posterior over each task's grade and difficulty level, (K, Q, n_tasks), and the
    marginal log-likelihood Σ_i log Σ_{t,q} ρ_t ω_q Π_{a ∈ i} π_{j(a)}(d_q)[t, y_a], from
    log π cell-major (K, K, Q, J) and log ω (Q,). ``prior`` / ``log_prior_rows`` as in
    ``dawid_skene.e_step``.

    Log space: a task's likelihood is a product over its judgments, which underflows. The
    judgments' log-probabilities are one sparse product per (grade, level), each writing a
    contiguous row, as in Dawid–Skene's E step."""
    k, n_levels = log_confusion.shape[0], log_confusion.shape[2]
    log_joint = np.empty((k, n_levels, idx.n_tasks))
    for t in range(k):
        for q in range(n_levels):
            # by_task's column l·J + j: annotator j said l
            log_joint[t, q] = idx.by_task @ np.ascontiguousarray(log_confusion[t, :, q]).ravel()
            if idx.temper is not None:
                log_joint[t, q] *= idx.temper
    log_class = np.log(prior)[:, None] if log_prior_rows is None else log_prior_rows
    log_joint += log_class[:, None, :]
    log_joint += log_weights[None, :, None]
    if idx.impossible is not None:  # a gold label: only its own grade, at any difficulty
        log_joint[np.broadcast_to(idx.impossible[:, None, :], log_joint.shape)] = -np.inf
    top = log_joint.max(axis=(0, 1))
    log_joint -= top
    joint = np.exp(log_joint, out=log_joint)
    total = joint.sum(axis=(0, 1))
    joint /= total
    log_marginal = np.log(total) + top
    if not idx.all_judged:
        log_marginal = log_marginal[idx.judged]
    return float(log_marginal.sum()), joint


class OrdinalDawidSkene(Aggregator):
    """``bias_[j]``, ``spread_[j]``, ``cutpoints_[j, l]``, ``confusion_[j, t, l]``, ``prior_``
    (the collection's), ``topic_prior_[g, t]`` (per topic, with ``class_prior_by="topic"``),
    ``difficulty_[i]`` and ``difficulty_weights_[q]`` (with ``task_difficulty``; else None).

    The class index is the grade's rank; the order of ``data.classes`` is the order of the scale.
    """

    method = "ordinal-ds"
    # the difficulty levels of a fit with ``task_difficulty`` (None: every task at d = 0)
    _grid: np.ndarray | None = None

    @validated
    def __init__(
        self,
        n_iter: Iterations = 100,
        tol: Tolerance = 1e-5,
        bias_prior_sd: Annotated[float | None, Range(MIN_PRIOR, MAX_PRIOR)] = None,
        spread_prior: Prior = 0.5,
        scale_use_prior_sd: PriorOrZero = 0.5,
        spam_prior: Annotated[float, Range(0.0, 1.0, high_open=True)] = 0.1,
        spam_strength: Prior = 10.0,
        m_step_iterations: InnerIterations1 = 1,
        learn_cutpoints: bool = False,
        learn_gaps: bool = False,
        use_gold: bool = False,
        class_prior_by: Grouping = "topic",
        task_difficulty: bool = False,
        dependence: Dependence = "auto",
        temper_folds: TemperFolds = 2,
    ) -> None:
        self.temper_folds = check_folds(temper_folds)
        self.dependence = dependence
        self.n_iter = n_iter
        self.tol = tol
        self.bias_prior_sd = bias_prior_sd
        self.spread_prior = spread_prior
        self.scale_use_prior_sd = scale_use_prior_sd
        self.spam_prior = spam_prior
        self.spam_strength = spam_strength
        self.m_step_iterations = m_step_iterations
        self.learn_cutpoints = learn_cutpoints
        self.learn_gaps = learn_gaps
        self.use_gold = use_gold
        self.class_prior_by = class_prior_by
        self.task_difficulty = task_difficulty

    def fit(self, data: AnnotationData, progress: ProgressCallback = no_progress, *,
            init: OrdinalDawidSkene | None = None,
            dependence_rho: float | None = None) -> Self:
        """EM from the majority-vote posterior; with ``init`` (a fit of the same annotators,
        the read-out's full fit: ``warm_half_fit``) from its state instead, the first E step
        with its prior and confusion rows. ``dependence_rho``: the ρ̄ to temper dense judgments
        by instead of estimating it (the read-out's half fits take the full fit's)."""
        check_ordinal_scale(data.classes, data.label)
        gold = data.gold if (self.use_gold and data.gold is not None) else None
        idx = Judgments.from_data(data, gold)
        if wanted(self.dependence, data.task):  # judges who share errors: τ_i (models.dependence)
            idx = idx.adjusted_for_dependence(data, gold, 0.01, dependence_rho)
        self.dependence_rho_ = idx.rho
        self.tempered_ = idx.temper is not None
        n = max(data.n_judgments, 1)
        self._start(data, idx)
        if init is not None and self._grid is None and init._grid is None:
            post = self._warm_start(idx, init)
        else:
            post = majority_start(idx, gold)  # the posterior, class-major (K, n_tasks)
        joint: np.ndarray | None = None
        history: list[float] = []
        self.n_iter_ = 0
        for it in range(self.n_iter):
            prior, confusion = self._m_step(idx, post, joint)
            if self._grid is None:
                ll, post = e_step(idx, prior, confusion, self._log_prior_rows)
            else:
                ll, joint = _e_step_difficulty(idx, prior, np.log(confusion),
                                               self._log_weights, self._log_prior_rows)
                post = joint.sum(axis=1)
            objective = ll + self._log_prior()
            history.append(objective)
            self.n_iter_ = it + 1
            progress((it + 1) / self.n_iter, f"iteration {it + 1}, objective {objective:.2f}")
            if len(history) > 1 and abs(history[-1] - history[-2]) / n < self.tol:
                break
        prior, confusion = self._m_step(idx, post, joint)
        del self._judged_share  # per-task scratch of the fit
        self._log_prior_rows = None  # per-task scratch as well
        # the collection's prior (for competence and the info); per topic as well when asked
        self.prior_ = prior
        self.topic_prior_ = self._topic_means if self._topic_prior is not None else None
        self.confusion_ = self._store_difficulty(confusion, joint, data.n_tasks)
        self.proba_ = np.ascontiguousarray(post.T)
        self.bias_ = self._theta[:, 0].copy()
        # the biases' prior (centre, scale): the fixed N(0, sd²), or the crowd's t as learned
        self.bias_prior_ = (self._bias_centre, self._bias_sd)
        self.spread_ = np.exp(self._theta[:, 1])
        self.cutpoints_ = self._cuts(self._theta, self._shared)
        self.objective_history_ = history
        self.loss_history_ = [-v / n for v in history]
        self.log_likelihood_ = history[-1] if history else float("nan")
        temper_readout(self, data, self.temper_folds)  # gold-free read-out (models.tempering)
        return self

    def _start(self, data: AnnotationData, idx: Judgments) -> None:
        """The EM's starting state: annotator parameters, shared cut points, spam and strategy
        rates, the (per-topic) class prior and the difficulty levels' weights."""
        k = data.n_classes
        # Per annotator θ_j = (b_j, log s_j, γ_j1..γ_j,K−2); shared: the centre of the cut points
        # and the log gaps between them (start: cut points halfway between grades).
        n_own = 2 + (k - 2 if self.scale_use_prior_sd > 0 else 0)
        self._theta = np.zeros((data.n_annotators, n_own))
        self._theta[:, 1] = np.log(self.spread_prior)
        # the biases' prior, centre and scale: the fixed N(0, sd²), or the crowd's t, learned
        # from N(0, 1) (``_update_bias_prior``)
        self._bias_sd = BIAS_START_SD if self.bias_prior_sd is None else self.bias_prior_sd
        self._bias_centre = 0.0
        # each judge's prior precision of b_j: 1 / sd² (Gaussian), or λ_j / σ² (Student's t as a
        # scale mixture, λ_j its latent weight)
        self._bias_precision = np.full(data.n_annotators, 1.0 / self._bias_sd**2)
        self._judged_annotators = idx.label_counts.sum(axis=1) > 0
        self._shared = np.concatenate([[(k - 1) / 2.0], np.zeros(k - 2)])
        self._spam = np.full(data.n_annotators, self.spam_prior)
        self._parts: tuple[np.ndarray, np.ndarray] | None = None
        # log π and what comes with it, kept with the (θ, shared) it belongs to; nothing yet
        self._kept: _AtTheta | None = None
        # ξ_j[l] stored (K, n_annotators), as the M step's cell-major arrays
        self._strategy = ((idx.label_counts + 1.0) / (idx.label_counts + 1.0).sum(
            axis=1, keepdims=True)).T
        # 1 / n_judged for a judged task, 0 for the others: the prior is its product with the
        # posterior (a BLAS pass; a mean over a (n_tasks, K) array loops over rows of K)
        self._judged_share = idx.judged / max(int(idx.judged.sum()), 1)
        # one class prior per topic (posterior mean under a Dirichlet whose ν₀ is type-II ML over
        # the topics), or None: one for the collection, the judged tasks' mean posterior (also
        # with a single topic, whose prior is the collection's)
        topics = (ClassPrior.build(data, "topic", 1.0, idx.judged, empirical=True)
                  if self.class_prior_by == "topic" else None)
        self._topic_prior = topics if topics is not None and topics.n_groups > 1 else None
        self._log_prior_rows: np.ndarray | None = None  # per task, with the per-topic prior
        # Task difficulty: the levels d_q and the log of their weights ω_q (uniform at the
        # start); the joint posterior over (grade, level), none until the first E step
        self._grid = np.asarray(DIFFICULTY_GRID) if self.task_difficulty else None
        if self._grid is not None:
            self._log_weights = np.full(self._grid.shape[0], -np.log(self._grid.shape[0]))

    def _warm_start(self, idx: Judgments, init: OrdinalDawidSkene) -> np.ndarray:
        """The state of ``init`` (fitted on the same annotators, same scale) as this fit's
        start: every annotator's θ_j, ε_j and ξ_j, the shared cut points and the biases' prior;
        returns the posterior of one E step under its prior and confusion rows (the per-topic
        prior follows from the first M step, as from the majority vote)."""
        self._theta = init._theta.copy()
        self._shared = init._shared.copy()
        self._spam = init._spam.copy()
        self._strategy = init._strategy.copy()
        self._bias_centre, self._bias_sd = init._bias_centre, init._bias_sd
        self._bias_precision = init._bias_precision.copy()
        _, post = e_step(idx, init.prior_, init.confusion_)
        return post

    def warm_half_fit(self, half: OrdinalDawidSkene, data: AnnotationData
                      ) -> OrdinalDawidSkene:
        """The read-out's fit of ``half`` (an untempered clone) on a training half ``data``
        (``models.tempering``), warm from this fit's state (``_warm_start``), stopped by the
        default tolerance when this fit has none; a panel tempered in EM gives its halves its
        ρ̄ (the panel's dependence, not re-estimated per half), as Dawid–Skene's do."""
        half.tol = max(half.tol, HALF_TOL)
        given = {"dependence_rho": self.dependence_rho_} if self.tempered_ else {}
        return half.fit(data.judged_only(), init=self, **given)

    def _store_difficulty(self, confusion: np.ndarray, joint: np.ndarray | None,
                          n_tasks: int) -> np.ndarray:
        """Sets ``difficulty_weights_`` and ``difficulty_`` (None without task difficulty) and
        returns each judge's confusion, on the collection's mix of difficulties when fitted."""
        if self._grid is None:
            self.difficulty_weights_ = None
            self.difficulty_ = None
            return confusion
        weights = np.exp(self._log_weights)
        self.difficulty_weights_ = weights
        # E[d_i²]: each task's noise variance in grade units², as MAGP's σ_i²; a task not
        # yet through an E step (n_iter = 0) has the weights' mean
        level_post = (joint.sum(axis=0) if joint is not None
                      else np.broadcast_to(weights[:, None], (weights.shape[0], n_tasks)))
        self.difficulty_ = self._grid**2 @ level_post
        # a judge's confusion on a task of the collection's mix of difficulties
        return np.einsum("jtlq,q->jtl", np.moveaxis(confusion, -1, 0), weights)

    # -- M step -----------------------------------------------------------------------------
    def _cuts(self, theta: np.ndarray, shared: np.ndarray) -> np.ndarray:
        log_gaps = np.broadcast_to(shared[1:], (theta.shape[0], shared.shape[0] - 1))
        if theta.shape[1] > 2:
            log_gaps = log_gaps + theta[:, 2:]
        return thresholds_from(theta[:, 0], log_gaps, shared[0])

    def _terms(self, counts: np.ndarray, theta: np.ndarray, shared: np.ndarray, *,
               hessian: bool = False, log_p: np.ndarray | None = None,
               ends: _Ends | None = None) -> _Terms:
        """Per annotator: the M-step objective Σ N log π + log prior, its gradient w.r.t. θ_j,
        the gradient w.r.t. the shared parameters (summed over annotators) and, if asked, the
        P × P Hessian blocks w.r.t. θ_j. ``counts`` and ``log_p`` (log π at (θ, shared) when
        already known) are cell-major; ``ends``, the standardised ends at (θ, shared) when
        already known."""
        k = counts.shape[0]
        u, v, inv_s = ends if ends is not None else self._ends(theta, shared)
        if log_p is None:
            log_p = _log_cells(u, v)
        cells = _CellDerivatives.at(u, v, inv_s, log_p, second=hessian)
        value = self._objective(counts, log_p, theta)
        g_level = None
        # ∂/∂c_{j,l}: c_{j,l} is the upper end of grade l and the lower end of grade l + 1.
        if counts.ndim == 3:
            g_cut = (np.einsum("tlj,tlj->lj", counts[:, : k - 1], cells.up[:, : k - 1])
                     + np.einsum("tlj,tlj->lj", counts[:, 1:], cells.lo[:, 1:]))  # (K−1, J)
            g_spread = np.einsum("tlj,tlj->j", counts, cells.ls)
        else:  # difficulty levels (K, K, Q, J): the cut points are the same at every level
            g_cut = (np.einsum("tlqj,tlqj->lj", counts[:, : k - 1], cells.up[:, : k - 1])
                     + np.einsum("tlqj,tlqj->lj", counts[:, 1:], cells.lo[:, 1:]))
            # ∂/∂ log σ_qj, then the chain rule to log s_j: ∂ log σ_qj / ∂ log s_j = s_j² / σ_qj²
            g_level = np.einsum("tlqj,tlqj->qj", counts, cells.ls)
            g_spread = np.sum(g_level * self._spread_share(theta), axis=0)
        g_theta = np.zeros_like(theta)
        g_theta[:, 0] = -g_cut.sum(axis=0)
        g_theta[:, 1] = g_spread
        g_shared = np.zeros_like(shared)
        g_shared[0] = g_cut.sum()
        g_gap = np.zeros((theta.shape[0], k - 2))
        if k > 2:
            log_gaps = shared[1:] + (theta[:, 2:] if theta.shape[1] > 2 else 0.0)
            centred = g_cut - g_cut.mean(axis=0)
            # the gap n moves cut points n, n+1, …: ∂/∂ log gap_n = gap_n Σ_{m ≥ n} ∂/∂c_m
            tail = np.cumsum(centred[::-1], axis=0)[::-1][1:]
            g_gap = np.exp(log_gaps) * tail.T  # (J, K−2)
            g_shared[1:] = g_gap.sum(axis=0)
            if theta.shape[1] > 2:
                g_theta[:, 2:] = g_gap
        # Priors: b_j with precision λ_j / σ_b² around μ_b (the fixed N(0, sd²): λ_j = 1, μ_b
        # = 0), log s ~ N(log s0, 1), γ ~ N(0, σ_γ²).
        g_theta[:, 0] -= (theta[:, 0] - self._bias_centre) * self._bias_precision
        g_theta[:, 1] -= theta[:, 1] - np.log(self.spread_prior)
        if theta.shape[1] > 2:
            g_theta[:, 2:] -= theta[:, 2:] / self.scale_use_prior_sd**2
        hess = (self._hessian(counts, cells, theta, shared, g_gap, g_level) if hessian
                else None)
        return _Terms(value, g_theta, g_shared, hess, log_p)

    def _objective(self, counts: np.ndarray, log_p: np.ndarray, theta: np.ndarray,
                   bias_precision: np.ndarray | None = None) -> np.ndarray:
        """Per annotator Σ_{t,l} N[t, l] log π[t, l] + log p(θ_j) (empty cells count 0 even where
        log π = −∞)."""
        with np.errstate(invalid="ignore"):
            value = np.sum(np.where(counts > 0, counts * log_p, 0.0), axis=(0, 1))
        if value.ndim > 1:  # difficulty levels (Q, J)
            value = value.sum(axis=0)
        precision = self._bias_precision if bias_precision is None else bias_precision
        value = (value - 0.5 * (theta[:, 0] - self._bias_centre) ** 2 * precision
                 - 0.5 * (theta[:, 1] - np.log(self.spread_prior)) ** 2)
        if theta.shape[1] > 2:
            value = value - 0.5 * np.sum(theta[:, 2:] ** 2, axis=1) / self.scale_use_prior_sd**2
        return value

    def _value(self, counts: np.ndarray, theta: np.ndarray, shared: np.ndarray,
               bias_precision: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray, _Ends]:
        """The per-annotator objective alone (no derivatives), log π at θ (cell-major) and the
        standardised ends it came from."""
        ends = self._ends(theta, shared)
        log_p = _log_cells(ends[0], ends[1])
        return self._objective(counts, log_p, theta, bias_precision), log_p, ends

    def _ends(self, theta: np.ndarray, shared: np.ndarray) -> _Ends:
        """The standardised ends at (θ, shared): per annotator (K, K, J), or per difficulty
        level and annotator (K, K, Q, J) with spreads σ_qj = sqrt(s_j² + d_q²)."""
        if self._grid is None:
            return _standardised_ends(self._cuts(theta, shared), np.exp(theta[:, 1]))
        return _standardised_ends_grid(self._cuts(theta, shared), self._level_spread(theta))

    def _level_spread(self, theta: np.ndarray) -> np.ndarray:
        """σ_qj = sqrt(s_j² + d_q²) (Q, J): a judge's spread on a task of difficulty d_q (the
        thesis' task and annotator noise added as variances, eq. 4.15)."""
        assert self._grid is not None
        return np.sqrt(np.exp(2.0 * theta[:, 1])[None, :] + self._grid[:, None] ** 2)

    def _spread_share(self, theta: np.ndarray) -> np.ndarray:
        """r_qj = s_j² / σ_qj² = ∂ log σ_qj / ∂ log s_j (Q, J)."""
        assert self._grid is not None
        s2 = np.exp(2.0 * theta[:, 1])[None, :]
        return s2 / (s2 + self._grid[:, None] ** 2)

    def _hessian(self, counts: np.ndarray, cells: _CellDerivatives, theta: np.ndarray,
                 shared: np.ndarray, g_gap: np.ndarray, g_level: np.ndarray | None = None
                 ) -> np.ndarray:
        """The P × P Hessian blocks of the per-annotator objective w.r.t. θ_j, analytic,
        stacked on the last axis (P, P, J).

        First in x_j = (c_{j,0}, …, c_{j,K−2}, log s_j): each cell's second derivatives
        (``_CellDerivatives``) summed with the counts N[t, l] (the cut-point block is
        tridiagonal: cell l touches c_{l−1} and c_l only). Then the chain rule to θ_j with the
        Jacobian A = ∂x/∂θ (∂c_m/∂b = −1, ∂ log s/∂ log s = 1, ∂c_m/∂γ_n = gap_n ([n < m] −
        (K − 2 − n)/(K − 1)), the centring of the cut points): H_θ = Aᵀ H_x A + Σ_m ∂f/∂c_m
        ∂²c_m/∂θ², whose second part is diagonal in γ (∂²c_m/∂γ_n² = ∂c_m/∂γ_n), i.e. the
        likelihood's gradient in γ_n. Then the priors' −1/σ² on the diagonal.

        With difficulty levels (``g_level``: the gradient in log σ_qj, (Q, J)) H_x is first
        built per level in log σ_qj, then taken to log s_j and summed over the levels: with
        r = ∂ log σ_qj / ∂ log s_j = s_j² / σ_qj² and ∂r / ∂ log s_j = 2 r (1 − r), the log-s
        row and column are multiplied by r and the diagonal cell gains g_level · 2 r (1 − r)."""
        assert cells.second is not None
        n_ann, p = theta.shape
        k = counts.shape[0]
        spec = "tlj,tlj->lj" if counts.ndim == 3 else "tlqj,tlqj->lqj"
        uu, ll, ul, us, ls_, ss = (np.einsum(spec, counts, d) for d in cells.second)
        h_x = np.zeros((k, k) + counts.shape[2:])
        cut = np.arange(k - 1)
        h_x[cut, cut] = uu[: k - 1] + ll[1:]
        h_x[cut[:-1], cut[1:]] = ul[1 : k - 1]
        h_x[cut[1:], cut[:-1]] = ul[1 : k - 1]
        h_x[cut, k - 1] = h_x[k - 1, cut] = us[: k - 1] + ls_[1:]
        h_x[k - 1, k - 1] = ss.sum(axis=0)
        if g_level is not None:
            r = self._spread_share(theta)
            h_x[:, k - 1] *= r
            h_x[k - 1, :] *= r
            h_x[k - 1, k - 1] += 2.0 * g_level * r * (1.0 - r)
            h_x = h_x.sum(axis=2)
        jac = np.zeros((k, p, n_ann))
        jac[: k - 1, 0] = -1.0
        jac[k - 1, 1] = 1.0
        if p > 2:
            gaps = np.exp(shared[1:, None] + theta[:, 2:].T)  # (K−2, J)
            gap_index = np.arange(k - 2)
            moves = ((gap_index[None, :] < cut[:, None])
                     - (k - 2 - gap_index[None, :]) / (k - 1))  # (K−1, K−2)
            jac[: k - 1, 2:] = moves[:, :, None] * gaps[None]
        hess = np.einsum("xaj,xbj->abj", jac, np.einsum("xyj,ybj->xbj", h_x, jac))
        hess[0, 0] -= self._bias_precision
        hess[1, 1] -= 1.0
        if p > 2:
            own = np.arange(2, p)
            hess[own, own] += g_gap.T - 1.0 / self.scale_use_prior_sd**2
        return hess

    def _newton_annotators(self, counts: np.ndarray) -> None:
        """One damped Newton step per annotator on θ_j, all annotators at once.

        The objective separates by annotator given the shared parameters, so the Hessian is
        block diagonal with P × P blocks (P ≤ K), analytic (``_hessian``); each block is made
        negative definite (``_ascent_step``), and the step is halved per annotator until that
        annotator's objective does not decrease. log π at the accepted θ is kept for the mixture
        split and the next M step (``_log_conf``): one log Φ evaluation per trial point.
        """
        theta, shared = self._theta, self._shared
        at = self._at_theta()
        start = self._terms(counts, theta, shared, hessian=True, log_p=at.log_p, ends=at.ends)
        assert start.hess is not None
        step = np.clip(_ascent_step(start.hess, start.grad), -2.0, 2.0)
        trial = theta + step
        new_value, new_log_p, (new_u, new_v, new_inv_s) = self._value(counts, trial, shared)
        ok = np.isfinite(new_value) & (new_value >= start.value - 1e-9)
        todo = np.flatnonzero(~ok)
        if todo.size:  # the annotators whose objective went down: the step halved, up to 8
            # times, keeping the first (largest) that does not decrease it; all 8 trial points
            # of all these annotators in one evaluation
            n_todo, n_par = todo.size, theta.shape[1]
            scales = 0.5 ** np.arange(1, 9)
            candidates = theta[todo][None] + scales[:, None, None] * step[todo][None]
            values, log_ps, (us, vs, inv_ss) = self._value(
                np.tile(counts[..., todo], (1,) * (counts.ndim - 1) + (scales.size,)),
                candidates.reshape(-1, n_par), shared,
                np.tile(self._bias_precision[todo], scales.size))
            values = values.reshape(scales.size, n_todo)
            better = np.isfinite(values) & (values >= start.value[todo] - 1e-9)
            found = better.any(axis=0)
            first = np.argmax(better, axis=0)[found]
            which = np.flatnonzero(found)
            accepted = todo[found]
            trial[accepted] = candidates[first, which]
            # (the trailing axis is the annotator's, scale-major: split it, pick per annotator)
            for whole, part in ((new_log_p, log_ps), (new_u, us), (new_v, vs),
                                (new_inv_s, inv_ss)):
                whole[..., accepted] = part.reshape(part.shape[:-1] + (scales.size, n_todo))[
                    ..., first, which]
            ok[accepted] = True
        self._theta = np.where(ok[:, None], trial, theta)
        kept = (np.where(ok, new_u, at.ends[0]), np.where(ok, new_v, at.ends[1]),
                np.where(ok, new_inv_s, at.ends[2]))
        self._kept = _AtTheta(self._theta, shared, np.where(ok, new_log_p, start.log_p), kept)

    def _update_bias_prior(self, counts: np.ndarray) -> None:
        """The crowd's prior of the biases, one EM step on the hierarchy (as Dawid–Skene's
        population prior is the crowd's confusion): b_j ~ t_ν(μ_b, σ_b²), written as the scale
        mixture b_j | λ_j ~ N(μ_b, σ_b² / λ_j), λ_j ~ Gamma(ν/2, ν/2), with μ_b ~ N(0, σ_μ²).

        Each judge's posterior over θ_j is taken as Gaussian (Laplace: the mode the Newton step
        just reached, and minus the inverse of its Hessian, whose b-cell is v_j). Then the latent
        weights' E step is λ_j = (ν + 1) / (ν + ((b_j − μ_b)² + v_j) / σ_b²), and the M step
        μ_b = Σ λ_j b_j / (Σ λ_j + σ_b² / σ_μ²), σ_b² = Σ λ_j ((b_j − μ_b)² + v_j) / J over the
        J judges with judgments; the Newton step then sees each judge's prior precision
        λ_j / σ_b². σ_μ (1 grade) keeps "judges unbiased on average" as loose as the fixed
        prior had it: the truth's location is the shared cut points'. v_j is capped at the
        judge's prior variance σ_b² / λ_j: under a log-concave likelihood the posterior is no
        wider than the prior, and where the Hessian's likelihood part is not concave (a judge
        who gave one grade only) the Laplace variance is no measure of that judge. A judge of a
        handful of judgments so adds about its prior's own variance and leaves σ_b where it
        is; the judges the data pin down set it. Sparse crowds of many small workers get the
        tight prior they need, dense panels keep the spread their judges show, and a few
        strongly lenient or strict judges (the t's tails) do not widen it for everyone
        (docs/models.md, "Ordinal-ds: the crowd's prior of the biases").
        """
        judged = self._judged_annotators
        if not judged.any():
            return
        # the Laplace posterior at the mode the Newton step has just reached (the counts' own)
        at = self._at_theta()
        hess = self._terms(counts, self._theta, self._shared, hessian=True, log_p=at.log_p,
                           ends=at.ends).hess
        assert hess is not None
        values, vectors = np.linalg.eigh(-np.moveaxis(hess[..., judged], -1, 0))
        variance = np.einsum("jb,jb->j", vectors[:, 0, :] ** 2, 1.0 / np.maximum(values, 1e-12))
        variance = np.minimum(variance, 1.0 / self._bias_precision[judged])
        bias = self._theta[judged, 0]
        dof, sd2 = BIAS_PRIOR_DOF, self._bias_sd**2
        weight = (dof + 1.0) / (dof + ((bias - self._bias_centre) ** 2 + variance) / sd2)
        centre = float((weight * bias).sum() / (weight.sum() + sd2 / BIAS_CENTRE_PRIOR_SD**2))
        sd = float(np.sqrt(np.mean(weight * ((bias - centre) ** 2 + variance))))
        self._bias_centre = centre
        self._bias_sd = float(np.clip(sd, BIAS_SD_BOUNDS[0], BIAS_SD_BOUNDS[1]))
        self._bias_precision = np.full(self._theta.shape[0], 1.0 / self._bias_sd**2)
        self._bias_precision[judged] = weight / self._bias_sd**2

    def _at_theta(self) -> _AtTheta:
        """log π of the ordinal part at the current θ and shared parameters, with its ends and
        π (kept from the Newton step that produced them, else computed)."""
        kept = self._kept
        if kept is None or kept.theta is not self._theta or kept.shared is not self._shared:
            ends = self._ends(self._theta, self._shared)
            kept = _AtTheta(self._theta, self._shared, _log_cells(ends[0], ends[1]), ends)
            self._kept = kept
        return kept

    def _log_conf(self) -> np.ndarray:
        """log π[t, l, j] of the ordinal part at the current θ and shared parameters."""
        return self._at_theta().log_p

    def _fit_shared(self, counts: np.ndarray) -> None:
        """L-BFGS on the shared parameters, annotators fixed: the centre and the log gaps
        (``learn_cutpoints``), or the log gaps only (``learn_gaps``: the centre, which defines
        the truth's location, stays put)."""
        free = np.ones(self._shared.shape[0], dtype=bool)
        if not self.learn_cutpoints:
            free[0] = False

        def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
            shared = self._shared.copy()
            shared[free] = x
            terms = self._terms(counts, self._theta, shared)
            total = float(terms.value.sum())
            if not np.isfinite(total):
                return np.inf, np.zeros_like(x)
            return -total, -terms.grad_shared[free]

        start = self._shared[free]
        if start.size == 0:
            return
        res = scipy.optimize.minimize(objective, start, jac=True, method="L-BFGS-B",
                                      options={"maxiter": 5})
        if np.isfinite(res.fun) and res.fun <= objective(start)[0]:
            self._shared = self._shared.copy()
            self._shared[free] = res.x

    def _m_step(self, idx: Judgments, post: np.ndarray, joint: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
        """``post``: the class-major posterior (K, n_tasks); ``joint``: with difficulty levels,
        the joint posterior over (grade, level) (K, Q, n_tasks) of the last E step (None before
        the first). Returns the collection's prior and the confusion matrices, (J, K, K), or
        cell-major per level (K, K, Q, J) with difficulty levels."""
        k = idx.n_classes
        # the mean posterior of the judged tasks, as one product (uniform if none is judged)
        prior = post @ self._judged_share if idx.judged.any() else np.full(k, 1.0 / k)
        prior = np.clip(prior, _EPS, None)
        prior /= prior.sum()
        if self._grid is None:
            # N[t, l, j], cell-major: Dawid–Skene's sufficient statistics, one sparse product
            counts = idx.expected_counts(post)
        else:
            counts = self._level_counts(idx, post, joint)
            if joint is not None and idx.judged.any():
                # ω_q: the judged tasks' mean posterior over the levels (type-II maximum
                # likelihood of the difficulty distribution on the grid); EM's start keeps the
                # uniform weights
                weights = np.clip(joint.sum(axis=0) @ self._judged_share, _EPS, None)
                self._log_weights = np.log(weights / weights.sum())
        for _ in range(self.m_step_iterations):
            # Generalised EM on the mixture (1 − ε_j) π_j + ε_j ξ_j: split each expected count
            # between the ordinal part and the spam part by responsibility, then update each.
            ordinal, spam = self._parts if self._parts is not None else self._mixture_parts()
            share = ordinal / (ordinal + spam)
            self._newton_annotators(counts * share)
            if self.bias_prior_sd is None:
                self._update_bias_prior(counts * share)
            if self.learn_cutpoints or self.learn_gaps:
                self._fit_shared(counts * share)
            if self.spam_prior > 0:
                self._update_spam(counts)
            self._parts = None  # parameters moved
        ordinal, spam = self._mixture_parts()
        self._parts = (ordinal, spam)  # the next M step starts from these
        confusion = np.clip(ordinal + spam, _EPS, None)
        confusion /= confusion.sum(axis=1, keepdims=True)
        if self._topic_prior is not None:
            # each topic's prior; the E step adds its log, per task and class-major
            self._topic_means = self._topic_prior.posterior_mean(post.T)
            self._log_prior_rows = self._topic_prior.per_task_rows(
                np.log(np.clip(self._topic_means, _EPS, None)))
        if self._grid is not None:
            return prior, confusion  # (K, K, Q, J), as the E step reads it
        return prior, np.ascontiguousarray(np.moveaxis(confusion, -1, 0))  # (J, K, K)

    def _level_counts(self, idx: Judgments, post: np.ndarray, joint: np.ndarray | None
                      ) -> np.ndarray:
        """N[t, l, q, j] = Σ_{a by j, y_a = l} P(T_i = t, d_i = d_q) (K, K, Q, J), one sparse
        product per (grade, level). EM's start (``joint`` None) puts every task at d = 0:
        today's first M step."""
        assert self._grid is not None
        k, n_levels, n_ann = idx.n_classes, self._grid.shape[0], idx.n_annotators
        counts = np.zeros((k, k, n_levels, n_ann))
        if joint is None:
            counts[:, :, 0] = idx.expected_counts(post)
            return counts
        for t in range(k):
            for q in range(n_levels):
                weights = joint[t, q] if idx.temper is None else joint[t, q] * idx.temper
                counts[t, :, q] = (idx.by_cell @ weights).reshape(k, n_ann)
        return counts

    def _update_spam(self, counts: np.ndarray) -> None:
        """ε_j and ξ_j given the new θ: the expected counts split by responsibility between the
        ordinal part, at the θ the Newton step has just moved to, and the spam part (splitting
        at the θ before the step, as the Newton step does, took a quarter more EM iterations to
        converge: 33 against 27 at 1M judgments)."""
        a = self.spam_strength * self.spam_prior
        b = self.spam_strength * (1.0 - self.spam_prior)
        ordinal = self._at_theta().pi() * (1.0 - self._spam)
        spam = self._spam_part()
        spam_counts = counts * (spam / (ordinal + spam))
        # MAP of ε_j under Beta(a + 1, b + 1); ξ_j ∝ spam counts + 1 (MACE's strategy).
        cells = tuple(range(counts.ndim - 1))  # all but the annotator's axis
        self._spam = (spam_counts.sum(axis=cells) + a) / (counts.sum(axis=cells) + a + b)
        # (with difficulty levels the spam part is the same at every level: summed over them)
        strategy = (spam_counts.sum(axis=0) if counts.ndim == 3
                    else spam_counts.sum(axis=(0, 2))) + 1.0
        self._strategy = strategy / strategy.sum(axis=0)

    def _mixture_parts(self) -> tuple[np.ndarray, np.ndarray]:
        """(1 − ε_j) π_j[t, l] and ε_j ξ_j[l], each cell-major (K, K, n_annotators), or
        (K, K, Q, n_annotators) with difficulty levels."""
        ordinal = self._at_theta().pi() * (1.0 - self._spam)
        spam = np.broadcast_to(self._spam_part(), ordinal.shape)
        return ordinal, spam

    def _spam_part(self) -> np.ndarray:
        """ε_j ξ_j[l], (K, J) indexed [l, j], or (K, 1, J) [l, q, j] with difficulty levels:
        broadcast against the cell-major arrays."""
        spam = self._spam * self._strategy
        return spam if self._grid is None else spam[:, None, :]

    def _log_prior(self) -> float:
        """log p(θ) of every judge (and, with the crowd's prior, of its centre and scale): the
        objective EM reports and stops on."""
        theta = self._theta
        value = -0.5 * np.sum((theta[:, 1] - np.log(self.spread_prior)) ** 2)
        if self.bias_prior_sd is None:
            # Student's t around μ_b with scale σ_b (its λ_j integrated out) over the judges
            # with judgments, as ``_update_bias_prior`` fits it; μ_b's N(0, σ_μ²)
            judged = self._judged_annotators
            z2 = (theta[judged, 0] - self._bias_centre) ** 2 / self._bias_sd**2
            dof = BIAS_PRIOR_DOF
            value += float(-0.5 * (dof + 1.0) * np.sum(np.log1p(z2 / dof))
                           - judged.sum() * np.log(self._bias_sd)
                           - 0.5 * self._bias_centre**2 / BIAS_CENTRE_PRIOR_SD**2)
        else:
            value -= 0.5 * np.sum(theta[:, 0] ** 2) / self.bias_prior_sd**2
        if theta.shape[1] > 2:
            value -= 0.5 * np.sum(theta[:, 2:] ** 2) / self.scale_use_prior_sd**2
        return float(value)

    # -- outputs ----------------------------------------------------------------------------
    @property
    def competence_(self) -> np.ndarray:
        """Expected exact-grade accuracy under the class prior: Σ_t ρ_t π_j[t, t]."""
        return np.einsum("t,jtt->j", self.prior_, self.confusion_)

    def result(self, data: AnnotationData) -> AggregationResult:
        return AggregationResult(
            method=self.method,
            classes=data.classes,
            proba=self.proba_,
            task_columns={
                "n_judgments": data.judgments_per_task().astype(np.float64),
                **grade_columns(self.proba_, data.classes),
                # E[d_i²], grade units² (``task_difficulty``)
                **({} if self.difficulty_ is None else {"difficulty": self.difficulty_}),
            },
            annotator_columns={
                "competence": self.competence_,
                "bias": self.bias_,
                "spread": self.spread_,
                "n_judgments": data.judgments_per_annotator().astype(np.float64),
            },
            objective_history=list(self.objective_history_),
            info={
                "log_posterior": self.log_likelihood_,
                "n_iter": self.n_iter_,
                "prior": self.prior_.tolist(),
                "cutpoints": self._cuts(np.zeros_like(self._theta), self._shared)[0].tolist(),
                # the prior used: per topic, or the collection's (so chosen, or a single topic)
                "class_prior_by": "collection" if self._topic_prior is None else "topic",
                # the judges' biases b_j ~ N(centre, sd²): learned from the crowd, or fixed
                "bias_prior": {"centre": self.bias_prior_[0], "sd": self.bias_prior_[1],
                               "learned": self.bias_prior_sd is None},
                **({} if self._topic_prior is None else {
                    # ν₀: the Dirichlet over the topics' class priors, type-II ML
                    "topic_prior_dirichlet": self._topic_prior.nu0.tolist()}),
                **({} if self.difficulty_weights_ is None else {
                    # the difficulty levels d_q (grade units) and their learned weights ω_q
                    "difficulty_levels": list(DIFFICULTY_GRID),
                    "difficulty_weights": self.difficulty_weights_.tolist()}),
            },
        )


