"""Gold and the figures scored against it: a fit records which gold it was scored against, the
API says when that is no longer the collection's gold (re-scoring what can be re-scored
honestly), and the gold's counts add up, on a hand-built collection (SQLite and PostgreSQL)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.helpers import API, create_collection
from tests.api.jobs import wait_for

TEXT = {"content-type": "text/plain"}

# Topic t, documents d0..d7, annotators a, b, c; -2 = could not judge. The majority says
# relevant (grade >= 1) for d0, d2, d4, d7 and not for d1, d3, d5; d6 has no usable judgment.
LABELS = {
    "d0": {"a": 1, "b": 1, "c": 2}, "d1": {"a": 0, "b": 0, "c": 0},
    "d2": {"a": 2, "b": 1, "c": 0}, "d3": {"a": 0, "b": 1, "c": 0},
    "d4": {"a": 1, "b": 2, "c": 2}, "d5": {"a": 0, "b": 0, "c": 1},
    "d6": {"a": -2}, "d7": {"a": 1, "b": -2, "c": 1},
}
# Gold: d0 and d4 come with the judgments, the rest from qrels (u/x: a pair nobody judged).
WITH_JUDGMENTS = {"d0": 2, "d4": -2}
QRELS = "t 0 d1 0\nt 0 d2 1\nt 0 d3 1\nt 0 d6 1\nu 0 x 0\n"
ALL_GOLD = "t 0 d0 2\nt 0 d4 -2\n" + QRELS
# Against the majority: d0, d1, d2 right, d3 wrong; d4 is -2, d6 unlabelled, u/x unjudged.
ACCURACY = 3 / 4
# The gold replaced: d0 is now not relevant (the majority is wrong there), d5 joins.
NEW_GOLD = "t 0 d0 0\nt 0 d1 0\nt 0 d5 0\n"
NEW_ACCURACY = 2 / 3


def build(client) -> None:
    create_collection(client, name="g", labels=[0, 1, 2], relevant_from=1, ignore=[-2])
    judgments = [{"topic": "t", "doc": d, "annotator": w, "label": y,
                  **({"gold": WITH_JUDGMENTS[d]} if d in WITH_JUDGMENTS else {})}
                 for d, by in LABELS.items() for w, y in by.items()]
    added = client.post(f"{API}/collections/g/judgments", json={"judgments": judgments})
    assert added.status_code == 201, added.text
    # two tasks' gold set, one of them "could not judge" (d4's -2)
    assert (added.json()["gold_labels"], added.json()["gold_could_not_judge"]) == (2, 1)
    gold = client.put(f"{API}/collections/g/gold?mode=merge", content=QRELS, headers=TEXT)
    assert gold.status_code == 200, gold.text
    assert gold.json() == {"gold_labels": 5, "gold_could_not_judge": 0, "new_tasks": 1,
                           "cleared": 0, "mode": "merge"}


def fit(client, method: str, graded: bool = False, **params: Any) -> dict[str, Any]:
    created = client.post(f"{API}/collections/g/aggregations",
                          json={"method": method, "params": params, "graded": graded})
    assert created.status_code == 202, created.text
    done = wait_for(client, created.json()["id"])
    assert done["status"] == "succeeded", done["error"]
    return done


def put_gold(client, qrels: str) -> None:
    response = client.put(f"{API}/collections/g/gold", content=qrels, headers=TEXT)
    assert response.status_code == 200, response.text


def get(client, aggregation_id: int) -> dict[str, Any]:
    response = client.get(f"{API}/aggregations/{aggregation_id}")
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def comparison(client) -> dict[int, dict[str, Any]]:
    rows = client.get(f"{API}/collections/g/aggregations/comparison").json()["data"]
    return {r["aggregation_id"]: {**r, "rank": i} for i, r in enumerate(rows)}


def test_gold_breakdown_adds_up(client) -> None:
    build(client)
    stats = client.get(f"{API}/collections/g/stats").json()
    gold = stats["gold"]
    assert gold == {
        "total": 7, "labelled": 6, "could_not_judge": 1, "scorable": 4,
        "left_out": {"not_judged": 1, "only_could_not_judge": 1},  # u/x; d6
        "without_gold": 2,  # d5, d7
        "by_value": {"-2": 1, "0": 2, "1": 3, "2": 1},
    }
    counts = stats["counts"]
    assert gold["labelled"] == counts["tasks_with_gold"]
    assert gold["could_not_judge"] == counts["tasks_with_unjudgeable_gold"]
    assert gold["total"] == gold["labelled"] + gold["could_not_judge"]
    assert gold["labelled"] == gold["scorable"] + sum(gold["left_out"].values())
    assert gold["total"] + gold["without_gold"] == counts["tasks"] == 9

    done = fit(client, "mv")
    assert done["evaluation"]["n_gold"] == gold["scorable"]
    assert done["evaluation"]["accuracy"] == pytest.approx(ACCURACY)
    record = done["gold"]
    assert {k: record[k] for k in ("labelled", "scored", "left_out", "could_not_judge")} == {
        "labelled": 6, "scored": 4, "left_out": {"not_judged": 1, "only_could_not_judge": 1},
        "could_not_judge": 1}
    assert record["labelled"] == record["scored"] + sum(record["left_out"].values())
    assert "gold" not in done["info"]  # shown once, as `gold`


def test_a_fit_scored_against_an_earlier_gold_is_flagged(client) -> None:
    build(client)
    mv = fit(client, "mv")
    clamped = fit(client, "ds", use_gold=True)  # fewer than 5 gold tasks: scored in-sample
    for done in (mv, clamped):
        assert done["gold_current"] is True and done["gold"]["current"] is True
        assert done["gold"]["current_evaluation"] is None
    assert (mv["gold"]["rescorable"], clamped["gold"]["rescorable"]) == (True, False)
    digest = mv["gold"]["digest"]
    rows = comparison(client)
    assert [rows[i]["gold_current"] for i in (mv["id"], clamped["id"])] == [True, True]
    assert not any(r["stale"] or r["rescored"] for r in rows.values())

    put_gold(client, NEW_GOLD)
    now = get(client, mv["id"])
    assert now["gold_current"] is False and now["gold"]["current"] is False
    assert now["evaluation"] == mv["evaluation"]  # the fit-time figures, as they were
    current = now["gold"]["current_evaluation"]
    assert current["n_gold"] == 3 and current["accuracy"] == pytest.approx(NEW_ACCURACY)
    assert "changed" in now["gold"]["note"]
    was_clamped = get(client, clamped["id"])
    assert was_clamped["gold_current"] is False
    assert was_clamped["gold"]["rescorable"] is False
    assert was_clamped["gold"]["current_evaluation"] is None
    assert "use_gold" in was_clamped["gold"]["note"]
    listing = client.get(f"{API}/collections/g/aggregations").json()["data"]
    assert [a["gold_current"] for a in listing] == [False, False]

    rows = comparison(client)
    row = rows[mv["id"]]
    assert (row["gold_current"], row["rescored"], row["stale"]) == (False, True, False)
    assert row["n_gold"] == 3 and row["accuracy"] == pytest.approx(NEW_ACCURACY)
    row = rows[clamped["id"]]
    assert (row["gold_current"], row["rescored"], row["stale"]) == (False, False, True)
    assert row["n_gold"] == clamped["evaluation"]["n_gold"]  # its fit-time figures
    assert rows[mv["id"]]["rank"] < row["rank"]  # stale rows after the current ones

    # The same gold again: current again. Gold for a pair neither fit labelled changes nothing.
    put_gold(client, ALL_GOLD)
    assert get(client, mv["id"])["gold"]["digest"] == digest
    assert [get(client, i)["gold_current"] for i in (mv["id"], clamped["id"])] == [True, True]
    merged = client.put(f"{API}/collections/g/gold?mode=merge", content="v 0 y 1\n",
                        headers=TEXT)
    assert merged.status_code == 200, merged.text
    assert [get(client, i)["gold_current"] for i in (mv["id"], clamped["id"])] == [True, True]


def test_fits_stored_before_gold_was_recorded(client, settings) -> None:
    """No record: a fit that never used the gold is checked by re-scoring it (binary and graded:
    the re-scored evaluation equals the stored one); one that clamped the gold cannot be checked
    (null, and stale in the comparison)."""
    from sqlalchemy import select

    from app.aggregations.tables import Aggregation
    from app.core.db import get_sessionmaker

    build(client)
    mv = fit(client, "mv")
    clamped = fit(client, "ds", use_gold=True)
    graded = fit(client, "ds", graded=True)
    assert graded["evaluation"]["kappa"] is not None
    with get_sessionmaker(settings.database_url)() as session:
        for row in session.scalars(select(Aggregation)):
            row.info = {k: v for k, v in row.info.items() if k != "gold"}
        session.commit()

    before = get(client, mv["id"])
    assert before["gold_current"] is True and before["gold"]["labelled"] is None
    assert get(client, graded["id"])["gold_current"] is True
    assert before["gold"]["scored"] == 4 and before["gold"]["current_evaluation"] is None
    unknown = get(client, clamped["id"])
    assert unknown["gold_current"] is None and unknown["gold"]["rescorable"] is False
    assert comparison(client)[clamped["id"]]["stale"] is True

    put_gold(client, NEW_GOLD)
    after = get(client, mv["id"])
    assert after["gold_current"] is False
    assert after["gold"]["current_evaluation"]["accuracy"] == pytest.approx(NEW_ACCURACY)
    assert get(client, clamped["id"])["gold_current"] is None
    graded_after = get(client, graded["id"])["gold"]
    assert graded_after["current"] is False
    assert graded_after["current_evaluation"]["n_gold"] == 3  # d0, d1, d5: grades now
    assert "kappa" in graded_after["current_evaluation"]
