"""Judges who share errors: how much independent evidence a task's judgments carry.

Every confusion-matrix model here (DS, IBCC, ordinal-ds) multiplies a task's judgments as if the
annotators erred independently given the true label. Dense LLM judges do not: they share a model
family, a prompt, and the look of a passage, so 30 judgments of one task may carry the evidence of
two. Treated as independent, the shared part of their errors looks like signal: the posterior is
near 0/1 on every task, and the latent classes drift to explain the shared errors (a latent class
model fitted to locally dependent data splits or shifts its classes; docs/models.md, "Dense
correlated judges").

The composite-likelihood remedy (the magnitude adjustment of Varin, Reid & Firth 2011; Kish's
design effect for clustered samples): raise a task's likelihood to the power
τ_i = 1 / (1 + (n_i − 1) ρ̄), where n_i is the task's number of judgments and ρ̄ the average
correlation between two judgments' residuals on the same task. τ_i · n_i is then the task's
effective number of independent judgments. ρ̄ is estimated once per fit, from the majority-vote
start: the residual of judgment a is the one-hot label minus its expectation under the start's
posterior and confusion matrices, and

    ρ̄ = Σ_i Σ_{a ≠ b ∈ i} r_a · r_b  /  Σ_i (n_i − 1) Σ_{a ∈ i} r_a · r_a,

the pooled pairwise correlation. Those residuals miss the error the whole panel shares (the
start's posterior moves with it), so on an ordinal scale the fits take the larger of that and
ρ̄ by agreement moments under the ordinal model with one task effect (``design_correlation``,
``task_effect_correlation``; docs/models.md, "The design effect of a correlated panel"). A
task with one judgment, and any data whose residuals do not correlate (ρ̄ ≤ 0: independent
workers), keep τ_i = 1: the model unchanged. ``dependence`` (a parameter of ds, ibcc and
ordinal-ds) is ``"auto"`` by default: adjust dense data only (``wanted``).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

# adjust for dependent annotators always, never, or when the judgments are dense (``wanted``)
Dependence = Literal["auto", "adjust", "ignore"]
DENSE = 8.0  # "auto" adjusts when a judged task has at least this many judgments on average
# agreement_correlation's compiled pass from this many judgments: below, numpy's offsets cost less
# than loading the compiler in a fresh process (0.3 s of CPU; numpy: 0.02 s at RF10's 90,000,
# 0.6 s at 1,000,000; the compiled pass 0.03 s there). The same sums, to rounding.
COMPILED_FROM = 500_000
# the task-effect model's ρ̄ (``design_correlation``) on ordinal scales of at least this many
# grades (measured on 4; a binary or categorical panel keeps the start's ρ̄: with one cut point
# a shared shift and the grade are one threshold apart, not measured)
TASK_EFFECT_GRADES = 3


def wanted(dependence: Dependence, task: np.ndarray) -> bool:
    """Whether to adjust: always (``"adjust"``), never (``"ignore"``), or (``"auto"``) when the
    judgments are dense, ≥ ``DENSE`` per judged task on average: LLM judges who all grade every
    task, where shared errors pile up on each task and ρ̄ is estimated from many pairs per task.
    A sparse crowd (3-5 judgments per task, RF10) is left as it was: there τ_i would move little
    (1 / (1 + 4 · 0.05) = 0.83 at n_i = 5) and ρ̄ is estimated from few pairs per task; DENSE
    is twice a crowd's usual 3-5."""
    if dependence == "auto":
        # distinct tasks: a count, not np.unique's sort (3 calls a fit with its read-out)
        judged = int(np.count_nonzero(np.bincount(task))) if task.shape[0] else 0
        return judged > 0 and task.shape[0] / judged >= DENSE
    return dependence == "adjust"


def residual_correlation(task: np.ndarray, annotator: np.ndarray, label: np.ndarray,
                         posterior: np.ndarray, confusion: np.ndarray) -> float:
    """ρ̄ above: ``posterior`` (n_tasks, K), ``confusion`` (n_annotators, K, K) [j, t, l]."""
    n_tasks, k = posterior.shape
    # E[one-hot label | data] = Σ_t P(t) π_j[t, :], per judgment
    expected = np.einsum("at,atl->al", posterior[task], confusion[annotator])
    resid = -expected
    resid[np.arange(label.shape[0]), label] += 1.0
    sums = np.zeros((n_tasks, k))
    np.add.at(sums, task, resid)
    squares = np.bincount(task, weights=np.einsum("al,al->a", resid, resid), minlength=n_tasks)
    n = np.bincount(task, minlength=n_tasks)
    pairs = float(np.einsum("il,il->", sums, sums) - squares.sum())
    scale = float(((n - 1) * squares).sum())
    return pairs / scale if scale > 0 else 0.0


def tempering(task: np.ndarray, n_tasks: int, rho: float) -> np.ndarray:
    """τ_i = 1 / (1 + (n_i − 1) max(ρ̄, 0)) per task (1 for a task judged once or never)."""
    n = np.bincount(task, minlength=n_tasks).astype(np.float64)
    return 1.0 / (1.0 + np.maximum(n - 1.0, 0.0) * max(rho, 0.0))



