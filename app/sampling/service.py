"""Samplings of documents from a collection's runs: create, list, and the state every reading of
one starts from (its pools, rounds, sampled pairs and the crowd labels). Drawing and listing
rounds: ``app.sampling.rounds``; the estimates: ``app.sampling.estimates``; the rounds as a
file: ``app.sampling.export``.

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

import hashlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session, defer

from app.collections.tables import Collection
from app.core.errors import Conflict, InvalidInput, NotFound
from app.corpus.service import known_topics, load_runs
from app.corpus.tables import Run
from app.judgments.columns import TaskNames, annotation_data, current_watermark, task_names
from app.sampling.inputs import NextInputs
from app.sampling.schemas import SamplingCreate
from app.sampling.tables import SampledPair, Sampling, SamplingRound
from models.sampling.design import TopicPool, build_pools
from models.sampling.sampler import TopicState

LABEL_METHODS = ("mv", "ds", "mace")
CUTOFFS = (5, 10, 20)


def sampling_not_found(sampling_id: int) -> NotFound:
    return NotFound(f"no sampling {sampling_id}", code="sampling_not_found")


def get_sampling(session: Session, *, sampling_id: int) -> Sampling:
    sampling = session.get(Sampling, sampling_id)
    if sampling is None:
        raise sampling_not_found(sampling_id)
    return sampling


def scratch() -> NextInputs:
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


def sampling_pools(session: Session, *, collection: Collection, runs: list[str] | None,
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
    names_, pools, answered = (inputs or scratch()).memo("pools", key, lambda: _build_pools(
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
    inputs = inputs or scratch()
    runs, pools, _ = sampling_pools(session, collection=collection, runs=spec.runs,
                                    depth=spec.depth, inputs=inputs)
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
    inputs = inputs or scratch()
    columns = inputs.judgments(session, collection)
    tasks = columns.task_id
    if labelled and collection.ignore:
        tasks = tasks[~np.isin(columns.label, collection.ignore)]
    names = _task_names(session, collection=collection, watermark=columns.watermark,
                        inputs=inputs)
    topics, docs = names.at(np.unique(tasks))
    return set(zip(topics.tolist(), docs.tolist(), strict=True))


def rounds_of(session: Session, sampling: Sampling, *, design: bool = True
              ) -> list[SamplingRound]:
    """``design=False``: without the selection probabilities (a pool's worth of numbers per
    round), for a listing."""
    query = select(SamplingRound).where(SamplingRound.sampling_id == sampling.id)
    if not design:
        query = query.options(defer(SamplingRound.design))
    return list(session.scalars(query.order_by(SamplingRound.number)))


def sampled_pairs(session: Session, sampling: Sampling, inputs: NextInputs | None = None
                  ) -> Sequence[Any]:
    """The sampled pairs in the order drawn, as rows (``.round_id``, ``.topic``, ``.doc``,
    ...): tens of thousands of them, read without building ORM objects; with ``inputs`` read
    again only when pairs were added."""
    key = ("pairs", sampling.id, sampling.created_at, sampling_version(session, sampling)[2:])
    return (inputs or scratch()).memo("pairs", key, lambda: session.execute(select(
        SampledPair.id, SampledPair.round_id, SampledPair.topic, SampledPair.doc,
        SampledPair.source_run, SampledPair.selection, SampledPair.inclusion,
    ).where(SampledPair.sampling_id == sampling.id).order_by(SampledPair.id)).all())


def sampling_version(session: Session, sampling: Sampling) -> tuple[int, int, int, int]:
    """(rounds, largest round id, pairs, largest pair id): rounds and pairs are only added, so
    these change whenever the sampling's state does."""
    rounds = session.execute(select(func.count(), func.max(SamplingRound.id)).where(
        SamplingRound.sampling_id == sampling.id)).one()
    pairs = session.execute(select(func.count(), func.max(SampledPair.id)).where(
        SampledPair.sampling_id == sampling.id)).one()
    return rounds[0], rounds[1] or 0, pairs[0], pairs[1] or 0


def sampling_state(session: Session, sampling: Sampling, inputs: NextInputs | None = None,
                   pooled: tuple[list[str], dict[str, TopicPool]] | None = None,
                   judged: set[tuple[str, str]] | None = None
                   ) -> tuple[list[str], dict[str, TopicPool], dict[str, TopicState],
                              list[SamplingRound], Sequence[Any]]:
    """``pooled``: the sampling's (runs, pools) when the caller has them (``sampling_pools``).
    ``judged``: the collection's judged pairs; the latest rounds none of whose pairs is among
    them are left out (the estimates' design: ``_estimates``)."""
    if pooled is None:
        collection = session.get(Collection, sampling.collection_id)
        assert collection is not None
        runs, pools, _ = sampling_pools(session, collection=collection, runs=sampling.runs,
                                        depth=sampling.depth, inputs=inputs, sampled=True)
    else:
        runs, pools = pooled
    if sum(p.n_docs for p in pools.values()) != sampling.pool_size:
        raise _runs_changed(session, sampling)
    states = {t: TopicState() for t in pools}
    rounds = rounds_of(session, sampling)
    pairs = sampled_pairs(session, sampling, inputs)
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
    refused earlier, in ``sampling_pools``)."""
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
                inputs: NextInputs) -> TaskNames:
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
    inputs = inputs or scratch()
    watermark = current_watermark(session, collection_id=collection.id)
    if watermark == 0:
        return {}
    key = ("labels", collection.id, collection.created_at, tuple(collection.ignore or ()),
           collection.relevant_from, method, watermark)
    return inputs.memo("labels", key, lambda: _fit_labels(
        session, collection=collection, method=method, inputs=inputs))


def known_labels(pools: Mapping[str, TopicPool], labels: Mapping[tuple[str, str], float]
                 ) -> dict[str, dict[int, float]]:
    """Each topic's crowd labels by the index of the document in its pool (pairs outside the
    pools left out)."""
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


def list_samplings(session: Session, *, collection: Collection, limit: int | None = None,
                   offset: int = 0) -> list[dict[str, Any]]:
    """Oldest first; ``limit`` / ``offset``: a page of them (``count_samplings``: all)."""
    rows = session.scalars(select(Sampling).where(Sampling.collection_id == collection.id)
                           .order_by(Sampling.id).limit(limit).offset(offset))
    return [sampling_public(session, s) for s in rows]


def count_samplings(session: Session, *, collection: Collection) -> int:
    return session.scalar(select(func.count()).select_from(Sampling).where(
        Sampling.collection_id == collection.id)) or 0
