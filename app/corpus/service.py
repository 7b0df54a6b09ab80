"""Topic texts, document texts and runs: the inputs from which the service builds features."""

from __future__ import annotations

import gzip
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from app.collections.tables import Collection
from app.core.errors import NotFound
from app.corpus.tables import Run
from app.formats.runs import TrecRun, parse_run
from app.judgments.ids import ensure_external_ids
from app.judgments.tables import Document, Topic


def set_texts(session: Session, *, collection: Collection, kind: str,
              texts: dict[str, str]) -> dict[str, int]:
    """Set topic (``kind="topics"``) or document texts; ids are created on first sight."""
    table = Topic if kind == "topics" else Document
    ids, created = ensure_external_ids(session, table.__table__, collection_id=collection.id,
                                       external_ids=list(texts))
    rows = [{"id": ids[key], "text": text} for key, text in texts.items()]
    for start in range(0, len(rows), 5000):
        session.execute(update(table), rows[start:start + 5000])
    session.commit()
    return {"texts": len(rows), "new": created}


def text_counts(session: Session, *, collection: Collection) -> dict[str, int]:
    def count(table: Any) -> int:
        return session.scalar(select(func.count()).select_from(table).where(
            table.collection_id == collection.id, table.text.is_not(None))) or 0

    return {"topics_with_text": count(Topic), "documents_with_text": count(Document)}


def known_topics(session: Session, *, collection: Collection) -> set[str]:
    return set(session.scalars(select(Topic.external_id).where(
        Topic.collection_id == collection.id)))


def store_run(session: Session, *, collection: Collection, name: str,
              raw: bytes) -> tuple[Run, int]:
    """Validate and store; replaces a run of the same name. Topics the collection does not have
    are kept (an evaluation counts and reports them); returns the run and how many there are."""
    topics = known_topics(session, collection=collection)
    run = parse_run(raw, name=name)
    session.execute(delete(Run).where(Run.collection_id == collection.id, Run.name == name))
    stored = Run(
        collection_id=collection.id, name=name, n_lines=sum(len(r) for r in run.rankings.values()),
        n_topics=len(run), max_depth=run.max_depth, payload=gzip.compress(raw, compresslevel=5),
    )
    session.add(stored)
    session.commit()
    return stored, (sum(1 for t in run if t not in topics) if topics else 0)


def list_runs(session: Session, *, collection: Collection) -> list[Run]:
    return list(session.scalars(select(Run).where(Run.collection_id == collection.id)
                                .order_by(Run.name)))


def delete_run(session: Session, *, collection: Collection, name: str) -> None:
    deleted = session.execute(
        delete(Run).where(Run.collection_id == collection.id, Run.name == name)).rowcount
    if not deleted:
        raise NotFound(f"no run {name!r} in collection {collection.name!r}", code="run_not_found")
    session.commit()


def load_runs(session: Session, *, collection_id: int) -> dict[str, TrecRun]:
    runs = session.scalars(select(Run).where(Run.collection_id == collection_id)).all()
    return {r.name: parse_run(gzip.decompress(r.payload), name=r.name) for r in runs}
