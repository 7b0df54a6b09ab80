"""MACE, Multi-Annotator Competence Estimation (Hovy, Berg-Kirkpatrick, Vaswani & Hovy, NAACL 2013).

Generative story: the true label T_i ~ Uniform(K); annotator j knows it with probability θ_j and
then copies it, else it "spams" a label from its own distribution ξ_j:

    P(y_a = l | T_i = t) = (1 - θ_j) ξ_jl + θ_j [t = l]

EM maximises the marginal log-likelihood  Σ_i log Σ_t P(t) Π_{a ∈ i} P(y_a | t)  with ``smoothing``
added to the fractional counts (MACE.java default 0.01 / K); random restarts keep the run with
the best log-likelihood. ``variant="vb"`` is the variational-Bayes variant of the paper: priors
Beta(alpha, beta) on (spamming, knowing) and Dirichlet(strategy_prior) on ξ_j, and the M step
takes exp(ψ(counts + prior)) / exp(ψ(Σ counts + prior)) (ψ: digamma) instead of normalising.
Options follow MACE.java: control (gold) labels held fixed (``use_gold``); ``threshold`` keeps
only the share of tasks with the lowest posterior entropy (the others are flagged unselected).

The class prior (``class_prior``): MACE's uniform one, or learned (per topic by default, the
topics' priors shrunk towards each other by a type-II ML Dirichlet, ``models.dirichlet``) with,
under VB, every ξ_j shrunk towards the crowd's pooled spam distribution instead of the uniform
one, so that a leniency the whole crowd shares is not read as a class prior. ``"auto"`` (the
default) fits both from the same random starts and keeps the one with the higher Bayesian
information criterion, log-likelihood − ½ d ln n (d: the learned prior's free parameters,
n: judged tasks; Schwarz 1978): MACE's uniform prior unless the judgments call for another
(docs/models.md, "Sparse skewed crowds: MACE's uniform prior"). Dense judgments (at least
``models.dependence.DENSE`` per judged task: judges who all grade every task) keep the uniform
prior: there the prior moves a posterior of many judgments little, the skew failure it mends is a
sparse crowd's (one rare vote deciding a task), and what the learned prior would absorb is the
judges' shared leniency (measured: −.076 on dense lenient judges, docs/models.md).

The crowd's prior on the competences (``competence_strength``): under VB θ_j ~ Beta(α + s (1 − θ̄),
β + s θ̄), θ̄ the crowd's pooled share of judgments that knew. MACE's own U-shaped Beta(.5, .5)
lets EM spread the θ_j far wider than the annotators differ (overconfident posteriors on weak
crowds, and labels below majority vote's); s pulls them together. Its strength is chosen on two
classes by the read-out's held-out judgments (``models.tempering.crossfit_score``) among
``STRENGTHS``, 0 included, the strongest within one standard error of the best (the default
since 2026-12-02; 0, MACE's own prior, before): not by type-II
ML, whose evidence (the latent knowing counts taken as data) calls every worker of a skewed crowd
alike (docs/models.md, "MACE's competence prior").

Everything is a gather or a segment sum over judgments (np.bincount): no tasks × annotators array.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Any, Literal, Self

import numpy as np
from scipy.special import digamma

from models.base import AggregationResult, Aggregator, ProgressCallback, no_progress
from models.data import UNKNOWN, AnnotationData
from models.dependence import Dependence, panel_judges, panel_weights, wanted
from models.dirichlet import ClassPrior, Grouping, e_log_dirichlet
from models.params import (
    MAX_PRIOR,
    Iterations,
    Prior,
    Range,
    Restarts,
    Seed,
    TemperFolds,
    Tolerance,
    validated,
)
from models.tempering import (
    check_folds,
    clone,
    crossfit,
    temper_readout,
    within_one_standard_error,
)
from models.warm import cold_check_due, result_column, warm_record

Variant = Literal["em", "vb"]  # EM with smoothing, or variational Bayes with priors
ClassPriorKind = Literal["auto", "learned", "uniform"]
# what a knowing annotator reports: the truth (MACE's model), or the truth up to one grade
# (``models.mace_ordinal``); "auto": the latter on a dense panel's ordinal scale of ≥ 3 grades
Knowing = Literal["auto", "exact", "ordinal"]
WARM_TOL = 1e-5  # log-likelihood gain per judgment below which a warm start stops
# the strengths (pseudo-judgments) of the crowd's prior on θ_j that ``competence_strength=None``
# chooses among by cross-fitting: 0 (MACE's own prior) and factors of 4 up to 256, more
# than any grid or crowd annotator's judgments need to be called alike
STRENGTHS = (0.0, 1.0, 4.0, 16.0, 64.0, 256.0)


def mace_pseudo_counts(variant: str, smoothing: float, alpha: float, beta: float,
                       strategy_prior: float, class_prior: str, spam_counts: np.ndarray,
                       strength: float = 0.0, knowing_counts: np.ndarray | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
    """(on (spamming, knowing) (2,), on ξ_j (K,)): the pseudo-counts MACE's M step adds to the
    expected counts. EM: ``smoothing`` on every cell. VB: Beta(``alpha``, ``beta``) and
    Dirichlet(``strategy_prior``) (uniform), or with a learned class prior ξ_j shrunk towards
    the crowd's pooled spam distribution (of ``spam_counts`` (A, K), + 1 each) with strength
    K · ``strategy_prior``. The one definition of MACE's prior: the fit's M step and its
    parameter draws (``models.evaluation.parameters``)."""
    k = spam_counts.shape[1]
    pool = np.zeros(2)
    if strength > 0 and knowing_counts is not None:
        share = knowing_counts.sum(axis=0) + 1.0  # (spamming, knowing), + 1 each
        pool = strength * share / share.sum()
    if variant == "em":
        return np.full(2, smoothing) + pool, np.full(k, smoothing)
    if class_prior == "uniform":
        return np.array([alpha, beta]) + pool, np.full(k, strategy_prior)
    pooled = spam_counts.sum(axis=0) + 1.0
    return np.array([alpha, beta]) + pool, (strategy_prior * k / pooled.sum()) * pooled


class MACE(Aggregator):
    """Hovy et al. (2013). ``competence_`` is θ_j, ``spam_dist_`` is ξ_j, ``proba_`` P(T_i)."""

    method = "mace"

    @validated
    def __init__(
        self,
        variant: Variant = "vb",
        n_restarts: Restarts = 10,
        n_iter: Iterations = 50,
        tol: Tolerance = 0.0,
        smoothing: Annotated[float | None, Range(0.0, MAX_PRIOR)] = None,
        alpha: Prior = 0.5,
        beta: Prior = 0.5,
        strategy_prior: Prior = 10.0,
        use_gold: bool = False,
        threshold: Annotated[float, Range(0.0, 1.0, low_open=True)] = 1.0,
        random_state: Seed = None,
        class_prior: ClassPriorKind = "auto",
        class_prior_by: Grouping = "topic",
        temper_folds: TemperFolds = 2,
        competence_strength: Annotated[float | None, Range(0.0, MAX_PRIOR)] = None,
        dependence: Dependence = "auto",
        knowing: Knowing = "auto",
        halving: bool = False,
    ) -> None:
        self.knowing = knowing
        self.halving = halving
        self.competence_strength = competence_strength
        self.dependence = dependence
        self.temper_folds = check_folds(temper_folds)
        self.class_prior = class_prior
        self.class_prior_by = class_prior_by
        self.variant = variant
        self.n_restarts = n_restarts
        self.n_iter = n_iter
        self.tol = tol
        self.smoothing = smoothing
        self.alpha = alpha
        self.beta = beta
        self.strategy_prior = strategy_prior
        self.use_gold = use_gold
        self.threshold = threshold
        self.random_state = random_state

    # -- fitting -----------------------------------------------------------------------------
    def fit(self, data: AnnotationData, progress: ProgressCallback = no_progress, *,
            init: MACE | None = None, check: bool | None = None,
            only_draw: int | None = None, dependence_rho: float | None = None) -> Self:
        """EM (or VB) with ``n_restarts`` random restarts; with ``init`` (a fitted MACE, e.g. on an
        earlier snapshot of the same collection) one warm restart from its competences and spam
        distributions (matched by annotator id; a new annotator gets their mean) instead, stopping
        once an iteration gains less than max(tol, WARM_TOL) log-likelihood per judgment. When
        ``models.warm.cold_check_due`` says so (``check``: True always, False never, None by the
        growth of the judgments since the last check) the random restarts of a cold fit run too,
        with the same draws, and the restart with the best log-likelihood is kept, warm or not;
        ``start_`` says which. ``only_draw``: of the cold fit's random starts only that one
        (0-based) runs, the others drawn and skipped (the read-out's half fits,
        ``warm_half_fit``).

        ``competence_strength`` None (the default since 2026-12-02; before, 0, MACE's own
        prior: docs/models.md, "MACE's competence prior"): on two classes the strength s of the
        crowd's prior on θ_j is chosen by cross-fitting (``_choose_strength``) among
        ``STRENGTHS``, 0 (MACE's own Beta(alpha, beta)) included, under VB (EM stays MACE.java's
        maximum likelihood); on K ≥ 3 classes, or without the read-out's folds
        (``temper_folds`` 0), s = 0 (MACE's model is then narrower than
        the errors of a graded crowd, and the judgments it predicts best are not the truth's:
        docs/models.md, "MACE's competence prior"); a number: that strength.
        ``competence_strength_`` is the one used.

        ``dependence`` (``models.dependence``; "auto": dense judgments only): each panel
        judge's judgment of task i counts τ_i = 1 / (1 + (m_i − 1) ρ̄) in the E and M steps
        (``panel_weights``: m_i the panel's judgments of the task, ρ̄ DS's design correlation,
        ``models.design_effect``), a sparse annotator's 1; ``dependence_rho``: that ρ̄ instead
        of estimating it (the read-out's half fits take the full fit's)."""
        self.ordinal_ = self._wants_ordinal(data)
        self._set_dependence(data, dependence_rho)
        if self.ordinal_:
            self._fit_ordinal(data, only_draw)
            temper_readout(self, data, self.temper_folds, self.random_state)
            return self
        strength = self.competence_strength
        folds = self.temper_folds
        if (strength is None and self.variant == "vb" and data.n_classes == 2 and folds >= 2
                and data.n_judgments > 0):
            # a warm start keeps the strength its init chose (no search: a warm refit's
            # half fits would be cold ones, every restart for every strength) until its cold
            # check is due, which chooses again
            given = (None if init is None or cold_check_due(init, data.n_judgments, check)
                     else getattr(init, "competence_strength_", None))
            if given is None:
                return self._choose_strength(data, progress, init, check, only_draw)
            strength = float(given)
        self._fit_at(data, 0.0 if strength is None else float(strength), progress, init,
                     check, only_draw)
        temper_readout(self, data, folds, self.random_state)  # gold-free read-out
        return self

    def _set_dependence(self, data: AnnotationData, rho: float | None) -> None:
        """``dependence_rho_`` and ``tempered_``: whether (and by which ρ̄) the fit weights a
        dense panel's judgments by their design effect. ρ̄ is DS's (the larger of the
        majority-vote start's residual correlation and, on an ordinal scale, the task-effect
        model's: ``DawidSkene``'s ``dependence_rho_`` on the same data), estimated once per
        fit; ρ̄ ≤ 0 leaves the fit as it was."""
        self.dependence_rho_ = 0.0
        # a pure panel (every judgment a panel judge's) is left as it was by the nominal fit:
        # there every judgment of a task gets the same τ_i, which moves no task's vote at given
        # parameters (MACE keeps its uniform class prior on dense data), only the M step's
        # counts (−.026 to +.004 on the 9 panels of bench_robust.py judges; docs/models.md).
        # The ordinal variant learns its class prior, against which τ_i does weigh the
        # evidence, as for DS: it is tempered on pure panels too.
        if (data.n_judgments and wanted(self.dependence, data.task)
                and (getattr(self, "ordinal_", False)
                     or not np.all(panel_judges(data.task, data.annotator, data.n_tasks,
                                                data.n_annotators)[data.annotator]))):
            if rho is None:
                # DS's estimate, not a second one (models.dawid_skene imports no MACE)
                from models.dawid_skene import SPARSE_SMOOTHING, Judgments

                gold = data.gold if (self.use_gold and data.gold is not None) else None
                rho = Judgments.from_data(data, gold).adjusted_for_dependence(
                    data, gold, SPARSE_SMOOTHING).rho
            self.dependence_rho_ = float(rho)
        self.tempered_ = self.dependence_rho_ > 0

    def _wants_ordinal(self, data: AnnotationData) -> bool:
        """Whether this fit is ``models.mace_ordinal``'s: ``knowing`` "ordinal" (on any K ≥ 3),
        or "auto" on a dense panel's ordinal scale of at least three grades."""
        from models import mace_ordinal

        if self.knowing == "exact" or data.n_classes < mace_ordinal.MIN_GRADES:
            return False
        return self.knowing == "ordinal" or mace_ordinal.ordinal_wanted(data)

    def _fit_ordinal(self, data: AnnotationData, only_draw: int | None) -> None:
        """The ordinal variant's fit (``models.mace_ordinal``): MACE's random restarts (the
        same draws of θ_j and ξ_j, δ_j at its prior mean), uniform class prior, a dense
        panel's design-effect weights on mixed data as the nominal fit's, the restart of the
        highest log-likelihood kept. A warm ``init`` is not used (a stored nominal fit has no
        δ_j): the fit is cold, as its record says."""
        from models import mace_ordinal

        k = data.n_classes
        smoothing = 0.01 / k if self.smoothing is None else float(self.smoothing)
        gold = data.gold if (self.use_gold and data.gold is not None) else None
        weight = (panel_weights(data.task, data.annotator, data.n_tasks, data.n_annotators,
                                self.dependence_rho_) if self.tempered_ else None)
        model = mace_ordinal.OrdinalMACE(
            data, weight, variant=self.variant, alpha=self.alpha, beta=self.beta,
            strategy_prior=self.strategy_prior, smoothing=smoothing, gold=gold)
        rng = np.random.default_rng(self.random_state)
        priors = ["uniform", "learned"] if self.class_prior == "auto" else [self.class_prior]
        best: dict[str, mace_ordinal.Fit] = {}
        restart_ll: dict[str, list[float]] = {prior: [] for prior in priors}
        for draw in range(self.n_restarts):
            start = mace_ordinal.random_start(rng, data.n_annotators, k, smoothing)
            if only_draw is not None and draw != only_draw:
                continue
            for prior in priors:
                # "auto": the learned prior starts where the uniform one ended, as MACE's
                fitted = model.run(*start, self.n_iter, self.tol, draw, prior == "learned")
                start = (fitted.competence, fitted.shift, fitted.spam)
                restart_ll[prior].append(fitted.log_likelihood)
                if prior not in best or fitted.log_likelihood > best[prior].log_likelihood:
                    best[prior] = fitted
        # Schwarz's criterion, as the nominal fit's: K − 1 free parameters for a learned prior
        n_judged = max(int(np.count_nonzero(data.judgments_per_task())), 1)
        self.class_prior_scores_ = {
            prior: model.log_likelihood(best[prior])
            - (0.0 if prior == "uniform" else 0.5 * (k - 1) * np.log(n_judged))
            for prior in best}
        chosen = max(best, key=lambda p: self.class_prior_scores_[p])
        self.class_prior_used_ = chosen
        self.class_prior_groups_ = 1
        fit = best[chosen]
        self.prior_ = fit.prior
        self.competence_strength_ = 0.0
        self.strength_scores_ = {}
        self.restart_log_likelihoods_ = restart_ll[chosen]
        self.start_draw_ = fit.draw
        self.start_ = "cold"
        self.cold_checked_, self.cold_checked_at_ = False, data.n_judgments
        self.log_likelihood_ = fit.log_likelihood
        self.loss_history_ = [-v / max(data.n_judgments, 1) for v in fit.history]
        self.objective_history_ = fit.history
        self.annotator_ids_ = data.annotator_ids
        self.competence_ = fit.competence[:, 1] / fit.competence.sum(axis=1)
        self.shift_ = fit.shift / fit.shift.sum(axis=1, keepdims=True)
        self.spam_dist_ = fit.spam / fit.spam.sum(axis=1, keepdims=True)
        self._set_posterior(fit.proba, data)

    def _choose_strength(self, data: AnnotationData, progress: ProgressCallback,
                         init: MACE | None, check: bool | None, only_draw: int | None
                         ) -> Self:
        """The crowd's prior on θ_j, Beta(α + s (1 − θ̄), β + s θ̄) on (spamming, knowing)
        (θ̄ the crowd's pooled share of judgments that knew, re-estimated at every M step), with
        its strength s chosen by how well it predicts held-out judgments: for each s of
        ``STRENGTHS`` the read-out's cross-fit (``models.tempering.crossfit``: fits on
        the other folds of tasks, from the random start the s = 0 fit kept, predict every
        judgment of a held-out task from the task's other judgments, at the best τ), the
        largest s whose held-out loss is within one standard error of the lowest kept
        (``models.tempering.within_one_standard_error``: a pooled crowd is the simpler model,
        and a gain the folds cannot tell from noise does not buy a θ_j per worker); the fit
        on all the data at that s from the same start,
        and its τ the read-out's. Type-II ML would not do: on a skewed crowd its evidence, the
        expected knowing counts, calls every worker alike (docs/models.md, "MACE's competence
        prior")."""
        self._fit_at(data, 0.0, progress, init, check, only_draw)
        draw = self.start_draw_
        warm = self.warm_half_fit
        # a pooled prior's runs stop once an iteration gains little, as a warm start's: they
        # settle in a few iterations (s = 0 keeps the read-out's own half fits, bit for bit)
        pooled_tol = max(self.tol, WARM_TOL)

        def score(s: float) -> tuple[tuple[float, float], np.ndarray]:
            # (τ, loss) and the per-task losses; the folds' judgment tables (K × n a fold) go
            # with the call, before the next strength's are built
            folds = crossfit(
                lambda: clone(self, temper_folds=0, competence_strength=s,
                              tol=self.tol if s == 0 else pooled_tol), data,
                self.temper_folds, self.random_state, warm)
            return folds.score, folds.task_losses()

        scores: dict[float, tuple[float, float]] = {}
        per_task = []
        for s in STRENGTHS:
            scores[s], losses = score(s)
            per_task.append(losses)
        # the strongest pooling (the simplest model) the held-out judgments cannot tell from
        # the best strength: one standard error of the per-task paired difference
        chosen = STRENGTHS[within_one_standard_error(per_task, data.judgments_per_task() > 0)]
        if chosen > 0:
            # the procedure whose held-out loss was measured: the kept random start (a warm
            # start's: the warm one), at the chosen strength
            checked = (self.cold_checked_, self.cold_checked_at_)
            if draw >= 0:
                self._fit_at(data, chosen, no_progress, None, None, draw, pooled_tol)
            else:
                self._fit_at(data, chosen, no_progress, init, False, None, pooled_tol)
            self.start_draw_ = draw
            self.cold_checked_, self.cold_checked_at_ = checked
        self.strength_scores_ = {s: loss for s, (_, loss) in scores.items()}
        temper_readout(self, data, self.temper_folds, self.random_state,
                       tau=scores[chosen][0])
        return self

    def _fit_at(self, data: AnnotationData, strength: float, progress: ProgressCallback,
                init: MACE | None, check: bool | None, only_draw: int | None,
                cold_tol: float | None = None) -> None:
        """The fit of ``fit`` at the competence prior's strength ``strength``, no read-out;
        ``cold_tol`` the random starts' ``tol`` (None: ``self.tol``)."""
        self.competence_strength_ = strength
        self.strength_scores_: dict[float, float] = {}
        k = data.n_classes
        smoothing = 0.01 / k if self.smoothing is None else float(self.smoothing)
        gold = data.gold if (self.use_gold and data.gold is not None) else None
        idx = _Judgments.from_data(data, gold)
        if self.tempered_:
            idx = idx.weighted(self.dependence_rho_)
        rng = np.random.default_rng(self.random_state)
        checked = init is None or cold_check_due(init, data.n_judgments, check)
        priors = ([self.class_prior] if self.class_prior != "auto"
                  else ["uniform"] if wanted("auto", data.task) else ["uniform", "learned"])
        # "auto" runs both priors from each start: half the starts keep the cost of one prior's.
        n_cold = -(-self.n_restarts // len(priors)) if checked else 0
        # The warm restart first, then the cold fit's random ones (a cold fit: only those).
        starts = ([] if init is None else ["warm"]) + ["cold"] * n_cold
        # more than one topic among the judged tasks (only a learned prior reads it; a
        # comparison with the first, not np.unique's sort of every task's topic string)
        judged_topics = data.topic_ids[idx.judged] if "learned" in priors else data.topic_ids[:0]
        grouped = (self.class_prior_by == "topic" and judged_topics.shape[0] > 0
                   and bool(np.any(judged_topics != judged_topics[0])))

        best: dict[str, _Run] = {}
        restart_ll: dict[str, list[float]] = {prior: [] for prior in priors}
        # the random starts, drawn in order (a warm start draws none); ``only_draw``: that one
        draws = []
        for draw in range(n_cold):
            knowing0, spam0 = _random_start(rng, data.n_annotators, k, smoothing)
            if only_draw is None or draw == only_draw:
                draws.append((draw, knowing0, spam0))
        cold_tol = self.tol if cold_tol is None else cold_tol
        race = self.halving and len(draws) > 1
        n_runs = len(starts) * len(priors)
        runs = ((1 if init is not None else 0) + (0 if race else len(draws))) * len(priors)
        work = max((runs + (len(priors) - 1 if race else 0)) * self.n_iter
                   + (_race_work(len(draws), self.n_iter) if race else 0), 1)
        done = [0]  # E steps run so far, for the progress callback

        def report(it: int, ll: float, r: int) -> None:
            done[0] += 1
            progress(min(done[0] / work, 1.0),
                     f"restart {r + 1}/{n_runs}, log-likelihood {ll:.2f}")

        def topics_for(prior: str) -> ClassPrior | None:
            # a fresh per-topic prior each run: its Dirichlet ν₀ is re-fitted as EM goes
            return (ClassPrior.build(data, "topic", 1.0, idx.judged, True)
                    if prior == "learned" and grouped else None)

        def chain(knowing0: np.ndarray, spam0: np.ndarray, start: str, draw: int, tol: float,
                  r: int, first: _Run | None = None) -> None:
            """The priors in turn from one start, each from where the last ended ("auto": the
            learned prior starts where MACE's uniform one ended, its generalisation, from a
            solution that keeps every class in use); ``first``: the first prior's run, done."""
            for n, prior in enumerate(priors):
                if n == 0 and first is not None:
                    fitted = first
                else:
                    fitted = replace(self._em(idx, knowing0, spam0, smoothing, prior,
                                              topics_for(prior), strength, tol,
                                              lambda it, ll, r=r + n: report(it, ll, r),
                                              start, data.n_judgments), draw=draw)
                knowing0, spam0 = fitted.knowing, fitted.spam
                if n > 0 or first is None:
                    restart_ll[prior].append(fitted.log_likelihood)
                if prior not in best or fitted.log_likelihood > best[prior].log_likelihood:
                    best[prior] = fitted

        if init is not None:  # the warm restart first, then the cold fit's random ones
            knowing0, spam0 = _aligned_parameters(init, data)
            # A warm start begins near the optimum: stop once an iteration gains little.
            chain(knowing0, spam0, "warm", -1, max(self.tol, WARM_TOL), 0)
        base = len(priors) if init is not None else 0
        if race:
            # successive halving of the random starts on the first prior's run; the rest of
            # the priors from the survivor only
            lls, winner = self._race(idx, draws, smoothing, priors, topics_for, strength,
                                     cold_tol, lambda it, ll, r: report(it, ll, base + r),
                                     data.n_judgments)
            restart_ll[priors[0]].extend(lls)
            chain(winner.knowing, winner.spam, "cold", winner.draw, cold_tol, base, winner)
        else:
            for n, (draw, knowing0, spam0) in enumerate(draws):
                chain(knowing0, spam0, "cold", draw, cold_tol, base + n * len(priors))
        chosen = self._choose_prior(idx, best, k)
        self.restart_log_likelihoods_ = restart_ll[chosen]  # the kept prior's restarts
        self.start_draw_ = best[chosen].draw  # the kept run's random start (-1: warm)
        self.cold_checked_ = init is not None and checked
        self.cold_checked_at_ = (data.n_judgments if checked
                                 else int(getattr(init, "cold_checked_at_", 0)))
        self._store(data, idx, best[chosen])

    def _em(self, idx: _Judgments, knowing: np.ndarray, spam: np.ndarray, smoothing: float,
            prior: str, topics: ClassPrior | None, strength: float, tol: float,
            report: Callable[[int, float], None], start: str, n_judgments: int) -> _Run:
        """One restart's EM (VB) from (knowing, spam), MACE's uniform prior in the first E step,
        until an iteration gains at most ``tol`` per judgment."""
        # one set of per-task arrays for the run: each E step overwrites the last one's
        # posterior, which only the M step before it reads
        run = _Chain.begin(idx, knowing, spam, topics, _Buffers.empty(idx), [None])
        self._advance(run, idx, self.n_iter, smoothing, prior, strength, tol, report,
                      n_judgments)
        return run.result(start)

    def _advance(self, run: _Chain, idx: _Judgments, until: int, smoothing: float, prior: str,
                 strength: float, tol: float, report: Callable[[int, float], None],
                 n_judgments: int) -> None:
        """``run``'s EM (VB) iterations up to iteration ``until`` (of ``n_iter``), stopping
        early once an iteration gains at most ``tol`` per judgment."""
        history = run.history
        for it in range(len(history) - 1, until):
            if run.stopped:
                return
            knowing, spam, log_prior = self._m_step(run.counts, smoothing, prior, run.proba,
                                                    run.topics, strength)
            run.step(idx, knowing, spam, log_prior)
            report(it + 1, run.ll)
            if tol > 0 and abs(history[-1] - history[-2]) <= tol * n_judgments:
                run.stopped = True

    def _race(self, idx: _Judgments, draws: list[tuple[int, np.ndarray, np.ndarray]],
              smoothing: float, priors: list[str],
              topics_for: Callable[[str], ClassPrior | None], strength: float, tol: float,
              report: Callable[[int, float, int], None], n_judgments: int
              ) -> tuple[list[float], _Run]:
        """Successive halving (Jamieson & Talwalkar 2016) of the random starts' runs at the
        first of ``priors``: every start runs to the first rung of ``_rungs``, the better half
        (ceil; the earlier draw first of equals) to the next, ..., the last one to ``n_iter``.
        (log-likelihood each start reached, in draw order; the survivor's run.) "Better": the
        higher log-likelihood, or with a second prior (``"auto"``: the learned one, which
        the survivor's fit goes on with) the log-likelihood after one step of it (an M step at
        that prior from the run's counts and an E step; the run itself left where it was): the
        uniform prior's own ranking does not foresee where the learned one ends best.
        The runs share one set of per-task arrays: a suspended run keeps its expected counts
        (and its posterior only when the M step reads it, a per-topic prior's)."""
        prior, then = priors[0], (priors[1] if len(priors) > 1 else None)
        out = _Buffers.empty(idx)
        writer: list[int | None] = [None]  # id() of the run whose E step ``out`` holds
        runs = []
        for _, knowing, spam in draws:
            runs.append(_Chain.begin(idx, knowing, spam, topics_for(prior), out, writer))
            runs[-1].suspend()
        alive = list(range(len(runs)))
        score = [0.0] * len(runs)
        for rung in (*_rungs(len(runs), self.n_iter), self.n_iter):
            for r in alive:
                run = runs[r]
                self._advance(run, idx, rung, smoothing, prior, strength, tol,
                              lambda it, ll, r=r: report(it, ll, r), n_judgments)
                score[r] = run.ll
                if then is not None and len(alive) > 1:
                    if writer[0] != id(run):  # it ran no step: its posterior again
                        run.redo(idx)
                    probe = self._m_step(run.counts, smoothing, then, run.proba,
                                         topics_for(then), strength)
                    run.suspend()  # before the probe's E step overwrites ``out``
                    score[r] = _e_step(idx, *probe, out)[0]
                    writer[0] = None
                run.suspend()
            if len(alive) == 1:
                break
            ranked = sorted(alive, key=lambda r: -score[r])  # stable: earlier draws first
            alive = sorted(ranked[:(len(alive) + 1) // 2])
        survivor = runs[alive[0]]
        if writer[0] == id(survivor):
            survivor.proba = out.proba
        else:  # its posterior again, at its parameters (the same bits)
            survivor.redo(idx)
        result = replace(survivor.result("cold"), draw=draws[alive[0]][0])
        return [run.ll for run in runs], result

    def _choose_prior(self, idx: _Judgments, best: dict[str, _Run], k: int) -> str:
        """Schwarz's criterion between the priors, at each one's best restart: the
        log-likelihood at the normalised parameters (VB's exp-digamma weights are not) less
        ½ ln n per free parameter: K − 1 per group's prior, and under VB K − 1 for the pooled
        spam distribution. Sets ``class_prior_scores_``, ``class_prior_used_`` and
        ``class_prior_groups_``."""
        n_judged = max(int(idx.judged.sum()), 1)
        self.class_prior_scores_ = {}
        for prior, fit in best.items():
            free = 0 if prior == "uniform" else (k - 1) * (
                fit.groups + (1 if self.variant == "vb" else 0))
            self.class_prior_scores_[prior] = (
                _e_step(idx, *fit.normalised())[0] - 0.5 * free * np.log(n_judged))
        chosen = max(best, key=lambda p: self.class_prior_scores_[p])
        self.class_prior_used_ = chosen
        self.class_prior_groups_ = best[chosen].groups
        return chosen

    def _store(self, data: AnnotationData, idx: _Judgments, fit: _Run) -> None:
        """The fitted attributes from the kept restart."""
        ll, knowing, spam, log_prior, history, self.start_ = (
            fit.log_likelihood, fit.knowing, fit.spam, fit.log_prior, fit.history, fit.start)
        proba = fit.proba  # the run's last E step, at these parameters
        k = data.n_classes
        prior_rows = np.exp(log_prior).reshape(-1, k)
        prior_rows /= prior_rows.sum(axis=1, keepdims=True)
        # per topic: the judged tasks' mean of their topics' priors
        self.prior_ = (prior_rows[0] if prior_rows.shape[0] == 1
                       else prior_rows[idx.judged].mean(axis=0))
        self.log_likelihood_ = ll
        self.loss_history_ = [-v / max(data.n_judgments, 1) for v in history]
        self.objective_history_ = history
        self.annotator_ids_ = data.annotator_ids
        # Normalised: under VB the exp-digamma values are sub-normalised weights.
        self.competence_ = knowing[:, 1] / knowing.sum(axis=1)
        self.spam_dist_ = spam / spam.sum(axis=1, keepdims=True)
        self._set_posterior(proba, data)

    def _set_posterior(self, proba: np.ndarray, data: AnnotationData) -> None:
        """The tasks' posterior, its entropy (nats) and the confident tasks (``threshold``):
        what the nominal and the ordinal fit both end with."""
        self.proba_ = proba
        self.entropy_ = -np.sum(np.where(proba > 0, proba * np.log(np.where(proba > 0, proba, 1)),
                                         0.0), axis=1)
        self.selected_ = _select_confident(self.entropy_, data.judgments_per_task() > 0,
                                           self.threshold)

    def warm_half_fit(self, half: MACE, data: AnnotationData) -> MACE:
        """The read-out's fit of ``half`` (an untempered clone) on a training half ``data``
        (``models.tempering``): of the random restarts only the one this fit kept, from the
        same random draw (not from this fit's parameters, which saw the held-out tasks: a half
        fit started there and stopped after ``n_iter`` iterations stays near them and
        predicts the held-out judgments too well, τ .03-.08 higher on the weak grid cells;
        docs/benchmarks.md). A fit that kept a warm start: the cold fit. The judged tasks only
        (``AnnotationData.judged_only``: the random starts draw per annotator, not per task)."""
        draw = getattr(self, "start_draw_", -1)
        data = data.judged_only()
        # a tempered fit's halves take its ρ̄ (the panel's dependence, not re-estimated per half)
        given = {"dependence_rho": self.dependence_rho_} if self.tempered_ else {}
        return half.fit(data, **given) if draw < 0 else half.fit(data, only_draw=draw, **given)

    @property
    def confusion_(self) -> np.ndarray:
        """(n_annotators, K, K) [j, t, l]: P(y = l | T = t) = (1 − θ_j) ξ_jl + θ_j [t = l];
        the ordinal variant's: θ_j's part shifted by δ_j (``models.mace_ordinal``)."""
        if getattr(self, "ordinal_", False):
            from models.mace_ordinal import confusion

            theta = self.competence_[:, None]
            return confusion(np.hstack([1.0 - theta, theta]), self.shift_, self.spam_dist_)
        k = self.spam_dist_.shape[1]
        theta = self.competence_[:, None, None]
        return (1.0 - theta) * self.spam_dist_[:, None, :] + theta * np.eye(k)[None]

    def _m_step(self, counts: tuple[np.ndarray, np.ndarray, np.ndarray], smoothing: float,
                prior: str, proba: np.ndarray, topics: ClassPrior | None,
                strength: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(knowing, spam, log class prior) from the expected counts. The class prior is MACE's
        uniform one, or learned: the judged tasks' mean posterior (VB: its Dirichlet(1)
        posterior's exp E[log]), per topic with ``topics`` ((n_tasks, K) log prior rows). A
        learned prior under VB shrinks ξ_j towards the crowd's pooled spam distribution (the
        Dirichlet's mean; its strength stays K · strategy_prior) instead of the uniform one."""
        knowing_counts, spam_counts, class_counts = counts
        k = class_counts.shape[0]
        if prior == "uniform":
            log_prior = np.full(k, -np.log(k))
        elif topics is not None:
            nu = topics.posterior(proba)
            log_prior = (e_log_dirichlet(nu) if self.variant == "vb"
                         else np.log(nu / nu.sum(axis=1, keepdims=True)))[topics.group]
        elif self.variant == "em":
            log_prior = np.log((class_counts + smoothing) / (class_counts + smoothing).sum())
        else:
            log_prior = digamma(class_counts + 1.0) - digamma(class_counts.sum() + k)
        knowing_prior, spam_prior = mace_pseudo_counts(
            self.variant, smoothing, self.alpha, self.beta, self.strategy_prior, prior,
            spam_counts, strength, knowing_counts)
        knowing = knowing_counts + knowing_prior
        spam = spam_counts + spam_prior
        if self.variant == "em":
            return (knowing / knowing.sum(axis=1, keepdims=True),
                    spam / spam.sum(axis=1, keepdims=True), log_prior)
        return (np.exp(digamma(knowing) - digamma(knowing.sum(axis=1, keepdims=True))),
                np.exp(digamma(spam) - digamma(spam.sum(axis=1, keepdims=True))), log_prior)

    # -- results -----------------------------------------------------------------------------
    def result(self, data: AnnotationData) -> AggregationResult:
        annotator_columns = {
            "competence": self.competence_,
            "n_judgments": data.judgments_per_annotator().astype(np.float64),
        }
        for c, value in enumerate(data.classes.tolist()):
            annotator_columns[f"spam_p_{value}"] = self.spam_dist_[:, c]
        if getattr(self, "ordinal_", False):  # the knowing report's shift (ordinal variant)
            annotator_columns["shift_down"] = self.shift_[:, 0]
            annotator_columns["shift_up"] = self.shift_[:, 2]
        return AggregationResult(
            method=self.method,
            classes=data.classes,
            proba=self.proba_,
            task_columns={
                "entropy": self.entropy_,
                "selected": self.selected_.astype(np.float64),
                "n_judgments": data.judgments_per_task().astype(np.float64),
            },
            annotator_columns=annotator_columns,
            objective_history=list(self.objective_history_),
            info={
                "log_likelihood": self.log_likelihood_,
                "restart_log_likelihoods": list(self.restart_log_likelihoods_),
                "variant": self.variant,
                **({"knowing": "ordinal"} if getattr(self, "ordinal_", False) else {}),
                "class_prior": self.class_prior_used_,
                "class_prior_scores": dict(self.class_prior_scores_),
                "prior": self.prior_.tolist(),
                # only when a per-topic prior was kept (the fit page says so)
                **({"class_prior_by": "topic"} if self.class_prior_groups_ > 1 else {}),
                "competence_strength": float(self.competence_strength_),
                # only when tempered (a dense panel): other fits' info stays as it was
                **({"dependence_rho": self.dependence_rho_} if self.tempered_ else {}),
                "threshold": self.threshold,
                "n_selected": int(self.selected_.sum()),
                **warm_record(self),
            },
        )

    @classmethod
    def from_result(cls, *, classes: Sequence[int], annotator_ids: Sequence[str],
                    annotator_columns: Mapping[str, Sequence[float | None]],
                    info: Mapping[str, Any], cold_checked_at: int) -> MACE:
        """A fit's parameters rebuilt from its ``result()`` as stored (θ_j from ``competence``,
        ξ_j from the ``spam_p_<label>`` columns of the annotators ``annotator_ids``): an
        ``init`` for ``fit``, not a model to read results from. WarmStartUnavailable when a
        parameter is missing."""
        n = len(annotator_ids)
        init = cls()
        init.annotator_ids_ = np.asarray(list(annotator_ids))
        init.competence_ = result_column(annotator_columns, "competence", n)
        init.spam_dist_ = (np.stack([result_column(annotator_columns, f"spam_p_{int(v)}", n)
                                     for v in classes], axis=1) if n else
                           np.empty((0, len(classes))))
        init.cold_checked_at_ = int(cold_checked_at)
        if info.get("competence_strength") is not None:  # the strength the stored fit used
            init.competence_strength_ = float(info["competence_strength"])
        return init


def _random_start(rng: np.random.Generator, n_annotators: int, k: int, smoothing: float
                  ) -> tuple[np.ndarray, np.ndarray]:
    """MACE.java's initialisation: uniform(0, 1) + smoothing, normalised, per annotator."""
    knowing = rng.random((n_annotators, 2)) + smoothing
    knowing /= knowing.sum(axis=1, keepdims=True)
    spam = rng.random((n_annotators, k)) + smoothing
    spam /= spam.sum(axis=1, keepdims=True)
    return knowing, spam


@dataclass(frozen=True)
class _Run:
    """One restart's end: log-likelihood, parameters (VB: exp-digamma weights), log class prior
    ((K,) or per task (n_tasks, K)), history, start ("cold" or "warm"), class-prior groups."""

    log_likelihood: float
    knowing: np.ndarray
    spam: np.ndarray
    log_prior: np.ndarray
    history: list[float]
    start: str
    groups: int
    draw: int = -1  # which of the cold fit's random starts (0-based); -1: the warm start
    proba: np.ndarray | None = None  # (n_tasks, K): the posterior at these parameters

    def normalised(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(knowing, spam, log prior) as probabilities: VB's weights are sub-normalised."""
        log_prior = self.log_prior - np.log(np.exp(self.log_prior).sum(axis=-1, keepdims=True))
        return (self.knowing / self.knowing.sum(axis=1, keepdims=True),
                self.spam / self.spam.sum(axis=1, keepdims=True), log_prior)


def _rungs(n_starts: int, n_iter: int) -> list[int]:
    """Successive halving's rungs for ``n_starts`` runs of ``n_iter`` iterations: the
    iterations after which the better half goes on, n_iter / 2^h, ..., n_iter / 4, n_iter / 2
    (h = ceil(log2 n_starts) halvings, at least one iteration each): each round's survivors
    run as many more iterations as all the rounds before them."""
    halvings = max(int(np.ceil(np.log2(max(n_starts, 1)))), 0)
    return [max(n_iter >> (halvings - h), 1) for h in range(halvings)]


def _race_work(n_starts: int, n_iter: int) -> int:
    """The E steps (after each run's first) ``MACE._race`` runs at most."""
    work, alive, done = 0, n_starts, 0
    for rung in (*_rungs(n_starts, n_iter), n_iter):
        work += alive * max(rung - done, 0)
        done = max(rung, done)
        alive = (alive + 1) // 2
    return work


class _Chain:
    """One run of EM (VB) in progress (``MACE._advance``): the parameters of its last E step,
    that step's log-likelihood, expected counts and posterior (``out.proba`` while it is the
    last run to write ``out``), its history, its per-topic prior, whether ``tol`` stopped it."""

    def __init__(self, out: _Buffers, writer: list[Any], topics: ClassPrior | None) -> None:
        self.out, self.writer, self.topics = out, writer, topics
        self.history: list[float] = []
        self.stopped = False
        self.proba: np.ndarray | None = None

    @classmethod
    def begin(cls, idx: _Judgments, knowing: np.ndarray, spam: np.ndarray,
              topics: ClassPrior | None, out: _Buffers, writer: list[Any]) -> _Chain:
        """A run's first E step, at (knowing, spam) and MACE's uniform class prior."""
        run = cls(out, writer, topics)
        k = spam.shape[1]
        run.step(idx, knowing, spam, np.full(k, -np.log(k)))
        return run

    def step(self, idx: _Judgments, knowing: np.ndarray, spam: np.ndarray,
             log_prior: np.ndarray) -> None:
        """An E step at these parameters, appended to the history."""
        self.knowing, self.spam, self.log_prior = knowing, spam, log_prior
        self.ll, self.proba, self.counts = _e_step(idx, knowing, spam, log_prior, self.out)
        self.writer[0] = id(self)  # not the run itself: no reference cycle to hold ``out``
        self.history.append(self.ll)

    def suspend(self) -> None:
        """Before another run writes ``out``: the posterior kept only if the M step reads it
        (a per-topic prior's), as a copy."""
        self.proba = (None if self.topics is None
                      else self.proba.copy() if self.proba is self.out.proba else self.proba)

    def redo(self, idx: _Judgments) -> None:
        """The last E step again (its posterior into ``out``), the history left as it is."""
        self.ll, self.proba, self.counts = _e_step(idx, self.knowing, self.spam,
                                                   self.log_prior, self.out)
        self.writer[0] = id(self)

    def result(self, start: str) -> _Run:
        groups = 1 if self.topics is None else self.topics.n_groups
        return _Run(self.ll, self.knowing, self.spam, self.log_prior, self.history, start,
                    groups, proba=self.proba)


@dataclass(frozen=True)
class _Judgments:
    """The judgments in task order, as one E step's compiled sweep reads them, built once per fit.

    ``ptr[i]:ptr[i + 1]`` is task i's run; within it the judgments keep their input order (a
    stable sort), so each task's sums add the same terms in the same order as a segment sum over
    the judgments in input order would. ``cell`` is annotator·K + label (int32), ``label`` the
    label in the narrowest integer type that holds K (the sweep reads fewer bytes).
    """

    ptr: np.ndarray  # (n_tasks + 1,) int64
    cell: np.ndarray  # (n_judgments,) int32, task order
    label: np.ndarray  # (n_judgments,) int8 (int32 when K > 127), task order
    n_tasks: int
    n_annotators: int
    n_classes: int
    per_annotator: np.ndarray  # judgments per annotator
    label_counts: np.ndarray  # (n_annotators, K): judgments per annotator and label
    judged: np.ndarray  # (n_tasks,) bool: tasks with a judgment
    impossible: np.ndarray | None  # (n_tasks, K) True where a control label rules a class out
    # (n_judgments,) in task order: each judgment's likelihood power (a dense panel's design
    # effect, ``weighted``); None: all 1, and the E step is the unweighted sweep
    weight: np.ndarray | None = None

    def weighted(self, rho: float) -> _Judgments:
        """These judgments with ``models.dependence.panel_weights`` at ``rho``: the weights
        in task order, and the per-annotator counts the M step reads weighted by them."""
        k = self.n_classes
        task = np.repeat(np.arange(self.n_tasks), np.diff(self.ptr))
        weight = panel_weights(task, self.cell // k, self.n_tasks, self.n_annotators, rho)
        label_counts = np.bincount(self.cell, weights=weight,
                                   minlength=self.n_annotators * k).reshape(-1, k)
        return replace(self, weight=weight, label_counts=label_counts,
                       per_annotator=label_counts.sum(axis=1))

    @classmethod
    def from_data(cls, data: AnnotationData, gold: np.ndarray | None) -> _Judgments:
        k = data.n_classes
        impossible = None
        if gold is not None:
            known = np.flatnonzero(gold != UNKNOWN)
            impossible = np.zeros((data.n_tasks, k), dtype=bool)
            impossible[known] = True
            impossible[known, gold[known]] = False
        task = data.task
        per_task = np.bincount(task, minlength=data.n_tasks)
        ptr = np.zeros(data.n_tasks + 1, dtype=np.int64)
        np.cumsum(per_task, out=ptr[1:])
        label_type = np.int8 if k <= 127 else np.int32
        # judgments read from a file sorted by task need no reordering (a check is one cheap pass)
        if task.shape[0] < 2 or bool(np.all(task[1:] >= task[:-1])):
            label = data.label.astype(label_type)
            cell = data.annotator.astype(np.int32)
            cell *= k
            cell += label
        else:  # the order of a stable argsort of the tasks, by counting (one pass, no sort)
            from models import mace_kernels

            cell = np.empty(task.shape[0], dtype=np.int32)
            label = np.empty(task.shape[0], dtype=label_type)
            mace_kernels.task_order(task, ptr, data.annotator, data.label, k, cell, label)
        label_counts = np.bincount(cell, minlength=data.n_annotators * k).reshape(-1, k)
        return cls(ptr, cell, label,
                   data.n_tasks, data.n_annotators, k,
                   data.judgments_per_annotator().astype(np.float64),
                   label_counts.astype(np.float64), per_task > 0, impossible)


@dataclass(frozen=True)
class _Buffers:
    """The per-task arrays one E step writes (the posterior, each task's normaliser and log
    joint's maximum), the (annotator, label) cells' table the sweep reads (per cell log g,
    log(g + h) − log g, h / (g + h): 24 bytes a cell) and the expected knowing count per cell it
    adds up (``know``, an array of its own). Session 20 kept the count as a fourth column, an
    annotator's two cells one 64-byte line; measured on a quiet machine that sweep is slower
    (10 M judgments, 100,000 annotators: median 124.8 against 113.8 ms,
    ``bench/bench_mace_scale.py estep``), so the count is apart again (the same bits)."""

    proba: np.ndarray
    norm: np.ndarray
    top: np.ndarray
    table: np.ndarray
    know: np.ndarray

    @classmethod
    def empty(cls, idx: _Judgments) -> _Buffers:
        k = idx.n_classes
        cells = idx.n_annotators * k
        return cls(np.empty((idx.n_tasks, k)), np.empty(idx.n_tasks), np.empty(idx.n_tasks),
                   np.empty((cells, 3)), np.empty(cells))


def _e_step(
    idx: _Judgments, knowing: np.ndarray, spam: np.ndarray, log_prior: np.ndarray,
    out: _Buffers | None = None,
) -> tuple[float, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Posterior over true labels, marginal log-likelihood and expected counts, written into
    ``out`` (new arrays without it; the returned posterior is ``out.proba``).

    Per judgment a = (i, j, l): g = P(spam) ξ_jl and h = P(know), so P(y_a | t) = g + h [t = l].
    Log space, since a task's likelihood is a product over its judgments:
    log P(y_i | t) = Σ_a log g_a + Σ_{a: l_a = t} (log(g_a + h_a) − log g_a).
    """
    # numba is imported when fitting, not with the class (the API validates MACE's parameters
    # through models.registry without loading a compiler)
    from models import mace_kernels

    k = idx.n_classes
    # g and h depend on (annotator, label) only: an (n_annotators·K, 3) table the sweep gathers
    # from, one row per cell: log g, log(g + h) − log g, h / (g + h); the cells' expected
    # knowing counts, which the sweep writes, are ``out.know`` (``_Buffers``).
    out = _Buffers.empty(idx) if out is None else out
    table = out.table
    g = np.maximum(knowing[:, :1] * spam, 1e-300)  # smoothing=0 may reach 0: keep logs finite
    log_g = np.log(g)
    table[:, 0] = log_g.ravel()
    g += knowing[:, 1:]  # g + h
    bonus = np.log(g)
    bonus -= log_g
    table[:, 1] = bonus.ravel()
    table[:, 2] = np.divide(knowing[:, 1:], g).ravel()
    prior_rows = log_prior.reshape(1, k) if log_prior.ndim == 1 else log_prior
    impossible = (np.zeros((0, k), dtype=np.bool_) if idx.impossible is None
                  else idx.impossible)
    proba, norm, top, know_cells = out.proba, out.norm, out.top, out.know
    # = proba[idx.judged].sum(axis=0), bit for bit (kernel doc); a new array: the M step keeps it
    class_counts = np.empty(k)
    prior_rows = np.ascontiguousarray(prior_rows, dtype=np.float64)
    if idx.weight is not None:  # a dense panel's design effect (any K)
        mace_kernels.e_step_weighted(idx.ptr, idx.cell, idx.label, idx.weight, table,
                                     prior_rows, impossible, proba, norm, top, know_cells,
                                     class_counts)
    elif k == 2:  # the same operations, two classes in registers (mace_kernels.e_step_binary)
        mace_kernels.e_step_binary(idx.ptr, idx.cell, table, prior_rows, impossible, proba,
                                   norm, top, know_cells, class_counts)
    else:
        mace_kernels.e_step(idx.ptr, idx.cell, idx.label, table, prior_rows, impossible, proba,
                            norm, top, know_cells, class_counts)
    log_likelihood = float(np.sum(np.log(norm, out=norm)) + np.sum(top))

    # P(annotator knew | data) = P(T = l | data) h / (g + h); otherwise it spammed label l.
    know = know_cells.reshape(idx.n_annotators, k)
    spam_counts = idx.label_counts - know  # each judgment either knew or spammed its label
    know_total = _row_sum(know)
    knowing_counts = np.stack([idx.per_annotator - know_total, know_total], axis=1)
    return log_likelihood, proba, (knowing_counts, spam_counts, class_counts)


def _row_sum(table: np.ndarray) -> np.ndarray:
    """``table.sum(axis=1)`` of a (n, K) array, bit for bit: numpy adds K <= 8 elements of a row
    in sequence, as this does column by column (one pass per column instead of a call per row)."""
    if table.shape[1] > 8:
        return table.sum(axis=1)
    total = table[:, 0].copy()
    for c in range(1, table.shape[1]):
        total += table[:, c]
    return total


def _aligned_parameters(init: MACE, data: AnnotationData) -> tuple[np.ndarray, np.ndarray]:
    """(knowing, spam) tables from ``init``'s competences and spam distributions, re-indexed to
    ``data``'s annotators."""
    if init.spam_dist_.shape[1] != data.n_classes:
        raise ValueError("init was fitted with a different number of classes")
    position = {a: j for j, a in enumerate(init.annotator_ids_.tolist())}
    found = np.array([position.get(a, -1) for a in data.annotator_ids.tolist()], dtype=np.int64)
    known = found >= 0
    competence = np.full(data.n_annotators, float(init.competence_.mean()))
    competence[known] = init.competence_[found[known]]
    competence = np.clip(competence, 1e-6, 1 - 1e-6)
    spam = np.tile(init.spam_dist_.mean(axis=0), (data.n_annotators, 1))
    spam[known] = init.spam_dist_[found[known]]
    return np.stack([1.0 - competence, competence], axis=1), spam


def _select_confident(entropy: np.ndarray, judged: np.ndarray, threshold: float) -> np.ndarray:
    """MACE's --threshold: keep the ``threshold`` share of judged tasks with the lowest entropy
    (ties at the cut are kept); tasks nobody judged are never selected."""
    selected = np.zeros(entropy.shape[0], dtype=bool)
    n_judged = int(judged.sum())
    if n_judged == 0:
        return selected
    if threshold >= 1.0:
        return judged.copy()
    n_keep = max(int(np.ceil(threshold * n_judged)), 1)
    cutoff = np.sort(entropy[judged])[n_keep - 1]
    return judged & (entropy <= cutoff)
