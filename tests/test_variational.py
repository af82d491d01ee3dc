"""gpc_literate.free_energy (chapter 19), Seeger's free energy and its pieces, and
gpc_literate.variational (chapter 20), the estimators."""

import warnings

import numpy as np
import pytest
from scipy.integrate import IntegrationWarning, nquad, quad
from scipy.linalg import cho_factor, cho_solve
from scipy.special import log_expit, roots_legendre

from gpc_literate.base import ConvergenceWarning, NotFittedError
from gpc_literate.datasets import load
from gpc_literate.kernels import RBF, ArcSin
from gpc_literate.laplace import Logistic, laplace_log_evidence, laplace_mode
from gpc_literate.svm import KernelAdatron
from gpc_literate.free_energy import (
    LATENT_NOISE,
    expected_hinge,
    expected_log_z_svc,
    expected_logistic,
    expected_loss,
    factor_prior,
    free_energy,
    free_energy_theta_gradient,
    initial_p,
    kernel_contraction,
    minimize_free_energy,
    svc_log_z,
)
from gpc_literate.variational import (
    VariationalGP,
    VariationalSVM,
    variational_objective,
    _outer_loop,
)
from gpc_literate import variational

FD_RTOL = 1e-5


def rel_err(a, b, floor=1e-8):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), floor), initial=0.0))


def gauss_quad(fun, mu, var, breakpoints=()):
    s = np.sqrt(var)
    lo, hi = mu - 14 * s, mu + 14 * s
    pts = sorted(b for b in breakpoints if lo < b < hi) or None
    dens = lambda f: np.exp(-0.5 * ((f - mu) / s) ** 2) / (s * np.sqrt(2 * np.pi))  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", IntegrationWarning
        )  # tolerances beyond rounding
        return quad(
            lambda f: fun(f) * dens(f),
            lo,
            hi,
            points=pts,
            epsabs=1e-15,
            epsrel=1e-13,
            limit=1000,
        )[0]


@pytest.fixture(scope="module")
def toy():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((14, 3))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(14) > 0, 1.0, -1.0)
    kernel = RBF(length_scale=np.array([1.0, 2.0, 0.6]), variance=2.0, bias=0.1)
    mu = rng.standard_normal(14)
    log_v = np.log(0.05 + 0.3 * rng.random(14))
    C = 0.3 * rng.standard_normal((14, 2))
    return X, y, kernel, mu, log_v, C


# --------------------------------------------------------------------------- expectations

MUS = [-30.0, -3.0, -1.0, -0.5, 0.0, 0.95, 1.0, 1.05, 2.5, 30.0]
SDS = [1e-3, 0.1, 0.5, 0.79, 0.81, 1.0, 1.99, 2.01, 5.0, 50.0]


@pytest.mark.parametrize("s", SDS)
def test_expected_hinge_matches_quad(s):
    for y in (1.0, -1.0):
        for m in MUS:
            ref = gauss_quad(lambda f: max(1 - y * f, 0.0), m, s * s, [y])
            assert abs(expected_hinge(y, m, s * s)[0] - ref) < 1e-9


@pytest.mark.parametrize("s", SDS)
def test_expected_log_z_matches_quad(s):
    for m in MUS:
        ref = gauss_quad(lambda f: svc_log_z(f)[0], m, s * s, [-1.0, 1.0])
        assert abs(expected_log_z_svc(m, s * s)[0] - ref) < 1e-9


@pytest.mark.parametrize("s", SDS)
def test_expected_logistic_matches_quad(s):
    for y in (1.0, -1.0):
        for m in MUS:
            ref = gauss_quad(lambda f: -log_expit(y * f), m, s * s, [0.0])
            assert abs(expected_logistic(y, m, s * s)[0] - ref) < 1e-10 * max(
                1.0, abs(m)
            )


def test_normalised_svc_loss_is_a_likelihood():
    f = np.linspace(-8, 8, 3001)
    log_z = svc_log_z(f)[0]
    total = np.exp(-np.maximum(1 - f, 0) - log_z) + np.exp(
        -np.maximum(1 + f, 0) - log_z
    )
    assert np.max(np.abs(total - 1.0)) < 1e-14


