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

Everything is a gather or a segment sum over judgments (np.bincount): no tasks × annotators array.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Self

import numpy as np
import scipy.sparse as sp
from scipy.special import digamma

from models.base import AggregationResult, Aggregator, ProgressCallback, no_progress
from models.data import UNKNOWN, AnnotationData
from models.params import (
    MAX_PRIOR,
    Iterations,
    Prior,
    Range,
    Restarts,
    Seed,
    Tolerance,
    validated,
)
from models.warm import cold_check_due, result_column, warm_record

Variant = Literal["em", "vb"]  # EM with smoothing, or variational Bayes with priors
ClassPriorKind = Literal["learned", "uniform"]
WARM_TOL = 1e-5  # log-likelihood gain per judgment below which a warm start stops


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
        class_prior: ClassPriorKind = "uniform",
    ) -> None:
        self.class_prior = class_prior
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
            init: MACE | None = None, check: bool | None = None) -> Self:
        """EM (or VB) with ``n_restarts`` random restarts; with ``init`` (a fitted MACE, e.g. on an
        earlier snapshot of the same collection) one warm restart from its competences and spam
        distributions (matched by annotator id; a new annotator gets their mean) instead, stopping
        once an iteration gains less than max(tol, WARM_TOL) log-likelihood per judgment. When
        ``models.warm.cold_check_due`` says so (``check``: True always, False never, None by the
        growth of the judgments since the last check) the random restarts of a cold fit run too,
        with the same draws, and the restart with the best log-likelihood is kept, warm or not;
        ``start_`` says which."""
        k = data.n_classes
        smoothing = 0.01 / k if self.smoothing is None else float(self.smoothing)
        gold = data.gold if (self.use_gold and data.gold is not None) else None
        idx = _Judgments.from_data(data, gold)
        rng = np.random.default_rng(self.random_state)
        checked = init is None or cold_check_due(init, data.n_judgments, check)
        # The warm restart first, then the cold fit's random ones (a cold fit: only those).
        starts = (([] if init is None else ["warm"])
                  + (["cold"] * self.n_restarts if checked else []))
        total = max(len(starts) * max(self.n_iter, 1), 1)

        best: tuple[float, np.ndarray, np.ndarray, list[float], str] | None = None
        restart_ll: list[float] = []
        for r, start in enumerate(starts):
            if start == "warm":
                assert init is not None
                knowing, spam = _aligned_parameters(init, data)
                # A warm start begins near the optimum: stop once an iteration gains little.
                tol = max(self.tol, WARM_TOL)
            else:
                knowing, spam = _random_start(rng, data.n_annotators, k, smoothing)
                tol = self.tol

            def report(it: int, ll: float, r: int = r) -> None:
                progress((r * self.n_iter + it + 1) / total,
                         f"restart {r + 1}/{len(starts)}, log-likelihood {ll:.2f}")

            ll, knowing, spam, log_prior, history = self._em(
                idx, knowing, spam, smoothing=smoothing, tol=tol,
                n_judgments=data.n_judgments, report=report)
            restart_ll.append(ll)
            if best is None or ll > best[0]:
                best = (ll, knowing, spam, log_prior, history, start)
        assert best is not None
        ll, knowing, spam, log_prior, history, self.start_ = best
        self.cold_checked_ = init is not None and checked
        self.cold_checked_at_ = (data.n_judgments if checked
                                 else int(getattr(init, "cold_checked_at_", 0)))
        self.restart_log_likelihoods_ = restart_ll
        self._store(data, idx, ll, knowing, spam, log_prior, history)
        return self

    def _store(self, data: AnnotationData, idx: _Judgments, ll: float, knowing: np.ndarray,
               spam: np.ndarray, log_prior: np.ndarray, history: list[float]) -> None:
        """The fitted attributes of the kept restart: competences, spam distributions, the
        posterior (one more E step), its entropy and the confident selection."""
        _, proba, _ = _e_step(idx, knowing, spam, log_prior)
        self.prior_ = np.exp(log_prior) / np.exp(log_prior).sum()
        self.log_likelihood_ = ll
        self.loss_history_ = [-v / max(data.n_judgments, 1) for v in history]
        self.objective_history_ = history
        self.annotator_ids_ = data.annotator_ids
        # Normalised: under VB the exp-digamma values are sub-normalised weights.
        self.competence_ = knowing[:, 1] / knowing.sum(axis=1)
        self.spam_dist_ = spam / spam.sum(axis=1, keepdims=True)
        self.proba_ = proba
        self.entropy_ = -np.sum(np.where(proba > 0, proba * np.log(np.where(proba > 0, proba, 1)),
                                         0.0), axis=1)
        self.selected_ = _select_confident(self.entropy_, data.judgments_per_task() > 0,
                                           self.threshold)

    def _em(self, idx: _Judgments, knowing: np.ndarray, spam: np.ndarray, *, smoothing: float,
            tol: float, n_judgments: int, report: Callable[[int, float], None]
            ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, list[float]]:
        """One restart from (``knowing``, ``spam``): the first E step under MACE's uniform
        class prior, then up to ``n_iter`` M and E steps, stopping once an iteration gains at
        most ``tol`` log-likelihood per judgment (0: never). (log-likelihood, knowing, spam,
        log class prior, log-likelihood history)."""
        k = spam.shape[1]
        log_prior = np.full(k, -np.log(k))  # the first E step: MACE's uniform prior
        ll, _, counts = _e_step(idx, knowing, spam, log_prior)
        history = [ll]
        for it in range(self.n_iter):
            knowing, spam, log_prior = self._m_step(counts, smoothing)
            ll, _, counts = _e_step(idx, knowing, spam, log_prior)
            history.append(ll)
            report(it, ll)
            if tol > 0 and abs(history[-1] - history[-2]) <= tol * n_judgments:
                break
        return ll, knowing, spam, log_prior, history

    def _m_step(self, counts: tuple[np.ndarray, np.ndarray, np.ndarray], smoothing: float
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(knowing, spam, log class prior) from the expected counts. The class prior is the
        judged tasks' mean posterior (``class_prior="learned"``; VB: its Dirichlet(1) posterior's
        exp E[log]) or MACE's uniform one."""
        knowing_counts, spam_counts, class_counts = counts
        k = class_counts.shape[0]
        if self.class_prior == "uniform":
            log_prior = np.full(k, -np.log(k))
        elif self.variant == "em":
            log_prior = np.log((class_counts + smoothing) / (class_counts + smoothing).sum())
        else:
            log_prior = digamma(class_counts + 1.0) - digamma(class_counts.sum() + k)
        if self.variant == "em":
            knowing = knowing_counts + smoothing
            spam = spam_counts + smoothing
            return (knowing / knowing.sum(axis=1, keepdims=True),
                    spam / spam.sum(axis=1, keepdims=True), log_prior)
        knowing = knowing_counts + np.array([self.alpha, self.beta])
        spam = spam_counts + self.strategy_prior
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
        return init


