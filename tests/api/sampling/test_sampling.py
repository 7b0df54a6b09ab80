"""Samplings through HTTP (create, rounds, 409 while unjudged, estimates, bad input) and the
re-judging endpoint GET /aggregations/{a}/next."""

from __future__ import annotations

import collections
import json
import math
import re
import time

import numpy as np
import pytest
from sqlalchemy import select

from models.sampling.estimators import true_measures
from tests.api.helpers import API, create_collection
from tests.api.jobs import wait_for


def cell(page: str, table_id: str) -> str:
    match = re.search(rf'<table class="data" id="{table_id}">(.*?)</table>', page, re.S)
    assert match, f"no table {table_id}"
    return match.group(1)

TOPICS = ("t1", "t2")
DOCS = [f"d{i}" for i in range(12)]
RELEVANT = {"d0", "d1", "d3", "d6", "d9"}
RUNS = {"good": DOCS[:8], "poor": DOCS[::-1][:8]}


def run_text(name: str, docs: list[str]) -> str:
    return "".join(f"{t} Q0 {d} {r} {100 - r} {name}\n" for t in TOPICS
                   for r, d in enumerate(docs, start=1))


def setup_collection(client, name: str = "pool", ignore: tuple[int, ...] = ()) -> None:
    create_collection(client, name=name, labels=[0, 1], relevant_from=1, ignore=list(ignore))
    topics = client.put(f"{API}/collections/{name}/topics",
                        json=[{"id": t, "text": f"topic {t}"} for t in TOPICS])
    assert topics.status_code == 200, topics.text
    for run, docs in RUNS.items():
        response = client.put(f"{API}/collections/{name}/runs/{run}",
                              content=run_text(run, docs).encode(),
                              headers={"content-type": "text/plain"})
        assert response.status_code == 200, response.text


def judge(client, pairs, name: str = "pool", annotators=("w1", "w2", "w3"),
          label: int | None = None) -> None:
    """Every annotator judges every pair: its relevance, or ``label`` when given."""
    judgments = [{"topic": p["topic"], "doc": p["doc"], "annotator": a,
                  "label": int(p["doc"] in RELEVANT) if label is None else label}
                 for p in pairs for a in annotators]
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
    # when to stop: r relevant among the judged sample, R̂ the HT estimate (≥ r), per topic and
    # summed over topics; the two rules against the target recall
    stopping = result["stopping"]
    sampled_pairs = {(p["topic"], p["doc"]) for p in body["pairs"] + forced.json()["pairs"]}
    for check in stopping["topics"]:
        found = sum(1 for t, d in sampled_pairs if t == check["topic"] and d in RELEVANT)
        n_rel = next(r for r in result["results"] if r["run"] is None
                     and r["topic"] == check["topic"] and r["measure"] == "n_relevant")
        assert check["found"] == found and check["estimate"] == pytest.approx(n_rel["value"])
        assert check["estimate"] >= check["found"]
        assert check["residual"] == pytest.approx(check["estimate"] - found)
        assert check["optimistic"] == (found / 0.9 >= check["estimate"] - 1e-9)
        assert check["conservative"] <= check["optimistic"]
    total = stopping["overall"]
    assert total["found"] == sum(c["found"] for c in stopping["topics"])
    assert total["estimate"] == pytest.approx(overall[(None, "n_relevant")]["value"])
    assert total["sd"] ** 2 == pytest.approx(overall[(None, "n_relevant")]["variance"])
    lenient = client.get(f"{API}/samplings/{sid}/estimates",
                         params={"target_recall": 0.05}).json()["stopping"]
    assert lenient["target_recall"] == 0.05 and lenient["topics_stopping"]["optimistic"] >= (
        stopping["topics_stopping"]["optimistic"])
    for bad in (0, 1.5, "x"):
        response = client.get(f"{API}/samplings/{sid}/estimates", params={"target_recall": bad})
        assert response.status_code == 422, bad
    page = client.get(f"/ui/samplings/{sid}", params={"target_recall": 0.8}).text
    assert 'id="stopping-topics"' in page and 'name="target_recall"' in page
    at_80 = client.get(f"{API}/samplings/{sid}/estimates",
                       params={"target_recall": 0.8}).json()["stopping"]
    assert f'<b>{at_80["overall"]["estimated_recall"]:.3f}</b>estimated recall' in page
    stops = at_80["topics_stopping"]
    assert f'<b>{stops["conservative"]} / 2</b>topics at the target' in page
    assert f'optimistic: {stops["optimistic"]})' in page
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
    # which pairs the crowd has judged: the first two rounds, not the third yet
    assert [r["judged"] for r in rounds["data"]] == [6, 6, 0]
    assert all(p["judged"] == (r["number"] < 3) for r in rounds["data"] for p in r["pairs"])
    latest = client.get(f"{API}/samplings/{sid}/rounds", params={"round": -1}).json()["data"]
    assert [r["number"] for r in latest] == [3] and latest[0]["pairs"] == rounds["data"][2]["pairs"]
    tsv = client.get(f"{API}/samplings/{sid}/rounds", params={"round": -1, "format": "tsv"})
    assert tsv.status_code == 200 and tsv.headers["content-type"].startswith(
        "text/tab-separated-values")
    assert 'filename="sampling-' in tsv.headers["content-disposition"]
    lines = [line.split("\t") for line in tsv.text.splitlines()]
    assert lines[0] == ["round", "topic", "doc", "inclusion", "selection", "source_run", "judged"]
    assert [(r[1], r[2], float(r[3]), r[6]) for r in lines[1:]] == [
        (p["topic"], p["doc"], pytest.approx(p["inclusion"], rel=1e-5), "0")
        for p in latest[0]["pairs"]]
    every = client.get(f"{API}/samplings/{sid}/rounds", params={"format": "tsv"}).text
    assert len(every.splitlines()) == 1 + 18
    assert client.get(f"{API}/samplings/{sid}/rounds", params={"round": 7}).json()["count"] == 0
    assert client.get(f"{API}/samplings/{sid}/rounds", params={"round": -2}).status_code == 422
    judge(client, latest[0]["pairs"][:2])  # the crowd's first answers to the latest round
    assert client.get(f"{API}/samplings/{sid}/rounds",
                      params={"round": 3}).json()["data"][0]["judged"] == 2
    page = client.get(f"/ui/samplings/{sid}").text
    assert 'id="latest-round-tsv"' in page and 'rounds?round=-1&amp;format=tsv' in page
    assert re.search(r'>3</a></td><td class="num">6</td><td class="num">6</td>'
                     r'<td class="num">2</td>', page)


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
    # everything judged: every relevant document found, nothing missing, both rules stop
    stopping = result["stopping"]
    assert stopping["target_recall"] == 0.9
    assert [s["topic"] for s in stopping["topics"]] == list(TOPICS)
    for check in stopping["topics"] + [stopping["overall"]]:
        assert check["estimated_recall"] == 1.0 and check["residual"] == 0.0
        assert check["optimistic"] and check["conservative"] and check["sd"] == 0.0
    assert stopping["overall"]["found"] == 2 * len(RELEVANT)
    assert stopping["topics_stopping"] == {"optimistic": 2, "conservative": 2}
    exhausted = client.post(f"{API}/samplings/{sid}/rounds")
    assert exhausted.status_code == 409 and exhausted.json()["code"] == "pool_exhausted"


