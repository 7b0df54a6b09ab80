"""Compiled passes of the discrete truth layer (``models.gp.truth``): log Φ over the judgments
at every (class, node) of the layer's Gauss–Hermite rule, and the weights' mixture likelihood
Σ_i log(Φ(η_i) Z_i(+1) + Φ(−η_i) Z_i(−1)) of many weight vectors at once (numba; the rows
shared between the cores).

numpy did these as scipy ``log_ndtr`` passes (two per weight vector, one per (class, node))
each followed by a ``bincount`` or a row sum, on one core: at 20,000 tasks most of the layer's
CPU (the MCMC of the weights' posterior alone is 1,301 evaluations of 8 chains × 5,000 tasks).
Here each row of the output is one compiled loop that releases the GIL, the rows shared between
the cores by a small thread pool: no two threads write the same row, so the sums need no locks,
and each row's sums run in the judgments' order, as ``bincount`` adds them. log Φ is scipy's
``log_ndtr`` algorithm over the C library's erfc (agreeing with scipy's to a few units in the
last place, not bit for bit); the mixture takes one erfc a term instead of two log Φ and a
logaddexp (``_mixture_rows``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np
from numba import njit

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_SQRT1_2 = math.sqrt(0.5)
_LOG_2 = math.log(2.0)
_EPS = np.finfo(np.float64).eps
# Threads that share a pass's rows (the cores this process may use).
THREADS = max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                     else os.cpu_count() or 1))


@njit(cache=True)
def log_ndtr(a: float) -> float:
    """log Φ(a) as scipy's ``log_ndtr`` (scipy ≥ 1.12: log1p(−erfc(a/√2)/2) above −1, log of
    erfc(−a/√2)/2 below it, which is accurate to the last places in both tails), with the
    asymptotic series of Φ(a) (−a) / φ(a) where erfc underflows (a < −37)."""
    t = a * _SQRT1_2
    if a >= -1.0:
        return math.log1p(-0.5 * math.erfc(t))
    if a > -37.0:
        return math.log(0.5 * math.erfc(-t))
    log_lhs = -0.5 * a * a - math.log(-a) - _LOG_SQRT_2PI
    last, rhs, numerator, denom_factor = 0.0, 1.0, 1.0, 1.0
    denom_cons = 1.0 / (a * a)
    sign = 1.0
    i = 0
    while abs(last - rhs) > _EPS:
        i += 1
        last = rhs
        sign = -sign
        denom_factor *= denom_cons
        numerator *= 2 * i - 1
        rhs += sign * numerator * denom_factor
    return log_lhs + math.log(rhs)


@njit(cache=True, nogil=True)
def _node_rows(task: np.ndarray, du: np.ndarray, shift: np.ndarray, separation: float,
               deviation_sd: float, x: np.ndarray, lo: int, hi: int, ell: np.ndarray,
               slope: np.ndarray, with_slope: bool) -> None:
    """Rows lo..hi − 1 of ``node_sums`` (row r: class r // nodes, node r % nodes), in place."""
    nodes = x.shape[0]
    for r in range(lo, hi):
        ci = r // nodes
        k = r % nodes
        t = (1.0 - 2.0 * ci) * separation + deviation_sd * x[k]
        for a in range(task.shape[0]):
            u = du[a] * (t + shift[a])
            log_cdf = log_ndtr(u)
            ell[ci, k, task[a]] += log_cdf
            if with_slope:
                slope[ci, k, task[a]] += math.exp(-0.5 * u * u - _LOG_SQRT_2PI - log_cdf) * du[a]


@njit(cache=True, nogil=True)
def _mixture_rows(eta: np.ndarray, log_z_big: np.ndarray, side: np.ndarray,
                  log_ratio: np.ndarray, ratio: np.ndarray, lo: int, hi: int, out: np.ndarray
                  ) -> None:
    """Rows lo..hi − 1 of ``mixture_log_likelihood``, in place, one erfc a term: with the
    task's likelier class y* (``side``; ``log_z_big`` = log Z(y*)) and e = Z(−y*) / Z(y*) ≤ 1
    (``ratio``, its log ``log_ratio``) the term is log Z(y*) + log(Φ(y* η) + Φ(−y* η) e), and
    with q = Φ(−|η|) = erfc(|η|/√2)/2 the bracket is 1 − q (1 − e) (y* η ≥ 0: log1p, no
    cancellation) or q + (1 − q) e (both terms positive; in log space where they underflow)."""
    for m in range(lo, hi):
        total = 0.0
        for i in range(eta.shape[1]):
            v = side[i] * eta[m, i]
            q = 0.5 * math.erfc(abs(v) * _SQRT1_2)
            e = ratio[i]
            if v >= 0.0:
                total += log_z_big[i] + math.log1p(-q * (1.0 - e))
            else:
                bracket = q + (1.0 - q) * e
                if bracket > 1e-290:
                    total += log_z_big[i] + math.log(bracket)
                else:  # both underflow: log(Φ(v) + Φ(−v) e) in log space
                    a = log_ndtr(v)
                    b = log_ratio[i]
                    big = max(a, b)
                    total += log_z_big[i] + big + math.log(math.exp(a - big)
                                                           + math.exp(b - big))
        out[m] = total


@njit(cache=True, nogil=True)
def _mixture_terms(eta: np.ndarray, log_z_big: np.ndarray, side: np.ndarray,
                   log_ratio: np.ndarray, ratio: np.ndarray, lo: int, hi: int,
                   value: np.ndarray, slope: np.ndarray) -> None:
    """Terms lo..hi − 1 of ``mixture_terms``, in place: as ``_mixture_rows`` for one weight
    vector, log B_i = log(Φ(y* η) + Φ(−y* η) e) and the slope y* (1 − e) φ(η) / B_i."""
    for i in range(lo, hi):
        v = side[i] * eta[i]
        q = 0.5 * math.erfc(abs(v) * _SQRT1_2)
        e = ratio[i]
        if v >= 0.0:
            log_b = math.log1p(-q * (1.0 - e))
        else:
            bracket = q + (1.0 - q) * e
            if bracket > 1e-290:
                log_b = math.log(bracket)
            else:
                a = log_ndtr(v)
                b = log_ratio[i]
                big = max(a, b)
                log_b = big + math.log(math.exp(a - big) + math.exp(b - big))
        value[i] = log_z_big[i] + log_b
        slope[i] = side[i] * (1.0 - e) * math.exp(-0.5 * v * v - _LOG_SQRT_2PI - log_b)


def _split(rows: int, run: Callable[[int, int], None]) -> None:
    """``run(lo, hi)`` over contiguous shares of ``rows``, one per core (the kernels release
    the GIL: Python threads, no busy-waiting thread pool beside TensorFlow's)."""
    parts = min(THREADS, rows)
    bounds = np.linspace(0, rows, parts + 1).astype(np.int64)
    if parts <= 1:
        run(0, rows)
        return
    pool = _pool(os.getpid())
    futures = [pool.submit(run, int(lo), int(hi))
               for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
    for future in futures:
        future.result()


@lru_cache(maxsize=1)
def _pool(pid: int) -> ThreadPoolExecutor:  # noqa: ARG001 - the key: a forked child's own pool
    """The process's pool (a child forked after a fit gets a new one: the parent's threads do
    not exist in it)."""
    return ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="truth-layer")


def node_sums(task: np.ndarray, du: np.ndarray, shift: np.ndarray, separation: float,
              deviation_sd: float, x: np.ndarray, n_tasks: int, with_slope: bool = False
              ) -> tuple[np.ndarray, np.ndarray]:
    """(ell, slope), each (2, nodes, n): per task, Σ_a log Φ(u_a) and Σ_a ∂ log Φ(u_a) / ∂t
    = Σ_a φ(u_a)/Φ(u_a) du_a at u_a = du_a (t + shift_a), t = y c + s x_k, y = +1, −1 (rows 0,
    1), x_k the nodes. ``with_slope`` False: slope is not computed (zeros, one column)."""
    nodes = x.shape[0]
    ell = np.zeros((2, nodes, n_tasks))
    slope = np.zeros((2, nodes, n_tasks if with_slope else 1))
    task = np.ascontiguousarray(task, dtype=np.int64)
    du = np.ascontiguousarray(du, dtype=np.float64)
    shift = np.ascontiguousarray(shift, dtype=np.float64)
    x = np.ascontiguousarray(x, dtype=np.float64)
    _split(2 * nodes, lambda lo, hi: _node_rows(task, du, shift, float(separation),
                                                float(deviation_sd), x, lo, hi, ell, slope,
                                                with_slope))
    return ell, slope


def mixture_log_likelihood(eta: np.ndarray, log_z_pos: np.ndarray, log_z_neg: np.ndarray
                           ) -> np.ndarray:
    """(M,) Σ_i log(Φ(η_mi) Z_i(+1) + Φ(−η_mi) Z_i(−1)) of each row m of ``eta`` (M, n), in log
    space (Z_i(y) of a task with many judgments under- or overflows)."""
    eta = np.ascontiguousarray(eta, dtype=np.float64)
    log_z_big, side, log_ratio, ratio = _likelier_class(log_z_pos, log_z_neg)
    out = np.zeros(eta.shape[0])
    _split(eta.shape[0], lambda lo, hi: _mixture_rows(eta, log_z_big, side, log_ratio, ratio,
                                                      lo, hi, out))
    return out


def _likelier_class(log_z_pos: np.ndarray, log_z_neg: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per task: log Z(y*) of the likelier class y*, y* (±1), log e and e = Z(−y*) / Z(y*) ≤ 1
    (no overflow)."""
    log_z_pos = np.asarray(log_z_pos, dtype=np.float64)
    log_z_neg = np.asarray(log_z_neg, dtype=np.float64)
    log_z_big = np.maximum(log_z_pos, log_z_neg)
    log_ratio = np.minimum(log_z_pos, log_z_neg) - log_z_big
    return (log_z_big, np.where(log_z_pos >= log_z_neg, 1.0, -1.0), log_ratio,
            np.exp(log_ratio))


def mixture_terms(eta: np.ndarray, log_z_pos: np.ndarray, log_z_neg: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(n,) log(Φ(η_i) Z_i(+1) + Φ(−η_i) Z_i(−1)) and its derivative in η_i,
    φ(η_i) (Z_i(+1) − Z_i(−1)) / (Φ(η_i) Z_i(+1) + Φ(−η_i) Z_i(−1)), of one weight vector's
    η (n,): the terms of ``truth._regression_objective`` and of its gradient."""
    eta = np.ascontiguousarray(eta, dtype=np.float64)
    log_z_big, side, log_ratio, ratio = _likelier_class(log_z_pos, log_z_neg)
    value, slope = np.empty(eta.shape[0]), np.empty(eta.shape[0])
    _split(eta.shape[0], lambda lo, hi: _mixture_terms(eta, log_z_big, side, log_ratio, ratio,
                                                       lo, hi, value, slope))
    return value, slope
