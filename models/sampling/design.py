"""Active sampling of documents from runs (Li & Kanoulas, CIKM 2017; thesis chapter 2).

Per topic the pool is the union of the runs' top-``depth`` documents. Round t draws documents
with replacement from the joint distribution (Algorithm 1, step 2)

    p_t(i) = Σ_k p_t(k) p_k(r_k(i)),

where p_k(r) is the AP-prior over the ranks of run k (eq. 2.2–2.3),
w(r) = (1/N)(1 + 1/r + 1/(r+1) + … + 1/N), p(r) = w(r) / Σ_r w(r), N the run's depth, and
p_t(k) ∝ the runs' estimated AP after round t−1 (eq. 2.1; uniform before any judgment). After
T rounds of N_t draws the inclusion probabilities are (eq. 2.5, 2.6)

    π_i  = 1 − Π_t (1 − p_t(i))^{N_t}
    π_ij = π_i + π_j − [1 − Π_t (1 − p_t(i) − p_t(j))^{N_t}].

Products over draws are sums of logs (log1p), since (1 − p)^{N_t} underflows for large N_t.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

# The share of the mean estimated AP every run keeps in p_t(k): a run whose estimate is 0 still
# has a positive probability, so every pooled document keeps p_t(i) > 0 (HT needs π_i > 0).
RUN_FLOOR = 0.05


@dataclass(frozen=True)
class TopicPool:
    """One topic's pool in long format: entry e says run ``run[e]`` ranked doc ``doc[e]`` at
    ``rank[e]`` (1-based). ``docs`` are the pooled doc ids, sorted; ``depth[k]`` is how many
    documents run k contributes (0 when it did not answer the topic)."""

    topic: str
    docs: np.ndarray  # (n_docs,) str
    run: np.ndarray  # (n_entries,) int64
    doc: np.ndarray  # (n_entries,) int64 index into docs
    rank: np.ndarray  # (n_entries,) int64, 1-based
    depth: np.ndarray  # (n_runs,) int64

    @property
    def n_docs(self) -> int:
        return int(self.docs.shape[0])

    def rank_matrix(self) -> np.ndarray:
        """(n_runs, n_docs) rank of each doc in each run, 0 where the run does not retrieve it.
        Small: runs × pooled docs of one topic."""
        out = np.zeros((self.depth.shape[0], self.n_docs), dtype=np.int64)
        out[self.run, self.doc] = self.rank
        return out


def build_pools(rankings: Mapping[str, Mapping[str, Sequence[str]]], *,
                depth: int | None = None, topics: Sequence[str] | None = None
                ) -> tuple[list[str], dict[str, TopicPool]]:
    """(run names in order, {topic: pool}) from ``{run: {topic: [doc, ...] best first}}``."""
    runs = sorted(rankings)
    all_topics = sorted({t for r in runs for t in rankings[r]}) if topics is None else topics
    pools = {}
    for topic in all_topics:
        lists = [list(rankings[r].get(topic, ()))[:depth] for r in runs]
        docs = np.array(sorted({d for lst in lists for d in lst}), dtype=str)
        if docs.size == 0:
            continue
        index = {d: i for i, d in enumerate(docs.tolist())}
        run = np.concatenate([np.full(len(lst), k, dtype=np.int64) for k, lst in enumerate(lists)])
        doc = np.array([index[d] for lst in lists for d in lst], dtype=np.int64)
        rank = np.concatenate([np.arange(1, len(lst) + 1, dtype=np.int64) for lst in lists])
        pools[topic] = TopicPool(topic, docs, run, doc, rank,
                                 np.array([len(lst) for lst in lists], dtype=np.int64))
    return runs, pools


def ap_prior(n: int) -> np.ndarray:
    """p(r), r = 1..n (eq. 2.2–2.3): w(r) = (1/n)(1 + Σ_{j=r}^{n} 1/j), normalised."""
    if n < 1:
        return np.zeros(0)
    tail = np.cumsum((1.0 / np.arange(1, n + 1))[::-1])[::-1]  # Σ_{j=r}^{n} 1/j
    w = (1.0 + tail) / n
    return w / w.sum()


def run_weights(ap: np.ndarray | None, answered: np.ndarray) -> np.ndarray:
    """p_t(k) (eq. 2.1): proportional to the estimated AP, each run keeping RUN_FLOOR of the mean
    estimate; uniform without estimates or when all are 0. Runs that did not answer get 0."""
    k = answered.shape[0]
    w = np.zeros(k)
    if not answered.any():
        return w
    if ap is None or not np.any(np.asarray(ap)[answered] > 0):
        w[answered] = 1.0
    else:
        a = np.clip(np.nan_to_num(np.asarray(ap, dtype=np.float64)), 0.0, None)
        w[answered] = a[answered] + RUN_FLOOR * a[answered].mean()
    return w / w.sum()


def selection_probabilities(pool: TopicPool, weights: np.ndarray) -> np.ndarray:
    """p_t(i) = Σ_k p_t(k) p_k(r_k(i)) over the pool's documents (sums to 1)."""
    entry_depth = pool.depth[pool.run]
    p_entry = np.zeros(pool.run.shape[0])
    for n in np.unique(entry_depth):
        at = entry_depth == n
        p_entry[at] = ap_prior(int(n))[pool.rank[at] - 1]
    p = np.bincount(pool.doc, weights=weights[pool.run] * p_entry, minlength=pool.n_docs)
    return p / p.sum()


