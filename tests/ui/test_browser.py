"""The dashboard in a real headless browser (Debian's chromium + chromedriver, via Selenium).

A real uvicorn server on a free port, a seeded collection with a succeeded fit. Each page loads,
its charts render (SVG with data), the browser logs no JavaScript error; the annotator table
sorts and pages; a file goes up through the upload form; a fit started from the form is followed
until the page shows it succeeded. With CROWDQRELS_SCREENSHOTS=docs/img, screenshots of the
pages go there. Scripts and styles come from the app alone: the browser has no network besides it.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import numpy as np
import pytest

from models.synthetic import generate

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CROWDQRELS_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CROWDQRELS_CHROMEDRIVER", "/usr/bin/chromedriver")
# The README's screenshots: CROWDQRELS_SCREENSHOTS=docs/img (else none are taken).
SCREENSHOTS = os.environ.get("CROWDQRELS_SCREENSHOTS")

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(tmp: Path, **env_extra: str) -> Iterator[str]:
    """A real uvicorn server on a free port over a SQLite file in ``tmp``; yields its base URL."""
    port = free_port()
    env = {**os.environ, "CROWDQRELS_DATABASE_URL": f"sqlite:///{tmp / 'ui.db'}",
           "CROWDQRELS_JOBS": "inline", **env_extra}
    log = (tmp / "server.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--log-level",
         "warning"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None:
                raise RuntimeError((tmp / "server.log").read_text())
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("browser")
    with serving(tmp) as base:
        seed(base, tmp)
        yield base


@pytest.fixture(scope="module")
def signed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    """A server with access control on (CROWDQRELS_AUTH=required), seeded with an admin key;
    yields (base URL, the admin key, a read key)."""
    from tests.auth.conftest import make_key

    tmp = tmp_path_factory.mktemp("signed")
    with serving(tmp, CROWDQRELS_AUTH="required") as base:
        url = f"sqlite:///{tmp / 'ui.db'}"
        admin, read = make_key(url, "admin", "admin"), make_key(url, "viewer", "read")
        seed(base, tmp, headers={"Authorization": f"Bearer {admin}"})
        yield base, admin, read


def seed(base: str, tmp: Path, headers: dict[str, str] | None = None) -> None:
    data = generate(300, 90, noise_level=(0.5, 4.0), redundancy=4, random_state=11)
    data.write(tmp / "synth")
    with httpx.Client(base_url=base, timeout=60, headers=headers) as c:
        c.post("/api/v1/collections", json={
            "name": "demo", "labels": [0, 1], "relevant_from": 1, "ignore": [],
            "description": "synthetic crowd, 300 tasks"}).raise_for_status()
        c.post("/api/v1/collections/demo/judgments/file",
               content=(tmp / "synth" / "judgments.tsv").read_bytes(),
               headers={"content-type": "text/tab-separated-values"}).raise_for_status()
        c.put("/api/v1/collections/demo/gold",
              content=(tmp / "synth" / "gold.qrels").read_bytes()).raise_for_status()
        # Three runs of different quality over the synthetic topic, for the evaluation pages.
        rng = np.random.default_rng(3)
        for name, noise in (("sharp", 0.5), ("fair", 1.0), ("blunt", 3.0)):
            scores = data.truth + noise * rng.standard_normal(len(data.truth))
            docs = [str(data.doc_ids[i]) for i in np.argsort(-scores)[:100]]
            for k in range(40):  # unjudged documents below rank 30: what a sampling draws
                docs.insert(int(rng.integers(30, len(docs) + 1)), f"new{k}")
            lines = [f"synth Q0 {doc} {r} {1000 - r} {name}"
                     for r, doc in enumerate(docs, start=1)]
            c.put(f"/api/v1/collections/demo/runs/{name}",
                  content="\n".join(lines).encode()).raise_for_status()
        for method in ("mv", "mace"):
            created = c.post("/api/v1/collections/demo/aggregations",
                             json={"method": method, "seed": 1,
                                   "params": {"n_restarts": 2} if method == "mace" else {}})
            created.raise_for_status()
            deadline = time.monotonic() + 120
            while True:
                body = c.get(f"/api/v1/aggregations/{created.json()['id']}").json()
                if body["status"] in ("succeeded", "failed", "cancelled"):
                    assert body["status"] == "succeeded", body["error"]
                    break
                assert time.monotonic() < deadline, body
                time.sleep(0.2)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        message = (f"needs {CHROMIUM} and {CHROMEDRIVER}: ./scripts/install-browser.sh "
                   "(make test runs it)")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,1000", "--no-proxy-server",
                # Only the app: anything from elsewhere (a CDN) would fail to load.
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def wait_until(predicate, timeout: float = 20, what: str = "condition"):  # type: ignore[no-untyped-def]
    """``predicate()`` until it is truthy. An element gone stale or not there yet while a page
    reloads (a page that follows a job reloads itself when the job ends) counts as not yet.
    Polled after 0.05 s, then half as long again each time up to every 0.5 s: each poll is a
    round trip through chromedriver into the page, and a wait for a fit polled 10 times a
    second."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException

    deadline = time.monotonic() + timeout
    pause = 0.05
    while True:
        try:
            value = predicate()
        except (StaleElementReferenceException, NoSuchElementException):
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(pause)
        pause = min(0.5, pause * 1.5)


