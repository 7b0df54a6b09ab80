"""Auth modes: open only on loopback outside production; the dashboard's sign-in."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from pydantic import ValidationError

from app.auth.csrf import COOKIE as CSRF_COOKIE
from app.auth.middleware import SESSION_COOKIE
from app.auth.modes import InsecureMode, check_serve_mode
from app.core.config import Settings
from tests.api.helpers import API
from tests.auth.conftest import make_key

PG = "postgresql+psycopg://u@db/x"


def test_auth_defaults_and_production_refusal() -> None:
    assert Settings(environment="test").auth == "off"
    assert Settings(environment="development").auth == "off"
    assert Settings(environment="production", database_url=PG).auth == "required"
    with pytest.raises(ValidationError, match="CROWDQRELS_AUTH=off in production"):
        Settings(environment="production", database_url=PG, auth="off")


def test_serving_off_loopback_with_auth_off_is_refused() -> None:
    open_dev = Settings(environment="development", auth="off")
    assert "OFF" in check_serve_mode(open_dev, "127.0.0.1")
    assert "OFF" in check_serve_mode(open_dev, "::1")
    for host in ("0.0.0.0", "192.168.1.5", "::", "example.org"):
        with pytest.raises(InsecureMode):
            check_serve_mode(open_dev, host)
    assert "required" in check_serve_mode(Settings(auth="required"), "0.0.0.0")


def test_serve_command_refuses_to_start(tmp_path) -> None:
    env = {**os.environ, "CROWDQRELS_DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}",
           "CROWDQRELS_AUTH": "off", "CROWDQRELS_ENVIRONMENT": "development"}
    wide = subprocess.run([sys.executable, "-m", "app.cli", "serve", "--host", "0.0.0.0"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert wide.returncode == 2 and "refusing to serve on 0.0.0.0" in wide.stderr
    production = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve"], capture_output=True, text=True, timeout=60,
        env={**env, "CROWDQRELS_ENVIRONMENT": "production", "CROWDQRELS_DATABASE_URL": PG})
    assert production.returncode == 2 and "CROWDQRELS_AUTH=off in production" in production.stderr
    # The settings' problem in words, not pydantic's report (type=value_error, input_value=...)
    on_sqlite = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve"], capture_output=True, text=True, timeout=60,
        env={**env, "CROWDQRELS_ENVIRONMENT": "production", "CROWDQRELS_AUTH": "required"})
    assert on_sqlite.returncode == 2, on_sqlite.stderr
    assert on_sqlite.stderr.splitlines() == [
        "crowdqrels serve: invalid settings",
        "CROWDQRELS_DATABASE_URL points at SQLite in production: use PostgreSQL"]
    assert not (tmp_path / "x.db").exists()  # refused before touching the database


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_dashboard_sign_in(auth_client, auth_settings) -> None:
    key = make_key(auth_settings.database_url, "viewer", "read")
    page = auth_client.get("/ui/some/page?x=1", follow_redirects=False)
    assert page.status_code == 303
    assert page.headers["location"] == "/ui/login?next=%2Fui%2Fsome%2Fpage%3Fx%3D1"
    assert auth_client.get("/ui/static/app.css", follow_redirects=False).status_code != 303

    form = auth_client.get("/ui/login?next=/ui/some/page")
    assert form.status_code == 200 and 'name="csrf_token"' in form.text
    token = re.search(r'name="csrf_token" value="([^"]+)"', form.text).group(1)
    assert auth_client.cookies.get(CSRF_COOKIE) == token

    # Without the CSRF field: refused, no session.
    no_csrf = auth_client.post("/ui/login", data={"key": key}, follow_redirects=False)
    assert no_csrf.status_code == 403 and SESSION_COOKIE not in no_csrf.cookies
    wrong = auth_client.post("/ui/login", data={"key": key + "x", "csrf_token": token},
                             follow_redirects=False)
    assert wrong.status_code == 401 and "unknown or revoked" in wrong.text

    signed = auth_client.post("/ui/login", follow_redirects=False, data={
        "key": key, "csrf_token": token, "next": "/ui/some/page"})
    assert signed.status_code == 303 and signed.headers["location"] == "/ui/some/page"
    set_cookie = signed.headers["set-cookie"]
    assert SESSION_COOKIE in set_cookie and "HttpOnly" in set_cookie
    assert "SameSite=strict" in set_cookie or "samesite=strict" in set_cookie.lower()
    assert "Path=/;" in set_cookie and key not in set_cookie
    # Signed in: /ui pages pass the check (404 here: the pages are another package's).
    assert auth_client.get("/ui/some/page", follow_redirects=False).status_code == 404
    # The site's root sends a signed-in browser to the dashboard's home, the collections
    # page, which answers under the session cookie and offers to sign out.
    root = auth_client.get("/", follow_redirects=False)
    assert root.status_code == 307 and root.headers["location"] == "/ui/"
    home = auth_client.get("/ui/", follow_redirects=False)
    assert home.status_code == 200 and "<h1>Collections" in home.text
    assert 'href="/ui/logout"' in home.text
    # The session cookie lets the pages read the API (GET, HEAD) as the signed-in key, and
    # nothing else: a write needs the key itself, and the session token is no key.
    session_token = signed.cookies[SESSION_COOKIE]
    cookie = {"Cookie": f"{SESSION_COOKIE}={session_token}"}
    api = auth_client.get(f"{API}/collections", headers=cookie)
    assert api.status_code == 200 and api.json()["count"] == 0
    assert auth_client.head(f"{API}/collections", headers=cookie).status_code != 401
    write = auth_client.post(f"{API}/collections", headers=cookie,
                             json={"name": "x", "labels": [0, 1], "relevant_from": 1})
    assert write.status_code == 401 and write.json()["code"] == "missing_api_key"
    as_key = auth_client.get(f"{API}/collections",
                             headers={"Authorization": f"Bearer {session_token}"})
    assert as_key.status_code == 401 and as_key.json()["code"] == "invalid_api_key"
    # a read key's session reads, and is refused what the key may not do
    keys_listing = auth_client.get(f"{API}/keys", headers=cookie)
    assert keys_listing.status_code == 403
    # An open redirect is not possible.
    other = auth_client.post("/ui/login", follow_redirects=False, data={
        "key": key, "csrf_token": token, "next": "https://evil.example/"})
    assert other.headers["location"] == "/ui/"
    latest = other.cookies[SESSION_COOKIE]

    out = auth_client.get("/ui/logout", follow_redirects=False)
    assert out.status_code == 303 and out.headers["location"] == "/ui/login"
    assert out.headers["clear-site-data"] == '"cache"'  # cached listings end with the session
    auth_client.cookies.set(SESSION_COOKIE, latest, path="/")  # replaying the ended session
    assert auth_client.get("/ui/some/page", follow_redirects=False).status_code == 303
    assert auth_client.get(f"{API}/collections",
                           headers={"Cookie": f"{SESSION_COOKIE}={latest}"}).status_code == 401


def sign_in(client, key: str) -> None:  # type: ignore[no-untyped-def]
    form = client.get("/ui/login")
    token = re.search(r'name="csrf_token" value="([^"]+)"', form.text).group(1)
    signed = client.post("/ui/login", follow_redirects=False,
                         data={"key": key, "csrf_token": token, "next": "/ui/"})
    assert signed.status_code == 303, signed.text


def test_pages_offer_only_the_forms_the_key_may_submit(auth_client, auth_settings,
                                                        admin) -> None:
    """A read key's session sees the collection without the forms that would answer 403; an
    ingest key may upload judgments and runs and nothing else; an admin key sees every form."""
    created = admin.post(f"{API}/collections",
                         json={"name": "c1", "labels": [0, 1], "relevant_from": 1})
    assert created.status_code == 201, created.text
    assert admin.post(f"{API}/collections/c1/judgments", json={"judgments": [
        {"topic": "t", "doc": "d1", "annotator": "w", "label": 1}]}).status_code == 201
    assert admin.put(f"{API}/collections/c1/runs/r", content=b"t Q0 d1 1 2.0 r\nt Q0 d2 2 1.0 r\n",
                     headers={"content-type": "text/plain"}).status_code == 200
    sampling = admin.post(f"{API}/collections/c1/samplings", json={"budget_per_round": 1})
    assert sampling.status_code == 201, sampling.text
    forms = ("fit-form", "judgments-form", "gold-form", "evaluation-form", "sampling-form",
             "run-form")
    expected = {"read": set(), "ingest": {"judgments-form", "run-form"}, "admin": set(forms)}
    for scope, shown in expected.items():
        sign_in(auth_client, make_key(auth_settings.database_url, f"k-{scope}", scope))
        page = auth_client.get("/ui/collections/c1")
        assert page.status_code == 200
        assert {f for f in forms if f'id="{f}"' in page.text} == shown, scope
        assert page.text.count('class="form-locked"') == len(forms) - len(shown), scope
        if scope != "admin":
            assert f"you are signed in as <code>k-{scope}</code> ({scope})" in page.text
        rounds = auth_client.get(f"/ui/samplings/{sampling.json()['id']}")
        assert rounds.status_code == 200
        assert ('id="round-form"' in rounds.text) == (scope == "admin")
        assert ('id="round-locked"' in rounds.text) == (scope != "admin")


def test_auth_off_leaves_everything_open(client) -> None:
    assert client.get(f"{API}/collections").status_code == 200
    assert client.get("/ui/anything", follow_redirects=False).status_code == 404


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_rate_limit_per_key_and_cors(database_url) -> None:
    from fastapi.testclient import TestClient

    from app.main import create_app
    from tests.auth.conftest import bearer

    settings = Settings(database_url=database_url, environment="test", auth="required",
                        rate_limit_per_minute=3)
    fast, slow = (bearer(make_key(database_url, name, "read")) for name in ("fast", "slow"))
    with TestClient(create_app(settings)) as client:
        assert [client.get(f"{API}/collections", headers=fast).status_code
                for _ in range(4)] == [200, 200, 200, 429]
        limited = client.get(f"{API}/collections", headers=fast)
        assert limited.json()["code"] == "rate_limited"
        assert 1 <= int(limited.headers["retry-after"]) <= 20
        assert client.get(f"{API}/collections", headers=slow).status_code == 200  # per key
        origin = {"Origin": "https://dash.example"}
        assert "access-control-allow-origin" not in client.get(
            f"{API}/healthz", headers=origin).headers
    with TestClient(create_app(Settings(database_url=database_url, environment="test",
                                        cors_origins=["https://dash.example"]))) as client:
        allowed = client.get(f"{API}/healthz", headers=origin)
        assert allowed.headers["access-control-allow-origin"] == "https://dash.example"
        other = client.get(f"{API}/healthz", headers={"Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in other.headers
