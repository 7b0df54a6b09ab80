"""Draws of the qrels that carry the annotators' parameter uncertainty (issue #34, item 3.1).

Independent per-task draws from a fitted posterior q treat every task's label as a separate coin:
one annotator's errors, which a fit estimates once and applies to all its tasks, never move
together, and the spread of a run's mean over topics shrinks with the number of tasks as if the
annotators' reliabilities were known. Here draw s first draws every annotator's parameters θ^s
(and the class prior ρ^s) from their posterior, then each task's label from its posterior given
θ^s and its judgments. With θ̂, ρ̂ the posterior means that q was computed with,

    p_i^s(k) ∝ q_i(k) · ρ^s_k / ρ̂_k · Π_{a ∈ i} [ P(y_a | k, θ^s_{j_a}) / P(y_a | k, θ̂_{j_a}) ]^τ_i,

which is exactly π^s Π P(y_a | k, θ^s) normalised when q is the model's own posterior
π̂ Π P(y_a | k, θ̂) (Dawid & Skene 1979), and keeps whatever else q holds (a calibrated read-out,
a per-topic prior, clamped gold) when it is not: θ^s = θ̂ gives q back. τ_i is the power of a
tempered task's likelihood (``models.dependence``; 1 unless the fit tempered).

Two families of annotator posterior:

- ``confusion`` (DS, IBCC, EBCC, ordinal-ds): the confusion matrices π_j and the class prior ρ
  from their joint posterior with the labels (``AnnotatorDraws.gibbs``): a Gibbs chain started
  from labels drawn from q alternates π_j[k, ·] ~ Dir(α_k + N_j[k, ·](z)) (hard counts of the
  current labels z; α 1 off the diagonal, ``DIAGONAL_PRIOR`` on it: an annotator better than
  chance, which also keeps the chain out of the class-swapped mode), ρ ~ Dir(1 + counts of z)
  and z from the tilted posterior; after ``BURN_IN`` sweeps each state is a draw. The reference
  θ̂ is q's own M step (the soft counts + ``REFERENCE_SMOOTHING``, DS's fixed point), so a draw
  gives ρ^s Π π^s: the full posterior, not one draw around EM's point estimate, whose centre a
  plug-in fit gets wrong when the parameters are weakly identified (``docs/benchmarks.md``).
  ``AnnotatorDraws.confusion`` is that one-step variant (Dir(1 + soft counts under q) around
  the Dirichlet mean).
- ``mace`` (Hovy et al. 2013): P(y = l | k) = (1 − θ_j) ξ_jl + θ_j [k = l], θ_j ~ Beta(1 + K_j,
  1 + S_j) and ξ_j ~ Dir(1 + S_j[·]), with K_j (S_j) the expected number of j's judgments it
  copied (spammed) under q and the fitted θ̂_j, ξ̂_j — MACE's own E-step counts (one step).

The class prior is drawn where the model learns one. For EBCC and ordinal-ds the Dirichlet over
free confusion rows is wider than the model's own posterior (the draws err on the side of
width). Judgments stay in long format (arrays task, annotator, label); one draw of θ for all
topics, the per-topic tilts one sparse product per class over the draws.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from models.dawid_skene import population_centre, population_pseudo_counts, population_strength

PRIOR = 1.0
BURN_IN = 100  # Gibbs sweeps before the first kept state (``AnnotatorDraws.gibbs``)
DIAGONAL_PRIOR = 2.0  # the chain's pseudo-count on a confusion matrix's diagonal
REFERENCE_SMOOTHING = 0.01  # DS's own pseudo-count: the point estimate q was computed with
FAMILIES = ("confusion", "mace")
# Which family a method's fitted parameters follow; methods not listed (majority vote, the GP
# methods) have no annotator posterior of this kind: their draws stay independent per task.
METHOD_FAMILY = {"ds": "confusion", "ibcc": "confusion", "ebcc": "confusion",
                 "ordinal-ds": "confusion", "mace": "mace"}


def parameter_family(method: str) -> str | None:
    """The family of ``method``'s annotator parameters, None without one."""
    return METHOD_FAMILY.get(method)


