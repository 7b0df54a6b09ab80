"""A dashboard form sent twice is acted on once (on SQLite and PostgreSQL): every form that
changes something carries a one-use key, and its handler runs through the API's Idempotency-Key
mechanism with the signed-in key's name as owner. A repeat gets a redirect to the same page with
the first message, saying the form was already sent, and stores nothing; the same key with
another file or other fields is refused; a refused form comes back with a new key, and the
corrected form is stored."""

from __future__ import annotations

import html
import json
import re
import threading
from urllib.parse import parse_qs, urlsplit

from sqlalchemy import func, select

from app.aggregations.tables import Aggregation
from app.auth.idempotency import REPLAYED_HEADER, Idempotency
from app.auth.tables import IdempotencyRecord
from app.core.db import get_sessionmaker
from app.judgments.tables import Batch, Judgment
from app.sampling.tables import SamplingRound
from app.ui.forms import REUSED, form_body
from app.ui.messages import REPLAYED
from tests.api.helpers import API, create_collection
from tests.api.sampling.test_sampling import setup_collection as sampling_collection

ROWS = b"topic\tdoc\tannotator\tlabel\nt1\td1\tw1\t1\nt1\td2\tw1\t0\nt2\td1\tw2\t1\n"
OTHER = b"topic\tdoc\tannotator\tlabel\nt3\td1\tw1\t1\n"


def form_fields(page: str, action: str) -> dict[str, str]:
    """The hidden fields (CSRF token, one-use key) of the page's form that posts to ``action``."""
    match = re.search(rf'<form method="post" action="{re.escape(action)}(?:#[\w-]+)?"(.*?)</form>',
                      page, re.S)
    assert match, f"no form posting to {action}"
    hidden = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">',
                             match.group(1)))
    assert set(hidden) == {"csrf_token", "form_key"}, hidden
    return hidden


def count(database_url: str, table: type) -> int:
    with get_sessionmaker(database_url)() as session:
        return int(session.scalar(select(func.count()).select_from(table)) or 0)


def message(location: str) -> str:
    return parse_qs(urlsplit(location).query)["msg"][0]


def assert_answered_again(first, again) -> None:  # type: ignore[no-untyped-def]
    """``again`` is ``first``'s answer again: the same page and query, the same message said
    to be of a form already sent, and the replay header."""
    one, two = urlsplit(first.headers["location"]), urlsplit(again.headers["location"])
    assert (one.path, one.fragment) == (two.path, two.fragment)
    kept = [{k: v for k, v in parse_qs(u.query).items() if k not in ("msg", "sig")}
            for u in (one, two)]
    assert kept[0] == kept[1]
    assert message(again.headers["location"]) == REPLAYED + message(first.headers["location"])
    assert REPLAYED_HEADER not in first.headers and again.headers[REPLAYED_HEADER] == "true"


def upload(client, fields: dict[str, str], content: bytes = ROWS, name: str = "j.tsv"):  # type: ignore[no-untyped-def]
    return client.post("/ui/collections/crowd/judgments", data=fields,
                       files={"file": (name, content, "text/tab-separated-values")},
                       follow_redirects=False)


def test_an_upload_sent_twice_is_stored_once(client, database_url) -> None:
    create_collection(client, name="crowd", labels=[0, 1], relevant_from=1, ignore=[])
    page = client.get("/ui/collections/crowd").text
    fields = form_fields(page, "/ui/collections/crowd/judgments")
    # every form has its own key, new on every rendering
    keys = re.findall(r'name="form_key" value="([0-9a-f]{32})"', page)
    assert len(keys) == 6 and len(set(keys)) == 6
    again = client.get("/ui/collections/crowd").text
    assert form_fields(again, "/ui/collections/crowd/judgments")["form_key"] != fields["form_key"]

    first = upload(client, fields)
    second = upload(client, fields)  # a double click, or the browser's "resubmit"
    assert first.status_code == second.status_code == 303
    assert_answered_again(first, second)
    assert message(first.headers["location"]).startswith("stored 3 judgments (3 new tasks")
    assert ("this form was already sent: stored 3 judgments"
            in html.unescape(client.get(second.headers["location"]).text))
    assert count(database_url, Judgment) == 3 and count(database_url, Batch) == 1

    # the same key with another file (back, another file chosen, sent): refused, stored nothing
    refused = upload(client, fields, OTHER, "other.tsv")
    assert refused.status_code == 422 and "text/html" in refused.headers["content-type"]
    assert 'id="form-error"' in refused.text and "idempotency_key_reused" in refused.text
    assert REUSED in html.unescape(refused.text)
    assert count(database_url, Judgment) == 3
    # ... and the same file under another name is another request too (the batch keeps its name)
    assert upload(client, fields, ROWS, "renamed.tsv").status_code == 422
    # the form shown with the refusal has a new key: sent with it, the other file is stored
    fresh = form_fields(refused.text, "/ui/collections/crowd/judgments")
    assert fresh["form_key"] != fields["form_key"]
    stored = upload(client, fresh, OTHER, "other.tsv")
    assert stored.status_code == 303 and "stored 1 judgment " in message(
        stored.headers["location"])
    assert count(database_url, Judgment) == 4 and count(database_url, Batch) == 2


