"""Bayesian classifier combination: IBCC and EBCC, fitted by variational Bayes.

IBCC (Kim & Ghahramani 2012, *Bayesian Classifier Combination*, AISTATS):

    κ ~ Dir(ν₀),   T_i ~ Cat(κ),   π_j[t, ·] ~ Dir(α₀[t, ·]),   y_a | T_i = t ~ Cat(π_j[t, ·])

Dawid–Skene with Dirichlet priors on the class prior and on every row of every annotator's
confusion matrix. Mean-field VB alternates

    q(T_i = t) ∝ exp(E[ln κ_t] + Σ_{a ∈ i} E[ln π_{j(a)}[t, y_a]]),
    α_j[t, l] = α₀[t, l] + Σ_{a by j, y_a = l} q(T_i = t),   ν = ν₀ + Σ_i q(T_i),

with E[ln π[t, l]] = ψ(α[t, l]) − ψ(Σ_l α[t, l]). An annotator with three judgments keeps a
confusion matrix close to its prior instead of a maximum-likelihood 0/1 matrix.

The default confusion prior (``prior="auto"``, 2026-11-27, issues 34 and 38): on a sparse crowd
``"crowd-absolute"``, α₀ = s · m with m the crowd's pooled confusion by the distance |l − t| of
an error alone (``models.dawid_skene.population_pseudo_counts``) and s type-II ML
(``population_strength``), both re-estimated at every iteration; on dense judges (≥ 8 judgments
per judged task, ``models.dependence.wanted``) the fixed prior. The centre by |l − t| shares
every error cell between at least two rows, so no class's row can drift alone: the signed
centre below copies a binary class's own row, and on a skewed crowd the rare class's row drifts
to "never wrong" (VB's E[ln π] = ψ(α) − ψ(Σα) makes a cell with α ≪ 1 a veto) and the class
empties. Dense judges share errors and leniency: their rows look alike because they err
together, which the population prior's evidence would read as one confusion matrix for all
(measured: −.016 to −.08 on the dense-judge bench), and each has hundreds of judgments of its
own (docs/models.md, "IBCC and EBCC on weak crowds").

``prior="crowd"`` (an option, 2026-11-27): α₀ = s · m, DS's population prior
(``models.dawid_skene.population_pseudo_counts``, ``population_strength``): its centre m the
crowd's pooled confusion by the signed distance l − t of an error (an error's chance depends on
how far from the truth it lands and in which direction, not on the true grade), its strength s
type-II ML, both re-estimated at every iteration. The fixed symmetric prior (``"fixed"``, the
default before "auto": ``alpha_diagonal`` / ``alpha_off_diagonal``) lets a skewed class prior
outvote 2-1 majorities of weak workers with a handful of judgments, whose real errors are
neighbours;
``"crowd"`` holds majority vote there, but on a skewed binary crowd one class's row can drift
to "never wrong" and empty that class (docs/models.md, "Weak workers spread thin").

``prior="empirical"`` (empirical Bayes, type-II maximum likelihood): α₀ is shared by all annotators
and set, at every iteration, to the value that maximises the variational bound
Σ_j Σ_t [ln B(α₀[t] + N_j[t]) − ln B(α₀[t])] (N_j: the annotator's expected counts) — Minka's
fixed point for the Dirichlet-multinomial. The prior becomes the population's confusion matrix
with a learned strength, so sparse annotators borrow from the others (a hierarchical BCC).

EBCC (Li, Rubinstein & Cohn 2019, *Exploiting Worker Correlation for Label Aggregation in
Crowdsourcing*, ICML): every true class t has M subtypes; a task draws its class and subtype, and
each annotator has one confusion row per (class, subtype):

    τ ~ Dir(α),  π_t ~ Dir(a_π / M),  (T_i, G_i) ~ τ_t π_t[m],  y_a | (t, m) ~ Cat(v_j[t, m, ·]),
    v_j[t, m, ·] ~ Dir(β_t),  β_t[l] = a_v if l = t else b_v.

Tasks of one subtype (e.g. "relevant but looks off-topic") fool the same annotators, so the model
captures correlations between workers that DS and IBCC, which assume independence given T_i, miss.
An error every judge of a dense panel shares (a look of relevance, a common leniency) is not
such a kind of task: there EBCC, as IBCC, raises each task's likelihood and counts to its design
effect's power τ_i (``dependence="auto"``, ``models.dependence``; 2026-12-03, docs/models.md
"EBCC on dense panels: the design effect").
Defaults are the authors' (M = 10, a_π = 0.1, α = 1, a_v = 4, b_v = 1, random initialisation of
the subtypes). Random restarts keep the run with the highest ELBO. ``prior="crowd-absolute"``
(2026-11-27) replaces β_t by IBCC's default population prior s · m_t (centre by |l − t|,
strength type-II ML, both from the annotators' class-level counts, summed over the subtypes) on
every subtype row: it holds majority vote on weak sparse crowds and calibrates the Algorithm-10
grid, but costs RF10 graded .013 at M = 10 (the subtypes of one class, anchored only by the
prior's diagonal, take in the next grade's tasks when the crowd's diagonal is weak). The default
(``prior="auto"``; branch gridcal for binary labels, branch ebccweak for graded ones) takes it on
every sparse crowd with one subtype per class (``subtypes_used``): under the crowd's prior the
converged fits use one subtype per class anyway, and M = 10 only adds a plateau on which the
authors' stopping rule stops at majority vote's labels, or a path into a collapsed mode (a grade
emptied into its neighbour's subtypes). The authors' prior and M subtypes stay on dense judges,
as IBCC's fixed prior (docs/models.md, "EBCC's prior on binary crowds" and "EBCC on weak graded
crowds").

Long format throughout: the judgments form a sparse (n_tasks × n_annotators·K) one-hot matrix
(one non-zero per judgment, memory O(#judgments); ``models.onehot``), so every E step is one
compiled pass gathering from a small (n_annotators·K × K·M) table and every M step one pass
scattering into it. With
``use_gold`` a task with a gold label has its posterior held at that label.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated, Literal, Self

import numpy as np
from scipy.special import digamma

from models.base import AggregationResult, Aggregator, ProgressCallback, no_progress
from models.data import UNKNOWN, AnnotationData
from models.dawid_skene import (
    confusion_columns,
    expected_accuracy,
    population_pseudo_counts,
    population_strength,
)
from models.dependence import (
    Dependence,
    residual_correlation,
    tempering,
    wanted,
)
from models.design_effect import design_correlation
from models.dirichlet import (
    ClassPrior,
    Grouping,
    e_log_dirichlet,
    kl_dirichlet,
    kl_dirichlet_shared,
    polya_fixed_point,
)
from models.onehot import OneHot
from models.params import (
    Iterations1,
    Prior,
    Range,
    Restarts,
    Seed,
    TemperFolds,
    Tolerance,
    validated,
)
from models.tempering import check_folds, clone, temper_readout

# the confusion prior α₀: fixed, fitted by empirical Bayes, the crowd's population prior centred
# by the signed distance of an error ("crowd") or by its distance alone ("crowd-absolute"), or
# ("auto") "crowd-absolute" on a sparse crowd and "fixed" on dense judges
ConfusionPrior = Literal["auto", "fixed", "empirical", "crowd", "crowd-absolute"]
# EBCC's prior on its subtype rows: the authors' fixed one, the crowd's (it holds majority vote on
# weak crowds; with M = 10 subtypes it costs RF10 graded, docs/models.md "IBCC and EBCC on weak
# crowds"), or ("auto") the crowd's with one subtype per class on a sparse crowd and the authors'
# with M subtypes on dense judges
SubtypePrior = Literal["auto", "fixed", "crowd-absolute"]


def subtype_prior_used(prior: SubtypePrior, task: np.ndarray, n_classes: int) -> SubtypePrior:
    """EBCC's prior a fit uses: ``prior`` itself, or for ``"auto"`` the crowd's prior by |l − t|
    (``"crowd-absolute"``) on a sparse crowd, binary or graded (with one subtype per class,
    ``subtypes_used``), and the authors' fixed prior on dense judges (as IBCC's ``"auto"``);
    docs/models.md "EBCC on weak graded crowds". ``n_classes`` no longer decides (graded sparse
    crowds kept the fixed prior before 2026-11-27, branch ebccweak)."""
    if prior != "auto":
        return prior
    return "fixed" if wanted("auto", task) else "crowd-absolute"


def subtypes_used(prior: SubtypePrior, used: SubtypePrior, n_subtypes: int) -> int:
    """The number of subtypes per class a fit uses: one where ``"auto"`` chose the crowd's
    prior, ``n_subtypes`` otherwise. A subtype's class is identified only by the prior on its
    rows (relabelling a subtype of grade t as one of grade t ± 1 leaves the judgments'
    likelihood unchanged), and the crowd's prior, its strength fitted to the annotators'
    class-level rows, does not hold M subtypes apart: converged, its fits use one subtype per
    class, and M = 10 only changes the path there. On a crowd of alike workers (s large) the
    near-identical subtypes each hold 1/M of an annotator's counts under the full strength, so
    q(T) crawls and the authors' stopping rule stops on that plateau at majority vote's labels;
    on a diverse crowd (RF10 graded, s ≈ 2.5) the random split lets a grade empty into its
    neighbour's subtypes. docs/models.md "EBCC on weak graded crowds"."""
    return 1 if prior == "auto" and used == "crowd-absolute" else n_subtypes


