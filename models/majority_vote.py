"""Majority vote: the class with most votes, and P(class) the posterior of the exchangeable crowd
whose decision it is.

Majority vote is the Bayes decision when every annotator is alike and no class is preferred.
Its probability (``probability="posterior"``, the default) is that model's posterior: given the
true class t, a task's votes (n_i1, ..., n_iK) are Dirichlet-multinomial with mean p on t and
(1 − p) / (K − 1) on every other class and concentration s, i.e. each vote is right with
probability p and two votes on one task correlate by 1 / (1 + s) (annotators who differ, or
tasks that are harder than others, spread the votes beyond a binomial's). With a uniform prior,

    P(T_i = t | votes) ∝ Π_l Γ(n_il + s a_tl) / Γ(s a_tl),   a_tl = p if l = t else (1 − p)/(K − 1),

and (p, s) maximise the marginal likelihood of every judged task's votes; the correlation is
kept only where it beats independent votes by BIC (``exchangeable_fit``). More votes for a
class always mean a higher posterior, so the most probable class is the majority and tied
classes stay tied. ``"share"`` keeps the vote shares n_ik / n_i, the probability majority vote
reported until 2026-11-27: not a probability of the true class (measured on the Algorithm-10
grid: ECE .03-.11 against .006-.02 for the posterior; docs/models.md "Calibration without
gold, by principle"). A collection where no task has two votes says nothing about p, and keeps
the shares.

A task nobody judged gets the uniform distribution. The hard label is the class with most votes;
ties are broken by the ``tie`` parameter, never by the order of a dict or of the input:

- ``"lowest"`` (default): the lowest tied class (for relevance: the less relevant grade);
- ``"highest"``: the highest tied class;
- ``"random"``: uniformly among the tied classes, reproducible with ``random_state``.
"""

from __future__ import annotations

from typing import Literal, Self

import numpy as np

from models import majority_vote_kernels as kernels
from models.base import AggregationResult, Aggregator, ProgressCallback, no_progress
from models.data import AnnotationData
from models.params import Seed, validated

TieRule = Literal["lowest", "highest", "random"]
Probability = Literal["posterior", "share"]
_LOG_S_BOUNDS = (-5.0, 14.0)  # concentration s from e^-5 (votes nearly unanimous) to ~1.2e6