def js_errors(driver) -> list[str]:  # type: ignore[no-untyped-def]
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def charts_rendered(driver, expected: int) -> None:  # type: ignore[no-untyped-def]
    """Every chart drew an SVG with data marks (bars, points or heatmap cells)."""
    wait_until(lambda: not driver.find_elements("css selector", ".chart:not([data-rendered])")
               and len(driver.find_elements("css selector", ".chart")) >= expected,
               what=f"{expected} charts")
    for chart in driver.find_elements("css selector", ".chart[data-rendered='true']"):
        assert chart.find_elements("css selector", "svg.main-svg")
        marks = driver.execute_script(
            "return arguments[0].querySelectorAll('.bars path, .point, .scatterlayer path,"
            " .hm, image').length", chart)
        assert marks > 0, chart.get_attribute("data-figure")


def load(driver, url: str) -> None:  # type: ignore[no-untyped-def]
    driver.get(url)
    wait_until(lambda: driver.execute_script("return document.readyState") == "complete")


def message_text(driver, element_id: str = "message") -> str:  # type: ignore[no-untyped-def]
    """The text of a server-rendered message, read in one script call: a page that reloads when a
    job it follows finishes replaces the element between a find and a read (a stale element).
    Wait for the expected words, not for the element: the previous page's message is there until
    the form's answer replaces the page."""
    try:
        return driver.execute_script(
            "const e = document.getElementById(arguments[0]); return e ? e.textContent : ''",
            element_id) or ""
    except Exception:  # the page reloads under us
        return ""


def row_status(driver, selector: str) -> str | None:  # type: ignore[no-untyped-def]
    """The data-status of the first row ``selector`` finds (None while the page reloads)."""
    try:
        rows = driver.find_elements("css selector", selector)
        return rows[0].get_attribute("data-status") if rows else None
    except Exception:  # the page reloads under us
        return None


def table_rows(driver) -> list[list[str]]:  # type: ignore[no-untyped-def]
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#annotator-table tbody tr'))"
        ".map(tr => Array.from(tr.cells).map(td => td.textContent))")


def table_settled(driver) -> bool:  # type: ignore[no-untyped-def]
    return driver.execute_script(
        "return document.getElementById('annotator-table').dataset.loading === 'false'")


def screenshot(driver, name: str, height: int | None = None) -> None:  # type: ignore[no-untyped-def]
    """The README's screenshot ``name`` into CROWDQRELS_SCREENSHOTS, in a window ``height`` px
    tall; without that variable none is taken (nothing reads them, and each resize redraws
    every chart on the page)."""
    if not SCREENSHOTS:
        return
    Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
    if height:
        driver.set_window_size(1400, height)
        driver.execute_script("window.scrollTo(0, 0)")
    driver.save_screenshot(str(Path(SCREENSHOTS) / name))
    if height:
        driver.set_window_size(1400, 1000)


