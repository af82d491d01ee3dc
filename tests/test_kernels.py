"""Unit tests of gpc_literate.kernels (chapter 3): values, PSD, gradients, theta, validation."""

import copy

import numpy as np
import pytest

from gpc_literate.kernels import (
    RBF,
    ArcSin,
    Cauchy,
    Kernel,
    Linear,
    Matern,
    Product,
    Sum,
)

D = 3

KERNELS = {
    "rbf_iso": lambda: RBF(0.8, variance=1.5),
    "rbf_iso_bias": lambda: RBF(0.8, variance=1.5, bias=0.3),
    "rbf_ard": lambda: RBF([0.5, 1.0, 2.5], variance=2.0),
    "rbf_ard_bias": lambda: RBF([0.5, 1.0, 2.5], variance=2.0, bias=0.4),
    "arcsin_iso": lambda: ArcSin(0.7, variance=1.2),
    "arcsin_iso_bias": lambda: ArcSin(0.7, variance=1.2, bias_variance=0.5),
    "arcsin_ard": lambda: ArcSin([0.3, 1.0, 3.0], variance=0.9),
    "arcsin_ard_bias": lambda: ArcSin([0.3, 1.0, 3.0], variance=0.9, bias_variance=2.0),
    "linear": lambda: Linear(0.5),
    "linear_bias": lambda: Linear(0.5, bias=2.0),
    "cauchy_iso": lambda: Cauchy(0.9, variance=1.3),
    "cauchy_ard": lambda: Cauchy([0.4, 1.0, 2.5], variance=0.7),
    "matern12_iso": lambda: Matern(0.9, variance=1.3, nu=0.5),
    "matern12_ard": lambda: Matern([0.4, 1.0, 2.5], variance=0.7, nu=0.5),
    "matern32_ard": lambda: Matern([0.4, 1.0, 2.5], variance=0.7, nu=1.5),
    "matern52_iso": lambda: Matern(1.1, variance=2.0, nu=2.5),
    "matern52_ard": lambda: Matern([0.6, 1.5, 0.8], variance=2.2, nu=2.5),
    "sum_rbf_linear": lambda: (
        RBF([0.5, 1.0, 2.5], variance=2.0) + Linear(0.5, bias=0.2)
    ),
    "product_matern_arcsin": lambda: Matern(1.2) * ArcSin(0.7, bias_variance=0.5),
    "nested": lambda: (Matern(0.8, nu=1.5) + Cauchy(2.0)) * RBF(3.0, bias=0.1),
}


@pytest.fixture(params=sorted(KERNELS))
def kernel(request):
    return KERNELS[request.param]()


@pytest.fixture
def X():
    return np.random.default_rng(1).normal(size=(30, D))


@pytest.fixture
def Z():
    return np.random.default_rng(2).normal(size=(9, D))


def fd_gradient(kernel, X, h=1e-5):
    theta = kernel.theta
    G = np.empty((len(X), len(X), theta.size))
    for j in range(theta.size):
        e = np.zeros_like(theta)
        e[j] = h
        G[:, :, j] = (
            kernel.with_theta(theta + e)(X) - kernel.with_theta(theta - e)(X)
        ) / (2 * h)
    return G


# -- formulas ------------------------------------------------------------------------------
def test_rbf_formula(X, Z):
    ell = np.array([0.5, 1.0, 2.0])
    k = RBF(ell, variance=1.7, bias=0.2)
    r2 = (((X[:, None, :] - Z[None, :, :]) / ell) ** 2).sum(-1)
    np.testing.assert_allclose(k(X, Z), 1.7 * np.exp(-0.5 * r2) + 0.2, rtol=1e-12)


def test_rbf_matches_seeger_eq8(X):
    # Seeger (2000) eq 8: C (exp(-1/(2d) sum w_i (x_i - x'_i)^2) + v)
    ell, C, v = np.array([0.5, 1.0, 2.0]), 1.7, 0.2
    w = D / ell**2
    ref = C * (np.exp(-(w * (X[:, None] - X[None]) ** 2).sum(-1) / (2 * D)) + v)
    np.testing.assert_allclose(RBF(ell, variance=C, bias=C * v)(X), ref, rtol=1e-12)