def panel_judges(task: np.ndarray, annotator: np.ndarray, n_tasks: int, n_annotators: int
                 ) -> np.ndarray:
    """(n_annotators,) bool: the panel, the annotators who judged at least half the judged
    tasks (``models.judge_family_model``'s dense annotators)."""
    judged = max(int(np.count_nonzero(np.bincount(task, minlength=n_tasks))), 1)
    return np.bincount(annotator, minlength=n_annotators) >= 0.5 * judged


def panel_weights(task: np.ndarray, annotator: np.ndarray, n_tasks: int, n_annotators: int,
                  rho: float) -> np.ndarray:
    """Per judgment, the power of its likelihood when only a panel's judgments share errors:
    τ_i = 1 / (1 + (m_i − 1) max(ρ̄, 0)) for a judgment by a panel judge (an annotator who
    judged at least half the judged tasks, as ``models.judge_family_model`` calls a judge
    dense), m_i the panel's judgments of task i; 1 for any other annotator's (a sparse crowd's
    workers, a sample's experts: their errors are not the panel's). The design effect of the
    cluster that shares errors, not of the whole task: on a pure panel m_i = n_i and these are
    ``tempering``'s τ_i; on mixed data the crowd's 3 judgments keep their weight beside 12-30
    correlated ones (docs/models.md, "MACE on mixed data: the panel's design effect")."""
    in_panel = panel_judges(task, annotator, n_tasks, n_annotators)[annotator]
    m = np.bincount(task[in_panel], minlength=n_tasks).astype(np.float64)
    tau = 1.0 / (1.0 + np.maximum(m - 1.0, 0.0) * max(rho, 0.0))
    return np.where(in_panel, tau[task], 1.0)



def agreement_correlation(task: np.ndarray, annotator: np.ndarray, label: np.ndarray,
                          prior: np.ndarray, confusion: np.ndarray) -> float:
    """ρ̄ of a fitted model, by moments, without conditioning on any task's posterior.

    Given the true class t, judgment a's residual r_a = e_{y_a} − π_j(a)[t] has
    E[r_a · r_b | t] = P(y_a = y_b | t) − Σ_l π_j(a)[t, l] π_j(b)[t, l]: the agreement of two
    judgments of one task beyond what independence given t predicts, and E[r_a · r_a | t] =
    1 − Σ_l π_j(a)[t, l]². Averaged over t by the class ``prior`` ρ (not the task's posterior,
    which is fitted to the same judgments and absorbs their correlation: the residual
    correlation under the fitted posterior is negative, −.05 to −.15 on RF10 and the grid),
    over every pair a ≠ b of judgments on one task:

        ρ̄ = Σ_pairs [1(y_a = y_b) − Σ_t ρ_t Σ_l π_a[t, l] π_b[t, l]]
             / Σ_pairs Σ_t ρ_t √((1 − Σ_l π_a[t, l]²)(1 − Σ_l π_b[t, l]²)).

    About 0 for judgments independent given the class; > 0 when a task's judgments agree more
    than the fitted annotators explain. ``confusion`` (n_annotators, K, K) [j, t, l]. The pairs
    are visited task by task in one compiled pass (``models.dependence_kernels``) from
    ``COMPILED_FROM`` judgments on, by numpy below (``agreement_correlation_numpy``; the two
    agree to rounding): Σ_i n_i (n_i − 1) / 2 pairs, never a tasks × annotators array."""
    if task.size == 0:
        return 0.0
    if task.size < COMPILED_FROM:
        return agreement_correlation_numpy(task, annotator, label, prior, confusion)
    # numba is imported when fitting, not with the module (the API imports models without a
    # compiler)
    from models import dependence_kernels

    n_tasks = int(task.max()) + 1
    agree, predicted, scale = dependence_kernels.agreement_sums(
        np.ascontiguousarray(task, dtype=np.int64), np.ascontiguousarray(annotator,
                                                                         dtype=np.int64),
        np.ascontiguousarray(label, dtype=np.int64), n_tasks,
        np.ascontiguousarray(prior, dtype=np.float64),
        np.ascontiguousarray(confusion, dtype=np.float64))
    return (agree - predicted) / scale if scale > 0 else 0.0


def agreement_correlation_numpy(task: np.ndarray, annotator: np.ndarray, label: np.ndarray,
                                prior: np.ndarray, confusion: np.ndarray) -> float:
    """``agreement_correlation`` by numpy, the pairs visited by offset in the judgments sorted
    by task (offset k pairs a judgment with the one k places after it when both are on one
    task): the reference the compiled pass is tested against (to rounding)."""
    if task.size == 0:
        return 0.0
    order = np.argsort(task, kind="stable")
    sorted_task, ann, lab = task[order], annotator[order], label[order]
    agree = predicted = scale = 0.0
    for offset in range(1, int(np.bincount(task).max())):
        same = np.flatnonzero(sorted_task[offset:] == sorted_task[:-offset])
        ca, cb = confusion[ann[same]], confusion[ann[same + offset]]  # (pairs, K, K)
        agree += float((lab[same] == lab[same + offset]).sum())
        predicted += float(np.einsum("t,ptl,ptl->", prior, ca, cb))
        spread = (1.0 - np.einsum("ptl,ptl->pt", ca, ca)) * (1.0 - np.einsum("ptl,ptl->pt", cb, cb))
        scale += float((np.sqrt(np.maximum(spread, 0.0)) @ prior).sum())
    return (agree - predicted) / scale if scale > 0 else 0.0