@dataclass(frozen=True)
class _Judgments:
    """The sparse operators one E step needs, built once per fit.

    Every segment sum of the E step is a CSR product over the judgments (scipy, int32 indices):
    one fused pass over the indices where ``np.bincount`` needs a gather, a min/max scan and a
    scatter. Each operator's row holds its judgments in input order, so every sum adds the same
    terms in the same order as ``np.bincount`` over the judgments would (identical results).
    """

    by_task: sp.csr_matrix  # (n_tasks, n_annotators * K): Σ_{a ∈ i} table[annotator, label]
    by_task_label: sp.csr_matrix  # (n_tasks * K, n_annotators * K): the same per (i, label)
    by_ann_label: sp.csr_matrix  # (n_annotators * K, n_tasks * K): Σ_a w_a P(T_i = l_a)
    ann_label_sizes: np.ndarray  # judgments per (annotator, label): by_ann_label's row lengths
    n_tasks: int
    n_annotators: int
    n_classes: int
    per_annotator: np.ndarray  # judgments per annotator
    label_counts: np.ndarray  # (n_annotators, K): judgments per annotator and label
    judged: np.ndarray  # (n_tasks,) bool: tasks with a judgment
    impossible: np.ndarray | None  # (n_tasks, K) True where a control label rules a class out

    @classmethod
    def from_data(cls, data: AnnotationData, gold: np.ndarray | None) -> _Judgments:
        k = data.n_classes
        impossible = None
        if gold is not None:
            known = np.flatnonzero(gold != UNKNOWN)
            impossible = np.zeros((data.n_tasks, k), dtype=bool)
            impossible[known] = True
            impossible[known, gold[known]] = False
        ann_label = data.annotator * k + data.label
        task_label = data.task * k + data.label
        label_counts = np.bincount(ann_label, minlength=data.n_annotators * k).reshape(-1, k)
        n_ann_labels = data.n_annotators * k
        return cls(_rows(data.task, ann_label, data.n_tasks, n_ann_labels),
                   _rows(task_label, ann_label, data.n_tasks * k, n_ann_labels),
                   _rows(ann_label, task_label, n_ann_labels, data.n_tasks * k),
                   label_counts.ravel(),
                   data.n_tasks, data.n_annotators, k,
                   data.judgments_per_annotator().astype(np.float64),
                   label_counts.astype(np.float64), data.judgments_per_task() > 0, impossible)


