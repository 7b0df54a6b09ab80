"""Creating a collection and uploading a run from the dashboard: the API's service functions
(the collection audited as the API does), once per form key, the API's errors in the form."""

from __future__ import annotations

import html
import re

from sqlalchemy import select

from app.auth.tables import AuditEvent
from app.collections.tables import Collection
from app.core.db import get_sessionmaker
from app.corpus.tables import Run
from tests.api.helpers import API, create_collection
from tests.ui.test_forms_once import assert_answered_again, count, form_fields, message

RUN = b"t1 Q0 d1 1 9.5 tagA\nt1 Q0 d2 2 3.1 tagA\nt2 Q0 d3 1 7.0 tagA\n"
BAD_RUN = b"t1 Q0 d1 1 9.5 r\nt1 Q0 d2 2 high r\n"  # line 2: the score is not a number


def form_error(page: str) -> str:
    """The text of the error box shown at the refused form."""
    box = re.search(r'<div class="error-box" id="form-error".*?</div>\s*</div>', page, re.S)
    assert box, "no error at the form"
    return html.unescape(box.group(0))


def new_collection(client, fields: dict[str, str], **values: str):  # type: ignore[no-untyped-def]
    return client.post("/ui/collections", data={**fields, **values}, follow_redirects=False)


def test_a_collection_is_created_from_the_home_page(client, database_url) -> None:
    home = client.get("/ui/").text
    assert '"relevant_from": 1, "ignore": [-2]' in html.unescape(home)  # the empty state's hint
    fields = form_fields(home, "/ui/collections")
    first = new_collection(client, fields, name="rf10", labels="0 1 2", relevant_from="1",
                           ignore="-2", description="")
    assert first.status_code == 303
    assert first.headers["location"].startswith("/ui/collections/rf10?")
    assert message(first.headers["location"]) == (
        "collection rf10 created (scale [0, 1, 2], relevant from 1, ignored [-2])")
    page = client.get(first.headers["location"])
    assert page.status_code == 200 and 'id="message"' in page.text
    stored = client.get(f"{API}/collections/rf10").json()
    assert (stored["labels"], stored["relevant_from"], stored["ignore"]) == ([0, 1, 2], 1, [-2])
    with get_sessionmaker(database_url)() as session:
        events = session.scalars(select(AuditEvent).where(
            AuditEvent.action == "collection_created")).all()
        assert [(e.collection, e.collection_id) for e in events] == [("rf10", stored["id"])]
    # sent again (a double click): the same answer, nothing more stored
    again = new_collection(client, fields, name="rf10", labels="0 1 2", relevant_from="1",
                           ignore="-2", description="")
    assert_answered_again(first, again)
    assert count(database_url, Collection) == 1
    assert count(database_url, AuditEvent) == 1
    # GET on the form's address: the home page
    assert client.get("/ui/collections", follow_redirects=False).headers["location"] == "/ui/"


def test_a_refused_collection_shows_the_apis_error_in_the_form(client, database_url) -> None:
    create_collection(client, name="rf10", labels=[0, 1, 2], relevant_from=1, ignore=[-2])
    fields = form_fields(client.get("/ui/").text, "/ui/collections")
    duplicate = new_collection(client, fields, name="rf10", labels="0 1")
    assert duplicate.status_code == 409
    assert "collection_exists" in form_error(duplicate.text)
    assert "a collection named 'rf10' already exists" in form_error(duplicate.text)
    assert 'value="rf10"' in duplicate.text  # the fields as sent
    # a new key comes with the refused form; the refused key was not used up
    fresh = form_fields(duplicate.text, "/ui/collections")
    assert fresh["form_key"] != fields["form_key"]
    # a scale whose relevant_from has no non-relevant label below it
    bad_scale = new_collection(client, fresh, name="other", labels="0 1 2", relevant_from="0")
    assert bad_scale.status_code == 422
    error = form_error(bad_scale.text)
    assert "invalid_body" in error and "relevant_from must be above the lowest label" in error
    # a label that is not a number: the field named
    not_number = new_collection(client, fresh, name="other", labels="0 one 2")
    assert not_number.status_code == 422
    assert "labels: whole numbers separated by spaces, not 'one'" in form_error(not_number.text)
    assert count(database_url, Collection) == 1
    assert count(database_url, AuditEvent) == 1  # the API's create above, none of the form's
    # the refused key was rolled back with its attempt: the corrected form is stored
    ok = new_collection(client, fields, name="other", labels="0 1")
    assert ok.status_code == 303 and count(database_url, Collection) == 2


