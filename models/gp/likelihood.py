"""The Gaussian–Bernoulli likelihood of the multi-annotator GP (thesis eqs. 4.15–4.16).

A judgment a = (i, j, y) sees the task's latent f_i through task noise N(μ_i, σ_i²) and annotator
noise N(μ_j, σ_j²) and a probit; integrating both noises out (eq. 4.16d → 4.16e and the probit–
Gaussian identity) gives the closed form

    P(y = 1 | f_i) = Φ((f_i + μ_i + μ_j) / sqrt(1 + σ_i² + σ_j²)).

Everything is in long format: a judgment carries its task and annotator index and gathers the
parameters it needs, so the cost is O(#judgments × #quadrature points) and no tasks × annotators
matrix is ever built. E_q(f_i)[log P(y | f_i)] under q(f_i) = N(m, v) is a 1-D Gauss–Hermite rule.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gpflow
import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp
from check_shapes import check_shapes, inherit_check_shapes
from gpflow.base import TensorType

from models.gp.constants import DEFAULT_QUADRATURE_POINTS

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


# Below this z, log Φ(z) comes from the asymptotic series rather than erfc: erfc itself is exact
# to z ≈ −37 in float64, but in float32 Φ(z) leaves the normal range near z = −13 and erfc's
# relative error grows before that; at −8 the series' first omitted term (945 z⁻¹⁰) is 9·10⁻⁷,
# below float32's resolution of log Φ(−8) ≈ −36, and at −20 (float64) it is 9·10⁻¹⁰.
_TAIL_FROM = {tf.float32: -8.0, tf.float64: -20.0}


def log_ndtr_and_mills(z: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """log Φ(z), the inverse Mills ratio r = φ(z)/Φ(z) and z + r, finite in both tails, in z's
    dtype (log space: Φ underflows for z << 0, the ratio does not).

    Above the tail threshold Φ comes from erfc; below it from Φ(z) = φ(z)/(−z) (1 + p(z⁻²)),
    p = −z⁻² + 3z⁻⁴ − 15z⁻⁶ + 105z⁻⁸, where r = −z / (1 + p) and z + r = z p / (1 + p) are
    exact forms without the cancellation of z + r (r ≈ −z there). One erfc, one log and one exp
    per element: the quadrature's inner loop, run #judgments × #nodes times per pass.
    """
    tail_from = _TAIL_FROM[z.dtype]
    direct = z > tail_from
    log_pdf = -0.5 * tf.square(z) - _LOG_SQRT_2PI
    tail_z = tf.minimum(z, tail_from)
    inv2 = 1.0 / tf.square(tail_z)
    p = inv2 * (-1.0 + inv2 * (3.0 + inv2 * (-15.0 + 105.0 * inv2)))
    # y = Φ(z) above the threshold, Φ(z) / φ(z) below: log Φ = log y + (log φ where in the tail).
    y = tf.where(direct, 0.5 * tf.math.erfc(-tf.maximum(z, tail_from) * np.sqrt(0.5)),
                 (1.0 + p) / -tail_z)
    log_y = tf.math.log(y)
    pdf_part = tf.where(direct, log_pdf, tf.zeros_like(z))
    r = tf.exp(pdf_part - log_y)
    return (log_y + (log_pdf - pdf_part), r,
            tf.where(direct, z + r, tail_z * p / (1.0 + p)))


def log_ndtr(z: tf.Tensor) -> tf.Tensor:
    """log Φ(z) in log space (a product of probits is a sum of these; Φ underflows for z << 0).

    Equal to ``tfp.distributions.Normal(0, 1).log_cdf`` (tested) and cheaper; see
    ``log_ndtr_and_mills`` for the two branches.
    """
    return log_ndtr_and_mills(z)[0]


def ndtr(z: tf.Tensor) -> tf.Tensor:
    """Φ(z)."""
    return 0.5 * tf.math.erfc(-z / np.sqrt(2.0))


def inverse_mills(z: tf.Tensor) -> tf.Tensor:
    """φ(z) / Φ(z) computed in log space (Φ underflows for z << 0, the ratio does not)."""
    return log_ndtr_and_mills(z)[1]


def gauss_hermite(n_points: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights for E_{N(0,1)}[h(z)] ≈ Σ_k w_k h(z_k) (probabilists' rule, Σ w = 1)."""
    x, w = np.polynomial.hermite_e.hermegauss(n_points)
    return x, w / np.sqrt(2.0 * np.pi)


