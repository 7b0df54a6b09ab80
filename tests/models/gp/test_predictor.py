"""The numpy predictor the service stores equals the fitted model's own predictions."""

from __future__ import annotations

import numpy as np
import pytest

from models.gp.model import MAGP
from models.gp.predictor import GPPredictor, export
from models.synthetic import generate


@pytest.mark.parametrize("params", [
    {},  # full GP
    {"full_gp_max_tasks": 100, "n_inducing": 30},  # inducing points
    {"mean_function": "linear", "kernel": "rbf+linear", "feature_groups": "0:1;1:2"},
])
def test_exported_predictor_matches_the_model(params) -> None:
    data = generate(250, 20, noise_level=(2.0, 4.0), redundancy=3,
                    random_state=0).to_annotation_data()
    model = MAGP(random_state=0, n_iter=5, **params).fit(data)
    predictor = GPPredictor.from_bytes(export(model).to_bytes())
    X = np.random.default_rng(1).normal(size=(9, 2)) * 2
    mean, var, p = predictor.predict(X)
    np.testing.assert_allclose(p, model.predict_proba(X)[:, 1], atol=1e-8)
    expected_mean, expected_var = model.core_.predict_f(
        (X - model.feature_mean_) / model.feature_scale_)
    np.testing.assert_allclose(mean, expected_mean, atol=1e-8)
    np.testing.assert_allclose(var, expected_var, atol=1e-8)
    assert predictor.input_dim == 2


def test_exported_predictor_of_a_calibrated_fit_applies_its_map() -> None:
    """A MAGP fit recalibrated on held-out gold (calibrate_folds): the stored predictor answers
    for unjudged pairs with the same Platt map the fit applied to the judged ones."""
    from models.calibration import GoldCalibrated
    from models.registry import make_aggregator

    data = generate(200, 15, noise_level=(2.0, 4.0), redundancy=3,
                    random_state=2).to_annotation_data()
    model = make_aggregator("magp", {"use_gold": True, "calibrate_folds": 2, "n_iter": 3,
                                     "random_state": 0}).fit(data)
    assert isinstance(model, GoldCalibrated)
    predictor = GPPredictor.from_bytes(export(model).to_bytes())
    assert predictor.platt == (model.platt_.a, model.platt_.b) != (1.0, 0.0)
    X = np.random.default_rng(3).normal(size=(7, 2)) * 2
    _, _, p = predictor.predict(X)
    np.testing.assert_allclose(p, model.platt_(model.model_.predict_proba(X)[:, 1]), atol=1e-8)