def test_arcsin_formula(X, Z):
    w, b, s2 = np.array([0.3, 1.0, 2.0]), 0.4, 1.3
    k = ArcSin(w, variance=s2, bias_variance=b)
    c = b + (w * X) @ Z.T
    sx = b + (w * X * X).sum(1)
    sz = b + (w * Z * Z).sum(1)
    ref = s2 * 2 / np.pi * np.arcsin(c / np.sqrt(np.outer(1 + sx, 1 + sz)))
    np.testing.assert_allclose(k(X, Z), ref, rtol=1e-12, atol=1e-15)


def test_arcsin_monte_carlo_network():
    """Covariance of a finite erf network = arcsin kernel (within 5 MC standard errors)."""
    rng = np.random.default_rng(3)
    w, b = np.array([0.4, 1.5, 0.8]), 0.7
    X = rng.normal(size=(8, D)) * 1.5
    M = 100_000
    U = rng.normal(size=(M, D + 1)) * np.sqrt(np.r_[b, w])
    from scipy.special import erf

    G = erf(U @ np.hstack([np.ones((len(X), 1)), X]).T / np.sqrt(2))
    K_mc = G.T @ G / M
    assert np.abs(K_mc - ArcSin(w, bias_variance=b)(X)).max() < 5 / np.sqrt(M)


def test_linear_formula(X, Z):
    np.testing.assert_allclose(
        Linear(0.5, bias=2.0)(X, Z), 0.5 * X @ Z.T + 2.0, rtol=1e-12
    )


def test_cauchy_formula(X, Z):
    ell = np.array([0.4, 1.0, 2.5])
    r2 = (((X[:, None, :] - Z[None, :, :]) / ell) ** 2).sum(-1)
    np.testing.assert_allclose(
        Cauchy(ell, variance=0.7)(X, Z), 0.7 / (1 + r2), rtol=1e-12
    )


def test_isotropic_equals_ard_with_equal_scales(X):
    np.testing.assert_allclose(RBF(0.7)(X), RBF([0.7] * D)(X), rtol=1e-12)
    np.testing.assert_allclose(Cauchy(0.7)(X), Cauchy([0.7] * D)(X), rtol=1e-12)
    np.testing.assert_allclose(ArcSin(0.7)(X), ArcSin([0.7] * D)(X), rtol=1e-12)


def test_from_sigma2_sonar_weights():
    sigma2, N = 0.5, 60
    assert RBF.from_sigma2(sigma2, N).length_scale == pytest.approx(np.sqrt(sigma2 * N))
    assert ArcSin.from_sigma2(sigma2, N).weight_variance == pytest.approx(
        1 / (sigma2 * N)
    )
    with pytest.raises(ValueError, match="sigma2"):
        RBF.from_sigma2(-1.0, N)
    with pytest.raises(ValueError, match="n_features"):
        ArcSin.from_sigma2(0.5, 0)
    with pytest.raises(TypeError, match="n_features"):
        ArcSin.from_sigma2(0.5, 2.5)


# -- structural properties -------------------------------------------------------------------
def test_symmetric_and_psd(kernel, X):
    K = kernel(X)
    assert K.shape == (len(X), len(X))
    assert np.array_equal(K, K.T)
    eig = np.linalg.eigvalsh(K)
    assert eig[0] >= -1e-10 * eig[-1]


def test_psd_many_points(kernel):
    X = np.random.default_rng(4).normal(size=(150, D)) * 2.0
    eig = np.linalg.eigvalsh(kernel(X))
    assert eig[0] >= -1e-10 * eig[-1]


