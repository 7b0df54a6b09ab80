"""Engine, sessions, the declarative Base and schema migrations."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from itertools import chain, islice
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import (
    JSON,
    BigInteger,
    Engine,
    Integer,
    MetaData,
    Table,
    create_engine,
    event,
    insert,
    literal,
    literal_column,
)
from sqlalchemy.dialects import sqlite
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker
from sqlalchemy.types import DateTime

# Stable constraint names, so migrations can drop what they created on every backend.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# 64-bit ids on PostgreSQL; SQLite only autoincrements an INTEGER PRIMARY KEY.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def _sqlite_pragmas(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def utc_now() -> datetime:
    """Now, in UTC, to the microsecond: the default of every time column the database would
    otherwise fill from its server default, which on SQLite (CURRENT_TIMESTAMP) has whole
    seconds where PostgreSQL's now() has microseconds."""
    return datetime.now(UTC)


class _SQLiteUTCDateTime(sqlite.DATETIME):
    """SQLite has no time zones: ``DateTime(timezone=True)`` columns are stored as UTC and read
    back aware (UTC), as PostgreSQL returns them, so the API's times carry an offset on both."""

    def bind_processor(self, dialect):  # type: ignore[no-untyped-def]
        parent = super().bind_processor(dialect)

        def process(value):  # type: ignore[no-untyped-def]
            if value is not None and getattr(value, "tzinfo", None) is not None:
                value = value.astimezone(UTC).replace(tzinfo=None)
            return parent(value) if parent else value

        return process

    def result_processor(self, dialect, coltype):  # type: ignore[no-untyped-def]
        parent = super().result_processor(dialect, coltype)
        aware = self.timezone

        def process(value):  # type: ignore[no-untyped-def]
            value = parent(value) if parent else value
            if aware and value is not None and value.tzinfo is None:
                value = value.replace(tzinfo=UTC)
            return value

        return process


@lru_cache(maxsize=8)
def get_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        # SQLite takes one writer at a time: a burst of uploads waits on its lock (busy
        # timeout 30 s) while holding connections; QueuePool's default 5 + 10 ran out under 30
        # concurrent uploads (QA). Connections to a file cost little.
        engine = create_engine(url, connect_args={"check_same_thread": False},
                               pool_size=10, max_overflow=30)
        event.listen(engine, "connect", _sqlite_pragmas)
        engine.dialect.colspecs = {**engine.dialect.colspecs, DateTime: _SQLiteUTCDateTime}
    else:
        engine = create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
    return engine


@lru_cache(maxsize=8)
def get_sessionmaker(url: str) -> sessionmaker[Session]:
    return sessionmaker(bind=get_engine(url), expire_on_commit=False)


def alembic_config(url: str):  # type: ignore[no-untyped-def]
    from alembic.config import Config

    import migrations

    config = Config()
    config.set_main_option("script_location", str(Path(migrations.__file__).parent))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade_database(url: str | None = None, revision: str = "head") -> None:
    from alembic import command

    from app.core.config import get_settings

    command.upgrade(alembic_config(url or get_settings().database_url), revision)


def downgrade_database(url: str, revision: str = "base") -> None:
    from alembic import command

    command.downgrade(alembic_config(url), revision)


def _defaults_once(table: Table, row: dict[str, Any], dialect: Any) -> dict[str, Any]:
    """The Python defaults of the columns ``row`` leaves out, computed once and written into
    the statement as SQL literals: as bound values, executemany would convert them again for
    every row (SQLite, RF10's 98,453 judgments: 0.29 s against 0.58 s)."""
    out: dict[str, Any] = {}
    for column in table.columns:
        default = column.default
        if column.name in row or default is None or not (default.is_callable
                                                         or default.is_scalar):
            continue
        value = default.arg(None) if default.is_callable else default.arg
        process = column.type.dialect_impl(dialect).bind_processor(dialect)
        stored = process(value) if process else value
        out[column.name] = literal_column(str(literal(stored).compile(
            dialect=dialect, compile_kwargs={"literal_binds": True})))
    return out


def bulk_insert(session: Session, table: Table, rows: Iterable[dict[str, Any]]) -> None:
    """Insert many rows: COPY on PostgreSQL (one streamed statement), executemany elsewhere.

    ``rows`` may be a generator: it is read once, 10,000 rows at a time at most (a fit's
    2,000,000 task rows are never all held as dicts). JSON columns are written as JSON text;
    every row must have the same keys. A column the rows leave out has one value for all of
    them, as a single INSERT gives: on PostgreSQL its server default (``now()``: the
    transaction's time), elsewhere its Python default computed once (an executemany would call
    ``utc_now`` again for every row).
    """
    stream = iter(rows)
    first = next(stream, None)
    if first is None:
        return
    stream = chain([first], stream)
    connection = session.connection()
    if connection.dialect.name != "postgresql":
        statement = insert(table).values(**_defaults_once(table, first, connection.dialect))
        while batch := list(islice(stream, 10_000)):
            session.execute(statement, batch)
        return
    names = list(first)
    json_columns = {n for n in names if isinstance(table.c[n].type, JSON)}
    raw = connection.connection.driver_connection
    with raw.cursor() as cursor, cursor.copy(
        f"COPY {table.name} ({', '.join(names)}) FROM STDIN"
    ) as copy:
        for row in stream:
            copy.write_row([
                json.dumps(row[n]) if n in json_columns and row[n] is not None else row[n]
                for n in names
            ])


COPY_NULL = "\\N"  # NULL in COPY's text format
COPY_BLOCK = 50_000  # rows formatted at a time by bulk_insert_columns


