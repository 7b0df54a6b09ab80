"""Samplings of documents from a collection's runs: create, draw rounds, estimate measures.

The pool, the sampling state and the estimates are recomputed from what is stored (the runs,
each round's selection probabilities and draws, the sampled pairs) and the crowd labels
aggregated now with the sampling's method, so estimates can be recomputed at any time. With the
application's ``NextInputs`` (``inputs``) what they are recomputed from is kept between
requests under keys that name every input (``app.sampling.inputs``): the judgments are read
forward from the last watermark, the runs parsed once per upload, the labels fitted once per
watermark and the estimates computed once per state of the sampling, so a page shown again, or
after a few new judgments, does not redo the whole work.

"Judged" has two readings here, both shown: a pair is *judged* when the collection has a
judgment for it (the crowd has answered; a "could not judge" value such as -2, broken link,
counts), and *labelled* when it has a judgment outside the collection's ``ignore`` values, the
only ones the aggregation reads: the estimates rest on the labelled pairs (their ``judged``),
the rounds report both (``judged``, ``labelled``).
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, defer

from app.collections.tables import Collection
from app.core.errors import Conflict, InvalidInput, NotFound
from app.corpus.service import known_topics, load_runs
from app.corpus.tables import Run
from app.judgments.columns import annotation_data, current_watermark, task_names
from app.sampling.inputs import NextInputs
from app.sampling.schemas import SamplingCreate
from app.sampling.tables import SampledPair, Sampling, SamplingRound
from models.sampling.design import TopicPool, build_pools, inclusion_first
from models.sampling.sampler import SAMPLING, TopicState, estimate, plan_round
from models.sampling.stopping import (
    STOP_RULES,
    TARGET_RECALL,
    check_topic,
    estimable,
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


def _scratch() -> NextInputs:
    """For a call without the application's cache: what the call reads, kept for it alone (its
    judgments are read once however many parts of it need them)."""
    return NextInputs(max_fits=0, max_collections=1)


def _run_versions(session: Session, *, collection: Collection) -> dict[str, bytes]:
    """Each stored run's name -> a digest of its stored text. (A replaced run's new row can
    have the old one's id and, to the second, its upload time; a few MB of gzip are hashed in
    milliseconds, parsed in tenths of a second.)"""
    return {name: hashlib.blake2b(payload, digest_size=16).digest()
            for name, payload in session.execute(
                select(Run.name, Run.payload).where(Run.collection_id == collection.id))}


def _build_pools(session: Session, *, collection: Collection, names: Sequence[str],
                 depth: int | None) -> tuple[list[str], dict[str, TopicPool], frozenset[str]]:
    stored = load_runs(session, collection_id=collection.id)
    runs, pools = build_pools({r: stored[r].rankings for r in names}, depth=depth)
    return runs, pools, frozenset(t for r in names for t in stored[r])


def _pools(session: Session, *, collection: Collection, runs: list[str] | None,
           depth: int | None, inputs: NextInputs | None = None, sampled: bool = False
           ) -> tuple[list[str], dict[str, TopicPool], tuple[Any, ...]]:
    """(run names, pools, key): the key names the stored runs the pools are built from.
    ``sampled``: the runs of an existing sampling, one of them deleted since is 409
    ``runs_changed`` (the sampling is there; its pool is not), not a 404."""
    versions = _run_versions(session, collection=collection)
    names = sorted(versions) if runs is None else runs
    unknown = [r for r in names if r not in versions]
    if sampled and unknown:
        raise Conflict(f"the sampling's runs changed since it was created: "
                       f"{', '.join(map(repr, unknown))} deleted", code="runs_changed",
                       runs=unknown)
    if not versions:
        raise InvalidInput(f"collection {collection.name!r} has no runs", code="no_runs")
    if unknown:
        raise NotFound(f"no run {', '.join(map(repr, unknown))} in collection "
                       f"{collection.name!r}", code="run_not_found", runs=unknown)
    key = ("pools", collection.id, collection.created_at, depth,
           tuple((r, versions[r]) for r in names))
    names_, pools, answered = (inputs or _scratch()).memo("pools", key, lambda: _build_pools(
        session, collection=collection, names=names, depth=depth))
    outside = sorted(answered - known_topics(session, collection=collection))
    if outside:
        raise InvalidInput(f"the runs answer {len(outside)} topics the collection does not have "
                           f"(e.g. {outside[0]!r})", code="runs_without_topics",
                           topics=outside[:20])
    return names_, pools, key


def create_sampling(session: Session, *, collection: Collection, spec: SamplingCreate,
                    inputs: NextInputs | None = None) -> Sampling:
    """``inputs``: the application's cache of the runs' pools and the judgments."""
    inputs = inputs or _scratch()
    runs, pools, _ = _pools(session, collection=collection, runs=spec.runs, depth=spec.depth,
                            inputs=inputs)
    pool_size = sum(p.n_docs for p in pools.values())
    judged = judged_pairs(session, collection=collection, inputs=inputs)
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


def judged_pairs(session: Session, *, collection: Collection, labelled: bool = False,
                 inputs: NextInputs | None = None) -> set[tuple[str, str]]:
    """Every (topic, doc) of the collection with at least one judgment; ``labelled``: with at
    least one judgment outside the collection's ``ignore`` values ("could not judge"), i.e. the
    pairs the aggregation reads (``crowd_labels`` has a label for exactly these). From the
    judgment columns (``inputs``: read forward from the application's last read)."""
    inputs = inputs or _scratch()
    columns = inputs.judgments(session, collection)
    tasks = columns.task_id
    if labelled and collection.ignore:
        tasks = tasks[~np.isin(columns.label, collection.ignore)]
    names = _task_names(session, collection=collection, watermark=columns.watermark,
                        inputs=inputs)
    return {names[t] for t in np.unique(tasks).tolist()}


def _rounds(session: Session, sampling: Sampling, *, design: bool = True
            ) -> list[SamplingRound]:
    """``design=False``: without the selection probabilities (a pool's worth of numbers per
    round), for a listing."""
    query = select(SamplingRound).where(SamplingRound.sampling_id == sampling.id)
    if not design:
        query = query.options(defer(SamplingRound.design))
    return list(session.scalars(query.order_by(SamplingRound.number)))


def _pairs(session: Session, sampling: Sampling, inputs: NextInputs | None = None
           ) -> Sequence[Any]:
    """The sampled pairs in the order drawn, as rows (``.round_id``, ``.topic``, ``.doc``,
    ...): tens of thousands of them, read without building ORM objects; with ``inputs`` read
    again only when pairs were added."""
    key = ("pairs", sampling.id, sampling.created_at, _version(session, sampling)[2:])
    return (inputs or _scratch()).memo("pairs", key, lambda: session.execute(select(
        SampledPair.id, SampledPair.round_id, SampledPair.topic, SampledPair.doc,
        SampledPair.source_run, SampledPair.selection, SampledPair.inclusion,
    ).where(SampledPair.sampling_id == sampling.id).order_by(SampledPair.id)).all())


def _version(session: Session, sampling: Sampling) -> tuple[int, int, int, int]:
    """(rounds, largest round id, pairs, largest pair id): rounds and pairs are only added, so
    these change whenever the sampling's state does."""
    rounds = session.execute(select(func.count(), func.max(SamplingRound.id)).where(
        SamplingRound.sampling_id == sampling.id)).one()
    pairs = session.execute(select(func.count(), func.max(SampledPair.id)).where(
        SampledPair.sampling_id == sampling.id)).one()
    return rounds[0], rounds[1] or 0, pairs[0], pairs[1] or 0


def _state(session: Session, sampling: Sampling, inputs: NextInputs | None = None,
           pooled: tuple[list[str], dict[str, TopicPool]] | None = None,
           judged: set[tuple[str, str]] | None = None
           ) -> tuple[list[str], dict[str, TopicPool], dict[str, TopicState], list[SamplingRound],
                      Sequence[Any]]:
    """``pooled``: the sampling's (runs, pools) when the caller has them (``_pools``).
    ``judged``: the collection's judged pairs; the latest rounds none of whose pairs is among
    them are left out (the estimates' design: ``_estimates``)."""
    if pooled is None:
        collection = session.get(Collection, sampling.collection_id)
        assert collection is not None
        runs, pools, _ = _pools(session, collection=collection, runs=sampling.runs,
                                depth=sampling.depth, inputs=inputs, sampled=True)
    else:
        runs, pools = pooled
    if sum(p.n_docs for p in pools.values()) != sampling.pool_size:
        raise _runs_changed(session, sampling)
    states = {t: TopicState() for t in pools}
    rounds = _rounds(session, sampling)
    pairs = _pairs(session, sampling, inputs)
    if judged is not None:
        rounds, pairs = _without_unjudged_rounds(rounds, pairs, judged)
    digests: dict[str, str] = {}
    for r in rounds:
        for topic, design in r.design.items():
            # A run replaced by one of another pool of the same size: the stored selection
            # probabilities would be read against other documents.
            if topic not in pools or len(design["p"]) != pools[topic].n_docs:
                raise _runs_changed(session, sampling)
            if "pool" in design:  # rounds drawn before the digest was stored have none
                if topic not in digests:
                    digests[topic] = pool_digest(pools[topic])
                if design["pool"] != digests[topic]:
                    raise _runs_changed(session, sampling)
            states[topic].p_rounds.append(np.array(design["p"], dtype=np.float64))
            states[topic].draws.append(int(design["draws"]))
    run_index = {name: k for k, name in enumerate(runs)}
    beforehand = {r.id for r in rounds if r.number == 0}
    by_topic: dict[str, list[Any]] = defaultdict(list)  # in the order drawn
    for pair in pairs:
        by_topic[pair.topic].append(pair)
    for topic, topic_pairs in by_topic.items():
        if topic not in states:
            raise _runs_changed(session, sampling)
        state = states[topic]
        pool_docs = pools[topic].docs
        sampled = np.array([p.doc for p in topic_pairs], dtype=object)
        at = np.searchsorted(pool_docs, sampled)
        if not pool_docs.shape[0] or np.any(
                pool_docs[np.minimum(at, pool_docs.shape[0] - 1)] != sampled):
            # a sampled document no run of the sampling holds now
            raise _runs_changed(session, sampling)
        docs = at.tolist()
        state.docs.extend(docs)
        state.sources.extend(run_index.get(p.source_run or "", -1) for p in topic_pairs)
        state.certain.update(d for d, p in zip(docs, topic_pairs, strict=True)
                             if p.round_id in beforehand)
    return runs, pools, states, rounds, pairs


def _without_unjudged_rounds(rounds: list[SamplingRound], pairs: Sequence[Any],
                             judged: set[tuple[str, str]]
                             ) -> tuple[list[SamplingRound], Sequence[Any]]:
    """The rounds and pairs without the latest rounds none of whose pairs has a judgment yet
    (a round just drawn, and any forced after it): with them the inclusion probabilities
    would count draws whose labels are not in, and their pairs, counted non-relevant, would
    pull every estimate down until the crowd answers (RF10 topics: R̂ 157 → 97 on drawing a
    round of 30). The design up to the last judged round is a design of its own (a round's
    selection probabilities depend only on the rounds before it): its estimates are
    unbiased, the ones read before the round was drawn."""
    answered = {p.round_id for p in pairs if (p.topic, p.doc) in judged}
    keep = len(rounds)
    while keep and rounds[keep - 1].number > 0 and rounds[keep - 1].id not in answered:
        keep -= 1
    if keep == len(rounds):
        return rounds, pairs
    kept = {r.id for r in rounds[:keep]}
    return rounds[:keep], [p for p in pairs if p.round_id in kept]


def _runs_changed(session: Session, sampling: Sampling) -> Conflict:
    """409 ``runs_changed`` naming (``runs``) the sampling's runs uploaded again since it was
    created: the pool differs, and a run replaced since is what changed it (a deleted one is
    refused earlier, in ``_pools``)."""
    replaced = sorted(name for name, uploaded in session.execute(
        select(Run.name, Run.uploaded_at).where(Run.collection_id == sampling.collection_id,
                                                Run.name.in_(sampling.runs)))
        if uploaded > sampling.created_at)  # both aware (UTC) on both databases: app.core.db
    return Conflict("the sampling's runs changed since it was created (the pool differs)"
                    + (f": {', '.join(map(repr, replaced))} replaced" if replaced else ""),
                    code="runs_changed", runs=replaced)


def pool_digest(pool: TopicPool) -> str:
    """A digest of a topic's pooled documents (sorted ids), stored with each round's selection
    probabilities: they are read against the same documents or not at all."""
    return hashlib.blake2b("\0".join(pool.docs.tolist()).encode(), digest_size=16).hexdigest()


def _task_names(session: Session, *, collection: Collection, watermark: int,
                inputs: NextInputs) -> dict[int, tuple[str, str]]:
    """Task id -> (topic, doc) for the tasks of the collection's judgments up to
    ``watermark`` (and any task since)."""
    key = ("task_names", collection.id, collection.created_at, watermark)
    return inputs.memo("task_names", key,
                       lambda: task_names(session, collection_id=collection.id))


def _fit_labels(session: Session, *, collection: Collection, method: str,
                inputs: NextInputs) -> dict[tuple[str, str], float]:
    """The fit ``crowd_labels`` describes, on the judgments as ``load_snapshot`` hands them to
    an aggregation (binary, arrival order, the same (topic, doc, annotator) names; its tasks and
    annotators are ordered by name, so MACE's random restarts start alike), read as columns
    forward from the last read (``inputs``). Gold is left out: these methods read it only with
    ``use_gold``, which the labels here never set."""
    from models.registry import make_aggregator

    columns = inputs.judgments(session, collection)
    if not columns.task_id.shape[0]:
        return {}
    names = _task_names(session, collection=collection, watermark=columns.watermark,
                        inputs=inputs)
    try:
        data, _, _ = annotation_data(columns, names, collection=collection, graded=False)
    except ValueError:  # nothing but "could not judge" values
        return {}
    params = {"random_state": 0} if method == "mace" else {}
    model = make_aggregator(method, params).fit(data)
    labels = data.classes[model.labels_]
    return {(t, d): float(v) for t, d, v in zip(data.topic_ids.tolist(), data.doc_ids.tolist(),
                                                labels.tolist(), strict=True)}


def crowd_labels(session: Session, *, collection: Collection, method: str,
                 inputs: NextInputs | None = None) -> dict[tuple[str, str], float]:
    """Binary relevance of every labelled (topic, doc) (``judged_pairs(labelled=True)``),
    aggregated now with ``method``; fitted once per judgment watermark with ``inputs``."""
    inputs = inputs or _scratch()
    watermark = current_watermark(session, collection_id=collection.id)
    if watermark == 0:
        return {}
    key = ("labels", collection.id, collection.created_at, tuple(collection.ignore or ()),
           collection.relevant_from, method, watermark)
    return inputs.memo("labels", key, lambda: _fit_labels(
        session, collection=collection, method=method, inputs=inputs))


def _known(pools: Mapping[str, TopicPool], labels: Mapping[tuple[str, str], float]
           ) -> dict[str, dict[int, float]]:
    by_topic: dict[str, tuple[list[str], list[float]]] = {t: ([], []) for t in pools}
    for (topic, doc), value in labels.items():
        if topic in by_topic:
            by_topic[topic][0].append(doc)
            by_topic[topic][1].append(value)
    out: dict[str, dict[int, float]] = {}
    for topic, (docs, values) in by_topic.items():
        pool = pools[topic]
        at = np.minimum(np.searchsorted(pool.docs, docs), max(pool.n_docs - 1, 0)).tolist()
        out[topic] = {i: v for i, d, v in zip(at, docs, values, strict=True)
                      if pool.n_docs and pool.docs[i] == d}
    return out


def topics_at_target(strategy: str, pools: Mapping[str, TopicPool],
                     states: Mapping[str, TopicState], known: Mapping[str, Mapping[int, float]],
                     *, rule: str, target_recall: float) -> list[str]:
    """The topics whose ``rule`` says their judged sample has reached ``target_recall``."""
    checks = {t: check_topic(strategy, pool, states[t], known[t], target_recall)
              for t, pool in pools.items()}
    return [t for t, check in checks.items() if check is not None and getattr(check, rule)]


def _lock(session: Session, sampling: Sampling) -> None:
    """Serialise the draws of one sampling to the end of the transaction. Two draws that read
    the same state would number their rounds alike and draw the same pairs again (the inclusion
    probabilities would then be wrong). A no-op UPDATE of the sampling's row takes its row lock
    on PostgreSQL and the database's write lock on SQLite (whose reads take none); everything
    the draw reads after it includes every round committed before."""
    session.execute(update(Sampling).where(Sampling.id == sampling.id)
                    .values(pool_size=Sampling.pool_size))


def draw_round(session: Session, *, sampling: Sampling, force: bool = False,
               stop_rule: str | None = None, target_recall: float = TARGET_RECALL,
               inputs: NextInputs | None = None) -> dict[str, Any]:
    """The next round. With ``stop_rule`` (thesis chapter 3: optimistic or conservative), the
    topics whose judged sample has reached ``target_recall`` by that rule take no draws and
    the budget goes to the others; 409 ``target_reached`` when no other topic is left.
    ``inputs``: the application's cache of the runs' pools and the crowd labels."""
    if stop_rule is not None and stop_rule not in STOP_RULES:
        raise InvalidInput(f"stop must be one of {', '.join(STOP_RULES)}, not {stop_rule!r}",
                           code="invalid_body")
    _lock(session, sampling)
    collection = session.get(Collection, sampling.collection_id)
    assert collection is not None
    inputs = inputs or _scratch()
    runs, pools, states, rounds, pairs = _state(session, sampling, inputs)
    labels = crowd_labels(session, collection=collection, method=sampling.method, inputs=inputs)
    if rounds and not force:
        # Judged as GET /rounds counts it: a "could not judge" value (the collection's ignore)
        # is the crowd's answer too, and a round answered only with it is not unjudged.
        judged = judged_pairs(session, collection=collection, inputs=inputs)
        last = [p for p in pairs if p.round_id == rounds[-1].id]
        missing = sum(1 for p in last if (p.topic, p.doc) not in judged)
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
                      "draws": states[t].draws[-1], "pool": pool_digest(pools[t])}
                  for t in picks}
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
    return round_public(row, out_pairs, judged_pairs(session, collection=collection,
                                                     inputs=inputs),
                        judged_pairs(session, collection=collection, labelled=True,
                                     inputs=inputs))