def test_a_refused_upload_leaves_its_key_free_and_the_corrected_one_is_stored(
        client, database_url) -> None:
    create_collection(client, name="crowd", labels=[0, 1], relevant_from=1, ignore=[])
    fields = form_fields(client.get("/ui/collections/crowd").text,
                         "/ui/collections/crowd/judgments")
    bad = b"topic\tdoc\tannotator\tlabel\nt1\td1\tw1\t1\nt1\td2\tw1\t7\n"
    refused = upload(client, fields, bad)
    assert refused.status_code == 422 and "label_out_of_scale" in refused.text
    assert count(database_url, IdempotencyRecord) == 0  # the claim rolled back with the work
    fresh = form_fields(refused.text, "/ui/collections/crowd/judgments")
    assert fresh["form_key"] != fields["form_key"]
    corrected = upload(client, fresh)
    assert corrected.status_code == 303 and "stored 3 judgments" in message(
        corrected.headers["location"])
    assert_answered_again(corrected, upload(client, fresh))
    # the refused attempt's key is free as well (the browser's "resubmit" of a fixed file)
    assert upload(client, fields, OTHER).status_code == 303
    assert count(database_url, Judgment) == 4 and count(database_url, Batch) == 2


def test_gold_sent_twice_answers_the_same(client, database_url) -> None:
    create_collection(client, name="crowd", labels=[0, 1], relevant_from=1, ignore=[])
    assert upload(client, form_fields(client.get("/ui/collections/crowd").text,
                                      "/ui/collections/crowd/judgments")).status_code == 303
    fields = {**form_fields(client.get("/ui/collections/crowd").text,
                            "/ui/collections/crowd/gold"), "mode": "merge"}
    answers = [client.post("/ui/collections/crowd/gold", data=fields, follow_redirects=False,
                           files={"file": ("g.qrels", b"t1 0 d1 1\nt9 0 d9 0\n", "text/plain")})
               for _ in range(2)]
    assert [a.status_code for a in answers] == [303, 303]
    assert_answered_again(*answers)
    assert "gold set for 2 tasks (merge; 1 new task)" in message(answers[0].headers["location"])
    # the same key and file with another mode is another request
    other = client.post("/ui/collections/crowd/gold", data={**fields, "mode": "replace"},
                        files={"file": ("g.qrels", b"t1 0 d1 1\nt9 0 d9 0\n", "text/plain")})
    assert other.status_code == 422 and "idempotency_key_reused" in other.text


def test_a_fit_form_sent_twice_starts_one_fit(client, database_url) -> None:
    create_collection(client, name="crowd", labels=[0, 1], relevant_from=1, ignore=[])
    page = client.get("/ui/collections/crowd").text
    assert upload(client, form_fields(page, "/ui/collections/crowd/judgments")).status_code \
        == 303
    fields = {**form_fields(page, "/ui/collections/crowd/aggregations"), "method": "mv",
              "params": "{}", "seed": "1"}
    answers = [client.post("/ui/collections/crowd/aggregations", data=fields,
                           follow_redirects=False) for _ in range(2)]
    assert [a.status_code for a in answers] == [303, 303]
    assert_answered_again(*answers)
    assert message(answers[0].headers["location"]) == "fit #1 (mv) queued"
    assert client.get(f"{API}/collections/crowd/aggregations").json()["count"] == 1
    assert count(database_url, Aggregation) == 1

    # the same key with another seed: refused, with the form as sent and a new key
    refused = client.post("/ui/collections/crowd/aggregations", data={**fields, "seed": "2"})
    assert refused.status_code == 422 and "idempotency_key_reused" in refused.text
    assert 'id="fit-seed" value="2"' in refused.text
    fresh = form_fields(refused.text, "/ui/collections/crowd/aggregations")
    assert fresh["form_key"] != fields["form_key"]
    started = client.post("/ui/collections/crowd/aggregations", follow_redirects=False,
                          data={**fields, **fresh, "seed": "2"})
    assert started.status_code == 303 and message(started.headers["location"]) \
        == "fit #2 (mv) queued"
    assert count(database_url, Aggregation) == 2


