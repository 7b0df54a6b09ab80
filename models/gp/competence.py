"""Annotator competence for the GP models: the chance that a judgment is the task's label.

Pure numpy (no TensorFlow): it reads a fitted model's posterior and annotator parameters.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr as np_ndtr


def grade_agreement(mean: np.ndarray, var: np.ndarray, thresholds: np.ndarray, *,
                    bias: np.ndarray, variance: np.ndarray, spam: np.ndarray,
                    strategy: np.ndarray, task_variance: float = 1.0,
                    readout_noise: float = 0.0, n_quadrature: int = 32,
                    n_grid: int = 1024) -> np.ndarray:
    """Each annotator's competence: the probability that its judgment is the task's grade,
    Σ_k P(T = k, y_j = k), averaged over the fitted tasks — ordinal-ds's Σ_t ρ_t π_j[t, t] for
    the ordered probit. The grade is the interval of the thresholds f falls in (the read-out);
    a judgment is y ≤ k with probability (1 − ε_j) Φ((b_k − f − μ_j) / c_j) + ε_j Σ_{l≤k} ξ_j[l],
    c_j = sqrt(1 + σ_i² + σ_j²) (σ_i² one value: ordinal-gp does not estimate it). Unlike
    1 / (1 + σ_j²), it falls with the bias |μ_j| (a lenient grader says 2 for a 1) and with the
    spam share. ``readout_noise`` r > 0: the grade is itself read out with probit noise of
    variance r, P(T = k | f) = Φ((b_k − f) / √r) − Φ((b_{k−1} − f) / √r), as the fit's
    read-out (the binary models' P(relevant) = Φ(m / sqrt(r + v)) is threshold 0).

    The collection's tasks enter as one distribution of f, the mixture of q(f_i) = N(m_i, v_i)
    (Gauss–Hermite nodes of each binned on a grid whose edges include the thresholds): the cost
    is n_tasks × nodes + n_annotators × grid, never tasks × annotators."""
    mean = np.asarray(mean, dtype=np.float64)
    sd = np.sqrt(np.maximum(np.asarray(var, dtype=np.float64), 0.0))
    b = np.asarray(thresholds, dtype=np.float64)
    x, w = np.polynomial.hermite_e.hermegauss(n_quadrature)  # for N(0, 1)
    points = (mean[:, None] + sd[:, None] * x[None, :]).ravel()
    weights = np.broadcast_to(w / w.sum(), (mean.shape[0], x.shape[0])).ravel() / mean.shape[0]
    low, high = min(points.min(), b.min()) - 1.0, max(points.max(), b.max()) + 1.0
    edges = np.unique(np.concatenate([np.linspace(low, high, n_grid + 1), b]))
    mass = np.bincount(np.clip(np.searchsorted(edges, points, side="right") - 1, 0,
                               edges.shape[0] - 2), weights=weights,
                       minlength=edges.shape[0] - 1)
    f = 0.5 * (edges[:-1] + edges[1:])  # no bin straddles a threshold
    padded = np.concatenate([[-np.inf], b, [np.inf]])
    if readout_noise > 0:  # (grid, K) P(T = k | f)
        truth = np.diff(np_ndtr((padded[None, :] - f[:, None]) / np.sqrt(readout_noise)), axis=1)
    else:  # f in (b_{k−1}, b_k] -> k
        truth = np.eye(b.shape[0] + 1)[np.searchsorted(b, f)]
    scale = np.sqrt(1.0 + task_variance + np.asarray(variance, dtype=np.float64))[:, None]
    shifted = f[None, :] + np.asarray(bias, dtype=np.float64)[:, None]
    eps = np.asarray(spam, dtype=np.float64)[:, None]
    strategy = np.asarray(strategy, dtype=np.float64)
    competence = np.zeros(shifted.shape[0])
    for k in range(b.shape[0] + 1):  # one (annotators, grid) slice per grade
        said = ((1.0 - eps) * (np_ndtr((padded[k + 1] - shifted) / scale)
                               - np_ndtr((padded[k] - shifted) / scale))
                + eps * strategy[:, k:k + 1])
        competence += said @ (mass * truth[:, k])
    return competence
