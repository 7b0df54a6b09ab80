"""Migrations from empty to head and back to empty, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, inspect

from app.core.db import downgrade_database, upgrade_database
from app.tables import all_table_names
from tests.conftest import create_postgres_database, drop_postgres_database


def _tables(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        return set(inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


def _roundtrip(url: str) -> None:
    assert _tables(url) == set()
    upgrade_database(url)
    assert _tables(url) == set(all_table_names())
    downgrade_database(url, "base")
    assert _tables(url) == set()
    upgrade_database(url)  # and up again: the downgrade left nothing behind
    assert _tables(url) == set(all_table_names())


def test_sqlite_up_down_up(tmp_path) -> None:
    _roundtrip(f"sqlite:///{tmp_path / 'm.db'}")


@pytest.mark.postgres
def test_postgres_up_down_up() -> None:
    url = "postgresql+psycopg://postgres@127.0.0.1:5432/crowdqrels_migrations_test"
    drop_postgres_database(url)
    create_postgres_database(url)
    try:
        _roundtrip(url)
    finally:
        drop_postgres_database(url)
