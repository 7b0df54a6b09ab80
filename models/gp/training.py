"""Variational EM for the multi-annotator GP (thesis Algorithm 9), with conjugate E steps.

Model (thesis eqs. 4.9–4.16, plus a per-task deviation, DESIGN §6):

    g ~ GP(m(x), k(x, x')),   e_i ~ N(0, τ²),   f_i = g(x_i) + e_i,
    P(y_a = 1 | f_i) = Φ((f_i + μ_i + μ_j) / sqrt(1 + σ_i² + σ_j²)).

q(f) is the prior times one Gaussian site t_i(f_i) = exp(ν̃_i f_i − ½ τ̃_i f_i²) per task, the
form of the optimal Gaussian approximation (Opper & Archambeau 2009). Given the sites, q is
closed form: a GP regression on pseudo targets ỹ_i = ν̃_i / τ̃_i with noise precision
β_i = τ̃_i / (1 + τ² τ̃_i) (the deviation e_i is folded into the noise), computed with inducing
points Z (SVGP / Titsias 2009) or exactly with Z = X for small collections; then
q(e_i | g_i) is the exact conditional. The per-task terms are therefore explicit variational
parameters that inducing points do not have to carry.

E step: natural-gradient (CVI, Khan & Lin 2017) updates of the sites, each a closed-form
Newton-like step per task from the Gauss–Hermite statistics of its judgments:
τ̃_i ← −2 ∂E_i/∂v_i, ν̃_i ← ∂E_i/∂m_i + τ̃_i m_i (damped by ``e_rate`` < 1 if asked).
M step: L-BFGS on kernel, τ², mean function and noise parameters with the sites fixed.
Objective (eq. 4.17): ELBO + log prior, where with sites fixed

    ELBO = log Z_t(θ) + Σ_a E_q[log p(y_a | f_i)] − Σ_i E_q[log t_i(f_i)],

log Z_t being the (collapsed, Titsias) log marginal likelihood of the Gaussian-site model.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gpflow
import numpy as np
import scipy.optimize
import tensorflow as tf
from check_shapes import check_shapes, disable_check_shapes

from models.gp.constants import M_STEP_MAX_TASKS
from models.gp.likelihood import GaussianBernoulli, judgment_expectations, log_ndtr

# The same seed gives the same fit, in the CLI and in a job's child process alike: without this,
# CPU kernels that split a long sum across threads (oneDNN's matmuls, Eigen's inner-dimension
# shards: the M × n products here) may add the parts in another order under load, and over EM
# iterations that moves tasks near P = ½ (an RF10 lk fit through the service once differed from
# the CLI's in a few labels). Measured: no slower within noise (RF10 lk, 63.5 s against 60.4 s
# on a loaded machine), and the same qrels as without.
tf.config.experimental.enable_op_determinism()

JITTER = 1e-6
# Columns (tasks) per block of the M × n matrices of the sparse GP algebra: the temporaries of
# one block (M × 16,384 float64, 26 MB at M = 200) rather than of all n tasks are alive at once.
COLUMN_BLOCK = 16384
# τ² is not in the thesis: Gamma(2, 1) (mode 1) rather than Gamma(1, 1), whose mode at 0 lets EM
# collapse f onto the smooth g(x) on noisy data (the failure DESIGN §6 describes).
DEVIATION_PRIOR_SHAPE = 2.0
# Probit scale of a gold label's factor Φ(s f_i / c): 1 is the model's own P(relevant) event
# (docs/gp.md, "Gold labels"); sharper clamps (c = 0.03–0.3) measured no different.
GOLD_SCALE = 1.0
# Precision of the Gauss–Hermite pass over the judgments (E sweeps, the M step, the objective,
# task difficulty): float32 halves its memory traffic and doubles its SIMD width, and its rounding
# is far below the 12-point rule's own error (``judgment_expectations``); sums over judgments and
# all GP algebra stay float64.
QUADRATURE_DTYPE = tf.float32
# The full GP (Z = X) by the direct algebra of ``exact_posterior`` (B = I + S½ K S½, one
# Cholesky and one triangular solve: about a quarter of the Titsias route's M³ work, and no
# Cholesky of K in the M step's loss); False: the Titsias algebra with A = Lᵀ, as the sparse GP.
# The two agree to rounding (tests/models/gp/test_gp_fast_paths.py).
FULL_GP_DIRECT = True
# check_shapes off while the compiled steps trace (``_unchecked``).
TRACE_UNCHECKED = True
# Precision of the sparse posterior's variance product LB⁻¹ A (M × M times M × n, half of an E
# sweep's GP algebra): v_g = d + column sums of (LB⁻¹ A)² adds non-negative squares, no
# cancellation, and ‖LB⁻¹‖ ≤ 1 (B ⪰ I), so float32's rounding stays a relative ~1e-6 of v_g;
# B, its Cholesky factor and the means stay float64.
VARIANCE_PRODUCT_DTYPE = tf.float32
# The M step's L-BFGS blocks stop once an iteration improves their loss by less than this
# fraction of EM's own relative tolerance (scipy's ``ftol``): a change a hundred times below what
# EM's convergence test resolves moves nothing that test, or the fit, can see. Without it scipy's
# default (2.2e-9) ran every block to ``m_iter`` / ``m_lik_iter``: at 20,000 tasks the last half
# of each block's evaluations improved a 61,000-nat objective by under a nat.
M_STEP_FTOL_FRACTION = 0.01


@dataclass
class EMSettings:
    n_iter: int = 50
    tol: float = 1e-4
    min_iter: int = 3
    e_sweeps: int = 20
    e_tol: float = 1e-3
    e_rate: float = 1.0
    m_iter: int = 10
    m_lik_iter: int = 20
    # Above this many tasks the GP block of the M step is fitted on a random subset of tasks
    # (redrawn each iteration); None: always on all tasks.
    m_max_tasks: int | None = M_STEP_MAX_TASKS
    seed: int | None = None


@dataclass
class EMTrace:
    objective: list[float] = field(default_factory=list)
    seconds: float = 0.0
    n_iter: int = 0
    converged: bool = False
    e_sweeps: int = 0


class CrowdGPCore(gpflow.base.Module):
    """The tensors and parameters of one fit; ``features is None`` means no GP (the LK model).

    ``inducing`` None with features means the full GP (Z = X). Judgments come as long int
    arrays; the sites ν̃, τ̃ are non-trainable variables updated by the E step.
    """

    def __init__(
        self,
        *,
        n_tasks: int,
        task: np.ndarray,
        annotator: np.ndarray,
        label: np.ndarray,
        likelihood: GaussianBernoulli,
        features: np.ndarray | None = None,
        kernel: gpflow.kernels.Kernel | None = None,
        inducing: np.ndarray | None = None,
        mean_function: gpflow.functions.MeanFunction | None = None,
        deviation: bool = True,
        deviation_variance: float = 1.0,
        gold_task: np.ndarray | None = None,
        gold_label: np.ndarray | None = None,
    ) -> None:
        super().__init__()
        dtype = gpflow.default_float()
        if features is None and not deviation:
            raise ValueError("without features the per-task deviation is the only prior")
        if (gold_task is None) != (gold_label is None):
            raise ValueError("give both gold_task and gold_label, or neither")
        self.n_tasks = n_tasks
        self.task = tf.constant(task, dtype=tf.int32)
        self.annotator = tf.constant(annotator, dtype=tf.int32)
        self.sign = tf.constant(2.0 * np.asarray(label, dtype=dtype) - 1.0, dtype=dtype)
        # Gold: an observation "relevant" (or not) of the task itself, P(gold = 1 | f_i) = Φ(f_i),
        # the event whose probability the model reports as P(relevant) (see ``gold_terms``).
        gold_task = np.zeros(0, dtype=np.int32) if gold_task is None else gold_task
        gold_label = np.zeros(0) if gold_label is None else np.asarray(gold_label, dtype=dtype)
        self.gold_task = tf.constant(gold_task, dtype=tf.int32)
        self.gold_sign = tf.constant(2.0 * gold_label - 1.0, dtype=dtype)
        self.likelihood = likelihood
        self.X = None if features is None else tf.constant(features, dtype=dtype)
        self.kernel = kernel
        self.Z = None if inducing is None else tf.constant(inducing, dtype=dtype)
        self.mean_function = mean_function
        self.deviation = deviation
        self.deviation_variance = gpflow.Parameter(
            deviation_variance, transform=gpflow.utilities.positive(lower=1e-6),
            prior=_gamma(DEVIATION_PRIOR_SHAPE), trainable=deviation, name="deviation_variance",
        )
        self.nat1 = tf.Variable(tf.zeros(n_tasks, dtype=dtype), trainable=False, name="site_nat1")
        self.nat2 = tf.Variable(tf.zeros(n_tasks, dtype=dtype), trainable=False, name="site_nat2")
        self._lik_loss_and_grads = _compiled(self._lik_loss_and_grads_impl)
        self._gp_loss_and_grads = _compiled(self._gp_loss_and_grads_impl)
        # Subsets differ in their number of judgments: one trace with a free length.
        self._gp_subset_loss_and_grads = _compiled(self._gp_subset_loss_and_grads_impl,
                                                   reduce_retracing=True)
        self._sweep = _compiled(self._sweep_impl)
        self._state_fn = _compiled(self._state_impl)
        self._q_fn = _compiled(self._q_impl)
        self._prep = _compiled(self._prep_impl)
        # The θ-only GP algebra (L, A, diag Kff, d) of the kernel values it was computed for:
        # the E step, the M step's noise block, the objective and the read-outs share one A.
        self._prepared: tuple[tuple[bytes, ...], tuple] | None = None
        self._q_cached: tuple[tuple[bytes, ...], tuple] | None = None

    # -- the GP part ----------------------------------------------------------------------
    @property
    def tau2(self) -> tf.Tensor:
        if not self.deviation:
            return tf.constant(0.0, dtype=gpflow.default_float())
        return tf.convert_to_tensor(self.deviation_variance)

    def prior_mean(self, X: tf.Tensor | None) -> tf.Tensor:
        if X is None:
            return tf.zeros(self.n_tasks, dtype=gpflow.default_float())
        if self.mean_function is None:
            return tf.zeros(tf.shape(X)[:1], dtype=gpflow.default_float())
        return self.mean_function(X)[:, 0]

    def gp_prep(self, X: tf.Tensor | None = None
                ) -> tuple[tf.Tensor | None, list[tf.Tensor] | None, tf.Tensor]:
        """L = chol(Kuu), A = L⁻¹ Kuf and diag Kff; all depend on θ only (not on the sites).

        A comes as a list of column blocks (``COLUMN_BLOCK`` tasks each; ``np.hstack`` or
        ``tf.concat`` them for the whole matrix). ``X`` is a subset of the task features (sparse
        GP only); by default all of them.
        """
        if self.X is None or self.kernel is None:
            return None, None, tf.zeros(self.n_tasks, dtype=gpflow.default_float())
        X = self.X if X is None else X
        Z = X if self.Z is None else self.Z
        kuu = self.kernel(Z)
        kuu += JITTER * tf.reduce_mean(tf.linalg.diag_part(kuu)) * tf.eye(
            tf.shape(Z)[0], dtype=kuu.dtype)
        L = tf.linalg.cholesky(kuu)
        if self.Z is None:
            # Z = X: A = L⁻¹ Kuu = Lᵀ (Kuu = L Lᵀ, jitter included) without the M³ triangular
            # solve and its backward pass; equal to the solve's result up to rounding.
            blocks = [tf.transpose(L)]
        else:
            blocks = [tf.linalg.triangular_solve(L, self.kernel(Z, X[start:stop]), lower=True)
                      for start, stop in _column_blocks(X.shape[0])]
        kdiag = self.kernel(X, full_cov=False)
        return L, blocks, kdiag

    def full_kernel(self) -> tf.Tensor:
        """K + jitter over all tasks (the full GP's prior covariance, as ``gp_prep``'s Kuu)."""
        K = self.kernel(self.X)
        return K + JITTER * tf.reduce_mean(tf.linalg.diag_part(K)) * tf.eye(
            tf.shape(self.X)[0], dtype=K.dtype)

    def direct(self) -> bool:
        """Whether the full GP's posterior goes by ``exact_posterior``."""
        return FULL_GP_DIRECT and self.X is not None and self.kernel is not None and self.Z is None

    def exact_posterior(self, K: tf.Tensor, kdiag: tf.Tensor, m0: tf.Tensor
                        ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """``posterior`` for the full GP (Z = X) from K = Kff + jitter, without chol(K).

        With S = diag(β) ⪰ 0 (every site precision τ̃ ≥ 0: the E step's curvature is the
        Gauss–Newton one, so 0 ≤ β ≤ τ̃) and r = βỹ − β m0, the Titsias terms with A = Lᵀ
        (K = L Lᵀ) are, by Sylvester's determinant identity and the push-through identity
        L (I + Lᵀ S L)⁻¹ Lᵀ = (K⁻¹ + S)⁻¹ = K − K S½ B⁻¹ S½ K, B = I + S½ K S½ (GPML's B):
        log det(I + Lᵀ S L) = log det B; ‖c‖² = rᵀ K r − ‖V r‖², V = LB⁻¹ S½ K;
        m_g = m0 + K r − Vᵀ V r; diag(Aᵀ B⁻¹ A) = diag K − column sums of V². One M³/3
        Cholesky and one M³ triangular solve instead of two Cholesky factors, two M³ products
        and two triangular solves.
        """
        nat1 = tf.convert_to_tensor(self.nat1)
        nat2 = tf.convert_to_tensor(self.nat2)
        tau2 = self.tau2
        denom, beta, b = self.pseudo_observations(nat1, nat2)
        d = tf.maximum(kdiag - tf.linalg.diag_part(K), 0.0)
        r = b - beta * m0
        root = tf.sqrt(tf.maximum(beta, 0.0))
        LB = tf.linalg.cholesky(tf.eye(tf.shape(K)[0], dtype=K.dtype)
                                + root[:, None] * K * root[None, :])
        V = tf.linalg.triangular_solve(LB, root[:, None] * K, lower=True)
        Kr = tf.linalg.matvec(K, r)
        Vr = tf.linalg.matvec(V, r)
        m_g = m0 + Kr - tf.linalg.matvec(V, Vr, transpose_a=True)
        v_g = tf.maximum(d + tf.linalg.diag_part(K) - tf.reduce_sum(tf.square(V), axis=0), 1e-12)
        gp_terms = (
            -tf.reduce_sum(tf.math.log(tf.linalg.diag_part(LB)))
            - 0.5 * tf.reduce_sum(beta * d)
            + 0.5 * (tf.reduce_sum(r * Kr) - tf.reduce_sum(tf.square(Vr)))
        )
        return self._site_part(m_g, v_g, m0, nat1, nat2, tau2, denom, beta, b, gp_terms)

    def _site_part(self, m_g: tf.Tensor, v_g: tf.Tensor, m0: tf.Tensor, nat1: tf.Tensor,
                   nat2: tf.Tensor, tau2: tf.Tensor, denom: tf.Tensor, beta: tf.Tensor,
                   b: tf.Tensor, gp_terms: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """q(f) = q(g + e) and the objective's terms from q(g) (see ``posterior``)."""
        w = tau2 * beta  # weight of the site against g in the mean of f = g + e
        m_f = (1.0 - w) * m_g + tau2 * b
        v_f = tf.square(1.0 - w) * v_g + tau2 * (1.0 - w)
        site_terms = (
            -0.5 * tf.reduce_sum(tf.math.log(denom))
            + 0.5 * tau2 * tf.reduce_sum(nat1 * b)
            + tf.reduce_sum(b * m0)
            - 0.5 * tf.reduce_sum(beta * tf.square(m0))
            + tf.reduce_sum(0.5 * nat2 * (tf.square(m_f) + v_f) - nat1 * m_f)
        )
        return m_f, v_f, gp_terms + site_terms

    def pseudo_observations(self, nat1: tf.Tensor | None = None, nat2: tf.Tensor | None = None
                            ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """(1 + τ² τ̃, β, β ỹ): the sites as Gaussian observations ỹ = ν̃/τ̃ of g, e_i folded in."""
        nat1 = tf.convert_to_tensor(self.nat1 if nat1 is None else nat1)
        nat2 = tf.convert_to_tensor(self.nat2 if nat2 is None else nat2)
        denom = 1.0 + self.tau2 * nat2
        return denom, nat2 / denom, nat1 / denom

    @check_shapes(
        "kdiag: [n]",
        "m0: [n]",
        "return[0]: [n]",
        "return[1]: [n]",
        "return[2]: []",
    )
    def posterior(self, A: list[tf.Tensor] | None, kdiag: tf.Tensor, m0: tf.Tensor,
                  nat1: tf.Tensor | None = None, nat2: tf.Tensor | None = None,
                  d: tf.Tensor | None = None,
                  ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """q(f_i) = N(m_f, v_f) given the sites, and log Z_t + Σ −E_q[log t_i] (see module doc).

        ``nat1``, ``nat2``: the sites of a subset of tasks (with ``A``, ``kdiag``, ``m0`` of the
        same subset); by default all sites. ``d``: ``nystrom_gap(A, kdiag)`` if already known.
        """
        nat1 = tf.convert_to_tensor(self.nat1 if nat1 is None else nat1)
        nat2 = tf.convert_to_tensor(self.nat2 if nat2 is None else nat2)
        tau2 = self.tau2
        denom, beta, b = self.pseudo_observations(nat1, nat2)
        if A is None:
            m_g, v_g = m0, tf.zeros_like(m0)
            gp_terms = tf.constant(0.0, dtype=m0.dtype)
        else:
            # Titsias' algebra one column block at a time (sums over tasks are sums of blocks).
            if d is None:
                d = nystrom_gap(A, kdiag)
            LB, c = site_system(A, beta, b - beta * m0)
            w = tf.linalg.triangular_solve(LB, c[:, None], lower=True, adjoint=True)  # LB⁻ᵀ c
            m_g = m0 + tf.concat([tf.linalg.matvec(a, w[:, 0], transpose_a=True) for a in A], 0)
            # v_g = d + diag(Aᵀ B⁻¹ A) = d + column sums of (LB⁻¹ A)². LB⁻¹ once (M³), then one
            # matrix product per block: a product runs several times faster than a triangular
            # solve with n right-hand sides, and B = I + A diag(β) Aᵀ ⪰ I bounds ‖LB⁻¹‖ by 1, so
            # the explicit inverse loses nothing.
            LB_inv = tf.linalg.triangular_solve(
                LB, tf.eye(tf.shape(LB)[0], dtype=LB.dtype), lower=True)
            v_g = d + tf.concat([_column_sums_of_squares(LB_inv, a) for a in A], axis=0)
            v_g = tf.maximum(v_g, 1e-12)
            gp_terms = (
                -tf.reduce_sum(tf.math.log(tf.linalg.diag_part(LB)))
                - 0.5 * tf.reduce_sum(beta * d)
                + 0.5 * tf.reduce_sum(tf.square(c))
            )
        return self._site_part(m_g, v_g, m0, nat1, nat2, tau2, denom, beta, b, gp_terms)

    def predict_f(self, Xnew: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of f_* = g(x_*) + e_* for new tasks (e_* ~ N(0, τ²): unjudged)."""
        if self.X is None or self.kernel is None:
            raise ValueError("this model has no GP over features: it cannot predict new tasks")
        dtype = gpflow.default_float()
        Xs = tf.constant(Xnew, dtype=dtype)
        L, A, _ = self.gp_prep()
        m0 = self.prior_mean(self.X)
        _, beta, b = self.pseudo_observations()
        LB, c = site_system(A, beta, b - beta * m0)
        Z = self.X if self.Z is None else self.Z
        As = tf.linalg.triangular_solve(L, self.kernel(Z, Xs), lower=True)
        LBinvAs = tf.linalg.triangular_solve(LB, As, lower=True)
        ms = tf.linalg.matvec(LBinvAs, c, transpose_a=True)
        if self.mean_function is not None:
            ms += self.mean_function(Xs)[:, 0]
        vs = (self.kernel(Xs, full_cov=False) - tf.reduce_sum(tf.square(As), 0)
              + tf.reduce_sum(tf.square(LBinvAs), 0))
        return ms.numpy(), np.maximum(vs.numpy(), 0.0) + float(self.tau2.numpy())

    def judgment_terms(self, m_f: tf.Tensor, v_f: tf.Tensor
                       ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        return self._judgment_terms(m_f, v_f, self.task, self.task, self.annotator, self.sign)

    def _judgment_terms(self, m_f: tf.Tensor, v_f: tf.Tensor, row: tf.Tensor, task: tf.Tensor,
                        annotator: tf.Tensor, sign: tf.Tensor
                        ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """Per judgment: ``row`` indexes m_f/v_f, ``task`` the task noise parameters."""
        offset, scale = self.likelihood.noise(task, annotator)
        return judgment_expectations(
            tf.gather(m_f, row), tf.gather(v_f, row), sign, offset, scale,
            self.likelihood.nodes, self.likelihood.weights, QUADRATURE_DTYPE,
        )

    def gold_terms(self, m_f: tf.Tensor, v_f: tf.Tensor, gold_row: tf.Tensor | None = None,
                   gold_sign: tf.Tensor | None = None) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """Per gold label: E[log Φ(s f_i)], ∂/∂m and ∂/∂v (``gold_row`` indexes m_f / v_f).

        A gold label is the event f_i + ε > 0, ε ~ N(0, 1) (P(relevant) read out with
        ``readout_noise`` 1; the default read-out's step [f_i > 0] has no finite expected log
        under a Gaussian q) observed: the likelihood Φ(s f_i), a judgment by an annotator with
        no noise and no bias (μ = 0, σ² = 0), through the same CVI site. It pulls q(f_i) to
        the gold side and so teaches the annotator parameters through the gold tasks, as a
        clamped class does in Dawid–Skene; the task's reported label is then the gold itself.
        """
        row = self.gold_task if gold_row is None else gold_row
        sign = self.gold_sign if gold_sign is None else gold_sign
        zero = tf.zeros_like(sign)
        return judgment_expectations(
            tf.gather(m_f, row), tf.gather(v_f, row), sign, zero, zero + GOLD_SCALE,
            self.likelihood.nodes, self.likelihood.weights, QUADRATURE_DTYPE,
        )

    def elbo(self) -> tf.Tensor:
        if self.direct():
            m_f, v_f, terms = self.exact_posterior(
                self.full_kernel(), self.kernel(self.X, full_cov=False), self.prior_mean(self.X))
        else:
            _, A, kdiag = self.gp_prep()
            m_f, v_f, terms = self.posterior(A, kdiag, self.prior_mean(self.X))
        ve, _, _ = self.judgment_terms(m_f, v_f)
        gold, _, _ = self.gold_terms(m_f, v_f)
        return terms + tf.reduce_sum(ve) + tf.reduce_sum(gold)

    def objective(self) -> tf.Tensor:
        """ELBO + log prior of the trainable parameters (thesis eq. 4.17)."""
        return self.elbo() + self.log_prior_density()

    def log_prior_density(self) -> tf.Tensor:
        """Σ log p(θ) over trainable parameters with a prior (Gamma(1, 1) on variances)."""
        terms = [p.log_prior_density() for p in self.trainable_parameters if p.prior is not None]
        return tf.add_n(terms) if terms else tf.constant(0.0, dtype=gpflow.default_float())

    # -- compiled steps -------------------------------------------------------------------
    def _prep_impl(self) -> tuple[tf.Tensor | None, list[tf.Tensor] | None, tf.Tensor,
                                  tf.Tensor | None]:
        if self.direct():
            # L and A are not needed by the E step, the objective or q; the read-outs that want
            # them (prediction, joint samples) call ``gp_prep`` themselves.
            return None, self.full_kernel(), self.kernel(self.X, full_cov=False), None
        L, A, kdiag = self.gp_prep()
        return L, A, kdiag, None if A is None else nystrom_gap(A, kdiag)

    def prepared(self) -> tuple[tf.Tensor | None, list[tf.Tensor] | None, tf.Tensor,
                                tf.Tensor | None]:
        """``gp_prep()`` for all tasks and d = diag(Kff − Qff), kept while the kernel is unchanged.

        They depend on the kernel parameters only (not on the sites, τ², the mean function or
        the noise parameters), so an E step, the noise block of the M step, the objective and
        the read-outs after EM share one computation of A (O(n M²)) instead of one each.
        """
        key = tuple(v.numpy().tobytes() for v in self.kernel.variables) if self.kernel else ()
        if self._prepared is None or self._prepared[0] != key:
            self._prepared = None  # the old A goes before the new one is built
            self._prepared = (key, self._prep())
        return self._prepared[1]

    def _sweep_impl(self, A: list[tf.Tensor] | None, kdiag: tf.Tensor, d: tf.Tensor | None,
                    m0: tf.Tensor, rate: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """One natural-gradient update of every site; returns q's means and the objective
        (ELBO + log prior) before the update, which the same Gauss–Hermite pass gives."""
        m_f, v_f, terms = self._posterior_prepared(A, kdiag, d, m0)
        ve, dm, dv = self.judgment_terms(m_f, v_f)
        gold, gold_dm, gold_dv = self.gold_terms(m_f, v_f)
        objective = (terms + tf.reduce_sum(ve) + tf.reduce_sum(gold)
                     + self.log_prior_density())
        rows = tf.concat([self.task, self.gold_task], axis=0)
        g_m = tf.math.unsorted_segment_sum(tf.concat([dm, gold_dm], 0), rows, self.n_tasks)
        g_v = tf.math.unsorted_segment_sum(tf.concat([dv, gold_dv], 0), rows, self.n_tasks)
        new2 = -2.0 * g_v
        new1 = g_m + new2 * m_f
        self.nat1.assign((1.0 - rate) * self.nat1 + rate * new1)
        self.nat2.assign((1.0 - rate) * self.nat2 + rate * new2)
        return m_f, objective

    def _q_impl(self, A: list[tf.Tensor] | None, kdiag: tf.Tensor, d: tf.Tensor | None
                ) -> tuple[tf.Tensor, tf.Tensor]:
        m_f, v_f, _ = self._posterior_prepared(A, kdiag, d, self.prior_mean(self.X))
        return m_f, v_f

    def _posterior_prepared(self, A: list[tf.Tensor] | tf.Tensor | None, kdiag: tf.Tensor,
                            d: tf.Tensor | None, m0: tf.Tensor
                            ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """``posterior`` from ``prepared()``'s parts (there, K in A's place for the full GP)."""
        if self.direct():
            return self.exact_posterior(A, kdiag, m0)
        return self.posterior(A, kdiag, m0, d=d)

    def _state_impl(self, A: list[tf.Tensor] | None, kdiag: tf.Tensor, d: tf.Tensor | None
                    ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        m_f, v_f, terms = self._posterior_prepared(A, kdiag, d, self.prior_mean(self.X))
        ve, _, _ = self.judgment_terms(m_f, v_f)
        gold, _, _ = self.gold_terms(m_f, v_f)
        return m_f, v_f, terms + tf.reduce_sum(ve) + tf.reduce_sum(gold) + self.log_prior_density()

    def q(self) -> tuple[tf.Tensor, tf.Tensor]:
        """q(f_i) = N(m_f, v_f) for the current sites and θ, kept while they are unchanged.

        q depends on the sites and the GP's parameters only (not on the likelihood's), so the
        read-outs after EM (task difficulty, the truth layer, the stored posterior) share one
        posterior, an O(n M²) pass each otherwise.
        """
        lik = {id(v) for v in self.likelihood.variables}
        key = tuple(v.numpy().tobytes() for v in self.variables if id(v) not in lik)
        if self._q_cached is None or self._q_cached[0] != key:
            self._q_cached = None
            self._q_cached = (key, self._q_fn(*self.prepared()[1:]))
        return self._q_cached[1]

    def _state(self) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """q's means and variances and the objective (ELBO + log prior) for the current sites."""
        return self._state_fn(*self.prepared()[1:])

    # -- the two steps ------------------------------------------------------------------------
    def e_step(self, settings: EMSettings) -> tuple[int, float]:
        """Natural-gradient sweeps over the sites until the means stop moving; θ fixed.

        Returns the number of sweeps and the objective at the sites the step started from (the
        state the previous M step left), which EM's convergence test reads.
        """
        _, A, kdiag, d = self.prepared()
        m0 = self.prior_mean(self.X)
        rate = tf.constant(settings.e_rate, dtype=gpflow.default_float())
        previous = None
        entry = float("nan")
        for sweep in range(1, settings.e_sweeps + 1):
            m_f, objective = self._sweep(A, kdiag, d, m0, rate)
            m_f = m_f.numpy()
            if sweep == 1:
                entry = float(objective.numpy())
            if previous is not None and np.max(np.abs(m_f - previous)) < settings.e_tol:
                return sweep, entry
            previous = m_f
        return settings.e_sweeps, entry

    def m_step(self, settings: EMSettings, rng: np.random.Generator | None = None) -> None:
        """L-BFGS on θ with the sites fixed, in two blocks.

        The noise parameters (σ_j², biases) do not change q given the sites, so they are fitted
        first against the cached q(f) — O(#judgments) per evaluation, run to convergence; then
        the few GP parameters (kernel, τ², mean function) with the full objective, whose every
        evaluation costs the O(n M²) GP algebra (and its backward pass the memory of several
        M × n matrices), for ``m_iter`` iterations. Above ``m_max_tasks`` tasks that block sees a
        random subset of tasks with their sites and judgments, its data terms scaled by n / |S|:
        the subset-of-data estimate of a handful of hyperparameters (kernel variance and
        lengthscales, τ², mean weights), which a few thousand tasks pin down; it bounds the M step's
        time and memory independently of n.
        """
        lik_vars = list(self.likelihood.trainable_variables)
        gp_vars = self._gp_variables()
        ftol = settings.tol * M_STEP_FTOL_FRACTION
        if lik_vars:
            m_f, v_f = self.q()
            _lbfgs(lambda: self._lik_loss_and_grads(m_f, v_f), lik_vars, settings.m_lik_iter,
                   ftol)
        if not gp_vars or settings.m_iter <= 0:
            return
        limit = settings.m_max_tasks
        if self.X is None or self.Z is None or limit is None or self.n_tasks <= limit:
            _lbfgs(self._gp_loss_and_grads, gp_vars, settings.m_iter, ftol)
            return
        subset = self._draw_subset(rng or np.random.default_rng(settings.seed), limit)
        _lbfgs(lambda: self._gp_subset_loss_and_grads(*subset), gp_vars, settings.m_iter, ftol)

    def _draw_subset(self, rng: np.random.Generator, size: int) -> tuple[tf.Tensor, ...]:
        """``size`` tasks, their judgments (rows re-indexed into the subset) and n / size."""
        tasks = np.sort(rng.choice(self.n_tasks, size, replace=False))
        position = np.full(self.n_tasks, -1, dtype=np.int32)
        position[tasks] = np.arange(size, dtype=np.int32)
        task = self.task.numpy()
        keep = position[task] >= 0
        gold = position[self.gold_task.numpy()]
        return (
            tf.constant(tasks, dtype=tf.int32),
            tf.constant(position[task[keep]], dtype=tf.int32),
            tf.constant(task[keep], dtype=tf.int32),
            tf.constant(self.annotator.numpy()[keep], dtype=tf.int32),
            tf.constant(self.sign.numpy()[keep]),
            tf.constant(self.n_tasks / size, dtype=gpflow.default_float()),
            tf.constant(gold[gold >= 0], dtype=tf.int32),
            tf.constant(self.gold_sign.numpy()[gold >= 0]),
        )

    def _gp_subset_loss_and_grads_impl(
        self, tasks: tf.Tensor, row: tf.Tensor, task: tf.Tensor, annotator: tf.Tensor,
        sign: tf.Tensor, scale: tf.Tensor, gold_row: tf.Tensor, gold_sign: tf.Tensor,
    ) -> tuple[tf.Tensor, list[tf.Tensor]]:
        def loss() -> tf.Tensor:
            X = tf.gather(self.X, tasks)
            _, A, kdiag = self.gp_prep(X)
            m_f, v_f, terms = self.posterior(A, kdiag, self.prior_mean(X),
                                             tf.gather(self.nat1, tasks),
                                             tf.gather(self.nat2, tasks))
            ve, _, _ = self._judgment_terms(m_f, v_f, row, task, annotator, sign)
            gold, _, _ = self.gold_terms(m_f, v_f, gold_row, gold_sign)
            data = terms + tf.reduce_sum(ve) + tf.reduce_sum(gold)
            return -(scale * data + self.log_prior_density())

        return _value_and_grads(loss, self._gp_variables())

    def _lik_loss_and_grads_impl(self, m_f: tf.Tensor, v_f: tf.Tensor
                                 ) -> tuple[tf.Tensor, list[tf.Tensor]]:
        def loss() -> tf.Tensor:
            ve, _, _ = self.judgment_terms(m_f, v_f)
            priors = [p.log_prior_density() for p in self.likelihood.trainable_parameters
                      if p.prior is not None]
            return -(tf.reduce_sum(ve) + tf.add_n(priors)) if priors else -tf.reduce_sum(ve)

        return _value_and_grads(loss, list(self.likelihood.trainable_variables))

    def _gp_loss_and_grads_impl(self) -> tuple[tf.Tensor, list[tf.Tensor]]:
        return _value_and_grads(lambda: -self.objective(), self._gp_variables())

    def _gp_variables(self) -> list[tf.Variable]:
        """The GP block of the M step: every trainable variable outside the likelihood."""
        ids = {id(v) for v in self.likelihood.trainable_variables}
        return [v for v in self.trainable_variables if id(v) not in ids]


def nystrom_gap(A: list[tf.Tensor], kdiag: tf.Tensor) -> tf.Tensor:
    """d = diag(Kff − Kfu Kuu⁻¹ Kuf) = diag Kff − column sums of A², per task (≥ 0)."""
    return tf.concat([tf.maximum(kd - tf.reduce_sum(tf.square(a), axis=0), 0.0)
                      for a, kd in zip(A, _split_like(A)(kdiag), strict=True)], axis=0)


def _column_sums_of_squares(LB_inv: tf.Tensor, a: tf.Tensor) -> tf.Tensor:
    """Column sums of (LB⁻¹ a)², the product in ``VARIANCE_PRODUCT_DTYPE``, the sums in a's."""
    product = tf.linalg.matmul(tf.cast(LB_inv, VARIANCE_PRODUCT_DTYPE),
                               tf.cast(a, VARIANCE_PRODUCT_DTYPE))
    return tf.reduce_sum(tf.square(tf.cast(product, a.dtype)), axis=0)


def site_system(A: list[tf.Tensor], beta: tf.Tensor, resid: tf.Tensor
                ) -> tuple[tf.Tensor, tf.Tensor]:
    """LB = chol(I + A diag(β) Aᵀ) and c = LB⁻¹ A r, summed over the column blocks of A."""
    split = _split_like(A)
    B = tf.eye(tf.shape(A[0])[0], dtype=beta.dtype) + tf.add_n(
        [tf.linalg.matmul(a * bk, a, transpose_b=True)
         for a, bk in zip(A, split(beta), strict=True)])
    LB = tf.linalg.cholesky(B)
    Ar = tf.add_n([tf.linalg.matvec(a, r) for a, r in zip(A, split(resid), strict=True)])
    return LB, tf.linalg.triangular_solve(LB, Ar[:, None], lower=True)[:, 0]


def _column_blocks(n: int | None) -> list[tuple[int | None, int | None]]:
    """(start, stop) of the column blocks of n tasks; one block when n is not known statically."""
    if n is None:
        return [(None, None)]
    return [(start, min(start + COLUMN_BLOCK, n)) for start in range(0, max(n, 1), COLUMN_BLOCK)]


def _split_like(blocks: list[tf.Tensor]) -> Callable[[tf.Tensor], list[tf.Tensor]]:
    """Splits a per-task vector into pieces matching the column blocks of A."""
    if len(blocks) == 1:
        return lambda v: [v]
    sizes = [int(a.shape[1]) for a in blocks]
    return lambda v: tf.split(v, sizes, axis=0)


def _value_and_grads(loss: Callable[[], tf.Tensor], variables: list[tf.Variable]
                     ) -> tuple[tf.Tensor, list[tf.Tensor]]:
    """loss() and its gradients w.r.t. ``variables`` (zeros where it does not depend on one)."""
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(variables)
        value = loss()
    grads = tape.gradient(value, variables)
    return value, [tf.zeros_like(v) if g is None else g
                   for v, g in zip(variables, grads, strict=True)]


def _lbfgs(loss_and_grads: Callable[[], tuple[tf.Tensor, list[tf.Tensor]]],
           variables: list[tf.Variable], maxiter: int, ftol: float | None = None) -> None:
    """scipy L-BFGS-B over ``variables`` (flattened); keeps the start if it did not improve.
    ``ftol``: stop when an iteration's relative improvement is below it (None: scipy's default)."""
    shapes = [tuple(v.shape) for v in variables]
    splits = np.cumsum([int(np.prod(s)) for s in shapes])[:-1]

    def assign(x: np.ndarray) -> None:
        for v, part, shape in zip(variables, np.split(x, splits), shapes, strict=True):
            v.assign(part.reshape(shape))

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        assign(x)
        loss, grads = loss_and_grads()
        flat = np.concatenate([np.ravel(g.numpy()) for g in grads])
        if not np.isfinite(loss.numpy()) or not np.all(np.isfinite(flat)):
            return np.inf, np.zeros_like(x)
        return float(loss.numpy()), flat

    x0 = np.concatenate([np.ravel(v.numpy()) for v in variables])
    start = fun(x0)
    first = [True]

    def fun_reusing_start(x: np.ndarray) -> tuple[float, np.ndarray]:
        # scipy's first evaluation is at x0, already evaluated for ``start``: one evaluation of
        # the loss and its gradient less per L-BFGS run (the M step's GP block at 400 tasks: a
        # sixth of its evaluations), same values.
        if first[0]:
            first[0] = False
            if np.array_equal(x, x0):
                return start[0], start[1].copy()
        return fun(x)

    options: dict[str, Any] = {"maxiter": maxiter}
    if ftol is not None:
        options["ftol"] = ftol
    res = scipy.optimize.minimize(fun_reusing_start, x0, jac=True, method="L-BFGS-B",
                                  options=options)
    assign(res.x if np.isfinite(res.fun) and res.fun <= start[0] else x0)


def run_em(
    core: CrowdGPCore,
    settings: EMSettings,
    progress: Callable[[float, str], None],
) -> EMTrace:
    """Algorithm 9: alternate E and M steps until the relative change of ELBO + log prior < tol.

    The objective after an M step is read from the first sweep of the E step that follows (the
    same sites and θ; its Gauss–Hermite pass gives E[log p] anyway), and that E step is the next
    iteration's, or, once EM stops, the last one, so that q matches the final θ.
    """
    trace = EMTrace()
    t0 = time.perf_counter()
    rng = np.random.default_rng(settings.seed)
    sweeps, _ = core.e_step(settings)
    trace.e_sweeps += sweeps
    for it in range(1, settings.n_iter + 1):
        core.m_step(settings, rng)
        sweeps, value = core.e_step(settings)
        trace.e_sweeps += sweeps
        trace.objective.append(value)
        trace.n_iter = it
        progress(min(it / settings.n_iter, 0.99), f"EM iteration {it}: objective {value:.2f}")
        if it >= settings.min_iter and len(trace.objective) > 1:
            prev = trace.objective[-2]
            if abs(value - prev) <= settings.tol * max(abs(prev), 1.0):
                trace.converged = True
                break
    trace.seconds = time.perf_counter() - t0
    return trace


def fit_task_noise(core: CrowdGPCore, grid: np.ndarray | None = None) -> None:
    """Each task's σ_i²: its posterior mean under Gamma(1, 1) given the rest of the fitted model.

    The posterior of σ_i² weighs the marginal likelihood of the task's own judgments, with f_i
    integrated over its cavity q(f_i) / t_i(f_i) (EP's cavity: what the GP and the prior say about
    f_i before its judgments), by the Gamma(1, 1) prior:

        p(σ_i² | y_i) ∝ ∫ Π_a Φ(s_a (f + μ_i + μ_j) / sqrt(1 + σ_j² + σ_i²)) N(f | m_c, v_c) df
                        × exp(−σ_i²).

    Why these choices: scored against the posterior q(f_i) instead of the cavity, a split task's
    votes sit at f ≈ 0 where σ_i² changes nothing; and with a handful of judgments per task the
    likelihood is flat enough that the MAP lies at the prior's mode, 0, for every task. The
    posterior mean separates them (unanimous tasks below the prior mean 1, split ones above; a
    task without judgments gets 1). Learning σ_i² inside EM lets each task explain its
    disagreement away and collapses τ² (f then follows the features only), so this is a read-out
    after EM. It separates by task: the integral over σ_i² is a trapezoid rule on ``grid``; the one
    over f a Gauss–Hermite rule on q(f_i), which the integrand resembles (q ∝ cavity × site), with
    the weights corrected by cavity / q, so a task with many judgments (a narrow integrand) is
    still integrated where its mass is. One node at a time keeps temporaries at #judgments floats;
    O(#judgments × #nodes × #grid).
    """
    from scipy.special import logsumexp

    grid = np.concatenate([[0.0], np.geomspace(0.01, 20.0, 30)]) if grid is None else grid
    lik = core.likelihood
    m_f, v_f = (t.numpy() for t in core.q())
    # Cavity: q(f_i) / t_i(f_i), in natural parameters.
    precision = np.maximum(1.0 / v_f - core.nat2.numpy(), 1e-6)
    cavity_mean = (m_f / v_f - core.nat1.numpy()) / precision
    sd_f = np.sqrt(v_f)
    nodes_f = [m_f + sd_f * node for node in lik.nodes]
    # log N(f | cavity) − log N(f | q) at each node, per task: the importance weights.
    correction = [
        0.5 * np.log(precision * v_f) - 0.5 * precision * (f - cavity_mean) ** 2
        + 0.5 * (f - m_f) ** 2 / v_f
        for f in nodes_f
    ]
    task = core.task.numpy()
    ann = core.annotator.numpy()
    sign = core.sign.numpy()
    offset = lik.task_bias.numpy()[task] + lik.annotator_bias.numpy()[ann]
    base = 1.0 + lik.annotator_variance.numpy()[ann]
    centre = (m_f[task] + offset) * sign  # s_a (f + μ) = centre + spread × node
    spread = sd_f[task] * sign
    log_keep, log_spam = _spam_terms(lik, ann, (sign > 0).astype(np.int64))
    log_post = _difficulty_log_posterior(
        *(tf.constant(x, dtype=QUADRATURE_DTYPE) for x in (centre, spread, base)),
        tf.constant(task, dtype=tf.int32), tf.constant(log_keep), tf.constant(log_spam),
        tf.constant(np.stack(correction)), tf.constant(lik.nodes, dtype=QUADRATURE_DTYPE),
        tf.constant(np.log(lik.weights)), tf.constant(grid), core.n_tasks, log_keep.size > 0,
    ).numpy()
    # Trapezoid weights of the (non-uniform) grid, then normalise per task.
    step = np.diff(grid)
    trapezoid = np.concatenate([[step[0]], step[:-1] + step[1:], [step[-1]]]) / 2.0
    log_post += np.log(trapezoid)[:, None]
    post = np.exp(log_post - logsumexp(log_post, axis=0))
    lik.task_variance.assign(grid @ post)


def _compiled(fn: Callable, reduce_retracing: bool = False) -> Callable:
    """``tf.function`` without autograph: the traced code's branches and loops are on Python
    values (None checks, lists of column blocks) or explicit ``tf.while_loop``s, so autograph's
    source-to-source conversion of every function it reaches (GPflow's kernels and check_shapes
    wrappers included) was pure cost: 6 s of CPU for ``_prep``'s first trace at 2,000 tasks,
    most of a small fit's time (docs/gp.md, "Speed and memory"). A tensor used as a Python bool
    now fails when traced instead of being converted."""
    return tf.function(_unchecked(fn), autograph=False, reduce_retracing=reduce_retracing)


def _unchecked(fn: Callable) -> Callable:
    """``fn`` run with check_shapes' checks off (when traced: the shapes are checked once per
    trace anyway, and the checks were a third of a small fit's tracing time)."""
    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if not TRACE_UNCHECKED:
            return fn(*args, **kwargs)
        with disable_check_shapes():
            return fn(*args, **kwargs)

    return wrapped


@functools.partial(_compiled, reduce_retracing=True)
def _difficulty_log_posterior(centre: tf.Tensor, spread: tf.Tensor, base: tf.Tensor,
                              task: tf.Tensor, log_keep: tf.Tensor, log_spam: tf.Tensor,
                              correction: tf.Tensor, nodes: tf.Tensor, log_weights: tf.Tensor,
                              grid: tf.Tensor, n_tasks: int, spam: bool) -> tf.Tensor:
    """(grid points, tasks): log of Σ_k w_k Π_a P(y_a | f = m + sd z_k, σ_i² = g) × cavity/q
    − g, for ``fit_task_noise``. log Φ in ``QUADRATURE_DTYPE`` (the pass is #grid × #nodes ×
    #judgments evaluations: 372 M at a million judgments), the sums per task in float64; one
    grid point and one node at a time, so temporaries stay at #judgments floats."""
    def log_prob(z: tf.Tensor) -> tf.Tensor:
        logp = tf.cast(log_ndtr(z), tf.float64)
        if not spam:
            return logp
        a = log_keep + logp  # log((1 − ε) Φ + ε ξ), both terms in log space
        return tf.maximum(a, log_spam) + tf.math.log1p(tf.exp(-tf.abs(a - log_spam)))

    def one_grid_point(g: tf.Tensor) -> tf.Tensor:
        scale = tf.math.rsqrt(base + tf.cast(g, base.dtype))

        def add_node(k: tf.Tensor, per_node: tf.TensorArray) -> tuple[tf.Tensor, tf.TensorArray]:
            z = (centre + spread * nodes[k]) * scale
            total = tf.math.unsorted_segment_sum(log_prob(z), task, n_tasks)
            return k + 1, per_node.write(k, total + correction[k] + log_weights[k])

        _, per_node = tf.while_loop(
            lambda k, _: k < tf.size(nodes), add_node,
            (tf.constant(0), tf.TensorArray(tf.float64, size=tf.size(nodes))),
            parallel_iterations=1)
        return tf.reduce_logsumexp(per_node.stack(), axis=0) - g  # + log Gamma(g | 1, 1)

    return tf.map_fn(one_grid_point, grid, parallel_iterations=1)


def _spam_terms(lik: GaussianBernoulli, annotator: np.ndarray, label: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """log(1 − ε_j) and log(ε_j ξ_j[y]) per judgment when the likelihood has a spam part
    (``asymmetric_noise``: P(y_a | ·) = (1 − ε_j) Φ(z) + ε_j ξ_j[y]); empty arrays without one."""
    if getattr(lik, "spam_prior", 0.0) <= 0:
        return np.zeros(0), np.zeros(0)
    eps = lik.spam.numpy()[annotator]
    return np.log1p(-eps), np.log(eps * lik.strategy.numpy()[annotator, label])


def kmeans_inducing(X: np.ndarray, m: int, rng: np.random.Generator, n_iter: int = 10,
                    max_rows: int = 20000) -> np.ndarray:
    """Inducing inputs: k-means (Lloyd, k-means++ start) on a subsample of the task features."""
    if X.shape[0] > max_rows:
        X = X[rng.choice(X.shape[0], max_rows, replace=False)]
    m = min(m, X.shape[0])
    centres = [X[rng.integers(X.shape[0])]]
    d2 = np.sum((X - centres[0]) ** 2, axis=1)
    for _ in range(1, m):
        p = d2 / d2.sum() if d2.sum() > 0 else np.full(X.shape[0], 1.0 / X.shape[0])
        centres.append(X[rng.choice(X.shape[0], p=p)])
        d2 = np.minimum(d2, np.sum((X - centres[-1]) ** 2, axis=1))
    C = np.array(centres)
    for _ in range(n_iter):
        dist = (X**2).sum(1)[:, None] - 2 * X @ C.T + (C**2).sum(1)[None, :]
        nearest = np.argmin(dist, axis=1)
        counts = np.bincount(nearest, minlength=m)
        for k in range(X.shape[1]):
            sums = np.bincount(nearest, weights=X[:, k], minlength=m)
            C[:, k] = np.where(counts > 0, sums / np.maximum(counts, 1), C[:, k])
    return C


def _gamma(shape: float = 1.0):  # noqa: ANN202 - a TFP distribution
    import tensorflow_probability as tfp

    dtype = gpflow.default_float()
    return tfp.distributions.Gamma(tf.constant(shape, dtype=dtype), tf.constant(1.0, dtype=dtype))
