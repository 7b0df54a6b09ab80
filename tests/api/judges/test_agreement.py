"""GET /collections/{c}/judge-agreement: every figure checked against scikit-learn,
Krippendorff's package, SciPy or a hand computation on a collection built by hand."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score

from tests.api.helpers import API, create_collection

DOCS = ["d1", "d2", "d3", "d4", "d5", "d6"]
GOLD = [3, 0, 2, 1, 0, 0]
JUDGES = {"exact": GOLD, "lenient": [3, 1, 3, 2, 1, 0]}
WORKER = [2, 0, 2]  # d1..d3 only: fewer tasks than min_tasks unless lowered
# P@2 (relevant from 1) per run on gold and on the lenient judge, by hand
RUNS = {"r1": ["d1", "d2"], "r2": ["d3", "d4"], "r3": ["d5", "d6"], "r4": ["d2", "d5"]}
P2_GOLD = [0.5, 1.0, 0.0, 0.0]
P2_LENIENT = [1.0, 1.0, 0.5, 1.0]


def qrels(grades: list[int]) -> bytes:
    return "".join(f"t 0 {d} {g}\n" for d, g in zip(DOCS, grades, strict=True)).encode()


@pytest.fixture
def judged(client):  # type: ignore[no-untyped-def]
    create_collection(client, name="j", labels=[0, 1, 2, 3], relevant_from=1, ignore=[-2])
    for name, grades in JUDGES.items():
        r = client.put(f"{API}/collections/j/judges/{name}", content=qrels(grades))
        assert r.status_code == 200, r.text
    r = client.post(f"{API}/collections/j/judgments", json={"judgments": [
        {"topic": "t", "doc": d, "annotator": "w1", "label": g}
        for d, g in zip(DOCS, WORKER, strict=False)]})
    assert r.status_code == 201, r.text
    assert client.put(f"{API}/collections/j/gold", content=qrels(GOLD)).status_code == 200
    return client


def test_each_judge_against_gold(judged) -> None:
    body = judged.get(f"{API}/collections/j/judge-agreement").json()
    rows = {r["name"]: r for r in body["raters"]}
    assert list(rows) == ["exact", "lenient"]  # best first; w1 has 3 tasks < 20
    lenient = rows["lenient"]["vs_gold"]
    assert lenient["n"] == 6
    assert lenient["exact"] == pytest.approx(2 / 6)
    assert lenient["kappa"] == pytest.approx(cohen_kappa_score(
        JUDGES["lenient"], GOLD, labels=[0, 1, 2, 3]))
    assert lenient["quadratic_kappa"] == pytest.approx(cohen_kappa_score(
        JUDGES["lenient"], GOLD, labels=[0, 1, 2, 3], weights="quadratic"))
    assert lenient["leniency"] == pytest.approx((10 - 6) / 6)
    # confusion: rows the judge's grade, columns gold's
    assert lenient["confusion"] == [[1, 0, 0, 0], [2, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 1]]
    assert rows["exact"]["vs_gold"]["quadratic_kappa"] == 1.0
    assert rows["exact"]["kind"] == "llm" and rows["exact"]["judge"] is True
    assert body["pairwise"]["names"] == ["exact", "lenient"]
    assert body["pairwise"]["exact"][0][1] == pytest.approx(2 / 6)
    # α over every annotator (the worker too), against the package's reliability-matrix input
    grid = np.array([GOLD, JUDGES["lenient"], WORKER + [np.nan] * 3], dtype=float)
    assert body["krippendorff_alpha"] == pytest.approx(krippendorff.alpha(
        reliability_data=grid, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3]))
    assert body["rankings"] is None  # no runs


def test_workers_with_enough_tasks_are_listed(judged) -> None:
    body = judged.get(f"{API}/collections/j/judge-agreement", params={"min_tasks": 3}).json()
    worker = {r["name"]: r for r in body["raters"]}["w1"]
    assert (worker["kind"], worker["judge"], worker["tasks"]) == ("crowd", False, 3)
    assert worker["vs_gold"]["exact"] == pytest.approx(2 / 3)
    assert worker["vs_gold"]["leniency"] == pytest.approx(4 / 3 - 5 / 3)


def test_run_rankings_on_each_judges_qrels(judged) -> None:
    for name, docs in RUNS.items():
        run = "".join(f"t Q0 {d} {i + 1} {10 - i} {name}\n" for i, d in enumerate(docs))
        assert judged.put(f"{API}/collections/j/runs/{name}", content=run).status_code == 200
    body = judged.get(f"{API}/collections/j/judge-agreement",
                      params={"measure": "P@2"}).json()["rankings"]
    assert body["measure"] == "P@2" and body["runs"] == list(RUNS)
    assert body["scores"]["gold"] == pytest.approx(P2_GOLD)
    assert body["scores"]["lenient"] == pytest.approx(P2_LENIENT)
    assert body["tau"]["exact"]["gold"]["tau"] == pytest.approx(1.0)
    assert body["tau"]["lenient"]["gold"]["tau"] == pytest.approx(
        kendalltau(P2_LENIENT, P2_GOLD).statistic)
    bad = judged.get(f"{API}/collections/j/judge-agreement", params={"measure": "P@x"})
    assert bad.status_code == 422 and bad.json()["code"] == "unknown_measure"


def test_against_an_aggregate(judged) -> None:
    from tests.api.jobs import wait_for

    fit = judged.post(f"{API}/collections/j/aggregations",
                      json={"method": "mv", "graded": True}).json()
    assert wait_for(judged, fit["id"])["status"] == "succeeded"
    labels = {r["doc"]: r["label"] for r in judged.get(
        f"{API}/aggregations/{fit['id']}/qrels", params={"format": "json"}).json()["data"]}
    body = judged.get(f"{API}/collections/j/judge-agreement",
                      params={"aggregation": fit["id"]}).json()
    assert body["aggregation_id"] == fit["id"]
    lenient = {r["name"]: r for r in body["raters"]}["lenient"]["vs_aggregate"]
    fitted = [labels[d] for d in DOCS]
    assert lenient["exact"] == pytest.approx(np.mean(np.array(JUDGES["lenient"]) ==
                                                     np.array(fitted)))
    assert lenient["quadratic_kappa"] == pytest.approx(cohen_kappa_score(
        JUDGES["lenient"], fitted, labels=[0, 1, 2, 3], weights="quadratic"))
    missing = judged.get(f"{API}/collections/j/judge-agreement",
                         params={"aggregation": 999})
    assert missing.status_code == 404 and missing.json()["code"] == "aggregation_not_found"


def test_the_dashboard_page_shows_the_same_figures(judged) -> None:
    for name, docs in RUNS.items():
        run = "".join(f"t Q0 {d} {i + 1} {10 - i} {name}\n" for i, d in enumerate(docs))
        assert judged.put(f"{API}/collections/j/runs/{name}", content=run).status_code == 200
    body = judged.get(f"{API}/collections/j/judge-agreement").json()
    page = judged.get("/ui/collections/j/judges")
    assert page.status_code == 200, page.text
    assert f'id="alpha">{body["krippendorff_alpha"]:.3f}' in page.text
    assert 'data-figure="pairwise"' in page.text and '"leaderboard"' in page.text
    assert 'id="rankings"' in page.text and "τ top 10 vs gold" in page.text
    assert judged.get("/ui/collections/j/judges", params={"aggregation": 999}).status_code == 404
