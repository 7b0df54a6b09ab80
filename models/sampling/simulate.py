"""Replaying a collection whose judgments are all known, to compare re-judging strategies.

Each curve (strategy, seed): reveal a starting share of the judgments (one random judgment per
task, then random ones up to ``start_share``), fit, then in rounds of ``batch`` judgments ask the
strategy for its order over the tasks that still have a hidden judgment (a task it ranks higher
without one is skipped and counted), reveal for each chosen task the hidden judgment of the
annotator with the highest estimated accuracy, refit (warm, from the previous fit, when the
model's ``fit`` takes ``init``), and record the accuracy against gold. The last point of every
curve has all judgments revealed. Deterministic for a seed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from models.base import Aggregator
from models.data import UNKNOWN, AnnotationData
from models.sampling.rejudge import agreement_competence, rejudge_order
from models.warm import accepts_init


@dataclass(frozen=True)
class CurvePoint:
    strategy: str
    seed: int
    round: int
    judgments: int
    share: float
    accuracy: float
    skipped: int  # tasks ranked above the chosen ones with no hidden judgment left, so far
    seconds: float  # time of this point's fit
    map_rmse: float = float("nan")  # RMSE of the runs' MAP against all judgments (with runs)


def subset(data: AnnotationData, keep: np.ndarray) -> AnnotationData:
    """The judgments at ``keep`` (indices), with the same task and annotator index spaces."""
    return replace(data, task=data.task[keep], annotator=data.annotator[keep],
                   label=data.label[keep])


def accuracy_against_gold(labels: np.ndarray, gold: np.ndarray) -> float:
    known = gold != UNKNOWN
    return float(np.mean(labels[known] == gold[known])) if known.any() else float("nan")


def run_map(data: AnnotationData, labels: np.ndarray,
            runs: Mapping[str, Mapping[str, Sequence[str]]]) -> np.ndarray:
    """Each run's MAP over the data's topics, with the qrels ``labels`` (class indices; the
    last class is relevant) on the judged tasks and every other document non-relevant."""
    from models.sampling.estimators import true_measures

    relevant = labels == data.n_classes - 1
    qrels: dict[str, dict[str, float]] = {}
    for t, d, r in zip(data.topic_ids.tolist(), data.doc_ids.tolist(), relevant.tolist(),
                       strict=True):
        if r:
            qrels.setdefault(t, {})[d] = 1.0
    topics = sorted(set(data.topic_ids.tolist()))
    out = []
    for name in sorted(runs):
        ap = [true_measures(ranking=list(runs[name].get(t, ())), qrels=qrels.get(t, {}),
                            cutoffs=())["AP"] for t in topics]
        out.append(float(np.mean(ap)))
    return np.array(out)


def _fit(make: Callable[[], Aggregator], data: AnnotationData,
         previous: Aggregator | None, *, last: bool = False) -> Aggregator:
    """A fresh model fitted on ``data``: warm from ``previous`` when its ``fit`` takes ``init``
    (then checked against a cold fit as ``models.warm`` schedules it, and always at the ``last``
    point, where every judgment is revealed: the higher objective is kept), else cold."""
    model = make()
    if previous is not None and accepts_init(model):  # models.warm.WarmStartable
        check = True if last else None
        return model.fit(data, init=previous, check=check)  # type: ignore[call-arg]
    return model.fit(data)


def simulate(data: AnnotationData, *, make: Callable[[int], Aggregator],
             strategies: Iterable[str], seeds: Iterable[int], batch: int,
             start_share: float = 0.0, warm: bool = True, max_judgments: int | None = None,
             runs: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
             on_point: Callable[[CurvePoint], None] | None = None) -> list[CurvePoint]:
    """Every curve's points; ``make(seed)`` builds a fresh aggregator. With ``runs``
    ({run: {topic: [doc, ...]}}) each point also has the RMSE of the runs' MAP (qrels: the fitted
    labels) against their MAP with the model fitted cold on all judgments."""
    import time

    if data.gold is None or not (data.gold != UNKNOWN).any():
        raise ValueError("the simulator needs gold labels to measure accuracy")
    if batch < 1:
        raise ValueError("batch must be at least 1")
    total = data.n_judgments
    reference = None if not runs else run_map(data, make(0).fit(data).labels_, runs)
    points: list[CurvePoint] = []
    for seed in seeds:
        for strategy in strategies:
            rng = np.random.default_rng(seed)
            revealed = np.zeros(total, dtype=bool)
            # One random judgment per task, then random judgments up to the starting share.
            order = rng.permutation(total)
            _, first = np.unique(data.task[order], return_index=True)
            revealed[order[first]] = True
            extra = int(round(start_share * total)) - int(revealed.sum())
            if extra > 0:
                hidden = order[~revealed[order]]
                revealed[hidden[:extra]] = True
            skipped = 0
            model: Aggregator | None = None
            round_no = 0
            while True:
                started = time.perf_counter()
                model = _fit(lambda s=seed: make(s), subset(data, np.flatnonzero(revealed)),
                             model if warm else None, last=bool(revealed.all()))
                seconds = time.perf_counter() - started
                n_revealed = int(revealed.sum())
                rmse = float("nan")
                if runs and reference is not None:
                    estimate = run_map(data, model.labels_, runs)
                    rmse = float(np.sqrt(np.mean((estimate - reference) ** 2)))
                point = CurvePoint(strategy, int(seed), round_no, n_revealed, n_revealed / total,
                                   accuracy_against_gold(model.labels_, data.gold), skipped,
                                   seconds, rmse)
                points.append(point)
                if on_point is not None:
                    on_point(point)
                if n_revealed == total:
                    break
                round_no += 1
                if total - n_revealed <= batch:
                    revealed[:] = True
                    continue
                skipped += _reveal_round(data, revealed, model, strategy=strategy, batch=batch,
                                         rng=rng, max_judgments=max_judgments)
    return points


def _reveal_round(data: AnnotationData, revealed: np.ndarray, model: Aggregator, *,
                  strategy: str, batch: int, rng: np.random.Generator,
                  max_judgments: int | None = None) -> int:
    """Reveal ``batch`` hidden judgments chosen by ``strategy``; returns the tasks skipped."""
    proba = model.proba_
    seen = subset(data, np.flatnonzero(revealed))
    # who is asked next: agreement with the posterior, shrunk towards the mean agreement
    accuracy = agreement_competence(proba, seen.task, seen.annotator, seen.label,
                                    seen.n_annotators, prior=None)
    need = batch
    skipped = 0
    while need > 0:
        hidden = np.flatnonzero(~revealed)
        if hidden.size == 0:
            break
        has_hidden = np.bincount(data.task[hidden], minlength=data.n_tasks) > 0
        if max_judgments is not None:  # as /next?max_judgments=K: fewer than K judgments so far
            shown = np.bincount(data.task[revealed], minlength=data.n_tasks)
            capped = has_hidden & (shown < max_judgments)
            if capped.any():  # once every task has K, the cap lifts (the curve ends at 100 %)
                has_hidden = capped
        # The next label of a task comes from its best annotator not yet asked.
        best = np.full(data.n_tasks, -np.inf)
        np.maximum.at(best, data.task[hidden], accuracy[data.annotator[hidden]])
        best[~np.isfinite(best)] = float(np.median(accuracy))
        full = rejudge_order(proba, strategy=strategy, accuracy=best,
                             random_state=int(rng.integers(2**31)))
        eligible = has_hidden[full]
        chosen = full[eligible][:need]
        # Tasks ranked above the last chosen one that had nothing left to reveal.
        if chosen.size:
            last = int(np.flatnonzero(full == chosen[-1])[0])
            skipped += int((~eligible[:last + 1]).sum())
        # Per chosen task, its hidden judgment from the annotator with the highest accuracy.
        in_chosen = np.isin(data.task[hidden], chosen)
        cand = hidden[in_chosen]
        best = np.lexsort((-accuracy[data.annotator[cand]], data.task[cand]))
        ordered = cand[best]
        _, first = np.unique(data.task[ordered], return_index=True)
        revealed[ordered[first]] = True
        need -= first.size
    return skipped
