"""Draws of the annotators' parameters through HTTP (issue #34 item 3.1): the default draws of a
DS or MACE fit, the same numbers as `crowdqrels evaluate --judgments [--annotators]`, "labels"
on request, the page's words, and 422 `parameter_draws_unsupported`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli import main as cli
from tests.api.evaluations.test_evaluations import (
    evaluate,
    judgments_and_gold,
    run_text,
    setup_collection,
)
from tests.api.helpers import API
from tests.api.jobs import wait_for

MEASURES = ["P@10", "AP"]
RUNS = ["bm25", "dense"]
KEY = lambda r: (r["run"], r["measure"], r["topic"])  # noqa: E731


def _offline(client, tmp_path: Path, aggregation: int, *extra: str) -> dict:
    """``crowdqrels evaluate`` on the fit's posterior, its judgments and ``extra``."""
    tasks, judgments = tmp_path / "tasks.tsv", tmp_path / "judgments.tsv"
    # the stored posterior to the last digit (the TSV download keeps 6): the confusion matrices
    # come from a Gibbs chain, in which a difference in the 7th digit can flip one label in one
    # sweep and part the chains (then the numbers agree only within the Monte-Carlo error)
    rows = client.get(f"{API}/aggregations/{aggregation}/qrels",
                      params={"format": "json"}).json()["data"]
    tasks.write_text("topic\tdoc\tp_0\tp_1\n" + "".join(
        f"{r['topic']}\t{r['doc']}\t{r['proba'][0]!r}\t{r['proba'][1]!r}\n" for r in rows))
    judgments.write_text(judgments_and_gold()[0])
    runs = []
    for i, name in enumerate(RUNS):
        path = tmp_path / f"{name}.run"
        path.write_text(run_text(name, i, ["t0", "t1", "t2", "t3"]))
        runs.append(str(path))
    out = tmp_path / "out.json"
    assert cli(["evaluate", "--tasks", str(tasks), "--judgments", str(judgments), *extra,
                "--runs", *runs, "--measures", *MEASURES, "--samples", "200", "--seed", "4",
                "--output", str(out), "--quiet"]) == 0
    result: dict = json.loads(out.read_text())
    return result


def _readout(client, aggregation: int) -> list[str]:  # type: ignore[no-untyped-def]
    """The fit's gold-free read-out (models.tempering) as ``evaluate --readout`` takes it: the
    service's draws start from the fit's own posterior, and the CLI is told how to get it."""
    info = client.get(f"{API}/aggregations/{aggregation}").json()["info"]
    if "readout_temperature" not in info:
        return []
    return ["--readout", repr(info["readout_temperature"]), repr(info["readout_rho"])]


def _same(full: dict, offline: dict) -> None:
    for ours, theirs in zip(sorted(full["results"], key=KEY), sorted(offline["results"], key=KEY),
                            strict=True):
        assert ours == pytest.approx(theirs, abs=1e-9)
    for ours, theirs in zip(full["pairs"], offline["pairs"], strict=True):
        assert ours == pytest.approx(theirs, abs=1e-9)


def test_parameter_draws_are_a_ds_fits_default_and_match_the_cli(client, tmp_path: Path) -> None:
    aggregation = setup_collection(client)
    body = {"aggregation": aggregation, "measures": MEASURES, "samples": 200, "seed": 4,
            "runs": RUNS}
    tied = evaluate(client, body)
    assert tied["draws"] == "parameters" and tied["report"]["draws"] == "parameters"
    assert "parameters_s" in tied["timings"]
    plain = evaluate(client, {**body, "draws": "labels"})
    assert plain["draws"] == "labels" and plain["report"]["draws"] == "labels"
    # the interval kind keeps its meaning: the central 95 % of the draws
    assert {r["interval_kind"] for r in tied["results"]} == {"posterior"}
    # the draws differ (the widening itself: tests/models/test_evaluation_parameters.py)
    stds = {name: [r["std"] for r in sorted(done["results"], key=KEY)]
            for name, done in (("tied", tied), ("plain", plain))}
    assert stds["tied"] != stds["plain"]
    for row in tied["results"]:
        assert row["low"] <= row["estimate"] <= row["high"]

    full = client.get(f"{API}/evaluations/{tied['id']}/measures").json()
    # DS's population prior (its default: the strength type-II ML) is the chain's prior too;
    # the CLI is told it, as it cannot read it from the tasks TSV, and finds the same strength
    # from the same expected counts
    offline = _offline(client, tmp_path, aggregation, "--population-prior", "ml",
                       *_readout(client, aggregation))
    assert offline["draws"] == "parameters"
    _same(full, offline)

    page = client.get(f"/ui/evaluations/{tied['id']}").text
    assert "then the labels given them, so one annotator" in page
    page = client.get(f"/ui/evaluations/{plain['id']}").text
    assert "label drawn independently" in page


