"""The dashboard's access-control pages (on SQLite and PostgreSQL): the keys page lists, creates
and revokes keys as the JSON API does (its service functions, its audit events, its codes), once
per form key, the new key shown once; the audit log pages through GET /audit with its filters.
Only keys that may use the API's endpoints get the pages and see the links to them."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.auth.tables import ApiKey, AuditEvent
from app.core.config import Settings
from app.core.db import get_sessionmaker
from app.main import create_app
from app.ui.pages.render import PAGE_SIZE
from tests.api.helpers import API
from tests.auth.conftest import bearer, make_key
from tests.auth.test_modes import sign_in
from tests.ui.dom import parse
from tests.ui.test_create_forms import form_error
from tests.ui.test_dashboard_http import shown_message
from tests.ui.test_forms_once import assert_answered_again, count, form_fields, message
from tests.ui.test_page_details import unlabelled

NEW_KEY = re.compile(r'id="new-key" readonly value="(cq_[^"]+)"')


@pytest.fixture
def signed_admin(database_url: str) -> Iterator[tuple[TestClient, str]]:
    """A client signed in to the dashboard with the admin key "root" (access control on), and
    that key; a collection "crowd"."""
    settings = Settings(database_url=database_url, environment="test", auth="required",
                        warm_startup_s=0)
    key = make_key(database_url, "root", "admin")
    with TestClient(create_app(settings)) as client:
        sign_in(client, key)
        assert client.post(f"{API}/collections", headers=bearer(key), json={
            "name": "crowd", "labels": [0, 1], "relevant_from": 1}).status_code == 201
        yield client, key


def create_form(client: TestClient) -> dict[str, str]:
    return form_fields(client.get("/ui/keys").text, "/ui/keys")


def new_key(client: TestClient, fields: dict[str, str], **values: str) -> Any:
    return client.post("/ui/keys", data={**fields, **values}, follow_redirects=False)


def revoke_fields(page: str, name: str) -> dict[str, str]:
    """The hidden fields of the revoke form of the key ``name`` (its name among them)."""
    forms = re.findall(r'<form method="post" action="/ui/keys/revoke"[^>]*>(.*?)</form>', page,
                       re.S)
    for form in forms:
        hidden = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form))
        if html.unescape(hidden["name"]) == name:
            return hidden
    raise AssertionError(f"no revoke button for {name!r}")


def listed(page: str) -> dict[str, list[str]]:
    """The keys table: name -> its cells' texts."""
    table = parse(page).by_id("keys")
    rows = {}
    for row in table.find_all("tr"):
        cells = [c.text.strip() for c in row.find_all("td")]
        if cells:
            rows[cells[0]] = cells
    return rows


