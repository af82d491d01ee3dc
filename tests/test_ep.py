"""gpc_literate.ep, ep_fast and ep_classifier (chapters 13-15): moment matching, posterior with signed sites, sequential and
parallel EP, evidence and gradient, leave-one-out predictive, TAP equivalence, errors."""

import warnings

import numpy as np
import pytest
from numpy.polynomial.hermite_e import hermegauss
from scipy.integrate import quad
from scipy.stats import multivariate_normal

from gpc_literate.base import ConvergenceWarning, NotFittedError
from gpc_literate.datasets import make_noisy_linear
from gpc_literate.ep import ep_log_marginal, ep_log_marginal_gradient, run_ep
from gpc_literate.ep_classifier import EP
from gpc_literate.ep_fast import solve_ep
from gpc_literate.kernels import RBF
from gpc_literate.likelihoods import Gaussian, Probit, StepFlip
from gpc_literate.sites import (
    ImproperPosteriorError,
    SitePosterior,
    site_update,
    tilted_moments,
)

toy = make_noisy_linear  # the EP chapters' toy problem (chapter 4)


def evidence(K, y, lik, **kw):
    post, _, converged, refused, _, _ = run_ep(K, y, lik, **kw)
    mu_c, var_c, proper = post.cavities()
    assert converged and refused == 0 and proper.all()
    return ep_log_marginal(post, lik, y, mu_c, var_c), post


# --------------------------------------------------------------------------- moment matching


def _tilted_quad(lik, y, mu, var):
    sd = np.sqrt(var)

    def dens(f):
        return np.exp(lik.log_prob(y, f) - 0.5 * (f - mu) ** 2 / var) / np.sqrt(
            2 * np.pi * var
        )

    lo, hi = mu - 14 * sd, mu + 14 * sd
    opts = dict(
        epsabs=0.0, epsrel=1e-12, limit=200, points=[0.0] if lo < 0 < hi else None
    )
    z = quad(dens, lo, hi, **opts)[0]
    m = quad(lambda f: f * dens(f), lo, hi, **opts)[0] / z
    v = quad(lambda f: (f - m) ** 2 * dens(f), lo, hi, **opts)[0] / z
    return z, m, v


@pytest.mark.parametrize(
    "lik",
    [Probit(1.0), Probit(0.3, kappa=0.2), StepFlip(0.0), StepFlip(0.1), Gaussian(0.4)],
    ids=repr,
)
@pytest.mark.parametrize("y, mu, var", [(1, 0.5, 1.0), (-1, 1.5, 0.3), (1, -2.5, 2.0)])
def test_moment_matching_against_quadrature(lik, y, mu, var):
    log_z, mean, var_t = tilted_moments(lik, y, mu, var)
    z, m, v = _tilted_quad(lik, y, mu, var)
    assert np.exp(log_z) == pytest.approx(z, rel=1e-9)
    assert mean == pytest.approx(m, abs=1e-9 * np.sqrt(v))
    assert var_t == pytest.approx(v, rel=1e-8)
    nu, tau, _, ok = site_update(lik, y, mu, var)  # cavity x site = tilted Gaussian
    assert ok
    assert 1.0 / (1.0 / var + tau) == pytest.approx(v, rel=1e-8)
    assert (mu / var + nu) / (1.0 / var + tau) == pytest.approx(
        m, abs=1e-9 * np.sqrt(v)
    )


def test_site_precision_sign():
    mus = np.linspace(-10, 10, 201)
    assert site_update(Probit(1.0), 1.0, mus, 2.0)[1].min() > 0
    assert site_update(StepFlip(0.0), 1.0, mus, 2.0)[1].min() > 0
    assert (
        site_update(StepFlip(0.2), 1.0, mus, 2.0)[1].min() < 0
    )  # flips: negative sites


class _BadLikelihood:
    """A fake likelihood whose log Z derivatives make the tilted variance negative or NaN."""

    def log_Z(self, y, mu, var):
        mu = np.asarray(mu, dtype=float)
        d2 = np.where(mu > 0, -2.0 / var, np.nan)
        return np.zeros_like(mu), np.ones_like(mu), d2


def test_site_update_refuses_invalid_tilted_variance():
    nu, tau, _, ok = site_update(
        _BadLikelihood(), 1.0, np.array([1.0, -1.0]), np.array([1.0, 1.0])
    )
    assert not ok.any()
    assert np.all(nu == 0) and np.all(tau == 0)


# --------------------------------------------------------------------------- posterior


