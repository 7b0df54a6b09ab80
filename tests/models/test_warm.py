"""Warm starts (``fit(data, init=previous)``) checked against cold fits (``models.warm``): a path
of small batches ends at an objective at least as good as a cold fit's, a warm path stuck on a
worse optimum is replaced by the cold fit, and the simulator's last point is no worse than the
cold fit on all judgments."""

from __future__ import annotations

import numpy as np
import pytest

from models.base import no_progress
from models.data import AnnotationData
from models.dawid_skene import DawidSkene
from models.mace import MACE
from models.sampling.simulate import _fit, simulate, subset
from models.synthetic import generate
from models.warm import COLD_CHECK_GROWTH


@pytest.fixture(scope="module")
def synthetic() -> AnnotationData:
    return generate(400, 30, noise_level=(1.0, 3.0), redundancy=5,
                    random_state=11).to_annotation_data(with_features=False)


def two_groups() -> AnnotationData:
    """Two groups of 100 tasks with disjoint annotators (10 each, accuracy 0.9, 5 judgments a
    task), about 70 % of the tasks in class 0 in both."""
    rng = np.random.default_rng(5)
    n_per, n_ann_per, per_task = 100, 10, 5
    truth = (rng.random(2 * n_per) < 0.3).astype(np.int64)
    task, annotator, label = [], [], []
    for i in range(2 * n_per):
        group = i // n_per
        for a in rng.choice(n_ann_per, per_task, replace=False):
            task.append(i)
            annotator.append(group * n_ann_per + a)
            label.append(truth[i] if rng.random() < 0.9 else 1 - truth[i])
    n_ann = 2 * n_ann_per
    return AnnotationData(
        task=np.array(task), annotator=np.array(annotator), label=np.array(label),
        classes=np.array([0, 1]), topic_ids=np.array(["t"] * (2 * n_per)),
        doc_ids=np.array([f"d{i}" for i in range(2 * n_per)]),
        annotator_ids=np.array([f"w{j}" for j in range(n_ann)]), gold=truth)


