"""A collection's judgments as integer columns (task id, annotator id, label, in arrival order),
the names behind the ids, and a process's cache of both.

Judgments are append-only (a repeated one is a new row; nothing deletes one; a withdrawal, label
NULL, is a row too: read as ``WITHDRAWN``, it removes the earlier judgments of its task and
annotator from what readers see) and a collection's
writers are serialised (``lock_collection``), so the judgments with id ≤ a watermark never change:
columns read up to watermark w stay right, and a later read up to w′ needs only the ids in
(w, w′]. Task and annotator names never change either. Reading integers and naming each task and
annotator once costs a fraction of reading every judgment's names (RF10: 98,453 judgments, 20,026
tasks), and a process that reads the same collection again (the API's ``/next``, a Celery worker
that fits it again after a batch) reads only what arrived since.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import BigInteger, cast, func, select
from sqlalchemy.orm import Session

from app.collections.tables import Collection
from app.core.lru import LRU
from app.judgments.tables import Annotator, Document, Judgment, Task, Topic
from models.data import UNKNOWN, AnnotationData


def current_watermark(session: Session, *, collection_id: int) -> int:
    """The largest judgment id of the collection (0 when empty).

    Ingestion locks the collection row while it writes (see judgments.service), and a caller
    that takes the same lock knows that no judgment with a smaller id can commit after this read.
    """
    return session.scalar(
        select(func.coalesce(func.max(Judgment.id), 0))
        .where(Judgment.collection_id == collection_id)
    ) or 0


# A withdrawal's label as the columns read it: outside any 32-bit label.
WITHDRAWN = -(2 ** 62)


def apply_withdrawals(task: np.ndarray, annotator: np.ndarray,
                      label: np.ndarray) -> np.ndarray:
    """Which rows (in arrival order) still count: per (task, annotator) the judgments after its
    latest withdrawal (``label == WITHDRAWN``); withdrawals themselves never count."""
    withdrawn = label == WITHDRAWN
    if not withdrawn.any():
        return np.ones(label.shape[0], dtype=bool)
    _, pair = np.unique(np.stack([task, annotator], axis=1), axis=0, return_inverse=True)
    pair = pair.reshape(-1)
    cut = np.full(int(pair.max()) + 1, -1, dtype=np.int64)
    np.maximum.at(cut, pair[withdrawn], np.flatnonzero(withdrawn))
    return np.arange(label.shape[0]) > cut[pair]


@dataclass(frozen=True)
class JudgmentColumns:
    """Every judgment of a collection up to ``watermark`` that still counts (withdrawals
    applied), in arrival order, and its annotators. ``log``: the rows as stored, withdrawals
    included, when there are any (a later read goes on from them)."""

    watermark: int
    task_id: np.ndarray  # (n_judgments,) int64
    annotator_id: np.ndarray
    label: np.ndarray  # the label values as stored
    annotators: dict[int, str]  # annotator id -> external id
    log: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None


def _columns(session: Session, collection_id: int, *, after: int,
             upto: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    query = (
        select(Judgment.task_id, Judgment.annotator_id,
               cast(func.coalesce(Judgment.label, WITHDRAWN), BigInteger))
        .where(Judgment.collection_id == collection_id, Judgment.id > after,
               Judgment.id <= upto)
        .order_by(Judgment.id))
    connection = session.connection()
    if connection.dialect.name == "postgresql":
        return _copied_columns(connection, query)
    result = connection.execute(query)
    # The driver's own tuples of integers: SQLAlchemy's rows would cost twice the read here
    # (RF10 on PostgreSQL: 0.2-0.4 s against 0.5-1.2 s on a loaded machine).
    with result:
        rows = np.array(result.cursor.fetchall(), dtype=np.int64).reshape(-1, 3)
    task, annotator, label = (np.ascontiguousarray(rows[:, i]) for i in range(3))
    return task, annotator, label


# PostgreSQL's binary COPY of three BIGINT columns: a 19-byte header, then per row a 16-bit field
# count and each field's 32-bit length and 8 bytes (big-endian), then a 16-bit -1.
_COPY_HEADER = 19
_COPY_ROW = np.dtype([("fields", ">i2"), ("n0", ">i4"), ("task", ">i8"), ("n1", ">i4"),
                      ("annotator", ">i8"), ("n2", ">i4"), ("label", ">i8")])
_COPY_PART = 1 << 22  # bytes parsed at a time


def _copied_columns(connection: Any, query: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The query's three BIGINT columns read by ``COPY ... TO STDOUT (FORMAT binary)`` straight
    into numpy: no Python object per row (fetchall's tuples: ~1.6 GB at 10,000,000 judgments)."""
    sql = str(query.compile(dialect=connection.dialect, compile_kwargs={"literal_binds": True}))
    parts: list[tuple[np.ndarray, ...]] = []
    pending = bytearray()
    size = _COPY_ROW.itemsize
    raw = connection.connection.driver_connection
    with raw.cursor() as cursor, cursor.copy(f"COPY ({sql}) TO STDOUT (FORMAT binary)") as copy:
        for block in copy:
            pending += block
            if len(pending) >= _COPY_HEADER + _COPY_PART:
                whole = _COPY_HEADER + (len(pending) - _COPY_HEADER) // size * size
                parts.append(_copy_rows(pending[_COPY_HEADER:whole]))
                del pending[_COPY_HEADER:whole]
    whole = len(pending) - 2  # the trailer
    if pending[whole:] != b"\xff\xff" or (whole - _COPY_HEADER) % size:
        raise RuntimeError("unexpected COPY output: not three BIGINT columns")
    parts.append(_copy_rows(pending[_COPY_HEADER:whole]))
    return tuple(np.concatenate(column) if len(parts) > 1 else column[0]  # type: ignore
                 for column in zip(*parts, strict=True))


