"""The real TREC RF10 crowd file, ingested end to end through HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

from tests.api.helpers import API, TSV, counts, create_collection


def test_rf10_file_ingests_with_exact_counts(client, rf10_bytes) -> None:
    create_collection(client)
    response = client.post(f"{API}/collections/rf10/judgments/file?filename=trec-rf10-data.txt",
                           content=rf10_bytes, headers=TSV)
    assert response.status_code == 201, response.text
    report = response.json()
    assert report["judgments"] == 98_453
    assert report["new_tasks"] == 20_232
    assert report["new_annotators"] == 766
    assert report["new_topics"] == 100
    # one gold value per task (26,179 rows carry one; no task has two): 4,460 tasks, of which
    # 1,183 are -2 "broken link"
    assert (report["gold_labels"], report["gold_could_not_judge"]) == (4_460, 1_183)

    assert counts(client) == {
        "topics": 100,
        "documents": 19_902,
        "tasks": 20_232,
        "annotators": 766,
        "judgments": 98_453,
        "tasks_with_gold": 3_277,  # gold >= 0 (README: 1501 + 863 + 913)
        "tasks_with_unjudgeable_gold": 1_183,  # gold -2, broken link
    }

    stats = client.get(f"{API}/collections/rf10/stats").json()
    assert stats["label_distribution"] == {"-2": 6670, "0": 30819, "1": 36036, "2": 24928}
    # 4,460 -> 3,277 labelled (1,183 broken link) -> 3,275 a fit can score: two labelled gold
    # tasks (20686/clueweb09-en0005-34-36651, 20690/clueweb09-en0010-52-18627) were judged
    # only -2
    assert stats["gold"] == {
        "total": 4_460, "labelled": 3_277, "could_not_judge": 1_183, "scorable": 3_275,
        "left_out": {"not_judged": 0, "only_could_not_judge": 2}, "without_gold": 15_772,
        "by_value": {"-2": 1_183, "0": 1_501, "1": 863, "2": 913},
    }
    per_task = stats["judgments_per_task"]
    assert sum(per_task["histogram"].values()) == 20_232
    assert sum(int(k) * v for k, v in per_task["histogram"].items()) == 98_453
    per_annotator = stats["judgments_per_annotator"]
    assert sum(per_annotator["histogram"].values()) == 766
    assert per_annotator["max"] == max(int(k) for k in per_annotator["histogram"])


def test_rf10_multipart_upload_and_reading_back(client, rf10_bytes) -> None:
    create_collection(client)
    response = client.post(
        f"{API}/collections/rf10/judgments/file",
        files={"file": ("trec-rf10-data.txt", rf10_bytes, "text/tab-separated-values")},
    )
    assert response.status_code == 201, response.text

    page = client.get(f"{API}/collections/rf10/judgments",
                      params={"annotator": "w1", "limit": 3}).json()
    assert page["count"] == sum(1 for line in rf10_bytes.decode().splitlines()[1:]
                                if line.split("\t")[1] == "w1")
    assert [j["doc"] for j in page["data"]] == [
        "clueweb09-en0000-66-24091", "clueweb09-en0001-31-15410", "clueweb09-en0000-05-22942"]
    assert all(j["annotator"] == "w1" and j["topic"] == "20002" for j in page["data"])

    second = client.get(f"{API}/collections/rf10/judgments",
                        params={"annotator": "w1", "limit": 3, "offset": 3}).json()
    assert {j["id"] for j in second["data"]}.isdisjoint({j["id"] for j in page["data"]})

    by_topic = client.get(f"{API}/collections/rf10/judgments", params={"topic": "20002"}).json()
    expected = sum(1 for line in rf10_bytes.decode().splitlines()[1:]
                   if line.split("\t")[0] == "20002")
    assert by_topic["count"] == expected


def test_repeated_upload_appends_and_keeps_everything(client, rf10_bytes) -> None:
    create_collection(client)
    head = b"\n".join(rf10_bytes.splitlines()[:1001]) + b"\n"
    for _ in range(2):
        assert client.post(f"{API}/collections/rf10/judgments/file", content=head,
                           headers=TSV).status_code == 201
    c = counts(client)
    assert c["judgments"] == 2000  # append-only: repeats are kept
    assert c["annotators"] == len({line.split(b"\t")[1] for line in head.splitlines()[1:]})
