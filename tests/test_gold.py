"""gpc_literate.gold: every approximation against MCMC (book/23_approximations_vs_gold.md).

Monte Carlo checks pass within N_SE standard errors; the seeds are fixed and the runs short.
"""

import json
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.integrate import quad
from scipy.linalg import cho_factor, cho_solve
from scipy.special import logsumexp
from scipy.stats import multivariate_normal, norm

from gpc_literate import datasets, gold
from gpc_literate.base import ConvergenceWarning
from gpc_literate.ep_classifier import EP
from gpc_literate.kernels import RBF
from gpc_literate.laplace import Logistic
from gpc_literate.likelihoods import Gaussian, Probit
from gpc_literate.mcmc import prior_cholesky

N_SE = 4.0
K3 = RBF(length_scale=1.0, variance=2.0)(np.array([[-1.0], [0.2], [1.1]]))
TAU3 = np.array([0.5, 0.0, 2.0])
NU3 = np.array([1.0, -0.3, 0.7])


def direct_site_gaussian(K, tau, nu):
    """(mean, cov, log Z_q) of eq-gold-q, eq-gold-evidence from K^-1 + T, without sites.py."""
    n = len(K)
    precision = cho_solve(cho_factor(K), np.eye(n)) + np.diag(tau)
    cov = cho_solve(cho_factor(precision), np.eye(n))
    mean = cov @ nu
    # log Z_q = -1/2 log|K| + 1/2 log|S| + 1/2 nu^T S nu, by completing the square
    log_det_k = np.linalg.slogdet(K)[1]
    log_det_s = np.linalg.slogdet(cov)[1]
    return mean, cov, -0.5 * log_det_k + 0.5 * log_det_s + 0.5 * nu @ mean


# -- the Gaussian of the sites and the correction R ------------------------------------------


