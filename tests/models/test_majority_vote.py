"""Majority vote: vote shares, the documented tie rules, and agreement with crowd-kit."""

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
    mv = MajorityVote().fit(data)
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

    ours = MajorityVote().fit(data)
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
