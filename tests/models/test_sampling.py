"""models.sampling: inclusion probabilities, HT estimators, re-judging order, baselines,
warm starts and the simulator."""

from __future__ import annotations

import itertools
from dataclasses import astuple

import numpy as np
import pytest

from models.dawid_skene import DawidSkene
from models.mace import MACE
from models.sampling.design import (
    ap_prior,
    build_pools,
    inclusion_first,
    inclusion_second,
    run_weights,
    selection_probabilities,
)
from models.sampling.estimators import estimate_topic, true_measures
from models.sampling.pooling import depth_next, mtf_next
from models.sampling.rejudge import assign, entropy, expected_change, plan_next, rejudge_order
from models.sampling.sampler import TopicState, allocate, estimate, inclusion, plan_round
from models.sampling.simulate import simulate, subset
from models.synthetic import generate


def test_ap_prior_is_decreasing_and_normalised() -> None:
    p = ap_prior(5)
    assert p.sum() == pytest.approx(1.0)
    assert np.all(np.diff(p) < 0)
    w = (1 + np.array([sum(1 / j for j in range(r, 6)) for r in range(1, 6)])) / 5
    np.testing.assert_allclose(p, w / w.sum())


def test_inclusion_probabilities_match_brute_force_enumeration() -> None:
    p1 = np.array([0.5, 0.3, 0.2])
    p2 = np.array([0.1, 0.6, 0.3])
    rounds, draws = [p1, p2], [2, 1]
    first = np.zeros(3)
    second = np.zeros((3, 3))
    # Every sequence of the three draws (two from p1, one from p2) and its probability.
    for seq in itertools.product(range(3), repeat=3):
        prob = p1[seq[0]] * p1[seq[1]] * p2[seq[2]]
        included = set(seq)
        for i in included:
            first[i] += prob
            for j in included:
                second[i, j] += prob
    np.testing.assert_allclose(inclusion_first(rounds, draws), first)
    np.testing.assert_allclose(inclusion_second(rounds, draws, np.arange(3)), second)


def synthetic_topic(seed: int = 3):
    rng = np.random.default_rng(seed)
    docs = [f"d{i:02d}" for i in range(30)]
    relevant = {d: float(rng.random() < 0.3) for d in docs}
    rankings = {}
    for k in range(4):
        noise = rng.normal(0, 1.0 + k, len(docs))
        score = np.array([relevant[d] * 2 for d in docs]) + noise
        rankings[f"run{k}"] = {"t1": [docs[i] for i in np.argsort(-score)[:15]]}
    runs, pools = build_pools(rankings)
    return runs, pools["t1"], relevant


def test_horvitz_thompson_is_unbiased_over_many_draws() -> None:
    runs, pool, relevant = synthetic_topic()
    y_all = np.array([relevant[d] for d in pool.docs.tolist()])
    p1 = selection_probabilities(pool, run_weights(None, pool.depth > 0))
    p2 = selection_probabilities(pool, np.array([0.55, 0.25, 0.15, 0.05]))
    rounds, draws = [p1, p2], [6, 5]
    ranks = pool.rank_matrix()
    truth_r = y_all.sum()
    truth_p5 = (y_all * ((ranks[0] > 0) & (ranks[0] <= 5))).sum() / 5
    rank0 = ranks[0]
    truth_q = sum(y_all[i] * sum(y_all[j] for j in np.flatnonzero((rank0 > 0) & (rank0 <= r)))
                  / r for i, r in enumerate(rank0) if r > 0)
    pi_all = inclusion_first(rounds, draws)
    rng = np.random.default_rng(0)
    r_hat, p5_hat, q_hat = [], [], []
    for _ in range(3000):
        picks = np.concatenate([rng.choice(pool.n_docs, n, p=p) for p, n in zip(rounds, draws,
                                                                                 strict=True)])
        docs = np.unique(picks)
        est = estimate_topic(ranks=ranks[:, docs], y=y_all[docs], pi=pi_all[docs],
                             pi2=inclusion_second(rounds, draws, docs), cutoffs=(5,))
        r_hat.append(est.n_relevant.value)
        p5_hat.append(est.runs[0].precision[5].value)
        q_hat.append(est.runs[0].ap.value * est.n_relevant.value)
    for values, truth in ((r_hat, truth_r), (p5_hat, truth_p5), (q_hat, truth_q)):
        values = np.array(values)
        se = values.std(ddof=1) / np.sqrt(values.size)
        assert se > 0 and abs(values.mean() - truth) < 2 * se, (values.mean(), truth, se)


