"""The GP's two read-outs scored on held-out judgments (docs/gp.md, "Choosing the read-out by
held-out judgments"; issue 34): a gold-free criterion between the Gaussian latent (P(f_i > 0)
under q(f_i)) and the discrete truth layer (``models.gp.truth``), tried and not adopted.

Each task's judgments are split into ``n_folds`` folds (a random order within the task, dealt
round-robin from a random start, so a task with n_i ≥ n_folds judgments has some in every
fold). For each fold k the model is refitted on the other folds' judgments, and the judgments
H_i of fold k of every task i are predicted from the refit, which never saw them:

    Gaussian:  log ∫ q(f_i) Π_{a ∈ H_i} P(y_a | f) df                         (Gauss–Hermite)
    layer:     log Σ_y q_τ(y) Z_i^{T+H}(y) / Z_i^T(y),   q_τ(y) ∝ (π_i(y) Z_i^T(y))^τ

with the refit's likelihood P(y_a | f) = Φ(s_a (f + μ_i + μ_j) / √(1 + σ_i² + σ_j²)), its
cavity prior π_i, the layer's (c, s) fitted on the training judgments (``fit_layer``), and
Z^T, Z^{T+H} the task's evidence (``log_evidence``) of its training judgments, and of those with
the held-out ones. τ = 1 is the layer's own predictive; τ by the held-out judgments tempers the
posterior of the class (``best_temperature``); the stacking weight w mixes the two predictive
distributions, w P_layer + (1 − w) P_gauss (Yao et al. 2018, ``stacking_weight``), and with it
the read-outs: P(relevant) = w P_layer + (1 − w) P(f > 0).

What it measured (docs/benchmarks.md, "Held-out judgments cannot choose LK's read-out"): on
RF10 the judgments prefer the layer (by 112 nats; τ 1.05, w .89), whose P(relevant) is the
further from NIST's labels; on the grid the choice is noise (w 0 to 1). Numpy, scipy and the
model's own fit; a refit per fold.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import log_ndtr, logsumexp

from models.data import AnnotationData
from models.gp.truth import LayerJudgments, fit_layer, layer_inputs, log_evidence

# Gauss–Hermite nodes of the Gaussian read-out's predictive integral over q(f_i).
NODES = 32
TAU_BOUNDS = (0.02, 1.5)


@dataclass(frozen=True)
class FoldScores:
    """One fold's held-out predictive pieces, per task (tasks with no held-out judgment are
    masked out by ``held``)."""

    held: np.ndarray  # (n,) bool: the task has judgments in this fold
    gaussian: np.ndarray  # (n,) log p(H_i | q(f_i) of the refit)
    layer_joint: np.ndarray  # (2, n) log π_i(y) + log Z_i^T(y), y = +1, −1
    layer_predictive: np.ndarray  # (2, n) log Z_i^{T+H}(y) − log Z_i^T(y)
    separation: float  # the refit layer's c
    deviation: float  # and s²


def judgment_folds(task: np.ndarray, n_folds: int, random_state: int = 0) -> np.ndarray:
    """(A,) fold of each judgment: within a task the judgments in a random order, dealt to the
    folds round-robin from a random fold (seeded)."""
    rng = np.random.default_rng(random_state)
    order = rng.permutation(task.shape[0])
    ordered = order[np.argsort(task[order], kind="stable")]  # by task, random within
    counts = np.bincount(task, minlength=int(task.max()) + 1 if task.size else 0)
    first = np.r_[0, np.cumsum(counts)[:-1]]
    rank = np.empty(task.shape[0], dtype=np.int64)
    rank[ordered] = np.arange(ordered.shape[0]) - first[task[ordered]]
    start = rng.integers(0, n_folds, size=counts.shape[0])
    return (rank + start[task]) % n_folds


def _held_judgments(model: Any, data: AnnotationData, rows: np.ndarray) -> LayerJudgments:
    """The judgments ``rows`` with the refit's task and annotator parameters."""
    task, annotator = data.task[rows], data.annotator[rows]
    return LayerJudgments(
        task=task, sign=np.where(data.label[rows] == 1, 1.0, -1.0),
        shift=model.task_bias_[task] + model.annotator_bias_[annotator],
        scale=np.sqrt(1.0 + model.task_variance_[task] + model.annotator_variance_[annotator]),
        n_tasks=data.n_tasks)