@pytest.mark.parametrize("name", ["hinge", "logz", "logistic", "svc"])
def test_expectation_derivatives_match_finite_differences(name):
    fun = {
        "hinge": lambda m, v: expected_hinge(-1.0, m, v),
        "logz": expected_log_z_svc,
        "logistic": lambda m, v: expected_logistic(1.0, m, v),
        "svc": lambda m, v: expected_loss(-1.0, m, v, "svc"),
    }[name]
    M, S = np.meshgrid(
        np.array(MUS[1:-1]), np.array([0.06, 0.3, 0.7, 0.9, 1.5, 3.0, 10.0])
    )
    V = S**2
    _, d_mu, d_var = fun(M, V)
    hm, hv = 1e-4 * S, 3e-4 * V
    fd_mu = (fun(M + hm, V)[0] - fun(M - hm, V)[0]) / (2 * hm)
    fd_var = (fun(M, V + hv)[0] - fun(M, V - hv)[0]) / (2 * hv)
    assert rel_err(d_mu, fd_mu, floor=1e-4) < FD_RTOL
    assert rel_err(d_var, fd_var, floor=1e-4) < FD_RTOL


def test_expectations_refuse_bad_input():
    with pytest.raises(ValueError, match="var"):
        expected_logistic(1.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="finite"):
        expected_hinge(1.0, np.nan, 1.0)
    with pytest.raises(ValueError, match="loss"):
        expected_loss(1.0, 0.0, 1.0, "probit")
    assert np.all(
        np.isfinite(
            expected_loss(
                np.ones(3),
                np.array([-1e3, 0.0, 1e3]),
                np.array([1e-8, 1.0, 1e6]),
                "svc",
            )
        )
    )


# --------------------------------------------------------------------------- F and gradients


def test_prior_factor_matches_dense(toy):
    X, *_ = toy
    K = toy[2](X)
    prior = factor_prior(K)
    assert np.allclose(prior.K, K + LATENT_NOISE * np.eye(len(K)))
    assert (
        rel_err(prior.diag_inv, np.diag(cho_solve(cho_factor(prior.K), np.eye(len(K)))))
        < 1e-9
    )
    assert abs(prior.log_det - np.linalg.slogdet(prior.K)[1]) < 1e-9


@pytest.mark.parametrize("loss", ["logistic", "svc"])
def test_free_energy_matches_dense(toy, loss):
    X, y, kernel, mu, log_v, C = toy
    prior = factor_prior(kernel(X))
    Sigma = np.diag(np.exp(log_v)) + C @ C.T
    Kc = cho_factor(prior.K)
    kl = 0.5 * (
        np.trace(cho_solve(Kc, Sigma))
        + mu @ cho_solve(Kc, mu)
        - len(mu)
        + np.linalg.slogdet(prior.K)[1]
        - np.linalg.slogdet(Sigma)[1]
    )
    dense = np.sum(expected_loss(y, mu, np.diag(Sigma), loss)[0]) + kl
    assert abs(free_energy(mu, log_v, C, y, prior, loss)[0] - dense) < 1e-9


@pytest.mark.parametrize("loss", ["logistic", "svc"])
@pytest.mark.parametrize("M", [0, 1, 3])
def test_free_energy_gradient_matches_finite_differences(toy, loss, M):
    X, y, kernel, mu, log_v, C = toy
    C = np.resize(C, (len(y), M)) if M else np.zeros((len(y), 0))
    prior = factor_prior(kernel(X))
    _, *grads = free_energy(mu, log_v, C, y, prior, loss)
    params = [mu, log_v, C]
    h = 1e-5
    for p, (arr, g) in enumerate(zip(params, grads)):
        fd = np.empty(arr.shape)
        for idx in np.ndindex(arr.shape):
            plus, minus = [a.copy() for a in params], [a.copy() for a in params]
            plus[p][idx] += h
            minus[p][idx] -= h
            fd[idx] = (
                free_energy(*plus, y, prior, loss)[0]
                - free_energy(*minus, y, prior, loss)[0]
            ) / (2 * h)
        assert rel_err(g, fd, floor=1e-4) < FD_RTOL


