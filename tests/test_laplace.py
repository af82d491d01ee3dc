"""gpc_literate.laplace (chapter 12): Logistic, the mode, the evidence and its gradient, Laplace."""

import warnings

from functools import partial

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.linalg import cho_factor, cho_solve
from scipy.special import expit, ndtr

from gpc_literate.base import maximize_criterion, ConvergenceWarning, NotFittedError
from gpc_literate.datasets import load
from gpc_literate.kernels import RBF, ArcSin
from gpc_literate.laplace import (
    Laplace,
    LaplaceMode,
    Logistic,
    laplace_log_evidence,
    laplace_mode,
)
from gpc_literate.likelihoods import Gaussian, Probit, StepFlip


@pytest.fixture(scope="module")
def toy():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((50, 3))
    y = np.where(X[:, 0] - 0.5 * X[:, 1] + 0.5 * rng.standard_normal(50) > 0, 1.0, -1.0)
    return X, y


@pytest.fixture(scope="module")
def synth():
    return load("synth")


# --------------------------------------------------------------------------- Logistic


def _log_z_quad(y, mu, var):
    """Reference log Z of the logistic likelihood by adaptive quadrature (scipy quad).

    For s = sqrt(var) <= 5 the integral of sigma(y f) N(f; mu, var) directly; for larger s,
    where the step of sigma is too narrow for quad on the range of the Gaussian, the exact
    split Z = Phi(m/s) + int_0^inf sigma(-u) [N(u; -m, var) - N(u; m, var)] du, m = y mu.
    """
    s = np.sqrt(var)
    gauss = lambda f, c: np.exp(-0.5 * ((f - c) / s) ** 2) / (s * np.sqrt(2 * np.pi))  # noqa: E731
    if s <= 5:
        lo, hi = mu - 12 * s - var, mu + 12 * s + var  # the tilted mass lies within
        points = sorted({x for x in (mu, 0.0) if lo < x < hi})
        value = quad(
            lambda f: expit(y * f) * gauss(f, mu),
            lo,
            hi,
            points=points,
            epsabs=0,
            epsrel=1e-13,
            limit=2000,
        )[0]
    else:
        m = y * mu
        points = [abs(m)] if abs(m) < 80 else None
        corr = quad(
            lambda u: expit(-u) * (gauss(u, -m) - gauss(u, m)),
            0,
            80,
            points=points,
            epsabs=0,
            epsrel=1e-13,
            limit=2000,
        )[0]
        value = ndtr(m / s) + corr
    return np.log(value)


@pytest.mark.parametrize("var", [1e-6, 0.2, 3.0, 40.0, 900.0, 3e4])
@pytest.mark.parametrize("mu", [-60.0, -4.0, 0.0, 0.7, 12.0])
@pytest.mark.parametrize("y", [1.0, -1.0])
def test_logistic_log_Z_matches_quad(y, mu, var):
    assert abs(Logistic().log_Z(y, mu, var)[0] - _log_z_quad(y, mu, var)) < 1e-11


@pytest.mark.parametrize("var", [0.0, 0.4, 15.0, 2500.0])
@pytest.mark.parametrize("y", [1.0, -1.0])
def test_logistic_log_Z_derivatives_match_finite_differences(y, var):
    lik, h = Logistic(), 1e-5
    mu = np.linspace(-30.0, 30.0, 61)
    zp, zm, z0 = (
        lik.log_Z(y, mu + h, var),
        lik.log_Z(y, mu - h, var),
        lik.log_Z(y, mu, var),
    )
    np.testing.assert_allclose((zp[0] - zm[0]) / (2 * h), z0[1], rtol=0, atol=1e-8)
    np.testing.assert_allclose((zp[1] - zm[1]) / (2 * h), z0[2], rtol=0, atol=1e-8)


@pytest.mark.parametrize("y", [1.0, -1.0])
def test_logistic_log_prob_derivatives_match_finite_differences(y):
    lik, h = Logistic(), 1e-5
    f = np.linspace(-40.0, 40.0, 161)
    d = lik.log_prob_derivatives(y, f)
    up = (lik.log_prob(y, f + h), *lik.log_prob_derivatives(y, f + h))
    down = (lik.log_prob(y, f - h), *lik.log_prob_derivatives(y, f - h))
    for k in range(3):
        np.testing.assert_allclose((up[k] - down[k]) / (2 * h), d[k], rtol=0, atol=1e-8)


