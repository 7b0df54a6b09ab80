"""AnnotationData.from_rows and the offline loader (file -> AnnotationData)."""

from __future__ import annotations

import numpy as np
import pytest

from app.cli.loading import load_annotation_data
from app.formats.errors import FileFormatError
from models.data import AnnotationData

FILE = (
    "topic\tdoc\tannotator\tlabel\tgold\n"
    "t1\td1\tw1\t0\t2\n"
    "t1\td1\tw1\t2\t2\n"      # repeat: the latest (2) wins
    "t1\td1\tw2\t-2\t2\n"     # could not judge: dropped
    "t1\td2\tw2\t1\t-1\n"
    "t2\td1\tw1\t0\t0\n"
)


def test_from_rows_keeps_latest_drops_ignored_and_binarises() -> None:
    data = AnnotationData.from_rows(
        ["t", "t", "t", "t"], ["a", "a", "b", "b"], ["x", "x", "x", "y"], [0, 1, -2, 2],
        ignore=[-2], relevant_from=1)
    assert data.n_judgments == 2
    assert data.classes.tolist() == [0, 1]
    pairs = zip(data.doc_ids[data.task].tolist(), data.label.tolist(), strict=True)
    assert sorted(pairs) == [("a", 1), ("b", 1)]
    assert any("latest" in note for note in data.notes)


def test_loader_binary_with_gold_column() -> None:
    data = load_annotation_data(FILE)
    assert data.is_binary
    keys = list(zip(data.topic_ids.tolist(), data.doc_ids.tolist(), strict=True))
    assert keys == [("t1", "d1"), ("t1", "d2"), ("t2", "d1")]
    assert data.gold is not None
    assert data.gold.tolist() == [1, -1, 0]
    assert data.counts().tolist() == [[0, 1], [0, 1], [1, 0]]
    # per annotator (w1, w2): judgments of gold tasks and how many equal the gold
    n, agree = data.gold_agreement()
    assert n.tolist() == [2, 0] and agree.tolist() == [2.0, 0.0]


def test_loader_graded_and_qrels_gold() -> None:
    qrels = "t1 0 d1 1\nt1 0 d2 -2\nt2 0 d1 2\n"
    graded = load_annotation_data(FILE, graded=True, gold_qrels=qrels)
    assert graded.classes.tolist() == [0, 1, 2]
    assert graded.gold is not None
    assert graded.gold.tolist() == [1, -1, 2]
    binary = load_annotation_data(FILE, gold_qrels=qrels)
    assert binary.gold is not None
    assert binary.gold.tolist() == [1, -1, 1]  # qrels grade 2 binarised, not dropped


def test_loader_without_topic_column_and_with_features() -> None:
    text = "task,worker,label\nd1,w1,1\nd1,w2,0\nd2,w1,1\n"
    features = "topic\tdoc\tf1\tf2\n0\td1\t0.5\t1.5\n"
    data = load_annotation_data(text, features=features)
    assert data.topic_ids.tolist() == ["0", "0"]
    assert data.features is not None
    np.testing.assert_allclose(data.features[0], [0.5, 1.5])
    # d2 has no vector: it gets the column means of the tasks that have one
    np.testing.assert_allclose(data.features[1], [0.5, 1.5])
    assert any("imputed" in note for note in data.notes)


def test_loader_reports_bad_rows() -> None:
    with pytest.raises(FileFormatError) as info:
        load_annotation_data("doc\tannotator\tlabel\nd1\tw1\tyes\n")
    assert info.value.line == 2


def test_rf10_counts(rf10) -> None:  # type: ignore[no-untyped-def]
    assert rf10.is_binary
    assert 760 <= rf10.n_annotators <= 766  # 766 in the file, a few judged only broken links
    assert rf10.gold is not None
    judged = rf10.judgments_per_task() > 0
    assert int(((rf10.gold >= 0) & judged).sum()) == 3275