def test_diag(kernel, X):
    np.testing.assert_allclose(kernel.diag(X), np.diag(kernel(X)), rtol=1e-12)
    assert kernel.diag(X).shape == (len(X),)


def test_cross_covariance(kernel, X, Z):
    KXZ = kernel(X, Z)
    assert KXZ.shape == (len(X), len(Z))
    np.testing.assert_allclose(KXZ, kernel(Z, X).T, rtol=1e-12, atol=1e-14)
    K = kernel(X)
    np.testing.assert_allclose(
        kernel(X, X), K, rtol=1e-10, atol=1e-12 * np.abs(K).max()
    )


def test_gradient_matches_finite_differences(kernel, X):
    G = kernel.gradient(X)
    p = kernel.theta.size
    assert G.shape == (len(X), len(X), p) and p == len(kernel.hyperparameter_names)
    G_fd = fd_gradient(kernel, X)
    for j in range(p):
        scale = np.abs(G[:, :, j]).max()
        assert scale > 0
        assert np.abs(G[:, :, j] - G_fd[:, :, j]).max() <= 1e-6 * scale, (
            kernel.hyperparameter_names[j]
        )


def test_gradient_dot_is_the_contraction_of_the_gradient(kernel, X):
    W = np.random.default_rng(7).normal(size=(len(X), len(X)))  # not symmetric
    G = kernel.gradient(X)
    expected = np.einsum("ijp,ij->p", G, W)
    scale = np.einsum("ijp,ij->p", np.abs(G), np.abs(W)).max()
    assert np.abs(kernel.gradient_dot(X, W) - expected).max() <= 1e-12 * scale
    with pytest.raises(ValueError, match=r"W must have shape \(n, n\)"):
        kernel.gradient_dot(X, W[:, :-1])


def test_gradient_symmetric(kernel, X):
    G = kernel.gradient(X)
    np.testing.assert_allclose(G, G.transpose(1, 0, 2), rtol=1e-12, atol=1e-15)


def test_arcsin_gradient_large_inputs():
    # large s: q q' - c^2 is guarded; gradients stay finite. Finite differences lose all
    # precision where arcsin is near +-pi/2, so the diagonal is checked against its closed
    # form dk(x, x) = variance (2/pi) ds / ((1 + s) sqrt(1 + 2 s)) (the general formula
    # cancels ~log10(s) digits there), and against FD at a moderate scale.
    rng = np.random.default_rng(5)
    w, b = np.array([0.3, 1.0, 3.0]), 1.0
    k = ArcSin(w, bias_variance=b)
    X = rng.normal(size=(10, D)) * 300
    X[1] = X[0]  # a duplicate row
    G = k.gradient(X)
    assert np.all(np.isfinite(G))
    s = b + (w * X * X).sum(1)
    ds = np.column_stack([w * X * X, np.zeros(len(X)), np.full(len(X), b)])
    dk_diag = (2 / np.pi) * ds / ((1 + s) * np.sqrt(1 + 2 * s))[:, None]
    dk_diag[:, D] = k.diag(X)
    np.testing.assert_allclose(np.diagonal(G, axis1=0, axis2=1).T, dk_diag, rtol=1e-8)
    X = rng.normal(size=(10, D)) * 10
    G, G_fd = k.gradient(X), fd_gradient(k, X)
    for j in range(G.shape[2]):
        assert (
            np.abs(G[:, :, j] - G_fd[:, :, j]).max() <= 1e-6 * np.abs(G[:, :, j]).max()
        )


def test_single_sample(kernel):
    x = np.ones((1, D))
    assert kernel(x).shape == (1, 1)
    assert kernel.gradient(x).shape == (1, 1, kernel.theta.size)


# -- theta -----------------------------------------------------------------------------------
def test_theta_round_trip(kernel):
    theta = kernel.theta
    k2 = copy.deepcopy(kernel)
    k2.theta = theta + 0.3
    np.testing.assert_allclose(k2.theta, theta + 0.3, rtol=1e-12)
    k2.theta = theta
    np.testing.assert_allclose(k2.theta, theta, rtol=1e-12, atol=1e-15)
    # theta is a copy: editing it does not change the kernel
    t = kernel.theta
    t[:] = 0.0
    np.testing.assert_allclose(kernel.theta, theta)