def test_an_admin_creates_and_revokes_keys_as_the_api_does(signed_admin, database_url) -> None:
    client, root = signed_admin
    page = client.get("/ui/keys")
    assert page.status_code == 200
    assert unlabelled(parse(page.text)) == []
    assert list(listed(page.text)) == ["root"]

    # create: the key is on the answer's page, once, and works on the API at once
    fields = create_form(client)
    first = new_key(client, fields, name="ingester", scope="ingest", collections="crowd")
    assert first.status_code == 200, first.text
    assert first.headers["cache-control"] == "no-store"
    assert "Copy the key now: it is not shown again." in first.text
    secret = NEW_KEY.search(first.text).group(1)  # type: ignore[union-attr]
    assert client.get(f"{API}/collections/crowd", headers=bearer(secret)).status_code == 200
    upload = client.post(f"{API}/collections/crowd/judgments", headers=bearer(secret), json={
        "judgments": [{"topic": "t", "doc": "d", "annotator": "w", "label": 1}]})
    assert upload.status_code == 201, upload.text

    # sent again (a double click, a reload, a retry after the answer was lost): one key, the
    # secret not shown again, and what to do if it was never seen
    again = new_key(client, fields, name="ingester", scope="ingest", collections="crowd")
    assert again.status_code == 303
    assert secret not in again.text and secret not in again.headers["location"]
    assert message(again.headers["location"]) == (
        "this form was already sent: key ingester created (ingest, 1 collection: crowd; prefix "
        f"{secret.split('_')[1]}): its secret was shown once, on the page that answered the "
        "form; if it was not copied from there, revoke the key and create another")
    assert count(database_url, ApiKey) == 2
    shown = client.get(again.headers["location"])
    assert secret not in shown.text and shown_message(shown.text)[0] == "ok"  # type: ignore[index]

    # listed as GET /api/v1/keys lists it
    api = {k["name"]: k for k in client.get(f"{API}/keys", headers=bearer(root)).json()["data"]}
    rows = listed(shown.text)
    assert list(rows) == list(api) == ["root", "ingester"]
    name, prefix, scope, collections, created, used, state, _ = rows["ingester"]
    assert (prefix, scope, collections, state) == (api["ingester"]["prefix"], "ingest", "crowd",
                                                   "active")
    assert created.startswith(api["ingester"]["created_at"][:10]) and used != "never"
    assert rows["root"][3] == "every collection"

    # revoke: through the API's service, its audit event; the key answers 401 at once
    revoke = revoke_fields(shown.text, "ingester")
    # styled as the dashboard's other irreversible buttons (cancel a fit)
    buttons = [b for b in parse(shown.text).by_id("keys").find_all("button")
               if b.attrs.get("aria-label") == "revoke the key ingester"]
    assert len(buttons) == 1 and "danger" in buttons[0].classes(), buttons
    revoked = client.post("/ui/keys/revoke", data=revoke, follow_redirects=False)
    assert revoked.status_code == 303
    assert message(revoked.headers["location"]) == "key ingester revoked: it no longer works"
    assert client.get(f"{API}/collections/crowd", headers=bearer(secret)).status_code == 401
    assert_answered_again(revoked, client.post("/ui/keys/revoke", data=revoke,
                                               follow_redirects=False))
    page = client.get("/ui/keys").text
    assert listed(page)["ingester"][6].startswith("revoked ")
    with pytest.raises(AssertionError):  # no button for a revoked key
        revoke_fields(page, "ingester")
    assert client.get(f"{API}/keys", headers=bearer(root)).json()["data"][1]["revoked_at"]

    with get_sessionmaker(database_url)() as session:
        events = session.scalars(select(AuditEvent).where(
            AuditEvent.action.in_(["key_created", "key_revoked"])).order_by(AuditEvent.id)).all()
        assert [(e.key_name, e.action, e.counts) for e in events] == [
            ("root", "key_created", {"name": "ingester", "scope": "ingest",
                                     "collections": ["crowd"]}),
            ("root", "key_revoked", {"name": "ingester"})]
    # the form's address opened with GET: the keys page
    assert client.get("/ui/keys/revoke", follow_redirects=False).headers["location"] == "/ui/keys"


