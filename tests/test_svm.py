"""gpc_literate.svm (chapter 5): the kernel Adatron against an independent QP solver,
the Kuhn-Tucker conditions, the bias, the estimator's API and its failure modes."""

import numpy as np
import pytest
from scipy.linalg import solve
from scipy.optimize import minimize

from gpc_literate import datasets
from gpc_literate.base import ConvergenceWarning
from gpc_literate.kernels import RBF, Linear
from gpc_literate.loo import lr_loo_activations
from gpc_literate.svm import (
    KernelAdatron,
    kernel_adatron,
    kkt_violation,
    project_box_hyperplane,
    svm_groups,
)

# (C, v): linear slack, quadratic slack, both, and the hard margin
CONFIGS = [(2.0, 0.0), (np.inf, 0.5), (5.0, 0.3), (np.inf, 0.0)]


def blobs(n=30, seed=0, shift=1.2):
    """Two overlapping Gaussian classes in the plane (not linearly separable)."""
    rng = np.random.default_rng(seed)
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    X = rng.normal(size=(n, 2)) + shift * y[:, None] * np.array([1.0, 0.5])
    return X, y


def qp_dual(K, y, C, v, fit_bias):
    """The SVM dual eq-svm-dual solved by SLSQP: an implementation independent of the Adatron.

    ftol 1e-12: at 1e-15, beyond what the objective's rounding allows, SLSQP (scipy 1.17)
    can stop at the optimum with "Positive directional derivative for linesearch" and report
    failure; at 1e-12 it converges on every configuration here, to within 1e-6 of the
    Adatron's alpha, against the 1e-4 the test asks.
    """
    n = len(y)
    Q = np.outer(y, y) * (K + v * np.eye(n))
    constraints = (
        [{"type": "eq", "fun": lambda a: y @ a, "jac": lambda a: y}] if fit_bias else []
    )
    res = minimize(
        lambda a: 0.5 * a @ Q @ a - a.sum(),
        np.zeros(n),
        jac=lambda a: Q @ a - 1.0,
        method="SLSQP",
        bounds=[(0.0, None if np.isinf(C) else C)] * n,
        constraints=constraints,
        options={"ftol": 1e-12, "maxiter": 5000},
    )
    assert res.success, res.message
    return res.x


def qp_bias(K, y, alpha, C, v):
    """Bias from the free support vectors of a QP solution: y_i (f_i + b) = 1."""
    free = (alpha > 1e-6) & (alpha < C - 1e-6)
    f_noisy = (K + v * np.eye(len(y))) @ (y * alpha)
    return float(np.mean(y[free] - f_noisy[free]))


@pytest.mark.parametrize("fit_bias", [False, True])
@pytest.mark.parametrize("C,v", CONFIGS)
def test_adatron_agrees_with_qp_solver(C, v, fit_bias):
    """alpha, bias and decision values agree with SLSQP to 1e-4 (n = 30)."""
    X, y = blobs(30, seed=1, shift=2.0 if (np.isinf(C) and v == 0.0) else 1.2)
    kernel = RBF(length_scale=1.0)
    K = kernel(X)
    res = kernel_adatron(K, y, C=C, v=v, fit_bias=fit_bias, tol=1e-9, max_iter=500000)
    assert res.converged
    alpha_qp = qp_dual(K, y, C, v, fit_bias)
    scale = max(1.0, alpha_qp.max())
    assert np.max(np.abs(res.alpha - alpha_qp)) <= 1e-4 * scale
    b_qp = qp_bias(K, y, alpha_qp, C, v) if fit_bias else 0.0
    assert abs(res.bias - b_qp) <= 1e-4 * scale
    X_new = np.random.default_rng(5).normal(size=(20, 2)) * 2
    for Z in (X, X_new):
        d_adatron = kernel(Z, X) @ (y * res.alpha) + res.bias
        d_qp = kernel(Z, X) @ (y * alpha_qp) + b_qp
        assert np.max(np.abs(d_adatron - d_qp)) <= 1e-4 * scale


@pytest.fixture(scope="module")
def crabs():
    data = datasets.load("crabs", n_train=80)
    return data.X_train, data.y_train