@dataclass(frozen=True)
class JsonNumbers:
    """A JSON column made of number columns: per row the list of their values (``keys`` None)
    or the object {key: value}, one key per column (no columns: NULL). A value that is not
    finite is null. The text is ``json.dumps``'s: ``[0.25, 0.75]``, ``{"n": 5.0}``."""

    columns: Sequence[np.ndarray]
    keys: Sequence[str] | None = None


ColumnValues = np.ndarray | JsonNumbers | int | float | None


def bulk_insert_columns(session: Session, table: Table, n_rows: int,
                        columns: Mapping[str, ColumnValues]) -> None:
    """``bulk_insert`` of ``n_rows`` rows given as columns: a numpy array of numbers per
    column (a float that is not finite is NULL), a ``JsonNumbers``, or one Python value for
    every row.

    On PostgreSQL a text COPY whose lines are formatted from the columns a block of rows at a
    time, by ``str.format`` over lists: no dict, ``json.dumps`` or driver call per row (at
    2,000,000 rows those were the store stage's client CPU: docs/benchmarks.md). A number is
    written as its ``repr``, the shortest text that reads back to the same double, which is
    what psycopg and ``json.dumps`` write, so the stored rows are those of ``bulk_insert``.
    Elsewhere the same values go to ``bulk_insert`` as dicts.
    """
    if n_rows == 0:
        return
    for name, values in columns.items():
        arrays = values.columns if isinstance(values, JsonNumbers) else [values]
        for array in arrays:
            if isinstance(array, np.ndarray) and array.shape != (n_rows,):
                raise ValueError(f"column {name}: {array.shape} for {n_rows} rows")
    connection = session.connection()
    if connection.dialect.name != "postgresql":
        bulk_insert(session, table, _column_rows(n_rows, columns))
        return
    names = list(columns)
    # one line template: the constants written into it once, a {} per column of values
    parts, varying = [], []
    for name in names:
        values = columns[name]
        if isinstance(values, np.ndarray | JsonNumbers):
            parts.append("{}")
            varying.append(values)
        else:
            parts.append(_escape_braces(_copy_constant(values)))
    line = "\t".join(parts) + "\n"
    raw = connection.connection.driver_connection
    with raw.cursor() as cursor, cursor.copy(
        f"COPY {table.name} ({', '.join(names)}) FROM STDIN"
    ) as copy:
        for start in range(0, n_rows, COPY_BLOCK):
            block = slice(start, min(start + COPY_BLOCK, n_rows))
            texts = [_copy_texts(values, block) for values in varying]
            copy.write("".join(map(line.format, *texts)) if texts else
                       line * (block.stop - block.start))


def _copy_constant(value: int | float | None) -> str:
    if value is None:
        return COPY_NULL
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"a constant column takes a number or None, not {value!r}")
    return repr(value)


def _escape_braces(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _number_texts(array: np.ndarray, null: str) -> list[str]:
    """Each number's repr (``null`` for a float that is not finite)."""
    if array.dtype.kind not in "iuf":
        raise TypeError(f"a column of numbers, not {array.dtype}")
    values = array.tolist()
    if array.dtype.kind != "f":
        return list(map(repr, values))
    finite = np.isfinite(array)
    if finite.all():
        return list(map(repr, values))
    return [repr(v) if ok else null for v, ok in zip(values, finite.tolist(), strict=True)]


def _copy_texts(values: np.ndarray | JsonNumbers, block: slice) -> Iterable[str]:
    """One block of a column as COPY text fields."""
    if isinstance(values, np.ndarray):
        return _number_texts(values[block], COPY_NULL)
    n = block.stop - block.start
    if values.keys is not None and not values.keys:
        return [COPY_NULL] * n
    texts = [_number_texts(np.asarray(column)[block], "null") for column in values.columns]
    if not texts:
        return ["[]"] * n
    if values.keys is None:
        template = "[" + ", ".join(["{}"] * len(texts)) + "]"
    else:
        # json.dumps' keys, in COPY's escaping (a backslash doubled; JSON has no raw tab or
        # newline)
        template = "{{" + ", ".join(
            _escape_braces(json.dumps(key).replace("\\", "\\\\")) + ": {}"
            for key in values.keys) + "}}"
    return map(template.format, *texts)


def _column_rows(n_rows: int, columns: Mapping[str, ColumnValues]
                 ) -> Iterator[dict[str, Any]]:
    """The rows of ``bulk_insert_columns`` as dicts of Python values, a block at a time."""

    def values(array: np.ndarray) -> list[Any]:
        out = np.asarray(array).tolist()
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            out = [v if ok else None for v, ok in zip(out, np.isfinite(array).tolist(),
                                                      strict=True)]
        return out

    for start in range(0, n_rows, COPY_BLOCK):
        block = slice(start, min(start + COPY_BLOCK, n_rows))
        n = block.stop - block.start
        block_columns: dict[str, Iterable[Any]] = {}
        for name, column in columns.items():
            if isinstance(column, np.ndarray):
                block_columns[name] = values(column[block])
            elif isinstance(column, JsonNumbers):
                parts = [values(np.asarray(c)[block]) for c in column.columns]
                if column.keys is None:
                    block_columns[name] = map(list, zip(*parts, strict=True))
                elif column.keys:
                    block_columns[name] = (dict(zip(column.keys, row, strict=True))
                                           for row in zip(*parts, strict=True))
                else:
                    block_columns[name] = [None] * n
            else:
                block_columns[name] = [column] * n
        names = list(block_columns)
        for row in zip(*block_columns.values(), strict=True):
            yield dict(zip(names, row, strict=True))