def test_logistic_values_and_limits():
    lik = Logistic()
    f = np.array([-800.0, -30.0, -1.0, 0.0, 2.0, 40.0, 800.0])
    with np.errstate(over="raise"):
        lp = lik.log_prob(1.0, f)
    np.testing.assert_allclose(lp, -np.logaddexp(0.0, -f), rtol=1e-15)
    assert np.all(np.isfinite(lik.log_prob(-1.0, f)))
    w = -lik.log_prob_derivatives(1.0, f)[1]
    assert np.all((w >= 0) & (w <= 0.25)) and w[3] == 0.25
    # var = 0: the likelihood itself, to full relative precision
    z = lik.log_Z(1.0, f, 0.0)
    np.testing.assert_allclose(z[0], lp, rtol=1e-15)
    np.testing.assert_allclose(z[1:], lik.log_prob_derivatives(1.0, f)[:2], rtol=1e-15)
    # broadcasting and scalars
    assert np.shape(lik.log_Z(np.ones((2, 3)), 0.5, np.array([0.1, 1.0, 10.0]))[0]) == (
        2,
        3,
    )
    assert np.ndim(lik.log_Z(1.0, 0.5, 2.0)[0]) == 0
    assert np.ndim(lik.predictive(0.5, 2.0)) == 0


def test_logistic_predictive():
    lik = Logistic()
    mu = np.linspace(-8, 8, 33)
    for var in (0.0, 1.0, 50.0):
        p = lik.predictive(mu, var)
        assert np.all((p > 0) & (p < 1))
        np.testing.assert_allclose(
            p + lik.predictive(-mu, var), 1.0, rtol=0, atol=1e-14
        )
    assert lik.predictive(0.0, 7.0) == pytest.approx(0.5, abs=1e-14)
    # Monte Carlo of the Gaussian average
    rng = np.random.default_rng(0)
    draws = expit(1.3 + 2.0 * rng.standard_normal(200_000))
    se = draws.std() / np.sqrt(draws.size)
    assert abs(draws.mean() - lik.predictive(1.3, 4.0)) < 4 * se


def test_logistic_validation_and_params():
    lik = Logistic()
    assert lik.get_params() == {} and repr(lik) == "Logistic()"
    assert lik.set_params() is lik
    with pytest.raises(ValueError, match="y must contain only"):
        lik.log_prob(0.5, 1.0)
    with pytest.raises(ValueError, match="var must be >= 0"):
        lik.log_Z(1.0, 0.0, -1.0)
    with pytest.raises(ValueError, match="mu must be finite"):
        lik.log_Z(1.0, np.nan, 1.0)
    with pytest.raises(ValueError, match="unknown parameter"):
        lik.set_params(kappa=0.1)


# --------------------------------------------------------------------------- the mode


@pytest.mark.parametrize("lik", [Probit(1.0), Probit(0.2), Logistic()], ids=repr)
def test_mode_satisfies_the_mode_condition(synth, lik):
    X, y = synth.X_train, synth.y_train.astype(float)
    K = RBF(0.5, variance=10.0)(X)
    mode = laplace_mode(K, y, lik)
    assert isinstance(mode, LaplaceMode)
    g = lik.log_prob_derivatives(y, mode.f)[0]
    assert mode.converged and mode.residual < 1e-8
    assert np.max(np.abs(g - mode.alpha)) < 1e-8
    # f - K g = K (alpha - g): bounded by the row sums of |K| times the residual
    bound = np.max(np.abs(K).sum(axis=1)) * mode.residual + 1e-12 * np.max(
        np.abs(mode.f)
    )
    assert np.max(np.abs(mode.f - K @ g)) <= bound
    assert np.all(y * mode.alpha > 0)
    assert np.all(np.diff(mode.objective) >= -1e-12 * np.abs(mode.objective[1:]))
    assert len(mode.objective) == mode.n_iter + 1 == len(mode.step_sizes) + 1
    # L is the factor of B at the returned mode
    B = np.eye(len(y)) + mode.sqrt_w[:, None] * K * mode.sqrt_w[None, :]
    np.testing.assert_allclose(mode.L @ mode.L.T, B, rtol=0, atol=1e-10)