def test_with_theta_returns_new_kernel(kernel, X):
    theta = kernel.theta
    K = kernel(X)
    k2 = kernel.with_theta(theta - 0.5)
    assert type(k2) is type(kernel) and k2 is not kernel
    np.testing.assert_allclose(k2.theta, theta - 0.5)
    np.testing.assert_array_equal(kernel.theta, theta)
    np.testing.assert_array_equal(kernel(X), K)


def test_get_params_reconstructs(kernel, X):
    params = kernel.get_params(deep=False)
    k2 = type(kernel)(**params)
    np.testing.assert_array_equal(k2(X), kernel(X))
    assert repr(k2) == repr(kernel)
    if not isinstance(kernel, (Sum, Product)):
        assert repr(kernel).startswith(type(kernel).__name__ + "(")


def test_theta_names_and_order():
    k = RBF([1.0, 2.0], variance=3.0, bias=0.5)
    assert k.hyperparameter_names == (
        "log_length_scale[0]",
        "log_length_scale[1]",
        "log_variance",
        "log_bias",
    )
    np.testing.assert_allclose(k.theta, np.log([1.0, 2.0, 3.0, 0.5]))
    assert RBF(1.0).hyperparameter_names == ("log_length_scale", "log_variance")
    assert ArcSin([1.0, 2.0], bias_variance=0.1).hyperparameter_names == (
        "log_weight_variance[0]",
        "log_weight_variance[1]",
        "log_variance",
        "log_bias_variance",
    )
    assert Linear(bias=1.0).hyperparameter_names == ("log_variance", "log_bias")
    assert Cauchy([1.0, 1.0]).hyperparameter_names == (
        "log_length_scale[0]",
        "log_length_scale[1]",
        "log_variance",
    )


def test_zero_bias_not_in_theta():
    assert RBF(1.0, bias=0.0).theta.size == 2
    assert ArcSin(1.0, bias_variance=0.0).theta.size == 2
    assert Linear(bias=0.0).theta.size == 1
    assert RBF(1.0, bias=0.1).theta.size == 3


def test_setting_theta_keeps_isotropic_scalar():
    k = RBF(1.0)
    k.theta = [0.5, 0.2]
    assert isinstance(k.length_scale, float) and k.length_scale == pytest.approx(
        np.exp(0.5)
    )
    k = RBF([1.0, 2.0])
    k.theta = [0.0, 0.0, 0.0]
    assert k.length_scale.shape == (2,)


@pytest.mark.parametrize("bad", [[0.0], [0.0, 0.0, 0.0, 0.0], [[0.0, 0.0]]])
def test_theta_wrong_length(bad):
    with pytest.raises(ValueError, match="theta"):
        RBF(1.0).theta = bad


@pytest.mark.parametrize("bad", [[np.nan, 0.0], [0.0, np.inf], [0.0, 1e4]])
def test_theta_not_finite_or_out_of_range(bad):
    k = RBF(1.0)
    with pytest.raises(ValueError, match="theta"):
        k.theta = bad
    with pytest.raises(ValueError, match="theta"):
        k.with_theta(bad)
    assert k.length_scale == 1.0


def test_theta_non_numeric():
    with pytest.raises(TypeError, match="theta"):
        RBF(1.0).theta = ["a", "b"]


