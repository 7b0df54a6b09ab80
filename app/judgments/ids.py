"""Get-or-create of external ids in bulk: one SELECT per chunk, one INSERT for the new ones.

``ON CONFLICT DO NOTHING`` makes concurrent requests that first see the same topic, document or
annotator safe: the loser inserts nothing and reads the winner's row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Table, select, tuple_
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

# Bound parameters per statement: SQLite's historical limit is 999.
CHUNK = 900


def _chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _insert_ignoring_conflicts(session: Session, table: Table, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    dialect = session.get_bind().dialect.name
    module = postgresql if dialect == "postgresql" else sqlite
    statement = module.insert(table).on_conflict_do_nothing()
    for chunk in _chunks(rows, 5000):
        session.execute(statement, list(chunk))


def ensure_external_ids(
    session: Session, table: Table, *, collection_id: int, external_ids: Iterable[str]
) -> tuple[dict[str, int], int]:
    """{external_id: id} for every given id, creating missing rows; also the number created."""
    wanted = list(dict.fromkeys(external_ids))
    found = _select_ids(session, table, collection_id, wanted)
    missing = [e for e in wanted if e not in found]
    _insert_ignoring_conflicts(
        session, table, [{"collection_id": collection_id, "external_id": e} for e in missing]
    )
    if missing:
        found.update(_select_ids(session, table, collection_id, missing))
    return found, len(missing)


def _select_ids(session: Session, table: Table, collection_id: int,
                external_ids: Sequence[str]) -> dict[str, int]:
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
    session: Session, table: Table, *, collection_id: int, pairs: Iterable[tuple[int, int]]
) -> tuple[dict[tuple[int, int], int], int]:
    """{(topic_id, document_id): task id}, creating missing tasks; also the number created."""
    wanted = list(dict.fromkeys(pairs))
    found = _select_tasks(session, table, collection_id, wanted)
    missing = [p for p in wanted if p not in found]
    _insert_ignoring_conflicts(
        session, table,
        [{"collection_id": collection_id, "topic_id": t, "document_id": d} for t, d in missing],
    )
    if missing:
        found.update(_select_tasks(session, table, collection_id, missing))
    return found, len(missing)


def _select_tasks(session: Session, table: Table, collection_id: int,
                  pairs: Sequence[tuple[int, int]]) -> dict[tuple[int, int], int]:
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
