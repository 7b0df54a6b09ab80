"""Draws of the qrels that carry the annotators' parameter uncertainty.

Independent per-task draws from a fitted posterior q treat every task's label as a separate coin:
one annotator's errors, which a fit estimates once and applies to all its tasks, never move
together, and the spread of a run's mean over topics shrinks with the number of tasks as if the
annotators' reliabilities were known. Here each draw s first draws every annotator's confusion
matrix θ_j^s from its posterior, then tilts each task's stored posterior by how much more (or
less) its judgments are likely under θ^s than under the point estimate θ̂:

    p_i^s(k) ∝ q_i(k) · Π_{a ∈ i} θ^s_{j_a}[k, y_a] / θ̂_{j_a}[k, y_a],

so θ^s = θ̂ gives q back (whatever the fit — DS, MACE, a GP, a calibrated read-out), and one
draw of θ shifts every task an annotator judged the same way. θ_j's posterior is Dirichlet per
true class k: Dir(α + N_j[k, ·]) with N_j[k, l] = Σ_{a by j} q_{i_a}(k)·[y_a = l] the soft
confusion counts given q (Dawid–Skene's M step, counted with uncertainty), α = 1 (uniform), and
θ̂ its mean. Judgments stay in long format; the draws are vectorised per topic over the draws.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PRIOR = 1.0


@dataclass(frozen=True)
class AnnotatorDraws:
    """Per draw s the log ratio log θ^s − log θ̂ of every annotator's confusion matrix, and the
    judgments (long format, by task) that turn it into per-task tilts."""

    task: np.ndarray  # (n,) task index into the posterior's rows
    annotator: np.ndarray  # (n,) annotator index
    label: np.ndarray  # (n,) observed class index
    log_ratio: np.ndarray  # (S, A, K, L) float32

    @classmethod
    def draw(cls, proba: np.ndarray, task: np.ndarray, annotator: np.ndarray,
             label: np.ndarray, n_labels: int, samples: int,
             rng: np.random.Generator) -> AnnotatorDraws:
        n_annotators = int(annotator.max()) + 1 if len(annotator) else 0
        n_classes = proba.shape[1]
        counts = np.zeros((n_annotators, n_classes, n_labels))
        for k in range(n_classes):  # soft confusion counts N_j[k, l]
            flat = annotator * n_labels + label
            counts[:, k, :] = np.bincount(flat, weights=proba[task, k],
                                          minlength=n_annotators * n_labels).reshape(
                                              n_annotators, n_labels)
        alpha = counts + PRIOR
        mean = alpha / alpha.sum(axis=2, keepdims=True)
        gamma = rng.standard_gamma(np.broadcast_to(alpha, (samples, *alpha.shape)))
        theta = gamma / gamma.sum(axis=3, keepdims=True)
        log_ratio = (np.log(np.maximum(theta, 1e-300)) - np.log(mean)[None]).astype(np.float32)
        order = np.argsort(task, kind="stable")
        return cls(task=task[order], annotator=annotator[order], label=label[order],
                   log_ratio=log_ratio)

    @property
    def samples(self) -> int:
        return int(self.log_ratio.shape[0])

    def topic_proba(self, rows: np.ndarray, proba: np.ndarray) -> np.ndarray:
        """(S, len(rows), K): the tilted posterior of the tasks ``rows`` (their stored ``proba``
        (len(rows), K)) in every draw."""
        local = np.full(int(max(rows.max(initial=-1), self.task.max(initial=-1))) + 1, -1)
        local[rows] = np.arange(len(rows))
        sel = np.flatnonzero(local[self.task] >= 0)
        where = local[self.task[sel]]
        tilt = np.zeros((self.samples, len(rows), proba.shape[1]))
        if len(sel):
            by_label = self.log_ratio.transpose(0, 1, 3, 2)  # (S, A, L, K)
            ratio = by_label[:, self.annotator[sel], self.label[sel]]  # (S, n, K)
            for k in range(proba.shape[1]):
                tilt[:, :, k] = _sum_by(ratio[:, :, k], where, len(rows))
        logp = np.log(np.maximum(proba, 1e-300))[None] + tilt
        logp -= logp.max(axis=2, keepdims=True)
        p = np.exp(logp)
        return p / p.sum(axis=2, keepdims=True)


def _sum_by(values: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """(S, n) summed over judgments into (S, n_groups) by ``group`` (sorted)."""
    out = np.zeros((values.shape[0], n_groups))
    if not len(group):
        return out
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    out[:, group[starts]] = np.add.reduceat(values, starts, axis=1)
    return out


def draw_tilted(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(S, J) a class per draw and task from per-draw probabilities ``p`` (S, J, K)."""
    u = rng.random(p.shape[:2])
    cdf = np.cumsum(p, axis=2)[:, :, :-1]
    return (u[:, :, None] >= cdf).sum(axis=2).astype(np.int8)
