from __future__ import annotations

from tests.api.helpers import API, counts, create_collection


def test_json_bulk_ingest_and_gold(client) -> None:
    create_collection(client)
    judgments = [
        {"topic": 20002, "doc": "d1", "annotator": "w1", "label": 0},
        {"topic": "20002", "doc": "d1", "annotator": "w2", "label": 2, "gold": 1},
        {"topic": "20002", "doc": "d2", "annotator": "w1", "label": -2, "gold": -2},
        {"topic": "20003", "doc": "d1", "annotator": "w1", "label": 1, "gold": -1},
    ]
    response = client.post(f"{API}/collections/rf10/judgments", json={"judgments": judgments})
    assert response.status_code == 201, response.text
    assert response.json() == {
        "batch_id": response.json()["batch_id"], "judgments": 4, "new_topics": 2,
        "new_documents": 2, "new_tasks": 3, "new_annotators": 2, "gold_labels": 2,
        "gold_could_not_judge": 1,  # d2's gold -2; d1's gold 1 is the other
        "ignored_columns": [],
    }
    assert counts(client) == {
        "topics": 2, "documents": 2, "tasks": 3, "annotators": 2, "judgments": 4,
        "tasks_with_gold": 1, "tasks_with_unjudgeable_gold": 1,
    }
    # The second request sees the same ids: nothing new but the judgments.
    again = client.post(f"{API}/collections/rf10/judgments", json={"judgments": judgments[:2]})
    assert again.json()["new_tasks"] == 0 and again.json()["new_annotators"] == 0
    assert counts(client)["judgments"] == 6


def test_csv_with_crowdkit_columns_and_no_topic(client) -> None:
    create_collection(client, name="ck", labels=[0, 1], relevant_from=1, ignore=[])
    text = "task,worker,label\nt1,w1,1\nt1,w2,0\nt2,w1,1\n"
    response = client.post(f"{API}/collections/ck/judgments/file", content=text.encode(),
                           headers={"content-type": "text/csv"})
    assert response.status_code == 201, response.text
    c = counts(client, "ck")
    assert (c["topics"], c["tasks"], c["annotators"], c["judgments"]) == (1, 2, 2, 3)


def test_gold_upload_replace_and_merge(client) -> None:
    create_collection(client)
    client.post(f"{API}/collections/rf10/judgments", json={"judgments": [
        {"topic": "t", "doc": "d1", "annotator": "a", "label": 1},
        {"topic": "t", "doc": "d2", "annotator": "a", "label": 0},
    ]})
    qrels = "t 0 d1 2\nt 0 d3 0\nu 0 d1 -2\n"
    response = client.put(f"{API}/collections/rf10/gold", content=qrels.encode(),
                          headers={"content-type": "text/plain"})
    assert response.status_code == 200, response.text
    assert response.json() == {"gold_labels": 3, "gold_could_not_judge": 1,
                               "new_tasks": 2, "cleared": 0, "mode": "replace"}
    c = counts(client)
    assert (c["tasks"], c["tasks_with_gold"], c["tasks_with_unjudgeable_gold"]) == (4, 2, 1)

    merged = client.put(f"{API}/collections/rf10/gold?mode=merge", content=b"t 0 d2 1\n",
                        headers={"content-type": "text/plain"})
    assert merged.status_code == 200
    assert merged.json() == {"gold_labels": 1, "gold_could_not_judge": 0,
                             "new_tasks": 0, "cleared": 0, "mode": "merge"}
    assert counts(client)["tasks_with_gold"] == 3

    replaced = client.put(f"{API}/collections/rf10/gold", content=b"t 0 d2 1\n",
                          headers={"content-type": "text/plain"})
    assert replaced.status_code == 200
    # d2 keeps a gold label; t/d1, t/d3 and u/d1 lose theirs, and the reply says so
    assert replaced.json() == {"gold_labels": 1, "gold_could_not_judge": 0,
                               "new_tasks": 0, "cleared": 3, "mode": "replace"}
    c = counts(client)
    assert (c["tasks_with_gold"], c["tasks_with_unjudgeable_gold"]) == (1, 0)
