"""A judgment file's ingestion on PostgreSQL, chunk by chunk: rows checked in Python a chunk at a
time and copied (COPY) into a temporary table, then ids resolved and rows stored by a few
set-based statements, all in one transaction.

The process holds one chunk at a time, never the file (10,000,000 lines: 250 MB of text, several
GB as Python objects); the database resolves topics, documents, tasks and annotators with hash
joins, where Python would send every distinct id back and forth as arrays. Nothing outside the
temporary table is written before the last chunk has passed every check, so a bad line anywhere
stores nothing (the transaction rolls back, and the temporary table with it).

Differences from ``service.ingest`` (the path of JSON bodies and of SQLite): within a chunk
(``app.formats.judgment_chunks``) the checks run in a whole file's order; across chunks, the
first chunk with a problem names it. New topics, documents, annotators and tasks get their ids in
order of first appearance in the file, and judgments in file order, as ``service.ingest`` gives
them.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from itertools import chain
from typing import Any

from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.collections.service import lock_collection
from app.collections.tables import Collection
from app.core.errors import InvalidInput
from app.core.metrics import JUDGMENTS_INGESTED
from app.formats.judgments_file import JudgmentRows
from app.judgments.service import IngestReport, ingest, validate_rows
from app.judgments.tables import Batch

STAGE = "judgment_upload"

_CREATE = f"""CREATE TEMPORARY TABLE {STAGE} (
    n bigint, topic text, doc text, annotator text, label integer, gold integer
) ON COMMIT DROP"""

# New topics, documents and annotators, in order of first appearance (min(n)). {conflict}: see
# _insert_new.
_NEW_NAMES = """INSERT INTO {table} (collection_id, external_id)
SELECT :cid, u.name FROM (SELECT {column} AS name, min(n) AS first FROM {stage} GROUP BY {column})
AS u WHERE NOT EXISTS (SELECT FROM {table} AS x WHERE x.collection_id = :cid
                       AND x.external_id = u.name)
ORDER BY u.first {conflict}"""

_NEW_TASKS = f"""INSERT INTO tasks (collection_id, topic_id, document_id, gold)
SELECT :cid, t.id, d.id, u.gold
FROM (SELECT topic, doc, min(n) AS first, max(gold) AS gold FROM {STAGE} GROUP BY topic, doc) AS u
JOIN topics AS t ON t.collection_id = :cid AND t.external_id = u.topic
JOIN documents AS d ON d.collection_id = :cid AND d.external_id = u.doc
WHERE NOT EXISTS (SELECT FROM tasks AS x WHERE x.collection_id = :cid AND x.topic_id = t.id
                  AND x.document_id = d.id)
ORDER BY u.first {{conflict}}"""

# Tasks that existed before this request (or a concurrent one created) get the file's gold.
_SET_GOLD = f"""UPDATE tasks AS k SET gold = u.gold
FROM (SELECT topic, doc, max(gold) AS gold FROM {STAGE} WHERE gold IS NOT NULL
      GROUP BY topic, doc) AS u
JOIN topics AS t ON t.collection_id = :cid AND t.external_id = u.topic
JOIN documents AS d ON d.collection_id = :cid AND d.external_id = u.doc
WHERE k.collection_id = :cid AND k.topic_id = t.id AND k.document_id = d.id
  AND k.gold IS DISTINCT FROM u.gold"""

_JUDGMENTS = f"""INSERT INTO judgments (collection_id, task_id, annotator_id, label, batch_id)
SELECT :cid, k.id, a.id, u.label, :batch
FROM {STAGE} AS u
JOIN topics AS t ON t.collection_id = :cid AND t.external_id = u.topic
JOIN documents AS d ON d.collection_id = :cid AND d.external_id = u.doc
JOIN tasks AS k ON k.collection_id = :cid AND k.topic_id = t.id AND k.document_id = d.id
JOIN annotators AS a ON a.collection_id = :cid AND a.external_id = u.annotator
ORDER BY u.n"""


class _Gold:
    """The gold labels seen so far (task key -> value, line), to refuse a later chunk's row
    that gives a task another gold (``validate_rows`` checks within a chunk)."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, str], tuple[int, int]] = {}

    def add(self, rows: JudgmentRows, golds: list[int | None]) -> None:
        for i, gold in enumerate(golds):
            if gold is None:
                continue
            key = (rows.topics[i], rows.docs[i])
            first = self.seen.setdefault(key, (gold, rows.lines[i]))
            if first[0] != gold:
                line = rows.lines[i]
                raise InvalidInput(
                    f"line {line}: gold {gold} for topic {key[0]!r}, doc {key[1]!r} differs "
                    f"from its gold {first[0]} on line {first[1]} (a task has one gold label)",
                    code="conflicting_gold", column="gold", line=line)


