"""What a key limited to some collections can learn about the others: nothing, through the API
or the dashboard (each test here failed before its fix)."""

from __future__ import annotations

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
