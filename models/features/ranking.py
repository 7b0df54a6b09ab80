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

import numpy as np

Ranking = Sequence[str]
Run = Mapping[str, Ranking]  # topic -> doc ids, best first

SUMMARY_FEATURES = ("runs:retrieved", "runs:mean_rr")


def ranking_feature_names(run_names: Sequence[str]) -> list[str]:
    names = []
    for name in run_names:
        names += [f"run:{name}:log_rank", f"run:{name}:rr"]
    return names + list(SUMMARY_FEATURES)


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


def ranking_features(
    tasks: Sequence[tuple[str, str]],
    runs: Mapping[str, Run],
    *,
    default_depth: int | None = None,
) -> tuple[list[str], np.ndarray]:
    """Feature names (:func:`ranking_feature_names`) and the (n_tasks, 2·n_runs + 2) matrix."""
    names = ranking_feature_names(list(runs))
    n = len(tasks)
    if not runs:
        return [], np.zeros((n, 0))
    ranks, retrieved = task_ranks(tasks, runs, default_depth=default_depth)
    rr = np.where(retrieved, 1.0 / ranks, 0.0)
    out = np.empty((n, len(names)))
    out[:, 0:-2:2] = np.log(ranks)
    out[:, 1:-2:2] = rr
    out[:, -2] = retrieved.mean(axis=1)
    out[:, -1] = rr.mean(axis=1)
    return names, out
