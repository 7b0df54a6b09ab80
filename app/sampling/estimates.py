"""A sampling's Horvitz–Thompson estimates per run and topic and over all topics, with their 95 %
intervals, and the stopping check at a target recall (thesis chapter 3)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from app.collections.tables import Collection
from app.judgments.columns import current_watermark
from app.sampling.inputs import NextInputs
from app.sampling.service import (
    CUTOFFS,
    crowd_labels,
    judged_pairs,
    known_labels,
    sampling_pools,
    sampling_state,
    sampling_version,
    scratch,
)
from app.sampling.tables import Sampling
from models.sampling.design import TopicPool
from models.sampling.sampler import estimate
from models.sampling.stopping import (
    TARGET_RECALL,
    estimable,
    found_relevant,
    stopping_check,
)


def _num(x: float) -> float | None:
    return None if not np.isfinite(x) else float(x)


def _row(run: str | None, topic: str, measure: str, value: float, variance: float
         ) -> dict[str, Any]:
    """One estimate with its normal 95 % interval, value ± 1.96 √variance, clipped to the
    measure's range: [0, 1] for precision, recall and AP, [0, ∞) for the number of relevant
    documents (a normal interval around a P@5 of 0.83 would otherwise reach 1.19). An unbiased
    Horvitz–Thompson estimate may itself fall outside the range; the interval then still holds
    it."""
    v, var = _num(value), _num(variance)
    half = None if v is None or var is None else 1.96 * float(np.sqrt(var))
    top = float("inf") if measure == "n_relevant" else 1.0
    return {"run": run, "topic": topic, "measure": measure, "value": v, "variance": var,
            "low": None if half is None or v is None else max(v - half, min(0.0, v)),
            "high": None if half is None or v is None else min(v + half, max(top, v))}


def estimates(session: Session, *, sampling: Sampling, target_recall: float = TARGET_RECALL,
              inputs: NextInputs | None = None) -> dict[str, Any]:
    """HT estimates per run and topic and overall (mean over topics; variance Σ var / T²), and
    per topic and overall whether to stop judging at ``target_recall`` (thesis chapter 3:
    ``models.sampling.stopping``). ``judged``: the sampled pairs with a label (the estimates'
    sample). With ``inputs`` the estimates are computed once per state of the sampling (its
    runs, rounds and pairs, the judgment watermark) and shared: callers never change them."""
    collection = session.get(Collection, sampling.collection_id)
    assert collection is not None
    inputs = inputs or scratch()
    runs, pools, pools_key = sampling_pools(session, collection=collection, runs=sampling.runs,
                                    depth=sampling.depth, inputs=inputs, sampled=True)
    version = sampling_version(session, sampling)
    key = ("estimates", sampling.id, sampling.created_at, pools_key, version,
           current_watermark(session, collection_id=collection.id),
           tuple(collection.ignore or ()), collection.relevant_from)
    measured, topics = inputs.memo("estimates", key, lambda: _estimates(
        session, sampling=sampling, collection=collection, pooled=(runs, pools),
        pools_key=pools_key, inputs=inputs, version=version))
    return {**measured, "stopping": _stopping(topics, target_recall)}


def _estimates(session: Session, *, sampling: Sampling, collection: Collection,
               pooled: tuple[list[str], dict[str, TopicPool]], pools_key: tuple[Any, ...],
               inputs: NextInputs, version: tuple[int, int, int, int]
               ) -> tuple[dict[str, Any], list[tuple[str, float, float, float, bool]]]:
    """The estimates without the stopping checks, and per topic what they need: (topic, r,
    R̂, var R̂, whether R̂ covers the whole pool: ``estimable``). A topic's estimates are a
    function of its pool, the rounds that drew from it, its sampled docs and their labels:
    those whose inputs did not change since the sampling's last estimates are taken from them
    (a few new judgments touch a few topics)."""
    runs, pools, states, rounds, pairs = sampling_state(
        session, sampling, inputs, pooled,
        judged=judged_pairs(session, collection=collection, inputs=inputs))
    labels = crowd_labels(session, collection=collection, method=sampling.method,
                          inputs=inputs)
    known = known_labels(pools, labels)
    judged = sum(1 for p in pairs if (p.topic, p.doc) in labels)
    n_rounds, _, n_sampled, _ = version  # every round and pair, the left-out ones too
    per_topic: list[dict[str, Any]] = []
    totals: dict[str, dict[str, list[tuple[float, float]]]] = {r: {} for r in runs}
    topic_rel = []
    topics = []
    kept_key = ("topics", sampling.id, sampling.created_at, pools_key)
    before = inputs.kept("topics", kept_key) or {}
    now = {}
    for topic, pool in pools.items():
        state = states[topic]
        if not state.docs:
            continue
        inputs_of = (tuple(r.id for r in rounds if topic in r.design), tuple(state.docs),
                     tuple(sorted(state.certain)),
                     tuple(known[topic].get(d, 0.0) for d in state.docs))
        kept = before.get(topic)
        if kept is not None and kept[0] == inputs_of:
            est, found = kept[1]
        else:
            est = estimate(sampling.strategy, pool, state, known[topic], cutoffs=CUTOFFS)
            found = found_relevant(state, known[topic])
        now[topic] = (inputs_of, (est, found))
        topic_rel.append((est.n_relevant.value, est.n_relevant.variance))
        topics.append((topic, found, est.n_relevant.value, est.n_relevant.variance,
                       estimable(sampling.strategy, pool, state)))
        per_topic += _topic_rows(topic, runs, pool, est, totals)
    overall = _overall_rows(totals, topic_rel)
    inputs.keep("topics", kept_key, now)
    return {"sampling_id": sampling.id, "strategy": sampling.strategy, "rounds": n_rounds,
            "sampled": n_sampled, "judged": judged,
            "results": overall + per_topic, "count": len(overall) + len(per_topic)}, topics


def _topic_rows(topic: str, runs: list[str], pool: TopicPool, est: Any,
                totals: dict[str, dict[str, list[tuple[float, float]]]]) -> list[dict[str, Any]]:
    """One topic's estimates: each run's P@k, recall and AP (the runs that pooled it), then
    the topic's number of relevant documents; finite ones also go to ``totals``."""
    rows = []
    for k, run in enumerate(runs):
        if pool.depth[k] == 0:
            continue
        r = est.runs[k]
        measures = {f"P@{c}": r.precision[c] for c in CUTOFFS}
        measures["recall"] = r.recall
        measures["AP"] = r.ap
        for name, e in measures.items():
            rows.append(_row(run, topic, name, e.value, e.variance))
            if np.isfinite(e.value):
                totals[run].setdefault(name, []).append((e.value, e.variance))
    rows.append(_row(None, topic, "n_relevant", est.n_relevant.value, est.n_relevant.variance))
    return rows