def _rows(row: np.ndarray, col: np.ndarray, n_rows: int, n_cols: int) -> sp.csr_matrix:
    """A CSR matrix of ones at (row[a], col[a]), each row's entries in judgment order (a stable
    sort; no duplicate summing or index sorting)."""
    order = np.argsort(row, kind="stable")
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=n_rows), out=indptr[1:])
    return sp.csr_matrix((np.ones(row.shape[0]), col[order], indptr), shape=(n_rows, n_cols))


def _e_step(
    idx: _Judgments, knowing: np.ndarray, spam: np.ndarray, log_prior: np.ndarray
) -> tuple[float, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Posterior over true labels, marginal log-likelihood and expected counts.

    Per judgment a = (i, j, l): g = P(spam) ξ_jl and h = P(know), so P(y_a | t) = g + h [t = l].
    Log space, since a task's likelihood is a product over its judgments:
    log P(y_i | t) = Σ_a log g_a + Σ_{a: l_a = t} (log(g_a + h_a) − log g_a).
    """
    k = idx.n_classes
    # g and h depend on (annotator, label) only: (n_annotators, K) tables, summed per task.
    g = np.maximum(knowing[:, :1] * spam, 1e-300)  # smoothing=0 may reach 0: keep logs finite
    log_g = np.log(g)
    g += knowing[:, 1:]  # g + h
    bonus_table = np.log(g)
    bonus_table -= log_g
    know_table = np.divide(knowing[:, 1:], g)
    log_joint = (idx.by_task_label @ bonus_table.ravel()).reshape(idx.n_tasks, k)
    base = idx.by_task @ log_g.ravel()
    # Column by column: numpy spends a call per task on a row of K elements (a reduction along
    # axis 1 or a (n, 1) broadcast); a column is one strided pass. Same operations, same order.
    columns = [log_joint[:, c] for c in range(k)]
    for c, column in enumerate(columns):
        column += base
        column += log_prior[c]
    if idx.impossible is not None:
        log_joint[idx.impossible] = -np.inf  # a control label: only its own class is possible
    top = columns[0].copy()
    for column in columns[1:]:
        np.maximum(top, column, out=top)
    for column in columns:
        column -= top
    proba = np.exp(log_joint, out=log_joint)
    total = _row_sum(proba)
    for column in columns:
        column /= total
    log_likelihood = float(np.sum(np.log(total)) + np.sum(top))

    # P(annotator knew | data) = P(T = l | data) h / (g + h); otherwise it spammed label l.
    weights = idx.by_ann_label
    weights.data = np.repeat(know_table.ravel(), idx.ann_label_sizes)  # row c: h / (g + h) of c
    know = (weights @ proba.ravel()).reshape(idx.n_annotators, k)
    spam_counts = idx.label_counts - know  # each judgment either knew or spammed its label
    know_total = _row_sum(know)
    knowing_counts = np.stack([idx.per_annotator - know_total, know_total], axis=1)
    judged = proba if idx.judged.all() else proba[idx.judged]
    # = judged.sum(axis=0), which numpy adds row after row: a running sum per column, bit for bit.
    class_counts = np.array([np.cumsum(judged[:, c])[-1] if len(judged) else 0.0
                             for c in range(k)])
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


def _random_start(rng: np.random.Generator, n_annotators: int, k: int,
                  smoothing: float) -> tuple[np.ndarray, np.ndarray]:
    """MACE.java's initialisation: uniform(0, 1) + smoothing, normalised, per annotator."""
    knowing = rng.random((n_annotators, 2)) + smoothing
    knowing /= knowing.sum(axis=1, keepdims=True)
    spam = rng.random((n_annotators, k)) + smoothing
    spam /= spam.sum(axis=1, keepdims=True)
    return knowing, spam


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
