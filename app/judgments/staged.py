"""A judgment file's ingestion on PostgreSQL, chunk by chunk: rows checked in Python a chunk at a
time, then ids resolved by a few set-based statements and the judgments stored by one binary
COPY, all in one transaction.

The process holds one chunk's text at a time, never the file's (10,000,000 lines: 250 MB of
text, several GB as Python objects): each row is kept as three int32s (the number of its (topic,
doc) key and of its annotator, numbered in order of first appearance, and its label) and each
distinct key once, in a dict. Only the distinct keys and annotators are copied into temporary
tables; the database creates topics, documents, annotators and tasks from them with hash joins
and hands back each key's id, and the rows go into ``judgments`` by a binary COPY built with
numpy (no staged text per row, no join or sort over the rows: that COPY is the bound, docs/
benchmarks.md). Nothing is written before the last chunk has passed every check, so a bad line
anywhere stores nothing (and the transaction rolls back on any later failure).

Differences from ``service.ingest`` (the path of JSON bodies and of SQLite): within a chunk
(``app.formats.judgment_chunks``) the checks run in a whole file's order; across chunks, the
first chunk with a problem names it. New topics, documents, annotators and tasks get their ids in
order of first appearance in the file, and judgments in file order, as ``service.ingest`` gives
them.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from itertools import chain, islice
from typing import Any

import numpy as np
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.collections.service import lock_collection
from app.collections.tables import Collection
from app.core.errors import InvalidInput
from app.core.metrics import JUDGMENTS_INGESTED
from app.formats.judgments_file import CHUNK_ROWS, JudgmentRows
from app.judgments.service import IngestReport, ingest, validate_rows
from app.judgments.tables import Batch

# The file's distinct (topic, doc) keys and annotators, numbered by first appearance in the file
# (the client numbers them and keeps each row as three integers; the statements below group and
# join the distinct names only, never every row's text).
KEYS = "upload_tasks"
NAMES = "upload_annotators"

_CREATE = (
    f"CREATE TEMPORARY TABLE {KEYS} (task_key integer, topic text, doc text, gold integer) "
    "ON COMMIT DROP",
    f"CREATE TEMPORARY TABLE {NAMES} (annotator_key integer, name text) ON COMMIT DROP",
)

# New topics, documents and annotators, in order of first appearance ({source}: name, first;
# a key's number is its first line's rank, so a topic's or document's first key is its first
# line). {conflict}: see _insert_new.
_NEW_NAMES = """INSERT INTO {table} (collection_id, external_id)
SELECT :cid, u.name FROM ({source}) AS u
WHERE NOT EXISTS (SELECT FROM {table} AS x WHERE x.collection_id = :cid
                  AND x.external_id = u.name)
ORDER BY u.first {conflict}"""

_NAME_SOURCES = (
    ("topics", f"SELECT topic AS name, min(task_key) AS first FROM {KEYS} GROUP BY topic"),
    ("documents", f"SELECT doc AS name, min(task_key) AS first FROM {KEYS} GROUP BY doc"),
    ("annotators", f"SELECT name, annotator_key AS first FROM {NAMES}"),
)

_NEW_TASKS = f"""INSERT INTO tasks (collection_id, topic_id, document_id, gold)
SELECT :cid, t.id, d.id, u.gold
FROM {KEYS} AS u
JOIN topics AS t ON t.collection_id = :cid AND t.external_id = u.topic
JOIN documents AS d ON d.collection_id = :cid AND d.external_id = u.doc
WHERE NOT EXISTS (SELECT FROM tasks AS x WHERE x.collection_id = :cid AND x.topic_id = t.id
                  AND x.document_id = d.id)
