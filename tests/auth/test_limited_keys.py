"""What a key limited to some collections can learn about the others: nothing, through the API
or the dashboard (each test here failed before its fix)."""

from __future__ import annotations

import time

import pytest

from app.collections.tables import Collection
from tests.api.helpers import API
from tests.auth.conftest import bearer, make_key
from tests.auth.test_modes import sign_in
from tests.ui.test_forms_once import count


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_limited_key_creates_no_collection_and_learns_no_name(auth_client, auth_settings,
                                                                 admin) -> None:
    """A taken name answered 409 ``collection_exists``: a key limited to "mine" could try
    names and learn those of collections it may not see (and create collections it could not
    use). Creating a collection now needs an admin key on every collection, as keys do."""
    url = auth_settings.database_url
    for name in ("mine", "secret"):
        assert admin.post(f"{API}/collections", json={"name": name}).status_code == 201
    limited = bearer(make_key(url, "limited", "admin", ["mine"]))
    for name in ("secret", "fresh", "mine"):  # taken and not visible, new, taken and visible
        refused = auth_client.post(f"{API}/collections", headers=limited, json={"name": name})
        assert refused.status_code == 403, (name, refused.text)
        assert refused.json()["code"] == "insufficient_scope"
        assert refused.json()["required"] == "admin"
        assert "not limited to collections" in refused.json()["detail"]
    # the same answer with a body the API would refuse (the key is checked first)
    bad = auth_client.post(f"{API}/collections", headers=limited, json={"name": "1"})
    assert bad.status_code == 403
    assert count(url, Collection) == 2
    # an admin key on every collection still creates them
    assert admin.post(f"{API}/collections", json={"name": "fresh"}).status_code == 201

    # the dashboard: no form on the home page, and its address refuses the key
    sign_in(auth_client, make_key(url, "limited-page", "admin", ["mine"]))
    home = auth_client.get("/ui/")
    assert home.status_code == 200
    assert 'id="collection-form"' not in home.text and 'id="collection-locked"' in home.text
    assert "not limited to collections" in home.text
    csrf = {"csrf_token": auth_client.cookies.get("crowdqrels_csrf"), "form_key": "k1"}
    posted = auth_client.post("/ui/collections", follow_redirects=False,
                              data={**csrf, "name": "secret", "labels": "0 1"})
    assert posted.status_code == 403 and "insufficient_scope" in posted.text
    assert "already exists" not in posted.text
    assert count(url, Collection) == 3


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_kept_annotator_listing_is_for_the_caller_who_asked(auth_client, auth_settings,
                                                               admin) -> None:
    """The annotator listing may be kept by the browser a day (``private, max-age``). Without
    ``Vary`` the browser served it again to any later request for the address: another key
    signed in at that browser (one limited to other collections), an expired session, or the
    address typed in with no session at all. It now varies on the key and the session cookie,
    in the answer and in its 304."""
    assert admin.post(f"{API}/collections", json={"name": "secret"}).status_code == 201
    assert admin.post(f"{API}/collections/secret/judgments", json={"judgments": [
        {"topic": "t", "doc": f"d{i}", "annotator": f"w{i % 2}", "label": i % 2}
        for i in range(4)]}).status_code == 201
    fit = admin.post(f"{API}/collections/secret/aggregations", json={"method": "mv"}).json()
    for _ in range(600):
        if admin.get(f"{API}/aggregations/{fit['id']}").json()["status"] == "succeeded":
            break
        time.sleep(0.05)
    url = f"{API}/aggregations/{fit['id']}/annotators"
    kept = admin.get(url)
    assert kept.status_code == 200 and "max-age" in kept.headers["cache-control"]
    again = admin.get(url, headers={"if-none-match": kept.headers["etag"]})
    assert again.status_code == 304
    for answer in (kept, again):
        varies = {v.strip().lower() for v in answer.headers.get("vary", "").split(",")}
        assert {"authorization", "x-api-key", "cookie"} <= varies, answer.headers
    # and a key limited to another collection that revalidates the copy gets no 304: 404
    assert admin.post(f"{API}/collections", json={"name": "mine"}).status_code == 201
    limited = bearer(make_key(auth_settings.database_url, "limited", "read", ["mine"]))
    probe = auth_client.get(url, headers={**limited, "if-none-match": kept.headers["etag"]})
    assert probe.status_code == 404 and probe.json()["code"] == "aggregation_not_found"
