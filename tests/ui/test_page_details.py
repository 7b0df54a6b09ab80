"""What the pages' markup promises a person with a browser, keyboard or screen reader (on SQLite
and PostgreSQL): number fields that take every value the API takes, form fields kept after an
error, a label for every control, a text alternative for every chart, sortable headers that are
buttons, columns that apply to the fit, "could not judge" named as such, the gold form's safe
default, a cancel on the running fit's page, singular counts, numbers aligned under their
headers; and the chart specs the layout relies on (wrapped titles, one measure per axis)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from models.synthetic import generate
from tests.api.helpers import API, TSV, create_collection
from tests.api.jobs import wait_for
from tests.api.sampling.test_sampling import setup_collection as sampling_collection
from tests.ui.dom import Element, label_of, parse
from tests.ui.test_pages import figures, seed, token

MAX_SEED = 2**32 - 1
MAX_INT32 = 2**31 - 1


@pytest.fixture(scope="module")
def crowd(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("crowd-details")
    generate(120, 30, noise_level=(1.0, 4.0), redundancy=3, random_state=7).write(directory)
    return directory


def number_fields(page: Element) -> dict[str, Element]:
    """Every number field of the page's forms, by id or name."""
    return {e.attrs.get("id") or e.attrs["name"]: e
            for e in page.find_all("input", type="number")}


def test_number_fields_take_every_value_the_api_takes(client, crowd) -> None:
    """The browser refuses a value off a field's step or outside its min/max before the API
    sees it: 0.73 as a threshold was refused (step 0.05); a negative seed went to the API."""
    a = seed(client, crowd)
    sampling_collection(client)
    sid = client.post(f"{API}/collections/pool/samplings",
                      json={"budget_per_round": 6, "seed": 1}).json()["id"]
    pages = {"collection": client.get("/ui/collections/crowd").text,
             "fit": client.get(f"/ui/aggregations/{a}").text,
             "sampling": client.get(f"/ui/samplings/{sid}").text}
    fields: dict[str, Element] = {}
    for name, text in pages.items():
        found = number_fields(parse(text))
        assert found, name
        for key, field in found.items():
            # a step other than "any" refuses the values between its steps; none: whole numbers
            assert field.attrs.get("step", "any") == "any" or "step" not in field.attrs, key
            assert "min" in field.attrs, (name, key)
        fields.update(found)

    threshold = fields["download-threshold"].attrs
    assert (threshold["step"], threshold["min"], threshold["max"]) == ("any", "0", "1")
    seed_ = fields["fit-seed"].attrs
    assert (seed_["min"], seed_.get("max"), seed_.get("step")) == ("0", str(MAX_SEED), None)
    for target in ("round-target", "stopping-target"):
        if target in fields:  # the stopping form shows once estimates exist
            assert fields[target].attrs["step"] == "any" and fields[target].attrs["max"] == "1"
    assert fields["round-target"].attrs["step"] == "any"
    collection = parse(pages["collection"])
    for form, name, low, high in [("evaluation-form", "samples", 0, 10_000),
                                  ("evaluation-form", "seed", 0, MAX_INT32),
                                  ("sampling-form", "budget_per_round", 1, MAX_INT32),
                                  ("sampling-form", "depth", 1, MAX_INT32),
                                  ("sampling-form", "seed", 0, MAX_INT32)]:
        field = collection.by_id(form).find_all("input", name=name)[0].attrs
        assert (field["min"], field.get("max"), field.get("step")) == (str(low), str(high),
                                                                        None), (form, name)