def test_a_refused_key_shows_the_apis_code_and_creates_nothing(signed_admin,
                                                                database_url) -> None:
    client, root = signed_admin
    fields = create_form(client)
    for values, status, code in [
            ({"name": "root", "scope": "read"}, 409, "key_name_taken"),
            ({"name": "other", "scope": "read", "collections": "crowd nowhere"}, 404,
             "collection_not_found"),
            ({"name": "other", "scope": "superuser"}, 422, "invalid_body"),
            ({"name": "-bad", "scope": "read"}, 422, "invalid_body")]:
        refused = new_key(client, fields, **values)
        assert refused.status_code == status, (values, refused.text)
        assert f"code {code}" in re.sub(r"<[^>]+>", "", form_error(refused.text)), values
        api = client.post(f"{API}/keys", headers=bearer(root), json={
            **values, **({"collections": values["collections"].split()}
                         if "collections" in values else {})})
        assert (api.status_code, api.json()["code"]) == (status, code)  # the API's answer
        assert NEW_KEY.search(refused.text) is None
        assert f'value="{values["name"]}"' in refused.text  # the fields as sent
        assert re.search(r'id="error-notice">The new key was not accepted', refused.text)
    assert count(database_url, ApiKey) == 1
    with get_sessionmaker(database_url)() as session:
        assert not session.scalars(select(AuditEvent).where(
            AuditEvent.action == "key_created")).all()
    # the refused attempts took nothing: the same form key, corrected, creates the key
    ok = new_key(client, fields, name="other", scope="read")
    assert ok.status_code == 200 and NEW_KEY.search(ok.text)
    assert count(database_url, ApiKey) == 2
    # revoking a key that does not exist (a page left open while another admin... ): an error
    gone = client.post("/ui/keys/revoke", follow_redirects=False,
                       data={**revoke_fields(client.get("/ui/keys").text, "other"),
                             "name": "ghost"})
    kind, text = shown_message(client.get(gone.headers["location"]).text)  # type: ignore[misc]
    assert kind == "error" and text == "key 'ghost' not revoked (key_not_found): no key named " \
                                       "'ghost'"


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_only_keys_that_may_use_the_api_get_the_pages_and_links(database_url) -> None:
    settings = Settings(database_url=database_url, environment="test", auth="required",
                        warm_startup_s=0)
    admin = make_key(database_url, "root", "admin")
    with TestClient(create_app(settings)) as client:
        assert client.post(f"{API}/collections", headers=bearer(admin),
                           json={"name": "crowd"}).status_code == 201
        # as the API: keys for unlimited admins, the audit log for every admin
        for name, scope, limit, keys_ok, audit_ok in [
                ("reader", "read", None, False, False), ("ingester", "ingest", None, False, False),
                ("limited", "admin", ["crowd"], False, True), ("other", "admin", None, True, True)]:
            key = make_key(database_url, name, scope, limit)
            assert (client.get(f"{API}/keys", headers=bearer(key)).status_code == 200) == keys_ok
            assert (client.get(f"{API}/audit", headers=bearer(key)).status_code == 200) == audit_ok
            client.cookies.clear()
            sign_in(client, key)
            home = client.get("/ui/").text
            missing = client.get("/ui/collections/nowhere")  # an error page: the same header
            assert missing.status_code == 404
            for page in (home, missing.text):
                assert ('href="/ui/keys"' in page) == keys_ok, name
                assert ('href="/ui/audit"' in page) == audit_ok, name
                assert 'href="/ui/logout"' in page, name
            for url, ok in (("/ui/keys", keys_ok), ("/ui/audit", audit_ok)):
                page = client.get(url)
                assert page.status_code == (200 if ok else 403), (name, url)
                if not ok:
                    assert "insufficient_scope" in page.text and "<h1" in page.text
            csrf = {"csrf_token": client.cookies.get("crowdqrels_csrf")}
            made = client.post("/ui/keys", follow_redirects=False, data={
                **csrf, "form_key": f"{name}-new", "name": f"by-{name}", "scope": "admin"})
            assert made.status_code == (200 if keys_ok else 403), name
            revoke = client.post("/ui/keys/revoke", follow_redirects=False, data={
                **csrf, "form_key": f"{name}-revoke", "name": "root"})
            assert revoke.status_code == (303 if keys_ok else 403), name
        assert count(database_url, ApiKey) == 5 + 1  # the four above, root, by-other
        with get_sessionmaker(database_url)() as session:
            revoked = {k.name for k in session.scalars(select(ApiKey)) if k.revoked_at}
        assert revoked == {"root"}
        # the one revoke the pages allowed (by "other"): root's key stops working at once
        assert client.get(f"{API}/collections", headers=bearer(admin)).status_code == 401
        assert client.get(f"{API}/keys", headers=bearer(admin)).status_code == 401


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_without_access_control_the_pages_are_open_as_the_api(client, database_url) -> None:
    """CROWDQRELS_AUTH=off: every caller is an unrestricted admin, for the API and the pages."""
    for page in (client.get("/ui/").text, client.get("/ui/collections/nowhere").text):
        assert 'href="/ui/keys"' in page and 'href="/ui/audit"' in page
        assert 'href="/ui/logout"' not in page  # nobody signs in
    made = new_key(client, create_form(client), name="first", scope="read")
    assert made.status_code == 200 and NEW_KEY.search(made.text)
    events = client.get(f"{API}/audit").json()["data"]
    assert [(e["key_name"], e["action"]) for e in events] == [("anonymous", "key_created")]
    page = client.get("/ui/audit").text
    assert 'data-event="' in page and "anonymous" in page


