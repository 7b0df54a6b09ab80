"""Which already-judged task should get its next crowd label: the re-judging order.

Given the posterior ``proba`` (n_tasks, K) of a fitted aggregation:

- ``uncertainty``: the posterior entropy H_i = -Σ_t p_it log p_it (nats), highest first
  (uncertainty sampling, Lewis & Gale 1994);
- ``expected-change``: the next label y comes from an annotator of accuracy a under a symmetric
  noise model, P(y = l | T = t) = a [l = t] + (1 - a)/(K - 1) [l ≠ t]. With the updated posterior
  p'_i(· | y = l) ∝ p_i(·) P(y = l | ·), the score is the expected gain in the probability that
  the label is right, E_y [max_t p'_it] − max_t p_it = Σ_l max_t p_it P(y = l | t) − max_t p_it,
  which is positive only when some next label would change the most probable label (expected
  error reduction for one task, Roy & McCallum 2001); ties (e.g. every task whose label no single
  label can change) are broken by the probability that the label changes, E_y [argmax p' ≠
  argmax p], then by the expected total-variation change E_y [½ Σ_t |p'_it − p_it|];
- ``random``: a seeded permutation (the baseline).

Everything is (n_tasks, K) with K tiny: no tasks × annotators array.
"""

from __future__ import annotations

import numpy as np

STRATEGIES = ("uncertainty", "expected-change", "random")


def entropy(proba: np.ndarray) -> np.ndarray:
    """Posterior entropy per task, in nats (0 log 0 = 0)."""
    p = np.asarray(proba, dtype=np.float64)
    safe = np.where(p > 0, p, 1.0)
    return -np.sum(p * np.log(safe), axis=1)


def expected_change(proba: np.ndarray, accuracy: float | np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(expected gain in P(the label is right), P(the most probable label changes), expected
    total-variation change) per task after one more label from an annotator of ``accuracy``
    (scalar or one per task)."""
    p = np.asarray(proba, dtype=np.float64)
    n, k = p.shape
    acc = np.broadcast_to(np.clip(np.asarray(accuracy, dtype=np.float64), 0.0, 1.0), (n,))
    off = (1.0 - acc) / (k - 1)
    current = np.argmax(p, axis=1)
    gain = -p.max(axis=1)
    flip = np.zeros(n)
    tv = np.zeros(n)
    for label in range(k):
        # likelihood of "y = label" under each true class t: (n, K)
        like = np.repeat(off[:, None], k, axis=1)
        like[:, label] = acc
        joint = p * like
        p_y = joint.sum(axis=1)
        gain += joint.max(axis=1)  # P(y) max_t p'(t | y)
        updated = joint / np.where(p_y > 0, p_y, 1.0)[:, None]
        flip += p_y * (np.argmax(updated, axis=1) != current)
        tv += p_y * 0.5 * np.abs(updated - p).sum(axis=1)
    return np.maximum(gain, 0.0), flip, tv


def rejudge_order(proba: np.ndarray, *, strategy: str, eligible: np.ndarray | None = None,
                  accuracy: float | np.ndarray = 0.7, random_state: int | None = None
                  ) -> np.ndarray:
    """Task indices, the most useful next label first; only ``eligible`` tasks (bool mask).

    Ties keep the lower task index first (stable sorts), so the order is deterministic.
    """
    p = np.asarray(proba, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] < 2:
        raise ValueError("proba must be (n_tasks, n_classes) with at least two classes")
    n = p.shape[0]
    candidates = np.arange(n) if eligible is None else np.flatnonzero(eligible)
    if strategy == "uncertainty":
        score = entropy(p[candidates])
        order = np.argsort(-score, kind="stable")
    elif strategy == "expected-change":
        acc = np.broadcast_to(np.asarray(accuracy, dtype=np.float64), (n,))[candidates]
        gain, flip, tv = expected_change(p[candidates], acc)
        # lexsort: the last key is primary — gain, then flip, then TV; ties by task index.
        order = np.lexsort((np.arange(candidates.shape[0]), -np.round(tv, 12),
                            -np.round(flip, 12), -np.round(gain, 12)))
    elif strategy == "random":
        order = np.random.default_rng(random_state).permutation(candidates.shape[0])
    else:
        raise ValueError(f"unknown strategy {strategy!r}; valid: {', '.join(STRATEGIES)}")
    return candidates[order]
