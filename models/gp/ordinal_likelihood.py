"""The ordered-probit likelihood of ``ordinal-gp`` and its EM core (TensorFlow / GPflow).

Split from ``models.gp.ordinal`` so that importing the aggregator (to validate a method's
parameters in the API process, or to list the methods on a dashboard page) does not load
TensorFlow; ``OrdinalGP.fit`` imports this module. The model and its derivation:
``models.gp.ordinal`` and docs/gp.md.
"""

from __future__ import annotations

from typing import Any

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import check_shapes, inherit_check_shapes
from gpflow.base import TensorType

from models.gp.likelihood import GaussianBernoulli, log_ndtr, ndtr, quadrature_sum
from models.gp.training import CrowdGPCore, _compiled

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)
# Stand-in for the infinite outer thresholds b_{−1}, b_{K−1}: Φ and φ are exactly 0 / 1 there.
_BIG = 1e6


def log_diff_ndtr(upper: tf.Tensor, lower: tf.Tensor) -> tf.Tensor:
    """log(Φ(upper) − Φ(lower)) for upper > lower, in log space on the side of 0 where neither
    term is close to 1 (the upper tail by symmetry): a grade far from f keeps its precision."""
    flip = lower > 0.0
    a = tf.where(flip, -lower, upper)
    b = tf.where(flip, -upper, lower)
    la, lb = log_ndtr(a), log_ndtr(b)
    return la + tf.math.log1p(-tf.exp(tf.minimum(lb - la, -1e-12)))


@check_shapes(
    "f: [n]",
    "upper: [n]",
    "lower: [n]",
    "offset: [n]",
    "scale: [n]",
    "return: [n]",
)
def ordinal_log_prob(f: tf.Tensor, upper: tf.Tensor, lower: tf.Tensor, offset: tf.Tensor,
                     scale: tf.Tensor) -> tf.Tensor:
    """log P(y_a | f) = log(Φ((b_y − f − μ) / c) − Φ((b_{y−1} − f − μ) / c))."""
    return log_diff_ndtr((upper - f - offset) / scale, (lower - f - offset) / scale)


