"""Calibration without gold: a confusion-matrix model's posterior tempered by how well its fitted
annotators predict judgments on tasks they were not fitted to.

A fitted DS, MACE, IBCC, EBCC or ordinal-ds reads P(T_i | judgments) as if its annotator
parameters were exact. They are not: with a weak crowd (accuracy .6-.66) and the true labels
latent, an annotator's fitted accuracy from a few hundred judgments is off by about .08
(measured on the Algorithm-10 grid, noise 4-8), and plugging noisy weights into
Σ_a log π_j[t, y_a] spreads the posterior's log-odds wider than the truth's: the
errors-in-variables attenuation, seen as overconfidence (P ≈ .95 where .83 of the tasks are
relevant). How much to shrink is measured without gold by cross-fitting over tasks
(``n_folds`` folds, 2 by default):

1. fit the model on the judgments of every fold but one (a clone, itself not tempered; started
   from the full fit, ``WARM_HALVES``);
2. predict every judgment a of a held-out task i from the task's *other* judgments, with the
   clone's prior ρ and confusion matrices π (never fitted to task i):
   P_τ(y_a) = Σ_t q_τ(t) π_j(a)[t, y_a],
   q_τ(t) ∝ exp(τ (log ρ_t + Σ_{b ∈ i, b ≠ a} log π_j(b)[t, y_b]));
3. τ maximises Σ_a log P_τ(y_a) over all folds (bounded search on [0.02, 1.5]).

The held-out judgments cannot see the second over-count, judgments of one task that err
together (the held-out judgment's correlates are among the others and predict it well), so it
is measured separately: ρ̄, the correlation of two judgments' residuals on one task given the
true class, by moments from the fitted model (``models.dependence.agreement_correlation``: the
pairs' agreement beyond what the fitted annotators predict under independence), and Kish's
design effect 1 + (n_i − 1) ρ̄ of ``models.dependence``, applied to every task whatever n_i.

The read-out is then the power posterior q ∝ P(T_i | judgments)^τ_i of the fit on all the data,
τ_i = τ / (1 + (n_i − 1) max(ρ̄, 0)): every class's log-probability times τ_i, so the most
probable class, and with it every label and the accuracy, stays the model's. τ_i = 1 is the
model as fitted; τ_i < 1 counts the evidence τ_i times. A fit tempered inside EM for dense
judges (``dependence``) keeps its own τ_i and gets only τ.

Why held-out *tasks*, and not only held-out judgments: in-sample, an annotator's parameters
were fitted to agree with the very posterior that predicts its judgment, so leaving a judgment
out of a task but not out of the fit rewards the plug-in (τ ≈ .98 on the same data: docs/models.md
"Calibration without gold"). A fit that never saw the task has no such advantage: its parameter
errors cost predictive likelihood, and τ < 1 buys it back. Where the judgments are conditionally
independent and the parameters well determined, τ ≈ 1 and nothing changes (tests). What this
cannot see is a disagreement between the crowd and the gold's maker that the judgments do not
show (the non-identifiability argument of docs/models.md): on RF10 τ ≈ .7-.85 and ρ̄ ≈ .03-.06,
ECE .16-.20 → .13-.16; NIST's labels would need ρ̄ ≈ .15 and τ ≈ .3 (docs/models.md).

With gold calibration (``calibrate_folds``) the tempering is redundant: Platt's map already has
a free slope on logit P (τ's effect exactly), and the isotonic map ignores monotone transforms.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.optimize

from models.data import AnnotationData
from models.dependence import agreement_correlation, tempering

TAU_BOUNDS = (0.02, 1.5)
_TINY = 1e-300
_BLOCK = 16_384  # judgments per block of the τ search's passes (K · 128 KiB a scratch array)
# The half fits start from the full fit (the model's ``warm_half_fit``: its posterior or its
# parameters, one run instead of the cold fit's restarts); False: every half fit cold, as before
# 2026-11-27 (docs/models.md "The read-out's half fits, warm"; bench_calibration.py readout)
WARM_HALVES = True


def check_folds(n_folds: int) -> int:
    """``temper_folds`` as a constructor takes it: 0 (off) or at least 2 folds."""
    if n_folds == 1:
        raise ValueError("temper_folds is 0 (no tempering) or at least 2 (folds over tasks)")
    return n_folds


def clone(model: Any, **overrides: Any) -> Any:
    """An unfitted copy of ``model`` with the same constructor arguments (stored unchanged, the
    estimator convention), some replaced by ``overrides``."""
    names = [p for p in inspect.signature(type(model).__init__).parameters if p != "self"]
    params = {name: getattr(model, name) for name in names}
    return type(model)(**{**params, **overrides})


def judgment_table(prior: np.ndarray, confusion: np.ndarray, data: AnnotationData,
                   rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For the judgments ``rows`` (a mask): log π_j(a)[t, y_a], and log ρ_t + the sum of the
    same over the task's other judgments in ``rows``; both class-major (K, n), the layout the
    τ search reads (built so, not copied to it: at 10 M judgments each is 160 MB a class)."""
    # numba is imported when fitting, not with the module (the API imports models without a
    # compiler)
    from models import tempering_kernels

    log_prior = np.log(np.maximum(prior, _TINY))
    # log π once per cell, not per judgment: numpy's log of the same numbers, the same bits
    log_confusion = np.log(np.maximum(np.asarray(confusion, dtype=np.float64), _TINY))
    n = int(np.count_nonzero(rows))
    table = np.empty((confusion.shape[1], n))
    others = np.empty_like(table)
    tempering_kernels.judgment_table(
        np.ascontiguousarray(data.task), np.ascontiguousarray(data.annotator),
        np.ascontiguousarray(data.label), np.ascontiguousarray(rows, dtype=np.bool_),
        data.n_tasks, log_prior, np.ascontiguousarray(log_confusion), table, others)
    return table, others


