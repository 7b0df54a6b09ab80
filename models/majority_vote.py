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

from collections.abc import Callable
from typing import Literal, Self

import numpy as np
import scipy.optimize
from scipy.special import gammaln

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
        # Column by column (K is small): numpy's reductions along a row of K elements cost a
        # call per task, while a column operation is one pass over the tasks.
        counts = data.counts().astype(np.float64)
        columns = [counts[:, c] for c in range(data.n_classes)]
        totals = columns[0].copy()  # = judgments_per_task, without a second pass over them
        for column in columns[1:]:
            totals += column
        judged = totals > 0
        proba = np.divide(counts, np.maximum(totals, 1.0)[:, None])
        proba[~judged] = 1.0 / data.n_classes
        self.counts_ = counts
        self.shares_ = proba
        self.accuracy_, self.concentration_ = float("nan"), float("nan")
        if self.probability == "posterior" and data.n_classes > 1 and (totals > 1).any():
            # a crowd has few distinct vote rows: fit and posterior on those, then gathered
            rows, inverse, weight = unique_rows(counts)
            several = rows.sum(axis=1) > 1
            self.accuracy_, self.concentration_ = _fit_rows(rows[several], weight[several])
            proba = exchangeable_posterior(rows, self.accuracy_, self.concentration_)[inverse]
            proba[~judged] = 1.0 / data.n_classes
        self.proba_ = proba
        top = columns[0].copy()
        for column in columns[1:]:
            np.maximum(top, column, out=top)
        tied = np.stack([column == top for column in columns], axis=1)  # the top classes
        n_top = sum(column == top for column in columns[1:]) + (columns[0] == top)
        self.tied_ = (n_top > 1) & judged
        self.hard_labels_ = self._break_ties(tied)
        progress(1.0, "majority vote")
        return self

    def _break_ties(self, tied: np.ndarray) -> np.ndarray:
        n_classes = tied.shape[1]
        if self.tie in ("lowest", "highest"):
            # = np.argmax over each row (of its reverse for "highest"), column by column: the
            # first tied class in the rule's order wins (a row with none tied gets argmax's 0)
            order = range(n_classes - 1, -1, -1) if self.tie == "lowest" else range(n_classes)
            labels = np.full(tied.shape[0], 0 if self.tie == "lowest" else n_classes - 1,
                             dtype=np.int64)
            for c in order:
                labels[tied[:, c]] = c
            return labels
        # Random: a uniform key per (task, class); the tied class with the largest key wins.
        rng = np.random.default_rng(self.random_state)
        keys = np.where(tied, rng.random(tied.shape), -1.0)
        return np.argmax(keys, axis=1)

    @property
    def labels_(self) -> np.ndarray:
        """Class index per task after the tie rule (``proba_`` itself stays the vote shares)."""
        return self.hard_labels_

    def result(self, data: AnnotationData) -> AggregationResult:
        n_votes = data.judgments_per_task().astype(np.float64)
        agreement = self.shares_[np.arange(data.n_tasks), self.hard_labels_]
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


def _log_votes(counts: np.ndarray, p: float, s: float, totals: np.ndarray | None = None
               ) -> np.ndarray:
    """(n_tasks, K): log P(votes | T = t) up to a term shared by every t and (p, s)-free:
    Σ_l [log Γ(n_l + s a_tl) − log Γ(s a_tl)] − [log Γ(n + s) − log Γ(s)]. ``totals``: the
    rows' sums n, when the caller has them."""
    k = counts.shape[1]
    hit, miss = s * p, s * (1.0 - p) / (k - 1)
    missed = gammaln(counts + miss) - gammaln(miss)
    totals = counts.sum(axis=1) if totals is None else totals
    shared = missed.sum(axis=1) - (gammaln(totals + s) - gammaln(s))
    return shared[:, None] + (gammaln(counts + hit) - gammaln(hit)) - missed


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
    rows = np.empty((present.shape[0], k), dtype=counts.dtype)
    rest = present.copy()
    for c in range(k - 1, -1, -1):
        rows[:, c] = rest % base
        rest //= base
    return rows, position[key], tally[present]