def parameter_rng(seed: int | None) -> np.random.Generator:
    """The generator of the parameter draws of an evaluation with ``seed``: its own stream,
    apart from the per-topic label draws (``[seed, topic]``) and PPI's (``[seed, topic, 1]``)."""
    return np.random.default_rng([int(seed or 0), 0, 2])


@dataclass(frozen=True)
class AnnotatorDraws:
    """Per draw s the log ratio log P(y | k, θ^s) − log P(y | k, θ̂) of every annotator's label
    table and of the class prior, and the judgments (long format, sorted by task) that turn them
    into per-task tilts."""

    task: np.ndarray  # (n,) row of the posterior each judgment belongs to, sorted
    annotator: np.ndarray  # (n,) annotator index
    label: np.ndarray  # (n,) observed class index
    log_ratio: np.ndarray  # (S, A, K, L) float32, [s, j, k, l]
    log_prior_ratio: np.ndarray | None = None  # (S, K): log ρ^s − log ρ̂; None: ρ fixed
    weight: np.ndarray | None = None  # (n,) τ of each judgment's task; None: all 1

    @classmethod
    def confusion(cls, proba: np.ndarray, task: np.ndarray, annotator: np.ndarray,
                  label: np.ndarray, *, n_labels: int, samples: int, rng: np.random.Generator,
                  class_prior: bool = True, weight: np.ndarray | None = None) -> AnnotatorDraws:
        """Dirichlet rows of every annotator's confusion matrix from the soft counts of its
        judgments under ``proba`` (the posterior of the tasks ``task`` indexes, (J, K))."""
        task, annotator, label = _ints(task, annotator, label)
        n_annotators = int(annotator.max()) + 1 if len(annotator) else 0
        n_classes = proba.shape[1]
        w = np.ones(len(task)) if weight is None else np.asarray(weight, dtype=np.float64)
        flat = annotator * n_labels + label
        counts = np.stack([np.bincount(flat, weights=proba[task, k] * w,
                                       minlength=n_annotators * n_labels)
                           .reshape(n_annotators, n_labels) for k in range(n_classes)], axis=1)
        alpha = counts + PRIOR  # (A, K, L)
        theta = _dirichlet(alpha, samples, rng)  # (S, A, K, L)
        mean = alpha / alpha.sum(axis=2, keepdims=True)
        log_ratio = (np.log(np.maximum(theta, 1e-300)) - np.log(mean)[None]).astype(np.float32)
        prior = _prior_ratio(proba, task, samples, rng) if class_prior else None
        return cls._sorted(task, annotator, label, log_ratio, prior, weight)

    @classmethod
    def gibbs(cls, proba: np.ndarray, task: np.ndarray, annotator: np.ndarray,
              label: np.ndarray, *, n_labels: int, samples: int, rng: np.random.Generator,
              class_prior: bool = True, weight: np.ndarray | None = None,
              burn_in: int = BURN_IN, population_prior: float | None = 0.0,
              row_prior: RowPrior | None = None) -> AnnotatorDraws:
        """Confusion matrices (and the class prior) from their joint posterior with the labels:
        a Gibbs chain from labels drawn from ``proba``, alternating π_j[k, ·] ~ Dir(α_k +
        N_j[k, ·](z)) (hard counts of the current labels z; α the fit's own prior on a row,
        ``row_prior``: ``RowPrior``; without one, DS's with ``population_prior``; for DS's
        population prior s, its centre is redrawn each sweep: s pseudo-judgments spread like the
        crowd's pooled rows by distance, ``models.dawid_skene.population_centre``, the pooled
        rows drawn from Dir(1 + the current labels' pooled hard counts)),
        ρ ~ Dir(1 + counts of z), and z_i from the posterior tilted by that draw;
        ``burn_in`` sweeps, then one state per draw.
        The tilt's reference θ̂ is the point estimate ``proba`` is the posterior of
        (``RowPrior.rows``)."""
        task, annotator, label = _ints(task, annotator, label)
        n_tasks, n_classes = proba.shape
        n_annotators = int(annotator.max()) + 1 if len(annotator) else 0
        w = np.ones(len(task)) if weight is None else np.asarray(weight, dtype=np.float64)
        cell = annotator * n_labels + label
        soft = np.stack([np.bincount(cell, weights=proba[task, k] * w,
                                     minlength=n_annotators * n_labels)
                         .reshape(n_annotators, n_labels) for k in range(n_classes)], axis=1)
        if row_prior is None:
            row_prior = RowPrior("ds" if population_prior != 0.0 else "chain",
                                 {"population_prior": population_prior})
        alpha, log_reference = row_prior.rows(soft, task)
        strength = row_prior.population(soft)
        pseudo = np.zeros_like(alpha)
        if strength > 0:  # its centre is drawn in the chain, below, not held at q's
            alpha = alpha - population_pseudo_counts(soft.sum(axis=0), strength)
        judged = np.unique(task)
        rho_hat = np.maximum(proba[judged].mean(axis=0), 1e-300)
        logq = np.log(np.maximum(proba, 1e-300))
        z = _draw_rows(proba, rng)
        log_ratio = np.empty((samples, n_annotators, n_classes, n_labels), dtype=np.float32)
        prior = np.zeros((samples, n_classes)) if class_prior else None
        size = n_annotators * n_classes * n_labels
        for sweep in range(burn_in + samples):
            counts = np.bincount((annotator * n_classes + z[task]) * n_labels + label,
                                 weights=w, minlength=size).reshape(n_annotators, n_classes,
                                                                    n_labels)
            if strength > 0:
                # the population prior's centre is estimated with the labels latent, so it is
                # drawn too, given the current labels: the crowd's pooled rows ~ Dir(1 + pooled
                # hard counts), shaped by distance as the fit's. Held at q's point estimate it
                # pinned every row of a strong prior there, and the crowd's shared confusion did
                # not move between draws (docs/evaluation.md)
                pooled = _dirichlet(counts.sum(axis=0) + 1.0, 1, rng)[0]
                pseudo = strength * population_centre(pooled)
            theta = _dirichlet(counts + alpha + pseudo, 1, rng)[0]
            ratio = np.log(np.maximum(theta, 1e-300)) - log_reference  # (A, K, L)
            logp = logq.copy()
            for k in range(n_classes):
                logp[:, k] += np.bincount(task, weights=ratio[annotator, k, label] * w,
                                          minlength=n_tasks)
            shift = None
            if class_prior:
                rho = _dirichlet(np.bincount(z[judged], minlength=n_classes) + PRIOR, 1,
                                 rng)[0]
                shift = np.log(np.maximum(rho, 1e-300)) - np.log(rho_hat)
                logp += shift
            logp -= logp.max(axis=1, keepdims=True)
            p = np.exp(logp)
            z = _draw_rows(p / p.sum(axis=1, keepdims=True), rng)
            if sweep >= burn_in:
                log_ratio[sweep - burn_in] = ratio
                if prior is not None and shift is not None:
                    prior[sweep - burn_in] = shift
        return cls._sorted(task, annotator, label, log_ratio, prior, weight)

    @classmethod
    def mace(cls, proba: np.ndarray, task: np.ndarray, annotator: np.ndarray,
             label: np.ndarray, *, competence: np.ndarray, spam: np.ndarray, samples: int,
             rng: np.random.Generator, class_prior: bool = False,
             weight: np.ndarray | None = None, row_prior: RowPrior | None = None
             ) -> AnnotatorDraws:
        """MACE's θ_j (Beta) and ξ_j (Dirichlet) from the expected copy and spam counts of
        j's judgments under ``proba`` and the fitted ``competence`` θ̂ (A,) and ``spam`` ξ̂
        (A, K), under the fit's own prior (``RowPrior.mace``; None: Beta(1, 1), Dir(1))."""
        task, annotator, label = _ints(task, annotator, label)
        n_annotators, n_classes = spam.shape
        if proba.shape[1] != n_classes or len(competence) != n_annotators:
            raise ValueError("competence (A,), spam (A, K) and proba (J, K) disagree")
        if len(annotator) and annotator.max() >= n_annotators:
            raise ValueError("a judgment's annotator has no fitted competence")
        w = np.ones(len(task)) if weight is None else np.asarray(weight, dtype=np.float64)
        theta_hat = np.clip(np.asarray(competence, dtype=np.float64), 0.0, 1.0)[annotator]
        xi_hat = np.asarray(spam, dtype=np.float64)[annotator, label]
        # P(copied | y_a, q) = q_i(y_a) θ / ((1 − θ) ξ_{y_a} + θ): MACE's E-step responsibility
        copied = proba[task, label] * theta_hat / np.maximum((1 - theta_hat) * xi_hat
                                                             + theta_hat, 1e-300)
        knowing = np.bincount(annotator, weights=copied * w, minlength=n_annotators)
        spammed = np.bincount(annotator * n_classes + label, weights=(1 - copied) * w,
                              minlength=n_annotators * n_classes).reshape(n_annotators,
                                                                          n_classes)
        pair_prior, spam_prior = (row_prior or RowPrior()).mace(spammed, knowing)
        pair = np.stack([knowing, spammed.sum(axis=1)], axis=1) + pair_prior  # (A, 2)
        theta = _dirichlet(pair, samples, rng)[..., 0]  # (S, A)
        spam_alpha = spammed + spam_prior
        xi = _dirichlet(spam_alpha, samples, rng)  # (S, A, K)
        ref = _mace_table(pair[:, 0] / pair.sum(axis=1),
                          spam_alpha / spam_alpha.sum(axis=1, keepdims=True))
        log_ratio = (np.log(np.maximum(_mace_table(theta, xi), 1e-300))
                     - np.log(ref)[None]).astype(np.float32)
        prior = _prior_ratio(proba, task, samples, rng) if class_prior else None
        return cls._sorted(task, annotator, label, log_ratio, prior, weight)

    @classmethod
    def _sorted(cls, task: np.ndarray, annotator: np.ndarray, label: np.ndarray,
                log_ratio: np.ndarray, prior: np.ndarray | None,
                weight: np.ndarray | None) -> AnnotatorDraws:
        order = np.argsort(task, kind="stable")
        return cls(task=task[order], annotator=annotator[order], label=label[order],
                   log_ratio=log_ratio, log_prior_ratio=prior,
                   weight=None if weight is None else np.asarray(weight, np.float64)[order])

    def _by_cell(self) -> np.ndarray:
        """(S, A·L, K): the log ratios by (annotator, observed label), contiguous for the
        per-topic gathers (made once, on first use)."""
        cached = self.__dict__.get("_cells")
        if cached is None:
            s, a, k, n_labels = self.log_ratio.shape
            cached = np.ascontiguousarray(self.log_ratio.transpose(0, 1, 3, 2)).reshape(
                s, a * n_labels, k)
            object.__setattr__(self, "_cells", cached)
        return cached

    @property
    def samples(self) -> int:
        return int(self.log_ratio.shape[0])

    def restrict(self, rows: np.ndarray) -> AnnotatorDraws:
        """The same draws for a posterior whose row of task i is ``rows[i]`` (-1: not in it; its
        judgments still informed θ, but tilt no row)."""
        rows = np.asarray(rows, dtype=np.int64)
        moved = rows[self.task]
        keep = moved >= 0
        order = np.argsort(moved[keep], kind="stable")
        return replace(self, task=moved[keep][order], annotator=self.annotator[keep][order],
                       label=self.label[keep][order],
                       weight=None if self.weight is None else self.weight[keep][order])

    def topic_proba(self, rows: np.ndarray, proba: np.ndarray) -> np.ndarray:
        """(S, len(rows), K): the tilted posterior of the tasks ``rows`` (their stored ``proba``
        (len(rows), K)) in every draw. A task's tilt is a sum over its judgments' cells
        (annotator, label): one sparse (rows x cells) product per class, no per-judgment copy of
        the draws."""
        import scipy.sparse as sp

        rows = np.asarray(rows, dtype=np.int64)
        start = np.searchsorted(self.task, rows, side="left")
        stop = np.searchsorted(self.task, rows, side="right")
        sizes = stop - start
        # the judgments of every row, row after row: start[r], ..., stop[r] - 1
        sel = np.repeat(start - np.cumsum(sizes) + sizes, sizes) + np.arange(sizes.sum())
        n_samples, n_annotators, n_classes, n_labels = self.log_ratio.shape
        tilt = np.zeros((n_samples, len(rows), n_classes))
        if len(sel):
            counts = sp.csr_matrix(
                (np.ones(len(sel)) if self.weight is None else self.weight[sel],
                 (np.repeat(np.arange(len(rows)), sizes),
                  self.annotator[sel] * n_labels + self.label[sel])),
                shape=(len(rows), n_annotators * n_labels))
            cells = self._by_cell()  # (S, A·L, K)
            for k in range(n_classes):
                tilt[:, :, k] = (counts @ cells[:, :, k].T).T
        if self.log_prior_ratio is not None:
            tilt += self.log_prior_ratio[:, None, :]
        logq = np.log(np.maximum(proba, 1e-300))
        if n_classes == 2:  # the logistic of the log odds: half the work of a softmax
            odds = (logq[:, 1] - logq[:, 0])[None] + tilt[:, :, 1] - tilt[:, :, 0]
            p1 = 0.5 * (1.0 + np.tanh(0.5 * odds))
            return np.stack([1.0 - p1, p1], axis=2)
        logp = logq[None] + tilt
        logp -= logp.max(axis=2, keepdims=True)
        p = np.exp(logp)
        return p / p.sum(axis=2, keepdims=True)


