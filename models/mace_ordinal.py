"""Ordinal MACE: MACE whose "knowing" annotator may report the truth one grade off.

MACE (Hovy et al. 2013, ``models.mace``) has annotator j know the true label with probability θ_j
and copy it, else spam a label from ξ_j. On a graded scale an LLM judge's errors are near misses
(one grade too lenient or too strict), which that story can only call spam: the spam
distributions then pile up on the middle grades, and a vote's weight log(1 + θ_j / ((1 − θ_j)
ξ_jl)) lets a rare grade outvote a common one (docs/models.md, "MACE on mixed data", the
unfixed part). Here the knowing annotator reads the truth t and reports t + d, d ∈ {−1, 0, +1}
with probabilities δ_j (a judge-specific ordinal shift; clipped at the ends of the scale):

    P(y_a = l | T_i = t) = (1 − θ_j) ξ_jl + θ_j Σ_d δ_jd [clip(t + d) = l]

δ_j = (1, 0, 0) ... (0, 0, 1) spans MACE's own model (δ_j0 = 1) and a judge who is always one
grade lenient (δ_j,+1 = 1). Priors as MACE's VB: Beta(α, β) on θ_j, Dirichlet(strategy_prior) on
ξ_j, and Dirichlet(SHIFT_PRIOR) on δ_j (mean .1 / .8 / .1: exact reports are the rule, which
with the uniform class prior pins the truth's location; a leniency the whole panel shares is
not identifiable without gold, as for every gold-free model). EM / VB on the marginal
likelihood Σ_i log Σ_t P(t) Π_a P(y_a | t)^w_a (w_a: a dense panel's design-effect power on
mixed data, ``models.dependence.panel_weights``; 1 otherwise), MACE's random restarts, the one
of the highest log-likelihood kept.

MACE uses it (``knowing="auto"``, its default) on an ordinal scale of at least three grades
(numeric, increasing labels: ``models.ordinal_scale.check_ordinal_scale``) with dense judgments
(``models.dependence.wanted``: LLM judges who grade every task): sparse crowds, binary data and
nominal labels keep MACE's fit bit for bit.

The E step's expected counts per annotator are the soft confusion counts N_j[t, l] = Σ_a w_a
P(T_i = t | y) [j_a = j, l_a = l] (a segment sum over judgments, one per class), split between
the spam and the shifted knowing parts by their shares of P(l | t): O(A K²) after the sum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import digamma

from models.data import UNKNOWN, AnnotationData
from models.dependence import wanted
from models.ordinal_scale import OrdinalScaleError, check_ordinal_scale

SHIFTS = (-1, 0, 1)  # the knowing annotator's report: one grade down, the truth, one grade up
SHIFT_PRIOR = np.array([1.0, 8.0, 1.0])  # Dirichlet pseudo-counts on δ_j (mean .1 / .8 / .1)
MIN_GRADES = 3  # on two grades a shift is a flip: MACE's spam already says it


def ordinal_wanted(data: AnnotationData) -> bool:
    """Whether ``knowing="auto"`` fits the ordinal variant: at least ``MIN_GRADES`` numeric,
    increasing grades and dense judgments (``models.dependence.wanted``)."""
    if data.n_classes < MIN_GRADES or data.n_judgments == 0:
        return False
    try:
        check_ordinal_scale(data.classes)
    except OrdinalScaleError:
        return False
    return wanted("auto", data.task)


def shift_table(k: int) -> np.ndarray:
    """(3, K, K) [d, t, l]: 1 where a knowing report of t with shift d lands on grade l."""
    table = np.zeros((len(SHIFTS), k, k))
    for s, d in enumerate(SHIFTS):
        table[s, np.arange(k), np.clip(np.arange(k) + d, 0, k - 1)] = 1.0
    return table


def confusion(competence: np.ndarray, shift: np.ndarray, spam: np.ndarray) -> np.ndarray:
    """(A, K, K) [j, t, l]: P(y = l | T = t) = (1 − θ_j) ξ_jl + θ_j Σ_d δ_jd [clip(t + d) = l]
    (weights need not be normalised: VB's exp-digamma ones are used as they are)."""
    k = spam.shape[1]
    knows = np.einsum("jd,dtl->jtl", shift, shift_table(k))
    return competence[:, 1, None, None] * knows + competence[:, 0, None, None] * spam[:, None, :]


@dataclass(frozen=True)
class Fit:
    """One restart's end: θ as (spamming, knowing) weights (A, 2), δ (A, 3), ξ (A, K), the
    posterior, the log-likelihood and its history, the random start's number."""

    competence: np.ndarray
    shift: np.ndarray
    spam: np.ndarray
    proba: np.ndarray
    log_likelihood: float
    history: list[float]
    draw: int
    log_prior: np.ndarray  # (K,) the class prior's log weights (VB: exp E[log ρ], sub-normalised)

    @property
    def prior(self) -> np.ndarray:
        """The class prior, normalised."""
        p = np.exp(self.log_prior - self.log_prior.max())
        return p / p.sum()


class OrdinalMACE:
    """The fit of the module doc on ``data`` (one class: the restarts share the judgments'
    arrays). ``weight``: per judgment (input order) its likelihood power, None for all 1."""

    def __init__(self, data: AnnotationData, weight: np.ndarray | None, *, variant: str,
                 alpha: float, beta: float, strategy_prior: float, smoothing: float,
                 gold: np.ndarray | None) -> None:
        self.k = data.n_classes
        self.n_tasks, self.n_annotators = data.n_tasks, data.n_annotators
        self.task, self.annotator = data.task, data.annotator
        self.cell = data.annotator.astype(np.int64) * self.k + data.label
        self.weight = np.ones(data.n_judgments) if weight is None else weight
        self.variant = variant
        self.alpha, self.beta = alpha, beta
        self.strategy_prior, self.smoothing = strategy_prior, smoothing
        self.judged = np.bincount(data.task, minlength=data.n_tasks) > 0
        self.impossible = None
        if gold is not None:
            known = np.flatnonzero(gold != UNKNOWN)
            self.impossible = np.zeros((data.n_tasks, self.k), dtype=bool)
            self.impossible[known] = True
            self.impossible[known, gold[known]] = False
        self.table = shift_table(self.k)

    def e_step(self, competence: np.ndarray, shift: np.ndarray, spam: np.ndarray,
               log_prior: np.ndarray | None = None) -> tuple[float, np.ndarray, np.ndarray]:
        """(log-likelihood, posterior (n_tasks, K), soft confusion counts N (A, K, K)) under
        the uniform class prior. Log space: a task's likelihood is a product over judgments."""
        k = self.k
        log_c = np.log(np.maximum(confusion(competence, shift, spam), 1e-300))
        # per judgment its column log P(l_a | t) of its annotator's matrix, (n_judgments, K)
        rows = log_c.transpose(0, 2, 1).reshape(-1, k)[self.cell] * self.weight[:, None]
        joint = np.stack([np.bincount(self.task, weights=rows[:, t], minlength=self.n_tasks)
                          for t in range(k)], axis=1)
        joint += -np.log(k) if log_prior is None else log_prior[None, :]
        if self.impossible is not None:
            joint[self.impossible] = -np.inf
        top = joint.max(axis=1, keepdims=True)
        proba = np.exp(joint - top)
        norm = proba.sum(axis=1, keepdims=True)
        proba /= norm
        ll = float(np.sum((np.log(norm) + top)[self.judged]))
        proba[~self.judged] = 1.0 / k
        counts = np.stack([np.bincount(self.cell, weights=self.weight * proba[self.task, t],
                                       minlength=self.n_annotators * k) for t in range(k)],
                          axis=1).reshape(self.n_annotators, k, k).transpose(0, 2, 1)
        return ll, proba, counts  # counts [j, t, l]

    def m_step(self, counts: np.ndarray, competence: np.ndarray, shift: np.ndarray,
               spam: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """New (θ, δ, ξ) weights from N [j, t, l], split between spam and each shift by their
        shares of P(l | t) at the current weights; pseudo-counts as MACE's (``variant``)."""
        c = np.maximum(confusion(competence, shift, spam), 1e-300)
        share = counts / c
        spam_counts = competence[:, 0, None] * spam * share.sum(axis=1)  # (A, K)
        shift_counts = competence[:, 1, None] * shift * np.einsum(
            "jtl,dtl->jd", share, self.table)  # (A, 3)
        knowing_counts = np.stack([spam_counts.sum(axis=1), shift_counts.sum(axis=1)], axis=1)
        if self.variant == "em":
            s = self.smoothing
            return (_normalise(knowing_counts + s), _normalise(shift_counts + SHIFT_PRIOR - 1 + s),
                    _normalise(spam_counts + s))
        return (_exp_digamma(knowing_counts + np.array([self.alpha, self.beta])),
                _exp_digamma(shift_counts + SHIFT_PRIOR),
                _exp_digamma(spam_counts + self.strategy_prior))

    def class_prior(self, proba: np.ndarray) -> np.ndarray:
        """The learned class prior's log: the judged tasks' posterior counts under a
        Dirichlet(1) (VB: exp E[log ρ]; EM: its normalised counts + smoothing)."""
        counts = proba[self.judged].sum(axis=0)
        if self.variant == "em":
            c = counts + self.smoothing
            return np.log(c / c.sum())
        return digamma(counts + 1.0) - digamma(counts.sum() + self.k)

    def log_likelihood(self, fit: Fit) -> float:
        """The marginal log-likelihood at ``fit``'s parameters normalised (VB's weights are
        not), Schwarz's criterion's first term."""
        competence = fit.competence / fit.competence.sum(axis=1, keepdims=True)
        return self.e_step(competence, fit.shift / fit.shift.sum(axis=1, keepdims=True),
                           fit.spam / fit.spam.sum(axis=1, keepdims=True),
                           np.log(fit.prior))[0]

    def run(self, competence: np.ndarray, shift: np.ndarray, spam: np.ndarray, n_iter: int,
            tol: float, draw: int, learned: bool = False) -> Fit:
        """One restart's EM (VB) until an iteration gains at most ``tol`` per judgment; the
        class prior uniform (MACE's) or ``learned`` (re-estimated at every M step)."""
        ll, proba, counts = self.e_step(competence, shift, spam)
        history = [ll]
        total = float(self.weight.shape[0])
        log_prior = np.full(self.k, -np.log(self.k))
        for _ in range(n_iter):
            competence, shift, spam = self.m_step(counts, competence, shift, spam)
            if learned:
                log_prior = self.class_prior(proba)
            ll, proba, counts = self.e_step(competence, shift, spam, log_prior)
            history.append(ll)
            if tol > 0 and abs(history[-1] - history[-2]) <= tol * total:
                break
        return Fit(competence, shift, spam, proba, ll, history, draw, log_prior)


def random_start(rng: np.random.Generator, n_annotators: int, k: int, smoothing: float
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MACE.java's initialisation for (θ, ξ) (uniform(0, 1) + smoothing, normalised, drawn
    as ``models.mace`` draws them), δ_j at its prior mean."""
    knowing = rng.random((n_annotators, 2)) + smoothing
    knowing /= knowing.sum(axis=1, keepdims=True)
    spam = rng.random((n_annotators, k)) + smoothing
    spam /= spam.sum(axis=1, keepdims=True)
    shift = np.tile(SHIFT_PRIOR / SHIFT_PRIOR.sum(), (n_annotators, 1))
    return knowing, shift, spam


def _normalise(x: np.ndarray) -> np.ndarray:
    return x / x.sum(axis=1, keepdims=True)


def _exp_digamma(x: np.ndarray) -> np.ndarray:
    """VB's weights exp(ψ(x) − ψ(Σ x)) per row (sub-normalised)."""
    return np.exp(digamma(x) - digamma(x.sum(axis=1, keepdims=True)))