def test_posterior_with_signed_sites_against_direct_inversion():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((30, 2))
    K = RBF(0.4, 2.0)(X) + 0.1 * np.eye(30)
    nu, tau = rng.standard_normal(30), rng.uniform(-0.1, 2.0, 30)
    tau[:3] = 0.0
    post = SitePosterior(K, nu, tau, full=True)
    S = np.linalg.inv(np.linalg.inv(K) + np.diag(tau))
    np.testing.assert_allclose(post.Sigma, S, atol=1e-10)
    np.testing.assert_allclose(post.var, np.diag(S), atol=1e-10)
    np.testing.assert_allclose(post.mean, S @ nu, atol=1e-10)
    np.testing.assert_allclose(K @ post.coef, post.mean, atol=1e-10)
    assert post.logdet == pytest.approx(
        np.linalg.slogdet(np.eye(30) + K * tau)[1], abs=1e-10
    )
    A = np.diag(tau) - np.diag(tau) @ S @ np.diag(tau)
    np.testing.assert_allclose(post.inverse_sum(), A, atol=1e-10)
    np.testing.assert_allclose(
        post.inverse_sum_quad(K[:, :5]), np.diag(K[:, :5].T @ A @ K[:, :5]), atol=1e-9
    )


@pytest.mark.parametrize("signs", ["positive", "signed"])
def test_single_precision_marginals_agree_and_come_back_in_double(signs):
    rng = np.random.default_rng(2)
    X = rng.standard_normal((200, 3))
    K = RBF(1.0, 2.0)(X)
    nu, tau = rng.standard_normal(200), rng.uniform(0.01, 2.0, 200)
    if signs == "signed":
        tau[:3], tau[3:6] = 0.0, -0.05
    ref = SitePosterior(K, nu, tau)
    single = SitePosterior(K.astype(np.float32), nu, tau, keep_inverse=True)
    assert single.single and not ref.single
    assert single.mean.dtype == single.var.dtype == single.coef.dtype == np.float64
    np.testing.assert_allclose(single.var, ref.var, rtol=1e-3)
    np.testing.assert_allclose(
        single.mean, ref.mean, atol=1e-4 * np.abs(ref.mean).max()
    )
    assert single.logdet == pytest.approx(ref.logdet, rel=1e-4)
    if signs == "positive":
        assert single.Linv.dtype == np.float32


class _AlwaysSingle:
    """A step rule that asks for single precision at every evaluation."""

    adapts_damping, keep_inverse = False, False

    def reset(self):
        pass

    def single_precision(self, history):
        return True

    def __call__(self, posterior, proposal, eta):
        return eta * proposal.d_nu, eta * proposal.d_tau


def test_parallel_sites_never_stops_on_single_precision_and_returns_double():
    from gpc_literate.sites import parallel_sites

    X, y = toy(80)
    K, zeros = RBF(1.0, 2.0)(X), np.zeros(80)
    run = parallel_sites(
        K, y, Probit(1.0), zeros, zeros, step=_AlwaysSingle(), max_iter=60, tol=1e-5
    )  # above single precision's floor
    assert not run.converged and run.n_iter == 60 and run.history.min() < 1e-5
    assert not run.posterior.single  # recomputed in double at the end
    exact = SitePosterior(K, run.posterior.nu, run.posterior.tau)
    np.testing.assert_array_equal(run.posterior.var, exact.var)


def test_single_precision_falls_back_to_double_when_its_factorisation_fails():
    from gpc_literate.sites import parallel_sites

    X, y = toy(30)
    K = 1e9 * np.ones((30, 30)) + RBF(1.0, 1.0)(
        X
    )  # B = I + S K S is singular in float32
    with pytest.raises(np.linalg.LinAlgError):
        SitePosterior(K.astype(np.float32), np.ones(30), np.ones(30))
    start = SitePosterior(K, np.zeros(30), np.ones(30))
    kw = dict(adaptive_damping=False, max_iter=3)
    a = parallel_sites(
        K, y, Probit(1.0), np.zeros(30), np.ones(30), step=_AlwaysSingle(), **kw
    )
    b = parallel_sites(K, y, Probit(1.0), np.zeros(30), np.ones(30), **kw)
    assert start.proper and np.array_equal(a.posterior.mean, b.posterior.mean)


