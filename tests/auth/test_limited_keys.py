"""What a key limited to some collections can learn about the others: nothing, through the API
or the dashboard (the first two tests failed before their fixes; the last guards every route)."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from app.collections.tables import Collection
from tests.api.helpers import API
from tests.auth.conftest import bearer, make_key
from tests.auth.test_modes import sign_in
from tests.auth.test_route_scopes import BODIES, api_routes
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


def _shown(response: Any, value: str) -> tuple[int, str]:
    """The answer's status and what it says, ``value`` (the id or name asked for) made "X": a
    JSON error as it is; a page, its main part without the form tokens (the head holds asset
    versions, hex digits in which an id could also be found)."""
    text = response.text
    if "<main>" in text:
        text = text[text.index("<main>"):text.index("</main>")]
        text = re.sub(r'value="[^"]{20,}"', 'value="…"', text)
    return response.status_code, re.sub(rf"\b{re.escape(value)}\b", "X", text)


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_another_collections_objects_answer_as_missing_ones(auth_client, auth_settings,
                                                            admin) -> None:
    """Every address with a collection, fit, evaluation, sampling or feature build in it, API and
    pages: for a key limited to other collections, the answer about one that exists is the
    answer about one that does not (status, code, text and headers), so ids and names cannot be
    enumerated. (A guard over every route; it passed before these changes.)"""
    url = auth_settings.database_url
    for name in ("mine", "secret"):
        assert admin.post(f"{API}/collections", json={"name": name}).status_code == 201
    judgments = {"judgments": [{"topic": "t", "doc": f"d{i}", "annotator": f"w{i % 3}",
                                "label": i % 2} for i in range(6)]}
    assert admin.post(f"{API}/collections/secret/judgments", json=judgments).status_code == 201
    assert admin.put(f"{API}/collections/secret/runs/r", content=b"t Q0 d1 1 2 r\nt Q0 d7 2 1 r\n",
                     headers={"content-type": "text/plain"}).status_code == 200
    fit = admin.post(f"{API}/collections/secret/aggregations", json={"method": "mv"}).json()
    for _ in range(600):
        if admin.get(f"{API}/aggregations/{fit['id']}").json()["status"] == "succeeded":
            break
        time.sleep(0.05)
    made = {"e": admin.post(f"{API}/collections/secret/evaluations",
                            json={"aggregation": fit["id"], "samples": 0}),
            "s": admin.post(f"{API}/collections/secret/samplings", json={"budget_per_round": 1}),
            "build_id": admin.post(f"{API}/collections/secret/features/build")}
    assert all(r.status_code in (201, 202) for r in made.values()), made
    real = {"c": "secret", "a": str(fit["id"]), **{k: str(r.json()["id"]) for k, r in made.items()}}
    missing = {"c": "nowhere", "a": "99991", "e": "99992", "s": "99993", "build_id": "99994"}
    fixed = {"name": "r", "annotator": "w1", "task_id": "1", "task": "1", "mode": "union"}

    limited = bearer(make_key(url, "limited", "admin", ["mine"]))
    sign_in(auth_client, make_key(url, "limited-page", "admin", ["mine"]))
    form = {"csrf_token": auth_client.cookies.get("crowdqrels_csrf")}
    compared = 0
    for method, path, _ in api_routes(auth_client.app):
        params = set(re.findall(r"\{(\w+)", path))
        if not params & set(real) or path.startswith(f"{API}/keys"):
            continue
        answers = []
        for values in (real, missing):
            names = {**fixed, **values}
            target = re.sub(r"\{(\w+)(?::\w+)?\}", lambda m, v=names: v[m.group(1)], path)
            if path.startswith(API):
                kwargs = dict(BODIES[method])
                kwargs["headers"] = {**kwargs.get("headers", {}), **limited}
            else:  # a page, or a page's form, under the signed-in key's session
                kwargs = {"data": {**form, "form_key": f"k-{target}"}} if method == "POST" else {}
            response = auth_client.request(method, target, follow_redirects=False, **kwargs)
            value = next(values[p] for p in ("c", "a", "e", "s", "build_id") if p in params)
            # x-request-id: every answer has its own (its value says nothing of the object)
            headers = sorted((k, v) for k, v in response.headers.items()
                             if k not in ("content-length", "date", "set-cookie",
                                          "x-request-id"))
            answers.append((*_shown(response, value), headers))
        assert answers[0] == answers[1], (method, path, answers)
        assert answers[0][0] == 404, (method, path, answers[0])
        compared += 1
    assert compared >= 60, compared
