"""models.onehot's rows by task and its compiled sums equal scipy's matrices and products bit for
bit (np.array_equal, not allclose): DS, IBCC, EBCC and ordinal-ds must not move. Also the other
compiled passes of branch ds10m against the numpy they replace: the read-out's judgment table,
IBCC's normaliser, DS's warm start without the id look-up."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse

from models import bcc_kernels
from models.bcc import _normalise_log
from models.data import AnnotationData
from models.dawid_skene import DawidSkene, _aligned_parameters
from models.onehot import OneHot
from models.tempering import _TINY, judgment_table


def _judgments(seed: int, n: int = 4000, n_tasks: int = 700, n_columns: int = 90,
               repeats: bool = False, sort: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    # distinct (task, column) pairs; the last tasks: nobody judged them
    pair = rng.choice((n_tasks - 5) * n_columns, n, replace=False)
    task, column = pair // n_columns, pair % n_columns
    if repeats:  # the same (task, column) several times, apart in the file
        copied = slice(n // 2, n // 2 + n // 5)
        task[: n // 5], column[: n // 5] = task[copied], column[copied]
    if sort:
        order = np.argsort(task, kind="stable")
        task, column = task[order], column[order]
    return task, column


@pytest.mark.parametrize(("repeats", "sort"), [(False, False), (True, False), (True, True)])
@pytest.mark.parametrize("width", [1, 2, 3, 20])
def test_sums_equal_scipys_products(repeats: bool, sort: bool, width: int) -> None:
    n_tasks, n_columns = 700, 90
    task, column = _judgments(7, repeats=repeats, sort=sort)
    rows = OneHot.build(task, column, n_tasks, n_columns)
    # the matrices DS and IBCC built before: coordinates, duplicates summed, rows sorted
    by_cell = scipy.sparse.csr_matrix((np.ones(task.shape[0]), (column, task)),
                                      shape=(n_columns, n_tasks))
    by_task = by_cell.T.tocsr()
    assert np.array_equal(rows.ptr, by_task.indptr)
    assert np.array_equal(rows.col, by_task.indices)
    assert (rows.count.size > 0) == repeats
    data = rows.count if rows.count.size else np.ones(rows.col.shape[0])
    assert np.array_equal(data, by_task.data)
    assert np.array_equal(rows.csr.toarray(), by_task.toarray())

    rng = np.random.default_rng(8)
    table = rng.normal(size=(n_columns, width)) * 10.0 ** rng.uniform(-3, 3, (n_columns, width))
    weights = rng.random((n_tasks, width))
    # one product per column of the table (DS), or one multi-vector product (IBCC)
    per_column = np.stack([by_task @ table[:, c] for c in range(width)], axis=1)
    assert np.array_equal(rows.row_sums(table), per_column)
    assert np.array_equal(rows.row_sums(table), by_task @ table)
    class_major = np.empty((width, n_tasks))
    rows.row_sums(table, class_major.T)
    assert np.array_equal(class_major, per_column.T)
    expected = np.stack([by_cell @ np.ascontiguousarray(weights[:, c]) for c in range(width)],
                        axis=1)
    assert np.array_equal(rows.column_sums(weights), expected)
    assert np.array_equal(rows.column_sums(weights), by_task.T @ weights)
    assert np.array_equal(rows.column_sums(np.asfortranarray(weights)), expected)
    assert np.array_equal(rows.judgments_per_column(),
                          np.bincount(column, minlength=n_columns).astype(float))


def test_empty_rows_and_no_judgments() -> None:
    rows = OneHot.build(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), 4, 3)
    assert np.array_equal(rows.ptr, np.zeros(5))
    assert np.array_equal(rows.row_sums(np.ones((3, 2))), np.zeros((4, 2)))
    assert np.array_equal(rows.column_sums(np.ones((4, 2))), np.zeros((3, 2)))


@pytest.mark.parametrize("k", [2, 3])
def test_judgment_table_equals_numpys(k: int) -> None:
    rng = np.random.default_rng(k)
    n, n_tasks, n_ann = 3000, 400, 60
    data = AnnotationData(
        task=rng.integers(0, n_tasks, n), annotator=rng.integers(0, n_ann, n),
        label=rng.integers(0, k, n), topic_ids=np.zeros(n_tasks, dtype="U1"),
        doc_ids=np.zeros(n_tasks, dtype="U1"), annotator_ids=np.zeros(n_ann, dtype="U1"),
        classes=np.arange(k))
    confusion = rng.dirichlet(np.ones(k), size=(n_ann, k))
    confusion[0, 0] = np.eye(k)[0]  # zeros: the floor at _TINY
    prior = rng.dirichlet(np.ones(k))
    rows = rng.random(n) < 0.5
    table, others = judgment_table(prior, confusion, data, rows)
    # the numpy it replaces (main before 2026-11-28)
    annotator, label, task = data.annotator[rows], data.label[rows], data.task[rows]
    for t in range(k):
        expected = np.log(np.maximum(confusion[annotator, t, label], _TINY))
        sums = np.bincount(task, weights=expected, minlength=n_tasks)
        assert np.array_equal(table[t], expected)
        assert np.array_equal(others[t], np.log(max(prior[t], _TINY)) + sums[task] - expected)


@pytest.mark.parametrize("k", [2, 3, 5])
def test_ibcc_normaliser_equals_numpys(k: int) -> None:
    rng = np.random.default_rng(k)
    log_joint = rng.normal(size=(2000, k)) * 40.0
    log_joint[rng.random((2000, k)) < 0.2] = -np.inf  # clamped gold rules classes out
    log_joint[np.arange(2000), rng.integers(0, k, 2000)] = rng.normal(size=2000)
    top = log_joint[:, 0].copy()
    for c in range(1, k):
        np.maximum(top, log_joint[:, c], out=top)
    p = log_joint - top[:, None]
    np.exp(p, out=p)
    total = p[:, 0].copy()
    for c in range(1, k):
        total += p[:, c]
    p /= total[:, None]
    got, got_norm = _normalise_log(log_joint)
    assert np.array_equal(got, p)
    assert np.array_equal(got_norm, np.log(total) + top)
    shifted, row_top = np.empty_like(log_joint), np.empty(2000)
    nan_row = log_joint.copy()
    nan_row[0, k - 1] = np.nan
    bcc_kernels.shift_rows(nan_row, row_top, shifted)
    assert np.isnan(row_top[0]) and not np.isnan(row_top[1:]).any()


def test_warm_start_same_annotators_skips_the_look_up() -> None:
    rng = np.random.default_rng(3)
    n_ann, k = 30, 2
    ids = np.array([f"w{j}" for j in range(n_ann)])
    init = DawidSkene()
    init.annotator_ids_ = ids
    init.prior_ = np.array([0.4, 0.6])
    init.confusion_ = rng.dirichlet(np.ones(k), size=(n_ann, k))
    data = AnnotationData(
        task=np.zeros(1, dtype=np.int64), annotator=np.zeros(1, dtype=np.int64),
        label=np.zeros(1, dtype=np.int64), topic_ids=np.zeros(1, dtype="U1"),
        doc_ids=np.zeros(1, dtype="U1"), annotator_ids=ids.copy(), classes=np.arange(k))
    prior, confusion = _aligned_parameters(init, data)
    assert np.array_equal(prior, init.prior_) and np.array_equal(confusion, init.confusion_)
    assert confusion is not init.confusion_ and prior is not init.prior_
    # other annotators: matched by id, a new one gets the mean
    other = AnnotationData(
        task=data.task, annotator=data.annotator, label=data.label, topic_ids=data.topic_ids,
        doc_ids=data.doc_ids, annotator_ids=np.array(["w3", "new", "w0"]), classes=np.arange(k))
    _, confusion = _aligned_parameters(init, other)
    assert np.array_equal(confusion[0], init.confusion_[3])
    assert np.array_equal(confusion[1], init.confusion_.mean(axis=0))
    assert np.array_equal(confusion[2], init.confusion_[0])