def test_newton_in_single_precision_reaches_the_double_precision_fixed_point():
    from gpc_literate.datasets import make_ringnorm

    X, y = make_ringnorm(600, random_state=3)
    K = RBF(np.sqrt(20.0), 1.0)(X)
    fast = solve_ep(K, y, Probit(1.0))
    slow = solve_ep(K, y, Probit(1.0), single_precision=False)
    assert fast.converged and slow.converged and not fast.posterior.single
    assert fast.n_iter <= slow.n_iter + 1
    np.testing.assert_allclose(fast.posterior.mean, slow.posterior.mean, atol=1e-6)
    np.testing.assert_allclose(fast.posterior.var, slow.posterior.var, rtol=1e-6)


def test_improper_posterior_is_detected():
    X = np.linspace(0, 1, 5)[:, None]
    K = RBF(0.5)(X) + 0.01 * np.eye(5)
    tau = np.array([1.0, 1.0, -50.0, 1.0, 1.0])
    assert np.linalg.eigvalsh(np.linalg.inv(K) + np.diag(tau)).min() < 0
    with pytest.raises(ImproperPosteriorError):
        SitePosterior(K, np.zeros(5), tau)


def test_zero_sites_give_the_prior():
    K = RBF()(np.linspace(0, 3, 6)[:, None])
    post = SitePosterior(K, np.zeros(6), np.zeros(6))
    np.testing.assert_allclose(post.var, np.diag(K))
    mu_c, var_c, proper = post.cavities()
    assert proper.all()
    np.testing.assert_allclose(var_c, np.diag(K))
    assert post.inverse_sum().shape == (6, 6) and not post.inverse_sum().any()


# --------------------------------------------------------------------------- EP runs


def test_gaussian_likelihood_is_exact_after_one_sweep():
    X, _ = toy(40, seed=2)
    t = np.sin(X[:, 0]) + 0.2 * np.random.default_rng(0).standard_normal(40)
    K, v = RBF(1.0, 2.0)(X), 0.25
    post, _, _, _, _, _ = run_ep(K, t, Gaussian(v), max_iter=1)
    Ky = K + v * np.eye(40)
    np.testing.assert_allclose(post.mean, K @ np.linalg.solve(Ky, t), atol=1e-8)
    np.testing.assert_allclose(post.Sigma, K - K @ np.linalg.solve(Ky, K), atol=1e-8)
    lz, _ = evidence(K, t, Gaussian(v))
    assert lz == pytest.approx(
        multivariate_normal(np.zeros(40), Ky).logpdf(t), abs=1e-8
    )


@pytest.mark.parametrize("lik", [Probit(1.0), Probit(0.3, kappa=0.1)], ids=repr)
def test_sequential_and_parallel_reach_the_same_fixed_point(lik):
    X, y = toy(60, seed=1)
    K = RBF(1.3, 3.0)(X)
    seq = run_ep(K, y, lik).posterior
    mu_s, var_s, _ = seq.cavities()
    for eta in (1.0, 0.5):
        post, _, converged, _, _, _ = run_ep(
            K, y, lik, method="parallel", damping=eta, max_iter=500
        )
        assert converged
        mu_p, var_p, _ = post.cavities()
        assert np.abs(mu_p - mu_s).max() < 1e-6
        assert np.abs(var_p / var_s - 1).max() < 1e-6
        assert np.abs(post.mean - seq.mean).max() < 1e-6


def test_convergence_test_uses_the_undamped_change():
    X, y = toy(50, seed=3)
    K = RBF(1.0, 3.0)(X)
    ref = run_ep(K, y, Probit(1.0), tol=1e-13).posterior.cavities()[0]
    for eta in (1.0, 0.3):
        post, _, converged, _, hist, _ = run_ep(
            K, y, Probit(1.0), method="parallel", damping=eta, tol=1e-7, max_iter=500
        )
        assert converged and hist[-1] < 1e-7
        assert np.abs(post.cavities()[0] - ref).max() < 1e-5


def test_warm_start_from_a_fixed_point_needs_one_sweep():
    X, y = toy(40, seed=4)
    model = EP(RBF(1.0, 2.0), method="sequential", optimizer=None).fit(X, y)
    again = EP(RBF(1.0, 2.0), method="sequential", optimizer=None).fit(
        X, y, site_nu_init=model.site_nu_, site_tau_init=model.site_tau_
    )
    assert again.converged_ and again.n_iter_ == 1
    np.testing.assert_allclose(again.mu_cav_, model.mu_cav_, atol=1e-8)


# --------------------------------------------------------------------------- evidence


def test_one_example_is_exact():
    for lik in [Probit(1.0), StepFlip(0.2), Probit(0.5, kappa=0.1)]:
        lz, _ = evidence(np.array([[1.7]]), np.array([1.0]), lik)
        assert lz == pytest.approx(lik.log_Z(1.0, 0.0, 1.7)[0], abs=1e-12)


