"""The discrete truth layer (``models.gp.truth``, ``label_layer="discrete"``)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import log_ndtr, ndtr

from models.gp.truth import (
    LayerJudgments,
    _objective,
    _regression_objective,
    cavity,
    fit_layer,
    fit_regression_prior,
    log_evidence,
    weight_draws,
    weight_moments,
    whitened_weight_draws,
)


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


def test_a_fit_stopped_at_s_zero_goes_on_where_the_likelihood_is_higher(monkeypatch):
    """s = 0 is a stationary point of the layer's objective (even in s): a fit started there
    stays there unless the probe beside it finds a higher likelihood."""
    import models.gp.truth as truth

    d, prior, _ = _layer_data(2000, 1.5, 0.8, 3)
    free = fit_layer(d, prior)
    from_zero = fit_layer(d, prior, start=(1.0, 0.0))
    assert free.deviation > 0.3
    assert from_zero.deviation == pytest.approx(free.deviation, rel=1e-3)
    assert from_zero.log_likelihood == pytest.approx(free.log_likelihood, abs=1e-3)
    monkeypatch.setattr(truth, "S_PROBE", 0.0)  # no probe: the fit stays at s = 0
    assert fit_layer(d, prior, start=(1.0, 0.0)).deviation < 1e-6


def test_a_large_layer_fits_c_and_s_on_a_subset_and_reads_every_task():
    """Past max_tasks tasks (c, s) come from a seeded random subset; every task's P(y = +1) and
    the log likelihood are then the whole data's at that (c, s): as the objective computes them,
    and (c, s) near the whole data's fit (1/√n of sampling error)."""
    d, prior, y = _layer_data(12_000, 1.5, 0.6, 5)
    whole = fit_layer(d, prior)
    part = fit_layer(d, prior, max_tasks=3000)
    assert part.separation != whole.separation  # fitted on the subset
    assert part.separation == pytest.approx(whole.separation, rel=0.06)
    assert np.sqrt(part.deviation) == pytest.approx(np.sqrt(whole.deviation), abs=0.15)
    value, _, p = _objective(np.array([part.separation, np.sqrt(part.deviation)]), d, prior, 16)
    np.testing.assert_allclose(part.p_relevant, p, rtol=1e-10)
    assert part.log_likelihood == pytest.approx(-value, rel=1e-12)
    assert part.p_relevant.shape == (12_000,)
    assert np.mean((part.p_relevant > 0.5) == (y > 0)) == pytest.approx(
        np.mean((whole.p_relevant > 0.5) == (y > 0)), abs=0.005)
    again = fit_layer(d, prior, max_tasks=3000)  # the same subset every time
    assert again.separation == part.separation


def test_cavity_removes_the_site():
    """q = cavity × site in natural parameters; a zero site leaves q."""
    m, v = np.array([0.5, -1.0]), np.array([0.2, 0.5])
    nat1, nat2 = np.array([1.0, 0.0]), np.array([2.0, 0.0])
    mc, vc = cavity(m, v, nat1, nat2)
    np.testing.assert_allclose(1.0 / vc + nat2, 1.0 / v)
    np.testing.assert_allclose(mc / vc + nat1, m / v)
    assert mc[1] == m[1] and vc[1] == pytest.approx(v[1])


def _three_judgments(rng: np.random.Generator, y: np.ndarray, c: float,
                     noise: tuple[float, float]) -> LayerJudgments:
    """Three judgments per task from the layer: f = c y + 0.2 ε, each judgment's scale
    √(1 + U(noise)); the draws in the order the tests made them inline."""
    n = y.shape[0]
    f = c * y + 0.2 * rng.standard_normal(n)
    task = np.repeat(np.arange(n), 3)
    scale = np.sqrt(1.0 + rng.uniform(*noise, task.shape[0]))
    label = rng.random(task.shape[0]) < ndtr(f[task] / scale)
    return LayerJudgments(task=task, sign=2.0 * label - 1.0, shift=np.zeros(task.shape[0]),
                          scale=scale, n_tasks=n)


