"""Which already-judged task should get its next crowd label: the re-judging order.

Given the posterior ``proba`` (n_tasks, K) of a fitted aggregation:

- ``uncertainty``: the posterior entropy H_i = -Σ_t p_it log p_it (nats), highest first
  (uncertainty sampling, Lewis & Gale 1994);
- ``expected-change``: the next label y comes from an annotator of accuracy a under a symmetric
  noise model, P(y = l | T = t) = a [l = t] + (1 - a)/(K - 1) [l ≠ t]. With the updated posterior
  p'_i(· | y = l) ∝ p_i(·) P(y = l | ·), the score is the expected gain in the probability that
  the label is right, E_y [max_t p'_it] − max_t p_it = Σ_l max_t p_it P(y = l | t) − max_t p_it,
  which is positive only when some next label would change the most probable label (expected
  error reduction for one task, Roy & McCallum 2001); ties (e.g. every task whose label no single
  label can change) are broken by the probability that the label changes, E_y [argmax p' ≠
  argmax p], then by the expected total-variation change E_y [½ Σ_t |p'_it − p_it|];
- ``random``: a seeded permutation (the baseline).

Everything is (n_tasks, K) with K tiny: no tasks × annotators array.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from typing import Literal, get_args

import numpy as np

# The re-judging orders (what to judge again); models.sampling.sampler draws new tasks.
RejudgeStrategy = Literal["uncertainty", "expected-change", "random"]
REJUDGE_STRATEGIES: tuple[str, ...] = get_args(RejudgeStrategy)


def entropy(proba: np.ndarray) -> np.ndarray:
    """Posterior entropy per task, in nats (0 log 0 = 0)."""
    p = np.asarray(proba, dtype=np.float64)
    safe = np.where(p > 0, p, 1.0)
    return -np.sum(p * np.log(safe), axis=1)


def expected_change(proba: np.ndarray, accuracy: float | np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(expected gain in P(the label is right), P(the most probable label changes), expected
    total-variation change) per task after one more label from an annotator of ``accuracy``
    (scalar or one per task)."""
    p = np.asarray(proba, dtype=np.float64)
    n, k = p.shape
    acc = np.broadcast_to(np.clip(np.asarray(accuracy, dtype=np.float64), 0.0, 1.0), (n,))
    off = (1.0 - acc) / (k - 1)
    current = np.argmax(p, axis=1)
    gain = -p.max(axis=1)
    flip = np.zeros(n)
    tv = np.zeros(n)
    for label in range(k):
        # likelihood of "y = label" under each true class t: (n, K)
        like = np.repeat(off[:, None], k, axis=1)
        like[:, label] = acc
        joint = p * like
        p_y = joint.sum(axis=1)
        gain += joint.max(axis=1)  # P(y) max_t p'(t | y)
        updated = joint / np.where(p_y > 0, p_y, 1.0)[:, None]
        flip += p_y * (np.argmax(updated, axis=1) != current)
        tv += p_y * 0.5 * np.abs(updated - p).sum(axis=1)
    return np.maximum(gain, 0.0), flip, tv


def rejudge_order(proba: np.ndarray, *, strategy: str, eligible: np.ndarray | None = None,
                  accuracy: float | np.ndarray = 0.7, random_state: int | None = None
                  ) -> np.ndarray:
    """Task indices, the most useful next label first; only ``eligible`` tasks (bool mask).

    Ties keep the lower task index first (stable sorts), so the order is deterministic.
    """
    p = np.asarray(proba, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] < 2:
        raise ValueError("proba must be (n_tasks, n_classes) with at least two classes")
    n = p.shape[0]
    candidates = np.arange(n) if eligible is None else np.flatnonzero(eligible)
    if strategy == "uncertainty":
        score = entropy(p[candidates])
        order = np.argsort(-score, kind="stable")
    elif strategy == "expected-change":
        acc = np.broadcast_to(np.asarray(accuracy, dtype=np.float64), (n,))[candidates]
        gain, flip, tv = expected_change(p[candidates], acc)
        # lexsort: the last key is primary — gain, then flip, then TV; ties by task index.
        order = np.lexsort((np.arange(candidates.shape[0]), -np.round(tv, 12),
                            -np.round(flip, 12), -np.round(gain, 12)))
    elif strategy == "random":
        order = np.random.default_rng(random_state).permutation(candidates.shape[0])
    else:
        raise ValueError(f"unknown strategy {strategy!r}; "
                         f"valid: {', '.join(REJUDGE_STRATEGIES)}")
    return candidates[order]