def _gaussian_predictive(held: LayerJudgments, mean: np.ndarray, var: np.ndarray
                         ) -> np.ndarray:
    """(n,) log ∫ N(f; m_i, v_i) Π_{a ∈ H_i} P(y_a | f) df (log space: a product of several
    probabilities per node)."""
    x, w = np.polynomial.hermite_e.hermegauss(NODES)
    log_w = np.log(w / np.sqrt(2.0 * np.pi))
    sd = np.sqrt(var)
    ell = np.empty((NODES, held.n_tasks))
    for k in range(NODES):
        u = held.sign * (mean[held.task] + sd[held.task] * x[k] + held.shift) / held.scale
        ell[k] = np.bincount(held.task, log_ndtr(u), minlength=held.n_tasks)
    return logsumexp(ell + log_w[:, None], axis=0)


def _concat(a: LayerJudgments, b: LayerJudgments) -> LayerJudgments:
    return LayerJudgments(task=np.r_[a.task, b.task], sign=np.r_[a.sign, b.sign],
                          shift=np.r_[a.shift, b.shift], scale=np.r_[a.scale, b.scale],
                          n_tasks=a.n_tasks)


def fold_scores(make: Callable[[], Any], data: AnnotationData, n_folds: int = 2,
                random_state: int = 0) -> list[FoldScores]:
    """The module doc's pieces, one per fold: ``make()`` builds an unfitted GP aggregator (LK,
    MAGP) whose read-out is the Gaussian one; it is refitted ``n_folds`` times, without gold."""
    if n_folds < 2:
        raise ValueError("n_folds must be at least 2")
    fold = judgment_folds(data.task, n_folds, random_state)
    out = []
    for k in range(n_folds):
        train = fold != k
        half = replace(data, task=data.task[train], annotator=data.annotator[train],
                       label=data.label[train], gold=None)
        model = make().fit(half)
        judgments, prior = layer_inputs(model.core_)
        layer = fit_layer(judgments, prior)
        assert layer.log_z is not None
        held = _held_judgments(model, data, ~train)
        both = log_evidence(_concat(judgments, held), layer.separation,
                            float(np.sqrt(layer.deviation)))
        joint = np.log(np.clip(np.stack([prior, 1.0 - prior]), 1e-300, 1.0)) + layer.log_z
        out.append(FoldScores(
            held=np.bincount(held.task, minlength=data.n_tasks) > 0,
            gaussian=_gaussian_predictive(held, model.posterior_mean_,
                                          model.posterior_variance_),
            layer_joint=joint, layer_predictive=both - layer.log_z,
            separation=layer.separation, deviation=layer.deviation))
    return out


def _layer_terms(piece: FoldScores, tau: float) -> np.ndarray:
    """(n,) log Σ_y q_τ(y) Z^{T+H}(y) / Z^T(y) of one fold."""
    joint = tau * piece.layer_joint
    q = joint - np.logaddexp(joint[0], joint[1])
    return np.logaddexp(q[0] + piece.layer_predictive[0], q[1] + piece.layer_predictive[1])


def gaussian_log_predictive(pieces: list[FoldScores]) -> float:
    """Σ over folds and tasks of the Gaussian read-out's held-out log predictive."""
    return float(sum(np.sum(p.gaussian[p.held]) for p in pieces))


def layer_log_predictive(pieces: list[FoldScores], tau: float = 1.0) -> float:
    """The same for the layer, its class posterior tempered by ``tau``."""
    return float(sum(np.sum(_layer_terms(p, tau)[p.held]) for p in pieces))


def mixed_log_predictive(pieces: list[FoldScores], weight: float) -> float:
    """The same for the mixture w P_layer + (1 − w) P_gauss of the two predictive distributions."""
    w = float(np.clip(weight, 0.0, 1.0))
    total = 0.0
    for p in pieces:
        terms = logsumexp(np.stack([_layer_terms(p, 1.0), p.gaussian]), axis=0,
                          b=np.array([[w], [1.0 - w]]))
        total += float(np.sum(terms[p.held]))
    return total


def best_temperature(pieces: list[FoldScores]) -> float:
    """τ maximising ``layer_log_predictive`` on ``TAU_BOUNDS``."""
    found = minimize_scalar(lambda t: -layer_log_predictive(pieces, t), bounds=TAU_BOUNDS,
                            method="bounded")
    return float(found.x)


def stacking_weight(pieces: list[FoldScores]) -> float:
    """w ∈ [0, 1] maximising ``mixed_log_predictive`` (the log of a mixture is concave in w:
    one maximum)."""
    found = minimize_scalar(lambda w: -mixed_log_predictive(pieces, w), bounds=(0.0, 1.0),
                            method="bounded", options={"xatol": 1e-4})
    return float(found.x)