def _gh_evidence(K, y, lik, deg=150):
    t, w = hermegauss(deg)
    w = w / np.sqrt(2 * np.pi)
    T1, T2 = np.meshgrid(t, t, indexing="ij")
    F = np.einsum("ij,jab->iab", np.linalg.cholesky(K), np.stack([T1, T2]))
    return np.log(
        np.sum(
            np.outer(w, w) * np.exp(lik.log_prob(y[0], F[0]) + lik.log_prob(y[1], F[1]))
        )
    )


@pytest.mark.parametrize(
    "lik, tol", [(Probit(1.0), 1e-3), (Probit(0.5, kappa=0.1), 3e-3)], ids=repr
)
def test_two_examples_close_to_the_exact_evidence(lik, tol):
    X, y = np.array([[0.0], [0.8]]), np.array([1.0, -1.0])
    K = RBF(1.0, 1.0)(X)
    lz, _ = evidence(K, y, lik, tol=1e-12)
    exact = _gh_evidence(K, y, lik)
    assert abs(lz - exact) < tol
    assert abs(lz - exact) > 1e-6  # EP is an approximation


def test_evidence_equals_sundararajan_keerthi_eq5():
    X, y = toy(50, seed=5)
    K = RBF(1.2, 2.0)(X)
    lz, post = evidence(K, y, Probit(1.0))
    mu_c, var_c, _ = post.cavities()
    m_s, v_s = post.nu / post.tau, 1 / post.tau
    log_w = (
        Probit(1.0).log_Z(y, mu_c, var_c)[0]
        + (mu_c - m_s) ** 2 / (2 * (var_c + v_s))
        + 0.5 * np.log(var_c + v_s)
    )
    Ks = K + np.diag(v_s)
    sk = (
        -0.5 * np.linalg.slogdet(Ks)[1]
        - 0.5 * m_s @ np.linalg.solve(Ks, m_s)
        + log_w.sum()
    )
    assert lz == pytest.approx(sk, abs=1e-9)


@pytest.mark.parametrize(
    "lik", [Probit(1.0), Probit(0.2, kappa=0.1), StepFlip(0.1)], ids=repr
)
def test_gradient_against_finite_differences_rbf_ard(lik):
    X, y = toy(35, d=3, seed=6)
    kern = RBF(length_scale=[0.9, 1.6, 2.5], variance=2.0, bias=0.2)
    if isinstance(lik, StepFlip):
        kern = RBF(length_scale=[0.9, 1.6, 2.5], variance=0.5, bias=0.2)
    lz0, post = evidence(kern(X), y, lik, tol=1e-12)
    grad = ep_log_marginal_gradient(post, kern, X)

    def lz(theta):
        return evidence(
            kern.with_theta(theta)(X),
            y,
            lik,
            tol=1e-12,
            method="parallel",
            site_nu=post.nu,
            site_tau=post.tau,
            max_iter=1000,
        )[0]

    h, th = 1e-4, kern.theta
    fd = np.array(
        [(lz(th + h * e) - lz(th - h * e)) / (2 * h) for e in np.eye(len(th))]
    )
    assert np.abs(grad - fd).max() / np.abs(grad).max() < 1e-5


def test_estimator_gradient_and_theta_do_not_change_the_fit():
    X, y = toy(40, seed=7)
    model = EP(RBF(1.0, 2.0), optimizer=None).fit(X, y)
    before = model.mu_cav_.copy()
    value, grad = model.log_marginal_likelihood(eval_gradient=True)
    assert value == model.log_marginal_likelihood_ and grad.shape == (2,)
    v2 = model.log_marginal_likelihood(model.kernel_.theta + 0.1)
    assert v2 != value
    np.testing.assert_array_equal(model.mu_cav_, before)
    fresh = EP(RBF(1.0, 2.0).with_theta(model.kernel_.theta + 0.1), optimizer=None).fit(
        X, y
    )
    assert v2 == pytest.approx(fresh.log_marginal_likelihood_, abs=1e-8)


# --------------------------------------------------------------------------- predictions, LOO


def test_predictions_and_labels():
    X, y = toy(40, seed=8)
    labels = np.where(y > 0, "pos", "neg")
    model = EP(RBF(1.0, 2.0), optimizer=None).fit(X, labels)
    assert list(model.classes_) == ["neg", "pos"]
    P = model.predict_proba(X[:7])
    np.testing.assert_allclose(P.sum(1), 1.0)
    mean, var = model.predict_latent(X)
    np.testing.assert_allclose(mean, model.posterior_mean_, atol=1e-10)
    np.testing.assert_allclose(var, model.posterior_var_, atol=1e-10)
    assert np.all((P[:, 1] > 0.5) == (model.decision_function(X[:7]) > 0))
    np.testing.assert_array_equal(
        model.predict(X[:7]), np.where(mean[:7] > 0, "pos", "neg")
    )
    K = model.kernel_(X)
    np.testing.assert_allclose(
        K @ (y * model.alpha_), model.posterior_mean_, atol=1e-10
    )


