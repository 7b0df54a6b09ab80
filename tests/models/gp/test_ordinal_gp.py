"""The ordinal GP: the ordered-probit closed form against numerical integration over both noises,
its Gauss–Hermite expectations and their derivatives, ordered thresholds, and a small fit."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from scipy.special import ndtr
from scipy.stats import norm, pearsonr, spearmanr

from models.evaluation import evaluate
from models.gp.competence import grade_agreement
from models.gp.ordinal import OrdinalGP, grade_proba
from models.gp.ordinal_likelihood import OrderedProbit, log_diff_ndtr, ordinal_expectations
from models.synthetic import generate


def _likelihood(spam: float = 0.0) -> OrderedProbit:
    lik = OrderedProbit(2, 2, 4, thresholds=np.array([-1.0, 0.3, 1.2]), spam_prior=spam)
    lik.task_variance.assign(np.array([0.5, 1.5]))
    lik.annotator_variance.assign(np.array([0.2, 2.0]))
    lik.task_bias.assign(np.array([0.1, -0.3]))
    lik.annotator_bias.assign(np.array([0.4, -0.2]))
    return lik


def test_closed_form_equals_integral_over_task_and_annotator_noise() -> None:
    # P(y ≤ k | f) = ∫∫ Φ(b_k − f − e_i − e_j) N(e_i | μ_i, σ_i²) N(e_j | μ_j, σ_j²) de_i de_j
    lik = _likelihood()
    thresholds = lik.thresholds().numpy()
    f = 0.35
    for task, ann in [(0, 0), (1, 1), (0, 1)]:
        mu_i, s2_i = lik.task_bias.numpy()[task], lik.task_variance.numpy()[task]
        mu_j, s2_j = lik.annotator_bias.numpy()[ann], lik.annotator_variance.numpy()[ann]
        Y = np.array([[k, task, ann] for k in range(4)], dtype=np.float64)
        closed = lik.probability(np.full((4, 1), f), Y).numpy()[:, 0]
        # ∫∫ by an 80 × 80 Gauss–Hermite product rule over the two noises.
        x, w = np.polynomial.hermite_e.hermegauss(80)
        w = w / np.sqrt(2 * np.pi)
        ei = mu_i + np.sqrt(s2_i) * x[:, None]
        ej = mu_j + np.sqrt(s2_j) * x[None, :]
        cdf = [float(np.sum(w[:, None] * w[None, :] * ndtr(b - f - ei - ej)))
               for b in thresholds]
        numeric = np.diff(np.concatenate([[0.0], cdf, [1.0]]))
        np.testing.assert_allclose(closed, numeric, atol=1e-7)
        assert closed.sum() == pytest.approx(1.0)


def test_log_diff_ndtr_in_the_tails() -> None:
    upper = tf.constant([1.0, 9.0, -9.0, 1e6], dtype=tf.float64)
    lower = tf.constant([-1.0, 8.0, -10.0, 40.0], dtype=tf.float64)
    got = log_diff_ndtr(upper, lower).numpy()
    np.testing.assert_allclose(got[0], np.log(ndtr(1.0) - ndtr(-1.0)), rtol=1e-12)
    np.testing.assert_allclose(got[1], np.log(norm.sf(8.0) - norm.sf(9.0)), rtol=1e-9)
    np.testing.assert_allclose(got[2], np.log(norm.cdf(-9.0) - norm.cdf(-10.0)), rtol=1e-9)
    np.testing.assert_allclose(got[3], norm.logsf(40.0), rtol=1e-9)


@pytest.mark.parametrize("spam", [0.0, 0.2])
def test_expectations_and_derivatives_against_quadrature_and_autodiff(spam: float) -> None:
    lik = _likelihood(spam)
    lik.spam.assign(np.array([spam, spam / 2]))
    grade = tf.constant([0, 1, 2, 3, 3], dtype=tf.int32)
    task = tf.constant([0, 1, 0, 1, 0], dtype=tf.int32)
    ann = tf.constant([0, 1, 1, 0, 1], dtype=tf.int32)
    fmu = tf.constant([-0.4, 0.2, 1.0, 2.5, -1.5], dtype=tf.float64)
    fvar = tf.constant([0.3, 1.0, 0.05, 0.8, 2.0], dtype=tf.float64)
    ve, dm, dv = lik.expectations(fmu, fvar, grade, task, ann)
    # E[log p] against a 200-point rule on the likelihood's own log density.
    x, w = np.polynomial.hermite_e.hermegauss(200)
    w = w / np.sqrt(2 * np.pi)
    Y = np.stack([grade.numpy(), task.numpy(), ann.numpy()], axis=1).astype(np.float64)
    # every node's log density in one call (200 eager calls cost ~4 CPU s)
    nodes = (fmu.numpy()[None, :] + np.sqrt(fvar.numpy())[None, :] * x[:, None]).reshape(-1, 1)
    exact = w @ lik.log_prob(None, nodes, np.tile(Y, (x.size, 1))).numpy().reshape(x.size, -1)
    np.testing.assert_allclose(ve.numpy(), exact, atol=2e-3)
    # ∂E/∂m and ∂E[log p]/∂(offset, thresholds) from the custom gradient equal autodiff of the
    # quadrature through log p.
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([fmu, fvar])
        value, _, _ = lik.expectations(fmu, fvar, grade, task, ann)
        nodes, weights = lik.nodes, lik.weights
        direct = tf.add_n([wk * lik.log_prob(None, (fmu + tf.sqrt(fvar) * xk)[:, None], Y)
                           for xk, wk in zip(nodes, weights, strict=True)])
        total, total_direct = tf.reduce_sum(value), tf.reduce_sum(direct)
    variables = [fmu, fvar, *lik.trainable_variables]
    got = tape.gradient(total, variables)
    want = tape.gradient(total_direct, variables)
    for i, (g, h) in enumerate(zip(got, want, strict=True)):
        if h is None:
            continue
        # ∂/∂v: the custom gradient is ½ E[∂² log p] (Price's theorem), autodiff differentiates
        # the quadrature nodes; the two agree up to the rule's error.
        rtol = 1e-2 if i == 1 else 1e-6
        np.testing.assert_allclose(np.asarray(g), np.asarray(h), rtol=rtol, atol=1e-6)
    np.testing.assert_allclose(dm.numpy(), want[0].numpy(), rtol=1e-6, atol=1e-10)
    if spam == 0.0:
        # without spam the E step's curvature is the exact ∂E/∂v
        np.testing.assert_allclose(dv.numpy(), got[1].numpy(), rtol=1e-9)
    assert np.all(dv.numpy() < 0)  # site precisions stay positive


def test_thresholds_stay_ordered_and_views_agree() -> None:
    synth = generate(150, 12, noise_level=(0.0, 2.0), redundancy=4, grades=4, bias_sd=0.3,
                     random_state=2)
    data = synth.to_annotation_data(with_features=False)
    model = OrdinalGP(n_iter=4, random_state=0).fit(data)
    assert model.fallback_ == "lk"
    thresholds = np.asarray(model.info_["thresholds"])
    assert thresholds.shape == (3,) and np.all(np.diff(thresholds) > 0)
    np.testing.assert_allclose(model.proba_.sum(axis=1), 1.0, atol=1e-9)
    # P(grade ≥ r) is Φ((m − b_{r−1}) / sqrt(v)) — the probability that f lies above the
    # threshold: the binary view of the same fit.
    for r in (1, 2, 3):
        binary = ndtr((model.posterior_mean_ - thresholds[r - 1])
                      / np.sqrt(model.posterior_variance_))
        np.testing.assert_allclose(model.proba_[:, r:].sum(axis=1), binary, atol=1e-9)
    result = model.result(data)
    assert set(result.annotator_columns) >= {"bias", "spread", "noise_variance"}
    np.testing.assert_allclose(result.task_columns["expected_grade"],
                               model.proba_ @ np.arange(4), atol=1e-12)


def test_grade_proba_readouts() -> None:
    m, v = np.array([-1.0, 0.0, 2.0]), np.array([0.5, 1.0, 0.1])
    # readout_noise 1 in the binary case is MAGP's P(relevant) = Φ(m / sqrt(1 + v))
    p = grade_proba(m, v, np.array([0.0]), readout_noise=1.0)
    np.testing.assert_allclose(p[:, 1], ndtr(m / np.sqrt(1 + v)))
    # 0 (the default): the mass of q(f) = N(m, v) in each grade's interval, by integration
    b = np.array([-0.4, 0.5])
    p = grade_proba(m, v, b)
    edges = [-np.inf, *b, np.inf]
    for i in range(3):
        f = np.random.default_rng(i).normal(m[i], np.sqrt(v[i]), 400_000)
        mc = [np.mean((f > edges[k]) & (f <= edges[k + 1])) for k in range(3)]
        np.testing.assert_allclose(p[i], mc, atol=4e-3)
    # a posterior centred in a middle interval narrower than the probit's unit: its grade is the
    # middle one under the default, and never under readout_noise 1
    centred = grade_proba(np.array([0.05]), np.array([0.3]), b)
    assert np.argmax(centred[0]) == 1
    assert np.argmax(grade_proba(np.array([0.05]), np.array([0.3]), b, readout_noise=1.0)[0]) != 1


def test_expectations_function_shapes() -> None:
    n = 3
    ones = tf.ones(n, dtype=tf.float64)
    ve, dm, dv, resp = ordinal_expectations(
        0.1 * ones, ones, ones, -ones, 0.0 * ones, ones, ones, 0.0 * ones,
        *np.polynomial.hermite_e.hermegauss(5))
    assert ve.shape == dm.shape == dv.shape == resp.shape == (n,)
    np.testing.assert_allclose(resp.numpy(), 0.0)


def test_small_synthetic_fit_recovers_biases_and_beats_majority() -> None:
    synth = generate(300, 15, noise_level=(0.0, 1.0), redundancy=5, grades=3, bias_sd=0.6,
                     random_state=4)
    data = synth.to_annotation_data(with_features=True)
    model = OrdinalGP(n_iter=8, random_state=0).fit(data)
    assert model.fallback_ is None
    scores = evaluate(model.proba_, data.gold, classes=data.classes)
    majority = evaluate(np.eye(3)[data.counts().argmax(axis=1)], data.gold, classes=data.classes)
    assert scores is not None and majority is not None
    assert scores.kappa > majority.kappa
    assert synth.annotator_bias is not None
    assert pearsonr(model.annotator_bias_, synth.annotator_bias)[0] > 0.8


def test_competence_is_the_chance_that_a_judgment_is_the_grade() -> None:
    """grade_agreement against simulation: f_i ~ q(f_i), the grade its threshold interval, a
    judgment y = #{b_k < f + μ_j + c_j z} or, with probability ε_j, one of ξ_j; the share of
    judgments equal to the grade. A lenient grader with little noise is below a noisier
    unbiased one (1 / (1 + σ_j²) put it first), and spam lowers competence."""
    rng = np.random.default_rng(3)
    b = np.array([-0.8, 0.9])
    mean, var = rng.normal(0.0, 1.5, 60), rng.uniform(0.05, 0.8, 60)
    bias = np.array([0.0, 2.5, 0.0, -0.6])
    variance = np.array([1.0, 0.01, 0.2, 0.5])
    spam = np.array([0.0, 0.0, 0.4, 0.1])
    strategy = np.array([[1 / 3] * 3, [1 / 3] * 3, [0.1, 0.1, 0.8], [0.5, 0.3, 0.2]])
    competence = grade_agreement(mean, var, b, bias=bias, variance=variance, spam=spam,
                                 strategy=strategy, task_variance=1.0)
    n = 400_000
    for j in range(4):
        task = rng.integers(0, 60, n)
        f = mean[task] + np.sqrt(var[task]) * rng.standard_normal(n)
        grade = np.searchsorted(b, f)
        said = np.searchsorted(b, f + bias[j] + np.sqrt(2.0 + variance[j]) * rng.standard_normal(n))
        spammed = rng.random(n) < spam[j]
        said[spammed] = rng.choice(3, int(spammed.sum()), p=strategy[j])
        share = float(np.mean(said == grade))
        assert abs(competence[j] - share) < 4 * np.sqrt(share * (1 - share) / n) + 1e-3, j
    assert competence[1] < competence[0]  # lenient but precise: below the unbiased noisy one
    alike = grade_agreement(mean, var, b, bias=bias[[2, 2]], variance=variance[[2, 2]],
                            spam=np.array([0.0, 0.4]), strategy=strategy[[2, 2]])
    assert alike[1] < alike[0]


def test_fitted_competence_follows_accuracy_against_gold() -> None:
    """On graded synthetic data with planted biases, the fitted competence ranks annotators by
    their exact-grade accuracy against the gold (what /next's best-first order relies on); the
    share of probit variance 1 / (1 + σ_j²) hardly does (mean rank correlation -0.04 on these
    seeds: the biases, not the noise, set the graders apart). Without features (RF10's case;
    competence reads the same posterior and annotator parameters with the GP over features):
    four EM iterations give 0.78 (0.79 with features and eight, at twice the CPU)."""
    new, old = [], []
    for seed in (1, 2, 3):
        synth = generate(600, 30, noise_level=(0.0, 1.0), redundancy=5, grades=3, bias_sd=1.0,
                         random_state=seed)
        data = synth.to_annotation_data(with_features=False)
        columns = OrdinalGP(n_iter=4, random_state=0).fit(data).result(data).annotator_columns
        n, right = data.gold_agreement()  # every task has gold here
        keep = n >= 60  # an accuracy from enough judgments to rank by
        new.append(spearmanr(columns["competence"][keep], (right / n)[keep])[0])
        old.append(spearmanr(-columns["noise_variance"][keep], (right / n)[keep])[0])
    assert np.mean(new) > 0.7
    assert np.mean(new) > np.mean(old) + 0.3


def test_topic_intercepts_without_features() -> None:
    """Without features, class_prior_by="topic" gives each topic an intercept (LK's): on topics
    whose grade mixes differ (crowdqrels synth --topics) it calls more grades right than one
    prior for the collection."""
    synth = generate(300, 25, noise_level=(2.0, 4.0), redundancy=3, grades=3, bias_sd=0.3,
                     topics=6, topic_concentration=0.5, random_state=2)
    data = synth.to_annotation_data(with_features=False)
    fast = {"n_iter": 5, "m_step_iterations": 5, "random_state": 0}
    plain = OrdinalGP(**fast).fit(data)
    topical = OrdinalGP(class_prior_by="topic", **fast).fit(data)
    exact = [np.mean(m.labels_ == synth.truth) for m in (plain, topical)]
    assert exact[1] > exact[0] + 0.04, exact  # 0.770 against 0.687
    info = topical.result(data).info
    assert info["class_prior_by"] == "topic" and info["topic_variance"] > 0.05
    assert "class_prior_by" not in plain.info_ and "topic_variance" not in plain.info_
    with pytest.raises(ValueError, match="class_prior_by"):
        OrdinalGP(class_prior_by="document")


def test_topic_offsets_beside_features() -> None:
    """With features, class_prior_by="topic" adds one offset per topic to the GP's mean: on
    topics whose grade mixes differ it calls more grades right than one mean for the collection,
    keeps the GP over the features (kernel parameters, prediction), and a single topic is the
    collection's fit itself."""
    synth = generate(400, 25, noise_level=(4.0, 8.0), redundancy=3, grades=3, bias_sd=0.3,
                     topics=8, topic_concentration=0.5, random_state=5)
    data = synth.to_annotation_data(with_features=True)
    fast = {"n_iter": 6, "m_step_iterations": 6, "random_state": 0}
    plain = OrdinalGP(**fast).fit(data)
    topical = OrdinalGP(class_prior_by="topic", **fast).fit(data)
    exact = [np.mean(m.labels_ == synth.truth) for m in (plain, topical)]
    assert exact[1] > exact[0] + 0.03, exact
    info = topical.result(data).info
    assert info["class_prior_by"] == "topic" and "kernel_parameters" in info
    assert info["topic_offsets"]["n_topics"] == 8 and info["topic_offsets"]["sd"] > 0.1
    assert "topic_offsets" not in plain.info_
    # The offsets follow the planted mixes: a topic's offset rises with its share of grade 2.
    offsets = topical.core_.mean_function.offsets.numpy()
    assert synth.topic_mix is not None
    assert pearsonr(offsets, synth.topic_mix[:, 2] - synth.topic_mix[:, 0])[0] > 0.7

    # Prediction: a seen topic's offset moves the grades; an unseen or missing topic gets the
    # prior (offset 0, variance added), the same for both.
    X = data.features[:3]
    low, high = np.argmin(offsets), np.argmax(offsets)
    topics = topical.topics_
    p_low = topical.predict_proba(X, [topics[low]] * 3)
    p_high = topical.predict_proba(X, [topics[high]] * 3)
    assert np.all(p_high[:, 2] > p_low[:, 2])
    np.testing.assert_allclose(topical.predict_proba(X, ["no-such-topic"] * 3),
                               topical.predict_proba(X), atol=1e-12)
    with pytest.raises(ValueError, match="one topic per task"):
        topical.predict_proba(X, [topics[0]])

    # an identity of the two paths, for any size and number of iterations: a small short fit
    one = generate(100, 10, noise_level=(2.0, 4.0), redundancy=3, grades=3,
                   random_state=1).to_annotation_data(with_features=True)
    short = {"n_iter": 2, "m_step_iterations": 2, "random_state": 0}
    same = [OrdinalGP(class_prior_by=by, **short).fit(one) for by in ("collection", "topic")]
    np.testing.assert_allclose(same[0].proba_, same[1].proba_, atol=1e-10)
    assert same[1].topics_ is None and "class_prior_by" not in same[1].info_
