"""Warm-started fits through the API (``"warm_start": <aggregation id>``): the same posterior
as the model fitted with ``init`` on the same data, new annotators, the cold checks of a chain
of refits, and every refused warm start (its code, nothing created)."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from models.data import AnnotationData
from models.dawid_skene import DawidSkene
from models.mace import MACE
from models.synthetic import generate
from models.warm import COLD_CHECK_GROWTH
from tests.api.helpers import API, create_collection
from tests.api.jobs import wait_for

SEED = 7
NEW = "a29"  # the annotator whose judgments all arrive after the first fit


@pytest.fixture(scope="module")
def judgments(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    directory = tmp_path_factory.mktemp("warm")
    generate(300, 30, noise_level=(2.0, 4.0), redundancy=5, random_state=SEED).write(directory)
    with (directory / "judgments.tsv").open() as f:
        return [{**row, "label": int(row["label"])} for row in csv.DictReader(f, delimiter="\t")]


def _ingest(client, rows: list[dict], collection: str = "synth") -> None:
    response = client.post(f"{API}/collections/{collection}/judgments", json={"judgments": rows})
    assert response.status_code == 201, response.text


def _data(rows: list[dict]) -> AnnotationData:
    """The rows as the service's snapshot reads them (arrival order, binary from 1)."""
    return AnnotationData.from_rows([r["topic"] for r in rows], [r["doc"] for r in rows],
                                    [r["annotator"] for r in rows], [r["label"] for r in rows],
                                    relevant_from=1)


def _fit(client, body: dict, collection: str = "synth") -> dict:
    response = client.post(f"{API}/collections/{collection}/aggregations", json=body)
    assert response.status_code == 202, response.text
    done = wait_for(client, response.json()["id"])
    assert done["status"] == "succeeded", done["error"]
    return done


def _proba(client, aggregation_id: int, data: AnnotationData) -> np.ndarray:
    """The fit's posterior in ``data``'s task order."""
    rows = client.get(f"{API}/aggregations/{aggregation_id}/qrels?format=json").json()["data"]
    by_task = {(r["topic"], r["doc"]): r["proba"] for r in rows}
    return np.array([by_task[(t, d)] for t, d in
                     zip(data.topic_ids.tolist(), data.doc_ids.tolist(), strict=True)])


@pytest.mark.parametrize(("method", "make"), [
    ("ds", DawidSkene), ("mace", lambda: MACE(random_state=SEED))])
def test_a_warm_refit_is_the_model_fitted_with_init(jobs_client, judgments, method,
                                                    make) -> None:
    """First fit cold without annotator NEW, then NEW's judgments arrive (about 3 %: no cold
    check due) and the refit starts from the first fit: the posterior is the one of the model
    fitted with ``init`` on the same judgments, NEW starting from the mean row."""
    client = jobs_client
    create_collection(client, name="synth", labels=[0, 1], relevant_from=1, ignore=[])
    before = [r for r in judgments if r["annotator"] != NEW]
    after = before + [r for r in judgments if r["annotator"] == NEW]
    _ingest(client, before)
    first = _fit(client, {"method": method, "seed": SEED})
    assert first["warm_start"] is None and first["cold_checked"] is None
    assert first["info"]["start"] == "cold" and first["info"]["cold_checked_at"] == len(before)
    _ingest(client, after[len(before):])

    warm = _fit(client, {"method": method, "seed": SEED, "warm_start": first["id"]})
    previous = make().fit(_data(before))
    data = _data(after)
    model = make().fit(data, init=previous)
    assert warm["warm_start"] == first["id"]
    assert warm["cold_checked"] is False and model.cold_checked_ is False
    assert warm["info"]["start"] == model.start_ == "warm"
    assert warm["info"]["cold_checked_at"] == model.cold_checked_at_ == len(before)
    assert warm["info"]["warm_start"] == {"from": first["id"], "from_n_judgments": len(before),
                                          "new_annotators": 1}
    assert warm["n_judgments"] == len(after)
    served = _proba(client, warm["id"], data)
    np.testing.assert_allclose(served, model.proba_, rtol=0, atol=1e-12)
    # ... and not what a cold fit gives, so the comparison tells the two apart
    assert np.abs(served - make().fit(data).proba_).max() > 1e-6
    annotators = client.get(f"{API}/aggregations/{warm['id']}/annotators",
                            params={"q": NEW}).json()["data"]
    position = data.annotator_ids.tolist().index(NEW)
    assert annotators[0]["annotator"] == NEW
    assert annotators[0]["competence"] == pytest.approx(model.competence_[position], abs=1e-12)