def round_public(row: SamplingRound, pairs: Sequence[Any] | None,
                 judged: set[tuple[str, str]] | None = None,
                 labelled: set[tuple[str, str]] | None = None, *,
                 counts: tuple[int, int] | None = None) -> dict[str, Any]:
    """``judged``, ``labelled``: the collection's judged and labelled (topic, doc) pairs now
    (``judged_pairs``; a pair drawn just now can have been judged outside the sampling).
    ``counts``: (judged, labelled) of a round listed without its pairs (``pairs`` None)."""
    judged = judged or set()
    labelled = labelled or set()
    n_judged, n_labelled = counts if counts is not None else (
        sum(1 for p in pairs or () if (p.topic, p.doc) in judged),
        sum(1 for p in pairs or () if (p.topic, p.doc) in labelled))
    unusable = n_judged - n_labelled
    return {
        "id": row.id, "number": row.number, "requested": row.requested, "drawn": row.drawn,
        "judged": n_judged, "labelled": n_labelled,
        "short": row.short, "forced": row.forced, "created_at": row.created_at,
        "note": "; ".join(n for n in (
            "the pooled pairs judged before the sampling (in the sample with certainty)"
            if row.number == 0 else None,
            f"{unusable} of its judged pairs {'has' if unusable == 1 else 'have'} only "
            "\"could not judge\" values (no label: not in the estimates)" if unusable else None,
            f"{len(row.stopped)} topic{'' if len(row.stopped) == 1 else 's'} at a recall of "
            f"{row.target_recall} ({row.stop_rule}) skipped" if row.stopped else None,
            (f"short round: the pool had only {row.drawn} unsampled pairs left"
             if not row.stopped else f"short round: {row.drawn} pairs from the other topics")
            if row.short else None) if n) or None,
        "stop_rule": row.stop_rule, "target_recall": row.target_recall,
        "stopped": row.stopped,
        "pairs": [{"topic": p.topic, "doc": p.doc, "selection": p.selection,
                   "inclusion": p.inclusion, "source_run": p.source_run,
                   "judged": (p.topic, p.doc) in judged} for p in pairs]
        if pairs is not None else None,
    }


