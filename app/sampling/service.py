"""Samplings of documents from a collection's runs: create, draw rounds, estimate measures.

The pool, the sampling state and the estimates are recomputed from what is stored (the runs,
each round's selection probabilities and draws, the sampled pairs) and the crowd labels
aggregated now with the sampling's method, so estimates can be recomputed at any time.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.aggregations.snapshot import current_watermark, load_snapshot
from app.collections.tables import Collection
from app.core.errors import Conflict, InvalidInput, NotFound
from app.corpus.service import known_topics, load_runs
from app.judgments.tables import Document, Judgment, Task, Topic
from app.sampling.schemas import SamplingCreate
from app.sampling.tables import SampledPair, Sampling, SamplingRound
from models.sampling.design import TopicPool, build_pools, inclusion_first
from models.sampling.sampler import SAMPLING, TopicState, estimate, plan_round
from models.sampling.stopping import (
    STOP_RULES,
    TARGET_RECALL,
    check_topic,
    found_relevant,
    stopping_check,
)

LABEL_METHODS = ("mv", "ds", "mace")
CUTOFFS = (5, 10, 20)


def sampling_not_found(sampling_id: int) -> NotFound:
    return NotFound(f"no sampling {sampling_id}", code="sampling_not_found")


def get_sampling(session: Session, *, sampling_id: int) -> Sampling:
    sampling = session.get(Sampling, sampling_id)
    if sampling is None:
        raise sampling_not_found(sampling_id)
    return sampling


def _pools(session: Session, *, collection: Collection, runs: list[str] | None,
           depth: int | None) -> tuple[list[str], dict[str, TopicPool]]:
    stored = load_runs(session, collection_id=collection.id)
    if not stored:
        raise InvalidInput(f"collection {collection.name!r} has no runs", code="no_runs")
    names = sorted(stored) if runs is None else runs
    unknown = [r for r in names if r not in stored]
    if unknown:
        raise NotFound(f"no run {', '.join(map(repr, unknown))} in collection "
                       f"{collection.name!r}", code="run_not_found", runs=unknown)
    topics = known_topics(session, collection=collection)
    outside = sorted({t for r in names for t in stored[r]} - topics)
    if outside:
        raise InvalidInput(f"the runs answer {len(outside)} topics the collection does not have "
                           f"(e.g. {outside[0]!r})", code="runs_without_topics",
                           topics=outside[:20])
    return build_pools({r: stored[r].rankings for r in names}, depth=depth)


def create_sampling(session: Session, *, collection: Collection, spec: SamplingCreate
                    ) -> Sampling:
    runs, pools = _pools(session, collection=collection, runs=spec.runs, depth=spec.depth)
    pool_size = sum(p.n_docs for p in pools.values())
    judged = judged_pairs(session, collection=collection)
    prejudged = [(t, d) for t, pool in pools.items() for d in pool.docs.tolist()
                 if (t, d) in judged]
    unjudged = pool_size - len(prejudged)
    if spec.budget_per_round > unjudged:
        raise InvalidInput(f"budget_per_round {spec.budget_per_round} is above the pool of "
                           f"{unjudged} unjudged (topic, doc) pairs ({pool_size} pooled, "
                           f"{len(prejudged)} judged already)", code="budget_above_pool",
                           pool_size=pool_size, unjudged=unjudged)
    sampling = Sampling(collection_id=collection.id, strategy=spec.strategy, method=spec.method,
                        runs=runs, depth=spec.depth, budget_per_round=spec.budget_per_round,
                        seed=spec.seed, pool_size=pool_size)
    session.add(sampling)
    session.flush()
    if prejudged:
        # Round 0: the pooled pairs judged before the sampling, in the sample with certainty.
        row = SamplingRound(sampling_id=sampling.id, number=0, requested=0,
                            drawn=len(prejudged), short=False, forced=False, design={})
        session.add(row)
        session.flush()
        session.add_all([SampledPair(sampling_id=sampling.id, round_id=row.id, topic=t, doc=d,
                                     source_run=None, selection=1.0, inclusion=1.0)
                         for t, d in prejudged])
    session.commit()
    return sampling


def judged_pairs(session: Session, *, collection: Collection) -> set[tuple[str, str]]:
    """Every (topic, doc) of the collection with at least one judgment."""
    return {(t, d) for t, d in session.execute(
        select(Topic.external_id, Document.external_id)
        .select_from(Task)
        .join(Topic, Topic.id == Task.topic_id)
        .join(Document, Document.id == Task.document_id)
        .where(Task.collection_id == collection.id,
               select(Judgment.id).where(Judgment.task_id == Task.id).exists())
    ).all()}


def _rounds(session: Session, sampling: Sampling) -> list[SamplingRound]:
    return list(session.scalars(select(SamplingRound).where(
        SamplingRound.sampling_id == sampling.id).order_by(SamplingRound.number)))


def _pairs(session: Session, sampling: Sampling) -> list[SampledPair]:
    return list(session.scalars(select(SampledPair).where(
        SampledPair.sampling_id == sampling.id).order_by(SampledPair.id)))


def _state(session: Session, sampling: Sampling
           ) -> tuple[list[str], dict[str, TopicPool], dict[str, TopicState], list[SamplingRound],
                      list[SampledPair]]:
    collection = session.get(Collection, sampling.collection_id)
    assert collection is not None
    runs, pools = _pools(session, collection=collection, runs=sampling.runs,
                         depth=sampling.depth)
    if sum(p.n_docs for p in pools.values()) != sampling.pool_size:
        raise Conflict("the sampling's runs changed since it was created (the pool differs)",
                       code="runs_changed")
    states = {t: TopicState() for t in pools}
    rounds = _rounds(session, sampling)
    for r in rounds:
        for topic, design in r.design.items():
            states[topic].p_rounds.append(np.array(design["p"], dtype=np.float64))
            states[topic].draws.append(int(design["draws"]))
    pairs = _pairs(session, sampling)
    run_index = {name: k for k, name in enumerate(runs)}
    beforehand = {r.id for r in rounds if r.number == 0}
    for pair in pairs:
        pool = pools[pair.topic]
        doc = int(np.searchsorted(pool.docs, pair.doc))
        states[pair.topic].docs.append(doc)
        states[pair.topic].sources.append(run_index.get(pair.source_run or "", -1))
        if pair.round_id in beforehand:
            states[pair.topic].certain.add(doc)
    return runs, pools, states, rounds, pairs


def crowd_labels(session: Session, *, collection: Collection, method: str
                 ) -> dict[tuple[str, str], float]:
    """Binary relevance of every judged (topic, doc), aggregated now with ``method``."""
    from models.registry import make_aggregator

    watermark = current_watermark(session, collection_id=collection.id)
    if watermark == 0:
        return {}
    try:
        snapshot = load_snapshot(session, collection=collection, watermark=watermark,
                                 graded=False)
    except ValueError:
        return {}
    data = snapshot.data
    params = {"random_state": 0} if method == "mace" else {}
    model = make_aggregator(method, params).fit(data)
    labels = data.classes[model.labels_]
    return {(t, d): float(v) for t, d, v in zip(data.topic_ids.tolist(), data.doc_ids.tolist(),
                                                labels.tolist(), strict=True)}


def _known(pools: Mapping[str, TopicPool], labels: Mapping[tuple[str, str], float]
           ) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = {t: {} for t in pools}
    for (topic, doc), value in labels.items():
        pool = pools.get(topic)
        if pool is None:
            continue
        i = int(np.searchsorted(pool.docs, doc))
        if i < pool.n_docs and pool.docs[i] == doc:
            out[topic][i] = value
    return out


def topics_at_target(strategy: str, pools: Mapping[str, TopicPool],
                     states: Mapping[str, TopicState], known: Mapping[str, Mapping[int, float]],
                     *, rule: str, target_recall: float) -> list[str]:
    """The topics whose ``rule`` says their judged sample has reached ``target_recall``."""
    checks = {t: check_topic(strategy, pool, states[t], known[t], target_recall)
              for t, pool in pools.items()}
    return [t for t, check in checks.items() if check is not None and getattr(check, rule)]


def draw_round(session: Session, *, sampling: Sampling, force: bool = False,
               stop_rule: str | None = None,
               target_recall: float = TARGET_RECALL) -> dict[str, Any]:
    """The next round. With ``stop_rule`` (thesis chapter 3: optimistic or conservative), the
    topics whose judged sample has reached ``target_recall`` by that rule take no draws and
    the budget goes to the others; 409 ``target_reached`` when no other topic is left."""
    if stop_rule is not None and stop_rule not in STOP_RULES:
        raise InvalidInput(f"stop must be one of {', '.join(STOP_RULES)}, not {stop_rule!r}",
                           code="invalid_body")
    collection = session.get(Collection, sampling.collection_id)
    assert collection is not None
    runs, pools, states, rounds, pairs = _state(session, sampling)
    labels = crowd_labels(session, collection=collection, method=sampling.method)
    if rounds and not force:
        last = [p for p in pairs if p.round_id == rounds[-1].id]
        missing = sum(1 for p in last if (p.topic, p.doc) not in labels)
        if missing == len(last) and last:
            raise Conflict(f"round {rounds[-1].number} has no judgments yet: {missing} of its "
                           f"{len(last)} pairs are missing (force to draw anyway)",
                           code="round_not_judged", missing=missing, round=rounds[-1].number)
    remaining = sampling.pool_size - len(pairs)
    if remaining == 0:
        raise Conflict("every pooled pair has been sampled", code="pool_exhausted")
    known = _known(pools, labels)
    stopped = ([] if stop_rule is None else topics_at_target(
        sampling.strategy, pools, states, known, rule=stop_rule, target_recall=target_recall))
    open_topics = [t for t, pool in pools.items()
                   if t not in stopped and len(set(states[t].docs)) < pool.n_docs]
    if not open_topics:
        raise Conflict(f"every topic with unsampled pairs is at a recall of {target_recall} by "
                       f"the {stop_rule} rule (draw without stop to go on)",
                       code="target_reached", stopped=len(stopped))
    rng = np.random.default_rng([sampling.seed, len(rounds)])
    picks = plan_round(strategy=sampling.strategy, pools=pools, states=states, labels=known,
                       budget=sampling.budget_per_round, rng=rng, round_no=len(rounds),
                       skip=set(stopped))
    design = {}
    if sampling.strategy in SAMPLING:
        design = {t: {"p": [float(x) for x in states[t].p_rounds[-1]],
                      "draws": states[t].draws[-1]} for t in picks}
        # Topics without picks this round take part with zero draws (no change to π).
    drawn = sum(len(v) for v in picks.values())
    row = SamplingRound(sampling_id=sampling.id, number=rounds[-1].number + 1 if rounds else 1,
                        requested=sampling.budget_per_round, drawn=drawn,
                        short=drawn < sampling.budget_per_round, forced=force, design=design,
                        stop_rule=stop_rule,
                        target_recall=target_recall if stop_rule is not None else None,
                        stopped=stopped if stop_rule is not None else None)
    session.add(row)
    session.flush()
    out_pairs = []
    for topic, topic_picks in picks.items():
        state = states[topic]
        pi = (inclusion_first(state.p_rounds, state.draws) if sampling.strategy in SAMPLING
              else np.ones(pools[topic].n_docs))
        for pick in topic_picks:
            pair = SampledPair(sampling_id=sampling.id, round_id=row.id, topic=topic,
                               doc=str(pools[topic].docs[pick.doc]),
                               source_run=runs[pick.source] if pick.source >= 0 else None,
                               selection=pick.selection, inclusion=float(pi[pick.doc]))
            session.add(pair)
            out_pairs.append(pair)
    session.commit()
    # a pair can have been judged outside the sampling since it was created
    return round_public(row, out_pairs, judged_pairs(session, collection=collection))


def round_public(row: SamplingRound, pairs: list[SampledPair],
                 judged: set[tuple[str, str]] | None = None) -> dict[str, Any]:
    """``judged``: the collection's judged (topic, doc) pairs now (a pair drawn just now can
    have been judged outside the sampling)."""
    judged = judged or set()
    return {
        "id": row.id, "number": row.number, "requested": row.requested, "drawn": row.drawn,
        "judged": sum(1 for p in pairs if (p.topic, p.doc) in judged),
        "short": row.short, "forced": row.forced, "created_at": row.created_at,
        "note": "; ".join(n for n in (
            "the pooled pairs judged before the sampling (in the sample with certainty)"
            if row.number == 0 else None,
            f"{len(row.stopped)} topic{'' if len(row.stopped) == 1 else 's'} at a recall of "
            f"{row.target_recall} ({row.stop_rule}) skipped" if row.stopped else None,
            (f"short round: the pool had only {row.drawn} unsampled pairs left"
             if not row.stopped else f"short round: {row.drawn} pairs from the other topics")
            if row.short else None) if n) or None,
        "stop_rule": row.stop_rule, "target_recall": row.target_recall,
        "stopped": row.stopped,
        "pairs": [{"topic": p.topic, "doc": p.doc, "selection": p.selection,
                   "inclusion": p.inclusion, "source_run": p.source_run,
                   "judged": (p.topic, p.doc) in judged} for p in pairs],
    }


def list_rounds(session: Session, *, sampling: Sampling,
                number: int | None = None) -> list[dict[str, Any]]:
    """Every round (or round ``number``; −1: the latest) with its pairs, each marked judged
    when the collection has a judgment for it now."""
    rounds = _rounds(session, sampling)
    if number is not None:
        wanted = rounds[-1].number if number == -1 and rounds else number
        rounds = [r for r in rounds if r.number == wanted]
    if not rounds:
        return []
    collection = session.get(Collection, sampling.collection_id)
    assert collection is not None
    judged = judged_pairs(session, collection=collection)
    pairs = _pairs(session, sampling)
    return [round_public(r, [p for p in pairs if p.round_id == r.id], judged) for r in rounds]


ROUND_TSV_COLUMNS = ("round", "topic", "doc", "inclusion", "selection", "source_run", "judged")


def rounds_tsv(rounds: list[dict[str, Any]]) -> str:
    """The rounds' pairs, one per line, for a crowd platform: the round, the pair, its
    inclusion probability and selection probability, the run it was drawn from and whether it
    is judged yet (1/0)."""
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t", lineterminator="\n")
    writer.writerow(ROUND_TSV_COLUMNS)
    for r in rounds:
        for p in r["pairs"]:
            writer.writerow((r["number"], p["topic"], p["doc"], f"{p['inclusion']:.6g}",
                             f"{p['selection']:.6g}", p["source_run"] or "",
                             int(p["judged"])))
    return out.getvalue()


def sampling_public(session: Session, sampling: Sampling) -> dict[str, Any]:
    n_rounds = session.scalar(select(func.count()).select_from(SamplingRound).where(
        SamplingRound.sampling_id == sampling.id)) or 0
    n_pairs = session.scalar(select(func.count()).select_from(SampledPair).where(
        SampledPair.sampling_id == sampling.id)) or 0
    prejudged = session.scalar(select(SamplingRound.drawn).where(
        SamplingRound.sampling_id == sampling.id, SamplingRound.number == 0)) or 0
    return {"id": sampling.id, "collection_id": sampling.collection_id,
            "strategy": sampling.strategy, "method": sampling.method, "runs": sampling.runs,
            "depth": sampling.depth, "budget_per_round": sampling.budget_per_round,
            "seed": sampling.seed, "pool_size": sampling.pool_size, "n_rounds": n_rounds,
            "n_sampled": n_pairs, "prejudged": prejudged, "created_at": sampling.created_at}


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


def list_samplings(session: Session, *, collection: Collection) -> list[dict[str, Any]]:
    rows = session.scalars(select(Sampling).where(Sampling.collection_id == collection.id)
                           .order_by(Sampling.id))
    return [sampling_public(session, s) for s in rows]


def estimates(session: Session, *, sampling: Sampling,
              target_recall: float = TARGET_RECALL) -> dict[str, Any]:
    """HT estimates per run and topic and overall (mean over topics; variance Σ var / T²), and
    per topic and overall whether to stop judging at ``target_recall`` (thesis chapter 3:
    ``models.sampling.stopping``)."""
    collection = session.get(Collection, sampling.collection_id)
    assert collection is not None
    runs, pools, states, rounds, pairs = _state(session, sampling)
    labels = crowd_labels(session, collection=collection, method=sampling.method)
    known = _known(pools, labels)
    judged = sum(1 for p in pairs if (p.topic, p.doc) in labels)
    per_topic: list[dict[str, Any]] = []
    totals: dict[str, dict[str, list[tuple[float, float]]]] = {r: {} for r in runs}
    topic_rel = []
    stopping = []
    for topic, pool in pools.items():
        state = states[topic]
        if not state.docs:
            continue
        est = estimate(sampling.strategy, pool, state, known[topic], cutoffs=CUTOFFS)
        topic_rel.append((est.n_relevant.value, est.n_relevant.variance))
        stopping.append({"topic": topic, **asdict(stopping_check(
            found_relevant(state, known[topic]), est.n_relevant.value,
            est.n_relevant.variance, target_recall))})
        for k, run in enumerate(runs):
            if pool.depth[k] == 0:
                continue
            r = est.runs[k]
            measures = {f"P@{c}": r.precision[c] for c in CUTOFFS}
            measures["recall"] = r.recall
            measures["AP"] = r.ap
            for name, e in measures.items():
                per_topic.append(_row(run, topic, name, e.value, e.variance))
                if np.isfinite(e.value):
                    totals[run].setdefault(name, []).append((e.value, e.variance))
        per_topic.append(_row(None, topic, "n_relevant", est.n_relevant.value,
                              est.n_relevant.variance))
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
    # over the topics: r and R̂ add up, and so do the variances (the topics are independent
    # strata); a variance the design cannot estimate leaves the sum without one
    variances = [s["sd"] ** 2 if s["sd"] is not None else None for s in stopping]
    total = (asdict(stopping_check(
        sum(s["found"] for s in stopping), sum(s["estimate"] for s in stopping),
        None if None in variances else sum(v for v in variances if v is not None),
        target_recall)) if stopping else None)
    return {"sampling_id": sampling.id, "strategy": sampling.strategy, "rounds": len(rounds),
            "sampled": len(pairs), "judged": judged,
            "results": overall + per_topic, "count": len(overall) + len(per_topic),
            "stopping": {"target_recall": target_recall, "overall": total,
                         "topics_stopping": {
                             "optimistic": sum(s["optimistic"] for s in stopping),
                             "conservative": sum(s["conservative"] for s in stopping)},
                         "topics": stopping}}
