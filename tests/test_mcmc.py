"""gpc_literate.mcmc: the MCMC gold standard of chapter 21 (book/21_gold_standard.md).

Monte Carlo checks pass within N_SE standard errors; the seeds are fixed.
"""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import halfnorm, kstest

from gpc_literate.base import ConvergenceWarning
from gpc_literate.kernels import RBF
from gpc_literate.laplace import Logistic
from gpc_literate.likelihoods import Gaussian, Probit, StepFlip
from gpc_literate.mcmc import (
    ais_log_evidence,
    ais_schedule,
    effective_sample_size,
    elliptical_slice_sampling,
    elliptical_slice_step,
    monte_carlo_mean,
    predictive_probabilities,
    prior_cholesky,
    split_rhat,
)
from gpc_literate.reference import exact_posterior_moments

N_SE = 4.0
X4 = np.array([[-1.0], [-0.2], [0.5], [1.4]])
Y4 = np.array([-1.0, 1.0, -1.0, 1.0])
K4 = RBF(length_scale=1.0)(X4)


def quiet_run(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return elliptical_slice_sampling(*args, **kwargs)


# -- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error, word",
    [
        (dict(K=np.ones((4, 3))), ValueError, "K"),
        (dict(K=K4 + np.triu(np.ones((4, 4)), 1)), ValueError, "symmetric"),
        (dict(K=np.full((4, 4), np.nan)), ValueError, "K"),
        (dict(y=Y4[:3]), ValueError, "y"),
        (dict(y=np.array([0.0, 1.0, 0.0, 1.0])), ValueError, "labels"),
        (dict(likelihood="probit"), TypeError, "likelihood"),
        (dict(n_samples=0), ValueError, "n_samples"),
        (dict(n_samples=2.5), TypeError, "n_samples"),
        (dict(n_chains=True), TypeError, "n_chains"),
        (dict(burn_in=-1), ValueError, "burn_in"),
        (dict(thin=0), ValueError, "thin"),
        (dict(max_shrink=0), ValueError, "max_shrink"),
        (dict(rng="seed"), TypeError, "rng"),
        (dict(rng=1.5), TypeError, "rng"),
        (dict(progress="yes"), TypeError, "progress"),
        (dict(jitter=-1.0), ValueError, "jitter"),
        (dict(f0=np.zeros(3)), ValueError, "f0"),
        (dict(f0=-Y4), ValueError, "f0"),  # every label violated: L(f0) = 0
    ],
)
def test_bad_input_is_refused_with_the_argument_named(kwargs, error, word):
    args = dict(K=K4, y=Y4, likelihood=StepFlip(0.0))
    settings_ = dict(n_samples=10, burn_in=0)
    for key in list(kwargs):
        (args if key in args else settings_)[key] = kwargs[key]
    with pytest.raises(error, match=word):
        elliptical_slice_sampling(args["K"], args["y"], args["likelihood"], **settings_)


@pytest.mark.parametrize(
    "kwargs, error, word",
    [
        (dict(schedule=np.array([0.0, 0.5, 0.4, 1.0])), ValueError, "schedule"),
        (dict(schedule=np.array([0.1, 1.0])), ValueError, "schedule"),
        (dict(schedule=0), ValueError, "n_temperatures"),
        (dict(n_runs=0), ValueError, "n_runs"),
        (dict(n_steps=0), ValueError, "n_steps"),
    ],
)
def test_bad_ais_input_is_refused(kwargs, error, word):
    with pytest.raises(error, match=word):
        ais_log_evidence(K4, Y4, StepFlip(0.1), **kwargs)


def test_a_temperature_outside_zero_one_is_refused():
    L = prior_cholesky(K4)
    with pytest.raises(ValueError, match="beta"):
        elliptical_slice_step(
            np.abs(Y4)[None] * Y4,
            np.zeros(1),
            L,
            StepFlip(0.0),
            Y4,
            np.random.default_rng(0),
            beta=0.0,
        )


def test_bad_predictive_input_is_refused():
    res = quiet_run(K4, Y4, StepFlip(0.1), n_samples=10, burn_in=0, rng=0)
    with pytest.raises(ValueError, match="K_cross"):
        predictive_probabilities(res, np.ones((2, 3)), np.ones(2), StepFlip(0.1))


# -- the sampler -----------------------------------------------------------------------------