def _fit_rows(rows: np.ndarray, weight: np.ndarray) -> tuple[float, float]:
    """``exchangeable_fit`` of the distinct rows ``rows``, each ``weight`` times."""
    k = rows.shape[1]
    totals = rows.sum(axis=1)

    def unpack(x: np.ndarray) -> tuple[float, float]:
        return 1.0 / k + (1.0 - 1.0 / k) / (1.0 + np.exp(-x[0])), float(np.exp(x[1]))

    def loss(x: np.ndarray) -> float:
        # log space: a task's likelihood is a product over its votes. scipy's logsumexp's
        # steps, without its checks (a few hundred calls on a handful of rows: the calls were
        # the cost); the same operations, so the same bits
        log_joint = _log_votes(rows, *unpack(x), totals)
        top = log_joint.max(axis=1, keepdims=True)
        top[~np.isfinite(top)] = 0
        total = np.log(np.exp(log_joint - top).sum(axis=1))
        total += top[:, 0]
        return -float(total @ weight)

    high = _LOG_S_BOUNDS[1]
    single = scipy.optimize.minimize_scalar(lambda a: loss(np.array([a, high])),
                                            bounds=(-12.0, 12.0), method="bounded")
    grid = [np.array([a, b]) for a in np.linspace(-6.0, 6.0, 12)
            for b in np.linspace(*_LOG_S_BOUNDS, 12)]
    res = scipy.optimize.minimize(loss, _grid_start(grid, loss, rows, weight, totals),
                                  method="Nelder-Mead",
                                  bounds=[(-12.0, 12.0), _LOG_S_BOUNDS],
                                  options={"xatol": 1e-6, "fatol": 1e-9, "maxiter": 2000})
    if float(single.fun) - float(res.fun) > 0.5 * np.log(max(int(weight.sum()), 2)):
        return unpack(res.x)
    return unpack(np.array([single.x, high]))


def _grid_start(grid: list[np.ndarray], loss: Callable[[np.ndarray], float],
                rows: np.ndarray, weight: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """``min(grid, key=loss)``: the loss over the whole grid in one vectorised pass (a call
    per point cost more than the points), then ``loss`` itself on the points within 1e-9 of
    the least (the pass rounds differently: numpy's vectorised exp, a matrix product), so the
    point returned is the one ``min`` returns, bit for bit."""
    k = rows.shape[1]
    points = np.array(grid)
    p = 1.0 / k + (1.0 - 1.0 / k) / (1.0 + np.exp(-points[:, 0]))
    s = np.exp(points[:, 1])
    hit, miss = (s * p)[:, None, None], (s * (1.0 - p) / (k - 1))[:, None, None]
    missed = gammaln(rows[None] + miss) - gammaln(miss)  # (points, rows, K)
    shared = missed.sum(axis=2) - (gammaln(totals[None] + s[:, None]) - gammaln(s)[:, None])
    log_joint = shared[:, :, None] + (gammaln(rows[None] + hit) - gammaln(hit)) - missed
    top = log_joint.max(axis=2, keepdims=True)
    top[~np.isfinite(top)] = 0
    values = -((np.log(np.exp(log_joint - top).sum(axis=2)) + top[:, :, 0]) @ weight)
    if not np.all(np.isfinite(values)):
        return min(grid, key=loss)
    least = values.min()
    near = np.flatnonzero(values <= least + 1e-9 * max(abs(least), 1.0))
    return min((grid[i] for i in near), key=loss)


def exchangeable_posterior(counts: np.ndarray, p: float, s: float) -> np.ndarray:
    """P(T_i = t | votes) ∝ P(votes | t) under a uniform prior (module doc)."""
    log_joint = _log_votes(counts, p, s)
    log_joint -= log_joint.max(axis=1, keepdims=True)
    proba = np.exp(log_joint)
    return proba / proba.sum(axis=1, keepdims=True)
