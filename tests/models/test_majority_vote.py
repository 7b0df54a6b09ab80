"""Majority vote: vote shares, the exchangeable posterior, the documented tie rules, and agreement
with crowd-kit."""

from __future__ import annotations

import numpy as np
import pytest

from models.data import AnnotationData
from models.majority_vote import MajorityVote
from models.registry import InvalidParams, make_aggregator


def _toy(labels_per_task: list[list[int]], n_classes: int = 2) -> AnnotationData:
    task = np.repeat(np.arange(len(labels_per_task)), [len(v) for v in labels_per_task])
    label = np.concatenate([np.asarray(v, dtype=np.int64) for v in labels_per_task])
    annotator = np.concatenate([np.arange(len(v)) for v in labels_per_task])
    n_tasks = len(labels_per_task)
    return AnnotationData(
        task=task.astype(np.int64), annotator=annotator.astype(np.int64), label=label,
        topic_ids=np.full(n_tasks, "t"), doc_ids=np.array([f"d{i}" for i in range(n_tasks)]),
        annotator_ids=np.array([f"a{j}" for j in range(int(annotator.max()) + 1)]),
        classes=np.arange(n_classes),
    )


def test_vote_shares_and_hard_labels_binary() -> None:
    data = _toy([[1, 1, 0], [0, 0, 0, 1], [1, 0]])
    mv = MajorityVote(probability="share").fit(data)
    np.testing.assert_allclose(mv.proba_, [[1 / 3, 2 / 3], [3 / 4, 1 / 4], [0.5, 0.5]])
    assert mv.labels_.tolist() == [1, 0, 0]  # the tie goes to the lowest class by default
    result = mv.result(data)
    assert result.task_columns["tie"].tolist() == [0.0, 0.0, 1.0]
    assert result.labels.tolist() == [1, 0, 0]


def test_tie_rules_multiclass() -> None:
    # task 0: classes 0 and 2 tie; task 1: 1 and 2 tie; task 2: no tie; task 3: three-way tie.
    data = _toy([[0, 2], [2, 1, 2, 1], [1, 1, 0], [0, 1, 2]], n_classes=3)
    assert MajorityVote(tie="lowest").fit(data).labels_.tolist() == [0, 1, 1, 0]
    assert MajorityVote(tie="highest").fit(data).labels_.tolist() == [2, 2, 1, 2]
    draws = np.array([MajorityVote(tie="random", random_state=s).fit(data).labels_
                      for s in range(200)])
    assert set(draws[:, 0]) == {0, 2}
    assert set(draws[:, 1]) == {1, 2}
    assert set(draws[:, 2]) == {1}
    assert set(draws[:, 3]) == {0, 1, 2}
    # Reproducible for a seed, and the vote shares are the same whatever the rule.
    again = MajorityVote(tie="random", random_state=3).fit(data)
    np.testing.assert_array_equal(again.labels_, draws[3])
    np.testing.assert_allclose(again.proba_.sum(axis=1), 1.0)


def test_tie_is_independent_of_input_order() -> None:
    a = _toy([[1, 0], [0, 1]])
    for tie in ("lowest", "highest"):
        assert MajorityVote(tie=tie).fit(a).labels_[0] == MajorityVote(tie=tie).fit(a).labels_[1]


def test_unjudged_task_is_uniform() -> None:
    data = _toy([[1], [0]])
    data = AnnotationData(task=data.task, annotator=data.annotator, label=data.label,
                          topic_ids=np.array(["t", "t", "t"]), doc_ids=np.array(["a", "b", "c"]),
                          annotator_ids=data.annotator_ids, classes=data.classes)
    mv = MajorityVote().fit(data)
    np.testing.assert_allclose(mv.proba_[2], [0.5, 0.5])
    assert mv.result(data).task_columns["tie"][2] == 0.0