def test_one_step_leaves_the_half_normal_invariant():
    """20 000 exact posterior draws of one noise-free point, one step each: still half-normal."""
    rng = np.random.default_rng(0)
    k11 = 2.0
    f = np.abs(rng.standard_normal((20_000, 1))) * np.sqrt(k11)  # y = +1
    L = prior_cholesky(np.array([[k11]]))
    f_new, ll, n_prop, capped = elliptical_slice_step(
        f, np.zeros(20_000), L, StepFlip(0.0), np.array([1.0]), rng
    )
    assert np.all(f_new > 0) and np.all(ll == 0.0) and not capped.any()
    assert np.mean(f_new != f) > 0.99 and n_prop.min() >= 1
    assert kstest(f_new[:, 0], halfnorm(scale=np.sqrt(k11)).cdf).pvalue > 1e-3


def test_one_point_probit_posterior_moments():
    """<f> = k dlogZ/dmu and Var f = k + k^2 d2logZ/dmu2 at mu = 0 (chapter 2's log_Z)."""
    lik, k11 = Probit(noise_var=0.5, kappa=0.1), 1.5
    _, d1, d2 = lik.log_Z(1.0, 0.0, k11)
    res = elliptical_slice_sampling(
        np.array([[k11]]), [1.0], lik, n_samples=2000, burn_in=100, rng=1
    )
    assert res.converged
    assert abs(res.mean[0] - k11 * d1) < N_SE * res.mean_se[0]
    assert abs(res.var[0] - (k11 + k11**2 * d2)) < N_SE * res.var_se[0]


def test_six_points_agree_with_the_reference():
    lik = StepFlip(0.1)
    X6 = np.array([[-2.0], [-1.1], [-0.3], [0.4], [1.0], [2.1]])
    y6 = np.array([-1.0, -1.0, 1.0, -1.0, 1.0, 1.0])
    K6 = RBF(length_scale=1.0)(X6)
    ref = exact_posterior_moments(K6, y6, lik, n_samples=200_000, rng=2)
    res = elliptical_slice_sampling(K6, y6, lik, n_samples=2500, burn_in=300, rng=3)
    assert res.converged
    z = (res.mean - ref.mean) / np.hypot(res.mean_se, ref.mean_se)
    assert np.all(np.abs(z) < N_SE), z


def test_predictive_matches_the_one_point_closed_form():
    kernel = RBF(length_scale=1.0, variance=2.0)
    x1, xs = np.array([[0.0]]), np.array([[0.4], [1.5]])
    res = elliptical_slice_sampling(
        kernel(x1), [-1.0], StepFlip(0.0), n_samples=1500, burn_in=100, rng=4
    )
    pred = predictive_probabilities(res, kernel(xs, x1), kernel.diag(xs), StepFlip(0.0))
    rho = kernel(xs, x1)[:, 0] / 2.0
    exact = 0.5 - np.arcsin(rho) / np.pi  # eq-gpc-one-point-predictive, y1 = -1
    assert np.all(np.abs(pred.prob - exact) < N_SE * pred.prob_se)
    assert np.all(pred.var > 0) and pred.mean.shape == (2,)


def test_capped_steps_stay_put_and_keep_the_labels():
    res = quiet_run(K4, Y4, StepFlip(0.0), n_samples=50, burn_in=0, max_shrink=1, rng=5)
    assert res.n_capped > 0
    assert np.all(Y4 * res.samples > 0)
    stays = np.all(res.samples[:, 1:] == res.samples[:, :-1], axis=-1)
    assert stays.any() and not stays.all()


def test_same_seed_same_draws_and_logged_likelihoods():
    a = quiet_run(K4, Y4, Logistic(), n_samples=30, burn_in=5, thin=2, rng=6)
    b = quiet_run(
        K4,
        Y4,
        Logistic(),
        n_samples=30,
        burn_in=5,
        thin=2,
        rng=np.random.default_rng(6),
    )
    c = quiet_run(K4, Y4, Logistic(), n_samples=30, burn_in=5, thin=2, rng=7)
    assert np.array_equal(a.samples, b.samples) and not np.array_equal(
        a.samples, c.samples
    )
    assert a.samples.shape == (4, 30, 4) and a.log_lik.shape == (4, 30)
    assert np.allclose(a.log_lik, Logistic().log_prob(Y4, a.samples).sum(axis=-1))


def test_a_short_run_warns():
    with pytest.warns(ConvergenceWarning, match="R-hat"):
        res = elliptical_slice_sampling(
            K4, Y4, StepFlip(0.0), n_samples=20, burn_in=0, rng=8
        )
    assert not res.converged


# -- diagnostics -----------------------------------------------------------------------------


def ar1(phi, shape, rng):
    x = np.empty(shape)
    x[:, 0] = rng.standard_normal((shape[0], *shape[2:]))
    for t in range(1, shape[1]):
        x[:, t] = phi * x[:, t - 1] + np.sqrt(1 - phi**2) * rng.standard_normal(
            x[:, t].shape
        )
    return x


