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

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import BigInteger, cast, func, select, text
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
    connection = session.connection()
    if connection.dialect.name == "postgresql":
        return _packed_columns(connection, collection_id, after=after, upto=upto)
    query = (
        select(Judgment.task_id, Judgment.annotator_id,
               cast(func.coalesce(Judgment.label, WITHDRAWN), BigInteger))
        .where(Judgment.collection_id == collection_id, Judgment.id > after,
               Judgment.id <= upto)
        .order_by(Judgment.id))
    result = connection.execute(query)
    # The driver's own tuples of integers: SQLAlchemy's rows would cost twice the read here
    # (RF10 on PostgreSQL: 0.2-0.4 s against 0.5-1.2 s on a loaded machine).
    with result:
        rows = np.array(result.cursor.fetchall(), dtype=np.int64).reshape(-1, 3)
    task, annotator, label = (np.ascontiguousarray(rows[:, i]) for i in range(3))
    return task, annotator, label


# Judgments PostgreSQL packs into one row of the read below: 24 MB of columns a round trip.
PACKED_ROWS = 1_000_000

# One part of the columns: the judgments after :after up to :upto, the first :n of them by id,
# packed by the server into one bytea of 32 bytes per judgment (id, task, annotator, label as
# 8-byte big-endian integers: int8send). A COPY sends a message per row, and reading 10,000,000
# of them costs a Python call each in the driver; this costs one per part. The aggregate keeps
# the sorted subquery's order in practice (no ORDER BY in it: that sort doubled the server's
# time); the ids are checked, and sorted here if it ever did not.
_PACKED = text(
    "SELECT count(*), string_agg(int8send(id) || int8send(task_id) || int8send(annotator_id)"
    f" || int8send(coalesce(label::bigint, {WITHDRAWN})), ''::bytea)"
    " FROM (SELECT id, task_id, annotator_id, label FROM judgments"
    "       WHERE collection_id = :collection AND id > :after AND id <= :upto"
    "       ORDER BY id LIMIT :n) AS part")
_PACKED_ROW = np.dtype([("id", ">i8"), ("task", ">i8"), ("annotator", ">i8"), ("label", ">i8")])


