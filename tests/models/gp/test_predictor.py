"""The numpy predictor the service stores equals the fitted model's own predictions."""

from __future__ import annotations

import numpy as np
import pytest

from models.gp.model import MAGP
from models.gp.predictor import GPPredictor, export
from models.synthetic import generate


@pytest.fixture(scope="module")
def data():
    return generate(250, 20, noise_level=(2.0, 4.0), redundancy=3,
                    random_state=0).to_annotation_data()


@pytest.fixture(scope="module")
def default_fit(data):
    """MAGP's defaults on ``data``, fitted once: the first export test and the class-prior test
    read it (neither mutates it)."""
    return MAGP(random_state=0, n_iter=5).fit(data)


@pytest.mark.parametrize("params", [
    {},  # full GP
    {"full_gp_max_tasks": 100, "n_inducing": 30},  # inducing points
    {"mean_function": "linear", "kernel": "rbf+linear", "feature_groups": "0:1;1:2"},
])
def test_exported_predictor_matches_the_model(params, data, request) -> None:
    # the default parameters are the shared fit
    model = (request.getfixturevalue("default_fit") if not params
             else MAGP(random_state=0, n_iter=5, **params).fit(data))
    predictor = GPPredictor.from_bytes(export(model).to_bytes())
    X = np.random.default_rng(1).normal(size=(9, 2)) * 2
    mean, var, p = predictor.predict(X)
    np.testing.assert_allclose(p, model.predict_proba(X)[:, 1], atol=1e-8)
    expected_mean, expected_var = model.core_.predict_f(
        (X - model.feature_mean_) / model.feature_scale_)
    np.testing.assert_allclose(mean, expected_mean, atol=1e-8)
    np.testing.assert_allclose(var, expected_var, atol=1e-8)
    assert predictor.input_dim == 2


@pytest.mark.parametrize("calibration", ["platt", "beta"])
def test_exported_predictor_of_a_calibrated_fit_applies_its_map(calibration: str) -> None:
    """A MAGP fit recalibrated on held-out gold (calibrate_folds): the stored predictor answers
    for unjudged pairs with the same map (Platt's, or the beta map) the fit applied to the
    judged ones."""
    from models.calibration import GoldCalibrated
    from models.registry import make_aggregator

    # small: the check is that the export equals the fit (any size), not the map's quality
    data = generate(100, 10, noise_level=(2.0, 4.0), redundancy=3,
                    random_state=2).to_annotation_data()
    model = make_aggregator("magp", {"use_gold": True, "calibrate_folds": 2, "n_iter": 2,
                                     "m_step_iterations": 3, "random_state": 0,
                                     "calibration": calibration}).fit(data)
    assert isinstance(model, GoldCalibrated)
    predictor = GPPredictor.from_bytes(export(model).to_bytes())
    fitted = model.calibrator_
    if calibration == "platt":
        assert predictor.platt == (fitted.a, fitted.b) != (1.0, 0.0) and predictor.beta is None
    else:
        assert predictor.beta == (fitted.a, fitted.b, fitted.c) and predictor.platt == (1.0, 0.0)
    X = np.random.default_rng(3).normal(size=(7, 2)) * 2
    _, _, p = predictor.predict(X)
    np.testing.assert_allclose(p, fitted(model.model_.predict_proba(X)[:, 1]), atol=1e-8)


def test_exported_predictor_with_topic_offsets() -> None:
    """MAGP with class_prior_by="topic" and features: the stored predictor carries the topics
    and their offsets and predicts as the model for a seen topic, an unseen one and none."""
    # export == model checks, at any size: 150 tasks (above full_gp_max_tasks, so inducing)
    data = generate(150, 15, noise_level=(2.0, 4.0), redundancy=3, topics=5,
                    topic_concentration=0.5, random_state=3).to_annotation_data()
    model = MAGP(random_state=0, n_iter=5, class_prior_by="topic", full_gp_max_tasks=100,
                 n_inducing=30).fit(data)
    predictor = GPPredictor.from_bytes(export(model).to_bytes())
    assert predictor.has_topics and list(predictor.topics) == list(model.topics_)
    np.testing.assert_allclose(predictor.topic_offsets,
                               model.core_.mean_function.offsets.numpy())
    X = np.random.default_rng(4).normal(size=(4, 2))
    seen = [str(model.topics_[0]), str(model.topics_[3]), "unseen", str(model.topics_[3])]
    for topics in (seen, None):
        _, _, p = predictor.predict(X, topics)
        np.testing.assert_allclose(p, model.predict_proba(X, topics)[:, 1], atol=1e-8)
    assert predictor.topic_known(4, seen).tolist() == [True, True, False, True]
    assert predictor.topic_known(4, None).tolist() == [False] * 4
    mean, var, _ = predictor.predict(X, seen)
    mean0, var0, _ = predictor.predict(X, None)
    assert var[2] == var0[2] and mean[2] == mean0[2]  # unseen = unknown: the prior's offset
    assert np.all(var[[0, 1, 3]] < var0[[0, 1, 3]])  # a seen topic drops the offset's variance
    # A fit without topic offsets has none, and ignores topics.
    plain = GPPredictor.from_bytes(export(MAGP(random_state=0, n_iter=2).fit(data)).to_bytes())
    assert not plain.has_topics and plain.topic_known(4, seen) is None
    np.testing.assert_allclose(plain.predict(X, seen)[2], plain.predict(X)[2])


def test_a_task_nobody_judged_gets_the_regression_class_prior(data, default_fit) -> None:
    """MAGP's default truth layer (discrete-regression): a new task's P(relevant) is the class
    prior every judged task had before its judgments, Φ(x̃·ŵ / √(1 + q²)), in the model and in
    the stored predictor alike; the judged tasks' posteriors are sharper than their priors."""
    from scipy.special import ndtr

    model = default_fit
    assert model.label_layer == "discrete-regression" and model.fallback_ is None
    prior = model.predict_proba(data.features)[:, 1]
    np.testing.assert_allclose(prior, ndtr(model.layer_z_), atol=1e-10)
    _, _, stored = GPPredictor.from_bytes(export(model).to_bytes()).predict(data.features)
    np.testing.assert_allclose(stored, prior, atol=1e-10)
    assert np.mean(np.abs(model.proba_[:, 1] - 0.5)) > np.mean(np.abs(prior - 0.5)) + 0.05
