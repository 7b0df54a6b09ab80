"""Samplings through HTTP (create, rounds, 409 while unjudged, estimates, bad input) and the
re-judging endpoint GET /aggregations/{a}/next."""

from __future__ import annotations

import math
import re

import pytest

from models.sampling.estimators import true_measures
from tests.api.helpers import API, create_collection
from tests.api.jobs import wait_for

TOPICS = ("t1", "t2")
DOCS = [f"d{i}" for i in range(12)]
RELEVANT = {"d0", "d1", "d3", "d6", "d9"}
RUNS = {"good": DOCS[:8], "poor": DOCS[::-1][:8]}


def run_text(name: str, docs: list[str]) -> str:
    return "".join(f"{t} Q0 {d} {r} {100 - r} {name}\n" for t in TOPICS
                   for r, d in enumerate(docs, start=1))


def setup_collection(client, name: str = "pool") -> None:
    create_collection(client, name=name, labels=[0, 1], relevant_from=1, ignore=[])
    topics = client.put(f"{API}/collections/{name}/topics",
                        json=[{"id": t, "text": f"topic {t}"} for t in TOPICS])
    assert topics.status_code == 200, topics.text
    for run, docs in RUNS.items():
        response = client.put(f"{API}/collections/{name}/runs/{run}",
                              content=run_text(run, docs).encode(),
                              headers={"content-type": "text/plain"})
        assert response.status_code == 200, response.text


def judge(client, pairs, name: str = "pool", annotators=("w1", "w2", "w3")) -> None:
    judgments = [{"topic": p["topic"], "doc": p["doc"], "annotator": a,
                  "label": int(p["doc"] in RELEVANT)} for p in pairs for a in annotators]
    response = client.post(f"{API}/collections/{name}/judgments", json={"judgments": judgments})
    assert response.status_code == 201, response.text


def test_sampling_rounds_and_estimates(client) -> None:
    setup_collection(client)
    created = client.post(f"{API}/collections/pool/samplings",
                          json={"runs": None, "budget_per_round": 6, "seed": 1,
                                "strategy": "active"})
    assert created.status_code == 201, created.text
    sampling = created.json()
    assert sampling["pool_size"] == 2 * 12 and sampling["runs"] == ["good", "poor"]
    sid = sampling["id"]

    first = client.post(f"{API}/samplings/{sid}/rounds")
    assert first.status_code == 201, first.text
    body = first.json()
    assert body["number"] == 1 and body["drawn"] == 6 and not body["short"]
    assert all(0 < p["inclusion"] <= 1 and 0 < p["selection"] < 1 for p in body["pairs"])
    assert len({(p["topic"], p["doc"]) for p in body["pairs"]}) == 6

    blocked = client.post(f"{API}/samplings/{sid}/rounds")
    assert blocked.status_code == 409
    assert blocked.json()["code"] == "round_not_judged" and blocked.json()["missing"] == 6
    forced = client.post(f"{API}/samplings/{sid}/rounds", params={"force": True})
    assert forced.status_code == 201 and forced.json()["forced"]

    judge(client, body["pairs"] + forced.json()["pairs"])
    third = client.post(f"{API}/samplings/{sid}/rounds")
    assert third.status_code == 201, third.text

    estimates = client.get(f"{API}/samplings/{sid}/estimates")
    assert estimates.status_code == 200, estimates.text
    result = estimates.json()
    assert result["rounds"] == 3 and result["sampled"] == 18 and result["judged"] == 12
    overall = {(r["run"], r["measure"]): r for r in result["results"] if r["topic"] == "all"}
    assert {("good", "AP"), ("poor", "AP"), ("good", "P@10"), (None, "n_relevant")} <= set(overall)
    assert all(r["variance"] is None or r["variance"] >= 0 for r in result["results"])
    ap = overall[("good", "AP")]
    assert ap["low"] <= ap["value"] <= ap["high"]
    # every interval holds its estimate and stays in the measure's range
    for r in result["results"]:
        if r["low"] is None:
            continue
        assert r["low"] <= r["value"] <= r["high"]
        assert r["low"] >= min(0.0, r["value"])
        if r["measure"] != "n_relevant":
            assert r["high"] <= max(1.0, r["value"])
    # some normal intervals pass 1 here: those are clipped
    assert any(r["measure"] != "n_relevant" and r["variance"]
               and r["value"] + 1.96 * r["variance"] ** 0.5 > 1.0 and r["high"] == 1.0
               for r in result["results"])
    listed = client.get(f"{API}/collections/pool/samplings").json()
    assert listed["count"] == 1 and listed["data"][0]["n_rounds"] == 3
    rounds = client.get(f"{API}/samplings/{sid}/rounds").json()
    assert rounds["count"] == 3 and [r["number"] for r in rounds["data"]] == [1, 2, 3]


