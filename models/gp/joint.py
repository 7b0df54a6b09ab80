"""The joint posterior of a fitted GP's latent f over the tasks it judged, as loadings of a
Gaussian copula (``models.evaluation.joint`` draws qrels from it, in numpy).

q(f) of ``models.gp.training`` is not independent across tasks: with whitened inducing values
v (u = L v, L = chol(K_ZZ)), q(v) = N(LB⁻ᵀ c, B⁻¹) with B = I + A diag(β) Aᵀ, A = L⁻¹ K_ZX, and
per task

    g_i = m0_i + A_iᵀ v + √d_i ε_i,              d_i = k(x_i, x_i) − A_iᵀ A_i  (Nyström residual)
    f_i = a_i g_i + τ² b_i + √(τ² a_i) η_i,      a_i = 1 − τ² β_i   (q(e_i | g_i), exact)

(ε, η independent standard normals; the residuals are treated as independent given v, the
usual sampling approximation of a sparse GP; for the full GP, Z = X, d = 0). So
f − m_f = F ζ + (independent per task) with ζ ~ N(0, I_m) and F_i = a_i (LB⁻¹ A_i)ᵀ: tasks
whose features load on the same inducing directions move together, and one draw of ζ is one
draw of the smooth function g. The rows stored are ρ_i = F_i^(k) / √(v_f,i + r): the top-``rank``
principal directions of F (the rest of the shared variance is left to the independent part,
so every task's marginal stays exact), scaled by the sd of f_i plus the read-out noise r, so
that z_i = ρ_i ζ + √(1 − |ρ_i|²) ξ_i is the standardised f_i (+ its read-out noise) and
[z_i > −Φ⁻¹(p_i)] is the label read out from the draw (``models.evaluation.joint``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

# Principal directions of the shared part kept per fit: (n_tasks × RANK) float32 stored.
RANK = 64
# The binary GP methods, whose fits have a joint posterior to store.
JOINT_METHODS = ("magp", "gpmv", "lk")


def joint_posterior(method: str, data: Any, model: Any) -> Any:
    """``models.evaluation.joint.JointLoadings`` of a fit of ``data`` (its tasks' topics and
    docs); None for a method outside ``JOINT_METHODS`` or a fit without a GP over tasks (f is
    then independent across tasks: independent draws are the joint ones)."""
    if method not in JOINT_METHODS:
        return None
    joint = joint_loadings(model)
    if joint is None:
        return None
    from models.evaluation.joint import JointLoadings

    topics = np.asarray(data.topic_ids, dtype=object)
    docs = np.asarray(data.doc_ids, dtype=object)
    layer = layer_loadings(model)
    if layer is not None:
        return JointLoadings(topics, docs, layer[0], prior=layer[1], draws=layer_draws(model))
    return JointLoadings(topics, docs, joint[0])


def joint_loadings(model: Any, rank: int = RANK) -> tuple[np.ndarray, float] | None:
    """(ρ (n_tasks, k) float32, the share of the shared variance Σ|F_i|² the k directions keep)
    of a fitted CrowdGP (a calibrated fit: its wrapped model); None when the fit has no GP
    (LK without topic intercepts, a fallback: f independent across tasks)."""
    inner = getattr(model, "model_", model)
    core = getattr(inner, "core_", None)
    if core is None or core.X is None or core.kernel is None:
        return None
    F, variance = factor(core)
    shared = np.sum(F * F, axis=1)
    k = min(rank, F.shape[1])
    eigval, eigvec = np.linalg.eigh(F.T @ F)
    Fk = F @ eigvec[:, np.argsort(eigval)[::-1][:k]]
    kept = float(np.sum(Fk * Fk) / max(float(np.sum(shared)), 1e-300))
    readout = float(getattr(inner, "readout_noise", 0.0))
    rho = Fk / np.sqrt(np.maximum(variance + readout, 1e-300))[:, None]
    return rho.astype(np.float32), kept


def layer_loadings(model: Any, rank: int = RANK) -> tuple[np.ndarray, np.ndarray, float] | None:
    """For a fit with the discrete truth layer (``label_layer="discrete"``, ``models.gp.truth``):
    (ρ^c (n, k) float32, z_c (n,), the share kept), the loadings of each task's class-prior
    latent and its standardised mean; None for any other fit.

    Under the layer the labels are independent given the GP's function g: the class prior is
    π_i = Φ(z_c,i) with z_c = m_c / √v_c the fit's cavity of f_i (g_i + e_i before the task's own
    judgments), whose shared part is G_i ζ, G_i = (LB⁻¹ A_i)ᵀ (the loadings of g_i; F_i = a_i G_i
    are those of f_i). One draw of ζ gives π_i(ζ) = Φ((z_c,i + ρ^c_i ζ) / √(1 − |ρ^c_i|²)),
    ρ^c_i = G_i^(k) / √v_c,i (E_ζ π_i(ζ) = π_i exactly), and the label is drawn from the
    layer's posterior with that prior (``models.evaluation.joint.JointDraws``).
    """
    inner = getattr(model, "model_", model)
    core = getattr(inner, "core_", None)
    if getattr(inner, "label_layer", "gaussian") not in ("discrete", "discrete-regression") \
            or core is None:
        return None
    if getattr(inner, "layer_loadings_", None) is not None:
        return regression_loadings(inner.layer_loadings_, inner.layer_z_, rank)
    if core.X is None or core.kernel is None:
        return None
    from models.gp.truth import cavity

    F, _ = factor(core)
    tau2 = float(core.tau2.numpy())
    _, beta, _ = core.pseudo_observations()
    a = 1.0 - tau2 * beta.numpy()
    G = F / np.where(a > 0, a, 1.0)[:, None]
    m_f, v_f = (t.numpy() for t in core.q())
    m_c, v_c = cavity(m_f, v_f, core.nat1.numpy(), core.nat2.numpy())
    k = min(rank, G.shape[1])
    eigval, eigvec = np.linalg.eigh(G.T @ G)
    Gk = G @ eigvec[:, np.argsort(eigval)[::-1][:k]]
    kept = float(np.sum(Gk * Gk) / max(float(np.sum(G * G)), 1e-300))
    rho = Gk / np.sqrt(v_c)[:, None]
    norm = np.sqrt(np.sum(rho * rho, axis=1))
    rho /= np.maximum(norm / 0.999, 1.0)[:, None]  # the cavity holds g's variance and τ²
    return rho.astype(np.float32), m_c / np.sqrt(v_c), kept


def regression_loadings(loadings: np.ndarray, z: np.ndarray, rank: int = RANK
                        ) -> tuple[np.ndarray, np.ndarray, float]:
    """(ρ (n, k) float32, z (n,), the share kept) for the layer's regression class prior
    (``label_layer="discrete-regression"``, ``models.gp.truth.fit_regression_prior``): its latent
    is η_i(ζ) = η̂_i + l_i ζ with l = X̃ chol(Σ) (the weights' Laplace posterior), and π_i =
    Φ(z_i), z_i = η̂_i / √(1 + |l_i|²). With ρ_i = l_i / √(1 + |l_i|²) the layer's draw
    Φ((z_i + ρ_i ζ) / √(1 − |ρ_i|²)) is exactly Φ(η_i(ζ)): one ζ is one draw of the weights,
    moving every task's prior at once. More than ``rank`` columns keep their top directions."""
    scale = np.sqrt(1.0 + np.sum(loadings * loadings, axis=1))
    k = min(rank, loadings.shape[1])
    kept = 1.0
    if loadings.shape[1] > k:
        eigval, eigvec = np.linalg.eigh(loadings.T @ loadings)
        top = loadings @ eigvec[:, np.argsort(eigval)[::-1][:k]]
        kept = float(np.sum(top * top) / max(float(np.sum(loadings * loadings)), 1e-300))
        loadings = top
    return (loadings / scale[:, None]).astype(np.float32), np.asarray(z, dtype=np.float64), kept


def layer_draws(model: Any, rank: int = RANK) -> np.ndarray | None:
    """(S, k) float32 draws of ζ for the regression layer's loadings (``regression_loadings``):
    the weights' MCMC draws (``weight_draws: "mcmc"``, ``models.gp.truth.weight_draws``) in the
    loadings' frame, ζ^s = chol(Σ)⁻¹ (w^s − w̄), so that one draw is one draw of the weights from
    their posterior, not from its Gaussian approximation; projected on the same top directions
    when the loadings keep only ``rank``. None without them (the draws take ζ ~ N(0, I))."""
    inner = getattr(model, "model_", model)
    draws = getattr(inner, "layer_draws_", None)
    loadings = getattr(inner, "layer_loadings_", None)
    if draws is None or loadings is None:
        return None
    if loadings.shape[1] > rank:
        eigval, eigvec = np.linalg.eigh(loadings.T @ loadings)
        draws = draws @ eigvec[:, np.argsort(eigval)[::-1][:rank]]
    return np.asarray(draws, dtype=np.float32)


def factor(core: Any) -> tuple[np.ndarray, np.ndarray]:
    """(F (n, m), v_f (n,)) of a fitted ``CrowdGPCore`` with a GP: f − m_f = F ζ + independent
    parts, and each task's marginal variance F_i·F_i + a_i² d_i + τ² a_i (see the module doc)."""
    import scipy.linalg

    from models.gp.training import site_system

    L, blocks, kdiag = core.gp_prep()
    _, beta, b = core.pseudo_observations()
    m0 = core.prior_mean(core.X)
    LB, _ = site_system(blocks, beta, b - beta * m0)
    A = np.hstack([blk.numpy() for blk in blocks])  # (m, n)
    beta = beta.numpy()
    tau2 = float(core.tau2.numpy())
    a = 1.0 - tau2 * beta
    d = np.maximum(kdiag.numpy() - np.sum(A * A, axis=0), 0.0)
    F = (scipy.linalg.solve_triangular(LB.numpy(), A, lower=True) * a[None, :]).T
    return F, np.sum(F * F, axis=1) + a * a * d + tau2 * a