@dataclass(frozen=True)
class RowPrior:
    """The prior a fit put on its annotators' parameters, and the point estimate its posterior
    q was computed with, for the chain of ``AnnotatorDraws.gibbs`` (and MACE's draws): the
    same definition the fit itself uses, never a copy of it.

    - ``ibcc``, ``ebcc``: the fit's own α₀ (``models.bcc.confusion_prior``, the definition the
      fit itself updates with: IBCC's default on a sparse crowd the crowd's population prior by
      |l − t|, type-II ML strength; the fixed prior ``alpha_diagonal`` / ``alpha_off_diagonal``
      on dense judges or when asked; EBCC's subtype prior ``prior`` at the class level), from
      the expected counts under q; the reference is VB's exp E[ln π] under Dir(α₀ + N_j(q)),
      what q's E step used;
    - ``ds``: Dir(1 + s · m) of DS's MAP objective (``population_prior`` s; None: type-II ML,
      found again from the same counts), 1 off the diagonal and ``DIAGONAL_PRIOR`` on it;
      reference normalise(N_j(q) + s · m + ``REFERENCE_SMOOTHING``), DS's M step;
    - ``chain`` (ordinal-ds, and DS with ``population_prior`` 0): Dir(1 off, ``DIAGONAL_PRIOR``
      on the diagonal): an annotator better than chance. A symmetric prior makes the posterior
      symmetric under swapping the classes with the confusion rows, and a chain on weakly
      identified data (few annotators) then wanders into the swapped mode.

    - ``mace``: not a confusion row: ``RowPrior.mace`` gives MACE's own Beta and Dirichlet.

    ``params`` are the fit's (its method's defaults fill the rest); ``used`` the prior an
    ``"auto"`` fit chose (its info's ``confusion_prior``, MACE's ``class_prior``; None: IBCC's
    chosen again from the judgments, MACE's uniform)."""

    method: str = "chain"
    params: Mapping[str, Any] = field(default_factory=dict)
    used: str | None = None

    @classmethod
    def of_fit(cls, method: str, params: Mapping[str, Any] | None = None,
               info: Mapping[str, Any] | None = None) -> RowPrior:
        """The row prior of a ``method`` fit with ``params`` and result ``info``."""
        params = dict(params or {})
        if method == "ds":
            return cls("ds", {"population_prior": params.get("population_prior")})
        if method in ("ibcc", "ebcc"):
            return cls(method, params, (info or {}).get("confusion_prior"))
        if method == "mace":  # the class prior "auto" chose, which shapes ξ's prior, and
            # the strength of the crowd's prior on θ the fit used (chosen when None)
            strength = (info or {}).get("competence_strength",
                                        params.get("competence_strength"))
            return cls(method, {**params, "competence_strength": strength},
                       (info or {}).get("class_prior", params.get("class_prior")))
        return cls("chain")

    def mace(self, spammed: np.ndarray, knowing: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray]:
        """MACE's prior ((knowing, spamming) (2,), on ξ_j (K,)) from the expected spam counts
        ``spammed`` (A, K) and knowing counts ``knowing`` (A,): the fit's own pseudo-counts
        (``models.mace.mace_pseudo_counts``, with the crowd's prior on θ at the fit's
        ``competence_strength``), the posterior's Dirichlet under VB; EM's M step is a MAP,
        whose prior is 1 + its smoothing. Not a MACE fit: Beta(1, 1) and Dir(1)."""
        k = spammed.shape[1]
        if self.method != "mace":
            return np.full(2, PRIOR), np.full(k, PRIOR)
        from models.mace import MACE, mace_pseudo_counts

        given = {**_defaults(MACE), **self.params}
        smoothing = (0.01 / k if given.get("smoothing") is None
                     else float(given["smoothing"]))
        used = self.used if self.used in ("uniform", "learned") else "uniform"
        strength = given.get("competence_strength")
        pairs = (None if knowing is None
                 else np.stack([spammed.sum(axis=1), knowing], axis=1))  # (spamming, knowing)
        spamming_knowing, spam = mace_pseudo_counts(
            given["variant"], smoothing, float(given["alpha"]), float(given["beta"]),
            float(given["strategy_prior"]), used, spammed,
            0.0 if strength is None else float(strength), pairs)
        if given["variant"] == "em":
            spamming_knowing, spam = spamming_knowing + PRIOR, spam + PRIOR
        return spamming_knowing[::-1].copy(), spam

    def population(self, soft: np.ndarray) -> float:
        """DS's population prior strength s (0 for the other priors), from the expected counts
        ``soft`` (A, K, L) under q: the fit's ``population_prior``, or for DS's default (None)
        its type-II ML strength found again from the same counts."""
        n_classes, n_labels = soft.shape[1:]
        if self.method != "ds" or n_labels != n_classes:
            return 0.0
        strength = self.params.get("population_prior", 0.0)
        if strength is None:
            strength = population_strength(soft, population_pseudo_counts(soft.sum(axis=0), 1.0))
        return float(strength)

    def rows(self, soft: np.ndarray, task: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(α (K, L), log θ̂ (A, K, L)) from the expected counts ``soft`` (A, K, L) under q
        [j, k, l] and the judgments' tasks ``task``."""
        n_classes, n_labels = soft.shape[1:]
        square = n_labels == n_classes
        if self.method in ("ibcc", "ebcc") and square:
            from models.bcc import (
                EBCC,
                IBCC,
                confusion_prior,
                confusion_prior_fixed,
                confusion_prior_used,
            )
            from models.dirichlet import e_log_dirichlet

            given = {**_defaults(IBCC if self.method == "ibcc" else EBCC), **self.params}
            fixed = confusion_prior_fixed(n_classes, float(given["alpha_diagonal"]),
                                          float(given["alpha_off_diagonal"]))
            used = self.used or (confusion_prior_used(given["prior"], task)
                                 if self.method == "ibcc" else given["prior"])
            alpha = fixed
            for _ in range(10 if used == "empirical" else 1):  # Minka's steps, 20 a call
                alpha, _strength = confusion_prior(used, soft, alpha)
            return alpha, e_log_dirichlet(soft + alpha[None])
        alpha = np.full((n_classes, n_labels), PRIOR)
        pseudo = np.zeros((n_classes, n_labels))
        if square:
            alpha += np.eye(n_classes) * (DIAGONAL_PRIOR - PRIOR)
            pseudo = population_pseudo_counts(soft.sum(axis=0), self.population(soft))
        reference = soft + pseudo + REFERENCE_SMOOTHING
        return alpha + pseudo, np.log(reference / reference.sum(axis=2, keepdims=True))


def _defaults(cls: type) -> dict[str, Any]:
    """A model's constructor parameters and their defaults (what ``models.registry`` reads,
    from the signature itself: the registry imports calibration, which imports this package)."""
    from models.params import signature_specs

    return {name: spec.default for name, spec in signature_specs(cls.__init__).items()}


def fit_population_prior(method: str, params: Mapping[str, Any] | None, n_classes: int
                         ) -> float | None:
    """The population prior s of a fit, 0 for the methods without one; None for DS's default,
    whose strength is type-II ML (``models.dawid_skene.population_strength``), found again by
    the draws from the same expected counts (``n_classes`` is no longer used: kept for
    callers)."""
    if method != "ds":
        return 0.0
    value = (params or {}).get("population_prior")
    return None if value is None else float(value)


def draw_parameters(family: str, proba: np.ndarray, task: np.ndarray, annotator: np.ndarray,
                    label: np.ndarray, *, samples: int, seed: int | None,
                    competence: np.ndarray | None = None, spam: np.ndarray | None = None,
                    class_prior: bool = True, weight: np.ndarray | None = None,
                    population_prior: float | None = 0.0,
                    row_prior: RowPrior | None = None) -> AnnotatorDraws:
    """The parameter draws of an evaluation (the service's job, the CLI and the bench call this
    one function): ``family`` "confusion" or "mace" (which needs the fitted ``competence`` and
    ``spam``), judgments as class indices of ``proba``'s columns; ``row_prior``: the fit's
    prior on a confusion row (``RowPrior.of_fit``; None: DS's with ``population_prior``, a DS
    fit's ``fit_population_prior``, 0 for none)."""
    rng = parameter_rng(seed)
    if family == "confusion":
        return AnnotatorDraws.gibbs(proba, task, annotator, label, n_labels=proba.shape[1],
                                    samples=samples, rng=rng, class_prior=class_prior,
                                    weight=weight, population_prior=population_prior,
                                    row_prior=row_prior)
    if family == "mace":
        if competence is None or spam is None:
            raise ValueError("MACE's parameter draws need its fitted competence and spam")
        return AnnotatorDraws.mace(proba, task, annotator, label, competence=competence,
                                   spam=spam, samples=samples, rng=rng,
                                   class_prior=class_prior, weight=weight, row_prior=row_prior)
    raise ValueError(f"unknown parameter family {family!r}; valid: {', '.join(FAMILIES)}")


def _draw_rows(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(J,) a class per row of ``p`` (J, K)."""
    u = rng.random(p.shape[0])
    return (u[:, None] >= np.cumsum(p, axis=1)[:, :-1]).sum(axis=1)


def _ints(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    return tuple(np.asarray(a, dtype=np.int64) for a in arrays)


def _dirichlet(alpha: np.ndarray, samples: int, rng: np.random.Generator) -> np.ndarray:
    """(S, *alpha.shape): Dirichlet draws over the last axis of ``alpha``."""
    gamma = rng.standard_gamma(np.broadcast_to(alpha, (samples, *alpha.shape)))
    return gamma / np.maximum(gamma.sum(axis=-1, keepdims=True), 1e-300)


def _prior_ratio(proba: np.ndarray, task: np.ndarray, samples: int,
                 rng: np.random.Generator) -> np.ndarray:
    """(S, K): log ρ^s − log ρ̂, ρ ~ Dir(1 + Σ_i q_i) over the judged tasks."""
    judged = np.unique(task)
    alpha = proba[judged].sum(axis=0) + PRIOR
    rho = _dirichlet(alpha, samples, rng)
    return np.log(np.maximum(rho, 1e-300)) - np.log(alpha / alpha.sum())[None]


def _mace_table(theta: np.ndarray, xi: np.ndarray) -> np.ndarray:
    """(..., A, K, L): P(y = l | k) = (1 − θ) ξ_l + θ [k = l] from θ (..., A), ξ (..., A, L)."""
    k = xi.shape[-1]
    return ((1.0 - theta)[..., None, None] * xi[..., None, :]
            + theta[..., None, None] * np.eye(k))


def draw_tilted(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(S, J) a class per draw and task from per-draw probabilities ``p`` (S, J, K)."""
    u = rng.random(p.shape[:2])
    if p.shape[2] == 2:
        return (u >= p[:, :, 0]).astype(np.int8)
    cdf = np.cumsum(p, axis=2)[:, :, :-1]
    return (u[:, :, None] >= cdf).sum(axis=2).astype(np.int8)