def test_a_round_can_skip_the_topics_at_the_target_recall(client) -> None:
    """Thesis chapter 3 per round: with ``stop``, the topics whose judged sample reached the
    target recall by that rule take no draws and the budget goes to the others; when none is
    left, 409 ``target_reached``; without ``stop`` the round draws as before."""
    setup_collection(client)
    sid = client.post(f"{API}/collections/pool/samplings",
                      json={"budget_per_round": 6, "strategy": "depth"}).json()["id"]
    first = client.post(f"{API}/samplings/{sid}/rounds").json()
    assert first["stop_rule"] is None and first["stopped"] is None
    t1 = [p for p in first["pairs"] if p["topic"] == "t1"]
    assert t1 and any(p["doc"] in RELEVANT for p in t1)
    judge(client, t1)  # t1 has relevant documents found; t2 nothing judged yet
    checks = {c["topic"]: c for c in client.get(f"{API}/samplings/{sid}/estimates").json()[
        "stopping"]["topics"]}
    assert checks["t1"]["conservative"] and not checks["t2"]["optimistic"]

    second = client.post(f"{API}/samplings/{sid}/rounds",
                         params={"stop": "conservative", "target_recall": 0.9})
    assert second.status_code == 201, second.text
    body = second.json()
    assert body["stopped"] == ["t1"] and body["stop_rule"] == "conservative"
    assert body["target_recall"] == 0.9 and body["drawn"] == 6
    assert {p["topic"] for p in body["pairs"]} == {"t2"}  # the whole budget to t2
    assert "1 topic at a recall of 0.9 (conservative) skipped" in body["note"]
    listed = client.get(f"{API}/samplings/{sid}/rounds", params={"round": 2}).json()["data"][0]
    assert listed["stopped"] == ["t1"] and listed["note"] == body["note"]

    judge(client, first["pairs"] + body["pairs"])  # now t2 has found some as well
    blocked = client.post(f"{API}/samplings/{sid}/rounds", params={"stop": "optimistic"})
    assert blocked.status_code == 409 and blocked.json()["code"] == "target_reached"
    assert blocked.json()["stopped"] == 2
    assert client.get(f"{API}/samplings/{sid}/rounds").json()["count"] == 2  # nothing stored
    for bad in ({"stop": "eager"}, {"stop": "optimistic", "target_recall": 0}):
        assert client.post(f"{API}/samplings/{sid}/rounds", params=bad).status_code == 422
    third = client.post(f"{API}/samplings/{sid}/rounds")  # without a rule: both topics
    assert third.status_code == 201 and {p["topic"] for p in third.json()["pairs"]} == set(TOPICS)

    # the page's form: the same rule and target (both topics at the target now: refused, and
    # shown on the page; without a rule the round is drawn)
    judge(client, third.json()["pairs"])
    page = client.get(f"/ui/samplings/{sid}").text
    assert 'id="round-stop"' in page
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert token is not None
    form = {"csrf_token": token.group(1), "stop": "optimistic", "target_recall": "0.85"}
    refused = client.post(f"/ui/samplings/{sid}/rounds", data=form, follow_redirects=False)
    assert refused.status_code == 409 and "target_reached" in refused.text
    # the refused form keeps what was sent: the rule and the target (also the stopping check's)
    assert '<option value="optimistic" selected>' in refused.text
    assert 'id="round-target" min="0.01" max="1" step="any" value="0.85"' in refused.text
    assert "0.85" in refused.text.split('id="stopping-form"')[1].split("</form>")[0]
    for value, words in (("2", "less than or equal to 1"), ("x", "valid number")):
        bad = client.post(f"/ui/samplings/{sid}/rounds", follow_redirects=False,
                          data={**form, "target_recall": value})
        assert bad.status_code == 422 and "invalid_body" in bad.text
        assert "target_recall: Input should be" in bad.text and words in bad.text
        assert f'step="any" value="{value}"' in bad.text
    assert client.get(f"{API}/samplings/{sid}/rounds").json()["count"] == 3  # nothing drawn
    drawn = client.post(f"/ui/samplings/{sid}/rounds", data={**form, "stop": ""},
                        follow_redirects=False)
    assert drawn.status_code == 303 and "round+4" in drawn.headers["location"]
    assert "stop=" not in drawn.headers["location"]
    # a round drawn with a rule (a new sampling: nothing found yet, so no topic stops): the
    # page after it offers the same rule and target again
    setup_collection(client, name="pool2")
    fresh = client.post(f"{API}/collections/pool2/samplings",
                        json={"budget_per_round": 4, "strategy": "uniform"}).json()["id"]
    ruled = client.post(f"/ui/samplings/{fresh}/rounds", follow_redirects=False,
                        data={**form, "stop": "conservative", "target_recall": "0.95"})
    assert ruled.status_code == 303 and "stop=conservative" in ruled.headers["location"]
    after = client.get(ruled.headers["location"]).text
    assert "round 1: 4 pairs to judge" in after
    assert '<option value="conservative" selected>' in after
    assert 'id="round-target" min="0.01" max="1" step="any" value="0.95"' in after


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


