"""Joint draws of the qrels from a GP fit (models.gp.joint, models.evaluation.joint)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from models.evaluation.joint import JointDraws, JointLoadings
from models.evaluation.measures import parse_measures
from models.evaluation.scoring import evaluate_runs
from models.evaluation.uncertainty import Posterior
from models.synthetic import generate

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def twins():  # type: ignore[no-untyped-def]
    """MAGP (full GP) on 160 tasks whose features come in identical pairs (task 2k, 2k + 1)."""
    from models.gp.model import MAGP

    s = generate(160, 20, noise_level=(4.0, 8.0), redundancy=3, random_state=4)
    data = s.to_annotation_data()
    features = np.repeat(np.asarray(data.features)[::2], 2, axis=0)
    data = dataclasses.replace(data, features=features)
    model = MAGP(random_state=0, n_iter=10, label_layer="gaussian").fit(data)
    return data, model


def test_factor_reproduces_the_fits_marginal_variances(twins) -> None:  # type: ignore[no-untyped-def]
    """F F^T + the independent parts has the diagonal q(f) reports: the joint posterior is the
    fit's own, not a new approximation of it."""
    from models.gp.joint import factor

    _, model = twins
    F, variance = factor(model.core_)
    assert F.shape[0] == model.posterior_variance_.shape[0]
    np.testing.assert_allclose(variance, model.posterior_variance_, rtol=1e-6, atol=1e-9)
    shared = np.sum(F * F, axis=1) / variance
    assert 0.0 < shared.mean() < 1.0


def test_joint_draws_move_tasks_that_share_features_together(twins) -> None:  # type: ignore[no-untyped-def]
    """Each task's share of relevant draws is its P(relevant) (the copula keeps marginals), and
    twins (same features) are correlated across draws, unlike independent draws."""
    from models.gp.joint import joint_loadings

    data, model = twins
    rho, kept = joint_loadings(model)  # type: ignore[misc]
    assert 0.99 <= kept <= 1.0 + 1e-9  # 80 distinct feature vectors, 64 directions
    loadings = JointLoadings(data.topic_ids, data.doc_ids, rho)
    post = Posterior.binary(data.topic_ids, data.doc_ids, model.proba_[:, 1])
    draws = JointDraws(post, loadings, 4000, np.random.default_rng(0))
    labels = draws.topic_labels(np.arange(data.n_tasks), np.random.default_rng(1)).astype(float)
    p = model.proba_[:, 1]
    assert np.max(np.abs(labels.mean(axis=0) - p)) < 0.04  # 4000 draws: sd ≤ .008
    twin = (p[::2] > 0.1) & (p[::2] < 0.9) & (p[1::2] > 0.1) & (p[1::2] < 0.9)
    uncertain = np.flatnonzero(twin)
    assert len(uncertain) >= 5
    # the latent correlation of twins is their shared part: positive, as large as it can be
    shared = np.sum(rho[0::2] * rho[1::2], axis=1)[uncertain]
    assert np.all(shared > 0)
    a, b = labels[:, 2 * uncertain], labels[:, 2 * uncertain + 1]
    corr = np.mean([np.corrcoef(a[:, k], b[:, k])[0, 1] for k in range(len(uncertain))])
    assert corr > 0.05, corr  # 4000 draws, >= 5 pairs: its sd is below .008
    rng = np.random.default_rng(2)
    indep = (rng.random(labels.shape) < p[None, :]).astype(float)
    ia, ib = indep[:, 2 * uncertain], indep[:, 2 * uncertain + 1]
    assert abs(np.mean([np.corrcoef(ia[:, k], ib[:, k])[0, 1]
                        for k in range(len(uncertain))])) < 0.03


def test_joint_draws_widen_a_runs_score_and_round_trip(twins) -> None:  # type: ignore[no-untyped-def]
    """A run's mean P@10 varies more across joint draws than across independent ones (the
    shared function moves every topic); the stored loadings read back the same."""
    from models.gp.joint import joint_loadings

    data, model = twins
    rho, _ = joint_loadings(model)  # type: ignore[misc]
    topics = np.array([f"t{i % 8}" for i in range(data.n_tasks)], dtype=object)
    loadings = JointLoadings.from_bytes(JointLoadings(topics, data.doc_ids, rho).to_bytes())
    np.testing.assert_array_equal(loadings.loadings, rho)
    post = Posterior.binary(topics, data.doc_ids, model.proba_[:, 1])
    runs = {"r": {t: list(data.doc_ids[topics == t]) for t in np.unique(topics)}}
    measures = parse_measures(["P@10"])
    plain = evaluate_runs(post, runs, measures, samples=1000, seed=3).mean_draws("P@10")
    joint = evaluate_runs(post, runs, measures, samples=1000, seed=3,
                          joint=loadings).mean_draws("P@10")
    assert joint.std() > 1.2 * plain.std(), (joint.std(), plain.std())
    assert abs(joint.mean() - plain.mean()) < 0.03
    # a fit without a GP over tasks stores no directions: its draws are the independent ones
    none = JointLoadings(topics, data.doc_ids, np.zeros((data.n_tasks, 0), dtype=np.float32))
    flat = evaluate_runs(post, runs, measures, samples=1000, seed=3, joint=none)
    assert flat.draw_kind == "labels"
    np.testing.assert_array_equal(flat.mean_draws("P@10"), plain)