def quadrature_sum(add_node: Callable[[tf.Tensor, tf.Tensor, tuple[tf.Tensor, ...]],
                                      tuple[tf.Tensor, ...]],
                   nodes: np.ndarray, weights: np.ndarray, like: tf.Tensor, n_sums: int
                   ) -> tuple[tf.Tensor, ...]:
    """``n_sums`` running sums over the quadrature nodes, each shaped like ``like``, node by
    node in order: ``add_node(node, weight, sums)`` returns the sums with one node added.

    A ``tf.while_loop`` with one iteration at a time, so a traced function holds one node's
    operations (a Python loop put Q copies in the graph) and a fit's memory stays one node's
    (n,) temporaries; the sums are added in the nodes' order, as the Python loop did."""
    nodes_t = tf.constant(nodes, dtype=like.dtype)
    weights_t = tf.constant(weights, dtype=like.dtype)
    zero = tf.zeros_like(like)

    def body(k: tf.Tensor, *sums: tf.Tensor) -> tuple[tf.Tensor, ...]:
        return (k + 1, *add_node(nodes_t[k], weights_t[k], sums))

    out = tf.while_loop(lambda k, *_: k < len(nodes), body,
                        (tf.constant(0), *([zero] * n_sums)), parallel_iterations=1)
    return tuple(out[1:])


@check_shapes(
    "f: [n]",
    "sign: [n]",
    "offset: [n]",
    "scale: [n]",
    "return: [n]",
)
def judgment_log_prob(f: tf.Tensor, sign: tf.Tensor, offset: tf.Tensor, scale: tf.Tensor
                      ) -> tf.Tensor:
    """log P(y_a | f) = log Φ(s_a (f + μ_i + μ_j) / sqrt(1 + σ_i² + σ_j²)), s_a = ±1."""
    return log_ndtr(sign * (f + offset) / scale)


