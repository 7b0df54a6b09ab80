"""Ingestion (append-only, one transaction per request), gold labels and reading back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import BigInteger, Integer, func, select, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session

from app.auth import audit
from app.auth.principal import Principal
from app.collections.service import lock_collection
from app.collections.tables import Collection
from app.core.db import bulk_insert
from app.core.errors import InvalidInput
from app.core.metrics import JUDGMENTS_INGESTED
from app.formats.ids import BadId, clean_ids
from app.formats.judgments_file import JudgmentRows
from app.judgments.ids import ensure_external_ids, ensure_task_keys, ensure_tasks
from app.judgments.schemas import GoldReport, IngestPublic, JudgmentIn
from app.judgments.tables import Annotator, Batch, Document, Judgment, Task, Topic


@dataclass(frozen=True)
class IngestReport:
    batch_id: int
    judgments: int
    new_topics: int
    new_documents: int
    new_tasks: int
    new_annotators: int
    gold_labels: int  # tasks whose gold this request set
    gold_could_not_judge: int  # of those, the ones set to a "could not judge" value (e.g. -2)
    ignored_columns: list[str] = field(default_factory=list)  # a file's header columns not read


def _where(rows: JudgmentRows, i: int, *, source: str) -> dict[str, int]:
    """Error location: the file line, or the index in the JSON array."""
    return {"line": rows.lines[i]} if source == "file" else {"index": rows.lines[i]}


def judgment_rows(items: Sequence[JudgmentIn]) -> JudgmentRows:
    """The rows of a JSON bulk, its ids cleaned by the rules a file's ids follow
    (``app.formats.ids.clean_ids``: stripped, not empty, no control character, length); a bad
    one is ``invalid_body`` with its ``index`` and field."""
    columns: dict[str, list[str]] = {}
    problems = []
    for kind in ("topic", "doc", "annotator"):
        try:
            columns[kind] = clean_ids([getattr(j, kind) for j in items], kind=kind)
        except BadId as bad:
            problems.append((bad.index, kind, bad.reason))
    if problems:
        index, kind, reason = min(problems)
        raise InvalidInput(f"judgment {index}: {kind} {reason}", code="invalid_body",
                           index=index, column=kind)
    return JudgmentRows(
        topics=columns["topic"], docs=columns["doc"], annotators=columns["annotator"],
        labels=[j.label for j in items],
        golds=[j.gold for j in items] if any(j.gold is not None for j in items) else None,
        lines=list(range(len(items))),
    )


def validate_rows(rows: JudgmentRows, *, collection: Collection, source: str) -> list[int | None]:
    """Check labels against the scale (ids are clean already: ``JudgmentRows``); return each
    row's usable gold (or None).

    Gold: a scale value or an ignore value is kept; other negative values mean "no gold" (the RF10
    file writes -1); any other value is refused like a bad label.
    """
    allowed = set(collection.labels) | set(collection.ignore)
    # Set operations first (fast on 100,000 rows); a row-by-row scan only to name a bad row.
    bad_labels = set(rows.labels) - allowed
    for i, label in enumerate(rows.labels if bad_labels else ()):
        if label in bad_labels:
            raise InvalidInput(
                f"{'line' if source == 'file' else 'judgment'} {rows.lines[i]}: label {label} is "
                f"outside the collection's scale {sorted(collection.labels)} "
                f"(ignore values: {sorted(collection.ignore)})",
                code="label_out_of_scale", column="label", **_where(rows, i, source=source),
            )
    golds: list[int | None] = []
    if rows.golds is not None:
        for i, gold in enumerate(rows.golds):
            if gold is None or (gold < 0 and gold not in allowed):
                golds.append(None)
            elif gold in allowed:
                golds.append(gold)
            else:
                raise InvalidInput(
                    f"{'line' if source == 'file' else 'judgment'} {rows.lines[i]}: gold {gold} "
                    f"is outside the collection's scale {sorted(collection.labels)}",
                    code="gold_out_of_scale", column="gold", **_where(rows, i, source=source),
                )
        # One gold per task within a request: a JSON bulk, and in a file an ignore value (RF10's
        # -2, stored as gold) against a scale value (the reader checks values >= 0 alone).
        conflict = rows.gold_conflict(also=collection.ignore)
        if conflict is not None:
            first, second = conflict
            word = "line" if source == "file" else "judgment"
            raise InvalidInput(
                f"{word} {rows.lines[second]}: gold {rows.golds[second]} for topic "
                f"{rows.topics[second]!r}, doc {rows.docs[second]!r} differs from its gold "
                f"{rows.golds[first]} on {word} {rows.lines[first]} (a task has one gold label)",
                code="conflicting_gold", column="gold", **_where(rows, second, source=source))
    return golds


def ingest(
    session: Session,
    *,
    collection: Collection,
    rows: JudgmentRows,
    source: str,
    filename: str | None = None,
) -> IngestReport:
    """Store every row or none: validation first, then one transaction with bulk statements."""
    golds = validate_rows(rows, collection=collection, source=source)
    cid = collection.id
    lock_collection(session, collection_id=cid)
    topic_ids, new_topics = ensure_external_ids(
        session, Topic.__table__, collection_id=cid, external_ids=rows.topics)
    doc_ids, new_docs = ensure_external_ids(
        session, Document.__table__, collection_id=cid, external_ids=rows.docs)
    annotator_ids, new_annotators = ensure_external_ids(
        session, Annotator.__table__, collection_id=cid, external_ids=rows.annotators)
    pairs = [(topic_ids[t], doc_ids[d]) for t, d in zip(rows.topics, rows.docs, strict=True)]
    gold_of_pair: dict[tuple[int, int], int] = {}
    for pair, gold in zip(pairs, golds, strict=False):
        if gold is not None:
            gold_of_pair[pair] = gold  # one per task: validate_rows refused conflicts
    task_ids, created = ensure_tasks(session, Task.__table__, collection_id=cid, pairs=pairs,
                                     gold=gold_of_pair)
    task_of_row = [task_ids[p] for p in pairs]
    # New tasks got their gold on insert; existing ones are updated.
    set_task_gold(session, {task_ids[p]: g for p, g in gold_of_pair.items() if p not in created})

    batch = Batch(collection_id=cid, source=source, filename=filename, n_judgments=len(rows))
    session.add(batch)
    session.flush()
    annotator_of_row = [annotator_ids[a] for a in rows.annotators]
    _insert_judgments(session, cid, batch.id, task_of_row, annotator_of_row, rows.labels)
    session.commit()
    JUDGMENTS_INGESTED.labels(source).inc(len(rows))
    ignored = set(collection.ignore)
    return IngestReport(batch.id, len(rows), new_topics, new_docs, len(created), new_annotators,
                        len(gold_of_pair), sum(1 for g in gold_of_pair.values() if g in ignored),
                        list(rows.ignored_columns))


def set_task_gold(session: Session, gold: dict[int, int]) -> None:
    """tasks.gold = value for each task id, in one statement on PostgreSQL."""
    if not gold:
        return
    if session.get_bind().dialect.name == "postgresql":
        values = func.unnest(
            func.cast(list(gold), ARRAY(BigInteger)), func.cast(list(gold.values()),
                                                                ARRAY(Integer)),
        ).table_valued("id", "gold").render_derived(name="src")
        session.execute(update(Task).where(Task.id == values.c.id).values(gold=values.c.gold))
        return
    session.execute(update(Task), [{"id": t, "gold": g} for t, g in gold.items()])


def _insert_judgments(session: Session, collection_id: int, batch_id: int, tasks: list[int],
                      annotators: list[int], labels: list[int]) -> None:
    # COPY on PostgreSQL: ~10x faster than batched INSERTs.
    bulk_insert(session, Judgment.__table__, [
        {"collection_id": collection_id, "task_id": t, "annotator_id": a, "label": y,
         "batch_id": batch_id}
        for t, a, y in zip(tasks, annotators, labels, strict=True)
    ])


def set_gold(
    session: Session, *, collection: Collection, qrels: dict[tuple[str, str], int],
    lines: dict[tuple[str, str], int], replace: bool,
) -> dict[str, int]:
    """Set expert labels from qrels; with ``replace`` every other task's gold is cleared
    (``cleared`` counts the tasks that had a gold label and now have none).
    ``gold_could_not_judge``: of the ``gold_labels`` set, those that are an ignore value."""
    allowed = set(collection.labels) | set(collection.ignore)
    for key, value in qrels.items():
        if value not in allowed:
            raise InvalidInput(
                f"line {lines[key]}: relevance {value} is outside the collection's scale "
                f"{sorted(collection.labels)}", code="gold_out_of_scale", line=lines[key],
                column="relevance",
            )
    cid = collection.id
    keys = list(qrels)
    task_ids, created = ensure_task_keys(
        session, collection_id=cid, keys=keys, topics=Topic.__table__,
        documents=Document.__table__, tasks=Task.__table__)
    cleared = 0
    if replace:
        had = set(session.scalars(select(Task.id).where(Task.collection_id == cid,
                                                        Task.gold.is_not(None))))
        cleared = len(had - set(task_ids))
        if had:
            session.execute(update(Task).where(Task.collection_id == cid).values(gold=None))
    set_task_gold(session, {t: qrels[k] for t, k in zip(task_ids, keys, strict=True)})
    session.commit()
    ignored = set(collection.ignore)
    return {"gold_labels": len(keys),
            "gold_could_not_judge": sum(1 for v in qrels.values() if v in ignored),
            "new_tasks": len(created), "cleared": cleared}


def list_judgments(
    session: Session, *, collection: Collection, topic: str | None, doc: str | None,
    annotator: str | None, limit: int, offset: int,
) -> tuple[list[dict[str, Any]], int]:
    query = (
        select(Judgment.id, Topic.external_id, Document.external_id, Annotator.external_id,
               Judgment.label, Judgment.batch_id, Judgment.received_at)
        .join(Task, Task.id == Judgment.task_id)
        .join(Topic, Topic.id == Task.topic_id)
        .join(Document, Document.id == Task.document_id)
        .join(Annotator, Annotator.id == Judgment.annotator_id)
        .where(Judgment.collection_id == collection.id)
    )
    if topic is not None:
        query = query.where(Topic.external_id == topic)
    if doc is not None:
        query = query.where(Document.external_id == doc)
    if annotator is not None:
        # By id, so the database walks ix_judgments_annotator_id rather than the collection.
        annotator_id = session.scalar(select(Annotator.id).where(
            Annotator.collection_id == collection.id, Annotator.external_id == annotator))
        query = query.where(Judgment.annotator_id == (annotator_id or -1))
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    rows = session.execute(query.order_by(Judgment.id).limit(limit).offset(offset))
    data = [
        {"id": i, "topic": t, "doc": d, "annotator": a, "label": y, "batch_id": b,
         "received_at": r}
        for i, t, d, a, y, b, r in rows
    ]
    return data, total


def judgments_audited(session: Session, principal: Principal, collection: Collection,
            report: IngestReport) -> IngestPublic:
    """Judgments stored: the audit event (the API and the dashboard's upload form)."""
    audit.record(session, principal=principal, action="judgments_added", collection=collection,
                 target_id=report.batch_id, counts={
                     "judgments": report.judgments, "new_tasks": report.new_tasks,
                     "gold_labels": report.gold_labels})
    return IngestPublic(**asdict(report))


def gold_audited(session: Session, principal: Principal, collection: Collection,
                 report: dict[str, Any], mode: str) -> GoldReport:
    """Gold set or replaced: the audit event (the API and the dashboard's gold form)."""
    audit.record(session, principal=principal,
                 action="gold_replaced" if mode == "replace" else "gold_set",
                 collection=collection, counts=dict(report))
    return GoldReport(**report, mode=mode)