def events_on(page: str) -> list[tuple[str, str, str]]:
    """(key, action, collection) of each event row, in the page's order."""
    table = parse(page).by_id("audit-events")
    rows = []
    for row in table.find_all("tr"):
        cells = [c.text.strip() for c in row.find_all("td")]
        if cells:
            rows.append((cells[1], cells[2], cells[3]))
    return rows


def test_the_audit_log_pages_through_the_apis_events_with_its_filters(signed_admin) -> None:
    client, root = signed_admin
    for i in range(PAGE_SIZE + 3):  # keys through the pages: 53 key_created events
        fields = create_form(client)
        assert new_key(client, fields, name=f"k{i:02d}", scope="read").status_code == 200
    revoke = revoke_fields(client.get("/ui/keys").text, "k07")
    assert client.post("/ui/keys/revoke", data=revoke, follow_redirects=False).status_code == 303
    api = client.get(f"{API}/audit", headers=bearer(root), params={"limit": 1000}).json()
    assert api["count"] == 1 + PAGE_SIZE + 3 + 1  # the collection, the keys, the revoke

    first = client.get("/ui/audit")
    assert first.status_code == 200 and unlabelled(parse(first.text)) == []
    shown = events_on(first.text)
    expected = [(e["key_name"], e["action"], e["collection"] or "–") for e in api["data"]]
    assert shown == expected[:PAGE_SIZE]  # newest first, as the API
    assert shown[0] == ("root", "key_revoked", "–")
    pager = parse(first.text).by_id("audit-pager").text
    assert f"events 1–{PAGE_SIZE} of {api['count']}" in " ".join(pager.split())
    older = re.search(r'<a href="(/ui/audit\?[^"]*)">older ›</a>', first.text)
    assert older and parse_qs(urlsplit(html.unescape(older.group(1))).query) == {"page": ["2"]}
    second = client.get(html.unescape(older.group(1))).text
    assert events_on(second) == expected[PAGE_SIZE:]
    assert "older ›" not in second and "‹ newer" in second

    # filters: the API's parameters, kept by the pager
    revoked = client.get("/ui/audit", params={"action": "key_revoked"}).text
    assert events_on(revoked) == [("root", "key_revoked", "–")]
    assert 'value="key_revoked" selected' in revoked
    by_collection = client.get("/ui/audit", params={"collection": "crowd", "action": ""}).text
    assert events_on(by_collection) == [("root", "collection_created", "crowd")]
    created = client.get("/ui/audit", params={"action": "key_created"}).text
    link = re.search(r'<a href="(/ui/audit\?[^"]*)">older ›</a>', created)
    assert link and parse_qs(urlsplit(html.unescape(link.group(1))).query) == {
        "action": ["key_created"], "page": ["2"]}
    assert len(events_on(client.get(html.unescape(link.group(1))).text)) == 3
    newest = api["data"][0]["at"]
    since = client.get("/ui/audit", params={"since": newest}).text
    assert events_on(since) == [e for e, a in zip(expected, api["data"], strict=True)
                                if a["at"] >= newest]
    until = client.get("/ui/audit", params={"until": api["data"][-1]["at"]}).text
    assert "No events match these filters." in until

    # what the API refuses, the page shows with the API's code
    for params, status, code in [({"since": "yesterday"}, 422, "invalid_body"),
                                 ({"since": "1700000000"}, 422, "invalid_body"),
                                 ({"collection": "nowhere"}, 404, "collection_not_found"),
                                 ({"action": "key_revoke"}, 422, "invalid_body")]:
        page = client.get("/ui/audit", params=params)
        assert page.status_code == status, params
        assert f"<code>{code}</code>" in page.text and 'id="audit-events"' not in page.text
        api_answer = client.get(f"{API}/audit", headers=bearer(root), params=params)
        assert (api_answer.status_code, api_answer.json()["code"]) == (status, code)
    past = client.get("/ui/audit", params={"page": 9}).text
    assert 'id="audit-past-end"' in past