def _regression_data(n: int, seed: int) -> tuple[LayerJudgments, np.ndarray, np.ndarray,
                                                np.ndarray]:
    """Judgments from the layer with a probit class prior on two features: π = Φ(2 x₁ − x₂)
    (a sharp prior, as a good run's normal score gives), c = 0.6, s = 0.2, three noisy judgments
    per task; a flat start prior (.5) stands for an under-confident cavity."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 2))
    prior = ndtr(2.0 * x[:, 0] - 1.0 * x[:, 1])
    y = np.where(rng.random(n) < prior, 1.0, -1.0)
    d = _three_judgments(rng, y, 0.6, (1.0, 3.0))
    return d, x, prior, y


def test_regression_gradient_matches_finite_differences():
    d, x, _, _ = _regression_data(300, 3)
    design = np.column_stack([x, np.ones(300)])
    log_z = log_evidence(d, 0.6, 0.2)
    wb = np.array([0.7, -0.3, 0.1])
    _, grad = _regression_objective(wb, design, log_z, 1.0)
    for k in range(3):
        e = np.zeros(3)
        e[k] = 1e-6
        numeric = (_regression_objective(wb + e, design, log_z, 1.0)[0]
                   - _regression_objective(wb - e, design, log_z, 1.0)[0]) / 2e-6
        assert grad[k] == pytest.approx(numeric, rel=1e-5, abs=1e-6)


def test_log_evidence_matches_the_layer_objective():
    """Σ_i log Σ_y π_i(y) Z_i(y) from ``log_evidence`` is the layer's own likelihood."""
    d, prior, _ = _layer_data(100, 1.0, 0.5, 4)
    log_z = log_evidence(d, 1.0, 0.5)
    total = np.logaddexp(np.log(prior) + log_z[0], np.log1p(-prior) + log_z[1]).sum()
    assert -_objective(np.array([1.0, 0.5]), d, prior, 16)[0] == pytest.approx(total)


def test_regression_prior_recovers_a_sharp_prior_and_is_calibrated():
    """From a flat start (the cavity under-confident), the regression finds the planted
    direction and sharpness, and the layer's P(relevant) is calibrated against the planted
    labels and beats the flat prior's log loss; the weights' Laplace covariance is reported."""
    from models.evaluation.reliability import reliability

    d, x, prior, y = _regression_data(3000, 5)
    start = fit_layer(d, np.full(3000, 0.5))
    layer, wb, sigma, loadings = fit_regression_prior(d, x, start)
    assert wb[0] == pytest.approx(2.0, rel=0.25) and wb[1] == pytest.approx(-1.0, rel=0.3)
    assert abs(wb[2]) < 0.2
    assert sigma.shape == (3, 3) and np.all(np.diag(sigma) > 0) and np.all(np.diag(sigma) < 0.05)
    design = np.column_stack([x, np.ones(3000)])
    np.testing.assert_allclose(loadings @ loadings.T, design @ sigma @ design.T, atol=1e-10)
    truth = y > 0
    assert reliability(layer.p_relevant, truth).ece < 0.03

    def log_loss(p: np.ndarray) -> float:
        return float(-np.mean(np.log(np.where(truth, p, 1.0 - p))))

    assert log_loss(layer.p_relevant) < log_loss(start.p_relevant) - 0.1
    # the prior each task got is the planted one, up to the weights' error
    assert np.corrcoef(layer.prior, prior)[0, 1] > 0.98