@pytest.fixture(scope="module")
def twins_layer(twins):  # type: ignore[no-untyped-def]
    """The twins fitted with the discrete truth layer (``label_layer="discrete"``)."""
    from models.gp.model import MAGP

    data, _ = twins
    return data, MAGP(random_state=0, n_iter=10, label_layer="discrete").fit(data)


def test_layer_draws_draw_the_class_prior_jointly(twins, twins_layer) -> None:  # type: ignore[no-untyped-def]
    """With the discrete truth layer the draws share the class prior's latent (one draw of g),
    then draw each label from the layer's posterior: marginals near P(relevant), twins move
    together, a clamped task never moves, and the loadings round-trip with their prior."""
    from scipy.special import ndtri

    from models.gp.joint import joint_posterior, layer_loadings
    from models.gp.truth import readout

    assert layer_loadings(twins[1]) is None  # the Gaussian read-out keeps the copula
    data, model = twins_layer
    rho, prior, kept = layer_loadings(model)  # type: ignore[misc]
    assert 0.99 <= kept <= 1.0 + 1e-9
    assert np.all(np.sum(rho.astype(float) ** 2, axis=1) < 1.0)
    np.testing.assert_allclose(prior, ndtri(readout(model.core_).prior), atol=1e-8)
    stored = joint_posterior("magp", data, model)
    assert stored is not None and stored.prior is not None
    again = JointLoadings.from_bytes(stored.to_bytes())
    np.testing.assert_array_equal(again.prior, stored.prior)
    p = model.proba_[:, 1].copy()
    p[0] = 1.0  # as a gold label clamps it
    post = Posterior.binary(data.topic_ids, data.doc_ids, p)
    draws = JointDraws(post, again, 4000, np.random.default_rng(0))
    labels = draws.topic_labels(np.arange(data.n_tasks), np.random.default_rng(1)).astype(float)
    assert np.all(labels[:, 0] == 1.0)
    assert np.max(np.abs(labels.mean(axis=0) - p)) < 0.06
    twin = (p[::2] > 0.1) & (p[::2] < 0.9) & (p[1::2] > 0.1) & (p[1::2] < 0.9)
    uncertain = np.flatnonzero(twin)
    assert len(uncertain) >= 5
    a, b = labels[:, 2 * uncertain], labels[:, 2 * uncertain + 1]
    corr = np.mean([np.corrcoef(a[:, k], b[:, k])[0, 1] for k in range(len(uncertain))])
    assert corr > 0.03, corr  # independent draws: |corr| < .03 (the test above)


@pytest.fixture(scope="module")
def twins_regression(twins):  # type: ignore[no-untyped-def]
    """The twins fitted with MAGP's defaults (the regression layer, MCMC weight draws), once:
    two tests read it (neither mutates it)."""
    from models.gp.model import MAGP

    data, _ = twins
    return MAGP(random_state=0, n_iter=10).fit(data)


@pytest.fixture(scope="module")
def twins_gaussian_draws(twins):  # type: ignore[no-untyped-def]
    """The twins fitted with ``weight_draws="gaussian"``, once: two tests read it."""
    from models.gp.model import MAGP

    data, _ = twins
    return MAGP(random_state=0, n_iter=10, weight_draws="gaussian").fit(data)


