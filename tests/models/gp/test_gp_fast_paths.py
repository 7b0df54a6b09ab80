"""The GP engine's fast paths against their reference computations (issue 36, gpspeed3).

- the full GP's direct algebra (``CrowdGPCore.exact_posterior``) against the Titsias algebra
  with A = L⁻¹ K by a triangular solve (what ``gp_prep`` computed before): q, the objective and
  its gradients w.r.t. the GP parameters;
- A = Lᵀ for Z = X against the triangular solve;
- ``_lbfgs`` reusing its start evaluation: the same minimiser, one evaluation fewer;
- the ordinal core's compiled spam responsibilities against the eager ones;
- a whole MAGP fit through either algebra: the same labels, probabilities within 1e-5;
- the sparse posterior's float32 variance product against float64 (issue 36, gp20k).
"""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
gpflow = pytest.importorskip("gpflow")

import models.gp.training as training  # noqa: E402
from models.gp.likelihood import GaussianBernoulli  # noqa: E402
from models.gp.model import MAGP, build_kernel  # noqa: E402
from models.gp.training import CrowdGPCore, _lbfgs, nystrom_gap  # noqa: E402
from models.synthetic import generate  # noqa: E402


def _core(n: int = 40, deviation: bool = True, seed: int = 0) -> CrowdGPCore:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    task = np.repeat(np.arange(n), 3)
    ann = rng.integers(0, 5, size=3 * n)
    lab = rng.integers(0, 2, size=3 * n)
    kernel = build_kernel("rbf", 2)
    kernel.variance.assign(1.7)
    mean = gpflow.functions.Linear(A=np.array([[0.3], [-0.2]]), b=np.array([0.1]))
    core = CrowdGPCore(n_tasks=n, task=task, annotator=ann, label=lab,
                       likelihood=GaussianBernoulli(n, 5), features=X, kernel=kernel,
                       mean_function=mean, deviation=deviation, deviation_variance=0.6)
    core.nat1.assign(rng.normal(size=n))
    # Site precisions ≥ 0, some 0 (a task without judgments), some large.
    nat2 = rng.uniform(0.0, 3.0, size=n)
    nat2[:3] = 0.0
    nat2[3] = 50.0
    core.nat2.assign(nat2)
    return core


def _reference(core: CrowdGPCore) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """The Titsias algebra with A = L⁻¹ Kuu by a triangular solve, as before A = Lᵀ."""
    K = core.full_kernel()
    L = tf.linalg.cholesky(K)
    A = [tf.linalg.triangular_solve(L, K, lower=True)]
    kdiag = core.kernel(core.X, full_cov=False)
    return core.posterior(A, kdiag, core.prior_mean(core.X), d=nystrom_gap(A, kdiag))


@pytest.fixture
def float64_variances(monkeypatch) -> None:
    """The Titsias route's variance product in float64, so that the algebras can be compared
    to rounding (its float32 default: ``test_float32_variance_product_...``)."""
    monkeypatch.setattr(training, "VARIANCE_PRODUCT_DTYPE", tf.float64)