def _judged_by_round(session: Session, *, sampling: Sampling, collection: Collection,
                     inputs: NextInputs
                     ) -> tuple[dict[int, list[Any]], set[tuple[str, str]], set[tuple[str, str]]]:
    """The sampled pairs per round id, and the collection's judged and labelled pairs now."""
    judged = judged_pairs(session, collection=collection, inputs=inputs)
    labelled = (judged_pairs(session, collection=collection, labelled=True, inputs=inputs)
                if collection.ignore else judged)
    by_round: dict[int, list[Any]] = defaultdict(list)
    for pair in _pairs(session, sampling, inputs):
        by_round[pair.round_id].append(pair)
    return by_round, judged, labelled


def _round_counts(session: Session, *, sampling: Sampling, collection: Collection,
                  inputs: NextInputs) -> dict[int, tuple[int, int]]:
    by_round, judged, labelled = _judged_by_round(session, sampling=sampling,
                                                  collection=collection, inputs=inputs)
    return {r: (sum(1 for p in pairs if (p.topic, p.doc) in judged),
                sum(1 for p in pairs if (p.topic, p.doc) in labelled))
            for r, pairs in by_round.items()}


def list_rounds(session: Session, *, sampling: Sampling, number: int | None = None,
                with_pairs: bool = True, inputs: NextInputs | None = None
                ) -> list[dict[str, Any]]:
    """Every round (or round ``number``; −1: the latest) with its pairs, each marked judged
    when the collection has a judgment for it now; per round how many are judged and how many
    labelled (the estimates' sample: see the module's docstring). ``with_pairs=False``: the
    rounds' counts without their pairs (``pairs`` None), with ``inputs`` counted once per
    state of the sampling and judgment watermark."""
    rounds = _rounds(session, sampling, design=False)
    if number is not None:
        wanted = rounds[-1].number if number == -1 and rounds else number
        rounds = [r for r in rounds if r.number == wanted]
    if not rounds:
        return []
    collection = session.get(Collection, sampling.collection_id)
    assert collection is not None
    inputs = inputs or _scratch()
    if not with_pairs:
        key = ("round_counts", sampling.id, sampling.created_at, _version(session, sampling),
               current_watermark(session, collection_id=collection.id),
               tuple(collection.ignore or ()))
        counts = inputs.memo("round_counts", key, lambda: _round_counts(
            session, sampling=sampling, collection=collection, inputs=inputs))
        return [round_public(r, None, counts=counts.get(r.id, (0, 0))) for r in rounds]
    by_round, judged, labelled = _judged_by_round(session, sampling=sampling,
                                                  collection=collection, inputs=inputs)
    return [round_public(r, by_round[r.id], judged, labelled) for r in rounds]


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


