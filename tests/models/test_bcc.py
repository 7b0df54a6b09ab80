"""IBCC and EBCC (models/bcc.py) on planted data, gold clamping and the held-out evaluation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import digamma

from models.bcc import EBCC, IBCC
from models.data import UNKNOWN, AnnotationData
from models.dawid_skene import DawidSkene
from models.dirichlet import kl_dirichlet, kl_dirichlet_shared, polya_fixed_point
from models.evaluation.heldout import gold_folds, heldout_predictions
from models.registry import make_aggregator, validate_params


def planted(n_tasks: int = 1500, n_annotators: int = 30, per_task: int = 5, k: int = 3,
            seed: int = 0, topics: int = 1) -> tuple[AnnotationData, np.ndarray, np.ndarray]:
    """Judgments drawn from known confusion matrices (diagonal 0.55–0.9, the rest spread at
    random), uniform truth; returns data, truth and the confusion matrices (J, K, K)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(k, size=n_tasks)
    confusion = np.empty((n_annotators, k, k))
    for j in range(n_annotators):
        for t in range(k):
            diag = rng.uniform(0.55, 0.9)
            rest = rng.dirichlet(np.ones(k - 1)) * (1 - diag)
            confusion[j, t] = np.insert(rest, t, diag)
    task = np.repeat(np.arange(n_tasks), per_task)
    annotator = np.concatenate([rng.choice(n_annotators, per_task, replace=False)
                                for _ in range(n_tasks)])
    u = rng.random(task.shape[0])[:, None]
    label = (u > np.cumsum(confusion[annotator, truth[task]], axis=1)).sum(axis=1)
    data = AnnotationData(
        task=task, annotator=annotator, label=label.astype(np.int64),
        topic_ids=(np.arange(n_tasks) % topics).astype(str), doc_ids=np.arange(n_tasks).astype(str),
        annotator_ids=np.arange(n_annotators).astype(str), classes=np.arange(k),
    )
    return data, truth, confusion


def test_ibcc_recovers_planted_confusion_matrices() -> None:
    data, truth, confusion = planted()
    model = IBCC().fit(data)
    assert np.mean(model.labels_ == truth) > 0.9
    # Each annotator judged ~250 tasks: posterior means close to the planted matrices.
    assert np.mean(np.abs(model.confusion_ - confusion)) < 0.04
    assert np.allclose(model.confusion_.sum(axis=2), 1.0)
    assert np.allclose(model.proba_.sum(axis=1), 1.0)


def test_ibcc_elbo_never_decreases() -> None:
    data, _, _ = planted(n_tasks=400, seed=1)
    history = IBCC(tol=0.0, n_iter=30).fit(data).objective_history_
    assert np.all(np.diff(history) > -1e-6 * np.abs(history[:-1]))


def test_ibcc_one_update_by_hand() -> None:
    """One VB step from the majority vote on a two-task example, computed by hand."""
    data = AnnotationData(
        task=np.array([0, 0, 1]), annotator=np.array([0, 1, 0]), label=np.array([1, 1, 0]),
        topic_ids=np.array(["q", "q"]), doc_ids=np.array(["a", "b"]),
        annotator_ids=np.array(["x", "y"]), classes=np.array([0, 1]),
    )
    # the update itself, no read-out
    model = IBCC(n_iter=1, prior="fixed", temper_folds=0).fit(data)
    # q from MV: task 0 -> [0, 1], task 1 -> [1, 0]. α_x = α₀ + [[1, 0], [0, 1]], α_y = α₀ + e_11.
    a0 = np.array([[4.0, 1.0], [1.0, 4.0]])
    ax = a0 + np.eye(2)
    ay = a0 + np.array([[0.0, 0.0], [0.0, 1.0]])
    nu = np.array([2.0, 2.0])

    def elog(a: np.ndarray) -> np.ndarray:
        return digamma(a) - digamma(a.sum(axis=-1, keepdims=True))

    log0 = elog(ax)[:, 1] + elog(ay)[:, 1] + elog(nu)
    p0 = np.exp(log0 - log0.max())
    assert model.proba_[0] == pytest.approx(p0 / p0.sum())


def test_empirical_prior_recovers_a_dirichlet() -> None:
    rng = np.random.default_rng(3)
    alpha = np.array([6.0, 2.0])
    counts = np.stack([rng.multinomial(8, rng.dirichlet(alpha)) for _ in range(3000)])
    fitted = polya_fixed_point(counts.astype(float), np.ones(2), n_steps=500)
    assert fitted == pytest.approx(alpha, rel=0.15)


def test_empirical_prior_pools_sparse_annotators() -> None:
    """Annotators with 2–3 judgments: the learned prior (population confusion) beats the fixed
    one at recovering their matrices."""
    data, _, confusion = planted(n_tasks=1200, n_annotators=400, per_task=3, k=2, seed=4)
    fixed = IBCC(prior="fixed").fit(data)
    empirical = IBCC(prior="empirical").fit(data)
    err_fixed = np.mean(np.abs(fixed.confusion_ - confusion))
    err_emp = np.mean(np.abs(empirical.confusion_ - confusion))
    assert err_emp < err_fixed
    assert empirical.alpha_prior_.shape == (2, 2)


