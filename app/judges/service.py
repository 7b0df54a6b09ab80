"""Judge files: one annotator's TREC qrels (an LLM judge, an expert, a crowd worker), stored as
judgments and replaced as a whole when sent again.

The judgment log stays append-only (DESIGN §3). Sending a judge's file again appends its lines as
a new batch and, for every pair the judge labelled before that the new file does not give a
label on the scale, a withdrawal (a judgment row with label NULL) ahead of the new lines. Readers
keep, per (task, annotator), only what follows its latest withdrawal
(``app.judgments.columns.apply_withdrawals``), and models keep the latest of those: a fit then
sees exactly the new file for that judge. Removing a judge withdraws every pair it labels. Both
are one transaction under the collection's lock, so a fit's watermark sees all of a replacement
or none of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from app.collections.service import lock_collection
from app.collections.tables import Collection
from app.core.db import bulk_insert
from app.core.errors import Conflict, InvalidInput, NotFound
from app.judgments.columns import WITHDRAWN, apply_withdrawals
from app.judgments.ids import ensure_task_keys
from app.judgments.tables import Annotator, Batch, Document, Judgment, Task, Topic

JUDGE_SOURCE = "judge"  # batches.source of a judge file
REMOVED_SOURCE = "judge_removed"  # ... of a judge's removal (withdrawals only)


@dataclass(frozen=True)
class JudgeReport:
    judge: str
    kind: str
    batch_id: int
    judgments: int  # lines stored
    withdrawn: int  # pairs it labelled before that this file no longer labels
    new_tasks: int
    replaced: bool  # the judge had judgments before


def check_grades(qrels: dict[tuple[str, str], int], lines: dict[tuple[str, str], int], *,
                 collection: Collection) -> None:
    """Every grade on the collection's scale or one of its ignore values; else 422
    ``label_out_of_scale`` naming the first bad line."""
    allowed = set(collection.labels) | set(collection.ignore)
    bad = [(lines[k], k, v) for k, v in qrels.items() if v not in allowed]
    if bad:
        line, (topic, doc), value = min(bad)
        raise InvalidInput(
            f"line {line}: grade {value} for topic {topic!r}, doc {doc!r} is outside the "
            f"collection's scale {sorted(collection.labels)} (ignore values: "
            f"{sorted(collection.ignore)})", code="label_out_of_scale", line=line,
            column="relevance")


def _judge(session: Session, *, collection: Collection, name: str, kind: str) -> Annotator:
    """The annotator ``name``, created with ``kind``; 409 if it exists with another kind."""
    annotator = session.scalar(select(Annotator).where(
        Annotator.collection_id == collection.id, Annotator.external_id == name))
    if annotator is None:
        annotator = Annotator(collection_id=collection.id, external_id=name, kind=kind)
        session.add(annotator)
        session.flush()
    elif annotator.kind != kind:
        session.rollback()
        raise Conflict(f"{name!r} is already an annotator of kind {annotator.kind!r} in "
                       f"collection {collection.name!r}, not {kind!r}: a name has one kind",
                       code="judge_kind_conflict", kind=annotator.kind)
    return annotator


def current_pairs(session: Session, *, annotator_ids: list[int]) -> dict[int, dict[int, int]]:
    """annotator id -> {task id: label} of the judgments that count now: per task the latest
    after the last withdrawal (ignore values included: they are judgments too)."""
    rows = np.array(session.execute(
        select(Judgment.annotator_id, Judgment.task_id, func.coalesce(Judgment.label, WITHDRAWN))
        .where(Judgment.annotator_id.in_(annotator_ids)).order_by(Judgment.id)).all(),
        dtype=np.int64).reshape(-1, 3)
    out: dict[int, dict[int, int]] = {a: {} for a in annotator_ids}
    counts = apply_withdrawals(rows[:, 1], rows[:, 0], rows[:, 2])
    for annotator, task, label in rows[counts].tolist():
        out[annotator][task] = label  # arrival order: the latest wins
    return out


def _withdraw(session: Session, *, collection_id: int, batch_id: int, annotator_id: int,
              tasks: list[int]) -> None:
    bulk_insert(session, Judgment.__table__, [
        {"collection_id": collection_id, "task_id": t, "annotator_id": annotator_id,
         "label": None, "batch_id": batch_id} for t in sorted(tasks)])


def put_judge(session: Session, *, collection: Collection, name: str, kind: str,
              qrels: dict[tuple[str, str], int], lines: dict[tuple[str, str], int]
              ) -> JudgeReport:
    """Store (or replace) judge ``name``'s qrels as its judgments, in one transaction."""
    check_grades(qrels, lines, collection=collection)
    cid = collection.id
    lock_collection(session, collection_id=cid)
    annotator = _judge(session, collection=collection, name=name, kind=kind)
    keys = list(qrels)
    task_ids, created = ensure_task_keys(
        session, collection_id=cid, keys=keys, topics=Topic.__table__,
        documents=Document.__table__, tasks=Task.__table__)
    before = current_pairs(session, annotator_ids=[annotator.id])[annotator.id]
    ignored = set(collection.ignore)
    # A pair the new file leaves out, or gives only a "could not judge" value (which models
    # drop before taking the latest), is withdrawn so that its old label does not show through.
    keeps = {t for t, k in zip(task_ids, keys, strict=True) if qrels[k] not in ignored}
    withdrawn = [t for t in before if t not in keeps]
    batch = Batch(collection_id=cid, source=JUDGE_SOURCE, filename=name, n_judgments=len(keys))
    session.add(batch)
    session.flush()
    _withdraw(session, collection_id=cid, batch_id=batch.id, annotator_id=annotator.id,
              tasks=withdrawn)
    bulk_insert(session, Judgment.__table__, [
        {"collection_id": cid, "task_id": t, "annotator_id": annotator.id, "label": qrels[k],
         "batch_id": batch.id} for t, k in zip(task_ids, keys, strict=True)])
    session.commit()
    return JudgeReport(judge=name, kind=kind, batch_id=batch.id, judgments=len(keys),
                       withdrawn=len(withdrawn), new_tasks=len(created), replaced=bool(before))


