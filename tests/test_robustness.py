"""Robustness of the numerical internals on degenerate and extreme inputs."""

import time
import tracemalloc
import warnings

import numpy as np
import pytest

from gpc_literate import datasets
from gpc_literate.base import ConvergenceWarning
from gpc_literate.datasets import make_noisy_linear
from gpc_literate.ep_classifier import EP
from gpc_literate.kernels import RBF
from gpc_literate.laplace import Laplace, Logistic
from gpc_literate.likelihoods import Probit, StepFlip
from gpc_literate.tap import TAP, TAPBreakdownError


def _clear(err):
    assert type(err) is not np.linalg.LinAlgError and not isinstance(
        err, FloatingPointError
    )
    assert isinstance(err, ValueError)


def _data(n=30, seed=0):
    X, y = make_noisy_linear(n, 2, 0.3, seed)  # chapter 4's toy problem, labels 0/1
    return X, (y > 0).astype(int)


# 1. TAP on degenerate data: a clear error that names the fix, never a raw LinAlgError
@pytest.mark.parametrize("name", ["titanic", "breast_cancer"])
def test_tap_on_package_datasets_gives_clear_error(name):
    d = datasets.load(name)
    with pytest.raises(ValueError, match="v > 0") as info:
        TAP(optimizer=None).fit(d.X_train, d.y_train)
    _clear(info.value)
    model = TAP(v=1.0, optimizer=None).fit(
        d.X_train, d.y_train
    )  # with input noise it converges
    assert model.converged_


@pytest.mark.parametrize(
    "case", ["bool", "duplicates", "tiny", "long_scale", "constant"]
)
def test_tap_degenerate_inputs(case):
    X, y = _data()
    kernel = None
    if case == "bool":
        X = X > 0
    elif case == "duplicates":
        X, y = np.vstack([X, X[:3]]), np.concatenate([y, 1 - y[:3]])
    elif case == "tiny":
        X, kernel = X * 1e-8, RBF(1.0)  # default_kernel would scale with the data
    elif case == "long_scale":
        kernel = RBF(length_scale=1e8)
    else:
        X = np.ones_like(X)
    with pytest.raises(ValueError, match="kappa > 0") as info:
        TAP(kernel=kernel, optimizer=None).fit(X, y)
    _clear(info.value)


def _long_scale_data():
    r = np.random.default_rng(1)
    X = r.normal(size=(40, 2))
    return X, (X[:, 0] + 0.5 * r.normal(size=40) > 0).astype(int)


@pytest.mark.parametrize("length_scale", [1e3, 1e4, 1e5])
def test_tap_at_a_length_scale_far_beyond_the_data(length_scale):
    # K is numerically of low rank: the noise-free likelihood cannot fit these labels (a
    # clear error), with input noise the fit is a result
    X, y = _long_scale_data()
    with pytest.raises(ValueError, match="v > 0") as info:
        TAP(kernel=RBF(length_scale=length_scale), optimizer=None).fit(X, y)
    _clear(info.value)
    model = TAP(kernel=RBF(length_scale=length_scale), v=0.1, optimizer=None).fit(X, y)
    assert model.converged_ and np.all(np.isfinite(model.predict_proba(X)))
    with pytest.raises(
        ValueError, match="v > 0"
    ) as info:  # the criterion a search calls
        TAP(optimizer=None).fit(X, y).log_marginal_likelihood(
            np.log([length_scale, 1.0]), eval_gradient=True
        )
    _clear(info.value)


def test_tap_search_starts_inside_the_bounds():
    X, y = _long_scale_data()
    with pytest.warns(ConvergenceWarning, match="outside hyperparameter_bounds"):
        model = TAP(
            kernel=RBF(length_scale=1e3), hyperparameter_bounds=(1e-2, 1e2)
        ).fit(X, y)
    assert model.converged_ and 1e-2 <= model.kernel_.length_scale <= 1e2
    assert model.score(X, y) > 0.8


def test_tap_search_with_bounds_far_beyond_tiny_data():
    X, y = _long_scale_data()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = TAP().fit(X * 1e-8, y)
    except ValueError as err:  # every kernel in the bounds is too long
        _clear(err)
        assert "hyperparameter_bounds" in str(err)
    else:
        assert model.converged_ and model.score(X * 1e-8, y) > 0.8


def test_default_kernel_scales_with_tiny_features():
    X, y = _data()
    small = TAP(v=0.1, optimizer=None).fit(X * 1e-8, y)
    plain = TAP(v=0.1, optimizer=None).fit(X, y)
    assert small.converged_ and np.allclose(
        small.alpha_, plain.alpha_, rtol=1e-6, atol=1e-9
    )


def test_tap_breakdown_is_a_value_error():
    assert issubclass(TAPBreakdownError, ValueError)
    X, y = _data(60, seed=3)
    try:
        TAP(
            kernel=RBF(length_scale=0.05, variance=1e6), max_iter=50, optimizer=None
        ).fit(X, y)
    except ValueError as err:
        _clear(err)