@check_shapes(
    "fmu: [n]",
    "fvar: [n]",
    "sign: [n]",
    "offset: [n]",
    "scale: [n]",
    "return[0]: [n]",
    "return[1]: [n]",
    "return[2]: [n]",
)
def judgment_expectations(
    fmu: tf.Tensor,
    fvar: tf.Tensor,
    sign: tf.Tensor,
    offset: tf.Tensor,
    scale: tf.Tensor,
    nodes: np.ndarray,
    weights: np.ndarray,
    compute_dtype: tf.DType | None = None,
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Per judgment: E[log p], ∂E/∂m and ∂E/∂v under q(f) = N(fmu, fvar), by Gauss–Hermite.

    The derivatives are the natural-gradient (CVI) statistics of the E step:
    ∂E/∂m = E[∂ log p / ∂f] and ∂E/∂v = ½ E[∂² log p / ∂f²] (Opper & Archambeau 2009).
    E[log p] carries an analytic gradient (w.r.t. fmu, fvar, offset, scale), so the M step does
    not differentiate through log Φ.

    ``compute_dtype`` (default: the inputs') is the precision of the pass over nodes; the results
    come back in the inputs' dtype. float32 (``QUADRATURE_DTYPE``, what the EM engine uses) runs
    the pass 2.5× faster (docs/gp.md, "Speed and memory") and its rounding (≈ 10⁻⁶ relative per
    judgment, 7·10⁻⁵ absolute on ∂E/∂v) is below the 12-point rule's own error (≈ 3·10⁻⁴).
    """
    stats = _expectation_stats(fmu, fvar, sign, offset, scale, nodes, weights, compute_dtype)
    return _expected_log_prob(fmu, fvar, offset, scale, stats), stats[1], stats[2]


def _expectation_stats(fmu: tf.Tensor, fvar: tf.Tensor, sign: tf.Tensor, offset: tf.Tensor,
                       scale: tf.Tensor, nodes: np.ndarray, weights: np.ndarray,
                       compute_dtype: tf.DType | None = None,
                       ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
    out_dtype = fmu.dtype
    dtype = out_dtype if compute_dtype is None else compute_dtype
    fmu, fvar, sign, offset, scale = (tf.cast(tf.stop_gradient(t), dtype)
                                      for t in (fmu, fvar, sign, offset, scale))
    # One quadrature node at a time: (n,) temporaries instead of ten (Q, n) ones, which at a
    # million judgments were the largest tensors of a fit. A graph loop, not a Python one: the
    # traced graph holds one node's operations, not Q copies (tracing was most of a small fit).
    sd = tf.sqrt(fvar)
    shifted = fmu + offset
    inv_scale = 1.0 / scale

    def add_node(node: tf.Tensor, weight: tf.Tensor, sums: tuple[tf.Tensor, ...]
                 ) -> tuple[tf.Tensor, ...]:
        value, dm, dv, dscale = sums
        z = sign * (shifted + sd * node) * inv_scale
        logp, r, z_plus_r = log_ndtr_and_mills(z)  # r: the inverse Mills ratio φ/Φ
        return (value + weight * logp,
                dm + weight * r,  # × sign / scale below: ∂ log Φ(z) / ∂f
                dv + weight * r * z_plus_r,  # × −1 / scale²: ∂² log Φ(z) / ∂f² (< 0)
                dscale + weight * r * z)  # × −1 / scale: ∂ log Φ(z) / ∂scale

    value, dm, dv, dscale = quadrature_sum(add_node, nodes, weights, fmu, 4)
    return tuple(tf.cast(t, out_dtype) for t in (
        value,
        sign * dm * inv_scale,
        -0.5 * dv * tf.square(inv_scale),
        -dscale * inv_scale,
    ))


def _expected_log_prob(fmu: tf.Tensor, fvar: tf.Tensor, offset: tf.Tensor, scale: tf.Tensor,
                       stats: tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]) -> tf.Tensor:
    value, dm, dv, dscale = stats

    @tf.custom_gradient
    def inner(m: tf.Tensor, v: tf.Tensor, o: tf.Tensor, c: tf.Tensor) -> Any:
        def grad(upstream: tf.Tensor) -> tuple[tf.Tensor, ...]:
            # ∂/∂offset = ∂/∂m: the offset shifts f.
            return upstream * dm, upstream * dv, upstream * dm, upstream * dscale
        return tf.identity(value), grad

    return inner(fmu, fvar, offset, scale)


@check_shapes(
    "task: [n]",
    "annotator: [n]",
    "task_variance: [n_tasks]",
    "annotator_variance: [n_annotators]",
    "task_bias: [n_tasks]",
    "annotator_bias: [n_annotators]",
    "return[0]: [n]",
    "return[1]: [n]",
)
def gather_noise(
    task: tf.Tensor,
    annotator: tf.Tensor,
    task_variance: tf.Tensor,
    annotator_variance: tf.Tensor,
    task_bias: tf.Tensor,
    annotator_bias: tf.Tensor,
) -> tuple[tf.Tensor, tf.Tensor]:
    """Each judgment's offset μ_i + μ_j and probit scale sqrt(1 + σ_i² + σ_j²), by gathering."""
    offset = tf.gather(task_bias, task) + tf.gather(annotator_bias, annotator)
    scale = tf.sqrt(1.0 + tf.gather(task_variance, task) + tf.gather(annotator_variance, annotator))
    return offset, scale


class GaussianBernoulli(gpflow.likelihoods.Likelihood):
    """GPflow likelihood for long-format crowd judgments (thesis' ``GaussianBernoulliMix``).

    ``Y`` has three columns: the label (0/1), the task index and the annotator index, so one row
    is one judgment and ``F`` is the latent of that judgment's task. Task and annotator noise
    variances σ² carry Gamma(1, 1) priors (thesis §4.4.6); biases μ_j (μ_i) are fixed at 0 unless
    ``learn_annotator_bias`` (``learn_task_bias``), then with Normal(0, 1) priors.
    """

    def __init__(
        self,
        n_tasks: int,
        n_annotators: int,
        *,
        task_variance: float | np.ndarray = 1.0,
        annotator_variance: float | np.ndarray = 1.0,
        learn_task_variance: bool = True,
        learn_annotator_bias: bool = False,
        learn_task_bias: bool = False,
        n_quadrature: int = DEFAULT_QUADRATURE_POINTS,
        **kwargs: Any,
    ) -> None:
        super().__init__(input_dim=None, latent_dim=1, observation_dim=3, **kwargs)
        dtype = gpflow.default_float()
        gamma = _gamma_prior()
        normal = _normal_prior()
        positive = gpflow.utilities.positive(lower=1e-6)
        self.task_variance = gpflow.Parameter(
            np.broadcast_to(np.asarray(task_variance, dtype=dtype), (n_tasks,)).copy(),
            transform=positive, prior=gamma, trainable=learn_task_variance, name="task_variance",
        )
        self.annotator_variance = gpflow.Parameter(
            np.broadcast_to(np.asarray(annotator_variance, dtype=dtype), (n_annotators,)).copy(),
            transform=positive, prior=gamma, name="annotator_variance",
        )
        self.task_bias = gpflow.Parameter(
            np.zeros(n_tasks, dtype=dtype), prior=normal, trainable=learn_task_bias,
            name="task_bias"
        )
        self.annotator_bias = gpflow.Parameter(
            np.zeros(n_annotators, dtype=dtype), prior=normal, trainable=learn_annotator_bias,
            name="annotator_bias",
        )
        self.nodes, self.weights = gauss_hermite(n_quadrature)

    # -- long-format helpers (used by the EM engine) ----------------------------------------
    @check_shapes("Y: [n, 3]", "return[0]: [n]", "return[1]: [n]", "return[2]: [n]")
    def split(self, Y: TensorType) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """(sign ±1, task index, annotator index) of each judgment row."""
        Y = tf.convert_to_tensor(Y)
        sign = 2.0 * tf.cast(Y[:, 0], gpflow.default_float()) - 1.0
        return sign, tf.cast(Y[:, 1], tf.int32), tf.cast(Y[:, 2], tf.int32)

    @check_shapes("task: [n]", "annotator: [n]", "return[0]: [n]", "return[1]: [n]")
    def noise(self, task: tf.Tensor, annotator: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return gather_noise(
            task, annotator,
            tf.convert_to_tensor(self.task_variance),
            tf.convert_to_tensor(self.annotator_variance),
            tf.convert_to_tensor(self.task_bias),
            tf.convert_to_tensor(self.annotator_bias),
        )

    @check_shapes("F: [n, 1]", "Y: [n, 3]", "return: [n, 1]")
    def probability(self, F: TensorType, Y: TensorType) -> tf.Tensor:
        """P(y = 1 | f) for each judgment row (the label column of Y is ignored)."""
        _, task, annotator = self.split(Y)
        offset, scale = self.noise(task, annotator)
        return ndtr((F[:, 0] + offset) / scale)[:, None]

    # -- the GPflow Likelihood interface ---------------------------------------------------
    @inherit_check_shapes
    def _log_prob(self, X: TensorType, F: TensorType, Y: TensorType) -> tf.Tensor:
        sign, task, annotator = self.split(Y)
        offset, scale = self.noise(task, annotator)
        return judgment_log_prob(F[:, 0], sign, offset, scale)

    @inherit_check_shapes
    def _variational_expectations(
        self, X: TensorType, Fmu: TensorType, Fvar: TensorType, Y: TensorType
    ) -> tf.Tensor:
        sign, task, annotator = self.split(Y)
        offset, scale = self.noise(task, annotator)
        ve, _, _ = judgment_expectations(
            Fmu[:, 0], Fvar[:, 0], sign, offset, scale, self.nodes, self.weights
        )
        return ve

    @inherit_check_shapes
    def _predict_log_density(
        self, X: TensorType, Fmu: TensorType, Fvar: TensorType, Y: TensorType
    ) -> tf.Tensor:
        # Probit–Gaussian identity: ∫ Φ(s(f + μ)/c) N(f | m, v) df = Φ(s(m + μ)/sqrt(c² + v)).
        sign, task, annotator = self.split(Y)
        offset, scale = self.noise(task, annotator)
        return log_ndtr(sign * (Fmu[:, 0] + offset) / tf.sqrt(tf.square(scale) + Fvar[:, 0]))

    @inherit_check_shapes
    def _predict_mean_and_var(
        self, X: TensorType, Fmu: TensorType, Fvar: TensorType
    ) -> tuple[tf.Tensor, tf.Tensor]:
        # Without a judgment (no task / annotator) the noise is unknown: use the plain probit.
        p = ndtr(Fmu / tf.sqrt(1.0 + Fvar))
        return p, p - tf.square(p)

    @inherit_check_shapes
    def _conditional_mean(self, X: TensorType, F: TensorType) -> tf.Tensor:
        return ndtr(F)

    @inherit_check_shapes
    def _conditional_variance(self, X: TensorType, F: TensorType) -> tf.Tensor:
        p = ndtr(F)
        return p - tf.square(p)


def _gamma_prior() -> Any:
    one = tf.constant(1.0, dtype=gpflow.default_float())
    return tfp.distributions.Gamma(one, one)


def _normal_prior() -> Any:
    return tfp.distributions.Normal(
        tf.constant(0.0, dtype=gpflow.default_float()),
        tf.constant(1.0, dtype=gpflow.default_float()),
    )