def test_judged_and_labelled_pairs_add_up(client) -> None:
    """A pair whose only judgments are "could not judge" (-2) is judged (the crowd answered:
    the rounds' ``judged``, the TSV) but has no label, so the estimates leave it out (their
    ``judged``). The page once showed the two side by side as "judged" (RF10: 10,058 sampled
    and judged against 10,063 judged in round 0); now each round gives both, and the counts
    add up: the estimates' ``judged`` is the sum of the rounds' ``labelled``."""
    setup_collection(client, name="cnj", ignore=(-2,))
    judge(client, [{"topic": "t1", "doc": d} for d in ("d0", "d1", "d2")], name="cnj")
    judge(client, [{"topic": "t1", "doc": "d3"}], name="cnj", annotators=("w1", "w2"),
          label=-2)  # a broken link, twice: judged, no label
    created = client.post(f"{API}/collections/cnj/samplings",
                          json={"budget_per_round": 6, "strategy": "active", "seed": 1}).json()
    assert created["prejudged"] == 4  # round 0 holds every pooled pair judged before
    sid = created["id"]
    drawn = client.post(f"{API}/samplings/{sid}/rounds").json()["pairs"]
    judge(client, drawn[:4], name="cnj")
    judge(client, drawn[4:5], name="cnj", label=-2)  # one pair of round 1 cannot be judged
    judge(client, drawn[4:5], name="cnj", annotators=("w9",), label=-2)  # not even twice

    rounds = client.get(f"{API}/samplings/{sid}/rounds").json()["data"]
    assert [(r["number"], r["drawn"], r["judged"], r["labelled"]) for r in rounds] == [
        (0, 4, 4, 3), (1, 6, 5, 4)]
    assert '1 of its judged pairs has only "could not judge"' in rounds[0]["note"]
    assert sum(p["judged"] for p in rounds[1]["pairs"]) == 5
    estimates = client.get(f"{API}/samplings/{sid}/estimates").json()
    assert estimates["sampled"] == 10 and estimates["judged"] == 7
    assert estimates["judged"] == sum(r["labelled"] for r in rounds)
    # the estimates see only the labelled pairs: r counts the relevant among them
    assert estimates["stopping"]["overall"]["found"] == sum(
        1 for p in drawn[:4] if p["doc"] in RELEVANT) + 2  # d0, d1 before the sampling
    third = client.post(f"{API}/samplings/{sid}/rounds", params={"force": True})
    assert third.status_code == 201

    page = client.get(f"/ui/samplings/{sid}").text
    rounds = client.get(f"{API}/samplings/{sid}/rounds").json()["data"]
    assert '<b>7</b>sampled and judged (with a label)' in page
    assert '+ 2 judged only &quot;could not judge&quot;' in page
    total = re.search(r'<tr id="rounds-total"><th>all</th>(.*?)</tr>', page, re.S)
    assert total and re.findall(r'<td class="num">([\d,]+)</td>', total.group(1)) == [
        "12", str(10 + rounds[2]["drawn"]), "9", "7"]
    assert re.search(r'>1</a></td><td class="num">6</td><td class="num">6</td>'
                     r'<td class="num">5</td><td class="num">4</td>', page)


def test_crowd_labels_are_the_aggregations_labels(client, database_url) -> None:
    """The labels the estimates use are read forward from the judgment columns; they are the
    labels a fit of the aggregation's snapshot gives (repeats, "could not judge" values, an
    annotator with nothing but those), for every method, and they cover exactly the labelled
    pairs; the judged and labelled pairs are those the database has a judgment for."""
    from app.aggregations.snapshot import load_snapshot
    from app.collections.tables import Collection
    from app.core.db import get_sessionmaker
    from app.judgments.columns import current_watermark
    from app.judgments.tables import Document, Judgment, Task, Topic
    from app.sampling import service
    from app.sampling.inputs import NextInputs
    from models.registry import make_aggregator

    def in_database(session, collection, labelled: bool) -> set[tuple[str, str]]:
        judgment = select(Judgment.id).where(Judgment.task_id == Task.id)
        if labelled:
            judgment = judgment.where(Judgment.label.not_in(collection.ignore))
        return {(t, d) for t, d in session.execute(
            select(Topic.external_id, Document.external_id).select_from(Task)
            .join(Topic, Topic.id == Task.topic_id).join(Document, Document.id == Task.document_id)
            .where(Task.collection_id == collection.id, judgment.exists()))}

    create_collection(client, name="labels", labels=[0, 1, 2], relevant_from=1, ignore=[-2])
    rng = np.random.default_rng(4)
    rows = [{"topic": f"t{rng.integers(3)}", "doc": f"d{rng.integers(40)}",
             "annotator": f"w{rng.integers(9)}", "label": int(rng.choice([-2, 0, 1, 2]))}
            for _ in range(400)]
    rows.append({"topic": "t0", "doc": "d-broken", "annotator": "w-unsure", "label": -2})
    inputs = NextInputs()
    with get_sessionmaker(database_url)() as session:
        for half in (rows[:200], rows[200:]):  # the second read starts from the first
            assert client.post(f"{API}/collections/labels/judgments",
                               json={"judgments": half}).status_code == 201
            session.rollback()  # a new transaction: it sees the judgments just posted
            collection = session.scalars(select(Collection).where(
                Collection.name == "labels")).one()
            snapshot = load_snapshot(session, collection=collection, graded=False,
                                     watermark=current_watermark(
                                         session, collection_id=collection.id)).data
            for method in ("mv", "ds", "mace"):
                params = {"random_state": 0} if method == "mace" else {}
                model = make_aggregator(method, params).fit(snapshot)
                expected = dict(zip(zip(snapshot.topic_ids.tolist(),
                                        snapshot.doc_ids.tolist(), strict=True),
                                    snapshot.classes[model.labels_].astype(float).tolist(),
                                    strict=True))
                labels = service.crowd_labels(session, collection=collection, method=method,
                                              inputs=inputs)
                assert labels == expected, method
            for labelled in (False, True):
                judged = service.judged_pairs(session, collection=collection,
                                              labelled=labelled, inputs=inputs)
                assert judged == in_database(session, collection, labelled)
            assert judged == set(labels)  # labelled
        assert ("t0", "d-broken") in service.judged_pairs(session, collection=collection)
        assert ("t0", "d-broken") not in labels