def test_loo_predictive_is_Z_and_close_to_retraining():
    X, y = toy(20, seed=9)
    model = EP(RBF(1.0, 2.0), optimizer=None).fit(X, y)
    p = model.loo_predictive()
    np.testing.assert_allclose(
        np.log(p), Probit(1.0).log_Z(y, model.mu_cav_, model.var_cav_)[0], atol=1e-12
    )
    shifted = model.loo_predictive(gamma=0.3)
    assert np.all((shifted > p) == (y > 0))
    refit = np.empty(20)
    for i in range(20):
        keep = np.arange(20) != i
        m_i = EP(RBF(1.0, 2.0), optimizer=None).fit(X[keep], y[keep])
        refit[i] = m_i.predict_proba(X[i : i + 1])[0, int(y[i] > 0)]
    assert np.abs(p - refit).max() < 0.01


def test_cavities_at_theta_keep_the_sites_fixed():
    X, y = toy(30, seed=10)
    model = EP(RBF(1.0, 2.0), optimizer=None).fit(X, y)
    mu_c, var_c = model.cavities()
    np.testing.assert_array_equal(mu_c, model.mu_cav_)
    mu2, var2 = model.cavities(model.kernel_.theta)
    np.testing.assert_allclose(mu2, model.mu_cav_, atol=1e-10)
    mu3, _ = model.cavities(model.kernel_.theta + 0.2)
    assert np.abs(mu3 - model.mu_cav_).max() > 1e-3


# --------------------------------------------------------------------------- TAP, noisy process


def test_probit_equals_step_on_the_noisy_kernel():
    X, y = toy(40, seed=11)
    K, v, kappa = RBF(1.0, 2.0)(X), 0.4, 0.1
    probit = run_ep(K, y, Probit(v, kappa)).posterior
    step = run_ep(K + v * np.eye(40), y, StepFlip(kappa)).posterior
    mp, vp, _ = probit.cavities()
    ms, vs, _ = step.cavities()
    np.testing.assert_allclose(mp, ms, atol=1e-7)
    np.testing.assert_allclose(vp + v, vs, atol=1e-7)
    np.testing.assert_allclose(probit.coef, step.coef, atol=1e-7)


def test_fixed_point_is_tap_on_sonar():
    tap_module = pytest.importorskip("gpc_literate.tap")
    from gpc_literate.datasets import load

    sonar = load("sonar")
    X, y = sonar.X_train, sonar.y_train
    kern = RBF.from_sigma2(0.2, sonar.n_features)
    for kappa, v in [(0.0, 0.0), (0.1, 0.5)]:
        tap = tap_module.TAP(
            kernel=kern, kappa=kappa, v=v, tol=1e-10, optimizer=None
        ).fit(X, y)
        lik = StepFlip(kappa) if v == 0 else Probit(v, kappa)
        ep = EP(kern, lik, tol=1e-10, optimizer=None).fit(X, y)
        assert np.abs(ep.alpha_ - tap.alpha_).max() < 1e-6
        assert np.abs(ep.mu_cav_ - tap.mu_cav_).max() < 1e-6
        assert np.abs(ep.var_cav_ - tap.var_cav_).max() < 1e-6
        assert ep.log_marginal_likelihood_ == pytest.approx(
            tap.log_marginal_likelihood_, abs=1e-6
        )


# --------------------------------------------------------------------------- hard problems


def test_hard_problem_negative_sites_but_proper_cavities():
    X, y = toy(60, noise=1.0, seed=7)
    model = EP(
        RBF(30.0, 1000.0), Probit(0.1, kappa=0.2), max_iter=300, optimizer=None
    ).fit(X, y)
    assert model.converged_ and model.n_refused_ == 0
    assert (model.site_tau_ < 0).any()
    assert np.all(model.var_cav_ > 0) and np.all(np.isfinite(model.var_cav_))
    assert np.isfinite(model.log_marginal_likelihood_)