def test_mode_with_explicit_inverse(toy):
    X, y = toy
    K = RBF(1.0, variance=2.0, bias=1.0)(X) + 0.1 * np.eye(len(y))
    mode = laplace_mode(K, y, Probit(1.0), tol=1e-10)
    g = Probit(1.0).log_prob_derivatives(y, mode.f)[0]
    assert np.max(np.abs(g - cho_solve(cho_factor(K), mode.f))) < 1e-9


def test_safeguard_keeps_the_objective_from_decreasing(synth):
    X, y = synth.X_train, synth.y_train.astype(float)
    mode = laplace_mode(RBF(0.1, variance=1e4)(X), y, Probit(0.05))
    assert mode.converged
    assert np.any(mode.step_sizes < 1.0)
    assert np.all(np.diff(mode.objective) >= -1e-12 * np.abs(mode.objective[1:]))


def test_warm_start(toy):
    X, y = toy
    K = RBF(1.0, variance=3.0)(X)
    cold = laplace_mode(K, y, Logistic())
    warm = laplace_mode(K, y, Logistic(), alpha_init=cold.alpha)
    assert warm.n_iter == 0 and warm.converged
    np.testing.assert_allclose(warm.f, cold.f, rtol=0, atol=1e-10)
    bad = laplace_mode(K, y, Logistic(), alpha_init=-1e3 * y)  # worse than 0: ignored
    np.testing.assert_allclose(bad.f, cold.f, rtol=0, atol=1e-8)
    with pytest.raises(ValueError, match="alpha_init"):
        laplace_mode(K, y, Logistic(), alpha_init=np.zeros(3))


def test_mode_non_convergence_warns(toy):
    X, y = toy
    with pytest.warns(ConvergenceWarning, match="increase max_iter"):
        mode = laplace_mode(RBF(1.0, variance=5.0)(X), y, Probit(1.0), max_iter=1)
    assert not mode.converged and mode.n_iter == 1 and mode.residual >= 1e-8


def test_mode_argument_errors(toy):
    X, y = toy
    K = RBF()(X)
    with pytest.raises(ValueError, match="max_iter"):
        laplace_mode(K, y, Probit(), max_iter=0)
    with pytest.raises(TypeError, match="max_iter"):
        laplace_mode(K, y, Probit(), max_iter=3.0)
    with pytest.raises(ValueError, match="tol"):
        laplace_mode(K, y, Probit(), tol=0.0)
    with pytest.raises(TypeError, match="likelihood"):
        laplace_mode(K, y, StepFlip(0.1))
    with pytest.raises(ValueError, match="likelihood.*log-concave"):
        laplace_mode(K, y, Probit(1.0, kappa=0.1))
    with pytest.raises(TypeError, match="likelihood"):
        laplace_mode(K, y, "probit")
    with pytest.raises(ValueError, match="K must"):
        laplace_mode(K[:-1, :-1], y, Probit())


# --------------------------------------------------------------------------- evidence


def test_gaussian_likelihood_gives_the_exact_evidence(toy):
    X, _ = toy
    rng = np.random.default_rng(5)
    t = np.sin(X[:, 0]) + 0.2 * rng.standard_normal(len(X))
    K = RBF([0.6, 1.2, 2.0], variance=1.5, bias=0.3)(X)
    v = 0.05
    mode = laplace_mode(K, t, Gaussian(v))
    C = cho_factor(K + v * np.eye(len(t)), lower=True)
    exact = (
        -0.5 * t @ cho_solve(C, t)
        - np.sum(np.log(np.diag(C[0])))
        - 0.5 * len(t) * np.log(2 * np.pi)
    )
    assert mode.n_iter == 1
    assert abs(laplace_log_evidence(mode) - exact) < 1e-8


def _fd_gradient(kern, X, y, lik, h=1e-5):
    theta = kern.theta
    out = np.empty(theta.size)
    for j in range(theta.size):
        e = np.zeros_like(theta)
        e[j] = h
        vals = [
            laplace_log_evidence(
                laplace_mode(kern.with_theta(theta + sgn * e)(X), y, lik, tol=1e-12)
            )
            for sgn in (1, -1)
        ]
        out[j] = (vals[0] - vals[1]) / (2 * h)
    return out


