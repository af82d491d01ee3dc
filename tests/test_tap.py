"""gpc_literate.tap: the TAP mean-field theory, chapter 10 (book/10_tap.md)."""

import numpy as np
import pytest
from scipy.linalg import cho_factor, cho_solve
from scipy.special import log_ndtr

from gpc_literate import datasets
from gpc_literate.base import ConvergenceWarning
from gpc_literate.kernels import RBF
from gpc_literate.likelihoods import Gaussian, StepFlip, normal_ratio
from gpc_literate.loo import exact_loo_error
from gpc_literate.meanfield import naive_mean_field
from gpc_literate.reference import exact_posterior_moments
from gpc_literate.svm import KernelAdatron
from gpc_literate.tap import TAP, tap_equations, tap_fixed_point


@pytest.fixture(scope="module")
def crabs():
    d = datasets.load("crabs")
    return d.X_train, d.y_train.astype(float), d.X_test, d.y_test


def test_exact_for_gaussian_likelihood():
    rng = np.random.default_rng(1)
    X = rng.uniform(-3, 3, size=(30, 1))
    y = np.sin(X[:, 0]) + 0.3 * rng.normal(size=30)
    K = RBF(length_scale=1.0)(X)
    s2 = 0.1
    B = cho_factor(K + s2 * np.eye(30))
    coef = cho_solve(B, y)
    B_inv_diag = np.diag(cho_solve(B, np.eye(30)))
    sol = tap_fixed_point(K, y, Gaussian(s2), tol=1e-11)
    assert sol.converged
    assert np.allclose(sol.mean, K @ coef, atol=1e-8)
    assert np.allclose(sol.var, np.diag(K - K @ cho_solve(B, K)), atol=1e-8)
    assert np.allclose(sol.mu_cav, y - coef / B_inv_diag, atol=1e-8)  # LOO means
    assert np.allclose(sol.var_cav, 1 / B_inv_diag - s2, atol=1e-8)  # LOO variances
    log_ev = -0.5 * y @ coef - np.sum(np.log(np.diag(B[0]))) - 15 * np.log(2 * np.pi)
    assert abs(sol.log_evidence - log_ev) < 1e-8


@pytest.mark.parametrize("kappa, v", [(0.0, 0.0), (0.0, 0.2), (0.05, 0.1)])
def test_fixed_point_satisfies_the_nips_equations(crabs, kappa, v):
    X, y, _, _ = crabs
    K = RBF(length_scale=2.0)(X) + v * np.eye(len(y))
    lik = StepFlip(kappa)
    sol = tap_fixed_point(K, y, lik, tol=1e-9)
    assert sol.converged and sol.residual < 1e-9
    assert max(tap_equations(K, y, lik, sol.coef, sol.var_cav).residual) < 1e-9
    # eqs 12-13 of Opper & Winther (1999), literally, with a dense inverse
    gamma = K @ sol.coef - sol.var_cav * sol.coef
    _, d1, d2 = lik.log_Z(y, gamma, sol.var_cav)
    assert np.allclose(y * d1, sol.alpha, atol=1e-9)
    R = d2  # R = <x^2> - <x>^2 = d^2 log Z
    Lam = -sol.var_cav - 1.0 / R  # lambda = -(Lambda + 1/R)
    assert np.allclose(-np.diag(np.linalg.inv(np.diag(Lam) + K)), R, rtol=1e-6)


@pytest.mark.parametrize("seed", [0, 2])
@pytest.mark.parametrize("kappa", [0.0, 0.05])
def test_closer_to_exact_than_naive(seed, kappa):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(7, 2))
    y = np.sign(X[:, 0] + 0.5 * rng.normal(size=7))
    K = RBF(length_scale=1.0)(X)
    for lik in [StepFlip(kappa)]:
        ref = exact_posterior_moments(K, y, lik, n_samples=200_000, rng=1)
        tap = tap_fixed_point(K, y, lik)
        naive = naive_mean_field(K, y, lik, tol=1e-10)
        err_tap = np.abs(tap.mean - ref.mean).max()
        err_naive = np.abs(naive.mean - ref.mean).max()
        assert err_tap < 0.05 and err_tap < err_naive / 2
        assert abs(tap.log_evidence - ref.log_evidence) < 0.2


