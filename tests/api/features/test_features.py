from __future__ import annotations

import pytest

from tests.api.helpers import API, EMPTY_COUNTS, counts, create_collection

FEATURES = "topic\tdoc\tlexical:bm25\tlexical:ql\trun:bm25:rr\tf4\nt\td1\t1.5\t-3\t1\t0\n" \
           "t\td2\t0.5\t-4\t0.5\t1\nu\td1\t0\t-9\t0\t2\n"


def put(client, text: str):
    return client.put(f"{API}/collections/rf10/features", content=text.encode(),
                      headers={"content-type": "text/tab-separated-values"})


def test_features_upload_replace_and_describe(client) -> None:
    create_collection(client)
    assert client.get(f"{API}/collections/rf10/features").json()["code"] == "no_features"
    response = put(client, FEATURES)
    assert response.status_code == 200, response.text
    assert response.json() == {"tasks": 3, "dimensions": 4, "new_tasks": 3}
    described = client.get(f"{API}/collections/rf10/features").json()
    assert described["names"] == ["lexical:bm25", "lexical:ql", "run:bm25:rr", "f4"]
    assert described["groups"] == {"lexical": [0, 1], "ranking": [2], "user": [3]}
    assert described["tasks"] == 3
    assert counts(client)["tasks"] == 3

    smaller = put(client, "topic\tdoc\tx\nt\td1\t1\n")
    assert smaller.json() == {"tasks": 1, "dimensions": 1, "new_tasks": 0}
    assert client.get(f"{API}/collections/rf10/features").json()["tasks"] == 1


@pytest.mark.parametrize(("text", "code", "line"), [
    ("topic\tdoc\tf1\nt\td1\t1\nt\td1\t2\n", "duplicate_row", 3),
    ("topic\tdoc\tf1\nt\td1\tx\n", "invalid_row", 2),
    ("topic\tdoc\tf1\nt\td1\tnan\n", "invalid_row", 2),
    ("topic\tdoc\tf1\tf2\nt\td1\t1\n", "invalid_row", 2),
    ("a\tb\tc\nt\td1\t1\n", "invalid_header", 1),
    ("topic\tdoc\tf1\n", "empty_file", None),
])
def test_bad_feature_files(client, text, code, line) -> None:
    create_collection(client)
    response = put(client, text)
    assert response.status_code == 422, response.text
    assert response.json()["code"] == code
    assert response.json().get("line") == line
    assert counts(client) == EMPTY_COUNTS
