"""A sampling's rounds: draw the next one (optionally skipping the topics a stopping rule says
are done) and list them with how many of their pairs are judged and labelled (see
``app.sampling.service`` for the two readings)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from sqlalchemy import update
from sqlalchemy.orm import Session

from app.collections.tables import Collection
from app.core.errors import Conflict, InvalidInput
from app.judgments.columns import current_watermark
from app.sampling.inputs import NextInputs
from app.sampling.service import (
    crowd_labels,
    judged_pairs,
    known_labels,
    pool_digest,
    rounds_of,
    sampled_pairs,
    sampling_state,
    sampling_version,
    scratch,
)
from app.sampling.tables import SampledPair, Sampling, SamplingRound
from models.sampling.design import TopicPool, inclusion_first
from models.sampling.sampler import SAMPLING, TopicState, plan_round
from models.sampling.stopping import (
    STOP_RULES,
    TARGET_RECALL,
    check_topic,
)


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


def _check_judged(session: Session, *, collection: Collection, inputs: NextInputs,
                  last: SamplingRound, pairs: Sequence[Any]) -> None:
    """409 ``round_not_judged`` when none of the ``last`` round's pairs has a judgment. Judged
    as GET /rounds counts it: a "could not judge" value (the collection's ignore) is the
    crowd's answer too, and a round answered only with it is not unjudged."""
    judged = judged_pairs(session, collection=collection, inputs=inputs)
    drawn = [p for p in pairs if p.round_id == last.id]
    missing = sum(1 for p in drawn if (p.topic, p.doc) not in judged)
    if missing == len(drawn) and drawn:
        raise Conflict(f"round {last.number} has no judgments yet: {missing} of its "
                       f"{len(drawn)} pairs are missing (force to draw anyway)",
                       code="round_not_judged", missing=missing, round=last.number)


def _add_pairs(session: Session, *, sampling: Sampling, row: SamplingRound,
               picks: Mapping[str, Sequence[Any]], states: Mapping[str, TopicState],
               pools: Mapping[str, TopicPool], runs: Sequence[str]) -> list[SampledPair]:
    """The round's picks as sampled pairs, each with its inclusion probability so far."""
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
    return out_pairs


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
    inputs = inputs or scratch()
    runs, pools, states, rounds, pairs = sampling_state(session, sampling, inputs)
    labels = crowd_labels(session, collection=collection, method=sampling.method, inputs=inputs)
    if rounds and not force:
        _check_judged(session, collection=collection, inputs=inputs, last=rounds[-1],
                      pairs=pairs)
    remaining = sampling.pool_size - len(pairs)
    if remaining == 0:
        raise Conflict("every pooled pair has been sampled", code="pool_exhausted")
    known = known_labels(pools, labels)
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
    out_pairs = _add_pairs(session, sampling=sampling, row=row, picks=picks, states=states,
                           pools=pools, runs=runs)
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
    for pair in sampled_pairs(session, sampling, inputs):
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
    rounds = rounds_of(session, sampling, design=False)
    if number is not None:
        wanted = rounds[-1].number if number == -1 and rounds else number
        rounds = [r for r in rounds if r.number == wanted]
    if not rounds:
        return []
    collection = session.get(Collection, sampling.collection_id)
    assert collection is not None
    inputs = inputs or scratch()
    if not with_pairs:
        key = ("round_counts", sampling.id, sampling.created_at,
               sampling_version(session, sampling),
               current_watermark(session, collection_id=collection.id),
               tuple(collection.ignore or ()))
        counts = inputs.memo("round_counts", key, lambda: _round_counts(
            session, sampling=sampling, collection=collection, inputs=inputs))
        return [round_public(r, None, counts=counts.get(r.id, (0, 0))) for r in rounds]
    by_round, judged, labelled = _judged_by_round(session, sampling=sampling,
                                                  collection=collection, inputs=inputs)
    return [round_public(r, by_round[r.id], judged, labelled) for r in rounds]
