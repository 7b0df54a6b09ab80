"""A judgment file read in chunks (``judgment_chunks``; on PostgreSQL stored through a staging
table, ``app.judgments.staged``): stored as the same file in one piece, refused whole when any
chunk is bad, and retried once with an Idempotency-Key. ``CHUNK_ROWS`` is made tiny, so a small
file spans many chunks."""

from __future__ import annotations

import pytest

from app.auth.idempotency import REPLAYED_HEADER
from app.formats import judgments_file
from tests.api.helpers import API, EMPTY_COUNTS, TSV, counts, create_collection

CSV = {"content-type": "text/csv"}

ROWS = [("401", f"d{i % 7}", f"w{i % 4}", str(i % 3)) for i in range(23)]
GOLD = {"d1": "1", "d3": "-2"}  # the gold column: one task's label, one "could not judge"


def tsv(rows=ROWS, *, gold: bool = False, blank_every: int = 0, sep: str = "\t") -> bytes:
    header = ["topic", "doc", "annotator", "label"] + (["gold"] if gold else [])
    lines = [sep.join(header)]
    for i, row in enumerate(rows):
        if blank_every and i % blank_every == 0:
            lines.append("")
        lines.append(sep.join([*row, GOLD.get(row[1], "-1")] if gold else row))
    return ("\r\n".join(lines) + "\r\n").encode()


def stored(client, name: str) -> list[tuple]:
    body = client.get(f"{API}/collections/{name}/judgments?limit=1000").json()
    return [(j["topic"], j["doc"], j["annotator"], j["label"]) for j in body["data"]]


def upload(client, name: str, content: bytes, headers=TSV):
    return client.post(f"{API}/collections/{name}/judgments/file", content=content,
                       headers=headers)


@pytest.mark.parametrize("sep", ["\t", ","])
def test_a_file_in_chunks_is_stored_as_in_one_piece(client, monkeypatch, sep) -> None:
    content = tsv(gold=True, blank_every=5, sep=sep)
    headers = TSV if sep == "\t" else CSV
    create_collection(client, name="whole")
    whole = upload(client, "whole", content, headers)
    assert whole.status_code == 201, whole.text
    monkeypatch.setattr(judgments_file, "CHUNK_ROWS", 4)
    create_collection(client, name="chunks")
    chunked = upload(client, "chunks", content, headers)
    assert chunked.status_code == 201, chunked.text
    report = {k: v for k, v in chunked.json().items() if k != "batch_id"}
    assert report == {k: v for k, v in whole.json().items() if k != "batch_id"}
    assert report["judgments"] == 23 and report["new_tasks"] == 7
    assert report["gold_labels"] == 2 and report["gold_could_not_judge"] == 1
    assert stored(client, "chunks") == stored(client, "whole")  # file order, same ids' names
    assert counts(client, "chunks") == counts(client, "whole")


def test_a_second_file_in_chunks_reuses_tasks_and_sets_gold(client, monkeypatch) -> None:
    monkeypatch.setattr(judgments_file, "CHUNK_ROWS", 5)
    create_collection(client)
    assert upload(client, "rf10", tsv()).status_code == 201
    again = upload(client, "rf10", tsv(gold=True))
    assert again.status_code == 201, again.text
    body = again.json()
    assert (body["new_tasks"], body["new_topics"], body["new_documents"],
            body["new_annotators"]) == (0, 0, 0, 0)
    assert body["gold_labels"] == 2
    got = counts(client)
    assert got["judgments"] == 46
    assert (got["tasks_with_gold"], got["tasks_with_unjudgeable_gold"]) == (1, 1)


@pytest.mark.parametrize(("bad", "code", "line"), [
    ((ROWS[20][0], ROWS[20][1], ROWS[20][2], "7"), "label_out_of_scale", 22),
    ((ROWS[20][0], ROWS[20][1], "", "1"), "invalid_row", 22),
    ((ROWS[20][0], ROWS[20][1], ROWS[20][2], "x"), "invalid_row", 22),
])
def test_a_bad_row_in_a_late_chunk_stores_nothing(client, monkeypatch, bad, code,
                                                  line) -> None:
    monkeypatch.setattr(judgments_file, "CHUNK_ROWS", 4)
    create_collection(client)
    rows = [*ROWS[:20], bad, *ROWS[21:]]
    response = upload(client, "rf10", tsv(rows))
    assert response.status_code == 422, response.text
    assert response.json()["code"] == code and response.json()["line"] == line
    assert counts(client) == EMPTY_COUNTS


def test_gold_that_conflicts_across_chunks_is_refused(client, monkeypatch) -> None:
    monkeypatch.setattr(judgments_file, "CHUNK_ROWS", 2)
    create_collection(client)
    rows = [(*ROWS[i], "1" if i < 20 else "0") for i in range(23) if ROWS[i][1] == "d1"]
    content = ("topic\tdoc\tannotator\tlabel\tgold\n"
               + "".join("\t".join(r) + "\n" for r in rows)).encode()
    response = upload(client, "rf10", content)
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["code"] == "conflicting_gold" and body["line"] == 5, body
    assert counts(client) == EMPTY_COUNTS


def test_a_file_in_chunks_is_stored_once_per_idempotency_key(client, monkeypatch) -> None:
    monkeypatch.setattr(judgments_file, "CHUNK_ROWS", 4)
    create_collection(client)
    key = {**TSV, "Idempotency-Key": "big-file"}
    first = upload(client, "rf10", tsv(), key)
    again = upload(client, "rf10", tsv(), key)
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json() and again.headers[REPLAYED_HEADER] == "true"
    assert counts(client)["judgments"] == 23
    other = upload(client, "rf10", tsv(ROWS[:22]), key)
    assert other.status_code == 422 and other.json()["code"] == "idempotency_key_reused"
    multipart = client.post(f"{API}/collections/rf10/judgments/file",
                            files={"file": ("j.tsv", tsv(), "text/tab-separated-values")},
                            headers={"Idempotency-Key": "multi"})
    replay = client.post(f"{API}/collections/rf10/judgments/file",
                         files={"file": ("j.tsv", tsv(), "text/tab-separated-values")},
                         headers={"Idempotency-Key": "multi"})
    assert multipart.status_code == replay.status_code == 201
    assert replay.headers[REPLAYED_HEADER] == "true"
    assert counts(client)["judgments"] == 46