def _copy_rows(data: bytearray) -> tuple[np.ndarray, ...]:
    rows = np.frombuffer(data, _COPY_ROW)
    if rows.shape[0] and not ((rows["fields"] == 3).all() and (rows["n0"] == 8).all()
                              and (rows["n1"] == 8).all() and (rows["n2"] == 8).all()):
        raise RuntimeError("unexpected COPY output: a NULL or a column that is not BIGINT")
    return tuple(rows[name].astype(np.int64) for name in ("task", "annotator", "label"))


def read_judgments(session: Session, collection: Collection, *,
                   since: JudgmentColumns | None = None,
                   upto: int | None = None) -> JudgmentColumns:
    """The collection's judgments up to ``upto`` (default: its watermark now); with ``since``
    (an earlier read of the same collection, up to a watermark no later than ``upto``) only the
    ones that arrived after it are read."""
    watermark = current_watermark(session, collection_id=collection.id) if upto is None else upto
    if since is not None and since.watermark == watermark:
        return since
    if since is None or since.watermark > watermark:
        since = None
    new = _columns(session, collection.id, after=since.watermark if since else 0,
                   upto=watermark)
    old = None if since is None else (
        since.log or (since.task_id, since.annotator_id, since.label))
    task, annotator, label = new if old is None else (
        np.concatenate((a, b)) for a, b in zip(old, new, strict=True))
    annotators = dict(session.execute(
        select(Annotator.id, Annotator.external_id)
        .where(Annotator.collection_id == collection.id)).all())
    counts = apply_withdrawals(task, annotator, label)
    if counts.all():
        return JudgmentColumns(watermark=watermark, task_id=task, annotator_id=annotator,
                               label=label, annotators=annotators)
    return JudgmentColumns(watermark=watermark, task_id=task[counts],
                           annotator_id=annotator[counts], label=label[counts],
                           annotators=annotators, log=(task, annotator, label))