# -- validation ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "cls, name, value",
    [
        (RBF, "length_scale", 0.0),
        (RBF, "length_scale", -1.0),
        (RBF, "length_scale", np.nan),
        (RBF, "length_scale", [1.0, -2.0]),
        (RBF, "length_scale", [1.0, np.nan]),
        (RBF, "length_scale", []),
        (RBF, "length_scale", [[1.0, 2.0]]),
        (RBF, "variance", 0.0),
        (RBF, "variance", -1.0),
        (RBF, "variance", np.nan),
        (RBF, "variance", [1.0, 2.0]),
        (RBF, "bias", -0.1),
        (RBF, "bias", np.nan),
        (RBF, "bias", np.inf),
        (ArcSin, "weight_variance", 0.0),
        (ArcSin, "weight_variance", [1.0, -1.0]),
        (ArcSin, "weight_variance", np.nan),
        (ArcSin, "variance", -2.0),
        (ArcSin, "bias_variance", -0.5),
        (ArcSin, "bias_variance", np.nan),
        (Linear, "variance", 0.0),
        (Linear, "variance", np.nan),
        (Linear, "bias", -1.0),
        (Cauchy, "length_scale", 0.0),
        (Cauchy, "length_scale", [0.5, -0.5]),
        (Cauchy, "variance", -1.0),
        (Cauchy, "variance", np.inf),
    ],
)
def test_bad_hyperparameter_value(cls, name, value):
    with pytest.raises(ValueError, match=name):
        cls(**{name: value})


@pytest.mark.parametrize(
    "cls, name, value",
    [
        (RBF, "length_scale", "1.0"),
        (RBF, "length_scale", None),
        (RBF, "variance", "big"),
        (RBF, "bias", True),
        (ArcSin, "weight_variance", [1.0, "a"]),
        (ArcSin, "bias_variance", None),
        (Linear, "variance", 1j),
        (Cauchy, "length_scale", object()),
    ],
)
def test_non_numeric_hyperparameter(cls, name, value):
    with pytest.raises(TypeError, match=name):
        cls(**{name: value})


def test_attribute_assignment_is_validated():
    k = RBF(1.0)
    with pytest.raises(ValueError, match="variance"):
        k.variance = -1.0
    k.bias = 0.5
    assert k.theta.size == 3


@pytest.mark.parametrize(
    "kern, name",
    [
        (RBF([1.0, 2.0]), "length_scale"),
        (Cauchy([1.0, 2.0]), "length_scale"),
        (ArcSin([1.0, 2.0]), "weight_variance"),
    ],
)
def test_ard_dimension_mismatch(kern, name, X):
    for call in (
        lambda: kern(X),
        lambda: kern.diag(X),
        lambda: kern.gradient(X),
        lambda: kern(X[:, :2], X),
    ):
        with pytest.raises(ValueError, match=name):
            call()


def test_one_dimensional_X_rejected(kernel):
    with pytest.raises(ValueError, match="2-D"):
        kernel(np.ones(D))
    with pytest.raises(ValueError, match="2-D"):
        kernel.diag(np.ones(D))
    with pytest.raises(ValueError, match="2-D"):
        kernel.gradient(np.ones(D))
    with pytest.raises(ValueError, match="2-D"):
        kernel(np.ones((2, D)), np.ones(D))


@pytest.mark.parametrize(
    "bad",
    [
        np.full((2, D), np.nan),
        np.full((2, D), np.inf),
        np.empty((0, D)),
        np.ones((2, D, 1)),
    ],
)
def test_bad_X_values(kernel, bad):
    with pytest.raises(ValueError, match="X"):
        kernel(bad)


def test_non_numeric_X(kernel):
    with pytest.raises(TypeError, match="X"):
        kernel(np.array([["a", "b", "c"]]))


def test_Z_column_mismatch(X):
    with pytest.raises(ValueError, match="columns"):
        Linear()(X, np.ones((2, D + 1)))


def test_base_class_is_abstract(X):
    with pytest.raises(NotImplementedError):
        Kernel()(X)


def test_no_runtime_warnings_extreme_theta(X):
    # pytest turns RuntimeWarning into errors (pyproject.toml); extreme but valid thetas work
    for k in (RBF(1.0), Cauchy(1.0), ArcSin(1.0), Linear()):
        for shift in (-30.0, 30.0):
            K = k.with_theta(k.theta + shift)(X)
            assert np.all(np.isfinite(K))