def delete_judge(session: Session, *, collection: Collection, name: str) -> JudgeReport:
    """Withdraw every pair judge ``name`` labels (404 ``judge_not_found`` if it labels none)."""
    cid = collection.id
    lock_collection(session, collection_id=cid)
    annotator = session.scalar(select(Annotator).where(
        Annotator.collection_id == cid, Annotator.external_id == name))
    before = {} if annotator is None else current_pairs(
        session, annotator_ids=[annotator.id])[annotator.id]
    if annotator is None or not before:
        session.rollback()
        raise NotFound(f"no judge {name!r} with judgments in collection {collection.name!r}",
                       code="judge_not_found")
    batch = Batch(collection_id=cid, source=REMOVED_SOURCE, filename=name, n_judgments=0)
    session.add(batch)
    session.flush()
    _withdraw(session, collection_id=cid, batch_id=batch.id, annotator_id=annotator.id,
              tasks=list(before))
    session.commit()
    return JudgeReport(judge=name, kind=annotator.kind, batch_id=batch.id, judgments=0,
                       withdrawn=len(before), new_tasks=0, replaced=True)


def judge_names(*, collection_id: int) -> Select[tuple[str | None]]:
    """The names of the annotators a judge file stored (a judge batch keeps the judge's name
    as its ``filename``): a read of the batches, not of the judgments."""
    return select(Batch.filename).where(Batch.collection_id == collection_id,
                                        Batch.source == JUDGE_SOURCE).distinct()


def list_judges(session: Session, *, collection: Collection) -> list[dict[str, Any]]:
    """The collection's judges (annotators that a judge file stored, with judgments that count
    now), by name: kind, pairs labelled, grades given, when the file last came."""
    judges = session.execute(
        select(Annotator.id, Annotator.external_id, Annotator.kind)
        .where(Annotator.collection_id == collection.id,
               Annotator.external_id.in_(judge_names(collection_id=collection.id)))
        .order_by(Annotator.external_id)).all()
    if not judges:
        return []
    pairs = current_pairs(session, annotator_ids=[j.id for j in judges])
    updated: dict[str, datetime] = dict(session.execute(  # type: ignore[arg-type]
        select(Batch.filename, func.max(Batch.received_at))
        .where(Batch.collection_id == collection.id, Batch.source == JUDGE_SOURCE)
        .group_by(Batch.filename)).all())
    ignored = set(collection.ignore)
    out = []
    for j in judges:
        labels = list(pairs[j.id].values())
        if not labels:
            continue  # removed
        grades = {int(v): labels.count(v) for v in sorted(set(labels)) if v not in ignored}
        out.append({"name": j.external_id, "kind": j.kind, "judgments": len(labels),
                    "could_not_judge": sum(1 for v in labels if v in ignored),
                    "grades": grades, "updated_at": updated.get(j.external_id)})
    return out