def test_nonconvergence_warns_and_never_gives_nan():
    X, y = toy(60, noise=1.0, seed=7)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        model = EP(RBF(3.0, 10.0), StepFlip(0.1), max_iter=15, optimizer=None).fit(X, y)
    assert not model.converged_
    for attr in [
        "site_nu_",
        "site_tau_",
        "mu_cav_",
        "var_cav_",
        "posterior_mean_",
        "posterior_var_",
        "alpha_",
    ]:
        assert not np.isnan(getattr(model, attr)).any(), attr
    assert not np.isnan(model.loo_predictive()).any()
    assert not np.isnan(model.log_marginal_likelihood_)
    with pytest.warns(ConvergenceWarning):
        EP(
            RBF(3.0, 10.0),
            StepFlip(0.1),
            method="parallel",
            damping=0.5,
            max_iter=15,
            optimizer=None,
        ).fit(X, y)


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(method="secant"),
        dict(method=None),
        dict(damping=0.0),
        dict(damping=1.01),
        dict(damping=-0.5),
        dict(max_iter=0),
        dict(max_iter=1.5),
        dict(max_iter=True),
        dict(tol=0.0),
        dict(tol=-1.0),
    ],
)
def test_bad_arguments(kwargs):
    X, y = toy(10)
    name = next(iter(kwargs))
    with pytest.raises(ValueError, match=name):
        EP(**kwargs, optimizer=None).fit(X, y)


def test_bad_init_and_unfitted():
    X, y = toy(10)
    with pytest.raises(ValueError, match="site_nu"):
        EP(optimizer=None).fit(
            X, y, site_nu_init=np.zeros(3), site_tau_init=np.zeros(3)
        )
    with pytest.raises(NotFittedError):
        EP(optimizer=None).loo_predictive()
    with pytest.raises(NotFittedError):
        EP(optimizer=None).predict_proba(X)


def test_get_set_params_and_defaults():
    model = EP(optimizer=None)
    assert model.get_params(deep=False) == dict(
        kernel=None,
        likelihood=None,
        method="newton",
        damping=1.0,
        max_iter=100,
        tol=1e-8,
        optimizer=None,
        n_restarts_optimizer=0,
        random_state=None,
        hyperparameter_bounds="auto",
        verbose=False,
        multi_class="one_vs_one",
    )
    assert EP().optimizer == "fmin_l_bfgs_b"
    X, y = toy(20)
    model.fit(X, y)
    assert isinstance(model.kernel_, RBF) and isinstance(model.likelihood_, Probit)
    assert model.likelihood_.noise_var == 1.0
    assert (
        repr(EP(method="parallel", damping=0.5, optimizer=None))
        == "EP(damping=0.5, method='parallel', optimizer=None)"
    )


def test_run_ep_rejects_unknown_method():
    with pytest.raises(ValueError, match="method"):
        run_ep(np.eye(2), np.array([1.0, -1.0]), Probit(1.0), method="secant")


