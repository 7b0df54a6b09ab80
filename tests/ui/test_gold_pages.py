"""Gold on the pages: the collection's gold broken down (labelled, could not judge, without
gold), which gold a fit was scored against and whether it still holds, and the comparison's
re-scored and stale rows (on the hand-built collection of tests/api/judgments/test_gold.py)."""

from __future__ import annotations

from tests.api.judgments.test_gold import NEW_GOLD, build, fit, put_gold
from tests.ui.dom import parse
from tests.ui.test_pages import figures, token


def test_collection_page_breaks_the_gold_down(client) -> None:
    build(client)  # gold: 6 labelled (4 scorable), 1 could not judge, 2 tasks without
    page = client.get("/ui/collections/g").text
    gold = figures(page)["gold"]["data"][0]
    assert (list(gold["x"]), list(gold["y"])) == (["labelled", "could not judge",
                                                   "without gold"], [6, 1, 2])
    card = parse(page).by_id("gold-card").text
    assert "6" in card and "+ 1 could not judge; 4 scorable" in " ".join(card.split())
    form = parse(page).by_id("evaluation-form")
    samples = form.find_all("input", name="samples")[0]
    assert form.by_id(samples.attrs["aria-describedby"]).text == "ignored for gold: fixed qrels"


def test_upload_messages_count_could_not_judge(client) -> None:
    build(client)
    page = client.get("/ui/collections/g").text
    r = client.post("/ui/collections/g/judgments", data={"csrf_token": token(page)},
                    files={"file": ("j.tsv", b"topic\tdoc\tannotator\tlabel\tgold\n"
                                             b"t\tn1\ta\t1\t-2\n", "text/tab-separated-values")})
    assert r.status_code == 200, r.text
    text = " ".join(parse(r.text).by_id("message").text.split())
    assert "stored 1 judgment (1 new task, 0 new annotators, 1 gold label, 1 of them could " \
           "not judge)" in text, text
    page = r.text
    r = client.post("/ui/collections/g/gold", data={"csrf_token": token(page), "mode": "merge"},
                    files={"file": ("g.qrels", b"t 0 n2 -2\nt 0 n3 1\n", "text/plain")})
    text = " ".join(parse(r.text).by_id("message").text.split())
    assert "gold set for 2 tasks, 1 of them could not judge (merge; 2 new tasks)" in text, text


def test_fits_on_an_earlier_gold_are_marked(client) -> None:
    build(client)
    mv = fit(client, "mv")
    clamped = fit(client, "ds", use_gold=True)
    page = parse(client.get(f"/ui/aggregations/{mv['id']}").text)
    scored = " ".join(page.by_id("gold-scored").text.split())
    assert scored == ("4 of 6 labelled gold tasks scored; 1 judged only 'could not judge', "
                      "1 not judged; 1 gold 'could not judge'"), scored
    assert 'id="gold-stale"' not in client.get(f"/ui/aggregations/{mv['id']}").text
    assert "earlier gold" not in client.get("/ui/collections/g").text

    put_gold(client, NEW_GOLD)
    rows = {tr.attrs["data-aggregation"]: tr for tr in
            parse(client.get("/ui/collections/g").text).by_id("fits").find_all("tr")
            if "data-aggregation" in tr.attrs}
    assert all("scored on an earlier gold" in tr.text for tr in rows.values())

    page = parse(client.get(f"/ui/aggregations/{mv['id']}").text)
    stale = page.by_id("gold-stale")
    assert "changed" in stale.text
    current = page.by_id("current-evaluation")  # re-scored against the current gold
    assert "0.667" in current.text and "3" in current.text
    page = parse(client.get(f"/ui/aggregations/{clamped['id']}").text)
    assert "use_gold" in page.by_id("gold-stale").text
    assert 'id="current-evaluation"' not in client.get(f"/ui/aggregations/{clamped['id']}").text

    table = parse(client.get("/ui/collections/g/comparison").text).by_id("comparison")
    rows = {tr.find_all("a")[0].text: tr for tr in table.find_all("tr") if tr.find_all("a")}
    rescored, stale = rows[f"#{mv['id']}"], rows[f"#{clamped['id']}"]
    assert "rescored" in rescored.classes() and "re-scored on the current gold" in rescored.text
    assert "stale" in stale.classes() and "earlier gold" in stale.text
    assert "refit" in stale.attrs["title"]


def test_pluralised_messages(client) -> None:
    build(client)
    page = client.get("/ui/collections/g").text
    r = client.post("/ui/collections/g/judgments", data={"csrf_token": token(page)},
                    files={"file": ("j.tsv", b"topic\tdoc\tannotator\tlabel\nt\tm1\tz\t1\n",
                                    "text/tab-separated-values")})
    text = " ".join(parse(r.text).by_id("message").text.split())
    assert "stored 1 judgment (1 new task, 1 new annotator, 0 gold labels)" in text, text


def test_a_clamped_fit_stored_before_gold_was_recorded_cannot_be_checked(client,
                                                                           settings) -> None:
    from sqlalchemy import select

    from app.aggregations.tables import Aggregation
    from app.core.db import get_sessionmaker

    build(client)
    clamped = fit(client, "ds", use_gold=True)
    with get_sessionmaker(settings.database_url)() as session:
        for row in session.scalars(select(Aggregation)):
            row.info = {k: v for k, v in row.info.items() if k != "gold"}
        session.commit()
    text = client.get(f"/ui/aggregations/{clamped['id']}").text
    assert "fitted before gold was recorded; cannot be checked" in parse(text).by_id(
        "gold-unknown").text.lower()
    assert 'id="gold-stale"' not in text and 'id="gold-scored"' not in text