def test_a_cancel_sent_twice_says_cancelled_twice(client, database_url) -> None:
    """A fit that stays queued (a runner that runs nothing): the second cancel is not
    'already cancelled' but the first answer again (said to be of a form already sent)."""
    from app.api.deps import get_runner

    class Idle:
        def submit(self, kind: str, job_id: int) -> None:
            return None

        def cancel(self, kind: str, job_id: int, runner_job_id: str | None) -> None:
            return None

    create_collection(client, name="crowd", labels=[0, 1], relevant_from=1, ignore=[])
    assert client.post(f"{API}/collections/crowd/judgments/file", content=ROWS,
                       headers={"content-type": "text/tab-separated-values"}).status_code == 201
    client.app.dependency_overrides[get_runner] = Idle
    try:
        fit = client.post(f"{API}/collections/crowd/aggregations", json={"method": "mv"}).json()
        page = client.get("/ui/collections/crowd").text
        fields = form_fields(page, f"/ui/aggregations/{fit['id']}/cancel")
        answers = [client.post(f"/ui/aggregations/{fit['id']}/cancel", data=fields,
                               follow_redirects=False) for _ in range(2)]
    finally:
        client.app.dependency_overrides.clear()
    assert [a.status_code for a in answers] == [303, 303]
    assert message(answers[0].headers["location"]) == f"fit #{fit['id']} cancelled"
    assert_answered_again(*answers)
    assert client.get(f"{API}/aggregations/{fit['id']}").json()["status"] == "cancelled"
    cancels = client.get(f"{API}/audit", params={"action": "fit_cancelled"}).json()
    assert cancels["count"] == 1 and cancels["data"][0]["target_id"] == fit["id"]


def test_page_forms_are_audited_as_the_api(client, database_url) -> None:
    """Judgments, gold and a fit sent from the pages leave the audit events the API's requests
    leave (once, however often the form is sent)."""
    create_collection(client, name="crowd", labels=[0, 1], relevant_from=1, ignore=[])
    page = client.get("/ui/collections/crowd").text
    for _ in range(2):
        assert upload(client, form_fields(page, "/ui/collections/crowd/judgments")
                      ).status_code == 303
    gold = {**form_fields(page, "/ui/collections/crowd/gold"), "mode": "replace"}
    for _ in range(2):
        assert client.post("/ui/collections/crowd/gold", data=gold, follow_redirects=False,
                           files={"file": ("g.qrels", b"t1 0 d1 1\n", "text/plain")}
                           ).status_code == 303
    fit = {**form_fields(page, "/ui/collections/crowd/aggregations"), "method": "mv",
           "params": "{}"}
    for _ in range(2):
        assert client.post("/ui/collections/crowd/aggregations", data=fit,
                           follow_redirects=False).status_code == 303
    events = list(reversed(client.get(f"{API}/audit").json()["data"]))
    assert [e["action"] for e in events] == ["collection_created", "judgments_added",
                                             "gold_replaced", "fit_started"]
    assert events[1]["counts"] == {"judgments": 3, "new_tasks": 3, "gold_labels": 0}
    assert events[2]["counts"]["gold_labels"] == 1
    assert events[3]["counts"]["method"] == "mv" and events[3]["target_id"] == 1


