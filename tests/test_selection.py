"""Tests of gpc_literate.criteria and selection (chapters 16, 17): LOO criteria, their gradients,
EP-CV, baselines."""

import warnings

import numpy as np
import pytest
from scipy.special import ndtr

from gpc_literate.base import ConvergenceWarning, central_difference
from gpc_literate.criteria import (
    BiasedEP,
    ShiftedLikelihood,
    auc_estimate,
    criterion_terms,
    f_measure,
    loo_log_predictive,
    loo_moments,
    loo_objective,
    negative_log_predictive,
    weighted_error_rate,
)
from gpc_literate.datasets import make_noisy_parabola
from gpc_literate.ep_classifier import EP
from gpc_literate.kernels import RBF
from gpc_literate.laplace import Laplace, Logistic
from gpc_literate.likelihoods import Gaussian, Probit
from gpc_literate.selection import (
    LSCV,
    SelectionHistory,
    lscv_loo,
    lscv_objective,
    nlp_fm_bias,
    select_hyperparameters,
)

FAST = dict(method="parallel", damping=0.7, tol=1e-6, max_iter=300)
H = 1e-5


def toy(n=30, seed=0):
    return make_noisy_parabola(n, seed)  # the selection chapters' toy problem


def rel(a, b):
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


@pytest.fixture(scope="module")
def fitted():
    X, y = toy()
    kern = RBF(np.array([1.0, 1.5, 2.0]), 2.0, bias=0.3)
    model = BiasedEP(
        kern,
        Probit(1.0),
        gamma=0.3,
        bias_mode="likelihood",
        method="sequential",
        tol=1e-12,
        optimizer=None,
    ).fit(X, y)
    return X, y, kern, model


# -- LOO predictive -------------------------------------------------------------------------
def test_cavities_from_fixed_sites_equal_ep(fitted):
    X, y, kern, model = fitted
    mom = loo_moments(kern(X), model.site_nu_, model.site_tau_)
    assert np.allclose(mom.mean, model.mu_cav_, atol=1e-10, rtol=0)
    assert np.allclose(mom.var, model.var_cav_, rtol=1e-10, atol=0)


def test_loo_predictive_is_sk_eq13(fitted):
    X, y, kern, model = fitted
    expected = ndtr(y * (model.mu_cav_ + 0.3) / np.sqrt(1.0 + model.var_cav_))
    assert np.allclose(model.loo_predictive(), expected, rtol=1e-12, atol=0)
    log_p, _, _ = loo_log_predictive(y, model.mu_cav_, model.var_cav_, Probit(1.0), 0.3)
    assert np.allclose(np.exp(log_p), expected, rtol=1e-12, atol=0)


@pytest.mark.parametrize("lik", [Probit(1.0), Probit(0.5, kappa=0.1), Logistic()])
def test_heat_equation_variance_derivative(lik):
    y = np.array([1.0, -1.0, 1.0, -1.0])
    mu = np.array([-1.5, 0.2, 0.7, 3.0])
    var = np.array([0.4, 1.0, 3.0, 8.0])
    _, d_mean, d_var = loo_log_predictive(y, mu, var, lik, gamma=-0.2)
    fd_var = (
        lik.log_Z(y, mu - 0.2, var + H)[0] - lik.log_Z(y, mu - 0.2, var - H)[0]
    ) / (2 * H)
    fd_mean = (
        lik.log_Z(y, mu - 0.2 + H, var)[0] - lik.log_Z(y, mu - 0.2 - H, var)[0]
    ) / (2 * H)
    assert rel(d_var, fd_var) < 1e-6 and rel(d_mean, fd_mean) < 1e-6