def uniform_probabilities(pool: TopicPool) -> np.ndarray:
    return np.full(pool.n_docs, 1.0 / pool.n_docs)


def draw(p: np.ndarray, *, n_new: int, exclude: np.ndarray, rng: np.random.Generator,
         max_draws: int = 1_000_000) -> tuple[np.ndarray, int]:
    """Draw with replacement from ``p`` until ``n_new`` distinct documents outside ``exclude``
    (bool mask) are in the sample (Algorithm 1, step 3; fewer when the pool runs out).
    Returns (the new documents in order of first draw, the number of draws N_t)."""
    available = (~exclude) & (p > 0)
    target = min(n_new, int(available.sum()))
    found: list[int] = []
    seen = exclude.copy()
    draws = 0
    cdf = np.cumsum(p)
    cdf /= cdf[-1]
    while len(found) < target and draws < max_draws:
        chunk = max(4 * (target - len(found)), 16)
        picks = np.minimum(np.searchsorted(cdf, rng.random(chunk), side="right"), p.size - 1)
        for j, d in enumerate(picks.tolist()):
            if not seen[d]:
                seen[d] = True
                found.append(d)
                if len(found) == target:
                    draws += j + 1
                    break
        else:
            draws += chunk
    return np.array(found, dtype=np.int64), draws


def log_miss(p_rounds: Sequence[np.ndarray], draws: Sequence[int]) -> np.ndarray:
    """Σ_t N_t log(1 − p_t(i)): the log-probability that doc i was never drawn."""
    total = np.zeros_like(np.asarray(p_rounds[0], dtype=np.float64))
    for p, n in zip(p_rounds, draws, strict=True):
        total += n * np.log1p(-np.minimum(p, 1.0 - 1e-15))
    return total


def inclusion_first(p_rounds: Sequence[np.ndarray], draws: Sequence[int]) -> np.ndarray:
    """π_i = 1 − Π_t (1 − p_t(i))^{N_t} (eq. 2.5) for every doc of the pool."""
    return -np.expm1(log_miss(p_rounds, draws))


def inclusion_second(p_rounds: Sequence[np.ndarray], draws: Sequence[int],
                     docs: np.ndarray) -> np.ndarray:
    """(m, m) π_ij over ``docs`` (eq. 2.6), with π_i on the diagonal."""
    docs = np.asarray(docs, dtype=np.int64)
    m = docs.shape[0]
    first = inclusion_first([np.asarray(p)[docs] for p in p_rounds], draws)
    log_neither = np.zeros((m, m))
    for p, n in zip(p_rounds, draws, strict=True):
        q = np.asarray(p)[docs]
        both = np.clip(1.0 - q[:, None] - q[None, :], 1e-300, None)
        log_neither += n * np.log(both)
    out = first[:, None] + first[None, :] - 1.0 + np.exp(log_neither)
    np.fill_diagonal(out, first)
    return np.clip(out, 0.0, 1.0)