KERNELS = {
    "rbf_ard_bias": lambda: RBF([0.7, 1.3, 2.5], variance=3.0, bias=0.5),
    "rbf_iso": lambda: RBF(1.1, variance=20.0),
    "arcsin_ard_bias": lambda: ArcSin([0.5, 1.0, 2.0], variance=2.0, bias_variance=0.7),
    "arcsin_iso": lambda: ArcSin(0.8, variance=5.0),
}


@pytest.mark.parametrize("kname", sorted(KERNELS))
@pytest.mark.parametrize(
    "lik", [Probit(1.0), Probit(0.3), Logistic(), Gaussian(0.5)], ids=repr
)
def test_evidence_gradient_matches_finite_differences(toy, kname, lik):
    X, y = toy
    kern = KERNELS[kname]()
    K, dK = kern(X), kern.gradient(X)
    mode = laplace_mode(K, y, lik, tol=1e-12)
    value, grad = laplace_log_evidence(mode, K, dK)
    assert value == laplace_log_evidence(mode)
    fd = _fd_gradient(kern, X, y, lik)
    assert np.max(np.abs(grad - fd) / np.maximum(np.abs(fd), 1e-3)) < 1e-5


def test_evidence_argument_shapes(toy):
    X, y = toy
    K = RBF()(X)
    mode = laplace_mode(K, y, Probit())
    with pytest.raises(ValueError, match="dK"):
        laplace_log_evidence(mode, K, np.zeros((3, 3, 1)))


def test_two_point_evidence_against_the_orthant_probability():
    corr = np.array([[1.0, 0.6], [0.6, 1.0]])
    for c in (0.01, 1.0, 30.0):
        for y in (np.array([1.0, 1.0]), np.array([1.0, -1.0])):
            K = c * corr
            rho = y[0] * y[1] * K[0, 1] / np.sqrt((K[0, 0] + 1) * (K[1, 1] + 1))
            exact = np.log(0.25 + np.arcsin(rho) / (2 * np.pi))
            gap = laplace_log_evidence(laplace_mode(K, y, Probit(1.0))) - exact
            assert gap < 0
            assert abs(gap) < (1e-4 if c == 0.01 else 0.5)
            if c == 30.0:
                assert abs(gap) > 0.05


# --------------------------------------------------------------------------- estimator


def test_defaults_and_fitted_attributes(synth):
    clf = Laplace(optimizer=None)
    assert clf.get_params() == {
        "kernel": None,
        "likelihood": None,
        "max_iter": 100,
        "tol": 1e-8,
        "optimizer": None,
        "n_restarts_optimizer": 0,
        "random_state": None,
        "hyperparameter_bounds": "auto",
        "verbose": False,
        "multi_class": "one_vs_one",
    }
    assert repr(clf) == "Laplace(optimizer=None)"
    clf.fit(synth.X_train, synth.y_train)
    spread = np.sqrt(np.var(synth.X_train, axis=0).sum())  # default_kernel
    assert isinstance(clf.kernel_, RBF) and clf.kernel_.length_scale == pytest.approx(
        spread
    )
    assert clf.learning_ is None
    assert isinstance(clf.likelihood_, Probit) and clf.likelihood_.noise_var == 1.0
    assert clf.kernel is None and clf.likelihood is None
    assert clf.converged_ and clf.n_iter_ >= 1
    assert clf.f_hat_.shape == clf.alpha_.shape == (250,)
    K = clf.kernel_(synth.X_train)
    np.testing.assert_allclose(K @ clf.alpha_, clf.f_hat_, rtol=0, atol=1e-10)
    assert clf.log_marginal_likelihood_ == clf.log_marginal_likelihood()
    assert 0.05 < 1 - clf.score(synth.X_test, synth.y_test) < 0.2