def test_site_gaussian_equals_the_direct_formulas():
    q = gold.site_gaussian(K3, TAU3, NU3)
    mean, cov, log_norm = direct_site_gaussian(K3, TAU3, NU3)
    np.testing.assert_allclose(q.mean, mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(q.cov, cov, rtol=1e-10, atol=1e-12)
    assert q.log_norm == pytest.approx(log_norm, rel=1e-10)
    assert isinstance(q.log_norm, float) and q.cov.shape == (3, 3)


def test_site_gaussian_without_information_is_the_prior():
    q = gold.site_gaussian(K3, np.zeros(3), NU3)
    np.testing.assert_allclose(q.cov, K3, rtol=1e-12)
    np.testing.assert_allclose(q.mean, K3 @ NU3, rtol=1e-12)
    assert q.log_norm == pytest.approx(0.5 * NU3 @ K3 @ NU3, rel=1e-12)


@pytest.mark.parametrize(
    "k, tau, nu", [(2.0, 0.7, 1.3), (0.5, 3.0, -2.0), (1.5, 0.0, 0.4)]
)
def test_one_point_log_norm_is_the_gaussian_integral(k, tau, nu):
    q = gold.site_gaussian([[k]], [tau], [nu])
    closed = -0.5 * np.log1p(k * tau) + 0.5 * nu**2 * k / (1.0 + k * tau)
    assert q.log_norm == pytest.approx(closed, rel=1e-12)
    integral, _ = quad(
        lambda f: np.exp(norm.logpdf(f, scale=np.sqrt(k)) + nu * f - 0.5 * tau * f**2),
        -np.inf,
        np.inf,
        epsabs=1e-13,
        epsrel=1e-11,
    )
    assert q.log_norm == pytest.approx(np.log(integral), abs=1e-8)
    assert q.mean[0] == pytest.approx(k * nu / (1.0 + k * tau), rel=1e-12)
    assert q.cov[0, 0] == pytest.approx(k / (1.0 + k * tau), rel=1e-12)


@pytest.mark.parametrize(
    "K, tau, nu, word",
    [
        (np.ones((3, 2)), TAU3[:2], NU3[:2], "K"),
        (np.ones(3), TAU3, NU3, "K"),
        (np.zeros((0, 0)), [], [], "K"),
        (np.where(np.eye(3) > 0, np.nan, K3), TAU3, NU3, "K"),
        (np.array([[1.0, 0.0], [0.0, -3.0]]), [1.0, 1.0], [0.0, 0.0], "K"),
        (np.array([[1.0, 0.5], [0.0, 1.0]]), [1.0, 1.0], [0.0, 0.0], "K"),
        (K3, -TAU3, NU3, "site_tau"),
        (K3, TAU3[:2], NU3, "site_tau"),
        (K3, TAU3[:, None], NU3, "site_tau"),
        (K3, [0.5, np.inf, 1.0], NU3, "site_tau"),
        (K3, TAU3, NU3[:2], "site_nu"),
        (K3, TAU3, [1.0, np.nan, 0.0], "site_nu"),
    ],
)
def test_site_gaussian_refuses_bad_input_naming_the_argument(K, tau, nu, word):
    with pytest.raises(ValueError, match=f"^{word} must"):
        gold.site_gaussian(K, tau, nu)


def test_site_ratio_is_the_likelihood_over_the_sites():
    lik, y = Probit(noise_var=1.0), np.array([1.0, -1.0, 1.0])
    q = gold.site_gaussian(K3, TAU3, NU3)
    ratio = gold.SiteRatio(lik, TAU3, NU3, q.mean)
    g = np.random.default_rng(0).normal(size=(5, 3))  # five states, broadcast
    f = q.mean + g
    expected = lik.log_prob(y, f) - (NU3 * f - 0.5 * TAU3 * f**2)
    np.testing.assert_allclose(ratio.log_prob(y, g), expected, rtol=1e-12)
    # eq-gold-ratio: N(f; 0, K) prod p(y_i | f_i) = Z_q N(f; m, S) R(f), at every f
    for fi, gi in zip(f, g):
        left = (
            multivariate_normal(np.zeros(3), K3).logpdf(fi) + lik.log_prob(y, fi).sum()
        )
        right = (
            q.log_norm
            + multivariate_normal(q.mean, q.cov).logpdf(fi)
            + ratio.log_prob(y, gi).sum()
        )
        assert left == pytest.approx(right, rel=1e-10)


# -- the gold standard on GP regression, around deliberately wrong sites ---------------------


def regression_problem():
    rng = np.random.default_rng(7)
    X = rng.uniform(-1.5, 1.5, size=(12, 1))
    K = RBF(length_scale=2.0, variance=1.0)(X)
    noise = 0.5
    y = np.sin(2.0 * X[:, 0]) + np.sqrt(noise) * rng.standard_normal(12)
    chol = cho_factor(K + noise * np.eye(12))
    A = cho_solve(chol, np.eye(12))  # (K + noise I)^-1
    exact = {
        "mean": K @ (A @ y),
        "var": np.diag(K - K @ A @ K),
        "log_z": (
            -0.5 * y @ A @ y
            - np.sum(np.log(np.diag(chol[0])))
            - 6.0 * np.log(2.0 * np.pi)
        ),
        "loo_mean": y - (A @ y) / np.diag(A),
        "loo_var": 1.0 / np.diag(A),
    }
    tau = np.full(12, 0.5 / noise)  # half the noise precision
    return K, y, Gaussian(noise_var=noise), tau, tau * (y + 0.5), exact  # means shifted


@pytest.fixture(scope="module")
def regression():
    K, y, lik, tau, nu, exact = regression_problem()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # short chains: ESS < 400
        result = gold.gold_standard(
            K,
            y,
            lik,
            tau,
            nu,
            n_samples=600,
            burn_in=50,
            ais_runs=64,
            ais_schedule=100,
            rng=8,
        )
    return K, y, lik, tau, nu, exact, result


def test_gold_standard_is_exact_around_wrong_sites(regression):
    K, y, lik, tau, nu, exact, res = regression
    assert np.all(np.isfinite(res.mcmc.mean_se)) and res.mcmc.mean_se.max() < 0.05
    # the sites are wrong: q's mean and normaliser are many standard errors away
    assert np.abs(res.base.mean - exact["mean"]).max() > 10 * res.mcmc.mean_se.max()
    assert abs(res.base.log_norm - exact["log_z"]) > 10 * res.ais.log_evidence_se
    z_mean = (res.mcmc.mean - exact["mean"]) / res.mcmc.mean_se
    z_var = (res.mcmc.var - exact["var"]) / res.mcmc.var_se
    z_ev = (res.ais.log_evidence - exact["log_z"]) / res.ais.log_evidence_se
    assert np.abs(z_mean).max() < N_SE, z_mean
    assert np.abs(z_var).max() < N_SE, z_var
    assert abs(z_ev) < N_SE, z_ev
    assert res.ais.log_evidence_se < 0.5


def test_gold_standard_result_is_shifted_back_to_f(regression):
    K, y, lik, tau, nu, exact, res = regression
    assert res.mcmc.samples.shape == (4, 600, 12)
    np.testing.assert_allclose(
        res.mcmc.samples.mean(axis=(0, 1)), res.mcmc.mean, atol=1e-10
    )
    np.testing.assert_allclose(
        res.mcmc.log_lik, lik.log_prob(y, res.mcmc.samples).sum(-1), rtol=1e-12
    )
    np.testing.assert_allclose(res.mcmc.chol, prior_cholesky(K), rtol=1e-12)
    q = gold.site_gaussian(K, tau, nu)
    np.testing.assert_allclose(res.base.mean, q.mean, rtol=1e-12)
    assert res.base.log_norm == pytest.approx(q.log_norm, rel=1e-12)
    assert res.ais.f.shape == (64, 12)
    assert (
        abs(res.ais.f.mean(axis=0) - exact["mean"]).max() < 0.2
    )  # AIS ends at f, not g
    w = res.ais.log_weights
    assert res.ais.log_evidence == pytest.approx(
        logsumexp(w) - np.log(w.size), rel=1e-12
    )
    prob, se = gold.exact_loo(res.mcmc.samples, y, lik)
    np.testing.assert_allclose(res.loo_prob, prob, rtol=1e-12)
    np.testing.assert_allclose(res.loo_prob_se, se, rtol=1e-12)
    assert res.converged == bool(res.mcmc.converged and res.ais.weight_ess >= 10.0)
    assert res.summary().startswith("MCMC: ") and "\nAIS:  log p(y) = " in res.summary()


def test_exact_loo_agrees_with_the_closed_form(regression):
    K, y, lik, tau, nu, exact, res = regression
    # the estimator has a finite variance only if Var(f_i | D) < noise / 2 (eq-gold-loo)
    assert exact["var"].max() < 0.75 * lik.noise_var / 2
    density = norm.pdf(y, exact["loo_mean"], np.sqrt(exact["loo_var"]))
    z = (res.loo_prob - density) / res.loo_prob_se
    assert np.abs(z).max() < N_SE, z
    assert np.max(res.loo_prob_se / res.loo_prob) < 0.05


def test_gold_standard_is_reproducible_and_warns_on_short_runs():
    K, y, lik, tau, nu, _ = regression_problem()
    with pytest.warns(ConvergenceWarning):
        a = gold.gold_standard(
            K,
            y,
            lik,
            tau,
            nu,
            n_samples=20,
            burn_in=5,
            ais_runs=4,
            ais_schedule=5,
            rng=3,
        )
    assert not a.converged
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        b = gold.gold_standard(
            K,
            y,
            lik,
            tau,
            nu,
            n_samples=20,
            burn_in=5,
            ais_runs=4,
            ais_schedule=5,
            rng=np.random.default_rng(3),
        )
        c = gold.gold_standard(
            K,
            y,
            lik,
            tau,
            nu,
            n_samples=20,
            burn_in=5,
            ais_runs=4,
            ais_schedule=5,
            rng=4,
        )
    assert np.array_equal(a.mcmc.samples, b.mcmc.samples)
    assert a.ais.log_evidence == b.ais.log_evidence
    assert not np.array_equal(a.mcmc.samples, c.mcmc.samples)
    with pytest.raises(ValueError, match="site_tau"):
        gold.gold_standard(K, y, lik, -tau, nu, n_samples=20)


def test_exact_loo_is_the_harmonic_mean_and_refuses_bad_shapes():
    rng = np.random.default_rng(1)
    draws = rng.normal(size=(2, 50, 3))
    y = np.array([1.0, -1.0, 1.0])
    lik = Probit(noise_var=1.0)
    prob, se = gold.exact_loo(draws, y, lik)
    p = np.exp(lik.log_prob(y, draws))
    np.testing.assert_allclose(prob, 1.0 / np.mean(1.0 / p, axis=(0, 1)), rtol=1e-12)
    assert np.all(prob < p.mean(axis=(0, 1)))  # harmonic below arithmetic mean
    assert se.shape == (3,) and np.all(se > 0)
    for bad in (draws[0], draws[..., :2], draws[None]):
        with pytest.raises(ValueError, match="draws must have shape"):
            gold.exact_loo(bad, y, lik)


# -- the approximations in one format --------------------------------------------------------


@pytest.fixture(scope="module")
def small_crabs():
    d = datasets.load("crabs")
    rng = np.random.default_rng(0)
    train, test = rng.choice(80, 30, replace=False), rng.choice(120, 20, replace=False)
    kernel = RBF(length_scale=np.sqrt(d.n_features), variance=4.0)
    return kernel, d.X_train[train], d.y_train[train], d.X_test[test], d.y_test[test]


NAN_FIELDS = {
    "SVM": {"mean", "var", "prob", "log_evidence", "loo_prob"},
    "variational": {"loo_prob", "loo_decision"},
    "naive MF": {"log_evidence"},
}
CASES = [(family, m) for family in gold.FAMILIES for m in gold.METHODS[family]]


@pytest.mark.parametrize("family, method", CASES, ids=[f"{f}-{m}" for f, m in CASES])
def test_approximate_shapes_and_documented_nans(family, method, small_crabs):
    kernel, X, y, X_test, _ = small_crabs
    a = gold.approximate(method, kernel, X, y, X_test, family)
    shapes = {
        "mean": (30,),
        "var": (30,),
        "prob": (20,),
        "decision": (20,),
        "log_evidence": (),
        "loo_prob": (30,),
        "loo_decision": (30,),
    }
    for field, shape in shapes.items():
        value = np.asarray(getattr(a, field))
        assert value.shape == shape, field
        if field in NAN_FIELDS.get(method, ()):
            assert np.all(np.isnan(value)), field
        else:
            assert np.all(np.isfinite(value)), field
    if method != "SVM":
        assert np.all(a.var > 0) and np.all((a.prob > 0) & (a.prob < 1))
        assert np.array_equal(a.decision > 0, a.prob > 0.5)
    if method not in ("SVM", "variational"):
        assert np.all((a.loo_prob > 0) & (a.loo_prob < 1))
    assert isinstance(a.converged, bool) and a.seconds > 0


def test_approximate_ep_is_the_ep_fit_and_tap_its_fixed_point(small_crabs):
    kernel, X, y, X_test, _ = small_crabs
    ep = gold.approximate("EP", kernel, X, y, X_test, "probit")
    est = EP(kernel=kernel, likelihood=Probit(1.0), optimizer=None).fit(X, y)
    np.testing.assert_allclose(ep.mean, est.posterior_mean_, rtol=1e-10)
    np.testing.assert_allclose(ep.prob, est.predict_proba(X_test)[:, 1], rtol=1e-10)
    assert ep.log_evidence == pytest.approx(est.log_marginal_likelihood_, rel=1e-10)
    tap = gold.approximate("TAP", kernel, X, y, X_test, "probit")
    np.testing.assert_allclose(tap.mean, ep.mean, atol=1e-4)
    np.testing.assert_allclose(tap.loo_prob, ep.loo_prob, atol=1e-4)
    assert tap.log_evidence == pytest.approx(ep.log_evidence, abs=1e-4)
    logistic = gold.approximate("EP", kernel, X, y, X_test, "logistic")
    assert abs(logistic.log_evidence - ep.log_evidence) > 1e-3  # another likelihood


def test_approximate_refuses_unknown_methods_and_families(small_crabs):
    kernel, X, y, X_test, _ = small_crabs
    with pytest.raises(ValueError, match="method must be one of"):
        gold.approximate("SVM", kernel, X, y, X_test, "logistic")
    with pytest.raises(ValueError, match="method must be one of"):
        gold.approximate("Gibbs", kernel, X, y, X_test, "probit")
    with pytest.raises(ValueError, match="family must be one of"):
        gold.approximate("EP", kernel, X, y, X_test, "gaussian")
    assert isinstance(gold.family_likelihood("logistic"), Logistic)
    assert gold.family_likelihood("probit").noise_var == 1.0


# -- the measures ----------------------------------------------------------------------------


def test_information_bits():
    y = np.array([1.0, -1.0, 1.0, -1.0])
    assert gold.information_bits(y, np.full(4, 0.5)) == pytest.approx(0.0, abs=1e-15)
    assert gold.information_bits(y, np.array([1.0, 0.0, 1.0, 0.0])) == 1.0
    prob = np.array([0.8, 0.3, 0.6, 0.1])
    expected = 1.0 + np.mean(np.log2([0.8, 0.7, 0.6, 0.9]))
    assert gold.information_bits(y, prob) == pytest.approx(expected, rel=1e-12)
    wrong = gold.information_bits(y, np.array([0.05, 0.9, 0.1, 0.99]))
    assert wrong < -2.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        certain_wrong = gold.information_bits(
            [1.0], [0.0]
        )  # clipped: no log(0) warning
    assert np.isfinite(certain_wrong) and certain_wrong < -900


def test_compare_methods_records_every_method_and_failures(small_crabs, monkeypatch):
    kernel, X, y, X_test, y_test = small_crabs

    def broken(*args):
        raise ValueError("TAP broke down")

    monkeypatch.setitem(gold._ADAPTERS, "TAP", broken)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # recorded, never raised
        comp = gold.compare_methods(
            kernel,
            X,
            y,
            X_test,
            y_test,
            "probit",
            rng=0,
            n_samples=200,
            burn_in=20,
            ais_runs=8,
            ais_schedule=20,
        )
    assert list(comp.measures) == ["gold", "TAP", "Laplace", "EP", "naive MF", "SVM"]
    assert comp.measures["TAP"] == {"failed": "ValueError: TAP broke down"}
    assert set(comp.approximations) == {"Laplace", "EP", "naive MF", "SVM"}
    g = comp.measures["gold"]
    for key in (
        "test_error",
        "nlp",
        "bits",
        "sharpness",
        "log_evidence",
        "log_evidence_se",
        "loo_error",
        "seconds",
        "mean_abs_f",
        "min_ess",
        "max_rhat",
        "weight_ess",
        "max_prob_se",
    ):
        assert np.isfinite(g[key]), key
    assert g["log_evidence"] == comp.gold.ais.log_evidence
    assert g["loo_error"] == np.mean(comp.gold.loo_prob < 0.5)
    assert isinstance(g["converged"], bool) and g["min_ess"] == comp.gold.mcmc.min_ess
    assert comp.predictive.prob.shape == (20,)
    ep, a = comp.measures["EP"], comp.approximations["EP"]
    assert ep["d_mean"] == pytest.approx(np.mean(np.abs(a.mean - comp.gold.mcmc.mean)))
    assert ep["max_d_prob"] == pytest.approx(
        np.max(np.abs(a.prob - comp.predictive.prob))
    )
    assert ep["d_log_evidence"] == pytest.approx(a.log_evidence - g["log_evidence"])
    assert ep["test_error"] == np.mean(y_test * a.decision <= 0)
    assert abs(ep["d_log_evidence"]) < 1.0 and ep["max_d_prob"] < 0.1
    svm = comp.measures["SVM"]
    for key in (
        "d_mean",
        "d_var",
        "max_d_prob",
        "d_log_evidence",
        "mean_d_loo",
        "bits",
    ):
        assert np.isnan(svm[key]), key
    assert 0.0 <= svm["loo_error"] <= 1.0 and 0.0 <= svm["test_error"] <= 1.0
    assert np.isnan(comp.measures["naive MF"]["d_log_evidence"])
    json.dumps(comp.measures)  # plain Python values: a results file holds them


def test_compare_methods_lets_programming_errors_through(small_crabs, monkeypatch):
    kernel, X, y, X_test, y_test = small_crabs

    def buggy(*args):
        raise TypeError("a bug, not a breakdown")

    monkeypatch.setitem(gold._ADAPTERS, "Laplace", buggy)
    with pytest.raises(TypeError, match="a bug"):
        gold.compare_methods(
            kernel, X, y, X_test, y_test, "logistic", rng=0, n_samples=20
        )


def test_compare_methods_with_chosen_methods(small_crabs):
    kernel, X, y, X_test, y_test = small_crabs
    comp = gold.compare_methods(
        kernel,
        X,
        y,
        X_test,
        y_test,
        "logistic",
        methods=["EP"],
        rng=1,
        n_samples=100,
        burn_in=10,
        ais_runs=4,
        ais_schedule=10,
    )
    assert list(comp.measures) == ["gold", "EP"] and list(comp.approximations) == ["EP"]
    assert comp.measures["gold"]["seconds"] > comp.approximations["EP"].seconds


# -- a property on random small problems -----------------------------------------------------


@st.composite
def site_problems(draw):
    n = draw(st.integers(1, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    A = rng.normal(size=(n, n)) * draw(st.sampled_from([0.3, 1.0, 3.0]))
    K = A @ A.T + draw(st.sampled_from([0.05, 0.5, 2.0])) * np.eye(n)
    tau = np.array(
        draw(
            st.lists(
                st.one_of(st.just(0.0), st.floats(0.0, 50.0)), min_size=n, max_size=n
            )
        )
    )
    nu = np.array(draw(st.lists(st.floats(-5.0, 5.0), min_size=n, max_size=n)))
    return K, tau, nu


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(problem=site_problems())
def test_site_gaussian_on_random_problems(problem):
    K, tau, nu = problem
    q = gold.site_gaussian(K, tau, nu)
    mean, cov, log_norm = direct_site_gaussian(K, tau, nu)
    scale = 1.0 + abs(log_norm) + 0.5 * abs(nu @ mean)
    assert abs(q.log_norm - log_norm) < 1e-8 * scale
    np.testing.assert_allclose(
        q.mean, mean, rtol=1e-7, atol=1e-9 * (1 + np.abs(mean).max())
    )
    np.testing.assert_allclose(q.cov, cov, rtol=1e-7, atol=1e-9 * np.abs(cov).max())
    np.testing.assert_allclose(q.cov, q.cov.T, rtol=0, atol=1e-14 * np.abs(q.cov).max())
    assert np.linalg.eigvalsh(q.cov).min() > 0


def test_loo_variance_limit_is_the_noise_variance_of_gaussian_tails():
    from gpc_literate.likelihoods import Gaussian, Probit, StepFlip
    from gpc_literate.laplace import Logistic

    assert gold.loo_variance_limit(Probit(noise_var=2.5)) == 2.5
    assert gold.loo_variance_limit(Gaussian(noise_var=0.3)) == 0.3
    assert gold.loo_variance_limit(Probit(noise_var=1.0, kappa=0.1)) == np.inf
    assert gold.loo_variance_limit(Logistic()) == np.inf
    assert gold.loo_variance_limit(StepFlip(0.1)) == np.inf


def test_gold_standard_marks_wide_probit_cavities_unreliable():
    from gpc_literate.likelihoods import Probit

    rng = np.random.default_rng(3)
    X = rng.standard_normal((12, 2))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    K = 25.0 * np.exp(-0.5 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1) / 4.0)
    tau, nu = np.full(12, 0.05), 0.05 * y
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        g = gold.gold_standard(
            K,
            y,
            Probit(),
            tau,
            nu,
            n_samples=100,
            burn_in=10,
            ais_runs=4,
            ais_schedule=5,
            rng=0,
        )
    tau_cav = 1.0 / np.diag(g.base.cov) - tau
    np.testing.assert_array_equal(g.loo_reliable, 1.0 / tau_cav < 1.0)
    assert not g.loo_reliable.all()
