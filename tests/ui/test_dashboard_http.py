"""The dashboard's HTTP plumbing, on SQLite and PostgreSQL: how browsers may keep pages and
static files (no-store with access control; gzip and a year for versioned assets), Plotly only
where a chart is, the what-to-judge-next table in pages, every form address answering GET, HTML
405s, signed messages with a kind, a replay that says so, and a refused form that opens at its
error."""

from __future__ import annotations

import gzip
import html
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient

from models.synthetic import generate
from tests.api.helpers import API, create_collection
from tests.ui.test_forms_once import ROWS, form_fields, upload
from tests.ui.test_pages import seed, token

PHISHING = "Session expired: re-enter your admin key at http://evil.example/"


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("synth-http")
    generate(200, 70, noise_level=(1.0, 4.0), redundancy=3, random_state=5).write(directory)
    return directory


def query(location: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def shown_message(page: str) -> tuple[str, str] | None:
    """(kind, text) of the page's message box, if any."""
    match = re.search(r'<p class="([a-z-]+)" id="message" data-kind="([a-z]+)"[^>]*>(.*?)</p>',
                      page, re.S)
    return (match.group(2), html.unescape(match.group(3))) if match else None


def wire(client, url: str, **headers: str):  # type: ignore[no-untyped-def]
    """(response, the body's bytes as sent, before any decoding)."""
    with client.stream("GET", url, headers=headers) as r:
        raw = b"".join(r.iter_raw())
    return r, raw


# --- 1. pages are not kept by the browser when access control is on ----------------------------

@pytest.fixture
def signed_in(database_url: str) -> Iterator[TestClient]:
    """A client signed in to the dashboard with an admin key (access control on), and a
    collection "crowd"."""
    from app.core.config import Settings
    from app.main import create_app
    from tests.auth.conftest import bearer, make_key

    settings = Settings(database_url=database_url, environment="test", auth="required",
                        warm_startup_s=0)
    key = make_key(database_url, "admin", "admin")
    with TestClient(create_app(settings)) as client:
        login = client.get("/ui/login")
        assert client.post("/ui/login", follow_redirects=False, data={
            "key": key, "csrf_token": token(login.text)}).status_code == 303
        assert client.post(f"{API}/collections", headers=bearer(key), json={
            "name": "crowd", "labels": [0, 1], "relevant_from": 1}).status_code == 201
        yield client


def test_signed_in_pages_are_not_stored_and_static_files_are(signed_in) -> None:
    """With access control on, no page may be kept (Back after signing out showed the data);
    the static files stay cacheable."""
    client = signed_in
    home = client.get("/ui/")
    assert home.status_code == 200 and "sign out" in home.text
    for url in ("/ui/", "/ui/collections/crowd", "/ui/collections/crowd/comparison",
                "/ui/collections/nope", "/ui/collections/crowd/judgments"):
        r = client.get(url, follow_redirects=False)
        assert r.headers.get("cache-control") == "no-store", (url, r.status_code)
    assert client.get("/ui/login").headers["cache-control"] == "no-store"
    css = re.search(r'href="(/ui/static/app\.css\?v=[^"]+)"', home.text).group(1)  # type: ignore[union-attr]
    r = client.get(css)
    assert r.status_code == 200 and "no-store" not in r.headers["cache-control"]
    assert "max-age=31536000" in r.headers["cache-control"]


def test_without_access_control_pages_keep_their_caching(client) -> None:
    """Without access control nothing is private, and a page the browser keeps comes back from
    Back with the form keys it had: no no-store."""
    assert "no-store" not in client.get("/ui/").headers.get("cache-control", "")


# --- 2. static files: compressed, versioned, kept a year ---------------------------------------

def test_static_files_are_compressed_and_kept_a_year_when_versioned(client, synthetic) -> None:
    a = seed(client, synthetic)
    page = client.get("/ui/collections/crowd").text
    plotly = re.search(r'src="(/ui/static/plotly\.min\.js\?v=[^"]+)"', page).group(1)  # type: ignore[union-attr]
    from importlib.metadata import version

    import plotly as plotly_package

    original = (Path(plotly_package.__file__).parent / "package_data" / "plotly.min.js"
                ).read_bytes()
    assert plotly.endswith(f"?v={version('plotly')}")

    r, raw = wire(client, plotly, **{"accept-encoding": "gzip, deflate, br"})
    assert r.status_code == 200 and r.headers["content-encoding"] == "gzip"
    assert gzip.decompress(raw) == original
    assert len(raw) < 0.4 * len(original) and int(r.headers["content-length"]) == len(raw)
    assert r.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert "accept-encoding" in r.headers["vary"].lower()
    etag = r.headers["etag"]
    assert etag.startswith('W/"')
    again = client.get(plotly, headers={"accept-encoding": "gzip", "if-none-match": etag})
    assert again.status_code == 304 and again.content == b""
    # the same response, compressed once: a second request sends the same bytes
    assert wire(client, plotly, **{"accept-encoding": "gzip"})[1] == raw

    assert "accept-ranges" not in r.headers  # ranges are of the file as it is:
    part = client.get(plotly, headers={"accept-encoding": "gzip", "range": "bytes=0-99"})
    assert part.status_code == 206 and part.content == original[:100]
    assert "content-encoding" not in part.headers
    # a browser that takes no gzip gets the file as it is
    for refuses in ("identity", "gzip;q=0, deflate"):
        r, raw = wire(client, plotly, **{"accept-encoding": refuses})
        assert "content-encoding" not in r.headers and raw == original, refuses
        assert "accept-encoding" in r.headers["vary"].lower()  # for caches between
    # a link without the file's version (or with another) is kept a day only
    for url in ("/ui/static/plotly.min.js", "/ui/static/plotly.min.js?v=0.0.1"):
        assert client.get(url).headers["cache-control"] == "public, max-age=86400", url

    for name in ("app.js", "app.css"):
        url = re.search(rf'"(/ui/static/{re.escape(name)}\?v=[0-9a-f]{{12}})"', page).group(1)  # type: ignore[union-attr]
        r, raw = wire(client, url, **{"accept-encoding": "gzip"})
        assert r.headers["content-encoding"] == "gzip", name
        assert r.headers["cache-control"].endswith("immutable")
        assert gzip.decompress(raw) == (Path("app/ui/static") / name).read_bytes()
    assert 'href="/ui/static/favicon.svg?v=' in page

    # the API docs' scripts too, linked by the package's version
    docs = client.get("/docs").text + client.get("/redoc").text
    offline = version("fastapi-offline")
    for name in ("swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js"):
        url = f"/ui/static/{name}?v={offline}"
        assert url in docs, name
        r, raw = wire(client, url, **{"accept-encoding": "gzip"})
        assert r.status_code == 200 and r.headers["content-encoding"] == "gzip", name
        assert r.headers["cache-control"].endswith("immutable"), name

    # the JSON API is never compressed here (listings and uploads keep their speed)
    r, _ = wire(client, f"{API}/aggregations/{a}/annotators?limit=1000",
                **{"accept-encoding": "gzip"})
    assert r.status_code == 200 and "content-encoding" not in r.headers
    # nor are the pages
    assert "content-encoding" not in client.get("/ui/collections/crowd",
                                                headers={"accept-encoding": "gzip"}).headers


def test_plotly_is_loaded_only_where_there_is_a_chart(client, synthetic) -> None:
    a = seed(client, synthetic)
    with_charts = ("/ui/collections/crowd", f"/ui/aggregations/{a}",
                   "/ui/collections/crowd/comparison")
    without = ("/ui/", f"/ui/aggregations/{a}/next", "/ui/collections/nope")
    for url in with_charts:
        assert "plotly.min.js" in client.get(url).text, url
    for url in without:
        page = client.get(url).text
        assert "plotly.min.js" not in page and "/ui/static/app.js?v=" in page, url


# --- 3. the next tasks in pages ----------------------------------------------------------------

def next_rows(page: str) -> list[tuple[int, str, str]]:
    """(#, doc, goes to) of each row of the next-tasks table."""
    body = re.search(r'<table class="data" id="next-tasks">(.*?)</table>', page, re.S)
    assert body, "no table"
    rows = []
    for row in re.findall(r"<tr><td class=\"num\">(\d+)</td>(.*?)</tr>", body.group(1), re.S):
        doc = re.search(r'/tasks/\d+">([^<]+)</a>', row[1]).group(1)  # type: ignore[union-attr]
        assigned = re.search(r'<td class="assigned">(?:<a [^>]+>([^<]+)</a>|.*?)</td>', row[1],
                             re.S).group(1)  # type: ignore[union-attr]
        rows.append((int(row[0]), html.unescape(doc), html.unescape(assigned or "")))
    return rows


def test_the_next_tasks_come_in_pages_of_the_api_list(client, synthetic) -> None:
    """n=10000 rendered every row (8.4 MB of HTML on RF10); the table now shows 50 a page, the
    rows the API's whole list has at those ranks, and the downloads keep the whole list."""
    a = seed(client, synthetic)
    url = f"/ui/aggregations/{a}/next"
    listed = client.get(f"{API}/aggregations/{a}/next",
                        params={"n": 120, "per_annotator": 3}).json()["data"]
    whole = [(i, t["doc"], t["assigned"] or "") for i, t in enumerate(listed, start=1)]
    first = client.get(url, params={"n": 120, "per_annotator": 3})
    assert first.status_code == 200
    assert next_rows(first.text) == whole[:50]
    assert "page 1 (tasks 1–50 of up to 120)" in first.text
    assert 'id="next-tsv"' in first.text and "page=" not in re.search(
        r'id="next-tsv" href="([^"]+)"', first.text).group(1)  # type: ignore[union-attr]
    second = client.get(url, params={"n": 120, "per_annotator": 3, "page": 2})
    assert next_rows(second.text) == whole[50:100]
    third = client.get(url, params={"n": 120, "per_annotator": 3, "page": 3})
    assert next_rows(third.text) == whole[100:120]
    assert "page 3 of 3 (tasks 101–120 of 120)" in third.text and "next ›" not in third.text
    assert "page=2" in third.text and "per_annotator=3" in third.text  # the previous page
    past = client.get(url, params={"n": 120, "page": 9})
    assert past.status_code == 200 and 'id="next-past-end"' in past.text
    assert "the list has 120 tasks" in past.text and "page=3" in past.text

    # every task at once: 200 tasks in four pages of at most 50 rows
    everything = client.get(url, params={"n": 10000})
    assert len(next_rows(everything.text)) == 50 and "of up to 10,000" in everything.text
    last = client.get(url, params={"n": 10000, "page": 4})
    assert len(next_rows(last.text)) == 50 and "page 4 of 4 (tasks 151–200 of 200)" in last.text

    # the random order: its first page draws a seed that its other pages and downloads keep
    shuffled = client.get(url, params={"n": 100, "strategy": "random"}).text
    seed_value = re.search(r'href="[^"]*/next\?[^"]*seed=(\d+)[^"]*page=2', shuffled).group(1)  # type: ignore[union-attr]
    assert f"seed={seed_value}" in re.search(r'id="next-tsv" href="([^"]+)"', shuffled).group(1)  # type: ignore[union-attr]
    drawn = client.get(f"{API}/aggregations/{a}/next", params={
        "n": 100, "strategy": "random", "seed": seed_value}).json()["data"]
    page_two = client.get(url, params={"n": 100, "strategy": "random", "seed": seed_value,
                                       "page": 2})
    assert [r[1] for r in next_rows(page_two.text)] == [t["doc"] for t in drawn[50:]]
    assert [r[1] for r in next_rows(shuffled)] == [t["doc"] for t in drawn[:50]]
    assert client.get(url, params={"page": 0}).status_code == 422


# --- 4. every form address answers GET; other methods get an HTML 405 ---------------------------

def test_every_post_only_dashboard_address_answers_get_with_its_page(client, synthetic) -> None:
    from tests.api.sampling.test_sampling import setup_collection as sampling_collection
    from tests.auth.test_route_scopes import api_routes

    routes = api_routes(client.app)
    gets = {path for method, path, _ in routes if method == "GET"}
    posts = {path for method, path, _ in routes if method == "POST" and path.startswith("/ui/")}
    assert len(posts) >= 8 and posts <= gets, sorted(posts - gets)

    a = seed(client, synthetic)
    sampling_collection(client)
    s = client.post(f"{API}/collections/pool/samplings",
                    json={"budget_per_round": 4, "seed": 1}).json()["id"]
    for address, page in [(f"/ui/aggregations/{a}/cancel", "/ui/collections/crowd"),
                          (f"/ui/samplings/{s}/rounds", f"/ui/samplings/{s}"),
                          ("/ui/collections/crowd/judgments", "/ui/collections/crowd"),
                          ("/ui/collections/pool/samplings", "/ui/collections/pool")]:
        r = client.get(address, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == page, address
        assert client.get(address).status_code == 200
    assert client.get("/ui/aggregations/999/cancel").status_code == 404
    assert client.get("/ui/samplings/999/rounds").status_code == 404

    for method, url in [("PUT", "/ui/collections/crowd"), ("DELETE", f"/ui/aggregations/{a}"),
                        ("POST", "/ui/collections/crowd"), ("PATCH", "/ui/samplings/1/rounds")]:
        r = client.request(method, url)
        assert r.status_code == 405 and "text/html" in r.headers["content-type"], (method, url)
        assert "method_not_allowed" in r.text and "Traceback" not in r.text
        assert r.headers.get("allow"), (method, url)
    # the JSON API keeps its JSON 405
    r = client.put(f"{API}/collections")
    assert r.status_code == 405 and r.json()["code"] == "method_not_allowed"
    assert r.headers["allow"] == "GET, POST"


# --- 6, 7. signed messages with a kind ---------------------------------------------------------

def test_a_message_shows_only_when_the_dashboard_signed_it_for_this_browser(client) -> None:
    create_collection(client, name="crowd", labels=[0, 1], relevant_from=1, ignore=[])
    spoofed = client.get("/ui/collections/crowd", params={"msg": PHISHING})
    assert spoofed.status_code == 200 and shown_message(spoofed.text) is None
    assert "evil.example" not in spoofed.text
    forged = client.get("/ui/collections/crowd", params={"msg": PHISHING, "sig": "x" * 24})
    assert "evil.example" not in forged.text

    fields = form_fields(client.get("/ui/collections/crowd").text,
                         "/ui/collections/crowd/judgments")
    stored = upload(client, fields)
    location = stored.headers["location"]
    assert set(query(location)) == {"msg", "sig"} and location.endswith("#top")
    assert shown_message(client.get(location).text) == (
        "ok", "stored 3 judgments (3 new tasks, 2 new annotators, 0 gold labels) from j.tsv")
    # the signature holds for its text only, and for this browser only
    params = query(location)
    other_text = client.get("/ui/collections/crowd", params={**params, "msg": PHISHING})
    assert shown_message(other_text.text) is None and "evil.example" not in other_text.text
    as_error = client.get("/ui/collections/crowd", params={**params, "kind": "error"})
    assert shown_message(as_error.text) is None
    csrf = client.cookies.get("crowdqrels_csrf")
    client.cookies.clear()
    assert shown_message(client.get(location).text) is None  # another browser
    client.cookies.clear()
    client.cookies.set("crowdqrels_csrf", csrf, domain="testserver.local")  # the first again
    assert shown_message(client.get(location).text) is not None
    # a file with a header column nothing reads: the message names it (as the API's reply)
    fields = form_fields(client.get("/ui/collections/crowd").text,
                         "/ui/collections/crowd/judgments")
    extra = upload(client, fields,
                   content=b"topic\tdoc\tannotator\tlabel\thitID\nt9\td1\tw1\t1\th\n")
    assert shown_message(client.get(extra.headers["location"]).text) == (
        "ok", "stored 1 judgment (1 new task, 0 new annotators, 0 gold labels) from j.tsv; "
              "columns not read: hitID")

    # the sampling page too
    spoofed = client.get("/ui/samplings/1", params={"msg": PHISHING})
    assert "evil.example" not in spoofed.text


def test_a_failed_cancel_is_an_error_message(client, synthetic) -> None:
    """A cancel sent from a page opened while the fit ran, after it succeeded: not a green
    success box."""
    a = seed(client, synthetic)
    fields = {"csrf_token": token(client.get("/ui/collections/crowd").text),
              "form_key": uuid.uuid4().hex}
    r = client.post(f"/ui/aggregations/{a}/cancel", data=fields, follow_redirects=False)
    assert r.status_code == 303 and query(r.headers["location"])["kind"] == "error"
    page = client.get(r.headers["location"]).text
    assert shown_message(page) == ("error", f"fit #{a}: aggregation {a} has already succeeded")
    assert re.search(r'<p class="error-box" id="message" data-kind="error" role="alert">', page)


# --- 8. a replayed form says it was already sent ------------------------------------------------

def test_a_form_sent_again_says_it_was_already_sent(client) -> None:
    create_collection(client, name="crowd", labels=[0, 1], relevant_from=1, ignore=[])
    fields = form_fields(client.get("/ui/collections/crowd").text,
                         "/ui/collections/crowd/judgments")
    first, second = upload(client, fields), upload(client, fields)
    assert query(first.headers["location"])["msg"].startswith("stored 3 judgments")
    assert query(second.headers["location"])["msg"] == (
        "this form was already sent: " + query(first.headers["location"])["msg"])
    kind, text = shown_message(client.get(second.headers["location"]).text)  # type: ignore[misc]
    assert kind == "ok" and text.startswith("this form was already sent: stored 3 judgments")
    third = upload(client, fields)  # never "already sent: already sent"
    assert third.headers["location"] == second.headers["location"]
    assert client.get(f"{API}/collections/crowd").json()["counts"]["judgments"] == 3


# --- 5. a refused form opens at its error -------------------------------------------------------

def test_a_refused_form_opens_at_its_error_with_a_notice_on_top(client) -> None:
    create_collection(client, name="crowd", labels=[0, 1], relevant_from=1, ignore=[])
    page = client.get("/ui/collections/crowd").text
    for form in ("aggregations", "judgments", "gold", "evaluations", "samplings"):
        assert f'action="/ui/collections/crowd/{form}#form-error"' in page, form
    bad = b"topic\tdoc\tannotator\tlabel\nt1\td1\tw1\t1\nt1\td2\tw1\t7\n"
    refused = upload(client, form_fields(page, "/ui/collections/crowd/judgments"), bad)
    assert refused.status_code == 422
    notice = refused.text.index('id="error-notice"')
    box = refused.text.index('id="form-error"')
    assert notice < refused.text.index('id="judgments-form"') < box
    assert re.search(r'id="error-notice">The judgment file was not accepted '
                     r'\(label_out_of_scale\): <a href="#form-error">', refused.text)
    assert re.search(r'<div class="error-box" id="form-error" role="alert" tabindex="-1" '
                     r'autofocus>', refused.text)
    assert refused.text.count("autofocus") == 1
    # once accepted, the page opens at its top, where the message is
    fixed = upload(client, form_fields(refused.text, "/ui/collections/crowd/judgments"), ROWS)
    assert fixed.headers["location"].endswith("#top")
    assert 'id="top"' in client.get(fixed.headers["location"]).text