@pytest.mark.parametrize(
    "kernel",
    [
        RBF(length_scale=np.array([1.0, 2.0, 0.6]), variance=2.0, bias=0.1),
        RBF(length_scale=1.3, variance=0.7),
        ArcSin(weight_variance=np.array([1.0, 0.5, 2.0])),
    ],
)
def test_theta_gradient_matches_finite_differences(toy, kernel):
    X, y, _, mu, log_v, C = toy
    prior = factor_prior(kernel(X))
    g = free_energy_theta_gradient(mu, log_v, C, prior, kernel_contraction(kernel, X))
    g_tensor = free_energy_theta_gradient(mu, log_v, C, prior, kernel.gradient(X))
    assert rel_err(g, g_tensor) < 1e-10
    h = 1e-4
    fd = np.empty_like(g)
    for j in range(g.size):
        tp, tm = kernel.theta.copy(), kernel.theta.copy()
        tp[j] += h
        tm[j] -= h
        fd[j] = (
            free_energy(mu, log_v, C, y, factor_prior(kernel.with_theta(tp)(X)), "svc")[
                0
            ]
            - free_energy(
                mu, log_v, C, y, factor_prior(kernel.with_theta(tm)(X)), "svc"
            )[0]
        ) / (2 * h)
    assert rel_err(g, fd, floor=1e-3 * np.max(np.abs(fd))) < FD_RTOL


def test_envelope_gradient_of_the_optimised_bound(toy):
    """d/dtheta min_P F = dF/dtheta at the inner optimum (eq-var-envelope)."""
    X, y, kernel, *_ = toy

    def h_and_grad(theta, start=None):
        k = kernel.with_theta(theta)
        prior = factor_prior(k(X))
        if start is None:
            start = initial_p(prior, 2, np.random.default_rng(0))
        r = minimize_free_energy(
            y,
            prior,
            "logistic",
            mu=start[0],
            log_v=start[1],
            C=start[2],
            max_iter=20000,
            tol=1e-14,
        )
        return r, free_energy_theta_gradient(r.mu, r.log_v, r.C, prior, k.gradient(X))

    r0, g = h_and_grad(kernel.theta)
    step = 1e-4
    for j in range(g.size):
        tp, tm = kernel.theta.copy(), kernel.theta.copy()
        tp[j] += step
        tm[j] -= step
        fp = h_and_grad(tp, (r0.mu, r0.log_v, r0.C))[0].free_energy
        fm = h_and_grad(tm, (r0.mu, r0.log_v, r0.C))[0].free_energy
        assert abs((fp - fm) / (2 * step) - g[j]) < 1e-4 * max(1.0, abs(g[j]))


@pytest.mark.parametrize("loss", ["logistic", "svc"])
def test_objective_does_not_depend_on_the_order_of_evaluation(toy, loss):
    """h(theta) is a function of theta and the explicit start: a, b, a gives a's value twice."""
    X, y, kernel, *_ = toy
    theta_a = kernel.theta
    theta_b = theta_a + np.array([0.4, -0.3, 0.2, 0.5, -0.7])[: theta_a.size]
    for start in (
        None,
        initial_p(factor_prior(kernel(X)), 2, np.random.default_rng(3)),
    ):
        first = variational_objective(theta_a, kernel, X, y, loss, start=start)
        other = variational_objective(theta_b, kernel, X, y, loss, start=start)
        again = variational_objective(theta_a, kernel, X, y, loss, start=start)
        assert first[0] == again[0] and np.array_equal(first[1], again[1])
        assert other[0] != first[0]


def _recorded_outer_loop(toy, loss="logistic"):
    """_outer_loop on the toy problem; every evaluation recorded as (theta, start, output)."""
    X, y, kernel, *_ = toy
    calls = []

    def objective(theta, start):
        out = variational_objective(theta, kernel, X, y, loss, start=start)
        calls.append((theta.copy(), start, out))
        return out

    res0 = variational_objective(kernel.theta, kernel, X, y, loss)[3]
    start0 = (res0.mu, res0.log_v, res0.C)
    learned, history, final = _outer_loop(
        objective,
        kernel.theta,
        start0,
        (-8.0, 8.0),
        max_iter=100,
        tol=1e-6,
        progress=False,
    )
    return calls, start0, learned.optimizer_result, history, final


