"""Prediction-powered intervals through HTTP: `"interval": "ppi"` on the collection's gold, the
same numbers as `crowdqrels evaluate --interval ppi`, and 422 `ppi_needs_gold`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli import main as cli
from tests.api.evaluations.test_evaluations import (
    evaluate,
    judgments_and_gold,
    run_text,
    setup_collection,
)
from tests.api.helpers import API, TSV, create_collection
from tests.api.jobs import wait_for

MEASURES = ["P@10", "AP", "nDCG@10"]


def test_ppi_intervals_match_the_cli(client, tmp_path: Path) -> None:
    aggregation = setup_collection(client)
    sample = "".join(judgments_and_gold()[1].splitlines(keepends=True)[::4])  # 30 of 120 pairs
    assert client.put(f"{API}/collections/ev/gold", content=sample.encode(),
                      headers={"content-type": "text/plain"}).status_code == 200
    done = evaluate(client, {"aggregation": aggregation, "measures": MEASURES, "samples": 100,
                             "seed": 2, "interval": "ppi", "runs": ["bm25", "dense"],
                             "draws": "labels"})
    assert done["interval"] == "ppi" and done["report"]["interval"] == "ppi"
    for row in done["results"]:  # the means over topics
        assert row["interval_kind"] == "ppi"
        assert row["low"] <= row["estimate"] <= row["high"]
        assert row["high"] - row["low"] > 0  # the posterior is not the gold: a real interval
    for pair in done["pairs"]:
        assert pair["interval_kind"] == "ppi" and pair["low"] <= pair["difference"] <= pair["high"]
    page = client.get(f"/ui/evaluations/{done['id']}").text
    assert "prediction-powered (PPI)" in page and "] PPI</span>" in page
    full = client.get(f"{API}/evaluations/{done['id']}/measures").json()
    kinds = {(r["topic"] == "all", r["interval_kind"]) for r in full["results"]}
    assert kinds == {(True, "ppi"), (False, "posterior")}

    tasks, gold = tmp_path / "tasks.tsv", tmp_path / "gold.qrels"
    tasks.write_text(client.get(f"{API}/aggregations/{aggregation}/qrels",
                                params={"format": "tsv"}).text)
    gold.write_text(sample)  # the collection's gold
    runs = []
    for i, name in enumerate(["bm25", "dense"]):
        path = tmp_path / f"{name}.run"
        path.write_text(run_text(name, i, ["t0", "t1", "t2", "t3"]))
        runs.append(str(path))
    out = tmp_path / "out.json"
    assert cli(["evaluate", "--tasks", str(tasks), "--gold", str(gold), "--runs", *runs,
                "--measures", *MEASURES, "--samples", "100", "--seed", "2", "--interval", "ppi",
                "--output", str(out), "--quiet"]) == 0
    offline = json.loads(out.read_text())
    key = lambda r: (r["run"], r["measure"], r["topic"])  # noqa: E731
    for ours, theirs in zip(sorted(full["results"], key=key), sorted(offline["results"], key=key),
                            strict=True):
        assert ours == pytest.approx(theirs, abs=1e-4)  # the TSV keeps 6 digits of q
    for ours, theirs in zip(full["pairs"], offline["pairs"], strict=True):
        assert ours == pytest.approx(theirs, abs=1e-4)


def test_ppi_needs_gold(client, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    create_collection(client, name="nogold", labels=[0, 1], relevant_from=1, ignore=[])
    judgments = "topic\tdoc\tannotator\tlabel\n" + "".join(
        f"t0\td{d}\tw{a}\t{(d + a) % 2}\n" for d in range(6) for a in range(3))
    assert client.post(f"{API}/collections/nogold/judgments/file", content=judgments.encode(),
                       headers=TSV).status_code == 201
    assert client.put(f"{API}/collections/nogold/runs/r",
                      content=b"t0 Q0 d1 1 2 r\nt0 Q0 d2 2 1 r\n").status_code == 200
    fit = client.post(f"{API}/collections/nogold/aggregations", json={"method": "mv"}).json()
    assert wait_for(client, fit["id"])["status"] == "succeeded"
    url = f"{API}/collections/nogold/evaluations"
    body = {"aggregation": fit["id"], "interval": "ppi", "samples": 10}
    response = client.post(url, json=body)
    assert response.status_code == 422, response.text
    error = response.json()
    assert error["code"] == "ppi_needs_gold"
    assert (error["gold_pairs"], error["judged_pairs"]) == (0, 6)

    # Gold on one class only: no rectifier variance to estimate.
    assert client.put(f"{API}/collections/nogold/gold", content=b"t0 0 d1 1\nt0 0 d2 1\n",
                      headers={"content-type": "text/plain"}).status_code == 200
    error = client.post(url, json=body).json()
    assert error["code"] == "ppi_needs_gold"
    assert (error["gold_pairs"], error["relevant"], error["non_relevant"]) == (2, 2, 0)
    assert client.get(url).json()["count"] == 0  # nothing created

    # A fit that clamped the gold predicts the gold pairs by their labels: no error to measure.
    clamped = client.post(f"{API}/collections/nogold/aggregations",
                          json={"method": "ds", "params": {"use_gold": True}}).json()
    assert wait_for(client, clamped["id"])["status"] == "succeeded"
    response = client.post(url, json={**body, "aggregation": clamped["id"]})
    assert response.status_code == 422 and response.json()["code"] == "ppi_gold_used_in_fit"

    response = client.post(url, json={**body, "samples": 0})
    assert response.status_code == 422 and response.json()["code"] == "invalid_body"

    # The CLI: the same refusal, a usage error naming the counts.
    tasks, qrels, run = tmp_path / "t.tsv", tmp_path / "g.qrels", tmp_path / "r.run"
    tasks.write_text(client.get(f"{API}/aggregations/{fit['id']}/qrels",
                                params={"format": "tsv"}).text)
    qrels.write_text("t0 0 d1 1\nt0 0 d2 1\n")
    run.write_text("t0 Q0 d1 1 2 r\nt0 Q0 d2 2 1 r\n")
    assert cli(["evaluate", "--tasks", str(tasks), "--gold", str(qrels), "--runs", str(run),
                "--interval", "ppi", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "ppi_needs_gold" in err and "2 relevant, 0 non-relevant" in err