def test_predictions(synth):
    X, y = synth.X_train, synth.y_train
    for lik in (Probit(1.0), Logistic()):
        clf = Laplace(RBF(0.5, variance=10.0), lik, optimizer=None).fit(X, y)
        mean, var = clf.predict_latent(synth.X_test)
        assert np.all((var > 0) & (var <= clf.kernel_.diag(synth.X_test) + 1e-12))
        np.testing.assert_array_equal(clf.decision_function(synth.X_test), mean)
        proba = clf.predict_proba(synth.X_test)
        assert np.all((proba > 0) & (proba < 1))
        np.testing.assert_allclose(proba[:, 1], lik.predictive(mean, var), rtol=1e-15)
        np.testing.assert_array_equal(
            clf.predict(synth.X_test), np.where(proba[:, 1] > 0.5, 1, -1)
        )
        # Monte Carlo of the Gaussian predictive at a few points
        rng = np.random.default_rng(11)
        draws = mean[:5, None] + np.sqrt(var[:5, None]) * rng.standard_normal(
            (5, 50_000)
        )
        vals = np.exp(lik.log_prob(1.0, draws))
        se = vals.std(axis=1) / np.sqrt(draws.shape[1])
        assert np.all(np.abs(vals.mean(axis=1) - proba[:5, 1]) < 4 * se)


def test_probit_predictive_formula(synth):
    clf = Laplace(RBF(0.5, variance=4.0), Probit(noise_var=0.3), optimizer=None).fit(
        synth.X_train, synth.y_train
    )
    mean, var = clf.predict_latent(synth.X_test[:20])
    from scipy.special import ndtr

    np.testing.assert_allclose(
        clf.predict_proba(synth.X_test[:20])[:, 1],
        ndtr(mean / np.sqrt(0.3 + var)),
        rtol=1e-14,
    )


def test_gaussian_likelihood_predictions_are_gp_regression(toy):
    X, y = toy
    kern = RBF([0.6, 1.2, 2.0], variance=1.5, bias=0.3)
    clf = Laplace(kern, Gaussian(0.2), optimizer=None).fit(X, y)
    Xs = np.random.default_rng(8).standard_normal((6, 3))
    mean, var = clf.predict_latent(Xs)
    C = cho_factor(kern(X) + 0.2 * np.eye(len(y)), lower=True)
    Ks = kern(X, Xs)
    np.testing.assert_allclose(mean, Ks.T @ cho_solve(C, y), rtol=0, atol=1e-10)
    np.testing.assert_allclose(
        var, kern.diag(Xs) - np.sum(Ks * cho_solve(C, Ks), axis=0), rtol=0, atol=1e-10
    )