def confusion_prior_used(prior: ConfusionPrior, task: np.ndarray) -> ConfusionPrior:
    """The prior a fit uses: ``prior`` itself, or for ``"auto"`` the crowd's population prior by
    |l − t| (``"crowd-absolute"``) unless the judgments are dense (``models.dependence.wanted``:
    ≥ 8 per judged task, judges who each grade every task), which keep the fixed prior."""
    if prior != "auto":
        return prior
    return "fixed" if wanted("auto", task) else "crowd-absolute"


def confusion_prior(prior: ConfusionPrior, counts: np.ndarray, alpha0: np.ndarray,
                    strength: float | None = None) -> tuple[np.ndarray, float | None]:
    """(α₀ (K, K), strength) of the confusion prior ``prior`` (as ``confusion_prior_used``
    resolved it) given the annotators' expected counts ``counts`` (J, t, l): ``alpha0`` itself
    for ``"fixed"``; Minka's fixed point from ``alpha0`` for ``"empirical"``; s · m for the
    crowd's priors (centre by l − t or |l − t|, ``population_pseudo_counts``; s type-II ML,
    ``population_strength``, climbing from ``strength``). The one definition of the prior: the
    fits' update at every iteration (IBCC's α₀, EBCC's "crowd-absolute" β) and the prior of
    their parameter draws (``models.evaluation.parameters.RowPrior``), which call it with the
    fitted posterior's counts."""
    if prior == "empirical":
        return np.stack([polya_fixed_point(counts[:, t, :], alpha0[t])
                         for t in range(alpha0.shape[0])]), strength
    if prior in ("crowd", "crowd-absolute"):
        shape = "absolute" if prior == "crowd-absolute" else "distance"
        centre = population_pseudo_counts(counts.sum(axis=0), 1.0, shape)
        strength = population_strength(counts, centre, strength)
        return strength * centre, strength
    return alpha0, strength


