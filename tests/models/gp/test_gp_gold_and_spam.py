"""LK / MAGP with gold clamped (``use_gold``) and with asymmetric annotator noise (a spam part)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
gpflow = pytest.importorskip("gpflow")

from models.evaluation.heldout import heldout_predictions  # noqa: E402
from models.gp.model import LK, MAGP  # noqa: E402
from models.gp.training import CrowdGPCore  # noqa: E402
from models.registry import get_method, make_aggregator  # noqa: E402
from models.synthetic import generate  # noqa: E402

FAST = {"n_iter": 8, "m_step_iterations": 8}


def _with_gold(data, truth, share: float, seed: int):
    rng = np.random.default_rng(seed)
    gold = np.full(data.n_tasks, -1)
    picked = rng.permutation(data.n_tasks)[: int(share * data.n_tasks)]
    gold[picked] = truth[picked]
    return dataclasses.replace(data, gold=gold)


@pytest.fixture(scope="module")
def gold_fits():
    s = generate(300, 20, noise_level=(2.0, 4.0), redundancy=5, random_state=5)
    data = _with_gold(s.to_annotation_data(with_features=False), s.truth, 0.3, 5)
    free = LK(random_state=0, **FAST).fit(data)
    clamped = LK(random_state=0, use_gold=True, **FAST).fit(data)
    return data, free, clamped


def test_gold_is_a_noise_free_judgment_of_the_task(gold_fits):
    """A gold label enters as the observation Φ(s f_i): it moves q(f_i) to the gold side, the
    task reports the gold, tasks without gold keep a posterior, and the ELBO counts the gold."""
    data, free, clamped = gold_fits
    known = data.gold >= 0
    sign = 2.0 * data.gold[known] - 1.0
    shift = sign * (clamped.posterior_mean_[known] - free.posterior_mean_[known])
    assert np.all(shift > 0)  # every gold task moved towards its label
    np.testing.assert_array_equal(clamped.labels_[known], data.gold[known])
    np.testing.assert_array_equal(clamped.proba_[known, 1], data.gold[known])
    assert clamped.result(data).info["gold_clamped"] == int(known.sum())
    assert np.all((clamped.proba_[~known] > 0) & (clamped.proba_[~known] < 1))
    # Without use_gold the gold is not used: the gold tasks keep their own posterior.
    assert "gold_clamped" not in free.info_
    assert np.mean(free.labels_[known] == data.gold[known]) < 1.0
    # The gold terms are part of the objective: E_q[log Φ(s f)] < 0 per gold task.
    core = clamped.core_
    m_f, v_f, _ = core._state()
    gold_ve, _, _ = core.gold_terms(m_f, v_f)
    judgment_ve, _, _ = core.judgment_terms(m_f, v_f)
    assert gold_ve.shape == (int(known.sum()),)
    assert np.all(gold_ve.numpy() < 0)
    without_gold = core.elbo() - tf.reduce_sum(gold_ve)
    _, A, kdiag = core.gp_prep()
    _, _, terms = core.posterior(A, kdiag, core.prior_mean(core.X))
    np.testing.assert_allclose(float(without_gold),
                               float(terms + tf.reduce_sum(judgment_ve)), rtol=1e-10)


def test_gold_clamping_on_the_sparse_gp_subset_m_step(monkeypatch):
    """MAGP with features, inducing points and the M step on a subset of tasks: gold rows of the
    subset are re-indexed with it, and clamping does not cost the other tasks accuracy."""
    import models.gp.training as training

    monkeypatch.setattr(training, "COLUMN_BLOCK", 256)
    s = generate(600, 30, noise_level=(4.0, 8.0), redundancy=3, random_state=9)
    data = _with_gold(s.to_annotation_data(), s.truth, 0.3, 9)
    opts = {"random_state": 1, "kernel": "linear", "n_inducing": 30, "m_step_max_tasks": 200,
            **FAST}
    plain = MAGP(**opts).fit(data)
    clamped = MAGP(use_gold=True, **opts).fit(data)
    assert clamped.info_["gp"] == "sparse (30 inducing)"
    free = data.gold < 0
    acc_plain = np.mean(plain.labels_[free] == s.truth[free])
    acc_clamped = np.mean(clamped.labels_[free] == s.truth[free])
    assert acc_clamped > acc_plain - 0.01, (acc_plain, acc_clamped)
    # The GP over features also predicts unseen tasks from a fit that used gold.
    assert clamped.predict_proba(np.zeros((3, data.features.shape[1]))).shape == (3, 2)


def test_held_out_evaluation_never_scores_a_clamped_task(gold_fits):
    data, _, clamped = gold_fits
    held = heldout_predictions(
        lambda: make_aggregator("lk", {"use_gold": True, **FAST}), data, 2, random_state=0,
        full_model=clamped)
    known = data.gold >= 0
    # Every gold task comes from a fit that did not see its label: not all can be right.
    assert np.mean(held.labels[known] == data.gold[known]) < 1.0
    assert np.mean(held.labels[known] == data.gold[known]) > 0.6
    np.testing.assert_array_equal(held.labels[~known], clamped.labels_[~known])
    assert "use_gold" in get_method("lk").defaults and "use_gold" in get_method("magp").defaults
    assert "use_gold" not in get_method("gpmv").defaults


def test_core_rejects_gold_tasks_without_labels(gold_fits):
    from models.gp.likelihood import GaussianBernoulli

    data = gold_fits[0]
    with pytest.raises(ValueError, match="gold_task and gold_label"):
        CrowdGPCore(n_tasks=data.n_tasks, task=data.task, annotator=data.annotator,
                    label=data.label, likelihood=GaussianBernoulli(data.n_tasks, 20),
                    gold_task=np.array([0]))


@pytest.fixture(scope="module")
def spammed():
    """Algorithm 10 data in which 30 % of the annotators answer "relevant" on 60 % of their
    judgments whatever the task: their errors fall on the non-relevant tasks only."""
    s = generate(400, 40, noise_level=(0.0, 2.0), redundancy=5, random_state=11)
    rng = np.random.default_rng(11)
    spammer = rng.random(40) < 0.3
    label = s.label.copy()
    label[spammer[s.annotator] & (rng.random(label.size) < 0.6)] = 1
    return s, spammer, dataclasses.replace(s.to_annotation_data(with_features=False), label=label)


def test_asymmetric_noise_finds_one_sided_spammers(spammed):
    """With the spam part and μ_j fixed the planted spammers get ε_j ≈ 0.3 against the prior's
    0.1 and a sensitivity above their specificity; honest annotators stay symmetric."""
    s, spammer, data = spammed
    model = LK(random_state=0, asymmetric_noise=True, learn_annotator_bias=False,
               n_iter=15).fit(data)
    cols = model.result(data).annotator_columns
    assert {"spam", "sensitivity", "specificity"} <= set(cols)
    for name in ("spam", "sensitivity", "specificity", "competence"):
        assert np.all((cols[name] >= 0) & (cols[name] <= 1)), name
    assert cols["spam"][spammer].mean() > cols["spam"][~spammer].mean() + 0.12
    gap = cols["sensitivity"] - cols["specificity"]
    assert gap[spammer].mean() > 0.15
    assert abs(gap[~spammer].mean()) < 0.05
    assert np.mean(model.labels_ == s.truth) > 0.75
    # Difficulty is read out under the same mixture likelihood.
    assert np.all(np.isfinite(model.result(data).task_columns["difficulty"]))


def test_asymmetric_noise_with_learned_biases_and_gold(spammed):
    """Defaults of LK (μ_j learned) with the spam part: a leniency bias and the spam part both
    explain one-sided errors. On the tasks without gold: symmetric LK 0.781 (with or without
    gold), this fit 0.791. The spam part clamps gold too."""
    s, _, data = spammed
    data = _with_gold(data, s.truth, 0.2, 3)
    asym = LK(random_state=0, asymmetric_noise=True, use_gold=True, **FAST).fit(data)
    free = data.gold < 0
    assert np.mean(asym.labels_[free] == s.truth[free]) > 0.77
    np.testing.assert_array_equal(asym.labels_[~free], data.gold[~free])
    with pytest.raises(ValueError, match="spam_prior"):
        LK(asymmetric_noise=True, spam_prior=0.0)


def _topical(seed: int, n_tasks: int = 600, n_topics: int = 12, n_annotators: int = 30):
    """Topics whose relevance rates run from 0.1 to 0.9, three judgments per task by annotators
    right 60–80 % of the time (symmetric noise)."""
    from models.data import AnnotationData

    rng = np.random.default_rng(seed)
    topic = rng.integers(n_topics, size=n_tasks)
    truth = (rng.random(n_tasks) < np.linspace(0.1, 0.9, n_topics)[topic]).astype(np.int64)
    skill = rng.uniform(0.6, 0.8, size=n_annotators)
    task = np.repeat(np.arange(n_tasks), 3)
    annotator = np.concatenate([rng.choice(n_annotators, 3, replace=False)
                                for _ in range(n_tasks)])
    label = np.where(rng.random(task.size) < skill[annotator], truth[task], 1 - truth[task])
    data = AnnotationData(
        task=task, annotator=annotator, label=label,
        topic_ids=np.array([f"t{t}" for t in topic]),
        doc_ids=np.array([f"d{i}" for i in range(n_tasks)]),
        annotator_ids=np.array([f"a{j}" for j in range(n_annotators)]),
        classes=np.array([0, 1]))
    return data, truth


def test_topic_intercepts_are_an_exact_inducing_design():
    from models.gp.model import topic_intercepts

    X, kernel, Z = topic_intercepts(np.array(["b", "a", "b", "c"]))
    np.testing.assert_array_equal(X, [[0, 1, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
    np.testing.assert_array_equal(Z, np.eye(3))
    K = kernel(X).numpy()
    np.testing.assert_allclose(K, [[1, 0, 1, 0], [0, 1, 0, 0], [1, 0, 1, 0], [0, 0, 0, 1]])
    # Nyström from the inducing inputs equals the kernel: no approximation.
    Kuf, Kuu = kernel(Z, X).numpy(), kernel(Z).numpy()
    np.testing.assert_allclose(Kuf.T @ np.linalg.solve(Kuu, Kuf), K, atol=1e-12)


def test_lk_with_topic_intercepts_uses_topic_relevance_rates():
    """Per-topic intercepts (an empirical-Bayes topic prior) beat the collection prior when
    topics differ in how many of their documents are relevant (0.818 against 0.772 here)."""
    data, truth = _topical(1)
    plain = LK(random_state=0, **FAST).fit(data)
    topical = LK(random_state=0, class_prior_by="topic", **FAST).fit(data)
    assert np.mean(topical.labels_ == truth) > np.mean(plain.labels_ == truth) + 0.03
    info = topical.result(data).info
    assert info["class_prior_by"] == "topic" and info["topic_variance"] > 0.05
    assert "topic_variance" not in plain.info_
    with pytest.raises(ValueError, match="class_prior_by"):
        LK(class_prior_by="document")