@pytest.mark.parametrize("loss", ["logistic", "svc"])
def test_line_search_trial_points_share_their_start(toy, loss):
    """Each line search starts every inner loop from the P of the last accepted iterate."""
    X, y, kernel, *_ = toy
    calls, start0, result, history, final = _recorded_outer_loop(toy, loss)
    runs = []  # consecutive evaluations with one start
    for call in calls:
        if runs and call[1] is runs[-1][0][1]:
            runs[-1].append(call)
        else:
            runs.append([call])
    assert result.success and runs[0][0][1] is start0
    assert len(runs) == result.nit and max(len(run) for run in runs) >= 2
    for k in range(1, len(runs)):  # the accepted iterate ends each line search
        accepted = runs[k - 1][-1][2]
        assert all(
            a is b
            for a, b in zip(
                runs[k][0][1], (accepted[3].mu, accepted[3].log_v, accepted[3].C)
            )
        )
        assert history[k - 1] == accepted[0]
    assert np.array_equal(calls[-1][0], result.x) and final is calls[-1][2]
    for theta, start, out in reversed(calls):  # any order: the same values, bitwise
        again = variational_objective(theta, kernel, X, y, loss, start=start)
        assert again[0] == out[0] and np.array_equal(again[1], out[1])


def test_fit_free_energy_is_the_accepted_value(synth_small, monkeypatch):
    """free_energy_ is the last value L-BFGS-B accepted: the objective at theta_ from its start."""
    X, y, _, _ = synth_small
    calls = []

    def recording(theta, *args, **kwargs):
        out = variational_objective(theta, *args, **kwargs)
        calls.append((None if theta is None else np.array(theta), kwargs["start"]))
        return out

    monkeypatch.setattr(variational, "variational_objective", recording)
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", ConvergenceWarning
        )  # five outer steps suffice here
        model = VariationalGP(max_iter=5).fit(X, y)
    assert calls[0][1] is None and all(theta is not None for theta, _ in calls)
    assert model.free_energy_ == model.history_[-1]
    # theta_ is kernel_.theta, log(exp(x)) of the optimiser's x: equal to it to rounding
    theta, start = [
        (t, s) for t, s in calls if np.allclose(t, model.theta_, rtol=0, atol=1e-12)
    ][-1]
    kernel = variational._default_kernel(X)
    assert (
        variational_objective(theta, kernel, X, y, start=start)[0] == model.free_energy_
    )


# --------------------------------------------------------------------------- inner loop, bound


@pytest.mark.parametrize("loss", ["logistic", "svc"])
def test_inner_loop_decreases_F_monotonically(loss):
    pima = load("pima")
    prior = factor_prior(
        RBF(length_scale=np.full(7, np.sqrt(7)), bias=0.1)(pima.X_train)
    )
    mu, log_v, C = initial_p(prior, 2, np.random.default_rng(0))
    r = minimize_free_energy(pima.y_train, prior, loss, mu=mu, log_v=log_v, C=C)
    assert r.converged
    assert len(r.history) == r.n_iter + 1 or len(r.history) >= 2
    assert np.all(np.diff(r.history) <= 0.0)
    assert r.free_energy <= r.history[0]


def _log_lik(f, y, loss):
    if loss == "logistic":
        return np.sum(log_expit(y * f), axis=-1)
    return np.sum(-np.maximum(1 - y * f, 0.0) - svc_log_z(f)[0], axis=-1)


def _exact_neg_log_evidence(K, y, loss, n_nodes=30):
    """Tensor Gauss-Legendre in f, each axis cut at -1, 1 (the kinks) and +-12 sqrt(K_ii)."""
    n = len(y)
    x, w = roots_legendre(n_nodes)
    nodes, weights = [], []
    for i in range(n):
        r = 12 * np.sqrt(K[i, i])
        cuts = [(-r, -1.0), (-1.0, 1.0), (1.0, r)]
        nodes.append(
            np.concatenate([0.5 * (b - a) * x + 0.5 * (a + b) for a, b in cuts])
        )
        weights.append(np.concatenate([0.5 * (b - a) * w for a, b in cuts]))
    F = np.stack(np.meshgrid(*nodes, indexing="ij"), -1).reshape(-1, n)
    W = np.prod(
        np.stack(np.meshgrid(*weights, indexing="ij"), -1).reshape(-1, n), axis=1
    )
    Kc = cho_factor(K)
    log_prior = (
        -0.5 * np.sum(F * cho_solve(Kc, F.T).T, axis=1)
        - 0.5 * n * np.log(2 * np.pi)
        - np.sum(np.log(np.diag(Kc[0])))
    )
    return -np.log(np.sum(W * np.exp(log_prior + _log_lik(F, y, loss))))


