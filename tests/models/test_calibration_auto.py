"""The calibration map chosen per fit (models.calibration, ``calibration="auto"``, the default):
beta calibration against a planted map, the choice by held-out log loss on small and large gold,
and the wrapper's record of it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.special

from models.calibration import Beta, GoldCalibrated, Platt, select_map
from models.data import UNKNOWN
from models.dawid_skene import DawidSkene
from models.registry import make_aggregator, validate_params
from models.synthetic import NOISE_LEVELS, generate


def _planted(n: int, seed: int, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Scores p and outcomes whose truth is a smooth beta map (overconfident at 1, honest at
    0) or a step at p = .9."""
    rng = np.random.default_rng(seed)
    p = rng.beta(0.6, 0.6, n)
    if kind == "beta":
        truth = scipy.special.expit(0.4 * np.log(p) - 1.5 * np.log1p(-p) - 0.3)
    else:
        truth = np.where(p < 0.9, 0.3, 0.8)
    return p, rng.random(n) < truth


def test_beta_recovers_a_planted_map() -> None:
    """P' = σ(0.4 ln p − 1.5 ln(1 − p) − 0.3): the fit finds (0.4, 1.5, −0.3), is monotone, and
    its threshold is where the planted map crosses ½; Platt's map is the case a = b."""
    p, y = _planted(40_000, 0, "beta")
    beta = Beta.fit(p, y)
    assert (beta.a, beta.b, beta.c) == pytest.approx((0.4, 1.5, -0.3), abs=0.06)
    grid = np.linspace(0.001, 0.999, 999)
    assert np.all(np.diff(beta(grid)) >= 0)
    assert float(beta(np.array([beta.threshold]))[0]) == pytest.approx(0.5, abs=1e-6)
    platt = Platt(0.7, -0.2)
    as_beta = Beta(0.7, 0.7, -0.2)
    np.testing.assert_allclose(as_beta(grid), platt(grid), atol=1e-12)


def _truth(kind: str, p: np.ndarray) -> np.ndarray:
    if kind == "beta":
        return scipy.special.expit(0.4 * np.log(p) - 1.5 * np.log1p(-p) - 0.3)
    return np.where(p < 0.9, 0.3, 0.8)


def _risk(calibrator, kind: str, rng: np.random.Generator) -> float:  # type: ignore[no-untyped-def]
    """The expected log loss of a map on fresh scores, against the planted truth."""
    p = rng.beta(0.6, 0.6, 5_000)
    t = _truth(kind, p)
    q = np.clip(calibrator(p), 1e-6, 1 - 1e-6)
    return float(np.mean(-(t * np.log(q) + (1 - t) * np.log1p(-q))))


@pytest.mark.parametrize("n", [30, 60])
def test_small_gold_rarely_gets_the_step_function(n: int) -> None:
    """Thirty or sixty gold tasks cannot pay for an isotonic step function: over 20 seeds and
    both truths the choice is mostly a parametric map (measured: 9 and 4 isotonic of 40), and
    its expected log loss on fresh scores is well below the isotonic map's (which always
    fitting it would pay: .59 against .66 at 30 tasks, .57 against .61 at 60)."""
    from models.calibration import CALIBRATIONS

    rng = np.random.default_rng(99)
    chosen_isotonic, auto, isotonic = 0, [], []
    for seed in range(20):
        for kind in ("beta", "step"):
            p, y = _planted(n, seed, kind)
            chosen, _ = select_map(p, y, random_state=seed)
            chosen_isotonic += chosen == "isotonic"
            auto.append(_risk(CALIBRATIONS[chosen].fit(p, y), kind, rng))
            isotonic.append(_risk(CALIBRATIONS["isotonic"].fit(p, y), kind, rng))
    assert chosen_isotonic <= 12, chosen_isotonic  # of 40
    assert np.mean(auto) < np.mean(isotonic) - 0.02, (np.mean(auto), np.mean(isotonic))


def test_large_gold_finds_the_shape() -> None:
    """Thousands of gold tasks: a step truth gets the isotonic map, a smooth one a parametric
    map (beta, which holds it), each by held-out log loss."""
    p, y = _planted(5_000, 1, "step")
    chosen, losses = select_map(p, y)
    assert chosen == "isotonic" and losses["isotonic"] < min(losses["platt"], losses["beta"])
    p, y = _planted(5_000, 1, "beta")
    chosen, losses = select_map(p, y)
    assert chosen == "beta" and losses["beta"] < losses["platt"]


def test_select_map_without_enough_of_a_class() -> None:
    """One gold task of a class: nothing can be held out, Platt's map (the fewest numbers)."""
    p = np.linspace(0.05, 0.95, 20)
    y = np.zeros(20, dtype=bool)
    y[-1] = True
    assert select_map(p, y) == ("platt", {})


@pytest.mark.parametrize("n_gold", [30, 1000])
def test_auto_calibration_through_the_registry(n_gold: int) -> None:
    """calibrate_folds with the default map on an Algorithm-10 crowd with ``n_gold`` gold
    tasks: the fit records the map chosen, every candidate's held-out log loss, and the
    chosen one is the lowest; with 30 gold tasks it is not the isotonic map."""
    synth = generate(1500, 40, noise_level=NOISE_LEVELS["4-8"], redundancy=3, random_state=5)
    data = synth.to_annotation_data(with_features=False)
    rng = np.random.default_rng(0)
    keep = np.zeros(data.n_tasks, dtype=bool)
    for outcome in (0, 1):  # both classes among the gold
        where = np.flatnonzero(data.gold == outcome)
        keep[rng.choice(where, n_gold // 2, replace=False)] = True
    data = replace(data, gold=np.where(keep, data.gold, UNKNOWN))
    params = validate_params("ds", {"use_gold": True, "calibrate_folds": 3})
    model = make_aggregator("ds", params)
    assert isinstance(model, GoldCalibrated) and model.calibration == "auto"
    info = model.fit(data).result(data).info["calibration"]
    losses = info["held_out_log_loss"]
    assert info["chosen_by"] == "auto" and set(losses) == {"platt", "beta", "isotonic"}
    assert losses[info["method"]] == min(losses.values())
    assert info["n_gold"] == n_gold and 0 < info["threshold"] < 1
    if n_gold == 30:
        assert info["method"] != "isotonic"
    # a forced map is recorded as such
    forced = make_aggregator("ds", {**params, "calibration": "beta"}).fit(data)
    info = forced.result(data).info["calibration"]
    assert info["method"] == "beta" and info["chosen_by"] == "beta"
    assert "held_out_log_loss" not in info and info["a"] >= 0 and info["b"] >= 0
    assert isinstance(forced.model_, DawidSkene)
