"""gpc_literate.likelihoods (chapter 2): Gaussian averages, derivatives, stability, errors."""

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import log_ndtr, ndtr

from gpc_literate.likelihoods import (
    Gaussian,
    Likelihood,
    Probit,
    StepFlip,
    normal_ratio,
)

CLASSIFICATION = [
    StepFlip(0.0),
    StepFlip(0.1),
    StepFlip(0.45),
    Probit(1.0),
    Probit(0.3, kappa=0.05),
    Probit(2.5, kappa=0.3),
]
SMOOTH = [Probit(1.0), Probit(0.3, kappa=0.05), Probit(2.5, kappa=0.3), Gaussian(0.7)]


def _central_differences(fun, x, h=1e-5):
    """Return (analytic derivatives, finite differences of the entry before each)."""
    plus, minus, centre = fun(x + h), fun(x - h), fun(x)
    analytic, numeric = [], []
    for k in range(1, len(centre)):
        analytic.append(np.asarray(centre[k]))
        numeric.append((np.asarray(plus[k - 1]) - np.asarray(minus[k - 1])) / (2 * h))
    return analytic, numeric


# --------------------------------------------------------------------------- derivatives


@pytest.mark.parametrize("lik", CLASSIFICATION + [Gaussian(0.7)], ids=repr)
@pytest.mark.parametrize("y", [1.0, -1.0])
@pytest.mark.parametrize("var", [0.3, 1.0, 3.0])
def test_log_Z_derivatives_match_finite_differences(lik, y, var):
    mu = np.linspace(-25.0, 25.0, 201)
    analytic, numeric = _central_differences(lambda m: lik.log_Z(y, m, var), mu)
    for a, n in zip(analytic, numeric):
        np.testing.assert_allclose(n, a, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("lik", SMOOTH, ids=repr)
@pytest.mark.parametrize("y", [1.0, -1.0])
def test_log_prob_derivatives_match_finite_differences(lik, y):
    f = np.linspace(-15.0, 15.0, 181)
    analytic, numeric = _central_differences(
        lambda x: (lik.log_prob(y, x), *lik.log_prob_derivatives(y, x)), f
    )
    assert len(analytic) == 3
    for a, n in zip(analytic, numeric):
        np.testing.assert_allclose(n, a, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("lik", SMOOTH, ids=repr)
def test_log_Z_at_zero_variance_is_the_likelihood(lik):
    f = np.linspace(-6.0, 6.0, 25)
    y = 0.4 if isinstance(lik, Gaussian) else np.where(f > 0.3, 1.0, -1.0)
    logz, d1, d2 = lik.log_Z(y, f, 0.0)
    p1, p2, _ = lik.log_prob_derivatives(y, f)
    np.testing.assert_allclose(logz, lik.log_prob(y, f), rtol=1e-14)
    np.testing.assert_allclose(d1, p1, rtol=1e-14)
    np.testing.assert_allclose(d2, p2, rtol=1e-14)


def test_step_flip_has_no_f_derivatives():
    with pytest.raises(NotImplementedError, match="Probit"):
        StepFlip(0.1).log_prob_derivatives(1.0, 0.5)


# --------------------------------------------------------------------------- quadrature


def _log_Z_by_quad(lik, y, mu, var):
    s = np.sqrt(var)

    def density(f):
        return np.exp(lik.log_prob(y, f) - 0.5 * ((f - mu) / s) ** 2) / (
            np.sqrt(2 * np.pi) * s
        )

    lo, hi = min(mu - 12 * s, -1.0), max(mu + 12 * s, 1.0)
    opts = dict(epsabs=0.0, epsrel=1e-12, limit=400)
    return np.log(quad(density, lo, 0.0, **opts)[0] + quad(density, 0.0, hi, **opts)[0])


@pytest.mark.parametrize("lik", CLASSIFICATION, ids=repr)
@pytest.mark.parametrize("y", [1.0, -1.0])
@pytest.mark.parametrize("mu", [-2.5, -0.3, 0.0, 1.2, 4.0])
@pytest.mark.parametrize("var", [0.05, 1.0, 4.0])
def test_log_Z_matches_quadrature(lik, y, mu, var):
    assert lik.log_Z(y, mu, var)[0] == pytest.approx(
        _log_Z_by_quad(lik, y, mu, var), abs=1e-10
    )


@pytest.mark.parametrize(
    "y, mu, var", [(0.7, -1.0, 0.3), (-1.0, 2.0, 1.5), (2.4, 2.0, 1e-3)]
)
def test_gaussian_log_Z_matches_quadrature(y, mu, var):
    lik = Gaussian(0.5)
    assert lik.log_Z(y, mu, var)[0] == pytest.approx(
        _log_Z_by_quad(lik, y, mu, var), abs=1e-10
    )


def test_log_Z_closed_form():
    mu, var = np.linspace(-5, 5, 41), 0.7
    lik = Probit(0.4, kappa=0.1)
    expected = np.log(0.1 + 0.8 * ndtr(-mu / np.sqrt(1.1)))
    np.testing.assert_allclose(lik.log_Z(-1.0, mu, var)[0], expected, rtol=1e-13)
    np.testing.assert_allclose(
        StepFlip(0.0).log_Z(1.0, mu, var)[0], log_ndtr(mu / np.sqrt(var)), rtol=1e-14
    )


# --------------------------------------------------------------------------- normal_ratio


def test_normal_ratio_against_overshoot_quadrature():
    # Phi(-x) / N(x) = int_0^inf exp(-x u - u^2/2) du, a well-scaled integral
    for x in [0.1, 1.0, 2.9, 3.1, 7.0, 20.0, 40.0, 60.0]:
        r0 = quad(
            lambda u: np.exp(-x * u - 0.5 * u * u),
            0,
            np.inf,
            epsabs=0,
            epsrel=1e-13,
            limit=200,
        )[0]
        assert normal_ratio(-x) == pytest.approx(1.0 / r0, rel=1e-12)


def test_normal_ratio_against_asymptotic_series():
    x = np.logspace(np.log10(40.0), 15, 40)
    dfact = [1, 1, 3, 15, 105, 945, 10395, 135135]
    mills = sum((-1) ** k * dfact[k] / x ** (2 * k) for k in range(8)) / x
    np.testing.assert_allclose(normal_ratio(-x) * mills, 1.0, rtol=1e-14)


def test_normal_ratio_matches_naive_formula_where_representable():
    z = np.linspace(-20, 35, 221)
    naive = np.exp(-0.5 * z**2) / np.sqrt(2 * np.pi) / ndtr(z)
    np.testing.assert_allclose(normal_ratio(z), naive, rtol=1e-13)


def test_normal_ratio_scalar_and_extremes():
    assert isinstance(normal_ratio(-1.0), float)
    out = normal_ratio([-1e308, -1e200, -1e8, -40.0, 0.0, 40.0, 1e8, 1e308])
    assert np.all(np.isfinite(out)) and np.all(out >= 0)
    assert out[0] == pytest.approx(1e308) and out[-1] == 0.0
    assert normal_ratio(0.0) == pytest.approx(np.sqrt(2 / np.pi))


# --------------------------------------------------------------------------- stability

Z_EXTREME = np.array([0.0, 1e-300, 1.0, 5.0, 30.0, 38.5, 40.0, 1e3, 1e8, 1e100, 1e150])
Z_EXTREME = np.concatenate([-Z_EXTREME[::-1], Z_EXTREME])


@pytest.mark.parametrize(
    "lik",
    CLASSIFICATION
    + [StepFlip(1e-300), Probit(1e-6, kappa=1e-300), Probit(3.0, kappa=0.4)],
    ids=repr,
)
@pytest.mark.parametrize("y", [1.0, -1.0])
def test_extreme_arguments_are_finite(lik, y):
    # pytest is configured to turn RuntimeWarnings (overflow, invalid value) into errors
    outs = list(lik.log_Z(y, Z_EXTREME, 1.0)) + [lik.predictive(Z_EXTREME, 1.0)]
    if isinstance(lik, Probit):
        outs += list(lik.log_prob_derivatives(y, Z_EXTREME)) + [
            lik.log_prob(y, Z_EXTREME)
        ]
    for out in outs:
        assert np.all(np.isfinite(out))


def test_noise_free_bounds_and_tail_asymptotics():
    lik = Probit(1.0)  # s^2 = 2 with var = 1
    _, d1, d2 = lik.log_Z(1.0, Z_EXTREME, 1.0)
    assert np.all(d1 >= 0) and np.all(d2 <= 0) and np.all(d2 >= -0.5)
    x = np.array([1e3, 1e5, 1e8, 1e12])
    _, d1, d2 = lik.log_Z(1.0, -x * np.sqrt(2.0), 1.0)
    np.testing.assert_allclose(d1 * np.sqrt(2.0), x + 1 / x - 2 / x**3, rtol=1e-14)
    np.testing.assert_allclose(d2 * 2.0, -(1 - 1 / x**2 + 6 / x**4), rtol=1e-14)
    _, _, d3 = lik.log_prob_derivatives(-1.0, x)
    np.testing.assert_allclose(d3, -(2 / x**3 - 24 / x**5), rtol=1e-9)


def test_flip_likelihood_saturates_at_log_kappa():
    kappa = 1e-12
    assert StepFlip(kappa).log_Z(1.0, -40.0, 1.0)[0] == pytest.approx(
        np.log(kappa), rel=1e-12
    )
    assert StepFlip(kappa).log_prob(-1.0, 3.0) == pytest.approx(np.log(kappa))
    assert StepFlip(0.0).log_prob(-1.0, 3.0) == -np.inf


# --------------------------------------------------------------------------- limits


def test_kappa_to_zero_limit():
    z = np.linspace(-6, 10, 161)
    kappa = 1e-12
    diff = StepFlip(kappa).log_Z(1.0, z, 1.0)[0] - StepFlip(0.0).log_Z(1.0, z, 1.0)[0]
    assert np.all(np.abs(diff) <= kappa / ndtr(z) + 3 * kappa)


@pytest.mark.parametrize("kappa", [0.0, 0.1])
def test_noise_var_to_zero_limit(kappa):
    mu = np.linspace(-10, 10, 201)
    step = StepFlip(kappa).log_Z(-1.0, mu, 1.0)
    probit = Probit(1e-10, kappa=kappa).log_Z(-1.0, mu, 1.0)
    for a, b in zip(step, probit):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-8)


def test_concavity_without_flips_only():
    mu = np.linspace(-15, 15, 301)
    assert np.all(Probit(1.0).log_Z(1.0, mu, 1.0)[2] < 0)
    curvature = StepFlip(0.05).log_Z(1.0, mu, 1.0)[2]
    assert np.any(curvature > 0)


# --------------------------------------------------------------------------- predictive


@pytest.mark.parametrize("lik", CLASSIFICATION + [Gaussian(0.5)], ids=repr)
def test_predictive(lik):
    mu, var = np.linspace(-8, 8, 81), 0.8
    p = lik.predictive(mu, var)
    np.testing.assert_allclose(p + lik.predictive(-mu, var), 1.0, atol=1e-15)
    assert np.all(np.diff(p) >= 0)
    if not isinstance(lik, Gaussian):
        assert np.all((p >= lik.kappa) & (p <= 1 - lik.kappa))
        np.testing.assert_allclose(p, np.exp(lik.log_Z(1.0, mu, var)[0]), rtol=1e-14)


def test_broadcasting_and_scalars():
    lik = Probit(0.5, kappa=0.1)
    logz, d1, d2 = lik.log_Z(np.array([1.0, -1.0])[:, None], np.linspace(-1, 1, 5), 0.3)
    assert logz.shape == d1.shape == d2.shape == (2, 5)
    out = lik.log_Z(1.0, 0.2, 0.3)
    assert all(np.ndim(o) == 0 for o in out)
    assert np.ndim(lik.predictive(0.1, 0.2)) == 0


# --------------------------------------------------------------------------- parameters


def test_params_and_repr():
    lik = Probit(0.5, kappa=0.1)
    assert isinstance(lik, Likelihood)
    assert lik.get_params() == {"noise_var": 0.5, "kappa": 0.1}
    assert repr(lik) == "Probit(noise_var=0.5, kappa=0.1)"
    assert repr(StepFlip()) == "StepFlip(kappa=0.0)"
    assert repr(Gaussian(2)) == "Gaussian(noise_var=2.0)"
    assert lik.set_params(kappa=0.2) is lik and lik.kappa == 0.2
    with pytest.raises(ValueError, match="kappa"):
        lik.set_params(kappa=0.7)
    with pytest.raises(ValueError, match="unknown"):
        lik.set_params(length_scale=1.0)


@pytest.mark.parametrize(
    "make", [lambda k: StepFlip(k), lambda k: Probit(1.0, kappa=k)]
)
@pytest.mark.parametrize("bad", [-0.1, 0.5, 0.7, float("nan"), float("inf")])
def test_bad_kappa(make, bad):
    with pytest.raises(ValueError, match="kappa"):
        make(bad)


@pytest.mark.parametrize("make", [lambda v: Probit(v), lambda v: Gaussian(v)])
@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_noise_var(make, bad):
    with pytest.raises(ValueError, match="noise_var"):
        make(bad)


@pytest.mark.parametrize(
    "make",
    [
        lambda x: StepFlip(x),
        lambda x: Probit(x),
        lambda x: Probit(1.0, kappa=x),
        lambda x: Gaussian(x),
    ],
)
@pytest.mark.parametrize("bad", ["0.1", None, [0.1], True])
def test_non_numbers_are_type_errors(make, bad):
    with pytest.raises(TypeError):
        make(bad)


@pytest.mark.parametrize("lik", CLASSIFICATION, ids=repr)
@pytest.mark.parametrize("bad_y", [0.0, 2.0, 0.5, np.nan, [1.0, 0.0]])
def test_labels_must_be_plus_minus_one(lik, bad_y):
    with pytest.raises(ValueError, match="y"):
        lik.log_Z(bad_y, 0.0, 1.0)
    with pytest.raises(ValueError, match="y"):
        lik.log_prob(bad_y, 0.0)


@pytest.mark.parametrize("lik", CLASSIFICATION + [Gaussian(1.0)], ids=repr)
@pytest.mark.parametrize("bad_var", [-1e-3, -1.0, np.nan, np.inf, [1.0, -1.0]])
def test_bad_var(lik, bad_var):
    with pytest.raises(ValueError, match="var"):
        lik.log_Z(1.0, 0.0, bad_var)
    with pytest.raises(ValueError, match="var"):
        lik.predictive(0.0, bad_var)


def test_step_needs_positive_var():
    with pytest.raises(ValueError, match="var"):
        StepFlip(0.1).log_Z(1.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="var"):
        StepFlip(0.1).predictive(0.0, 0.0)
    # the probit and the Gaussian accept var = 0 (the likelihood itself)
    assert np.isfinite(Probit(1.0).log_Z(1.0, 0.0, 0.0)[0])
    assert np.isfinite(Gaussian(1.0).log_Z(1.0, 0.0, 0.0)[0])


@pytest.mark.parametrize("lik", CLASSIFICATION + [Gaussian(1.0)], ids=repr)
def test_non_finite_mu_and_f(lik):
    with pytest.raises(ValueError, match="mu"):
        lik.log_Z(1.0, np.nan, 1.0)
    with pytest.raises(ValueError, match="mu"):
        lik.predictive(np.inf, 1.0)
    with pytest.raises(ValueError, match="f"):
        lik.log_prob(1.0, np.nan)


def test_gaussian_accepts_real_targets_but_not_nan():
    lik = Gaussian(0.5)
    assert np.isfinite(lik.log_Z(0.37, 0.0, 1.0)[0])
    with pytest.raises(ValueError, match="y"):
        lik.log_Z(np.nan, 0.0, 1.0)
