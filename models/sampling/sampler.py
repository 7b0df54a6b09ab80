"""Rounds of document selection per topic, for every strategy, and the estimates they support.

Strategies: ``active`` (AP-prior over ranks, runs weighted by their estimated AP, re-estimated
every round), ``stratified`` (AP-prior with uniform run weights, fixed: Pavlu & Aslam's
stratified/importance sampling), ``uniform`` (uniform over the pool), ``depth`` (depth-k
pooling) and ``mtf`` (move-to-front). A round's budget is split evenly over the topics that
still have unjudged pooled documents (what a topic cannot use goes to the others).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

import numpy as np

from models.sampling.design import (
    TopicPool,
    draw,
    inclusion_first,
    inclusion_second,
    run_weights,
    selection_probabilities,
    uniform_probabilities,
)
from models.sampling.estimators import TopicEstimates, estimate_topic
from models.sampling.pooling import depth_next, mtf_next

# How a sampling draws new documents; models.sampling.rejudge orders judged tasks again.
SamplingStrategy = Literal["active", "stratified", "uniform", "depth", "mtf"]
SAMPLING_STRATEGIES: tuple[str, ...] = get_args(SamplingStrategy)
SAMPLING = frozenset({"active", "stratified", "uniform"})


@dataclass
class TopicState:
    """What has been drawn for one topic: per round the selection probabilities over the pool
    and the number of draws (sampling strategies), and the sampled docs in order."""

    p_rounds: list[np.ndarray] = field(default_factory=list)
    draws: list[int] = field(default_factory=list)
    docs: list[int] = field(default_factory=list)
    sources: list[int] = field(default_factory=list)  # mtf: the run a doc came from, else -1
    # Docs judged before the sampling began: in the sample with certainty (π = 1, a stratum of
    # its own), never drawn again.
    certain: set[int] = field(default_factory=set)


@dataclass(frozen=True)
class Pick:
    doc: int
    source: int
    selection: float  # p_t(i) of the round it was drawn in (1 for pooling)


def allocate(budget: int, capacity: Mapping[str, int], offset: int = 0) -> dict[str, int]:
    """Split ``budget`` evenly over topics (sorted; the remainder starts at ``offset``), none
    above its capacity; what a topic cannot take goes to the others."""
    topics = [t for t in sorted(capacity) if capacity[t] > 0]
    share = dict.fromkeys(topics, 0)
    left = budget
    while left > 0 and topics:
        open_topics = [t for t in topics if share[t] < capacity[t]]
        if not open_topics:
            break
        base, extra = divmod(left, len(open_topics))
        start = offset % len(open_topics)
        rotated = open_topics[start:] + open_topics[:start]
        for j, t in enumerate(rotated):
            give = min(base + (1 if j < extra else 0), capacity[t] - share[t])
            share[t] += give
            left -= give
    return {t: n for t, n in share.items() if n > 0}


def plan_round(*, strategy: str, pools: Mapping[str, TopicPool],
               states: Mapping[str, TopicState], labels: Mapping[str, Mapping[int, float]],
               budget: int, rng: np.random.Generator, round_no: int = 0,
               skip: Collection[str] = ()) -> dict[str, list[Pick]]:
    """The next round's picks per topic; ``states`` are updated in place. ``labels`` are the
    relevance values known so far per topic and doc index (missing: not judged yet). Topics in
    ``skip`` (e.g. at their target recall) take no draws this round: their π stay as they
    are, and the budget goes to the others."""
    if strategy not in SAMPLING_STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; "
                         f"valid: {', '.join(SAMPLING_STRATEGIES)}")
    capacity = {t: 0 if t in skip else pool.n_docs - len(set(states[t].docs))
                for t, pool in pools.items()}
    share = allocate(budget, capacity, offset=round_no)
    out: dict[str, list[Pick]] = {}
    for topic, n in share.items():
        pool, state = pools[topic], states[topic]
        sampled = np.zeros(pool.n_docs, dtype=bool)
        sampled[state.docs] = True
        known = labels.get(topic, {})
        if strategy == "depth":
            picks = [Pick(int(d), -1, 1.0) for d in depth_next(pool, sampled, n)]
        elif strategy == "mtf":
            history = [(d, s, known.get(d, 0.0)) for d, s in zip(state.docs, state.sources,
                                                                  strict=True)]
            picks = [Pick(d, k, 1.0) for d, k in mtf_next(pool, history, n)]
        else:
            answered = pool.depth > 0
            if strategy == "uniform":
                p = uniform_probabilities(pool)
            elif strategy == "stratified" or not state.docs:
                p = selection_probabilities(pool, run_weights(None, answered))
            else:
                ap = current_ap(pool, state, known)
                p = selection_probabilities(pool, run_weights(ap, answered))
            docs, n_draws = draw(p, n_new=n, exclude=sampled, rng=rng)
            state.p_rounds.append(p)
            state.draws.append(n_draws)
            picks = [Pick(int(d), -1, float(p[d])) for d in docs]
        for pick in picks:
            state.docs.append(pick.doc)
            state.sources.append(pick.source)
        out[topic] = picks
    return out


def inclusion(strategy: str, state: TopicState, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """(π, π_ij) over the state's sampled docs, in order (1 for the pooling strategies)."""
    docs = np.array(state.docs, dtype=np.int64)
    if strategy not in SAMPLING or not state.p_rounds:
        return np.ones(docs.size), np.ones((docs.size, docs.size))
    pi = inclusion_first(state.p_rounds, state.draws)[docs]
    pi2 = inclusion_second(state.p_rounds, state.draws, docs)
    if state.certain:
        # A doc in the sample with certainty: π_i = 1 and π_ij = π_j.
        sure = np.isin(docs, list(state.certain))
        pi2[sure, :] = pi[None, :]
        pi2[:, sure] = pi[:, None]
        pi[sure] = 1.0
        pi2[np.ix_(sure, sure)] = 1.0
        np.fill_diagonal(pi2, pi)
    return pi, pi2


def estimate(strategy: str, pool: TopicPool, state: TopicState, known: Mapping[int, float],
             cutoffs: Sequence[int] = (5, 10, 20)) -> TopicEstimates:
    """HT estimates for every run of the topic; docs without a label count as non-relevant."""
    pi, pi2 = inclusion(strategy, state, pool.n_docs)
    docs = np.array(state.docs, dtype=np.int64)
    y = np.array([known.get(int(d), 0.0) for d in docs], dtype=np.float64)
    ranks = pool.rank_matrix()[:, docs]
    return estimate_topic(ranks=ranks, y=y, pi=pi, pi2=pi2, cutoffs=cutoffs)


def current_ap(pool: TopicPool, state: TopicState, known: Mapping[int, float]) -> np.ndarray:
    """The runs' estimated AP on this topic from what has been judged (for eq. 2.1)."""
    estimates = estimate("active", pool, state, known, cutoffs=())
    return np.array([r.ap.value for r in estimates.runs])
