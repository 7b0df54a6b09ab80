"""Qrels as a posterior, draws from it, and what the draws say about scores and comparisons.

The aggregation gives each judged task (topic, doc) a probability over the label classes. A draw
of the qrels picks every task's class independently from its probability (a fixed seed gives the
same draws); fixed qrels are the one-hot case, where every draw is the same. The summaries of a
score over the draws are its mean, its standard deviation and its central 95 % interval (the
2.5 and 97.5 percentiles); for two runs, P(a beats b) is the share of draws in which a's score is
strictly better; Kendall's tau-b compares two rankings of the runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

INTERVAL = (2.5, 97.5)


@dataclass(frozen=True)
class Posterior:
    """Per judged task: topic, doc, and a probability over ``classes`` (label values, ascending).

    Classes from ``relevant_index`` up count as relevant; a class's value, clipped at 0, is its
    nDCG gain (trec_eval's convention: the qrels value is the gain).
    """

    topics: np.ndarray  # (J,) str
    docs: np.ndarray  # (J,) str
    proba: np.ndarray  # (J, C)
    classes: np.ndarray  # (C,) int
    relevant_index: int

    def __post_init__(self) -> None:
        n = len(self.topics)
        if self.docs.shape != (n,) or self.proba.shape != (n, len(self.classes)):
            raise ValueError("topics, docs and proba must describe the same tasks")

    @property
    def n_tasks(self) -> int:
        return len(self.topics)

    @property
    def deterministic(self) -> bool:
        """Every task has one certain class: all draws are the same qrels."""
        return bool(np.all(self.proba.max(axis=1) == 1.0)) if self.n_tasks else True

    def most_probable(self) -> np.ndarray:
        """(J,) class index of each task's most probable label (ties: the lower class)."""
        return np.argmax(self.proba, axis=1)

    def p_relevant(self) -> np.ndarray:
        return self.proba[:, self.relevant_index:].sum(axis=1)

    @classmethod
    def from_qrels(cls, qrels: Mapping[tuple[str, str], int], *,
                   relevant_from: int = 1) -> Posterior:
        """Fixed qrels {(topic, doc): value}: one-hot probabilities."""
        keys = list(qrels)
        values = np.array([qrels[k] for k in keys], dtype=np.int64)
        classes = np.unique(np.concatenate([values, [0, relevant_from]]))
        proba = np.zeros((len(keys), len(classes)))
        proba[np.arange(len(keys)), np.searchsorted(classes, values)] = 1.0
        return cls(topics=np.array([k[0] for k in keys], dtype=object),
                   docs=np.array([k[1] for k in keys], dtype=object), proba=proba,
                   classes=classes, relevant_index=int(np.searchsorted(classes, relevant_from)))

    @classmethod
    def binary(cls, topics: Iterable[str], docs: Iterable[str],
               p_relevant: np.ndarray) -> Posterior:
        p = np.clip(np.asarray(p_relevant, dtype=np.float64), 0.0, 1.0)
        return cls(topics=np.array(list(topics), dtype=object),
                   docs=np.array(list(docs), dtype=object),
                   proba=np.stack([1.0 - p, p], axis=1), classes=np.array([0, 1]),
                   relevant_index=1)


def combine(posteriors: list[Posterior], mode: str) -> Posterior:
    """Union (relevant if any source says so) or intersection (if all do) of several qrels
    (Wallis & Thom 1996), as a binary posterior over the union of their tasks.

    Sources are independent given the documents: P(union) = 1 - prod(1 - p_i),
    P(intersection) = prod(p_i); a task a source did not judge is non-relevant in that source.
    """
    if mode not in ("union", "intersection"):
        raise ValueError(f"mode must be 'union' or 'intersection', got {mode!r}")
    if len(posteriors) < 2:
        raise ValueError("union and intersection need at least two sources")
    index: dict[tuple[str, str], int] = {}
    for post in posteriors:
        for key in zip(post.topics, post.docs, strict=True):
            index.setdefault(key, len(index))
    per_source = np.zeros((len(posteriors), len(index)))
    for s, post in enumerate(posteriors):
        rows = np.array([index[k] for k in zip(post.topics, post.docs, strict=True)],
                        dtype=np.int64)
        if len(rows):
            per_source[s, rows] = post.p_relevant()
    union = mode == "union"
    p = 1.0 - np.prod(1.0 - per_source, axis=0) if union else np.prod(per_source, axis=0)
    keys = list(index)
    return Posterior.binary([k[0] for k in keys], [k[1] for k in keys], p)


def draw_classes(proba: np.ndarray, samples: int, rng: np.random.Generator) -> np.ndarray:
    """(samples, J) class indices, each task drawn independently from its row of ``proba``."""
    n_tasks, n_classes = proba.shape
    u = rng.random((samples, n_tasks))
    if n_classes == 2:
        return (u >= proba[:, 0][None, :]).astype(np.int8)
    cdf = np.cumsum(proba, axis=1)[:, :-1]
    out = np.zeros((samples, n_tasks), dtype=np.int8)
    for c in range(n_classes - 1):
        out += u >= cdf[None, :, c]
    return out


def summarise(draws: np.ndarray, axis: int = 0) -> dict[str, np.ndarray]:
    """Mean, standard deviation and the central 95 % interval over ``axis``; a slice with NaN
    (a run that did not answer a topic: NaN in every draw) stays NaN."""
    with np.errstate(invalid="ignore"):
        low, high = np.percentile(draws, INTERVAL, axis=axis)
        return {"mean": np.mean(draws, axis=axis), "std": np.std(draws, axis=axis),
                "low": low, "high": high}


def win_probabilities(draws: np.ndarray, *, higher_is_better: bool = True) -> np.ndarray:
    """(R, R) matrix: [a, b] = share of draws where run a scores strictly better than run b.

    ``draws`` is (S, R), one score per draw and run.
    """
    better = np.greater if higher_is_better else np.less
    n_runs = draws.shape[1]
    out = np.empty((n_runs, n_runs))
    for a in range(n_runs):
        out[a] = better(draws[:, a:a + 1], draws).mean(axis=0)
    return out


def kendall_tau(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b between ``x`` (R,) and each row of ``y`` (R,) or (S, R); NaN if either
    ranking is constant."""
    y2 = np.atleast_2d(y)
    iu = np.triu_indices(len(x), k=1)
    dx = np.sign(x[iu[0]] - x[iu[1]])
    dy = np.sign(y2[:, iu[0]] - y2[:, iu[1]])
    concordance = (dy * dx[None, :]).sum(axis=1)
    n_x = np.count_nonzero(dx)
    n_y = np.count_nonzero(dy, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = concordance / np.sqrt(float(n_x) * n_y)
    tau = np.where((n_x > 0) & (n_y > 0), tau, np.nan)
    return tau if np.ndim(y) == 2 else tau[0]
