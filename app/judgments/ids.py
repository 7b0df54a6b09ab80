"""Get-or-create of external ids in bulk: one SELECT per chunk, one INSERT for the new ones.

``ON CONFLICT DO NOTHING ... RETURNING`` makes concurrent requests that first see the same topic,
document, annotator or task safe on both databases: the loser inserts nothing, is told so by the
rows returned (it did not create them: it counts none as new and updates, say, their gold rather
than believing its insert set it), and reads the winner's rows. The SELECT before the INSERT may
run before the winner commits (on SQLite it runs outside the write transaction), so what it found
missing is only a guess; what the INSERT returns is the truth.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Table, func, select, tuple_
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session
from sqlalchemy.types import BigInteger, Integer, Text

# Array types of the columns inserted from unnest() on PostgreSQL (ids are BIGINT).
COLUMN_TYPES: dict[str, Any] = {"external_id": Text, "gold": Integer}
# Bound parameters per statement: SQLite's historical limit is 999.
CHUNK = 900


def _is_postgres(session: Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


def _chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _insert_ignoring_conflicts(session: Session, table: Table, rows: list[dict[str, Any]],
                               returning: Sequence[str]) -> list[tuple[Any, ...]]:
    """Insert, skipping rows that exist; return the ``returning`` columns of the rows this
    statement inserted (not of those skipped)."""
    if not rows:
        return []
    if _is_postgres(session):
        # INSERT ... SELECT FROM unnest(arrays): one statement for all rows, not one per row.
        names = list(rows[0])
        arrays = [
            func.cast([r[n] for r in rows], ARRAY(COLUMN_TYPES.get(n, BigInteger)))
            for n in names
        ]
        source = select(func.unnest(*arrays).table_valued(*names).render_derived(name="src"))
        statement = (postgresql.insert(table).from_select(names, source).on_conflict_do_nothing()
                     .returning(*(table.c[n] for n in returning)))
        return [tuple(r) for r in session.execute(statement)]
    # SQLite (3.35+) returns the rows inserted too, in batches of multi-row VALUES.
    statement = (sqlite.insert(table).on_conflict_do_nothing()
                 .returning(*(table.c[n] for n in returning)))
    out: list[tuple[Any, ...]] = []
    for chunk in _chunks(rows, 5000):
        out.extend(tuple(r) for r in session.execute(statement, list(chunk)))
    return out


def ensure_external_ids(
    session: Session, table: Table, *, collection_id: int, external_ids: Iterable[str]
) -> tuple[dict[str, int], int]:
    """{external_id: id} for every given id, creating missing rows; also the number created."""
    wanted = list(dict.fromkeys(external_ids))
    found = _select_ids(session, table, collection_id, wanted)
    missing = [e for e in wanted if e not in found]
    inserted = _insert_ignoring_conflicts(
        session, table, [{"collection_id": collection_id, "external_id": e} for e in missing],
        returning=("external_id", "id"),
    )
    found.update(dict(inserted))  # type: ignore[arg-type]
    # Rows another request inserted first: read them back.
    unresolved = [e for e in missing if e not in found]
    if unresolved:
        found.update(_select_ids(session, table, collection_id, unresolved))
    return found, len(inserted)


def _select_ids(session: Session, table: Table, collection_id: int,
                external_ids: Sequence[str]) -> dict[str, int]:
    if _is_postgres(session):
        # One array parameter joined as a set: a hash join, where long IN lists planned against
        # a table without statistics yet degrade to a scan per chunk.
        wanted = (func.unnest(func.cast(list(external_ids), ARRAY(Text)))
                  .table_valued("eid").render_derived(name="wanted"))
        rows = session.execute(
            select(table.c.external_id, table.c.id)
            .join(wanted, table.c.external_id == wanted.c.eid)
            .where(table.c.collection_id == collection_id)
        )
        return {e: i for e, i in rows}
    out: dict[str, int] = {}
    for chunk in _chunks(external_ids, CHUNK):
        rows = session.execute(
            select(table.c.external_id, table.c.id).where(
                table.c.collection_id == collection_id, table.c.external_id.in_(chunk)
            )
        )
        out.update({e: i for e, i in rows})
    return out


def ensure_tasks(
    session: Session, table: Table, *, collection_id: int, pairs: Iterable[tuple[int, int]],
    gold: dict[tuple[int, int], int] | None = None,
) -> tuple[dict[tuple[int, int], int], set[tuple[int, int]]]:
    """{(topic_id, document_id): task id}, creating missing tasks (with their ``gold``, if
    given); also the pairs this call created (only those got ``gold`` here: the caller sets the
    gold of the others, including tasks a concurrent request created first)."""
    wanted = list(dict.fromkeys(pairs))
    found = _select_tasks(session, table, collection_id, wanted)
    missing = [p for p in wanted if p not in found]
    gold = gold or {}
    inserted = _insert_ignoring_conflicts(
        session, table,
        [{"collection_id": collection_id, "topic_id": t, "document_id": d,
          "gold": gold.get((t, d))} for t, d in missing],
        returning=("topic_id", "document_id", "id"),
    )
    found.update({(t, d): i for t, d, i in inserted})
    unresolved = [p for p in missing if p not in found]
    if unresolved:  # created by a request that committed after our SELECT
        found.update(_select_tasks(session, table, collection_id, unresolved))
    return found, {(t, d) for t, d, _ in inserted}


def _select_tasks(session: Session, table: Table, collection_id: int,
                  pairs: Sequence[tuple[int, int]]) -> dict[tuple[int, int], int]:
    if _is_postgres(session):
        wanted = func.unnest(
            func.cast([t for t, _ in pairs], ARRAY(BigInteger)),
            func.cast([d for _, d in pairs], ARRAY(BigInteger)),
        ).table_valued("t", "d").render_derived(name="wanted")
        rows = session.execute(
            select(table.c.topic_id, table.c.document_id, table.c.id)
            .join(wanted, (table.c.topic_id == wanted.c.t) & (table.c.document_id == wanted.c.d))
            .where(table.c.collection_id == collection_id)
        )
        return {(t, d): i for t, d, i in rows}
    out: dict[tuple[int, int], int] = {}
    for chunk in _chunks(pairs, CHUNK // 2):
        rows = session.execute(
            select(table.c.topic_id, table.c.document_id, table.c.id).where(
                table.c.collection_id == collection_id,
                tuple_(table.c.topic_id, table.c.document_id).in_(chunk),
            )
        )
        out.update({(t, d): i for t, d, i in rows})
    return out


def ensure_task_keys(
    session: Session, *, collection_id: int, keys: Sequence[tuple[str, str]],
    topics: Table, documents: Table, tasks: Table,
) -> tuple[list[int], set[tuple[int, int]]]:
    """Task ids for (topic external id, doc external id) keys, in order, creating topics,
    documents and tasks on first sight; also the (topic id, doc id) pairs created."""
    topic_ids, _ = ensure_external_ids(session, topics, collection_id=collection_id,
                                       external_ids=[t for t, _ in keys])
    doc_ids, _ = ensure_external_ids(session, documents, collection_id=collection_id,
                                     external_ids=[d for _, d in keys])
    pairs = [(topic_ids[t], doc_ids[d]) for t, d in keys]
    task_ids, created = ensure_tasks(session, tasks, collection_id=collection_id, pairs=pairs)
    return [task_ids[p] for p in pairs], created