def test_dashboard_in_a_browser(server: str, browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    driver = browser
    load(driver, server + "/")
    assert "demo" in driver.find_element("id", "collections").text
    assert driver.execute_script("return typeof Plotly") == "undefined"  # no chart, no Plotly

    load(driver, server + "/ui/collections/demo")
    charts_rendered(driver, 4)
    assert driver.execute_script("return typeof Plotly") == "object"
    screenshot(driver, "collection.png", 1700)
    assert js_errors(driver) == []

    # The aggregation page: charts, and the annotator table sorted and paged through the API.
    load(driver, server + "/ui/aggregations/2")
    charts_rendered(driver, 5)  # MACE has no task difficulty: that chart is left out
    wait_until(lambda: table_settled(driver) and len(table_rows(driver)) == 50,
               what="the first page of annotators")
    first = table_rows(driver)
    competence = [float(r[1]) for r in first]
    assert competence == sorted(competence, reverse=True)
    assert driver.find_element("id", "annotator-page").text == "page 1 of 2"
    screenshot(driver, "aggregation.png", 2000)
    driver.find_element("id", "annotator-next").click()
    wait_until(lambda: table_settled(driver)
               and driver.find_element("id", "annotator-page").text == "page 2 of 2",
               what="page 2")
    second = table_rows(driver)
    assert 0 < len(second) < 50 and not {r[0] for r in second} & {r[0] for r in first}
    driver.find_element("css selector", "th[data-sort='annotator']").click()
    wait_until(lambda: table_settled(driver)
               and driver.find_element("id", "annotator-page").text == "page 1 of 2",
               what="sorted by annotator")
    names = [r[0] for r in table_rows(driver)]
    assert names == sorted(names) and len(names) == 50
    driver.find_element("id", "annotator-q").send_keys(names[0])
    wait_until(lambda: table_settled(driver) and table_rows(driver)
               and all(names[0] in r[0] for r in table_rows(driver)), what="filter")
    driver.find_element("id", "annotator-q").send_keys("-matches-nobody")
    wait_until(lambda: table_settled(driver)
               and table_rows(driver) == [["No annotator matches this filter."]],
               what="the empty filter's message")
    assert js_errors(driver) == []

    # A narrow window (a phone): test_narrow_windows_and_the_keyboard, on these pages and four
    # more. Task, annotator and comparison pages, from the aggregation page still open.
    driver.find_element("css selector", "#uncertain-tasks tbody a").click()
    charts_rendered(driver, 2)
    assert driver.find_elements("css selector", "#task-judgments tbody tr")
    driver.find_element("css selector", "#task-judgments tbody a").click()
    charts_rendered(driver, 3)
    assert "Annotator" in driver.find_element("tag name", "h1").text
    load(driver, server + "/ui/collections/demo/comparison")
    charts_rendered(driver, 2)
    assert len(driver.find_elements("css selector", "#agreement tbody tr")) == 2
    assert js_errors(driver) == []

    # Upload through the form: a bad file is refused with its line, a good one is stored.
    load(driver, server + "/ui/collections/demo")
    bad = tmp_path / "bad.tsv"
    bad.write_text("topic\tdoc\tannotator\tlabel\nq1\td1\tnew1\t1\nq1\td2\tnew1\t9\n")
    driver.set_window_size(1280, 900)
    driver.find_element("id", "judgments-file").send_keys(str(bad))
    driver.find_element("css selector", "#judgments-form button").click()
    error = wait_until(lambda: message_text(driver, "form-error"), what="the error")
    assert "line 3" in error and "label_out_of_scale" in error
    # the page opens at the error, far down the page (it came back scrolled to the top, the
    # error 2,354 px down, out of sight); the error has the focus, a notice on top links to it
    top, bottom, height, focused, scrolled = driver.execute_script(
        "const r = document.getElementById('form-error').getBoundingClientRect();"
        "return [r.top, r.bottom, window.innerHeight, document.activeElement.id,"
        " window.scrollY]")
    assert top > -1 and bottom <= height and scrolled > 500, (top, bottom, height, scrolled)
    assert focused == "form-error"
    assert driver.current_url.endswith("/judgments#form-error")
    assert "see the error at the form" in message_text(driver, "error-notice")
    driver.set_window_size(1400, 1000)
    # The refused upload answers 422, which the browser logs; nothing else may be there.
    assert all("status of 422" in e for e in js_errors(driver))
    good = tmp_path / "good.tsv"
    good.write_text("topic\tdoc\tannotator\tlabel\nq1\td1\tnew1\t1\nq1\td2\tnew1\t0\n")
    driver.find_element("id", "judgments-file").send_keys(str(good))
    driver.find_element("css selector", "#judgments-form button").click()
    wait_until(lambda: "stored 2 judgments" in message_text(driver), what="the message")
    assert driver.execute_script("return window.scrollY") == 0  # the message, on top

    # Start a fit from the form and watch the page until it shows it succeeded.
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element("id", "fit-method")).select_by_value("ds")
    assert '"n_iter": 100' in driver.find_element("id", "fit-params").get_attribute("value")
    # Sent once: a second submit of the same form (a double click) is cancelled by the page.
    second_cancelled = driver.execute_script(
        "const f = document.getElementById('fit-form');"
        "f.querySelector('button').click();"
        "return !f.dispatchEvent(new Event('submit', {cancelable: true}));")
    assert second_cancelled
    wait_until(lambda: "fit #3 (ds) queued" in message_text(driver), what="the fit queued")

    wait_until(lambda: row_status(driver, "#fits tr[data-aggregation='3']") == "succeeded",
               timeout=120, what="the fit to succeed")
    wait_until(lambda: "succeeded" in driver.find_element(
        "css selector", "#fits tr[data-aggregation='3'] .status").text, what="status text")
    assert js_errors(driver) == []

    # Evaluate the runs on fit #3 from the form; the list follows the job; the evaluation page
    # draws the intervals and the win probabilities, and switches measure.
    load(driver, server + "/ui/collections/demo")
    Select(driver.find_element("id", "evaluation-source")).select_by_value("3")
    measures = driver.find_element("id", "evaluation-measures")
    measures.clear()
    measures.send_keys("P@10 AP nDCG@10")
    driver.find_element("css selector", "#evaluation-form input[name='samples']").clear()
    driver.find_element("css selector", "#evaluation-form input[name='samples']").send_keys("200")
    driver.find_element("css selector", "#evaluation-form button").click()
    wait_until(lambda: "evaluation #1 of 3 runs on fit #3 queued" in message_text(driver),
               what="evaluation queued")

    wait_until(lambda: row_status(driver, "#evaluations tr[data-status]") == "succeeded",
               timeout=120, what="the evaluation to succeed")
    driver.find_element("css selector", "#evaluations a[href='/ui/evaluations/1']").click()
    charts_rendered(driver, 2)
    ranking = driver.find_element("id", "rankings").text
    assert "P@10" in ranking and "sharp" in ranking
    assert driver.find_elements("css selector", ".chart[data-figure='wins'] .hm, "
                                ".chart[data-figure='wins'] image")
    screenshot(driver, "evaluation.png", 1500)
    driver.find_element("css selector", "#measure-tabs a[href='?measure=AP']").click()
    wait_until(lambda: "measure=AP" in driver.current_url, what="the AP tab")
    charts_rendered(driver, 2)
    assert "AP: mean over topics" in driver.find_element(
        "css selector", ".chart[data-figure='intervals']").text
    assert js_errors(driver) == []

    # A sampling from the form; its page draws a round from its button.
    load(driver, server + "/ui/collections/demo")
    budget = driver.find_element("css selector", "#sampling-form input[name='budget_per_round']")
    budget.clear()
    budget.send_keys("20")
    driver.find_element("css selector", "#sampling-form button").click()
    wait_until(lambda: "sampling #1 (active)" in message_text(driver), what="sampling created")
    driver.find_element("css selector", "#samplings a[href='/ui/samplings/1']").click()
    wait_until(lambda: driver.find_elements("id", "round-form"), what="the sampling page")
    driver.find_element("css selector", "#round-form button").click()
    wait_until(lambda: "pairs to judge" in message_text(driver), what="a round")
    charts_rendered(driver, 1)
    screenshot(driver, "sampling.png")
    assert js_errors(driver) == []

    # The API docs render offline too.
    load(driver, server + "/docs")
    wait_until(lambda: driver.find_elements("css selector", ".swagger-ui .opblock"),
               what="Swagger UI")
    load(driver, server + "/redoc")
    wait_until(lambda: driver.find_elements("css selector", "[role=menuitem], .menu-content"),
               what="ReDoc")
    assert js_errors(driver) == []