@pytest.mark.parametrize("bad", ["rbf", 2.0, lambda X, Z=None: X @ X.T])
def test_every_estimator_rejects_a_kernel_that_is_not_a_Kernel(bad):
    from gpc_literate.ep_classifier import EP
    from gpc_literate.laplace import Laplace
    from gpc_literate.meanfield import NaiveMeanField
    from gpc_literate.criteria import BiasedEP
    from gpc_literate.selection import LSCV
    from gpc_literate.svm import KernelAdatron
    from gpc_literate.tap import TAP
    from gpc_literate.kernels import check_kernel
    from gpc_literate.variational import VariationalGP, VariationalSVM

    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    y = np.array([-1, -1, 1, 1])
    with pytest.raises(TypeError, match="kernel must be a gpc_literate.kernels.Kernel"):
        check_kernel(bad)
    for cls in (
        KernelAdatron,
        NaiveMeanField,
        TAP,
        Laplace,
        EP,
        BiasedEP,
        LSCV,
        VariationalGP,
        VariationalSVM,
    ):
        with pytest.raises(TypeError, match="kernel must be"):
            cls(kernel=bad).fit(X, y)


# -- Matern (chapter 3, sec-kern-matern) -------------------------------------------------------
@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5])
def test_matern_closed_forms_match_the_bessel_form(nu):
    from scipy.special import gamma, kv

    r = np.concatenate([[1e-3], np.linspace(0.05, 15.0, 80)])
    k = Matern(1.0, variance=2.0, nu=nu)(r[:, None], np.zeros((1, 1)))[:, 0]
    z = np.sqrt(2 * nu) * r
    bessel = 2.0 * 2 ** (1 - nu) / gamma(nu) * z**nu * kv(nu, z)
    np.testing.assert_allclose(k, bessel, rtol=1e-10)


def test_matern_tends_to_rbf_as_nu_grows():
    r = np.linspace(0.0, 5.0, 200)[:, None]
    rbf = RBF(1.0)(r, np.zeros((1, 1)))[:, 0]
    gaps = [
        np.abs(Matern(1.0, nu=nu)(r, np.zeros((1, 1)))[:, 0] - rbf).max()
        for nu in (0.5, 1.5, 2.5)
    ]
    assert gaps[0] > gaps[1] > gaps[2]


@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5])
def test_matern_cross_covariance_with_itself_is_exact(nu, X):
    k = Matern([0.5, 1.0, 2.0], nu=nu)
    np.testing.assert_array_equal(np.diag(k(X, X)), np.full(len(X), 1.0))
    np.testing.assert_allclose(k(X, X), k(X), rtol=1e-14, atol=0)


@pytest.mark.parametrize(
    "bad, error",
    [
        (2.0, ValueError),
        (0.0, ValueError),
        ("2.5", TypeError),
        (None, TypeError),
        (True, TypeError),
    ],
)
def test_matern_nu_is_validated(bad, error):
    with pytest.raises(error, match="nu must be one of"):
        Matern(nu=bad)
    k = Matern(nu=1.5)
    with pytest.raises(error, match="nu must be one of"):
        k.set_params(nu=bad)
    assert k.nu == 1.5


def test_matern_nu_is_a_parameter_not_a_hyperparameter():
    k = Matern([1.0, 2.0], variance=3.0, nu=0.5)
    params = k.get_params()
    assert list(params) == ["length_scale", "variance", "nu"] and params["nu"] == 0.5
    assert k.hyperparameter_names == (
        "log_length_scale[0]",
        "log_length_scale[1]",
        "log_variance",
    )
    assert k.set_params(nu=2.5) is k and k.nu == 2.5 and k.theta.size == 3
    assert k.with_theta(k.theta + 1.0).nu == 2.5
    assert repr(k) == "Matern(length_scale=[1.0, 2.0], variance=3.0, nu=2.5)"