@pytest.mark.parametrize("loss", ["logistic", "svc"])
def test_free_energy_bounds_the_exact_evidence(loss):
    X = np.array([[0.0, 0.3], [0.8, -0.4], [-0.6, 1.0]])
    y = np.array([1.0, -1.0, 1.0])
    prior = factor_prior(RBF(length_scale=1.2, variance=3.0, bias=0.2)(X))
    exact = _exact_neg_log_evidence(prior.K, y, loss)
    # the tensor rule agrees with adaptive cubature on the first two points
    K2 = prior.K[:2, :2]
    Kc = cho_factor(K2)
    norm = 1 / (2 * np.pi * np.sqrt(np.linalg.det(K2)))

    def integrand(f1, f2):
        f = np.array([f1, f2])
        return norm * np.exp(-0.5 * f @ cho_solve(Kc, f) + _log_lik(f, y[:2], loss))

    r = 12 * np.sqrt(np.max(np.diag(K2)))
    ref2 = -np.log(
        nquad(
            integrand,
            [[-r, r], [-r, r]],
            opts={
                "epsabs": 1e-12,
                "epsrel": 1e-10,
                "limit": 100,
                "points": [-1.0, 1.0],
            },
        )[0]
    )
    assert abs(_exact_neg_log_evidence(K2, y[:2], loss) - ref2) < 1e-9
    F = []
    for M in range(4):
        mu, log_v, C = initial_p(prior, M, np.random.default_rng(1))
        F.append(
            minimize_free_energy(
                y, prior, loss, mu=mu, log_v=log_v, C=C, max_iter=5000, tol=1e-13
            ).free_energy
        )
    assert all(f >= exact for f in F)
    assert all(np.diff(F) <= 1e-8)
    assert F[-1] - exact < 0.05
    assert F[0] - exact > 10 * (F[-1] - exact)


def test_laplace_is_the_minimiser_of_the_expanded_free_energy(toy):
    X, y, kernel, *_ = toy
    prior = factor_prior(kernel(X))
    lik = Logistic()
    mode = laplace_mode(prior.K, y, lik, tol=1e-12)
    W = -lik.log_prob_derivatives(y, mode.f)[1]

    def taylor(y_, mu, var):
        return (
            -lik.log_prob(y_, mu) + 0.5 * W * var,
            -lik.log_prob_derivatives(y_, mu)[0],
            0.5 * W,
        )

    neg_log_q = -laplace_log_evidence(mode)
    n = len(y)
    Sigma = np.linalg.inv(np.linalg.inv(prior.K) + np.diag(W))
    v = 0.5 * np.linalg.eigvalsh(Sigma)[0]
    C = np.linalg.cholesky(Sigma - v * np.eye(n))
    F, g_mu, _, g_C = free_energy(mode.f, np.full(n, np.log(v)), C, y, prior, taylor)
    assert abs(F - neg_log_q) < 1e-9 * abs(neg_log_q)
    assert np.max(np.abs(g_mu)) < 1e-6 and np.max(np.abs(g_C)) < 1e-6
    mu0, lv0, C0 = initial_p(prior, n, np.random.default_rng(0))
    r = minimize_free_energy(
        y, prior, taylor, mu=mu0, log_v=lv0, C=C0, max_iter=20000, tol=1e-13
    )
    assert abs(r.free_energy - neg_log_q) < 1e-6 * abs(neg_log_q)
    r0 = minimize_free_energy(
        y, prior, taylor, mu=mu0, log_v=lv0, C=C0[:, :0], max_iter=20000, tol=1e-13
    )
    assert r0.free_energy > r.free_energy


# --------------------------------------------------------------------------- estimators


@pytest.fixture(scope="module")
def synth_small():
    ds = load("synth")
    rng = np.random.default_rng(0)
    tr = rng.choice(len(ds.y_train), 80, replace=False)
    te = rng.choice(len(ds.y_test), 200, replace=False)
    return ds.X_train[tr], ds.y_train[tr], ds.X_test[te], ds.y_test[te]


@pytest.fixture(scope="module")
def fitted(synth_small):
    X, y, _, _ = synth_small
    return VariationalGP().fit(X, y), VariationalSVM().fit(X, y)