def test_ebcc_recovers_labels_and_is_deterministic() -> None:
    data, truth, confusion = planted(k=2, seed=5)
    a = EBCC(random_state=0, n_subtypes=3).fit(data)
    b = EBCC(random_state=0, n_subtypes=3).fit(data)
    assert np.array_equal(a.proba_, b.proba_)
    # No correlated errors planted: as accurate as IBCC (which is at the Bayes rate here).
    assert np.mean(a.labels_ == truth) >= np.mean(IBCC().fit(data).labels_ == truth) - 0.01
    assert np.mean(np.abs(a.confusion_ - confusion)) < 0.06
    res = a.result(data)
    assert set(res.annotator_columns) >= {"competence", "p_0_given_1"}
    assert np.isfinite(res.info["elbo"])


def test_ebcc_restarts_keep_the_best_elbo() -> None:
    data, _, _ = planted(n_tasks=300, k=2, seed=6)
    model = EBCC(random_state=1, n_restarts=3, n_subtypes=4).fit(data)
    assert model.elbo_ == max(model.restart_elbos_)


@pytest.mark.parametrize("cls", [IBCC, EBCC])
def test_gold_is_clamped(cls: type) -> None:
    data, truth, _ = planted(n_tasks=300, k=2, seed=9)
    gold = np.full(data.n_tasks, UNKNOWN)
    gold[:50] = 1 - truth[:50]  # wrong on purpose: clamped labels win over the votes
    from dataclasses import replace

    clamped = cls(use_gold=True).fit(replace(data, gold=gold))
    assert np.array_equal(clamped.labels_[:50], gold[:50])
    free = cls(use_gold=False).fit(replace(data, gold=gold))
    assert np.mean(free.labels_[:50] == truth[:50]) > 0.8


def test_class_prior_by_topic() -> None:
    """Topics with very different relevance rates: a per-topic class prior helps."""
    rng = np.random.default_rng(10)
    n, n_ann, per = 2000, 30, 3
    topic = np.arange(n) % 10
    rate = np.linspace(0.05, 0.95, 10)[topic]
    truth = (rng.random(n) < rate).astype(np.int64)
    task = np.repeat(np.arange(n), per)
    annotator = np.concatenate([rng.choice(n_ann, per, replace=False) for _ in range(n)])
    label = np.where(rng.random(task.size) < 0.7, truth[task], 1 - truth[task])
    data = AnnotationData(task=task, annotator=annotator, label=label,
                          topic_ids=topic.astype(str), doc_ids=np.arange(n).astype(str),
                          annotator_ids=np.arange(n_ann).astype(str), classes=np.array([0, 1]))
    flat = IBCC().fit(data)
    by_topic = IBCC(class_prior_by="topic", prior="empirical").fit(data)
    assert np.mean(by_topic.labels_ == truth) > np.mean(flat.labels_ == truth) + 0.02


def test_ibcc_agrees_with_crowdkit_dawid_skene_with_weak_priors(helpers) -> None:  # type: ignore[no-untyped-def]
    """With near-flat priors IBCC's posterior mode is Dawid–Skene's; crowd-kit has no IBCC, so
    its DS is the counterpart, and ours without its population prior."""
    from crowdkit.aggregation import DawidSkene as CKDS

    data, _, _ = planted(n_tasks=800, k=2, seed=11)
    ours = IBCC(prior="fixed", alpha_diagonal=1.0, alpha_off_diagonal=1.0).fit(data)
    ck = helpers.crowdkit_labels(CKDS(n_iter=100).fit_predict(helpers.to_crowdkit(data)),
                                 data.n_tasks)
    assert np.mean(ours.labels_ == ck) > 0.98
    assert np.mean(ours.labels_ == DawidSkene(population_prior=0).fit(data).labels_) > 0.98


def test_heldout_never_scores_a_task_with_its_own_gold() -> None:
    data, truth, _ = planted(n_tasks=600, k=2, seed=12)
    from dataclasses import replace

    gold = np.full(data.n_tasks, UNKNOWN)
    # Gold unrelated to the judgments (coin flips): clamped in-sample it scores 1.0; a fit that
    # never saw a task's coin cannot predict it.
    gold[:200] = np.random.default_rng(0).integers(2, size=200)
    data = replace(data, gold=gold)
    folds = gold_folds(gold, 4, random_state=0)
    assert set(np.unique(folds[:200])) == {0, 1, 2, 3} and (folds[200:] == -1).all()
    held = heldout_predictions(lambda: IBCC(use_gold=True), data, 4, random_state=0)
    in_sample = IBCC(use_gold=True).fit(data)
    assert np.mean(in_sample.labels_[:200] == gold[:200]) == 1.0
    assert np.mean(held.labels[:200] == gold[:200]) < 0.65
    assert np.array_equal(held.labels[200:], in_sample.labels_[200:])