@dataclass(frozen=True)
class NextPlan:
    """What ``plan_next`` chose: ``order`` (task indices, best first) with each one's scores,
    its judgments so far, the annotators to ask (annotator indices, best first) and the one it
    goes to (``assigned``; −1: nobody left to ask, or everyone left has their share)."""

    order: np.ndarray
    uncertainty: np.ndarray
    expected_gain: np.ndarray
    p_label_change: np.ndarray
    expected_change: np.ndarray
    n_judgments: np.ndarray
    could_not_judge: np.ndarray  # per chosen task, its answers "could not judge"
    annotators: list[np.ndarray]
    competence: np.ndarray  # (n_annotators,) as used: the fit's, or the agreement fallback
    annotator_judgments: np.ndarray  # (n_annotators,) labels each has given: the evidence
    assigned: np.ndarray  # (n,) per chosen task, its annotator index, or −1


def agreement_competence(proba: np.ndarray, task: np.ndarray, annotator: np.ndarray,
                         label: np.ndarray, n_annotators: int,
                         prior: float | None = 0.5) -> np.ndarray:
    """Each annotator's expected agreement with the posterior, (Σ_a P(T_i = y_a) + prior) /
    (n + 1): shrunk towards ``prior`` by one pseudo-judgment (chance, ½, by default; None: the
    mean agreement over every judgment, 0.5 without any). ``label`` is a class index, −1 for a
    judgment outside the fit's classes (left out). Model-agnostic: MV, DS, MACE alike."""
    used = label >= 0
    agree = np.asarray(proba)[task[used], label[used]]
    if prior is None:
        prior = float(agree.mean()) if agree.size else 0.5
    n = np.bincount(annotator[used], minlength=n_annotators).astype(np.float64)
    total = np.bincount(annotator[used], weights=agree, minlength=n_annotators)
    return (total + prior) / (n + 1.0)


def plan_next(proba: np.ndarray, *, task: np.ndarray, annotator: np.ndarray,
              label: np.ndarray, competence: np.ndarray, annotator_names: np.ndarray,
              n: int, strategy: str, max_judgments: int | None = None,
              n_annotators: int = 10, random_state: int | None = None,
              min_annotator_judgments: int = 0,
              per_annotator: int | None = None,
              could_not_judge: np.ndarray | None = None,
              keep_could_not_judge: bool = False) -> NextPlan:
    """The ``n`` tasks whose next crowd label helps most, in long format (one entry per
    judgment: ``task``, ``annotator`` index, ``label`` class index or −1 for a judgment that
    counts as asked but not as a label, e.g. an ignored value).

    An annotator's ``competence`` is the fit's; NaN where the fit has none, then their
    agreement with the posterior. A task's next label comes from its best annotator not yet
    asked (ties by name): that one's competence, clipped to [0.5, 0.99], is the accuracy
    ``expected-change`` assumes. Only tasks with fewer than ``max_judgments`` labels are
    candidates when given; answers "could not judge" (``could_not_judge``, True per judgment:
    an ignored value such as RF10's −2, a broken page) count towards ``max_judgments`` too:
    they cost the crowd as much. A task mostly marked could-not-judge (more such answers than
    labels) is left out, unless ``keep_could_not_judge``: the crowd is telling that the page
    cannot be judged, and asking again mostly buys another such answer. Only annotators with
    at least ``min_annotator_judgments`` labels
    are proposed (a competence from a handful of labels is a guess: on RF10 the top three by
    a graded fit's competence have 15–25 judgments); a task whose every such annotator has
    judged it assumes a coin-flip accuracy of 0.5.

    ``assigned``: who each chosen task goes to, in the list's order — its best annotator not
    yet asked who has fewer than ``per_annotator`` tasks of this list already (no limit: the
    first of its ``annotators``; why: ``assign``). The order of the tasks does not depend on
    it: ``expected-change`` assumes each task's best annotator."""
    p = np.asarray(proba, dtype=np.float64)
    n_tasks, n_ann = p.shape[0], int(annotator_names.shape[0])
    task, annotator, label = (np.asarray(v, dtype=np.int64) for v in (task, annotator, label))
    competence = np.array(competence, dtype=np.float64)  # a copy: NaN (none from the fit)
    missing = np.isnan(competence)  # becomes the agreement with the posterior
    if missing.any():
        competence[missing] = agreement_competence(p, task, annotator, label, n_ann)[missing]
    counts = np.bincount(task[label >= 0], minlength=n_tasks)
    evidence = np.bincount(annotator[label >= 0], minlength=n_ann)
    proposed = evidence >= min_annotator_judgments
    # best first, ties by name; annotators with too little evidence after all the others
    ranked = np.lexsort((annotator_names, -competence, ~proposed))
    n_proposed = int(proposed.sum())
    best = _next_accuracy(task, annotator, competence, ranked, n_proposed=n_proposed,
                          n_tasks=n_tasks)
    cannot = (np.zeros(n_tasks, dtype=np.int64) if could_not_judge is None else
              np.bincount(task[np.asarray(could_not_judge, dtype=bool)], minlength=n_tasks))
    eligible = _eligible(counts, cannot, max_judgments=max_judgments,
                         keep_could_not_judge=keep_could_not_judge)
    order = rejudge_order(p, strategy=strategy, eligible=eligible, accuracy=best,
                          random_state=random_state)[:n]
    gain, flip, tv = expected_change(p[order], best[order])
    asked_by = _asked_by(task, annotator, order)
    best_first = ranked[:n_proposed].tolist()
    annotators = [np.fromiter(islice((a for a in best_first if a not in asked_by.get(i, ())),
                                     n_annotators), dtype=np.int64) for i in order.tolist()]
    return NextPlan(order, entropy(p[order]), gain, flip, tv, counts[order], cannot[order],
                    annotators, competence, evidence,
                    assign(order, asked_by, best_first, per_annotator))


