"""A fitted GP's predictive distribution for new tasks, in numpy only.

The service stores this (npz bytes) with a GP aggregation and answers ``predict`` requests from
it in the API process, which never imports TensorFlow. The maths is that of
``CrowdGPCore.predict_f``: with inducing inputs Z (the training inputs for the full GP),
L = chol(K_ZZ), B = I + A diag(β) Aᵀ and A = L⁻¹ K_ZX,

    mean(x*) = m(x*) + k_Z*ᵀ w,                    w = L⁻ᵀ LB⁻ᵀ c
    var(x*)  = k(x*, x*) − k_Z*ᵀ M k_Z* + τ²,      M = L⁻ᵀ (I − B⁻¹) L⁻¹
    P(relevant | x*) = Φ(mean / sqrt(r + var))   (r: the fit's ``readout_noise``)

or, for a fit with the discrete-regression truth layer (MAGP's default, ``models.gp.truth``),
the layer's class prior Φ(x̃·ŵ / √(1 + x̃ᵀ Σ x̃)): a task nobody judged has no evidence beyond it.

(τ² is the per-task deviation's variance: a task nobody judged keeps its prior deviation). A fit
recalibrated on held-out gold (``models.calibration``) stores its Platt map (a, b), and
P(relevant | x*) is then σ(a · logit Φ(…) + b), as for the tasks it judged. A fit with one
offset per topic beside the features (``class_prior_by="topic"``, ``models.gp.topic_mean``) stores
its topics and offsets: a new task of a topic it saw adds that topic's offset to the mean; one of
a topic it never saw (or given without a topic) adds the prior's 0 and its variance.

"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtr

KIND = "gp-npz-v1"


@dataclass(frozen=True)
class KernelPart:
    kind: str  # "rbf" | "linear"
    variance: np.ndarray  # scalar (rbf) or scalar / per-dimension (linear)
    lengthscales: np.ndarray | None  # rbf: scalar or per-dimension
    dims: np.ndarray  # the feature columns this part sees

    def __call__(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        x, y = X[:, self.dims], Y[:, self.dims]
        if self.kind == "linear":
            return (x * self.variance) @ y.T
        assert self.lengthscales is not None
        xs, ys = x / self.lengthscales, y / self.lengthscales
        sq = (xs**2).sum(1)[:, None] + (ys**2).sum(1)[None, :] - 2.0 * xs @ ys.T
        return float(self.variance) * np.exp(-0.5 * np.maximum(sq, 0.0))

    def diag(self, X: np.ndarray) -> np.ndarray:
        x = X[:, self.dims]
        if self.kind == "linear":
            return (x**2 * self.variance).sum(1)
        return np.full(X.shape[0], float(self.variance))


@dataclass(frozen=True)
class GPPredictor:
    kernel: list[KernelPart]
    Z: np.ndarray  # (m, d) inducing inputs, standardised feature space
    w: np.ndarray  # (m,)
    M: np.ndarray  # (m, m)
    tau2: float
    mean_kind: str  # "zero" | "constant" | "linear"
    mean_A: np.ndarray  # (d,) for linear
    mean_b: float
    feature_mean: np.ndarray  # (d,) standardisation of raw features
    feature_scale: np.ndarray  # (d,)
    platt: tuple[float, float] = (1.0, 0.0)  # (a, b) of a calibrated fit; (1, 0): none
    topics: np.ndarray | None = None  # (T,) sorted topic ids of a fit with topic offsets
    topic_offsets: np.ndarray | None = None  # (T,) their offsets c_t
    # r of P(relevant) = Φ(m / sqrt(r + v)); predictors stored before it existed read with 1
    readout_noise: float = 1.0
    # the isotonic map of a fit calibrated with calibration="isotonic": knots and values
    isotonic: tuple[np.ndarray, np.ndarray] | None = None
    # the class prior of the discrete-regression truth layer (MAGP's default): weights ŵ (d + 1,)
    # and their covariance Σ; P(relevant | x*) is then Φ(x̃·ŵ / √(1 + x̃ᵀ Σ x̃)), x̃ = [x, 1]
    regression: tuple[np.ndarray, np.ndarray] | None = None
    # the beta map (a, b, c) of a fit calibrated with calibration="beta" (or "auto" choosing it)
    beta: tuple[float, float, float] | None = None

    @property
    def input_dim(self) -> int:
        return int(self.feature_mean.shape[0])

    def _k(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return sum(part(X, Y) for part in self.kernel)  # type: ignore[return-value]

    @property
    def has_topics(self) -> bool:
        return self.topics is not None

    def predict(self, features: np.ndarray, topics: list[str] | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(mean, variance, P(relevant)) of f for raw feature rows (n, d) and, for a fit with
        topic offsets, the rows' topics (None: each row's topic unknown to the fit)."""
        X = np.asarray(features, dtype=np.float64)
        X = (X - self.feature_mean) / self.feature_scale
        offset, offset_var = self._offsets(X.shape[0], topics)
        kzs = self._k(self.Z, X)  # (m, n)
        mean = kzs.T @ self.w + offset
        if self.mean_kind == "constant":
            mean = mean + self.mean_b
        elif self.mean_kind == "linear":
            mean = mean + X @ self.mean_A + self.mean_b
        kss = sum(part.diag(X) for part in self.kernel)
        var = (np.maximum(kss - np.einsum("mn,mk,kn->n", kzs, self.M, kzs), 0.0) + self.tau2
               + offset_var)
        if self.regression is not None:
            from models.gp.truth import regression_prior

            # one regression weight per topic the fit saw, as in the model
            p = regression_prior(X, *self.regression, topics, self.topics)
        else:
            p = ndtr(mean / np.sqrt(np.maximum(self.readout_noise + var, 1e-12)))
        if self.platt != (1.0, 0.0):
            from models.calibration import Platt

            p = Platt(*self.platt)(p)
        if self.isotonic is not None:
            p = np.interp(p, self.isotonic[0], self.isotonic[1])
        if self.beta is not None:
            from models.calibration import Beta

            p = Beta(*self.beta)(p)
        return mean, var, p

    def topic_known(self, n: int, topics: list[str] | None) -> np.ndarray | None:
        """Per row, whether the fit has an offset for its topic; None without topic offsets."""
        if self.topics is None:
            return None
        from models.gp.topics import row_codes

        return row_codes(topics, self.topics, n)[1]

    def _offsets(self, n: int, topics: list[str] | None) -> tuple[np.ndarray, np.ndarray]:
        """Each row's topic offset and the variance it adds (0 for a topic the fit saw)."""
        if self.topics is None or self.topic_offsets is None:
            return np.zeros(n), np.zeros(n)
        from models.gp.topics import TOPIC_PRIOR_VARIANCE, row_codes

        code, seen = row_codes(topics, self.topics, n)
        offset = np.append(self.topic_offsets, 0.0)[code.astype(np.int64)]  # unseen: 0
        return offset, np.where(seen, 0.0, TOPIC_PRIOR_VARIANCE)

    # -- storage --------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        arrays: dict[str, np.ndarray] = {
            "Z": self.Z, "w": self.w, "M": self.M, "mean_A": self.mean_A,
            "feature_mean": self.feature_mean, "feature_scale": self.feature_scale,
        }
        parts = []
        for i, part in enumerate(self.kernel):
            arrays[f"k{i}_variance"] = np.atleast_1d(part.variance)
            arrays[f"k{i}_dims"] = part.dims
            if part.lengthscales is not None:
                arrays[f"k{i}_lengthscales"] = np.atleast_1d(part.lengthscales)
            parts.append(part.kind)
        meta = {"kind": KIND, "parts": parts, "tau2": self.tau2, "mean_kind": self.mean_kind,
                "mean_b": self.mean_b, "platt": list(self.platt),
                "readout_noise": self.readout_noise}
        if self.isotonic is not None:
            arrays["isotonic_x"], arrays["isotonic_y"] = self.isotonic
        if self.beta is not None:
            meta["beta"] = list(self.beta)
        if self.regression is not None:
            arrays["regression_w"], arrays["regression_cov"] = self.regression
        if self.topics is not None and self.topic_offsets is not None:
            meta["topics"] = [str(t) for t in self.topics]
            arrays["topic_offsets"] = self.topic_offsets
        arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        buffer = io.BytesIO()
        np.savez_compressed(buffer, **arrays)
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, payload: bytes) -> GPPredictor:
        with np.load(io.BytesIO(payload), allow_pickle=False) as npz:
            a = {k: npz[k] for k in npz.files}
        meta = json.loads(a["meta"].tobytes().decode())
        if meta.get("kind") != KIND:
            raise ValueError(f"unknown predictor format {meta.get('kind')!r}")
        kernel = [
            KernelPart(kind, a[f"k{i}_variance"] if kind == "linear"
                       else a[f"k{i}_variance"].reshape(()),
                       a.get(f"k{i}_lengthscales"), a[f"k{i}_dims"])
            for i, kind in enumerate(meta["parts"])
        ]
        topics = meta.get("topics")
        return cls(kernel, a["Z"], a["w"], a["M"], float(meta["tau2"]), meta["mean_kind"],
                   a["mean_A"], float(meta["mean_b"]), a["feature_mean"], a["feature_scale"],
                   tuple(float(v) for v in meta.get("platt", (1.0, 0.0))),  # type: ignore[arg-type]
                   None if topics is None else np.asarray(topics, dtype=str),
                   a.get("topic_offsets"), float(meta.get("readout_noise", 1.0)),
                   (a["isotonic_x"], a["isotonic_y"]) if "isotonic_x" in a else None,
                   (a["regression_w"], a["regression_cov"]) if "regression_w" in a else None,
                   None if meta.get("beta") is None
                   else tuple(float(v) for v in meta["beta"]))  # type: ignore[arg-type]


