"""Recalibration of P(relevant) on held-out gold (models.calibration): Platt's map against a
planted one, the graded split, the wrapper on synthetic and real data, and its parameter."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import scipy.special

from models.calibration import GoldCalibrated, Platt, recalibrate
from models.data import UNKNOWN, AnnotationData
from models.dawid_skene import DawidSkene
from models.evaluation.heldout import heldout_predictions
from models.registry import InvalidParams, make_aggregator, validate_params
from models.synthetic import NOISE_LEVELS, generate


def _log_loss(p_relevant: np.ndarray, relevant: np.ndarray) -> float:
    p = np.clip(p_relevant, 1e-12, 1 - 1e-12)
    return float(-np.mean(np.where(relevant, np.log(p), np.log(1 - p))))


def test_platt_recovers_a_planted_map() -> None:
    """Scores drawn so that the truth is σ(0.3 · logit p − 0.4): the fit finds (0.3, −0.4)."""
    rng = np.random.default_rng(0)
    p = scipy.special.expit(rng.normal(0.0, 4.0, 40_000))
    truth = rng.random(p.shape[0]) < scipy.special.expit(0.3 * scipy.special.logit(p) - 0.4)
    platt = Platt.fit(p, truth)
    assert platt.a == pytest.approx(0.3, abs=0.02)
    assert platt.b == pytest.approx(-0.4, abs=0.04)
    # the calibrated ½ sits where 0.3 · logit p = 0.4
    assert platt.threshold == pytest.approx(scipy.special.expit(0.4 / 0.3), abs=0.02)
    # the map fitted to already calibrated scores is close to the identity
    honest = rng.random(p.shape[0]) < p
    identity = Platt.fit(p, honest)
    assert identity.a == pytest.approx(1.0, abs=0.05) and abs(identity.b) < 0.05
    with pytest.raises(ValueError, match="relevant and gold tasks that are not"):
        Platt.fit(p[:10], np.ones(10, dtype=bool))


def test_recalibrate_moves_only_the_relevant_split() -> None:
    """Graded: P'(grade ≥ r) is the calibrated P(relevant); within each side the proportions
    stay; rows sum to 1; a side without mass gets the new mass spread evenly."""
    proba = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3], [0.0, 0.25, 0.75], [1.0, 0.0, 0.0]])
    platt = Platt(0.5, -0.2)
    out = recalibrate(proba, 1, platt)
    np.testing.assert_allclose(out.sum(axis=1), 1.0)
    np.testing.assert_allclose(out[:, 1:].sum(axis=1), platt(proba[:, 1:].sum(axis=1)))
    np.testing.assert_allclose(out[1, 1] / out[1, 2], 0.1 / 0.3)
    np.testing.assert_allclose(out[2, 0], 1.0 - platt(np.array([1.0]))[0])
    np.testing.assert_allclose(out[3, 1], out[3, 2])  # no relevant mass before: even split
    binary = np.array([[0.3, 0.7], [0.9, 0.1]])
    np.testing.assert_allclose(recalibrate(binary, 1, platt)[:, 1], platt(binary[:, 1]))


def _overconfident_ds() -> DawidSkene:
    """DS that counts every judgment as independent evidence (no tempering of dense tasks, no
    gold-free tempered read-out)."""
    return DawidSkene(use_gold=True, dependence="ignore", temper_folds=0)


@pytest.fixture(scope="module")
def overconfident() -> AnnotationData:
    """A synthetic crowd (Algorithm 10, noisy, gold everywhere) in which every worker has two
    clones who copy each of their labels: DS counts one opinion three times as independent
    evidence, the overconfidence calibration exists to correct (on Algorithm 10's own
    independent workers DS is already calibrated). With 9 judgments per task DS's default
    would temper the copies away (models.dependence, issue 38): the tests fit it with
    ``dependence="ignore"``, the overconfident model whose recalibration they check."""
    synth = generate(2000, 40, noise_level=NOISE_LEVELS["4-8"], redundancy=3, random_state=3)
    data = synth.to_annotation_data(with_features=False)
    n = data.n_annotators
    ids = np.concatenate([data.annotator_ids, [f"{a}-copy1" for a in data.annotator_ids],
                          [f"{a}-copy2" for a in data.annotator_ids]])
    return replace(data, task=np.tile(data.task, 3), label=np.tile(data.label, 3),
                   annotator=np.concatenate([data.annotator, data.annotator + n,
                                             data.annotator + 2 * n]),
                   annotator_ids=ids)


def test_calibrated_ds_is_better_calibrated_held_out(overconfident: AnnotationData) -> None:
    """Scored on gold it never saw (the wrapper refitted per outer fold, so its calibration sees
    only that fold's training gold): log loss falls, accuracy does not; gold stays clamped."""
    data = overconfident
    assert data.gold is not None
    relevant = data.gold == 1
    plain = heldout_predictions(lambda: _overconfident_ds(), data, 5, random_state=0)
    calibrated = heldout_predictions(
        lambda: GoldCalibrated(lambda: _overconfident_ds(), n_folds=5, random_state=0),
        data, 5, random_state=0)
    before = _log_loss(plain.proba[:, 1], relevant)
    after = _log_loss(calibrated.proba[:, 1], relevant)
    assert after < before - 0.05, (before, after)
    acc_before = np.mean(plain.labels == data.gold)
    acc_after = np.mean(calibrated.labels == data.gold)
    assert acc_after >= acc_before - 0.01, (acc_before, acc_after)

    # The deployed fit: clamped gold keeps its label, the result carries the map.
    half = replace(data, gold=np.where(np.arange(data.n_tasks) % 2 == 0, data.gold, UNKNOWN))
    model = GoldCalibrated(lambda: _overconfident_ds(), n_folds=4, random_state=1,
                           calibration="platt").fit(half)
    known = half.gold != UNKNOWN
    assert np.array_equal(model.labels_[known], half.gold[known])
    info = model.result(half).info["calibration"]
    assert info["folds"] == 4 and info["n_gold"] == int(known.sum())
    assert 0 < info["a"] < 1  # overconfident: the map shrinks the logit
    assert model.competence_.shape == (data.n_annotators,)  # the wrapped fit's attributes


def test_calibration_refuses_what_it_cannot_fit(overconfident: AnnotationData) -> None:
    data = overconfident
    with pytest.raises(ValueError, match="needs gold labels"):
        GoldCalibrated(lambda: _overconfident_ds()).fit(replace(data, gold=None))
    one_sided = replace(data, gold=np.where(data.gold == 1, 1, UNKNOWN))
    with pytest.raises(ValueError, match="relevant and gold tasks that are not"):
        GoldCalibrated(lambda: _overconfident_ds()).fit(one_sided)
    with pytest.raises(ValueError, match="at least 2 folds"):
        GoldCalibrated(lambda: _overconfident_ds(), n_folds=1)


def test_calibrate_folds_parameter() -> None:
    """A parameter of every method that clamps gold, and only of those; it needs use_gold."""
    model = make_aggregator("ds", {"use_gold": True, "calibrate_folds": 3})
    assert isinstance(model, GoldCalibrated) and model.n_folds == 3
    assert isinstance(make_aggregator("ds", {"use_gold": True}), DawidSkene)
    for params in ({"calibrate_folds": 5}, {"use_gold": True, "calibrate_folds": 1}):
        with pytest.raises(InvalidParams, match="calibrate_folds"):
            validate_params("ds", params)
    with pytest.raises(InvalidParams, match="unknown parameter 'calibrate_folds'"):
        validate_params("mv", {"calibrate_folds": 5})
    with pytest.raises(InvalidParams, match="must be of type int"):
        validate_params("ibcc", {"use_gold": True, "calibrate_folds": "5"})


@pytest.mark.slow
def test_rf10_graded_fit_calibrated_beats_its_own_binary_view(rf10_path: Path) -> None:
    """RF10 graded, ordinal-ds with the per-topic prior, gold clamped, 5-fold held out (nested):
    the recalibrated P(grade ≥ 1) is both more accurate and far less overconfident than the
    uncalibrated one on the same folds."""
    from app.cli.loading import load_annotation_data

    data = load_annotation_data(rf10_path.read_bytes(), relevant_from=None, graded=True,
                                ignore=(-2,))
    assert data.gold is not None
    data = replace(data, gold=np.where(data.judgments_per_task() > 0, data.gold, UNKNOWN))
    params = {"class_prior_by": "topic", "use_gold": True}
    plain = heldout_predictions(lambda: make_aggregator("ordinal-ds", params), data, 5,
                                random_state=0)
    calibrated = heldout_predictions(
        lambda: make_aggregator("ordinal-ds", {**params, "calibrate_folds": 5}, relevant_from=1),
        data, 5, random_state=0)
    known = data.gold != UNKNOWN
    relevant = data.gold[known] >= 1
    scores = {}
    for name, held in (("plain", plain), ("calibrated", calibrated)):
        p = held.proba[known, 1:].sum(axis=1)
        scores[name] = (float(np.mean((p >= 0.5) == relevant)), _log_loss(p, relevant))
    assert scores["calibrated"][0] > scores["plain"][0] + 0.003, scores
    assert scores["calibrated"][1] < scores["plain"][1] - 0.2, scores


def test_isotonic_map_is_monotone_and_never_certain() -> None:
    """Scores whose truth is a step (not a logistic curve): the isotonic map finds it where
    Platt's cannot; it is monotone, constant beyond the scores seen, and stays off 0 and 1."""
    from models.calibration import Isotonic
    from models.evaluation.reliability import reliability

    rng = np.random.default_rng(1)
    p = rng.random(20_000)
    truth = rng.random(p.shape[0]) < np.where(p < 0.9, 0.3, 0.8)
    iso = Isotonic.fit(p, truth)
    assert np.all(np.diff(iso.y) >= 0) and min(iso.y) >= 0.5 / p.size
    assert iso.threshold == pytest.approx(0.9, abs=0.01)
    assert reliability(iso(p), truth).ece < 0.02 < reliability(Platt.fit(p, truth)(p), truth).ece
    assert iso(np.array([-1.0, 2.0])).tolist() == [iso.y[0], iso.y[-1]]


def test_isotonic_calibration_through_the_registry(overconfident: AnnotationData) -> None:
    """calibration="isotonic" beside calibrate_folds: the fit says which map it used; a name
    that is none of the maps is refused before a fit is queued."""
    half = replace(overconfident, gold=np.where(np.arange(overconfident.n_tasks) % 2 == 0,
                                                overconfident.gold, UNKNOWN))
    params = {"use_gold": True, "calibrate_folds": 3, "calibration": "isotonic"}
    model = make_aggregator("ds", validate_params("ds", params)).fit(half)
    info = model.result(half).info["calibration"]
    assert info["method"] == "isotonic" and info["knots"] > 2 and 0 < info["threshold"] < 1
    with pytest.raises(InvalidParams, match="'beta' or 'isotonic'"):
        validate_params("ds", {**params, "calibration": "spline"})