def test_weight_moments_are_the_posterior_mean_and_covariance():
    """``weight_moments`` (importance sampling around the Laplace approximation) gives the mean
    and covariance of p(w | judgments) ∝ N(w; 0, 1) Π_i Σ_y Φ(y x̃_i·w) Z_i(y), checked against
    a quadrature on a grid of (w, b), on a small near-separable collection where the posterior is
    skewed: its mean lies further from 0 than the mode, which the Laplace approximation keeps."""
    from scipy.optimize import minimize
    from scipy.special import logsumexp

    from models.gp.truth import _log_posterior, _regression_hessian

    d, x, _, _ = _regression_data(60, 11)
    x = x[:, :1]
    log_z = log_evidence(d, 1.0, 0.0)
    design = np.column_stack([x, np.ones(60)])
    mode = minimize(_regression_objective, np.zeros(2), args=(design, log_z, 1.0), jac=True,
                    method="L-BFGS-B").x
    laplace = np.linalg.inv(_regression_hessian(mode, design, log_z, 1.0))
    mean, cov = weight_moments(design, log_z, mode, laplace)
    w_axis, b_axis = np.linspace(-3.0, 9.0, 241), np.linspace(-4.0, 4.0, 161)
    grid = np.array(np.meshgrid(w_axis, b_axis, indexing="ij")).reshape(2, -1).T
    logp = _log_posterior(grid, design, log_z, 1.0, 1.0)
    p = np.exp(logp - logsumexp(logp))
    exact_mean = p @ grid
    exact_cov = (grid - exact_mean).T @ ((grid - exact_mean) * p[:, None])
    sd = np.sqrt(np.diag(exact_cov))
    np.testing.assert_allclose(mean, exact_mean, atol=0.05 * sd.max())
    np.testing.assert_allclose(np.sqrt(np.diag(cov)), sd, rtol=0.1)
    assert abs(exact_mean[0]) > abs(mode[0]) + 0.1 * sd[0]  # the skew the Laplace misses
    # the fit's option: moments=True reports them (and loadings of their covariance)
    start = fit_layer(d, np.full(60, 0.5))
    _, w_lap, _, _ = fit_regression_prior(d, x, start)
    _, w_mom, s_mom, l_mom = fit_regression_prior(d, x, start, moments=True)
    assert not np.allclose(w_mom, w_lap)
    np.testing.assert_allclose(l_mom @ l_mom.T, design @ s_mom @ design.T, atol=1e-10)


def test_weight_draws_sample_the_posterior():
    """``weight_draws`` (random-walk Metropolis chains) draws p(w | judgments) ∝ N(w; 0, 1)
    Π_i Σ_y Φ(y x̃_i·w) Z_i(y): their mean and sd match a quadrature on a grid of (w, b) on the
    skewed, near-separable collection above; whitened in the frame of the Laplace Gaussian they
    give back x̃·w exactly; a Student-t prior lets the weight be steeper."""
    from scipy.optimize import minimize
    from scipy.special import logsumexp

    from models.gp.truth import _log_posterior, _regression_hessian

    d, x, _, _ = _regression_data(60, 11)
    x = x[:, :1]
    log_z = log_evidence(d, 1.0, 0.0)
    design = np.column_stack([x, np.ones(60)])
    mode = minimize(_regression_objective, np.zeros(2), args=(design, log_z, 1.0), jac=True,
                    method="L-BFGS-B").x
    laplace = np.linalg.inv(_regression_hessian(mode, design, log_z, 1.0))
    draws, rate = weight_draws(design, log_z, mode, laplace, draws=2000)
    assert draws.shape == (2000, 2) and 0.15 < rate < 0.4
    w_axis, b_axis = np.linspace(-3.0, 9.0, 241), np.linspace(-4.0, 4.0, 161)
    grid = np.array(np.meshgrid(w_axis, b_axis, indexing="ij")).reshape(2, -1).T
    logp = _log_posterior(grid, design, log_z, 1.0, 1.0)
    p = np.exp(logp - logsumexp(logp))
    exact_mean = p @ grid
    sd = np.sqrt(p @ (grid - exact_mean) ** 2)
    np.testing.assert_allclose(draws.mean(axis=0), exact_mean, atol=0.15 * sd.max())
    np.testing.assert_allclose(draws.std(axis=0), sd, rtol=0.15)
    again, _ = weight_draws(design, log_z, mode, laplace, draws=2000)
    np.testing.assert_array_equal(draws, again)  # seeded
    heavy, _ = weight_draws(design, log_z, mode, laplace, prior_df=1.0, draws=2000)
    assert heavy[:, 0].mean() > draws[:, 0].mean()
    zeta, _ = whitened_weight_draws(design, log_z, mode, laplace)
    w, _ = weight_draws(design, log_z, mode, laplace)
    loadings = design @ np.linalg.cholesky(laplace)
    np.testing.assert_allclose(design @ mode + zeta @ loadings.T, w @ design.T, atol=1e-9)