def _packed_columns(connection: Any, collection_id: int, *, after: int,
                    upto: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The judgments' three columns read from PostgreSQL in parts of ``PACKED_ROWS``, each
    packed into bytes by the server and read by numpy without a Python object per row."""
    parts: list[tuple[np.ndarray, ...]] = []
    while True:
        count, packed = connection.execute(_PACKED, {
            "collection": collection_id, "after": after, "upto": upto, "n": PACKED_ROWS}).one()
        if not count:
            break
        rows = np.frombuffer(packed, dtype=_PACKED_ROW)
        if rows.shape[0] != count:
            raise RuntimeError("unexpected packed columns: their length is not the count")
        ids = rows["id"]
        if not (ids[1:] > ids[:-1]).all():
            rows = rows[np.argsort(ids, kind="stable")]
        last = int(rows["id"][-1])
        parts.append(tuple(rows[name].astype(np.int64) for name in ("task", "annotator", "label")))
        del rows, ids, packed
        if count < PACKED_ROWS:
            break
        after = last
    if not parts:
        return tuple(np.zeros(0, dtype=np.int64) for _ in range(3))  # type: ignore[return-value]
    if len(parts) == 1:
        return parts[0]  # type: ignore[return-value]
    return tuple(np.concatenate(c) for c in zip(*parts, strict=True))  # type: ignore


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


class TaskNames(Mapping[int, tuple[str, str]]):
    """Task id -> (topic, doc) external ids, held as three aligned arrays sorted by id (a dict
    of 2,000,000 (topic, doc) tuples is most of a large fit's load stage's memory): a read-only
    mapping for code that names a few tasks, ``at`` for a whole column of ids at once."""

    __slots__ = ("ids", "topics", "docs")

    def __init__(self, ids: np.ndarray, topics: np.ndarray, docs: np.ndarray) -> None:
        order = np.argsort(ids, kind="stable")
        self.ids = np.asarray(ids, dtype=np.int64)[order]
        self.topics = np.asarray(topics, dtype=object)[order]
        self.docs = np.asarray(docs, dtype=object)[order]

    def _index(self, task_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        at = np.searchsorted(self.ids, task_ids)
        at = np.minimum(at, max(self.ids.shape[0] - 1, 0))
        found = self.ids[at] == task_ids if self.ids.shape[0] else np.zeros(
            np.shape(task_ids), dtype=bool)
        return at, found

    def covers(self, task_ids: np.ndarray) -> bool:
        """Whether every id of ``task_ids`` is named."""
        return bool(self._index(np.asarray(task_ids, dtype=np.int64))[1].all())

    def at(self, task_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The topics and docs (object arrays) of ``task_ids``; KeyError for an unknown id."""
        task_ids = np.asarray(task_ids, dtype=np.int64)
        at, found = self._index(task_ids)
        if not found.all():
            raise KeyError(int(task_ids[~found][0]))
        return self.topics[at], self.docs[at]

    def __getitem__(self, task_id: int) -> tuple[str, str]:
        at, found = self._index(np.asarray([task_id], dtype=np.int64))
        if not found[0]:
            raise KeyError(task_id)
        return self.topics[at[0]], self.docs[at[0]]

    def __contains__(self, task_id: object) -> bool:
        if not isinstance(task_id, (int, np.integer)):
            return False
        return bool(self._index(np.asarray([task_id], dtype=np.int64))[1][0])

    def __iter__(self) -> Iterator[int]:
        return iter(self.ids.tolist())

    def __len__(self) -> int:
        return int(self.ids.shape[0])


# Rows fetched per round trip while naming a collection's tasks: their Python tuples are
# short-lived, so naming 2,000,000 tasks never holds more than this many at once.
NAME_ROWS = 100_000

# PostgreSQL: a part of the tasks' names packed by the server, as ``_PACKED`` packs judgments:
# (id, topic id) as 8-byte integers, and the documents' external ids each ended by a NUL (which
# PostgreSQL's text cannot hold) in one bytea, both in the subquery's order.
_PACKED_NAMES = text(
    "SELECT count(*), string_agg(int8send(id) || int8send(topic_id), ''::bytea),"
    " string_agg(convert_to(doc, 'UTF8') || '\\x00'::bytea, ''::bytea)"
    " FROM (SELECT tasks.id, tasks.topic_id, documents.external_id AS doc"
    "       FROM tasks JOIN documents ON documents.id = tasks.document_id"
    "       WHERE tasks.collection_id = :collection AND tasks.id > :after"
    "       ORDER BY tasks.id LIMIT :n) AS part")
_NAME_ROW = np.dtype([("id", ">i8"), ("topic", ">i8")])


def _name_parts(session: Session, collection_id: int
                ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The collection's tasks as parts of (id, topic id, document external id) columns."""
    connection = session.connection()
    if connection.dialect.name != "postgresql":
        result = connection.execute(
            select(Task.id, Task.topic_id, Document.external_id)
            .join(Document, Document.id == Task.document_id)
            .where(Task.collection_id == collection_id)
            .execution_options(yield_per=NAME_ROWS))
        for part in result.partitions(NAME_ROWS):
            ident, topic, doc = zip(*part, strict=True)
            yield (np.fromiter(ident, dtype=np.int64, count=len(ident)),
                   np.fromiter(topic, dtype=np.int64, count=len(topic)),
                   np.array(doc, dtype=object))
        return
    after = 0
    while True:
        count, packed, docs = connection.execute(_PACKED_NAMES, {
            "collection": collection_id, "after": after, "n": PACKED_ROWS}).one()
        if not count:
            return
        rows = np.frombuffer(packed, dtype=_NAME_ROW)
        names = bytes(docs).decode().split("\0")
        if rows.shape[0] != count or len(names) != count + 1 or names[-1]:
            raise RuntimeError("unexpected packed task names: their length is not the count")
        yield (rows["id"].astype(np.int64), rows["topic"].astype(np.int64),
               np.array(names[:-1], dtype=object))
        if count < PACKED_ROWS:
            return
        after = int(rows["id"].max())


def task_names(session: Session, *, collection_id: int) -> TaskNames:
    """Task id -> (topic, doc) external ids, for every task of the collection."""
    topics = dict(session.execute(select(Topic.id, Topic.external_id)
                                  .where(Topic.collection_id == collection_id)).all())
    parts = list(_name_parts(session, collection_id))
    if not parts:
        empty = np.zeros(0, dtype=object)
        return TaskNames(np.zeros(0, dtype=np.int64), empty, empty)
    ids, codes, docs = (np.concatenate(c) for c in zip(*parts, strict=True))
    del parts
    topic_ids = np.fromiter(topics, dtype=np.int64, count=len(topics))
    topic_names = np.array(list(topics.values()), dtype=object)
    order = np.argsort(topic_ids)
    return TaskNames(ids, topic_names[order][np.searchsorted(topic_ids[order], codes)], docs)


def _name_keys(topics: np.ndarray, docs: np.ndarray, topic_uniq: np.ndarray,
               doc_uniq: np.ndarray) -> np.ndarray:
    """One int64 per (topic, doc), in the pairs' lexicographic order (``from_codes``' order)."""
    return (np.searchsorted(topic_uniq, topics).astype(np.int64) * np.int64(doc_uniq.shape[0])
            + np.searchsorted(doc_uniq, docs))


def _gold_of(tasks: np.ndarray, gold: Mapping[int, int]) -> np.ndarray:
    """The gold value of each of ``tasks`` (sorted ids), ``UNKNOWN`` where it has none."""
    out = np.full(tasks.shape[0], UNKNOWN, dtype=np.int64)
    if gold:
        ids = np.fromiter(gold.keys(), dtype=np.int64, count=len(gold))
        values = np.fromiter(gold.values(), dtype=np.int64, count=len(gold))
        at = np.minimum(np.searchsorted(tasks, ids), max(tasks.shape[0] - 1, 0))
        hit = tasks[at] == ids if tasks.shape[0] else np.zeros(ids.shape[0], dtype=bool)
        out[at[hit]] = values[hit]
    return out


def annotation_data(columns: JudgmentColumns, names: TaskNames, *,
                    collection: Collection, graded: bool,
                    gold: Mapping[int, int] | None = None
                    ) -> tuple[AnnotationData, np.ndarray, np.ndarray]:
    """The columns as a model reads them (``AnnotationData.from_codes``: binary at the
    collection's ``relevant_from``, or ``graded`` on its scale; ``gold``: task id -> gold value),
    with the database ids of the data's tasks and annotators, to write results back. ``names``:
    covering the columns' tasks. ValueError when no judgment is usable."""
    tasks, task_at = np.unique(columns.task_id, return_inverse=True)
    annotators, annotator_at = np.unique(columns.annotator_id, return_inverse=True)
    annotator_list = annotators.tolist()
    topics, docs = names.at(tasks)
    data = AnnotationData.from_codes(
        task_at, annotator_at, columns.label,
        task_topics=topics, task_docs=docs,
        annotator_names=[columns.annotators[a] for a in annotator_list],
        task_gold=None if gold is None else _gold_of(tasks, gold),
        ignore=collection.ignore,
        relevant_from=None if graded else collection.relevant_from,
        scale=collection.labels if graded else None,
    )
    # The data's tasks are the columns' tasks ordered by (topic, doc), less any left without a
    # usable judgment: found by their names' keys, with no dict of names.
    topics, docs = topics.astype(str), docs.astype(str)
    topic_uniq, doc_uniq = np.unique(data.topic_ids), np.unique(data.doc_ids)
    known = np.isin(topics, topic_uniq) & np.isin(docs, doc_uniq)
    keys = _name_keys(topics[known], docs[known], topic_uniq, doc_uniq)
    del topics, docs
    by_key = np.argsort(keys)
    at = np.searchsorted(keys[by_key],
                         _name_keys(data.topic_ids, data.doc_ids, topic_uniq, doc_uniq))
    task_ids = tasks[known][by_key][at]
    annotator_of = {columns.annotators[a]: a for a in annotator_list}
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
        self._names: LRU[tuple[Any, ...], TaskNames] = LRU(max_collections)

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
                   needed: np.ndarray) -> TaskNames:
        """Task id -> (topic, doc) covering at least the ids ``needed``; the collection's
        tasks are read again only when one of them is not kept (a task that arrived since)."""
        key = self._key(session, collection)
        names = self._names.get(key)
        if names is None or not names.covers(needed):
            names = task_names(session, collection_id=collection.id)
            self._names.put(key, names)
        return names
