"""Ordinal MACE (models.mace_ordinal): a knowing judge reports the truth up to one grade."""

from __future__ import annotations

import numpy as np

from models.data import AnnotationData
from models.mace import MACE
from models.mace_ordinal import confusion, ordinal_wanted
from models.majority_vote import MajorityVote
from models.synthetic import crowd_dataset, judges_dataset


def _model_data(seed: int) -> tuple[AnnotationData, np.ndarray]:
    """Data drawn from the ordinal MACE model itself: 10 judges grade 800 tasks on 0-3; judge
    0 knows with probability .8 and then reports one grade up 80 % of the time (a lenient
    judge), the others report the truth 90 % of the time, one grade off 5 % each way."""
    rng = np.random.default_rng(seed)
    n_tasks, n_judges, k = 800, 10, 4
    truth = rng.choice(k, size=n_tasks, p=[0.4, 0.3, 0.2, 0.1])
    theta = np.full(n_judges, 0.8)
    shift = np.tile([0.05, 0.9, 0.05], (n_judges, 1))
    shift[0] = [0.0, 0.2, 0.8]
    spam = np.full((n_judges, k), 1.0 / k)
    matrix = confusion(np.stack([1 - theta, theta], axis=1), shift, spam)  # [j, t, l]
    task = np.repeat(np.arange(n_tasks), n_judges)
    judge = np.tile(np.arange(n_judges), n_tasks)
    p = matrix[judge, truth[task]]
    label = (rng.random(task.shape[0])[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    data = AnnotationData(task=task, annotator=judge, label=label.astype(np.int64),
                          topic_ids=np.full(n_tasks, "t"),
                          doc_ids=np.array([f"d{i}" for i in range(n_tasks)]),
                          annotator_ids=np.array([f"j{j}" for j in range(n_judges)]),
                          classes=np.arange(k))
    return data, truth


def test_confusion_rows_are_distributions_and_clip_at_the_ends() -> None:
    theta = np.array([[0.3, 0.7]])
    matrix = confusion(theta, np.array([[0.2, 0.5, 0.3]]), np.full((1, 4), 0.25))
    np.testing.assert_allclose(matrix.sum(axis=2), 1.0)
    # truth 0: a report one grade down stays at 0; truth 3: one up stays at 3
    assert np.isclose(matrix[0, 0, 0], 0.7 * 0.7 + 0.3 * 0.25)
    assert np.isclose(matrix[0, 3, 3], 0.7 * 0.8 + 0.3 * 0.25)
    assert np.isclose(matrix[0, 1, 2], 0.7 * 0.3 + 0.3 * 0.25)


def test_recovers_a_lenient_judges_shift() -> None:
    """The lenient judge's δ_up is found (.8 in the generator), the others' stay small, and the
    truth is recovered better than by majority vote."""
    data, truth = _model_data(0)
    fit = MACE(random_state=0, knowing="ordinal", temper_folds=0).fit(data)
    assert fit.ordinal_
    assert fit.shift_[0, 2] > 0.6, fit.shift_[0]
    assert np.all(fit.shift_[1:, 2] < 0.2) and np.all(fit.shift_[1:, 0] < 0.2), fit.shift_
    assert np.all(np.abs(fit.competence_ - 0.8) < 0.1), fit.competence_
    mv = MajorityVote().fit(data)
    assert np.mean(fit.labels_ == truth) > np.mean(mv.labels_ == truth)


def test_default_beats_majority_vote_on_a_graded_panel() -> None:
    """12 independent judges on 0-3 (bench_robust.py's first judge set): the default (ordinal,
    automatically) above majority vote by .03 or more, where MACE's exact knowing is below it."""
    s = judges_dataset(1000, 12, judge_correlation=0.0, leniency=0.0, noise=0.8, random_state=1)
    data = s.to_annotation_data(with_features=False)
    mv = float(np.mean(MajorityVote().fit(data).labels_ == s.truth))
    default = MACE(random_state=0, n_restarts=3).fit(data)
    exact = MACE(random_state=0, n_restarts=3, knowing="exact").fit(data)
    assert default.ordinal_ and not exact.ordinal_
    assert default.result(data).info["knowing"] == "ordinal"
    assert float(np.mean(default.labels_ == s.truth)) > mv + 0.03
    assert float(np.mean(exact.labels_ == s.truth)) < mv


def test_sparse_and_binary_data_keep_macess_fit() -> None:
    """A sparse graded crowd and a dense binary panel: ``knowing="auto"`` is MACE's fit, bit
    for bit the same as ``knowing="exact"``."""
    sparse = crowd_dataset(400, 60, grades=4, random_state=0).to_annotation_data(
        with_features=False)
    binary = judges_dataset(200, 10, grades=2, random_state=0).to_annotation_data(
        with_features=False)
    for data in (sparse, binary):
        assert not ordinal_wanted(data)
        auto = MACE(random_state=0, n_restarts=2, temper_folds=0).fit(data)
        exact = MACE(random_state=0, n_restarts=2, temper_folds=0, knowing="exact").fit(data)
        assert not auto.ordinal_
        np.testing.assert_array_equal(auto.proba_, exact.proba_)
        assert "knowing" not in auto.result(data).info


def test_only_draw_replays_the_kept_restart() -> None:
    """The read-out's half fits (``only_draw``) reproduce the ordinal fit's kept run."""
    data, _ = _model_data(1)
    full = MACE(random_state=3, temper_folds=0, knowing="ordinal").fit(data)
    one = MACE(random_state=3, temper_folds=0, knowing="ordinal").fit(
        data, only_draw=full.start_draw_)
    np.testing.assert_array_equal(one.proba_, full.proba_)
    assert one.class_prior_used_ == full.class_prior_used_
