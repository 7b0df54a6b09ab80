"""Run the API in a child process (uvicorn) on a free port, for benchmarks."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
RF10 = Path(os.environ.get(  # beside the checkout, as the tests expect it
    "CROWDQRELS_RF10_FILE",
    Path(__file__).resolve().parents[1].parent / "shared" / "data" / "trec-rf10-crowd"
    / "trec-rf10-data.txt",
))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def reset_postgres(url: str) -> None:
    """Drop and create the database named in url (a benchmark starts from empty)."""
    sys.path.insert(0, str(ROOT))
    from tests.conftest import create_postgres_database, drop_postgres_database

    drop_postgres_database(url)
    create_postgres_database(url)


def rss_mib(pid: int) -> tuple[float, float]:
    """(current RSS, peak RSS) of a process in MiB, from /proc."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


@contextmanager
def running_worker(database_url: str, **env: str) -> Iterator[subprocess.Popen[bytes]]:
    """A Celery worker (``crowdqrels worker``) on ``database_url``, with ``env`` (the broker)."""
    environ = {**os.environ, "CROWDQRELS_DATABASE_URL": database_url, **env}
    process = subprocess.Popen([sys.executable, "-m", "app.cli", "worker"], cwd=ROOT,
                               env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield process
    finally:
        process.terminate()
        process.wait(timeout=60)


@contextmanager
def running_api(database_url: str, root: Path = ROOT,
                **env: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The API of the checkout at ``root`` (another worktree: a peer in the same run)."""
    port = free_port()
    environ = {**os.environ, "CROWDQRELS_DATABASE_URL": database_url, "PYTHONPATH": str(root),
               **env}
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--log-level", "warning"],
        cwd=root, env=environ,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        else:
            raise RuntimeError("the API did not start")
        yield base, process
    finally:
        process.terminate()
        process.wait(timeout=30)
