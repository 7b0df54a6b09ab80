"""Evaluations through HTTP: a job on an aggregation's posterior, gold, a union; the same numbers
as `crowdqrels evaluate`; downloads; bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from app.cli import main as cli
from tests.api.helpers import API, TSV, create_collection
from tests.api.jobs import wait_for

MEASURES = ["P@10", "AP", "nDCG@10", "Bpref", "PRES@50", "LastRel"]


def judgments_and_gold(seed: int = 0) -> tuple[str, str]:
    rng = np.random.default_rng(seed)
    lines, gold = ["topic\tdoc\tannotator\tlabel"], []
    for t in range(4):
        for d in range(30):
            truth = int(rng.random() < 0.35)
            gold.append(f"t{t} 0 d{d} {truth}")
            for a in rng.choice(8, 3, replace=False):
                label = truth if rng.random() < 0.75 else 1 - truth
                lines.append(f"t{t}\td{d}\tw{a}\t{label}")
    return "\n".join(lines) + "\n", "\n".join(gold) + "\n"


def run_text(name: str, seed: int, topics: list[str]) -> str:
    rng = np.random.default_rng(seed)
    lines = []
    for t in topics:
        docs = [f"d{d}" for d in rng.permutation(40)[:25]]
        lines += [f"{t} Q0 {d} {i + 1} {100 - i} {name}" for i, d in enumerate(docs)]
    return "\n".join(lines) + "\n"


def setup_collection(client) -> int:
    """A collection with 4 topics, gold, 3 runs (one, uploaded first, also answers a topic the
    collection never gets) and a succeeded Dawid-Skene aggregation; returns its id."""
    create_collection(client, name="ev", labels=[0, 1], relevant_from=1, ignore=[])
    early = run_text("early", 9, ["t0", "t1", "t2", "t3", "zz"])
    assert client.put(f"{API}/collections/ev/runs/early", content=early.encode()).status_code \
        == 200
    judgments, gold = judgments_and_gold()
    response = client.post(f"{API}/collections/ev/judgments/file", content=judgments.encode(),
                           headers=TSV)
    assert response.status_code == 201, response.text
    assert client.put(f"{API}/collections/ev/gold", content=gold.encode(),
                      headers={"content-type": "text/plain"}).status_code == 200
    for i, name in enumerate(["bm25", "dense"]):
        text = run_text(name, i, ["t0", "t1", "t2", "t3"])
        assert client.put(f"{API}/collections/ev/runs/{name}",
                          content=text.encode()).status_code == 200
    created = client.post(f"{API}/collections/ev/aggregations",
                          json={"method": "ds", "seed": 1}).json()
    done = wait_for(client, created["id"])
    assert done["status"] == "succeeded", done["error"]
    return int(created["id"])


def evaluate(client, body: dict) -> dict:
    response = client.post(f"{API}/collections/ev/evaluations", json=body)
    assert response.status_code == 202, response.text
    assert response.json()["status"] == "queued"
    done = wait_for(client, response.json()["id"], kind="evaluations")
    assert done["status"] == "succeeded", done["error"]
    return done


def test_evaluation_job_matches_the_cli(client, tmp_path: Path) -> None:
    aggregation = setup_collection(client)
    # "labels": independent draws, as the CLI makes them without --judgments (the parameter
    # draws' own comparison: test_evaluations_draws.py)
    done = evaluate(client, {"aggregation": aggregation, "runs": None, "measures": MEASURES,
                             "samples": 200, "seed": 3, "draws": "labels"})
    assert done["runs"] == ["bm25", "dense", "early"]
    assert done["report"]["unknown_topics"] == {"early": 1}
    assert done["report"]["topics"] == 4 and done["report"]["gold"] is True
    assert done["progress"]["fraction"] == 1.0
    means = done["results"]
    assert {r["topic"] for r in means} == {"all"} and len(means) == 3 * len(MEASURES)
    for row in means:
        assert row["low"] <= row["mean"] <= row["high"] and row["std"] >= 0
    assert len(done["pairs"]) == len(MEASURES) * 6
    for ranking in done["rankings"]:
        assert sorted(ranking["runs"]) == done["runs"]
        assert "kendall_tau_gold" in ranking and "kendall_tau_draws" in ranking

    full = client.get(f"{API}/evaluations/{done['id']}/measures").json()
    assert len(full["results"]) == 3 * len(MEASURES) * 5  # 4 topics + "all"
    tsv = client.get(f"{API}/evaluations/{done['id']}/measures", params={"format": "tsv"}).text
    assert tsv.splitlines()[0] == ("run\tmeasure\ttopic\tvalue\tmean\tstd\testimate\tlow\thigh\t"
                                   "interval_kind")
    trec = client.get(f"{API}/evaluations/{done['id']}/measures", params={"format": "trec"}).text
    assert "bm25\tAP\tall\t" in trec

    # The same posterior (the aggregation's TSV download) and runs through the CLI.
    tasks = tmp_path / "tasks.tsv"
    tasks.write_text(client.get(f"{API}/aggregations/{aggregation}/qrels",
                                params={"format": "tsv"}).text)
    run_files = []
    for name in done["runs"]:
        path = tmp_path / f"{name}.run"
        path.write_text(run_text(name, {"bm25": 0, "dense": 1, "early": 9}[name],
                                 ["t0", "t1", "t2", "t3"] + (["zz"] if name == "early" else [])))
        run_files.append(str(path))
    out = tmp_path / "out.json"
    assert cli(["evaluate", "--tasks", str(tasks), "--runs", *run_files, "--measures", *MEASURES,
                "--samples", "200", "--seed", "3", "--format", "json", "--output", str(out),
                "--quiet"]) == 0
    offline = json.loads(out.read_text())
    assert len(offline["results"]) == len(full["results"])
    for ours, theirs in zip(sorted(full["results"], key=lambda r: (r["run"], r["measure"],
                                                                  r["topic"])),
                            sorted(offline["results"], key=lambda r: (r["run"], r["measure"],
                                                                     r["topic"])), strict=True):
        assert ours == pytest.approx(theirs, abs=1e-9)
    assert full["pairs"] == offline["pairs"]


# On PostgreSQL only: the GP job's TensorFlow start dominates (20 CPU s a run), and what is
# tested lies in the job and the model file, not in the database (both databases are
# covered by the cheaper fits' tests).
@pytest.mark.parametrize("database_url", [pytest.param("postgres", marks=pytest.mark.postgres)],
                         indirect=True)
def test_a_gp_fit_is_drawn_jointly_as_by_the_cli(client, tmp_path: Path) -> None:
    """LK with topic intercepts (a GP over the tasks' topics) stores its joint posterior; the
    evaluation job draws from it ("draws": "joint-gp"; a DS fit asking for labels: "labels"), and
    `crowdqrels evaluate --joint` with the file `aggregate --joint` wrote from the same fit gives
    the same numbers. A file that is not one is a usage error."""
    ds = setup_collection(client)
    params = {"class_prior_by": "topic", "n_iter": 5}
    created = client.post(f"{API}/collections/ev/aggregations",
                          json={"method": "lk", "params": params, "seed": 1}).json()
    assert wait_for(client, created["id"])["status"] == "succeeded"
    body = {"runs": ["bm25"], "measures": ["P@10", "AP"], "samples": 200, "seed": 3}
    assert evaluate(client, {**body, "aggregation": ds, "draws": "labels"}
                    )["report"]["draws"] == "labels"
    done = evaluate(client, {**body, "aggregation": created["id"]})
    assert done["report"]["draws"] == "joint-gp"
    page = client.get(f"/ui/evaluations/{done['id']}").text
    assert "drawn jointly from the GP fit" in page
    # the legend names what was drawn: the latent function, not annotators' confusion matrices
    assert "latent function once for every task" in page
    assert "every annotator's parameters" not in page

    judgments, _ = judgments_and_gold()
    (tmp_path / "j.tsv").write_text(judgments)
    tasks, joint = tmp_path / "tasks.tsv", tmp_path / "joint.npz"
    assert cli(["aggregate", str(tmp_path / "j.tsv"), "--method", "lk", "--params",
                json.dumps(params), "--seed", "1", "--tasks", str(tasks), "--joint", str(joint),
                "--quiet"]) == 0
    run = tmp_path / "bm25.run"
    run.write_text(run_text("bm25", 0, ["t0", "t1", "t2", "t3"]))
    out = tmp_path / "out.json"
    assert cli(["evaluate", "--tasks", str(tasks), "--joint", str(joint), "--runs", str(run),
                "--measures", "P@10", "AP", "--samples", "200", "--seed", "3", "--output",
                str(out), "--quiet"]) == 0
    offline = json.loads(out.read_text())
    assert offline["draws"] == "joint-gp"
    for ours, theirs in zip(done["results"], [r for r in offline["results"]
                                              if r["topic"] == "all"], strict=True):
        assert ours == pytest.approx(theirs, abs=1e-6)
    assert cli(["evaluate", "--tasks", str(tasks), "--joint", str(tasks), "--runs", str(run),
                "--quiet"]) == 2


def test_gold_and_union_sources(jobs_client) -> None:
    client = jobs_client  # every job runner: inline on both databases, Celery
    aggregation = setup_collection(client)
    gold = evaluate(client, {"aggregation": "gold", "measures": ["P@10", "AP"], "samples": 50})
    for row in gold["results"]:
        assert row["std"] == 0.0 and row["low"] == row["value"] == row["high"]
    union = evaluate(client, {"aggregation": {"union": [aggregation, "gold"]},
                              "measures": ["P@10"], "samples": 50, "runs": ["bm25"]})
    inter = evaluate(client, {"aggregation": {"intersection": [aggregation, "gold"]},
                              "measures": ["P@10"], "samples": 50, "runs": ["bm25"]})
    assert union["results"][0]["mean"] >= inter["results"][0]["mean"]

    qrels = client.get(f"{API}/collections/ev/qrels/union",
                       params={"sources": f"{aggregation},gold"})
    assert qrels.status_code == 200 and len(qrels.text.splitlines()) == 120
    bad = client.get(f"{API}/collections/ev/qrels/union", params={"sources": str(aggregation)})
    assert bad.status_code == 422 and bad.json()["code"] == "invalid_source"


def test_bad_input(client, settings) -> None:
    aggregation = setup_collection(client)
    url = f"{API}/collections/ev/evaluations"

    response = client.post(url, json={"aggregation": aggregation, "measures": ["P@10", "MAPP"]})
    assert response.status_code == 422
    assert response.json()["code"] == "unknown_measure" and "P@k" in response.json()["valid"]

    response = client.post(url, json={"aggregation": aggregation, "runs": ["nope"]})
    assert response.status_code == 404 and response.json()["code"] == "run_not_found"

    response = client.post(url, json={"aggregation": 99999})
    assert response.status_code == 404

    # An empty run list is no "every run", true no aggregation id, "5" no number of draws.
    for body in ({"aggregation": aggregation, "runs": []}, {"aggregation": True},
                 {"aggregation": aggregation, "samples": "5"}):
        response = client.post(url, json=body)
        assert response.status_code == 422 and response.json()["code"] == "invalid_body", body
    # union sources beyond any row id: the 404 of an unknown fit, not a database error
    union = client.get(f"{API}/collections/ev/qrels/union",
                       params={"sources": f"{aggregation},99999999999999999999"})
    assert union.status_code == 404 and union.json()["code"] == "aggregation_not_found"
    for key in ("%C2%B2", "%D9%A1"):  # "²" and "١" are digits to str.isdigit, not ids
        assert client.get(f"{API}/collections/{key}").status_code == 404

    response = client.post(url, json={"aggregation": {"union": [aggregation]}})
    assert response.status_code == 422 and response.json()["code"] == "invalid_source"

    # An aggregation that has not succeeded: 409.
    from app.aggregations.tables import Aggregation
    from app.core.db import get_sessionmaker

    with get_sessionmaker(settings.database_url)() as session:
        failed = Aggregation(collection_id=client.get(f"{API}/collections/ev").json()["id"],
                             method="ds", params={}, status="failed", progress=0.0,
                             watermark=0)
        session.add(failed)
        session.commit()
        failed_id = failed.id
    response = client.post(url, json={"aggregation": failed_id})
    assert response.status_code == 409 and response.json()["code"] == "aggregation_not_succeeded"

    # A run listing the same (topic, doc) twice: 422 with the line.
    dup = "t0 Q0 d1 1 3.0 x\nt0 Q0 d2 2 2.0 x\nt0 Q0 d1 3 1.0 x\n"
    response = client.put(f"{API}/collections/ev/runs/dup", content=dup.encode())
    assert response.status_code == 422
    assert response.json()["code"] == "duplicate_row" and response.json()["line"] == 3

    assert client.get(f"{API}/evaluations/424242").status_code == 404


def test_routes_declare_their_scope() -> None:
    from app.evaluations.router import collection_router, router

    scopes = {}
    for route in [*collection_router.routes, *router.routes]:
        for method in route.methods:
            scopes[(method, route.path)] = [
                d.call.required_scope for d in route.dependant.dependencies
                if hasattr(d.call, "required_scope")]
    assert scopes[("POST", "/collections/{c}/evaluations")] == ["admin"]
    assert len(scopes) == 5
    for (method, _), required in scopes.items():
        assert required == (["admin"] if method == "POST" else ["read"])
