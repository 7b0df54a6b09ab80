"""Dawid–Skene: one EM step checked by hand, EM invariants, gold, recovery, crowd-kit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from models.data import AnnotationData
from models.dawid_skene import (
    STRENGTH_GRID,
    DawidSkene,
    population_pseudo_counts,
    population_strength,
)
from models.majority_vote import MajorityVote
from models.synthetic import NOISE_LEVELS, generate


def _two_annotators() -> AnnotationData:
    """Four tasks, annotators A and B: (1, 1), (0, 0), (1, 0), (1, 1)."""
    return AnnotationData(
        task=np.array([0, 0, 1, 1, 2, 2, 3, 3]),
        annotator=np.array([0, 1, 0, 1, 0, 1, 0, 1]),
        label=np.array([1, 1, 0, 0, 1, 0, 1, 1]),
        topic_ids=np.full(4, "t"), doc_ids=np.array(["d0", "d1", "d2", "d3"]),
        annotator_ids=np.array(["A", "B"]), classes=np.array([0, 1]),
        gold=np.array([1, 0, 1, -1]),
    )


def test_one_em_step_by_hand() -> None:
    # Majority vote: q = [0,1], [1,0], [.5,.5], [0,1]  ->  prior ρ = [3/8, 5/8].
    # Counts with Laplace smoothing 1:  A: truth 0 -> (1+1, .5+1)/3.5, truth 1 -> (0+1, 2.5+1)/4.5
    #                                   B: truth 0 -> (1.5+1, 0+1)/3.5, truth 1 -> (.5+1, 2+1)/4.5
    # Task 2 (A says 1, B says 0): P(0) ∝ 3/8 · 3/7 · 5/7 = 45/392,
    #                              P(1) ∝ 5/8 · 7/9 · 1/3 = 35/216.
    data = _two_annotators()
    # the E step itself: no gold-free read-out (models.tempering)
    ds = DawidSkene(n_iter=1, smoothing=1.0, population_prior=0, temper_folds=0).fit(data)
    a, b = 45 / 392, 35 / 216
    np.testing.assert_allclose(ds.proba_[2], [a / (a + b), b / (a + b)])
    # Task 0 (both say 1): P(0) ∝ 3/8 · 3/7 · 2/7, P(1) ∝ 5/8 · 7/9 · 2/3.
    c, d = 3 / 8 * 3 / 7 * 2 / 7, 5 / 8 * 7 / 9 * 2 / 3
    np.testing.assert_allclose(ds.proba_[0], [c / (c + d), d / (c + d)])
    expected_ll = np.log(c + d) * 2 + np.log(a + b) + np.log(
        3 / 8 * 4 / 7 * 5 / 7 + 5 / 8 * 2 / 9 * 1 / 3)
    np.testing.assert_allclose(ds.objective_history_[0], expected_ll)


def test_population_prior_by_hand() -> None:
    # Majority-vote counts N_j[t, l] as above: A: t0 (1, .5), t1 (0, 2.5); B: t0 (1.5, 0),
    # t1 (.5, 2). Pooled rows 1 + Σ_j N_j: t0 (3.5, 1.5), t1 (1.5, 5.5), normalised (7/10,
    # 3/10), (3/14, 11/14). By distance: g(0) = (7/10 + 11/14) / 2 = 26/35, g(+1) = 3/10,
    # g(−1) = 3/14; the centre's rows (26/35, 3/10) and (3/14, 26/35) normalised are (52/73,
    # 21/73) and (15/67, 52/67), so with s = 2 the pseudo-counts are t0 (104/73, 42/73), t1
    # (30/67, 104/67), and A's rows become t0 (1 + 104/73, .5 + 42/73) / 3.5 and t1 (30/67,
    # 2.5 + 104/67) / 4.5 (no smoothing).
    data = _two_annotators()
    ds = DawidSkene(n_iter=0, smoothing=0.0, population_prior=2.0).fit(data)
    np.testing.assert_allclose(ds.confusion_[0], [[(1 + 104 / 73) / 3.5, (0.5 + 42 / 73) / 3.5],
                                                  [30 / 67 / 4.5, (2.5 + 104 / 67) / 4.5]])
    np.testing.assert_allclose(ds.confusion_[1], [[(1.5 + 104 / 73) / 3.5, 42 / 73 / 3.5],
                                                  [(0.5 + 30 / 67) / 4.5, (2 + 104 / 67) / 4.5]])
    assert ds.population_strength_ == 2.0


def test_population_centre_depends_on_distance_only() -> None:
    """The centre of the population prior weighs an error by its distance l − t alone: in
    every row, m[t, t + d] / m[t, t] is the same number g(d) / g(0), whatever the pooled rows
    were (here every grade's row has its own shape); ``"pooled"`` keeps them as they are."""
    pooled = np.array([[50.0, 20, 5, 1, 0], [10, 40, 10, 3, 1], [2, 30, 60, 8, 2],
                       [0, 1, 5, 30, 4], [0, 0, 1, 9, 10]])
    m = population_pseudo_counts(pooled, 10.0)
    np.testing.assert_allclose(m.sum(axis=1), 10.0)
    for d in range(-4, 5):
        ratios = [m[t, t + d] / m[t, t] for t in range(5) if 0 <= t + d < 5]
        np.testing.assert_allclose(ratios, ratios[0])
    kept = population_pseudo_counts(pooled, 10.0, "pooled")
    np.testing.assert_allclose(kept, 10 * (pooled + 1) / (pooled + 1).sum(axis=1, keepdims=True))
    assert not np.any(population_pseudo_counts(pooled, 0.0))


@pytest.mark.parametrize("strength", [5.0, 300.0])
def test_population_strength_is_type2_ml(strength: float) -> None:
    """Rows drawn from a Dirichlet(s · m) and then 30 judgments each: the climb along the grid
    ends where a search of the whole grid does, and near the planted s (within a factor 2)."""
    rng = np.random.default_rng(0)
    centre = np.array([[0.7, 0.2, 0.1], [0.15, 0.7, 0.15], [0.1, 0.2, 0.7]])
    rows = rng.dirichlet(strength * centre[0], size=(3000, 1))
    rows = np.concatenate([rows] + [rng.dirichlet(strength * centre[t], size=(3000, 1))
                                    for t in (1, 2)], axis=1)  # (J, 3, 3)
    counts = np.stack([[rng.multinomial(30, r) for r in row] for row in rows]).astype(float)
    found = population_strength(counts, centre)
    assert strength / 2 < found < strength * 2

    def evidence(s: float) -> float:
        from scipy.special import gammaln
        a = s * centre[None]
        return float((gammaln(s) - gammaln(s + counts.sum(axis=2))).sum()
                     + (gammaln(a + counts) - gammaln(a)).sum())

    assert found == STRENGTH_GRID[int(np.argmax([evidence(s) for s in STRENGTH_GRID]))]
    assert population_strength(counts, centre, start=STRENGTH_GRID[-1]) == found


@pytest.mark.parametrize("seed", [0, 1])
def test_weak_sparse_workers_keep_every_grade(seed: int) -> None:
    """Weak workers (accuracy .35-.85) with a handful of tasks each (1,200 tasks, 3 judgments
    each, 600 workers drawn uniformly, 4 grades): with the crowd's pooled rows as the prior's
    centre and s = K, DS empties the top grade and merges others (accuracy .42-.60 against
    majority vote's .64-.65); centred on the shape by distance with its strength type-II ML,
    no class empties and DS holds majority vote."""
    from models.synthetic import crowd_dataset

    s = crowd_dataset(1200, 600, grades=4, alpha=0.0, accuracy=(0.35, 0.85), random_state=seed)
    data = s.to_annotation_data(with_features=False)
    mv = float(np.mean(MajorityVote().fit(data).labels_ == s.truth))
    ds = DawidSkene().fit(data)
    assert float(np.mean(ds.labels_ == s.truth)) >= mv - 0.01
    assert ds.prior_.min() > 0.03


@pytest.mark.parametrize("seed", [0, 1])
def test_many_sparse_workers_hold_majority_vote(seed: int) -> None:
    """Many workers with a handful of tasks each (crowd_dataset: 600 tasks, 3 judgments each,
    300 workers drawn uniformly, 4 grades): plain DS gives each worker a near 0/1 confusion
    matrix fitted to its own few answers and falls .1-.2 below majority vote; with the crowd's
    confusion as prior (the default) it holds majority vote."""
    from models.synthetic import crowd_dataset

    s = crowd_dataset(600, 300, grades=4, class_prior=(0.55, 0.25, 0.12, 0.08), alpha=0.0,
                      random_state=seed)
    data = s.to_annotation_data(with_features=False)
    mv = float(np.mean(MajorityVote().fit(data).labels_ == s.truth))
    assert float(np.mean(DawidSkene().fit(data).labels_ == s.truth)) >= mv - 0.01
    plain = DawidSkene(population_prior=0).fit(data)
    assert float(np.mean(plain.labels_ == s.truth)) < mv - 0.05


def test_gold_is_held_fixed() -> None:
    data = _two_annotators()
    ds = DawidSkene(use_gold=True, smoothing=1.0).fit(data)
    np.testing.assert_allclose(ds.proba_[:3], [[0, 1], [1, 0], [0, 1]])
    free = DawidSkene(use_gold=False, smoothing=1.0).fit(data)
    assert not np.allclose(free.proba_[2], [0, 1])


def test_em_log_likelihood_never_decreases_and_result_columns(synth_small) -> None:  # type: ignore[no-untyped-def]
    data = synth_small.to_annotation_data()
    ds = DawidSkene(smoothing=0.0, tol=0.0, n_iter=30).fit(data)
    history = np.array(ds.objective_history_)
    assert len(history) == 30
    assert np.all(np.diff(history) >= -1e-6 * abs(history[0]))
    np.testing.assert_allclose(ds.confusion_.sum(axis=2), 1.0)
    np.testing.assert_allclose(ds.proba_.sum(axis=1), 1.0)
    result = ds.result(data)
    assert set(result.annotator_columns) >= {"competence", "p_1_given_0", "p_0_given_1"}
    assert all(np.isfinite(v).all() for v in result.annotator_columns.values())
    assert ds.loss_history_[-1] <= ds.loss_history_[0]


def test_multiclass_recovers_truth() -> None:
    # Three classes; good annotators are right 80% of the time, bad ones 40%.
    rng = np.random.default_rng(0)
    n_tasks, n_ann, k = 600, 12, 3
    truth = rng.integers(0, k, n_tasks)
    skill = np.where(np.arange(n_ann) < 6, 0.8, 0.4)
    task = np.repeat(np.arange(n_tasks), 5)
    ann = np.concatenate([rng.choice(n_ann, 5, replace=False) for _ in range(n_tasks)])
    right = rng.random(task.shape[0]) < skill[ann]
    label = np.where(right, truth[task], (truth[task] + rng.integers(1, k, task.shape[0])) % k)
    data = AnnotationData(task=task, annotator=ann, label=label, topic_ids=np.full(n_tasks, "t"),
                          doc_ids=np.array([f"d{i}" for i in range(n_tasks)]),
                          annotator_ids=np.array([f"a{j}" for j in range(n_ann)]),
                          classes=np.arange(k), gold=truth)
    ds = DawidSkene().fit(data)
    mv = MajorityVote().fit(data)
    acc_ds = np.mean(ds.labels_ == truth)
    assert acc_ds >= np.mean(mv.labels_ == truth)
    assert acc_ds > 0.85
    assert ds.competence_[:6].min() > ds.competence_[6:].max()


def test_competence_tracks_true_noise() -> None:
    # 20 annotators, so each has hundreds of judgments (task noise dominates with fewer).
    synthetic = generate(5000, 20, noise_level=NOISE_LEVELS["0-2"], redundancy=5,
                         random_state=11)
    ds = DawidSkene().fit(synthetic.to_annotation_data())
    rho = spearmanr(ds.competence_, synthetic.annotator_noise).statistic
    assert rho < -0.6


def test_at_least_crowdkit_accuracy(rf10, rf10_gold, synth_small, helpers) -> None:  # type: ignore[no-untyped-def]
    from crowdkit.aggregation import DawidSkene as CrowdKitDS

    for data, gold in ((rf10, rf10_gold), (synth_small.to_annotation_data(), synth_small.truth)):
        ours = helpers.accuracy(DawidSkene().fit(data).labels_, gold)
        theirs = helpers.accuracy(
            helpers.crowdkit_labels(CrowdKitDS(n_iter=100).fit_predict(helpers.to_crowdkit(data)),
                                    data.n_tasks), gold)
        assert ours >= theirs - 1e-12, (ours, theirs)
    assert helpers.accuracy(DawidSkene().fit(rf10).labels_, rf10_gold) >= 0.686
