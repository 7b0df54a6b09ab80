"""The ordinal multi-annotator GP: ordered probit instead of the Gaussian–Bernoulli likelihood.

A judgment a = (i, j, y) with y ∈ {0, …, K−1} sees the task's latent f_i through task noise
N(μ_i, σ_i²) and annotator noise N(μ_j, σ_j²) and a unit probit, and reports the grade whose
interval of ordered thresholds b_{−1} = −∞ < b_0 < … < b_{K−2} < b_{K−1} = +∞ holds the result.
Integrating both noises out as in the binary case (thesis eq. 4.16) gives

    P(y ≤ k | f_i) = Φ((b_k − f_i − μ_i − μ_j) / sqrt(1 + σ_i² + σ_j²))
    P(y = k | f_i) = Φ(u_k) − Φ(u_{k−1}),   u_k = (b_k − f_i − μ_i − μ_j) / sqrt(1 + σ_i² + σ_j²)

(K = 2 with b_0 = 0 is the Gaussian–Bernoulli likelihood). The thresholds are learned in the M
step, ordered by construction (b_0 free, then positive gaps). E_q(f_i)[log P(y_a | f_i)] is still
one 1-D Gauss–Hermite rule per judgment, with analytic derivatives for the CVI E step and the M
step; everything is long format (gathers by task, annotator and grade). The EM engine is
``models.gp.training``'s, with the judgment terms swapped (``OrdinalCrowdGPCore``, in
``models.gp.ordinal_likelihood`` with the likelihood: the TensorFlow half of the model).

The true grade of task i is the interval of the thresholds that holds f_i, the grade a judge
without any noise would give: P(T_i ≤ k) = Φ((b_k − m_i) / sqrt(r + v_i)) under
q(f_i) = N(m_i, v_i) with ``readout_noise`` r = 0 (default). r = 1 reads out instead a new
judgment by a judge with neither task nor annotator noise but the unit probit every judge has —
the binary models' P(relevant) = Φ(m_i / sqrt(1 + v_i)) with thresholds — which, when the
thresholds are closer than the probit's unit, almost never makes a middle grade the most probable
one. Derivation: docs/gp.md.
"""

from __future__ import annotations

from typing import Annotated, Any, Self

import numpy as np
from scipy.special import ndtr as np_ndtr
from scipy.special import ndtri

from models.base import AggregationResult, ProgressCallback, no_progress
from models.data import AnnotationData
from models.dirichlet import Grouping
from models.gp.competence import grade_agreement
from models.gp.constants import DEFAULT_QUADRATURE_POINTS
from models.gp.model import (
    CrowdGP,
    MeanFunction,
)
from models.ordinal_scale import check_ordinal_scale, grade_columns
from models.params import (
    FullGPTasks,
    InducingPoints,
    InnerIterations,
    InnerIterations1,
    Iterations,
    MStepTasks,
    Prior,
    PriorOrZero,
    QuadraturePoints,
    Range,
    Seed,
    StepRate,
    Tolerance,
    validated,
)

# TensorFlow and GPflow load inside fit() (models.gp.ordinal_likelihood): importing this module,
# as the API does to validate parameters, must not load them.