def test_mace_draws_its_own_parameters_and_match_the_cli(client, tmp_path: Path) -> None:
    setup_collection(client)
    created = client.post(f"{API}/collections/ev/aggregations",
                          json={"method": "mace", "params": {"random_state": 2}}).json()
    fit = wait_for(client, created["id"])
    assert fit["status"] == "succeeded", fit["error"]
    done = evaluate(client, {"aggregation": fit["id"], "measures": MEASURES, "samples": 200,
                             "seed": 4, "runs": RUNS})
    assert done["draws"] == "parameters"
    annotators = client.get(f"{API}/aggregations/{fit['id']}/annotators",
                            params={"limit": 100}).json()["data"]
    table = tmp_path / "annotators.tsv"
    table.write_text("annotator\tcompetence\tspam_p_0\tspam_p_1\n" + "".join(
        f"{a['annotator']}\t{a['competence']!r}\t{a['extra']['spam_p_0']!r}\t"
        f"{a['extra']['spam_p_1']!r}\n" for a in annotators))
    full = client.get(f"{API}/evaluations/{done['id']}/measures").json()
    # MACE's own prior (Beta(alpha, beta) plus the crowd's prior on θ at the strength the fit
    # chose, Dirichlet(strategy_prior)), shaped by the class prior its "auto" chose: the CLI is
    # told the method and those choices
    chosen = fit["info"].get("class_prior", "uniform")
    strength = fit["info"]["competence_strength"]
    _same(full, _offline(client, tmp_path, fit["id"], "--annotators", str(table),
                         "--method", "mace", "--params",
                         json.dumps({"random_state": 2, "class_prior": chosen,
                                     "competence_strength": strength}),
                         *_readout(client, fit["id"])))


def test_ibcc_draws_use_the_fits_prior_and_match_the_cli(client, tmp_path: Path) -> None:
    """IBCC's draws under the prior its fit used ("auto": the crowd's population prior on this
    sparse crowd, info.confusion_prior): the CLI with --method ibcc finds the same prior from
    the judgments and the same numbers; without --method (Dir(1) rows) they differ."""
    setup_collection(client)
    created = client.post(f"{API}/collections/ev/aggregations",
                          json={"method": "ibcc", "params": {}}).json()
    fit = wait_for(client, created["id"])
    assert fit["status"] == "succeeded", fit["error"]
    assert fit["info"]["confusion_prior"] == "crowd-absolute"
    done = evaluate(client, {"aggregation": fit["id"], "measures": MEASURES, "samples": 200,
                             "seed": 4, "runs": RUNS})
    assert done["draws"] == "parameters"
    full = client.get(f"{API}/evaluations/{done['id']}/measures").json()
    _same(full, _offline(client, tmp_path, fit["id"], "--method", "ibcc",
                         *_readout(client, fit["id"])))
    other = _offline(client, tmp_path, fit["id"], *_readout(client, fit["id"]))
    assert sorted(r["low"] for r in other["results"]) != sorted(
        r["low"] for r in full["results"])


def test_parameter_draws_need_a_fit_with_annotator_parameters(client) -> None:
    aggregation = setup_collection(client)
    url = f"{API}/collections/ev/evaluations"
    mv = client.post(f"{API}/collections/ev/aggregations", json={"method": "mv"}).json()
    assert wait_for(client, mv["id"])["status"] == "succeeded"
    for source in ("gold", mv["id"], {"union": [aggregation, "gold"]}):
        response = client.post(url, json={"aggregation": source, "draws": "parameters"})
        assert response.status_code == 422, response.text
        error = response.json()
        assert error["code"] == "parameter_draws_unsupported"
        assert error["methods"] == ["ds", "ebcc", "ibcc", "mace", "ordinal-ds"]
    # without "draws": labels where there are no parameters to draw, or no draws at all
    for body in ({"aggregation": mv["id"]}, {"aggregation": aggregation, "samples": 0}):
        response = client.post(url, json={**body, "runs": RUNS, "measures": MEASURES})
        assert response.status_code == 202 and response.json()["draws"] == "labels", body
    for body in ({"aggregation": aggregation, "draws": "parameters", "samples": 0},
                 {"aggregation": aggregation, "draws": "theta"},
                 {"aggregation": aggregation, "draws": 1}):
        response = client.post(url, json=body)
        assert response.status_code == 422 and response.json()["code"] == "invalid_body", body


def test_cli_parameter_draws_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                       ) -> None:
    tasks, judgments = tmp_path / "tasks.tsv", tmp_path / "j.tsv"
    tasks.write_text("topic\tdoc\tp_0\tp_1\nt0\td1\t0.2\t0.8\nt0\td2\t0.6\t0.4\n")
    judgments.write_text("topic\tdoc\tannotator\tlabel\nt9\td1\tw1\t1\n")
    run = tmp_path / "r.run"
    run.write_text("t0 Q0 d1 1 2 r\nt0 Q0 d2 2 1 r\n")
    annotators = tmp_path / "a.tsv"
    annotators.write_text("annotator\tcompetence\tspam_p_0\tspam_p_1\nw2\t0.5\t0.5\t0.5\n")
    base = ["evaluate", "--tasks", str(tasks), "--runs", str(run), "--quiet"]
    cases = [
        (["--draws", "parameters"], "--draws parameters needs --judgments"),
        (["--annotators", str(annotators)], "--annotators goes with --judgments"),
        (["--judgments", str(judgments)], "no judgment of a --tasks pair"),
    ]
    for extra, says in cases:
        assert cli([*base, *extra]) == 2, extra
        assert says in capsys.readouterr().err
    judgments.write_text("topic\tdoc\tannotator\tlabel\nt0\td1\tw1\t1\n")
    assert cli([*base, "--judgments", str(judgments), "--annotators", str(annotators)]) == 2
    assert "no row for annotator 'w1'" in capsys.readouterr().err
    assert cli(["evaluate", "--qrels", str(tasks), "--runs", str(run), "--judgments",
                str(judgments), "--quiet"]) == 2
    assert "--judgments goes with --tasks" in capsys.readouterr().err
