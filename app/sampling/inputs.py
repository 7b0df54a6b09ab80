"""What ``/next`` and the samplings read, kept between requests: a succeeded fit's posterior (it
never changes) and a collection's judgments as columns, extended with only the judgments that
arrived since; for the samplings (``app.sampling.service``), what their pages and estimates
recompute from those (``memo``): the crowd labels and the tasks' names at a watermark, the pools
of a set of stored runs, a sampling's pairs, and its estimates and rounds' counts in a given
state.

Reading them costs far more than planning (RF10: about 0.2 s of rows decoded against 5 ms of
``plan_next``), and the dashboard's page, its TSV link and a crowd platform's poll ask for the
same fit again and again while judgments trickle in. The judgment columns are kept by
``app.judgments.columns.KeptColumns`` (why reading forward from a watermark is exact: its
docstring), as a fit's snapshot keeps them in a worker.

Keys carry what tells a reused id apart (SQLite may hand a deleted row's id out again): the
collection's creation time, the fit's finish time. Both caches are small LRUs; one per
application, made by ``create_app``. Without one (``NextInputs()`` per call) every read is full.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.aggregations.tables import Aggregation, AggregationAnnotator, AggregationTask
from app.collections.tables import Collection
from app.core.lru import LRU
from app.judgments.columns import JudgmentColumns, KeptColumns
from app.judgments.tables import Document, Task, Topic

MAX_FITS = 8  # posteriors kept (200,000 tasks x 3 grades: about 20 MB each with the names)
MAX_COLLECTIONS = 4  # judgment columns kept (24 bytes a judgment: 1M judgments, 24 MB)
# entries per kind of memo (labels, pools, pairs, estimates, ...): RF10's 20,000 labels, a
# 30,000-pair pool of 20 runs or the estimates of 20 runs x 100 topics take a few MB each
MAX_MEMOS = 8

T = TypeVar("T")


@dataclass(frozen=True)
class FitPosterior:
    """A succeeded fit's tasks, sorted by (topic, doc) in Python (not by the database's
    collation), so that ties in the plan fall as in the offline ``crowdqrels next``."""

    task_ids: np.ndarray  # (n_tasks,) database ids
    proba: np.ndarray  # (n_tasks, n_classes)
    topics: list[str]
    docs: list[str]
    labels: list[int]
    p_relevant: list[float]
    competence: dict[int, float | None]  # annotator id -> the fit's competence column


def read_posterior(session: Session, aggregation: Aggregation) -> FitPosterior:
    rows = session.execute(
        select(AggregationTask.task_id, AggregationTask.proba, Topic.external_id,
               Document.external_id, AggregationTask.label, AggregationTask.p_relevant)
        .join(Task, Task.id == AggregationTask.task_id)
        .join(Topic, Topic.id == Task.topic_id)
        .join(Document, Document.id == Task.document_id)
        .where(AggregationTask.aggregation_id == aggregation.id)
    ).all()
    rows = sorted(rows, key=lambda r: (r[2], r[3]))
    n_classes = len(rows[0][1]) if rows else 0
    competence = dict(session.execute(
        select(AggregationAnnotator.annotator_id, AggregationAnnotator.competence)
        .where(AggregationAnnotator.aggregation_id == aggregation.id)).all())
    return FitPosterior(
        task_ids=np.array([r[0] for r in rows], dtype=np.int64),
        proba=np.array([r[1] for r in rows], dtype=np.float64).reshape(len(rows), n_classes),
        topics=[r[2] for r in rows], docs=[r[3] for r in rows], labels=[r[4] for r in rows],
        p_relevant=[r[5] for r in rows], competence=competence)


class NextInputs:
    """The application's cache of posteriors and judgment columns (thread-safe; two requests
    that miss a posterior or the columns at once both read, and the later one is kept; a memo is
    built once)."""

    def __init__(self, max_fits: int = MAX_FITS, max_collections: int = MAX_COLLECTIONS,
                 max_memos: int = MAX_MEMOS) -> None:
        self.max_fits, self.max_collections = max_fits, max_collections
        self.max_memos = max_memos
        self._lock = threading.Lock()
        self._fits: LRU[tuple[Any, ...], FitPosterior] = LRU(max_fits, name="posteriors")
        self._columns = KeptColumns(max_collections)
        self._memos: dict[str, LRU[tuple[Any, ...], Any]] = {}
        self._building: dict[tuple[str, tuple[Any, ...]], threading.Lock] = {}

    def posterior(self, session: Session, aggregation: Aggregation) -> FitPosterior:
        key = (aggregation.id, aggregation.finished_at)
        hit = self._fits.get(key)
        if hit is None:
            hit = read_posterior(session, aggregation)
            self._fits.put(key, hit)
        return hit

    def judgments(self, session: Session, collection: Collection) -> JudgmentColumns:
        return self._columns.judgments(session, collection)

    def memo(self, kind: str, key: tuple[Any, ...], build: Callable[[], T]) -> T:
        """``build()``, kept under ``key`` among the last ``max_memos`` of its ``kind``. The
        value is shared between requests: callers never change it. A caller that asks while
        another thread builds the same key waits for that value (the dashboard prefill and a page
        request never build the same estimates twice)."""
        hit = self.kept(kind, key)
        if hit is not None:
            return hit  # type: ignore[no-any-return]
        with self._lock:
            building = self._building.setdefault((kind, key), threading.Lock())
        with building:
            hit = self.kept(kind, key)
            if hit is None:
                try:
                    hit = build()
                    self.keep(kind, key, hit)
                finally:
                    with self._lock:
                        self._building.pop((kind, key), None)
        return hit  # type: ignore[no-any-return]

    def kept(self, kind: str, key: tuple[Any, ...]) -> Any:
        """What was kept under ``key`` (None: nothing)."""
        return self._memo_store(kind).get(key)

    def keep(self, kind: str, key: tuple[Any, ...], value: Any) -> None:
        self._memo_store(kind).put(key, value)

    def _memo_store(self, kind: str) -> LRU[tuple[Any, ...], Any]:
        with self._lock:
            return self._memos.setdefault(kind, LRU(self.max_memos, name="page_memos"))