def test_loo_estimate_within_one_error_of_retraining(crabs):
    X, y, _, _ = crabs
    model = TAP(
        kernel=RBF(length_scale=1.5), v=0.2, tol=1e-6, damping=0.8, optimizer=None
    )
    fitted = TAP(**model.get_params(deep=False)).fit(X[:40], y[:40])
    exact = exact_loo_error(model, X[:40], y[:40])
    assert abs(round(fitted.loo_error_ * 40) - exact.n_errors) <= 1
    assert np.abs(fitted.loo_decision_ - exact.decision).max() < 0.2
    assert 0.0 <= fitted.error_probability_ <= 0.5


def test_estimator_api(crabs):
    X, y, Xt, yt = crabs
    clf = TAP(kernel=RBF(length_scale=1.5), v=0.2, optimizer=None).fit(X, y)
    assert clf.converged_ and clf.residual_ < clf.tol
    assert np.allclose(clf.decision_function(X), clf.kernel_(X) @ clf.coef_)
    assert np.allclose(clf.mu_cav_, clf.loo_decision_)
    assert np.all(clf.var_cav_ > 0) and np.isfinite(clf.log_marginal_likelihood_)
    proba = clf.predict_proba(Xt)
    assert proba.shape == (len(yt), 2) and np.allclose(proba.sum(axis=1), 1)
    assert np.array_equal(proba[:, 1] > 0.5, clf.decision_function(Xt) > 0)
    warm = TAP(kernel=RBF(length_scale=1.5), v=0.2, optimizer=None).fit(
        X, y, alpha_init=clf.alpha_
    )
    assert warm.converged_ and np.allclose(warm.alpha_, clf.alpha_, atol=1e-6)
    lazy = TAP(
        kernel=RBF(length_scale=1.5), v=0.2, compute_loo=False, optimizer=None
    ).fit(X, y)
    assert lazy.loo_error_ is None and lazy.error_probability_ is None


def test_non_convergence_warns(crabs):
    X, y, _, _ = crabs
    with pytest.warns(ConvergenceWarning):
        clf = TAP(
            kernel=RBF(length_scale=2.0), kappa=0.0, v=0.0, max_iter=3, optimizer=None
        ).fit(X, y)
    assert not clf.converged_ and clf.n_iter_ == 3


@pytest.mark.parametrize(
    "bad",
    [
        dict(kappa=0.5),
        dict(kappa=-0.01),
        dict(v=-0.1),
        dict(tol=0.0),
        dict(max_iter=0),
        dict(damping=0.0),
        dict(damping=1.5),
    ],
)
def test_bad_hyperparameters_name_the_parameter(crabs, bad):
    X, y, _, _ = crabs
    name = next(iter(bad))
    with pytest.raises(ValueError, match=name):
        TAP(**bad, optimizer=None).fit(X, y)


def test_svm_is_a_limit_of_tap(crabs):
    X, y, _, _ = crabs

    class MarginStep:
        def log_Z(self, y, mu, var):
            s = np.sqrt(var)
            z = (y * mu - 1.0) / s
            r = normal_ratio(z)
            return log_ndtr(z), y * r / s, -r * (z + r) / var

    kernel, v, beta = RBF(length_scale=1.5), 0.2, 1000.0
    svm = KernelAdatron(kernel=kernel, v=v, tol=1e-9, max_iter=200_000).fit(X, y)
    K = kernel(X) + v * np.eye(len(y))
    lim = tap_fixed_point(K / beta, y, MarginStep(), tol=1e-8 * beta)
    assert lim.converged
    assert np.abs(lim.alpha / beta - svm.alpha_).max() < 0.1
    assert np.abs(lim.mu_cav - svm.loo_decision_).max() < 0.05
    assert np.sum(y * lim.mu_cav <= 0) == np.sum(y * svm.loo_decision_ <= 0)


def _line(n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3, 3, size=(n, 1))
    return RBF(length_scale=1.0)(x), np.sign(np.sin(2 * x[:, 0]))


def test_adaptive_damping_converges_on_a_hard_noise_free_line():
    """n = 1000, y = sign(sin 2x): fixed damping 0.5 oscillates; the adaptive one converges."""
    K, y = _line(1000)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        sol = tap_fixed_point(K, y, StepFlip(0.0))
    assert sol.converged and sol.residual < 1e-8 and sol.n_iter < 500
    assert (
        max(tap_equations(K, y, StepFlip(0.0), sol.coef, sol.var_cav).residual) < 1e-8
    )