def test_defaults_and_params():
    gp, svm = VariationalGP(), VariationalSVM()
    assert gp.get_params() == dict(
        kernel=None,
        loss="logistic",
        n_factors=2,
        optimizer="fmin_l_bfgs_b",
        max_iter=100,
        tol=1e-6,
        inner_max_iter=500,
        inner_tol=1e-8,
        hyperparameter_bounds="auto",
        verbose=False,
        multi_class="one_vs_one",
    )
    assert svm.loss == "svc"
    assert isinstance(svm, VariationalGP)
    assert repr(VariationalGP(n_factors=3)) == "VariationalGP(n_factors=3)"


@pytest.mark.parametrize(
    "params, error, name",
    [
        ({"loss": "probit"}, ValueError, "loss"),
        ({"n_factors": -1}, ValueError, "n_factors"),
        ({"n_factors": 1.5}, TypeError, "n_factors"),
        ({"max_iter": 0}, ValueError, "max_iter"),
        ({"inner_max_iter": "many"}, TypeError, "inner_max_iter"),
        ({"tol": 0.0}, ValueError, "tol"),
        ({"inner_tol": -1.0}, ValueError, "inner_tol"),
        ({"hyperparameter_bounds": (3.0, 0.3)}, ValueError, "hyperparameter_bounds"),
        ({"hyperparameter_bounds": (-1.0, 3.0)}, ValueError, "hyperparameter_bounds"),
        ({"hyperparameter_bounds": 5.0}, TypeError, "hyperparameter_bounds"),
        ({"optimizer": "yes"}, ValueError, "optimizer"),
        ({"verbose": 1}, TypeError, "verbose"),
        ({"kernel": "rbf"}, TypeError, "kernel"),
    ],
)
def test_invalid_params_are_refused(synth_small, params, error, name):
    X, y, _, _ = synth_small
    with pytest.raises(error, match=name):
        VariationalGP(**params).fit(X, y)


def test_fitted_attributes(fitted, synth_small):
    X, y, X_test, y_test = synth_small
    for model in fitted:
        n, d = X.shape
        assert model.converged_
        assert model.mean_.shape == model.var_.shape == model.V_.shape == (n,)
        assert model.C_.shape == (n, 2)
        assert np.allclose(model.var_, model.V_ + np.sum(model.C_**2, axis=1))
        assert model.relevances_.shape == (d,)
        assert np.allclose(model.relevances_, 1 / model.kernel_.length_scale**2)
        assert np.array_equal(model.theta_, model.kernel_.theta)
        assert np.all((model.theta_ >= -8.0) & (model.theta_ <= 8.0))
        assert model.free_energy_ <= model.history_[0] + 1e-9
        assert np.all(np.diff(model.history_) <= 1e-8)
        assert model.n_iter_ >= 1
        assert np.all(np.diff(model.inner_history_) <= 0.0)
        for use in ("mean", "mode"):
            assert np.mean(model.predict(X_test, use=use) != y_test) < 0.2
        with pytest.raises(ValueError, match="use"):
            model.decision_function(X_test, use="median")


def test_mean_prediction_is_k_kinv_mu(fitted, synth_small):
    X, _, X_test, _ = synth_small
    gp = fitted[0]
    K = gp.kernel_(X) + LATENT_NOISE * np.eye(len(X))
    expected = gp.kernel_(X_test, X) @ np.linalg.solve(K, gp.mean_)
    assert np.allclose(gp.decision_function(X_test), expected, atol=1e-8)
    # at the training inputs: k(X, X) K^-1 mu = mu - jitter K^-1 mu
    assert np.allclose(
        gp.decision_function(X),
        gp.mean_ - LATENT_NOISE * np.linalg.solve(K, gp.mean_),
        atol=1e-8,
    )