def test_cavity_predictive_close_to_retraining():
    X, y = toy(25, seed=4)
    kern = RBF(1.2, 2.0)
    p_cav = (
        BiasedEP(
            kern,
            Probit(1.0),
            gamma=-0.2,
            bias_mode="likelihood",
            **FAST,
            optimizer=None,
        )
        .fit(X, y)
        .loo_predictive()
    )
    p_re = np.empty(25)
    for i in range(25):
        keep = np.arange(25) != i
        m = BiasedEP(
            kern,
            Probit(1.0),
            gamma=-0.2,
            bias_mode="likelihood",
            **FAST,
            optimizer=None,
        ).fit(X[keep], y[keep])
        p_re[i] = m.predict_proba(X[i : i + 1])[0, int(y[i] > 0)]
    # the cavity ignores how the other sites move without example i: close, not equal
    assert np.abs(p_cav - p_re).max() < 0.03 and np.abs(p_cav - p_re).mean() < 0.005


def test_gaussian_likelihood_cavity_is_exact_regression_loo():
    X, y = toy(20, seed=2)
    kern, lam = RBF(1.0, 1.5), 0.25
    ep = EP(kern, Gaussian(lam), tol=1e-12, optimizer=None).fit(X, y)
    mom = lscv_loo(kern(X), y, lam)
    assert np.allclose(ep.mu_cav_, mom.mean, atol=1e-9, rtol=0)
    assert np.allclose(ep.var_cav_ + lam, mom.var, rtol=1e-9, atol=0)


def test_biased_ep_likelihood_mode_is_ep_with_shifted_likelihood():
    X, y = toy()
    kern = RBF(np.array([1.0, 1.5, 2.0]), 2.0)
    model = BiasedEP(
        kern,
        Probit(1.0),
        gamma=0.3,
        bias_mode="likelihood",
        method="sequential",
        tol=1e-12,
        optimizer=None,
    ).fit(X, y)
    grid = np.random.default_rng(1).normal(size=(300, 3)) * 2
    plain = EP(
        kern, ShiftedLikelihood(Probit(1.0), 0.3), tol=1e-12, optimizer=None
    ).fit(X, y)
    assert np.allclose(model.site_nu_, plain.site_nu_, atol=1e-12)
    assert np.allclose(
        model.decision_function(grid),
        plain.decision_function(grid) + 0.3,
        atol=1e-9,
        rtol=0,
    )
    assert np.allclose(
        model.predict_proba(grid), plain.predict_proba(grid), atol=1e-12, rtol=0
    )
    assert isinstance(model.likelihood, Probit)  # the parameter is untouched
    assert isinstance(model.likelihood_, ShiftedLikelihood)
    assert np.isclose(model.log_marginal_likelihood_, plain.log_marginal_likelihood_)


def test_biased_ep_predictive_mode_shifts_predictions_only():
    X, y = toy()
    kern = RBF(np.array([1.0, 1.5, 2.0]), 2.0)
    model = BiasedEP(
        kern, Probit(1.0), gamma=0.3, method="sequential", tol=1e-12, optimizer=None
    ).fit(X, y)
    plain = EP(kern, Probit(1.0), method="sequential", tol=1e-12, optimizer=None).fit(
        X, y
    )
    grid = np.random.default_rng(1).normal(size=(300, 3)) * 2
    assert model.bias_mode_ == "predictive" and model.gamma_ == 0.3
    assert np.allclose(model.site_nu_, plain.site_nu_, atol=1e-12)
    assert model.log_marginal_likelihood_ == plain.log_marginal_likelihood_
    mean, var = plain.predict_latent(grid)
    assert np.allclose(
        model.predict_proba(grid)[:, 1], ndtr((mean + 0.3) / np.sqrt(1 + var))
    )
    assert np.allclose(model.decision_function(grid), mean + 0.3, atol=1e-9)
    assert np.allclose(model.loo_predictive(), plain.loo_predictive(0.3), rtol=1e-12)
    assert np.allclose(model.loo_decision_, plain.mu_cav_ + 0.3)


@pytest.mark.parametrize("mode", ["predictive", "likelihood"])
def test_biased_ep_predict_agrees_with_proba(mode):
    X, y = toy()
    model = BiasedEP(
        RBF(1.0, 2.0), gamma=-0.7, bias_mode=mode, **FAST, optimizer=None
    ).fit(X, y)
    grid = np.random.default_rng(2).normal(size=(300, 3)) * 2
    prob = model.predict_proba(grid)[:, 1]
    assert np.array_equal(model.predict(grid), np.where(prob > 0.5, 1.0, -1.0))
    p_up = model.loo_predictive(gamma=0.2)
    assert np.all((p_up > model.loo_predictive()) == (y > 0))