def heldout_temperature(pieces: list[tuple[np.ndarray, np.ndarray]]) -> float:
    """τ maximising Σ_a log Σ_t q_τ(t) π[t, y_a] over ``pieces`` of (table, others)."""
    return heldout_fit(pieces)[0]


def heldout_fit(pieces: list[tuple[np.ndarray, np.ndarray]]) -> tuple[float, float]:
    """(τ, −Σ_a log Σ_t q_τ(t) π[t, y_a] at that τ) over ``pieces`` of (table, others),
    class-major as ``judgment_table`` gives them: the held-out judgments' negative log
    predictive, minimised over τ (``heldout_terms`` gives its terms at one τ)."""
    terms = _HeldOutTerms(pieces)
    found = scipy.optimize.minimize_scalar(terms.loss, bounds=TAU_BOUNDS, method="bounded")
    return float(found.x), float(found.fun)


def heldout_terms(pieces: list[tuple[np.ndarray, np.ndarray]], tau: float
                  ) -> list[np.ndarray]:
    """Each piece's per-judgment terms −log Σ_t q_τ(t) π[t, y_a] at ``tau``: what
    ``heldout_fit``'s loss adds up (the same passes, the same bits)."""
    terms = _HeldOutTerms(pieces)
    terms.loss(tau)
    return [-lse for lse in terms.per_judgment]


class _HeldOutTerms:
    """The held-out loss of ``heldout_fit`` as a function of τ, its scratch arrays allocated
    once for the search, which evaluates it a dozen times. A reduction over K rows of n numbers
    is a few elementwise passes where one over n rows of K is a call per row; the passes run
    over blocks of judgments small enough to stay in cache, into one (n,) array per piece
    (``per_judgment``, log Σ_t q_τ(t) π[t, y_a]) whose sum is taken whole."""

    def __init__(self, pieces: list[tuple[np.ndarray, np.ndarray]]) -> None:
        self.pieces = pieces
        self.width = max(min(_BLOCK, max(others.shape[1] for _, others in pieces)), 1)
        k = pieces[0][0].shape[0]
        self.log_q, self.work = np.empty((k, self.width)), np.empty((k, self.width))
        self.per_judgment = [np.empty(table.shape[1]) for table, _ in pieces]

    def loss(self, tau: float) -> float:
        total = 0.0
        width = self.width
        for (table, others), lse in zip(self.pieces, self.per_judgment, strict=True):
            for start in range(0, table.shape[1], width):
                end = min(start + width, table.shape[1])
                q, w = self.log_q[:, :end - start], self.work[:, :end - start]
                np.multiply(others[:, start:end], tau, out=q)  # log q_τ up to its normaliser
                q -= _logsumexp_rows(q, w)
                q += table[:, start:end]
                lse[start:end] = _logsumexp_rows(q, w)
            total -= float(lse.sum())
        return total