def list_samplings(session: Session, *, collection: Collection, limit: int | None = None,
                   offset: int = 0) -> list[dict[str, Any]]:
    """Oldest first; ``limit`` / ``offset``: a page of them (``count_samplings``: all)."""
    rows = session.scalars(select(Sampling).where(Sampling.collection_id == collection.id)
                           .order_by(Sampling.id).limit(limit).offset(offset))
    return [sampling_public(session, s) for s in rows]


def count_samplings(session: Session, *, collection: Collection) -> int:
    return session.scalar(select(func.count()).select_from(Sampling).where(
        Sampling.collection_id == collection.id)) or 0


def estimates(session: Session, *, sampling: Sampling, target_recall: float = TARGET_RECALL,
              inputs: NextInputs | None = None) -> dict[str, Any]:
    """HT estimates per run and topic and overall (mean over topics; variance Σ var / T²), and
    per topic and overall whether to stop judging at ``target_recall`` (thesis chapter 3:
    ``models.sampling.stopping``). ``judged``: the sampled pairs with a label (the estimates'
    sample). With ``inputs`` the estimates are computed once per state of the sampling (its
    runs, rounds and pairs, the judgment watermark) and shared: callers never change them."""
    collection = session.get(Collection, sampling.collection_id)
    assert collection is not None
    inputs = inputs or _scratch()
    runs, pools, pools_key = _pools(session, collection=collection, runs=sampling.runs,
                                    depth=sampling.depth, inputs=inputs, sampled=True)
    version = _version(session, sampling)
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
    runs, pools, states, rounds, pairs = _state(
        session, sampling, inputs, pooled,
        judged=judged_pairs(session, collection=collection, inputs=inputs))
    labels = crowd_labels(session, collection=collection, method=sampling.method,
                          inputs=inputs)
    known = _known(pools, labels)
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
    inputs.keep("topics", kept_key, now)
    return {"sampling_id": sampling.id, "strategy": sampling.strategy, "rounds": n_rounds,
            "sampled": n_sampled, "judged": judged,
            "results": overall + per_topic, "count": len(overall) + len(per_topic)}, topics


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
