"""Dirichlet priors shared by the confusion-matrix models (IBCC, EBCC, ordinal Dawid–Skene).

- ``e_log_dirichlet`` and ``kl_dirichlet``: E[ln p] under Dir(α) and KL between Dirichlets
  (``kl_dirichlet_shared``: the KL to one prior shared by many, its terms evaluated once);
- ``polya_fixed_point``: the type-II maximum-likelihood Dirichlet shared by rows of counts
  (Minka 2000, *Estimating a Dirichlet distribution*, the fixed point for the Pólya distribution);
- ``ClassPrior``: the class prior κ_g ~ Dir(ν₀) of each group of tasks, one for the collection or
  one per topic (relevance rates differ widely between topics), ν₀ optionally by empirical Bayes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy.special import digamma, gammaln

from models.data import AnnotationData


def e_log_dirichlet(alpha: np.ndarray) -> np.ndarray:
    """E[ln p] under Dir(alpha) along the last axis."""
    return digamma(alpha) - digamma(alpha.sum(axis=-1, keepdims=True))


def kl_dirichlet(alpha: np.ndarray, prior: np.ndarray) -> float:
    """Σ KL(Dir(alpha) ‖ Dir(prior)) over all leading axes."""
    prior = np.broadcast_to(prior, alpha.shape)
    a0 = alpha.sum(axis=-1)
    kl = (gammaln(a0) - gammaln(prior.sum(axis=-1))
          - np.sum(gammaln(alpha) - gammaln(prior), axis=-1)
          + np.sum((alpha - prior) * e_log_dirichlet(alpha), axis=-1))
    return float(np.sum(kl))


def kl_dirichlet_shared(alpha: np.ndarray, prior: np.ndarray, e_log: np.ndarray,
                        axis: int) -> float:
    """Σ KL(Dir(alpha) ‖ Dir(prior)) over every Dirichlet in ``alpha``, whose parameters run
    along ``axis``, when one ``prior`` (``alpha.shape[1:]``, the same layout) is shared by every
    index of the first axis, e.g. EBCC's annotators. ``e_log`` = E[ln p] under Dir(alpha), which
    the caller has already. The prior's own terms, −ln Γ(Σ prior) + Σ ln Γ(prior), are summed
    once and counted for each index of the first axis, rather than evaluated on the broadcast."""
    copies = alpha.shape[0]
    prior_terms = float(np.sum(gammaln(prior)) - np.sum(gammaln(prior.sum(axis=axis - 1))))
    return (float(np.sum(gammaln(alpha.sum(axis=axis))) - np.sum(gammaln(alpha))
                  + np.sum((alpha - prior[None]) * e_log)) + copies * prior_terms)


def polya_fixed_point(counts: np.ndarray, alpha: np.ndarray, n_steps: int = 20,
                      floor: float = 1e-3, ceiling: float = 1e4) -> np.ndarray:
    """Type-II ML of a Dirichlet shared by rows of ``counts`` (J, K): Minka's fixed point.

    Maximises Σ_j ln B(α + n_j) − ln B(α); counts may be fractional (expected counts). Rows without
    counts carry no information and are skipped.
    """
    counts = counts[counts.sum(axis=1) > 0]
    if counts.shape[0] == 0:
        return alpha
    totals = counts.sum(axis=1)
    alpha = alpha.copy()
    for _ in range(n_steps):
        a0 = alpha.sum()
        num = np.sum(digamma(counts + alpha), axis=0) - counts.shape[0] * digamma(alpha)
        den = np.sum(digamma(totals + a0)) - counts.shape[0] * digamma(a0)
        if den <= 0:
            break
        new = np.clip(alpha * np.maximum(num, 1e-12) / den, floor, ceiling)
        if np.max(np.abs(new - alpha) / alpha) < 1e-6:
            alpha = new
            break
        alpha = new
    return alpha


# what a class prior is shared by: the whole collection, or each topic
Grouping = Literal["collection", "topic"]


def _sorted_codes(values: np.ndarray) -> np.ndarray | None:
    """``np.unique(values, return_inverse=True)[1]`` when ``values`` is sorted (tasks held in
    topic order, as files are read): each value's rank among the distinct values is the number
    of changes before it. None when not sorted. A comparison of neighbours instead of a sort
    of every task's topic string."""
    if values.shape[0] < 2 or not bool(np.all(values[1:] >= values[:-1])):
        return None
    group = np.zeros(values.shape[0], dtype=np.int64)
    np.cumsum(values[1:] != values[:-1], out=group[1:])
    return group