def test_a_chain_of_warm_refits_is_checked_every_10_percent(client, judgments) -> None:
    """Batches of about 3 %, each refit warm from the one before: a refit runs the cold fit too
    once the judgments have grown by 10 % since the last check, as the model does offline."""
    create_collection(client, name="synth", labels=[0, 1], relevant_from=1, ignore=[])
    order = np.random.default_rng(0).permutation(len(judgments))
    cuts = [900, *range(930, 1230, 30)]
    _ingest(client, [judgments[i] for i in order[:cuts[0]]])
    fit = _fit(client, {"method": "ds"})
    model = DawidSkene().fit(_data([judgments[i] for i in order[:cuts[0]]]))
    checked_at = [fit["info"]["cold_checked_at"]]
    checks = []
    for low, high in zip(cuts, cuts[1:], strict=False):
        _ingest(client, [judgments[i] for i in order[low:high]])
        fit = _fit(client, {"method": "ds", "warm_start": fit["id"]})
        data = _data([judgments[i] for i in order[:high]])
        model = DawidSkene().fit(data, init=model)
        due = fit["n_judgments"] >= (1 + COLD_CHECK_GROWTH) * checked_at[-1]
        assert fit["cold_checked"] is due is model.cold_checked_, high
        assert fit["info"]["cold_checked_at"] == (high if due else checked_at[-1])
        assert fit["info"]["start"] == model.start_
        checked_at.append(fit["info"]["cold_checked_at"])
        checks.append(due)
        np.testing.assert_allclose(_proba(client, fit["id"], data), model.proba_, rtol=0,
                                   atol=1e-12)
    # from 900: checked at 1020 (990 < 1.1 · 900 in floating point) and 1140, unchecked between
    assert checks == [False, False, False, True, False, False, False, True, False, False]


def _row(database_url: str, collection_id: int, status: str, method: str = "ds",
         **values: object) -> int:
    """An aggregation row without a job behind it (a fit queued, running or ended)."""
    from app.aggregations.tables import Aggregation
    from app.core.db import get_sessionmaker

    with get_sessionmaker(database_url)() as session:
        row = Aggregation(collection_id=collection_id, method=method, params={}, graded=False,
                          status=status, progress=0.0, progress_message=status,
                          watermark=10**9, **values)
        session.add(row)
        session.commit()
        return row.id


def _edit_info(database_url: str, aggregation_id: int, drop: str) -> None:
    from app.aggregations.tables import Aggregation
    from app.core.db import get_sessionmaker

    with get_sessionmaker(database_url)() as session:
        row = session.get(Aggregation, aggregation_id)
        assert row is not None and drop in (row.info or {})
        row.info = {k: v for k, v in row.info.items() if k != drop}
        session.commit()


