"""The agreement matrix of a collection's fits, pinned on hand-built results.

Fits are written straight into the results tables with labels chosen by hand, so every cell
below is checked against a count done by hand: two binary fits (equal labels), two graded fits
(equal grades, not relevance), a graded and a binary fit (relevance: grade >= relevant_from
against the binary label), fits over different tasks (common tasks only) and a pair with no
task in common (None). The endpoint, the comparison page and the service (without its cache)
give the same numbers; a fit that succeeds later enters the matrix at once.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import numpy as np
import pytest
from sqlalchemy import select

from app.aggregations import agreement
from app.aggregations.tables import Aggregation, AggregationTask
from app.collections.tables import Collection
from app.core.db import get_sessionmaker
from app.judgments.tables import Document, Task
from tests.api.helpers import API, create_collection

DOCS = ["d1", "d2", "d3", "d4", "d5"]
# name: (graded, status, labels by doc; a doc left out is a task the fit has no result for)
FITS = {
    "A": (False, "succeeded", {"d1": 1, "d2": 0, "d3": 1, "d4": 1, "d5": 0}),
    "B": (False, "succeeded", {"d1": 1, "d2": 1, "d3": 1, "d4": 0, "d5": 0}),
    "C": (True, "succeeded", {"d1": 2, "d2": 0, "d3": 1, "d4": 2, "d5": 1}),
    "D": (True, "succeeded", {"d1": 1, "d2": 0, "d3": 1}),
    "E": (False, "succeeded", {"d4": 1, "d5": 0}),
    "failed": (False, "failed", {"d1": 0, "d2": 0, "d3": 0, "d4": 0, "d5": 0}),
}
# by hand, fits A..E in order (the failed fit is not part of it)
AGREEMENT = [
    # A vs C: relevance of C is 1 0 1 1 1 (labels alike on 2 of 5 only)
    [1.0, 3 / 5, 4 / 5, 3 / 3, 2 / 2],
    [3 / 5, 1.0, 2 / 5, 2 / 3, 1 / 2],
    # C vs D: grades alike on d2, d3 (relevance would be alike on all 3)
    [4 / 5, 2 / 5, 1.0, 2 / 3, 1 / 2],
    [3 / 3, 2 / 3, 2 / 3, 1.0, None],
    [2 / 2, 1 / 2, 1 / 2, None, 1.0],
]
COMMON = [[5, 5, 5, 3, 2], [5, 5, 5, 3, 2], [5, 5, 5, 3, 2], [3, 3, 3, 3, 0],
          [2, 2, 2, 0, 2]]


def add_fit(url: str, collection_id: int, graded: bool, status: str,
            labels: dict[str, int]) -> int:
    with get_sessionmaker(url)() as session:
        aggregation = Aggregation(
            collection_id=collection_id, method="mv", params={}, graded=graded, status=status,
            progress=1.0, watermark=1, finished_at=datetime.now(UTC),
            classes=[0, 1, 2] if graded else [0, 1])
        session.add(aggregation)
        session.flush()
        tasks = dict(session.execute(
            select(Document.external_id, Task.id).join(Task, Task.document_id == Document.id)
            .where(Task.collection_id == collection_id)).all())
        for doc, label in labels.items():
            session.add(AggregationTask(
                aggregation_id=aggregation.id, task_id=tasks[doc], label=label,
                p_relevant=float(label >= 1), proba=[], uncertainty=0.0))
        session.commit()
        return aggregation.id


@pytest.fixture
def fits(client, database_url) -> dict[str, int]:
    collection = create_collection(client, name="agree", labels=[0, 1, 2], relevant_from=1,
                                   ignore=[])
    response = client.post(f"{API}/collections/agree/judgments", json={"judgments": [
        {"topic": "t", "doc": doc, "annotator": "w", "label": 1} for doc in DOCS]})
    assert response.status_code == 201, response.text
    return {name: add_fit(database_url, collection["id"], *spec) for name, spec in FITS.items()}


def test_agreement_pinned_on_hand_built_fits(client, database_url, fits) -> None:
    got = client.get(f"{API}/collections/agree/aggregations/agreement")
    assert got.status_code == 200, got.text
    ids = [fits[name] for name in "ABCDE"]
    assert got.json() == {"aggregation_ids": ids, "agreement": AGREEMENT, "common_tasks": COMMON}
    assert client.get(f"{API}/collections/agree/aggregations/agreement").json() == got.json()

    with get_sessionmaker(database_url)() as session:  # the service itself, no cache
        collection = session.scalar(select(Collection).where(Collection.name == "agree"))
        assert agreement.agreement_matrix(session, collection=collection) == got.json()

    page = client.get("/ui/collections/agree/comparison")
    assert page.status_code == 200
    match = re.search(r'<script type="application/json" id="figures">(.*?)</script>', page.text,
                      re.S)
    assert match
    heatmap = json.loads(match.group(1).replace("<\\/", "</"))["agreement"]["data"][0]
    assert heatmap["z"] == AGREEMENT
    assert heatmap["y"] == [f"#{i} mv" for i in ids]
    table = page.text[page.text.index('<table class="data" id="agreement">'):]
    assert table.count("<tr>") == 1 + len(ids) and "0.667" in table and "0.400" in table


def test_a_fit_that_succeeds_later_enters_the_matrix(client, database_url, fits) -> None:
    url = f"{API}/collections/agree/aggregations/agreement"
    assert len(client.get(url).json()["aggregation_ids"]) == 5  # the process keeps this one
    page = client.get("/ui/collections/agree/comparison").text
    collection_id = client.get(f"{API}/collections/agree").json()["id"]
    late = add_fit(database_url, collection_id, True, "succeeded",
                   {"d1": 2, "d2": 2, "d3": 0, "d4": 0, "d5": 1})
    got = client.get(url).json()
    assert got["aggregation_ids"] == [fits[name] for name in "ABCDE"] + [late]
    # its relevance is 1 1 0 0 1: against A (1 0 1 1 0) alike on d1 only, against E (d4 1,
    # d5 0) on neither; its grades against C's (2 0 1 2 1): alike on d1 and d5
    assert got["agreement"][0][5] == got["agreement"][5][0] == 1 / 5
    assert got["agreement"][4][5] == 0.0 and got["common_tasks"][4][5] == 2
    assert got["agreement"][2][5] == 2 / 5 and got["common_tasks"][3][5] == 3
    assert [row[:5] for row in got["agreement"][:5]] == AGREEMENT
    assert f"#{late} mv" in client.get("/ui/collections/agree/comparison").text
    assert f"#{late} mv" not in page


def test_no_succeeded_fit(client) -> None:
    create_collection(client, name="empty", labels=[0, 1], relevant_from=1, ignore=[])
    got = client.get(f"{API}/collections/empty/aggregations/agreement").json()
    assert got == {"aggregation_ids": [], "agreement": [], "common_tasks": []}
    assert client.get("/ui/collections/empty/comparison").status_code == 200


def test_agreement_counts_match_a_count_task_by_task() -> None:
    """The vectorised counts against the rule applied pair by pair, task by task, on random
    fits over random subsets of tasks with binary and graded labels."""
    rng = np.random.default_rng(5)
    for _ in range(20):
        n_fits = int(rng.integers(1, 7))
        graded = rng.random(n_fits) < 0.5
        labels: list[dict[int, int]] = []
        for f in range(n_fits):
            tasks = rng.choice(40, size=int(rng.integers(0, 40)), replace=False) + 1000
            scale = 3 if graded[f] else 2
            labels.append({int(t): int(rng.integers(0, scale)) for t in tasks})
        fit = np.array([f for f in range(n_fits) for _ in labels[f]], dtype=np.int64)
        task = np.array([t for f in range(n_fits) for t in labels[f]], dtype=np.int64)
        label = np.array([v for f in range(n_fits) for v in labels[f].values()], dtype=np.int64)
        common, agree = agreement.agreement_counts(fit, task, label, graded=graded,
                                                 relevant_from=1)
        for x in range(n_fits):
            for y in range(n_fits):
                shared = labels[x].keys() & labels[y].keys()
                mixed = graded[x] != graded[y]
                assert common[x, y] == len(shared)
                assert agree[x, y] == sum(
                    view(labels[x][t], graded[x], mixed) == view(labels[y][t], graded[y], mixed)
                    for t in shared)


def view(label: int, graded: bool, mixed: bool) -> int:
    """What a fit's label says in a pair: a graded fit beside a binary one says relevance."""
    return int(label >= 1) if graded and mixed else label
