"""Ordinal-ds's prior of the judges' biases learned from the crowd (``bias_prior_sd=None``, the
default): the scale recovered on data drawn from the model, its tails holding a few extreme
judges without widening it, sparse crowds of many small workers above majority vote (where the
fixed N(0, 1) fell below it), and a fixed prior left as it was. And ordinal-ds's gold-free
read-out (``temper_folds``, models.tempering) on such a crowd."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from models.data import AnnotationData
from models.evaluation.reliability import calibration_event, reliability
from models.majority_vote import MajorityVote
from models.ordinal_ds import OrdinalDawidSkene
from models.synthetic import SyntheticData, crowd_dataset

SparseCrowd = tuple[SyntheticData, AnnotationData, OrdinalDawidSkene]


def _drawn(bias: np.ndarray, *, seed: int, n_tasks: int = 3000, per_task: int = 4,
           k: int = 4, spread: float = 0.5) -> AnnotationData:
    """Judgments from the model itself without spam: z = t + b_j + s ε, cut points l + ½."""
    rng = np.random.default_rng(seed)
    n_judges = bias.shape[0]
    truth = rng.integers(0, k, n_tasks)
    task = np.repeat(np.arange(n_tasks), per_task)
    judge = np.concatenate([rng.choice(n_judges, per_task, replace=False)
                            for _ in range(n_tasks)])
    z = truth[task] + bias[judge] + spread * rng.standard_normal(task.shape[0])
    label = np.searchsorted(np.arange(k - 1) + 0.5, z)
    return AnnotationData(
        task=task, annotator=judge, label=label, topic_ids=np.full(n_tasks, "t"),
        doc_ids=np.array([f"d{i}" for i in range(n_tasks)]),
        annotator_ids=np.array([f"a{j}" for j in range(n_judges)]),
        classes=np.arange(k), gold=truth,
    )


@pytest.mark.parametrize(("sd", "low", "high"), [(0.1, 0.0, 0.2), (0.5, 0.3, 0.6)])
def test_the_crowds_scale_follows_the_planted_spread_of_biases(sd: float, low: float,
                                                               high: float) -> None:
    # 60 judges of about 200 judgments each: the learned t scale sits near the planted sd (a
    # t₄ fitted to Gaussian draws has a scale a little below their sd), and far from the fixed
    # prior's 1 it starts from
    bias = np.random.default_rng(1).normal(0.0, sd, 60)
    model = OrdinalDawidSkene(spam_prior=0.0).fit(_drawn(bias, seed=2))
    centre, scale = model.bias_prior_
    assert low < scale < high
    assert abs(centre - bias.mean()) < 0.1
    info = model.result(_drawn(bias, seed=2)).info["bias_prior"]
    assert info["learned"] is True and info["sd"] == pytest.approx(scale)


def test_a_few_extreme_judges_do_not_widen_the_prior() -> None:
    # 40 judges with biases of sd .15 and three far off (±2.5 grades on a 5-grade scale): the
    # fitted biases spread by more than .5, a Gaussian population's sd would follow them, the
    # t's scale stays with the many (its tails take the three)
    rng = np.random.default_rng(3)
    bias = np.concatenate([rng.normal(0.0, 0.15, 40), [2.5, -2.5, 2.5]])
    data = _drawn(bias, seed=4, k=5)
    model = OrdinalDawidSkene(spam_prior=0.0).fit(data)
    _, scale = model.bias_prior_
    assert np.std(model.bias_) > 0.5
    assert scale < 0.3
    fixed = OrdinalDawidSkene(spam_prior=0.0, bias_prior_sd=1.0).fit(data)
    assert np.mean(model.labels_ == data.gold) > np.mean(fixed.labels_ == data.gold)


@pytest.fixture(scope="module", params=[4, 5])
def sparse_crowd(request: pytest.FixtureRequest) -> SparseCrowd:
    """1,000 workers of about six judgments each (3 a task, neighbouring-grade errors, 15 %
    spammers) on ``request.param`` grades, without its gold, and ordinal-ds with its defaults
    fitted on it once: the accuracy test and the read-out test read the same default fit (it
    was fitted once in each; ordinal-ds leaves gold out unless ``use_gold``, and no test
    mutates it)."""
    s = crowd_dataset(2000, 1000, grades=request.param, redundancy=3, alpha=0.0,
                      random_state=0)
    data = replace(s.to_annotation_data(with_features=False), gold=None)
    return s, data, OrdinalDawidSkene().fit(data)


def test_a_sparse_crowd_of_many_workers_stays_above_majority_vote(
        sparse_crowd: SparseCrowd) -> None:
    # with the fixed N(0, 1) a worker's handful of judgments could give it a bias of a grade,
    # and ordinal-ds fell .02-.03 below majority vote (bench_robust.py crowds)
    s, data, learned_model = sparse_crowd

    def accuracy(model) -> float:  # noqa: ANN001 - a fitted aggregator
        return float(np.mean(model.labels_ == s.truth))

    mv = accuracy(MajorityVote().fit(data))
    fixed = accuracy(OrdinalDawidSkene(bias_prior_sd=1.0).fit(data))
    learned = accuracy(learned_model)
    assert fixed < mv  # the failure this prior mends, still there with the fixed prior
    assert learned > mv + 0.01
    assert learned > fixed + 0.02
    assert learned_model.bias_prior_[1] < 0.3  # the generator's workers have no bias of their own


def test_a_fixed_prior_is_reported_as_fixed() -> None:
    bias = np.random.default_rng(5).normal(0.0, 0.3, 20)
    data = _drawn(bias, seed=6, n_tasks=400)
    model = OrdinalDawidSkene(bias_prior_sd=0.7).fit(data)
    assert model.bias_prior_ == (0.0, 0.7)
    assert model.result(data).info["bias_prior"] == {"centre": 0.0, "sd": 0.7, "learned": False}


def test_the_read_out_calibrates_a_sparse_crowd_of_many_workers(
        sparse_crowd: SparseCrowd) -> None:
    # The plug-in posterior of six judgments a worker is over-confident (top-class ECE .07-.08
    # here); the cross-fitted τ (about .6, the default read-out) brings it under .03 and keeps
    # every label
    s, data, read = sparse_crowd
    plain = OrdinalDawidSkene(temper_folds=0).fit(data)
    np.testing.assert_array_equal(read.labels_, plain.labels_)
    assert read.temperature_ < 0.8

    def ece(model: OrdinalDawidSkene) -> float:
        return reliability(*calibration_event(model.proba_, s.truth)).ece

    assert ece(plain) > 0.06
    assert ece(read) < 0.03
