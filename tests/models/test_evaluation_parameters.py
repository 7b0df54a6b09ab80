"""Draws of the annotators' parameters (``models.evaluation.parameters``): one annotator's draw
moves all its tasks together, the spread of a run's score widens where the labels rest on few
annotators, the reference draw gives the stored posterior back, MACE's own parameters, and bad
input."""

from __future__ import annotations

import numpy as np
import pytest

from models.data import AnnotationData
from models.dawid_skene import DawidSkene
from models.evaluation.measures import parse_measures
from models.evaluation.parameters import (
    AnnotatorDraws,
    draw_parameters,
    parameter_family,
)
from models.evaluation.scoring import evaluate_runs
from models.evaluation.uncertainty import Posterior
from models.mace import MACE
from models.tempering import plugin_posterior, readout_info


def _few_annotators(n: int = 400, seed: int = 0) -> tuple[AnnotationData, np.ndarray]:
    """An annotator-heavy set: 4 annotators (accuracies .9, .8, .7, .65), one or two per task,
    so every task's label rests on the confusion matrices of at most two people."""
    rng = np.random.default_rng(seed)
    truth = (rng.random(n) < 0.4).astype(int)
    accuracy = np.array([0.9, 0.8, 0.7, 0.65])
    topics, docs, annotators, labels = [], [], [], []
    for i in range(n):
        for j in rng.choice(4, 1 + int(rng.random() < 0.5), replace=False):
            right = rng.random() < accuracy[j]
            topics.append(f"t{i % 20:02d}")
            docs.append(f"d{i:04d}")
            annotators.append(f"w{j}")
            labels.append(int(truth[i] if right else 1 - truth[i]))
    data = AnnotationData.from_rows(topics, docs, annotators, labels)
    return data, truth


def _runs(post: Posterior) -> dict[str, dict[str, list[str]]]:
    """Two runs per topic: the documents in doc order and in reverse."""
    runs: dict[str, dict[str, list[str]]] = {"up": {}, "down": {}}
    for t in np.unique(post.topics):
        docs = sorted(post.docs[post.topics == t].tolist())
        runs["up"][t], runs["down"][t] = docs, docs[::-1]
    return runs


def test_parameter_draws_widen_intervals_where_labels_rest_on_few_annotators() -> None:
    data, truth = _few_annotators()
    model = DawidSkene(population_prior=2.0).fit(data)
    post = Posterior(topics=data.topic_ids, docs=data.doc_ids, proba=model.proba_,
                     classes=np.array([0, 1]), relevant_index=1)
    measures = parse_measures(["P@10", "AP"])
    # the draws tilt the fit's own posterior, not its gold-free read-out (which the labels-only
    # draws below use): with the read-out tilted instead, their mean sat .07 off the truth
    own = plugin_posterior(model.proba_, data.task, data.n_tasks, readout_info(model))
    draws = draw_parameters("confusion", own, data.task, data.annotator, data.label,
                            samples=400, seed=3, population_prior=2.0)  # DS's own prior
    labels = evaluate_runs(post, _runs(post), measures, samples=400, seed=3)
    params = evaluate_runs(post, _runs(post), measures, samples=400, seed=3,
                           parameters=draws)
    order = np.array([int(d[1:]) for d in data.doc_ids])
    true = evaluate_runs(Posterior.binary(data.topic_ids, data.doc_ids,
                                          truth[order].astype(float)),
                         _runs(post), measures, samples=0)
    for m in ("P@10", "AP"):
        plain, tied = labels.mean_draws(m), params.mean_draws(m)
        # each annotator's ~150 judgments leave its confusion matrix uncertain, and all 400
        # tasks share those four draws (from their joint posterior with the labels): the spread
        # of the mean over topics grows far beyond what 400 independent coins give (measured
        # on this set: 3.1-3.5 times)
        assert tied.std(axis=0).min() > 2.0 * plain.std(axis=0).max(), m
        # the joint posterior's mean is not EM's point: on this set it sits on the true scores
        # (measured: within .004, the labels-only draws .06-.08 above them)
        assert np.abs(tied.mean(axis=0) - true.mean_value(m)).max() < 0.03, m