def test_regression_loadings_draw_the_weights():
    """Φ((z + ρζ)/√(1 − |ρ|²)) is exactly Φ(η̂ + l ζ): one ζ is one draw of the weights; with
    more columns than the rank, the top directions are kept and the marginal prior Φ(z) stays."""
    from models.gp.joint import regression_loadings

    rng = np.random.default_rng(0)
    loadings = rng.normal(0.0, 0.3, (50, 4))
    eta = rng.normal(0.0, 1.5, 50)
    z = eta / np.sqrt(1.0 + np.sum(loadings**2, axis=1))
    rho, z_out, kept = regression_loadings(loadings, z)
    assert kept == 1.0 and rho.shape == (50, 4)
    zeta = rng.standard_normal(4)
    norm = np.sum(rho.astype(np.float64) ** 2, axis=1)
    np.testing.assert_allclose((z_out + rho @ zeta) / np.sqrt(1.0 - norm),
                               eta + loadings @ zeta, rtol=1e-5, atol=1e-5)
    rho2, z2, kept2 = regression_loadings(loadings, z, rank=2)
    assert rho2.shape == (50, 2) and 0.0 < kept2 < 1.0
    np.testing.assert_array_equal(z2, z)
    assert np.all(np.sum(rho2.astype(np.float64) ** 2, axis=1) <= norm + 1e-6)


tf = pytest.importorskip("tensorflow")


def test_magp_regression_layer_with_features():
    """MAGP with ``label_layer="discrete-regression"`` on Algorithm-10 data with its features:
    the fit is the Gaussian one, P(relevant) is the layer's with the regression prior (weights
    in ``info``), its joint draws are the weights' (regression loadings), it labels as many
    tasks right and its ECE is lower than the Gaussian read-out's."""
    from models.evaluation.reliability import reliability
    from models.gp.joint import layer_loadings
    from models.gp.model import MAGP
    from models.synthetic import generate

    # 800 tasks (still the sparse GP): accuracy 0.833 against 0.818, ECE 0.040 against 0.078
    # (1,500 tasks, 60 annotators before)
    syn = generate(800, 40, noise_level=(4.0, 8.0), redundancy=5, random_state=7)
    data = syn.to_annotation_data(with_features=True)
    fast = {"n_iter": 10, "random_state": 0}
    gauss = MAGP(label_layer="gaussian", **fast).fit(data)
    layer = MAGP(**fast).fit(data)  # the default
    np.testing.assert_allclose(layer.posterior_mean_, gauss.posterior_mean_)
    info = layer.result(data).info["truth_layer"]
    assert info["class_prior"] == "regression" and len(info["weights"]) == 2
    # Algorithm 10's class prior is a function of x₁ − x₂: opposite signs
    assert info["weights"][0] * info["weights"][1] < 0
    rho, z, kept = layer_loadings(layer)
    assert kept == 1.0 and rho.shape == (data.n_tasks, 3)
    np.testing.assert_allclose(z, layer.layer_z_)
    truth = syn.truth == 1
    p_gauss, p_layer = gauss.proba_[:, 1], layer.proba_[:, 1]
    assert np.mean((p_layer > 0.5) == truth) >= np.mean((p_gauss > 0.5) == truth) - 0.005
    assert reliability(p_layer, truth).ece < reliability(p_gauss, truth).ece


def test_regression_layer_without_features_is_the_gaussian_read_out():
    """Nothing to regress on: LK, and MAGP's default on data without features (its LK
    fallback, e.g. RF10), read P(relevant) out as before."""
    from models.gp.model import LK, MAGP
    from models.synthetic import generate

    # identities, at any size: 150 tasks
    syn = generate(150, 15, noise_level=(0.0, 2.0), redundancy=3, random_state=1)
    data = syn.to_annotation_data(with_features=False)
    fast = {"n_iter": 5, "random_state": 0}
    plain = LK(**fast).fit(data)
    reg = LK(label_layer="discrete-regression", **fast).fit(data)
    np.testing.assert_allclose(reg.proba_, plain.proba_)
    assert "truth_layer" not in reg.result(data).info and reg.layer_loadings_ is None
    magp = MAGP(**fast).fit(data)
    assert magp.label_layer == "discrete-regression" and magp.fallback_ == "lk"
    np.testing.assert_allclose(magp.proba_, MAGP(label_layer="gaussian", **fast).fit(data).proba_)
    assert LK().label_layer == "gaussian"




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
    with pytest.raises(ValueError, match="readout_noise"):
        MAGP(label_layer="discrete-regression", readout_noise=1.0)