def test_registry_validates_tie() -> None:
    assert isinstance(make_aggregator("mv", {"tie": "highest"}), MajorityVote)
    with pytest.raises(InvalidParams):
        make_aggregator("mv", {"tie": "sideways"})
    with pytest.raises(InvalidParams):
        make_aggregator("mv", {"tie": 1})


def _equal_where_no_tie(data: AnnotationData, helpers) -> None:  # type: ignore[no-untyped-def]
    from crowdkit.aggregation import MajorityVote as CrowdKitMV

    ours = MajorityVote(probability="share").fit(data)
    theirs = helpers.crowdkit_labels(CrowdKitMV().fit_predict(helpers.to_crowdkit(data)),
                                     data.n_tasks)
    clear = ~ours.tied_ & (data.judgments_per_task() > 0)
    assert clear.sum() > 0.5 * data.n_tasks
    np.testing.assert_array_equal(ours.labels_[clear], theirs[clear])
    # crowd-kit's soft MV is the same vote share.
    proba = CrowdKitMV().fit_predict_proba(helpers.to_crowdkit(data))
    judged = np.flatnonzero(data.judgments_per_task() > 0)
    np.testing.assert_allclose(proba.reindex(judged)[1].to_numpy(), ours.proba_[judged, 1])


def test_equals_crowdkit_where_no_tie_rf10(rf10, helpers) -> None:  # type: ignore[no-untyped-def]
    _equal_where_no_tie(rf10, helpers)


def test_equals_crowdkit_where_no_tie_synthetic(synth_small, helpers) -> None:  # type: ignore[no-untyped-def]
    _equal_where_no_tie(synth_small.to_annotation_data(), helpers)