def confusion_prior_fixed(k: int, diagonal: float, off_diagonal: float) -> np.ndarray:
    """(K, K) the fixed prior: ``diagonal`` on the diagonal, ``off_diagonal`` elsewhere."""
    return np.full((k, k), off_diagonal) + np.eye(k) * (diagonal - off_diagonal)


@dataclass(frozen=True)
class _Design:
    """The judgments as one-hot rows by task (``models.onehot``): column annotator·K + label."""

    rows: OneHot  # (n_tasks, n_annotators * K)
    n_tasks: int
    n_annotators: int
    n_classes: int
    judged: np.ndarray  # (n_tasks,) bool
    all_judged: bool
    impossible: np.ndarray | None  # (n_tasks, K) True where a gold label rules a class out
    # (n_tasks,) the power τ_i of each task's likelihood and of its judgments' counts (dense
    # judges who share errors: ``_temper``); None: every task's 1
    tau: np.ndarray | None = None

    @classmethod
    def from_data(cls, data: AnnotationData, use_gold: bool) -> _Design:
        k = data.n_classes
        cols = data.annotator * k + data.label
        rows = OneHot.build(data.task, cols, data.n_tasks, data.n_annotators * k)
        impossible = None
        if use_gold and data.gold is not None and (data.gold != UNKNOWN).any():
            known = np.flatnonzero(data.gold != UNKNOWN)
            impossible = np.zeros((data.n_tasks, k), dtype=bool)
            impossible[known] = True
            impossible[known, data.gold[known]] = False
        judged = np.diff(rows.ptr) > 0
        return cls(rows, data.n_tasks, data.n_annotators, k, judged, bool(judged.all()),
                   impossible)

    def tempered(self, tau: np.ndarray | None) -> _Design:
        """The same judgments, each task's likelihood and counts to the power ``tau``."""
        return replace(self, tau=tau)

    def counts(self, weights: np.ndarray) -> np.ndarray:
        """Σ over judgments of τ_i weights[task, c] per (annotator, label, c): (J, K, C)."""
        if self.tau is not None:
            weights = weights * self.tau[:, None]
        # each task's judgments scatter into the small (J·K, C) table in task order, as scipy's
        # product by the transpose did (the same bits)
        return self.rows.column_sums(weights).reshape(self.n_annotators, self.n_classes, -1)

    def scores(self, table: np.ndarray) -> np.ndarray:
        """τ_i Σ_{a ∈ i} table[j(a), y_a, c] per task: (n_tasks, C); table is (J, K, C)."""
        out = self.rows.row_sums(table.reshape(self.n_annotators * self.n_classes, -1))
        if self.tau is not None:
            out *= self.tau[:, None]
        return out