def test_estimates_kept_between_requests_follow_the_sampling(client) -> None:
    """The estimates, the rounds' counts and the pools are kept between requests; new
    judgments, a new round and a replaced run each give what a fresh computation gives."""
    from app.sampling.inputs import NextInputs

    setup_collection(client)
    sid = client.post(f"{API}/collections/pool/samplings",
                      json={"budget_per_round": 6, "strategy": "active", "seed": 5}).json()["id"]
    first = client.post(f"{API}/samplings/{sid}/rounds").json()["pairs"]
    kept = client.app.state.next_inputs

    def now() -> tuple[dict, list, str]:
        estimates = client.get(f"{API}/samplings/{sid}/estimates").json()
        rounds = client.get(f"{API}/samplings/{sid}/rounds").json()["data"]
        page = client.get(f"/ui/samplings/{sid}").text
        return estimates, [(r["judged"], r["labelled"]) for r in rounds], cell(page, "rounds")

    def fresh() -> tuple[dict, list, str]:
        client.app.state.next_inputs = NextInputs(max_fits=0, max_collections=0, max_memos=0)
        try:
            return now()
        finally:
            client.app.state.next_inputs = kept

    states = [now()]
    judge(client, first[:3])
    states.append(now())
    assert states[1][0]["judged"] == 3 and states[1] == fresh() and now() == states[1]
    judge(client, first[3:])
    second = client.post(f"{API}/samplings/{sid}/rounds").json()["pairs"]
    states.append(now())
    assert states[2][0]["sampled"] == 12 and states[2] == fresh()
    judge(client, second, annotators=("w1",))
    states.append(now())
    assert states[3][0]["judged"] == 12 and states[3] == fresh()
    # "poor" replaced by a better run over the same pool: the same pool size, other estimates
    # (on SQLite the new row can take the old one's id, within the same second)
    response = client.put(f"{API}/collections/pool/runs/poor",
                          content=run_text("poor", ["d0", "d1", "d3", "d8", "d9", "d10", "d11",
                                                    "d2"]).encode(),
                          headers={"content-type": "text/plain"})
    assert response.status_code == 200, response.text
    states.append(now())
    assert states[4] == fresh() and states[4][0]["results"] != states[3][0]["results"]
    assert len({json.dumps(s[0], sort_keys=True) for s in states}) == len(states)


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
    ({"budget_per_round": 5, "runs": []}, 422, "invalid_body"),  # was a "pool of 0"
    ({"budget_per_round": True}, 422, "invalid_body"),  # was a budget of 1
    ({"budget_per_round": "5"}, 422, "invalid_body"),
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
    # each with the evidence behind the competence; those with too little left out
    assert {a["annotator"]: a["n_judgments"] for a in first["annotators"]} == {"w2": 8, "w5": 1}
    sure = client.get(f"{API}/aggregations/{fit['id']}/next",
                      params={"n": 4, "strategy": "uncertainty",
                              "min_annotator_judgments": 2}).json()["data"]
    assert [t["doc"] for t in sure] == [t["doc"] for t in body["data"]]
    assert [a["annotator"] for a in sure[0]["annotators"]] == ["w2"]
    assert all("w5" not in {a["annotator"] for a in t["annotators"]} for t in sure)
    page = client.get(f"/ui/aggregations/{fit['id']}/next",
                      params={"n": 4, "min_annotator_judgments": 2}).text
    assert ">w5</a>" not in page and ">w2</a>" in page
    assert f'({sure[0]["annotators"][0]["competence"]:.2f} · 8)' in page

    # who each task goes to: without a limit its best annotator not yet asked (w2 everywhere
    # it may); with one task each, w2 takes the first, w5 the next, then nobody is left
    assert [t["assigned"] for t in body["data"]] == [
        t["annotators"][0]["annotator"] for t in body["data"]]
    shared = client.get(f"{API}/aggregations/{fit['id']}/next",
                        params={"n": 4, "per_annotator": 1}).json()["data"]
    assert [t["doc"] for t in shared] == [t["doc"] for t in body["data"]]  # the same order
    assert [t["assigned"] for t in shared] == ["w2", "w5", None, None]
    tsv = client.get(f"{API}/aggregations/{fit['id']}/next",
                     params={"n": 4, "per_annotator": 1, "format": "tsv"}).text.splitlines()
    assert tsv[0].endswith("\tannotators\tassigned")
    assert [line.split("\t")[-1] for line in tsv[1:]] == ["w2", "w5", "", ""]
    for bad in ({"per_annotator": 0}, {"strategy": "random", "seed": -1},
                {"seed": 2**32}):  # a negative seed was a 500 (schemathesis found it)
        assert client.get(f"{API}/aggregations/{fit['id']}/next",
                          params=bad).status_code == 422, bad
    page = client.get(f"/ui/aggregations/{fit['id']}/next",
                      params={"n": 4, "per_annotator": 1}).text
    assert 'name="per_annotator" min="1" max="10000" value="1"' in page
    assert page.count('<td class="assigned"><a ') == 2 and "per_annotator=1" in page
    bad = client.get(f"/ui/aggregations/{fit['id']}/next", params={"per_annotator": "0"})
    # the API's message for the same value (NextQuery)
    assert bad.status_code == 422 and (
        "per_annotator: Input should be greater than or equal to 1" in bad.text)

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
    assert [r[-2:] for r in lines[1:]] == [
        [",".join(a["annotator"] for a in t["annotators"]), t["assigned"] or ""] for t in listed]
    page = client.get(f"/ui/aggregations/{fit['id']}/next", params=params)
    assert page.status_code == 200
    docs = re.findall(r'/tasks/\d+">([^<]+)</a>', page.text)
    assert docs == [t["doc"] for t in listed]
    assert 'format=tsv' in page.text
    for bad_params in ({"strategy": "entropy"}, {"max_judgments": "x"}, {"max_judgments": "0"}):
        page = client.get(f"/ui/aggregations/{fit['id']}/next", params=bad_params)
        assert page.status_code == 422 and 'id="form-error"' in page.text, bad_params


