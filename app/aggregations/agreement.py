"""How often every two succeeded fits of a collection give a task the same label."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.aggregations.tables import Aggregation, AggregationTask
from app.collections.tables import Collection


def agreement_matrix(session: Session, *, collection: Collection,
                     cache: Any = None) -> dict[str, Any]:
    """For every two succeeded fits: the share of the tasks both labelled with the same label.

    Two graded fits (or two binary ones) agree on a task when their labels are equal; a graded
    and a binary fit when they agree on relevance (grade >= the collection's relevant_from
    against the binary label 1), the only question both answer.

    One read of the fits' labels (linear in the fits), then every pair at once in numpy
    (``agreement_counts``); a self-join of the results on the task, one row per pair of fits
    and task, took seconds at a dozen RF10 fits. A succeeded fit's results never change, so
    with ``cache`` (anything with ``memo(key, compute)``, e.g. the app's ListingCache) the
    matrix of a set of fits is computed once; another fit succeeding makes a new key. The
    answer is then shared between requests: read it, never change it."""
    fits = session.execute(
        select(Aggregation.id, Aggregation.graded, Aggregation.finished_at).where(
            Aggregation.collection_id == collection.id, Aggregation.status == "succeeded")
        .order_by(Aggregation.id)).all()
    if cache is None:
        return _agreement_matrix(session, collection=collection, fits=fits)
    key = ("agreement", collection.id, collection.relevant_from,
           tuple((i, bool(g), finished.isoformat() if finished else None)
                 for i, g, finished in fits))
    return cache.memo(key, lambda: _agreement_matrix(  # type: ignore[no-any-return]
        session, collection=collection, fits=fits))


def _agreement_matrix(session: Session, *, collection: Collection,
                      fits: Sequence[Any]) -> dict[str, Any]:
    ids = [i for i, *_ in fits]
    common = agree = np.zeros((len(ids), len(ids)), dtype=np.int64)
    if ids:
        # Core, not the ORM's result layer: ~20k plain rows a fit
        rows = session.connection().execute(
            select(AggregationTask.aggregation_id, AggregationTask.task_id, AggregationTask.label)
            .where(AggregationTask.aggregation_id.in_(ids)))
        fit_task_label = np.fromiter(chain.from_iterable(rows), dtype=np.int64).reshape(-1, 3)
        common, agree = agreement_counts(
            np.searchsorted(ids, fit_task_label[:, 0]), fit_task_label[:, 1],
            fit_task_label[:, 2], graded=np.array([bool(g) for _, g, *_ in fits]),
            relevant_from=collection.relevant_from)
    n, same = common.tolist(), agree.tolist()
    share = [[same[x][y] / n[x][y] if n[x][y] else None for y in range(len(ids))]
             for x in range(len(ids))]
    return {"aggregation_ids": ids, "agreement": share, "common_tasks": n}


def agreement_counts(fit: np.ndarray, task: np.ndarray, label: np.ndarray, *,
                     graded: np.ndarray, relevant_from: int) -> tuple[np.ndarray, np.ndarray]:
    """(common, agree): for every two fits x, y (rows and columns, ``graded[x]`` tells a graded
    fit), the tasks both labelled and those on which they agree (``agreement_matrix``'s rule).
    Long format in, one (fit, task, label) per result; a fits x tasks indicator per label value
    and a matrix product counts every pair at once: count(x, y) = sum_t [x says v][y says v]."""
    n_fits = len(graded)
    tasks, column = np.unique(task, return_inverse=True)
    shape = (n_fits, len(tasks))

    def indicator(where: np.ndarray) -> np.ndarray:
        out = np.zeros(shape)
        out[fit[where], column[where]] = 1.0
        return out

    def pairs(values: np.ndarray) -> np.ndarray:
        # exact: sums of 0/1 products stay integers far below 2**53
        total = np.zeros((n_fits, n_fits))
        for v in np.unique(values):
            said = indicator(values == v)
            total += said @ said.T
        return np.rint(total).astype(np.int64)

    common = pairs(np.zeros_like(label))
    same_label = pairs(label)
    # each fit's binary view: a binary fit's label, a graded fit's grade >= relevant_from
    relevance = np.where(graded[fit], (label >= relevant_from).astype(label.dtype), label)
    same_relevance = pairs(relevance)
    alike = graded[:, None] == graded[None, :]
    return common, np.where(alike, same_label, same_relevance)