def test_evidence_prior_sd_recovers_the_planted_scale():
    """Type-II maximum likelihood of the weights' prior sd (``evidence_prior_sd``): with twelve
    features whose weights are drawn from N(0, τ²), the Laplace marginal likelihood of the layer
    picks τ within 35 % of the planted 0.3 and 1.5 (the fixed N(0, 1) prior would be off by a
    factor of 3 and 1.5), and ``fit_regression_prior(prior_sd=None)`` records it on the layer."""
    from models.gp.truth import evidence_prior_sd

    for tau, seed in ((0.3, 21), (1.5, 22)):
        rng = np.random.default_rng(seed)
        n, k = 3000, 12
        x = rng.standard_normal((n, k))
        w = tau * rng.standard_normal(k)
        y = np.where(rng.random(n) < ndtr(x @ w), 1.0, -1.0)
        d = _three_judgments(rng, y, 1.0, (0.5, 1.5))
        # the sd the planted weights give, as an estimate from k draws can at best recover
        planted = float(np.sqrt(np.mean(w * w)))
        design = np.column_stack([x, np.ones(n)])
        estimate = evidence_prior_sd(design, log_evidence(d, 1.0, 0.2), np.zeros(k + 1))
        assert estimate == pytest.approx(planted, rel=0.35)
        start = fit_layer(d, np.full(n, 0.5))
        layer, _, _, _ = fit_regression_prior(d, x, start, prior_sd=None)
        assert layer.prior_sd == pytest.approx(planted, rel=0.35)
        fixed, _, _, _ = fit_regression_prior(d, x, start, rounds=1)
        assert fixed.prior_sd == 1.0


def test_evidence_prior_sd_per_weight_frees_the_one_steep_weight():
    """One steep weight among small ones (the best run among weak ones): the shared τ averages
    them (about 1: it would hold the steep weight back), one τ per weight (``per_weight``,
    automatic relevance determination) gives the steep one about its own size and shrinks the
    others to the search's lower bound."""
    from models.gp.truth import PRIOR_SD_BOUNDS, evidence_prior_sd

    rng = np.random.default_rng(23)
    n, k = 3000, 6
    x = rng.standard_normal((n, k))
    y = np.where(rng.random(n) < ndtr(2.5 * x[:, 0]), 1.0, -1.0)
    d = _three_judgments(rng, y, 1.0, (0.5, 1.5))
    design, log_z = np.column_stack([x, np.ones(n)]), log_evidence(d, 1.0, 0.2)
    shared = evidence_prior_sd(design, log_z, np.zeros(k + 1))
    each = evidence_prior_sd(design, log_z, np.zeros(k + 1), per_weight=True)
    assert shared < 1.3
    assert each.shape == (k,) and 1.8 < each[0] < 3.5
    assert np.all(each[1:] < 0.2) and np.all(each >= PRIOR_SD_BOUNDS[0])


def test_hierarchical_prior_is_the_scale_integrated_out():
    """``log_hierarchical_prior``: w | τ ~ N(0, τ²), τ ~ half-normal(s) integrated out is
    K₀(|w| / s) / (π s), checked against a quadrature over τ (up to the constant the sampler
    drops, log π s); its variance is s², the fixed prior's; its tails are heavier than the
    normal's (a steep weight is penalised less) and lighter than the Cauchy's."""
    from scipy.integrate import quad
    from scipy.stats import norm

    from models.gp.truth import log_hierarchical_prior

    for s in (0.5, 1.0, 2.0):
        for w in (0.05, 0.4, 1.0, 2.5, 6.0):
            density = quad(lambda t, w=w, s=s: norm.pdf(w, 0.0, t) * 2.0 * norm.pdf(t, 0.0, s),
                           0.0, np.inf, limit=200)[0]
            closed = float(log_hierarchical_prior(np.array([w]), s)[0]) - np.log(np.pi * s)
            assert closed == pytest.approx(np.log(density), abs=1e-6)
        variance = 2.0 * quad(lambda w, s=s: w * w * np.exp(log_hierarchical_prior(
            np.array([w]), s)[0]) / (np.pi * s), 0.0, np.inf, limit=200)[0]
        assert variance == pytest.approx(s * s, rel=1e-4)
    # from w = 2 to 3 the normal's log density falls by 2.5, this prior's by about 1.2
    drop = float(np.diff(log_hierarchical_prior(np.array([2.0, 3.0]), 1.0))[0])
    assert -1.4 < drop < -1.0
    assert np.isfinite(log_hierarchical_prior(np.array([0.0, 1e-12, 800.0]), 1.0)).all()