class OrdinalGP(CrowdGP):
    """Multi-annotator GP with the ordered-probit likelihood ("ordinal-gp").

    With task features: f_i = g(x_i) + e_i as MAGP; without: the LK-style model (e_i only), said
    in ``result().info["fallback"]``. Annotator biases μ_j are learned by default (leniency on the
    scale is what most separates graders); task difficulty σ_i² is not estimated (σ_i² = 1).
    Outputs per task: P(T_i = k) over the grades, the expected grade and (via the service / CLI)
    P(T_i ≥ relevant_from); per annotator: bias μ_j (> 0: lenient), spread σ_j, noise variance.
    """

    method = "ordinal-gp"

    @validated
    def __init__(
        self,
        kernel: str = "rbf",
        feature_groups: str | None = None,
        mean_function: MeanFunction = "linear",
        per_task_deviation: bool = True,
        deviation_variance: Prior = 1.0,
        learn_deviation: bool = True,
        learn_annotator_bias: bool = True,
        spam_prior: Annotated[float, Range(0.0, 1.0, high_open=True)] = 0.1,
        spam_strength: Prior = 10.0,
        full_gp_max_tasks: FullGPTasks = 500,
        n_inducing: InducingPoints = 200,
        n_iter: Iterations = 50,
        tol: Tolerance = 1e-4,
        e_step_sweeps: InnerIterations1 = 20,
        e_step_rate: StepRate = 0.7,
        m_step_iterations: InnerIterations = 10,
        m_step_max_tasks: MStepTasks = 20000,
        n_quadrature: QuadraturePoints = DEFAULT_QUADRATURE_POINTS,
        random_state: Seed = None,
        readout_noise: PriorOrZero = 0.0,
        class_prior_by: Grouping = "collection",
    ) -> None:
        super().__init__(
            kernel=kernel, feature_groups=feature_groups, mean_function=mean_function,
            per_task_deviation=per_task_deviation, deviation_variance=deviation_variance,
            learn_deviation=learn_deviation, learn_task_noise=False, estimate_difficulty=False,
            learn_annotator_bias=learn_annotator_bias, learn_task_bias=False,
            full_gp_max_tasks=full_gp_max_tasks, n_inducing=n_inducing, n_iter=n_iter, tol=tol,
            e_step_sweeps=e_step_sweeps, e_step_rate=e_step_rate,
            m_step_iterations=m_step_iterations, m_step_max_tasks=m_step_max_tasks,
            n_quadrature=n_quadrature, random_state=random_state, class_prior_by=class_prior_by,
        )
        self.spam_prior = spam_prior
        self.spam_strength = spam_strength
        self.readout_noise = readout_noise

    def fit(self, data: AnnotationData, progress: ProgressCallback = no_progress) -> Self:
        from models.gp.ordinal_likelihood import OrderedProbit, OrdinalCrowdGPCore

        check_ordinal_scale(data.classes, data.label)
        rng = np.random.default_rng(self.random_state)
        self.fallback_ = None if data.features is not None else "lk"
        self.info_: dict[str, Any] = {}
        self.topics_: np.ndarray | None = None
        X = None
        if data.features is not None:
            X = self._standardise_fit(np.asarray(data.features, dtype=np.float64))
        k = data.n_classes
        likelihood = OrderedProbit(
            data.n_tasks, data.n_annotators, k,
            thresholds=_initial_thresholds(data.label, k, self.deviation_variance),
            learn_task_variance=False, learn_annotator_bias=self.learn_annotator_bias,
            n_quadrature=self.n_quadrature, spam_prior=self.spam_prior,
            spam_strength=self.spam_strength,
        )
        X, kernel, inducing, mean = self._gp_prior(X, data, rng)
        core = OrdinalCrowdGPCore(
            n_tasks=data.n_tasks, task=data.task, annotator=data.annotator, label=data.label,
            likelihood=likelihood, features=X, kernel=kernel, inducing=inducing,
            mean_function=mean, deviation=self.per_task_deviation or X is None,
            deviation_variance=self.deviation_variance,
        )
        trace = self._run_em(core, progress)
        m_f, v_f = core.q()
        self.core_ = core
        self.trace_ = trace
        self.posterior_mean_ = m_f.numpy()
        self.posterior_variance_ = v_f.numpy()
        self.thresholds_ = likelihood.thresholds().numpy()
        self.proba_ = grade_proba(self.posterior_mean_, self.posterior_variance_,
                                  self.thresholds_, self.readout_noise)
        self.task_variance_ = likelihood.task_variance.numpy()
        self.task_bias_ = likelihood.task_bias.numpy()
        self.annotator_variance_ = likelihood.annotator_variance.numpy()
        self.annotator_bias_ = likelihood.annotator_bias.numpy()
        self.spam_ = likelihood.spam.numpy()
        self.strategy_ = likelihood.strategy.numpy()
        self.deviation_variance_ = float(core.tau2.numpy())
        self.objective_history_ = list(trace.objective)
        self.info_.update(self._fit_info(core, trace, inducing))
        self.info_["thresholds"] = self.thresholds_.tolist()
        progress(1.0, f"{self.method}: {trace.n_iter} EM iterations, {trace.seconds:.1f} s")
        return self

    def result(self, data: AnnotationData) -> AggregationResult:
        sigma2 = self.annotator_variance_
        return AggregationResult(
            method=self.method,
            classes=data.classes,
            proba=self.proba_,
            task_columns={
                "posterior_mean": self.posterior_mean_,
                "posterior_variance": self.posterior_variance_,
                **grade_columns(self.proba_, data.classes),
            },
            annotator_columns={
                "noise_variance": sigma2,
                "competence": grade_agreement(
                    self.posterior_mean_, self.posterior_variance_, self.thresholds_,
                    bias=self.annotator_bias_, variance=sigma2, spam=self.spam_,
                    strategy=self.strategy_, task_variance=float(np.mean(self.task_variance_))),
                "bias": self.annotator_bias_,
                "spread": np.sqrt(sigma2),
                "spam": self.spam_,
            },
            objective_history=list(self.objective_history_),
            info=dict(self.info_),
        )

    def predict_proba(self, features: np.ndarray, topics: Any = None) -> np.ndarray:
        """(n, K) P(T = k) for new tasks from their features (and topics, as MAGP's)."""
        if self.fallback_ is not None:
            raise ValueError(
                f"{self.method} was fitted without features (fallback to LK): it cannot predict "
                "new tasks; attach task features and refit")
        X = np.atleast_2d(np.asarray(features, dtype=np.float64))
        X = np.where(np.isfinite(X), X, self.feature_mean_[None, :])
        X, offset_var = self._topic_inputs((X - self.feature_mean_) / self.feature_scale_, topics)
        mean, var = self.core_.predict_f(X)
        return grade_proba(mean, var + offset_var, self.thresholds_, self.readout_noise)