@pytest.mark.parametrize("scale", ["zero", "moderate", "tiny", "mixed"])
def test_diagonal_from_the_triangular_inverse_matches_the_full_solve(scale):
    # eq-sites-diag-selected against diag(K - V^T V), including sites whose tau * Sigma_ii is
    # far below the fallback threshold (where (1 - (B^-1)_ii) / tau would lose digits)
    rng = np.random.default_rng(3)
    n = 120
    X, _ = toy(n)
    K = RBF(0.8, 3.0)(X) + 1e-8 * np.eye(n)
    tau = {
        "zero": np.zeros(n),
        "moderate": rng.uniform(0.1, 5.0, n),
        "tiny": 10.0 ** rng.uniform(-14, -5, n),
        "mixed": np.where(rng.random(n) < 0.3, 0.0, 10.0 ** rng.uniform(-12, 2, n)),
    }[scale]
    nu = rng.standard_normal(n)
    fast, full = SitePosterior(K, nu, tau), SitePosterior(K, nu, tau, full=True)
    assert full.Sigma is not None and fast.Sigma is None
    np.testing.assert_allclose(fast.var, np.diag(full.Sigma), rtol=1e-9)
    np.testing.assert_allclose(fast.var, full.var, rtol=1e-9)
    np.testing.assert_allclose(fast.mean, full.mean, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("method", ["anderson", "newton"])
@pytest.mark.parametrize("lik", [Probit(1.0), Probit(0.3, kappa=0.1)])
def test_accelerated_ep_reaches_the_sequential_fixed_point_in_fewer_iterations(
    lik, method
):
    X, y = toy(150)
    K = RBF(1.0, 5.0)(X)
    ref, _, converged, _, _, _ = run_ep(K, y, lik, method="sequential", tol=1e-12)
    assert converged
    post, n_fast, converged, refused, hist, _ = solve_ep(
        K, y, lik, method=method, max_iter=500
    )
    slower = "parallel" if method == "anderson" else "anderson"
    _, n_slow, _, _, _, _ = solve_ep(K, y, lik, method=slower, max_iter=500)
    assert converged and refused == 0 and hist[-1] < 1e-8
    assert n_fast < n_slow
    assert post.Linv is None  # no n x n inverse is kept after the run
    np.testing.assert_allclose(post.mean, ref.mean, atol=1e-6)
    np.testing.assert_allclose(post.cavities()[1], ref.cavities()[1], rtol=1e-6)
    model = EP(RBF(1.0, 5.0), lik, method=method, optimizer=None).fit(X, y)
    assert model.converged_ and np.allclose(model.posterior_mean_, ref.mean, atol=1e-6)


def test_newton_damped_and_warm_started_runs_reach_the_same_fixed_point():
    X, y = toy(120)
    K = RBF(1.0, 5.0)(X)
    ref = run_ep(K, y, Probit(1.0), method="sequential", tol=1e-12).posterior
    damped = solve_ep(K, y, Probit(1.0), method="newton", damping=0.5, max_iter=200)
    assert damped.converged
    np.testing.assert_allclose(damped.posterior.mean, ref.mean, atol=1e-6)
    warm = solve_ep(K, y, Probit(1.0), ref.nu, ref.tau, method="newton")
    assert warm.converged and warm.n_iter <= 1


def test_sigma_from_the_triangular_inverse_matches_the_full_covariance():
    from gpc_literate.ep_fast import _sigma_lower

    X, y = toy(80)
    K = RBF(1.0, 5.0)(X)
    ref = run_ep(K, y, Probit(1.0), method="sequential", tol=1e-12).posterior
    tau = ref.tau.copy()
    tau[:5] = 1e-9  # tau_i Sigma_ii < 1e-5: the exact-column branch
    full = SitePosterior(K, ref.nu, tau, full=True).Sigma
    fast = _sigma_lower(K, SitePosterior(K, ref.nu, tau, keep_inverse=True))
    fast = np.tril(fast) + np.tril(fast, -1).T
    np.testing.assert_allclose(fast, full, rtol=1e-8, atol=1e-10 * np.abs(full).max())


def test_newton_without_convergence_warns():
    X, y = toy(100)
    with pytest.warns(ConvergenceWarning, match="newton"):
        EP(RBF(1.0, 5.0), Probit(1.0), method="newton", max_iter=1, optimizer=None).fit(
            X, y
        )


# --------------------------------------------------------------------------- low-rank start


def testpivoted_cholesky_residual_bound_exact_rank_and_give_up():
    from gpc_literate.ep_fast import pivoted_cholesky

    X, _ = toy(120)
    K = RBF(1.5, 3.0)(X)
    Qt, d = pivoted_cholesky(K, rel_tol=1e-6)
    R = K - Qt.T @ Qt
    np.testing.assert_allclose(np.diag(R), d, atol=1e-12)  # the returned diagonal
    assert np.abs(R).max() <= 1e-6 * 3.0 * (1 + 1e-9)  # every entry within the bound
    assert len(Qt) < len(K)
    for k in (
        1,
        10,
        len(Qt) - 1,
    ):  # row k's largest squared entry = the pivot of step k
        assert np.isclose(
            np.abs(Qt[k]).max() ** 2, pivoted_cholesky(K, 0.0, k)[1].max()
        )
    Qt_short, d_short = pivoted_cholesky(K, rel_tol=1e-6, max_rank=len(Qt) - 1)
    assert (
        len(Qt_short) == len(Qt) - 1 and d_short.max() > 1e-6 * 3.0
    )  # stopped at the cap
    F = np.random.default_rng(3).standard_normal((50, 4))
    Qt4, _ = pivoted_cholesky(F @ F.T, rel_tol=1e-12)
    assert len(Qt4) == 4
    np.testing.assert_allclose(Qt4.T @ Qt4, F @ F.T, atol=1e-10)


def test_lowrank_marginals_are_those_of_the_low_rank_prior():
    from gpc_literate.ep_fast import lowrank_diag_marginals, pivoted_cholesky

    X, _ = toy(90)
    Qt, _ = pivoted_cholesky(RBF(1.5, 3.0)(X))
    rng = np.random.default_rng(4)
    nu, tau = rng.standard_normal(90), rng.uniform(0.0, 3.0, 90)
    mean, var = lowrank_diag_marginals(Qt, 0.0, nu, tau)
    post = SitePosterior(Qt.T @ Qt, nu, tau)
    np.testing.assert_allclose(mean, post.mean, atol=1e-9)
    np.testing.assert_allclose(var, post.var, rtol=1e-8)


def test_newton_with_the_low_rank_start_reaches_the_same_fixed_point_in_fewer_steps():
    from gpc_literate.ep_fast import _lowrank_start

    X, y = toy(400, noise=0.3)
    K = RBF(3.0, 3.0)(X)  # smooth kernel, 2-D inputs: rank 28 at 1e-6
    zeros = np.zeros(len(y))
    start = _lowrank_start(K, y, Probit(1.0), zeros, zeros)
    assert start is not None and start[1]  # close to low rank
    ref = run_ep(K, y, Probit(1.0), method="sequential", tol=1e-12).posterior
    post, n_start, converged, _, hist, _ = solve_ep(K, y, Probit(1.0), method="newton")
    _, n_prior, _, _, _, _ = solve_ep(
        K, y, Probit(1.0), method="newton", lowrank_start=False
    )
    assert converged and n_start <= 2 < n_prior and hist[0] < 1e-4
    np.testing.assert_allclose(post.mean, ref.mean, atol=1e-6)
    np.testing.assert_allclose(post.cavities()[1], ref.cavities()[1], rtol=1e-6)
    warm = solve_ep(K, y, Probit(1.0), ref.nu * 1.1, ref.tau * 0.9, method="newton")
    assert (
        warm.converged and warm.n_iter <= 1
    )  # warm sites are refined on the low-rank prior too


@pytest.mark.parametrize("case", ["not low rank", "negative sites"])
def test_no_low_rank_start_leaves_the_run_unchanged(case):
    from gpc_literate.ep_fast import _lowrank_start, pivoted_cholesky

    X, y = toy(400, noise=0.3)
    if case == "not low rank":
        K, lik = RBF(0.05, 3.0)(X), Probit(1.0)
    else:  # flip noise: EP's sites turn negative
        K, lik = RBF(3.0, 3.0)(X), Probit(0.3, kappa=0.1)
    low_rank = pivoted_cholesky(K, max_rank=len(y) // 8)[1].max() <= 1e-6 * 3.0
    assert low_rank == (case == "negative sites")
    zeros = np.zeros(len(y))
    assert _lowrank_start(K, y, lik, zeros, zeros) is None
    a = solve_ep(K, y, lik, method="newton", max_iter=200)
    b = solve_ep(K, y, lik, method="newton", max_iter=200, lowrank_start=False)
    assert (
        a.converged
        and a.n_iter == b.n_iter
        and np.array_equal(a.posterior.mean, b.posterior.mean)
    )
    assert np.any(a.posterior.tau < 0.0) == (case == "negative sites")


@pytest.mark.parametrize("method", ["parallel", "newton"])
@pytest.mark.parametrize("variance", [10.0, 100.0, 1000.0])
def test_adaptive_damping_converges_on_separable_data(method, variance):
    """eq-sites-adaptive-damping: parallel and Newton-type EP with the default damping converge
    on well-separated classes at large signal variance, to sequential EP's fixed point."""
    rng = np.random.default_rng(0)
    y = np.where(np.arange(300) % 2 == 0, 1.0, -1.0)
    X = rng.normal(size=(300, 2)) + 3.0 * y[:, None]
    kernel = RBF(1.0, variance)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = EP(kernel, method=method, optimizer=None).fit(X, y)
    reference = EP(kernel, method="sequential", optimizer=None).fit(X, y)
    assert model.converged_
    assert model.log_marginal_likelihood_ == pytest.approx(
        reference.log_marginal_likelihood_, abs=1e-6
    )
    scale = max(1.0, np.abs(reference.posterior_mean_).max())
    assert (
        np.abs(model.posterior_mean_ - reference.posterior_mean_).max() < 1e-6 * scale
    )


def test_adapt_damping_rule():
    from gpc_literate.sites import DAMPING_FLOOR, adapt_damping

    assert adapt_damping(0.8, 0.8, [1.0]) == 0.8
    assert adapt_damping(0.8, 0.8, [1.0, 2.0]) == 0.4
    assert adapt_damping(0.4, 0.8, [2.0, 1.0]) == pytest.approx(0.5)
    assert adapt_damping(0.7, 0.8, [2.0, 1.0]) == 0.8
    assert adapt_damping(0.8 * DAMPING_FLOOR, 0.8, [1.0, 2.0]) == 0.8 * DAMPING_FLOOR