def _normalise_log(log_joint: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row-normalised probabilities and the log normaliser of each row (log space).

    For K < 8 classes the row maximum and the row sum run row by row in compiled passes, where
    numpy's reductions over a short last axis make a call per row: the same bits, as numpy adds
    fewer than 8 elements of a row in sequence."""
    k = log_joint.shape[1]
    if k >= 8:
        top = log_joint.max(axis=1, keepdims=True)
        p = np.exp(log_joint - top)
        total = p.sum(axis=1, keepdims=True)
        return p / total, np.log(total[:, 0]) + top[:, 0]
    # the maximum, the shift, the sum and the division compiled (models.bcc_kernels), the exp
    # and log by numpy (its vectorised routines round differently from the C library's)
    from models import bcc_kernels

    n = log_joint.shape[0]
    top, total, p = np.empty(n), np.empty(n), np.empty((n, k))
    bcc_kernels.shift_rows(log_joint, top, p)
    np.exp(p, out=p)
    bcc_kernels.divide_rows(p, total)
    return p, np.log(total) + top


def _temper(data: AnnotationData, proba: np.ndarray, dependence: str, use_gold: bool = False,
            rho: float | None = None) -> tuple[np.ndarray | None, float]:
    """(τ per task or None, ρ̄): models.dependence's ``design_correlation`` from the start
    ``proba`` (n_tasks, K) and its DS M step (counts + 0.01, normalised), or ``rho`` when
    given."""
    if not wanted(dependence, data.task):
        return None, 0.0
    if rho is not None:
        return (None, rho) if rho <= 0 else (tempering(data.task, data.n_tasks, rho), rho)
    k = data.n_classes
    counts = np.zeros((data.n_annotators, k, k))
    np.add.at(counts, (data.annotator, slice(None), data.label), proba[data.task])
    confusion = counts + 0.01
    confusion /= confusion.sum(axis=2, keepdims=True)
    rho = design_correlation(data, residual_correlation(data.task, data.annotator, data.label,
                                                        proba, confusion), use_gold)
    if rho <= 0:
        return None, rho
    return tempering(data.task, data.n_tasks, rho), rho


def _initial_posterior(data: AnnotationData, design: _Design) -> np.ndarray:
    """Majority-vote shares (uniform for a task nobody judged), gold held if clamped."""
    counts = data.counts().astype(np.float64)
    totals = counts.sum(axis=1, keepdims=True)
    proba = np.divide(counts, totals, out=np.full_like(counts, 1.0 / data.n_classes),
                      where=totals > 0)
    if design.impossible is not None:
        clamped = design.impossible.any(axis=1)
        proba[clamped] = (~design.impossible[clamped]).astype(np.float64)
    return proba


class IBCC(Aggregator):
    """Independent Bayesian classifier combination by VB (Kim & Ghahramani 2012).

    ``confusion_[j, t, l]`` = posterior mean of π_j[t, l]; ``prior_`` = posterior mean of κ;
    ``alpha_prior_`` the (fixed or empirical-Bayes) α₀; ``proba_`` = q(T_i).
    """

    method = "ibcc"

    @validated
    def __init__(
        self,
        prior: ConfusionPrior = "auto",
        alpha_diagonal: Prior = 4.0,
        alpha_off_diagonal: Prior = 1.0,
        class_prior: Prior = 1.0,
        class_prior_by: Grouping = "collection",
        n_iter: Iterations1 = 200,
        tol: Tolerance = 1e-6,
        use_gold: bool = False,
        dependence: Dependence = "auto",
        temper_folds: TemperFolds = 2,
    ) -> None:
        self.temper_folds = check_folds(temper_folds)
        self.dependence = dependence
        self.prior = prior
        self.alpha_diagonal = alpha_diagonal
        self.alpha_off_diagonal = alpha_off_diagonal
        self.class_prior = class_prior
        self.class_prior_by = class_prior_by
        self.n_iter = n_iter
        self.tol = tol
        self.use_gold = use_gold

    def fit(self, data: AnnotationData, progress: ProgressCallback = no_progress, *,
            start: np.ndarray | None = None, dependence_rho: float | None = None) -> Self:
        """VB from the majority-vote shares, or from ``start`` (n_tasks, K), a q(T) to begin
        with (the read-out's half fits: ``warm_half_fit``). ``dependence_rho``: the ρ̄ to
        temper dense judgments by instead of estimating it (the half fits take the full
        fit's)."""
        k = data.n_classes
        design = _Design.from_data(data, self.use_gold)
        alpha0 = confusion_prior_fixed(k, self.alpha_diagonal, self.alpha_off_diagonal)
        prior = self.prior_used_ = confusion_prior_used(self.prior, data.task)
        kappa = ClassPrior.build(data, self.class_prior_by, self.class_prior, design.judged,
                                  prior == "empirical")
        proba = _initial_posterior(data, design)
        # judges who share errors: each task's likelihood to the power τ_i (models.dependence)
        temper = _temper(data, proba, self.dependence, design.impossible is not None,
                         dependence_rho)
        self.dependence_rho_ = temper[1]
        self.tempered_ = temper[0] is not None
        design = design.tempered(temper[0])
        if start is not None:  # after τ_i, which stays the majority-vote start's
            proba = start
        history: list[float] = []
        n = max(data.n_judgments, 1)
        self.n_iter_ = 0
        strength: float | None = None
        for it in range(self.n_iter):
            # q(π), q(κ) given q(T)
            counts = design.counts(proba).transpose(0, 2, 1)  # (J, t, l)
            alpha0, strength = confusion_prior(prior, counts, alpha0, strength)
            alpha = counts + alpha0[None]
            nu, e_log_kappa = kappa.update(proba)
            # q(T) given q(π), q(κ)
            e_log_pi = e_log_dirichlet(alpha)  # (J, t, l)
            log_joint = design.scores(e_log_pi.transpose(0, 2, 1))
            log_joint += e_log_kappa
            if design.impossible is not None:
                log_joint[design.impossible] = -np.inf
            proba, log_norm = _normalise_log(log_joint)
            elbo = (float(log_norm[design.judged].sum())
                    - kl_dirichlet_shared(alpha, alpha0, e_log_pi, axis=2) - kappa.kl(nu))
            history.append(elbo)
            self.n_iter_ = it + 1
            progress((it + 1) / self.n_iter, f"iteration {it + 1}, ELBO {elbo:.2f}")
            if len(history) > 1 and abs(history[-1] - history[-2]) / n < self.tol:
                break
        counts = design.counts(proba).transpose(0, 2, 1)
        alpha = counts + alpha0[None]
        self.alpha_ = alpha
        self.alpha_prior_ = alpha0
        self.confusion_ = alpha / alpha.sum(axis=2, keepdims=True)
        self.prior_ = kappa.mean(nu)
        self.class_prior_ = kappa.nu0
        self.proba_ = proba
        self.objective_history_ = history
        self.elbo_ = history[-1]
        temper_readout(self, data, self.temper_folds)  # gold-free read-out (models.tempering)
        return self

    def warm_half_fit(self, half: IBCC, data: AnnotationData) -> IBCC:
        """The read-out's fit of ``half`` (an untempered clone) on a training half ``data``
        (``models.tempering``), started from this fit's q(T): its first update of q(π) counts
        the training judgments only; the same VB and stopping rule as the cold fit. Only the
        judged tasks (``AnnotationData.judged_only``): the held-out ones add nothing to q(π)."""
        judged = data.judgments_per_task() > 0
        # a tempered fit's halves take its ρ̄ (the panel's dependence, not re-estimated per half)
        given = {"dependence_rho": self.dependence_rho_} if self.tempered_ else {}
        return half.fit(data.judged_only(), start=self.proba_[judged], **given)

    @property
    def competence_(self) -> np.ndarray:
        """Expected accuracy under the class prior: Σ_t κ_t E[π_j[t, t]]."""
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
                "elbo": self.elbo_,
                "n_iter": self.n_iter_,
                "prior": self.prior_.tolist(),
                "alpha_prior": self.alpha_prior_.tolist(),
                "confusion_prior": self.prior_used_,
                **({"dependence_rho": self.dependence_rho_} if self.tempered_ else {}),
            },
        )


class EBCC(Aggregator):
    """Enhanced BCC (Li, Rubinstein & Cohn 2019): IBCC with M latent subtypes per true class.

    ``proba_`` = q(T_i) (summed over subtypes); ``subtype_proba_`` (n_tasks, K, M) with M
    ``n_subtypes_used_`` (``subtypes_used``: 1 where ``"auto"`` chose the crowd's prior);
    ``confusion_[j, t, l]`` = the annotator's confusion averaged over subtypes with the fitted
    subtype weights; ``elbo_`` of the kept restart. On dense judges (``dependence``, as IBCC's)
    each task's likelihood and counts are tempered by its design effect τ_i
    (``dependence_rho_``, ``tempered_``): the subtypes model tasks that mislead some judges
    alike, not an error every judge shares.
    """

    method = "ebcc"

    @validated
    def __init__(
        self,
        n_subtypes: Annotated[int, Range(1, 50)] = 10,
        a_pi: Prior = 0.1,
        class_prior: Prior = 1.0,
        class_prior_by: Grouping = "collection",
        alpha_diagonal: Prior = 4.0,
        alpha_off_diagonal: Prior = 1.0,
        n_iter: Iterations1 = 500,
        tol: Tolerance = 1e-3,
        n_restarts: Restarts = 1,
        use_gold: bool = False,
        random_state: Seed = None,
        temper_folds: TemperFolds = 2,
        prior: SubtypePrior = "auto",
        dependence: Dependence = "auto",
    ) -> None:
        self.temper_folds = check_folds(temper_folds)
        self.prior = prior
        self.dependence = dependence
        self.n_subtypes = n_subtypes
        self.a_pi = a_pi
        self.class_prior = class_prior
        self.class_prior_by = class_prior_by
        self.alpha_diagonal = alpha_diagonal
        self.alpha_off_diagonal = alpha_off_diagonal
        self.n_iter = n_iter
        self.tol = tol
        self.n_restarts = n_restarts
        self.use_gold = use_gold
        self.random_state = random_state

    def fit(self, data: AnnotationData, progress: ProgressCallback = no_progress, *,
            start: np.ndarray | None = None, dependence_rho: float | None = None) -> Self:
        """VB from the authors' random start, best of ``n_restarts``; with ``start``
        (n_tasks, K, M), a q(T, G) to begin with (the read-out's half fits:
        ``warm_half_fit``), one run from it. ``dependence`` ("auto": dense judgments only,
        ``models.dependence.wanted``): each task's likelihood, and its judgments' counts in
        q(v), to the power τ_i = 1 / (1 + (n_i − 1) ρ̄), ρ̄ the design correlation of the
        majority-vote start (as IBCC's and DS's); ``dependence_rho``: that ρ̄ instead of
        estimating it (the half fits take the full fit's)."""
        design = _Design.from_data(data, self.use_gold)
        self.prior_used_ = subtype_prior_used(self.prior, data.task, data.n_classes)
        self.n_subtypes_used_ = subtypes_used(self.prior, self.prior_used_, self.n_subtypes)
        # judges who share errors: the subtypes model the part of a panel's shared errors that
        # is a kind of task within a class; a leniency or a look of relevance shared by every
        # judge is not one, and without τ_i it is counted once per judge (docs/models.md,
        # "EBCC on dense panels: the design effect")
        tau, self.dependence_rho_ = (
            _temper(data, _initial_posterior(data, design), self.dependence,
                    design.impossible is not None, dependence_rho)
            if wanted(self.dependence, data.task) else (None, 0.0))
        self.tempered_ = tau is not None
        design = design.tempered(tau)
        rng = np.random.default_rng(self.random_state)
        best = None
        elbos = []
        for r in range(self.n_restarts if start is None else 1):
            run = self._fit_once(data, design, rng, progress, r, start)
            elbos.append(run["elbo"])
            if best is None or run["elbo"] > best["elbo"]:
                best = run
        assert best is not None
        k, m = data.n_classes, self.n_subtypes_used_
        zg = best["zg"]
        self.subtype_proba_ = zg.reshape(data.n_tasks, k, m)
        self.proba_ = self.subtype_proba_.sum(axis=2)
        mu = best["mu"]  # (J, l, t*M + m) Dirichlet parameters of v_j[t, m, l]
        v = mu / mu.sum(axis=1, keepdims=True)
        weights = best["eta"] / best["eta"].sum(axis=1, keepdims=True)  # (K, M)
        v = v.reshape(data.n_annotators, k, k, m)  # (J, l, t, m)
        self.confusion_ = np.einsum("jltm,tm->jtl", v, weights)
        self.prior_ = ClassPrior.mean(best["nu"])
        self.subtype_weights_ = weights
        self.elbo_ = best["elbo"]
        self.restart_elbos_ = elbos
        self.objective_history_ = best["history"]
        self.n_iter_ = best["n_iter"]
        temper_readout(self, data, self.temper_folds, self.random_state)  # gold-free read-out
        return self

    def _fit_once(self, data: AnnotationData, design: _Design, rng: np.random.Generator,
                  progress: ProgressCallback, restart: int,
                  start: np.ndarray | None = None) -> dict:
        # numba is imported when fitting, not with the class: the API process validates EBCC's
        # parameters through models.registry without loading a compiler
        from models import bcc_kernels

        k, m = data.n_classes, self.n_subtypes_used_
        beta = confusion_prior_fixed(k, self.alpha_diagonal, self.alpha_off_diagonal)  # (t, l)
        # μ prior laid out as the (J, l, t·M + m) counts below: β[t, l] for every subtype.
        beta_l_tm = np.repeat(beta.T, m, axis=1)  # (l, t*M)
        eta0 = np.full((k, m), self.a_pi / m)
        kappa = ClassPrior.build(data, self.class_prior_by, self.class_prior, design.judged,
                                  False)
        if start is None:
            z = _initial_posterior(data, design)
            # The authors' start: MV shares split over subtypes by a Dirichlet(1) draw.
            split = rng.dirichlet(np.ones(m), size=(data.n_tasks, k))
            zg = (split * z[:, :, None]).reshape(data.n_tasks, k * m)
        else:
            zg = np.array(start, dtype=np.float64).reshape(data.n_tasks, k * m)
            z = zg.reshape(data.n_tasks, k, m).sum(axis=2)
        history: list[float] = []
        strength: float | None = None
        total = self.n_restarts * self.n_iter
        it = 0
        impossible = (np.zeros((0, k), dtype=np.bool_) if design.impossible is None
                      else design.impossible)
        for it in range(1, self.n_iter + 1):
            judged = zg if design.all_judged else zg[design.judged]
            eta = eta0 + judged.sum(axis=0).reshape(k, m)
            nu, e_log_kappa = kappa.update(z)
            counts = design.counts(zg)  # (J, l, t*M)
            if self.prior_used_ == "crowd-absolute":
                # the crowd's population prior on every subtype row, from the annotators'
                # class-level counts (summed over the subtypes): centre by |l − t|, strength
                # type-II ML, as IBCC's default (models.dawid_skene)
                by_class = counts.reshape(data.n_annotators, k, k, m).sum(axis=3)
                by_class = by_class.transpose(0, 2, 1)  # (J, t, l)
                crowd, strength = confusion_prior("crowd-absolute", by_class, beta, strength)
                beta_l_tm = np.repeat(crowd.T, m, axis=1)
            mu = counts + beta_l_tm[None]  # (J, l, t*M)
            e_log_v = digamma(mu) - digamma(mu.sum(axis=1, keepdims=True))
            # log q(T_i = t, G_i = m) up to its normaliser, in log space (a product over the
            # task's judgments); compiled passes (models.bcc_kernels), bit for bit numpy's
            # sum, row maximum, exp, row sum and per-class sum over the subtypes
            zg = design.scores(e_log_v)
            top = np.empty(data.n_tasks)
            bcc_kernels.shift_log_joint(zg, e_log_dirichlet(eta).ravel(), e_log_kappa, m,
                                        impossible, top)
            np.exp(zg, out=zg)
            row_sum = np.empty(data.n_tasks)
            previous = z
            z = np.empty((data.n_tasks, k))
            bcc_kernels.normalise_rows(zg, m, row_sum, z)
            log_norm = np.log(row_sum) + top
            elbo = (float(log_norm[design.judged].sum())
                    - kl_dirichlet_shared(mu, beta_l_tm, e_log_v, axis=1)
                    - kl_dirichlet(eta, eta0) - kappa.kl(nu))
            history.append(elbo)
            progress((restart * self.n_iter + it) / total,
                     f"restart {restart + 1}/{self.n_restarts}, iteration {it}, ELBO {elbo:.2f}")
            if np.max(np.abs(z - previous)) < self.tol:
                break
        return {"zg": zg, "mu": mu, "eta": eta, "nu": nu, "elbo": history[-1],
                "history": history, "n_iter": it}

    def warm_half_fit(self, half: EBCC, data: AnnotationData) -> EBCC:
        """The read-out's fit of ``half`` (an untempered clone) on a training half ``data``
        (``models.tempering``), started from this fit's q(T, G): its first update of q(v)
        counts the training judgments only; one run, the same VB and stopping rule. Only the
        judged tasks (``AnnotationData.judged_only``): its dense passes are (tasks × K·M). The
        half keeps this fit's prior and number of subtypes (``"auto"`` is not resolved again on
        the half)."""
        judged = data.judgments_per_task() > 0
        half = clone(half, prior=self.prior_used_, n_subtypes=self.n_subtypes_used_)
        # a tempered fit's halves take its ρ̄ (the panel's dependence, not re-estimated per half)
        given = {"dependence_rho": self.dependence_rho_} if self.tempered_ else {}
        return half.fit(data.judged_only(), start=self.subtype_proba_[judged], **given)

    @property
    def competence_(self) -> np.ndarray:
        return expected_accuracy(self.prior_, self.confusion_)

    def result(self, data: AnnotationData) -> AggregationResult:
        annotator_columns = confusion_columns(data, self.prior_, self.confusion_)
        subtype = np.argmax(self.subtype_proba_.max(axis=1), axis=1).astype(np.float64)
        return AggregationResult(
            method=self.method,
            classes=data.classes,
            proba=self.proba_,
            task_columns={"n_judgments": data.judgments_per_task().astype(np.float64),
                          "subtype": subtype},
            annotator_columns=annotator_columns,
            objective_history=list(self.objective_history_),
            info={
                "elbo": self.elbo_,
                "restart_elbos": list(self.restart_elbos_),
                "n_iter": self.n_iter_,
                "prior": self.prior_.tolist(),
                "subtype_weights": self.subtype_weights_.tolist(),
                "confusion_prior": self.prior_used_,
                "n_subtypes": self.n_subtypes_used_,
                **({"dependence_rho": self.dependence_rho_} if self.tempered_ else {}),
            },
        )
