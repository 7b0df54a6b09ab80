"""LK's read-outs scored on held-out judgments (``models.gp.heldout``)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import log_ndtr, ndtr

from models.gp.heldout import (
    FoldScores,
    _gaussian_predictive,
    best_temperature,
    fold_scores,
    gaussian_log_predictive,
    judgment_folds,
    layer_log_predictive,
    mixed_log_predictive,
    stacking_weight,
)
from models.gp.truth import LayerJudgments, log_evidence


def test_judgment_folds_spread_each_task_over_the_folds():
    rng = np.random.default_rng(0)
    task = np.repeat(np.arange(300), rng.integers(1, 9, 300))
    for k in (2, 3, 5):
        fold = judgment_folds(task, k, random_state=1)
        np.testing.assert_array_equal(fold, judgment_folds(task, k, random_state=1))
        counts = np.zeros((300, k), dtype=np.int64)
        np.add.at(counts, (task, fold), 1)
        # round-robin within a task: fold sizes differ by at most one judgment
        assert np.all(counts.max(axis=1) - counts.min(axis=1) <= 1)
        # and a random start: single-judgment tasks land in every fold
        singles = np.bincount(task) == 1
        assert len(np.unique(fold[singles[task]])) == k


def test_gaussian_predictive_of_one_judgment_is_the_probit_closed_form():
    """∫ N(f; m, v) Φ(s (f + μ) / σ) df = Φ(s (m + μ) / √(σ² + v)); two judgments of a task:
    their product under one f, not the product of two closed forms."""
    rng = np.random.default_rng(2)
    n = 40
    mean, var = rng.normal(0.0, 1.0, n), rng.uniform(0.1, 2.0, n)
    held = LayerJudgments(task=np.arange(n), sign=rng.choice([-1.0, 1.0], n),
                          shift=rng.normal(0.0, 0.5, n), scale=np.sqrt(1.0 + rng.uniform(0, 3, n)),
                          n_tasks=n)
    closed = log_ndtr(held.sign * (mean + held.shift) / np.sqrt(held.scale ** 2 + var))
    np.testing.assert_allclose(_gaussian_predictive(held, mean, var), closed, atol=1e-8)
    pair = LayerJudgments(task=np.zeros(2, dtype=np.int64), sign=np.ones(2), shift=np.zeros(2),
                          scale=np.ones(2), n_tasks=1)
    f = np.linspace(-12.0, 12.0, 200_001)
    density = np.exp(-0.5 * f * f) / np.sqrt(2.0 * np.pi) * ndtr(f) ** 2
    expected = np.log(np.sum(density) * (f[1] - f[0]))
    assert _gaussian_predictive(pair, np.zeros(1), np.ones(1))[0] == pytest.approx(expected,
                                                                                   abs=1e-6)
    assert expected > 2.0 * np.log(0.5)  # ≠ the two closed forms' product: they share f


def _pieces(seed: int) -> list[FoldScores]:
    """Hand-built fold pieces: the layer's class posterior from training judgments, the held-out
    judgments' evidence ratio from ``log_evidence``, and a Gaussian predictive."""
    rng = np.random.default_rng(seed)
    n, c = 4000, 0.8
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)

    def draw(per_task: int) -> LayerJudgments:
        task = np.repeat(np.arange(n), per_task)
        label = rng.random(task.shape[0]) < ndtr(c * y[task] / np.sqrt(2.0))
        return LayerJudgments(task=task, sign=2.0 * label - 1.0, shift=np.zeros(task.shape[0]),
                              scale=np.full(task.shape[0], np.sqrt(2.0)), n_tasks=n)

    train, held = draw(3), draw(1)
    both = LayerJudgments(task=np.r_[train.task, held.task], sign=np.r_[train.sign, held.sign],
                          shift=np.zeros(4 * n), scale=np.full(4 * n, np.sqrt(2.0)), n_tasks=n)
    log_z = log_evidence(train, c, 0.0)
    joint = np.log(0.5) + log_z
    return [FoldScores(held=np.ones(n, dtype=bool),
                       gaussian=_gaussian_predictive(held, np.zeros(n), np.ones(n)),
                       layer_joint=joint, layer_predictive=log_evidence(both, c, 0.0) - log_z,
                       separation=c, deviation=0.0)]


def test_the_mixture_spans_the_two_read_outs_and_the_layer_is_its_own_best_temperature():
    """w = 0 is the Gaussian, w = 1 the layer; on judgments drawn from the layer itself (the
    right c, s = 0) the layer beats a Gaussian of the wrong shape, τ* is near 1 and w* near 1."""
    pieces = _pieces(3)
    gauss, layer = gaussian_log_predictive(pieces), layer_log_predictive(pieces)
    assert mixed_log_predictive(pieces, 0.0) == pytest.approx(gauss)
    assert mixed_log_predictive(pieces, 1.0) == pytest.approx(layer)
    assert layer > gauss
    assert 0.7 < best_temperature(pieces) < 1.3
    assert stacking_weight(pieces) > 0.7
    # a sharper class posterior than the judgments bear predicts them worse
    assert layer_log_predictive(pieces, 3.0) < layer


def test_fold_scores_refit_lk_without_the_held_out_judgments():
    """End to end on Algorithm-10 data: one piece per fold, every task with a judgment in the
    fold is scored, and both read-outs predict held-out judgments better than a coin."""
    from models.gp.model import LK
    from models.synthetic import generate

    syn = generate(300, 30, noise_level=(0.0, 2.0), redundancy=5, random_state=4)
    data = syn.to_annotation_data(with_features=False)
    pieces = fold_scores(lambda: LK(n_iter=10, random_state=0), data, n_folds=2)
    assert len(pieces) == 2
    fold = judgment_folds(data.task, 2, random_state=0)
    for k, piece in enumerate(pieces):
        np.testing.assert_array_equal(
            piece.held, np.bincount(data.task[fold == k], minlength=data.n_tasks) > 0)
        assert piece.separation > 0.05
    coin = data.n_judgments * np.log(0.5)
    assert gaussian_log_predictive(pieces) > coin + 0.03 * abs(coin)
    assert layer_log_predictive(pieces) > coin + 0.03 * abs(coin)
    assert 0.0 <= stacking_weight(pieces) <= 1.0
    with pytest.raises(ValueError, match="n_folds"):
        fold_scores(lambda: LK(), data, n_folds=1)
