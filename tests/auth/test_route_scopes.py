"""Every route declares its scope, and real keys get exactly what their scope and collections
allow. A new endpoint without a rule (or with another scope than the table says) fails here."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.routing import APIRoute

from app.main import create_app
from tests.api.helpers import API, TSV
from tests.auth.conftest import bearer, make_key

# Routes anyone may call: health checks, the dashboard's sign-in and static assets, the API's
# documentation (like /openapi.json, it describes the API and holds no data) and the root's
# redirect.
PUBLIC = {("GET", "/healthz"), ("GET", f"{API}/healthz"), ("GET", "/ui/login"),
          ("POST", "/ui/login"), ("GET", "/ui/logout"), ("POST", "/ui/logout"),
          ("GET", "/docs"), ("GET", "/redoc"), ("GET", "/ui/static/redoc.standalone.js"),
          ("GET", "/")}  # the root only redirects to the dashboard's home, /ui/

# The rule for every route: method, path -> scope.
SCOPES = {
    ("GET", "/metrics"): "admin",  # unless CROWDQRELS_METRICS_PUBLIC=true (tests/ops)
    ("POST", f"{API}/collections"): "admin",
    ("GET", f"{API}/collections"): "read",
    ("GET", f"{API}/collections/{{c}}"): "read",
    ("GET", f"{API}/collections/{{c}}/stats"): "read",
    ("POST", f"{API}/collections/{{c}}/judgments"): "ingest",
    ("POST", f"{API}/collections/{{c}}/judgments/file"): "ingest",
    ("GET", f"{API}/collections/{{c}}/judgments"): "read",
    ("PUT", f"{API}/collections/{{c}}/gold"): "admin",
    ("PUT", f"{API}/collections/{{c}}/features"): "ingest",
    ("GET", f"{API}/collections/{{c}}/features"): "read",
    ("POST", f"{API}/collections/{{c}}/features/build"): "admin",
    ("GET", f"{API}/feature-builds/{{build_id}}"): "read",
    ("DELETE", f"{API}/feature-builds/{{build_id}}"): "admin",
    ("PUT", f"{API}/collections/{{c}}/topics"): "ingest",
    ("PUT", f"{API}/collections/{{c}}/documents"): "ingest",
    ("PUT", f"{API}/collections/{{c}}/runs/{{name}}"): "ingest",
    ("GET", f"{API}/collections/{{c}}/runs"): "read",
    ("DELETE", f"{API}/collections/{{c}}/runs/{{name}}"): "admin",
    ("PUT", f"{API}/collections/{{c}}/judges/{{name}}"): "ingest",
    ("GET", f"{API}/collections/{{c}}/judges"): "read",
    ("GET", f"{API}/collections/{{c}}/judge-agreement"): "read",
    ("DELETE", f"{API}/collections/{{c}}/judges/{{name}}"): "admin",
    ("POST", f"{API}/collections/{{c}}/aggregations"): "admin",
    ("GET", f"{API}/collections/{{c}}/aggregations"): "read",
    ("GET", f"{API}/collections/{{c}}/aggregations/comparison"): "read",
    ("GET", f"{API}/collections/{{c}}/annotators/{{annotator:path}}"): "read",
    ("GET", f"{API}/aggregations/{{a}}"): "read",
    ("DELETE", f"{API}/aggregations/{{a}}"): "admin",
    ("GET", f"{API}/aggregations/{{a}}/qrels"): "read",
    ("GET", f"{API}/aggregations/{{a}}/annotators"): "read",
    ("GET", f"{API}/aggregations/{{a}}/tasks"): "read",
    ("POST", f"{API}/aggregations/{{a}}/predict"): "read",
    ("POST", f"{API}/keys"): "admin",
    ("GET", f"{API}/keys"): "admin",
    ("DELETE", f"{API}/keys/{{name}}"): "admin",
    ("GET", f"{API}/audit"): "admin",
    ("POST", f"{API}/collections/{{c}}/evaluations"): "admin",
    ("POST", f"{API}/collections/{{c}}/samplings"): "admin",
    ("POST", f"{API}/samplings/{{s}}/rounds"): "admin",
    # the dashboard's forms: the scopes of the API calls they stand for
    ("POST", "/ui/collections"): "admin",
    ("POST", "/ui/collections/{c}/judgments"): "ingest",
    ("POST", "/ui/collections/{c}/runs"): "ingest",
    ("POST", "/ui/collections/{c}/gold"): "admin",
    ("POST", "/ui/collections/{c}/aggregations"): "admin",
    ("POST", "/ui/aggregations/{a}/cancel"): "admin",
    ("POST", "/ui/collections/{c}/evaluations"): "admin",
    ("POST", "/ui/collections/{c}/samplings"): "admin",
    ("POST", "/ui/samplings/{s}/rounds"): "admin",
    # the access-control pages: those of GET /keys (and an unlimited key) and GET /audit
    ("GET", "/ui/keys"): "admin",
    ("POST", "/ui/keys"): "admin",
    ("GET", "/ui/keys/revoke"): "admin",
    ("POST", "/ui/keys/revoke"): "admin",
    ("GET", "/ui/audit"): "admin",
}
RANK = {"none": -1, "read": 0, "ingest": 1, "admin": 2}
# Besides the keys' routes, what needs an admin key that is not limited to collections.
UNLIMITED_ONLY = ("POST", f"{API}/collections")


def rule(method: str, path: str) -> str | None:
    """The scope a route must declare: its entry above; a GET not listed (a dashboard page, a
    new listing) must be "read"; any other method needs an entry (None: missing)."""
    return SCOPES.get((method, path), "read" if method == "GET" else None)


def declared_scope(route: Any) -> str | None:
    scopes = [getattr(d.call, "required_scope", None) for d in route.dependant.dependencies]
    found = [s for s in scopes if s is not None]
    assert len(found) <= 1, f"{route.path} declares several scopes {found}"
    return found[0] if found else None


def api_routes(app: Any = None) -> list[tuple[str, str, Any]]:
    """(method, full path, route) for every API route of the app, included routers too."""
    app = app or create_app()
    try:  # FastAPI >= 0.165 keeps included routers as lazy wrappers
        from fastapi.routing import _iter_routes_with_context

        routes = [context or route for route, context in
                  _iter_routes_with_context(app.routes) if isinstance(route, APIRoute)]
    except ImportError:
        routes = [r for r in app.routes if isinstance(r, APIRoute)]
    return [(method, route.path, route) for route in routes for method in sorted(route.methods)]


def scope_problems(app: Any = None) -> tuple[list[str], list[str]]:
    missing, wrong = [], []
    for method, path, route in api_routes(app):
        declared = declared_scope(route)
        if (method, path) in PUBLIC:
            assert declared is None, f"public route {method} {path} declares {declared}"
            continue
        if declared is None:
            missing.append(f"{method} {path}")
        elif rule(method, path) != declared:
            wrong.append(f"{method} {path}: declares {declared}, the rule says "
                         f"{rule(method, path) or 'nothing: add it to SCOPES'}")
    return missing, wrong


def test_every_route_has_a_scope_rule() -> None:
    missing, wrong = scope_problems()
    assert not missing, f"routes without require_scope(...): {missing}"
    assert not wrong, wrong
    listed = {(m, p) for m, p, _ in api_routes()}
    assert set(SCOPES) <= listed, f"rules for routes that do not exist: {set(SCOPES) - listed}"


def test_a_route_without_a_rule_is_caught() -> None:
    from app.auth.deps import require_scope

    app = create_app()

    @app.post(f"{API}/forgotten")
    def forgotten() -> None: ...

    @app.delete(f"{API}/unlisted", dependencies=[require_scope("admin")])
    def unlisted() -> None: ...

    @app.get(f"{API}/page", dependencies=[require_scope("ingest")])
    def page() -> None: ...

    missing, wrong = scope_problems(app)
    assert missing == [f"POST {API}/forgotten"]
    assert [w.split(":")[0] for w in wrong] == [f"DELETE {API}/unlisted", f"GET {API}/page"]


def concrete(path: str, *, collection: str, aggregation: int) -> str:
    values = {"c": collection, "a": str(aggregation), "build_id": "1", "name": "x",
              "annotator": "w1", "task_id": "1", "e": "1", "s": "1", "mode": "union"}
    return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: values[m.group(1)], path)


BODIES = {
    "POST": {"json": {}}, "PUT": {"content": b"", "headers": TSV}, "GET": {}, "DELETE": {},
}


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_each_scope_with_real_keys(auth_client, auth_settings, admin_key) -> None:
    url = auth_settings.database_url
    admin = bearer(admin_key)
    for name in ("mine", "other"):
        response = auth_client.post(f"{API}/collections", headers=admin,
                                    json={"name": name, "labels": [0, 1]})
        assert response.status_code == 201, response.text
    judgments = {"judgments": [{"topic": "t", "doc": "d", "annotator": "w1", "label": 1}]}
    assert auth_client.post(f"{API}/collections/mine/judgments", headers=admin,
                            json=judgments).status_code == 201
    assert auth_client.post(f"{API}/collections/other/judgments", headers=admin,
                            json=judgments).status_code == 201
    mine_fit = auth_client.post(f"{API}/collections/mine/aggregations", headers=admin,
                                json={"method": "mv"}).json()["id"]
    other_fit = auth_client.post(f"{API}/collections/other/aggregations", headers=admin,
                                 json={"method": "mv"}).json()["id"]
    keys = {scope: bearer(make_key(url, scope, scope)) for scope in ("read", "ingest")}
    keys["admin"] = admin
    keys["none"] = {}
    # Limited to "mine": full scope there, 404 (as if absent) on "other".
    keys["limited"] = bearer(make_key(url, "limited", "admin", ["mine"]))

    checked = 0
    for method, path, _route in api_routes():
        if (method, path) in PUBLIC or not path.startswith(API):
            continue
        required = rule(method, path)
        assert required is not None
        for who, headers in keys.items():
            rank = RANK["admin" if who == "limited" else who]
            target = concrete(path, collection="mine", aggregation=mine_fit)
            kwargs = BODIES[method]
            response = auth_client.request(method, target,
                                           headers={**kwargs.get("headers", {}), **headers},
                                           **{k: v for k, v in kwargs.items() if k != "headers"})
            status, code = response.status_code, _code(response)
            if who == "none":
                assert status == 401 and response.headers["www-authenticate"].startswith(
                    "Bearer"), (method, target, status)
                assert code == "missing_api_key"
            elif rank < RANK[required] or (who == "limited" and (
                    path.startswith(f"{API}/keys") or (method, path) == UNLIMITED_ONLY)):
                # (a key limited to collections may not manage keys or create a collection,
                # even with admin scope)
                assert status == 403 and code == "insufficient_scope", (who, method, target)
            else:
                assert status not in (401, 403), (who, method, target, response.text)
            checked += 1
        if "{c}" in path or "{a}" in path:
            target = concrete(path, collection="other", aggregation=other_fit)
            kwargs = BODIES[method]
            response = auth_client.request(method, target,
                                           headers={**kwargs.get("headers", {}),
                                                    **keys["limited"]},
                                           **{k: v for k, v in kwargs.items() if k != "headers"})
            assert response.status_code == 404, (method, target, response.text)
            assert _code(response) in {"collection_not_found", "aggregation_not_found"}
    assert checked >= 4 * len(SCOPES) - 4


def _code(response) -> str | None:
    try:
        return response.json().get("code")
    except ValueError:
        return None


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_listings_show_only_the_keys_collections(auth_client, auth_settings, admin_key) -> None:
    admin = bearer(admin_key)
    for name in ("a1", "a2", "a3"):
        auth_client.post(f"{API}/collections", headers=admin, json={"name": name})
    limited = bearer(make_key(auth_settings.database_url, "two", "read", ["a1", "a3"]))
    body = auth_client.get(f"{API}/collections", headers=limited).json()
    assert [c["name"] for c in body["data"]] == ["a1", "a3"] and body["count"] == 2
    assert auth_client.get(f"{API}/collections", headers=admin).json()["count"] == 3
    assert auth_client.get(f"{API}/collections/a2", headers=limited).status_code == 404
    # A limited admin cannot mint keys for every collection.
    limited_admin = bearer(make_key(auth_settings.database_url, "ladmin", "admin", ["a1"]))
    refused = auth_client.post(f"{API}/keys", headers=limited_admin,
                               json={"name": "x", "scope": "admin"})
    assert refused.status_code == 403
    # Keys name the collections they are limited to (ids alone meant nothing to a reader).
    made = auth_client.post(f"{API}/keys", headers=admin,
                            json={"name": "later", "scope": "read", "collections": ["a3", "a2"]})
    assert made.status_code == 201, made.text
    ids = {c["name"]: c["id"] for c in auth_client.get(f"{API}/collections",
                                                        headers=admin).json()["data"]}
    assert made.json()["collections"] == sorted([ids["a2"], ids["a3"]])
    assert made.json()["collection_names"] == [n for _, n in sorted(
        (ids[n], n) for n in ("a2", "a3"))]
    listed = {k["name"]: k for k in auth_client.get(f"{API}/keys", headers=admin).json()["data"]}
    assert listed["two"]["collection_names"] == ["a1", "a3"]
    assert listed["later"]["collection_names"] == made.json()["collection_names"]
    assert listed["ladmin"]["collection_names"] == ["a1"]
    assert listed[next(iter(listed))]["collection_names"] is None  # the unlimited admin
    # An empty list is no limit in disguise (a script whose filter matched nothing): refused.
    empty = auth_client.post(f"{API}/keys", headers=admin,
                             json={"name": "none", "scope": "read", "collections": []})
    assert empty.status_code == 422 and empty.json()["code"] == "invalid_body"
    assert "none" not in {k["name"] for k in auth_client.get(f"{API}/keys",
                                                              headers=admin).json()["data"]}