def _exchangeable_votes(p: float, n_votes: int, n_tasks: int, correlation: float,
                        seed: int) -> tuple[AnnotationData, np.ndarray]:
    """Binary tasks, truth uniform; each task's votes right with probability p_i drawn from a
    Beta of mean p whose votes correlate by ``correlation`` (0: every p_i = p, binomial)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, n_tasks)
    if correlation > 0:
        s = 1.0 / correlation - 1.0
        p_task = rng.beta(s * p, s * (1.0 - p), n_tasks)
    else:
        p_task = np.full(n_tasks, p)
    right = rng.random((n_tasks, n_votes)) < p_task[:, None]
    labels = np.where(right, truth[:, None], 1 - truth[:, None])
    data = _toy([row.tolist() for row in labels])
    return data, truth


def _ece(p: np.ndarray, y: np.ndarray) -> float:
    from models.evaluation.reliability import reliability

    return float(reliability(p, y).ece)


@pytest.mark.parametrize("correlation", [0.0, 0.05])
def test_posterior_recovers_the_crowd_and_is_calibrated(correlation: float) -> None:
    """Votes from the model itself: the posterior is calibrated where the vote shares are not,
    its argmax is the majority; independent votes are read as such (p recovered, correlation
    about 0), correlated ones as correlated (with five votes a task (p, s) sit on a ridge of the
    likelihood: p is not checked; at correlation .2 a fifth of the tasks have p_i < ½ and are
    read as the other class, which no model of the votes can tell)."""
    data, truth = _exchangeable_votes(0.7, 5, 4000, correlation, seed=3)
    mv = MajorityVote().fit(data)
    shares = MajorityVote(probability="share").fit(data)
    icc = 1.0 / (1.0 + mv.concentration_)
    if correlation == 0:
        assert mv.accuracy_ == pytest.approx(0.7, abs=0.02)
        assert icc < 0.02
    else:
        assert icc > 0.02
    assert _ece(mv.proba_[:, 1], truth == 1) < 0.03
    assert _ece(shares.proba_[:, 1], truth == 1) > 0.05
    np.testing.assert_array_equal(mv.labels_, shares.labels_)
    np.testing.assert_array_equal(np.argmax(mv.proba_, axis=1), shares.labels_)
    assert mv.result(data).info["vote_accuracy"] == mv.accuracy_


def test_posterior_keeps_ties_and_order_multiclass() -> None:
    data = _toy([[0, 2], [2, 1, 2, 1], [1, 1, 0], [0, 1, 2], [2, 2, 2], [0, 0, 1]] * 20,
                n_classes=3)
    mv = MajorityVote().fit(data)
    np.testing.assert_allclose(mv.proba_[0, 0], mv.proba_[0, 2])
    np.testing.assert_allclose(mv.proba_[3], [1 / 3] * 3)
    assert mv.proba_[4, 2] > mv.proba_[2, 1] > 1 / 3  # 3 of 3 votes beat 2 of 3
    np.testing.assert_array_equal(mv.labels_, MajorityVote(probability="share").fit(data).labels_)


def test_single_votes_keep_the_shares() -> None:
    data = _toy([[1], [0], [1]])
    np.testing.assert_allclose(MajorityVote().fit(data).proba_, [[0, 1], [1, 0], [0, 1]])


def _scipy_fit(counts: np.ndarray, compiled_loss: bool = False
               ) -> tuple[tuple[float, float], tuple[float, float, float, float, float]]:
    """exchangeable_fit through scipy's optimisers, as it was before 2026-11-27 (mvcli): rows by
    np.unique(axis=0), the loss in numpy through scipy's logsumexp (or, ``compiled_loss``, the
    kernels' own loss). Returns (p, s) and the searches' (a, loss, a, log s, loss)."""
    import scipy.optimize
    from scipy.special import logsumexp

    from models import majority_vote_kernels as kernels
    from models.majority_vote import _LOG_S_BOUNDS, _log_votes

    k = counts.shape[1]
    rows, weight = np.unique(counts, axis=0, return_counts=True)
    whole, totals = rows.astype(np.int64), rows.sum(axis=1).astype(np.int64)
    scratch = (np.empty(int(whole.max()) + 1), np.empty(int(whole.max()) + 1),
               np.empty(int(totals.max()) + 1), np.empty(k))

    def unpack(x: np.ndarray) -> tuple[float, float]:
        return 1.0 / k + (1.0 - 1.0 / k) / (1.0 + np.exp(-x[0])), float(np.exp(x[1]))

    def loss(x: np.ndarray) -> float:
        if compiled_loss:
            return kernels._loss(float(x[0]), float(x[1]), whole, totals,
                                 weight.astype(np.float64), *scratch)
        return -float(logsumexp(_log_votes(rows, *unpack(x)), axis=1) @ weight)

    high = _LOG_S_BOUNDS[1]
    single = scipy.optimize.minimize_scalar(lambda a: loss(np.array([a, high])),
                                            bounds=(-12.0, 12.0), method="bounded")
    grid = [np.array([a, b]) for a in np.linspace(-6.0, 6.0, 12)
            for b in np.linspace(*_LOG_S_BOUNDS, 12)]
    res = scipy.optimize.minimize(loss, min(grid, key=loss), method="Nelder-Mead",
                                  bounds=[(-12.0, 12.0), _LOG_S_BOUNDS],
                                  options={"xatol": 1e-6, "fatol": 1e-9, "maxiter": 2000})
    searches = (float(single.x), float(single.fun), float(res.x[0]), float(res.x[1]),
                float(res.fun))
    if float(single.fun) - float(res.fun) > 0.5 * np.log(max(int(weight.sum()), 2)):
        return unpack(res.x), searches
    return unpack(np.array([single.x, high])), searches


def _crowd(seed: int, n: int, k: int, correlation: float) -> np.ndarray:
    """Vote counts (n, k) of a crowd whose tasks differ in difficulty by ``correlation``."""
    rng = np.random.default_rng(seed)
    task = np.repeat(np.arange(n), rng.integers(2, int(rng.integers(3, 12)), n))
    truth = rng.integers(0, k, n)
    share = rng.beta(8 * (1 - correlation) + 1, 2, n)
    right = rng.random(task.shape[0]) < share[task]
    label = np.where(right, truth[task], rng.integers(0, k, task.shape[0]))
    counts = np.zeros((n, k))
    np.add.at(counts, (task, label), 1.0)
    return counts


@pytest.mark.parametrize("seed", range(12))
def test_compiled_searches_are_scipys(seed: int) -> None:
    """The compiled bounded search and Nelder–Mead take scipy's steps: on the same (compiled)
    loss they end on the same bits, point and value, both searches."""
    from models import majority_vote_kernels as kernels
    from models.majority_vote import _LOG_S_BOUNDS

    rng = np.random.default_rng(seed)
    counts = _crowd(seed, int(rng.integers(50, 3000)), int(rng.integers(2, 5)),
                    float(rng.uniform(0.0, 0.6)))
    rows, weight = np.unique(counts, axis=0, return_counts=True)
    got = kernels.exchangeable_search(
        rows.astype(np.int64), weight.astype(np.float64), np.linspace(-6.0, 6.0, 12),
        np.linspace(*_LOG_S_BOUNDS, 12), np.array([-12.0, _LOG_S_BOUNDS[0]]),
        np.array([12.0, _LOG_S_BOUNDS[1]]))
    assert got == _scipy_fit(counts, compiled_loss=True)[1]


def test_compiled_loss_is_numpys() -> None:
    """The compiled loss equals numpy's (``_log_votes`` and logsumexp) to rounding, where the
    log-Γ differences of before lost up to nine digits at large s."""
    from scipy.special import logsumexp

    from models import majority_vote_kernels as kernels
    from models.majority_vote import _log_votes

    counts = _crowd(3, 2000, 3, 0.3)
    rows, weight = np.unique(counts, axis=0, return_counts=True)
    whole, totals = rows.astype(np.int64), rows.sum(axis=1).astype(np.int64)
    scratch = (np.empty(int(whole.max()) + 1), np.empty(int(whole.max()) + 1),
               np.empty(int(totals.max()) + 1), np.empty(3))
    for a, b in [(-3.0, -5.0), (0.2, 0.0), (1.5, 3.9), (6.0, 14.0), (-11.9, 12.0)]:
        p, s = 1.0 / 3 + (2.0 / 3) / (1.0 + np.exp(-a)), float(np.exp(b))
        want = -float(logsumexp(_log_votes(rows, p, s), axis=1) @ weight)
        got = kernels._loss(a, b, whole, totals, weight.astype(np.float64), *scratch)
        assert got == pytest.approx(want, rel=1e-13)


def test_log_rising_is_exact_at_large_arguments() -> None:
    """log Γ(n + a) − log Γ(a) = log Π_{j<n} (a + j): the product of a's binary value and
    whole numbers taken exactly (Fraction), against the table, for the concentrations the fit
    reaches (s up to e^14) and small ones."""
    import math
    from fractions import Fraction

    from models.majority_vote import _log_rising

    counts = np.array([[0.0, 1.0, 5.0, 20.0]])
    for a in [float(np.exp(14.0)), 1234.5, 0.73, float(np.exp(-5.0)) * 0.01]:
        got = _log_rising(counts, a)[0]
        for n, value in zip(counts[0].astype(int), got, strict=True):
            product = math.prod([Fraction(a) + j for j in range(n)], start=Fraction(1))
            exact = math.log(product.numerator) - math.log(product.denominator)
            assert value == pytest.approx(exact, rel=1e-14, abs=1e-14)


@pytest.mark.parametrize(("k", "top"), [(2, 6), (3, 4), (4, 30), (2, 5000)])
def test_unique_rows_is_numpys(k: int, top: int) -> None:
    """The counted unique rows equal np.unique(axis=0)'s, order, inverse and counts (the last
    case too wide to count: np.unique's own path)."""
    from models.majority_vote import unique_rows

    rng = np.random.default_rng(k * top)
    counts = rng.integers(0, top, size=(3000, k)).astype(np.float64)
    counts[:7] = 0.0  # unjudged tasks
    rows, inverse, weight = unique_rows(counts)
    want_rows, want_inverse, want_weight = np.unique(counts, axis=0, return_inverse=True,
                                                     return_counts=True)
    np.testing.assert_array_equal(rows, want_rows)
    np.testing.assert_array_equal(inverse, want_inverse.reshape(-1))
    np.testing.assert_array_equal(weight, want_weight)
    assert rows.dtype == counts.dtype


