"""The evaluation and sampling pages and their forms, on SQLite and PostgreSQL: what they show is
what GET /evaluations/{e} and /samplings/{s} return; the forms validate like the API, report its
errors and change nothing when they fail."""

from __future__ import annotations

import html
import re

from tests.api.evaluations.test_evaluations import evaluate
from tests.api.evaluations.test_evaluations import setup_collection as evaluation_collection
from tests.api.helpers import API
from tests.api.jobs import wait_for
from tests.api.sampling.test_sampling import RELEVANT
from tests.api.sampling.test_sampling import setup_collection as sampling_collection
from tests.ui.test_pages import figures, token


def cell(page: str, table_id: str) -> str:
    match = re.search(rf'<table class="data" id="{table_id}">(.*?)</table>', page, re.S)
    assert match, f"no table {table_id}"
    return match.group(1)


def test_evaluation_page_shows_the_api_results(client) -> None:
    aggregation = evaluation_collection(client)
    done = evaluate(client, {"aggregation": aggregation, "measures": ["P@10", "AP"],
                             "samples": 200, "seed": 3})
    api = client.get(f"{API}/evaluations/{done['id']}").json()

    page = client.get(f"/ui/evaluations/{done['id']}")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    text = page.text
    assert f"fit #{aggregation}" in text and "succeeded" in text
    for fmt in ("json", "tsv", "trec"):
        assert f"/api/v1/evaluations/{done['id']}/measures?format={fmt}" in text
    assert '<a href="?measure=P%4010" class="current"' in text  # the first measure by default

    # The interval chart: runs in the API's ranking order, points at the API's values, error
    # bars from the API's low/high around its mean.
    ranking = next(r for r in api["rankings"] if r["measure"] == "P@10")
    figs = figures(text)
    points, estimate = figs["intervals"]["data"]
    assert estimate["x"] == ranking["runs"] == points["x"]
    rows = {r["run"]: r for r in api["results"] if r["measure"] == "P@10"}
    for i, run in enumerate(ranking["runs"]):
        assert abs(estimate["y"][i] - rows[run]["value"]) < 1e-4
        assert abs(points["y"][i] + points["error_y"]["array"][i] - rows[run]["high"]) < 1e-3
        assert abs(points["y"][i] - points["error_y"]["arrayminus"][i] - rows[run]["low"]) < 1e-3
    # P(row beats column), as the API's pairs; the diagonal is empty.
    heat = figs["wins"]["data"][0]
    wins = {(p["a"], p["b"]): p["p_a_beats_b"] for p in api["pairs"] if p["measure"] == "P@10"}
    for i, a in enumerate(heat["y"]):
        for j, b in enumerate(heat["x"]):
            assert heat["z"][i][j] == (None if a == b else wins[(a, b)])
    assert heat["z"][0][1] + heat["z"][1][0] <= 1.0 + 1e-9
    # Rankings and tau against gold (the collection has gold).
    assert ranking["kendall_tau_gold"] is not None
    assert " &gt; ".join(ranking["runs"]) in cell(text, "rankings")

    other = client.get(f"/ui/evaluations/{done['id']}", params={"measure": "AP"})
    assert '<a href="?measure=AP" class="current"' in other.text
    ap = next(r for r in api["rankings"] if r["measure"] == "AP")
    assert figures(other.text)["intervals"]["data"][1]["x"] == ap["runs"]
    unknown = client.get(f"/ui/evaluations/{done['id']}", params={"measure": "nDCG@7"})
    assert unknown.status_code == 200 and 'class="current"' in unknown.text  # back to the first

    collection = client.get("/ui/collections/ev").text
    assert f'href="/ui/evaluations/{done["id"]}"' in cell(collection, "evaluations")
    assert client.get("/ui/evaluations/999999").status_code == 404
    assert client.get("/ui/evaluations/0").status_code == 422


def test_evaluation_form_validates_like_the_api(client) -> None:
    aggregation = evaluation_collection(client)
    csrf = token(client.get("/ui/collections/ev").text)
    url = "/ui/collections/ev/evaluations"

    for data, code in [
        ({"source": str(aggregation), "measures": "P@10 MAPP"}, "unknown_measure"),
        ({"source": str(aggregation), "runs": "bm25 nope"}, "run_not_found"),
        ({"source": "99999"}, "aggregation_not_found"),
        ({"source": str(aggregation), "samples": "many"}, "invalid_body"),
        ({"source": str(aggregation), "samples": "20000"}, "invalid_body"),
        ({"source": "something"}, "invalid_body"),
    ]:
        r = client.post(url, data={"csrf_token": csrf, **data})
        assert r.status_code in (404, 422), (data, r.text)
        assert "text/html" in r.headers["content-type"]
        assert 'id="form-error"' in r.text and code in r.text, (data, r.text)
    assert client.get(f"{API}/collections/ev/evaluations").json()["count"] == 0

    r = client.post(url, data={"csrf_token": "forged" * 8, "source": str(aggregation)})
    assert r.status_code == 403
    r = client.post(url, data={"csrf_token": csrf, "source": str(aggregation),
                               "runs": "bm25, dense", "measures": "P@10 AP",
                               "samples": "30", "seed": "4"}, follow_redirects=False)
    assert r.status_code == 303, r.text
    message = html.unescape(client.get(r.headers["location"]).text)
    assert "of 2 runs on fit #" in message
    created = client.get(f"{API}/collections/ev/evaluations").json()["data"]
    assert len(created) == 1
    assert created[0]["runs"] == ["bm25", "dense"] and created[0]["measures"] == ["P@10", "AP"]
    assert created[0]["samples"] == 30 and created[0]["seed"] == 4
    done = wait_for(client, created[0]["id"], kind="evaluations")
    assert done["status"] == "succeeded"
    gold = client.post(url, data={"csrf_token": csrf, "source": "gold", "samples": "0"},
                       follow_redirects=False)
    assert gold.status_code == 303
    assert client.get(f"{API}/collections/ev/evaluations").json()["data"][1]["aggregation"] \
        == "gold"


