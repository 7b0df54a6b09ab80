"""Collections: create, find by id or name, counts and statistics."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from sqlalchemy import exists, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.auth import audit
from app.auth.principal import Principal
from app.collections.schemas import (
    CollectionCounts,
    CollectionCreate,
    CollectionStats,
    DistributionSummary,
    GoldBreakdown,
    GoldLeftOut,
)
from app.collections.tables import Collection
from app.core.errors import Conflict, NotFound
from app.judgments.tables import Annotator, Batch, Document, Judgment, Task, Topic


def create_collection(session: Session, *, spec: CollectionCreate) -> Collection:
    collection = Collection(**spec.model_dump())
    session.add(collection)
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        raise Conflict(
            f"a collection named {spec.name!r} already exists", code="collection_exists"
        ) from None
    return collection


def list_collections(session: Session, *, limit: int, offset: int,
                     only: frozenset[int] | None = None) -> tuple[list[Collection], int]:
    """A page of collections; ``only``: just these ids (a key limited to some collections)."""
    where = [] if only is None else [Collection.id.in_(sorted(only))]
    total = session.scalar(select(func.count()).select_from(Collection).where(*where)) or 0
    rows = session.scalars(select(Collection).where(*where).order_by(Collection.id)
                           .limit(limit).offset(offset))
    return list(rows), total


def get_collection(session: Session, *, key: str) -> Collection:
    """By id when ``key`` is all digits, else by name (names cannot be all digits)."""
    if key.isascii() and key.isdigit():  # ("²".isdigit() and "١".isdigit() are true too)
        # (beyond the integer range no row can match; the database would refuse the value)
        collection = session.get(Collection, int(key)) if len(key) < 10 else None
    else:
        collection = session.scalar(select(Collection).where(Collection.name == key))
    if collection is None:
        raise collection_not_found(key)
    return collection


def names_by_id(session: Session, ids: set[int]) -> dict[int, str]:
    """The names of the collections with these ids (one query; absent ids are left out)."""
    if not ids:
        return {}
    rows = session.execute(select(Collection.id, Collection.name)
                           .where(Collection.id.in_(sorted(ids))))
    return {collection_id: name for collection_id, name in rows}


def collection_not_found(key: str) -> NotFound:
    """The one 404 for a collection that does not exist or that the caller may not see."""
    return NotFound(f"no collection {key!r}", code="collection_not_found")


def lock_collection(session: Session, *, collection_id: int) -> None:
    """Serialise the writers of a collection's judgments with the readers of its watermark.

    PostgreSQL: a row lock held to the end of the transaction (no judgment with a smaller id can
    commit after an aggregation read the largest one). SQLite has one writer at a time anyway.
    """
    session.execute(select(Collection.id).where(Collection.id == collection_id).with_for_update())


def _count(session: Session, table: type, collection_id: int, *where: object) -> int:
    query = select(func.count()).select_from(table).where(
        table.collection_id == collection_id, *where  # type: ignore[attr-defined]
    )
    return session.scalar(query) or 0


def collection_counts(session: Session, *, collection: Collection,
                      judgments: int | None = None) -> CollectionCounts:
    """Rows per table. ``judgments``: the judgments counted already (a ``JudgmentTally``), so
    that the largest table is not counted again (at 2 million judgments on PostgreSQL these
    counts take 110 ms with the COUNT, 14 ms with a kept tally moved forward:
    bench/bench_counts.py)."""
    cid = collection.id
    scale = collection.labels
    return CollectionCounts(
        topics=_count(session, Topic, cid),
        documents=_count(session, Document, cid),
        tasks=_count(session, Task, cid),
        annotators=_count(session, Annotator, cid),
        judgments=(_count(session, Judgment, cid, Judgment.label.is_not(None))
                   if judgments is None else judgments),
        tasks_with_gold=_count(session, Task, cid, Task.gold.in_(scale)),
        tasks_with_unjudgeable_gold=_count(session, Task, cid, Task.gold.in_(collection.ignore))
        if collection.ignore else 0,
    )


def _summary(histogram: dict[int, int]) -> DistributionSummary | None:
    """Min, max, mean and median of the counts a histogram {count: how many} describes."""
    if not histogram:
        return None
    keys = sorted(histogram)
    total = sum(histogram.values())

    def nth(i: int) -> int:  # the i-th smallest count (0-based)
        seen = 0
        for k in keys:
            seen += histogram[k]
            if i < seen:
                return k
        raise IndexError(i)

    middle = total // 2
    median = nth(middle) if total % 2 else (nth(middle - 1) + nth(middle)) / 2
    return DistributionSummary(
        min=keys[0], max=keys[-1], mean=sum(k * n for k, n in histogram.items()) / total,
        median=median, histogram={k: histogram[k] for k in keys})


class JudgmentTally:
    """Judgments per task, per annotator and per label of one collection, up to judgment id
    ``latest``. Storage is append-only and a collection's writers are serialised
    (``lock_collection``: no smaller id commits later), so the tally moves forward by adding the
    judgments with larger ids — a page after new judgments counts those, not all of them."""

    def __init__(self, collection_id: int) -> None:
        self.collection_id = collection_id
        self.latest = 0
        self.per_task: Counter[int] = Counter()
        self.per_annotator: Counter[int] = Counter()
        self.labels: Counter[int] = Counter()
        self.lock = threading.Lock()

    def advance(self, session: Session, upto: int | None) -> None:
        """Add the judgments with ``latest < id <= upto``, counted by the database."""
        with self.lock:
            if upto is None or upto <= self.latest:
                return
            # withdrawals (label NULL) are not judgments: the tally counts what was received
            where = (Judgment.collection_id == self.collection_id, Judgment.id > self.latest,
                     Judgment.id <= upto, Judgment.label.is_not(None))
            for counter, column in ((self.per_task, Judgment.task_id),
                                    (self.per_annotator, Judgment.annotator_id),
                                    (self.labels, Judgment.label)):
                for key, n in session.execute(select(column, func.count()).where(*where)
                                              .group_by(column)):
                    counter[int(key)] += int(n)
            self.latest = upto

    @property
    def judgments(self) -> int:
        """How many judgments the tally has counted (every judgment has one label)."""
        with self.lock:
            return sum(self.labels.values())

    def stats(self, counts: CollectionCounts) -> CollectionStats:
        with self.lock:
            per_task = Counter(self.per_task.values())
            per_annotator = Counter(self.per_annotator.values())
            labels = {k: self.labels[k] for k in sorted(self.labels)}
        return CollectionStats(counts=counts, judgments_per_task=_summary(dict(per_task)),
                               judgments_per_annotator=_summary(dict(per_annotator)),
                               label_distribution=labels)


def tally_key(collection_id: int) -> tuple[str, int]:
    return ("judgment_tally", collection_id)


def advance_tally(session: Session, *, collection: Collection,
                  cache: Any = None) -> JudgmentTally:
    """The collection's ``JudgmentTally``, moved forward to its latest judgment. With ``cache``
    (anything with ``memo(key, compute)``, e.g. the app's ListingCache) the tally is kept
    between requests and only counts the judgments that arrived since."""
    latest = session.scalar(select(func.max(Judgment.id))
                            .where(Judgment.collection_id == collection.id))
    tally = (JudgmentTally(collection.id) if cache is None else
             cache.memo(tally_key(collection.id), lambda: JudgmentTally(collection.id)))
    tally.advance(session, latest)
    return tally


def collection_stats(session: Session, *, collection: Collection,
                     cache: Any = None) -> CollectionStats:
    """Counts, the judgments' distributions (``cache``: as for ``advance_tally``) and the gold
    broken down."""
    tally = advance_tally(session, collection=collection, cache=cache)
    counts = collection_counts(session, collection=collection, judgments=tally.judgments)
    stats = tally.stats(counts)
    stats.gold = gold_breakdown(session, collection=collection, tasks=counts.tasks)
    return stats


def gold_breakdown(session: Session, *, collection: Collection, tasks: int) -> GoldBreakdown:
    """The gold by value, and the labelled gold tasks no fit can label: nobody judged them, or
    every judgment is a "could not judge" value (``tasks``: the collection's task count)."""
    cid = collection.id
    by_value = {int(g): int(n) for g, n in session.execute(
        select(Task.gold, func.count()).where(Task.collection_id == cid, Task.gold.is_not(None))
        .group_by(Task.gold).order_by(Task.gold))}
    labelled_where = (Task.collection_id == cid, Task.gold.in_(list(collection.labels)))
    judged = exists().where(Judgment.task_id == Task.id)
    not_judged = _count(session, Task, cid, *labelled_where, ~judged)
    only_ignored = 0
    if collection.ignore:
        usable = exists().where(Judgment.task_id == Task.id,
                                Judgment.label.not_in(list(collection.ignore)))
        only_ignored = _count(session, Task, cid, *labelled_where, judged, ~usable)
    scale, ignore = set(collection.labels), set(collection.ignore)
    labelled = sum(n for g, n in by_value.items() if g in scale)
    total = sum(by_value.values())
    return GoldBreakdown(
        total=total, labelled=labelled,
        could_not_judge=sum(n for g, n in by_value.items() if g in ignore),
        scorable=labelled - not_judged - only_ignored,
        left_out=GoldLeftOut(not_judged=not_judged, only_could_not_judge=only_ignored),
        without_gold=tasks - total, by_value=by_value)


def collection_overview(session: Session, *, collection: Collection,
                        cache: Any = None) -> dict[str, object]:
    """Counts and the time of the latest judgment (the collections page). With ``cache``, a
    collection whose tally is kept there (the dashboard warms the most recent ones) takes its
    judgments count from the tally moved forward; the others are counted (building a tally is
    three GROUP BYs: not for a list of every collection)."""
    # Every judgment arrives in a batch (a small table): its latest batch's time.
    last = session.scalar(select(func.max(Batch.received_at))
                          .where(Batch.collection_id == collection.id))
    judgments = None
    if cache is not None and cache.memoized(tally_key(collection.id)):
        judgments = advance_tally(session, collection=collection, cache=cache).judgments
    return {"counts": collection_counts(session, collection=collection, judgments=judgments),
            "last_judgment_at": last}


def collection_created(session: Session, principal: Principal, collection: Collection) -> None:
    """The audit event of a new collection (the API's and the dashboard's form)."""
    audit.record(session, principal=principal, action="collection_created",
                 collection=collection)
