"""Joint draws of the qrels from a GP fit: tasks that share features move together.

Independent per-task draws treat the GP's errors as independent coins, but its tasks share
one latent function g (and the fit's uncertainty about g is shared by every task whose
features load on the same inducing directions): a run's score then varies across draws far
less than across the ways the truth may differ from the fit. A GP fit stores the loadings
ρ (n_tasks, k) of its joint posterior (``models.gp.joint``); a draw s takes one
ζ^s ~ N(0, I_k) for the whole collection and, per task,

    z_i^s = ρ_i ζ^s + √(1 − |ρ_i|²) ξ_i^s,      label_i^s = [z_i^s + Φ⁻¹(p_i) > 0],

with ξ independent and p_i the task's stored P(relevant). z_i is the standardised f_i (plus
the read-out noise r), so for an uncalibrated fit label_i = [f_i^s > 0] (r = 0) is the label
read from one joint draw of f; marginally P(label_i = 1) = p_i exactly, whatever read-out or
calibration map made p_i (a Gaussian copula with the GP's correlations). Binary posteriors only.

A fit with the discrete truth layer (``models.gp.truth``) stores instead the loadings ρ^c of
each task's class-prior latent and its standardised mean z_c (``prior``): the labels are
independent given the GP's function, so a draw s takes ζ^s and, per task,

    π_i^s = Φ((z_c,i + ρ^c_i ζ^s) / √(1 − |ρ^c_i|²)),
    logit P(label_i^s = 1) = logit π_i^s + (logit p_i − logit Φ(z_c,i)),

the layer's posterior with the drawn class prior (the judgments' evidence, logit p_i − logit
π_i, is the task's own and stays fixed), and label_i^s ~ Bernoulli of it. E_ζ π_i^s = Φ(z_c,i),
so the marginal stays close to p_i (exact at p_i = π_i and at p_i ∈ {0, 1}).

A fit whose class prior is a regression on the features may store ``draws`` too: draws of ζ
(S_w, k) that are draws of the weights from their posterior (``models.gp.joint.layer_draws``;
docs/gp.md, "Drawing the weights"). An evaluation then takes its ζ^s from them (at random, with
replacement when it wants more than S_w) instead of N(0, I): the posterior is skewed (towards
steeper weights), which the Gaussian misses.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass

import numpy as np
from scipy.special import log_ndtr, ndtri

from models.evaluation.uncertainty import Posterior

KIND = "gp-joint-v1"
# with ``prior``: the discrete truth layer's draws (a v1 reader would misread them)
KIND_LAYER = "gp-joint-layer-v1"


@dataclass(frozen=True)
class JointLoadings:
    """Per fitted task (topic, doc) its row of loadings ρ_i (|ρ_i| ≤ 1)."""

    topics: np.ndarray  # (n,) str
    docs: np.ndarray  # (n,) str
    loadings: np.ndarray  # (n, k) float32
    prior: np.ndarray | None = None  # (n,) z_c of the discrete truth layer's class prior
    draws: np.ndarray | None = None  # (S_w, k) draws of ζ (the weights' posterior), else N(0, I)

    def __post_init__(self) -> None:
        n = len(self.topics)
        if self.docs.shape != (n,) or self.loadings.ndim != 2 or self.loadings.shape[0] != n:
            raise ValueError("topics, docs and loadings must describe the same tasks")
        if self.prior is not None and np.shape(self.prior) != (n,):
            raise ValueError("prior must hold one value per task")
        if self.draws is not None and (self.prior is None or self.draws.ndim != 2
                                       or self.draws.shape[1] != self.loadings.shape[1]
                                       or self.draws.shape[0] == 0):
            raise ValueError("draws need a prior and one column per loading")

    def aligned_prior(self, posterior: Posterior) -> np.ndarray:
        """(J,) z_c of the posterior's tasks (the layer's class prior); a task the fit did not
        store: its own p (no prior to draw: the task's label is drawn independently)."""
        assert self.prior is not None
        index = {key: i for i, key in enumerate(zip(self.topics.tolist(), self.docs.tolist(),
                                                    strict=True))}
        out = ndtri(np.clip(posterior.p_relevant(), 0.0, 1.0))
        for j, key in enumerate(zip(posterior.topics.tolist(), posterior.docs.tolist(),
                                    strict=True)):
            i = index.get((str(key[0]), str(key[1])))
            if i is not None:
                out[j] = self.prior[i]
        return out

    @property
    def rank(self) -> int:
        return int(self.loadings.shape[1])

    def aligned(self, posterior: Posterior) -> np.ndarray:
        """(J, k) the loadings of the posterior's tasks; a task the fit did not store: zeros
        (an independent draw)."""
        index = {key: i for i, key in enumerate(zip(self.topics.tolist(), self.docs.tolist(),
                                                    strict=True))}
        out = np.zeros((posterior.n_tasks, self.rank), dtype=np.float64)
        for j, key in enumerate(zip(posterior.topics.tolist(), posterior.docs.tolist(),
                                    strict=True)):
            i = index.get((str(key[0]), str(key[1])))
            if i is not None:
                out[j] = self.loadings[i]
        norm = np.sqrt(np.sum(out * out, axis=1))
        return out / np.maximum(norm, 1.0)[:, None]  # |ρ| ≤ 1 (float32 rounding)

    # -- storage --------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        meta = {"kind": KIND if self.prior is None else KIND_LAYER}
        extra = {} if self.prior is None else {"prior": np.asarray(self.prior, dtype=np.float64)}
        if self.draws is not None:
            extra["draws"] = np.asarray(self.draws, dtype=np.float32)
        np.savez_compressed(buffer, topics=np.asarray(self.topics, dtype=str),
                            docs=np.asarray(self.docs, dtype=str),
                            loadings=np.asarray(self.loadings, dtype=np.float32),
                            meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
                            **extra)
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, payload: bytes) -> JointLoadings:
        """ValueError for bytes that are not ``to_bytes``'s."""
        try:
            with np.load(io.BytesIO(payload), allow_pickle=False) as npz:
                meta = json.loads(npz["meta"].tobytes().decode())
                if meta.get("kind") not in (KIND, KIND_LAYER):
                    raise ValueError(f"unknown joint-posterior format {meta.get('kind')!r}")
                prior = npz["prior"] if meta["kind"] == KIND_LAYER else None
                draws = npz["draws"] if prior is not None and "draws" in npz.files else None
                return cls(topics=npz["topics"].astype(object),
                           docs=npz["docs"].astype(object), loadings=npz["loadings"],
                           prior=prior, draws=draws)
        except (ValueError, KeyError, OSError, EOFError, zipfile.BadZipFile) as exc:
            raise ValueError(f"not a joint posterior ({exc})") from None


