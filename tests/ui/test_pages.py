"""Dashboard pages through the test client, on SQLite and PostgreSQL: content, forms, errors,
the annotator listing's cached ordering (ETag/304) and the offline API docs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from models.synthetic import generate
from tests.api.helpers import API, TSV, create_collection
from tests.api.jobs import wait_for


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("synth-ui")
    generate(200, 70, noise_level=(1.0, 4.0), redundancy=3, random_state=5).write(directory)
    return directory


def seed(client, directory: Path, *, fit: bool = True) -> int | None:
    create_collection(client, name="crowd", labels=[0, 1], relevant_from=1, ignore=[])
    r = client.post(f"{API}/collections/crowd/judgments/file",
                    content=(directory / "judgments.tsv").read_bytes(), headers=TSV)
    assert r.status_code == 201, r.text
    r = client.put(f"{API}/collections/crowd/gold", content=(directory / "gold.qrels").read_bytes())
    assert r.status_code == 200, r.text
    if not fit:
        return None
    created = client.post(f"{API}/collections/crowd/aggregations",
                          json={"method": "mv", "seed": 1}).json()
    assert wait_for(client, created["id"])["status"] == "succeeded"
    return int(created["id"])


def figures(html: str) -> dict:
    match = re.search(r'<script type="application/json" id="figures">(.*?)</script>', html, re.S)
    assert match, "the page has no figures"
    return json.loads(match.group(1).replace("<\\/", "</"))


def token(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match
    return match.group(1)


def test_every_page_renders_what_the_api_reads(client, synthetic) -> None:
    a = seed(client, synthetic)

    home = client.get("/")
    assert home.status_code == 200 and "text/html" in home.headers["content-type"]
    assert '/ui/collections/crowd"' in home.text and "600" in home.text  # judgments
    assert 'href="/ui/logout"' not in home.text  # access control off: nobody signs in
    assert "crowdqrels_csrf" in home.headers.get("set-cookie", "")  # for the pages' forms

    page = client.get("/ui/collections/crowd")
    assert page.status_code == 200
    figs = figures(page.text)
    assert set(figs) == {"per_task", "per_annotator", "labels", "gold"}
    assert figs["per_task"]["data"][0]["x"] == [3] and figs["per_task"]["data"][0]["y"] == [200]
    assert sum(figs["labels"]["data"][0]["y"]) == 600
    assert figs["gold"]["data"][0]["y"] == [200, 0, 0]  # labelled, could not judge, without
    assert f'href="/ui/aggregations/{a}"' in page.text and "succeeded" in page.text
    assert 'id="fit-form"' in page.text and 'data-defaults=' in page.text

    agg = client.get(f"/ui/aggregations/{a}")
    assert agg.status_code == 200
    figs = figures(agg.text)
    assert {"competence", "scatter", "uncertainty", "p_relevant", "per_topic"} <= set(figs)
    scatter = figs["scatter"]
    assert scatter["layout"]["xaxis"]["type"] == "log"
    listed = client.get(f"{API}/aggregations/{a}/annotators?limit=1000").json()["data"]
    assert len(scatter["data"][0]["x"]) == sum(r["competence"] is not None for r in listed) > 20
    assert scatter["data"][0]["marker"]["showscale"] is True  # coloured by gold accuracy
    assert sum(figs["uncertainty"]["data"][0]["y"]) == 200
    evaluation = client.get(f"{API}/aggregations/{a}").json()["evaluation"]
    assert f"{evaluation['accuracy']:.3f}" in agg.text
    # the reliability diagram: its bins are the evaluation's, the diagonal beside them
    bins = evaluation["reliability"]
    points = figs["reliability"]["data"][1]
    assert len(points["x"]) == sum(c > 0 for c in bins["count"])
    assert sum(int(t) for t in points["text"]) == evaluation["n_gold"] == 200
    assert f"{evaluation['ece']:.3f}" in agg.text and 'id="evaluation"' in agg.text
    for fmt in ("trec", "tsv", "json"):
        assert f'value="{fmt}"' in agg.text
    task_id = re.search(rf'/ui/aggregations/{a}/tasks/(\d+)"', agg.text).group(1)

    tasks = client.get(f"{API}/aggregations/{a}/tasks?sort=-uncertainty&limit=1").json()["data"]
    task = client.get(f"/ui/aggregations/{a}/tasks/{tasks[0]['task_id']}")
    assert task.status_code == 200 and tasks[0]["doc"] in task.text
    assert client.get(f"/ui/aggregations/{a}/tasks/{task_id}").status_code == 200
    detail = client.get(f"{API}/aggregations/{a}/tasks/{task_id}").json()
    assert len(detail["judgments"]) == 3
    assert all(j["competence"] is not None for j in detail["judgments"])
    assert set(figures(task.text)) == {"posterior", "votes"}

    annotator = detail["judgments"][0]["annotator"]
    page = client.get(f"/ui/collections/crowd/annotators/{annotator}")
    assert page.status_code == 200
    figs = figures(page.text)
    assert {"history", "vs_gold", "vs_aggregated"} <= set(figs)
    confusion = client.get(f"{API}/collections/crowd/annotators/{annotator}/confusion").json()
    n = client.get(f"{API}/collections/crowd/judgments?annotator={annotator}&limit=1").json()
    assert confusion["vs_gold"]["total"] == n["count"] == confusion["vs_aggregated"]["total"]
    assert figs["vs_gold"]["data"][0]["z"] == confusion["vs_gold"]["counts"]

    comparison = client.get("/ui/collections/crowd/comparison")
    assert comparison.status_code == 200
    figs = figures(comparison.text)
    assert figs["agreement"]["data"][0]["z"] == [[1.0]]
    assert {"metrics", "agreement"} <= set(figs)


def test_annotator_listing_pages_come_from_one_cached_ordering(client, synthetic) -> None:
    a = seed(client, synthetic)
    url = f"{API}/aggregations/{a}/annotators"
    first = client.get(url, params={"sort": "-competence", "limit": 50})
    assert first.status_code == 200
    body = first.json()
    assert body["count"] == 57 and len(body["data"]) == 50
    competences = [r["competence"] for r in body["data"]]
    assert competences == sorted(competences, reverse=True)
    rest = client.get(url, params={"sort": "-competence", "limit": 50, "offset": 50}).json()
    assert len(rest["data"]) == 7
    names = [r["annotator"] for r in body["data"] + rest["data"]]
    assert len(set(names)) == 57
    # Ties broken by annotator id, as the database sorts: the same pages as an uncached read.
    assert rest["data"][-1]["competence"] <= body["data"][-1]["competence"]

    etag = first.headers["etag"]
    assert "max-age" in first.headers["cache-control"]
    again = client.get(url, params={"sort": "-competence", "limit": 50},
                       headers={"if-none-match": etag})
    assert again.status_code == 304 and again.content == b""
    other = client.get(url, params={"sort": "-competence", "limit": 50, "offset": 50},
                       headers={"if-none-match": etag})
    assert other.status_code == 200 and other.headers["etag"] != etag

    by_name = client.get(url, params={"sort": "annotator", "limit": 100}).json()["data"]
    assert [r["annotator"] for r in by_name] == sorted(r["annotator"] for r in by_name)
    some = names[3]
    filtered = client.get(url, params={"q": some.upper(), "limit": 100}).json()
    assert some in [r["annotator"] for r in filtered["data"]]
    assert all(some.lower() in r["annotator"].lower() for r in filtered["data"])
    heavy = client.get(url, params={"min_judgments": 6, "limit": 100}).json()
    assert heavy["count"] == sum(1 for r in body["data"] + rest["data"] if r["n_judgments"] >= 6)
    bad = client.get(url, params={"sort": "-shoe_size"})
    assert bad.status_code == 422 and bad.json()["code"] == "invalid_sort"
    assert client.get(f"{API}/aggregations/999/annotators").status_code == 404


def test_forms_validate_like_the_api_and_say_where(client, synthetic) -> None:
    seed(client, synthetic, fit=False)
    page = client.get("/ui/collections/crowd")
    csrf = token(page.text)

    bad = b"topic\tdoc\tannotator\tlabel\nt1\td1\tw1\t1\nt1\td2\tw1\tseven\n"
    r = client.post("/ui/collections/crowd/judgments", data={"csrf_token": csrf},
                    files={"file": ("bad.tsv", bad, "text/tab-separated-values")})
    assert r.status_code == 422 and "text/html" in r.headers["content-type"]
    assert 'id="form-error"' in r.text and "line 3" in r.text and "invalid_row" in r.text
    assert "Traceback" not in r.text

    out_of_scale = b"topic\tdoc\tannotator\tlabel\nt1\td1\tw1\t1\nt1\td2\tw1\t5\n"
    r = client.post("/ui/collections/crowd/judgments", data={"csrf_token": csrf},
                    files={"file": ("s.tsv", out_of_scale, "text/tab-separated-values")})
    assert r.status_code == 422 and "label_out_of_scale" in r.text and "line 3" in r.text

    r = client.post("/ui/collections/crowd/judgments", data={"csrf_token": "forged" * 8},
                    files={"file": ("ok.tsv", bad, "text/tab-separated-values")})
    assert r.status_code == 403 and "csrf_failed" in r.text

    good = b"topic\tdoc\tannotator\tlabel\nt9\td1\tnew-worker\t1\nt9\td2\tnew-worker\t0\n"
    r = client.post("/ui/collections/crowd/judgments", data={"csrf_token": csrf},
                    files={"file": ("ok.tsv", good, "text/tab-separated-values")},
                    follow_redirects=False)
    assert r.status_code == 303
    assert "stored 2 judgments" in client.get(r.headers["location"]).text
    assert client.get(f"{API}/collections/crowd").json()["counts"]["judgments"] == 602

    r = client.post("/ui/collections/crowd/gold", data={"csrf_token": csrf, "mode": "merge"},
                    files={"file": ("g.qrels", b"t9 0 d1 1\nt9 0 d2 4\n", "text/plain")})
    assert r.status_code == 422 and "gold_out_of_scale" in r.text and "line 2" in r.text

    r = client.post("/ui/collections/crowd/aggregations",
                    data={"csrf_token": csrf, "method": "mace", "params": '{"n_restarts": "x"}',
                          "seed": "42", "graded": "on"})
    assert r.status_code == 422 and "invalid_params" in r.text
    # the form comes back as it was sent, beside the error
    assert '<option value="mace" data-defaults=' in r.text
    assert re.search(r'<option value="mace"[^>]*selected>', r.text)
    assert '{&#34;n_restarts&#34;: &#34;x&#34;}</textarea>' in r.text
    assert 'id="fit-seed" value="42"' in r.text and 'value="on" checked' in r.text
    r = client.post("/ui/collections/crowd/evaluations",
                    data={"csrf_token": csrf, "source": "gold", "runs": "runA runB",
                          "measures": "P@10 bogus", "samples": "200", "seed": "7"})
    assert r.status_code in (404, 422) and 'id="form-error"' in r.text
    for kept in ('id="evaluation-runs" value="runA runB"', 'value="P@10 bogus"', 'value="200"',
                 '<option value="gold" selected>'):
        assert kept in r.text, kept
    r = client.post("/ui/collections/crowd/samplings",
                    data={"csrf_token": csrf, "strategy": "depth", "budget_per_round": "999999",
                          "runs": "runZ", "depth": "50", "method": "mace", "seed": "3"})
    assert r.status_code in (404, 422) and 'id="form-error"' in r.text
    for kept in ("<option selected>depth</option>", 'value="999999"', 'value="runZ"',
                 'value="50"', "<option selected>mace</option>"):
        assert kept in r.text, kept
    # the address bar now shows the form's address: opened again, it is the collection's page
    for form in ("aggregations", "judgments", "gold", "evaluations", "samplings"):
        again = client.get(f"/ui/collections/crowd/{form}", follow_redirects=False)
        assert again.status_code == 303 and again.headers["location"] == "/ui/collections/crowd"
    assert client.get("/ui/collections/crowd/nonsense").status_code == 404
    r = client.post("/ui/collections/crowd/aggregations",
                    data={"csrf_token": csrf, "method": "mv", "params": "{}", "seed": "-5"})
    assert r.status_code == 422 and "seed" in r.text and 'id="fit-seed" value="-5"' in r.text
    r = client.post("/ui/collections/crowd/aggregations",
                    data={"csrf_token": csrf, "method": "mace", "params": "{oops"})
    assert r.status_code == 422 and "not JSON" in r.text
    r = client.post("/ui/collections/crowd/aggregations",
                    data={"csrf_token": csrf, "method": "nope", "params": "{}"})
    assert r.status_code == 422 and "unknown_method" in r.text
    r = client.post("/ui/collections/crowd/aggregations",
                    data={"csrf_token": csrf, "method": "mv", "params": "{}", "seed": "3"},
                    follow_redirects=False)
    assert r.status_code == 303
    fits = client.get(f"{API}/collections/crowd/aggregations").json()["data"]
    assert len(fits) == 1 and fits[0]["method"] == "mv"
    done = wait_for(client, fits[0]["id"])
    r = client.post(f"/ui/aggregations/{done['id']}/cancel", data={"csrf_token": csrf})
    assert r.status_code == 200 and "already succeeded" in r.text


def test_unknown_ids_and_bad_input_get_readable_pages(client) -> None:
    create_collection(client, name="empty", labels=[0, 1], relevant_from=1, ignore=[])
    for url, status, text in [
        ("/ui/collections/nope", 404, "no collection &#39;nope&#39;"),
        ("/ui/aggregations/12345", 404, "no aggregation 12345"),
        ("/ui/aggregations/12345/tasks/1", 404, "no aggregation 12345"),
        ("/ui/collections/nope/comparison", 404, "no collection"),
        ("/ui/collections/empty/annotators/ghost", 404, "no annotator"),
        ("/ui/aggregations/abc", 422, "a valid integer"),
        ("/ui/collections/empty/annotators/ghost?page=0", 422, "page"),
        ("/ui/no/such/page", 404, "no such page"),
    ]:
        r = client.get(url)
        assert r.status_code == status, (url, r.text)
        assert "text/html" in r.headers["content-type"], url
        assert text in r.text, (url, r.text)
        assert "Traceback" not in r.text
    # The JSON API keeps its JSON errors.
    r = client.get(f"{API}/collections/nope")
    assert r.status_code == 404 and r.json()["code"] == "collection_not_found"
    empty = client.get("/ui/collections/empty")
    assert empty.status_code == 200 and "No fits yet" in empty.text
    r = client.post("/ui/collections/empty/aggregations",
                    data={"csrf_token": token(empty.text), "method": "mv"})
    assert r.status_code == 422 and "empty_collection" in r.text
    assert client.get("/ui/collections/empty/comparison").status_code == 200


def test_api_docs_and_charts_load_from_the_app(client) -> None:
    docs = client.get("/docs")
    assert docs.status_code == 200
    redoc = client.get("/redoc")
    assert redoc.status_code == 200
    for page in (docs.text, redoc.text):
        assert "cdn" not in page.lower() and "googleapis" not in page
    for asset in re.findall(r'(?:src|href)="(/ui/static/[^"]+)"', docs.text + redoc.text):
        assert client.get(asset).status_code == 200, asset
    assert "/ui/static/swagger-ui-bundle.js" in docs.text
    assert "/ui/static/redoc.standalone.js" in redoc.text
    home = client.get("/")
    for asset in re.findall(r'(?:src|href)="(/ui/static/[^"]+)"', home.text):
        r = client.get(asset)
        assert r.status_code == 200 and len(r.content) > 100, asset
    plotly = client.get("/ui/static/plotly.min.js")
    assert b"plotly.js" in plotly.content[:2000]
    assert "max-age" in plotly.headers["cache-control"]
    # cached for a year, so linked by content: a new script or stylesheet gets a new address
    import hashlib
    from importlib.metadata import version

    create_collection(client, name="charts", labels=[0, 1], relevant_from=1, ignore=[])
    assert client.post(f"{API}/collections/charts/judgments", json={"judgments": [
        {"topic": "t", "doc": "d", "annotator": "w", "label": 1}]}).status_code == 201
    page = client.get("/ui/collections/charts").text  # a page with charts
    for name in ("app.js", "app.css"):
        body = client.get(f"/ui/static/{name}").content
        assert f'/ui/static/{name}?v={hashlib.sha256(body).hexdigest()[:12]}"' in page, name
    assert f'/ui/static/plotly.min.js?v={version("plotly")}"' in page


def app_as_caller(settings):  # type: ignore[no-untyped-def]
    """An application whose every request is made by ``caller["principal"]`` (None: as access
    control decides), to set in the test."""
    from fastapi import Request

    from app.auth.principal import Principal
    from app.main import create_app

    app = create_app(settings)
    caller: dict[str, Principal | None] = {"principal": None}

    @app.middleware("http")
    async def as_caller(request: Request, call_next):  # type: ignore[no-untyped-def]
        request.state.principal = caller["principal"]
        return await call_next(request)

    return app, caller


def test_pages_follow_the_api_access_rules(settings, synthetic) -> None:
    """A caller limited to other collections sees none of this one; a read key cannot post."""
    from fastapi.testclient import TestClient

    from app.auth.principal import Principal

    app, caller = app_as_caller(settings)
    with TestClient(app) as client:
        a = seed(client, synthetic)
        csrf = token(client.get("/ui/collections/crowd").text)
        # The listing's ordering is cached now: the cached path checks access too.
        assert client.get(f"{API}/aggregations/{a}/annotators").status_code == 200
        caller["principal"] = Principal(name="elsewhere", scope="admin",
                                        collections=frozenset({999}))
        assert "/ui/collections/crowd" not in client.get("/").text
        for url in ("/ui/collections/crowd", f"/ui/aggregations/{a}",
                    "/ui/collections/crowd/comparison", f"/ui/aggregations/{a}/tasks/1",
                    f"/ui/aggregations/{a}/next"):
            r = client.get(url)
            assert r.status_code == 404 and "text/html" in r.headers["content-type"], url
        assert client.get(f"{API}/aggregations/{a}/annotators").status_code == 404

        caller["principal"] = Principal(name="reader", scope="read")
        assert client.get(f"/ui/aggregations/{a}").status_code == 200
        assert client.get(f"/ui/aggregations/{a}/next").status_code == 200
        r = client.post("/ui/collections/crowd/aggregations",
                        data={"csrf_token": csrf, "method": "mv"})
        assert r.status_code == 403 and "insufficient_scope" in r.text
        r = client.post("/ui/collections/crowd/judgments", data={"csrf_token": csrf},
                        files={"file": ("x.tsv", b"doc\tannotator\tlabel\nd\tw\t1\n")})
        assert r.status_code == 403
        assert client.get(f"{API}/collections/crowd/aggregations").json()["count"] == 1


def test_home_lists_the_collections_a_limited_key_may_see(settings, monkeypatch) -> None:
    """The home page asks for the caller's collections, then takes the first HOME_LIMIT: a key
    limited to a later collection sees it (taking the first ones and then filtering showed it
    none), and a longer list says how many there are and where the rest is."""
    from fastapi.testclient import TestClient

    import app.ui.pages.collections as ui_router
    from app.auth.principal import Principal

    app, caller = app_as_caller(settings)
    monkeypatch.setattr(ui_router, "HOME_LIMIT", 2)
    with TestClient(app) as client:
        ids = {name: create_collection(client, name=name)["id"] for name in ("h1", "h2", "h3")}
        page = client.get("/ui/").text
        assert "/ui/collections/h1" in page and "/ui/collections/h2" in page
        assert "/ui/collections/h3" not in page
        assert 'id="collections-more"' in page and "The first 2 of 3 collections" in page
        caller["principal"] = Principal(name="third", scope="read",
                                        collections=frozenset({ids["h3"]}))
        page = client.get("/ui/").text
        assert "/ui/collections/h3" in page and "/ui/collections/h1" not in page
        assert 'id="collections-more"' not in page


def test_collection_page_counts_new_judgments_like_the_api(client, settings) -> None:
    """The page keeps a tally of the judgments and adds only the new ones: after more
    judgments (new and known tasks and annotators, another label; some through another
    process, which this one's prefill does not hear of) it shows the API's freshly counted
    distributions and judgments count, and so does the home page."""
    from fastapi.testclient import TestClient

    from app.main import create_app

    create_collection(client, name="tally", labels=[0, 1, 2], relevant_from=1, ignore=[])

    def post(rows: list[tuple[str, str, str, int]], via=client) -> None:  # type: ignore[no-untyped-def]
        body = {"judgments": [{"topic": t, "doc": d, "annotator": a, "label": y}
                              for t, d, a, y in rows]}
        assert via.post(f"{API}/collections/tally/judgments", json=body).status_code == 201

    def histograms(page: str) -> tuple[dict, dict, dict]:
        figs = figures(page)
        return tuple({str(x): y for x, y in zip(figs[name]["data"][0]["x"],
                                                figs[name]["data"][0]["y"], strict=True)}
                     for name in ("per_task", "per_annotator", "labels"))

    def api() -> tuple[dict, dict, dict]:
        stats = client.get(f"{API}/collections/tally/stats").json()
        return ({str(k): v for k, v in stats["judgments_per_task"]["histogram"].items()},
                {str(k): v for k, v in stats["judgments_per_annotator"]["histogram"].items()},
                {str(k): v for k, v in stats["label_distribution"].items()})

    def judgments_shown() -> tuple[int, int, int]:
        """The judgments count on the collection page (from its tally), on the home page (from
        the same tally once the collection page kept it) and the API's (a COUNT). The home page
        first: it moves the kept tally forward itself."""
        row = re.search(r'/ui/collections/tally">tally</a>.*?</tr>', client.get("/ui/").text,
                        re.S)
        card = re.search(r"<b>([\d,]+)</b>judgments", client.get("/ui/collections/tally").text)
        assert card is not None and row is not None
        cells = re.findall(r'<td class="num">([\d,]+)</td>', row.group(0))
        counted = client.get(f"{API}/collections/tally").json()["counts"]["judgments"]
        return int(card.group(1).replace(",", "")), int(cells[3].replace(",", "")), counted

    post([("t1", "d1", "w1", 1), ("t1", "d1", "w2", 0), ("t1", "d2", "w1", 0)])
    assert histograms(client.get("/ui/collections/tally").text) == api()
    assert judgments_shown() == (3, 3, 3)
    with TestClient(create_app(settings)) as other:  # another API process
        post([("t1", "d2", "w3", 2), ("t2", "d9", "w3", 1), ("t1", "d1", "w1", 1)], via=other)
    assert judgments_shown() == (6, 6, 6)
    post([("t3", "d3", "w4", 0)])
    page = histograms(client.get("/ui/collections/tally").text)
    assert page == api()
    assert page[0] == {"1": 2, "2": 1, "3": 1} and page[2] == {"0": 3, "1": 3, "2": 1}
    assert judgments_shown() == (7, 7, 7)
    from app.collections.service import tally_key

    assert client.app.state.listing_cache.memoized(tally_key(  # the home page used the tally
        client.get(f"{API}/collections/tally").json()["id"]))


def test_a_heavy_tail_of_judgments_gets_doubling_bins() -> None:
    """RF10's annotators judged from 1 to about 6,000 tasks: one bar per count on a linear axis
    puts every bar that matters in the first pixels; doubling bins keep each annotator once."""
    from app.ui.charts import integer_histogram

    counts = {1: 300, 2: 100, 3: 50, 5: 20, 7: 1, 8: 4, 100: 3, 5999: 1}
    fig = integer_histogram(counts, title="Judgments per annotator", x="judgments")
    assert fig is not None
    bars = dict(zip(fig["data"][0]["x"], fig["data"][0]["y"], strict=True))
    assert list(bars)[:4] == ["1", "2–3", "4–7", "8–15"] and list(bars)[-1] == "4096–8191"
    assert (bars["1"], bars["2–3"], bars["4–7"], bars["8–15"], bars["64–127"],
            bars["4096–8191"]) == (300, 150, 21, 4, 3, 1)
    assert sum(bars.values()) == sum(counts.values())
    assert fig["layout"]["xaxis"]["type"] == "category"
    small = integer_histogram({0: 1, 3: 2, 40: 1}, title="t", x="judgments")
    assert small is not None and small["data"][0]["x"] == [0, 3, 40]  # a bar per count
    zero = integer_histogram({0: 2, 41: 1}, title="t", x="judgments")
    assert zero is not None and zero["data"][0]["x"][:3] == ["0", "1", "2–3"]


def test_count_axes_tick_whole_numbers_and_labels_get_room() -> None:
    """Small counts (a collection of a few tasks) drew ticks at 0.5, 1.5; long labels (run
    names, topic ids, a right-hand axis) were cut off by fixed margins; an empty collection's
    gold chart was an axis without bars."""
    from app.ui.charts import bars, histogram, integer_histogram, per_topic

    few = integer_histogram({1: 2, 3: 1}, title="t", x="judgments")
    assert few is not None
    assert few["layout"]["yaxis"]["dtick"] == 1 and few["layout"]["yaxis"]["tickformat"] == ",d"
    assert few["layout"]["xaxis"]["dtick"] == 1
    many = integer_histogram({1: 5000, 2: 30}, title="t", x="judgments")
    assert many is not None and "dtick" not in many["layout"]["yaxis"]  # Plotly's own steps
    spread = histogram([0.1, 0.2, 0.2], title="t", x="competence")
    assert spread is not None and spread["layout"]["yaxis"]["dtick"] == 1
    assert bars(["with gold", "without gold"], [0, 0], title="g", x="", y="tasks") is None
    probabilities = bars([0, 1], [0.25, 0.75], title="p", x="label", y="probability")
    assert probabilities is not None and "dtick" not in probabilities["layout"]["yaxis"]
    topics = per_topic([{"topic": "a-very-long-topic-id", "share_relevant": 0.5,
                         "mean_uncertainty": 0.3}])
    assert topics is not None
    assert all(topics["layout"][axis]["automargin"] for axis in ("xaxis", "yaxis", "yaxis2"))


def test_a_legend_below_a_chart_keeps_clear_of_its_axis_title() -> None:
    """At 400 px the per-topic chart's rotated topic ids pushed the "topic" title down onto its
    legend (placed at a fixed share of the plot's height below it); so on the sampling page's
    per-topic intervals. A legend at the bottom of the figure gets its own margin instead."""
    from app.ui.charts import intervals, per_topic

    topics = per_topic([{"topic": "20002", "share_relevant": 0.5, "mean_uncertainty": 0.3}])
    estimates = intervals([{"label": "20002", "value": 3.0, "mean": 3.0, "low": 1.0,
                            "high": 5.0}], title="t", x="topic", y="relevant documents")
    for chart in (topics, estimates):
        assert chart is not None
        legend = chart["layout"]["legend"]
        assert legend["yref"] == "container" and legend["y"] == 0
        assert legend["yanchor"] == "bottom"