def test_a_round_form_sent_twice_draws_one_round(client, database_url) -> None:
    sampling_collection(client)
    page = client.get("/ui/collections/pool").text
    fields = {**form_fields(page, "/ui/collections/pool/samplings"), "budget_per_round": "4",
              "strategy": "uniform", "seed": "1"}
    created = [client.post("/ui/collections/pool/samplings", data=fields,
                           follow_redirects=False) for _ in range(2)]
    assert [c.status_code for c in created] == [303, 303]
    assert_answered_again(*created)
    assert client.get(f"{API}/collections/pool/samplings").json()["count"] == 1
    sid = client.get(f"{API}/collections/pool/samplings").json()["data"][0]["id"]

    fields = form_fields(client.get(f"/ui/samplings/{sid}").text, f"/ui/samplings/{sid}/rounds")
    drawn = [client.post(f"/ui/samplings/{sid}/rounds", data=fields, follow_redirects=False)
             for _ in range(2)]
    # without the key the second would be 409 round_not_judged (the round has no judgments)
    assert [d.status_code for d in drawn] == [303, 303]
    assert_answered_again(*drawn)
    assert message(drawn[0].headers["location"]) == "round 1: 4 pairs to judge"
    assert client.get(f"{API}/samplings/{sid}/rounds").json()["count"] == 1
    assert count(database_url, SamplingRound) == 1
    # the same key with "force": another request, refused on the page with a new form
    refused = client.post(f"/ui/samplings/{sid}/rounds", data={**fields, "force": "on"})
    assert refused.status_code == 422 and "idempotency_key_reused" in refused.text
    fresh = form_fields(refused.text, f"/ui/samplings/{sid}/rounds")
    forced = client.post(f"/ui/samplings/{sid}/rounds", data={**fresh, "force": "on"},
                         follow_redirects=False)
    assert forced.status_code == 303 and "round 2" in message(forced.headers["location"])
    assert count(database_url, SamplingRound) == 2


def test_an_evaluation_form_sent_twice_starts_one_job(client, database_url) -> None:
    from tests.api.evaluations.test_evaluations import setup_collection

    aggregation = setup_collection(client)
    page = client.get("/ui/collections/ev").text
    fields = {**form_fields(page, "/ui/collections/ev/evaluations"),
              "source": str(aggregation), "measures": "P@10", "samples": "0", "seed": "0"}
    answers = [client.post("/ui/collections/ev/evaluations", data=fields,
                           follow_redirects=False) for _ in range(2)]
    assert [a.status_code for a in answers] == [303, 303]
    assert_answered_again(*answers)
    assert client.get(f"{API}/collections/ev/evaluations").json()["count"] == 1


def test_two_submits_at_once_store_once(client, database_url, monkeypatch) -> None:
    """The second submit arrives while the first is still storing (slowed down, holding the
    key's row): it waits for the first and answers as the first did."""
    import time

    from app.judgments import service as judgments_service

    ingest = judgments_service.ingest

    def slow(session, **kwargs):  # type: ignore[no-untyped-def]
        time.sleep(0.5)
        return ingest(session, **kwargs)

    create_collection(client, name="crowd", labels=[0, 1], relevant_from=1, ignore=[])
    fields = form_fields(client.get("/ui/collections/crowd").text,
                         "/ui/collections/crowd/judgments")
    monkeypatch.setattr(judgments_service, "ingest", slow)
    answers: list = [None, None]

    def send(i: int) -> None:
        answers[i] = upload(client, fields)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
        time.sleep(0.1)
    for thread in threads:
        thread.join(timeout=60)
    assert [a.status_code for a in answers] == [303, 303], [a.text for a in answers]
    assert sum(REPLAYED_HEADER in a.headers for a in answers) == 1
    assert_answered_again(*sorted(answers, key=lambda a: REPLAYED_HEADER in a.headers))
    assert count(database_url, Judgment) == 3 and count(database_url, Batch) == 1


def test_a_submit_whose_first_never_finished_gets_a_clear_page(client, database_url,
                                                               monkeypatch) -> None:
    """A key whose first request stored its data but not its answer (a process killed between
    the two): after the wait, a 409 page that says what to do, with no form to send again."""
    import app.auth.idempotency as idempotency

    create_collection(client, name="crowd", labels=[0, 1], relevant_from=1, ignore=[])
    page = client.get("/ui/collections/crowd").text
    fields = {**form_fields(page, "/ui/collections/crowd/aggregations"), "method": "mv",
              "params": "{}", "seed": "1"}
    from starlette.datastructures import FormData

    claim = Idempotency(key=fields["form_key"], owner="anonymous", method="POST",
                        path="/ui/collections/crowd/aggregations", query="")
    with get_sessionmaker(database_url)() as session:
        session.add(IdempotencyRecord(owner="anonymous", key=fields["form_key"],
                                      request_hash=claim.fingerprint(form_body(FormData(
                                          list(fields.items()))))))
        session.commit()
    monkeypatch.setattr(idempotency, "WAIT_S", 0.3)
    r = client.post("/ui/collections/crowd/aggregations", data=fields)
    assert r.status_code == 409 and "text/html" in r.headers["content-type"]
    assert "idempotency_in_progress" in r.text and "still being stored" in r.text
    assert 'name="form_key"' not in r.text
    assert count(database_url, Aggregation) == 0