class JointDraws:
    """The draws of one evaluation: ζ (S, k) shared by all topics, and per topic the labels."""

    def __init__(self, posterior: Posterior, loadings: JointLoadings, samples: int,
                 rng: np.random.Generator) -> None:
        if len(posterior.classes) != 2 or posterior.relevant_index != 1:
            raise ValueError("joint draws need a binary posterior")
        self.rho = loadings.aligned(posterior)
        self.own = np.sqrt(np.maximum(1.0 - np.sum(self.rho * self.rho, axis=1), 0.0))
        p = np.clip(posterior.p_relevant(), 0.0, 1.0)
        self.threshold = ndtri(p)  # Φ⁻¹(p): ±inf at 0, 1
        if loadings.draws is None:
            self.zeta = rng.standard_normal((samples, loadings.rank))
        else:  # the weights' posterior draws (one per evaluation draw)
            n_draws = loadings.draws.shape[0]
            self.zeta = np.asarray(loadings.draws, dtype=np.float64)[
                rng.choice(n_draws, samples, replace=samples > n_draws)]
        # The discrete truth layer: the class prior's latent and the judgments' evidence.
        self.prior = None if loadings.prior is None else loadings.aligned_prior(posterior)
        if self.prior is not None:
            with np.errstate(divide="ignore"):
                self.evidence = (np.log(p) - np.log1p(-p)
                                 - (log_ndtr(self.prior) - log_ndtr(-self.prior)))

    @property
    def samples(self) -> int:
        return int(self.zeta.shape[0])

    def topic_labels(self, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """(S, len(rows)) class indices (1 = relevant) of the tasks ``rows`` in every draw."""
        z = self.zeta @ self.rho[rows].T
        if self.prior is not None:  # the layer: labels independent given the drawn prior
            arg = (z + self.prior[rows][None, :]) / np.maximum(self.own[rows], 1e-6)[None, :]
            with np.errstate(invalid="ignore"):
                logit = log_ndtr(arg) - log_ndtr(-arg) + self.evidence[rows][None, :]
            u = rng.random((self.samples, len(rows)))
            # P = 1 / (1 + e^−logit) without overflow; p_i ∈ {0, 1} (gold): logit ±inf.
            return (np.log(u) - np.log1p(-u) < logit).astype(np.int8)
        z += self.own[rows][None, :] * rng.standard_normal((self.samples, len(rows)))
        return (z + self.threshold[rows][None, :] > 0).astype(np.int8)
