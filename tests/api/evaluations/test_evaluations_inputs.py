"""Evaluations through HTTP: requests that used to be accepted and then failed or gave wrong
numbers (a cut-off beyond 64 bits, a source combined with itself), and the trec_eval download of
a run without a score."""

from __future__ import annotations

from tests.api.evaluations.test_evaluations import evaluate, setup_collection
from tests.api.helpers import API


def evaluation_count(client) -> int:
    listed = client.get(f"{API}/collections/ev/evaluations")
    assert listed.status_code == 200
    return int(listed.json()["count"])


def test_a_cut_off_beyond_64_bits_is_an_unknown_measure(client) -> None:
    aggregation = setup_collection(client)
    url = f"{API}/collections/ev/evaluations"
    # Accepted before, the job then failed (OverflowError); 5,000 digits: a 500.
    for name in ("P@99999999999999999999", "PRES@" + "9" * 5000):
        response = client.post(url, json={"aggregation": aggregation, "measures": [name],
                                          "samples": 5})
        assert response.status_code == 422, response.text
        assert response.json()["code"] == "unknown_measure"
        assert len(response.text) < 2000  # the name shown cut, not echoed whole
    assert "(5,005 characters)" in response.json()["detail"]
    assert evaluation_count(client) == 0


def test_a_source_combined_with_itself_is_refused(client) -> None:
    aggregation = setup_collection(client)
    # A union treats its sources as independent: a fit given twice counted twice
    # (P(relevant) 0.6 became 0.84).
    for mode in ("union", "intersection"):
        for refs in ([aggregation, aggregation], ["gold", "gold"],
                     [aggregation, "gold", aggregation]):
            response = client.post(f"{API}/collections/ev/evaluations",
                                   json={"aggregation": {mode: refs}, "samples": 5})
            assert response.status_code == 422, response.text
            assert response.json()["code"] == "invalid_source"
        qrels = client.get(f"{API}/collections/ev/qrels/{mode}",
                           params={"sources": f"{aggregation},{aggregation}"})
        assert qrels.status_code == 422 and qrels.json()["code"] == "invalid_source"
    assert evaluation_count(client) == 0
    ok = client.get(f"{API}/collections/ev/qrels/union", params={"sources": f"{aggregation},gold"})
    assert ok.status_code == 200


def test_trec_download_of_a_run_without_a_score(client) -> None:
    aggregation = setup_collection(client)
    # A run answering only a topic the collection does not have: its means are null.
    text = "zz Q0 d1 1 3.0 only\nzz Q0 d2 2 2.0 only\n"
    assert client.put(f"{API}/collections/ev/runs/only", content=text.encode()).status_code \
        == 200
    done = evaluate(client, {"aggregation": aggregation, "runs": ["only", "bm25"],
                             "measures": ["P@10", "AP"], "samples": 5})
    assert {r["value"] for r in done["results"] if r["run"] == "only"} == {None}
    trec = client.get(f"{API}/evaluations/{done['id']}/measures", params={"format": "trec"})
    assert trec.status_code == 200
    lines = trec.text.splitlines()
    assert lines and all(len(line.split()) == 4 for line in lines), \
        [line for line in lines if len(line.split()) != 4]
    assert not any(line.startswith("only\t") for line in lines)
    for line in lines:
        float(line.split()[3])


def test_the_evaluations_are_listed_a_page_at_a_time(client) -> None:
    """As the collection's aggregations: ``limit`` / ``offset``, ``count`` all of them (the
    listing ignored both and gave everything)."""
    aggregation = setup_collection(client)
    ids = [evaluate(client, {"aggregation": aggregation, "measures": ["P@10"], "runs": ["bm25"],
                             "samples": 2, "seed": seed})["id"] for seed in range(3)]
    url = f"{API}/collections/ev/evaluations"
    page = client.get(url, params={"limit": 2}).json()
    assert page["count"] == 3 and [e["id"] for e in page["data"]] == ids[:2]
    page = client.get(url, params={"limit": 2, "offset": 2}).json()
    assert page["count"] == 3 and [e["id"] for e in page["data"]] == ids[2:]
    assert [e["id"] for e in client.get(url).json()["data"]] == ids
    for bad in ({"limit": 0}, {"offset": -1}):
        response = client.get(url, params=bad)
        assert response.status_code == 422 and response.json()["code"] == "invalid_body"