def _overall_rows(totals: dict[str, dict[str, list[tuple[float, float]]]],
                  topic_rel: list[tuple[float, float]]) -> list[dict[str, Any]]:
    """Over the topics ("all"): each run's mean measure (the variance of a mean of
    independent estimates), and the sum of the topics' numbers of relevant documents."""
    overall = []
    for run, measures in totals.items():
        for name, values in measures.items():
            v = np.array(values)
            overall.append(_row(run, "all", name, float(v[:, 0].mean()),
                                float(v[:, 1].sum() / len(v) ** 2)))
    if topic_rel:
        rel = np.array(topic_rel)
        overall.append(_row(None, "all", "n_relevant", float(rel[:, 0].sum()),
                            float(rel[:, 1].sum())))
    return overall


def _stopping(topics: list[tuple[str, float, float, float, bool]], target_recall: float
              ) -> dict[str, Any]:
    """Per topic and over all topics, whether to stop judging at ``target_recall`` (a topic
    not ``estimable`` yet, and so the sum over topics, never stops)."""
    stopping = [{"topic": topic, **asdict(stopping_check(found, value, variance,
                                                         target_recall, estimable=ok))}
                for topic, found, value, variance, ok in topics]
    # over the topics: r and R̂ add up, and so do the variances (the topics are independent
    # strata); a variance the design cannot estimate leaves the sum without one
    variances = [s["sd"] ** 2 if s["sd"] is not None else None for s in stopping]
    total = (asdict(stopping_check(
        sum(s["found"] for s in stopping), sum(s["estimate"] for s in stopping),
        None if None in variances else sum(v for v in variances if v is not None),
        target_recall, estimable=all(ok for *_, ok in topics))) if stopping else None)
    return {"target_recall": target_recall, "overall": total,
            "topics_stopping": {
                "optimistic": sum(s["optimistic"] for s in stopping),
                "conservative": sum(s["conservative"] for s in stopping)},
            "topics": stopping}