# -- Sum and Product (chapter 3, sec-kern-sum-product) -------------------------------------------
def test_sum_and_product_values(X, Z):
    k1, k2 = Matern([0.5, 1.0, 2.0], nu=1.5), Linear(0.4, bias=0.3)
    np.testing.assert_allclose((k1 + k2)(X, Z), k1(X, Z) + k2(X, Z), rtol=1e-14)
    np.testing.assert_allclose((k1 * k2)(X, Z), k1(X, Z) * k2(X, Z), rtol=1e-14)
    np.testing.assert_allclose((k1 * k2).diag(X), k1.diag(X) * k2.diag(X), rtol=1e-14)
    assert isinstance(k1 + k2, Sum) and isinstance(k1 * k2, Product)


def test_combination_theta_names_and_params():
    k = RBF([1.0, 2.0], variance=3.0) + Matern(0.5, nu=0.5)
    assert k.hyperparameter_names == (
        "k1__log_length_scale[0]",
        "k1__log_length_scale[1]",
        "k1__log_variance",
        "k2__log_length_scale",
        "k2__log_variance",
    )
    np.testing.assert_allclose(k.theta, np.log([1.0, 2.0, 3.0, 0.5, 1.0]))
    params = k.get_params(deep=True)
    assert params["k1"] is k.k1 and params["k2__nu"] == 0.5
    assert set(k.get_params(deep=False)) == {"k1", "k2"}
    assert k.set_params(k1__variance=5.0, k2__nu=2.5) is k
    assert k.k1.variance == 5.0 and k.k2.nu == 2.5


def test_combination_set_params_refuses_and_changes_nothing():
    k = RBF(1.0) * Cauchy(2.0)
    with pytest.raises(ValueError, match="Invalid parameter"):
        k.set_params(k3__length_scale=1.0)
    with pytest.raises(ValueError, match="Invalid parameter"):
        k.set_params(k1__nonsense=1.0)
    with pytest.raises(ValueError, match="must be positive"):
        k.set_params(k1__length_scale=3.0, k2__length_scale=-1.0)
    assert k.k1.length_scale == 1.0 and k.k2.length_scale == 2.0
    with pytest.raises(TypeError, match="k2 must be a gpc_literate.kernels.Kernel"):
        k.set_params(k2="rbf")
    with pytest.raises(ValueError, match="length 4"):
        k.theta = [0.0, 0.0]


@pytest.mark.parametrize("bad", ["rbf", 2.0, None])
def test_combination_needs_two_kernels(bad):
    with pytest.raises(TypeError, match="k1 must be a gpc_literate.kernels.Kernel"):
        Sum(bad, RBF())
    with pytest.raises(TypeError, match="k2 must be a gpc_literate.kernels.Kernel"):
        Product(RBF(), bad)
    with pytest.raises(TypeError):
        RBF() + bad
    with pytest.raises(TypeError):
        RBF() * bad


def test_combination_clone_shares_nothing():
    from sklearn.base import clone

    k = RBF([1.0, 2.0]) + Linear(0.5)
    c = clone(k)
    assert c is not k and c.k1 is not k.k1 and repr(c) == repr(k)
    c.set_params(k1__length_scale=[5.0, 5.0])
    assert k.k1.length_scale.tolist() == [1.0, 2.0]
    w = copy.deepcopy(k).with_theta(k.theta + 1.0)
    np.testing.assert_allclose(w.theta, k.theta + 1.0)
    np.testing.assert_allclose(k.theta, np.log([1.0, 2.0, 1.0, 0.5]))


def test_product_repr_brackets_a_sum():
    k = (RBF(1.0) + Linear(0.5)) * Matern(2.0)
    assert repr(k) == (
        "(RBF(length_scale=1.0, variance=1.0, bias=0.0) + "
        "Linear(variance=0.5, bias=0.0)) * "
        "Matern(length_scale=2.0, variance=1.0, nu=2.5)"
    )