def _logsumexp_rows(x: np.ndarray, work: np.ndarray | None = None) -> np.ndarray:
    """log Σ_t exp x[t] for each column of a (K, n) array (``work``: a (K, n) scratch array)."""
    top = x.max(axis=0)
    work = np.subtract(x, top, out=work)
    np.exp(work, out=work)
    total = work.sum(axis=0)
    np.log(total, out=total)
    total += top
    return total


def crossfit_temperature(make: Callable[[], Any], data: AnnotationData, n_folds: int,
                         random_state: int | None = None,
                         warm: Callable[[Any, AnnotationData], Any] | None = None) -> float:
    """τ of the module doc: ``make()`` builds an untempered model with ``prior_`` and
    ``confusion_`` [j, t, l]; tasks split in ``n_folds`` folds at random (seeded). ``warm``
    (model, training data) fits the half from a start of its own (``WARM_HALVES``); None: the
    model's own cold fit."""
    return crossfit_score(make, data, n_folds, random_state, warm)[0]


def crossfit_score(make: Callable[[], Any], data: AnnotationData, n_folds: int,
                   random_state: int | None = None,
                   warm: Callable[[Any, AnnotationData], Any] | None = None
                   ) -> tuple[float, float]:
    """(τ, the held-out judgments' negative log predictive at τ) of ``crossfit_temperature``:
    how well the fits of ``make()`` on the other folds predict each held-out task's judgments
    (``heldout_fit`` over ``crossfit``'s folds); (1, 0) when no fold can be held out."""
    return crossfit(make, data, n_folds, random_state, warm).score


@dataclass(frozen=True)
class CrossFit:
    """The folds of a cross-fit over tasks: for each fold held out, the judgments it holds
    (``held``, a mask over the data's judgments) and what the fit on the other folds predicts
    of them (``pieces``: ``judgment_table``'s (table, others)); ``score`` their τ and loss."""

    data: AnnotationData
    held: list[np.ndarray]
    pieces: list[tuple[np.ndarray, np.ndarray]]
    score: tuple[float, float]

    def task_losses(self) -> np.ndarray:
        """(n_tasks,): each task's share of the loss at the τ found, the sum of its held-out
        judgments' terms (0 for a task without judgments): what
        ``within_one_standard_error`` compares."""
        out = np.zeros(self.data.n_tasks)
        if not self.pieces:
            return out
        for held, losses in zip(self.held, heldout_terms(self.pieces, self.score[0]),
                                strict=True):
            out += np.bincount(self.data.task[held], weights=losses, minlength=out.shape[0])
        return out


def crossfit(make: Callable[[], Any], data: AnnotationData, n_folds: int,
             random_state: int | None = None,
             warm: Callable[[Any, AnnotationData], Any] | None = None) -> CrossFit:
    """The cross-fit of ``crossfit_score``, its folds kept (``CrossFit``)."""
    fold = np.random.default_rng(0 if random_state is None else random_state).permutation(
        data.n_tasks) % n_folds
    pieces, held_rows = [], []
    fold_of = fold[data.task]  # each judgment's fold, gathered once
    for f in range(n_folds):
        held = fold_of == f
        if not held.any() or held.all():
            continue
        train = ~held
        half = replace(data, task=data.task[train], annotator=data.annotator[train],
                       label=data.label[train])
        fitted = make().fit(half) if warm is None else warm(make(), half)
        pieces.append(judgment_table(fitted.prior_, fitted.confusion_, data, held))
        held_rows.append(held)
    return CrossFit(data, held_rows, pieces, heldout_fit(pieces) if pieces else (1.0, 0.0))