def test_biased_ep_bad_parameters():
    X, y = toy()
    with pytest.raises(ValueError, match="ShiftedLikelihood"):
        BiasedEP(RBF(), ShiftedLikelihood(Probit(1.0), 0.1), optimizer=None).fit(X, y)
    with pytest.raises(ValueError, match="bias_mode"):
        BiasedEP(RBF(), bias_mode="prior", optimizer=None).fit(X, y)
    with pytest.raises(ValueError, match="bias_mode"):
        select_hyperparameters(BiasedEP(bias_mode="prior", optimizer=None), X, y, "nlp")


def test_biased_ep_zero_gamma_is_ep():
    X, y = toy(20, seed=3)
    a = EP(RBF(1.0, 2.0), tol=1e-12, optimizer=None).fit(X, y)
    b = BiasedEP(RBF(1.0, 2.0), gamma=0.0, tol=1e-12, optimizer=None).fit(X, y)
    assert np.allclose(a.site_nu_, b.site_nu_, atol=1e-12)
    assert np.allclose(a.loo_predictive(), b.loo_predictive(), rtol=1e-12)
    assert np.isclose(
        a.log_marginal_likelihood_, b.log_marginal_likelihood_, rtol=1e-12
    )


# -- criteria -------------------------------------------------------------------------------
def test_counts_by_hand():
    y = np.array([1, 1, 1, 1, -1, -1, -1, -1, -1, -1], dtype=float)
    hard = np.array([1, 1, 1, 0, 1, 1, 0, 0, 0, 0], dtype=float)
    assert np.isclose(f_measure(y, hard), 2 / 3)
    assert np.isclose(f_measure(y, hard, zeta=1.0), 3 / 4)
    assert np.isclose(f_measure(y, hard, zeta=0.0), 3 / 5)
    assert np.isclose(weighted_error_rate(y, hard, tau=0.5), 2 / 7)
    assert np.isclose(weighted_error_rate(y, hard), 3 / 10)  # tau = 1: error rate
    assert np.isclose(auc_estimate(y, hard), 17 / 24)
    q = np.full(10, 0.3)
    assert np.isclose(
        negative_log_predictive(y, q), -(4 * np.log(0.3) + 6 * np.log(0.7)) / 10
    )


def test_f_measure_nothing_positive_zeta_zero():
    y = np.array([1.0, -1.0, -1.0])
    assert f_measure(y, np.zeros(3), zeta=0.0) == 0.0


def test_smoothed_measures_tend_to_true(fitted):
    X, y, kern, model = fitted
    z = (model.mu_cav_ + 0.3) / np.sqrt(1.0 + model.var_cav_)
    hard = (z > 0).astype(float)
    for fun in (f_measure, weighted_error_rate, auc_estimate):
        gaps = [abs(fun(y, ndtr(c * z)) - fun(y, hard)) for c in (1.0, 100.0, 1e5)]
        assert gaps[-1] < 1e-9 and gaps[0] > gaps[-1]


def test_wer_equals_one_minus_auc_balanced():
    y = np.repeat([1.0, -1.0], 6)
    q = np.random.default_rng(3).uniform(size=12)
    assert np.isclose(weighted_error_rate(y, q, tau=1.0), 1.0 - auc_estimate(y, q))


@pytest.mark.parametrize(
    "criterion,params",
    [
        ("nlp", None),
        ("f-measure", {"zeta": 0.3}),
        ("f-measure", None),
        ("wer", {"tau": 0.4}),
        ("auc", None),
    ],
)
def test_criterion_terms_derivative_in_log_p(criterion, params):
    rng = np.random.default_rng(7)
    y = np.where(rng.uniform(size=15) < 0.3, 1.0, -1.0)
    y[0] = 1.0
    log_p = np.log(rng.uniform(0.05, 0.95, size=15))
    _, J = criterion_terms(criterion, y, log_p, params)
    fd = central_difference(
        lambda lp: criterion_terms(criterion, y, lp, params)[0], log_p
    )
    assert rel(J, fd) < 1e-6