@check_shapes(
    "fmu: [n]",
    "fvar: [n]",
    "upper: [n]",
    "lower: [n]",
    "offset: [n]",
    "scale: [n]",
    "keep: [n]",
    "spam: [n]",
    "return[0]: [n]",
    "return[1]: [n]",
    "return[2]: [n]",
    "return[3]: [n]",
)
def ordinal_expectations(
    fmu: tf.Tensor,
    fvar: tf.Tensor,
    upper: tf.Tensor,
    lower: tf.Tensor,
    offset: tf.Tensor,
    scale: tf.Tensor,
    keep: tf.Tensor,
    spam: tf.Tensor,
    nodes: np.ndarray,
    weights: np.ndarray,
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
    """Per judgment: E[log p], ∂E/∂m, the E step's ∂E/∂v and the spam responsibility
    E[1 − ρ], under q(f) = N(fmu, fvar), by Gauss–Hermite.

    p = (1 − ε) P + ε ξ_y with ``keep`` = 1 − ε and ``spam`` = ε ξ_y (the annotator's spamming,
    see ``OrderedProbit``)
    and P = Φ(u) − Φ(w), u = (b_y − f − μ)/c, w = (b_{y−1} − f − μ)/c. With r_u = φ(u)/P,
    r_w = φ(w)/P and ρ = (1 − ε) P / p:  ∂ log P/∂f = −(r_u − r_w)/c,
    ∂² log P/∂f² = (w r_w − u r_u)/c² − (∂ log P/∂f)² (≤ 0: log-concave), ∂/∂c = −(u r_u − w r_w)/c,
    ∂/∂b_y = r_u/c, ∂/∂b_{y−1} = −r_w/c, and every ∂ log p = ρ ∂ log P. The mixture's curvature
    ρ ∂² log P + ρ(1 − ρ)(∂ log P)² can be positive; the E step uses ρ ∂² log P (≤ 0, so every
    site precision stays positive — the Gauss–Newton choice), E[log p]'s gradient the exact one.
    Without spam (ε = 0) ρ = 1 and both are the ordered probit's.
    """
    fmu_s, fvar_s, upper_s, lower_s, offset_s, scale_s = (
        tf.stop_gradient(t) for t in (fmu, fvar, upper, lower, offset, scale))
    sd = tf.sqrt(fvar_s)
    inv_c = 1.0 / scale_s
    log_keep = tf.math.log(tf.stop_gradient(keep))
    log_spam = tf.math.log(tf.stop_gradient(spam))  # −inf without spam
    # One node at a time (a graph loop): (n,) temporaries only, as in the binary likelihood.

    def add_node(node: tf.Tensor, weight: tf.Tensor, sums: tuple[tf.Tensor, ...]
                 ) -> tuple[tf.Tensor, ...]:
        value, d_f, d_ff, d_ff_exact, d_c, d_up, d_lo, resp = sums
        shift = fmu_s + offset_s + sd * node
        u = (upper_s - shift) * inv_c
        w = (lower_s - shift) * inv_c
        log_big = log_diff_ndtr(u, w)
        ru = tf.exp(-0.5 * tf.square(u) - _LOG_SQRT_2PI - log_big)
        rw = tf.exp(-0.5 * tf.square(w) - _LOG_SQRT_2PI - log_big)
        log_ord = log_big + log_keep
        top = tf.maximum(log_ord, log_spam)
        logp = top + tf.math.log(tf.exp(log_ord - top) + tf.exp(log_spam - top))
        rho = tf.exp(log_ord - logp)
        df = -(ru - rw) * inv_c
        dff = (w * rw - u * ru) * tf.square(inv_c) - tf.square(df)
        return (value + weight * logp,
                d_f + weight * rho * df,
                d_ff + weight * rho * dff,
                d_ff_exact + weight * (rho * dff + rho * (1.0 - rho) * tf.square(df)),
                d_c + weight * rho * (-(u * ru - w * rw) * inv_c),
                d_up + weight * rho * ru * inv_c,
                d_lo + weight * rho * (-rw * inv_c),
                resp + weight * (1.0 - rho))

    value, d_f, d_ff, d_ff_exact, d_c, d_up, d_lo, resp = quadrature_sum(
        add_node, nodes, weights, fmu_s, 8)

    @tf.custom_gradient
    def inner(m: tf.Tensor, v: tf.Tensor, hi: tf.Tensor, lo: tf.Tensor, o: tf.Tensor,
              c: tf.Tensor) -> Any:
        def grad(upstream: tf.Tensor) -> tuple[tf.Tensor, ...]:
            # μ shifts f: ∂/∂offset = ∂/∂m.
            return (upstream * d_f, upstream * 0.5 * d_ff_exact, upstream * d_up,
                    upstream * d_lo, upstream * d_f, upstream * d_c)
        return tf.identity(value), grad

    return inner(fmu, fvar, upper, lower, offset, scale), d_f, 0.5 * d_ff, resp


class OrderedProbit(GaussianBernoulli):
    """GPflow likelihood for long-format graded judgments: ``Y`` = (grade index, task, annotator).

    The noise parameters (σ_i², σ_j², μ_i, μ_j and their priors) are the Gaussian–Bernoulli's;
    added are the K − 1 ordered thresholds: ``threshold_first`` = b_0 and ``threshold_gaps``
    b_k − b_{k−1} > 0, both without a prior (the unit probit fixes the scale, f's prior the
    location).
    """

    def __init__(self, n_tasks: int, n_annotators: int, n_grades: int, *,
                 thresholds: np.ndarray | None = None, spam_prior: float = 0.0,
                 spam_strength: float = 10.0, **kwargs: Any) -> None:
        super().__init__(n_tasks, n_annotators, **kwargs)
        if not 0.0 <= spam_prior < 1.0 or spam_strength <= 0:
            raise ValueError("spam_prior must be in [0, 1) and spam_strength > 0")
        if n_grades < 2:
            raise ValueError("an ordinal likelihood needs at least two grades")
        dtype = gpflow.default_float()
        if thresholds is None:
            thresholds = np.arange(n_grades - 1, dtype=dtype) - (n_grades - 2) / 2.0
        thresholds = np.asarray(thresholds, dtype=dtype)
        if thresholds.shape != (n_grades - 1,) or np.any(np.diff(thresholds) <= 0):
            raise ValueError("thresholds must be K − 1 increasing numbers")
        self.n_grades = n_grades
        self.threshold_first = gpflow.Parameter(thresholds[0], name="threshold_first")
        gaps = np.diff(thresholds) if n_grades > 2 else np.ones(1, dtype=dtype)
        self.threshold_gaps = gpflow.Parameter(
            gaps, transform=gpflow.utilities.positive(lower=1e-4), name="threshold_gaps",
            trainable=n_grades > 2)
        # The spam part (fitted in closed form, not by gradients): ε_j and ξ_j.
        self.spam_prior = spam_prior
        self.spam_strength = spam_strength
        self.spam = tf.Variable(np.full(n_annotators, spam_prior, dtype=dtype), trainable=False,
                                name="spam")
        self.strategy = tf.Variable(np.full((n_annotators, n_grades), 1.0 / n_grades,
                                            dtype=dtype), trainable=False, name="strategy")

    def thresholds(self) -> tf.Tensor:
        """b_0 < … < b_{K−2}."""
        first = tf.reshape(tf.convert_to_tensor(self.threshold_first), [1])
        if self.n_grades == 2:
            return first
        gaps = tf.convert_to_tensor(self.threshold_gaps)
        return tf.concat([first, first + tf.cumsum(gaps)], axis=0)

    def padded_thresholds(self) -> tf.Tensor:
        """[−BIG, b_0, …, b_{K−2}, +BIG]: grade y's interval is entries y and y + 1."""
        big = tf.constant([_BIG], dtype=gpflow.default_float())
        return tf.concat([-big, self.thresholds(), big], axis=0)

    @check_shapes("grade: [n]", "return[0]: [n]", "return[1]: [n]")
    def interval(self, grade: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """(b_y, b_{y−1}) of each judgment, gathered from the padded thresholds."""
        padded = self.padded_thresholds()
        return tf.gather(padded, grade + 1), tf.gather(padded, grade)

    @check_shapes("Y: [n, 3]", "return[0]: [n]", "return[1]: [n]", "return[2]: [n]")
    def split(self, Y: TensorType) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """(grade index, task index, annotator index) of each judgment row."""
        Y = tf.convert_to_tensor(Y)
        return (tf.cast(Y[:, 0], tf.int32), tf.cast(Y[:, 1], tf.int32),
                tf.cast(Y[:, 2], tf.int32))

    def mixture(self, grade: tf.Tensor, annotator: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """Per judgment (1 − ε_j, ε_j ξ_j[y])."""
        eps = tf.gather(self.spam, annotator)
        flat = tf.reshape(self.strategy, [-1])
        xi = tf.gather(flat, annotator * self.n_grades + grade)
        return 1.0 - eps, eps * xi

    def terms(self, fmu: tf.Tensor, fvar: tf.Tensor, grade: tf.Tensor, task: tf.Tensor,
              annotator: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
        offset, scale = self.noise(task, annotator)
        upper, lower = self.interval(grade)
        keep, spam = self.mixture(grade, annotator)
        return ordinal_expectations(fmu, fvar, upper, lower, offset, scale, keep, spam,
                                    self.nodes, self.weights)

    def expectations(self, fmu: tf.Tensor, fvar: tf.Tensor, grade: tf.Tensor, task: tf.Tensor,
                     annotator: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """E[log p], ∂E/∂m and the E step's ∂E/∂v per judgment."""
        ve, dm, dv, _ = self.terms(fmu, fvar, grade, task, annotator)
        return ve, dm, dv

    def update_spam(self, responsibility: np.ndarray, grade: np.ndarray,
                    annotator: np.ndarray) -> None:
        """Closed-form M step of the spam part (generalised EM, as MACE): ε_j the MAP under
        Beta(s π + 1, s (1 − π) + 1) of the share of j's judgments the spam part explains,
        ξ_j ∝ the grades of those judgments + 1."""
        if self.spam_prior <= 0:
            return
        n_ann, k = self.spam.shape[0], self.n_grades
        a = self.spam_strength * self.spam_prior
        b = self.spam_strength * (1.0 - self.spam_prior)
        spam_total = np.bincount(annotator, weights=responsibility, minlength=n_ann)
        total = np.bincount(annotator, minlength=n_ann)
        self.spam.assign((spam_total + a) / (total + a + b))
        counts = np.bincount(annotator * k + grade, weights=responsibility,
                             minlength=n_ann * k).reshape(n_ann, k) + 1.0
        self.strategy.assign(counts / counts.sum(axis=1, keepdims=True))

    @check_shapes("F: [n, 1]", "Y: [n, 3]", "return: [n, 1]")
    def probability(self, F: TensorType, Y: TensorType) -> tf.Tensor:
        """P(y = the row's grade | f) for each judgment row."""
        return tf.exp(self._log_prob(None, F, Y))[:, None]

    @inherit_check_shapes
    def _log_prob(self, X: TensorType, F: TensorType, Y: TensorType) -> tf.Tensor:
        grade, task, annotator = self.split(Y)
        offset, scale = self.noise(task, annotator)
        upper, lower = self.interval(grade)
        keep, spam = self.mixture(grade, annotator)
        ordinal = ordinal_log_prob(F[:, 0], upper, lower, offset, scale) + tf.math.log(keep)
        return tf.experimental.numpy.logaddexp(ordinal, tf.math.log(spam))

    @inherit_check_shapes
    def _variational_expectations(
        self, X: TensorType, Fmu: TensorType, Fvar: TensorType, Y: TensorType
    ) -> tf.Tensor:
        grade, task, annotator = self.split(Y)
        ve, _, _ = self.expectations(Fmu[:, 0], Fvar[:, 0], grade, task, annotator)
        return ve

    @inherit_check_shapes
    def _predict_log_density(
        self, X: TensorType, Fmu: TensorType, Fvar: TensorType, Y: TensorType
    ) -> tf.Tensor:
        # ∫ Φ((b − f − μ)/c) N(f | m, v) df = Φ((b − m − μ)/sqrt(c² + v)), for both ends.
        grade, task, annotator = self.split(Y)
        offset, scale = self.noise(task, annotator)
        upper, lower = self.interval(grade)
        total = tf.sqrt(tf.square(scale) + Fvar[:, 0])
        keep, spam = self.mixture(grade, annotator)
        ordinal = log_diff_ndtr((upper - Fmu[:, 0] - offset) / total,
                                (lower - Fmu[:, 0] - offset) / total) + tf.math.log(keep)
        return tf.experimental.numpy.logaddexp(ordinal, tf.math.log(spam))

    def grade_proba(self, mean: tf.Tensor, var: tf.Tensor) -> tf.Tensor:
        """(n, K) P(T = k) = Φ((b_k − m)/sqrt(1 + v)) − Φ((b_{k−1} − m)/sqrt(1 + v))."""
        cdf = ndtr((self.padded_thresholds()[None, :] - mean[:, None])
                   / tf.sqrt(1.0 + var)[:, None])
        return cdf[:, 1:] - cdf[:, :-1]

    @inherit_check_shapes
    def _predict_mean_and_var(
        self, X: TensorType, Fmu: TensorType, Fvar: TensorType
    ) -> tuple[tf.Tensor, tf.Tensor]:
        # The grade index of a noise-free judge: its mean and variance under q(f).
        p = self.grade_proba(Fmu[:, 0], Fvar[:, 0])
        k = tf.range(self.n_grades, dtype=p.dtype)
        mean = tf.reduce_sum(p * k, axis=1)
        var = tf.reduce_sum(p * tf.square(k), axis=1) - tf.square(mean)
        return mean[:, None], var[:, None]

    @inherit_check_shapes
    def _conditional_mean(self, X: TensorType, F: TensorType) -> tf.Tensor:
        return self._predict_mean_and_var(X, F, tf.zeros_like(F))[0]

    @inherit_check_shapes
    def _conditional_variance(self, X: TensorType, F: TensorType) -> tf.Tensor:
        return self._predict_mean_and_var(X, F, tf.zeros_like(F))[1]


class OrdinalCrowdGPCore(CrowdGPCore):
    """``CrowdGPCore`` whose judgments carry a grade (``label`` = grade index) and whose judgment
    terms are the ordered probit's; the GP algebra, E and M steps are inherited unchanged."""

    likelihood: OrderedProbit

    def __init__(self, *, label: np.ndarray, likelihood: OrderedProbit, **kwargs: Any) -> None:
        super().__init__(label=label, likelihood=likelihood, **kwargs)
        self.grade = tf.constant(np.asarray(label), dtype=tf.int32)
        self._responsibility = _compiled(self._responsibility_impl)

    def _responsibility_impl(self, m_f: tf.Tensor, v_f: tf.Tensor) -> tf.Tensor:
        """Per judgment, the share of its probability the spam part explains (compiled: run
        eagerly, the quadrature loop dispatched its ops one by one, 60 ms a call at 400 tasks)."""
        return self.likelihood.terms(tf.gather(m_f, self.task), tf.gather(v_f, self.task),
                                     self.grade, self.task, self.annotator)[3]

    def judgment_terms(self, m_f: tf.Tensor, v_f: tf.Tensor
                       ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        return self._judgment_terms(m_f, v_f, self.task, self.task, self.annotator, self.grade)

    def _judgment_terms(self, m_f: tf.Tensor, v_f: tf.Tensor, row: tf.Tensor, task: tf.Tensor,
                        annotator: tf.Tensor, grade: tf.Tensor
                        ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """Per judgment: ``row`` indexes m_f/v_f, ``task`` the task noise, ``grade`` the label."""
        return self.likelihood.expectations(tf.gather(m_f, row), tf.gather(v_f, row), grade,
                                            task, annotator)

    def m_step(self, settings: Any, rng: np.random.Generator | None = None) -> None:
        """The spam part in closed form from the current q(f), then the inherited M step."""
        if self.likelihood.spam_prior > 0:
            m_f, v_f = self.q()
            resp = self._responsibility(m_f, v_f)
            self.likelihood.update_spam(resp.numpy(), self.grade.numpy(),
                                        self.annotator.numpy())
        super().m_step(settings, rng)

    def _draw_subset(self, rng: np.random.Generator, size: int) -> tuple[tf.Tensor, ...]:
        out = list(super()._draw_subset(rng, size))
        keep = np.isin(self.task.numpy(), out[0].numpy())
        out[4] = tf.constant(self.grade.numpy()[keep], dtype=tf.int32)  # grades, not signs
        return tuple(out)