@pytest.mark.parametrize("correlation", [0.0, 0.3])
def test_fast_fit_equals_the_reference_path(correlation: float) -> None:
    """MV's fit from the distinct rows equals scipy's optimisers on numpy's loss over
    np.unique's rows, to the searches' precision: the compiled loss differs from numpy's in the
    last bit (C library exp and log, a sum in order for a dot), which moves the searches' stops
    within their tolerance (docs/models.md). The posterior (fit, posterior of the distinct
    rows, gather) equals numpy's on every task bit for bit, and so do the tie rules."""
    from models.majority_vote import exchangeable_fit, exchangeable_posterior

    rng = np.random.default_rng(11)
    n, k = 2000, 3
    per_task = rng.integers(1, 7, n)
    task = np.repeat(np.arange(n), per_task)
    truth = rng.integers(0, k, n)
    share = rng.beta(8 * (1 - correlation) + 1, 2, n)  # a task's own accuracy: correlated votes
    right = rng.random(task.shape[0]) < share[task]
    label = np.where(right, truth[task], rng.integers(0, k, task.shape[0]))
    data = AnnotationData(task=task, annotator=rng.integers(0, 40, task.shape[0]), label=label,
                          topic_ids=np.full(n + 5, "t"),
                          doc_ids=np.array([f"d{i}" for i in range(n + 5)]),
                          annotator_ids=np.array([f"a{j}" for j in range(40)]),
                          classes=np.arange(k))
    counts = data.counts().astype(np.float64)
    several = counts.sum(axis=1) > 1
    (p, s), _ = _scipy_fit(counts[several])
    np.testing.assert_allclose(exchangeable_fit(counts[several]), (p, s), rtol=1e-6)
    fitted = MajorityVote().fit(data)
    assert (fitted.accuracy_, fitted.concentration_) == exchangeable_fit(counts[several])
    want = exchangeable_posterior(counts, fitted.accuracy_, fitted.concentration_)
    want[counts.sum(axis=1) == 0] = 1.0 / k
    np.testing.assert_array_equal(fitted.proba_, want)
    np.testing.assert_array_equal(fitted.counts_, counts)
    np.testing.assert_array_equal(fitted.shares_, MajorityVote(probability="share")
                                  .fit(data).proba_)
    for tie in ("lowest", "highest"):
        top = counts.max(axis=1, keepdims=True)
        tied = counts == top
        ref = (np.argmax(tied, axis=1) if tie == "lowest"
               else k - 1 - np.argmax(tied[:, ::-1], axis=1))
        np.testing.assert_array_equal(MajorityVote(tie=tie).fit(data).labels_, ref)


def test_wide_rows_take_numpys_unique() -> None:
    """Votes too many to count rows by their number (base^K > 2^24) take np.unique's path:
    the same posterior as numpy's on every task."""
    from models.majority_vote import exchangeable_posterior

    data = _toy([[0] * 300 + [1] * 5, [1, 1, 0], [0, 1], [2, 2, 1, 0], [], [0, 0, 0, 2]] * 3,
                n_classes=3)
    fitted = MajorityVote().fit(data)
    counts = data.counts().astype(np.float64)
    want = exchangeable_posterior(counts, fitted.accuracy_, fitted.concentration_)
    want[counts.sum(axis=1) == 0] = 1.0 / 3
    np.testing.assert_array_equal(fitted.proba_, want)
    np.testing.assert_array_equal(fitted.labels_, [0, 1, 0, 2, 0, 0] * 3)