@pytest.mark.parametrize("deviation", [True, False])
def test_direct_full_gp_algebra_equals_the_titsias_route(deviation: bool,
                                                         float64_variances) -> None:
    core = _core(deviation=deviation)
    assert core.direct()
    m_ref, v_ref, t_ref = _reference(core)
    m_f, v_f, terms = core.exact_posterior(core.full_kernel(),
                                           core.kernel(core.X, full_cov=False),
                                           core.prior_mean(core.X))
    np.testing.assert_allclose(m_f.numpy(), m_ref.numpy(), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(v_f.numpy(), v_ref.numpy(), rtol=1e-9, atol=1e-9)
    assert terms.numpy() == pytest.approx(t_ref.numpy(), rel=1e-10, abs=1e-9)
    # The compiled steps read the same q whichever algebra they were traced with.
    m_fast, v_fast = (t.numpy() for t in core.q())
    np.testing.assert_allclose(m_fast, m_ref.numpy(), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(v_fast, v_ref.numpy(), rtol=1e-9, atol=1e-9)


def test_direct_objective_and_gradients_equal_the_titsias_route(monkeypatch,
                                                                float64_variances) -> None:
    core = _core()
    variables = core._gp_variables()
    assert len(variables) >= 4  # kernel variance and lengthscales, τ², the mean's A and b
    fast, fast_grads = core._gp_loss_and_grads_impl()
    monkeypatch.setattr(training, "FULL_GP_DIRECT", False)
    assert not core.direct()
    slow, slow_grads = core._gp_loss_and_grads_impl()
    assert fast.numpy() == pytest.approx(slow.numpy(), rel=1e-10)
    for g_fast, g_slow in zip(fast_grads, slow_grads, strict=True):
        np.testing.assert_allclose(g_fast.numpy(), g_slow.numpy(), rtol=1e-7, atol=1e-9)


def test_full_gp_a_is_the_transposed_cholesky_factor() -> None:
    core = _core()
    L, A, _ = core.gp_prep()
    solved = tf.linalg.triangular_solve(L, core.full_kernel(), lower=True)
    np.testing.assert_allclose(A[0].numpy(), solved.numpy(), atol=1e-10)


def test_lbfgs_reuses_its_start_evaluation() -> None:
    """The same minimiser as scipy on the plain function, with one evaluation fewer."""
    import scipy.optimize

    target = np.array([1.0, -2.0, 0.5])
    x = tf.Variable(np.zeros(3))
    calls = [0]

    def loss_and_grads():
        calls[0] += 1
        diff = x - target
        return (tf.reduce_sum(diff**2) + 0.1 * tf.reduce_sum(diff**4),
                [2.0 * diff + 0.4 * diff**3])

    _lbfgs(loss_and_grads, [x], maxiter=3)
    ours = x.numpy().copy()

    plain = [0]

    def fun(v):
        plain[0] += 1
        d = v - target
        return float(np.sum(d**2) + 0.1 * np.sum(d**4)), 2.0 * d + 0.4 * d**3

    res = scipy.optimize.minimize(fun, np.zeros(3), jac=True, method="L-BFGS-B",
                                  options={"maxiter": 3})
    np.testing.assert_array_equal(ours, res.x)
    assert calls[0] == plain[0]  # the start evaluation is scipy's first, not an extra one


def test_ordinal_compiled_responsibility_equals_eager() -> None:
    from models.gp.ordinal_likelihood import OrderedProbit, OrdinalCrowdGPCore

    rng = np.random.default_rng(2)
    n, k = 30, 3
    task = np.repeat(np.arange(n), 4)
    ann = rng.integers(0, 6, size=4 * n)
    grade = rng.integers(0, k, size=4 * n)
    lik = OrderedProbit(n, 6, k, thresholds=np.array([-0.5, 0.7]), spam_prior=0.2,
                        spam_strength=10.0)
    core = OrdinalCrowdGPCore(n_tasks=n, task=task, annotator=ann, label=grade, likelihood=lik,
                              deviation_variance=1.0)
    m_f = tf.constant(rng.normal(size=n))
    v_f = tf.constant(rng.uniform(0.1, 2.0, size=n))
    compiled = core._responsibility(m_f, v_f).numpy()
    eager = core._responsibility_impl(m_f, v_f).numpy()
    assert np.all((compiled > 0) & (compiled < 1))
    np.testing.assert_allclose(compiled, eager, rtol=1e-10, atol=1e-12)


def test_magp_fit_through_either_full_gp_algebra(monkeypatch, float64_variances) -> None:
    """A converged 150-task MAGP fit (full GP) gives the same labels and probabilities within
    1e-5 through the direct algebra and the Titsias one (an identity at any size: 150 tasks
    differ by 7e-10, 300 by 2e-8)."""
    synth = generate(150, 15, noise_level=(2.0, 4.0), redundancy=3, random_state=5)
    data = synth.to_annotation_data(with_features=True)
    fast = MAGP(random_state=0).fit(data)
    assert fast.core_.direct()
    monkeypatch.setattr(training, "FULL_GP_DIRECT", False)
    slow = MAGP(random_state=0).fit(data)
    assert not slow.core_.direct()
    np.testing.assert_array_equal(fast.labels_, slow.labels_)
    np.testing.assert_allclose(fast.proba_, slow.proba_, atol=1e-5)


def test_float32_variance_product_keeps_q_and_the_objective(monkeypatch) -> None:
    """v_g = d + column sums of (LB⁻¹ A)²: the product in float32 moves q's variances by a
    relative 1e-6 at most (squares add, no cancellation); the means not at all."""
    rng = np.random.default_rng(4)
    n, m = 400, 60
    X = rng.normal(size=(n, 2))
    task = np.repeat(np.arange(n), 3)
    core = CrowdGPCore(n_tasks=n, task=task, annotator=rng.integers(0, 5, size=3 * n),
                       label=rng.integers(0, 2, size=3 * n), likelihood=GaussianBernoulli(n, 5),
                       features=X, kernel=build_kernel("rbf", 2), inducing=X[:m],
                       deviation_variance=0.5)
    core.nat1.assign(rng.normal(size=n))
    nat2 = rng.uniform(0.0, 3.0, size=n)
    nat2[:3] = 0.0
    nat2[3] = 50.0
    core.nat2.assign(nat2)
    _, A, kdiag = core.gp_prep()
    m0 = core.prior_mean(core.X)
    assert training.VARIANCE_PRODUCT_DTYPE is tf.float32
    m32, v32, t32 = (t.numpy() for t in core.posterior(A, kdiag, m0))
    monkeypatch.setattr(training, "VARIANCE_PRODUCT_DTYPE", tf.float64)
    m64, v64, t64 = (t.numpy() for t in core.posterior(A, kdiag, m0))
    assert m32.dtype == v32.dtype == np.float64
    np.testing.assert_array_equal(m32, m64)  # the means never see the product
    np.testing.assert_allclose(v32, v64, rtol=1e-6)
    assert t32 == pytest.approx(t64, rel=1e-7)