# -- gradients with the sites fixed ---------------------------------------------------------
def test_cavity_derivatives(fitted):
    X, y, kern, model = fitted
    theta = kern.theta
    mom = loo_moments(kern(X), model.site_nu_, model.site_tau_, kern.gradient(X))
    for which, exact in (("mean", mom.dmean), ("var", mom.dvar)):
        fd = central_difference(
            lambda t: getattr(
                loo_moments(kern.with_theta(t)(X), model.site_nu_, model.site_tau_),
                which,
            ),
            theta,
        )
        for j in range(theta.size):
            assert rel(exact[:, j], fd[j]) < 1e-5


@pytest.mark.parametrize(
    "criterion,params",
    [("nlp", None), ("f-measure", {"zeta": 0.3}), ("wer", {"tau": 0.4}), ("auc", None)],
)
def test_loo_objective_gradient(fitted, criterion, params):
    X, y, kern, model = fitted
    nu, tau = model.site_nu_, model.site_tau_
    phi = np.append(kern.theta, 0.3)
    value, grad = loo_objective(
        kern(X), y, nu, tau, Probit(1.0), 0.3, criterion, params, kern.gradient(X)
    )
    fd = central_difference(
        lambda p: loo_objective(
            kern.with_theta(p[:-1])(X),
            y,
            nu,
            tau,
            Probit(1.0),
            p[-1],
            criterion,
            params,
        ),
        phi,
    )
    assert rel(grad, fd) < 1e-5
    assert np.isclose(
        value, loo_objective(kern(X), y, nu, tau, Probit(1.0), 0.3, criterion, params)
    )


def test_loo_objective_gradient_negative_sites(fitted):
    X, y, kern, model = fitted
    tau = model.site_tau_.copy()
    tau[[2, 11]] = -0.05
    nu = model.site_nu_
    phi = np.append(kern.theta, 0.3)
    _, grad = loo_objective(
        kern(X), y, nu, tau, Probit(1.0), 0.3, "nlp", None, kern.gradient(X)
    )
    fd = central_difference(
        lambda p: loo_objective(
            kern.with_theta(p[:-1])(X), y, nu, tau, Probit(1.0), p[-1], "nlp"
        ),
        phi,
    )
    assert rel(grad, fd) < 1e-5


def test_loo_objective_other_likelihood(fitted):
    X, y, kern, _ = fitted
    model = BiasedEP(
        kern,
        Probit(0.5, kappa=0.05),
        gamma=0.1,
        bias_mode="likelihood",
        tol=1e-10,
        optimizer=None,
    ).fit(X, y)
    nu, tau = model.site_nu_, model.site_tau_
    lik = Probit(0.5, kappa=0.05)
    phi = np.append(kern.theta, 0.1)
    _, grad = loo_objective(
        kern(X), y, nu, tau, lik, 0.1, "f-measure", None, kern.gradient(X)
    )
    fd = central_difference(
        lambda p: loo_objective(
            kern.with_theta(p[:-1])(X), y, nu, tau, lik, p[-1], "f-measure"
        ),
        phi,
    )
    assert rel(grad, fd) < 1e-5


def test_evidence_gamma_gradient(fitted):
    X, y, kern, model = fitted
    d1 = model.likelihood_.log_Z(y, model.mu_cav_, model.var_cav_)[1]

    def lml(g):
        return (
            BiasedEP(
                kern,
                Probit(1.0),
                gamma=g,
                bias_mode="likelihood",
                tol=1e-12,
                optimizer=None,
            )
            .fit(X, y)
            .log_marginal_likelihood_
        )

    fd = (lml(0.3 + 1e-4) - lml(0.3 - 1e-4)) / 2e-4
    assert abs(np.sum(d1) - fd) < 1e-5 * abs(fd)


# -- EP-CV and the baselines ----------------------------------------------------------------
@pytest.fixture(scope="module")
def data():
    return toy(30, seed=5)


