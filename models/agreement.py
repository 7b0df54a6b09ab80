"""Judging the judges: how far each rater (an LLM judge, an expert, a crowd worker) agrees with a
reference (the gold, an aggregate), how the raters agree with each other, and whether the runs
rank alike on each rater's qrels.

Long format throughout: a rater's labels are (task index, label) arrays; two raters meet on the
tasks both labelled (``np.intersect1d``), never through a tasks x raters matrix.

- exact agreement: the share of common tasks given the same grade;
- Cohen's κ (1960) and quadratic κ (Cohen 1968, weights (a − b)²) over the scale's grades,
  from the confusion matrix by scikit-learn's formula (``kappas``; checked against its
  ``cohen_kappa_score`` in the tests);
- leniency: the rater's mean grade minus the reference's on the same tasks (> 0: more lenient);
- Krippendorff's α (ordinal) over every rater and task, from per-task value counts (tasks x
  grades), by the ``krippendorff`` package;
- rankings: Kendall's τ-b (``scipy.stats.kendalltau``) between the runs' scores on two qrels,
  over every run and over the reference's top 10.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import krippendorff
import numpy as np
from scipy.stats import kendalltau

from models.evaluation.measures import parse_measure
from models.evaluation.scoring import evaluate_runs
from models.evaluation.uncertainty import Posterior

TOP = 10  # the head of a ranking whose order matters most


@dataclass(frozen=True)
class Labels:
    """One rater's labels: task indices (unique) and grades on the scale, aligned."""

    task: np.ndarray
    label: np.ndarray