class MajorityVote(Aggregator):
    method = "mv"

    @validated
    def __init__(self, tie: TieRule = "lowest", random_state: Seed = None,
                 probability: Probability = "posterior") -> None:
        self.probability = probability
        self.tie = tie
        self.random_state = random_state

    def fit(self, data: AnnotationData, progress: ProgressCallback = no_progress) -> Self:
        # compiled passes (models.majority_vote_kernels): the counts in one pass over the
        # judgments; the majority, ties and distinct vote rows in one over the tasks
        n, k = data.n_tasks, data.n_classes
        self.counts_ = np.zeros((n, k))
        largest = kernels.vote_counts(np.asarray(data.task, dtype=np.int64),
                                      np.asarray(data.label, dtype=np.int64), self.counts_)
        base = largest + 1
        countable = base ** k <= 1 << 24  # rows counted by their number (unique_rows)
        # the vote shares are written only when they are the probability (else ``shares_``)
        share = self.probability == "share"
        proba = np.empty((n if share else 0, k))
        labels = np.empty(n, dtype=np.int64)
        self.tied_ = np.empty(n, dtype=bool)
        tally = np.zeros(base ** k if countable else 0, dtype=np.int64)
        most = kernels.summarise(self.counts_, self.tie == "highest", base, proba, labels,
                                 self.tied_, tally)
        self.accuracy_, self.concentration_ = float("nan"), float("nan")
        if not share and k > 1 and most > 1:
            # a crowd has few distinct vote rows: fit and posterior on those, then gathered
            if countable:
                present = np.flatnonzero(tally)
                rows, weight = _decode_rows(present, base, k), tally[present]
            else:  # too many possible rows to count: numpy's unique
                rows, inverse, weight = unique_rows(self.counts_)
            several = rows.sum(axis=1) > 1
            self.accuracy_, self.concentration_ = _fit_rows(rows[several], weight[several])
            row_proba = exchangeable_posterior(rows, self.accuracy_, self.concentration_)
            if countable:
                position = np.zeros(tally.shape[0], dtype=np.int64)
                position[present] = np.arange(present.shape[0])
                proba = np.empty((n, k))
                kernels.gather_rows(self.counts_, base, position, row_proba, proba)
            else:
                proba = row_proba[inverse]
                proba[~(self.counts_.sum(axis=1) > 0)] = 1.0 / k
        elif not share:  # no task has two votes: nothing to say about p, the shares
            proba = _shares(self.counts_)
        self.proba_ = proba
        if self.tie == "random":
            top = self.counts_.max(axis=1, initial=0.0)
            self.hard_labels_ = self._break_ties(self.counts_ == top[:, None])
        else:
            self.hard_labels_ = labels
        progress(1.0, "majority vote")
        return self

    def _break_ties(self, tied: np.ndarray) -> np.ndarray:
        """The "random" rule: a uniform key per (task, class); the tied class with the largest
        key wins (the lowest and highest rules are ``kernels.summarise``'s)."""
        rng = np.random.default_rng(self.random_state)
        keys = np.where(tied, rng.random(tied.shape), -1.0)
        return np.argmax(keys, axis=1)

    @property
    def shares_(self) -> np.ndarray:
        """(n_tasks, K) vote shares n_ik / n_i, 1/K for an unjudged task (``proba_`` when
        ``probability="share"``; else computed when asked: the fit does not need them)."""
        return self.proba_ if self.probability == "share" else _shares(self.counts_)

    @property
    def labels_(self) -> np.ndarray:
        """Class index per task after the tie rule (``proba_`` itself stays the vote shares)."""
        return self.hard_labels_

    def result(self, data: AnnotationData) -> AggregationResult:
        n_votes = data.judgments_per_task().astype(np.float64)
        agreement = self.shares_[np.arange(data.n_tasks), self.hard_labels_]  # top / n_i
        # Annotator agreement with the majority label of the tasks they judged.
        agrees = (data.label == self.hard_labels_[data.task]).astype(np.float64)
        n_judged = data.judgments_per_annotator().astype(np.float64)
        agree_share = np.bincount(data.annotator, weights=agrees, minlength=data.n_annotators)
        agree_share = np.divide(agree_share, n_judged, out=np.zeros_like(agree_share),
                                where=n_judged > 0)
        return AggregationResult(
            method=self.method,
            classes=data.classes,
            proba=self.proba_,
            task_columns={
                "n_judgments": n_votes,
                "agreement": agreement,
                "tie": self.tied_.astype(np.float64),
            },
            annotator_columns={
                "n_judgments": n_judged,
                "competence": agree_share,
            },
            info={"tie": self.tie, "n_ties": int(self.tied_.sum()),
                  **({"vote_accuracy": self.accuracy_,
                      "vote_correlation": 1.0 / (1.0 + self.concentration_)}
                     if np.isfinite(self.accuracy_) else {})},
        )


def _shares(counts: np.ndarray) -> np.ndarray:
    """n_ik / n_i per row of ``counts``, 1/K for a row without votes (``kernels.summarise``'s
    shares, the same divisions)."""
    totals = counts.sum(axis=1)
    shares = np.divide(counts, np.maximum(totals, 1.0)[:, None])
    shares[totals == 0] = 1.0 / counts.shape[1]
    return shares


def _log_votes(counts: np.ndarray, p: float, s: float, totals: np.ndarray | None = None
               ) -> np.ndarray:
    """(n_tasks, K): log P(votes | T = t) up to a term shared by every t and (p, s)-free:
    Σ_l [log Γ(n_l + s a_tl) − log Γ(s a_tl)] − [log Γ(n + s) − log Γ(s)]. ``totals``: the
    rows' sums n, when the caller has them."""
    k = counts.shape[1]
    hit, miss = s * p, s * (1.0 - p) / (k - 1)
    missed = _log_rising(counts, miss)
    totals = counts.sum(axis=1) if totals is None else totals
    shared = missed.sum(axis=1) - _log_rising(totals, s)
    return shared[:, None] + _log_rising(counts, hit) - missed


def _log_rising(counts: np.ndarray, a: float) -> np.ndarray:
    """log Γ(n + a) − log Γ(a) = Σ_{j<n} log(a + j) for whole n ≥ 0, from a table of the
    cumulative sums. As a difference of two ``gammaln`` it lost digits where a is large: at
    the independent crowd's s = e^14 both are ~1.6e7, and their rounding (2e-9 each, times the
    tasks) was louder than the loss's changes near its least, so the bounded search stopped
    where the rounding put it (machine-dependent, docs/models.md)."""
    whole = counts.astype(np.int64)
    table = np.zeros(int(whole.max(initial=0)) + 1)
    np.cumsum(np.log(a + np.arange(table.shape[0] - 1)), out=table[1:])
    return table[whole]