@pytest.mark.parametrize("mode", ["predictive", "likelihood"])
@pytest.mark.parametrize("criterion", ["nlp", "f-measure", "wer", "auc"])
def test_ep_cv_monotone_and_consistent(data, criterion, mode):
    X, y = data
    start = (
        EP(RBF(np.ones(3), 1.0), Probit(1.0), **FAST, optimizer=None)
        if mode == "predictive"
        else BiasedEP(
            RBF(np.ones(3), 1.0), Probit(1.0), bias_mode=mode, **FAST, optimizer=None
        )
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model, hist = select_hyperparameters(start, X, y, criterion, max_iter=15)
    assert model.bias_mode == mode
    assert isinstance(model, BiasedEP) and isinstance(hist, SelectionHistory)
    sign = -1.0 if criterion in ("nlp", "wer") else 1.0
    assert (
        np.all(sign * np.diff(hist.value) >= 0)
        and sign * (hist.value[-1] - hist.value[0]) > 0
    )
    k = len(hist.value)
    assert hist.theta.shape == (k, 4) and hist.gamma.shape == (k,)
    assert hist.true_f_measure.shape == hist.smoothed_f_measure.shape == (k,)
    assert (
        np.allclose(model.kernel.theta, hist.theta[-1])
        and model.gamma == hist.gamma[-1]
    )
    value = criterion_terms(criterion, y, np.log(model.loo_predictive()))[0]
    assert np.isclose(value, hist.value[-1])
    assert start.get_params()["kernel"].theta.tolist() == [0.0] * 4  # input unchanged
    assert start.get_params().get("gamma", 0.0) == 0.0
    assert not hasattr(start, "classes_")


def test_ep_cv_records_both_f_measures(data):
    X, y = data
    model, hist = select_hyperparameters(
        EP(RBF(1.0, 1.0), **FAST, optimizer=None),
        X,
        y,
        "f-measure",
        criterion_params={"zeta": 0.7},
        max_iter=5,
    )
    assert hist.criterion_params == {"zeta": 0.7}
    assert np.allclose(hist.smoothed_f_measure, hist.value)
    p = model.loo_predictive()
    q = np.where(y > 0, p, 1 - p)
    assert np.isclose(hist.true_f_measure[-1], f_measure(y, (q > 0.5) * 1.0, zeta=0.7))


def test_ep_cv_max_iter_warns(data):
    X, y = data
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        _, hist = select_hyperparameters(
            EP(RBF(np.ones(3), 1.0), **FAST, optimizer=None),
            X,
            y,
            "nlp",
            max_iter=1,
            tol=1e-12,
        )
    assert not hist.converged and hist.n_iter == 1


def test_bias_only_and_kernel_only(data):
    X, y = data
    start = BiasedEP(RBF(1.0, 2.0), gamma=0.2, **FAST, optimizer=None)
    model, hist = select_hyperparameters(
        start, X, y, "f-measure", optimize_kernel=False
    )
    assert np.allclose(hist.theta, start.kernel.theta)
    assert hist.gamma[0] == 0.2
    model, hist = select_hyperparameters(start, X, y, "nlp", optimize_bias=False)
    assert np.all(hist.gamma == 0.2) and model.gamma == 0.2


def test_nlp_fm_bias(data):
    X, y = data
    model, (h1, h2) = nlp_fm_bias(
        EP(RBF(1.0, 1.0), **FAST, optimizer=None), X, y, max_iter=10
    )
    assert np.allclose(h2.theta, h1.theta[-1])
    assert np.isclose(h2.value[0], h1.smoothed_f_measure[-1])
    assert h2.value[-1] >= h2.value[0]
    assert model.gamma == h2.gamma[-1]


def test_evidence_ep_and_laplace(data):
    X, y = data
    model, hist = select_hyperparameters(
        EP(RBF(1.0, 1.0), **FAST, optimizer=None), X, y, "evidence"
    )
    assert hist.converged and np.all(np.diff(hist.value) > -1e-9)
    assert hist.value[-1] > hist.value[0] and np.all(
        hist.gamma == 0.0
    )  # predictive: no gamma
    assert np.isclose(model.log_marginal_likelihood_, hist.value[-1], rtol=1e-5)
    with pytest.raises(ValueError, match="bias_mode='likelihood'"):
        select_hyperparameters(EP(optimizer=None), X, y, "evidence", optimize_bias=True)
    start = BiasedEP(RBF(1.0, 1.0), bias_mode="likelihood", **FAST, optimizer=None)
    model, hist = select_hyperparameters(start, X, y, "evidence")
    assert (
        hist.converged and np.all(np.diff(hist.value) > -1e-9) and hist.gamma[-1] != 0.0
    )
    assert np.isclose(model.log_marginal_likelihood_, hist.value[-1], rtol=1e-5)
    lap, hist_l = select_hyperparameters(
        Laplace(RBF(1.0, 1.0), optimizer=None), X, y, "evidence"
    )
    assert isinstance(lap, Laplace) and hist_l.value[-1] > hist_l.value[0]
    assert np.all(np.isnan(hist_l.smoothed_f_measure))
    assert np.isclose(lap.log_marginal_likelihood_, hist_l.value[-1], rtol=1e-6)


def test_bias_only_predictive_is_one_dimensional_search(data):
    X, y = data
    first, _ = select_hyperparameters(
        EP(RBF(1.0, 1.0), **FAST, optimizer=None), X, y, "nlp", optimize_bias=False
    )
    model, hist = select_hyperparameters(
        first, X, y, "f-measure", optimize_kernel=False
    )
    grid = hist.gamma[-1] + np.linspace(-0.5, 0.5, 11)
    values = [
        f_measure(y, np.where(y > 0, p, 1 - p))
        for p in (first.loo_predictive(g - first.gamma) for g in grid)
    ]
    assert hist.value[-1] >= max(values) - 1e-4  # a maximum of the true criterion


def test_lscv_closed_form_vs_retraining():
    X, y = toy(25, seed=6)
    kern, lam = RBF(np.array([0.8, 1.2, 2.0]), 1.5), 0.15
    K = kern(X)
    mom = lscv_loo(K, y, lam)
    for i in range(25):
        keep = np.arange(25) != i
        Ky = K[np.ix_(keep, keep)] + lam * np.eye(24)
        mean = K[i, keep] @ np.linalg.solve(Ky, y[keep])
        var = K[i, i] + lam - K[i, keep] @ np.linalg.solve(Ky, K[keep, i])
        assert abs(mom.mean[i] - mean) < 1e-8 * max(1, abs(mean))
        assert abs(mom.var[i] - var) < 1e-8 * var


def test_lscv_gradient():
    X, y = toy(25, seed=6)
    kern = RBF(np.array([0.8, 1.2, 2.0]), 1.5)
    psi = np.concatenate([kern.theta, [np.log(0.15), np.log(2.0), 0.4]])

    def f(p):
        k = kern.with_theta(p[:4])
        return lscv_objective(k(X), y, np.exp(p[4]), np.exp(p[5]), p[6])

    _, grad = lscv_objective(kern(X), y, 0.15, 2.0, 0.4, kern.gradient(X))
    assert rel(grad, central_difference(f, psi)) < 1e-5


def test_lscv_estimator():
    X, y = toy(30, seed=8)
    labels = np.where(y > 0, "yes", "no")
    clf = LSCV(RBF(1.0, 1.0)).fit(X, labels)
    assert clf.converged_ and list(clf.classes_) == ["no", "yes"]
    start = LSCV(RBF(1.0, 1.0), optimizer=None).fit(X, labels)
    assert clf.loo_nlp_ < start.loo_nlp_
    assert 1e-3 <= clf.noise_var_ <= 1.0
    proba = clf.predict_proba(X)
    assert proba.shape == (30, 2) and np.allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(clf.predict(X), np.where(proba[:, 1] > 0.5, "yes", "no"))
    fixed = LSCV(RBF(1.0, 1.0), noise_var=0.2, noise_var_bounds=None).fit(X, y)
    assert fixed.noise_var_ == 0.2
    mean, var = clf.predict_regression(X[:3])
    assert np.all(var >= clf.noise_var_)


# -- arguments ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"criterion": "accuracy"}, "criterion"),
        ({"criterion": "f-measure", "criterion_params": {"zeta": 1.2}}, "zeta"),
        ({"criterion": "f-measure", "criterion_params": {"zeta": -0.1}}, "zeta"),
        ({"criterion": "wer", "criterion_params": {"tau": 1.5}}, "tau"),
        ({"criterion": "nlp", "criterion_params": {"tau": 0.5}}, "criterion_params"),
        ({"criterion": "nlp", "max_iter": 0}, "max_iter"),
        ({"criterion": "nlp", "m_step_iter": 0}, "m_step_iter"),
        ({"criterion": "nlp", "tol": 0.0}, "tol"),
        ({"criterion": "nlp", "bounds": (1.0, -1.0)}, "bounds"),
        (
            {"criterion": "nlp", "optimize_kernel": False, "optimize_bias": False},
            "nothing",
        ),
    ],
)
def test_bad_arguments(data, kwargs, name):
    X, y = data
    with pytest.raises(ValueError, match=name):
        select_hyperparameters(EP(optimizer=None), X, y, **kwargs)


