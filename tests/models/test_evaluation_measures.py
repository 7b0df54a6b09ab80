"""Run measures: hand-computed cases, the PRES worked example, agreement with ir_measures
(trec_eval), the draws, calibration of the intervals, win probabilities, Kendall's tau, union and
intersection."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.formats.runs import parse_runs
from models.evaluation.measures import UnknownMeasure, parse_measure, parse_measures
from models.evaluation.scoring import evaluate_runs, report
from models.evaluation.uncertainty import Posterior, combine, kendall_tau, win_probabilities


def scores_of(qrels: dict[tuple[str, str], int], ranking: list[str], names: list[str],
              topic: str = "q") -> dict[str, float]:
    runs = {"run": {topic: ranking}}
    scores = evaluate_runs(Posterior.from_qrels(qrels), runs, parse_measures(names), samples=0)
    return {n: float(scores.value[parse_measure(n).name][0, 0]) for n in names}


# -- hand-computed values ------------------------------------------------------------------------
def test_standard_measures_by_hand() -> None:
    # Ranking d1..d6 plus unjudged u1; relevant: d1, d3, d9 (d9 not retrieved); non-rel: d2, d4.
    qrels = {("q", "d1"): 1, ("q", "d2"): 0, ("q", "d3"): 1, ("q", "d4"): 0, ("q", "d9"): 1}
    ranking = ["d2", "d1", "u1", "d3", "d4"]
    s = scores_of(qrels, ranking, ["P@2", "P@5", "R@4", "AP", "RR", "Rprec", "Bpref",
                                   "nDCG@3", "unjudged@5", "SimP@5", "LastRel"])
    assert s["P@2"] == pytest.approx(1 / 2)
    assert s["P@5"] == pytest.approx(2 / 5)
    assert s["R@4"] == pytest.approx(2 / 3)
    assert s["AP"] == pytest.approx((1 / 2 + 2 / 4) / 3)
    assert s["RR"] == pytest.approx(1 / 2)
    assert s["Rprec"] == pytest.approx(1 / 3)  # top R=3: d2, d1, u1
    # bpref: R=3, E=2, min(R, E)=2; d1 has 1 judged non-rel above: 1 - 1/2; d3 also 1 above.
    assert s["Bpref"] == pytest.approx((0.5 + 0.5) / 3)
    dcg = 1 / math.log2(3)
    idcg = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert s["nDCG@3"] == pytest.approx(dcg / idcg)
    assert s["unjudged@5"] == pytest.approx(1 / 5)
    # SimP@5: 2 relevant of 4 judged in the top 5, one unjudged counted at rate 1/2.
    assert s["SimP@5"] == pytest.approx((2 + 0.5) / 5)
    assert s["LastRel"] == 100.0  # d9 never retrieved


def test_graded_ndcg_by_hand() -> None:
    qrels = {("q", "a"): 2, ("q", "b"): 0, ("q", "c"): 1, ("q", "d"): 2}
    s = scores_of(qrels, ["c", "b", "a"], ["nDCG@3", "nDCG"])
    dcg = 1 + 2 / math.log2(4)
    ideal3 = 2 + 2 / math.log2(3) + 1 / math.log2(4)
    assert s["nDCG@3"] == pytest.approx(dcg / ideal3)
    assert s["nDCG"] == pytest.approx(dcg / ideal3)  # 3 positive gains: same ideal


def rel_at(positions: list[int], n_rel: int, depth: int) -> tuple[dict, list[str]]:
    """Qrels with ``n_rel`` relevant docs, those at ``positions`` retrieved in a run of
    ``depth`` whose other documents are judged non-relevant."""
    qrels = {("q", f"n{i}"): 0 for i in range(depth)}
    ranking = [f"n{i}" for i in range(depth)]
    for j, p in enumerate(positions):
        ranking[p - 1] = f"r{j}"
    for j in range(n_rel):
        qrels[("q", f"r{j}")] = 1
    return qrels, ranking


def test_pres_worked_example() -> None:
    qrels, ranking = rel_at([32, 35, 46], 3, 1000)
    assert scores_of(qrels, ranking, ["PRES@1000"])["PRES@1000"] == pytest.approx(
        1 - (32 + 35 + 46 - 6) / 3000)
    assert round(scores_of(qrels, ranking, ["PRES@1000"])["PRES@1000"], 3) == 0.964


@pytest.mark.parametrize(("positions", "expected"), [
    # The paper prints 0.505 rounded to 0.51.
    ([1], 0.25), ([50, 51, 53, 54], 0.505), ([1, 2, 3, 4], 1.0), ([1, 98, 99, 100], 0.28),
])
def test_pres_table_2_of_the_paper(positions: list[int], expected: float) -> None:
    qrels, ranking = rel_at(positions, 4, 100)
    assert scores_of(qrels, ranking, ["PRES@100"])["PRES@100"] == pytest.approx(expected,
                                                                                abs=0.005)


def test_normalised_precision_at_recall_by_hand() -> None:
    # 4 relevant, 6 judged non-relevant; run: r0 n0 r1 n1 r2 n2 r3 ...
    qrels = {("q", f"r{i}"): 1 for i in range(4)} | {("q", f"n{i}"): 0 for i in range(6)}
    ranking = ["r0", "n0", "r1", "n1", "r2", "n2", "r3", "n3"]
    s = scores_of(qrels, ranking, ["nP@75", "TNR@75", "snP@75", "nP@100", "LastRel"])
    # 75 %: TP = 3 at position 5, FP = 2; P = 3/5, TNR = 4/6.
    assert s["nP@75"] == pytest.approx(3 / 5 * 4 / 6)
    assert s["TNR@75"] == pytest.approx(4 / 6)
    assert s["snP@75"] == pytest.approx(math.sqrt(3 / 5 * 4 / 6))
    assert s["nP@100"] == pytest.approx(4 / 7 * 3 / 6)
    assert s["LastRel"] == pytest.approx(100 * 7 / 10)
    # Never reaching 100 % recall: the worst case.
    assert scores_of(qrels, ranking[:5], ["nP@100"])["nP@100"] == 0.0


def test_topic_without_relevant_scores_zero() -> None:
    qrels = {("q", "a"): 0, ("q", "b"): 0}
    s = scores_of(qrels, ["a", "b"], ["AP", "nDCG@10", "Bpref", "PRES@10", "nP@95", "RR"])
    assert all(v == 0.0 for v in s.values())


def test_measure_names() -> None:
    assert parse_measure("P@10").param == 10
    assert parse_measure("nDCG").param == 0
    assert not parse_measure("LastRel").higher_is_better
    for bad in ("P", "AP@5", "Foo", "nP@150", "P@0", "P@x"):
        with pytest.raises(UnknownMeasure) as err:
            parse_measure(bad)
        assert "P@k" in err.value.valid


def test_measure_parameters_beyond_64_bits_are_unknown_measures() -> None:
    # A cut-off the kernel cannot hold was accepted and failed the evaluation job
    # (OverflowError); one of 5,000 digits failed the request itself (int() refuses it).
    for bad in ("P@99999999999999999999", "P@2147483648", "PRES@" + "9" * 5000,
                "nDCG@" + "1" * 5000):
        with pytest.raises(UnknownMeasure):
            parse_measure(bad)
    assert parse_measure("P@" + "0" * 5000 + "10").name == "P@10"
    assert parse_measure("P@2147483647").param == 2**31 - 1
    scores = scores_of({("q", "d1"): 1, ("q", "d2"): 0}, ["d1", "d2"],
                       ["P@2147483647", "PRES@2147483647", "nDCG@2147483647"])
    assert scores["P@2147483647"] == pytest.approx(1 / (2**31 - 1))
    assert scores["nDCG@2147483647"] == pytest.approx(1.0)


# -- agreement with ir_measures (pytrec_eval, i.e. trec_eval) ---------------------------------
def random_case(seed: int, *, ties: bool) -> tuple[dict[tuple[str, str], int], str]:
    rng = np.random.default_rng(seed)
    qrels = {}
    for t in range(8):
        grades = [0, 1] if t % 2 else [0, 0, 1, 2]
        for d in rng.choice(120, 50, replace=False):
            qrels[(f"q{t}", f"d{d}")] = int(rng.choice(grades))
    for d in range(10):  # a topic with judgments but nothing relevant
        qrels[("q8", f"d{d}")] = 0
    lines = []
    for r in range(5):
        for t in range(10):  # q9 has no judgments
            n = int(rng.integers(0, 150))
            for i, d in enumerate(rng.choice(160, n, replace=False)):
                score = int(rng.integers(0, 4)) if ties else rng.random()
                lines.append(f"q{t} Q0 d{d} {i + 1} {score} run{r}")
    return qrels, "\n".join(lines)


IRM_NAMES = ["P@5", "P@10", "R@20", "R@100", "nDCG@10", "nDCG", "AP", "Rprec", "Bpref", "RR"]


@pytest.mark.parametrize("ties", [False, True])
def test_agrees_with_ir_measures(ties: bool) -> None:
    ir_measures = pytest.importorskip("ir_measures")
    qrels, text = random_case(3 + ties, ties=ties)
    runs = parse_runs(text)
    names = IRM_NAMES + ([] if ties else ["unjudged@10", "unjudged@100"])
    scores = evaluate_runs(Posterior.from_qrels(qrels), runs, parse_measures(names), samples=0)
    reference = [ir_measures.parse_measure(n) for n in IRM_NAMES]
    if not ties:  # ir_measures' Judged breaks ties its own way (doc id ascending)
        reference += [ir_measures.parse_measure("Judged@10"),
                      ir_measures.parse_measure("Judged@100")]
    qrels_rows = [ir_measures.Qrel(t, d, v) for (t, d), v in qrels.items()]
    compared = 0
    for name, run in runs.items():
        docs = [ir_measures.ScoredDoc(t, d, float(s)) for t in run
                for d, s in zip(run.rankings[t], run.scores[t], strict=True)]
        expected = {(m.query_id, str(m.measure)): m.value
                    for m in ir_measures.iter_calc(reference, qrels_rows, docs)}
        ri = scores.runs.index(name)
        for ti, topic in enumerate(scores.topics):
            for ours, theirs in zip(names, reference, strict=True):
                value = scores.value[ours][ri, ti]
                want = expected.get((topic, str(theirs)))
                if want is None:
                    assert math.isnan(value), (name, topic, ours)
                    continue
                if ours.startswith("unjudged"):
                    want = 1.0 - want
                assert value == pytest.approx(want, abs=1e-12), (name, topic, ours)
                compared += 1
    assert compared > 300
    assert "q9" not in scores.topics and "q8" in scores.topics


# -- draws ------------------------------------------------------------------------------------
def random_posterior(seed: int, n_topics: int = 6, n_docs: int = 80) -> tuple[Posterior, dict]:
    rng = np.random.default_rng(seed)
    topics, docs = [], []
    for t in range(n_topics):
        for d in range(n_docs):
            topics.append(f"q{t}")
            docs.append(f"d{d}")
    p = rng.beta(0.6, 1.2, len(topics))
    runs = {f"run{r}": {f"q{t}": [f"d{d}" for d in rng.permutation(n_docs + 20)[:60]]
                        for t in range(n_topics)} for r in range(4)}
    return Posterior.binary(topics, docs, p), runs


def test_fixed_qrels_have_no_spread() -> None:
    qrels, text = random_case(5, ties=False)
    scores = evaluate_runs(Posterior.from_qrels(qrels), parse_runs(text),
                           parse_measures(["P@10", "AP"]), samples=100, seed=1)
    assert scores.draws is None
    out = report(scores)
    for row in out["results"]:
        assert row["mean"] == row["value"] and row["low"] == row["value"]
        assert row["std"] == 0.0
    for pair in out["pairs"]:
        assert pair["p_a_beats_b"] in (0.0, 1.0)


def test_uncertain_qrels_without_draws_have_no_interval() -> None:
    posterior, runs = random_posterior(1)
    out = report(evaluate_runs(posterior, runs, parse_measures(["AP"]), samples=0))
    assert all(r["std"] is None and r["low"] is None and r["value"] is not None
               for r in out["results"])
    assert all(p["p_a_beats_b"] is None for p in out["pairs"])


def test_draws_are_reproducible_and_unbiased() -> None:
    posterior, runs = random_posterior(0)
    measures = parse_measures(["P@10", "AP"])
    a = evaluate_runs(posterior, runs, measures, samples=400, seed=7)
    b = evaluate_runs(posterior, runs, measures, samples=400, seed=7)
    c = evaluate_runs(posterior, runs, measures, samples=400, seed=8)
    assert a.draws is not None and b.draws is not None and c.draws is not None
    np.testing.assert_array_equal(a.draws["AP"], b.draws["AP"])
    assert not np.array_equal(a.draws["AP"], c.draws["AP"])
    # E[P@10] is the sum of P(relevant) over the judged documents of the top 10, divided by 10.
    p = dict(zip(zip(posterior.topics, posterior.docs, strict=True), posterior.p_relevant(),
                 strict=True))
    big = evaluate_runs(posterior, runs, measures[:1], samples=4000, seed=3)
    assert big.draws is not None
    for ri, run in enumerate(big.runs):
        for ti, topic in enumerate(big.topics):
            expected = sum(p.get((topic, d), 0.0) for d in runs[run][topic][:10]) / 10
            draws = big.draws["P@10"][:, ri, ti]
            assert abs(draws.mean() - expected) < 4 * draws.std() / math.sqrt(4000) + 1e-9


def test_draws_ignore_task_order() -> None:
    posterior, runs = random_posterior(2)
    order = np.random.default_rng(0).permutation(posterior.n_tasks)
    shuffled = Posterior(topics=posterior.topics[order], docs=posterior.docs[order],
                         proba=posterior.proba[order], classes=posterior.classes,
                         relevant_index=1)
    measures = parse_measures(["AP"])
    a = evaluate_runs(posterior, runs, measures, samples=50, seed=1)
    b = evaluate_runs(shuffled, runs, measures, samples=50, seed=1)
    assert a.draws is not None and b.draws is not None
    np.testing.assert_array_equal(a.draws["AP"], b.draws["AP"])


def test_interval_covers_the_true_score() -> None:
    """Calibration: true labels drawn from the posterior's own probabilities; the 95 % interval
    of P@10 and AP must cover the score on the true qrels for >= 90 % of (run, topic) pairs."""
    rng = np.random.default_rng(11)
    n_topics, n_docs = 25, 60
    topics = [f"q{t}" for t in range(n_topics) for _ in range(n_docs)]
    docs = [f"d{d}" for _ in range(n_topics) for d in range(n_docs)]
    p = rng.beta(0.5, 0.8, len(topics))
    truth = rng.random(len(topics)) < p
    posterior = Posterior.binary(topics, docs, p)
    true_qrels = {(t, d): int(y) for t, d, y in zip(topics, docs, truth, strict=True)}
    runs = {f"run{r}": {f"q{t}": [f"d{d}" for d in rng.permutation(n_docs)[:40]]
                        for t in range(n_topics)} for r in range(8)}
    measures = parse_measures(["P@10", "AP"])
    scores = evaluate_runs(posterior, runs, measures, samples=500, seed=5)
    true_scores = evaluate_runs(Posterior.from_qrels(true_qrels), runs, measures, samples=0)
    out = report(scores)
    for m in ("P@10", "AP"):
        rows = [r for r in out["results"] if r["measure"] == m and r["topic"] != "all"]
        covered = 0
        for row in rows:
            ri, ti = scores.runs.index(row["run"]), scores.topics.index(row["topic"])
            truth_value = true_scores.value[m][ri, ti]
            covered += row["low"] - 1e-12 <= truth_value <= row["high"] + 1e-12
        assert covered / len(rows) >= 0.90, (m, covered / len(rows))


def test_interval_covers_the_true_score_of_a_crowd_aggregation() -> None:
    """Calibration end to end: synthetic crowd labels (known truth), Dawid-Skene's posterior,
    30 topics x 6 random runs; the 95 % intervals of P@10 and AP cover the score on the true
    qrels for >= 90 % of (run, topic) pairs. (Seeds 0-2 of the generator give 0.91-0.98.)"""
    from models.dawid_skene import DawidSkene
    from models.synthetic import generate

    syn = generate(1500, 40, noise_level=(0.0, 2.0), redundancy=5, random_state=2)
    data = syn.to_annotation_data(with_features=False)
    proba = DawidSkene().fit(data).result(data).proba
    per = 50
    topics = [f"q{i // per}" for i in range(1500)]
    docs = [f"d{i}" for i in range(1500)]
    posterior = Posterior.binary(topics, docs, proba[:, 1])
    truth = {(t, d): int(y) for t, d, y in zip(topics, docs, syn.truth, strict=True)}
    rng = np.random.default_rng(2)
    runs = {f"r{r}": {f"q{t}": [f"d{t * per + i}" for i in rng.permutation(per)[:40]]
                      for t in range(30)} for r in range(6)}
    measures = parse_measures(["P@10", "AP"])
    out = report(evaluate_runs(posterior, runs, measures, samples=500, seed=1))
    true_scores = evaluate_runs(Posterior.from_qrels(truth), runs, measures, samples=0)
    for m in ("P@10", "AP"):
        rows = [r for r in out["results"] if r["measure"] == m and r["topic"] != "all"]
        covered = sum(
            r["low"] - 1e-12 <= true_scores.value[m][true_scores.runs.index(r["run"]),
                                                     true_scores.topics.index(r["topic"])]
            <= r["high"] + 1e-12 for r in rows)
        assert covered / len(rows) >= 0.90, (m, covered / len(rows))


def test_win_probabilities_and_ranking() -> None:
    draws = np.array([[0.3, 0.2, 0.1], [0.1, 0.2, 0.1], [0.3, 0.1, 0.2], [0.4, 0.3, 0.2]])
    wins = win_probabilities(draws)
    assert wins[0, 1] == pytest.approx(0.75) and wins[1, 0] == pytest.approx(0.25)
    assert wins[0, 2] == pytest.approx(0.75) and wins[2, 0] == pytest.approx(0.0)
    lower = win_probabilities(draws, higher_is_better=False)
    assert lower[2, 0] == pytest.approx(0.75)


def test_kendall_tau_matches_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    x = rng.integers(0, 5, 12).astype(float)
    ys = rng.integers(0, 5, (6, 12)).astype(float)
    ours = kendall_tau(x, ys)
    for y, tau in zip(ys, ours, strict=True):
        assert tau == pytest.approx(stats.kendalltau(x, y).statistic)
    assert kendall_tau(x, x) == pytest.approx(1.0)


def test_report_has_pairs_rankings_and_tau_against_gold() -> None:
    posterior, runs = random_posterior(4)
    measures = parse_measures(["P@10", "AP", "LastRel"])
    scores = evaluate_runs(posterior, runs, measures, samples=200, seed=0)
    gold = {(t, d): int(p >= 0.5) for t, d, p in zip(posterior.topics, posterior.docs,
                                                     posterior.p_relevant(), strict=True)}
    out = report(scores, reference=evaluate_runs(Posterior.from_qrels(gold), runs, measures,
                                                 samples=0))
    assert len(out["pairs"]) == 3 * 4 * 3
    for ranking in out["rankings"]:
        if ranking["measure"] != "LastRel":  # LastRel may tie every run (100: none complete)
            assert ranking["kendall_tau_gold"] == pytest.approx(1.0)  # gold = most probable
            assert -1.0 <= ranking["kendall_tau_draws"]["mean"] <= 1.0
        values = {r["run"]: r["value"] for r in out["results"]
                  if r["measure"] == ranking["measure"] and r["topic"] == "all"}
        ordered = [values[r] for r in ranking["runs"]]
        assert ordered == sorted(ordered, reverse=ranking["higher_is_better"])
    row = next(r for r in out["results"] if r["topic"] == "all")
    assert row["low"] <= row["mean"] <= row["high"]


# -- union and intersection --------------------------------------------------------------------
def test_union_and_intersection() -> None:
    a = Posterior.from_qrels({("q", "x"): 1, ("q", "y"): 0, ("q", "z"): 1})
    b = Posterior.binary(["q", "q"], ["x", "y"], np.array([0.5, 0.4]))
    union = combine([a, b], "union")
    inter = combine([a, b], "intersection")
    p_union = dict(zip(union.docs, union.p_relevant(), strict=True))
    p_inter = dict(zip(inter.docs, inter.p_relevant(), strict=True))
    assert p_union == pytest.approx({"x": 1.0, "y": 0.4, "z": 1.0})
    assert p_inter == pytest.approx({"x": 0.5, "y": 0.0, "z": 0.0})  # z: b did not judge it
    with pytest.raises(ValueError):
        combine([a], "union")