def test_next_counts_the_judgments_that_arrive_after_it_was_asked(client) -> None:
    """/next keeps the fit's posterior and the judgments it read; judgments that arrive later
    (a repeated one, a new annotator, a task the fit never saw, an ignored value) count at the
    next request exactly as in a fresh read, for the API and the page alike."""
    from app.sampling.inputs import NextInputs

    create_collection(client, name="later", labels=[0, 1], relevant_from=1, ignore=[-2])
    judgments = [{"topic": "t1", "doc": doc, "annotator": f"w{j}", "label": lab}
                 for i, doc in enumerate(DOCS)
                 for j, lab in enumerate([1, 1, 1] if i < 6 else [1, 0])]
    assert client.post(f"{API}/collections/later/judgments",
                       json={"judgments": judgments}).status_code == 201
    fit = client.post(f"{API}/collections/later/aggregations", json={"method": "mv"}).json()
    assert wait_for(client, fit["id"])["status"] == "succeeded"
    url = f"{API}/aggregations/{fit['id']}/next"
    params = {"n": 12, "strategy": "uncertainty"}

    def listed() -> dict[str, dict]:
        return {t["doc"]: t for t in client.get(url, params=params).json()["data"]}

    before = listed()
    assert before["d6"]["n_judgments"] == 2
    assert [a["annotator"] for a in before["d6"]["annotators"]] == ["w2"]
    later = [{"topic": "t1", "doc": "d6", "annotator": "w2", "label": 1},
             {"topic": "t1", "doc": "d6", "annotator": "w2", "label": 1},  # again: counts again
             {"topic": "t1", "doc": "d7", "annotator": "w-new", "label": 0},
             {"topic": "t1", "doc": "d8", "annotator": "w-unsure", "label": -2},
             {"topic": "t1", "doc": "d-unfitted", "annotator": "w-new", "label": 1}]
    assert client.post(f"{API}/collections/later/judgments",
                       json={"judgments": later}).status_code == 201
    after = listed()
    assert "d-unfitted" not in after  # not in the fit: nothing to plan for it
    assert after["d6"]["n_judgments"] == 4  # w0, w1 and w2 twice: the new ones are left
    assert {a["annotator"] for a in after["d6"]["annotators"]} == {"w-new", "w-unsure"}
    assert after["d7"]["n_judgments"] == 3
    assert "w-new" not in {a["annotator"] for a in after["d7"]["annotators"]}
    assert "w-new" in {a["annotator"] for a in after["d9"]["annotators"]}
    assert after["d8"]["n_judgments"] == 2  # asked, but no label to count
    assert "w-unsure" not in {a["annotator"] for a in after["d8"]["annotators"]}
    page = client.get(f"/ui/aggregations/{fit['id']}/next", params=params)
    assert re.findall(r'/tasks/\d+">([^<]+)</a>', page.text) == list(after)

    client.app.state.next_inputs = NextInputs()  # nothing kept: everything read again
    assert listed() == after
    tsv = client.get(url, params={**params, "format": "tsv"}).text
    client.app.state.next_inputs = NextInputs(max_fits=0, max_collections=0)
    assert client.get(url, params={**params, "format": "tsv"}).text == tsv