def export(model: Any) -> GPPredictor:
    """The predictor of a fitted MAGP / GPMV (``models.gp.model``) with features."""
    core = model.core_
    if core.X is None or core.kernel is None:
        raise ValueError("this model has no GP over features: nothing to export")
    from models.gp.training import site_system

    L, blocks, _ = core.gp_prep()
    L = L.numpy()
    X = core.X.numpy()
    d = X.shape[1]
    _, beta, b = core.pseudo_observations()
    tau2 = float(core.tau2.numpy())
    m0 = core.prior_mean(core.X)
    m = L.shape[0]
    LB, c = (t.numpy() for t in site_system(blocks, beta, b - beta * m0))
    B = LB @ LB.T
    # w = L⁻ᵀ LB⁻ᵀ c ; M = L⁻ᵀ (I − B⁻¹) L⁻¹
    w = np.linalg.solve(L.T, np.linalg.solve(LB.T, c))
    Linv = np.linalg.solve(L, np.eye(m))
    M = Linv.T @ (np.eye(m) - np.linalg.inv(B)) @ Linv
    Z = X if core.Z is None else core.Z.numpy()

    kernels = getattr(core.kernel, "kernels", [core.kernel])
    parts = []
    for k in kernels:
        dims = k.active_dims
        dims = np.arange(d) if isinstance(dims, slice) else np.asarray(dims, dtype=np.int64)
        name = type(k).__name__
        if name in ("SquaredExponential", "RBF"):
            parts.append(KernelPart("rbf", np.asarray(k.variance.numpy()),
                                    np.asarray(k.lengthscales.numpy()), dims))
        elif name == "Linear":
            parts.append(KernelPart("linear", np.asarray(k.variance.numpy()), None, dims))
        else:
            raise ValueError(f"kernel {name} cannot be exported")
    topics = topic_offsets = None
    mf = core.mean_function
    if getattr(model, "topics_", None) is not None:  # a TopicMean: offsets, then its base
        topics, topic_offsets = np.asarray(model.topics_, dtype=str), mf.offsets.numpy()
        d, mf = mf.d, mf.base
    mean_kind, mean_A, mean_b = "zero", np.zeros(d), 0.0
    if mf is not None:
        if type(mf).__name__ == "Constant":
            mean_kind, mean_b = "constant", float(np.ravel(mf.c.numpy())[0])
        else:
            mean_kind = "linear"
            mean_A = np.ravel(mf.A.numpy())
            mean_b = float(np.ravel(mf.b.numpy())[0])
    platt = getattr(model, "platt_", None)  # a GoldCalibrated fit: its map applies here too
    isotonic = getattr(model, "isotonic_", None)
    beta = getattr(model, "beta_", None)
    # the discrete-regression layer's class prior (of the wrapped model, for a calibrated fit)
    regression = getattr(getattr(model, "model_", model), "layer_regression_", None)
    return GPPredictor(parts, Z, w, M, tau2, mean_kind, mean_A, mean_b,
                       np.asarray(model.feature_mean_), np.asarray(model.feature_scale_),
                       (1.0, 0.0) if platt is None else (platt.a, platt.b),
                       topics, topic_offsets,
                       # a calibrated fit's read-out is its wrapped model's
                       float(getattr(getattr(model, "model_", model), "readout_noise", 1.0)),
                       None if isotonic is None
                       else (np.asarray(isotonic.x), np.asarray(isotonic.y)),
                       None if regression is None
                       else (np.asarray(regression[0]), np.asarray(regression[1])),
                       None if beta is None else (beta.a, beta.b, beta.c))