def _asked_by(task: np.ndarray, annotator: np.ndarray,
              chosen: np.ndarray) -> dict[int, set[int]]:
    """{task: the annotators who judged it} for the ``chosen`` tasks."""
    asked_by: dict[int, set[int]] = {}
    of_chosen = np.isin(task, chosen)
    for t, a in zip(task[of_chosen].tolist(), annotator[of_chosen].tolist(), strict=True):
        asked_by.setdefault(t, set()).add(a)
    return asked_by


def _next_accuracy(task: np.ndarray, annotator: np.ndarray, competence: np.ndarray,
                   ranked: np.ndarray, *, n_proposed: int, n_tasks: int) -> np.ndarray:
    """Per task, the accuracy ``expected-change`` assumes: the competence of its best annotator
    not yet asked among the first ``n_proposed`` of ``ranked``, clipped to [0.5, 0.99]; 0.5
    when every one of them has judged it."""
    n_ann = ranked.shape[0]
    rank_of = np.empty(n_ann, dtype=np.int64)
    rank_of[ranked] = np.arange(n_ann)
    first_free = _first_unasked(task, rank_of[annotator], n_tasks=n_tasks, n_ranks=n_ann)
    best = (np.where(first_free < n_proposed,
                     competence[ranked[np.minimum(first_free, n_ann - 1)]], 0.5)
            if n_proposed else np.full(n_tasks, 0.5))
    return np.clip(best, 0.5, 0.99)


def _first_unasked(task: np.ndarray, rank: np.ndarray, *, n_tasks: int,
                   n_ranks: int) -> np.ndarray:
    """Per task, the best annotator not yet asked: the smallest rank its judges (``rank`` per
    judgment) do not hold; the number of ranks held when they hold every one from 0."""
    pairs = np.unique(task * n_ranks + rank)
    pair_task, pair_rank = pairs // n_ranks, pairs % n_ranks
    start = np.searchsorted(pair_task, np.arange(n_tasks))
    within = np.arange(pairs.shape[0]) - start[pair_task]
    first_free = np.bincount(pair_task, minlength=n_tasks)  # all held: the next rank
    gaps = np.flatnonzero(pair_rank != within)
    if gaps.size:  # the first gap of each task (np.unique keeps the first index per task)
        gap_tasks, first = np.unique(pair_task[gaps], return_index=True)
        first_free[gap_tasks] = within[gaps[first]]
    return first_free


def _eligible(counts: np.ndarray, cannot: np.ndarray, *, max_judgments: int | None,
              keep_could_not_judge: bool) -> np.ndarray | None:
    """The candidate tasks (None: every one): fewer than ``max_judgments`` answers, labels and
    could-not-judge alike, and, unless ``keep_could_not_judge``, not mostly could-not-judge."""
    eligible = None if max_judgments is None else counts + cannot < max_judgments
    if not keep_could_not_judge and cannot.any():
        mostly = cannot > counts
        eligible = ~mostly if eligible is None else eligible & ~mostly
    return eligible


def assign(order: np.ndarray, asked_by: dict[int, set[int]], best_first: list[int],
           per_annotator: int | None) -> np.ndarray:
    """Greedy, in ``order``: each task to the first of ``best_first`` who has not judged it
    and has fewer than ``per_annotator`` tasks so far (None: no limit); −1 when nobody is.
    Best first, every task would go to the same few annotators (on RF10 the top three of
    every task's list are the same); a crowd platform gives a worker a share."""
    if per_annotator is not None and per_annotator < 1:
        raise ValueError(f"per_annotator must be at least 1, got {per_annotator}")
    load: dict[int, int] = {}
    full: set[int] = set()
    first_open = 0  # every annotator before it is full: the walk starts here
    out = np.full(order.shape[0], -1, dtype=np.int64)
    for rank, i in enumerate(order.tolist()):
        done = asked_by.get(i, set())
        while first_open < len(best_first) and best_first[first_open] in full:
            first_open += 1
        for a in islice(best_first, first_open, None):
            if a in done or a in full:
                continue
            out[rank] = a
            load[a] = load.get(a, 0) + 1
            if per_annotator is not None and load[a] >= per_annotator:
                full.add(a)
            break
    return out