def test_next_counts_could_not_judge_and_leaves_out_what_nobody_can_judge(client) -> None:
    """Answers "could not judge" (an ignore value) count towards max_judgments, and a task
    mostly answered so is left out unless keep_could_not_judge (RF10: 12 of 15 judgments of
    topic 20186's clueweb09-en0009-33-55352 are -2, yet it was proposed with 3 judgments)."""
    create_collection(client, name="broken", labels=[0, 1], relevant_from=1, ignore=[-2])
    judgments = [{"topic": "t1", "doc": doc, "annotator": f"w{j}", "label": j % 2}
                 for doc in ("ok1", "ok2", "few-broken", "mostly-broken") for j in range(3)]
    judgments += [{"topic": "t1", "doc": "mostly-broken", "annotator": f"b{j}", "label": -2}
                  for j in range(5)]
    judgments += [{"topic": "t1", "doc": "few-broken", "annotator": "b0", "label": -2}]
    assert client.post(f"{API}/collections/broken/judgments",
                       json={"judgments": judgments}).status_code == 201
    fit = client.post(f"{API}/collections/broken/aggregations", json={"method": "mv"}).json()
    assert wait_for(client, fit["id"])["status"] == "succeeded"
    url = f"{API}/aggregations/{fit['id']}/next"

    def listed(**params) -> dict[str, dict]:
        return {t["doc"]: t for t in client.get(url, params={"n": 10, **params}).json()["data"]}

    default = listed()
    assert set(default) == {"ok1", "ok2", "few-broken"}
    assert default["few-broken"]["could_not_judge"] == 1
    assert default["few-broken"]["n_judgments"] == 3
    kept = listed(keep_could_not_judge="true")
    assert set(kept) == {"ok1", "ok2", "few-broken", "mostly-broken"}
    assert (kept["mostly-broken"]["n_judgments"], kept["mostly-broken"]["could_not_judge"]) == (
        3, 5)
    # 3 labels + 1 could-not-judge = 4: no longer under a cap of 4
    assert set(listed(max_judgments=4)) == {"ok1", "ok2"}
    assert set(listed(max_judgments=4, keep_could_not_judge="true")) == {"ok1", "ok2"}


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
    labels_of = collections.Counter(x.split("\t")[2] for x in lines[1:]
                                    if x.split("\t")[3] != "-2")
    middle = sorted(labels_of.values())[len(labels_of) // 2]  # about half the annotators
    assert min(labels_of.values()) < middle
    for strategy, cap, fewest, share in (
            ("uncertainty", None, 0, None), ("expected-change", 3, 0, 2),
            ("random", None, 0, None), ("expected-change", None, middle, 1)):
        params = {"n": 40, "strategy": strategy, "seed": 5, "annotators": 3, "format": "tsv",
                  "min_annotator_judgments": fewest, **({"max_judgments": cap} if cap else {}),
                  **({"per_annotator": share} if share else {})}
        served = client.get(f"{API}/aggregations/{fit['id']}/next", params=params).text
        out = tmp_path / f"{strategy}-{fewest}.tsv"
        args = ["next", str(path), "--method", "ds", "-n", "40", "--strategy", strategy,
                "--seed", "5", "--annotators", "3", "--output", str(out),
                "--min-annotator-judgments", str(fewest)]
        assert cli(args + (["--max-judgments", str(cap)] if cap else [])
                   + (["--per-annotator", str(share)] if share else [])) == 0
        assigned = collections.Counter(line.split("\t")[-1] for line in served.splitlines()[1:])
        assigned.pop("", None)  # nobody left with a share: those tasks go to nobody
        assert share is None or max(assigned.values(), default=0) <= share
        assert out.read_text() == served, (strategy, fewest)
    assert len(served.splitlines()) == 41
    with pytest.raises(SystemExit) as refused:  # argparse: exit 2, as for the other arguments
        cli(["next", str(path), "--method", "ds", "--strategy", "random", "--seed", "-5"])
    assert refused.value.code == 2
    # every task: the repeat counts as a judgment; the ignored value's annotator counts as asked
    every = {(t["topic"], t["doc"]): t for t in client.get(
        f"{API}/aggregations/{fit['id']}/next",
        params={"n": 1000, "annotators": 1000}).json()["data"]}
    assert every[(topic, doc)]["n_judgments"] == sum(
        1 for x in lines[1:] if x.split("\t")[:2] == [topic, doc])
    asked = every[(other[0], other[1])]
    assert "w-unsure" not in {a["annotator"] for a in asked["annotators"]}
    assert "w-unsure" in {a["annotator"] for a in every[(topic, doc)]["annotators"]}


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_next_keeps_up_with_concurrent_ingestion(database_url) -> None:
    """Writers post to the fitted collection (and to another, interleaving the id sequence)
    while readers poll /next, so the server's kept judgments are extended again and again
    mid-ingestion; afterwards its list equals a fresh read of the database, judgment for
    judgment: nothing missed, nothing counted twice."""
    import random
    import threading
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    from app.aggregations.tables import Aggregation
    from app.core.db import get_sessionmaker
    from app.sampling.inputs import NextInputs
    from app.sampling.rejudging import next_tasks
    from tests.auth.test_idempotency import start_server

    server, base = start_server(database_url)
    try:
        http = httpx.Client(base_url=base, timeout=120)
        for name in ("busy", "other"):
            assert http.post(f"{API}/collections", json={
                "name": name, "labels": [0, 1], "relevant_from": 1,
                "ignore": [-2]}).status_code == 201
        first = [{"topic": "t", "doc": f"d{i}", "annotator": f"w{i % 7}", "label": i % 2}
                 for i in range(200)]
        assert http.post(f"{API}/collections/busy/judgments",
                         json={"judgments": first}).status_code == 201
        fit = http.post(f"{API}/collections/busy/aggregations", json={"method": "ds"}).json()
        deadline = time.monotonic() + 120
        while http.get(f"{API}/aggregations/{fit['id']}").json()["status"] != "succeeded":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        url = f"{API}/aggregations/{fit['id']}/next"
        writing = threading.Event()
        writing.set()

        def write(seed: int) -> int:
            rnd = random.Random(seed)
            name = "other" if seed == 3 else "busy"
            with httpx.Client(base_url=base, timeout=120) as own:
                for _ in range(15):  # 60 posts: the readers' kept lists extended many times
                    batch = [{"topic": "t", "doc": f"d{rnd.randrange(220)}",
                              "annotator": f"w{rnd.randrange(30)}",
                              "label": rnd.choice([0, 1, -2])} for _ in range(rnd.randrange(1, 40))]
                    response = own.post(f"{API}/collections/{name}/judgments",
                                        json={"judgments": batch})
                    assert response.status_code == 201, response.text
            return seed

        def read(_: int) -> int:
            polls = 0
            with httpx.Client(base_url=base, timeout=120) as own:
                while writing.is_set():
                    assert own.get(url, params={"n": 20}).status_code == 200
                    polls += 1
            return polls

        with ThreadPoolExecutor(6) as pool:
            readers = [pool.submit(read, i) for i in range(2)]
            list(pool.map(write, range(4)))
            writing.clear()
            assert all(r.result() > 0 for r in readers)
        params = {"n": 10_000, "annotators": 1000, "keep_could_not_judge": "true"}
        served = http.get(url, params=params).json()["data"]
        http.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    with get_sessionmaker(database_url)() as session:
        fresh = next_tasks(session, aggregation=session.get(Aggregation, fit["id"]), n=10_000,
                           strategy="uncertainty", n_annotators=1000, keep_could_not_judge=True,
                           inputs=NextInputs(max_fits=0, max_collections=0))["data"]
    assert len(served) == 200 and served == fresh
    assert sum(t["n_judgments"] for t in served) > 200  # the writers' judgments are in it


def test_concurrent_draws_get_their_own_rounds(database_url) -> None:
    """Rounds drawn at once (a double click, a client's retry without an Idempotency-Key) are
    drawn one after the other: distinct numbers, and no pair drawn twice (a pair drawn again
    would be counted twice and its inclusion probability be wrong). QA saw round numbers
    [1, 1, 2, 2, 3, 3, 3, 3, 4, 4] with 30 distinct pairs of 50 drawn."""
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    from tests.auth.test_idempotency import start_server

    server, base = start_server(database_url)
    try:
        with httpx.Client(base_url=base, timeout=120) as http:
            setup_collection(http)
            sampling = http.post(f"{API}/collections/pool/samplings",
                                 json={"budget_per_round": 2, "seed": 3})
            assert sampling.status_code == 201, sampling.text
            rounds_url = f"{API}/samplings/{sampling.json()['id']}/rounds"
            pool_size = sampling.json()["pool_size"]

        def draw(_: int) -> httpx.Response:
            with httpx.Client(base_url=base, timeout=120) as own:
                return own.post(rounds_url, params={"force": "true"})

        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(draw, range(8)))
        assert all(a.status_code == 201 for a in answers), [a.text for a in answers]
        assert sorted(a.json()["number"] for a in answers) == list(range(1, 9))
        with httpx.Client(base_url=base, timeout=120) as http:
            listed = http.get(rounds_url).json()["data"]
            drawn = [(p["topic"], p["doc"]) for r in listed for p in r["pairs"]]
            assert len(drawn) == len(set(drawn)) == 16 <= pool_size
            assert http.get(f"{API}/samplings/{sampling.json()['id']}").json()["n_sampled"] == 16
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_next_tsv_lists_annotators_whose_ids_hold_commas() -> None:
    """The TSV's annotators column splits at commas: "," and "%" inside an id are
    percent-encoded (a list "w2,w", "1" was "w2,w,1"); a score of -0.0 is written 0."""
    from urllib.parse import unquote

    from app.sampling.rejudging import next_tasks_tsv

    ids = ["w2,w", "1", "50%", "mturk/A1"]
    tsv = next_tasks_tsv({"data": [{
        "topic": "t", "doc": "d", "n_judgments": 2, "uncertainty": -0.0,
        "p_label_change": 0.25, "expected_change": 1e-7,
        "annotators": [{"annotator": a} for a in ids], "assigned": "w2,w"}]})
    row = tsv.splitlines()[1].split("\t")
    assert row[4:7] == ["0", "0.25", "1e-07"]
    assert row[7] == "w2%2Cw,1,50%25,mturk/A1"
    assert [unquote(part) for part in row[7].split(",")] == ids
    assert row[8] == "w2,w"