@dataclass
class ClassPrior:
    """q(κ_g) = Dir(ν_g) for each group g of tasks: one for the collection, or one per topic
    (relevance rates differ widely between topics). With ``empirical`` the shared ν₀ is the
    type-II ML value over the groups (Minka's fixed point), as α₀ is for annotators."""

    group: np.ndarray  # (n_tasks,) group index
    n_groups: int
    nu0: np.ndarray  # (K,)
    judged: np.ndarray
    empirical: bool
    # the judged tasks' groups, or all of them (no mask to apply each iteration)
    _judged_groups: np.ndarray = field(init=False, repr=False)
    _all_judged: bool = field(init=False, repr=False)
    # where each group's run starts when the groups are sorted and every task is judged (tasks
    # are sorted by topic: the counts are then sums over contiguous runs), else None
    _starts: np.ndarray | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._all_judged = bool(np.all(self.judged))
        self._judged_groups = self.group if self._all_judged else self.group[self.judged]
        g = self.group
        # sorted, so its distinct values are its changes plus one (np.unique would sort it)
        runs = (self._all_judged and g.size > 0 and bool(np.all(g[1:] >= g[:-1]))
                and int(np.count_nonzero(g[1:] != g[:-1])) + 1 == self.n_groups)
        self._starts = np.searchsorted(g, np.arange(self.n_groups)) if runs else None

    @classmethod
    def build(cls, data: AnnotationData, by: Grouping, class_prior: float, judged: np.ndarray,
              empirical: bool) -> ClassPrior:
        if by == "topic":
            group = _sorted_codes(data.topic_ids)
            if group is None:
                _, group = np.unique(data.topic_ids, return_inverse=True)
            group = group.astype(np.int64)
        else:
            group = np.zeros(data.n_tasks, dtype=np.int64)
        n_groups = int(group.max()) + 1 if group.size else 1
        return cls(group, n_groups, np.full(data.n_classes, float(class_prior)), judged,
                   empirical and n_groups > 1)

    def posterior(self, proba: np.ndarray) -> np.ndarray:
        """ν per group (G, K): ν₀ (re-fitted first when empirical) plus the group's expected
        class counts under ``proba``."""
        rows = proba.T  # contiguous rows when the caller's posterior is class-major (K, n_tasks)
        if self._starts is not None:
            counts = np.add.reduceat(rows, self._starts, axis=1).T
        else:
            counts = np.stack([np.bincount(
                self._judged_groups, weights=row if self._all_judged else row[self.judged],
                minlength=self.n_groups) for row in rows], axis=1)
        if self.empirical:
            self.nu0 = polya_fixed_point(counts, self.nu0)
        return counts + self.nu0

    def update(self, proba: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ν per group (G, K), E[ln κ_{g(i)}] per task (n_tasks, K)): the VB models' update."""
        nu = self.posterior(proba)
        return nu, e_log_dirichlet(nu)[self.group]

    def kl(self, nu: np.ndarray) -> float:
        return kl_dirichlet(nu, self.nu0)

    @staticmethod
    def mean(nu: np.ndarray) -> np.ndarray:
        """The collection-wide class prior: mean of the groups' posterior means."""
        return (nu / nu.sum(axis=1, keepdims=True)).mean(axis=0)

    def posterior_mean(self, proba: np.ndarray) -> np.ndarray:
        """The point estimate an EM model uses, E[κ_g] per group (G, K):
        E[κ_g] = (c_g + ν₀) / (n_g + Σ ν₀) with c_g the group's expected class counts."""
        nu = self.posterior(proba)
        return nu / nu.sum(axis=1, keepdims=True)

    def per_task_rows(self, values: np.ndarray) -> np.ndarray:
        """Per-group values (G, K) for each task, class-major (K, n_tasks)."""
        return np.take(values.T, self.group, axis=1)
