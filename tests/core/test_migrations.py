"""Migrations from empty to head and back to empty, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect
from sqlalchemy.engine import make_url

from app.core.db import Base, downgrade_database, upgrade_database
from app.tables import all_table_names
from tests.conftest import POSTGRES_URL, create_postgres_database, drop_postgres_database

# Indexes the migrations create in raw SQL (their NULLS order is dialect-specific), so the ORM
# metadata does not declare them.
RAW_SQL_INDEXES = {
    "ix_aggregation_annotators_aggregation_id_competence",
    "ix_aggregation_tasks_aggregation_id_difficulty",
    "ix_aggregation_tasks_aggregation_id_uncertainty",
}


def _tables(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        return set(inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


def _schema_differences(url: str) -> list[object]:
    """What autogenerate would change to make the migrated schema match the ORM tables."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            diffs = compare_metadata(context, Base.metadata)
    finally:
        engine.dispose()
    return [d for d in diffs
            if not (isinstance(d, tuple) and d[0] == "remove_index"
                    and d[1].name in RAW_SQL_INDEXES)]


def _roundtrip(url: str) -> None:
    assert _tables(url) == set()
    upgrade_database(url)
    assert _tables(url) == set(all_table_names())
    assert _schema_differences(url) == []
    downgrade_database(url, "base")
    assert _tables(url) == set()
    upgrade_database(url)  # and up again: the downgrade left nothing behind
    assert _tables(url) == set(all_table_names())


def test_sqlite_up_down_up(tmp_path) -> None:
    _roundtrip(f"sqlite:///{tmp_path / 'm.db'}")


@pytest.mark.postgres
def test_postgres_up_down_up() -> None:
    # Beside the test database (its name from CROWDQRELS_TEST_POSTGRES_URL), never shared.
    base = make_url(POSTGRES_URL)
    url = base.set(database=f"{base.database}_migrations").render_as_string(hide_password=False)
    drop_postgres_database(url)
    create_postgres_database(url)
    try:
        _roundtrip(url)
    finally:
        drop_postgres_database(url)


def _withdrawals_applied_on_downgrade(url: str) -> None:
    """0011 -> 0010: the older schema has no withdrawals (label NULL): each one and the earlier
    judgments of its task and annotator are deleted, later ones stay (what fits read)."""
    from sqlalchemy import text

    upgrade_database(url)
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO collections (id, name, labels, relevant_from, ignore, "
                              "created_at) VALUES (1, 'c', '[0, 1]', 1, '[]', CURRENT_TIMESTAMP)"))
            conn.execute(text("INSERT INTO batches (id, collection_id, source, n_judgments, "
                              "received_at) VALUES (1, 1, 'judge', 0, CURRENT_TIMESTAMP)"))
            for ident, task, annotator, label in [(1, 1, 1, 1), (2, 2, 1, 0), (3, 1, 1, None),
                                                  (4, 1, 2, 1), (5, 2, 1, None), (6, 2, 1, 1)]:
                conn.execute(text(
                    "INSERT INTO judgments (id, collection_id, task_id, annotator_id, label, "
                    "batch_id, received_at) VALUES (:i, 1, :t, :a, :y, 1, CURRENT_TIMESTAMP)"),
                    {"i": ident, "t": task, "a": annotator, "y": label})
        downgrade_database(url, "0010")
        with engine.connect() as conn:
            left = conn.execute(text("SELECT id, label FROM judgments ORDER BY id")).all()
        assert [tuple(r) for r in left] == [(4, 1), (6, 1)]
        upgrade_database(url)
        columns = {c["name"]: c for c in inspect(engine).get_columns("annotators")}
        assert "kind" in columns
    finally:
        engine.dispose()
    downgrade_database(url, "base")


def test_sqlite_downgrade_applies_withdrawals(tmp_path) -> None:
    _withdrawals_applied_on_downgrade(f"sqlite:///{tmp_path / 'w.db'}")


@pytest.mark.postgres
def test_postgres_downgrade_applies_withdrawals() -> None:
    base = make_url(POSTGRES_URL)
    url = base.set(database=f"{base.database}_withdrawals").render_as_string(hide_password=False)
    drop_postgres_database(url)
    create_postgres_database(url)
    try:
        _withdrawals_applied_on_downgrade(url)
    finally:
        drop_postgres_database(url)
