"""Issue #34 item 5: ``GET /next`` ranks by the calibrated probabilities. A fit with
``calibrate_folds`` stores its recalibrated posterior; /next (and ``crowdqrels next`` with the
same parameters) must read that one, not the wrapped model's own."""

from __future__ import annotations

import math
from pathlib import Path

from app.cli import main as cli
from tests.api.evaluations.test_evaluations import judgments_and_gold
from tests.api.helpers import API, TSV, create_collection
from tests.api.jobs import wait_for


def _entropy(p: float) -> float:
    return -sum(x * math.log(x) for x in (p, 1.0 - p) if x > 0)


def test_next_ranks_by_the_recalibrated_posterior(client, tmp_path: Path) -> None:
    create_collection(client, name="cal", labels=[0, 1], relevant_from=1, ignore=[])
    judgments, gold = judgments_and_gold(seed=3)
    assert client.post(f"{API}/collections/cal/judgments/file", content=judgments.encode(),
                       headers=TSV).status_code == 201
    sample = "".join(gold.splitlines(keepends=True)[::3])  # gold on 40 of the 120 pairs
    assert client.put(f"{API}/collections/cal/gold", content=sample.encode(),
                      headers={"content-type": "text/plain"}).status_code == 200
    fits = {}
    # "own": the fit's own posterior, without the gold-free tempered read-out (which, like the
    # map from gold, softens it); both without DS's pooled prior, under which this small crowd's
    # posterior is ordered as the map orders it and the two lists could not be told apart
    for name, params in (("own", {"use_gold": True, "temper_folds": 0, "population_prior": 0}),
                         ("calibrated", {"use_gold": True, "calibrate_folds": 2,
                                         "population_prior": 0})):
        created = client.post(f"{API}/collections/cal/aggregations",
                              json={"method": "ds", "params": params, "seed": 1}).json()
        done = wait_for(client, created["id"])
        assert done["status"] == "succeeded", done["error"]
        fits[name] = done["id"]
    stored = {}
    for name, ident in fits.items():
        rows = client.get(f"{API}/aggregations/{ident}/tasks", params={"limit": 1000}).json()
        stored[name] = {(t["topic"], t["doc"]): t["p_relevant"] for t in rows["data"]}
    # the recalibration moves the posterior (else this test could not tell the two apart)
    moved = [k for k in stored["own"] if abs(stored["own"][k] - stored["calibrated"][k]) > .05]
    assert len(moved) > 20

    listed = client.get(f"{API}/aggregations/{fits['calibrated']}/next",
                        params={"n": 1000, "strategy": "uncertainty"}).json()["data"]
    assert len(listed) == 120
    for row in listed:
        p = stored["calibrated"][(row["topic"], row["doc"])]
        assert row["p_relevant"] == p and math.isclose(row["proba"][1], p, abs_tol=1e-9)
        assert math.isclose(row["uncertainty"], _entropy(p), abs_tol=1e-9)
    entropies = [row["uncertainty"] for row in listed]
    assert entropies == sorted(entropies, reverse=True)  # most uncertain first, calibrated
    own = client.get(f"{API}/aggregations/{fits['own']}/next",
                     params={"n": 1000, "strategy": "uncertainty"}).json()["data"]
    assert [r["doc"] for r in own[:20]] != [r["doc"] for r in listed[:20]]

    # crowdqrels next with the same parameters lists what the service lists
    gold_of = {tuple(line.split()[::2][:2]): line.split()[3] for line in sample.splitlines()}
    lines = judgments.splitlines()
    path = tmp_path / "judgments.tsv"
    path.write_text("\n".join([lines[0] + "\tgold"] + [
        line + "\t" + gold_of.get(tuple(line.split("\t")[:2]), "") for line in lines[1:]])
        + "\n")
    served = client.get(f"{API}/aggregations/{fits['calibrated']}/next",
                        params={"n": 30, "format": "tsv"}).text
    out = tmp_path / "next.tsv"
    assert cli(["next", str(path), "--method", "ds", "--params",
                '{"use_gold": true, "calibrate_folds": 2, "population_prior": 0}',
                "--seed", "1", "-n", "30",
                "--output", str(out), "--quiet"]) == 0
    assert out.read_text() == served
