"""The ordinal label scale shared by the ordinal models (ordinal-ds, judge-family, the ordinal GP):
the check that labels are one, the stable log Φ differences of their cells, and the graded
columns of a fit's posterior. Imports nothing of models/ but numpy and scipy, so that the models
that read a scale need not import one another (judge-family used to import models.ordinal_ds,
which imports models.dawid_skene, which measures a panel's design effect with judge-family)."""

from __future__ import annotations

import numpy as np
from scipy.special import log_ndtr, ndtr


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
    used = (None if label is None
            else np.flatnonzero(np.bincount(label, minlength=values.shape[0])))  # no sort
    if used is not None and used.shape[0] < 2:
        present = values[used].tolist()
        raise OrdinalScaleError(
            f"an ordinal model needs judgments with at least two different grades; the only "
            f"grade judged is {present[0] if present else 'none'}", "single_grade")


def _log_ndtr(x: np.ndarray) -> np.ndarray:
    """log Φ(x) from Φ (half the cost of ``log_ndtr``), with ``log_ndtr`` where Φ(x) is below
    1e-200 (far in the lower tail)."""
    p = ndtr(x)
    with np.errstate(divide="ignore"):
        out = np.log(p)
    deep = ~(p > 1e-200)
    if deep.any():
        out[deep] = log_ndtr(x[deep])
    return out


def _log_diff_ndtr(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """log(Φ(u) − Φ(v)) for u > v, elementwise, stable in both tails.

    Computed on whichever side of 0 keeps both terms away from 1 (the upper tail by symmetry),
    so rows far from the truth keep their relative precision. Φ itself (``ndtr``, accurate
    relative to its value in the lower tail) is half the cost of log Φ; the cells where the
    difference underflows or loses its digits (below 1e-200, far in a tail) are recomputed from
    log Φ."""
    upper_side = v > 0  # both in the upper tail: Φ(u) − Φ(v) = Φ(−v) − Φ(−u)
    a = np.where(upper_side, -v, u)
    b = np.where(upper_side, -u, v)
    diff = ndtr(a) - ndtr(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(diff)
    deep = ~(diff > 1e-200)
    if deep.any():
        la, lb = log_ndtr(a[deep]), log_ndtr(b[deep])
        with np.errstate(divide="ignore"):
            out[deep] = la + np.log1p(-np.exp(np.minimum(lb - la, -1e-300)))
    return out


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