def test_a_round_answered_only_with_could_not_judge_is_judged(client) -> None:
    """A round whose pairs the crowd answered only with "could not judge" (-2) is judged (GET
    /rounds says so); the next round was refused as round_not_judged, "no judgments yet",
    every pair "missing"."""
    setup_collection(client, name="cnj", ignore=(-2,))
    sid = client.post(f"{API}/collections/cnj/samplings",
                      json={"budget_per_round": 3, "strategy": "uniform", "seed": 1}).json()["id"]
    drawn = client.post(f"{API}/samplings/{sid}/rounds").json()["pairs"]
    judge(client, drawn, name="cnj", label=-2)
    latest = client.get(f"{API}/samplings/{sid}/rounds", params={"round": -1}).json()["data"][0]
    assert (latest["judged"], latest["labelled"]) == (3, 0)
    second = client.post(f"{API}/samplings/{sid}/rounds")
    assert second.status_code == 201, second.text
    assert second.json()["number"] == 2 and not second.json()["forced"]
    blocked = client.post(f"{API}/samplings/{sid}/rounds")  # this one has no answer at all
    assert blocked.status_code == 409 and blocked.json()["missing"] == 3


@pytest.mark.parametrize("strategy", ["active", "uniform", "depth"])
def test_a_run_replaced_by_another_pool_of_the_same_size(client, strategy) -> None:
    """The pool had to change size for runs_changed: a run replaced by one whose pool has as
    many documents (here d8-d11 replaced by x0-x3) went on silently, the stored rounds' pairs
    and selection probabilities read against other documents (a round drew x-documents with
    inclusion probabilities of the d-documents' history)."""
    setup_collection(client)
    sid = client.post(f"{API}/collections/pool/samplings",
                      json={"budget_per_round": 6, "strategy": strategy, "seed": 1}).json()["id"]
    first = client.post(f"{API}/samplings/{sid}/rounds")
    assert first.status_code == 201
    judge(client, first.json()["pairs"])
    before = client.get(f"{API}/samplings/{sid}/rounds").json()
    replaced = ["x0", "x1", "x2", "x3"] + DOCS[:4]
    response = client.put(f"{API}/collections/pool/runs/poor",
                          content=run_text("poor", replaced).encode(),
                          headers={"content-type": "text/plain"})
    assert response.status_code == 200, response.text
    for answer in (client.get(f"{API}/samplings/{sid}/estimates"),
                   client.post(f"{API}/samplings/{sid}/rounds", params={"force": True})):
        assert answer.status_code == 409, answer.text
        # which run changed (README: runs_changed "with runs"; it was named only when deleted)
        assert answer.json()["code"] == "runs_changed" and answer.json()["runs"] == ["poor"]
        assert "'poor' replaced" in answer.json()["detail"]
    assert client.get(f"{API}/samplings/{sid}/rounds").json() == before
    # the same runs again: the sampling goes on
    client.put(f"{API}/collections/pool/runs/poor",
               content=run_text("poor", RUNS["poor"]).encode(),
               headers={"content-type": "text/plain"})
    assert client.get(f"{API}/samplings/{sid}/estimates").status_code == 200
    assert client.post(f"{API}/samplings/{sid}/rounds").status_code == 201


