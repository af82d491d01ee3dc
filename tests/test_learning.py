"""Learning the kernel in fit (chapter 1, sec-gpc-learning) for EP, Laplace, TAP and naive
mean field: defaults, the criterion, fixed kernels, bounds, restarts and bad settings."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone

from gpc_literate.base import (
    ConvergenceWarning,
    LearnedHyperparameters,
    maximize_criterion,
    search_box,
)
from gpc_literate.ep_classifier import EP
from gpc_literate.kernels import RBF, default_kernel
from gpc_literate.laplace import Laplace
from gpc_literate.meanfield import NaiveMeanField
from gpc_literate.svm import KernelAdatron
from gpc_literate.tap import TAP

LEARNERS = [
    lambda **kw: EP(**kw),
    lambda **kw: Laplace(**kw),
    lambda **kw: TAP(v=0.2, **kw),
    lambda **kw: NaiveMeanField(v=0.2, **kw),
]
IDS = ["EP", "Laplace", "TAP", "NaiveMeanField"]


def overlapping(n=40, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    y = np.where(np.arange(n) % 2 == 0, 1, -1)
    X = (rng.normal(size=(n, 2)) + 0.8 * y[:, None]) * scale
    return X, y


@pytest.mark.parametrize("make", LEARNERS, ids=IDS)
def test_default_fit_learns_and_raises_its_criterion(make):
    X, y = overlapping()
    fixed = make(optimizer=None).fit(X, y)
    learned = make().fit(X, y)
    assert fixed.learning_ is None
    assert np.allclose(fixed.kernel_.theta, default_kernel(X).theta)
    result = learned.learning_
    assert isinstance(result, LearnedHyperparameters) and result.n_starts == 1
    assert np.allclose(result.theta_start, default_kernel(X).theta)
    assert np.allclose(result.theta, learned.kernel_.theta, rtol=0, atol=1e-12)
    assert result.value >= learned._criterion(result.theta_start, False) - 1e-6
    assert result.value == pytest.approx(learned._criterion(None, False), abs=1e-9)
    assert learned.kernel is None  # parameters untouched
    p = learned.predict_proba(X)
    assert np.all(np.isfinite(p)) and np.allclose(p.sum(axis=1), 1.0)


@pytest.mark.parametrize("make", LEARNERS[:3], ids=IDS[:3])
def test_gradient_based_learning_ends_at_a_stationary_point(make):
    X, y = overlapping(seed=1)
    model = make().fit(X, y)
    assert model.learning_.converged and model.learning_.at_bound == ()
    _, grad = model.log_marginal_likelihood(eval_gradient=True)
    assert np.max(np.abs(grad)) < 1e-2  # L-BFGS-B stops on the objective's decrease


def test_tap_evidence_gradient_matches_differences():
    X, y = overlapping(30, seed=2)
    model = TAP(
        kernel=RBF(1.2, 2.0), v=0.1, tol=1e-12, max_iter=5000, optimizer=None
    ).fit(X, y)
    _, grad = model.log_marginal_likelihood(eval_gradient=True)
    h = 1e-4
    numeric = [
        (
            model.log_marginal_likelihood(model.kernel_.theta + h * e)
            - model.log_marginal_likelihood(model.kernel_.theta - h * e)
        )
        / (2 * h)
        for e in np.eye(2)
    ]
    assert np.allclose(grad, numeric, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("make", LEARNERS, ids=IDS)
def test_fixed_kernel_is_used_as_given_and_never_clipped(make):
    X, y = overlapping()
    kernel = RBF(length_scale=1.5, variance=1e6)  # above the default bound 1e5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = make(kernel=kernel, optimizer=None).fit(X, y)
    assert model.kernel_.variance == 1e6 and model.kernel_ is not kernel
    assert model.learning_ is None


def test_start_outside_the_bounds_is_reported():
    X, y = overlapping()
    with pytest.warns(ConvergenceWarning, match="outside hyperparameter_bounds"):
        Laplace(kernel=RBF(1.0, variance=1e6), hyperparameter_bounds=(1e-5, 1e5)).fit(
            X, y
        )


def test_auto_bounds_are_placed_about_the_start():
    """hyperparameter_bounds="auto": 1e-5 to 1e5 times each hyperparameter's start."""
    X, y = overlapping()
    kernel = RBF(length_scale=[0.5, 2e6], variance=1e6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = Laplace(kernel=kernel).fit(X, y)
    assert np.allclose(model.learning_.theta_start, kernel.theta)  # nothing clipped
    low, high = search_box("auto", kernel.theta)
    assert np.allclose(np.exp(high - low), 1e10) and np.allclose(
        low + high, 2 * kernel.theta
    )
    assert np.all((model.kernel_.theta >= low) & (model.kernel_.theta <= high))


def test_signal_variance_on_its_bound_is_reported():
    rng = np.random.default_rng(3)
    y = np.where(np.arange(40) % 2 == 0, 1, -1)
    X = rng.normal(size=(40, 2)) + 4.0 * y[:, None]  # well separated classes
    with pytest.warns(ConvergenceWarning, match="variance .* on a bound"):
        model = EP(hyperparameter_bounds=(1e-3, 1e3)).fit(X, y)
    assert "log_variance" in model.learning_.at_bound
    assert model.kernel_.variance == pytest.approx(1e3)


def test_restarts_are_reproducible_and_keep_the_best():
    X, y = overlapping(seed=4)
    runs = [Laplace(n_restarts_optimizer=2, random_state=0).fit(X, y) for _ in range(2)]
    assert runs[0].learning_.n_starts == 3
    assert np.allclose(runs[0].kernel_.theta, runs[1].kernel_.theta, rtol=0, atol=1e-12)
    single = Laplace().fit(X, y)
    assert runs[0].learning_.value >= single.learning_.value - 1e-6


def test_nelder_mead_for_a_gradient_criterion():
    X, y = overlapping(seed=5)
    nm = Laplace(optimizer="nelder-mead").fit(X, y)
    lb = Laplace().fit(X, y)
    assert nm.learning_.value == pytest.approx(lb.learning_.value, abs=1e-3)


@pytest.mark.parametrize(
    "bad, exc, name",
    [
        (dict(optimizer="adam"), ValueError, "optimizer"),
        (dict(n_restarts_optimizer=-1), ValueError, "n_restarts_optimizer"),
        (dict(n_restarts_optimizer=1.5), TypeError, "n_restarts_optimizer"),
        (dict(hyperparameter_bounds=(1.0, 0.5)), ValueError, "hyperparameter_bounds"),
        (dict(hyperparameter_bounds=(0.0, 1.0)), ValueError, "hyperparameter_bounds"),
        (dict(hyperparameter_bounds="wide"), TypeError, "hyperparameter_bounds"),
        (dict(random_state="seed"), ValueError, "random_state"),
    ],
)
@pytest.mark.parametrize("make", LEARNERS, ids=IDS)
def test_bad_learning_settings_are_refused(make, bad, exc, name):
    X, y = overlapping(10)
    with pytest.raises(exc, match=name):
        make(**bad).fit(X, y)


def test_naive_mean_field_has_no_gradient_optimizer():
    X, y = overlapping(10)
    with pytest.raises(ValueError, match="optimizer"):
        NaiveMeanField(optimizer="fmin_l_bfgs_b").fit(X, y)


def test_learned_model_clones_and_keeps_the_callers_kernel():
    X, y = overlapping()
    kernel = RBF(2.0)
    model = EP(kernel=kernel, n_restarts_optimizer=1, random_state=3).fit(X, y)
    assert kernel.length_scale == 2.0 and model.kernel_.length_scale != 2.0
    copy = clone(model)
    assert copy.get_params()["n_restarts_optimizer"] == 1 and not hasattr(
        copy, "learning_"
    )
    kernel.length_scale = 5.0  # after fit: no effect
    assert model.kernel_.length_scale != 5.0


def test_kernel_adatron_default_kernel_is_data_scaled():
    X, y = overlapping()
    model = KernelAdatron(C=10.0).fit(X * 100.0, y)
    assert model.kernel_.length_scale == pytest.approx(
        default_kernel(X * 100.0).length_scale
    )
    small = KernelAdatron(C=10.0).fit(X, y)
    assert np.array_equal(model.predict(X * 100.0), small.predict(X))


def test_maximize_criterion_without_restarts_is_deterministic():
    def f(t):
        return -np.sum((t - 0.3) ** 2), -2 * (t - 0.3)

    a = maximize_criterion(f, np.zeros(3), bounds=(-2.0, 2.0))
    b = maximize_criterion(f, np.zeros(3), bounds=(-2.0, 2.0))
    assert np.array_equal(a[0], b[0]) and np.allclose(a[0], 0.3, atol=1e-6)


def test_maximize_criterion_scale_keeps_the_maximum_and_reports_unscaled():
    def f(t):
        return 5.0 - 40.0 * np.sum((t - 0.3) ** 2), -80.0 * (t - 0.3)

    tried = []

    def traced(t):
        tried.append(np.array(t))
        return f(t)

    plain = maximize_criterion(f, np.zeros(2), bounds=(-10.0, 10.0))
    theta, record = maximize_criterion(
        traced, np.zeros(2), bounds=(-10.0, 10.0), scale=0.01
    )
    assert np.allclose(theta, 0.3, atol=1e-5) and np.allclose(plain[0], 0.3, atol=1e-5)
    assert record.value == pytest.approx(5.0, abs=1e-8)  # the criterion's own value
    # unscaled, the first step is the whole gradient (24 per coordinate), clipped to
    # the box; scaled by 0.01 it stays near the start
    assert np.max(np.abs(tried[1])) < 1.0


@pytest.mark.parametrize("name", ["scale", "gtol", "max_time"])
@pytest.mark.parametrize("value", [0.0, -1.0, np.nan, "1"])
def test_maximize_criterion_refuses_a_bad_scale_or_gtol(name, value):
    def f(t):
        return -np.sum(t**2), -2 * t

    with pytest.raises((ValueError, TypeError), match=name):
        maximize_criterion(f, np.zeros(2), bounds=(-2.0, 2.0), **{name: value})


@pytest.mark.parametrize("make", LEARNERS, ids=IDS)
def test_verbose_shows_the_search_and_is_checked(make, capsys):
    """verbose=True: a tqdm bar of the search, named after the estimator; silent by
    default; a non-boolean refused with a TypeError naming it."""
    X, y = overlapping()
    model = make(verbose=True).fit(X, y)
    assert f"{type(model).__name__}.fit" in capsys.readouterr().err
    make().fit(X, y)
    assert capsys.readouterr().err == ""
    with pytest.raises(TypeError, match="verbose"):
        make(verbose="yes").fit(X, y)


def test_maximize_criterion_gtol_stops_at_a_coarse_gradient():
    # a criterion whose gradient is only known to about 0.01: gtol stops the search
    # there, in fewer evaluations, and near the maximum
    def f(t):
        return -np.sum((t - 0.3) ** 2) - 0.1 * np.sum((t - 0.3) ** 4), -2 * (
            t - 0.3
        ) - 0.4 * (t - 0.3) ** 3

    fine = maximize_criterion(f, np.zeros(2), bounds=(-2.0, 2.0), tol=1e-12)
    coarse = maximize_criterion(
        f, np.zeros(2), bounds=(-2.0, 2.0), tol=1e-12, gtol=0.01
    )
    assert "PGTOL" in coarse[1].message
    assert coarse[1].n_evaluations <= fine[1].n_evaluations
    assert np.allclose(coarse[0], 0.3, atol=0.01)


def test_maximize_criterion_max_time_stops_the_search_with_a_warning():
    # each evaluation takes 20 ms: a budget of 50 ms stops the search after a few
    # iterations, at a point better than the start, and the warning names max_time
    import time

    def f(t):
        time.sleep(0.02)
        return -np.sum((t - 0.3) ** 2) - np.sum(np.sin(5 * t)) / 5, -2 * (
            t - 0.3
        ) - np.cos(5 * t)

    start = f(np.full(3, -1.5))[0]
    with pytest.warns(ConvergenceWarning, match="increase max_time"):
        theta, record = maximize_criterion(
            f, np.full(3, -1.5), bounds=(-2.0, 2.0), tol=1e-14, max_time=0.05
        )
    assert record.message.startswith("max_time") and not record.converged
    assert record.value > start and record.n_evaluations < 20
    free = maximize_criterion(f, np.full(3, -1.5), bounds=(-2.0, 2.0), tol=1e-14)
    assert free[1].n_evaluations > record.n_evaluations


def test_a_criterion_out_of_time_ends_the_search_and_says_max_time(monkeypatch):
    """An evaluation that runs past the budget, after which the criterion raises
    TimeoutError (as chapter 25's EPClock makes sparse EP's do): the points are refused,
    the run ends, and the record and the warning name max_time, not the line search."""
    import gpc_literate.base as base

    now = [0.0]
    monkeypatch.setattr(base.time, "perf_counter", lambda: now[0])
    calls = [0]

    def f(t):  # a long valley, so that L-BFGS-B needs many iterations
        calls[0] += 1
        now[0] += 30.0 if calls[0] == 4 else 0.01
        if now[0] > 10.0:
            raise TimeoutError("no time left for this point")
        a, b = t
        return -((1 - a) ** 2 + 100 * (b - a * a) ** 2), np.array(
            [2 * (1 - a) + 400 * a * (b - a * a), -200 * (b - a * a)]
        )

    with pytest.warns(ConvergenceWarning, match="increase max_time"):
        theta, record = maximize_criterion(
            f, np.array([-1.2, 1.0]), bounds=(-5.0, 5.0), max_time=10.0
        )
    assert record.message.startswith("max_time") and not record.converged
    assert calls[0] < 40  # the refused points end the run quickly
