"""The compiled passes of models.bcc_kernels equal the numpy expressions they replace, bit for bit
(np.array_equal, not allclose): EBCC's fits must not move."""

from __future__ import annotations

import numpy as np
import pytest

from models import bcc_kernels


def test_pairwise_sum_is_numpys() -> None:
    rng = np.random.default_rng(0)
    for width in [*range(1, 40), 127, 128, 129, 200, 333]:
        rows = rng.normal(size=(50, width)) * 10.0 ** rng.uniform(-4, 4, size=(50, width))
        ours = np.array([bcc_kernels._pairwise_sum(row, 0, width) for row in rows])
        assert np.array_equal(ours, rows.sum(axis=1)), width


@pytest.mark.parametrize("clamped", [False, True])
def test_log_joint_passes_equal_numpy(clamped: bool) -> None:
    rng = np.random.default_rng(1)
    n, k, m = 500, 3, 7
    scores = rng.normal(size=(n, k * m)) * 30.0
    weights = rng.normal(size=k * m)
    prior = rng.normal(size=(n, k))
    impossible = rng.random((n, k)) < 0.2 if clamped else np.zeros((0, k), dtype=bool)
    if clamped:
        impossible[np.arange(n), rng.integers(0, k, n)] = False  # one class stays possible
    expected = scores + weights + np.repeat(prior, m, axis=1)
    if clamped:
        expected[np.repeat(impossible, m, axis=1)] = -np.inf
    top = expected.max(axis=1, keepdims=True)
    p = np.exp(expected - top)
    total = p.sum(axis=1, keepdims=True)
    p = p / total

    got, got_top = scores.copy(), np.empty(n)
    bcc_kernels.shift_log_joint(got, weights, prior, m, impossible, got_top)
    np.exp(got, out=got)
    got_total, by_class = np.empty(n), np.empty((n, k))
    bcc_kernels.normalise_rows(got, m, got_total, by_class)
    assert np.array_equal(got_top, top[:, 0])
    assert np.array_equal(got_total, total[:, 0])
    assert np.array_equal(got, p)
    assert np.array_equal(by_class, p.reshape(n, k, m).sum(axis=2))