def test_bad_estimators(data):
    X, y = data
    with pytest.raises(ValueError, match="Laplace"):
        select_hyperparameters(Laplace(optimizer=None), X, y, "f-measure")
    with pytest.raises(ValueError, match="optimize_bias"):
        select_hyperparameters(
            Laplace(optimizer=None), X, y, "evidence", optimize_bias=True
        )
    with pytest.raises(TypeError, match="estimator"):
        select_hyperparameters(LSCV(), X, y, "nlp")
    with pytest.raises(TypeError, match="max_iter"):
        select_hyperparameters(EP(optimizer=None), X, y, "nlp", max_iter=2.5)


def test_bad_metric_arguments():
    y = np.array([1.0, -1.0, 1.0])
    with pytest.raises(ValueError, match="zeta"):
        f_measure(y, np.ones(3), zeta=1.01)
    with pytest.raises(ValueError, match="tau"):
        weighted_error_rate(y, np.ones(3), tau=-1.0)
    with pytest.raises(ValueError, match="prob_pos"):
        auc_estimate(y, np.array([0.5, 1.2, 0.1]))
    with pytest.raises(ValueError, match="labels"):
        f_measure(np.array([0.0, 1.0, 1.0]), np.ones(3))
    with pytest.raises(ValueError, match="both labels"):
        f_measure(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="evidence"):
        criterion_terms("evidence", y, np.zeros(3))
    for criterion in ("nlp", "f-measure", "wer", "auc"):  # S&K's four LOO criteria
        value, J = criterion_terms(criterion, y, np.log([0.9, 0.3, 0.6]))
        assert np.isfinite(value) and J.shape == (3,) and np.all(np.isfinite(J)), (
            criterion
        )
    with pytest.raises(ValueError, match="criterion must be one of"):
        criterion_terms("accuracy", y, np.zeros(3))


def test_bad_lscv_arguments(data):
    X, y = data
    with pytest.raises(ValueError, match="noise_var_bounds"):
        LSCV(noise_var=5.0).fit(X, y)
    with pytest.raises(ValueError, match="noise_var"):
        LSCV(noise_var=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="max_iter"):
        LSCV(max_iter=0).fit(X, y)
    with pytest.raises(TypeError, match="kernel"):
        LSCV(kernel="rbf").fit(X, y)


def test_shifted_likelihood():
    base = Probit(1.0)
    lik = ShiftedLikelihood(base, 0.7)
    mu, var = np.array([-1.0, 0.3]), np.array([0.5, 2.0])
    assert np.allclose(lik.predictive(mu, var), base.predictive(mu + 0.7, var))
    assert np.allclose(
        lik.log_Z(np.array([1.0, -1.0]), mu, var)[1],
        base.log_Z(np.array([1.0, -1.0]), mu + 0.7, var)[1],
    )
    assert lik.get_params() == {"base": base, "gamma": 0.7}
    with pytest.raises(TypeError, match="base"):
        ShiftedLikelihood("probit")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isfinite(lik.log_prob(1.0, 0.0))