ORDER BY u.task_key {{conflict}}"""

# Tasks that existed before this request (or a concurrent one created) get the file's gold.
_SET_GOLD = f"""UPDATE tasks AS k SET gold = u.gold
FROM {KEYS} AS u
JOIN topics AS t ON t.collection_id = :cid AND t.external_id = u.topic
JOIN documents AS d ON d.collection_id = :cid AND d.external_id = u.doc
WHERE u.gold IS NOT NULL AND k.collection_id = :cid AND k.topic_id = t.id
  AND k.document_id = d.id AND k.gold IS DISTINCT FROM u.gold"""

# Each key's task id and each annotator's id, by key (binary COPY out: two integers a row).
_TASK_IDS = f"""COPY (SELECT s.task_key, k.id FROM {KEYS} AS s
JOIN topics AS t ON t.collection_id = %(cid)s AND t.external_id = s.topic
JOIN documents AS d ON d.collection_id = %(cid)s AND d.external_id = s.doc
JOIN tasks AS k ON k.collection_id = %(cid)s AND k.topic_id = t.id AND k.document_id = d.id
) TO STDOUT (FORMAT binary)"""

_ANNOTATOR_IDS = f"""COPY (SELECT s.annotator_key, a.id FROM {NAMES} AS s
JOIN annotators AS a ON a.collection_id = %(cid)s AND a.external_id = s.name
) TO STDOUT (FORMAT binary)"""

# PostgreSQL's binary COPY: a header, rows of (field count, then each field's length and
# big-endian value), a trailer.
_BINARY_HEADER = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
_BINARY_TRAILER = b"\xff\xff"
_ID_ROW = np.dtype([("fields", ">i2"), ("key_size", ">i4"), ("key", ">i4"),
                    ("id_size", ">i4"), ("id", ">i8")])
_JUDGMENT_ROW = np.dtype([
    ("fields", ">i2"), ("c_size", ">i4"), ("collection_id", ">i4"), ("t_size", ">i4"),
    ("task_id", ">i8"), ("a_size", ">i4"), ("annotator_id", ">i8"), ("l_size", ">i4"),
    ("label", ">i4"), ("b_size", ">i4"), ("batch_id", ">i8")])


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


class _Keys:
    """Numbers for the file's distinct (topic, doc) keys and annotators, in order of first
    appearance, kept across chunks (a dict entry per distinct key: 10,000,000 lines of 2,000,000
    tasks hold about 200 MB here, where the rows' text would be several GB)."""

    def __init__(self) -> None:
        self.tasks: dict[str, int] = {}  # "topic\tdoc" (ids hold no tab) -> number
        self.annotators: dict[str, int] = {}

    def number(self, rows: JudgmentRows) -> tuple[list[int], list[int]]:
        tasks, annotators = self.tasks, self.annotators
        keys = map("\t".join, zip(rows.topics, rows.docs, strict=True))
        return ([tasks.setdefault(k, len(tasks)) for k in keys],
                [annotators.setdefault(a, len(annotators)) for a in rows.annotators])


def _copy(cursor: Any, table: str, columns: str, lines: Iterable[str]) -> None:
    """Tab-separated lines as COPY text, in pieces of ``CHUNK_ROWS``: ids cannot hold a tab or
    a line end (control characters are refused), a backslash is doubled; an empty field is NULL
    (no id is empty)."""
    with cursor.copy(f"COPY {table} ({columns}) FROM STDIN WITH (NULL '')") as copy:
        pending = iter(lines)
        while piece := list(islice(pending, CHUNK_ROWS)):
            payload = "\n".join(piece) + "\n"
            if "\\" in payload:
                payload = payload.replace("\\", "\\\\")
            copy.write(payload)


def _id_map(cursor: Any, statement: str, cid: int, size: int) -> np.ndarray:
    """The statement's (key, id) rows as an array of ids by key (keys are 0 .. size - 1)."""
    data = bytearray()
    with cursor.copy(statement, {"cid": cid}) as copy:
        for block in copy:
            data += block
    rows = np.frombuffer(bytes(data[len(_BINARY_HEADER):len(data) - len(_BINARY_TRAILER)]),
                         dtype=_ID_ROW)
    ids = np.full(size, -1, dtype=np.int64)
    ids[rows["key"]] = rows["id"]
    return ids


def _copy_judgments(cursor: Any, rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
                    task_ids: np.ndarray, annotator_ids: np.ndarray, *, cid: int,
                    batch: int) -> None:
    """The judgments by binary COPY, a chunk at a time, in file order (their ids follow it)."""
    with cursor.copy("COPY judgments (collection_id, task_id, annotator_id, label, batch_id) "
                     "FROM STDIN (FORMAT binary)") as copy:
        copy.write(_BINARY_HEADER)
        for task_keys, annotator_keys, labels in rows:
            out = np.empty(len(labels), dtype=_JUDGMENT_ROW)
            out["fields"] = 5
            for size, name in ((4, "c_size"), (8, "t_size"), (8, "a_size"), (4, "l_size"),
                               (8, "b_size")):
                out[name] = size
            out["collection_id"] = cid
            out["task_id"] = task_ids[task_keys]
            out["annotator_id"] = annotator_ids[annotator_keys]
            out["label"] = labels
            out["batch_id"] = batch
            copy.write(out.tobytes())
        copy.write(_BINARY_TRAILER)


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
    for statement in _CREATE:
        session.execute(text(statement))
    gold = _Gold()
    keys = _Keys()
    rows_kept: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # 12 bytes a judgment
    n = 0
    ignored: tuple[str, ...] = ()
    with connection.connection.driver_connection.cursor() as cursor:  # type: ignore[union-attr]
        for rows in chunks:
            golds = validate_rows(rows, collection=collection, source="file")
            if rows.golds is not None:
                gold.add(rows, golds)
            task_keys, annotator_keys = keys.number(rows)
            rows_kept.append((np.array(task_keys, dtype=np.int32),
                              np.array(annotator_keys, dtype=np.int32),
                              np.array(rows.labels, dtype=np.int32)))
            n += len(rows)
            ignored = rows.ignored_columns
        gold_of = {f"{t}\t{d}": str(g) for (t, d), (g, _) in gold.seen.items()}
        _copy(cursor, KEYS, "task_key, topic, doc, gold",
              (f"{i}\t{k}\t{gold_of.get(k, '')}" for k, i in keys.tasks.items()))
        _copy(cursor, NAMES, "annotator_key, name",
              (f"{i}\t{a}" for a, i in keys.annotators.items()))
        has_gold = bool(gold_of)
        n_keys, n_annotators = len(keys.tasks), len(keys.annotators)
        del keys, gold_of
        lap("check_and_copy_s")
        lock_collection(session, collection_id=cid)
        session.execute(text(f"ANALYZE {KEYS}, {NAMES}"))
        # Hash joins: the tables' statistics predate this upload's rows (a fresh collection's
        # topics look empty), and nested loops over millions of staged rows would take minutes.
        session.execute(text("SET LOCAL enable_nestloop = off"))
        session.execute(text("SET LOCAL work_mem = '256MB'"))
        params = {"cid": cid}
        new = {}
        for table, source in _NAME_SOURCES:
            new[table] = _insert_new(session, _NEW_NAMES.format(
                table=table, source=source, conflict="{conflict}"), params)
        lap("names_s")
        new_tasks = _insert_new(session, _NEW_TASKS, params)
        if has_gold:
            session.execute(text(_SET_GOLD), params)
        lap("tasks_s")
        task_ids = _id_map(cursor, _TASK_IDS, cid, n_keys)
        annotator_ids = _id_map(cursor, _ANNOTATOR_IDS, cid, n_annotators)
        # every key resolved: the statements above created its ids
        assert task_ids.min(initial=0) >= 0 and annotator_ids.min(initial=0) >= 0
        batch = Batch(collection_id=cid, source="file", filename=filename, n_judgments=n)
        session.add(batch)
        session.flush()
        _copy_judgments(cursor, rows_kept, task_ids, annotator_ids, cid=cid, batch=batch.id)
    session.commit()
    lap("judgments_s")
    JUDGMENTS_INGESTED.labels("file").inc(n)
    ignore = set(collection.ignore)
    return IngestReport(batch.id, n, new["topics"], new["documents"], new_tasks,
                        new["annotators"], len(gold.seen),
                        sum(1 for g, _ in gold.seen.values() if g in ignore), list(ignored))