def test_round_form_keeps_force_and_offers_no_draw_once_the_pool_is_drawn(client) -> None:
    """A refused draw shows the form as it was sent, "force" included; once every pooled pair
    has been sampled the page says so instead of offering a draw the API refuses."""
    sampling_collection(client)
    sid = client.post(f"{API}/collections/pool/samplings",
                      json={"budget_per_round": 12, "seed": 1}).json()["id"]
    page = client.get(f"/ui/samplings/{sid}").text
    csrf = token(page)
    assert 'id="round-form"' in page and 'id="pool-exhausted"' not in page
    force = parse(page).by_id("round-force")
    assert "checked" not in force.attrs
    r = client.post(f"/ui/samplings/{sid}/rounds",
                    data={"csrf_token": csrf, "force": "on", "target_recall": "7",
                          "stop": "optimistic"})
    assert r.status_code == 422 and 'id="form-error"' in r.text
    form = parse(r.text).by_id("round-form")
    assert "checked" in form.find_all("input", id="round-force")[0].attrs
    assert form.find_all("input", id="round-target")[0].attrs["value"] == "7"
    assert form.find_all("option", value="optimistic")[0].attrs.get("selected") is not None

    assert client.post(f"{API}/samplings/{sid}/rounds").status_code == 201
    r = client.post(f"/ui/samplings/{sid}/rounds", data={"csrf_token": csrf})
    assert r.status_code == 409 and "round_not_judged" in r.text
    assert "checked" not in parse(r.text).by_id("round-force").attrs  # not sent: not kept

    assert client.post(f"{API}/samplings/{sid}/rounds?force=true").status_code == 201
    public = client.get(f"{API}/samplings/{sid}").json()
    assert public["n_sampled"] == public["pool_size"] == 24
    page = client.get(f"/ui/samplings/{sid}").text
    assert 'id="round-form"' not in page
    exhausted = parse(page).by_id("pool-exhausted").text
    assert "all 24 pooled pairs" in exhausted and "sampled" in exhausted


def unlabelled(page: Element) -> list[str]:
    controls = [e for e in page.iter() if e.tag in ("input", "select", "textarea")
                and e.attrs.get("type") not in ("hidden", "submit")]
    assert controls
    return [e.attrs.get("id") or e.attrs.get("name") or e.tag for e in controls
            if not (label_of(page, e) or "").strip()]


def test_every_control_is_labelled_and_every_chart_described(client, crowd) -> None:
    """A screen reader names each field (the file inputs had no label; the round form's one
    label took the number field and left the rule's select without), and reads a sentence for
    each chart, saying where a table holds the same numbers."""
    a = seed(client, crowd)
    sampling_collection(client)
    sid = client.post(f"{API}/collections/pool/samplings",
                      json={"budget_per_round": 6, "seed": 1}).json()["id"]
    task = client.get(f"{API}/aggregations/{a}/tasks?limit=1").json()["data"][0]
    detail = client.get(f"{API}/aggregations/{a}/tasks/{task['task_id']}").json()
    annotator = detail["judgments"][0]["annotator"]
    urls = ["/ui/collections/crowd", f"/ui/aggregations/{a}", f"/ui/samplings/{sid}",
            f"/ui/aggregations/{a}/tasks/{task['task_id']}", "/ui/collections/crowd/comparison",
            f"/ui/collections/crowd/annotators/{annotator}"]
    charts = 0
    for url in urls:
        page = parse(client.get(url).text)
        if page.find_all("form"):
            assert unlabelled(page) == [], url
        for chart in page.with_class("chart"):
            charts += 1
            assert chart.attrs.get("role") == "img", (url, chart.attrs)
            assert len(chart.attrs.get("aria-label", "")) > 20, (url, chart.attrs)
    assert charts >= 15
    collection = parse(client.get("/ui/collections/crowd").text)
    assert "judgment" in label_of(collection, collection.by_id("judgments-file")).lower()
    assert "gold" in label_of(collection, collection.by_id("gold-file")).lower()
    sampling = parse(client.get(f"/ui/samplings/{sid}").text)
    assert "rule" in label_of(sampling, sampling.by_id("round-stop")).lower()
    assert "recall" in label_of(sampling, sampling.by_id("round-target")).lower()
    comparison = parse(client.get("/ui/collections/crowd/comparison").text)
    agreement = comparison.find_all("div", **{"data-figure": "agreement"})[0]
    assert "table" in agreement.attrs["aria-label"]


def test_annotator_table_headers_sort_from_the_keyboard(client, crowd) -> None:
    a = seed(client, crowd)
    table = parse(client.get(f"/ui/aggregations/{a}").text).by_id("annotator-table")
    sortable = table.find_all("th", **{"data-sort": "competence"}) + [
        th for th in table.find_all("th") if "data-sort" in th.attrs
        and th.attrs["data-sort"] != "competence"]
    assert len(sortable) >= 4
    for th in sortable:
        buttons = th.find_all("button", type="button")
        assert len(buttons) == 1 and buttons[0].text, th.attrs
    assert sortable[0].attrs.get("aria-sort") == "descending"  # the order the table opens in
    assert all("aria-sort" not in th.attrs for th in sortable[1:])