def test_rf10_heldout_with_gold_clamped_beats_unsupervised(rf10, rf10_gold, helpers) -> None:  # type: ignore[no-untyped-def]
    from dataclasses import replace

    data = replace(rf10, gold=rf10_gold)
    base = helpers.accuracy(IBCC(class_prior_by="topic", prior="empirical").fit(data).labels_,
                            rf10_gold)
    held = heldout_predictions(
        lambda: IBCC(class_prior_by="topic", prior="empirical", use_gold=True), data, 5,
        random_state=0)
    assert base >= 0.69
    assert helpers.accuracy(held.labels, rf10_gold) > base


def test_registry_builds_both() -> None:
    assert validate_params("ibcc", {"prior": "empirical", "use_gold": True})
    assert isinstance(make_aggregator("ebcc", {"n_subtypes": 4, "random_state": 1}), EBCC)
    with pytest.raises(ValueError):
        make_aggregator("ibcc", {"prior": "nope"})
    with pytest.raises(ValueError):
        make_aggregator("ebcc", {"class_prior_by": "nope"})


def test_gold_folds_follow_topic_and_doc_not_task_numbering() -> None:
    """The same tasks numbered in two orders get the same fold each (the service numbers tasks
    as its database returns them, the CLI as its file lists them)."""
    from models.evaluation.heldout import task_order

    rng = np.random.default_rng(3)
    topics = np.array([f"t{i % 7}" for i in range(60)])
    docs = np.array([f"d{i}" for i in range(60)])
    gold = rng.integers(0, 3, 60)
    gold[::5] = UNKNOWN
    perm = rng.permutation(60)

    def folds(t: np.ndarray, d: np.ndarray, g: np.ndarray) -> dict[tuple[str, str], int]:
        data = AnnotationData(task=np.zeros(0, np.int64), annotator=np.zeros(0, np.int64),
                              label=np.zeros(0, np.int64), topic_ids=t, doc_ids=d,
                              annotator_ids=np.array([], dtype=str), classes=np.arange(3),
                              gold=g)
        f = gold_folds(g, 4, random_state=5, order=task_order(data))
        return dict(zip(zip(t.tolist(), d.tolist(), strict=True), f.tolist(), strict=True))

    one, other = folds(topics, docs, gold), folds(topics[perm], docs[perm], gold[perm])
    assert one == other
    assert sorted(set(one.values())) == [-1, 0, 1, 2, 3]
    # without the order the draw follows the numbering, and the folds differ
    plain = gold_folds(gold[perm], 4, random_state=5)
    assert dict(zip(zip(topics[perm].tolist(), docs[perm].tolist(), strict=True),
                    plain.tolist(), strict=True)) != one


@pytest.mark.parametrize("seed", [0, 1])
def test_ibcc_crowd_prior_holds_majority_vote_with_weak_sparse_workers(seed: int) -> None:
    """Weak workers (accuracy .35-.85) with a handful of tasks each (1,200 tasks, 600 workers,
    4 grades): with the fixed symmetric prior (4 / 1) a skewed class prior outvotes 2-1
    majorities (.601 / .639 against majority vote's .641 / .646); the crowd's prior, its
    centre by distance and its strength type-II ML, holds majority vote."""
    from models.majority_vote import MajorityVote
    from models.synthetic import crowd_dataset

    s = crowd_dataset(1200, 600, grades=4, alpha=0.0, accuracy=(0.35, 0.85), random_state=seed)
    data = s.to_annotation_data(with_features=False)
    mv = float(np.mean(MajorityVote().fit(data).labels_ == s.truth))
    crowd = IBCC(prior="crowd").fit(data)
    assert float(np.mean(crowd.labels_ == s.truth)) >= mv - 0.01
    np.testing.assert_allclose(crowd.alpha_prior_.sum(axis=1), crowd.alpha_prior_.sum() / 4)


def test_kl_to_a_shared_prior_equals_the_broadcast_kl() -> None:
    """kl_dirichlet_shared (the prior's terms once, E[ln p] passed in) is kl_dirichlet on the
    broadcast prior: EBCC's ELBO, Dirichlets along axis 1 of a (J, K, C) array."""
    rng = np.random.default_rng(3)
    alpha = rng.gamma(2.0, 2.0, size=(9, 3, 8)) + 0.05
    prior = rng.gamma(2.0, 1.0, size=(3, 8)) + 0.1
    e_log = digamma(alpha) - digamma(alpha.sum(axis=1, keepdims=True))
    expected = kl_dirichlet(alpha.transpose(0, 2, 1), prior.T[None])
    assert kl_dirichlet_shared(alpha, prior, e_log, axis=1) == pytest.approx(expected, rel=1e-12)
    assert expected > 0