def test_warm_refits_after_many_small_batches_reach_the_cold_objective(synthetic) -> None:
    """Reveal the judgments in 60 random batches, refitting warm each time (the default check
    schedule): the final refit's objective is at least the cold fit's on the same judgments, less
    1e-4 per judgment (EM stops short of either optimum by about its tolerance)."""
    n = synthetic.n_judgments
    order = np.random.default_rng(0).permutation(n)
    cuts = np.linspace(n // 4, n, 61).astype(int)
    # MACE at its own prior's strength: a chosen one may differ between the refits and the cold
    # fit, and with it the objective (tests/models/test_mace_competence.py)
    for make in (DawidSkene,
                 lambda: MACE(random_state=0, n_restarts=3, competence_strength=0.0)):
        model = make().fit(subset(synthetic, np.sort(order[:cuts[0]])))
        checks = 0
        for cut in cuts[1:]:
            model = make().fit(subset(synthetic, np.sort(order[:cut])), init=model)
            checks += model.cold_checked_
        cold = make().fit(synthetic)
        score = "objective_" if isinstance(model, DawidSkene) else "log_likelihood_"
        assert getattr(model, score) >= getattr(cold, score) - 1e-4 * n
        # The geometric schedule: a check per 10 % of growth, not one per refit.
        assert 0 < checks <= int(np.ceil(np.log(4) / np.log(1 + COLD_CHECK_GROWTH))) + 1


def test_a_warm_path_stuck_on_a_worse_optimum_is_replaced_by_the_cold_fit() -> None:
    """Binary DS's label switching within a group of tasks that shares no annotator with the
    rest: from the cold fit with group B's annotators' confusion rows swapped, warm EM stays
    switched (B's tasks wrong; the likelihood is lower only through the class prior the groups
    share, a 70/30 mix in A against 30/70 in switched B). The check keeps the cold fit.
    Without the population prior (``population_prior=0``): the crowd's centre, shared by the
    groups, pulls B's rows back from the switch, so the default DS does not stay stuck."""
    data = two_groups()
    gold = data.gold
    assert gold is not None
    b = np.arange(data.n_tasks) >= 100
    cold = DawidSkene(population_prior=0).fit(data)
    switched = DawidSkene(population_prior=0).fit(data)
    switched.confusion_ = switched.confusion_.copy()
    switched.confusion_[10:] = switched.confusion_[10:, ::-1, :]  # group B's annotators
    stuck = DawidSkene(population_prior=0).fit(data, init=switched, check=False)
    assert stuck.start_ == "warm" and not stuck.cold_checked_
    assert stuck.objective_ < cold.objective_ - 5.0
    assert np.mean(stuck.labels_[b] == gold[b]) < 0.1 and np.mean(cold.labels_ == gold) > 0.9
    checked = DawidSkene(population_prior=0).fit(data, init=switched, check=True)
    assert checked.start_ == "cold" and checked.cold_checked_
    assert np.array_equal(checked.proba_, cold.proba_)
    assert checked.cold_checked_at_ == data.n_judgments


def test_mace_check_runs_the_cold_fits_restarts(synthetic) -> None:
    """A checked MACE refit runs the warm restart and then the cold fit's restarts with the same
    draws, and keeps the best log-likelihood of all."""
    half = subset(synthetic, np.arange(synthetic.n_judgments // 2))
    previous = MACE(random_state=3, n_restarts=4, competence_strength=0.0).fit(half)
    cold = MACE(random_state=3, n_restarts=4, competence_strength=0.0).fit(synthetic)
    checked = MACE(random_state=3, n_restarts=4, competence_strength=0.0).fit(
        synthetic, init=previous, check=True)
    assert checked.restart_log_likelihoods_[1:] == cold.restart_log_likelihoods_
    assert checked.log_likelihood_ == max(checked.restart_log_likelihoods_)
    unchecked = MACE(random_state=3, n_restarts=4).fit(synthetic, init=previous, check=False)
    assert len(unchecked.restart_log_likelihoods_) == 1 and unchecked.start_ == "warm"


def test_warm_check_schedule(synthetic) -> None:
    """A cold fit counts as checked; a warm refit checks once the judgments have grown by
    COLD_CHECK_GROWTH since the last check, and otherwise carries the last check's count."""
    n = synthetic.n_judgments
    order = np.random.default_rng(1).permutation(n)
    base = int(n / 1.25)
    first = DawidSkene().fit(subset(synthetic, np.sort(order[:base])))
    assert first.start_ == "cold" and first.cold_checked_at_ == base
    small = int(base * (1 + COLD_CHECK_GROWTH / 2))
    second = DawidSkene().fit(subset(synthetic, np.sort(order[:small])), init=first)
    assert not second.cold_checked_ and second.cold_checked_at_ == base
    third = DawidSkene().fit(synthetic, init=second)
    assert third.cold_checked_ and third.cold_checked_at_ == n
    # Unchecked, the refit is the plain warm EM of before: one E step from init, then EM.
    assert np.array_equal(DawidSkene().fit(synthetic, init=second, check=False).proba_,
                          DawidSkene().fit(synthetic, init=second, check=False).proba_)


def test_simulate_end_point_is_no_worse_than_the_cold_fit(synthetic) -> None:
    """The simulator's last point (all judgments revealed) is checked against the cold fit: it
    is the cold fit itself, or a warm fit with a higher objective (a different optimum, which by
    the model's own criterion fits better; its labels may then differ from the cold fit's)."""
    fits: list[DawidSkene] = []

    class Recorded(DawidSkene):
        def fit(self, data, progress=no_progress, *, init=None, check=None):  # type: ignore[no-untyped-def]
            super().fit(data, progress, init=init, check=check)
            fits.append(self)
            return self

    cold = DawidSkene().fit(synthetic)
    for batch in (5, 200):
        fits.clear()
        points = simulate(synthetic, make=lambda s: Recorded(), batch=batch, seeds=[0],
                          strategies=["uncertainty"])
        last = fits[-1]
        assert points[-1].judgments == synthetic.n_judgments and last.cold_checked_
        assert last.objective_ >= cold.objective_
        if last.start_ == "cold":
            assert np.array_equal(last.proba_, cold.proba_)
            assert points[-1].accuracy == pytest.approx(
                np.mean(cold.labels_ == synthetic.gold))
        else:
            assert last.objective_ > cold.objective_


def test_simulate_refit_checks_the_last_point_only_when_warm(synthetic) -> None:
    """``_fit``: cold without a previous model; warm with one, checked at the last point."""
    half = subset(synthetic, np.arange(synthetic.n_judgments // 2))
    previous = _fit(DawidSkene, half, None)
    assert previous.start_ == "cold"
    warm = _fit(DawidSkene, synthetic, previous, last=True)
    assert warm.cold_checked_


@pytest.mark.parametrize("make", [DawidSkene, lambda: MACE(random_state=2, n_restarts=3)])
def test_an_init_rebuilt_from_the_result_refits_as_the_fitted_model(synthetic, make) -> None:
    """``from_result`` (what the service calls on a stored result) gives the warm start the
    fitted model gives, new annotators included; the result records the start and the check."""
    from models.warm import WarmStartUnavailable

    order = np.random.default_rng(4).permutation(synthetic.n_judgments)
    keep = order[: int(0.9 * synthetic.n_judgments)]
    keep = keep[synthetic.annotator[keep] != 0]  # annotator 0 is new in the refit
    before = subset(synthetic, np.sort(keep))
    previous = make().fit(before)
    result = previous.result(before)
    assert result.info["start"] == "cold" and result.info["cold_checked"] is False
    assert result.info["cold_checked_at"] == before.n_judgments
    seen = np.bincount(before.annotator, minlength=before.n_annotators) > 0
    columns = {k: v[seen].tolist() for k, v in result.annotator_columns.items()}
    rebuilt = type(previous).from_result(
        classes=synthetic.classes.tolist(), annotator_ids=before.annotator_ids[seen].tolist(),
        annotator_columns=columns, info=result.info,
        cold_checked_at=result.info["cold_checked_at"])
    # the fitted model's own init, with annotator 0 (no judgment before) left out as stored
    previous.annotator_ids_ = previous.annotator_ids_[seen]
    for name in ("confusion_", "competence_", "spam_dist_"):
        if name in vars(previous):
            setattr(previous, name, getattr(previous, name)[seen])
    for check in (False, True):
        expected = make().fit(synthetic, init=previous, check=check)
        warm = make().fit(synthetic, init=rebuilt, check=check)
        np.testing.assert_array_equal(warm.proba_, expected.proba_)
        assert warm.start_ == expected.start_ and warm.cold_checked_ is check
    missing = dict(columns)
    missing.pop(next(k for k in columns if k.startswith(("p_", "spam_p_"))))
    with pytest.raises(WarmStartUnavailable):
        type(previous).from_result(classes=synthetic.classes.tolist(),
                                   annotator_ids=before.annotator_ids[seen].tolist(),
                                   annotator_columns=missing, info=result.info,
                                   cold_checked_at=1)


def test_the_registry_knows_which_methods_refit_warm() -> None:
    from models.registry import METHOD_PATHS, get_method

    assert {m for m in METHOD_PATHS if get_method(m).warm_startable} == {"ds", "mace"}