def _finite(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def common(a: Labels, b: Labels) -> tuple[np.ndarray, np.ndarray]:
    """The grades of ``a`` and ``b`` on the tasks both labelled (in task order)."""
    _, ia, ib = np.intersect1d(a.task, b.task, assume_unique=True, return_indices=True)
    return a.label[ia], b.label[ib]


def confusion(mine: np.ndarray, theirs: np.ndarray, *, scale: Sequence[int]) -> np.ndarray:
    """Counts (K x K) of (the rater's grade, the reference's grade) over ``scale``."""
    grades = np.asarray(list(scale))
    k = grades.shape[0]
    cells = np.searchsorted(grades, mine) * k + np.searchsorted(grades, theirs)
    return np.bincount(cells, minlength=k * k).reshape(k, k)


def kappas(counts: np.ndarray) -> tuple[float | None, float | None]:
    """Cohen's κ and quadratic κ of a confusion matrix: 1 − Σ w·O / Σ w·E, O the observed
    shares, E the product of their marginals, w = 1 − I (plain) or (a − b)² (quadratic); None
    where Σ w·E = 0 (one grade on both sides). The formula of scikit-learn's
    ``cohen_kappa_score`` (the tests hold them equal), taken from the matrix the report builds
    anyway: that function's input checks cost 5–30 ms a call, and a judge x judge matrix of 30
    judges is 465 pairs."""
    n = counts.sum()
    if not n:
        return None, None
    observed = counts / n
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    k = np.arange(counts.shape[0], dtype=np.float64)
    out = []
    for weights in (1.0 - np.eye(counts.shape[0]), (k[:, None] - k[None, :]) ** 2):
        denominator = float(np.sum(weights * expected))
        out.append(None if denominator == 0.0 else
                   1.0 - float(np.sum(weights * observed)) / denominator)
    return out[0], out[1]


def agreement(rater: Labels, reference: Labels, *, scale: Sequence[int]) -> dict[str, Any]:
    """The rater against the reference on their common tasks: ``n``, ``exact``, ``kappa``,
    ``quadratic_kappa``, ``leniency`` and ``confusion`` (rows: the rater's grade, columns: the
    reference's, both over ``scale``). Figures are None when there is no common task, and κ is
    None when it is undefined (one grade on both sides)."""
    mine, theirs = common(rater, reference)
    n = int(mine.shape[0])
    counts = confusion(mine, theirs, scale=scale)
    kappa, quadratic = kappas(counts)
    return {"n": n, "exact": float(np.trace(counts) / n) if n else None,
            "kappa": kappa, "quadratic_kappa": quadratic,
            "leniency": float(np.mean(mine) - np.mean(theirs)) if n else None,
            "confusion": counts.tolist()}


def krippendorff_alpha(raters: Sequence[Labels], *, scale: Sequence[int],
                       level: str = "ordinal") -> float | None:
    """Krippendorff's α over every rater's labels: the per-task counts of each grade (tasks x
    grades) go to ``krippendorff.alpha``. None when fewer than two labels share a task or the
    grades do not vary."""
    if not raters:
        return None
    grades = np.asarray(list(scale))
    task = np.concatenate([r.task for r in raters])
    label = np.concatenate([r.label for r in raters])
    tasks, row = np.unique(task, return_inverse=True)
    counts = np.zeros((tasks.shape[0], grades.shape[0]), dtype=np.float64)
    np.add.at(counts, (row, np.searchsorted(grades, label)), 1.0)
    counts = counts[counts.sum(axis=1) >= 2]  # a task labelled once says nothing of agreement
    if counts.shape[0] == 0 or np.count_nonzero(counts.sum(axis=0)) < 2:
        return None
    return _finite(krippendorff.alpha(value_counts=counts, value_domain=grades,
                                      level_of_measurement=level))


def pairwise(raters: Sequence[Labels], *, scale: Sequence[int]) -> dict[str, list[list[Any]]]:
    """Every two raters on their common tasks: ``exact``, ``quadratic_kappa`` and ``n`` (the
    diagonal is each rater against itself)."""
    k = len(raters)
    exact: list[list[Any]] = [[None] * k for _ in range(k)]
    kappa: list[list[Any]] = [[None] * k for _ in range(k)]
    n: list[list[int]] = [[0] * k for _ in range(k)]
    for i in range(k):
        for j in range(i, k):
            found = agreement(raters[i], raters[j], scale=scale)
            for matrix, key in ((exact, "exact"), (kappa, "quadratic_kappa"), (n, "n")):
                matrix[i][j] = matrix[j][i] = found[key]
    return {"exact": exact, "quadratic_kappa": kappa, "n": n}


def ranking_agreement(scores: np.ndarray, reference: np.ndarray,
                      *, top: int = TOP) -> dict[str, Any]:
    """Kendall's τ-b between two score vectors over the same runs (NaN: a run without a score,
    left out): over every run and over the reference's ``top`` best runs."""
    ok = np.isfinite(scores) & np.isfinite(reference)
    s, r = scores[ok], reference[ok]
    out: dict[str, Any] = {"runs": int(ok.sum()), "tau": None, "tau_top": None}
    if s.shape[0] >= 2:
        out["tau"] = _finite(kendalltau(s, r).statistic)
    head = np.argsort(-r, kind="stable")[:top]
    if head.shape[0] >= 2:
        out["tau_top"] = _finite(kendalltau(s[head], r[head]).statistic)
    return out


def rankings(scores: Mapping[str, np.ndarray], references: Mapping[str, np.ndarray],
             *, top: int = TOP) -> dict[str, dict[str, Any]]:
    """Each source's run scores against each reference's: {source: {reference: τ figures}}."""
    return {name: {ref: ranking_agreement(s, r, top=top) for ref, r in references.items()}
            for name, s in scores.items()}


def latest_labels(task: np.ndarray, rater: np.ndarray, label: np.ndarray,
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The latest label per (task, rater) of judgments in arrival order (what models read)."""
    _, first_from_end = np.unique(np.stack([task, rater], axis=1)[::-1], axis=0,
                                  return_index=True)
    keep = np.sort(task.shape[0] - 1 - first_from_end)
    return task[keep], rater[keep], label[keep]


def report(task: np.ndarray, rater: np.ndarray, label: np.ndarray, *,
           names: Sequence[str], kinds: Sequence[str], judges: Sequence[bool],
           scale: Sequence[int], gold: Labels | None, aggregate: Labels | None,
           aggregate_scale: Sequence[int] | None = None, relevant_from: int = 1,
           min_tasks: int = 20) -> dict[str, Any]:
    """Judging the judges over one set of judgments (long format: ``rater`` indexes ``names``;
    labels on ``scale``, the latest per (task, rater)).

    ``raters``: every judge (``judges[i]``) and every other rater with at least ``min_tasks``
    tasks, each against the gold and against the aggregate (a binary aggregate,
    ``aggregate_scale`` [0, 1], is met on relevance: grade ≥ ``relevant_from``), best first by
    quadratic κ with the gold (else with the aggregate); ``krippendorff_alpha`` over every rater;
    ``pairwise`` among the judges (every listed rater when there is no judge)."""
    per_rater = np.bincount(rater, minlength=len(names))
    order = np.argsort(rater, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(per_rater)])
    labels = [Labels(task[order[bounds[i]:bounds[i + 1]]], label[order[bounds[i]:bounds[i + 1]]])
              for i in range(len(names))]
    binary_ref = aggregate_scale is not None and list(aggregate_scale) == [0, 1] \
        and list(scale) != [0, 1]
    listed = [i for i in range(len(names)) if judges[i] or per_rater[i] >= min_tasks]
    rows = []
    for i in listed:
        mine = labels[i]
        row: dict[str, Any] = {"name": names[i], "kind": kinds[i], "judge": bool(judges[i]),
                               "tasks": int(per_rater[i]),
                               "mean_grade": float(np.mean(mine.label)) if mine.label.size
                               else None}
        row["vs_gold"] = None if gold is None else agreement(mine, gold, scale=scale)
        if aggregate is None:
            row["vs_aggregate"] = None
        elif binary_ref:
            relevant = Labels(mine.task, (mine.label >= relevant_from).astype(np.int64))
            row["vs_aggregate"] = agreement(relevant, aggregate, scale=[0, 1])
        else:
            row["vs_aggregate"] = agreement(mine, aggregate, scale=scale)
        rows.append(row)

    def rank_key(row: dict[str, Any]) -> tuple[float, str]:
        for side in ("vs_gold", "vs_aggregate"):
            found = row[side]
            if found and found["quadratic_kappa"] is not None:
                return (-found["quadratic_kappa"], row["name"])
        return (np.inf, row["name"])

    rows.sort(key=rank_key)
    among = [i for i in listed if judges[i]] or listed
    return {"scale": list(scale), "min_tasks": min_tasks,
            "n_gold": 0 if gold is None else int(gold.task.shape[0]),
            "krippendorff_alpha": krippendorff_alpha(labels, scale=scale),
            "raters": rows,
            "pairwise": {"names": [names[i] for i in among],
                         **pairwise([labels[i] for i in among], scale=scale)}}


def run_rankings(qrels: Mapping[str, Mapping[tuple[str, str], int]],
                 references: Mapping[str, Mapping[tuple[str, str], int]],
                 runs: Mapping[str, Mapping[str, Sequence[str]]], *, measure: str,
                 relevant_from: int, top: int = TOP) -> dict[str, Any]:
    """The runs scored by ``measure`` (mean over topics) on each source's qrels
    ({(topic, doc): grade}), and each source's ranking against each reference's (Kendall's τ
    over all runs and the reference's ``top``)."""
    parsed = parse_measure(measure)

    def scores(source: Mapping[tuple[str, str], int]) -> np.ndarray:
        if not source:
            return np.full(len(runs), np.nan)
        posterior = Posterior.from_qrels(source, relevant_from=relevant_from)
        scored = evaluate_runs(posterior, runs, [parsed], samples=0)
        return scored.mean_value(parsed.name)

    mine = {name: scores(q) for name, q in qrels.items()}
    theirs = {name: scores(q) for name, q in references.items()}
    return {"measure": parsed.name, "runs": list(runs), "top": top,
            "scores": {k: [_finite(x) for x in v.tolist()] for k, v in {**theirs, **mine}.items()},
            "tau": rankings(mine, theirs, top=top)}