def test_the_samplings_are_listed_a_page_at_a_time(client) -> None:
    setup_collection(client)
    url = f"{API}/collections/pool/samplings"
    ids = [client.post(url, json={"budget_per_round": 2, "seed": seed}).json()["id"]
           for seed in range(3)]
    page = client.get(url, params={"limit": 2}).json()
    assert page["count"] == 3 and [s["id"] for s in page["data"]] == ids[:2]
    page = client.get(url, params={"limit": 2, "offset": 2}).json()
    assert page["count"] == 3 and [s["id"] for s in page["data"]] == ids[2:]
    assert [s["id"] for s in client.get(url).json()["data"]] == ids
    response = client.get(url, params={"limit": 0})
    assert response.status_code == 422 and response.json()["code"] == "invalid_body"


def test_a_first_round_with_a_stopping_rule_draws(client) -> None:
    """Pairs judged before the sampling (round 0, π = 1) are no estimate of the rest of the
    pool: with relevant ones among them, every topic read r / R̂ = 1 before any draw, both
    rules said stop, and a first round with ``stop`` was refused as target_reached."""
    setup_collection(client)
    judge(client, [{"topic": t, "doc": d} for t in TOPICS for d in ("d0", "d1", "d2")])
    sid = client.post(f"{API}/collections/pool/samplings",
                      json={"budget_per_round": 4, "strategy": "active", "seed": 1}).json()["id"]
    stopping = client.get(f"{API}/samplings/{sid}/estimates").json()["stopping"]
    assert stopping["topics_stopping"] == {"optimistic": 0, "conservative": 0}
    for check in stopping["topics"] + [stopping["overall"]]:
        assert check["found"] > 0 and check["estimated_recall"] is None
        assert not check["optimistic"] and not check["conservative"]
    first = client.post(f"{API}/samplings/{sid}/rounds",
                        params={"stop": "conservative", "target_recall": 0.9})
    assert first.status_code == 201, first.text
    assert first.json()["stopped"] == [] and first.json()["drawn"] == 4
    # once a topic has been drawn from, its estimate covers the pool and the rules apply
    judge(client, first.json()["pairs"])
    after = client.get(f"{API}/samplings/{sid}/estimates").json()["stopping"]["topics"]
    drawn_topics = {p["topic"] for p in first.json()["pairs"]}
    assert all(c["estimated_recall"] is not None for c in after if c["topic"] in drawn_topics)


def test_a_deleted_run_is_a_change_of_the_sampling_runs(client) -> None:
    """A run of the sampling deleted since: its estimates and rounds answered 404
    run_not_found, as if the sampling were gone; the runs changed (409 runs_changed)."""
    setup_collection(client)
    sid = client.post(f"{API}/collections/pool/samplings",
                      json={"budget_per_round": 4, "strategy": "uniform"}).json()["id"]
    assert client.post(f"{API}/samplings/{sid}/rounds").status_code == 201
    assert client.delete(f"{API}/collections/pool/runs/poor").status_code == 204
    for answer in (client.get(f"{API}/samplings/{sid}/estimates"),
                   client.post(f"{API}/samplings/{sid}/rounds", params={"force": True})):
        assert answer.status_code == 409, answer.text
        assert answer.json()["code"] == "runs_changed" and answer.json()["runs"] == ["poor"]
    assert client.get(f"{API}/samplings/{sid}").json()["n_rounds"] == 1
    created = client.post(f"{API}/collections/pool/samplings",
                          json={"budget_per_round": 4, "runs": ["poor"]})
    assert created.status_code == 404 and created.json()["code"] == "run_not_found"


@pytest.mark.parametrize("strategy", ["active", "uniform"])
def test_a_round_without_judgments_yet_leaves_the_estimates_as_they_were(client,
                                                                         strategy) -> None:
    """Drawing a round moved every estimate before the crowd had judged any of it: the new
    draws entered the inclusion probabilities while their pairs counted as non-relevant (RF10
    topics, 5 topics, rounds of 30: relevant documents 157 → 97, P@20 of a run .54 → .32). The
    estimates wait for the round's first judgment; then they use it."""
    setup_collection(client)
    sid = client.post(f"{API}/collections/pool/samplings",
                      json={"budget_per_round": 6, "strategy": strategy, "seed": 3}).json()["id"]
    judge(client, client.post(f"{API}/samplings/{sid}/rounds").json()["pairs"])
    before = client.get(f"{API}/samplings/{sid}/estimates").json()
    second = client.post(f"{API}/samplings/{sid}/rounds").json()["pairs"]
    forced = client.post(f"{API}/samplings/{sid}/rounds", params={"force": True}).json()["pairs"]
    pending = client.get(f"{API}/samplings/{sid}/estimates").json()
    assert pending["rounds"] == 3 and pending["sampled"] == 18 and pending["judged"] == 6
    assert pending["results"] == before["results"]
    assert pending["stopping"] == before["stopping"]
    judge(client, second[:1])  # the crowd's first answer: round 2 counts, the forced one not yet
    answered = client.get(f"{API}/samplings/{sid}/estimates").json()
    assert answered["judged"] == 7 and answered["results"] != before["results"]
    judge(client, forced)
    assert client.get(f"{API}/samplings/{sid}/estimates").json()["results"] != (
        answered["results"])
