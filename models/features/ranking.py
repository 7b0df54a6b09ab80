"""Ranking features: where each submitted run placed each task's document (thesis §4.4.4).

A run is given as ``{topic: [doc, doc, ...]}``, best first (``app.formats.runs`` sorts a TREC run
file by score descending, ties by doc id descending, as trec_eval does). For task (t, d) and run r,
with rank(r, t, d) the 1-based position of d in r's ranking for t:

- ``run:<r>:log_rank`` = ln rank(r, t, d), in [0, ln(depth + 1)];
- ``run:<r>:rr``       = 1 / rank(r, t, d), the reciprocal rank, in (0, 1];

and for all runs together

- ``runs:retrieved`` = share of runs that retrieved d for t (runs that answered t count as
  runs that did not retrieve d; runs that skipped t too);
- ``runs:mean_rr``   = mean reciprocal rank over the runs.

Ranks are heavy-tailed (1 .. 1,000 and more), so the raw rank would make an RBF kernel see
only the tail; the log rank and the reciprocal rank are on sane scales at both ends.

**Beyond depth.** A document the run did not retrieve for t gets rank = depth + 1, where depth is
the length of the run's ranking for t, and reciprocal rank 0. A topic the run did not answer at all
gets rank = global depth + 1, with global depth = the longest ranking of any run for any topic
(``default_depth`` overrides it), and reciprocal rank 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
from scipy.special import ndtri

Ranking = Sequence[str]
Run = Mapping[str, Ranking]  # topic -> doc ids, best first
RankTransform = Literal["normal", "log_rr", "both"]
RANK_TRANSFORMS = ("normal", "log_rr", "both")

SUMMARY_FEATURES = ("runs:retrieved", "runs:mean_rr")
NORMAL_SUMMARY_FEATURES = ("runs:retrieved", "runs:mean_normal")


def ranking_feature_names(run_names: Sequence[str],
                          transform: RankTransform = "normal") -> list[str]:
    _check_transform(transform)
    names = []
    for name in run_names:
        if transform in ("normal", "both"):
            names.append(f"run:{name}:normal")
        if transform in ("log_rr", "both"):
            names += [f"run:{name}:log_rank", f"run:{name}:rr"]
    if transform == "normal":
        return names + list(NORMAL_SUMMARY_FEATURES)
    if transform == "both":
        return names + ["runs:retrieved", "runs:mean_rr", "runs:mean_normal"]
    return names + list(SUMMARY_FEATURES)


def _check_transform(transform: str) -> None:
    if transform not in RANK_TRANSFORMS:
        raise ValueError(f"rank transform must be one of {RANK_TRANSFORMS}, not {transform!r}")


def task_ranks(
    tasks: Sequence[tuple[str, str]],
    runs: Mapping[str, Run],
    *,
    default_depth: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Ranks (n_tasks, n_runs) with beyond-depth values filled in, and a mask of retrieved ones."""
    names = list(runs)
    if default_depth is None:
        default_depth = max(
            (len(ranking) for run in runs.values() for ranking in run.values()), default=0
        )
    by_topic: dict[str, dict[str, int]] = {}
    for i, (topic, doc) in enumerate(tasks):
        by_topic.setdefault(topic, {})[doc] = i
    ranks = np.empty((len(tasks), len(names)), dtype=np.float64)
    retrieved = np.zeros((len(tasks), len(names)), dtype=bool)
    topic_of_task = [t for t, _ in tasks]
    for j, name in enumerate(names):
        run = runs[name]
        depth = np.array(
            [len(run[t]) if t in run else default_depth for t in topic_of_task], dtype=np.float64
        )
        ranks[:, j] = depth + 1.0
        for topic, wanted in by_topic.items():
            ranking = run.get(topic)
            if not ranking:
                continue
            for position, doc in enumerate(ranking, start=1):
                i = wanted.get(doc)
                if i is not None and not retrieved[i, j]:
                    ranks[i, j] = position
                    retrieved[i, j] = True
    return ranks, retrieved


def normal_scores(
    tasks: Sequence[tuple[str, str]], ranks: np.ndarray, retrieved: np.ndarray
) -> np.ndarray:
    """(n_tasks, n_runs) Blom normal scores of each run's ranking within each topic's tasks.

    Per topic t and run r: the n tasks of t are ranked by r's rank (1 = best), the ones r did not
    retrieve after its last retrieved one, and a task at pool rank k gets
    −Φ⁻¹((k − 3/8) / (n + 1/4)) (Blom 1958; the best task highest). Tied tasks (the unretrieved
    tail, or every task of a topic r did not answer) get the mean of the scores of the ranks
    they share, i.e. about
    E[z | z below the last retrieved one]: 0 for a topic r did not answer, and 0 for a topic
    with one task.
    """
    out = np.zeros(ranks.shape, dtype=np.float64)
    topic_of_task = np.array([t for t, _ in tasks], dtype=object)
    if not len(tasks):
        return out
    _, topic_index = np.unique(topic_of_task, return_inverse=True)
    for members in _groups(topic_index):
        n = len(members)
        blom = -ndtri((np.arange(1, n + 1) - 0.375) / (n + 0.25))  # best first: highest
        for j in range(ranks.shape[1]):
            got = retrieved[members, j]
            order = np.argsort(ranks[members[got], j], kind="stable")
            k = int(got.sum())
            scores = np.empty(n)
            placed = np.flatnonzero(got)[order]
            scores[placed] = blom[:k]
            if k < n:
                scores[~got] = blom[k:].mean()
            out[members, j] = scores
    return out


def _groups(index: np.ndarray) -> list[np.ndarray]:
    order = np.argsort(index, kind="stable")
    bounds = np.flatnonzero(np.diff(index[order])) + 1
    return np.split(order, bounds)


def ranking_features(
    tasks: Sequence[tuple[str, str]],
    runs: Mapping[str, Run],
    *,
    default_depth: int | None = None,
    transform: RankTransform = "normal",
) -> tuple[list[str], np.ndarray]:
    """Feature names (:func:`ranking_feature_names`) and their (n_tasks, d) matrix: with
    ``transform="normal"`` (default) one Blom normal score per run (:func:`normal_scores`) plus
    ``runs:retrieved`` and ``runs:mean_normal``; with ``"log_rr"`` (the features until
    2026-11-27) log rank and reciprocal rank per run plus ``runs:retrieved`` and
    ``runs:mean_rr``; ``"both"`` all of them."""
    names = ranking_feature_names(list(runs), transform)
    n = len(tasks)
    if not runs:
        return [], np.zeros((n, 0))
    ranks, retrieved = task_ranks(tasks, runs, default_depth=default_depth)
    rr = np.where(retrieved, 1.0 / ranks, 0.0)
    columns: dict[str, np.ndarray] = {"runs:retrieved": retrieved.mean(axis=1),
                                      "runs:mean_rr": rr.mean(axis=1)}
    if transform in ("normal", "both"):
        z = normal_scores(tasks, ranks, retrieved)
        columns["runs:mean_normal"] = z.mean(axis=1)
    for j, name in enumerate(runs):
        columns[f"run:{name}:log_rank"] = np.log(ranks[:, j])
        columns[f"run:{name}:rr"] = rr[:, j]
        if transform in ("normal", "both"):
            columns[f"run:{name}:normal"] = z[:, j]
    out = np.empty((n, len(names)))
    for i, name in enumerate(names):
        out[:, i] = columns[name]
    return names, out
