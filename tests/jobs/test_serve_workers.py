"""`crowdqrels serve --workers N`: several API processes, which only the Celery runner supports."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from app.cli import main
from tests.conftest import BROKER_URL, clean_tables
from tests.jobs.test_process_isolation import ROOT, _free_port


def test_several_workers_need_the_celery_runner(monkeypatch, tmp_path: Path, capsys) -> None:
    from app.core.config import get_settings

    database = tmp_path / "never.db"
    monkeypatch.setenv("CROWDQRELS_DATABASE_URL", f"sqlite:///{database}")
    monkeypatch.setenv("CROWDQRELS_JOBS", "inline")
    get_settings.cache_clear()
    try:
        assert main(["serve", "--workers", "2"]) == 2
    finally:
        get_settings.cache_clear()
    assert "CROWDQRELS_JOBS=celery" in capsys.readouterr().err
    assert not database.exists()  # refused before migrating anything
    with pytest.raises(SystemExit):
        main(["serve", "--workers", "0"])


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry.name))
    return out


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.redis
def test_two_api_processes_share_fits_through_celery(postgres_url: str, celery_queue: str,
                                                     tmp_path: Path) -> None:
    """Two uvicorn workers on PostgreSQL and a Celery worker: a fit posted through one API
    process is followed to success over fresh connections, whichever process answers."""
    from models.synthetic import generate

    clean_tables(postgres_url)
    generate(300, 20, noise_level=(0.0, 2.0), redundancy=3, random_state=2).write(tmp_path)
    port = _free_port()
    env = {**os.environ, "CROWDQRELS_DATABASE_URL": postgres_url, "CROWDQRELS_JOBS": "celery",
           "CROWDQRELS_BROKER_URL": BROKER_URL, "CROWDQRELS_CELERY_QUEUE": celery_queue}
    server = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--workers", "2",
         "--log-level", "warning"], cwd=ROOT, env=env)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            for _ in range(600):
                try:
                    if client.get("/healthz").status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.1)
            assert len(_children(server.pid)) >= 2
            api = "/api/v1/collections"
            client.post(api, json={"name": "w", "labels": [0, 1]}).raise_for_status()
            client.post(f"{api}/w/judgments/file",
                        content=(tmp_path / "judgments.tsv").read_bytes(),
                        headers={"content-type": "text/tab-separated-values"}).raise_for_status()
            # New connections land on either process; every one sees the same fit.
            created = client.post(f"{api}/w/aggregations", json={"method": "mace", "seed": 1})
            assert created.status_code == 202, created.text
            job = created.json()["id"]
            deadline = time.monotonic() + 300
            while True:
                with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as fresh:
                    body = fresh.get(f"/api/v1/aggregations/{job}").json()
                if body["status"] in ("succeeded", "failed", "cancelled"):
                    break
                assert time.monotonic() < deadline, body
                time.sleep(0.3)
            assert body["status"] == "succeeded", body["error"]
            qrels = client.get(f"/api/v1/aggregations/{job}/qrels").text.splitlines()
            assert len(qrels) == 300
    finally:
        server.terminate()
        server.wait(timeout=30)