def test_a_key_longer_than_the_api_allows_is_refused(client) -> None:
    create_collection(client, name="crowd", labels=[0, 1], relevant_from=1, ignore=[])
    fields = form_fields(client.get("/ui/collections/crowd").text,
                         "/ui/collections/crowd/judgments")
    r = upload(client, {**fields, "form_key": "x" * 201})
    assert r.status_code == 422 and "invalid_body" in r.text and "form_key" in r.text


def test_signed_in_keys_own_their_form_keys(database_url) -> None:
    """With access control on, through the real sign-in: the owner is the signed-in key's name,
    the same owner the API gives that key (its Idempotency-Key rows)."""
    from fastapi.testclient import TestClient

    from app.auth.middleware import SESSION_COOKIE
    from app.core.config import Settings
    from app.main import create_app
    from tests.auth.conftest import bearer, make_key

    settings = Settings(database_url=database_url, environment="test", auth="required",
                        warm_startup_s=0)
    keys = {name: make_key(database_url, name, "admin") for name in ("alice", "bob")}
    with TestClient(create_app(settings)) as client:
        assert client.post(f"{API}/collections", headers=bearer(keys["alice"]), json={
            "name": "crowd", "labels": [0, 1], "relevant_from": 1}).status_code == 201
        sessions = {}
        form_csrf = re.compile(r'name="csrf_token" value="([^"]+)"')
        for name, key in keys.items():
            client.cookies.clear()
            page = client.get("/ui/login")
            token = form_csrf.search(page.text).group(1)  # type: ignore[union-attr]
            signed = client.post("/ui/login", follow_redirects=False,
                                 data={"key": key, "csrf_token": token})
            assert signed.status_code == 303
            sessions[name] = signed.cookies[SESSION_COOKIE]

        def as_(name: str) -> None:  # the browser of ``name`` (the CSRF cookie is kept)
            client.cookies.set(SESSION_COOKIE, sessions[name], domain="testserver.local")

        as_("alice")
        fields = form_fields(client.get("/ui/collections/crowd").text,
                             "/ui/collections/crowd/judgments")
        first = upload(client, fields)
        assert first.status_code == 303 and "stored 3 judgments" in message(
            first.headers["location"])
        as_("bob")  # alice's key, bob's form: his own request
        bobs = upload(client, fields, OTHER, "bob.tsv")
        assert bobs.status_code == 303 and REPLAYED_HEADER not in bobs.headers
        assert "stored 1 judgment " in message(bobs.headers["location"])
        as_("alice")
        again = upload(client, fields)
        assert_answered_again(first, again)
        assert count(database_url, Judgment) == 4
        # the API, with alice's key and her form's key: the same owner, another request
        api = client.post(f"{API}/collections/crowd/judgments/file", content=ROWS,
                          headers={**bearer(keys["alice"]), "Idempotency-Key": fields["form_key"],
                                   "content-type": "text/tab-separated-values"})
        assert api.status_code == 422 and api.json()["code"] == "idempotency_key_reused"
    with get_sessionmaker(database_url)() as session:
        assert sorted(session.scalars(select(IdempotencyRecord.owner)).all()) == ["alice", "bob"]
        # Each stored upload is audited under its signed-in key, as the API's are; the replay
        # is not.
        events = client.get(f"{API}/audit", headers=bearer(keys["alice"])).json()["data"]
        assert [(e["action"], e["key_name"]) for e in reversed(events)] == [
            ("collection_created", "alice"), ("judgments_added", "alice"),
            ("judgments_added", "bob")]
        assert events[0]["counts"]["judgments"] == 1 and events[0]["collection"] == "crowd"