def test_graded_fit_in_a_browser(server: str, browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A graded ordinal fit's page: its graded measures, each annotator's spread in the table
    the script fills from the API, the grade choice for downloads; the comparison page's κ."""
    driver = browser
    generate(200, 20, noise_level=(0.0, 2.0), redundancy=4, grades=3, bias_sd=0.5,
             random_state=5).write(tmp_path / "graded")
    with httpx.Client(base_url=server, timeout=60) as c:
        c.post("/api/v1/collections", json={"name": "graded", "labels": [0, 1, 2],
                                            "relevant_from": 1, "ignore": []}).raise_for_status()
        c.post("/api/v1/collections/graded/judgments/file",
               content=(tmp_path / "graded" / "judgments.tsv").read_bytes(),
               headers={"content-type": "text/tab-separated-values"}).raise_for_status()
        c.put("/api/v1/collections/graded/gold",
              content=(tmp_path / "graded" / "gold.qrels").read_bytes()).raise_for_status()
        created = c.post("/api/v1/collections/graded/aggregations",
                         json={"method": "ordinal-ds", "graded": True})
        created.raise_for_status()
        a = created.json()["id"]
        wait_until(lambda: c.get(f"/api/v1/aggregations/{a}").json()["status"] == "succeeded",
                   timeout=120, what="the ordinal fit")
        evaluation = c.get(f"/api/v1/aggregations/{a}").json()["evaluation"]
        spreads = {r["annotator"]: r["extra"]["spread"] for r in c.get(
            f"/api/v1/aggregations/{a}/annotators", params={"limit": 100}).json()["data"]}

    load(driver, f"{server}/ui/aggregations/{a}")
    charts_rendered(driver, 4)
    assert driver.find_element("id", "eval-kappa").text.startswith(f"{evaluation['kappa']:.3f}")
    assert driver.find_element("id", "eval-mae").text.startswith(f"{evaluation['mae']:.3f}")
    header = driver.find_elements("css selector", "#annotator-table thead th")
    assert header[-1].text == "spread"
    wait_until(lambda: table_settled(driver) and len(table_rows(driver)) == 20,
               what="the annotators")
    for row in table_rows(driver):
        assert row[-1] == f"{spreads[row[0]]:.3f}"
    assert driver.find_element("id", "download-grade").is_displayed()
    assert js_errors(driver) == []

    # What to judge next: from the fit's page, switch strategy, the list and its TSV link.
    from selenium.webdriver.support.ui import Select

    driver.find_element("id", "judge-next").click()
    wait_until(lambda: driver.find_elements("css selector", "#next-tasks tbody tr"),
               what="the tasks to judge next")
    assert len(driver.find_elements("css selector", "#next-tasks tbody tr")) == 20
    Select(driver.find_element("id", "next-strategy")).select_by_value("expected-change")
    driver.find_element("css selector", "#next-form button").click()
    wait_until(lambda: "strategy=expected-change" in driver.current_url, what="the new order")
    assert "format=tsv" in driver.find_element("id", "next-tsv").get_attribute("href")
    assert js_errors(driver) == []

    load(driver, f"{server}/ui/collections/graded/comparison")
    charts_rendered(driver, 2)
    assert f"{evaluation['kappa']:.3f}" in driver.find_element("id", "comparison").text
    assert "κ (graded)" in driver.find_element(
        "css selector", ".chart[data-figure='metrics']").text
    assert js_errors(driver) == []


def test_signed_in_dashboard_reads_the_api(signed_server, browser) -> None:  # type: ignore[no-untyped-def]
    """With access control on, a signed-in browser's pages read the API under the session: the
    annotator table fills, a download answers the file, a fit started from the form is followed
    live until it succeeded (before, each of these answered 401: the cookie was /ui's only)."""
    from selenium.webdriver.support.ui import Select

    base, admin, read = signed_server
    driver = browser

    def sign_in(key: str, page: str) -> None:
        driver.delete_all_cookies()
        load(driver, base + page)
        wait_until(lambda: "/ui/login" in driver.current_url, what="the sign-in page")
        driver.find_element("id", "key").send_keys(key)
        driver.find_element("css selector", "form button").click()
        wait_until(lambda: driver.current_url == base + page, what="back on the page")

    sign_in(read, "/ui/aggregations/2")
    charts_rendered(driver, 5)
    wait_until(lambda: table_settled(driver) and len(table_rows(driver)) == 50,
               what="the annotators, read from the API under the session")
    assert "API key" not in driver.find_element("id", "annotator-table").text
    assert js_errors(driver) == []
    # the page's download form (a GET of the API; fetched as the browser sends it, cookie and
    # all, since its answer is an attachment the browser would save)
    status, text = driver.execute_script(
        "const f = document.getElementById('download-form');"
        "const q = new URLSearchParams([...new FormData(f)].filter(([k, v]) => v !== ''));"
        "q.set('format', 'trec');"
        "const r = await fetch(f.action + '?' + q); return [r.status, await r.text()];")
    assert status == 200 and "missing_api_key" not in text
    assert len(text.splitlines()) == 300 and all(len(x.split()) == 4 for x in text.splitlines())
    # the session reads; it writes nothing through the API, whatever the key may do
    status = driver.execute_script(
        "const r = await fetch('/api/v1/collections', {method: 'POST', "
        "headers: {'content-type': 'application/json'}, body: JSON.stringify("
        "{name: 'x', labels: [0, 1], relevant_from: 1})}); return r.status;")
    assert status == 401
    assert all("status of 401" in e for e in js_errors(driver))  # that refusal, logged

    sign_in(admin, "/ui/collections/demo")
    Select(driver.find_element("id", "fit-method")).select_by_value("ds")
    driver.find_element("css selector", "#fit-form button").click()
    wait_until(lambda: "fit #3 (ds) queued" in message_text(driver), what="the fit queued")
    wait_until(lambda: row_status(driver, "#fits tr[data-aggregation='3']") == "succeeded",
               timeout=120, what="the page to follow the fit to success")
    assert js_errors(driver) == []

    # Signed out, Back shows no page of data: the pages were not stored (the browser showed
    # the collection's page again from its cache)
    load(driver, base + "/ui/collections/demo")
    driver.find_element("css selector", "a.signout").click()
    wait_until(lambda: "/ui/login" in driver.current_url and driver.find_elements("id", "key"),
               what="signed out")
    driver.back()
    wait_until(lambda: driver.execute_script("return document.readyState") == "complete")
    wait_until(lambda: "/ui/login" in driver.current_url, what="the sign-in page, not the data")
    assert not driver.find_elements("id", "fits")
    assert "demo" not in driver.find_element("tag name", "body").text
    driver.delete_all_cookies()


def test_an_upload_clicked_twice_is_stored_once(server: str, browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The upload button clicked twice, quickly, with the page's send-once script taken off the
    form (as for a browser without JavaScript, or a "resubmit"): both requests reach the server
    with the form's one key, and the judgments are stored once. Then back to the form and sent
    again: the first answer again, nothing stored."""
    driver = browser
    with httpx.Client(base_url=server, timeout=60) as c:
        c.post("/api/v1/collections", json={"name": "twice", "labels": [0, 1],
                                            "relevant_from": 1, "ignore": []}).raise_for_status()

        def stored() -> int:
            return int(c.get("/api/v1/collections/twice").json()["counts"]["judgments"])

        # Large enough that the first request is still being stored when the second arrives.
        rows = "".join(f"q{i % 50}\td{i}\tw{i % 40}\t{i % 2}\n" for i in range(20_000))
        upload = tmp_path / "big.tsv"
        upload.write_text("topic\tdoc\tannotator\tlabel\n" + rows)

        load(driver, server + "/ui/collections/twice")
        driver.execute_script(  # a copy of the form has no listeners: nothing stops a 2nd submit
            "const f = document.getElementById('judgments-form');"
            "f.replaceWith(f.cloneNode(true));")
        driver.find_element("id", "judgments-file").send_keys(str(upload))
        # two clicks 50 ms apart, in the page (a WebDriver click waits for the navigation)
        driver.execute_script(
            "const b = document.querySelector('#judgments-form button');"
            "b.click(); window.setTimeout(() => b.click(), 50);")
        wait_until(lambda: "stored 20,000 judgments" in message_text(driver), timeout=60,
                   what="the upload's message")
        time.sleep(2)  # a second copy, if there were one, would be in by now
        assert stored() == 20_000

        driver.back()  # the form as it was sent (same key), sent again
        wait_until(lambda: driver.find_elements("css selector", "#judgments-form button"),
                   what="the form again")
        if not driver.find_element("id", "judgments-file").get_attribute("value"):
            driver.find_element("id", "judgments-file").send_keys(str(upload))
        driver.execute_script("window.formPage = true;")  # gone once the answer replaces it
        driver.find_element("css selector", "#judgments-form button").click()
        wait_until(lambda: not driver.execute_script("return window.formPage === true")
                   and "stored 20,000 judgments" in message_text(driver), timeout=60,
                   what="the first answer again")
        assert stored() == 20_000
    assert js_errors(driver) == []


CHART_LAYOUT = """
return Array.from(document.querySelectorAll('.chart[data-rendered]')).map(function (chart) {
  var svg = chart.querySelector('svg.main-svg').getBoundingClientRect();
  var title = chart.querySelector('.gtitle');
  var t = title ? title.getBoundingClientRect() : svg;
  var figure = JSON.parse(document.getElementById('figures').textContent)[chart.dataset.figure];
  return {name: chart.dataset.figure, box: chart.clientWidth, svg: Math.round(svg.width),
          height: chart.clientHeight, expected: figure.layout.height,
          titleInside: t.left >= svg.left - 1 && t.right <= svg.right + 1 && t.top >= svg.top - 1};
});"""


def page_overflow(driver) -> int:  # type: ignore[no-untyped-def]
    return int(driver.execute_script(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth"))


def test_narrow_windows_and_the_keyboard(server: str, browser) -> None:  # type: ignore[no-untyped-def]
    """At 400 px every chart page is as wide as the window, at load and right after a resize (a
    chart's SVG kept its old width until Plotly redrew it: 4 px of sideways scrolling); a
    chart's title stays inside it; a chart keeps its figure's height after resizes (the
    annotator's panels are taller than the others). The annotator table sorts from the
    keyboard."""
    from selenium.webdriver.common.keys import Keys

    driver = browser
    with httpx.Client(base_url=server, timeout=60) as c:
        sampling = c.post("/api/v1/collections/demo/samplings",
                          json={"budget_per_round": 20, "seed": 2}).json()["id"]
        c.post(f"/api/v1/samplings/{sampling}/rounds").raise_for_status()
        task = c.get("/api/v1/aggregations/2/tasks", params={"limit": 1}).json()["data"][0]
        annotator = c.get(f"/api/v1/aggregations/2/tasks/{task['task_id']}").json()[
            "judgments"][0]["annotator"]
    pages = ["/ui/collections/demo", "/ui/aggregations/2", "/ui/collections/demo/comparison",
             f"/ui/aggregations/2/tasks/{task['task_id']}",
             f"/ui/collections/demo/annotators/{annotator}", f"/ui/samplings/{sampling}"]
    try:
        for page in pages:
            driver.set_window_size(400, 900)
            load(driver, server + page)
            charts_rendered(driver, 1)
            assert page_overflow(driver) <= 0, page
            for chart in driver.execute_script(CHART_LAYOUT):
                assert chart["svg"] <= chart["box"], (page, chart)
                assert chart["titleInside"], (page, chart)
            driver.set_window_size(1400, 1000)
            time.sleep(0.5)
            driver.set_window_size(400, 900)  # measured before Plotly has redrawn
            assert page_overflow(driver) <= 0, (page, "right after a resize")
            time.sleep(1)
            for chart in driver.execute_script(CHART_LAYOUT):
                assert chart["height"] == chart["expected"], (page, chart)
        assert js_errors(driver) == []

        driver.set_window_size(1400, 1000)
        load(driver, server + "/ui/aggregations/2")
        wait_until(lambda: table_settled(driver) and len(table_rows(driver)) == 50,
                   what="the annotators")
        header = driver.find_element("css selector", "th[data-sort='annotator'] button")
        header.send_keys(Keys.ENTER)
        wait_until(lambda: table_settled(driver) and [r[0] for r in table_rows(driver)]
                   == sorted(r[0] for r in table_rows(driver)), what="sorted by annotator")
        assert js_errors(driver) == []
    finally:
        driver.set_window_size(1400, 1000)


def test_sort_state_confirm_draws_and_elapsed_time(server: str, browser) -> None:  # type: ignore[no-untyped-def]
    """The sorted header says so to a screen reader (aria-sort); "replace" in the gold form asks
    first and, declined, sends nothing and leaves the form usable; the evaluation form's draws are
    off for the gold; a waiting fit's page counts the seconds."""
    driver = browser
    load(driver, server + "/ui/aggregations/2")
    wait_until(lambda: table_settled(driver) and table_rows(driver), what="the annotators")

    def sort_state() -> dict[str, str | None]:
        return driver.execute_script(
            "const o = {}; document.querySelectorAll('#annotator-table th[data-sort]')"
            ".forEach(th => { o[th.dataset.sort] = th.getAttribute('aria-sort'); }); return o;")

    assert sort_state()["competence"] == "descending"
    driver.find_element("css selector", "th[data-sort='annotator'] button").click()
    wait_until(lambda: sort_state()["annotator"] == "ascending", what="aria-sort ascending")
    assert [k for k, v in sort_state().items() if v] == ["annotator"]
    driver.find_element("css selector", "th[data-sort='annotator'] button").click()
    wait_until(lambda: sort_state()["annotator"] == "descending", what="aria-sort descending")

    load(driver, server + "/ui/collections/demo")
    driver.execute_script("window.asked = []; window.confirm = function (m) {"
                          " window.asked.push(m); return false; };"
                          "document.getElementById('gold-mode').value = 'replace';")
    driver.execute_script("window.samePage = true;")
    driver.find_element("css selector", "#gold-form button").click()
    time.sleep(0.5)
    assert driver.execute_script("return window.samePage === true")  # nothing was sent
    asked = driver.execute_script("return window.asked")
    assert len(asked) == 1 and "Replace the gold" in asked[0]
    assert driver.execute_script(
        "const f = document.getElementById('gold-form'); return !f.dataset.sent"
        " && !f.querySelector('button').disabled")

    samples = "#evaluation-form input[name=samples]"
    driver.execute_script("const s = document.getElementById('evaluation-source');"
                          "s.value = 'gold'; s.dispatchEvent(new Event('change'));")
    assert driver.find_element("css selector", samples).get_attribute("disabled")
    driver.execute_script("const s = document.getElementById('evaluation-source');"
                          "s.selectedIndex = 0; s.dispatchEvent(new Event('change'));")
    assert not driver.find_element("css selector", samples).get_attribute("disabled")

    # Two slow fits, one at a time: the second waits (or runs) while its page counts.
    with httpx.Client(base_url=server, timeout=60) as c:
        ids = [c.post("/api/v1/collections/demo/aggregations",
                      json={"method": "mace", "params": {"n_restarts": 500, "tol": 0.0}}
                      ).json()["id"] for _ in range(2)]
        try:
            load(driver, server + f"/ui/aggregations/{ids[1]}")

            def elapsed() -> str:
                return str(driver.execute_script(
                    "const e = document.getElementById('fit-elapsed');"
                    " return e ? e.textContent : ''"))

            first = wait_until(lambda: re.fullmatch(r"(queued|running) for \d+ s", elapsed()),
                               what="the elapsed time")
            wait_until(lambda: elapsed() != first.group(0), timeout=5, what="a tick")
        finally:
            for i in ids:
                c.delete(f"/api/v1/aggregations/{i}")
    assert js_errors(driver) == []
