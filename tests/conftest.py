"""Real databases for the tests: a SQLite file and PostgreSQL on 127.0.0.1:5432.

The PostgreSQL URL comes from CROWDQRELS_TEST_POSTGRES_URL (default: database
``crowdqrels_test`` on the local server, created on first use). Each test starts from empty
tables; migrations run once per session.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from app.core.db import get_engine, upgrade_database

ROOT = Path(__file__).resolve().parents[1]
# The real TREC RF10 crowd file lives beside the checkout (../shared/data); a clone elsewhere
# points CROWDQRELS_RF10_FILE at it. Its tests fail rather than skip when it is missing: they
# are the end-to-end checks users rely on.
RF10 = Path(os.environ.get(
    "CROWDQRELS_RF10_FILE",
    ROOT.parent / "shared" / "data" / "trec-rf10-crowd" / "trec-rf10-data.txt",
))


# Each test file's seconds in a profiled run (bench/suite_cpu.py --write-costs): the schedule below.
FILE_COSTS = ROOT / "tests" / "file_costs.tsv"


def _file_costs() -> dict[str, float]:
    if not FILE_COSTS.is_file():
        return {}
    rows = (line.split("\t") for line in FILE_COSTS.read_text().splitlines()
            if line and not line.startswith("#"))
    return {name: float(seconds) for name, seconds in rows}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The costliest files first, the longest-processing-time-first rule (Graham 1969).

    ``--dist loadfile`` hands each file to the next free worker in collection order (``make
    test`` passes ``--no-loadscope-reorder``; xdist's own order is by number of tests, which put
    the two-test files of a minute each, the precompile and Schemathesis tests, last and left
    the other workers idle behind them). A file missing from ``tests/file_costs.tsv`` (a new
    one) costs 0 and keeps its place after the listed ones; a test's order within its file is
    kept. Every worker sorts the same collection the same way, as xdist requires."""
    costs = _file_costs()
    if not costs:
        return
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        first.setdefault(item.nodeid.split("::")[0], index)

    def key(item: pytest.Item) -> tuple[float, int]:
        name = item.nodeid.split("::")[0]
        return -costs.get(name, 0.0), first[name]

    items.sort(key=key)


def _per_worker(url: str) -> str:
    """The test database of this pytest-xdist worker (``crowdqrels_test_gw1``): workers run
    side by side and each truncates its tables before every test, so none may share one."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return url
    parsed = make_url(url)
    return parsed.set(database=f"{parsed.database}_{worker}").render_as_string(hide_password=False)


POSTGRES_URL = _per_worker(os.environ.get(
    "CROWDQRELS_TEST_POSTGRES_URL",
    "postgresql+psycopg://postgres@127.0.0.1:5432/crowdqrels_test",
))


def create_postgres_database(url: str) -> str:
    """Create the database named in ``url`` if it does not exist; return the URL."""
    import psycopg

    parsed = make_url(url)
    admin = parsed.set(drivername="postgresql", database="postgres")
    with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (parsed.database,)
        ).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{parsed.database}"')
    return url


def drop_postgres_database(url: str) -> None:
    import psycopg

    parsed = make_url(url)
    admin = parsed.set(drivername="postgresql", database="postgres")
    with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{parsed.database}" WITH (FORCE)')


def clean_tables(url: str) -> None:
    engine = get_engine(url)
    from app.tables import all_table_names

    names = all_table_names()
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text(f"TRUNCATE {', '.join(names)} RESTART IDENTITY CASCADE"))
        else:
            for name in names:
                conn.execute(text(f"DELETE FROM {name}"))


@pytest.fixture(scope="session")
def sqlite_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'crowdqrels.db'}"
    upgrade_database(url)
    return url


@pytest.fixture(scope="session")
def postgres_url() -> str:
    # A new database each session: whatever an earlier run left behind is gone.
    drop_postgres_database(POSTGRES_URL)
    url = create_postgres_database(POSTGRES_URL)
    upgrade_database(url)
    return url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest) -> Iterator[str]:
    url: str = request.getfixturevalue(f"{request.param}_url")
    clean_tables(url)
    yield url


@pytest.fixture
def settings(database_url: str):  # type: ignore[no-untyped-def]
    from app.core.config import Settings

    # warm_startup_s=0: a test's application serves at once (routes built as requests reach
    # them); tests/ui/test_warm.py covers the start-up warm-up with its own settings.
    # Jobs fork from the process's job starter (the default), shared by every test's
    # application: a job costs a fork, not an interpreter importing every model (1.3 s of CPU).
    return Settings(database_url=database_url, environment="test", max_body_bytes=8 * 1024 * 1024,
                    warm_startup_s=0)


BROKER_URL = os.environ.get("CROWDQRELS_TEST_BROKER_URL", "redis://127.0.0.1:6379/15")


@pytest.fixture(scope="session")
def celery_queue(postgres_url: str) -> Iterator[str]:
    """A Celery worker on the test PostgreSQL database, on a queue of its own."""
    import uuid

    from tests.api.jobs import start_celery_worker

    queue = f"crowdqrels-test-{uuid.uuid4().hex[:8]}"
    worker = start_celery_worker(database_url=postgres_url, broker_url=BROKER_URL, queue=queue)
    yield queue
    worker.terminate()
    try:
        worker.wait(timeout=20)
    except Exception:
        worker.kill()


@pytest.fixture(params=[
    "inline-sqlite",
    pytest.param("inline-postgres", marks=pytest.mark.postgres),
    pytest.param("celery-postgres", marks=[pytest.mark.postgres, pytest.mark.redis]),
])
def runner_settings(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Settings for each job runner: in-process on both databases, Celery on PostgreSQL."""
    from app.core.config import Settings

    runner, database = request.param.split("-")
    url: str = request.getfixturevalue(f"{database}_url")
    clean_tables(url)
    extra = {}
    if runner == "celery":
        extra = {"jobs": "celery", "broker_url": BROKER_URL,
                 "celery_queue": request.getfixturevalue("celery_queue")}
    return Settings(database_url=url, environment="test", warm_startup_s=0,
                    **extra)  # as in `settings`


@pytest.fixture
def jobs_client(runner_settings):  # type: ignore[no-untyped-def]
    from fastapi.testclient import TestClient

    from app.main import create_app

    with TestClient(create_app(runner_settings)) as test_client:
        yield test_client


@pytest.fixture
def client(settings):  # type: ignore[no-untyped-def]
    from fastapi.testclient import TestClient

    from app.main import create_app

    with TestClient(create_app(settings)) as test_client:
        yield test_client


@pytest.fixture(scope="session")
def rf10_path() -> Path:
    if not RF10.is_file():
        pytest.fail(f"the TREC RF10 file is not at {RF10}: set CROWDQRELS_RF10_FILE to its path",
                    pytrace=False)
    return RF10


@pytest.fixture
def rf10_bytes(rf10_path: Path) -> bytes:
    return rf10_path.read_bytes()