def test_a_fit_page_refits_warm_from_itself(client, database_url) -> None:
    """The re-judging loop on the pages: a succeeded ds fit's page carries a form that refits
    the collection's judgments now with the same method, parameters, seed and scale, warm from
    this fit (once per form key); a method that cannot start warm has no such form, and the
    collection's fit form takes a fit to start from too."""
    from tests.api.jobs import wait_for

    create_collection(client, name="crowd", labels=[0, 1], relevant_from=1, ignore=[])
    assert client.post(f"{API}/collections/crowd/judgments/file", content=ROWS,
                       headers={"content-type": "text/tab-separated-values"}).status_code == 201
    first = client.post(f"{API}/collections/crowd/aggregations",
                        json={"method": "ds", "params": {"tol": 1e-6}, "seed": 3}).json()
    first = wait_for(client, first["id"])
    assert first["status"] == "succeeded"
    mv = client.post(f"{API}/collections/crowd/aggregations", json={"method": "mv"}).json()
    assert wait_for(client, mv["id"])["status"] == "succeeded"
    assert 'id="refit-form"' not in client.get(f"/ui/aggregations/{mv['id']}").text

    page = client.get(f"/ui/aggregations/{first['id']}").text
    form = re.search(r'<form [^>]*id="refit-form">(.*?)</form>', page, re.S)
    assert form, "no refit form on a succeeded ds fit's page"
    fields = {name: html.unescape(double or single) for name, double, single in re.findall(
        r'<input type="hidden" name="([^"]+)" value=(?:"([^"]*)"|\'([^\']*)\')>',
        form.group(1))}
    assert (fields["method"], fields["seed"], fields["warm_start"]) == ("ds", "3",
                                                                          str(first["id"]))
    assert json.loads(fields["params"])["tol"] == 1e-6
    assert client.post(f"{API}/collections/crowd/judgments/file", content=OTHER,
                       headers={"content-type": "text/tab-separated-values"}).status_code == 201
    answers = [client.post("/ui/collections/crowd/aggregations", data=fields,
                           follow_redirects=False) for _ in range(2)]
    assert [a.status_code for a in answers] == [303, 303]
    assert_answered_again(*answers)
    refit_id = first["id"] + 2
    assert message(answers[0].headers["location"]) == \
        f"fit #{refit_id} (ds) queued, starting from fit #{first['id']}"
    refit = wait_for(client, refit_id)
    assert refit["status"] == "succeeded"
    assert (refit["warm_start"], refit["seed"], refit["params"]["tol"]) == (first["id"], 3, 1e-6)
    assert refit["n_judgments"] == first["n_judgments"] + 1
    assert count(database_url, Aggregation) == 3
    events = client.get(f"{API}/audit", params={"action": "fit_started"}).json()["data"]
    assert [e["counts"].get("warm_start") for e in events if e["target_id"] == refit_id] == \
        [first["id"]]
    assert f'started from <a href="/ui/aggregations/{first["id"]}"' in \
        client.get(f"/ui/aggregations/{refit_id}").text

    # the collection's fit form: a warm start the API refuses shows its code, kept in the form
    page = client.get("/ui/collections/crowd").text
    refused = client.post("/ui/collections/crowd/aggregations", data={
        **form_fields(page, "/ui/collections/crowd/aggregations"), "method": "ds",
        "params": "{}", "seed": "1", "warm_start": str(mv["id"])})
    assert refused.status_code == 422 and "warm_start_method_mismatch" in refused.text
    assert f'id="fit-warm-start" value="{mv["id"]}"' in refused.text
    assert count(database_url, Aggregation) == 3


def test_a_calibrated_fit_page_offers_no_warm_refit(client, database_url) -> None:
    """A fit calibrated on held-out gold (calibrate_folds) cannot start warm (the API refuses it:
    warm_start_unsupported), so its page has no refit form that could only be refused; the same
    method uncalibrated has one."""
    from sqlalchemy import update

    from tests.api.jobs import wait_for

    create_collection(client, name="crowd", labels=[0, 1], relevant_from=1, ignore=[])
    assert client.post(f"{API}/collections/crowd/judgments/file", content=ROWS,
                       headers={"content-type": "text/tab-separated-values"}).status_code == 201
    plain = wait_for(client, client.post(f"{API}/collections/crowd/aggregations",
                                         json={"method": "ds"}).json()["id"])
    calibrated = wait_for(client, client.post(f"{API}/collections/crowd/aggregations",
                                              json={"method": "ds"}).json()["id"])
    assert plain["status"] == calibrated["status"] == "succeeded"
    # its parameters as a calibrated fit's (the few rows here have no gold to calibrate on)
    with get_sessionmaker(database_url)() as session:
        session.execute(update(Aggregation).where(Aggregation.id == calibrated["id"]).values(
            params={"use_gold": True, "calibrate_folds": 2}))
        session.commit()
    refused = client.post(f"{API}/collections/crowd/aggregations", json={
        "method": "ds", "params": {"use_gold": True, "calibrate_folds": 2},
        "warm_start": calibrated["id"]})
    assert refused.json()["code"] == "warm_start_unsupported", refused.text
    assert 'id="refit-form"' in client.get(f"/ui/aggregations/{plain['id']}").text
    assert 'id="refit-form"' not in client.get(f"/ui/aggregations/{calibrated['id']}").text
