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
θ_j = (b_j, log s_j, γ_j) — all annotators at once, P × P Hessian blocks — and the closed-form MAP
of ε_j (Beta prior) and ξ_j. The shared cut points are the halfway points l + ½: they define the
truth (an unbiased annotator's responses centre on it). Learning them (``learn_cutpoints``, a few
L-BFGS steps per M step) lets EM slide them against the truth's locations and empty a grade
(Algorithm-10 data at noise 4–8: grade-2 prior 0.11 for a uniform truth, accuracy below majority
vote), so it is off by default. Priors:
b_j ~ N(0, ``bias_prior_sd``²), log s_j ~ N(log ``spread_prior``, 1), γ ~ N(0,
``scale_use_prior_sd``²) (0: every annotator uses the shared gaps), ε_j ~ Beta with mode
``spam_prior`` (0 disables the spam part) and ``spam_strength`` pseudo-judgments. They keep
annotators with few judgments near the population and pin the cut points' location.
"""

from __future__ import annotations

from typing import Self

import numpy as np
import scipy.optimize
from scipy.special import log_ndtr

from models.base import AggregationResult, Aggregator, ProgressCallback, no_progress
from models.data import AnnotationData
from models.dawid_skene import _e_step, _fix_gold, _Judgments

_EPS = 1e-10
_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


class OrdinalScaleError(ValueError):
    """The labels cannot be read as an ordinal scale (not ordered numbers, or one grade only)."""

    def __init__(self, detail: str, code: str) -> None:
        self.code = code
        super().__init__(detail)


def check_ordinal_scale(classes: np.ndarray, label: np.ndarray | None = None) -> None:
    """Raise OrdinalScaleError unless ``classes`` are strictly increasing finite numbers and the
    judgments (class indices ``label``) use at least two of them."""
    values = np.asarray(classes)
    if values.dtype.kind not in "iuf" or values.ndim != 1:
        raise OrdinalScaleError(
            f"an ordinal model needs a numeric label scale, got {values.tolist()!r}",
            "scale_not_ordinal")
    if values.shape[0] < 2 or not np.all(np.isfinite(values)) or np.any(np.diff(values) <= 0):
        raise OrdinalScaleError(
            f"an ordinal model needs at least two ordered label values, got {values.tolist()!r}",
            "scale_not_ordinal")
    if label is not None and np.unique(label).shape[0] < 2:
        present = values[np.unique(label)].tolist()
        raise OrdinalScaleError(
            f"an ordinal model needs judgments with at least two different grades; the only "
            f"grade judged is {present[0] if present else 'none'}", "single_grade")


def thresholds_from(bias: np.ndarray, log_gaps: np.ndarray, centre: float) -> np.ndarray:
    """Each annotator's cut points (n_annotators, K−1): gaps exp(log_gaps) laid end to end,
    centred on ``centre`` − b_j (so b_j shifts every cut point: a lenient annotator's are lower)."""
    n = bias.shape[0]
    pos = np.concatenate([np.zeros((n, 1)), np.cumsum(np.exp(log_gaps), axis=1)], axis=1)
    return pos - pos.mean(axis=1, keepdims=True) + centre - bias[:, None]


def confusion_from(cuts: np.ndarray, spread: np.ndarray) -> np.ndarray:
    """π[j, t, l] of the discretised Gaussian for every annotator (n_annotators, K, K)."""
    log_conf, _ = _log_confusion(cuts, spread, need_grad=False)
    return np.exp(log_conf)


def _log_confusion(cuts: np.ndarray, spread: np.ndarray, *, need_grad: bool
                   ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    """log π[j, t, l] with truth t at location t, and (if asked) the derivatives of
    Σ-able terms: per (j, t, l) ∂/∂c_{j,l} (upper end) and ∂/∂c_{j,l−1} (lower end) stacked in one
    (J, K, K, 2) array, and ∂/∂ log s_j (J, K, K).

    log(Φ(u) − Φ(v)) for u > v is computed on whichever side of 0 keeps both terms away from 1
    (the upper tail by symmetry), so rows far from the truth keep their relative precision.
    """
    n, k = cuts.shape[0], cuts.shape[1] + 1
    t = np.arange(k, dtype=np.float64)
    inf = np.full((n, 1), np.inf)
    upper_c = np.concatenate([cuts, inf], axis=1)[:, None, :]  # c_{j,l}
    lower_c = np.concatenate([-inf, cuts], axis=1)[:, None, :]  # c_{j,l−1}
    inv_s = 1.0 / spread[:, None, None]
    u = (upper_c - t[None, :, None]) * inv_s  # (J, K, K)
    v = (lower_c - t[None, :, None]) * inv_s
    log_p = _log_diff_ndtr(u, v)
    if not need_grad:
        return log_p, None
    # ∂ log(Φ(u) − Φ(v)) / ∂u = φ(u) / P, ∂ / ∂v = −φ(v) / P (φ(±∞) = 0).
    with np.errstate(invalid="ignore", over="ignore"):
        ru = np.where(np.isfinite(u), np.exp(-0.5 * u**2 - _LOG_SQRT_2PI - log_p), 0.0)
        rv = np.where(np.isfinite(v), np.exp(-0.5 * v**2 - _LOG_SQRT_2PI - log_p), 0.0)
        uru = np.where(np.isfinite(u), u * ru, 0.0)
        vrv = np.where(np.isfinite(v), v * rv, 0.0)
    d_ends = np.stack([ru * inv_s, -rv * inv_s], axis=-1)
    d_logs = -(uru - vrv)  # ∂u/∂log s = −u
    return log_p, (d_ends, d_logs)


def _log_diff_ndtr(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """log(Φ(u) − Φ(v)) for u > v, elementwise, stable in both tails."""
    upper_side = v > 0  # both in the upper tail: Φ(u) − Φ(v) = Φ(−v) − Φ(−u)
    a = np.where(upper_side, -v, u)
    b = np.where(upper_side, -u, v)
    la, lb = log_ndtr(a), log_ndtr(b)
    with np.errstate(divide="ignore"):
        return la + np.log1p(-np.exp(np.minimum(lb - la, -1e-300)))


class OrdinalDawidSkene(Aggregator):
    """``bias_[j]``, ``spread_[j]``, ``cutpoints_[j, l]``, ``confusion_[j, t, l]``, ``prior_``.

    The class index is the grade's rank; the order of ``data.classes`` is the order of the scale.
    """

    method = "ordinal-ds"

    def __init__(
        self,
        n_iter: int = 100,
        tol: float = 1e-5,
        bias_prior_sd: float = 1.0,
        spread_prior: float = 0.5,
        scale_use_prior_sd: float = 0.5,
        spam_prior: float = 0.1,
        spam_strength: float = 10.0,
        m_step_iterations: int = 1,
        learn_cutpoints: bool = False,
        learn_gaps: bool = False,
        use_gold: bool = False,
    ) -> None:
        if n_iter < 0 or m_step_iterations < 1:
            raise ValueError("n_iter must be >= 0 and m_step_iterations >= 1")
        if tol < 0:
            raise ValueError("tol must be >= 0")
        if not 0.0 <= spam_prior < 1.0 or spam_strength <= 0:
            raise ValueError("spam_prior must be in [0, 1) and spam_strength > 0")
        if bias_prior_sd <= 0 or spread_prior <= 0 or scale_use_prior_sd < 0:
            raise ValueError("bias_prior_sd and spread_prior must be > 0, "
                             "scale_use_prior_sd >= 0")
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

    def fit(self, data: AnnotationData, progress: ProgressCallback = no_progress) -> Self:
        check_ordinal_scale(data.classes, data.label)
        gold = data.gold if (self.use_gold and data.gold is not None) else None
        k = data.n_classes
        counts = data.counts().astype(np.float64)
        totals = counts.sum(axis=1, keepdims=True)
        proba = np.divide(counts, totals, out=np.full_like(counts, 1.0 / k), where=totals > 0)
        proba = _fix_gold(proba, gold)
        idx = _Judgments.from_data(data, gold)
        n = max(data.n_judgments, 1)
        # Per annotator θ_j = (b_j, log s_j, γ_j1..γ_j,K−2); shared: the centre of the cut points
        # and the log gaps between them (start: cut points halfway between grades).
        n_own = 2 + (k - 2 if self.scale_use_prior_sd > 0 else 0)
        self._theta = np.zeros((data.n_annotators, n_own))
        self._theta[:, 1] = np.log(self.spread_prior)
        self._shared = np.concatenate([[(k - 1) / 2.0], np.zeros(k - 2)])
        self._spam = np.full(data.n_annotators, self.spam_prior)
        self._parts: tuple[np.ndarray, np.ndarray] | None = None
        self._strategy = (idx.label_counts + 1.0) / (idx.label_counts + 1.0).sum(axis=1,
                                                                                   keepdims=True)
        history: list[float] = []
        self.n_iter_ = 0
        for it in range(self.n_iter):
            prior, confusion = self._m_step(idx, proba)
            ll, proba = _e_step(idx, prior, confusion)
            objective = ll + self._log_prior()
            history.append(objective)
            self.n_iter_ = it + 1
            progress((it + 1) / self.n_iter, f"iteration {it + 1}, objective {objective:.2f}")
            if len(history) > 1 and abs(history[-1] - history[-2]) / n < self.tol:
                break
        prior, confusion = self._m_step(idx, proba)
        self.prior_ = prior
        self.confusion_ = confusion
        self.proba_ = proba
        self.bias_ = self._theta[:, 0].copy()
        self.spread_ = np.exp(self._theta[:, 1])
        self.cutpoints_ = self._cuts(self._theta, self._shared)
        self.objective_history_ = history
        self.loss_history_ = [-v / n for v in history]
        self.log_likelihood_ = history[-1] if history else float("nan")
        return self

    # -- M step -----------------------------------------------------------------------------
    def _expected_counts(self, idx: _Judgments, proba: np.ndarray) -> np.ndarray:
        """N[j, t, l] = Σ_{a by j, y_a = l} P(T_i = t): Dawid–Skene's sufficient statistics."""
        k = idx.n_classes
        out = np.empty((idx.n_annotators, k, k))
        for t in range(k - 1):
            weights = np.ascontiguousarray(proba[:, t]).take(idx.task)
            out[:, t, :] = np.bincount(idx.ann_label, weights=weights,
                                       minlength=idx.n_annotators * k).reshape(-1, k)
        out[:, k - 1, :] = idx.label_counts - out[:, : k - 1, :].sum(axis=1)
        return np.clip(out, 0.0, None)

    def _cuts(self, theta: np.ndarray, shared: np.ndarray) -> np.ndarray:
        log_gaps = np.broadcast_to(shared[1:], (theta.shape[0], shared.shape[0] - 1))
        if theta.shape[1] > 2:
            log_gaps = log_gaps + theta[:, 2:]
        return thresholds_from(theta[:, 0], log_gaps, shared[0])

    def _terms(self, counts: np.ndarray, theta: np.ndarray, shared: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per annotator: the M-step objective Σ N log π + log prior, its gradient w.r.t. θ_j,
        and the gradient w.r.t. the shared parameters (summed over annotators)."""
        k = counts.shape[1]
        cuts = self._cuts(theta, shared)
        spread = np.exp(theta[:, 1])
        log_p, grads = _log_confusion(cuts, spread, need_grad=True)
        assert grads is not None
        d_ends, d_logs = grads
        with np.errstate(invalid="ignore"):
            value = np.sum(np.where(counts > 0, counts * log_p, 0.0), axis=(1, 2))
        # ∂/∂c_{j,l}: c_{j,l} is the upper end of grade l and the lower end of grade l + 1.
        ends = np.einsum("jtl,jtle->jle", counts, d_ends)
        g_cut = ends[:, : k - 1, 0] + ends[:, 1:, 1]  # (J, K−1)
        g_theta = np.zeros_like(theta)
        g_theta[:, 0] = -g_cut.sum(axis=1)
        g_theta[:, 1] = np.einsum("jtl,jtl->j", counts, d_logs)
        g_shared = np.zeros_like(shared)
        g_shared[0] = g_cut.sum()
        if k > 2:
            log_gaps = shared[1:] + (theta[:, 2:] if theta.shape[1] > 2 else 0.0)
            centred = g_cut - g_cut.mean(axis=1, keepdims=True)
            # the gap n moves cut points n, n+1, …: ∂/∂ log gap_n = gap_n Σ_{m ≥ n} ∂/∂c_m
            tail = np.cumsum(centred[:, ::-1], axis=1)[:, ::-1][:, 1:]
            g_gap = np.exp(log_gaps) * tail  # (J, K−2)
            g_shared[1:] = g_gap.sum(axis=0)
            if theta.shape[1] > 2:
                g_theta[:, 2:] = g_gap
        # Priors: b ~ N(0, σ_b²), log s ~ N(log s0, 1), γ ~ N(0, σ_γ²).
        prior_b = theta[:, 0] / self.bias_prior_sd**2
        prior_s = theta[:, 1] - np.log(self.spread_prior)
        value = value - 0.5 * theta[:, 0] * prior_b - 0.5 * prior_s**2
        g_theta[:, 0] -= prior_b
        g_theta[:, 1] -= prior_s
        if theta.shape[1] > 2:
            prior_g = theta[:, 2:] / self.scale_use_prior_sd**2
            value = value - 0.5 * np.sum(theta[:, 2:] * prior_g, axis=1)
            g_theta[:, 2:] -= prior_g
        return value, g_theta, g_shared

    def _newton_annotators(self, counts: np.ndarray) -> None:
        """One damped Newton step per annotator on θ_j, all annotators at once.

        The objective separates by annotator given the shared parameters, so the Hessian is
        block diagonal with P × P blocks (P ≤ K); each block comes from forward differences of
        the analytic gradient (P vectorised evaluations), is made negative definite, and the step
        is halved per annotator until that annotator's objective does not decrease.
        """
        theta, shared = self._theta, self._shared
        value, grad, _ = self._terms(counts, theta, shared)
        n_ann, p = theta.shape
        h = 1e-5
        hess = np.empty((n_ann, p, p))
        for m in range(p):
            shifted = theta.copy()
            shifted[:, m] += h
            hess[:, :, m] = (self._terms(counts, shifted, shared)[1] - grad) / h
        hess = 0.5 * (hess + np.swapaxes(hess, 1, 2))
        w, vecs = np.linalg.eigh(hess)
        w = np.minimum(w, -1e-3)  # ascent direction even where the objective is not concave
        step = -np.einsum("jab,jb,jcb,jc->ja", vecs, 1.0 / w, vecs, grad)
        step = np.clip(step, -2.0, 2.0)
        trial = theta + step
        new_value = self._terms(counts, trial, shared)[0]
        ok = np.isfinite(new_value) & (new_value >= value - 1e-9)
        todo = np.flatnonzero(~ok)
        scale = 1.0
        for _ in range(8):  # halve the step of the annotators whose objective went down
            if todo.size == 0:
                break
            scale *= 0.5
            candidate = theta[todo] + scale * step[todo]
            again = self._terms(counts[todo], candidate, shared)[0]
            better = np.isfinite(again) & (again >= value[todo] - 1e-9)
            trial[todo[better]] = candidate[better]
            ok[todo[better]] = True
            todo = todo[~better]
        self._theta = np.where(ok[:, None], trial, theta)

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
            value, _, grad = self._terms(counts, self._theta, shared)
            total = float(value.sum())
            if not np.isfinite(total):
                return np.inf, np.zeros_like(x)
            return -total, -grad[free]

        start = self._shared[free]
        if start.size == 0:
            return
        res = scipy.optimize.minimize(objective, start, jac=True, method="L-BFGS-B",
                                      options={"maxiter": 5})
        if np.isfinite(res.fun) and res.fun <= objective(start)[0]:
            self._shared = self._shared.copy()
            self._shared[free] = res.x

    def _m_step(self, idx: _Judgments, proba: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = idx.n_classes
        prior = proba[idx.judged].mean(axis=0) if idx.judged.any() else np.full(k, 1.0 / k)
        prior = np.clip(prior, _EPS, None)
        prior /= prior.sum()
        counts = self._expected_counts(idx, proba)
        for _ in range(self.m_step_iterations):
            # Generalised EM on the mixture (1 − ε_j) π_j + ε_j ξ_j: split each expected count
            # between the ordinal part and the spam part by responsibility, then update each.
            ordinal, spam = self._parts if self._parts is not None else self._mixture_parts()
            share = ordinal / (ordinal + spam)
            self._newton_annotators(counts * share)
            if self.learn_cutpoints or self.learn_gaps:
                self._fit_shared(counts * share)
            if self.spam_prior > 0:
                spam_counts = counts * (1.0 - share)
                a = self.spam_strength * self.spam_prior
                b = self.spam_strength * (1.0 - self.spam_prior)
                # MAP of ε_j under Beta(a + 1, b + 1); ξ_j ∝ spam counts + 1 (MACE's strategy).
                self._spam = (spam_counts.sum(axis=(1, 2)) + a) / (counts.sum(axis=(1, 2)) + a + b)
                strategy = spam_counts.sum(axis=1) + 1.0
                self._strategy = strategy / strategy.sum(axis=1, keepdims=True)
            self._parts = None  # parameters moved
        ordinal, spam = self._mixture_parts()
        self._parts = (ordinal, spam)  # the next M step starts from these
        confusion = np.clip(ordinal + spam, _EPS, None)
        confusion /= confusion.sum(axis=2, keepdims=True)
        return prior, confusion

    def _mixture_parts(self) -> tuple[np.ndarray, np.ndarray]:
        """(1 − ε_j) π_j[t, l] and ε_j ξ_j[l], each (n_annotators, K, K)."""
        ordinal = confusion_from(self._cuts(self._theta, self._shared), np.exp(self._theta[:, 1]))
        ordinal = np.clip(ordinal, _EPS, None) * (1.0 - self._spam)[:, None, None]
        spam = np.broadcast_to((self._spam[:, None] * self._strategy)[:, None, :], ordinal.shape)
        return ordinal, spam

    def _log_prior(self) -> float:
        theta = self._theta
        value = (-0.5 * np.sum(theta[:, 0] ** 2) / self.bias_prior_sd**2
                 - 0.5 * np.sum((theta[:, 1] - np.log(self.spread_prior)) ** 2))
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
            },
        )


def expected_grade_index(proba: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Per task the class index of the expected grade Σ_k P(k) · value_k rounded to the nearest
    value of the scale (halfway: the higher grade) — graded qrels from the expected grade."""
    values = np.asarray(classes, dtype=np.float64)
    mean = np.atleast_2d(proba) @ values
    distance = np.abs(values[None, :] - mean[:, None])
    return np.argmin(distance - 1e-9 * np.arange(values.shape[0])[None, :], axis=1)


def grade_columns(proba: np.ndarray, classes: np.ndarray) -> dict[str, np.ndarray]:
    """Per task: the expected grade Σ_k P(T_i = k) · value_k (on the scale's values)."""
    return {"expected_grade": proba @ np.asarray(classes, dtype=np.float64)}