def test_sampling_page_and_its_rounds(client) -> None:
    sampling_collection(client)
    page = client.get("/ui/collections/pool")
    csrf = token(page.text)
    url = "/ui/collections/pool/samplings"
    for data, code in [({"budget_per_round": "0"}, "invalid_body"),
                       ({"budget_per_round": "999"}, "budget_above_pool"),
                       ({"budget_per_round": "5", "strategy": "random"}, "invalid_body"),
                       ({"budget_per_round": "5", "runs": "nope"}, "run_not_found")]:
        r = client.post(url, data={"csrf_token": csrf, **data})
        assert r.status_code in (404, 422) and code in r.text, (data, r.text)
    assert client.get(f"{API}/collections/pool/samplings").json()["count"] == 0

    r = client.post(url, data={"csrf_token": csrf, "budget_per_round": "6", "seed": "1",
                               "strategy": "active"}, follow_redirects=False)
    assert r.status_code == 303, r.text
    sid = client.get(f"{API}/collections/pool/samplings").json()["data"][0]["id"]
    assert f'href="/ui/samplings/{sid}"' in cell(client.get("/ui/collections/pool").text,
                                                 "samplings")
    page = client.get(f"/ui/samplings/{sid}")
    assert page.status_code == 200 and "No rounds yet" in page.text

    # Draw a round from the page; a second draw before judging is refused, and changes nothing.
    csrf = token(page.text)
    r = client.post(f"/ui/samplings/{sid}/rounds", data={"csrf_token": csrf},
                    follow_redirects=False)
    assert r.status_code == 303
    assert "round 1: 6 pairs to judge" in html.unescape(client.get(r.headers["location"]).text)
    r = client.post(f"/ui/samplings/{sid}/rounds", data={"csrf_token": csrf})
    assert r.status_code == 409 and "round_not_judged" in r.text
    rounds = client.get(f"{API}/samplings/{sid}/rounds").json()
    assert rounds["count"] == 1

    # Judge the round's pairs; the page's estimates are the API's.
    pairs = rounds["data"][0]["pairs"]
    judgments = [{"topic": p["topic"], "doc": p["doc"], "annotator": a,
                  "label": int(p["doc"] in RELEVANT)} for p in pairs for a in ("w1", "w2")]
    assert client.post(f"{API}/collections/pool/judgments",
                       json={"judgments": judgments}).status_code == 201
    api = client.get(f"{API}/samplings/{sid}/estimates").json()
    page = client.get(f"/ui/samplings/{sid}").text
    ap = {r["run"]: r for r in api["results"] if r["topic"] == "all" and r["measure"] == "AP"}
    chart = figures(page)["estimates"]["data"]
    assert set(chart[-1]["x"]) == set(ap)
    for run, value in zip(chart[-1]["x"], chart[-1]["y"], strict=True):
        assert abs(value - ap[run]["value"]) < 1e-4
    assert "good" in cell(page, "estimates") and "poor" in cell(page, "estimates")
    # the page opens on the sampling's progress (rounds, when to stop); the estimates per run
    # and measure (AP first) follow, and a measure's tab leads back to them
    assert page.index('id="rounds"') < page.index('id="stopping"') < page.index(
        'id="measure-tabs"') < page.index('id="estimates"')
    assert '<a href="?measure=AP#estimates-section" class="current"' in page
    r = client.post(f"/ui/samplings/{sid}/rounds", data={"csrf_token": csrf, "force": "on"},
                    follow_redirects=False)
    assert r.status_code == 303
    assert client.get(f"{API}/samplings/{sid}/rounds").json()["count"] == 2
    assert client.get("/ui/samplings/999999").status_code == 404


def test_a_sampling_whose_runs_changed_still_shows_its_rounds(client) -> None:
    """A run replaced since the sampling was created: the page said only 409 runs_changed (a
    bare error page); it now shows the sampling, its rounds and what to do, without estimates
    or a draw form, and the estimates come back with the run as it was."""
    from tests.api.sampling.test_sampling import DOCS, RUNS, judge, run_text

    sampling_collection(client)
    sid = client.post(f"{API}/collections/pool/samplings",
                      json={"budget_per_round": 6, "seed": 1}).json()["id"]
    judge(client, client.post(f"{API}/samplings/{sid}/rounds").json()["pairs"])

    def put_poor(docs: list[str]) -> None:
        response = client.put(f"{API}/collections/pool/runs/poor",
                              content=run_text("poor", docs).encode(),
                              headers={"content-type": "text/plain"})
        assert response.status_code == 200, response.text

    put_poor(["x0", "x1", "x2", "x3"] + DOCS[:4])
    page = client.get(f"/ui/samplings/{sid}")
    assert page.status_code == 200, page.text
    text = html.unescape(page.text)
    assert 'id="runs-changed"' in text and "'poor' replaced" in text and "runs_changed" in text
    assert cell(text, "rounds").count("<tr><td>") == 1  # round 1, still listed
    assert 'id="round-form"' not in text and 'id="estimates"' not in text
    assert "No estimates: the sampling's runs changed" in text

    put_poor(RUNS["poor"])
    text = client.get(f"/ui/samplings/{sid}").text
    assert 'id="runs-changed"' not in text and 'id="round-form"' in text
    assert 'id="estimates"' in text