def _spelled_out(rng: np.random.Generator, n: int) -> dict:
    """Random judgments as codes into shuffled name lists (ids unsorted, as a database hands
    them out), with repeats, ignored values, gold per task (some ignored or -1) and names that
    sort differently by code point and by locale."""
    topics = ["t10", "t9", "T1", "é", "t1"]
    docs = ["d2", "d10", "D", "d 1", "ß"]
    pairs = [(t, d) for t in topics for d in docs]
    order = rng.permutation(len(pairs))
    task_topics = [pairs[i][0] for i in order]
    task_docs = [pairs[i][1] for i in order]
    names = [f"w{i}" for i in rng.permutation(12)] + ["W", "ä", "w 1"]
    task = rng.integers(0, len(pairs), n)
    annotator = rng.integers(0, len(names), n)
    labels = rng.choice([0, 1, 2, -2], n, p=[0.4, 0.3, 0.2, 0.1])
    task_gold = rng.choice([-1, 0, 1, 2, -2], len(pairs))
    return {"task": task, "annotator": annotator, "labels": labels, "task_topics": task_topics,
            "task_docs": task_docs, "annotator_names": names, "task_gold": task_gold}


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("graded", [False, True])
def test_from_codes_equals_from_rows(seed: int, graded: bool) -> None:
    codes = _spelled_out(np.random.default_rng(seed), 60 + 40 * seed)
    task, annotator = codes["task"], codes["annotator"]
    scale = {"scale": [0, 1, 2]} if graded else {"relevant_from": 1}
    rows = AnnotationData.from_rows(
        [codes["task_topics"][t] for t in task], [codes["task_docs"][t] for t in task],
        [codes["annotator_names"][a] for a in annotator], codes["labels"].tolist(),
        ignore=[-2], gold=[int(codes["task_gold"][t]) for t in task], **scale)
    coded = AnnotationData.from_codes(task, annotator, codes["labels"], ignore=[-2], **scale,
                                      **{k: codes[k] for k in ("task_topics", "task_docs",
                                                               "annotator_names", "task_gold")})
    for name in ("task", "annotator", "label", "topic_ids", "doc_ids", "annotator_ids",
                 "classes", "gold"):
        assert getattr(coded, name).tolist() == getattr(rows, name).tolist(), name
    assert coded.notes == rows.notes


def test_from_codes_reads_only_the_named_tasks_and_annotators() -> None:
    data = AnnotationData.from_codes(
        np.array([2, 2, 0]), np.array([1, 0, 1]), np.array([1, -2, 0]),
        task_topics=["b", "x", "a"], task_docs=["1", "1", "2"],
        annotator_names=["v", "u", "unused"], ignore=[-2], relevant_from=1)
    assert data.topic_ids.tolist() == ["a", "b"] and data.doc_ids.tolist() == ["2", "1"]
    assert data.annotator_ids.tolist() == ["u"]  # v judged only "could not judge"
    assert data.notes == ("dropped 1 'could not judge' judgments",
                          "dropped 1 annotators without a usable judgment")


def test_unique_codes_is_numpys_unique() -> None:
    """from_codes and _assemble count codes instead of sorting them: the same arrays as
    np.unique(codes, return_inverse=True), gaps (unused codes) and out-of-range codes included."""
    from models.data import _unique_codes

    rng = np.random.default_rng(5)
    for codes, size in [(rng.integers(0, 50, 400), 60), (np.array([7, 3, 3, 9]), 10),
                        (np.array([], dtype=np.int64), 4), (np.array([2, 5]), 3),
                        (rng.permutation(np.repeat(np.arange(30), 3)), 30)]:  # every code
        present, inverse = _unique_codes(codes, size)
        expected_present, expected_inverse = np.unique(codes, return_inverse=True)
        assert np.array_equal(present, expected_present)
        assert np.array_equal(inverse, expected_inverse)


@pytest.mark.parametrize("seed", range(4))
def test_latest_per_pair_is_the_stable_sorts_last(seed: int) -> None:
    """The compiled latest judgment per (task, annotator) keeps the rows numpy's way kept:
    the last of each run of equal keys in a stable argsort of task·M + annotator."""
    from models.data_kernels import latest_per_pair

    rng = np.random.default_rng(seed)
    n_tasks, n_annotators, n = int(rng.integers(1, 60)), int(rng.integers(1, 20)), 3000
    task = rng.integers(0, n_tasks, n)
    annotator = rng.integers(0, n_annotators, n)
    key = task * n_annotators + annotator
    order = np.argsort(key, kind="stable")
    last = np.ones(n, dtype=bool)
    last[:-1] = key[order][1:] != key[order][:-1]
    want = np.zeros(n, dtype=bool)
    want[order[last]] = True
    np.testing.assert_array_equal(latest_per_pair(task, annotator, n_tasks, n_annotators), want)
