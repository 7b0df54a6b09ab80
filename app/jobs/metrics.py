"""Jobs by kind and status, counted in the database when /metrics is read: every API process
and worker sees the same rows, so the gauge is right however many processes run."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import func, select

from app.core.db import get_sessionmaker
from app.jobs.kinds import KINDS
from app.jobs.tables import STATUSES

Rows = Iterable[tuple[list[str], float]]


def job_counts(database_url: str) -> list[tuple[str, str, list[str], Rows]]:
    """The ``crowdqrels_jobs`` gauge: one sample per kind and status (zeros included)."""
    rows: list[tuple[list[str], float]] = []
    with get_sessionmaker(database_url)() as session:
        for kind in KINDS.values():
            table = kind.table_class()
            counts = {status: n for status, n in session.execute(
                select(table.status, func.count()).group_by(table.status))}
            rows.extend(([kind.name, status], float(counts.get(status, 0)))
                        for status in STATUSES)
    return [("crowdqrels_jobs", "Jobs in the database, by kind and status.",
             ["kind", "status"], rows)]
