"""When to stop judging a topic (thesis chapter 3, §3.3.5): from the relevant documents found
so far and the Horvitz–Thompson estimate of how many the pool holds, with its variance.

With r relevant documents among the judged sample, R̂ the estimated number in the pool, sd its
estimated standard deviation and a target recall ρ:

- optimistic: stop when r / ρ ≥ R̂ (the estimate says the target is reached);
- conservative: stop when r / ρ ≥ R̂ + sd (it still says so one standard deviation higher).

R̂ ≥ r always (every sampled relevant document counts 1 / π ≥ 1), so the estimated recall
r / R̂ is at most 1 and R̂ − r, the relevant documents still missing, is at least 0. The rule is
transparent in the way the chapter asks for: it says how many relevant documents remain.

Neither rule stops before a relevant document is found: with r = 0 the estimate is 0 whatever
the pool holds, and "0 / ρ ≥ 0" stops a topic as soon as a round finds nothing (on the
synthetic runs of ``bench/bench_sampling.py --part stopping``, 2 seeds, without this guard:
40 % of the topics under uniform sampling at ρ = 1, after 2.4 % of their pool).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

from models.sampling.design import TopicPool
from models.sampling.sampler import SAMPLING, TopicState, estimate

TARGET_RECALL = 0.9  # the default target: the middle of the thesis' 0.8, 0.9, 1.0 (chapter 3)
StopRule = Literal["optimistic", "conservative"]
STOP_RULES: tuple[str, ...] = get_args(StopRule)


@dataclass(frozen=True)
class StoppingCheck:
    found: float  # r: relevant documents among the judged sample
    estimate: float  # R̂: the estimated number of relevant documents in the pool
    sd: float | None  # √var(R̂); None when the variance could not be estimated
    target_recall: float
    estimated_recall: float | None  # r / R̂ (None when R̂ = 0: nothing relevant seen)
    residual: float  # R̂ − r: relevant documents estimated still missing (≥ 0)
    optimistic: bool  # r > 0 and r / ρ ≥ R̂
    conservative: bool  # r > 0 and r / ρ ≥ R̂ + sd (False without a variance)


def stopping_check(found: float, estimate: float, variance: float | None,
                   target_recall: float, *, estimable: bool = True) -> StoppingCheck:
    """The two rules for one topic (or for a sum over topics: R̂ and var(R̂) add up over
    independent strata). ``estimable`` False (``estimable``): R̂ counts only part of the pool,
    so there is no estimated recall and neither rule stops."""
    if not 0.0 < target_recall <= 1.0:
        raise ValueError(f"target_recall must be in (0, 1], not {target_recall}")
    if found < 0 or not math.isfinite(estimate):
        raise ValueError("found must be >= 0 and the estimate finite")
    # R̂ ≥ r holds for an HT estimate; rounding can put it a hair below
    estimate = max(float(estimate), float(found))
    sd = (math.sqrt(max(variance, 0.0))
          if variance is not None and math.isfinite(variance) else None)
    # 1e-9: r / ρ equal to R̂ up to rounding counts as reached
    need = found / target_recall + 1e-9
    return StoppingCheck(
        found=float(found), estimate=estimate, sd=sd, target_recall=target_recall,
        estimated_recall=found / estimate if estimate > 0 and estimable else None,
        residual=estimate - found,
        optimistic=estimable and found > 0 and need >= estimate,
        conservative=estimable and found > 0 and sd is not None and need >= estimate + sd,
    )


def estimable(strategy: str, pool: TopicPool, state: TopicState) -> bool:
    """Whether R̂ estimates the relevant documents of the topic's whole pool: the pool is all
    in the sample, or (sampling strategies) a round has drawn from the topic. Before its first
    draw a topic's sample is only the pairs judged before the sampling (round 0, π = 1): R̂ is
    then the relevant documents among them, r / R̂ = 1 whatever the rest of the pool holds, and
    the rules stopped every topic with a relevant document judged beforehand (a first round
    with ``stop`` was refused as ``target_reached``). Pooling strategies (depth, mtf) estimate
    nothing: their R̂ is the trec_eval count of what they judged."""
    if strategy not in SAMPLING or len(set(state.docs)) >= pool.n_docs:
        return True
    return sum(state.draws) > 0


def found_relevant(state: TopicState, known: Mapping[int, float]) -> float:
    """r: the relevant documents among a topic's judged sample (each counted once)."""
    return float(sum(known.get(d, 0.0) for d in set(state.docs)))


def check_topic(strategy: str, pool: TopicPool, state: TopicState, known: Mapping[int, float],
                target_recall: float) -> StoppingCheck | None:
    """The rules for one topic of a sampling (None before anything is sampled, or before the
    topic's first draw: ``estimable``)."""
    if not state.docs or not estimable(strategy, pool, state):
        return None
    rel = estimate(strategy, pool, state, known, cutoffs=()).n_relevant
    return stopping_check(found_relevant(state, known), rel.value, rel.variance, target_recall)