def header(table: Element) -> list[str]:
    return [th.text for th in table.find_all("th")]


def test_columns_that_do_not_apply_to_the_fit_are_left_out(client) -> None:
    """Majority vote has no annotator bias or noise variance: the fit page's annotator table and
    the annotator page's fits table do not show columns of dashes; an ordinal fit's bias and
    spread are shown."""
    create_collection(client, name="graded", labels=[0, 1, 2], relevant_from=1, ignore=[])
    rows = "".join(f"t{i % 4}\td{i}\tw{k}\t{(i + k) % 3}\n" for i in range(40) for k in range(3))
    assert client.post(f"{API}/collections/graded/judgments/file", headers=TSV,
                       content=f"topic\tdoc\tannotator\tlabel\n{rows}".encode()).status_code == 201
    fits = {}
    for method, graded in (("mv", False), ("ordinal-ds", True)):
        created = client.post(f"{API}/collections/graded/aggregations",
                              json={"method": method, "graded": graded, "seed": 1}).json()
        assert wait_for(client, created["id"])["status"] == "succeeded"
        fits[method] = created["id"]

    mv = parse(client.get(f"/ui/aggregations/{fits['mv']}").text).by_id("annotator-table")
    table = mv.find_all("table")[0]
    # the page's script fills seven cells a row; the stylesheet hides the sixth and seventh
    assert {"no-bias", "no-last"} <= table.classes(), table.attrs
    ordinal = parse(client.get(f"/ui/aggregations/{fits['ordinal-ds']}").text)
    table = ordinal.by_id("annotator-table").find_all("table")[0]
    assert not {"no-bias", "no-last"} & table.classes()
    assert header(table)[-2:] == ["bias", "spread"]

    history = parse(client.get("/ui/collections/graded/annotators/w0").text).by_id(
        "annotator-history")
    columns = header(history)
    assert "bias" in columns and "spread" in columns and "noise variance" not in columns
    figs = figures(client.get("/ui/collections/graded/annotators/w0").text)
    names = [trace["name"] for trace in figs["history"]["data"]]
    assert "noise variance" not in names and {"competence", "bias", "spread"} <= set(names)
    assert all(trace["mode"] == "markers" for trace in figs["history"]["data"])
    axes = [trace.get("yaxis", "y") for trace in figs["history"]["data"]]
    assert len(set(axes)) == len(axes)  # one measure per axis: competence and bias apart


def test_gold_form_replaces_as_the_api_does_and_asks_first(client) -> None:
    """The form's mode defaults to replace, as PUT .../gold does (issue 35: the form merged
    while the API replaced). Replace clears the gold of every task not in the file (4,455
    tasks once lost theirs from a form sent without a look), so the form says what it does and
    the page's script asks before sending it; a refused merge comes back as merge."""
    create_collection(client, name="crowd", labels=[0, 1], relevant_from=1, ignore=[])
    page = client.get("/ui/collections/crowd").text
    form = parse(page).by_id("gold-form")
    select = form.find_all("select", name="mode")[0]
    options = {o.attrs["value"]: o for o in select.find_all("option")}
    assert "selected" in options["replace"].attrs and "selected" not in options["merge"].attrs
    assert "clear" in options["replace"].text and "keep" in options["merge"].text
    assert "every task not in the file loses its gold" in form.by_id(
        select.attrs["aria-describedby"]).text
    assert "data-confirm" in options["replace"].attrs  # the page's script asks first
    r = client.post("/ui/collections/crowd/gold", data={"csrf_token": token(page),
                                                         "mode": "merge"},
                    files={"file": ("g.qrels", b"t1 0 d1 7\n", "text/plain")})
    assert r.status_code == 422
    options = {o.attrs["value"]: o for o in parse(r.text).by_id("gold-form").find_all("option")}
    assert "selected" in options["merge"].attrs and "selected" not in options["replace"].attrs


