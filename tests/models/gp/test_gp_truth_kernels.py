"""The truth layer's compiled passes (``models.gp.truth_kernels``) against numpy's."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import log_ndtr

from models.gp import truth_kernels


def test_log_ndtr_equals_scipy_in_the_body_and_both_tails():
    x = np.concatenate([np.linspace(-80.0, 80.0, 16001), [-37.0, -20.0, -1.0, 0.0, 6.0]])
    ours = np.array([truth_kernels.log_ndtr(v) for v in x])
    ref = log_ndtr(x)
    assert np.all(np.isfinite(ours))
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=0.0)


def _mixture_numpy(eta: np.ndarray, log_z: np.ndarray) -> np.ndarray:
    return np.sum(np.logaddexp(log_ndtr(eta) + log_z[0], log_ndtr(-eta) + log_z[1]), axis=1)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_mixture_log_likelihood_equals_the_numpy_expression(monkeypatch, threads):
    rng = np.random.default_rng(0)
    eta = rng.normal(0.0, 2.0, (7, 3000))
    eta[0, :60] = np.linspace(-60.0, 60.0, 60)  # both tails, past erfc's underflow
    log_z = rng.normal(-3.0, 2.0, (2, 3000))
    log_z[1, :30] = -800.0  # one class's evidence underflows against the other's
    log_z[0, 30:60] = -800.0
    log_z[:, 60] = -2.0  # the two classes equally likely
    monkeypatch.setattr(truth_kernels, "THREADS", threads)
    ours = truth_kernels.mixture_log_likelihood(eta, log_z[0], log_z[1])
    np.testing.assert_allclose(ours, _mixture_numpy(eta, log_z), rtol=1e-12)


def test_node_sums_equal_the_bincounts():
    rng = np.random.default_rng(1)
    n, nodes = 300, 16
    task = rng.integers(0, n - 1, 1500)  # the last task has no judgments: zero sums
    du = rng.choice([-1.0, 1.0], 1500) / np.sqrt(1.0 + rng.uniform(0.5, 3.0, 1500))
    shift = rng.normal(0.0, 0.3, 1500)
    x, _ = np.polynomial.hermite_e.hermegauss(nodes)
    c, s = 1.3, 0.7
    ell, slope = truth_kernels.node_sums(task, du, shift, c, s, x, n, True)
    for ci, y in enumerate((1.0, -1.0)):
        for k in range(nodes):
            u = du * (y * c + s * x[k] + shift)
            np.testing.assert_allclose(ell[ci, k], np.bincount(task, log_ndtr(u), minlength=n),
                                       rtol=1e-12, atol=1e-12)
            mills = np.exp(-0.5 * u * u - 0.5 * np.log(2.0 * np.pi) - log_ndtr(u))
            np.testing.assert_allclose(slope[ci, k], np.bincount(task, mills * du, minlength=n),
                                       rtol=1e-12, atol=1e-12)
    assert np.all(ell[:, :, n - 1] == 0.0)
    no_slope = truth_kernels.node_sums(task, du, shift, c, s, x, n)
    np.testing.assert_array_equal(no_slope[0], ell)
    assert np.all(no_slope[1] == 0.0)


def test_mixture_terms_are_the_regression_objectives_terms_and_slopes():
    rng = np.random.default_rng(2)
    eta = rng.normal(0.0, 2.0, 4000)
    eta[:60] = np.linspace(-40.0, 40.0, 60)
    log_z = rng.normal(-3.0, 2.0, (2, 4000))
    log_z[1, :30] = -800.0
    log_z[:, 60] = -2.0
    value, slope = truth_kernels.mixture_terms(eta, log_z[0], log_z[1])
    total = np.logaddexp(log_ndtr(eta) + log_z[0], log_ndtr(-eta) + log_z[1])
    np.testing.assert_allclose(value, total, rtol=1e-12)
    body = slice(60, None)  # numpy's exp(log Z − total) overflows in the far tails
    phi = np.exp(-0.5 * eta[body] ** 2 - 0.5 * np.log(2.0 * np.pi))
    np.testing.assert_allclose(slope[body], phi * (np.exp(log_z[0, body] - total[body])
                                                   - np.exp(log_z[1, body] - total[body])),
                               rtol=1e-9, atol=1e-300)
    assert np.all(np.isfinite(slope))
    assert slope[60] == 0.0  # equal evidence: the prior does not matter