@pytest.mark.parametrize("fit_bias", [False, True])
@pytest.mark.parametrize("C,v", [(10.0, 0.0), (np.inf, 0.5), (3.0, 0.2)])
def test_kkt_conditions_at_the_solution(crabs, C, v, fit_bias):
    X, y = crabs
    model = KernelAdatron(
        RBF(1.0), C=C, v=v, fit_bias=fit_bias, tol=1e-6, compute_loo=False
    ).fit(X, y)
    assert model.converged_
    y_pm = np.where(y == model.classes_[1], 1.0, -1.0)
    kkt = kkt_violation(
        model.kernel_(X), y_pm, model.alpha_, model.bias_, C=C, v=v, fit_bias=fit_bias
    )
    assert kkt == model.kkt_
    assert kkt.margin <= 1e-5 and kkt.box == 0.0
    assert kkt.equality <= 1e-10 * model.alpha_.sum()
    # groups: with the quadratic slack alone there are no bound support vectors
    non_sv, margin_sv, bound_sv = svm_groups(model.alpha_, C)
    assert (non_sv | margin_sv | bound_sv).all() and not (non_sv & margin_sv).any()
    if np.isinf(C):
        assert not bound_sv.any()
    np.testing.assert_array_equal(model.support_, np.flatnonzero(~non_sv))


def test_kkt_violation_is_not_vacuous(crabs):
    X, y = crabs
    model = KernelAdatron(
        RBF(1.0), C=10.0, fit_bias=True, tol=1e-6, compute_loo=False
    ).fit(X, y)
    y_pm = np.where(y == model.classes_[1], 1.0, -1.0)
    K = model.kernel_(X)
    for alpha, bias in [
        (model.alpha_ * 1.05, model.bias_),
        (model.alpha_, model.bias_ + 0.1),
    ]:
        assert kkt_violation(K, y_pm, alpha, bias, C=10.0, fit_bias=True).margin > 1e-3
    shifted = model.alpha_.copy()
    shifted[model.support_[0]] += 0.5
    assert (
        kkt_violation(K, y_pm, shifted, model.bias_, C=10.0, fit_bias=True).equality
        > 0.1
    )
    assert kkt_violation(K, y_pm, model.alpha_ + 20, model.bias_, C=10.0).box > 9


@pytest.mark.parametrize("C", [np.inf, 0.7, 4.0])
def test_projection_is_the_euclidean_projection(C):
    rng = np.random.default_rng(3)
    for _ in range(100):
        n = int(rng.integers(2, 50))
        y = rng.choice([-1.0, 1.0], n)
        y[:2] = [1.0, -1.0]
        z = rng.normal(size=n) * rng.choice([0.1, 1.0, 30.0])
        alpha, lam = project_box_hyperplane(z, y, C, lam0=rng.normal())
        size = 1.0 + np.abs(z).sum()
        assert abs(y @ alpha) <= 1e-10 * size and alpha.min() >= 0 and alpha.max() <= C
        np.testing.assert_allclose(alpha, np.clip(z - lam * y, 0, C))
        # first-order optimality: (z - P z) . (beta - P z) <= 0 for feasible beta
        for _ in range(5):
            beta, _ = project_box_hyperplane(rng.normal(size=n) * 2, y, C)
            assert (z - alpha) @ (beta - alpha) <= 1e-9 * size**2


def test_projection_needs_both_classes():
    with pytest.raises(ValueError, match="both labels"):
        project_box_hyperplane(np.ones(4), np.ones(4))


def test_bias_is_the_limit_of_a_gaussian_prior():
    """Adatron without bias on K + B: B * sum(y alpha) -> flat-prior bias, error O(1/B)."""
    X, y = blobs(30, seed=2)
    K = RBF()(X)
    ref = kernel_adatron(
        K, y, C=np.inf, v=0.5, fit_bias=True, tol=1e-8, max_iter=100000
    )
    gaps = []
    for B in (1.0, 10.0, 100.0):
        res = kernel_adatron(K + B, y, C=np.inf, v=0.5, tol=1e-7, max_iter=1000000)
        assert res.converged
        gaps.append(abs(B * (y @ res.alpha) - ref.bias))
    assert gaps[2] < gaps[1] < gaps[0] and gaps[2] < 0.005
    assert gaps[2] < gaps[0] / 20