def test_string_labels_and_large_prediction_batches(toy):
    X, y = toy
    labels = np.where(y > 0, "spam", "ham")
    clf = Laplace(RBF(1.0), optimizer=None).fit(X, labels)
    assert list(clf.classes_) == ["ham", "spam"]
    Xs = np.random.default_rng(2).standard_normal((2500, 3))  # more than one block
    mean, var = clf.predict_latent(Xs)
    ref_mean, ref_var = clf.predict_latent(Xs[1000:1100])
    np.testing.assert_allclose(mean[1000:1100], ref_mean, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(var[1000:1100], ref_var, rtol=1e-13, atol=1e-14)
    assert set(clf.predict(Xs)) <= {"ham", "spam"}


def test_log_marginal_likelihood_with_theta(toy):
    X, y = toy
    clf = Laplace(RBF([1.0, 1.0, 1.0], variance=2.0), Logistic(), optimizer=None).fit(
        X, y
    )
    f_hat, value = clf.f_hat_.copy(), clf.log_marginal_likelihood_
    theta = clf.kernel_.theta
    v0, g0 = clf.log_marginal_likelihood(theta, eval_gradient=True)
    v1, g1 = clf.log_marginal_likelihood(eval_gradient=True)
    assert v0 == pytest.approx(value, abs=1e-10) and v1 == value
    np.testing.assert_allclose(g0, g1, rtol=1e-8, atol=1e-10)
    other = theta + np.array([0.3, -0.2, 0.1, 0.5])
    v2 = clf.log_marginal_likelihood(other)
    ref = (
        Laplace(clf.kernel_.with_theta(other), Logistic(), optimizer=None)
        .fit(X, y)
        .log_marginal_likelihood_
    )
    # warm- and cold-started Newton both stop at tol 1e-8; -1/2 log|B| is first order in
    # the mode's error, so the evidences agree to about that tolerance, not to 1e-9
    assert v2 == pytest.approx(ref, abs=1e-7)
    # the fitted model is untouched
    np.testing.assert_array_equal(clf.f_hat_, f_hat)
    np.testing.assert_array_equal(clf.kernel_.theta, theta)
    assert clf.log_marginal_likelihood_ == value


def test_learning_in_fit(synth):
    kern = RBF(1.0)
    start = Laplace(kern, Probit(1.0), optimizer=None).fit(synth.X_train, synth.y_train)
    clf = Laplace(kern, Probit(1.0)).fit(synth.X_train, synth.y_train)
    assert clf.learning_.converged and clf.learning_.at_bound == ()
    assert np.array_equal(clf.learning_.theta_start, kern.theta)
    assert np.array_equal(clf.learning_.theta, clf.kernel_.theta)
    assert clf.log_marginal_likelihood_ > start.log_marginal_likelihood_ + 1.0
    assert clf.log_marginal_likelihood_ == pytest.approx(clf.learning_.value, abs=1e-8)
    _, grad = clf.log_marginal_likelihood(eval_gradient=True)
    # L-BFGS-B stops on a small relative decrease of the objective, not on the gradient:
    # at unit curvature that leaves |gradient| ~ 1e-3
    assert np.max(np.abs(grad)) < 1e-2
    assert (
        kern.length_scale == 1.0 and kern.variance == 1.0
    )  # the parameter is unchanged
    assert 0.07 < 1 - clf.score(synth.X_test, synth.y_test) < 0.11
    with pytest.warns(ConvergenceWarning, match="without converging"):
        maximize_criterion(
            partial(clf.log_marginal_likelihood, eval_gradient=True),
            np.zeros(2),
            bounds=(-10.0, 10.0),
            max_iter=1,
        )
    with pytest.raises(ValueError, match="hyperparameter_bounds"):
        Laplace(hyperparameter_bounds=(1.0, 0.1)).fit(synth.X_train, synth.y_train)


@pytest.mark.parametrize(
    "params, exc, name",
    [
        ({"max_iter": 0}, ValueError, "max_iter"),
        ({"max_iter": -3}, ValueError, "max_iter"),
        ({"max_iter": 2.0}, TypeError, "max_iter"),
        ({"max_iter": True}, TypeError, "max_iter"),
        ({"tol": 0.0}, ValueError, "tol"),
        ({"tol": -1.0}, ValueError, "tol"),
        ({"tol": float("nan")}, ValueError, "tol"),
        ({"tol": "small"}, TypeError, "tol"),
        ({"likelihood": StepFlip(0.1)}, TypeError, "likelihood"),
        ({"likelihood": StepFlip(0.0)}, TypeError, "likelihood"),
        ({"likelihood": Probit(1.0, kappa=0.2)}, ValueError, "likelihood"),
        ({"likelihood": "logistic"}, TypeError, "likelihood"),
        ({"kernel": "rbf"}, TypeError, "kernel"),
    ],
)
def test_bad_parameters(toy, params, exc, name):
    X, y = toy
    clf = Laplace(**params, optimizer=None)
    with pytest.raises(exc, match=name):
        clf.fit(X, y)
    assert not hasattr(clf, "classes_")


def test_non_convergence_warns_and_sets_converged_false(toy):
    X, y = toy
    with pytest.warns(ConvergenceWarning):
        clf = Laplace(RBF(1.0, variance=5.0), max_iter=1, optimizer=None).fit(X, y)
    assert clf.converged_ is False and clf.n_iter_ == 1


def test_not_fitted():
    clf = Laplace(optimizer=None)
    for call in (
        lambda: clf.predict_proba(np.zeros((1, 2))),
        lambda: clf.predict_latent(np.zeros((1, 2))),
        lambda: clf.log_marginal_likelihood(),
    ):
        with pytest.raises(NotFittedError):
            call()


def test_set_params_and_warm_start_refit(toy):
    X, y = toy
    clf = Laplace(RBF(1.0), optimizer=None).fit(X, y)
    clf.set_params(likelihood=Logistic(), tol=1e-10)
    clf.fit(X, y)
    assert isinstance(clf.likelihood_, Logistic) and clf.converged_
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warm = Laplace(RBF(1.0), Logistic(), tol=1e-10, optimizer=None).fit(
            X, y, alpha_init=clf.alpha_
        )
    assert warm.n_iter_ == 0
    np.testing.assert_allclose(warm.f_hat_, clf.f_hat_, rtol=0, atol=1e-12)