def test_documents_judged_beforehand_are_a_certain_stratum() -> None:
    runs, pool, relevant = synthetic_topic(7)
    y_all = np.array([relevant[d] for d in pool.docs.tolist()])
    p = selection_probabilities(pool, run_weights(None, pool.depth > 0))
    certain = [0, 1, 2, 3, 4]
    ranks = pool.rank_matrix()
    rng = np.random.default_rng(2)
    values = []
    for _ in range(2000):
        drawn = np.unique(rng.choice(pool.n_docs, 8, p=p))
        docs = certain + [int(d) for d in drawn if d not in certain]
        state = TopicState(p_rounds=[p], draws=[8], docs=docs, sources=[-1] * len(docs),
                           certain=set(certain))
        pi, pi2 = inclusion("active", state, pool.n_docs)
        assert np.all(pi[:5] == 1.0) and np.allclose(pi2[0, 5:], pi[5:])
        est = estimate_topic(ranks=ranks[:, docs], y=y_all[docs], pi=pi, pi2=pi2, cutoffs=())
        values.append(est.n_relevant.value)
    values = np.array(values)
    se = values.std(ddof=1) / np.sqrt(values.size)
    assert abs(values.mean() - y_all.sum()) < 2 * se


def test_variance_of_r_hat_is_unbiased_over_many_draws() -> None:
    runs, pool, relevant = synthetic_topic(5)
    y_all = np.array([relevant[d] for d in pool.docs.tolist()])
    p = selection_probabilities(pool, run_weights(None, pool.depth > 0))
    pi_all = inclusion_first([p], [10])
    ranks = pool.rank_matrix()
    rng = np.random.default_rng(1)
    values, variances = [], []
    for _ in range(3000):
        docs = np.unique(rng.choice(pool.n_docs, 10, p=p))
        est = estimate_topic(ranks=ranks[:, docs], y=y_all[docs], pi=pi_all[docs],
                             pi2=inclusion_second([p], [10], docs), cutoffs=())
        values.append(est.n_relevant.value)
        variances.append(est.n_relevant.variance)
    assert np.mean(variances) == pytest.approx(np.var(values), rel=0.15)


def test_full_judgments_give_the_exact_measures_with_zero_variance() -> None:
    runs, pool, relevant = synthetic_topic()
    state = TopicState(docs=list(range(pool.n_docs)), sources=[-1] * pool.n_docs)
    known = {i: relevant[d] for i, d in enumerate(pool.docs.tolist())}
    est = estimate("depth", pool, state, known, cutoffs=(5, 10))
    for k, name in enumerate(runs):
        ranking = [pool.docs[d] for d in pool.doc[pool.run == k][np.argsort(
            pool.rank[pool.run == k])]]
        qrels = {d: v for d, v in relevant.items() if d in set(pool.docs.tolist())}
        truth = true_measures(ranking=ranking, qrels=qrels, cutoffs=(5, 10))
        assert est.runs[k].ap.value == pytest.approx(truth["AP"]), name
        assert est.runs[k].precision[10].value == pytest.approx(truth["P@10"])
        assert est.runs[k].recall.value == pytest.approx(truth["recall"])
        assert est.runs[k].ap.variance == 0.0


def test_depth_pooling_and_move_to_front() -> None:
    rankings = {"a": {"t": ["x", "y", "z"]}, "b": {"t": ["y", "w", "v"]}}
    _, pools = build_pools(rankings)
    pool = pools["t"]
    docs = pool.docs.tolist()
    first = depth_next(pool, np.zeros(pool.n_docs, dtype=bool), 2)
    assert sorted(docs[d] for d in first) == ["x", "y"]  # the depth-1 pool
    # Move-to-front: run a's first doc was non-relevant, so run b goes first.
    history = [(docs.index("x"), 0, 0.0)]
    picks = mtf_next(pool, history, 2)
    assert [(docs[d], k) for d, k in picks] == [("y", 1), ("z", 0)]