@pytest.mark.parametrize("learning_rate", [0.3, 1.0, 1.9])
def test_learning_rate_changes_speed_not_solution(learning_rate):
    X, y = blobs(30, seed=4)
    K = RBF()(X)
    ref = kernel_adatron(K, y, C=3.0, v=0.1, fit_bias=True, tol=1e-9, max_iter=200000)
    res = kernel_adatron(
        K,
        y,
        C=3.0,
        v=0.1,
        fit_bias=True,
        tol=1e-9,
        max_iter=200000,
        learning_rate=learning_rate,
    )
    assert res.converged
    np.testing.assert_allclose(res.alpha, ref.alpha, atol=1e-6)
    lam_max = np.linalg.eigvalsh(K)[-1] + 0.1
    assert res.eta == pytest.approx(learning_rate / lam_max, rel=1e-6)


def test_nonseparable_hard_margin_warns_and_is_not_converged(crabs):
    X, y = crabs
    X_bad = np.vstack([X[:10], X[:1]])
    y_bad = np.append(y[:10], -y[0])  # same input, opposite label
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        model = KernelAdatron(C=np.inf, v=0.0, max_iter=3000).fit(X_bad, y_bad)
    assert model.converged_ is False and model.n_iter_ == 3000
    # XOR with a linear kernel: not separable either
    X_xor = np.array([[1.0, 1.0], [-1.0, -1.0], [1.0, -1.0], [-1.0, 1.0]])
    with pytest.warns(ConvergenceWarning):
        model = KernelAdatron(kernel=Linear(), max_iter=1000).fit(X_xor, [1, 1, -1, -1])
    assert not model.converged_


def test_too_few_iterations_warn(crabs):
    X, y = crabs
    with pytest.warns(ConvergenceWarning):
        model = KernelAdatron(C=10.0, max_iter=2).fit(X, y)
    assert not model.converged_ and model.n_iter_ == 2


@pytest.mark.parametrize(
    "param,value",
    [
        ("C", 0.0),
        ("C", -1.0),
        ("C", np.nan),
        ("C", -np.inf),
        ("v", -0.1),
        ("v", np.inf),
        ("tol", 0.0),
        ("tol", -1e-3),
        ("max_iter", 0),
        ("max_iter", -5),
        ("learning_rate", 0.0),
        ("learning_rate", 2.0),
        ("learning_rate", 3.0),
    ],
)
def test_bad_hyperparameters_raise_value_error_naming_them(crabs, param, value):
    X, y = crabs
    with pytest.raises(ValueError, match=param):
        KernelAdatron(**{param: value}).fit(X, y)


@pytest.mark.parametrize(
    "param,value",
    [("C", "large"), ("max_iter", 10.5), ("max_iter", True), ("kernel", "rbf")],
)
def test_wrongly_typed_hyperparameters_raise_type_error(crabs, param, value):
    X, y = crabs
    with pytest.raises(TypeError, match=param):
        KernelAdatron(**{param: value}).fit(X, y)


def test_warm_start(crabs):
    X, y = crabs
    model = KernelAdatron(C=10.0, v=0.1, fit_bias=True, tol=1e-6).fit(X, y)
    warm = KernelAdatron(C=10.0, v=0.1, fit_bias=True, tol=1e-6).fit(
        X, y, alpha_init=model.alpha_
    )
    assert warm.n_iter_ == 1 and warm.converged_
    # the one confirming Adatron step may move each alpha_i by up to eta * tol
    np.testing.assert_allclose(
        warm.alpha_, model.alpha_, rtol=0, atol=2 * model.eta_ * model.tol
    )
    with pytest.raises(ValueError, match="alpha_init"):
        KernelAdatron().fit(X, y, alpha_init=np.ones(3))


def test_estimator_api(crabs):
    X, y = crabs
    labels = np.where(y > 0, "male", "female")
    model = KernelAdatron(kernel=RBF(length_scale=1.5), C=10.0, v=0.2, fit_bias=True)
    assert model.fit(X, labels) is model
    assert list(model.classes_) == ["female", "male"]
    y_pm = np.where(labels == "male", 1.0, -1.0)
    K = model.kernel_(X)
    # decision function: sum_j k(x, x_j) y_j alpha_j + b, without the noise variance
    np.testing.assert_allclose(
        model.decision_function(X), K @ (y_pm * model.alpha_) + model.bias_, atol=1e-10
    )
    np.testing.assert_allclose(model.dual_coef_, (y_pm * model.alpha_)[model.support_])
    assert set(model.predict(X)) <= {"female", "male"}
    assert model.score(X, labels) > 0.9
    assert not hasattr(model, "predict_proba")  # no probabilities (eq-svm-unnormalised)
    with pytest.raises(AttributeError):
        model.predict_proba(X)
    params = model.get_params(deep=False)
    assert params["C"] == 10.0 and params["fit_bias"] is True
    clone = type(model)(**params)
    assert clone.get_params(deep=False) == params
    # default kernel: RBF from gpc_literate.kernels
    assert isinstance(KernelAdatron(v=0.5).fit(X, y).kernel_, RBF)