def test_one_annotators_draw_moves_all_its_tasks_together() -> None:
    """Two annotators on disjoint tasks, one judgment per task: the tilt of a task follows its
    annotator's draw only. Tasks of one annotator with the same label move in lockstep across
    the draws (correlation 1); tasks of different annotators do not (class prior not drawn)."""
    rng = np.random.default_rng(1)
    n = 200
    task = np.arange(n)
    annotator = (task >= n // 2).astype(np.int64)
    label = (rng.random(n) < 0.5).astype(np.int64)
    proba = np.where(label[:, None] == 1, [0.2, 0.8], [0.7, 0.3])
    for make in (AnnotatorDraws.gibbs, AnnotatorDraws.confusion):  # joint, and one step
        draws = make(proba, task, annotator, label, n_labels=2, samples=300,
                     rng=np.random.default_rng(2), class_prior=False)
        _moves_together(draws.topic_proba(task, proba)[:, :, 1], annotator, label)


def _moves_together(p: np.ndarray, annotator: np.ndarray, label: np.ndarray) -> None:
    """``p`` (S, n): P(relevant) per draw."""
    first = np.flatnonzero((annotator == 0) & (label == 1))
    other = np.flatnonzero((annotator == 1) & (label == 1))
    same = np.corrcoef(p[:, first[0]], p[:, first[1]])[0, 1]
    across = np.corrcoef(p[:, first[0]], p[:, other[0]])[0, 1]
    assert same > 0.999
    assert abs(across) < 0.2
    assert p[:, first[0]].std() > 0.02  # the draws do move it


def test_the_reference_draw_gives_the_stored_posterior_back() -> None:
    """θ^s = θ̂ (a zero log ratio) tilts nothing, whatever the stored posterior (here not a DS
    posterior at all); a task without judgments keeps its posterior in every draw."""
    data, _ = _few_annotators(n=60)
    q = np.random.default_rng(4).dirichlet([2.0, 2.0], data.n_tasks)
    draws = draw_parameters("confusion", q, data.task, data.annotator, data.label, samples=3,
                            seed=0, class_prior=False)
    zero = AnnotatorDraws(draws.task, draws.annotator, draws.label,
                          np.zeros_like(draws.log_ratio))
    assert np.allclose(zero.topic_proba(np.arange(data.n_tasks), q), q[None])
    # restricted to a posterior without task 0: its judgments tilt no row
    rows = np.arange(data.n_tasks) - 1
    moved = draws.restrict(rows)
    assert moved.task.min() >= 0 and len(moved.task) == np.count_nonzero(data.task > 0)
    assert np.allclose(moved.topic_proba(np.arange(data.n_tasks - 1), q[1:]),
                       draws.topic_proba(np.arange(1, data.n_tasks), q[1:]))


def test_mace_draws_its_competence_and_spam() -> None:
    """MACE's family: an annotator whose competence draw falls pulls its copied labels towards
    its spam distribution, for all its tasks at once; the average tilted posterior stays close
    to the stored one."""
    data, _ = _few_annotators(n=300, seed=5)
    model = MACE(random_state=0).fit(data)
    assert parameter_family("mace") == "mace" and parameter_family("magp") is None
    draws = draw_parameters("mace", model.proba_, data.task, data.annotator, data.label,
                            samples=300, seed=1, competence=model.competence_,
                            spam=model.spam_dist_, class_prior=False)
    p = draws.topic_proba(np.arange(data.n_tasks), model.proba_)
    assert np.abs(p.mean(axis=0) - model.proba_).max() < 0.1
    alone = np.bincount(data.task, minlength=data.n_tasks) == 1
    by = np.full(data.n_tasks, -1)
    by[data.task[alone[data.task]]] = data.annotator[alone[data.task]]
    said = np.zeros(data.n_tasks, dtype=int)
    said[data.task] = data.label
    ones = np.flatnonzero((by == 3) & (said == 1))
    assert np.corrcoef(p[:, ones[0], 1], p[:, ones[1], 1])[0, 1] > 0.999


def test_bad_input() -> None:
    q = np.array([[0.5, 0.5], [0.2, 0.8]])
    task, annotator, label = np.array([0, 1]), np.array([0, 0]), np.array([1, 1])
    with pytest.raises(ValueError, match="unknown parameter family"):
        draw_parameters("gp", q, task, annotator, label, samples=2, seed=0)
    with pytest.raises(ValueError, match="competence and spam"):
        draw_parameters("mace", q, task, annotator, label, samples=2, seed=0)
    with pytest.raises(ValueError, match="disagree"):
        draw_parameters("mace", q, task, annotator, label, samples=2, seed=0,
                        competence=np.array([0.5]), spam=np.array([[0.3, 0.3, 0.4]]))
    with pytest.raises(ValueError, match="no fitted competence"):
        draw_parameters("mace", q, task, np.array([0, 1]), label, samples=2, seed=0,
                        competence=np.array([0.5]), spam=np.array([[0.5, 0.5]]))
    post = Posterior.binary(["t", "t"], ["a", "b"], q[:, 1])
    draws = draw_parameters("confusion", q, task, annotator, label, samples=2, seed=0)
    with pytest.raises(ValueError, match="2 parameter draws for 5 draws"):
        evaluate_runs(post, {"r": {"t": ["a", "b"]}}, parse_measures(["P@1"]), samples=5,
                      parameters=draws)


def test_same_seed_same_draws() -> None:
    data, _ = _few_annotators(n=40)
    q = DawidSkene().fit(data).proba_
    a, b = (draw_parameters("confusion", q, data.task, data.annotator, data.label, samples=4,
                            seed=9) for _ in range(2))
    assert np.array_equal(a.log_ratio, b.log_ratio)
    assert a.log_prior_ratio is not None and b.log_prior_ratio is not None
    assert np.array_equal(a.log_prior_ratio, b.log_prior_ratio)


def test_graded_chain_and_tempered_judgments() -> None:
    """Three grades: the chain's draws are distributions over the grades, centred near q; a
    tempered fit's τ_i scales a task's log tilt (τ = ½: half of it)."""
    rng = np.random.default_rng(6)
    n = 150
    truth = rng.integers(0, 3, n)
    task = np.repeat(np.arange(n), 3)
    annotator = rng.integers(0, 5, 3 * n)
    label = np.where(rng.random(3 * n) < 0.7, truth[task], rng.integers(0, 3, 3 * n))
    data = AnnotationData.from_rows([f"t{i % 5}" for i in task], [f"d{i:03d}" for i in task],
                                    [f"w{j}" for j in annotator], label.tolist())
    q = DawidSkene(population_prior=3.0, temper_folds=0).fit(data).proba_
    draws = draw_parameters("confusion", q, data.task, data.annotator, data.label, samples=100,
                            seed=2, population_prior=3.0)  # DS's own prior on three grades
    assert draws.log_ratio.shape == (100, data.n_annotators, 3, 3)
    p = draws.topic_proba(np.arange(data.n_tasks), q)
    assert p.shape == (100, data.n_tasks, 3) and np.allclose(p.sum(axis=2), 1.0)
    assert np.abs(p.mean(axis=0) - q).mean() < 0.1

    half = AnnotatorDraws(draws.task, draws.annotator, draws.label, draws.log_ratio,
                          weight=np.full(len(draws.task), 0.5))
    full = AnnotatorDraws(draws.task, draws.annotator, draws.label, draws.log_ratio)
    rows = np.arange(data.n_tasks)
    lift = np.log(full.topic_proba(rows, q)) - np.log(q)[None]
    lift_half = np.log(half.topic_proba(rows, q)) - np.log(q)[None]
    # log p^s − log q is the tilt minus a per-task normaliser: compare differences of classes
    assert np.allclose(lift_half[..., 1] - lift_half[..., 0],
                       0.5 * (lift[..., 1] - lift[..., 0]), atol=1e-4)


def test_the_population_priors_centre_moves_between_draws() -> None:
    """DS's population prior in the chain: its centre (the crowd's pooled row) is estimated with
    the labels latent, so it is drawn with them. Under a strong prior (2,000 pseudo-judgments,
    every annotator's row the centre's) the crowd's shared accuracy then still varies between
    draws as the pooled counts allow; held at the point estimate's centre (before 2026-11-27)
    every row was pinned there and the mean over annotators hardly moved (sd .006 here against
    .063)."""
    data, _ = _few_annotators(600, seed=3)
    model = DawidSkene(population_prior=2000.0, temper_folds=0).fit(data)
    draws = draw_parameters("confusion", model.proba_, data.task, data.annotator, data.label,
                            samples=300, seed=0, population_prior=2000.0)
    shared = draws.log_ratio[:, :, 1, 1].mean(axis=1)  # the crowd's log accuracy on "relevant"
    assert float(np.std(shared)) > 0.012

def test_ibcc_draws_use_the_fits_own_prior_and_centre_on_it() -> None:
    """IBCC's draws take its fit's prior on a confusion row from the one definition the fit
    uses (``models.bcc.confusion_prior``): from the fitted posterior's counts, ``RowPrior``
    finds the α₀ the fit ended with. On a weak sparse crowd (Algorithm 10, noise 4-8,
    redundancy 3) the labels drawn under that prior are as accurate as labels drawn from the
    fit's posterior itself (the draws centre on the fit); under Dir(1) rows, the prior the
    draws used before, they fell well below it."""
    from dataclasses import replace

    from models.bcc import IBCC
    from models.evaluation.parameters import RowPrior, draw_tilted
    from models.synthetic import NOISE_LEVELS, generate

    synth = generate(1500, 60, noise_level=NOISE_LEVELS["4-8"], redundancy=3, random_state=7)
    data = synth.to_annotation_data(with_features=False)
    truth = data.gold
    data = replace(data, gold=None)
    model = IBCC().fit(data)
    assert model.prior_used_ == "crowd-absolute"
    own = plugin_posterior(model.proba_, data.task, data.n_tasks, readout_info(model))
    prior = RowPrior.of_fit("ibcc", {}, {"confusion_prior": model.prior_used_})
    soft = np.stack([np.bincount(data.annotator * 2 + data.label, weights=own[data.task, k],
                                 minlength=data.n_annotators * 2).reshape(-1, 2)
                     for k in range(2)], axis=1)
    alpha, _ = prior.rows(soft, data.task)
    np.testing.assert_allclose(alpha, model.alpha_prior_, rtol=0.05)
    # with no info, "auto" is resolved again from the judgments: the same prior
    assert np.allclose(RowPrior.of_fit("ibcc").rows(soft, data.task)[0], alpha)

    rows = np.arange(data.n_tasks)
    from_q = float(own[rows, truth].mean())
    accuracy = {}
    for name, row_prior in (("fit", prior), ("dir1", RowPrior("chain"))):
        draws = draw_parameters("confusion", own, data.task, data.annotator, data.label,
                                samples=60, seed=0, row_prior=row_prior)
        labels = draw_tilted(draws.topic_proba(rows, own), np.random.default_rng(1))
        accuracy[name] = float((labels == truth[None]).mean())
    assert abs(accuracy["fit"] - from_q) < 0.02, (accuracy, from_q)
    assert accuracy["dir1"] < from_q - 0.05, (accuracy, from_q)


def test_mace_draws_use_the_fits_own_prior() -> None:
    """MACE's draws take its fit's Beta and Dirichlet (``models.mace.mace_pseudo_counts``):
    under VB (the default) the posterior's own pseudo-counts; EM's MAP: 1 + its smoothing."""
    from models.evaluation.parameters import RowPrior

    spammed = np.array([[3.0, 1.0], [0.0, 2.0]])
    knowing_spamming, xi = RowPrior.of_fit("mace", {}, {"class_prior": "uniform"}).mace(spammed)
    assert knowing_spamming.tolist() == [0.5, 0.5] and xi.tolist() == [10.0, 10.0]
    _, xi = RowPrior.of_fit("mace", {}, {"class_prior": "learned"}).mace(spammed)
    pooled = np.array([4.0, 4.0])  # the crowd's spam counts + 1 each
    np.testing.assert_allclose(xi, 10.0 * 2 / pooled.sum() * pooled)
    knowing_spamming, xi = RowPrior.of_fit("mace", {"variant": "em"}).mace(spammed)
    np.testing.assert_allclose(knowing_spamming, 1.005)
    np.testing.assert_allclose(xi, 1.005)
    assert RowPrior().mace(spammed)[0].tolist() == [1.0, 1.0]