def test_regression_layer_draws_the_weights(twins, twins_gaussian_draws) -> None:  # type: ignore[no-untyped-def]
    """MAGP's default (``label_layer="discrete-regression"``): the stored draws are the class
    prior's weights (one ζ moves every task's prior), so twins (identical features) get the
    same loadings and prior, and the marginals stay near P(relevant)."""
    from models.gp.joint import joint_posterior, layer_loadings

    data, _ = twins
    # the weights' Gaussian (``"gaussian"``): the draws of ``weight_draws: "mcmc"`` (the
    # default) are checked in the next test
    model = twins_gaussian_draws
    rho, prior, kept = layer_loadings(model)  # type: ignore[misc]
    d = np.asarray(data.features).shape[1]
    assert kept == 1.0 and rho.shape == (data.n_tasks, d + 1)
    np.testing.assert_array_equal(rho[::2], rho[1::2])
    np.testing.assert_array_equal(prior[::2], prior[1::2])
    stored = joint_posterior("magp", data, model)
    assert stored is not None and stored.prior is not None
    p = model.proba_[:, 1]
    post = Posterior.binary(data.topic_ids, data.doc_ids, p)
    draws = JointDraws(post, stored, 4000, np.random.default_rng(0))
    labels = draws.topic_labels(np.arange(data.n_tasks), np.random.default_rng(1)).astype(float)
    # The draws average the layer's posterior over the weights, P(relevant) is the posterior
    # under the averaged (moderated) prior: close, not equal, with 160 tasks' loose weights.
    assert np.max(np.abs(labels.mean(axis=0) - p)) < 0.1
    assert np.mean(np.abs(labels.mean(axis=0) - p)) < 0.03
    # without the prior the same loadings are a copula: the layer's draws differ from it
    copula = JointDraws(post, JointLoadings(data.topic_ids, data.doc_ids, rho), 4000,
                        np.random.default_rng(0))
    other = copula.topic_labels(np.arange(data.n_tasks), np.random.default_rng(1))
    assert not np.array_equal(other, labels.astype(np.int8))


def test_regression_layer_carries_the_weights_draws(twins, twins_regression,
                                                    twins_gaussian_draws) -> None:  # type: ignore[no-untyped-def]
    """With ``weight_draws: "mcmc"`` (the default) the stored joint posterior carries the
    weights' MCMC draws as ζ in the loadings' frame: they round-trip, an evaluation's ζ are
    rows of them, and η̂ + l ζ is x̃·w of a draw; ``"gaussian"`` stores none (ζ ~ N(0, I), the
    draws before) and P(relevant) is the same either way."""
    from models.gp.joint import joint_posterior, layer_draws

    data, _ = twins
    model = twins_regression
    zeta = layer_draws(model)
    d = np.asarray(data.features).shape[1]
    assert zeta is not None and zeta.shape == (400, d + 1)
    assert model.info_["truth_layer"]["weight_draws"]["draws"] == 400
    stored = joint_posterior("magp", data, model)
    assert stored is not None and stored.draws is not None
    again = JointLoadings.from_bytes(stored.to_bytes())
    np.testing.assert_array_equal(again.draws, stored.draws)
    post = Posterior.binary(data.topic_ids, data.doc_ids, model.proba_[:, 1])
    draws = JointDraws(post, again, 50, np.random.default_rng(0))
    rows = {tuple(r) for r in again.draws.astype(np.float64).tolist()}
    assert all(tuple(r) in rows for r in draws.zeta.tolist())
    # the stored ζ move each task's prior latent to x̃·w of a weight draw: their spread is wider
    # than the Laplace Gaussian's on the steep side (a skewed posterior), never degenerate
    assert np.all(np.std(zeta, axis=0) > 0.2)
    gaussian = twins_gaussian_draws
    assert layer_draws(gaussian) is None
    other = joint_posterior("magp", data, gaussian)
    assert other is not None and other.draws is None
    np.testing.assert_array_equal(gaussian.proba_, model.proba_)
    with pytest.raises(ValueError):
        JointLoadings(data.topic_ids, data.doc_ids, stored.loadings, draws=stored.draws)


def test_hierarchical_weight_prior_moves_the_draws_only(twins, twins_regression) -> None:  # type: ignore[no-untyped-def]
    """``weight_prior: "hierarchical"`` (the default: a per-weight scale under a half-normal,
    integrated out) is read by the weights' MCMC draws only: P(relevant) and the stored loadings
    are those of the fixed N(0, 1) fit (``"fixed"``), the draws are not, and ``info`` says which
    prior they drew."""
    from models.gp.joint import layer_draws, layer_loadings
    from models.gp.model import MAGP

    data, _ = twins
    fixed = MAGP(random_state=0, n_iter=10, weight_prior="fixed").fit(data)
    hier = twins_regression
    assert hier.weight_prior == "hierarchical"
    np.testing.assert_array_equal(hier.proba_, fixed.proba_)
    np.testing.assert_array_equal(layer_loadings(hier)[0], layer_loadings(fixed)[0])
    z_hier, z_fixed = layer_draws(hier), layer_draws(fixed)
    assert z_hier is not None and z_fixed is not None and z_hier.shape == z_fixed.shape
    assert not np.allclose(z_hier, z_fixed)
    assert hier.info_["truth_layer"]["weight_draws"]["prior"] == "hierarchical"
    assert "prior" not in fixed.info_["truth_layer"]["weight_draws"]
