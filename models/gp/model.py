"""MAGP, GPMV and LK: the multi-annotator GP of the thesis (ch. 4) and its two ablations.

- MAGP (eqs. 4.9–4.18): f_i = g(x_i) + e_i with g ~ GP over task features and e_i ~ N(0, τ²)
  a per-task deviation (DESIGN §6); judgments through the Gaussian–Bernoulli likelihood
  P(y_a = 1 | f_i) = Φ((f_i + μ_i + μ_j) / sqrt(1 + σ_i² + σ_j²)). Fitted by variational EM
  (Algorithm 9, ``models.gp.training``): objective ELBO + log prior, Gamma priors on variances.
- GPMV (§4.5.3): GP classification of the majority-vote labels (probit, no annotator or task noise).
- LK (§4.5.3): no GP; f_i = e_i independent, the likelihood part of MAGP only.

P(relevant)_i = P(f_i > 0) = Φ(m_i / sqrt(v_i)) with q(f_i) = N(m_i, v_i): the true label is
sign(f_i) (docs/gp.md, "The read-out of P(relevant)"); ``readout_noise`` r reads
Φ(m_i / sqrt(r + v_i)) instead, r = 1 the noise-free judge of eq. 4.12. μ_i is a judging bias,
not relevance: not added. ``label_layer="discrete"`` (MAGP, LK) reads P(relevant) as the
posterior of a two-valued label y_i = ±1 with f_i | y_i ~ N(c y_i, s²) and the class prior of
the fit's cavity (``models.gp.truth``; docs/gp.md, "The discrete truth layer"). Without
features MAGP and GPMV fit LK and say so in ``result().info["fallback"]``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal, Self

import numpy as np
from scipy.special import ndtr

from models.base import AggregationResult, Aggregator, ProgressCallback, no_progress
from models.data import UNKNOWN, AnnotationData
from models.dirichlet import Grouping
from models.gp.competence import grade_agreement
from models.gp.constants import DEFAULT_QUADRATURE_POINTS, M_STEP_MAX_TASKS
from models.gp.truth import regression_prior, topic_columns
from models.params import (
    FullGPTasks,
    InducingPoints,
    InnerIterations,
    InnerIterations1,
    Iterations,
    MStepTasks,
    OpenProbability,
    Prior,
    PriorOrZero,
    QuadraturePoints,
    Seed,
    StepRate,
    Tolerance,
    validated,
)

# TensorFlow and GPflow are imported inside the functions that use them: importing this module
# (to validate a method's parameters in the API process) must not load TensorFlow.
if TYPE_CHECKING:
    import gpflow

    from models.gp.likelihood import GaussianBernoulli
    from models.gp.training import CrowdGPCore, EMTrace

KERNELS = ("rbf", "linear")
MeanFunction = Literal["zero", "constant", "linear"]
LabelLayer = Literal["gaussian", "discrete", "discrete-regression"]
DISCRETE_LAYERS = ("discrete", "discrete-regression")
# The regression class prior's Gaussian posterior of the weights (docs/gp.md, "The weights'
# posterior"): the Laplace approximation or the posterior's own mean and covariance.
WeightPosterior = Literal["laplace", "moments"]
# The evaluation draws of those weights (docs/gp.md, "Drawing the weights"): MCMC draws of their
# posterior, or the Gaussian (``weight_posterior``'s) the loadings describe.
WeightDraws = Literal["mcmc", "gaussian"]
# The weights' prior sd (docs/gp.md, "The weights' prior scale by the evidence"): fixed at 1,
# or estimated by the layer's marginal likelihood (type-II maximum likelihood), one sd shared by
# the weights or one per weight; or (``"hierarchical"``, the default since 2026-11-28; docs/gp.md,
# "A scale per weight, integrated over") one per weight under a half-normal(1), integrated out in
# the MCMC draws (P(relevant) keeps N(0, 1)'s Laplace Gaussian).
WeightPrior = Literal["fixed", "evidence", "evidence-ard", "hierarchical"]


class CrowdGP(Aggregator):
    """Shared fitting, outputs and prediction; subclasses choose the data and the likelihood."""

    method = ""
    uses_features = True

    @validated
    def __init__(
        self,
        kernel: str = "rbf",
        feature_groups: str | None = None,
        mean_function: MeanFunction = "linear",
        per_task_deviation: bool = True,
        deviation_variance: Prior = 1.0,
        learn_deviation: bool = True,
        learn_task_noise: bool = False,
        estimate_difficulty: bool = True,
        learn_annotator_bias: bool | None = None,
        learn_task_bias: bool = False,
        full_gp_max_tasks: FullGPTasks = 500,
        n_inducing: InducingPoints = 200,
        n_iter: Iterations = 50,
        tol: Tolerance = 1e-4,
        e_step_sweeps: InnerIterations1 = 20,
        e_step_rate: StepRate = 1.0,
        m_step_iterations: InnerIterations = 10,
        m_step_max_tasks: MStepTasks = M_STEP_MAX_TASKS,
        n_quadrature: QuadraturePoints = DEFAULT_QUADRATURE_POINTS,
        random_state: Seed = None,
        asymmetric_noise: bool = False,
        spam_prior: OpenProbability = 0.1,
        spam_strength: Prior = 10.0,
        use_gold: bool = False,
        class_prior_by: Grouping = "collection",
        readout_noise: PriorOrZero = 0.0,
        label_layer: LabelLayer = "discrete-regression",
        weight_posterior: WeightPosterior = "laplace",
        weight_draws: WeightDraws = "mcmc",
        weight_prior: WeightPrior = "hierarchical",
    ) -> None:
        self.class_prior_by = class_prior_by
        self.weight_posterior = weight_posterior
        self.weight_draws = weight_draws
        self.weight_prior = weight_prior
        self.readout_noise = readout_noise
        self.label_layer = label_layer
        if label_layer in DISCRETE_LAYERS and readout_noise > 0:
            raise ValueError("label_layer 'discrete' reads the true label: it needs "
                             "readout_noise 0")
        if label_layer in DISCRETE_LAYERS and asymmetric_noise:
            raise ValueError("label_layer 'discrete' is built for the symmetric likelihood: "
                             "it cannot be combined with asymmetric_noise")
        self.kernel = kernel
        self.feature_groups = feature_groups
        self.mean_function = mean_function
        self.per_task_deviation = per_task_deviation
        self.deviation_variance = deviation_variance
        self.learn_deviation = learn_deviation
        self.learn_task_noise = learn_task_noise
        self.estimate_difficulty = estimate_difficulty
        self.learn_annotator_bias = learn_annotator_bias
        self.learn_task_bias = learn_task_bias
        self.full_gp_max_tasks = full_gp_max_tasks
        self.n_inducing = n_inducing
        self.n_iter = n_iter
        self.tol = tol
        self.e_step_sweeps = e_step_sweeps
        self.e_step_rate = e_step_rate
        self.m_step_iterations = m_step_iterations
        self.m_step_max_tasks = m_step_max_tasks
        self.n_quadrature = n_quadrature
        self.random_state = random_state
        self.asymmetric_noise = asymmetric_noise
        self.spam_prior = spam_prior
        self.spam_strength = spam_strength
        self.use_gold = use_gold
        _check_kernel(kernel, feature_groups)

    # -- fitting ------------------------------------------------------------------------------
    def fit(self, data: AnnotationData, progress: ProgressCallback = no_progress) -> Self:
        from models.gp.training import CrowdGPCore, fit_task_noise

        if not data.is_binary:
            raise ValueError(f"{self.method} needs binary labels: binarise with relevant_from")
        rng = np.random.default_rng(self.random_state)
        self.fallback_ = None
        features = data.features if self.uses_features else None
        if self.uses_features and features is None:
            self.fallback_ = "lk"
        self.info_: dict[str, Any] = {}
        self.topics_: np.ndarray | None = None
        X = None
        if features is not None:
            X = self._standardise_fit(np.asarray(features, dtype=np.float64))
        task, annotator, label, n_annotators = self._judgments(data, rng)
        fallback = self.fallback_ is not None
        likelihood = self._likelihood(data.n_tasks, n_annotators, fallback)
        X, kernel, inducing, mean = self._gp_prior(X, data, rng)
        deviation = self.per_task_deviation or X is None
        core_class = CrowdGPCore
        if self.asymmetric_noise:
            from models.gp.ordinal_likelihood import OrdinalCrowdGPCore as core_class
        gold_task, gold_label = self._gold(data)
        core = core_class(
            n_tasks=data.n_tasks, task=task, annotator=annotator, label=label,
            likelihood=likelihood, features=X, kernel=kernel, inducing=inducing,
            mean_function=mean, deviation=deviation,
            deviation_variance=self.deviation_variance,
            gold_task=gold_task, gold_label=gold_label,
        )
        trace = self._run_em(core, progress)
        if self.estimate_difficulty and not self.learn_task_noise and self._models_noise():
            fit_task_noise(core)
        self._store_fit(core, trace, likelihood, gold_task, gold_label, inducing)
        progress(1.0, f"{self.method}: {trace.n_iter} EM iterations, {trace.seconds:.1f} s")
        return self

    def _run_em(self, core: CrowdGPCore, progress: ProgressCallback) -> EMTrace:
        """Variational EM on ``core`` with this model's settings (the deviation variance
        fixed unless ``learn_deviation``)."""
        import gpflow

        from models.gp.training import EMSettings, run_em

        if not self.learn_deviation:
            gpflow.set_trainable(core.deviation_variance, False)
        settings = EMSettings(
            n_iter=self.n_iter, tol=self.tol, e_sweeps=self.e_step_sweeps, e_rate=self.e_step_rate,
            m_iter=self.m_step_iterations, m_max_tasks=self.m_step_max_tasks,
            seed=self.random_state,
        )
        return run_em(core, settings, progress)

    def _gp_prior(self, X: np.ndarray | None, data: AnnotationData, rng: np.random.Generator
                  ) -> tuple[np.ndarray | None, Any, Any, Any]:
        """(features, kernel, inducing points, mean function) of the GP over tasks: over the
        standardised features ``X`` (with per-topic offsets when the class prior is per topic),
        per-topic intercepts alone without features, or none (LK)."""
        kernel = inducing = mean = None
        if X is not None:
            kernel = build_kernel(self.kernel, X.shape[1], self.feature_groups)
            if data.n_tasks > self.full_gp_max_tasks:
                from models.gp.training import kmeans_inducing

                inducing = kmeans_inducing(X, self.n_inducing, rng)
            mean = build_mean_function(self.mean_function, X.shape[1])
            if self.class_prior_by == "topic":  # one offset per topic beside the features
                X, mean, inducing = self._topic_offsets(X, mean, inducing, data.topic_ids)
        elif self.class_prior_by == "topic":  # LK's per-topic intercepts, without features
            X, kernel, inducing = topic_intercepts(data.topic_ids)
            self.info_["class_prior_by"] = "topic"
        return X, kernel, inducing, mean

    def _store_fit(self, core: CrowdGPCore, trace: EMTrace, likelihood: Any,
                   gold_task: np.ndarray | None, gold_label: np.ndarray | None,
                   inducing: Any) -> None:
        """The fitted attributes: posterior of f, P(relevant) (gold clamped), the noise and
        bias parameters, the objective history and the fit's info."""
        m_f, v_f = core.q()
        self.core_ = core
        self.trace_: EMTrace = trace
        self.posterior_mean_ = m_f.numpy()
        self.posterior_variance_ = v_f.numpy()
        p = ndtr(self.posterior_mean_ / self._readout_scale(self.posterior_variance_))
        self.layer_loadings_: np.ndarray | None = None
        self.layer_z_: np.ndarray | None = None
        self.layer_draws_: np.ndarray | None = None
        if getattr(self, "label_layer", "gaussian") in DISCRETE_LAYERS and self._models_noise():
            layered = self._discrete_layer(core)
            p = p if layered is None else layered
        if gold_task is not None:
            p[gold_task] = gold_label  # the event P(relevant) is about, observed
            self.info_["gold_clamped"] = int(gold_task.shape[0])
        self.proba_ = np.column_stack([1.0 - p, p])
        self.spam_ = likelihood.spam.numpy() if self.asymmetric_noise else None
        self.spam_relevant_ = likelihood.strategy.numpy()[:, 1] if self.asymmetric_noise else None
        self.task_variance_ = likelihood.task_variance.numpy()
        self.task_bias_ = likelihood.task_bias.numpy()
        self.annotator_variance_ = likelihood.annotator_variance.numpy()
        self.annotator_bias_ = likelihood.annotator_bias.numpy()
        self.deviation_variance_ = float(core.tau2.numpy())
        self.objective_history_ = list(trace.objective)
        self.info_.update(self._fit_info(core, trace, inducing))

    def _models_noise(self) -> bool:
        return True

    def _discrete_layer(self, core: CrowdGPCore) -> np.ndarray | None:
        """P(relevant) from the discrete truth layer (``models.gp.truth``; docs/gp.md, "The
        discrete truth layer"): the posterior of y_i = ±1 with f_i | y_i ~ N(c y_i, s²) and the
        class prior Φ(m_c / √v_c) of the fit's cavity (``"discrete"``) or a probit regression on
        the features (``"discrete-regression"``, MAGP's default; without features, as LK or
        MAGP's fallback, None: the Gaussian read-out); its parameters go to ``info``."""
        from models.gp.truth import (
            fit_layer,
            fit_regression_prior,
            layer_inputs,
            whitened_weight_draws,
        )

        d = getattr(self, "feature_mean_", np.zeros(0)).shape[0]
        if self.label_layer == "discrete-regression" and (core.X is None or d == 0
                                                          or self.fallback_ is not None):
            return None  # nothing to regress on (LK, MAGP's fallback): the Gaussian read-out
        judgments, prior = layer_inputs(core)
        layer = fit_layer(judgments, prior)
        info: dict[str, Any] = {"class_prior": "cavity"}
        if self.label_layer == "discrete-regression":
            features = core.X.numpy()[:, :d]  # the standardised features (not a topic code)
            if getattr(self, "topics_", None) is not None:  # class_prior_by="topic": a weight
                features = np.column_stack([features, topic_columns(  # per topic, prior N(0, 1)
                    core.X.numpy()[:, d], self.topics_.shape[0])])
            weight_prior = getattr(self, "weight_prior", "fixed")  # "fixed": an older pickle
            # "hierarchical" reads the prior in the draws only: P(relevant) keeps N(0, 1)'s
            # Laplace Gaussian (E w² is 1 under both)
            layer, weights, covariance, loadings = fit_regression_prior(
                judgments, features, layer,
                prior_sd=None if weight_prior.startswith("evidence") else 1.0,
                per_weight=weight_prior == "evidence-ard",
                moments=getattr(self, "weight_posterior", "laplace") == "moments")
            q2 = np.sum(loadings * loadings, axis=1)
            self.layer_loadings_ = loadings
            self.layer_regression_ = (weights, covariance)  # a new task's prior (predict_proba)
            self.layer_z_ = (np.column_stack([features, np.ones(features.shape[0])])
                             @ weights) / np.sqrt(1.0 + q2)
            info["class_prior"] = "regression"
            info["weight_posterior"] = getattr(self, "weight_posterior", "laplace")
            info["weights"] = weights[:-1].tolist()
            info["intercept"] = float(weights[-1])
            info["weight_sd"] = np.sqrt(np.diag(covariance))[:-1].tolist()
            if weight_prior.startswith("evidence"):
                info["weight_prior_sd"] = np.ravel(layer.prior_sd).tolist()
            if getattr(self, "weight_draws", "gaussian") == "mcmc" and layer.log_z is not None:
                self.layer_draws_, rate = whitened_weight_draws(
                    np.column_stack([features, np.ones(features.shape[0])]), layer.log_z,
                    weights, covariance, layer.prior_sd,
                    hierarchical=weight_prior == "hierarchical")
                info["weight_draws"] = {"draws": int(self.layer_draws_.shape[0]),
                                        "acceptance": rate}
                if weight_prior == "hierarchical":
                    info["weight_draws"]["prior"] = "hierarchical"
        self.info_["truth_layer"] = {"separation": layer.separation,
                                     "deviation": layer.deviation,
                                     "log_likelihood": layer.log_likelihood, **info}
        return layer.p_relevant

    def _topic_offsets(self, X: np.ndarray, mean: Any, inducing: np.ndarray | None,
                       topic_ids: np.ndarray) -> tuple[np.ndarray, Any, np.ndarray | None]:
        """With features and ``class_prior_by="topic"``: the mean gets one offset per topic
        (``models.gp.topic_mean``) and the inputs the topic's code as a last column, which the
        kernels do not see. A single topic keeps the collection's mean (the same fit)."""
        topics = np.unique(np.asarray(topic_ids, dtype=object).astype(str))
        if topics.shape[0] < 2:
            return X, mean, inducing
        from models.gp.topic_mean import TopicMean
        from models.gp.topics import topic_codes

        self.topics_ = topics
        code, _ = topic_codes(topic_ids, topics)
        X = np.column_stack([X, code])
        if inducing is not None:  # the kernels ignore the column; any code will do
            inducing = np.column_stack([inducing, np.zeros(inducing.shape[0])])
        self.info_["class_prior_by"] = "topic"
        return X, TopicMean(mean, X.shape[1] - 1, topics.shape[0]), inducing

    def _topic_inputs(self, X: np.ndarray, topic_ids: Any) -> tuple[np.ndarray, np.ndarray]:
        """New tasks' standardised features with their topic codes when the fit has topic
        offsets, and the prior variance each task's offset adds (unseen topic, or none given)."""
        topics = getattr(self, "topics_", None)
        if topics is None:
            return X, np.zeros(X.shape[0])
        from models.gp.topics import TOPIC_PRIOR_VARIANCE, row_codes

        code, seen = row_codes(topic_ids, topics, X.shape[0])
        return np.column_stack([X, code]), np.where(seen, 0.0, TOPIC_PRIOR_VARIANCE)

    def _gold(self, data: AnnotationData) -> tuple[np.ndarray | None, np.ndarray | None]:
        """(task index, 0/1 label) of the gold tasks to clamp, or (None, None)."""
        if not self.use_gold or data.gold is None or not (data.gold != UNKNOWN).any():
            return None, None
        task = np.flatnonzero(data.gold != UNKNOWN)
        return task, data.gold[task].astype(np.float64)

    def _judgments(self, data: AnnotationData, rng: np.random.Generator
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        return data.task, data.annotator, data.label, data.n_annotators

    def _likelihood(self, n_tasks: int, n_annotators: int, fallback: bool) -> GaussianBernoulli:
        from models.gp.likelihood import GaussianBernoulli

        noise = dict(
            learn_task_variance=self.learn_task_noise,
            learn_annotator_bias=self._learns_annotator_bias(fallback),
            learn_task_bias=self.learn_task_bias, n_quadrature=self.n_quadrature,
        )
        if not self.asymmetric_noise:
            return GaussianBernoulli(n_tasks, n_annotators, **noise)
        # The binary case of the ordered probit (one threshold, fixed at 0: the same Φ((f + μ) /
        # c)) with its spam part: ε_j and the grade ξ_j[y] a spamming annotator gives.
        import gpflow

        from models.gp.ordinal_likelihood import OrderedProbit

        likelihood = OrderedProbit(
            n_tasks, n_annotators, 2, thresholds=np.zeros(1), spam_prior=self.spam_prior,
            spam_strength=self.spam_strength, **noise,
        )
        gpflow.set_trainable(likelihood.threshold_first, False)
        return likelihood

    def _learns_annotator_bias(self, fallback: bool) -> bool:
        """``learn_annotator_bias`` as set, or by default (None): learned where nothing but the
        judgments is fitted (LK, and MAGP's and GPMV's LK fallback: that fit is LK, so it takes
        LK's default), fixed at 0 next to a GP over features (MAGP's thesis setting: there the
        biases slow EM down for no accuracy; docs/gp.md, "Biases")."""
        if self.learn_annotator_bias is not None:
            return self.learn_annotator_bias
        return fallback or not self.uses_features

    def _standardise_fit(self, X: np.ndarray) -> np.ndarray:
        missing = ~np.isfinite(X)
        self.feature_mean_ = np.nanmean(np.where(missing, np.nan, X), axis=0)
        self.feature_mean_ = np.where(np.isfinite(self.feature_mean_), self.feature_mean_, 0.0)
        X = np.where(missing, self.feature_mean_[None, :], X)
        if missing.any():
            self.info_["features_imputed"] = int(missing.any(axis=1).sum())
        sd = X.std(axis=0)
        self.feature_scale_ = np.where(sd > 0, sd, 1.0)
        return (X - self.feature_mean_) / self.feature_scale_

    def _fit_info(self, core: CrowdGPCore, trace: EMTrace, inducing: np.ndarray | None
                  ) -> dict[str, Any]:
        info: dict[str, Any] = {
            "n_iter": trace.n_iter,
            "converged": trace.converged,
            "e_step_sweeps": trace.e_sweeps,
            "seconds": round(trace.seconds, 3),
            "deviation_variance": self.deviation_variance_,
        }
        if self.fallback_ is not None:
            info["fallback"] = self.fallback_
            info["fallback_reason"] = "no task features: fitted LK (no GP prior)"
        intercepts = (self.info_.get("class_prior_by") == "topic"
                      and getattr(self, "topics_", None) is None)
        if core.kernel is not None and intercepts:  # LK's topic intercepts, no features
            info["topic_variance"] = float(core.kernel.variance.numpy())
        elif core.kernel is not None:
            info["gp"] = "full" if inducing is None else f"sparse ({inducing.shape[0]} inducing)"
            info["kernel"] = self.kernel
            info["kernel_parameters"] = _kernel_parameters(core.kernel)
            if getattr(self, "topics_", None) is not None:  # offsets beside the features
                offsets = core.mean_function.offsets.numpy()
                info["topic_offsets"] = {"n_topics": int(offsets.shape[0]),
                                         "sd": float(offsets.std()),
                                         "min": float(offsets.min()),
                                         "max": float(offsets.max())}
        return info

    # -- outputs ------------------------------------------------------------------------------
    def _readout_scale(self, var: np.ndarray) -> np.ndarray:
        """sqrt(r + v): P(relevant) = Φ(m / sqrt(r + v)) under q(f) = N(m, v) (docs/gp.md,
        "Outputs"); r = 0 reads the true label sign(f), r = 1 a noise-free judge (eq. 4.12)."""
        return np.sqrt(np.maximum(self.readout_noise + np.asarray(var, dtype=np.float64), 1e-12))

    def result(self, data: AnnotationData) -> AggregationResult:
        sigma2 = self.annotator_variance_
        eps = getattr(self, "spam_", None)
        xi = getattr(self, "spam_relevant_", None)
        spam, relevant = (eps, xi) if eps is not None else (np.zeros_like(sigma2),
                                                           np.full_like(sigma2, 0.5))
        # The chance that a judgment is the task's label as P(relevant) reads it (sign(f), or
        # with probit noise r around f): bias, noise and spam lower it (docs/gp.md, "Outputs").
        competence = grade_agreement(
            self.posterior_mean_, self.posterior_variance_, np.zeros(1), bias=self.annotator_bias_,
            variance=sigma2, spam=spam, strategy=np.column_stack([1.0 - relevant, relevant]),
            task_variance=float(np.mean(self.task_variance_)), readout_noise=self.readout_noise)
        annotators = {"noise_variance": sigma2, "competence": competence,
                      "bias": self.annotator_bias_}
        if eps is not None:
            annotators.update({
                "spam": eps,
                # P(says relevant | a clear-cut relevant task) and P(says not | a clear-cut
                # non-relevant one): the two error floors the spam part sets apart.
                "sensitivity": 1.0 - eps * (1.0 - xi),
                "specificity": 1.0 - eps * xi,
            })
        return AggregationResult(
            method=self.method,
            classes=data.classes,
            proba=self.proba_,
            task_columns={
                "p_relevant": self.proba_[:, 1],
                "posterior_mean": self.posterior_mean_,
                "posterior_variance": self.posterior_variance_,
                "difficulty": self.task_variance_,
                "bias": self.task_bias_,
            },
            annotator_columns=annotators,
            objective_history=list(self.objective_history_),
            info=dict(self.info_),
        )

    def predict_proba(self, features: np.ndarray, topics: Any = None) -> np.ndarray:
        """(n, 2) P(not relevant), P(relevant) for new tasks from their features (and, for a fit
        with ``class_prior_by="topic"``, their topics: an unseen or missing topic gets the prior
        offset)."""
        if getattr(self, "fallback_", None) is not None:
            raise ValueError(
                f"{self.method} was fitted without features (fallback to LK): it cannot predict "
                "new tasks; attach task features and refit"
            )
        if not hasattr(self, "core_"):
            raise ValueError(f"{self.method} is not fitted")
        X = np.atleast_2d(np.asarray(features, dtype=np.float64))
        if X.shape[1] != self.feature_mean_.shape[0]:
            raise ValueError(
                f"expected {self.feature_mean_.shape[0]} features per task, got {X.shape[1]}"
            )
        X = np.where(np.isfinite(X), X, self.feature_mean_[None, :])
        standard = (X - self.feature_mean_) / self.feature_scale_
        regression = getattr(self, "layer_regression_", None)
        if regression is not None:
            # The discrete-regression layer: a task nobody judged has only its class prior,
            # the regression's predictive probability (as every judged task had before its
            # judgments), so unjudged and judged tasks are read by one definition.
            p = regression_prior(standard, *regression, topics, getattr(self, "topics_", None))
            return np.column_stack([1.0 - p, p])
        X, offset_var = self._topic_inputs(standard, topics)
        mean, var = self.core_.predict_f(X)
        p = ndtr(mean / self._readout_scale(var + offset_var))
        return np.column_stack([1.0 - p, p])


class MAGP(CrowdGP):
    """Multi-annotator GP classification (thesis §4.4) with a per-task deviation from g(x)."""

    method = "magp"


class LK(CrowdGP):
    """The likelihood part of MAGP alone: f_i ~ N(0, τ²) independent, no features (§4.5.3).

    Unlike the thesis (and MAGP's default), LK learns annotator biases μ_j by default: on real
    judgments that is most of what separates workers (RF10: 0.689 against 0.626 with μ_j = 0).
    MAGP keeps them fixed by default because next to a GP mean function they slow EM down
    (20,000 tasks: 17 EM iterations instead of 4) for no accuracy on data without biases.

    ``class_prior_by="topic"`` gives each topic its own intercept, f_i = g_t(i) + e_i with
    g_t ~ N(0, s²) and s² learned (``topic_intercepts``): the GP analogue of IBCC's per-topic class
    prior, for collections whose topics differ in how many documents are relevant.
    """

    method = "lk"
    uses_features = False

    @validated
    def __init__(
        self,
        deviation_variance: Prior = 1.0,
        learn_deviation: bool = True,
        learn_task_noise: bool = False,
        estimate_difficulty: bool = True,
        learn_annotator_bias: bool = True,
        learn_task_bias: bool = False,
        n_iter: Iterations = 50,
        tol: Tolerance = 1e-4,
        e_step_sweeps: InnerIterations1 = 20,
        e_step_rate: StepRate = 1.0,
        m_step_iterations: InnerIterations = 10,
        n_quadrature: QuadraturePoints = DEFAULT_QUADRATURE_POINTS,
        random_state: Seed = None,
        asymmetric_noise: bool = False,
        spam_prior: OpenProbability = 0.1,
        spam_strength: Prior = 10.0,
        use_gold: bool = False,
        class_prior_by: Grouping = "collection",
        readout_noise: PriorOrZero = 0.0,
        label_layer: LabelLayer = "gaussian",
    ) -> None:
        super().__init__(
            label_layer=label_layer,
            deviation_variance=deviation_variance, learn_deviation=learn_deviation,
            learn_task_noise=learn_task_noise, estimate_difficulty=estimate_difficulty,
            learn_annotator_bias=learn_annotator_bias, learn_task_bias=learn_task_bias,
            n_iter=n_iter, tol=tol,
            e_step_sweeps=e_step_sweeps, e_step_rate=e_step_rate,
            m_step_iterations=m_step_iterations, n_quadrature=n_quadrature,
            random_state=random_state, asymmetric_noise=asymmetric_noise,
            spam_prior=spam_prior, spam_strength=spam_strength, use_gold=use_gold,
            class_prior_by=class_prior_by, readout_noise=readout_noise,
        )

    def predict_proba(self, features: np.ndarray, topics: Any = None) -> np.ndarray:
        raise ValueError("lk has no GP over features: it cannot predict new tasks")


class GPMV(CrowdGP):
    """GP classification of majority-vote labels (thesis §4.5.3): one probit label per task.

    Ties carry no label (the GP fills them in from feature neighbours). Task noise and annotator
    noise are not modelled; the per-task deviation e_i is kept (``per_task_deviation``).
    """

    method = "gpmv"

    @validated
    def __init__(
        self,
        kernel: str = "rbf",
        feature_groups: str | None = None,
        mean_function: MeanFunction = "linear",
        per_task_deviation: bool = True,
        full_gp_max_tasks: FullGPTasks = 500,
        n_inducing: InducingPoints = 200,
        n_iter: Iterations = 50,
        tol: Tolerance = 1e-4,
        e_step_sweeps: InnerIterations1 = 20,
        e_step_rate: StepRate = 1.0,
        m_step_iterations: InnerIterations = 10,
        m_step_max_tasks: MStepTasks = M_STEP_MAX_TASKS,
        n_quadrature: QuadraturePoints = DEFAULT_QUADRATURE_POINTS,
        random_state: Seed = None,
        readout_noise: PriorOrZero = 0.0,
    ) -> None:
        super().__init__(
            kernel=kernel, feature_groups=feature_groups, mean_function=mean_function,
            per_task_deviation=per_task_deviation, learn_task_noise=False,
            readout_noise=readout_noise,
            full_gp_max_tasks=full_gp_max_tasks, n_inducing=n_inducing, n_iter=n_iter, tol=tol,
            e_step_sweeps=e_step_sweeps, e_step_rate=e_step_rate,
            m_step_iterations=m_step_iterations, m_step_max_tasks=m_step_max_tasks,
            n_quadrature=n_quadrature, random_state=random_state,
        )

    def _judgments(self, data: AnnotationData, rng: np.random.Generator
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        if data.features is None:  # fallback: LK on the judgments themselves
            return super()._judgments(data, rng)
        counts = data.counts()
        decided = counts[:, 0] != counts[:, 1]
        task = np.flatnonzero(decided)
        label = (counts[task, 1] > counts[task, 0]).astype(np.int64)
        self.info_["majority_ties"] = int((~decided & (counts.sum(axis=1) > 0)).sum())
        return task, np.zeros_like(task), label, 1

    def _models_noise(self) -> bool:
        return self.fallback_ is not None

    def _likelihood(self, n_tasks: int, n_annotators: int, fallback: bool) -> GaussianBernoulli:
        if fallback:
            return super()._likelihood(n_tasks, n_annotators, fallback)
        import gpflow

        from models.gp.likelihood import GaussianBernoulli

        lik = GaussianBernoulli(
            n_tasks, n_annotators, task_variance=1e-5, annotator_variance=1e-5,
            learn_task_variance=False, n_quadrature=self.n_quadrature,
        )
        gpflow.set_trainable(lik.annotator_variance, False)
        return lik

    def result(self, data: AnnotationData) -> AggregationResult:
        res = super().result(data)
        if self.fallback_ is None:
            # GPMV models neither task noise nor annotators: report agreement with its labels.
            agrees = (data.label == self.labels_[data.task]).astype(np.float64)
            n = data.judgments_per_annotator().astype(np.float64)
            share = np.bincount(data.annotator, weights=agrees, minlength=data.n_annotators)
            res.annotator_columns = {"agreement": np.divide(share, n, out=np.zeros_like(share),
                                                            where=n > 0)}
            res.task_columns["difficulty"] = np.zeros(data.n_tasks)
        return res


# -- topic intercepts ---------------------------------------------------------------------------
def topic_intercepts(topic_ids: np.ndarray
                     ) -> tuple[np.ndarray, gpflow.kernels.Kernel, np.ndarray]:
    """LK's prior with one intercept per topic: f_i = g_t(i) + e_i, g_t ~ N(0, s²) independent.

    As a GP: one-hot topic features x_i and the linear kernel k(x, x') = s² x·x' (s² when two
    tasks share a topic, 0 otherwise), with the topics' one-hot rows (the identity) as inducing
    inputs, which is exact (every task's x_i is an inducing input, so the Nyström term is 0).
    s² carries the kernels' Gamma(1, 1) prior and is learned in the M step with τ² (type-II ML):
    topics whose documents are mostly relevant (or not) pull their tasks' f together.
    Returns (features (n_tasks, n_topics), kernel, inducing inputs (n_topics, n_topics)).
    """
    import gpflow

    _, topic = np.unique(topic_ids, return_inverse=True)
    n_topics = int(topic.max()) + 1 if topic.size else 1
    X = np.zeros((topic.shape[0], n_topics))
    X[np.arange(topic.shape[0]), topic] = 1.0
    kernel = gpflow.kernels.Linear(variance=1.0)
    kernel.variance.prior = _gamma()
    return X, kernel, np.eye(n_topics)


# -- kernels ------------------------------------------------------------------------------------
def _parse_kernel(kind: str) -> list[str]:
    parts = [p.strip() for p in kind.split("+")]
    if not parts or any(p not in KERNELS for p in parts):
        raise ValueError(f"kernel must be 'rbf', 'linear' or a sum like 'rbf+linear', got {kind!r}")
    return parts


def _check_kernel(kernel: str, feature_groups: str | None) -> None:
    """ValueError unless ``kernel`` is a kernel or a sum of them, one per feature group when
    ``feature_groups`` (well formed) gives several."""
    parts = _parse_kernel(kernel)
    if feature_groups:
        groups = _check_groups(feature_groups)
        if len(parts) > 1 and len(parts) != groups:
            raise ValueError(f"kernel {kernel!r} has {len(parts)} parts for {groups} feature "
                             "groups: give one kernel per group, or a single kernel")


_GROUP = re.compile(r"\s*(\d*)\s*:\s*(\d*)\s*")


def _check_groups(groups: str) -> int:
    """The number of groups in ``feature_groups`` ('0:6;6:390': column ranges as Python slices,
    ';'-separated, start or stop may be left out); ValueError naming a malformed range. Whether
    the columns exist is known only from the data (``_parse_groups``)."""
    chunks = groups.split(";")
    for chunk in chunks:
        match = _GROUP.fullmatch(chunk)
        if match is None:
            raise ValueError(f"feature_groups must be column ranges like '0:6;6:390', got "
                             f"{chunk!r} in {groups!r}")
        start, stop = match.groups()
        if start and stop and int(start) >= int(stop):
            raise ValueError(f"feature group {chunk!r} is empty: its start must be below its stop")
    return len(chunks)


def _parse_groups(groups: str, d: int) -> list[list[int]]:
    """'0:6;6:390' -> [[0..5], [6..389]]: feature column ranges (Python slices), ';'-separated."""
    out = []
    for chunk in groups.split(";"):
        start, _, stop = chunk.strip().partition(":")
        lo, hi = int(start or 0), int(stop or d)
        if not 0 <= lo < hi <= d:
            raise ValueError(f"feature group {chunk!r} is outside 0..{d}")
        out.append(list(range(lo, hi)))
    return out


def build_kernel(kind: str, d: int, feature_groups: str | None = None) -> gpflow.kernels.Kernel:
    """Sum of kernels over feature groups (thesis §4.4.5: linear for embeddings, RBF otherwise).

    Without groups each kernel of the sum sees all features; with groups, either one kernel per
    group (same count) or the single kernel repeated on every group.
    """
    import gpflow

    parts = _parse_kernel(kind)
    if feature_groups:
        groups = _parse_groups(feature_groups, d)
        if len(parts) == 1:
            parts = parts * len(groups)
        if len(parts) != len(groups):
            raise ValueError("give one kernel per feature group, e.g. kernel='rbf+linear' for 2")
    else:
        groups = [list(range(d))] * len(parts)
    kernels = []
    for part, dims in zip(parts, groups, strict=True):
        kernels.append(_one_kernel(part, dims))
    return kernels[0] if len(kernels) == 1 else gpflow.kernels.Sum(kernels)


def _one_kernel(part: str, dims: list[int]) -> gpflow.kernels.Kernel:
    import gpflow

    gamma = _gamma()
    if part == "rbf":
        lengthscales = np.ones(len(dims)) if len(dims) <= 10 else np.sqrt(len(dims))
        k = gpflow.kernels.SquaredExponential(lengthscales=lengthscales, active_dims=dims)
    else:
        k = gpflow.kernels.Linear(variance=1.0 / len(dims), active_dims=dims)
    k.variance.prior = gamma
    return k


def _kernel_parameters(kernel: gpflow.kernels.Kernel) -> dict[str, list[float]]:
    import gpflow

    return {
        name.lstrip("."): np.ravel(value.numpy()).tolist()
        for name, value in gpflow.utilities.parameter_dict(kernel).items()
    }


def build_mean_function(kind: str, d: int) -> gpflow.functions.MeanFunction | None:
    import gpflow

    if kind == "zero":
        return None
    if kind == "constant":
        return gpflow.functions.Constant()
    mean = gpflow.functions.Linear(A=np.zeros((d, 1)), b=np.zeros(1))
    # Normal(0, 1) on the weights: without a prior the mean's scale can grow until f is the
    # features' linear score alone (judgments ignored), a local optimum seen at β = 3.
    mean.A.prior = _normal()
    mean.b.prior = _normal()
    return mean


def _normal() -> Any:
    import gpflow
    import tensorflow as tf
    import tensorflow_probability as tfp

    dtype = gpflow.default_float()
    return tfp.distributions.Normal(tf.constant(0.0, dtype), tf.constant(1.0, dtype))


def _gamma() -> Any:
    import gpflow
    import tensorflow as tf
    import tensorflow_probability as tfp

    one = tf.constant(1.0, dtype=gpflow.default_float())
    return tfp.distributions.Gamma(one, one)
