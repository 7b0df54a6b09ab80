"""The evaluation page says what its numbers are: which topics each run's mean is over (and no
best run among runs over different topics), no draws or intervals for fixed qrels, each
measure's direction, and an estimate that lies inside its own interval (posterior or
prediction-powered). Its numbers are the API's (``report``, ``results``, ``rankings``)."""

from __future__ import annotations

import html
import re

from tests.api.evaluations.test_evaluations import evaluate, judgments_and_gold
from tests.api.evaluations.test_evaluations import setup_collection as evaluation_collection
from tests.api.helpers import API
from tests.api.jobs import wait_for
from tests.ui.test_pages import figures, token
from tests.ui.test_result_pages import cell


def element(page: str, element_id: str) -> str:
    """The text of the element with ``element_id`` (tags dropped, entities decoded)."""
    match = re.search(rf'<(\w+)[^>]* id="{element_id}"[^>]*>(.*?)</\1>', page, re.S)
    assert match, f"no element {element_id}"
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", match.group(2))).split())


def rows(page: str, table_id: str) -> list[list[str]]:
    """The body rows of a table, as the text of their cells."""
    body = re.search(r"<tbody>(.*?)</tbody>", cell(page, table_id), re.S)
    assert body
    return [[" ".join(html.unescape(re.sub(r"<[^>]+>", " ", c)).split())
             for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body.group(1), re.S)]


def headers(page: str, table_id: str) -> list[str]:
    head = re.search(r"<thead>(.*?)</thead>", cell(page, table_id), re.S)
    assert head
    return re.findall(r"<th[^>]*>.*?</th>", head.group(1), re.S)


def add_partial_run(client) -> None:
    """A run answering one of the four topics (its gold-relevant documents first: the best
    P@10 of all) and a topic the collection does not have."""
    _, gold = judgments_and_gold()
    relevant = [line.split()[2] for line in gold.splitlines()
                if line.startswith("t0 ") and line.endswith(" 1")]
    others = [f"d{d}" for d in range(30) if f"d{d}" not in relevant]
    lines = [f"t0 Q0 {d} {i + 1} {100 - i} partial" for i, d in enumerate(relevant + others)]
    lines += [f"zz Q0 d{d} {d + 1} {50 - d} partial" for d in range(5)]
    assert client.put(f"{API}/collections/ev/runs/partial",
                      content=("\n".join(lines) + "\n").encode()).status_code == 200


def test_partial_runs_and_gold_qrels(client) -> None:
    evaluation_collection(client)
    add_partial_run(client)
    done = evaluate(client, {"aggregation": "gold", "runs": ["bm25", "dense", "partial"],
                             "measures": ["P@10", "LastRel", "unjudged@10"], "samples": 100})
    api = client.get(f"{API}/evaluations/{done['id']}").json()
    report = api["report"]
    # The API: how many of the qrels' topics each run's mean is over, and none drawn for gold.
    assert report["samples"] == 0 and api["samples"] == 100
    assert report["qrels_topics"] == 4 and report["common_topics"] == 1
    assert report["run_topics"] == {"bm25": 4, "dense": 4, "partial": 1}
    assert report["unknown_topics"] == {"partial": 1}
    p10 = next(r for r in api["rankings"] if r["measure"] == "P@10")
    assert p10["runs"][0] == "partial"  # the API ranks by the means, whatever their topics

    page = client.get(f"/ui/evaluations/{done['id']}").text
    # 1. Per run: topics answered, missed, unknown; a warning; no best run among them.
    table = {r[0]: r for r in rows(page, "scores")}
    assert "1 of 4" in table["partial"][1] and "misses 3" in table["partial"][1]
    assert "1 unknown" in table["partial"][1]
    assert "4 of 4" in table["bm25"][1] and "unknown" not in table["bm25"][1]
    warning = element(page, "topic-warning")
    assert "different topics" in warning and "not comparable" in warning
    assert "partial" in warning
    best = element(page, "best-run")
    full = [r for r in p10["runs"] if r != "partial"]
    assert "partial" not in best and best.startswith(full[0])
    assert "2 runs answering all 4 topics" in best
    assert "trec_eval without -c" in element(page, "averaging")
    # 2. Fixed qrels: no draws claimed, no intervals, no P(a beats b) chart.
    meta = element(page, "evaluation-meta")
    assert "no draws" in meta and "100 draws of the qrels" not in meta
    assert "[" not in cell(page, "scores")
    legend = element(page, "cell-legend")
    assert "Fixed qrels" in legend and "no draws" in legend and "95 %" not in legend
    # ... nor in the collection's list of evaluations (its draws column showed the 100 asked)
    listed = {r[0]: r for r in rows(client.get("/ui/collections/ev").text, "evaluations")}
    assert listed[f"#{done['id']}"][4] == "0"
    figs = figures(page)
    assert [t["name"] for t in figs["intervals"]["data"]] == ["point estimate"]
    assert "wins" not in figs
    # 3. Each measure's direction (and LastRel's unit), and the ranking follows it.
    heads = headers(page, "scores")
    assert "↑" in heads[2] and 'title="higher is better"' in heads[2]
    assert "↓" in heads[3] and "%" in heads[3] and 'title="lower is better"' in heads[3]
    assert "↓" in heads[4] and 'title="lower is better"' in heads[4]
    unjudged = client.get(f"/ui/evaluations/{done['id']}",
                          params={"measure": "unjudged@10"}).text
    means = {r["run"]: r["value"] for r in api["results"] if r["measure"] == "unjudged@10"}
    order = [r[0] for r in rows(unjudged, "scores")]
    assert [means[r] for r in order if r != "partial"] == sorted(
        means[r] for r in order if r != "partial")
    assert "lower is better" in element(unjudged, "scores-title")


def test_draws_are_explained_and_gold_form_draws_nothing(client) -> None:
    aggregation = evaluation_collection(client)
    done = evaluate(client, {"aggregation": aggregation, "runs": ["bm25", "dense"],
                             "measures": ["P@10", "AP"], "samples": 200, "seed": 3})
    api = client.get(f"{API}/evaluations/{done['id']}").json()
    page = client.get(f"/ui/evaluations/{done['id']}").text
    assert "200 draws of the qrels" in element(page, "evaluation-meta")
    assert "topic-warning" not in page  # both runs answer the four topics
    assert element(page, "best-run").startswith(
        next(r for r in api["rankings"] if r["measure"] == "P@10")["runs"][0])
    # 4. The estimate beside the score on the most probable qrels lies in its interval: no
    # paragraph explaining why it would not.
    assert "interval-note" not in page
    legend = element(page, "cell-legend")
    assert "most probable qrels" in legend and "the estimate and its 95 % interval" in legend
    for r in api["results"]:
        assert r["interval_kind"] == "posterior" and r["low"] <= r["estimate"] <= r["high"]
    assert "[" in cell(page, "scores")
    assert figures(page)["intervals"]["data"][0]["name"] == "estimate, 95 % interval (posterior)"
    assert {"wins", "intervals"} <= set(figures(page))

    # The form: draws are ignored for gold (fixed qrels: every draw would be the same).
    csrf = token(client.get("/ui/collections/ev").text)
    r = client.post("/ui/collections/ev/evaluations",
                    data={"csrf_token": csrf, "source": "gold", "samples": "500"},
                    follow_redirects=False)
    assert r.status_code == 303, r.text
    created = client.get(f"{API}/collections/ev/evaluations").json()["data"][-1]
    assert created["aggregation"] == "gold" and created["samples"] == 0
    assert wait_for(client, created["id"], kind="evaluations")["status"] == "succeeded"