def test_depth_pooling_of_everything_gives_the_exact_measures(client) -> None:
    setup_collection(client)
    sid = client.post(f"{API}/collections/pool/samplings",
                      json={"budget_per_round": 24, "strategy": "depth"}).json()["id"]
    drawn = client.post(f"{API}/samplings/{sid}/rounds").json()
    assert drawn["drawn"] == 24 and all(p["inclusion"] == 1.0 for p in drawn["pairs"])
    judge(client, drawn["pairs"])
    result = client.get(f"{API}/samplings/{sid}/estimates").json()
    qrels = {d: 1.0 for d in RELEVANT}
    for run, docs in RUNS.items():
        truth = true_measures(ranking=docs, qrels=qrels, cutoffs=(5,))
        row = next(r for r in result["results"] if r["run"] == run and r["topic"] == "all"
                   and r["measure"] == "AP")
        assert row["value"] == pytest.approx(truth["AP"]) and row["variance"] == 0.0
    exhausted = client.post(f"{API}/samplings/{sid}/rounds")
    assert exhausted.status_code == 409 and exhausted.json()["code"] == "pool_exhausted"


def test_pairs_judged_before_the_sampling_are_round_zero(client) -> None:
    setup_collection(client)
    before = [{"topic": "t1", "doc": d} for d in ("d0", "d1", "d2", "d3")]
    judge(client, before)
    too_big = client.post(f"{API}/collections/pool/samplings",
                          json={"budget_per_round": 21, "strategy": "active"})
    assert too_big.status_code == 422 and too_big.json()["unjudged"] == 20
    created = client.post(f"{API}/collections/pool/samplings",
                          json={"budget_per_round": 5, "strategy": "active", "seed": 2}).json()
    assert created["prejudged"] == 4 and created["n_sampled"] == 4
    drawn = client.post(f"{API}/samplings/{created['id']}/rounds")
    assert drawn.status_code == 201, drawn.text  # round 0 is judged: no 409
    body = drawn.json()
    assert body["number"] == 1 and body["drawn"] == 5
    assert not {("t1", d["doc"]) for d in before} & {(p["topic"], p["doc"])
                                                      for p in body["pairs"]}
    rounds = client.get(f"{API}/samplings/{created['id']}/rounds").json()["data"]
    assert [r["number"] for r in rounds] == [0, 1]
    assert all(p["inclusion"] == 1.0 for p in rounds[0]["pairs"])


def test_a_short_last_round_is_stated(client) -> None:
    setup_collection(client)
    sid = client.post(f"{API}/collections/pool/samplings",
                      json={"budget_per_round": 20, "strategy": "uniform", "seed": 3}).json()["id"]
    client.post(f"{API}/samplings/{sid}/rounds")
    last = client.post(f"{API}/samplings/{sid}/rounds", params={"force": True}).json()
    assert last["short"] and last["drawn"] == 4 and "short round" in last["note"]