# 2. The logistic predictive integral: bounded time and memory for any variance
def test_logistic_predictive_bounded_at_huge_variance():
    X, y = _data(20)
    model = Laplace(
        kernel=RBF(variance=1e8), likelihood=Logistic(), optimizer=None
    ).fit(X, y)
    tracemalloc.start()
    start = time.perf_counter()
    p = model.predict_proba(X[:1] + 0.5)
    elapsed = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert elapsed < 1.0 and peak < 50e6
    assert np.all(np.isfinite(p)) and np.allclose(p.sum(axis=1), 1.0)


def test_logistic_log_z_wide_matches_quadrature():
    from scipy.integrate import quad
    from scipy.special import expit

    lik = Logistic()
    for var in (150.0, 1e4, 1e6):
        s = np.sqrt(var)
        for mu in (-2e3, -30.0, 0.0, 7.0, 300.0):
            lz = lik.log_Z(1.0, mu, var)[0]

            def integrand(t, mu=mu, s=s):
                return expit(mu + s * t) * np.exp(-t * t / 2) / np.sqrt(2 * np.pi)

            t0 = -mu / s
            ref = (
                quad(integrand, -np.inf, t0, epsabs=0, epsrel=1e-12, limit=500)[0]
                + quad(integrand, t0, np.inf, epsabs=0, epsrel=1e-12, limit=500)[0]
            )
            if ref > 1e-200:
                assert abs(lz - np.log(ref)) < 1e-7, (var, mu)
        # derivatives by central differences
        mu0, h = 3.0, 1e-4 * s
        zp, zm, z0 = (lik.log_Z(1.0, mu0 + dh, var) for dh in (h, -h, 0.0))
        assert np.isclose((zp[0] - zm[0]) / (2 * h), z0[1], rtol=1e-5, atol=1e-12)
        assert np.isclose((zp[1] - zm[1]) / (2 * h), z0[2], rtol=1e-4, atol=1e-12)
    p = lik.predictive(np.array([-1e9, 0.0, 1e9]), 1e16)
    assert np.all((p >= 0) & (p <= 1)) and np.isclose(p[1], 0.5)


# 3. EP with a noise-free likelihood and conflicting duplicates
def test_ep_noise_free_conflicting_duplicates():
    with pytest.raises(ValueError, match="noise") as info:
        EP(likelihood=StepFlip(0.0), optimizer=None).fit([[0.0], [0.0]], [0, 1])
    _clear(info.value)
    model = EP(likelihood=Probit(1.0), optimizer=None).fit([[0.0], [0.0]], [0, 1])
    assert np.allclose(model.predict_proba([[0.0]]), 0.5)


@pytest.mark.parametrize("seed", range(5))
def test_ep_noise_free_random_draws(seed):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(8, 1)).astype(float)
    y = rng.integers(0, 2, size=8)
    y[:2] = [0, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            EP(likelihood=StepFlip(0.0), optimizer=None).fit(X, y)
        except ValueError as err:
            _clear(err)
            assert len(str(err)) > 40


# VariationalGP: the bounds belong to the optimiser, never to a fixed kernel
def test_variational_fixed_kernel_is_not_clipped():
    from gpc_literate.variational import VariationalGP

    X, y = _data(25, seed=1)
    kernel = RBF(length_scale=1.0, variance=1e6)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = VariationalGP(kernel=kernel, optimizer=None, n_factors=1).fit(X, y)
    assert not any("bounds" in str(w.message) for w in caught)
    np.testing.assert_allclose(model.kernel_.theta, kernel.theta, rtol=0, atol=0)
    np.testing.assert_allclose(model.kernel_(X), kernel(X), rtol=1e-12)
    assert model.kernel_ is not kernel


def test_variational_optimize_clips_start_with_warning():
    from gpc_literate.variational import VariationalGP

    X, y = _data(25, seed=1)
    kernel = RBF(length_scale=1.0, variance=1e6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with pytest.warns(
            UserWarning,
            match=r"variance.*outside hyperparameter_bounds = \(0.000335463, 2980.96\)",
        ):
            model = VariationalGP(
                kernel=kernel,
                n_factors=1,
                max_iter=3,
                hyperparameter_bounds=(np.exp(-8.0), np.exp(8.0)),
            ).fit(X, y)
    assert np.all(model.kernel_.theta <= 8.0)


# EP's default method is Newton-type EP, which copes with flip noise where sequential EP does
def test_ep_default_method_is_newton_and_robust():
    assert EP(optimizer=None).method == "newton"
    d = datasets.load("crabs")
    for lik in (StepFlip(0.1), Probit(1.0, kappa=0.1)):
        ref = EP(likelihood=lik, method="sequential", optimizer=None).fit(
            d.X_train, d.y_train
        )
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            model = EP(likelihood=lik, optimizer=None).fit(d.X_train, d.y_train)
        assert model.converged_ and ref.converged_
        assert abs(model.log_marginal_likelihood_ - ref.log_marginal_likelihood_) < 1e-6
    for seed in range(6):
        X, y = _data(40, seed=seed)
        y[:3] = 1 - y[:3]  # flipped labels
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = EP(RBF(1.0, 10.0), StepFlip(0.1), optimizer=None).fit(X, y)
        assert np.all(np.isfinite(model.posterior_mean_))
        assert np.isfinite(model.log_marginal_likelihood_)
