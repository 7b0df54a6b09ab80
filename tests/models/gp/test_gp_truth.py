"""The discrete truth layer (``models.gp.truth``, ``label_layer="discrete"``)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import log_ndtr, ndtr

from models.gp.truth import LayerJudgments, _objective, cavity, fit_layer


def _layer_data(n: int, c: float, s: float, seed: int) -> tuple[LayerJudgments, np.ndarray,
                                                                 np.ndarray]:
    """Judgments drawn from the layer itself: y ~ Bernoulli(π), f = c y + s e, five judgments
    per task, P(y_a = 1 | f) = Φ((f + shift) / scale)."""
    rng = np.random.default_rng(seed)
    prior = ndtr(rng.normal(0.0, 1.0, n))
    y = np.where(rng.random(n) < prior, 1.0, -1.0)
    f = c * y + s * rng.standard_normal(n)
    task = np.repeat(np.arange(n), 5)
    shift = rng.normal(0.0, 0.3, task.shape[0])
    scale = np.sqrt(1.0 + rng.uniform(0.5, 3.0, task.shape[0]))
    label = rng.random(task.shape[0]) < ndtr((f[task] + shift) / scale)
    return (LayerJudgments(task=task, sign=2.0 * label - 1.0, shift=shift, scale=scale,
                           n_tasks=n), prior, y)


def test_gradient_matches_finite_differences():
    d, prior, _ = _layer_data(200, 1.0, 0.5, 0)
    theta = np.array([0.8, 0.4])
    _, grad, _ = _objective(theta, d, prior, 8)
    for k in range(2):
        e = np.zeros(2)
        e[k] = 1e-6
        numeric = (_objective(theta + e, d, prior, 8)[0]
                   - _objective(theta - e, d, prior, 8)[0]) / 2e-6
        assert grad[k] == pytest.approx(numeric, rel=1e-5)


def test_posterior_of_the_label_is_bayes_rule_when_s_is_zero():
    """s = 0: P(y = +1) = π Π Φ(s_a (c + μ_a)/σ_a) / Σ_y (…), by hand."""
    d, prior, _ = _layer_data(50, 1.2, 0.0, 1)
    _, _, p = _objective(np.array([1.2, 0.0]), d, prior, 8)
    plus = np.bincount(d.task, log_ndtr(d.sign * (1.2 + d.shift) / d.scale), minlength=50)
    minus = np.bincount(d.task, log_ndtr(d.sign * (-1.2 + d.shift) / d.scale), minlength=50)
    odds = np.log(prior) + plus - np.log1p(-prior) - minus
    np.testing.assert_allclose(p, 1.0 / (1.0 + np.exp(-odds)), rtol=1e-10)


def test_recovers_the_planted_separation_and_is_calibrated():
    from models.evaluation.reliability import reliability

    d, prior, y = _layer_data(4000, 1.5, 0.6, 2)
    layer = fit_layer(d, prior)
    assert layer.separation == pytest.approx(1.5, rel=0.15)
    assert layer.deviation == pytest.approx(0.36, abs=0.2)
    # Calibrated against the planted labels: within the floor of 4,000 outcomes (~.015).
    assert reliability(layer.p_relevant, y > 0).ece < 0.03
    # A task without judgments keeps its class prior.
    empty = LayerJudgments(task=d.task, sign=d.sign, shift=d.shift, scale=d.scale,
                           n_tasks=d.n_tasks + 1)
    again = fit_layer(empty, np.append(prior, 0.3))
    assert again.p_relevant[-1] == pytest.approx(0.3)


def test_cavity_removes_the_site():
    """q = cavity × site in natural parameters; a zero site leaves q."""
    m, v = np.array([0.5, -1.0]), np.array([0.2, 0.5])
    nat1, nat2 = np.array([1.0, 0.0]), np.array([2.0, 0.0])
    mc, vc = cavity(m, v, nat1, nat2)
    np.testing.assert_allclose(1.0 / vc + nat2, 1.0 / v)
    np.testing.assert_allclose(mc / vc + nat1, m / v)
    assert mc[1] == m[1] and vc[1] == pytest.approx(v[1])


tf = pytest.importorskip("tensorflow")


def test_lk_discrete_layer_reads_the_label_posterior():
    """LK with ``label_layer="discrete"`` on Algorithm-10 data (the model the layer matches:
    the latent at ±1): P(relevant) is the layer's, its parameters are reported, the fit and
    the labels' accuracy are unchanged, and its log loss and ECE are lower than P(f > 0)'s."""
    from models.evaluation.reliability import reliability
    from models.gp.model import LK
    from models.gp.truth import readout
    from models.synthetic import generate

    syn = generate(1500, 60, noise_level=(4.0, 8.0), redundancy=5, random_state=7)
    data = syn.to_annotation_data(with_features=False)
    fast = {"n_iter": 10, "random_state": 0}
    gauss = LK(**fast).fit(data)
    layer = LK(label_layer="discrete", **fast).fit(data)
    np.testing.assert_allclose(layer.posterior_mean_, gauss.posterior_mean_)
    np.testing.assert_allclose(layer.proba_[:, 1], readout(layer.core_).p_relevant)
    info = layer.result(data).info["truth_layer"]
    assert info["separation"] > 0.05 and info["deviation"] >= 0.0
    truth = syn.truth == 1
    p_gauss, p_layer = gauss.proba_[:, 1], layer.proba_[:, 1]
    assert abs(np.mean((p_layer > 0.5) == truth) - np.mean((p_gauss > 0.5) == truth)) <= 0.005

    def log_loss(p: np.ndarray) -> float:
        return float(-np.mean(np.log(np.where(truth, p, 1.0 - p))))

    assert log_loss(p_layer) < log_loss(p_gauss)
    assert reliability(p_layer, truth).ece < reliability(p_gauss, truth).ece


def test_discrete_layer_refuses_a_judge_read_out_and_spam():
    from models.gp.model import LK, MAGP

    with pytest.raises(ValueError, match="readout_noise"):
        LK(label_layer="discrete", readout_noise=1.0)
    with pytest.raises(ValueError, match="asymmetric_noise"):
        MAGP(label_layer="discrete", asymmetric_noise=True)