def test_loo_attributes(crabs):
    X, y = crabs
    model = KernelAdatron(C=np.inf, v=0.5).fit(X, y)
    y_pm = np.where(y == model.classes_[1], 1.0, -1.0)
    assert model.loo_decision_.shape == (len(y),)
    assert model.loo_error_ == pytest.approx(np.mean(y_pm * model.loo_decision_ <= 0))
    # non-support vectors keep their activation; support vectors lose margin
    non_sv, _, _ = svm_groups(model.alpha_, model.C)
    h = model.decision_function(X)
    np.testing.assert_allclose(model.loo_decision_[non_sv], h[non_sv], atol=1e-10)
    margins_train = y_pm * (h + model.v * y_pm * model.alpha_)
    assert np.all(y_pm[~non_sv] * model.loo_decision_[~non_sv] < margins_train[~non_sv])
    off = KernelAdatron(C=np.inf, v=0.5, compute_loo=False).fit(X, y)
    assert off.loo_error_ is None and off.loo_decision_ is None


def lr_loo_by_linear_systems(K, y, alpha, bias, C, v, fit_bias):
    """For each support vector l: solve eq-loo-system (eq-loo-bias-system) and refit by hand."""
    n = len(y)
    Kn = K + v * np.eye(n)
    h = Kn @ (y * alpha) + bias
    _, margin_sv, _ = svm_groups(alpha, C)
    out = h.copy()
    for l in np.flatnonzero(alpha > 0):
        S = np.flatnonzero(margin_sv & (np.arange(n) != l))
        rhs = Kn[S, l] * y[l] * alpha[l]
        if fit_bias:
            A = np.zeros((S.size + 1, S.size + 1))
            A[:-1, :-1], A[:-1, -1], A[-1, :-1] = Kn[np.ix_(S, S)], 1.0, 1.0
            sol = solve(A, np.append(rhs, y[l] * alpha[l]))
            u, db = sol[:-1], sol[-1]
        else:
            u, db = solve(Kn[np.ix_(S, S)], rhs), 0.0
        new = alpha.copy()
        new[S] += y[S] * u
        new[l] = 0.0
        out[l] = K[l] @ (y * new) + bias + db
    return out


@pytest.mark.parametrize("fit_bias", [False, True])
@pytest.mark.parametrize("C,v", [(3.0, 0.0), (np.inf, 0.4), (4.0, 0.2)])
def test_lr_loo_formula_matches_literal_linear_systems(crabs, C, v, fit_bias):
    X, y = crabs
    y_pm = np.where(y > 0, 1.0, -1.0)
    K = RBF(length_scale=0.8)(X)
    res = kernel_adatron(
        K, y_pm, C=C, v=v, fit_bias=fit_bias, tol=1e-7, max_iter=200000
    )
    fast = lr_loo_activations(K, y_pm, res.alpha, res.bias, C=C, v=v, fit_bias=fit_bias)
    slow = lr_loo_by_linear_systems(K, y_pm, res.alpha, res.bias, C, v, fit_bias)
    np.testing.assert_allclose(fast, slow, atol=1e-8)


def test_lr_loo_without_margin_support_vectors():
    """All support vectors at the bound: no linear system, sigma_l = k_ll; with a bias a warning."""
    X, y = blobs(20, seed=7, shift=0.1)
    K = RBF()(X)
    alpha = np.full(20, 0.01)  # C = 0.01: every alpha at the bound
    loo = lr_loo_activations(K, y, alpha, 0.0, C=0.01)
    np.testing.assert_allclose(loo, K @ (y * alpha) - y * alpha * np.diag(K))
    with pytest.warns(UserWarning, match="no margin support vectors"):
        lr_loo_activations(K, y, alpha, 0.0, C=0.01, fit_bias=True)


def test_svm_groups():
    non, margin, bound = svm_groups([0.0, 0.5, 1.0, 1e-12], C=1.0)
    np.testing.assert_array_equal(non, [True, False, False, False])
    np.testing.assert_array_equal(margin, [False, True, False, True])
    np.testing.assert_array_equal(bound, [False, False, True, False])