@pytest.mark.parametrize(("body", "status", "code"), [
    ({"budget_per_round": 0}, 422, "invalid_body"),
    ({"budget_per_round": 25}, 422, "budget_above_pool"),
    ({"budget_per_round": 5, "runs": ["missing"]}, 404, "run_not_found"),
    ({"budget_per_round": 5, "strategy": "bandit"}, 422, "invalid_body"),
    ({"budget_per_round": 5, "seed": 2**40}, 422, "invalid_body"),  # INTEGER columns
    ({"budget_per_round": 5, "depth": 2**40}, 422, "invalid_body"),
    ({"budget_per_round": 5, "budget": 7}, 422, "invalid_body"),  # a misspelt field
])
def test_bad_sampling_requests(client, body, status, code) -> None:
    setup_collection(client)
    response = client.post(f"{API}/collections/pool/samplings", json=body)
    assert response.status_code == status, response.text
    assert response.json()["code"] == code


def test_runs_without_topics_in_the_collection(client) -> None:
    create_collection(client, name="bare", labels=[0, 1], relevant_from=1, ignore=[])
    response = client.put(f"{API}/collections/bare/runs/good",
                          content=run_text("good", RUNS["good"]).encode(),
                          headers={"content-type": "text/plain"})
    assert response.status_code == 200, response.text
    created = client.post(f"{API}/collections/bare/samplings", json={"budget_per_round": 3})
    assert created.status_code == 422 and created.json()["code"] == "runs_without_topics"
    missing = client.get(f"{API}/samplings/999999/estimates")
    assert missing.status_code == 404 and missing.json()["code"] == "sampling_not_found"


def test_next_tasks_to_rejudge(client) -> None:
    create_collection(client, name="crowd", labels=[0, 1], relevant_from=1, ignore=[])
    judgments = []
    for i, doc in enumerate(DOCS):
        labels = [1, 1, 1] if i < 4 else [1, 0, 1] if i < 8 else [1, 0]
        judgments += [{"topic": "t1", "doc": doc, "annotator": f"w{j}", "label": lab}
                      for j, lab in enumerate(labels)]
    judgments.append({"topic": "t1", "doc": "d0", "annotator": "w5", "label": 1})
    response = client.post(f"{API}/collections/crowd/judgments", json={"judgments": judgments})
    assert response.status_code == 201, response.text
    fit = client.post(f"{API}/collections/crowd/aggregations", json={"method": "mv"}).json()
    assert wait_for(client, fit["id"])["status"] == "succeeded"

    body = client.get(f"{API}/aggregations/{fit['id']}/next",
                      params={"n": 4, "strategy": "uncertainty"}).json()
    assert body["count"] == 4
    # The ties (one vote each way) come first, then the 2-of-3 majorities.
    assert {t["doc"] for t in body["data"][:4]} == {"d8", "d9", "d10", "d11"}
    first = body["data"][0]
    assert math.isclose(first["uncertainty"], math.log(2))
    asked = {"w0", "w1"}
    names = [a["annotator"] for a in first["annotators"]]
    assert not asked & set(names) and set(names) == {"w2", "w5"}
    competence = [a["competence"] for a in first["annotators"]]
    assert competence == sorted(competence, reverse=True)

    limited = client.get(f"{API}/aggregations/{fit['id']}/next",
                         params={"n": 20, "strategy": "expected-change",
                                 "max_judgments": 3}).json()
    assert {t["doc"] for t in limited["data"]} == set(DOCS[8:])
    random = client.get(f"{API}/aggregations/{fit['id']}/next",
                        params={"n": 12, "strategy": "random", "seed": 1}).json()
    assert sorted(t["doc"] for t in random["data"]) == sorted(DOCS)
    bad = client.get(f"{API}/aggregations/{fit['id']}/next", params={"strategy": "entropy"})
    assert bad.status_code == 422

    # The same list as TSV (for a crowd platform) and on the dashboard's page.
    params = {"n": 12, "strategy": "expected-change"}
    listed = client.get(f"{API}/aggregations/{fit['id']}/next", params=params).json()["data"]
    assert all(t["label"] == int(t["p_relevant"] > 0.5) for t in listed)  # MV: ties go to 0
    tsv = client.get(f"{API}/aggregations/{fit['id']}/next", params={**params, "format": "tsv"})
    assert tsv.status_code == 200 and tsv.headers["content-type"].startswith(
        "text/tab-separated-values")
    lines = [line.split("\t") for line in tsv.text.splitlines()]
    assert lines[0][:3] == ["rank", "topic", "doc"] and len(lines) == 13
    assert [(r[1], r[2], int(r[3])) for r in lines[1:]] == [
        (t["topic"], t["doc"], t["n_judgments"]) for t in listed]
    assert [r[-1] for r in lines[1:]] == [
        ",".join(a["annotator"] for a in t["annotators"]) for t in listed]
    page = client.get(f"/ui/aggregations/{fit['id']}/next", params=params)
    assert page.status_code == 200
    docs = re.findall(r'/tasks/\d+">([^<]+)</a>', page.text)
    assert docs == [t["doc"] for t in listed]
    assert 'format=tsv' in page.text
    for bad_params in ({"strategy": "entropy"}, {"max_judgments": "x"}, {"max_judgments": "0"}):
        page = client.get(f"/ui/aggregations/{fit['id']}/next", params=bad_params)
        assert page.status_code == 422 and 'id="form-error"' in page.text, bad_params


