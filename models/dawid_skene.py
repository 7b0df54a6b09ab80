"""Dawid–Skene (Dawid & Skene 1979): one confusion matrix per annotator, fitted by EM.

    P(T_i = t) = ρ_t,     P(y_a = l | T_i = t) = π_j[t, l]

EM maximises the marginal log-likelihood  Σ_i log Σ_t ρ_t Π_{a ∈ i} π_{j(a)}[t, y_a],  starting
from the majority-vote posterior (an M step first). ``smoothing`` is a pseudo-count added to every
confusion-matrix cell (0 gives the plain maximum-likelihood update; cells are clipped at 1e-10
as crowd-kit does). ``population_prior`` adds s pseudo-judgments to every confusion row, spread
like the population's errors by their distance from the truth: m[t, l] ∝ g(l − t), g(d) the mean
over the true grades of the crowd's pooled rows' shares at distance d (the pooled rows
1 + Σ_j N_j[t, ·], the crowd's expected counts, re-estimated at every M step): the MAP update of
a Dirichlet(s · m[t]) prior, so an annotator with a handful of judgments borrows the crowd's
confusion instead of a 0/1 maximum-likelihood row (the empirical-Bayes mean of a hierarchical
DS). The centre is by distance, not the pooled rows as they are, because pooled rows follow
whatever the latent classes became: with weak workers spread thin, EM empties a grade and merges
it into a neighbour, and a centre copied from those rows endorses the merge; "an error's chance
depends on how far it lands from the truth, alike for every grade" is the assumption that keeps
the grades apart (majority vote makes it too, with g flat). Its strength s is, by default
(``population_prior=None``), type-II maximum likelihood at every M step (``population_strength``:
the Dirichlet-multinomial evidence of the annotators' expected counts): large where workers look
alike given their few judgments (weak workers spread thin: one confusion matrix for the crowd),
small where their own counts differ (spammers among workers with tens of judgments), as the data
say rather than one number for every crowd (docs/models.md, "Weak workers spread thin"). With
``use_gold`` the posterior of a task with a gold label is held at that label. Stops after
``n_iter`` iterations or when the log-likelihood per judgment changes by less than ``tol``.

Confusion matrices are (n_annotators, K, K) — K is tiny; both EM passes are one compiled pass over
the judgments each (``Judgments``, ``models.onehot``), never a tasks × annotators array.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Annotated, Any, Literal, Self

import numpy as np
import scipy.sparse
from scipy.special import gammaln

from models.base import AggregationResult, Aggregator, ProgressCallback, no_progress
from models.data import UNKNOWN, AnnotationData
from models.dependence import (
    Dependence,
    residual_correlation,
    tempering,
    wanted,
)
from models.design_effect import design_correlation
from models.onehot import OneHot
from models.params import MAX_PRIOR, Iterations, Range, TemperFolds, Tolerance, validated
from models.tempering import check_folds, temper_readout
from models.warm import WarmStartUnavailable, cold_check_due, result_column, warm_record

_EPS = 1e-10
HALF_TOL = 1e-5  # the read-out's warm half fits stop by at least this tolerance (the default)
SPARSE_SMOOTHING = 0.01  # the default pseudo-count per confusion cell (smoothing=None)...
DENSE_SMOOTHING = 1.0  # ...and once the judgments are tempered (models.dependence)
# population_prior=None: the strengths the type-II ML search tries (pseudo-judgments per row),
# from half a judgment (every annotator on its own) to 10⁴ (one confusion matrix for the crowd)
STRENGTH_GRID = np.exp(np.linspace(np.log(0.5), np.log(1e4), 50))


class DawidSkene(Aggregator):
    """``confusion_[j, t, l]`` = P(annotator j says l | truth t); ``prior_``; ``proba_``."""

    method = "ds"

    @validated
    def __init__(
        self,
        n_iter: Iterations = 100,
        tol: Tolerance = 1e-5,
        smoothing: Annotated[float | None, Range(0.0, MAX_PRIOR)] = None,
        use_gold: bool = False,
        dependence: Dependence = "auto",
        population_prior: Annotated[float | None, Range(0.0, MAX_PRIOR)] = None,
        temper_folds: TemperFolds = 2,
    ) -> None:
        self.temper_folds = check_folds(temper_folds)
        self.population_prior = population_prior
        self.dependence = dependence
        self.n_iter = n_iter
        self.tol = tol
        self.smoothing = smoothing
        self.use_gold = use_gold

    def fit(self, data: AnnotationData, progress: ProgressCallback = no_progress, *,
            init: DawidSkene | None = None, check: bool | None = None,
            dependence_rho: float | None = None) -> Self:
        """EM from the majority-vote posterior; with ``init`` (a fitted DawidSkene, e.g. on an
        earlier snapshot of the same collection) a warm start: the first E step uses its prior
        and its annotators' confusion matrices (matched by annotator id; a new annotator gets
        their mean), so a refit after a small batch needs few iterations. A warm refit also
        runs the cold fit when ``models.warm.cold_check_due`` says so (``check``: True always,
        False never, None by the growth of the judgments since the last check) and keeps the
        higher ``objective_``; ``start_`` says which start was kept. ``dependence_rho``: the ρ̄
        to temper dense judgments by instead of estimating it (``models.dependence``; the
        read-out's half fits take the full fit's: the panel's dependence, not the half's)."""
        gold = data.gold if (self.use_gold and data.gold is not None) else None
        n = max(data.n_judgments, 1)
        idx = Judgments.from_data(data, gold)
        if wanted(self.dependence, data.task):
            idx = idx.adjusted_for_dependence(data, gold, SPARSE_SMOOTHING, dependence_rho)
        self.dependence_rho_ = idx.rho
        self.tempered_ = idx.temper is not None
        # None: Laplace's one pseudo-count per cell once the judgments are tempered (dense,
        # shared errors: a cell fitted near 0 would let one judge veto a grade on every task the
        # shared error strikes), else the light 0.01 of a sparse crowd
        self.smoothing_ = (float(self.smoothing) if self.smoothing is not None else
                           DENSE_SMOOTHING if idx.temper is not None else SPARSE_SMOOTHING)
        checked = init is None or cold_check_due(init, data.n_judgments, check)
        fit = None
        if init is not None:
            prior0, confusion0 = _aligned_parameters(init, data)
            _, post = e_step(idx, prior0, confusion0)
            fit = self._em(idx, post, n, progress, "warm")
        if checked:
            cold = self._em(idx, majority_start(idx, gold), n, progress, "cold")
            # NaN (no iteration) never wins; a tie keeps the warm fit.
            if fit is None or cold.objective > fit.objective or fit.objective != fit.objective:
                fit = cold
        assert fit is not None
        # the judgments' index (two sparse matrices, 0.23 GiB at 10 M judgments) is not needed
        # by the read-out, whose half fits build their own: freed before them
        del idx
        self.annotator_ids_ = data.annotator_ids
        self.prior_ = fit.prior
        self.confusion_ = fit.confusion
        self.proba_ = np.ascontiguousarray(fit.post.T)
        self.n_iter_ = fit.n_iter
        self.objective_history_ = fit.history
        self.loss_history_ = [-v / n for v in fit.history]
        self.log_likelihood_ = fit.history[-1] if fit.history else float("nan")
        self.objective_ = fit.objective
        self.start_ = fit.start
        self.cold_checked_ = init is not None and checked
        self.cold_checked_at_ = (data.n_judgments if checked
                                 else int(getattr(init, "cold_checked_at_", 0)))
        temper_readout(self, data, self.temper_folds)  # gold-free read-out (models.tempering)
        return self

    def _em(self, idx: Judgments, post: np.ndarray, n: int, progress: ProgressCallback,
            start: str) -> _Fit:
        """EM from the class-major posterior ``post``, then the final M step. The objective EM
        increases is the posterior of the parameters under the pseudo-counts, the marginal
        log-likelihood + Σ (smoothing + s · m) log π (a Dirichlet(1 + smoothing + s · m[t]) prior
        on every row, ``population_prior``)."""
        history: list[float] = []
        objective = float("nan")
        n_iter = 0
        self.population_strength_: float | None = None  # each run climbs from the middle
        for it in range(self.n_iter):
            prior, confusion = self._m_step(idx, post)
            ll, post = e_step(idx, prior, confusion)
            history.append(ll)
            n_iter = it + 1
            progress((it + 1) / self.n_iter, f"iteration {it + 1}, log-likelihood {ll:.2f}")
            if len(history) > 1 and abs(history[-1] - history[-2]) / n < self.tol:
                break
        if history:
            log_confusion = np.log(confusion)
            objective = (history[-1] + self.smoothing_ * float(log_confusion.sum())
                         + float(np.einsum("tl,jtl->", self._pseudo, log_confusion)))
        prior, confusion = self._m_step(idx, post)
        return _Fit(start, prior, confusion, post, n_iter, history, objective)

    def _m_step(self, idx: Judgments, post: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """ρ = mean posterior of judged tasks; π_j[t, l] ∝ Σ_{a by j, y_a = l} P(T_i = t).
        ``post`` is the class-major posterior (K, n_tasks)."""
        k = idx.n_classes
        if idx.all_judged:
            prior = post.mean(axis=1)
        elif idx.judged.any():
            prior = post[:, idx.judged].mean(axis=1)
        else:
            prior = np.full(k, 1.0 / k)
        prior = np.clip(prior, _EPS, None)
        prior /= prior.sum()
        confusion = idx.expected_counts(post).transpose(2, 0, 1)  # [j, t, l]
        # the crowd's population prior: its centre (by distance) and strength re-estimated at
        # every M step, the strength by type-II ML unless given
        centre = population_pseudo_counts(confusion.sum(axis=0), 1.0)
        if self.population_prior is None:
            strength = population_strength(confusion, centre, self.population_strength_)
        else:
            strength = float(self.population_prior)
        self.population_strength_ = strength
        self._pseudo = strength * centre
        confusion = confusion + self._pseudo
        confusion = np.clip(confusion + self.smoothing_, _EPS, None)
        confusion /= confusion.sum(axis=2, keepdims=True)
        return prior, confusion

    def warm_half_fit(self, half: DawidSkene, data: AnnotationData) -> DawidSkene:
        """The read-out's fit of ``half`` (an untempered clone) on a training half ``data``
        (``models.tempering``), warm from this fit's prior and confusion matrices: the same EM
        from nearer its end, stopped by the default tolerance when this fit has none (``tol``
        0: a fixed number of iterations, which from the warm start would only polish)."""
        half.tol = max(half.tol, HALF_TOL)
        # the judged tasks only (AnnotationData.judged_only): the held-out ones count nothing
        # a tempered fit's halves take its ρ̄ (the panel's dependence, not re-estimated per half)
        given = {"dependence_rho": self.dependence_rho_} if self.tempered_ else {}
        return half.fit(data.judged_only(), init=self, check=False, **given)

    @property
    def competence_(self) -> np.ndarray:
        """Expected accuracy under the class prior: Σ_t ρ_t π_j[t, t]."""
        return expected_accuracy(self.prior_, self.confusion_)

    def result(self, data: AnnotationData) -> AggregationResult:
        annotator_columns = confusion_columns(data, self.prior_, self.confusion_)
        return AggregationResult(
            method=self.method,
            classes=data.classes,
            proba=self.proba_,
            task_columns={"n_judgments": data.judgments_per_task().astype(np.float64)},
            annotator_columns=annotator_columns,
            objective_history=list(self.objective_history_),
            info={
                "log_likelihood": self.log_likelihood_,
                "n_iter": self.n_iter_,
                "prior": self.prior_.tolist(),
                # only when tempered (dense judges): other fits' info stays as it was
                **({"dependence_rho": self.dependence_rho_} if self.tempered_ else {}),
                **warm_record(self),
            },
        )

    @classmethod
    def from_result(cls, *, classes: Sequence[int], annotator_ids: Sequence[str],
                    annotator_columns: Mapping[str, Sequence[float | None]],
                    info: Mapping[str, Any], cold_checked_at: int) -> DawidSkene:
        """A fit's parameters rebuilt from its ``result()`` as stored (the class prior in
        ``info["prior"]``, π_j from the ``p_<label>_given_<truth>`` columns of the annotators
        ``annotator_ids``): an ``init`` for ``fit``, not a model to read results from.
        WarmStartUnavailable when a parameter is missing."""
        values = [int(v) for v in classes]
        prior = info.get("prior")
        if (not isinstance(prior, list | tuple) or len(prior) != len(values)
                or any(p is None for p in prior)):
            raise WarmStartUnavailable("the stored result has no class prior")
        n = len(annotator_ids)
        confusion = np.empty((n, len(values), len(values)))
        for t, vt in enumerate(values):
            for lab, vl in enumerate(values):
                confusion[:, t, lab] = result_column(annotator_columns,
                                                     f"p_{vl}_given_{vt}", n)
        init = cls()
        init.annotator_ids_ = np.asarray(list(annotator_ids))
        init.prior_ = np.asarray(prior, dtype=np.float64)
        init.confusion_ = confusion
        init.cold_checked_at_ = int(cold_checked_at)
        return init


Centre = Literal["distance", "absolute", "pooled"]


def population_pseudo_counts(pooled: np.ndarray, strength: float,
                             shape: Centre = "distance") -> np.ndarray:
    """(K, K) s · m[t, l]: ``strength`` pseudo-judgments per confusion row, spread like the
    crowd's pooled expected counts ``pooled`` [t, l] (+ 1 each, rows normalised): by the signed
    distance l − t alone (``"distance"``), m[t, l] ∝ g(l − t) with g(d) the mean share of the
    cells at distance d over the rows that have one (each grade's row counts alike); by the
    distance |l − t| alone (``"absolute"``: an error one grade up and one grade down alike, so
    every error cell of the centre is shared by at least two rows; IBCC's and EBCC's default,
    docs/models.md "IBCC and EBCC on weak crowds"); or the pooled rows as they are
    (``"pooled"``, the centre before 2026-11-27)."""
    k = pooled.shape[0]
    if strength <= 0:
        return np.zeros((k, k))
    rows = pooled + 1.0
    return strength * population_centre(rows / rows.sum(axis=1, keepdims=True), shape)


def population_centre(rows: np.ndarray, shape: Centre = "distance") -> np.ndarray:
    """(K, K) the centre m of ``population_pseudo_counts`` from confusion rows ``rows`` [t, l]
    that are already probabilities (each row sums to 1)."""
    k = rows.shape[0]
    if shape in ("distance", "absolute"):
        offset = np.arange(k)[None, :] - np.arange(k)[:, None]  # l − t
        offset = np.abs(offset) if shape == "absolute" else offset + (k - 1)
        g = (np.bincount(offset.ravel(), weights=rows.ravel(), minlength=2 * k - 1)
             / np.maximum(np.bincount(offset.ravel(), minlength=2 * k - 1), 1))
        rows = g[offset]
        rows = rows / rows.sum(axis=1, keepdims=True)
    return rows


def population_strength(counts: np.ndarray, centre: np.ndarray, start: float | None = None
                        ) -> float:
    """Type-II maximum likelihood of the strength s of the population prior Dirichlet(s · m[t])
    on every row, from the annotators' expected counts ``counts`` (J, R, K) [j, t, l] and the
    centre m (R, K) (R rows per annotator): the s on ``STRENGTH_GRID`` that maximises the
    Dirichlet-multinomial
    evidence Σ_j Σ_t [ln Γ(s) − ln Γ(s + n_jt) + Σ_l ln Γ(s m_tl + N_jtl) − ln Γ(s m_tl)]
    (the multinomial coefficients do not depend on s; log space: Γ overflows). A climb along
    the grid from ``start`` (EM's previous strength; the grid's middle when None) to the first
    grid point whose neighbours are both lower: EM moves s a step or two per iteration."""
    n = counts.sum(axis=2)
    used = n > 0
    n, counts = n[used], counts[used]  # (rows, ) and (rows, K): the rows with judgments
    rows_centre = np.broadcast_to(centre[None], (used.shape[0], *centre.shape))[used]
    per_row = used.sum(axis=0)  # how many annotators' rows use each centre row
    found: dict[int, float] = {}

    def evidence(g: int) -> float:
        if g not in found:
            sv = STRENGTH_GRID[g]
            # the terms of the prior alone (ln Γ(s), ln Γ(s m_tl)) once per centre row, times
            # the rows that use it, instead of on every annotator's row
            prior_terms = float(per_row.sum() * gammaln(sv)
                                - per_row @ gammaln(sv * centre).sum(axis=1))
            found[g] = (prior_terms - float(gammaln(sv + n).sum())
                        + float(gammaln(sv * rows_centre + counts).sum()))
        return found[g]

    last = STRENGTH_GRID.shape[0] - 1
    g = (last // 2 if start is None
         else int(np.argmin(np.abs(np.log(STRENGTH_GRID) - np.log(start)))))
    while True:
        up = g < last and evidence(g + 1) > evidence(g)
        down = g > 0 and evidence(g - 1) > evidence(g)
        if not (up or down):
            return float(STRENGTH_GRID[g])
        g = g + 1 if up and (not down or evidence(g + 1) >= evidence(g - 1)) else g - 1


def expected_accuracy(prior: np.ndarray, confusion: np.ndarray) -> np.ndarray:
    """(n_annotators,) Σ_t prior_t π_j[t, t]: an annotator's accuracy under the class prior."""
    return np.einsum("t,jtt->j", prior, confusion)


def confusion_columns(data: AnnotationData, prior: np.ndarray, confusion: np.ndarray
                      ) -> dict[str, np.ndarray]:
    """The annotator columns of a confusion-matrix model (DS, IBCC, EBCC): ``competence``,
    ``n_judgments`` and ``p_<label>_given_<truth>`` for every cell of π_j."""
    columns = {"competence": expected_accuracy(prior, confusion),
               "n_judgments": data.judgments_per_annotator().astype(np.float64)}
    values = data.classes.tolist()
    for t, vt in enumerate(values):
        for lab, vl in enumerate(values):
            columns[f"p_{vl}_given_{vt}"] = confusion[:, t, lab]
    return columns


@dataclass(frozen=True)
class _Fit:
    """One EM run: where it started ("cold" or "warm"), its final parameters and posterior, and
    its penalised log-likelihood at the last E step (``objective``)."""

    start: str
    prior: np.ndarray
    confusion: np.ndarray
    post: np.ndarray  # class-major (K, n_tasks)
    n_iter: int
    history: list[float]
    objective: float


@dataclass(frozen=True)
class Judgments:
    """The judgments as one-hot rows by task (``models.onehot``), built once per fit, and
    per-task masks.

    Row i has column l·J + j for each judgment "annotator j said l" on task i. Both passes of
    EM are one compiled pass over the judgments each, all K classes at once: the E step's
    log-likelihood of every task under every class, Σ_{a ∈ i} log π (log π laid out as (K·J, K),
    row l·J + j, column t), and the M step's expected counts N_j[t, l], the sums of P(T) over
    each column's tasks. ``by_task`` (n_tasks × K·J) and ``by_cell`` (its transpose, stored
    row-wise) are the same rows as scipy matrices, for callers that multiply by them."""

    rows: OneHot
    n_tasks: int
    n_annotators: int
    n_classes: int
    judged: np.ndarray  # (n_tasks,) bool
    all_judged: bool
    label_counts: np.ndarray  # (n_annotators, K): judgments per annotator and label
    impossible: np.ndarray | None  # (K, n_tasks) True where a gold label rules a class out
    # (n_tasks,) τ_i, the power of each task's likelihood (models.dependence); None: all 1
    temper: np.ndarray | None = None
    rho: float = 0.0  # the residual correlation τ was computed from

    @classmethod
    def from_data(cls, data: AnnotationData, gold: np.ndarray | None) -> Judgments:
        k, n_ann, n_tasks = data.n_classes, data.n_annotators, data.n_tasks
        impossible = None
        if gold is not None:
            known = np.flatnonzero(gold != UNKNOWN)
            impossible = np.zeros((k, n_tasks), dtype=bool)
            impossible[:, known] = True
            impossible[gold[known], known] = False
        cell = data.label.astype(np.int64) * n_ann + data.annotator
        rows = OneHot.build(data.task, cell, n_tasks, k * n_ann)
        judged = np.diff(rows.ptr) > 0
        label_counts = rows.judgments_per_column().reshape(k, n_ann).T
        return cls(rows, n_tasks, n_ann, k, judged, bool(judged.all()),
                   np.ascontiguousarray(label_counts), impossible)

    @property
    def by_task(self) -> scipy.sparse.csr_matrix:
        return self.rows.csr

    @cached_property
    def by_cell(self) -> scipy.sparse.csr_matrix:
        return self.rows.csr.T.tocsr()

    def log_likelihoods(self, log_confusion: np.ndarray) -> np.ndarray:
        """(K, n_tasks): Σ_{a ∈ i} log π_{j(a)}[t, y_a] for every class t and task i, from
        log π (n_annotators, K, K) indexed [j, t, l]; class-major, as the E step works."""
        out = np.empty((self.n_classes, self.n_tasks))
        # table[l·J + j, t] = log π_j[t, l]
        table = log_confusion.transpose(2, 0, 1).reshape(-1, self.n_classes)
        self.rows.row_sums(table, out.T)
        if self.temper is not None:
            out *= self.temper
        return out

    def expected_counts(self, posterior: np.ndarray) -> np.ndarray:
        """(K, K, n_annotators) indexed [t, l, j]: Σ_{a by j, y_a = l} P(T_i = t), from the
        class-major posterior (K, n_tasks)."""
        k = self.n_classes
        if self.temper is not None:  # a tempered task's judgments count τ_i each
            posterior = posterior * self.temper
        # sums[l·J + j, t], laid out [t, l, j] (C order: the M step's reductions over the
        # annotators add in the order of the layout)
        sums = self.rows.column_sums(posterior.T)
        return np.ascontiguousarray(sums.T).reshape(k, k, self.n_annotators)

    def adjusted_for_dependence(self, data: AnnotationData, gold: np.ndarray | None,
                                smoothing: float, rho: float | None = None) -> Judgments:
        """These judgments with τ_i (models.dependence) from ρ̄, the larger of the residual
        correlation under the majority-vote start and its DS M step and, on an ordinal scale,
        the task-effect model's (``design_correlation``), or ``rho`` when given; unchanged (no
        τ) when ρ̄ ≤ 0."""
        if rho is not None:
            return (replace(self, rho=rho) if rho <= 0 else
                    replace(self, temper=tempering(data.task, self.n_tasks, rho), rho=rho))
        post = majority_start(self, gold)
        confusion = self.expected_counts(post).transpose(2, 0, 1) + smoothing
        confusion /= np.maximum(confusion.sum(axis=2, keepdims=True), _EPS)
        rho = residual_correlation(data.task, data.annotator, data.label,
                                   np.ascontiguousarray(post.T), confusion)
        rho = design_correlation(data, rho, gold is not None)
        if rho <= 0:
            return replace(self, rho=rho)
        return replace(self, temper=tempering(data.task, self.n_tasks, rho), rho=rho)


def e_step(
    idx: Judgments, prior: np.ndarray, confusion: np.ndarray,
    log_prior_rows: np.ndarray | None = None,
) -> tuple[float, np.ndarray]:
    """The posterior over true labels, class-major (K, n_tasks), and the marginal
    log-likelihood; ``prior`` is (K,), or ``log_prior_rows`` the log prior of every task,
    class-major (K, n_tasks) (a prior per topic: its log is taken per topic, not per task).

    Log space: a task's likelihood is a product over its judgments, which underflows.
    Class-major so that the max and sum over the K classes run along contiguous rows (numpy's
    reductions over a short last axis are slow) and the M step's products read contiguous rows;
    the fit transposes once, at the end.
    """
    log_joint = idx.log_likelihoods(np.log(confusion))
    log_joint += np.log(prior)[:, None] if log_prior_rows is None else log_prior_rows
    if idx.impossible is not None:
        log_joint[idx.impossible] = -np.inf  # a gold label: only its own class is possible
    top = log_joint.max(axis=0)
    log_joint -= top
    proba = np.exp(log_joint, out=log_joint)
    total = proba.sum(axis=0)
    proba /= total
    log_marginal = np.log(total) + top
    if not idx.all_judged:
        log_marginal = log_marginal[idx.judged]
    return float(log_marginal.sum()), proba


def _aligned_parameters(init: DawidSkene, data: AnnotationData
                        ) -> tuple[np.ndarray, np.ndarray]:
    """``init``'s prior and confusion matrices re-indexed to ``data``'s annotators."""
    k = data.n_classes
    if init.confusion_.shape[1:] != (k, k):
        raise ValueError("init was fitted with a different number of classes")
    if (init.annotator_ids_ is data.annotator_ids
            or np.array_equal(init.annotator_ids_, data.annotator_ids)):
        # the same annotators in the same order (the read-out's half fits): no look-up
        return init.prior_.copy(), np.array(init.confusion_, dtype=np.float64)
    position = {a: j for j, a in enumerate(init.annotator_ids_.tolist())}
    found = np.array([position.get(a, -1) for a in data.annotator_ids.tolist()], dtype=np.int64)
    confusion = np.empty((data.n_annotators, k, k))
    known = found >= 0
    confusion[known] = init.confusion_[found[known]]
    confusion[~known] = init.confusion_.mean(axis=0)
    return init.prior_.copy(), confusion


def majority_start(idx: Judgments, gold: np.ndarray | None) -> np.ndarray:
    """EM's start: the majority-vote posterior (each task's label shares), gold held at its
    label, class-major (K, n_tasks) as the E step returns it."""
    k, n_ann = idx.n_classes, idx.n_annotators
    votes = np.empty((k, idx.n_tasks))
    block = np.zeros((k * n_ann, k))  # a task's votes for label l: its columns l·J + j
    for label in range(k):
        block[label * n_ann:(label + 1) * n_ann, label] = 1.0
    idx.rows.row_sums(block, votes.T)
    total = votes.sum(axis=0)
    post = np.divide(votes, total, out=np.full_like(votes, 1.0 / k), where=total > 0)
    if gold is not None:
        known = np.flatnonzero(gold != UNKNOWN)
        post[:, known] = 0.0
        post[gold[known], known] = 1.0
    return post