def test_allocate_splits_the_budget_and_respects_capacity() -> None:
    assert allocate(10, {"a": 2, "b": 10, "c": 10}) == {"a": 2, "b": 4, "c": 4}
    assert sum(allocate(7, {"a": 5, "b": 5}).values()) == 7
    assert allocate(100, {"a": 3, "b": 0}) == {"a": 3}


def test_rounds_never_resample_a_document_and_active_reweights_runs() -> None:
    runs, pool, relevant = synthetic_topic()
    pools = {"t1": pool}
    states = {"t1": TopicState()}
    labels: dict[str, dict[int, float]] = {"t1": {}}
    rng = np.random.default_rng(0)
    for round_no in range(3):
        picks = plan_round(strategy="active", pools=pools, states=states, labels=labels,
                           budget=5, rng=rng, round_no=round_no)
        for pick in picks["t1"]:
            labels["t1"][pick.doc] = relevant[pool.docs[pick.doc]]
    assert len(states["t1"].docs) == len(set(states["t1"].docs)) == 15
    assert not np.allclose(states["t1"].p_rounds[0], states["t1"].p_rounds[-1])


def test_a_skipped_topic_takes_no_draws_and_keeps_its_inclusion_probabilities() -> None:
    """A topic at its target recall sits rounds out: no picks, no round in its design (its π
    unchanged), and the budget goes to the other topics."""
    _, pool, relevant = synthetic_topic()
    pools = {"t1": pool, "t2": pool}
    states = {t: TopicState() for t in pools}
    labels: dict[str, dict[int, float]] = {t: {} for t in pools}
    rng = np.random.default_rng(0)
    plan_round(strategy="active", pools=pools, states=states, labels=labels, budget=10,
               rng=rng)
    before = inclusion("active", states["t1"], pool.n_docs)[0]
    picks = plan_round(strategy="active", pools=pools, states=states, labels=labels, budget=10,
                       rng=rng, round_no=1, skip={"t1"})
    assert set(picks) == {"t2"} and len(picks["t2"]) == 10
    assert len(states["t1"].p_rounds) == 1 and len(states["t2"].p_rounds) == 2
    assert np.array_equal(inclusion("active", states["t1"], pool.n_docs)[0], before)
    assert len(states["t1"].docs) == 5 and len(states["t2"].docs) == 15


def test_rejudge_order_on_a_hand_built_posterior() -> None:
    proba = np.array([[0.9, 0.1], [0.5, 0.5], [0.3, 0.7], [0.55, 0.45], [1.0, 0.0]])
    assert rejudge_order(proba, strategy="uncertainty").tolist() == [1, 3, 2, 0, 4]
    eligible = np.array([True, False, True, True, True])
    assert rejudge_order(proba, strategy="uncertainty", eligible=eligible).tolist()[:2] == [3, 2]
    gain, flip, tv = expected_change(proba, 0.8)
    # 0.55/0.45 flips whenever the label says 1 (P(y=1) = 0.55*0.2 + 0.45*0.8 = 0.47).
    assert flip[3] == pytest.approx(0.47)
    assert flip[0] == 0.0 and flip[4] == 0.0
    # Gain: Σ_y max_t p_t P(y | t) − max p; for 0.55/0.45: (0.55*0.8) + (0.45*0.8) − 0.55.
    assert gain[3] == pytest.approx(0.8 - 0.55)
    assert gain[1] == pytest.approx(0.8 - 0.5)
    assert gain[0] == pytest.approx(0.0) and gain[4] == 0.0 and np.all(tv >= 0)
    assert rejudge_order(proba, strategy="expected-change", accuracy=0.8).tolist() == [
        1, 3, 2, 0, 4]
    assert rejudge_order(proba, strategy="expected-change", accuracy=0.8).tolist()[0] in (1, 3)
    assert entropy(proba)[1] == pytest.approx(np.log(2))
    a = rejudge_order(proba, strategy="random", random_state=3)
    assert sorted(a.tolist()) == [0, 1, 2, 3, 4]
    assert a.tolist() == rejudge_order(proba, strategy="random", random_state=3).tolist()