def task_names(session: Session, *, collection_id: int) -> dict[int, tuple[str, str]]:
    """Task id -> (topic, doc) external ids, for every task of the collection."""
    return {ident: (t, d) for ident, t, d in session.execute(
        select(Task.id, Topic.external_id, Document.external_id)
        .join(Topic, Topic.id == Task.topic_id)
        .join(Document, Document.id == Task.document_id)
        .where(Task.collection_id == collection_id))}


def annotation_data(columns: JudgmentColumns, names: Mapping[int, tuple[str, str]], *,
                    collection: Collection, graded: bool,
                    gold: Mapping[int, int] | None = None
                    ) -> tuple[AnnotationData, np.ndarray, np.ndarray]:
    """The columns as a model reads them (``AnnotationData.from_codes``: binary at the
    collection's ``relevant_from``, or ``graded`` on its scale; ``gold``: task id -> gold value),
    with the database ids of the data's tasks and annotators, to write results back. ``names``:
    task id -> (topic, doc), covering the columns' tasks. ValueError when no judgment is usable."""
    tasks, task_at = np.unique(columns.task_id, return_inverse=True)
    annotators, annotator_at = np.unique(columns.annotator_id, return_inverse=True)
    task_list, annotator_list = tasks.tolist(), annotators.tolist()
    data = AnnotationData.from_codes(
        task_at, annotator_at, columns.label,
        task_topics=[names[t][0] for t in task_list], task_docs=[names[t][1] for t in task_list],
        annotator_names=[columns.annotators[a] for a in annotator_list],
        task_gold=None if gold is None else np.array([gold.get(t, UNKNOWN) for t in task_list],
                                                     dtype=np.int64),
        ignore=collection.ignore,
        relevant_from=None if graded else collection.relevant_from,
        scale=collection.labels if graded else None,
    )
    task_of = {names[t]: t for t in task_list}
    annotator_of = {columns.annotators[a]: a for a in annotator_list}
    task_ids = np.array([task_of[(t, d)] for t, d in
                         zip(data.topic_ids.tolist(), data.doc_ids.tolist(), strict=True)],
                        dtype=np.int64)
    annotator_ids = np.array([annotator_of[a] for a in data.annotator_ids.tolist()],
                             dtype=np.int64)
    return data, task_ids, annotator_ids


class KeptColumns:
    """The judgment columns and task names of the last ``max_collections`` collections a
    process read (thread-safe; keys carry the database and the collection's creation time, since
    SQLite may hand a deleted collection's id out again). ``max_collections=0`` keeps nothing."""

    def __init__(self, max_collections: int) -> None:
        self.max_collections = max_collections
        self._columns: LRU[tuple[Any, ...], JudgmentColumns] = LRU(
            max_collections, name="judgment_columns")
        self._names: LRU[tuple[Any, ...], dict[int, tuple[str, str]]] = LRU(max_collections)

    @staticmethod
    def _key(session: Session, collection: Collection) -> tuple[Any, ...]:
        bind = session.get_bind()
        return (bind.url.render_as_string(hide_password=True), collection.id,
                collection.created_at)

    def judgments(self, session: Session, collection: Collection, *,
                  upto: int | None = None) -> JudgmentColumns:
        """``read_judgments`` forward from the columns kept for the collection."""
        key = self._key(session, collection)
        before = self._columns.get(key)
        now = read_judgments(session, collection, since=before, upto=upto)
        if now is not before:  # never a later read replaced by an earlier one
            self._columns.put(key, now, replaces=lambda new, kept: new.watermark > kept.watermark)
        return now

    def task_names(self, session: Session, collection: Collection,
                   needed: np.ndarray) -> dict[int, tuple[str, str]]:
        """Task id -> (topic, doc) covering at least the ids ``needed``; the collection's
        tasks are read again only when one of them is not kept (a task that arrived since)."""
        key = self._key(session, collection)
        names = self._names.get(key)
        if names is None or not all(t in names for t in needed.tolist()):
            names = task_names(session, collection_id=collection.id)
            self._names.put(key, names)
        return names