def exchangeable_fit(counts: np.ndarray) -> tuple[float, float]:
    """(p, s) maximising Σ_i log Σ_t P(votes_i | t) / K over the rows of ``counts``: p in
    (1/K, 1), the vote's accuracy; s > 0, the concentration (votes correlate by 1/(1 + s)).

    With few votes a task the likelihood has a ridge (three votes a task: only the share of
    unanimous tasks is seen, one number for two parameters), and where on it the fit stops
    moves the posterior. So the independent crowd (s at its bound, one parameter p, a bounded
    1-D search) is the model unless the correlated one (a 12 × 12 grid over (logit p, log s),
    refined by Nelder–Mead) beats it by more than Schwarz's ½ ln(tasks) (BIC). Tasks with the
    same votes are one row with a weight: a crowd has few distinct rows."""
    rows, _, weight = unique_rows(counts)
    return _fit_rows(rows, weight)


def unique_rows(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(counts, axis=0, return_inverse=True, return_counts=True)`` for rows of
    vote counts (whole numbers ≥ 0): the distinct rows in lexicographic order, each row's index
    among them and their counts. Each row read as a number in base max + 1 (its first column the
    most significant: the same order), counted by ``np.bincount`` when the numbers are few
    (a crowd's: at most 21² for two classes and 20 votes a task), else by ``np.unique`` of the
    numbers; no sort of (n, K) rows."""
    n, k = counts.shape
    if n == 0:
        return counts[:0], np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    whole = counts.astype(np.int64)
    base = int(whole.max()) + 1
    if base ** k > 1 << 24:
        rows, inverse, weight = np.unique(counts, axis=0, return_inverse=True,
                                          return_counts=True)
        return rows, inverse.reshape(-1), weight
    key = whole[:, 0].copy()
    for c in range(1, k):
        key *= base
        key += whole[:, c]
    tally = np.bincount(key, minlength=base ** k)
    present = np.flatnonzero(tally)
    position = np.zeros(tally.shape[0], dtype=np.int64)
    position[present] = np.arange(present.shape[0])
    return _decode_rows(present, base, k).astype(counts.dtype), position[key], tally[present]


def _decode_rows(keys: np.ndarray, base: int, k: int) -> np.ndarray:
    """(len(keys), k) float64: the rows of counts whose base-``base`` numbers are ``keys``."""
    rows = np.empty((keys.shape[0], k))
    rest = keys.copy()
    for c in range(k - 1, -1, -1):
        rows[:, c] = rest % base
        rest //= base
    return rows


def _fit_rows(rows: np.ndarray, weight: np.ndarray) -> tuple[float, float]:
    """``exchangeable_fit`` of the distinct rows ``rows``, each ``weight`` times: scipy's
    bounded search and Nelder–Mead, compiled (``kernels.exchangeable_search``; the calls of
    the loss from scipy were the cost). Loss: −Σ_r w_r log Σ_t P(votes_r | t) / K in
    x = (logit of p's place in (1/K, 1), log s), logsumexp's steps in log space (a task's
    likelihood is a product over its votes)."""
    k = rows.shape[1]

    def unpack(a: float, b: float) -> tuple[float, float]:
        return 1.0 / k + (1.0 - 1.0 / k) / (1.0 + np.exp(-np.float64(a))), float(np.exp(b))

    high = _LOG_S_BOUNDS[1]
    single_a, single_fun, a, b, fun = kernels.exchangeable_search(
        rows.astype(np.int64), weight.astype(np.float64), np.linspace(-6.0, 6.0, 12),
        np.linspace(*_LOG_S_BOUNDS, 12), np.array([-12.0, _LOG_S_BOUNDS[0]]),
        np.array([12.0, high]))
    if single_fun - fun > 0.5 * np.log(max(int(weight.sum()), 2)):
        return unpack(a, b)
    return unpack(single_a, high)


def exchangeable_posterior(counts: np.ndarray, p: float, s: float) -> np.ndarray:
    """P(T_i = t | votes) ∝ P(votes | t) under a uniform prior (module doc)."""
    log_joint = _log_votes(counts, p, s)
    log_joint -= log_joint.max(axis=1, keepdims=True)
    proba = np.exp(log_joint)
    return proba / proba.sum(axis=1, keepdims=True)