def test_rhat_is_one_on_iid_draws_and_large_for_shifted_chains():
    rng = np.random.default_rng(9)
    iid = rng.standard_normal((4, 1000, 50))
    assert split_rhat(iid).max() < 1.01
    shifted = iid + np.arange(4)[:, None, None]
    assert split_rhat(shifted).min() > 1.1
    drifting = iid + np.linspace(0, 2, 1000)[None, :, None]  # one chain, a trend
    assert split_rhat(drifting[:1]).min() > 1.1  # split chains catch it


def test_ess_of_iid_and_ar1_chains():
    rng = np.random.default_rng(10)
    M, N, P = 4, 1000, 100
    iid = rng.standard_normal((M, N, P))
    assert abs(effective_sample_size(iid).mean() / (M * N) - 1) < 0.1
    phi = 0.8
    tau = (1 + phi) / (1 - phi)
    ess = effective_sample_size(ar1(phi, (M, N, P), rng))
    assert abs(ess.mean() / (M * N / tau) - 1) < 0.15 and ess.max() < M * N / 4
    assert np.all(np.isnan(effective_sample_size(np.ones((2, 10)))))


def test_monte_carlo_mean_standard_error_is_calibrated():
    rng = np.random.default_rng(11)
    x = ar1(0.7, (4, 500, 400), rng)  # 400 independent problems, mean 0
    mean, se, _ = monte_carlo_mean(x)
    z = mean / se
    assert abs(z.std() - 1) < 0.15 and abs(z.mean()) < 0.2


# -- annealed importance sampling ------------------------------------------------------------


def test_ais_is_exact_for_gp_regression():
    t = np.array([0.3, -0.4, 0.8, 1.1])
    exact = exact_posterior_moments(K4, t, Gaussian(0.2)).log_evidence
    ais = ais_log_evidence(K4, t, Gaussian(0.2), n_runs=300, schedule=200, rng=12)
    assert abs(ais.log_evidence - exact) < N_SE * ais.log_evidence_se
    assert ais.log_weights.shape == (300,) and ais.f.shape == (300, 4)


def test_ais_one_point_evidence_is_a_half_and_the_schedule():
    ais = ais_log_evidence(
        np.array([[2.0]]), [1.0], StepFlip(0.2), n_runs=1000, schedule=30, rng=13
    )
    assert abs(ais.log_evidence - np.log(0.5)) < N_SE * ais.log_evidence_se
    betas = ais_schedule(10)
    assert betas[0] == 0 and betas[-1] == 1 and np.allclose(betas[5], 0.5**4)


def test_ais_without_any_live_run_returns_minus_infinity_and_warns():
    K = np.array(
        [[1.0, 0.999999], [0.999999, 1.0]]
    )  # opposite labels, nearly equal inputs
    with pytest.warns(ConvergenceWarning, match="ESS of the weights"):
        ais = ais_log_evidence(
            K, [1.0, -1.0], StepFlip(0.0), n_runs=3, schedule=5, rng=14
        )
    assert ais.log_evidence == -np.inf and ais.weight_ess == 0.0


# -- a property on random small problems -----------------------------------------------------


@st.composite
def problems(draw):
    n = draw(st.integers(1, 5))
    X = np.array(draw(st.lists(st.floats(-3, 3), min_size=n, max_size=n)))[:, None]
    y = np.array(draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=n, max_size=n)))
    kernel = RBF(
        length_scale=draw(st.sampled_from([0.3, 1.0, 3.0])),
        variance=10.0 ** draw(st.integers(-1, 2)),
    )
    lik = draw(st.sampled_from([StepFlip(0.0), StepFlip(0.2), Probit(0.5), Logistic()]))
    return kernel(X), y, lik


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(problem=problems(), seed=st.integers(0, 2**16))
def test_random_small_problems(problem, seed):
    K, y, lik = problem
    res = quiet_run(K, y, lik, n_samples=8, burn_in=4, n_chains=2, rng=seed)
    assert res.samples.shape == (2, 8, len(y)) and np.all(np.isfinite(res.samples))
    assert np.all(np.isfinite(res.log_lik))
    if isinstance(lik, StepFlip) and lik.kappa == 0.0:
        assert np.all(y * res.samples > 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ais = ais_log_evidence(K, y, lik, n_runs=4, schedule=5, rng=seed)
    assert ais.log_evidence <= 1e-12  # every weight is a product of L^dbeta <= 1