def _one_steep_weight(n: int, k: int, steep: float, seed: int
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(design, log Z, Laplace mode, Laplace covariance under N(0, 1)) of a quasi-separable
    collection: π = Φ(steep · x₁), the other k − 1 features pure noise (the best run among weak
    ones), three judgments a task."""
    from scipy.optimize import minimize

    from models.gp.truth import _regression_hessian

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, k))
    y = np.where(rng.random(n) < ndtr(steep * x[:, 0]), 1.0, -1.0)
    d = _three_judgments(rng, y, 1.0, (0.5, 1.5))
    design, log_z = np.column_stack([x, np.ones(n)]), log_evidence(d, 1.0, 0.2)
    mode = minimize(_regression_objective, np.zeros(k + 1), args=(design, log_z, 1.0), jac=True,
                    method="L-BFGS-B").x
    return design, log_z, mode, np.linalg.inv(_regression_hessian(mode, design, log_z, 1.0))


def test_hierarchical_draws_free_the_steep_weight_and_keep_the_weak_ones_spread():
    """The weights' MCMC draws under the hierarchical prior (``hierarchical=True``) against the
    fixed N(0, 1), on one steep weight (4 × x₁) among four zero ones: the steep weight's draws
    are not shrunk (their mean higher by at least half the fixed draws' sd, closer to the planted
    4), and the weak weights keep their uncertainty (sd at least .6 of the fixed prior's and
    above .09, where type-II ML per weight, ``evidence_prior_sd(per_weight=True)``, sets their
    scale to the bound .05 and their draws' sd to .047-.048 on this collection)."""
    design, log_z, mode, laplace = _one_steep_weight(400, 5, 4.0, 31)
    fixed, _ = weight_draws(design, log_z, mode, laplace, draws=2000)
    hier, rate = weight_draws(design, log_z, mode, laplace, draws=2000, hierarchical=True)
    assert 0.15 < rate < 0.4
    gain = hier[:, 0].mean() - fixed[:, 0].mean()
    assert gain > 0.5 * fixed[:, 0].std(), (hier[:, 0].mean(), fixed[:, 0].mean())
    assert abs(hier[:, 0].mean() - 4.0) < abs(fixed[:, 0].mean() - 4.0)
    weak_fixed, weak_hier = fixed[:, 1:-1].std(axis=0), hier[:, 1:-1].std(axis=0)
    assert np.all(weak_hier > 0.6 * weak_fixed), (weak_hier, weak_fixed)
    assert np.all(weak_hier > 0.09)
    again, _ = weight_draws(design, log_z, mode, laplace, draws=2000, hierarchical=True)
    np.testing.assert_array_equal(hier, again)  # seeded


def test_hierarchical_draws_sample_their_posterior():
    """The sampler with the hierarchical prior (a log spike at w = 0, exponential tails) still
    draws its posterior: mean and sd of (w, b) within the bounds of the N(0, 1) check above
    against a quadrature on a grid, on the same skewed, near-separable collection."""
    from scipy.optimize import minimize
    from scipy.special import logsumexp

    from models.gp.truth import _log_target, _regression_hessian

    d, x, _, _ = _regression_data(60, 11)
    design = np.column_stack([x[:, :1], np.ones(60)])
    log_z = log_evidence(d, 1.0, 0.0)
    mode = minimize(_regression_objective, np.zeros(2), args=(design, log_z, 1.0), jac=True,
                    method="L-BFGS-B").x
    laplace = np.linalg.inv(_regression_hessian(mode, design, log_z, 1.0))
    draws, _ = weight_draws(design, log_z, mode, laplace, draws=2000, hierarchical=True)
    # cell midpoints: no node on the prior's (integrable) singularity at w = 0
    w_axis, b_axis = np.linspace(-4.0, 16.0, 401)[:-1] + 0.025, np.linspace(-5.0, 5.0, 201)
    grid = np.array(np.meshgrid(w_axis, b_axis, indexing="ij")).reshape(2, -1).T
    logp = _log_target(grid, design, log_z, 1.0, None, 1.0, hierarchical=True)
    p = np.exp(logp - logsumexp(logp))
    exact_mean = p @ grid
    sd = np.sqrt(p @ (grid - exact_mean) ** 2)
    np.testing.assert_allclose(draws.mean(axis=0), exact_mean, atol=0.15 * sd.max())
    np.testing.assert_allclose(draws.std(axis=0), sd, rtol=0.15)