def test_combination_checks_the_inputs_of_each_part():
    k = RBF([1.0, 2.0]) + Linear()
    with pytest.raises(ValueError):
        k(np.ones((4, 3)))


# -- scikit-learn's kernels, wrapped (sec-kern-sklearn) ---------------------------------


def _sk_kernels():
    from sklearn.gaussian_process import kernels as skk

    return [
        skk.ConstantKernel(1.3) * skk.RBF([0.7, 1.9]),
        skk.Matern(0.8, nu=1.5) + skk.WhiteKernel(0.1),
        skk.RationalQuadratic(1.2, 0.5) * skk.DotProduct(0.4),
        skk.ConstantKernel(2.0, "fixed") * skk.RBF(1.0),
    ]


@pytest.mark.parametrize("index", range(4))
def test_sklearn_kernel_matrix_and_gradient(index):
    """SklearnKernel: scikit-learn's K, exactly symmetric; dK/dtheta within 1e-6 of
    central differences; with_theta, names and theta in step."""
    from gpc_literate.base import central_difference
    from gpc_literate.kernels import SklearnKernel

    inner = _sk_kernels()[index]
    k = SklearnKernel(inner)
    X = np.random.default_rng(index).normal(size=(7, 2))
    K = k(X)
    assert np.array_equal(K, K.T) and np.allclose(K, inner(X), rtol=1e-14, atol=0)
    assert np.allclose(k.diag(X), np.diag(inner(X)), rtol=1e-12, atol=0)
    assert len(k.hyperparameter_names) == k.theta.size == inner.theta.size
    G = k.gradient(X)
    assert G.shape == (7, 7, k.theta.size)
    for j in range(k.theta.size):

        def entry(t, j=j):
            theta = k.theta.copy()
            theta[j] = t[0]
            return k.with_theta(theta)(X).ravel()

        numeric = central_difference(entry, k.theta[j : j + 1])
        assert np.allclose(G[:, :, j].ravel(), numeric.ravel(), rtol=1e-6, atol=1e-8)


def test_sklearn_kernel_params_clone_and_refusals():
    from sklearn.base import clone
    from sklearn.gaussian_process import kernels as skk

    from gpc_literate.kernels import SklearnKernel, check_kernel

    k = SklearnKernel(skk.ConstantKernel(1.0) * skk.RBF(1.0))
    assert "kernel__k2__length_scale" in k.get_params(deep=True)
    assert k.set_params(kernel__k2__length_scale=2.0) is k
    assert np.isclose(k.kernel.k2.length_scale, 2.0)
    c = clone(k)
    assert c is not k and c.kernel is not k.kernel and np.array_equal(c.theta, k.theta)
    with pytest.raises(ValueError, match="Invalid parameter"):
        k.set_params(kernel__nope=1.0)
    with pytest.raises(TypeError, match="scikit-learn kernel"):
        SklearnKernel(RBF())
    with pytest.raises(TypeError, match=r"SklearnKernel\(RBF"):
        check_kernel(skk.RBF())
    with pytest.raises(ValueError, match="length 2"):
        k.with_theta([0.0])


def test_ep_with_a_wrapped_kernel_equals_ours():
    """EP at a fixed kernel: scikit-learn's C * Matern(5/2) wrapped gives our Matern's
    log evidence to 1e-10."""
    from sklearn.gaussian_process import kernels as skk

    from gpc_literate.ep_classifier import EP
    from gpc_literate.kernels import Matern, SklearnKernel

    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 2))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=30) > 0, 1, -1)
    sk = SklearnKernel(skk.ConstantKernel(1.5) * skk.Matern([1.0, 2.0], nu=2.5))
    a = EP(sk, optimizer=None).fit(X, y)
    b = EP(Matern([1.0, 2.0], variance=1.5, nu=2.5), optimizer=None).fit(X, y)
    assert abs(a.log_marginal_likelihood_ - b.log_marginal_likelihood_) < 1e-10
