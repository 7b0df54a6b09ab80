"""MACE's crowd prior on the competences θ_j, its strength chosen by held-out judgments
(``competence_strength=None``, ``models.mace.MACE._choose_strength``): the pseudo-counts, the
choice, what it mends on the Algorithm-10 grid, where it stays off (graded labels, EM, no read-out
folds), warm starts and the parameter draws."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from models.evaluation.gold import evaluate
from models.mace import MACE, STRENGTHS, mace_pseudo_counts
from models.synthetic import NOISE_LEVELS, generate


def _grid_cell(n_tasks: int, noise: str, beta: int, seed: int):  # type: ignore[no-untyped-def]
    syn = generate(n_tasks, 60, noise_level=NOISE_LEVELS[noise], redundancy=beta,
                   random_state=seed)
    data = syn.to_annotation_data(with_features=False)
    gold = np.where(data.judgments_per_task() > 0, data.gold, -1)
    return replace(data, gold=None), gold


def test_pseudo_counts_add_the_crowds_pooled_share() -> None:
    """Beta(α + s (1 − θ̄), β + s θ̄) on (spamming, knowing), θ̄ from the pooled expected counts
    + 1 each; s = 0 is MACE's own Beta(α, β), EM's smoothing gets the same pseudo-counts."""
    spam = np.zeros((2, 2))
    knowing = np.array([[3.0, 1.0], [1.0, 5.0]])  # (spamming, knowing) per annotator
    pair, _ = mace_pseudo_counts("vb", 0.0, 0.5, 0.5, 10.0, "uniform", spam, 4.0, knowing)
    np.testing.assert_allclose(pair, [0.5 + 4 * 5 / 12, 0.5 + 4 * 7 / 12])
    pair, _ = mace_pseudo_counts("vb", 0.0, 0.5, 0.5, 10.0, "learned", spam, 0.0, knowing)
    assert pair.tolist() == [0.5, 0.5]
    pair, _ = mace_pseudo_counts("em", 0.01, 0.5, 0.5, 10.0, "uniform", spam, 12.0, knowing)
    np.testing.assert_allclose(pair, [0.01 + 5.0, 0.01 + 7.0])


def test_the_grid_cell_it_mends() -> None:
    """Algorithm 10, noise 4-8, β 3 (2,000 tasks, seed 7): MACE's own prior fits the
    competences overdispersed (their spread well above the generator's), its read-out misses
    ECE .05 (.065) and its labels fall .023 below majority vote's. The strength of lowest
    held-out loss (1) pulls them together a little; the strongest within one standard error
    of it (4) meets the ECE (.040) and majority vote's accuracy within .005 (.686 against
    .691; s = 1 gave .672)."""
    from models.majority_vote import MajorityVote

    data, gold = _grid_cell(2000, "4-8", 3, 7)
    own = MACE(random_state=0, competence_strength=0.0).fit(data)
    chosen = MACE(random_state=0).fit(data)  # the default chooses
    scores = chosen.strength_scores_
    assert set(scores) == set(STRENGTHS)
    best = min(scores, key=scores.__getitem__)
    assert chosen.competence_strength_ > best > 0  # one standard error beyond the best
    assert scores[chosen.competence_strength_] < scores[0.0]
    majority = MajorityVote().fit(data)
    assert np.mean(chosen.labels_ == gold) >= np.mean(majority.labels_ == gold) - 0.006
    assert np.mean(own.labels_ == gold) < np.mean(majority.labels_ == gold) - 0.015
    assert chosen.competence_.std() < 0.7 * own.competence_.std()
    e_own, e_chosen = evaluate(own.proba_, gold), evaluate(chosen.proba_, gold)
    assert e_own is not None and e_chosen is not None
    assert e_own.ece > 0.05 >= e_chosen.ece
    assert e_chosen.accuracy >= e_own.accuracy
    assert chosen.result(data).info["competence_strength"] == chosen.competence_strength_


def test_strength_zero_keeps_maces_fit_and_readout() -> None:
    """A strength of 0 is MACE's model, read-out included: the choice scores s = 0 with the
    read-out's own half fits (the same τ, and the loss the read-out minimised), so where it
    chooses 0 nothing changes."""
    from models.tempering import clone, crossfit_score

    data, _ = _grid_cell(400, "0-2", 3, 2)
    zero = MACE(random_state=1, competence_strength=0.0).fit(data)
    chosen = MACE(random_state=1, competence_strength=None).fit(data)
    tau, loss = crossfit_score(lambda: clone(zero, temper_folds=0), data, 2, 1,
                               zero.warm_half_fit)
    assert tau == zero.temperature_
    assert loss == chosen.strength_scores_[0.0]
    # no folds: no choice, s = 0
    off = MACE(random_state=1, temper_folds=0, competence_strength=None).fit(data)
    plain = MACE(random_state=1, temper_folds=0, competence_strength=0.0).fit(data)
    assert off.competence_strength_ == 0.0 and off.strength_scores_ == {}
    assert np.array_equal(off.proba_, plain.proba_)
    assert np.array_equal(zero.competence_, plain.competence_)


@pytest.mark.parametrize("params", [{"variant": "em"}, {}])
def test_graded_labels_and_em_keep_maces_prior(params: dict) -> None:
    """No choice on K ≥ 3 classes (MACE's model is narrower than a graded crowd's errors) nor
    under EM (MACE.java's maximum likelihood): s = 0, no held-out scores."""
    data, _ = _grid_cell(300, "4-8", 3, 3)
    if not params:  # three classes: a third label from every fifth judgment
        label = np.where(np.arange(data.n_judgments) % 5 == 0, 2, data.label)
        data = replace(data, label=label, classes=np.arange(3))
    fit = MACE(random_state=0, competence_strength=None, **params).fit(data)
    assert fit.competence_strength_ == 0.0 and fit.strength_scores_ == {}
    again = MACE(random_state=0, competence_strength=0.0, **params).fit(data)
    assert np.array_equal(fit.proba_, again.proba_)


def test_a_larger_fixed_strength_pulls_competences_together() -> None:
    data, _ = _grid_cell(600, "4-8", 5, 4)
    spread = [MACE(random_state=0, temper_folds=0, competence_strength=s).fit(data)
              .competence_.std() for s in (0.0, 4.0, 64.0)]
    assert spread[0] > spread[1] > spread[2]


def test_a_warm_start_keeps_its_inits_strength() -> None:
    """A warm refit reads the strength its init used (also from a stored result) instead of
    choosing again, until its cold check is due."""
    data, _ = _grid_cell(600, "4-8", 3, 5)
    cold = MACE(random_state=0, competence_strength=None).fit(data)
    warm = MACE(random_state=0, competence_strength=None).fit(data, init=cold, check=False)
    assert warm.competence_strength_ == cold.competence_strength_
    assert warm.strength_scores_ == {}
    # a cold check chooses again
    checked = MACE(random_state=0, competence_strength=None).fit(data, init=cold, check=True)
    assert set(checked.strength_scores_) == set(STRENGTHS) and checked.cold_checked_
    result = cold.result(data)
    stored = MACE.from_result(classes=[0, 1], annotator_ids=data.annotator_ids.tolist(),
                              annotator_columns=result.annotator_columns, info=result.info,
                              cold_checked_at=data.n_judgments)
    assert stored.competence_strength_ == cold.competence_strength_


def test_parameter_draws_take_the_fits_strength() -> None:
    from models.evaluation.parameters import RowPrior

    spammed = np.array([[3.0, 1.0], [0.0, 2.0]])  # spamming counts 4 and 2
    knowing = np.array([2.0, 6.0])
    info = {"class_prior": "uniform", "competence_strength": 4.0}
    knowing_spamming, _ = RowPrior.of_fit("mace", {}, info).mace(spammed, knowing)
    share = np.array([8.0 + 1, 6.0 + 1]) / 16  # (knowing, spamming) pooled, + 1 each
    np.testing.assert_allclose(knowing_spamming, 0.5 + 4 * share)
    plain, _ = RowPrior.of_fit("mace", {}, {"class_prior": "uniform"}).mace(spammed, knowing)
    assert plain.tolist() == [0.5, 0.5]