def test_cli_next_lists_what_the_service_lists(client, tmp_path) -> None:
    """``crowdqrels next FILE`` and ``GET /next?format=tsv`` on the same judgments (with a
    repeated judgment and an ignored value) write the same list, byte for byte, for every
    strategy, with and without a cap."""
    from app.cli import main as cli
    from models.synthetic import generate

    generate(150, 12, noise_level=(0.5, 4.0), redundancy=3, random_state=2).write(tmp_path)
    lines = (tmp_path / "judgments.tsv").read_text().splitlines()
    topic, doc, annotator, _ = lines[1].split("\t")[:4]
    lines.append("\t".join([topic, doc, annotator, "1"]))  # the same annotator again
    other = next(x for x in lines[2:] if x.split("\t")[1] != doc).split("\t")
    lines.append("\t".join([other[0], other[1], "w-unsure", "-2"]))  # asked, no label
    path = tmp_path / "with-extras.tsv"
    path.write_text("\n".join(lines) + "\n")
    create_collection(client, name="offline", labels=[0, 1], relevant_from=1, ignore=[-2])
    assert client.post(f"{API}/collections/offline/judgments/file", content=path.read_bytes(),
                       headers={"content-type": "text/tab-separated-values"}).status_code == 201
    fit = client.post(f"{API}/collections/offline/aggregations",
                      json={"method": "ds"}).json()
    assert wait_for(client, fit["id"])["status"] == "succeeded"
    for strategy, cap in (("uncertainty", None), ("expected-change", 3), ("random", None)):
        params = {"n": 40, "strategy": strategy, "seed": 5, "annotators": 3, "format": "tsv",
                  **({"max_judgments": cap} if cap else {})}
        served = client.get(f"{API}/aggregations/{fit['id']}/next", params=params).text
        out = tmp_path / f"{strategy}.tsv"
        args = ["next", str(path), "--method", "ds", "-n", "40", "--strategy", strategy,
                "--seed", "5", "--annotators", "3", "--output", str(out)]
        assert cli(args + (["--max-judgments", str(cap)] if cap else [])) == 0
        assert out.read_text() == served, strategy
    assert len(served.splitlines()) == 41
    # every task: the repeat counts as a judgment; the ignored value's annotator counts as asked
    every = {(t["topic"], t["doc"]): t for t in client.get(
        f"{API}/aggregations/{fit['id']}/next",
        params={"n": 1000, "annotators": 1000}).json()["data"]}
    assert every[(topic, doc)]["n_judgments"] == sum(
        1 for x in lines[1:] if x.split("\t")[:2] == [topic, doc])
    asked = every[(other[0], other[1])]
    assert "w-unsure" not in {a["annotator"] for a in asked["annotators"]}
    assert "w-unsure" in {a["annotator"] for a in every[(topic, doc)]["annotators"]}