def _copy_chunk(cursor: Any, rows: JudgmentRows, golds: list[int | None], start: int) -> None:
    """The chunk's rows as COPY text: ids cannot hold a tab or a line end (control characters
    are refused), a backslash is doubled; an empty field is NULL (no id is empty)."""
    columns = [map(str, range(start, start + len(rows))), rows.topics, rows.docs,
               rows.annotators, map(str, rows.labels),
               ("" if g is None else str(g) for g in golds) if golds else
               [""] * len(rows)]
    payload = "\n".join(map("\t".join, zip(*columns, strict=True))) + "\n"
    if "\\" in payload:
        payload = payload.replace("\\", "\\\\")
    with cursor.copy(f"COPY {STAGE} (n, topic, doc, annotator, label, gold) FROM STDIN "
                     "WITH (NULL '')") as copy:
        copy.write(payload)


def _insert_new(session: Session, statement: str, params: dict[str, Any]) -> int:
    """Run an INSERT of rows not yet there; the number inserted. A plain INSERT first (ON
    CONFLICT's speculative insertion costs twice the time per row here); should a request that
    does not take the collection's lock (gold, texts, features) have inserted one of the rows
    meanwhile, the INSERT is undone to a savepoint and run again with ON CONFLICT DO NOTHING."""
    try:
        with session.begin_nested():
            return int(session.execute(text(statement.format(conflict="")), params).rowcount)
    except IntegrityError:
        return int(session.execute(text(statement.format(conflict="ON CONFLICT DO NOTHING")),
                                   params).rowcount)


def ingest_file(session: Session, *, collection: Collection, chunks: Iterable[JudgmentRows],
                filename: str | None) -> IngestReport:
    """A file of one chunk (most files: ``CHUNK_ROWS`` rows) as ``service.ingest`` stores a
    whole file; a longer one by :func:`ingest_chunks`."""
    rows = iter(chunks)
    first = next(rows)
    second = next(rows, None)
    if second is None:
        return ingest(session, collection=collection, rows=first, source="file",
                      filename=filename)
    return ingest_chunks(session, collection=collection, chunks=chain([first, second], rows),
                         filename=filename)


def ingest_chunks(session: Session, *, collection: Collection, chunks: Iterable[JudgmentRows],
                  filename: str | None, timings: dict[str, float] | None = None
                  ) -> IngestReport:
    """Store every row of a file read in chunks, or none (PostgreSQL only); ``timings``, when
    given, gets each stage's seconds (check and copy, names, tasks, judgments)."""
    clock = time.perf_counter()
    stages = timings if timings is not None else {}

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        stages[name] = stages.get(name, 0.0) + now - clock
        clock = now

    cid = collection.id
    connection = session.connection()
    session.execute(text(_CREATE))
    gold = _Gold()
    n = 0
    ignored: tuple[str, ...] = ()
    has_gold = False
    with connection.connection.driver_connection.cursor() as cursor:  # type: ignore[union-attr]
        for rows in chunks:
            golds = validate_rows(rows, collection=collection, source="file")
            if rows.golds is not None:
                has_gold = True
                gold.add(rows, golds)
            _copy_chunk(cursor, rows, golds if rows.golds is not None else [], n)
            n += len(rows)
            ignored = rows.ignored_columns
    lap("check_and_copy_s")
    lock_collection(session, collection_id=cid)
    session.execute(text(f"ANALYZE {STAGE}"))
    # Hash joins: the tables' statistics predate this upload's rows (a fresh collection's
    # topics look empty), and nested loops over millions of staged rows would take minutes.
    session.execute(text("SET LOCAL enable_nestloop = off"))
    session.execute(text("SET LOCAL work_mem = '256MB'"))
    params = {"cid": cid}
    new = {}
    for table, column in (("topics", "topic"), ("documents", "doc"), ("annotators", "annotator")):
        new[table] = _insert_new(session, _NEW_NAMES.format(
            table=table, column=column, stage=STAGE, conflict="{conflict}"), params)
    lap("names_s")
    new_tasks = _insert_new(session, _NEW_TASKS, params)
    if has_gold:
        session.execute(text(_SET_GOLD), params)
    lap("tasks_s")
    batch = Batch(collection_id=cid, source="file", filename=filename, n_judgments=n)
    session.add(batch)
    session.flush()
    stored = session.execute(text(_JUDGMENTS), {**params, "batch": batch.id}).rowcount
    assert stored == n, (stored, n)  # every row resolved: the statements above created its ids
    session.commit()
    lap("judgments_s")
    JUDGMENTS_INGESTED.labels("file").inc(n)
    ignore = set(collection.ignore)
    return IngestReport(batch.id, n, new["topics"], new["documents"], new_tasks,
                        new["annotators"], len(gold.seen),
                        sum(1 for g, _ in gold.seen.values() if g in ignore), list(ignored))