def upload_run(client, fields: dict[str, str], name: str = "runA", content: bytes = RUN):  # type: ignore[no-untyped-def]
    return client.post("/ui/collections/crowd/runs", data={**fields, "name": name},
                       files={"file": ("run.txt", content, "text/plain")},
                       follow_redirects=False)


def test_a_run_is_uploaded_from_the_collection_page(client, database_url) -> None:
    create_collection(client, name="crowd", labels=[0, 1], relevant_from=1, ignore=[])
    page = client.get("/ui/collections/crowd").text
    assert "No runs yet." in page
    fields = form_fields(page, "/ui/collections/crowd/runs")
    first = upload_run(client, fields)
    assert first.status_code == 303
    # (no judgments yet: no topics to call unknown, as the API's unknown_topics)
    assert message(first.headers["location"]) == "run runA stored: 2 topics, 3 lines"
    again = upload_run(client, fields)
    assert_answered_again(first, again)
    assert count(database_url, Run) == 1
    page = client.get(first.headers["location"]).text
    row = re.search(r'<table class="data" id="runs">.*?</table>', page, re.S)
    assert row and re.search(r"<td>runA</td><td class=\"num\">2</td><td class=\"num\">3</td>",
                             row.group(0))
    listed = client.get(f"{API}/collections/crowd/runs").json()
    assert [(r["name"], r["n_topics"], r["n_lines"]) for r in listed["data"]] == [("runA", 2, 3)]
    assert client.get("/ui/collections/crowd/runs",
                      follow_redirects=False).headers["location"] == "/ui/collections/crowd"


def test_a_bad_run_is_refused_with_its_line(client, database_url) -> None:
    create_collection(client, name="crowd", labels=[0, 1], relevant_from=1, ignore=[])
    fields = form_fields(client.get("/ui/collections/crowd").text,
                         "/ui/collections/crowd/runs")
    bad = upload_run(client, fields, content=BAD_RUN)
    assert bad.status_code == 422
    error = form_error(bad.text)
    assert "invalid_row" in error and "line 2" in error
    assert 'value="runA"' in bad.text
    bad_name = upload_run(client, fields, name="-nope")
    assert bad_name.status_code == 422 and "invalid_body" in form_error(bad_name.text)
    assert count(database_url, Run) == 0
    # the same key, now with a good file: stored (the refused attempts took nothing)
    assert upload_run(client, fields).status_code == 303 and count(database_url, Run) == 1


def test_a_read_key_sees_the_forms_locked(database_url) -> None:
    from fastapi.testclient import TestClient

    from app.core.config import Settings
    from app.main import create_app
    from tests.auth.conftest import bearer, make_key

    settings = Settings(database_url=database_url, environment="test", auth="required",
                        warm_startup_s=0)
    admin = make_key(database_url, "alice", "admin")
    reader = make_key(database_url, "rita", "read")
    with TestClient(create_app(settings)) as client:
        assert client.post(f"{API}/collections", headers=bearer(admin), json={
            "name": "crowd", "labels": [0, 1], "relevant_from": 1}).status_code == 201
        page = client.get("/ui/login")
        token = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
        assert client.post("/ui/login", follow_redirects=False,
                           data={"key": reader, "csrf_token": token}).status_code == 303
        home = client.get("/ui/").text
        assert 'action="/ui/collections' not in home
        assert re.search(r'class="form-locked"><h3>New collection</h3>.*?<code>admin</code>.*?'
                         r"signed in as <code>rita</code>", home)
        page = client.get("/ui/collections/crowd").text
        assert 'action="/ui/collections/crowd/runs' not in page
        assert re.search(r'class="form-locked"><h3>Upload a run</h3>.*?<code>ingest</code>', page)
        # and the address itself refuses it
        refused = client.post("/ui/collections", follow_redirects=False,
                              data={"name": "mine", "csrf_token": token})
        assert refused.status_code == 403
    assert count(database_url, Collection) == 1