def grade_proba(mean: np.ndarray, var: np.ndarray, thresholds: np.ndarray,
                readout_noise: float = 0.0) -> np.ndarray:
    """(n, K) P(T_i = k) = Φ((b_k − m_i)/s_i) − Φ((b_{k−1} − m_i)/s_i), s_i² = r + v_i: the
    probability that f_i (r = 0), or a judgment with probit noise of variance r, falls in grade
    k's interval under q(f_i) = N(m_i, v_i)."""
    scale = np.sqrt(np.maximum(readout_noise + np.asarray(var, dtype=np.float64), 1e-12))
    z = (np.asarray(thresholds)[None, :] - mean[:, None]) / scale[:, None]
    cdf = np.concatenate([np.zeros((mean.shape[0], 1)), np_ndtr(z),
                          np.ones((mean.shape[0], 1))], axis=1)
    return np.clip(np.diff(cdf, axis=1), 0.0, 1.0)


def _initial_thresholds(label: np.ndarray, k: int, deviation_variance: float) -> np.ndarray:
    """b_k = c Φ⁻¹(share of judgments ≤ k), c² = 1 + σ_i² + σ_j² + τ² at their starting values
    (1 each): the thresholds that reproduce the label frequencies when f_i ~ N(0, τ²)."""
    share = np.cumsum(np.bincount(label, minlength=k))[:-1] / max(label.shape[0], 1)
    share = np.clip(share, 0.02, 0.98)
    b = np.sqrt(3.0 + deviation_variance) * ndtri(share)
    return b + np.concatenate([[0.0], np.cumsum(np.full(k - 2, 1e-3))])  # strictly ordered
