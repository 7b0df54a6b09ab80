"""RF10 through HTTP with the job runners: each method's qrels equal the offline CLI's, and the
fit scores the NIST gold. Apart from tests/api/aggregations/test_aggregations.py so that the two
files, minutes each, run on two workers side by side (pytest --dist loadfile)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.api.aggregations.test_aggregations import SEED, offline_qrels
from tests.api.helpers import API, TSV, create_collection
from tests.api.jobs import wait_for


@pytest.fixture(scope="module")
def rf10_offline_qrels(rf10_path: Path, tmp_path_factory: pytest.TempPathFactory):
    """The offline CLI's RF10 qrels per method, each fitted on first use and kept for the
    module: they depend on the file, the method and the seed only, not on the job runner, so
    the three runners' tests compare against one CLI fit each (the CLI's LK on RF10 was fitted
    three times)."""
    directory = tmp_path_factory.mktemp("rf10-offline")
    rf10 = directory / "rf10.tsv"
    rf10.write_bytes(rf10_path.read_bytes())
    fitted: dict[str, str] = {}

    def qrels(method: str) -> str:
        if method not in fitted:
            fitted[method] = offline_qrels(directory, rf10, method, "--params", json.dumps({}))
        return fitted[method]

    return qrels


def check_rf10_fits(client, methods: tuple[str, ...], rf10_bytes: bytes, offline) -> None:
    """RF10 through HTTP: each method's fit scores the NIST gold and gives the offline CLI's
    qrels."""
    create_collection(client)
    assert client.post(f"{API}/collections/rf10/judgments/file", content=rf10_bytes,
                       headers=TSV).status_code == 201
    for method in methods:
        created = client.post(f"{API}/collections/rf10/aggregations",
                              json={"method": method, "seed": SEED}).json()
        done = wait_for(client, created["id"], timeout=900)
        assert done["status"] == "succeeded", done["error"]
        assert done["evaluation"]["n_gold"] == 3275
        gold = done["gold"]  # 3,277 labelled gold tasks, two of them judged only -2
        assert (gold["labelled"], gold["scored"], gold["left_out"], gold["current"]) == (
            3277, 3275, {"not_judged": 0, "only_could_not_judge": 2}, True)
        qrels = client.get(f"{API}/aggregations/{created['id']}/qrels").text
        assert qrels == offline(method)


# The embedded default (inline, SQLite) and Celery on PostgreSQL: each database's ingestion and
# load paths and each runner are covered; inline-PostgreSQL adds no path of its own (7 CPU s).
@pytest.mark.slow
@pytest.mark.parametrize("runner_settings", ["inline-sqlite", pytest.param(
    "celery-postgres", marks=[pytest.mark.postgres, pytest.mark.redis])], indirect=True)
def test_rf10_methods_match_the_offline_cli(jobs_client, rf10_bytes, rf10_offline_qrels) -> None:
    """The RF10 file through HTTP with the job runners: mv, mace and ds, the same qrels as the
    offline CLI (lk's RF10 fit, 20 s, goes through one runner: the next test)."""
    check_rf10_fits(jobs_client, ("mv", "mace", "ds"), rf10_bytes, rf10_offline_qrels)


@pytest.mark.slow
@pytest.mark.parametrize("runner_settings", [pytest.param(
    "celery-postgres", marks=[pytest.mark.postgres, pytest.mark.redis])], indirect=True)
def test_rf10_lk_matches_the_offline_cli(jobs_client, rf10_bytes, rf10_offline_qrels) -> None:
    """LK on RF10 through HTTP, the same qrels as the offline CLI: through the Celery worker
    (TensorFlow in a worker process, PostgreSQL), the runner furthest from the CLI. The runners
    hand every method the same way (test_fit_downloads_match_the_offline_cli, above, and the
    three cheap methods on RF10); an RF10 LK fit through each cost 20 s of CPU each (85 s under
    load)."""
    check_rf10_fits(jobs_client, ("lk",), rf10_bytes, rf10_offline_qrels)