def test_could_not_judge_is_named(client) -> None:
    """A task's gold or a judgment of -2 (the collection's "could not judge") is named, not
    shown as a grade."""
    create_collection(client, name="rf", labels=[0, 1, 2], relevant_from=1, ignore=[-2])
    rows = "t1\td1\tw1\t1\nt1\td1\tw2\t-2\nt1\td1\tw3\t1\nt1\td2\tw1\t0\nt1\td2\tw2\t0\n"
    assert client.post(f"{API}/collections/rf/judgments/file", headers=TSV,
                       content=f"topic\tdoc\tannotator\tlabel\n{rows}".encode()).status_code == 201
    assert client.put(f"{API}/collections/rf/gold", content=b"t1 0 d1 -2\nt1 0 d2 0\n"
                      ).status_code == 200
    created = client.post(f"{API}/collections/rf/aggregations", json={"method": "mv"}).json()
    assert wait_for(client, created["id"])["status"] == "succeeded"
    a = created["id"]
    task = next(t for t in client.get(f"{API}/aggregations/{a}/tasks").json()["data"]
                if t["doc"] == "d1")
    page = parse(client.get(f"/ui/aggregations/{a}/tasks/{task['task_id']}").text)
    assert "gold could not judge (-2)" in page.find_all("p")[0].text
    labels = [tr.find_all("td")[1].text for tr in page.by_id("task-judgments").find_all("tr")
              if tr.find_all("td")]
    assert sorted(labels) == ["1", "1", "could not judge (-2)"]
    uncertain = parse(client.get(f"/ui/aggregations/{a}").text).by_id("uncertain-tasks")
    assert "could not judge (-2)" in uncertain.text


def test_a_running_fit_can_be_cancelled_from_its_page(client) -> None:
    """The fit's own page (where one watches it) offers the cancel the collection page has, and
    says since when the fit has been waiting or running."""
    from app.api.deps import get_runner

    class Idle:
        def submit(self, kind: str, job_id: int) -> None:
            return None

        def cancel(self, kind: str, job_id: int, runner_job_id: str | None) -> None:
            return None

    create_collection(client, name="crowd", labels=[0, 1], relevant_from=1, ignore=[])
    assert client.post(f"{API}/collections/crowd/judgments/file", headers=TSV,
                       content=b"topic\tdoc\tannotator\tlabel\nt1\td1\tw1\t1\n").status_code == 201
    client.app.dependency_overrides[get_runner] = Idle
    try:
        fit = client.post(f"{API}/collections/crowd/aggregations", json={"method": "mv"}).json()
        page = client.get(f"/ui/aggregations/{fit['id']}").text
        elapsed = parse(page).by_id("fit-elapsed")
        assert elapsed.attrs["data-since"].startswith(fit["created_at"][:19])
        assert "queued" in elapsed.text
        form = parse(page).by_id("cancel-form")
        assert form.attrs["action"] == f"/ui/aggregations/{fit['id']}/cancel"
        fields = {i.attrs["name"]: i.attrs["value"] for i in form.find_all("input", type="hidden")}
        r = client.post(form.attrs["action"], data=fields, follow_redirects=False)
    finally:
        client.app.dependency_overrides.clear()
    assert r.status_code == 303
    assert client.get(f"{API}/aggregations/{fit['id']}").json()["status"] == "cancelled"
    page = client.get(f"/ui/aggregations/{fit['id']}").text
    assert 'id="cancel-form"' not in page and 'id="fit-elapsed"' not in page


def test_counts_of_one_are_singular(client) -> None:
    create_collection(client, name="one", labels=[0, 1], relevant_from=1, ignore=[])
    assert client.post(f"{API}/collections/one/judgments/file", headers=TSV,
                       content=b"topic\tdoc\tannotator\tlabel\nt1\td1\tw1\t1\n").status_code == 201
    created = client.post(f"{API}/collections/one/aggregations", json={"method": "mv"}).json()
    assert wait_for(client, created["id"])["status"] == "succeeded"
    pages = [client.get(url).text for url in ("/ui/collections/one/annotators/w1",
                                              f"/ui/aggregations/{created['id']}",
                                              "/ui/collections/one")]
    # the pages' words (the charts' titles come with their data, from the page's handler)
    text = html.unescape(" ".join(re.sub(r"<[^>]+>", " ", re.sub(r"<script.*?</script>", "", p,
                                                                  flags=re.S)) for p in pages))
    text = " ".join(text.split())
    assert "1 judgment in one" in text and "(1 judgment)" in text
    assert "1 task · 1 annotator · 1 judgment" in text
    assert not re.search(r"(?<![\d,.])1 (judgments|tasks|annotators|topics|pairs)\b", text), \
        re.findall(r".{30}(?<![\d,.])1 (?:judgments|tasks|annotators|topics|pairs)\b.{10}", text)


