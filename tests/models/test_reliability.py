"""ECE, Brier score and reliability bins (models/evaluation/reliability.py) and their place in
the gold evaluation."""

import numpy as np
import pytest

from models.evaluation.gold import evaluate
from models.evaluation.reliability import brier_score, calibration_event, reliability


def test_ece_by_hand():
    # bin [0.2, 0.3): P 0.2, 0.2 with 1 of 2 relevant (gap 0.3); bin [0.9, 1]: 0.9 with 1 of 1
    p = np.array([0.2, 0.2, 0.9])
    y = np.array([True, False, True])
    bins = reliability(p, y)
    assert bins.count.sum() == 3 and bins.count[2] == 2 and bins.count[9] == 1
    assert bins.ece == pytest.approx((2 * 0.3 + 1 * 0.1) / 3)
    assert brier_score(np.column_stack([1 - p, p]), y.astype(int)) == pytest.approx(
        (0.64 + 0.04 + 0.01) / 3)


def test_calibrated_draws_have_small_ece_and_confident_wrong_large():
    rng = np.random.default_rng(0)
    p = rng.random(20000)
    y = rng.random(20000) < p
    assert reliability(p, y).ece < 0.02
    overconfident = np.where(p > 0.5, 0.99, 0.01)
    assert reliability(overconfident, y).ece > 0.2


def test_graded_uses_the_top_class():
    proba = np.array([[0.1, 0.6, 0.3], [0.8, 0.1, 0.1]])
    gold = np.array([1, 2])
    p, right = calibration_event(proba, gold)
    assert p.tolist() == [0.6, 0.8] and right.tolist() == [True, False]
    assert brier_score(proba, gold) == pytest.approx(((0.01 + 0.16 + 0.09)
                                                     + (0.64 + 0.01 + 0.81)) / 2)


def test_evaluation_carries_ece_brier_and_bins():
    proba = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7], [0.5, 0.5]])
    gold = np.array([1, 0, 0, -1])
    e = evaluate(proba, gold)
    assert e is not None and e.n_gold == 3
    assert e.brier == pytest.approx((0.01 + 0.04 + 0.49) / 3)
    assert e.ece == pytest.approx((abs(0.9 - 1) + abs(0.2 - 0) + abs(0.7 - 0)) / 3)
    d = e.as_dict()
    assert d["reliability"]["count"][9] == 1 and d["reliability"]["mean_p"][0] is None