def test_mode_predictions_are_the_original_architectures(fitted, synth_small):
    X, y, X_test, _ = synth_small
    gp, svm = fitted
    K = gp.kernel_(X) + LATENT_NOISE * np.eye(len(X))
    mode = laplace_mode(K, y, Logistic(), tol=1e-10)
    assert np.allclose(
        gp.decision_function(X_test, use="mode"),
        gp.kernel_(X_test, X) @ mode.alpha,
        atol=1e-6,
    )
    # the SVM: alpha = y * coef in the box [0, 1], Kuhn-Tucker conditions of the hinge dual
    K = svm.kernel_(X) + LATENT_NOISE * np.eye(len(X))
    alpha = y * svm.mode_coef_
    assert np.all((alpha >= 0) & (alpha <= 1))
    margin = y * (K @ svm.mode_coef_)
    grad = margin - 1.0  # d(-dual)/d alpha
    violation = np.abs(np.clip(alpha - grad, 0.0, 1.0) - alpha)
    assert np.max(violation) < 1e-4
    assert np.allclose(
        svm.decision_function(X_test, use="mode"),
        svm.kernel_(X_test, X) @ svm.mode_coef_,
    )
    ka = KernelAdatron(
        kernel=svm.kernel_,
        C=1.0,
        v=LATENT_NOISE,
        max_iter=200000,
        tol=1e-4,
        compute_loo=False,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ka.fit(X, y)
    assert (
        np.mean(
            np.sign(ka.decision_function(X_test))
            == np.sign(svm.decision_function(X_test, use="mode"))
        )
        > 0.99
    )


def test_predict_proba(fitted, synth_small):
    _, _, X_test, _ = synth_small
    for model in fitted:
        p = model.predict_proba(X_test)
        assert p.shape == (len(X_test), 2)
        assert np.allclose(p.sum(axis=1), 1.0)
        assert np.all((p > 0) & (p < 1))
        assert np.array_equal(p[:, 1] > 0.5, model.decision_function(X_test) > 0)


def test_no_optimize_keeps_the_kernel(synth_small):
    X, y, _, _ = synth_small
    kernel = RBF(length_scale=np.array([0.7, 1.1]), variance=1.5, bias=0.2)
    model = VariationalGP(kernel=kernel, optimizer=None, n_factors=0).fit(X, y)
    assert np.allclose(model.theta_, kernel.theta)
    assert model.n_iter_ == 0 and model.C_.shape == (len(X), 0)
    assert np.array_equal(kernel.theta, np.log([0.7, 1.1, 1.5, 0.2]))  # not modified


def test_convergence_warnings(synth_small):
    X, y, _, _ = synth_small
    with pytest.warns(ConvergenceWarning, match="hyperparameter search stopped"):
        model = VariationalGP(max_iter=1).fit(X, y)
    assert not model.converged_
    with pytest.warns(ConvergenceWarning, match="inner"):
        VariationalSVM(optimizer=None, inner_max_iter=2).fit(X, y)


def test_not_fitted():
    with pytest.raises(NotFittedError):
        VariationalGP().predict(np.zeros((2, 2)))


def test_labels_and_progress(synth_small, capsys):
    X, y, X_test, _ = synth_small
    labels = np.where(y > 0, "yes", "no")
    model = VariationalSVM(max_iter=5, verbose=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, labels)
    assert set(model.predict(X_test)) <= {"yes", "no"}
    assert "VariationalSVM.fit" in capsys.readouterr().err


@pytest.mark.parametrize("cls", [VariationalGP, VariationalSVM])
def test_log_marginal_likelihood_is_the_bound_with_its_gradient(synth_small, cls):
    """log_marginal_likelihood(theta, eval_gradient): -h(theta) and -dh/dtheta, the
    gradient within 1e-5 of central differences of -h (tight inner loops); at the fitted
    theta the stored value, and the estimator unchanged."""
    from gpc_literate.base import central_difference

    X, y, _, _ = synth_small
    model = cls(optimizer=None, inner_tol=1e-12, inner_max_iter=20000).fit(X, y)
    before = model.log_marginal_likelihood_
    assert model.log_marginal_likelihood() == before
    value, grad = model.log_marginal_likelihood(None, eval_gradient=True)
    assert value == before and grad.shape == model.kernel_.theta.shape
    theta = model.kernel_.theta + 0.1
    value, grad = model.log_marginal_likelihood(theta, eval_gradient=True)
    assert value == model.log_marginal_likelihood(theta)
    numeric = central_difference(model.log_marginal_likelihood, theta, h=1e-4)
    assert np.max(np.abs(grad - numeric)) < 1e-5 * max(1.0, np.max(np.abs(numeric)))
    assert model.log_marginal_likelihood_ == before