def test_numbers_are_aligned_under_right_aligned_headers(client, crowd) -> None:
    """A column of numbers (td.num) has its header on the same side."""
    a = seed(client, crowd)
    sampling_collection(client)
    sid = client.post(f"{API}/collections/pool/samplings",
                      json={"budget_per_round": 6, "seed": 1}).json()["id"]
    client.post(f"{API}/samplings/{sid}/rounds")
    task = client.get(f"{API}/aggregations/{a}/tasks?limit=1").json()["data"][0]
    detail = client.get(f"{API}/aggregations/{a}/tasks/{task['task_id']}").json()
    urls = ["/", "/ui/collections/crowd", f"/ui/aggregations/{a}", f"/ui/samplings/{sid}",
            f"/ui/aggregations/{a}/tasks/{task['task_id']}", "/ui/collections/crowd/comparison",
            f"/ui/collections/crowd/annotators/{detail['judgments'][0]['annotator']}"]
    checked = 0
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        for table in parse(response.text).find_all("table"):
            head = table.find_all("thead")
            rows = [tr for body in table.find_all("tbody") for tr in body.find_all("tr")]
            if not head or not rows:
                continue
            titles = head[0].find_all("tr")[0].find_all("th")
            cells = [[c for c in tr.children if isinstance(c, Element) and c.tag in ("td", "th")]
                     for tr in rows]
            cells = [row for row in cells if len(row) == len(titles)]
            for i, th in enumerate(titles):
                if cells and all("num" in row[i].classes() for row in cells):
                    checked += 1
                    assert "num" in th.classes(), (url, table.attrs.get("id"), th.text)
    assert checked > 20


def test_chart_titles_wrap_and_agreement_uses_the_data_range() -> None:
    """A title longer than a phone's chart is wide is cut at both ends by Plotly: titles wrap
    (and the top margin makes room). The agreement heatmap spans the data's range, not 0–1,
    where 0.63 and 1.00 looked alike."""
    from app.ui.charts import bars, heatmap, integer_histogram

    title = ("Agreement of the qrels (share of tasks with the same label; graded vs binary: "
             "relevance)")
    fig = heatmap(["a", "b"], ["a", "b"], [[1.0, 0.63], [0.63, 1.0]], title=title, x="fit",
                  y="fit")
    assert fig is not None
    text = fig["layout"]["title"]["text"]
    lines = text.split("<br>")
    assert len(lines) > 1 and all(len(line) <= 42 for line in lines)
    assert " ".join(lines) == title
    assert fig["layout"]["margin"]["t"] > 35
    assert "zmin" not in fig["data"][0] and "zmax" not in fig["data"][0]
    short = integer_histogram({1: 3}, title="Judgments per task", x="judgments")
    assert short is not None and short["layout"]["title"]["text"] == "Judgments per task"
    rounds = bars([0, 1, 2], [6528, 200, 100], title="Pairs per round", x="round", y="pairs")
    assert rounds is not None and rounds["data"][0]["text"] == ["6,528", "200", "100"]


def test_agreement_chart_on_the_page_spans_the_data(client, crowd) -> None:
    seed(client, crowd)
    created = client.post(f"{API}/collections/crowd/aggregations",
                          json={"method": "ds", "seed": 1,
                                # DS without the pooled prior, which labels this small crowd
                                # exactly as majority vote does (agreement 1 everywhere)
                                "params": {"population_prior": 0}}).json()
    assert wait_for(client, created["id"])["status"] == "succeeded"
    trace = figures(client.get("/ui/collections/crowd/comparison").text)["agreement"]["data"][0]
    assert trace.get("zmin") != 0