@pytest.fixture(scope="module")
def small_data():
    synthetic = generate(150, 15, noise_level=(1.0, 3.0), redundancy=4, random_state=2)
    return synthetic.to_annotation_data(with_features=False)


def test_plan_next_against_a_plain_loop() -> None:
    """The vectorised choice of each task's best annotator not yet asked, the counts and the
    competence fallback equal a plain per-task loop, on random judgments with repeats, ignored
    values (label −1: asked, no label), annotators the fit has no competence for and ties."""
    rng = np.random.default_rng(4)
    n_tasks, n_ann, k = 60, 12, 3
    task = rng.integers(0, n_tasks, 400)
    annotator = rng.integers(0, n_ann, 400)
    label = np.where(rng.random(400) < 0.1, -1, rng.integers(0, k, 400))
    proba = rng.dirichlet(np.ones(k), n_tasks)
    competence = np.round(rng.uniform(0.3, 0.95, n_ann), 1)  # ties, broken by name
    competence[[2, 7]] = np.nan  # no competence in the fit: agreement with the posterior
    names = np.array([f"w{j:02d}" for j in range(n_ann)])
    evidence = np.bincount(annotator[label >= 0], minlength=n_ann)
    least = int(np.sort(evidence)[n_ann // 2])  # about half the annotators proposed
    for strategy, cap, fewest, share in (
            ("uncertainty", None, 0, None), ("expected-change", None, 0, 2),
            ("expected-change", 6, 0, 1), ("random", 8, 0, None),
            ("expected-change", None, least, 3), ("uncertainty", 6, least, 1)):
        plan = plan_next(proba, task=task, annotator=annotator, label=label,
                         competence=competence, annotator_names=names, n=25,
                         strategy=strategy, max_judgments=cap, n_annotators=4, random_state=1,
                         min_annotator_judgments=fewest, per_annotator=share)
        # the reference: every quantity by a loop
        used = label >= 0
        full = competence.copy()
        for j in range(n_ann):
            if np.isnan(full[j]):
                seen = proba[task[used & (annotator == j)], label[used & (annotator == j)]]
                full[j] = (seen.sum() + 0.5) / (seen.size + 1)
        assert np.allclose(plan.competence, full)
        assert plan.annotator_judgments.tolist() == [
            int(np.sum(used & (annotator == j))) for j in range(n_ann)]
        ranked = sorted((j for j in range(n_ann) if np.sum(used & (annotator == j)) >= fewest),
                        key=lambda j: (-full[j], names[j]))
        assert fewest == 0 or 0 < len(ranked) < n_ann
        counts = np.bincount(task[used], minlength=n_tasks)
        best = np.empty(n_tasks)
        free_of = []
        for i in range(n_tasks):
            free = [j for j in ranked if j not in set(annotator[task == i].tolist())]
            free_of.append(free)
            best[i] = full[free[0]] if free else 0.5
        eligible = None if cap is None else counts < cap
        order = rejudge_order(proba, strategy=strategy, eligible=eligible,
                              accuracy=np.clip(best, 0.5, 0.99), random_state=1)[:25]
        assert plan.order.tolist() == order.tolist()
        assert plan.n_judgments.tolist() == counts[order].tolist()
        assert [a.tolist() for a in plan.annotators] == [free_of[i][:4] for i in order]
        # who each task goes to: its best free annotator who has not had their share yet
        load: dict[int, int] = {}
        goes_to = []
        for i in order:
            open_ = [j for j in free_of[i] if share is None or load.get(j, 0) < share]
            goes_to.append(open_[0] if open_ else -1)
            if open_:
                load[open_[0]] = load.get(open_[0], 0) + 1
        assert plan.assigned.tolist() == goes_to
        assert share is None or max(load.values()) <= share
        assert share != 1 or len(set(goes_to) - {-1}) == sum(g >= 0 for g in goes_to)
        gain, flip, tv = expected_change(proba[order], np.clip(best[order], 0.5, 0.99))
        assert np.allclose(plan.expected_gain, gain) and np.allclose(plan.p_label_change, flip)
        assert np.allclose(plan.uncertainty, entropy(proba[order]))
    # a task every annotator has judged: nobody left to ask, chance accuracy
    everyone = plan_next(proba[:1], task=np.zeros(n_ann, dtype=np.int64),
                         annotator=np.arange(n_ann), label=np.zeros(n_ann, dtype=np.int64),
                         competence=competence, annotator_names=names, n=1,
                         strategy="expected-change")
    assert everyone.annotators[0].size == 0 and everyone.assigned.tolist() == [-1]
    assert np.allclose(everyone.expected_gain, expected_change(proba[:1], 0.5)[0])


def test_assignment_by_hand() -> None:
    """Three annotators, A > B > C; A has judged task 1. One task each: task 0 to A, task 1 to
    B (A judged it), task 2 to C (A and B have their share), task 3 to nobody. Without a limit
    every task goes to its best annotator not yet asked."""
    order = np.array([0, 1, 2, 3])
    asked = {1: {0}}
    assert assign(order, asked, [0, 1, 2], 1).tolist() == [0, 1, 2, -1]
    assert assign(order, asked, [0, 1, 2], 2).tolist() == [0, 1, 0, 1]
    assert assign(order, asked, [0, 1, 2], None).tolist() == [0, 1, 0, 0]
    assert assign(order, {}, [], None).tolist() == [-1, -1, -1, -1]
    with pytest.raises(ValueError, match="per_annotator"):
        assign(order, asked, [0, 1, 2], 0)


def test_warm_start_reaches_the_cold_fit(small_data) -> None:
    keep = np.sort(np.random.default_rng(0).permutation(small_data.n_judgments)[:500])
    for make in (DawidSkene, lambda: MACE(random_state=0)):
        before = make().fit(subset(small_data, keep))
        cold = make().fit(small_data)
        warm = make().fit(small_data, init=before)
        # A warm start converges (the log-likelihood per judgment of a cold fit) and is as
        # accurate against the truth.
        n = small_data.n_judgments
        assert warm.log_likelihood_ / n == pytest.approx(cold.log_likelihood_ / n, abs=0.01)
        accuracy = [np.mean(m.labels_ == small_data.gold) for m in (cold, warm)]
        assert accuracy[1] >= accuracy[0] - 0.03


def test_simulator_is_deterministic_for_a_seed(small_data) -> None:
    def run():
        points = simulate(small_data, make=lambda s: DawidSkene(), batch=60, seeds=[4],
                          strategies=["uncertainty", "random"])
        return [astuple(p)[:-2] for p in points]  # all but the fit time and map_rmse (NaN)

    first = run()
    assert first == run()
    for strategy in ("uncertainty", "random"):
        curve = [p for p in first if p[0] == strategy]
        assert curve[0][3] == small_data.n_tasks  # starts with one judgment per task
        assert curve[-1][3] == small_data.n_judgments
        assert [p[3] for p in curve] == sorted(p[3] for p in curve)


def test_simulator_caps_judgments_per_task_until_every_task_has_k(small_data) -> None:
    from models.sampling.simulate import _reveal_round

    rng = np.random.default_rng(0)
    revealed = np.zeros(small_data.n_judgments, dtype=bool)
    _, first = np.unique(small_data.task, return_index=True)
    revealed[first] = True
    per_task_all = np.bincount(small_data.task, minlength=small_data.n_tasks)
    while True:
        model = DawidSkene().fit(subset(small_data, np.flatnonzero(revealed)))
        _reveal_round(small_data, revealed, model, strategy="uncertainty", batch=25, rng=rng,
                      max_judgments=2)
        shown = np.bincount(small_data.task[revealed], minlength=small_data.n_tasks)
        if (shown >= np.minimum(2, per_task_all)).all():
            break
        assert shown.max() <= 2  # nobody gets a third label while some task lacks a second
    # Once every task has two, the cap lifts and the next round goes on to third labels.
    model = DawidSkene().fit(subset(small_data, np.flatnonzero(revealed)))
    _reveal_round(small_data, revealed, model, strategy="uncertainty", batch=25, rng=rng,
                  max_judgments=2)
    assert np.bincount(small_data.task[revealed], minlength=small_data.n_tasks).max() == 3
    points = simulate(small_data, make=lambda s: DawidSkene(), batch=60, seeds=[1],
                      strategies=["uncertainty"], max_judgments=2)
    assert points[-1].judgments == small_data.n_judgments


def test_stopping_rules_on_hand_numbers() -> None:
    """Thesis §3.3.5: optimistic stops when r / ρ ≥ R̂, conservative when r / ρ ≥ R̂ + sd."""
    from models.sampling.stopping import stopping_check

    check = stopping_check(18, 19.5, 4.0, 0.9)  # r / ρ = 20 ≥ 19.5, but < 19.5 + 2
    assert check.optimistic and not check.conservative
    assert check.estimated_recall == pytest.approx(18 / 19.5) and check.residual == 1.5
    assert check.sd == 2.0
    assert stopping_check(18, 19.5, 0.25, 0.9).conservative  # 20 ≥ 19.5 + 0.5
    assert not stopping_check(18, 21, 0.0, 0.9).optimistic  # 20 < 21
    assert stopping_check(9, 10, 0.0, 0.9).conservative  # r / ρ = R̂ exactly: reached
    unknown = stopping_check(18, 19.5, None, 0.9)  # no variance: never conservative
    assert unknown.optimistic and not unknown.conservative and unknown.sd is None
    nothing = stopping_check(0, 0.0, 0.0, 0.9)  # nothing relevant seen: no evidence to stop
    assert nothing.estimated_recall is None and nothing.residual == 0.0
    assert not nothing.optimistic and not nothing.conservative
    assert stopping_check(5, 4.9999999, 0.0, 1.0).estimate == 5  # R̂ ≥ r
    for bad in (0.0, 1.2, -0.1):
        with pytest.raises(ValueError):
            stopping_check(1, 2, 1, bad)


def test_no_stopping_before_a_topics_first_draw() -> None:
    """Before a topic's first draw its sample is only the pairs judged before the sampling
    (π = 1): R̂ counted only them, r / R̂ = 1, and both rules stopped the topic though most
    of its pool was never looked at."""
    from models.sampling.stopping import check_topic, estimable, stopping_check

    runs, pool, relevant = synthetic_topic()
    before = [i for i, d in enumerate(pool.docs.tolist()) if relevant[d]][:2]
    before += [i for i, d in enumerate(pool.docs.tolist()) if not relevant[d]][:2]
    known = {i: relevant[pool.docs[i]] for i in before}
    state = TopicState(docs=list(before), sources=[-1] * 4, certain=set(before))
    assert pool.n_docs > 4
    for strategy in ("active", "stratified", "uniform"):
        assert not estimable(strategy, pool, state)
        assert check_topic(strategy, pool, state, known, 0.9) is None
    assert estimable("depth", pool, state)  # pooling: the trec_eval count, as documented
    # after a round that drew from the topic the rules apply again
    p = selection_probabilities(pool, run_weights(None, pool.depth > 0))
    drawn = TopicState(p_rounds=[p], draws=[3], docs=list(before), sources=[-1] * 4,
                       certain=set(before))
    assert estimable("active", pool, drawn)
    assert check_topic("active", pool, drawn, known, 0.9) is not None
    full = TopicState(docs=list(range(pool.n_docs)), sources=[-1] * pool.n_docs)
    assert estimable("uniform", pool, full)
    held = stopping_check(2, 2.0, 0.0, 0.9, estimable=False)
    assert not held.optimistic and not held.conservative and held.estimated_recall is None
    assert stopping_check(2, 2.0, 0.0, 0.9).conservative
