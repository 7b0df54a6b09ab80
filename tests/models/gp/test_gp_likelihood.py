"""The Gaussian–Bernoulli likelihood: closed form, quadrature and shapes (thesis eqs. 4.15–4.16)."""

from __future__ import annotations

import math

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
gpflow = pytest.importorskip("gpflow")

from scipy import integrate  # noqa: E402
from scipy.stats import norm  # noqa: E402

from models.gp.likelihood import (  # noqa: E402
    GaussianBernoulli,
    judgment_expectations,
    judgment_log_prob,
)


def _likelihood(task_var, ann_var, task_bias=None, ann_bias=None) -> GaussianBernoulli:
    lik = GaussianBernoulli(len(task_var), len(ann_var), task_variance=np.asarray(task_var),
                            annotator_variance=np.asarray(ann_var),
                            learn_annotator_bias=True, learn_task_bias=True)
    if task_bias is not None:
        lik.task_bias.assign(np.asarray(task_bias, dtype=np.float64))
    if ann_bias is not None:
        lik.annotator_bias.assign(np.asarray(ann_bias, dtype=np.float64))
    return lik


@pytest.mark.parametrize(
    ("f", "mu_i", "s2_i", "mu_j", "s2_j"),
    [(0.3, 0.0, 0.5, 0.0, 1.2), (-1.1, 0.4, 2.0, -0.2, 0.3), (2.0, -0.5, 0.1, 0.7, 4.0)],
)
def test_closed_form_equals_double_integral(f, mu_i, s2_i, mu_j, s2_j):
    """Eq. 4.16d: ∫∫ N(a | f + μ_i, σ_i²) N(b | a + μ_j, σ_j²) Φ(b) da db = Φ((f+μ)/sqrt(1+σ²))."""
    si, sj = np.sqrt(s2_i), np.sqrt(s2_j)

    def pdf(x, mean, sd):  # norm.pdf in scalar math: dblquad calls it ~10⁵ times
        return math.exp(-0.5 * ((x - mean) / sd) ** 2) / (sd * math.sqrt(2 * math.pi))

    def integrand(b, a):
        return pdf(a, f + mu_i, si) * pdf(b, a + mu_j, sj) * 0.5 * math.erfc(-b / math.sqrt(2))

    lo_a, hi_a = f + mu_i - 10 * si, f + mu_i + 10 * si
    numeric, _ = integrate.dblquad(
        integrand, lo_a, hi_a, lambda a: a + mu_j - 10 * sj, lambda a: a + mu_j + 10 * sj,
        epsabs=1e-10,
    )
    lik = _likelihood([s2_i], [s2_j], [mu_i], [mu_j])
    Y = np.array([[1.0, 0.0, 0.0]])
    closed = lik.probability(np.array([[f]]), Y).numpy()[0, 0]
    assert closed == pytest.approx(numeric, abs=1e-7)
    assert np.exp(lik.log_prob(None, np.array([[f]]), Y).numpy()[0]) == pytest.approx(closed)
    y0 = np.exp(lik.log_prob(None, np.array([[f]]), np.array([[0.0, 0.0, 0.0]])).numpy()[0])
    assert y0 == pytest.approx(1.0 - numeric, abs=1e-7)


def test_variational_expectation_matches_monte_carlo():
    rng = np.random.default_rng(0)
    n = 6
    task = np.array([0, 0, 1, 1, 2, 2])
    ann = np.array([0, 1, 0, 1, 1, 0])
    labels = np.array([1, 0, 1, 1, 0, 1])
    lik = _likelihood([0.5, 1.5, 0.1], [0.3, 2.0], [0.1, -0.2, 0.0], [0.3, -0.4])
    fmu = rng.normal(size=(n, 1))
    fvar = rng.uniform(0.1, 2.0, size=(n, 1))
    Y = np.column_stack([labels, task, ann]).astype(np.float64)
    ve = lik.variational_expectations(None, fmu, fvar, Y).numpy()
    samples = fmu[:, 0] + np.sqrt(fvar[:, 0]) * rng.standard_normal((400_000, n))
    mu = np.array([0.1, -0.2, 0.0])[task] + np.array([0.3, -0.4])[ann]
    scale = np.sqrt(1 + np.array([0.5, 1.5, 0.1])[task] + np.array([0.3, 2.0])[ann])
    sign = 2 * labels - 1
    mc = norm.logcdf(sign * (samples + mu) / scale).mean(axis=0)
    np.testing.assert_allclose(ve, mc, atol=3e-3)
    # predict_log_density has the probit-Gaussian closed form: check it against MC too.
    pld = lik.predict_log_density(None, fmu, fvar, Y).numpy()
    np.testing.assert_allclose(pld, np.log(norm.cdf(sign * (samples + mu) / scale).mean(0)),
                               atol=3e-3)


def test_quadrature_derivatives_match_finite_differences():
    fmu = tf.constant([0.2, -1.0, 3.0], dtype=tf.float64)
    fvar = tf.constant([0.5, 1.0, 0.2], dtype=tf.float64)
    sign = tf.constant([1.0, -1.0, -1.0], dtype=tf.float64)
    offset = tf.constant([0.0, 0.3, -0.1], dtype=tf.float64)
    scale = tf.constant([1.2, 1.5, 1.0], dtype=tf.float64)
    nodes, weights = np.polynomial.hermite_e.hermegauss(30)
    weights = weights / np.sqrt(2 * np.pi)
    _, dm, dv = judgment_expectations(fmu, fvar, sign, offset, scale, nodes, weights)
    h = 1e-5

    def ve(m, v):
        return judgment_expectations(m, v, sign, offset, scale, nodes, weights)[0].numpy()

    np.testing.assert_allclose(dm.numpy(), (ve(fmu + h, fvar) - ve(fmu - h, fvar)) / (2 * h),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(dv.numpy(), (ve(fmu, fvar + h) - ve(fmu, fvar - h)) / (2 * h),
                               rtol=1e-5, atol=1e-7)
    assert np.all(dv.numpy() < 0)  # log-concave: the site precisions are positive


def test_shapes_are_checked():
    lik = _likelihood([1.0, 1.0], [1.0])
    with pytest.raises(Exception, match="(?i)shape"):
        lik.variational_expectations(None, np.zeros((3, 1)), np.ones((3, 1)), np.zeros((2, 3)))
    with pytest.raises(Exception, match="(?i)shape"):
        judgment_log_prob(tf.zeros(3, tf.float64), tf.ones(2, tf.float64),
                          tf.zeros(3, tf.float64), tf.ones(3, tf.float64))
    out = lik.variational_expectations(None, np.zeros((4, 1)), np.ones((4, 1)),
                                       np.array([[1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 0.0]]))
    assert out.shape == (4,)