def within_one_standard_error(losses: list[np.ndarray], judged: np.ndarray) -> int:
    """The index of the simplest candidate whose held-out loss is within one standard error of
    the best one's (the one-standard-error rule of cross-validation: Breiman, Friedman, Olshen
    & Stone 1984, §3.4.3; Hastie, Tibshirani & Friedman, *The Elements of Statistical
    Learning*, §7.10). ``losses``: each candidate's per-task held-out losses
    (``CrossFit.task_losses``), ordered from the most flexible to the simplest;
    ``judged``: the tasks with judgments, the units the folds hold out. The standard error is
    that of the paired difference to the best candidate, √n · sd over tasks of
    ℓ_i(c) − ℓ_i(best): the judgments of one task are predicted from each other, so the task,
    not the judgment, is the independent unit. A difference the folds cannot tell from noise
    does not buy the extra freedom."""
    totals = [float(loss.sum()) for loss in losses]
    best = int(np.argmin(totals))  # the first of equals
    n = int(np.count_nonzero(judged))
    chosen = best
    for c in range(best + 1, len(losses)):
        diff = (losses[c] - losses[best])[judged]
        se = float(np.sqrt(n) * np.std(diff)) if n > 1 else 0.0
        if totals[c] - totals[best] <= se:
            chosen = c
    return chosen


def power_posterior(proba: np.ndarray, tau: float | np.ndarray) -> np.ndarray:
    """q ∝ proba^τ per task (τ a number or one per task; log space: a posterior of many
    judgments sits near 0 and 1). The most probable class of every task is kept."""
    tau = np.asarray(tau, dtype=np.float64)
    if np.all(tau == 1.0):
        return proba
    log_q = (tau[:, None] if tau.ndim else tau) * np.log(np.maximum(proba, _TINY))
    log_q -= log_q.max(axis=1, keepdims=True)
    q = np.exp(log_q)
    q[proba <= 0] = 0.0  # a class ruled out (clamped gold) stays ruled out
    return q / q.sum(axis=1, keepdims=True)


def temper_readout(model: Any, data: AnnotationData, n_folds: int,
                   random_state: int | None = None, tau: float | None = None) -> None:
    """The read-out of the module doc: ``model`` (fitted on ``data``, with ``prior_``,
    ``confusion_`` and a ``temper_folds`` parameter, which its clones get as 0) gets
    ``temperature_`` (τ, cross-fitted), ``readout_rho_`` (ρ̄ by agreement moments,
    ``models.dependence.agreement_correlation``) and ``proba_`` to the power
    τ_i = τ / (1 + (n_i − 1) max(ρ̄, 0)). ``n_folds`` 0: nothing changes (τ = 1, ρ̄ = 0).
    ``tau``: τ already cross-fitted by the caller on these folds (MACE's choice of its
    competence prior, ``models.mace``), not searched again."""
    model.temperature_, model.readout_rho_ = 1.0, 0.0
    if n_folds < 2 or data.n_judgments == 0:
        return
    warm = getattr(model, "warm_half_fit", None) if WARM_HALVES else None
    if tau is None:
        tau = crossfit_temperature(lambda: clone(model, temper_folds=0), data, n_folds,
                                   random_state, warm)
    # a fit already tempered by its design effect (dense judges, models.dependence) has the
    # dependence in its posterior: only τ applies
    rho = (0.0 if getattr(model, "tempered_", False) else
           agreement_correlation(data.task, data.annotator, data.label, model.prior_,
                                 model.confusion_))
    model.temperature_, model.readout_rho_ = tau, rho
    model.proba_ = power_posterior(model.proba_, tau * tempering(data.task, data.n_tasks, rho))


def readout_info(model: Any) -> dict[str, float]:
    """What a fit's read-out applied, for its ``info``: ``readout_temperature`` (τ) and
    ``readout_rho`` (ρ̄), or nothing when it applied none (``temper_folds`` 0, other methods),
    so their info stays as it was."""
    tau, rho = getattr(model, "temperature_", 1.0), getattr(model, "readout_rho_", 0.0)
    if tau == 1.0 and rho <= 0.0:
        return {}
    return {"readout_temperature": float(tau), "readout_rho": float(rho)}


def plugin_posterior(proba: np.ndarray, task: np.ndarray, n_tasks: int,
                     info: dict[str, Any] | None) -> np.ndarray:
    """The fit's own posterior back from its read-out (``info`` as ``readout_info`` wrote it;
    ``task`` the fit's judgments' tasks): proba^(1/τ_i). What the parameter draws of an
    evaluation tilt (``models.evaluation.parameters``): their reference is the model's own
    fixed point, which the tempered posterior is not."""
    if not info or "readout_temperature" not in info:
        return proba
    tau = float(info["readout_temperature"]) * tempering(task, n_tasks,
                                                         float(info.get("readout_rho", 0.0)))
    return power_posterior(proba, 1.0 / tau)
