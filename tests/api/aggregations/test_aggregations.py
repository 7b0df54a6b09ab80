"""Aggregations through HTTP with both job runners: fits, downloads, cancel, failure, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cli import main as cli
from models.synthetic import generate
from tests.api.helpers import API, TSV, create_collection
from tests.api.jobs import wait_for

SEED = 7


@pytest.fixture(scope="module")
def synthetic_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("synth")
    generate(300, 30, noise_level=(2.0, 4.0), redundancy=5, random_state=SEED).write(directory)
    return directory


def ingest_synthetic(client, directory: Path) -> None:
    create_collection(client, name="synth", labels=[0, 1], relevant_from=1, ignore=[])
    response = client.post(f"{API}/collections/synth/judgments/file",
                           content=(directory / "judgments.tsv").read_bytes(), headers=TSV)
    assert response.status_code == 201, response.text
    gold = client.put(f"{API}/collections/synth/gold", content=(directory / "gold.qrels")
                      .read_bytes(), headers={"content-type": "text/plain"})
    assert gold.status_code == 200, gold.text


def offline_qrels(tmp_path: Path, judgments: Path, method: str, *extra: str) -> str:
    out = tmp_path / f"{method}.qrels"
    code = cli(["aggregate", str(judgments), "--method", method, "--seed", str(SEED),
                "--output", str(out), "--quiet", *extra])
    assert code == 0
    return out.read_text()


@pytest.mark.parametrize("method", ["mv", "mace", "ds"])
def test_fit_downloads_match_the_offline_cli(jobs_client, synthetic_file, tmp_path,
                                             method) -> None:
    client = jobs_client
    ingest_synthetic(client, synthetic_file)
    response = client.post(f"{API}/collections/synth/aggregations",
                           json={"method": method, "seed": SEED})
    assert response.status_code == 202, response.text
    created = response.json()
    assert created["status"] == "queued" and created["method"] == method
    assert created["watermark"] > 0

    done = wait_for(client, created["id"])
    assert done["status"] == "succeeded", done["error"]
    assert done["progress"]["fraction"] == 1.0
    assert done["n_judgments"] == 1500
    assert set(done["timings"]) >= {"load_s", "fit_s", "store_s"}
    evaluation = done["evaluation"]
    assert evaluation["n_gold"] == 300
    assert 0.6 < evaluation["accuracy"] <= 1.0
    assert {"precision", "recall", "f1", "log_loss", "ece", "brier",
            "reliability"} <= set(evaluation)
    assert 0.0 <= evaluation["ece"] <= 1.0 and sum(evaluation["reliability"]["count"]) == 300

    trec = client.get(f"{API}/aggregations/{created['id']}/qrels")
    assert trec.status_code == 200
    assert trec.text == offline_qrels(tmp_path, synthetic_file / "judgments.tsv", method)
    lines = trec.text.splitlines()
    assert len(lines) == 300 and lines == sorted(lines, key=lambda s: (s.split()[0], s.split()[2]))

    as_json = client.get(f"{API}/aggregations/{created['id']}/qrels?format=json").json()
    assert as_json["count"] == 300 and as_json["classes"] == [0, 1]
    assert all(abs(sum(r["proba"]) - 1) < 1e-6 for r in as_json["data"])
    thresholded = client.get(f"{API}/aggregations/{created['id']}/qrels?format=json&threshold=0.9")
    assert [r["label"] for r in thresholded.json()["data"]] == [
        int(r["p_relevant"] >= 0.9) for r in as_json["data"]]
    tsv_response = client.get(f"{API}/aggregations/{created['id']}/qrels?format=tsv")
    assert tsv_response.headers["content-disposition"] == (
        f'attachment; filename="aggregation-{created["id"]}.tsv"')  # saved, not shown
    tsv = tsv_response.text.splitlines()
    assert tsv[0].split("\t")[:5] == ["topic", "doc", "label", "p_relevant", "p_0"]
    assert len(tsv) == 301

    annotators = client.get(f"{API}/aggregations/{created['id']}/annotators",
                            params={"sort": "-n_judgments", "limit": 5}).json()
    assert annotators["count"] == done["info"]["n_annotators"]
    counts = [a["n_judgments"] for a in annotators["data"]]
    assert counts == sorted(counts, reverse=True)
    filtered = client.get(f"{API}/aggregations/{created['id']}/annotators",
                          params={"min_judgments": 50}).json()
    assert all(a["n_judgments"] >= 50 for a in filtered["data"])
    assert filtered["count"] < annotators["count"]

    tasks = client.get(f"{API}/aggregations/{created['id']}/tasks",
                       params={"sort": "-uncertainty", "limit": 10}).json()
    assert tasks["count"] == 300
    uncertainty = [t["uncertainty"] for t in tasks["data"]]
    assert uncertainty == sorted(uncertainty, reverse=True)
    page2 = client.get(f"{API}/aggregations/{created['id']}/tasks",
                       params={"sort": "-uncertainty", "limit": 10, "offset": 10}).json()
    assert page2["data"][0]["uncertainty"] <= uncertainty[-1]


def test_comparison_and_annotator_history(jobs_client, synthetic_file) -> None:
    client = jobs_client
    ingest_synthetic(client, synthetic_file)
    ids = [client.post(f"{API}/collections/synth/aggregations", json={"method": m}).json()["id"]
           for m in ("mv", "ds")]
    for i in ids:
        assert wait_for(client, i)["status"] == "succeeded"
    comparison = client.get(f"{API}/collections/synth/aggregations/comparison").json()
    assert comparison["count"] == 2
    accuracies = [r["accuracy"] for r in comparison["data"]]
    assert accuracies == sorted(accuracies, reverse=True)
    for row in comparison["data"]:  # calibration beside accuracy, as the fit's evaluation has it
        fit = client.get(f"{API}/aggregations/{row['aggregation_id']}").json()["evaluation"]
        assert row["ece"] == fit["ece"] and row["brier"] == fit["brier"] is not None
    listing = client.get(f"{API}/collections/synth/aggregations").json()
    assert [a["id"] for a in listing["data"]] == ids

    history = client.get(f"{API}/collections/synth/annotators/a0").json()
    assert history["annotator"] == "a0" and history["judgments"] > 0
    assert [h["aggregation_id"] for h in history["data"]] == ids
    missing = client.get(f"{API}/collections/synth/annotators/nobody")
    assert missing.status_code == 404 and missing.json()["code"] == "annotator_not_found"


# The embedded default (inline, SQLite) and the runner furthest from it (Celery, PostgreSQL):
# inline-PostgreSQL adds no path of its own, its runner is inline-SQLite's and its database's
# writes (a cancel racing the job's own updates of the row) are Celery-PostgreSQL's.
@pytest.mark.parametrize("runner_settings", ["inline-sqlite", pytest.param(
    "celery-postgres", marks=[pytest.mark.postgres, pytest.mark.redis])], indirect=True)
def test_cancel_and_failure_leave_earlier_results_intact(jobs_client, synthetic_file) -> None:
    client = jobs_client
    ingest_synthetic(client, synthetic_file)
    first = client.post(f"{API}/collections/synth/aggregations", json={"method": "mv"}).json()
    assert wait_for(client, first["id"])["status"] == "succeeded"
    qrels_before = client.get(f"{API}/aggregations/{first['id']}/qrels").text

    # Many restarts keep MACE busy long enough to be cancelled while queued or running.
    slow = client.post(f"{API}/collections/synth/aggregations",
                       json={"method": "mace", "params": {"n_restarts": 1000,
                                                          "n_iter": 1000}}).json()
    cancelled = client.delete(f"{API}/aggregations/{slow['id']}")
    assert cancelled.status_code == 200
    assert cancelled.json()["status"] == "cancelled"
    assert wait_for(client, slow["id"])["status"] == "cancelled"
    results = client.get(f"{API}/aggregations/{slow['id']}/qrels")
    assert results.status_code == 409
    assert results.json()["code"] == "aggregation_not_succeeded"
    again = client.delete(f"{API}/aggregations/{slow['id']}")
    assert again.status_code == 409 and again.json()["code"] == "aggregation_finished"

    # A fit that fails on the data it reads (feature columns 0..99 of 2-column features: only
    # the fit sees the features; values a constructor refuses are a 422 before anything is
    # queued, test_bad_aggregation_requests) records why and changes nothing else.
    features = client.put(f"{API}/collections/synth/features",
                          content=(synthetic_file / "features.tsv").read_bytes(), headers=TSV)
    assert features.status_code == 200, features.text
    bad = client.post(f"{API}/collections/synth/aggregations",
                      json={"method": "magp", "params": {"feature_groups": "0:99"}}).json()
    failed = wait_for(client, bad["id"])
    assert failed["status"] == "failed"
    assert "feature group" in failed["error"]
    # what went wrong, without the server's traceback (file paths, code: the worker logs it)
    assert "File \"" not in failed["error"] and len(failed["error"].splitlines()) == 1
    assert client.get(f"{API}/aggregations/{bad['id']}/annotators").status_code == 409
    assert client.get(f"{API}/aggregations/{first['id']}/qrels").text == qrels_before


def test_bad_aggregation_requests(client) -> None:
    create_collection(client, name="empty", labels=[0, 1], relevant_from=1, ignore=[-2])
    unknown = client.post(f"{API}/collections/empty/aggregations", json={"method": "glad"})
    assert unknown.status_code == 422
    assert unknown.json()["code"] == "unknown_method"
    assert set(unknown.json()["valid"]) >= {"mv", "mace", "ds", "magp", "gpmv", "lk",
                                            "ibcc", "ebcc", "ordinal-ds", "ordinal-gp"}

    bad_param = client.post(f"{API}/collections/empty/aggregations",
                            json={"method": "mace", "params": {"restarts": 3}})
    assert bad_param.status_code == 422
    assert bad_param.json()["code"] == "invalid_params"
    assert "n_restarts" in bad_param.json()["valid"]
    wrong_type = client.post(f"{API}/collections/empty/aggregations",
                             json={"method": "mace", "params": {"n_restarts": "many"}})
    assert wrong_type.status_code == 422 and wrong_type.json()["code"] == "invalid_params"
    # Seeds the random generators refuse are refused here, not by a failed fit later.
    for body, code in [({"method": "mace", "seed": -5}, "invalid_body"),
                       ({"method": "mace", "seed": 2**40}, "invalid_body"),
                       ({"method": "mace", "params": {"random_state": -1}}, "invalid_params"),
                       # values a constructor refuses: refused before a fit is queued
                       ({"method": "ds", "params": {"tol": -1.0}}, "invalid_params"),
                       ({"method": "ibcc", "params": {"class_prior_by": "worker"}},
                        "invalid_params"),
                       ({"method": "ordinal-ds", "params": {"spam_prior": 1.5}},
                        "invalid_params"),
                       ({"method": "magp", "params": {"n_inducing": -3}}, "invalid_params"),
                       ({"method": "lk", "params": {"class_prior_by": "doc"}}, "invalid_params")]:
        response = client.post(f"{API}/collections/empty/aggregations", json=body)
        assert response.status_code == 422 and response.json()["code"] == code, body

    empty = client.post(f"{API}/collections/empty/aggregations", json={"method": "mv"})
    assert empty.status_code == 422
    assert empty.json()["code"] == "empty_collection"
    # only "could not judge" labels: nothing to aggregate either
    client.post(f"{API}/collections/empty/judgments", json={"judgments": [
        {"topic": "t", "doc": "d", "annotator": "a", "label": -2}]})
    assert client.post(f"{API}/collections/empty/aggregations",
                       json={"method": "mv"}).json()["code"] == "empty_collection"
    assert client.get(f"{API}/collections/empty/aggregations").json()["count"] == 0

    assert client.get(f"{API}/aggregations/12345").status_code == 404
    assert client.get(f"{API}/aggregations/12345").json()["code"] == "aggregation_not_found"
    assert client.post(f"{API}/collections/nope/aggregations",
                       json={"method": "mv"}).status_code == 404
    body = client.post(f"{API}/collections/empty/aggregations", json={"params": {}})
    assert body.status_code == 422 and body.json()["code"] == "invalid_body"


def test_bad_sort_is_422(jobs_client, synthetic_file) -> None:
    client = jobs_client
    ingest_synthetic(client, synthetic_file)
    created = client.post(f"{API}/collections/synth/aggregations", json={"method": "mv"}).json()
    wait_for(client, created["id"])
    response = client.get(f"{API}/aggregations/{created['id']}/annotators?sort=-height")
    assert response.status_code == 422 and response.json()["code"] == "invalid_sort"
    assert "competence" in response.json()["valid"]
    for sort in ("--competence", "+-competence", "-+competence"):  # one sign at most
        response = client.get(f"{API}/aggregations/{created['id']}/annotators",
                              params={"sort": sort})
        assert response.status_code == 422 and response.json()["code"] == "invalid_sort", sort
    assert client.get(f"{API}/aggregations/{created['id']}/annotators",
                      params={"sort": "+competence"}).status_code == 200
    # Majority vote has no model over features: nothing to predict with.
    predict = client.post(f"{API}/aggregations/{created['id']}/predict",
                          json={"features": [[0.0, 1.0]]})
    assert predict.status_code == 409 and predict.json()["code"] == "cannot_predict"
    empty = client.post(f"{API}/aggregations/{created['id']}/predict", json={"features": []})
    assert empty.status_code == 422 and empty.json()["code"] == "invalid_body"


# On PostgreSQL only: the GP job's TensorFlow start dominates (20 CPU s a run), and what is
# tested lies in the job and the model file, not in the database (both databases are
# covered by the cheaper fits' tests).
@pytest.mark.parametrize("database_url", [pytest.param("postgres", marks=pytest.mark.postgres)],
                         indirect=True)
def test_predict_with_topic_offsets(client, tmp_path) -> None:
    """magp with class_prior_by="topic" on a collection with features and several topics: the
    prediction endpoint takes each new task's topic, says which topics the fit knew, and refuses
    a topic list of the wrong length (422, nothing stored)."""
    generate(240, 20, noise_level=(2.0, 4.0), redundancy=3, topics=4, topic_concentration=0.5,
             random_state=SEED).write(tmp_path)
    create_collection(client, name="topical", labels=[0, 1], relevant_from=1, ignore=[])
    assert client.post(f"{API}/collections/topical/judgments/file",
                       content=(tmp_path / "judgments.tsv").read_bytes(),
                       headers=TSV).status_code == 201
    assert client.put(f"{API}/collections/topical/features",
                      content=(tmp_path / "features.tsv").read_bytes(),
                      headers=TSV).status_code == 200
    fits = {}
    for by in ("collection", "topic"):
        created = client.post(f"{API}/collections/topical/aggregations", json={
            "method": "magp", "seed": SEED,
            "params": {"class_prior_by": by, "n_iter": 4, "m_step_iterations": 4}}).json()
        done = wait_for(client, created["id"])
        assert done["status"] == "succeeded", done["error"]
        fits[by] = created["id"]
    topics = sorted({line.split("\t")[0] for line in
                     (tmp_path / "judgments.tsv").read_text().splitlines()[1:]})
    assert len(topics) == 4
    features = [[0.5, -0.5]] * 3
    url = f"{API}/aggregations/{fits['topic']}/predict"
    known = client.post(url, json={"features": features, "topics": [topics[0], topics[1], "zz"]})
    assert known.status_code == 200, known.text
    body = known.json()
    assert body["topic_known"] == [True, True, False]
    unknown = client.post(url, json={"features": features}).json()
    assert unknown["topic_known"] == [False, False, False]
    assert unknown["p_relevant"][2] == pytest.approx(body["p_relevant"][2], abs=1e-12)
    assert body["posterior_variance"][0] < unknown["posterior_variance"][0]
    wrong = client.post(url, json={"features": features, "topics": [topics[0]]})
    assert wrong.status_code == 422 and wrong.json()["code"] == "invalid_topics"
    # A fit without topic offsets ignores the topics and says so with null.
    plain = client.post(f"{API}/aggregations/{fits['collection']}/predict",
                        json={"features": features, "topics": topics[:3]}).json()
    assert plain["topic_known"] is None
    detail = client.get(f"{API}/aggregations/{fits['topic']}").json()
    assert detail["info"]["class_prior_by"] == "topic"
    assert detail["info"]["topic_offsets"]["n_topics"] == 4


def test_clamped_gold_is_scored_held_out(jobs_client, synthetic_file) -> None:
    """ibcc with use_gold: the stored labels keep the gold, the evaluation is 5-fold held out."""
    client = jobs_client
    ingest_synthetic(client, synthetic_file)
    created = client.post(f"{API}/collections/synth/aggregations",
                          json={"method": "ibcc", "params": {"use_gold": True}}).json()
    done = wait_for(client, created["id"])
    assert done["status"] == "succeeded", done["error"]
    assert done["evaluation"]["held_out"] is True
    assert "held_out_s" in done["timings"]
    assert 0.6 < done["evaluation"]["accuracy"] < 0.99  # in-sample it would be 1.0
    tasks = client.get(f"{API}/aggregations/{created['id']}/tasks", params={"limit": 300}).json()
    assert all(t["label"] == t["gold"] for t in tasks["data"] if t["gold"] is not None)


def _judged_collection(client, name: str = "small") -> dict:
    collection = create_collection(client, name=name, labels=[0, 1], relevant_from=1, ignore=[])
    response = client.post(f"{API}/collections/{name}/judgments", json={"judgments": [
        {"topic": "t", "doc": f"d{i}", "annotator": f"w{i % 3}", "label": i % 2}
        for i in range(12)]})
    assert response.status_code == 201, response.text
    return collection


def _fit_row(database_url: str, collection_id: int, status: str) -> int:
    """An aggregation row in ``status`` without a job behind it (what a fit looks like to a
    cancel or a read while it waits, or once it ended)."""
    from app.aggregations.tables import Aggregation
    from app.core.db import get_sessionmaker

    with get_sessionmaker(database_url)() as session:
        row = Aggregation(collection_id=collection_id, method="mace", params={}, graded=False,
                          status=status, progress=0.0, progress_message=status, watermark=10**9)
        session.add(row)
        session.commit()
        return row.id


@pytest.mark.parametrize(("body", "param", "says"), [
    # NaN / Infinity: Python's JSON parser accepts them; stored they are a 500 on PostgreSQL,
    # a silent null on SQLite and a fit run with NaN
    ('{"method": "ds", "params": {"tol": NaN}}', "tol", "finite"),
    ('{"method": "mace", "params": {"smoothing": NaN}}', "smoothing", "finite"),
    ('{"method": "mace", "params": {"alpha": Infinity}}', "alpha", "finite"),
    ('{"method": "magp", "params": {"spam_strength": -Infinity}}', "spam_strength", "finite"),
    # bounds: every numeric parameter has one (models.params)
    ('{"method": "mace", "params": {"n_iter": 1180591620717411303424}}', "n_iter",
     "0 <= n_iter <= 100000, got 1180591620717411303424"),
    ('{"method": "mace", "params": {"n_restarts": 1001}}', "n_restarts",
     "1 <= n_restarts <= 1000, got 1001"),
    ('{"method": "ebcc", "params": {"n_subtypes": 1000000}}', "n_subtypes",
     "1 <= n_subtypes <= 50, got 1000000"),
    ('{"method": "lk", "params": {"n_quadrature": 1000000}}', "n_quadrature",
     "1 <= n_quadrature <= 200, got 1000000"),
    ('{"method": "mace", "params": {"tol": -1.0}}', "tol", "0 <= tol < 1, got -1.0"),
    ('{"method": "ds", "params": {"tol": 1.0}}', "tol", "0 <= tol < 1, got 1.0"),
    ('{"method": "mace", "params": {"strategy_prior": 1e-320}}', "strategy_prior",
     "1e-06 <= strategy_prior <= 1000000"),
    ('{"method": "ibcc", "params": {"alpha_diagonal": 1e300}}', "alpha_diagonal",
     "1e-06 <= alpha_diagonal <= 1000000"),
    ('{"method": "ordinal-gp", "params": {"n_inducing": 100000}}', "n_inducing",
     "1 <= n_inducing <= 5000"),
    ('{"method": "ds", "params": {"use_gold": true, "calibrate_folds": 1000}}',
     "calibrate_folds", "0 <= calibrate_folds <= 100"),
    # types, also of parameters whose default is None
    ('{"method": "magp", "params": {"feature_groups": {"a": [1]}}}', "feature_groups",
     "must be of type str or None"),
    ('{"method": "mace", "params": {"smoothing": "abc"}}', "smoothing",
     "must be of type float or None, got 'abc'"),
    ('{"method": "mace", "params": {"random_state": 1.5}}', "random_state",
     "must be of type int or None"),
    ('{"method": "mv", "params": {"tie": 3}}', "tie", "must be of type str"),
    ('{"method": "mace", "params": {"n_iter": null}}', "n_iter", "not null"),
])
def test_params_out_of_range_or_type_are_refused_before_a_fit(client, body, param,
                                                              says) -> None:
    _judged_collection(client)
    response = client.post(f"{API}/collections/small/aggregations", content=body,
                           headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    error = response.json()
    assert error["code"] == "invalid_params" and error["param"] == param
    assert f"parameter {param!r}" in error["detail"] and says in error["detail"]
    assert client.get(f"{API}/collections/small/aggregations").json()["count"] == 0


def test_malformed_feature_groups_are_refused_before_a_fit(client) -> None:
    _judged_collection(client)
    for groups in ["x", "0:a", "5:2", "0:4;4:8;x"]:
        response = client.post(f"{API}/collections/small/aggregations",
                               json={"method": "magp", "params": {"feature_groups": groups}})
        assert response.status_code == 422, groups
        assert response.json()["code"] == "invalid_params"
        assert "feature" in response.json()["detail"]
        assert "Traceback" not in response.text
    assert client.get(f"{API}/collections/small/aggregations").json()["count"] == 0


def test_a_fit_with_nan_results_fails_with_a_clear_error(client, settings, monkeypatch) -> None:
    """Second defence behind the parameter bounds: a posterior that is NaN is a failed fit with
    a message, not a raw IntegrityError (SQLite) nor a "succeeded" fit of NaNs (PostgreSQL)."""
    import numpy as np

    import models.registry
    from app.aggregations.job import run_fit
    from models.majority_vote import MajorityVote

    class Diverging(MajorityVote):
        def fit(self, data, progress=lambda f, m: None):  # type: ignore[no-untyped-def]
            super().fit(data, progress)
            self.proba_ = np.full_like(self.proba_, np.nan)
            return self

    collection = _judged_collection(client)
    fit = _fit_row(settings.database_url, collection["id"], "queued")
    monkeypatch.setattr(models.registry, "make_aggregator",
                        lambda method, params=None, **kw: Diverging())
    assert run_fit(settings.database_url, fit) == "failed"
    failed = client.get(f"{API}/aggregations/{fit}").json()
    assert failed["status"] == "failed"
    assert "NaN or infinite posterior probabilities for 12 of 12 tasks" in failed["error"]
    assert "IntegrityError" not in failed["error"]
    assert client.get(f"{API}/aggregations/{fit}/tasks").status_code == 409


def test_concurrent_cancels_cancel_once(client, settings) -> None:
    """Ten cancels at once: one conditional UPDATE wins (200, one audit event), the others
    get the 409 a cancel of a finished fit gets."""
    from concurrent.futures import ThreadPoolExecutor

    from sqlalchemy import func, select

    from app.auth.tables import AuditEvent
    from app.core.db import get_sessionmaker

    collection = _judged_collection(client)
    for status in ("queued", "running"):
        fit = _fit_row(settings.database_url, collection["id"], status)
        with ThreadPoolExecutor(10) as pool:
            responses = list(pool.map(client.delete, [f"{API}/aggregations/{fit}"] * 10))
        codes = sorted(r.status_code for r in responses)
        assert codes == [200] + [409] * 9, [r.text for r in responses]
        assert all(r.json()["code"] == "aggregation_finished" for r in responses
                   if r.status_code == 409)
        with get_sessionmaker(settings.database_url)() as session:
            events = session.scalar(select(func.count()).select_from(AuditEvent).where(
                AuditEvent.action == "fit_cancelled", AuditEvent.target_id == fit))
        assert events == 1
        again = client.delete(f"{API}/aggregations/{fit}")
        assert again.status_code == 409 and again.json()["code"] == "aggregation_finished"


def test_confusion_against_a_fit_that_did_not_succeed_is_409(client, settings) -> None:
    collection = _judged_collection(client)
    url = f"{API}/collections/small/annotators/w0/confusion"
    for status in ("cancelled", "failed", "queued", "running"):
        fit = _fit_row(settings.database_url, collection["id"], status)
        response = client.get(url, params={"aggregation": fit})
        assert response.status_code == 409, (status, response.text)
        assert response.json()["code"] == "aggregation_not_succeeded"
        assert response.json()["status"] == status
    # without ?aggregation= (no fit succeeded yet): only the gold side
    assert client.get(url).json()["aggregation_id"] is None


def test_racing_cancels_of_one_loaded_fit_cancel_once(client, settings) -> None:
    """The race itself, made certain: ten sessions read the fit while it is still queued, then
    all cancel at once; exactly one changes the row and stops the job, nine are 409."""
    from threading import Barrier

    from app.aggregations import service
    from app.core.db import get_sessionmaker
    from app.core.errors import Conflict

    collection = _judged_collection(client)
    fit = _fit_row(settings.database_url, collection["id"], "queued")
    barrier = Barrier(10)
    stopped: list[int] = []

    class Runner:
        def cancel(self, kind: str, job_id: int, runner_job_id: str | None) -> None:
            stopped.append(job_id)

    def cancel(_: int) -> str:
        with get_sessionmaker(settings.database_url)() as session:
            aggregation = service.get_aggregation(session, aggregation_id=fit)
            assert aggregation.status == "queued"
            barrier.wait(timeout=30)
            try:
                service.cancel_aggregation(session, runner=Runner(), aggregation=aggregation)
            except Conflict as exc:
                return exc.code
            return "cancelled"

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(10) as pool:
        outcomes = sorted(pool.map(cancel, range(10)))
    assert outcomes == ["aggregation_finished"] * 9 + ["cancelled"]
    assert stopped == [fit]


def test_annotator_ids_with_a_slash_are_reachable(client) -> None:
    """Crowd platforms name workers like "mturk/A1B2": the annotator's history, confusion and
    page answer for them (they were 404: a path parameter stopped at the "/")."""
    collection = _judged_collection(client)
    assert collection["name"] == "small"
    response = client.post(f"{API}/collections/small/judgments", json={"judgments": [
        {"topic": "t", "doc": "d0", "annotator": "mturk/A1B2", "label": 1},
        {"topic": "t", "doc": "d1", "annotator": "mturk/A1B2/x", "label": 0}]})
    assert response.status_code == 201, response.text
    for name in ("mturk/A1B2", "mturk/A1B2/x"):
        for quoted in (name, name.replace("/", "%2F")):
            history = client.get(f"{API}/collections/small/annotators/{quoted}")
            assert history.status_code == 200 and history.json()["annotator"] == name, quoted
            confusion = client.get(f"{API}/collections/small/annotators/{quoted}/confusion")
            assert confusion.status_code == 200, (quoted, confusion.text)
            page = client.get(f"/ui/collections/small/annotators/{quoted}")
            assert page.status_code == 200 and name in page.text
    # ".../w0/confusion" is the confusion of "w0" (an id ending in "/confusion" cannot be told
    # from it: the server decodes %2F before routing)
    assert "vs_gold" in client.get(f"{API}/collections/small/annotators/w0/confusion").json()


def test_a_prediction_that_is_not_finite_is_refused(monkeypatch) -> None:
    """QA: features near 1e308 gave p_relevant null (the kernel overflowed to NaN). A vector the
    fit cannot answer finitely is 422 invalid_features naming the first, not a null."""
    from types import SimpleNamespace

    import numpy as np

    import models.gp.predictor as gp_predictor
    from app.aggregations.prediction import predict_for
    from app.core.errors import InvalidInput

    class Overflowing:
        input_dim = 2

        def predict(self, x, topics):  # type: ignore[no-untyped-def]
            mean = np.where(np.abs(x).max(axis=1) > 1e300, np.nan, 0.5)
            return mean, np.ones(len(x)), np.where(np.isnan(mean), np.nan, 0.6)

        def topic_known(self, n, topics):  # type: ignore[no-untyped-def]
            return None

    monkeypatch.setattr(gp_predictor.GPPredictor, "from_bytes",
                        classmethod(lambda cls, payload: Overflowing()))
    session = SimpleNamespace(get=lambda table, key: SimpleNamespace(payload=b""))
    fit = SimpleNamespace(id=1, status="succeeded", info={})
    assert predict_for(session, aggregation=fit, features=[[1.0, 2.0]])["p_relevant"] == [0.6]
    with pytest.raises(InvalidInput) as refused:
        predict_for(session, aggregation=fit, features=[[1.0, 2.0], [1e308, 1e308]])
    assert refused.value.code == "invalid_features" and refused.value.extra["index"] == 1