def test_refused_warm_starts_have_their_code_and_create_nothing(client, settings,
                                                               judgments) -> None:
    url = settings.database_url
    synth = create_collection(client, name="synth", labels=[0, 1], relevant_from=1, ignore=[])
    _ingest(client, judgments[:600])
    ds = _fit(client, {"method": "ds"})
    mv = _fit(client, {"method": "mv"})
    graded = _fit(client, {"method": "ds", "graded": True})
    create_collection(client, name="other", labels=[0, 1], relevant_from=1, ignore=[])
    _ingest(client, judgments[:30], collection="other")
    elsewhere = _fit(client, {"method": "ds"}, collection="other")
    # stored results without what a warm start needs, as an older fit might have
    no_prior = _fit(client, {"method": "ds"})
    _edit_info(url, no_prior["id"], "prior")
    unchecked = _fit(client, {"method": "ds", "warm_start": ds["id"]})
    _edit_info(url, unchecked["id"], "cold_checked_at")

    cases = [
        ({"method": "mv", "warm_start": mv["id"]}, 422, "warm_start_unsupported"),
        ({"method": "ordinal-ds", "warm_start": ds["id"]}, 422, "warm_start_unsupported"),
        ({"method": "ds", "params": {"use_gold": True, "calibrate_folds": 2},
          "warm_start": ds["id"]}, 422, "warm_start_unsupported"),
        ({"method": "ds", "warm_start": 10**6}, 422, "warm_start_not_found"),
        ({"method": "ds", "warm_start": elsewhere["id"]}, 422, "warm_start_not_found"),
        ({"method": "ds", "warm_start": mv["id"]}, 422, "warm_start_method_mismatch"),
        ({"method": "mace", "warm_start": ds["id"]}, 422, "warm_start_method_mismatch"),
        ({"method": "ds", "warm_start": graded["id"]}, 422, "warm_start_scale_mismatch"),
        ({"method": "ds", "graded": True, "warm_start": ds["id"]}, 422,
         "warm_start_scale_mismatch"),
        ({"method": "ds", "warm_start": no_prior["id"]}, 422, "warm_start_unavailable"),
        ({"method": "ds", "warm_start": unchecked["id"]}, 422, "warm_start_unavailable"),
        ({"method": "ds", "warm_start": 0}, 422, "invalid_body"),
        ({"method": "ds", "warm_start": str(ds["id"])}, 422, "invalid_body"),
    ]
    for status in ("queued", "running", "failed", "cancelled"):
        cases.append(({"method": "ds", "warm_start": _row(url, synth["id"], status)}, 409,
                      "warm_start_not_succeeded"))
    count = client.get(f"{API}/collections/synth/aggregations").json()["count"]
    for body, status_code, code in cases:
        response = client.post(f"{API}/collections/synth/aggregations", json=body)
        assert response.status_code == status_code, (body, response.text)
        assert response.json()["code"] == code, (body, response.text)
        if code == "warm_start_not_succeeded":
            assert response.json()["status"] in ("queued", "running", "failed", "cancelled")
    assert client.get(f"{API}/collections/synth/aggregations").json()["count"] == count

    # A fit stored before fits recorded their last cold check was a cold fit: checked at its
    # own judgments, so a warm start from it is fine.
    _edit_info(url, ds["id"], "cold_checked_at")
    _ingest(client, judgments[600:700])  # +16 %: the check is due
    warm = _fit(client, {"method": "ds", "warm_start": ds["id"]})
    assert warm["cold_checked"] is True and warm["info"]["cold_checked_at"] == 700


def test_warm_start_from_a_fit_of_different_params(client, judgments) -> None:
    """Params may differ from the fit started from (here MACE's variant and restarts): the start
    is only the earlier parameters."""
    create_collection(client, name="synth", labels=[0, 1], relevant_from=1, ignore=[])
    _ingest(client, judgments[:1400])
    first = _fit(client, {"method": "mace", "seed": 1})
    _ingest(client, judgments[1400:])
    warm = _fit(client, {"method": "mace", "seed": 1, "warm_start": first["id"],
                         "params": {"variant": "em", "n_restarts": 2}})
    previous = MACE(random_state=1).fit(_data(judgments[:1400]))
    data = _data(judgments)
    model = MACE(variant="em", n_restarts=2, random_state=1).fit(data, init=previous)
    assert warm["params"]["variant"] == "em" and warm["info"]["start"] == model.start_
    np.testing.assert_allclose(_proba(client, warm["id"], data), model.proba_, rtol=0,
                               atol=1e-12)


def test_a_warm_start_id_beyond_64_bits_is_invalid_body(client, judgments) -> None:
    """No row has an id above 2**63 - 1 (the database refuses one: PostgreSQL's BIGINT, SQLite's
    integer): such a warm_start is 422 invalid_body naming the field, as any id, not a 500."""
    create_collection(client, name="synth", labels=[0, 1], relevant_from=1, ignore=[])
    _ingest(client, judgments[:60])
    for warm_start in (2**63, 10**20):
        response = client.post(f"{API}/collections/synth/aggregations",
                               json={"method": "ds", "warm_start": warm_start})
        assert response.status_code == 422, response.text
        assert response.json()["code"] == "invalid_body", response.text
        assert response.json()["errors"][0]["loc"] == ["body", "warm_start"]
    assert client.get(f"{API}/collections/synth/aggregations").json()["count"] == 0
