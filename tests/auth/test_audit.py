"""The audit log: every change with its key, collection and counts; admins list it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.api.helpers import API, TSV
from tests.api.jobs import wait_for
from tests.auth.conftest import bearer, make_key

ROWS = b"topic\tdoc\tannotator\tlabel\n1\td1\tw1\t1\n1\td2\tw2\t0\n1\td2\tw1\t0\n"


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_changes_are_audited(auth_client, auth_settings, admin_key) -> None:
    admin = bearer(admin_key)
    platform = bearer(make_key(auth_settings.database_url, "platform", "ingest"))
    start = datetime.now(UTC) - timedelta(seconds=1)
    for name in ("c1", "c2"):
        assert auth_client.post(f"{API}/collections", headers=admin,
                                json={"name": name, "labels": [0, 1]}).status_code == 201
    assert auth_client.post(f"{API}/collections/c1/judgments/file", content=ROWS,
                            headers={**TSV, **platform}).status_code == 201
    assert auth_client.put(f"{API}/collections/c1/gold", content=b"1 0 d1 1\n",
                           headers={"content-type": "text/plain", **admin}).status_code == 200
    fit = auth_client.post(f"{API}/collections/c1/aggregations", headers=admin,
                           json={"method": "mv"}).json()
    auth_client.headers.update(admin)  # for wait_for's polling
    wait_for(auth_client, fit["id"])
    slow = auth_client.post(f"{API}/collections/c1/aggregations", headers=admin,
                            json={"method": "mace",
                                  "params": {"n_restarts": 1000, "n_iter": 100_000}}).json()
    assert auth_client.delete(f"{API}/aggregations/{slow['id']}", headers=admin).status_code == 200
    assert auth_client.post(f"{API}/collections/c2/judgments", headers=platform, json={
        "judgments": [{"topic": "t", "doc": "d", "annotator": "w", "label": 1}]}
    ).status_code == 201
    assert auth_client.post(f"{API}/keys", headers=admin,
                            json={"name": "temp", "scope": "read",
                                  "collections": ["c2", "c1"]}).status_code == 201
    assert auth_client.delete(f"{API}/keys/temp", headers=admin).status_code == 200
    again = auth_client.delete(f"{API}/keys/temp", headers=admin)  # answers alike, not audited
    assert again.status_code == 200 and again.json()["revoked_at"] is not None

    everything = auth_client.get(f"{API}/audit", headers=admin).json()
    actions = [e["action"] for e in reversed(everything["data"])]
    assert actions == ["collection_created", "collection_created", "judgments_added",
                       "gold_replaced", "fit_started", "fit_started", "fit_cancelled",
                       "judgments_added", "key_created", "key_revoked"]
    assert everything["count"] == 10
    added = everything["data"][-3]
    assert added["key_name"] == "platform" and added["collection"] == "c1"
    assert added["counts"]["judgments"] == 3 and added["target_id"] is not None
    # a key limited to some collections says which: the log tells it from an unlimited one
    assert everything["data"][1]["counts"] == {"name": "temp", "scope": "read",
                                               "collections": ["c1", "c2"]}

    c1 = auth_client.get(f"{API}/audit", headers=admin, params={"collection": "c1"}).json()
    assert c1["count"] == 6 and {e["collection"] for e in c1["data"]} == {"c1"}
    page = auth_client.get(f"{API}/audit", headers=admin,
                           params={"collection": "c1", "limit": 2, "offset": 2}).json()
    assert page["count"] == 6 and page["data"] == c1["data"][2:4]
    later = (datetime.now(UTC) + timedelta(minutes=1)).isoformat()
    assert auth_client.get(f"{API}/audit", headers=admin,
                           params={"since": later}).json()["count"] == 0
    window = auth_client.get(f"{API}/audit", headers=admin,
                             params={"since": start.isoformat(), "until": later}).json()
    assert window["count"] == 10
    assert auth_client.get(f"{API}/audit", headers=platform).status_code == 403
    assert auth_client.get(f"{API}/audit", headers=admin,
                           params={"collection": "nope"}).status_code == 404
    # a misspelt action is refused, not answered "no such event" (gold_replace: 0 events)
    typo = auth_client.get(f"{API}/audit", headers=admin, params={"action": "gold_replace"})
    assert typo.status_code == 422, typo.text
    assert typo.json()["code"] == "invalid_body" and "gold_replaced" in typo.json()["detail"]
    replaced = auth_client.get(f"{API}/audit", headers=admin, params={"action": "gold_replaced"})
    assert replaced.json()["count"] == 1
