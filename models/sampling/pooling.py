"""The deterministic pooling baselines of thesis §2.4.4: depth-k pooling and move-to-front
(Cormack, Palmer & Clarke 1998). Both judge documents with certainty, so their estimates are the
trec_eval values over the judged documents (π = 1)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from models.sampling.design import TopicPool


def depth_order(pool: TopicPool) -> np.ndarray:
    """Pool documents by their best rank in any run (depth-1 pool first, then depth 2, …), ties
    by doc id: the first n are the depth-k pool once n covers it."""
    best = np.full(pool.n_docs, np.iinfo(np.int64).max)
    np.minimum.at(best, pool.doc, pool.rank)
    return np.lexsort((np.arange(pool.n_docs), best))


def depth_next(pool: TopicPool, judged: np.ndarray, n: int) -> np.ndarray:
    order = depth_order(pool)
    return order[~judged[order]][:n]


def mtf_next(pool: TopicPool, history: Sequence[tuple[int, int, float]], n: int
             ) -> list[tuple[int, int]]:
    """Batched move-to-front. ``history``: (doc, source run, relevance) in judging order.

    Every run starts with priority 0 and loses 1 per non-relevant document it contributed
    (Cormack et al.: a run keeps the turn while it finds relevant documents). Labels arrive per
    round, so a round cannot follow one run until it misses; instead the runs in priority order
    (ties: more relevant found, then run order) get geometric shares of the round, n/2, n/4, …
    (at least one each), walking down their rankings past judged documents, cycling until the
    round is full. Returns (doc, source run)."""
    n_runs = pool.depth.shape[0]
    priority = np.zeros(n_runs)
    found = np.zeros(n_runs)
    judged = np.zeros(pool.n_docs, dtype=bool)
    for doc, run, label in history:
        judged[doc] = True
        if run >= 0:
            if label > 0:
                found[run] += 1
            else:
                priority[run] -= 1
    order = np.lexsort((np.arange(n_runs), -found, -priority)).tolist()
    lists = {}
    for k in order:
        entries = np.flatnonzero(pool.run == k)
        lists[k] = pool.doc[entries[np.argsort(pool.rank[entries])]].tolist()
    position = dict.fromkeys(order, 0)
    out: list[tuple[int, int]] = []
    while len(out) < n:
        progress = False
        for j, k in enumerate(order):
            quota = max(1, n >> (j + 1))
            docs = lists[k]
            while quota > 0 and len(out) < n and position[k] < len(docs):
                d = docs[position[k]]
                position[k] += 1
                if not judged[d]:
                    judged[d] = True
                    out.append((d, k))
                    quota -= 1
                    progress = True
            if len(out) >= n:
                break
        if not progress:
            break
    return out
