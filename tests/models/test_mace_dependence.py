"""MACE on dense panels: the panel's design effect (``models.dependence.panel_weights``), the
weighted E step, and majority vote held on mixed data (issue #38)."""

from __future__ import annotations

import numpy as np
import pytest

from models.dawid_skene import DawidSkene
from models.dependence import panel_weights, tempering
from models.mace import MACE, _e_step, _Judgments
from models.majority_vote import MajorityVote
from models.synthetic import crowd_dataset, judges_dataset, mixed_dataset


def test_panel_weights_temper_the_panel_only() -> None:
    """On a pure panel the weights are the task's τ_i; on mixed data the sparse annotators'
    judgments keep 1 and the panel's τ counts the panel's judgments of the task only."""
    s = judges_dataset(50, 12, random_state=1)
    w = panel_weights(s.task, s.annotator, 50, 12, 0.1)
    assert np.allclose(w, tempering(s.task, 50, 0.1)[s.task])
    m = mixed_dataset(300, 12, experts=3, random_state=1)
    w = panel_weights(m.task, m.annotator, 300, m.annotator_noise.shape[0], 0.1)
    # the panel: every judge who judged at least half the tasks (the 12 LLM judges, and on a
    # power-law crowd its busiest worker or two)
    dense = np.bincount(m.annotator) >= 150
    assert np.all(dense[m.kind == "llm"]) and not np.all(dense[m.kind != "llm"])
    panel = dense[m.annotator]
    m_i = np.bincount(m.task[panel], minlength=300)
    assert np.all(w[~panel] == 1.0)
    assert np.allclose(w[panel], (1.0 / (1.0 + (m_i - 1) * 0.1))[m.task[panel]])
    assert np.all(m_i >= 12)
    assert np.all(panel_weights(m.task, m.annotator, 300, m.annotator_noise.shape[0], -0.2) == 1)


@pytest.mark.parametrize("k", [2, 4])
def test_weighted_e_step_with_unit_weights_is_the_sweep(k: int) -> None:
    """Weights of 1 give the unweighted sweep's posterior, likelihood and counts; weights of ½
    halve the expected counts' evidence (the log joint halves before normalising)."""
    rng = np.random.default_rng(k)
    s = crowd_dataset(200, 20, grades=k, random_state=3)
    data = s.to_annotation_data(with_features=False)
    idx = _Judgments.from_data(data, None)
    knowing = rng.dirichlet([1, 1], data.n_annotators)
    spam = rng.dirichlet(np.ones(k), data.n_annotators)
    log_prior = np.full(k, -np.log(k))
    ll, proba, counts = _e_step(idx, knowing, spam, log_prior)
    ones = _e_step(idx.weighted(0.0), knowing, spam, log_prior)
    assert ones[0] == pytest.approx(ll, rel=1e-12)
    assert np.allclose(ones[1], proba, rtol=0, atol=1e-12)
    for a, b in zip(ones[2], counts, strict=True):
        assert np.allclose(a, b, rtol=0, atol=1e-9)
    from dataclasses import replace
    half = replace(idx, weight=np.full(data.n_judgments, 0.5))
    _, proba_half, _ = _e_step(half, knowing, spam, log_prior)
    logit = np.log(proba[:, :1] / proba)  # the tempered posterior's log odds are half
    assert np.allclose(np.log(proba_half[:, :1] / proba_half), 0.5 * logit, atol=1e-8)


def test_mace_holds_majority_vote_on_mixed_data() -> None:
    """A sparse unbiased crowd beside a dense lenient correlated panel: with the panel's
    design effect MACE is above majority vote; counting the panel as independent (what MACE did
    before) it fell below (here .604 against MV .624; bench: −.021 to −.046). MACE's nominal
    fit (``knowing="exact"``): the default's ordinal variant is tempered the same way."""
    s = mixed_dataset(1000, 12, judge_correlation=0.6, leniency=0.5, noise=0.8, experts=0,
                      random_state=1)
    data = s.to_annotation_data(with_features=False)
    mv = float(np.mean(MajorityVote().fit(data).labels_ == s.truth))
    fitted = MACE(random_state=0, temper_folds=0, knowing="exact").fit(data)
    ignored = MACE(random_state=0, temper_folds=0, dependence="ignore",
                   knowing="exact").fit(data)
    assert fitted.tempered_ and not ignored.tempered_
    # the design correlation is DS's, estimated once
    assert fitted.dependence_rho_ == pytest.approx(DawidSkene(temper_folds=0).fit(data)
                                                   .dependence_rho_)
    assert fitted.result(data).info["dependence_rho"] == pytest.approx(fitted.dependence_rho_)
    assert float(np.mean(fitted.labels_ == s.truth)) >= mv + 0.02
    assert float(np.mean(ignored.labels_ == s.truth)) < mv


def test_sparse_crowd_is_untouched() -> None:
    """3 judgments per task: no weights, the same fit as ``dependence="ignore"``, bit for bit."""
    s = crowd_dataset(400, 40, grades=4, random_state=2)
    data = s.to_annotation_data(with_features=False)
    auto = MACE(random_state=0).fit(data)
    ignored = MACE(random_state=0, dependence="ignore").fit(data)
    assert not auto.tempered_ and "dependence_rho" not in auto.result(data).info
    assert np.array_equal(auto.proba_, ignored.proba_)


def test_pure_panel_is_left_as_it_was() -> None:
    """Every judgment a panel judge's: the same τ_i on every judgment of a task moves no vote
    of MACE's nominal fit (uniform class prior), so that fit is MACE's own (no ρ̄ estimated).
    The ordinal variant (the default on graded panels) learns its class prior, against which
    τ_i weighs: it is tempered."""
    s = judges_dataset(300, 12, judge_correlation=0.6, leniency=0.5, random_state=1)
    data = s.to_annotation_data(with_features=False)
    auto = MACE(random_state=0, temper_folds=0, knowing="exact").fit(data)
    ignored = MACE(random_state=0, temper_folds=0, dependence="ignore",
                   knowing="exact").fit(data)
    assert not auto.tempered_
    assert np.array_equal(auto.proba_, ignored.proba_)
    ordinal = MACE(random_state=0, temper_folds=0, n_restarts=2).fit(data)
    assert ordinal.ordinal_ and ordinal.tempered_ and ordinal.dependence_rho_ > 0


def test_readout_half_fits_take_the_full_fits_rho(monkeypatch: pytest.MonkeyPatch) -> None:
    """The read-out's half fits weight the panel by the full fit's ρ̄: DS's estimate (and its
    task-effect fit) runs once per fit, not once per half as well."""
    from models import design_effect

    s = mixed_dataset(300, 12, judge_correlation=0.6, leniency=0.5, experts=0, random_state=1)
    data = s.to_annotation_data(with_features=False)
    calls = []
    monkeypatch.setattr(design_effect, "task_effect_correlation",
                        lambda data, use_gold=False: calls.append(1) or 0.15)
    model = MACE(random_state=0, temper_folds=2).fit(data)
    assert len(calls) == 1 and model.dependence_rho_ == pytest.approx(0.15)
    assert model.temperature_ != 1.0  # the read-out ran its half fits
