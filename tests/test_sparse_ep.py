"""gpc_literate.sparse_ep: EP with the FITC prior (book/25_sparse_ep.md)."""

import tracemalloc
import warnings
from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import inputs, two_class_labels
from sklearn.base import clone

from gpc_literate.base import ConvergenceWarning, NotFittedError
from gpc_literate.datasets import make_noisy_linear
from gpc_literate.ep_classifier import EP
from gpc_literate.kernels import RBF, Cauchy
from gpc_literate.likelihoods import Probit, StepFlip
from gpc_literate.sparse_ep import (
    ADAM_FROM_N,
    EPClock,
    resolve_search,
    PIVOT_SUBSET,
    SparseEP,
    choose_inducing,
    fit_fitc_ep,
    fitc_evidence_gradient,
)


def toy_problem(n, d=2, noise=0.7, seed=0):
    """Chapter 4's noisy linear problem, with float labels."""
    X, y = make_noisy_linear(n, d, noise, seed)
    return X, y.astype(float)


X, Y = toy_problem(60, seed=2)


# -- M = n: sparse EP is full EP ----------------------------------------------------------------


@pytest.mark.parametrize(
    "kernel", [RBF(1.3, 3.0), RBF([0.7, 2.0], 1.5, bias=0.2)], ids=repr
)
def test_inducing_inputs_equal_to_the_training_inputs_give_full_ep(kernel):
    sparse = SparseEP(kernel, Probit(1.0), inducing=X, optimizer=None, tol=1e-10).fit(
        X, Y
    )
    full = EP(kernel, Probit(1.0), method="sequential", tol=1e-10, optimizer=None).fit(
        X, Y
    )
    assert sparse.converged_ and full.converged_
    # the jitter moves the prior by at most KUU_JITTER * max k(x, x) (chapter 25), hence 1e-6
    assert abs(sparse.log_marginal_likelihood_ - full.log_marginal_likelihood_) < 1e-6
    for name in (
        "site_nu_",
        "site_tau_",
        "mu_cav_",
        "posterior_mean_",
        "posterior_var_",
    ):
        np.testing.assert_allclose(
            getattr(sparse, name), getattr(full, name), atol=1e-6
        )
    np.testing.assert_allclose(
        sparse.predict_proba(X), full.predict_proba(X), atol=1e-5
    )


# -- the evidence gradient ----------------------------------------------------------------------


def test_gradient_in_theta_and_z_matches_central_differences():
    Xg, yg = toy_problem(40, d=3, seed=4)
    kernel, lik = RBF([0.9, 1.6, 2.5], 2.0, bias=0.3), Probit(1.0)
    Z = Xg[:6] + 0.1
    zeros = np.zeros(len(yg))

    def evidence(theta, Zx, sites=(zeros, zeros)):
        fit = fit_fitc_ep(kernel.with_theta(theta), Xg, yg, lik, Zx, *sites, 1e-12, 500)
        assert fit.converged
        return fit

    fit0 = evidence(kernel.theta, Z)
    g_theta, g_Z = fitc_evidence_gradient(kernel, Xg, Z, fit0.prior, fit0.posterior)
    sites, h = (fit0.posterior.nu, fit0.posterior.tau), 1e-5
    fd_theta = [
        (
            evidence(kernel.theta + h * e, Z, sites).log_evidence
            - evidence(kernel.theta - h * e, Z, sites).log_evidence
        )
        / (2 * h)
        for e in np.eye(kernel.theta.size)
    ]
    fd_Z = np.zeros_like(Z)
    for idx in np.ndindex(*Z.shape):
        E = np.zeros_like(Z)
        E[idx] = h
        fd_Z[idx] = (
            evidence(kernel.theta, Z + E, sites).log_evidence
            - evidence(kernel.theta, Z - E, sites).log_evidence
        ) / (2 * h)
    np.testing.assert_allclose(
        g_theta, fd_theta, rtol=0, atol=1e-6 * np.abs(g_theta).max()
    )
    np.testing.assert_allclose(g_Z, fd_Z, rtol=0, atol=1e-6 * np.abs(g_Z).max())


@pytest.mark.parametrize(
    "kernel, alpha",
    [(RBF(1.2, 2.0), 1.0), (RBF([1.2, 0.8], 2.0), 0.5), (RBF([1.2, 0.8], 2.0), 0.05)],
)
def test_estimator_log_marginal_likelihood_and_its_gradient(kernel, alpha):
    """EP (alpha = 1) and power EP (chapter 26): the stored evidence, and the gradient
    against central differences."""
    model = SparseEP(kernel, n_inducing=10, optimizer=None, tol=1e-12, alpha=alpha).fit(
        X, Y
    )
    assert model.log_marginal_likelihood() == model.log_marginal_likelihood_
    value, grad = model.log_marginal_likelihood(model.kernel_.theta, eval_gradient=True)
    assert value == pytest.approx(model.log_marginal_likelihood_, abs=1e-8)
    h = 1e-5
    fd = [
        (
            model.log_marginal_likelihood(model.kernel_.theta + h * e)
            - model.log_marginal_likelihood(model.kernel_.theta - h * e)
        )
        / (2 * h)
        for e in np.eye(kernel.theta.size)
    ]
    np.testing.assert_allclose(grad, fd, rtol=1e-5)


# -- inducing inputs -----------------------------------------------------------------------------


def test_pivots_and_random_choose_distinct_training_inputs():
    rng = np.random.RandomState(0)
    for how in ("pivots", "random"):
        Z = choose_inducing(RBF(1.0), X, 12, how, rng)
        assert Z.shape == (12, 2) and len(np.unique(Z, axis=0)) == 12
        assert all((X == z).all(axis=1).any() for z in Z)
    assert choose_inducing(RBF(1.0), X, 1000, "random", rng).shape == (
        60,
        2,
    )  # at most n


def test_pivots_stop_below_the_jitter():
    # 3 distinct inputs: a fourth pivot would have zero residual variance
    X3 = np.repeat(np.array([[0.0], [1.0], [2.5]]), 10, axis=0)
    Z = choose_inducing(RBF(1.0), X3, 10, "pivots", np.random.RandomState(0))
    assert len(Z) == 3 and len(np.unique(Z)) == 3
    model = SparseEP(RBF(1.0), n_inducing=10, optimizer=None).fit(
        X3, np.tile([1, -1, 1], 10)
    )
    assert model.n_inducing_ == 3


def test_learning_the_inducing_inputs_raises_the_evidence():
    start = SparseEP(RBF(1.0, 1.0), n_inducing=4, optimizer=None, random_state=0).fit(
        X, Y
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        learned = SparseEP(
            RBF(1.0, 1.0), n_inducing=4, learn_inducing=True, random_state=0
        ).fit(X, Y)
    assert learned.learning_.value == learned.log_marginal_likelihood_
    assert learned.log_marginal_likelihood_ > start.log_marginal_likelihood_
    assert not np.allclose(learned.inducing_, start.inducing_)
    assert learned.inducing_.shape == (4, 2)


# -- the estimator --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, name, error",
    [
        (dict(n_inducing=0), "n_inducing", ValueError),
        (dict(n_inducing=2.5), "n_inducing", TypeError),
        (dict(inducing="kmeans"), "inducing", ValueError),
        (dict(inducing=np.zeros((4, 3))), "inducing", ValueError),
        (dict(inducing=np.full((4, 2), np.nan)), "inducing", ValueError),
        (dict(learn_inducing="yes"), "learn_inducing", TypeError),
        (dict(optimizer="nelder-mead"), "optimizer", ValueError),
        (dict(learn_inducing=True, optimizer=None), "learn_inducing", ValueError),
        (dict(max_iter=0), "max_iter", ValueError),
        (dict(tol=-1.0), "tol", ValueError),
        (dict(max_time=0.0), "max_time", ValueError),
        (dict(max_time="1"), "max_time", TypeError),
        (dict(alpha=0.0), "alpha", ValueError),
        (dict(alpha=1.5), "alpha", ValueError),
        (dict(alpha=float("nan")), "alpha", ValueError),
        (dict(alpha="half"), "alpha", TypeError),
        (dict(alpha=0.5, likelihood=StepFlip(0.1)), "alpha", TypeError),
        (dict(optimizer="adam", alpha=0.5), "optimizer", ValueError),
        (dict(kernel=Cauchy()), "RBF", TypeError),
        (dict(likelihood="probit"), "likelihood", TypeError),
        (dict(hyperparameter_bounds=(2.0, 1.0)), "hyperparameter_bounds", ValueError),
        (dict(random_state="seed"), "random_state", ValueError),
        (dict(verbose="no"), "verbose", TypeError),
    ],
)
def test_bad_arguments_are_refused_by_name(kwargs, name, error):
    with pytest.raises(error, match=name):
        SparseEP(**{"optimizer": None, **kwargs}).fit(X, Y)


def test_not_fitted_and_warm_start_and_convergence_warning():
    model = SparseEP(n_inducing=10, optimizer=None)
    with pytest.raises(NotFittedError):
        model.predict(X)
    with pytest.raises(NotFittedError):
        model.log_marginal_likelihood()
    model.fit(X, Y)
    again = clone(model).fit(
        X, Y, site_nu_init=model.site_nu_, site_tau_init=model.site_tau_
    )
    assert again.n_iter_ <= 2 and again.converged_
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        short = SparseEP(n_inducing=10, optimizer=None, max_iter=1).fit(X, Y)
    assert not short.converged_


def test_clone_keeps_an_array_of_inducing_inputs():
    Z = X[:5].copy()
    copy_ = clone(SparseEP(inducing=Z))
    assert copy_.inducing is not Z and np.array_equal(copy_.inducing, Z)
    fitted = copy_.set_params(optimizer=None).fit(X, Y)
    np.testing.assert_array_equal(fitted.inducing_, Z)


def test_verbose_shows_a_progress_bar_over_the_search(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        SparseEP(n_inducing=5, verbose=True).fit(X, Y)
        assert "SparseEP.fit" in capsys.readouterr().err
        SparseEP(n_inducing=5).fit(X, Y)
        assert capsys.readouterr().err == ""


def test_memory_is_linear_in_n():
    """n = 20 000, M = 50: no kernel block larger than n M (or the pivots' subset) is formed,
    and the traced peak stays far below one n x n matrix (3.2 GB)."""
    shapes = []

    class RecordingRBF(RBF):
        def _matrix(self, A, B):
            K = super()._matrix(A, B)
            shapes.append(K.shape)
            return K

    n, M = 20_000, 50
    Xn, yn = toy_problem(n, d=3, seed=9)
    tracemalloc.start()
    model = SparseEP(
        RecordingRBF(1.5), n_inducing=M, optimizer=None, random_state=0
    ).fit(Xn, yn)
    model.predict_proba(Xn[:5000])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert model.converged_ and model.n_inducing_ == M
    assert max(a * b for a, b in shapes) <= max(n * M, PIVOT_SUBSET**2)
    assert (n, n) not in shapes
    assert peak < 150e6, peak


# -- property: random small problems -------------------------------------------------------------


@st.composite
def problems(draw):
    n = draw(st.integers(3, 25))
    Xp = draw(inputs(n, st.integers(1, 3)))
    pick = draw(two_class_labels(n))
    kernel = RBF(
        draw(st.sampled_from([0.3, 1.0, 3.0])), draw(st.sampled_from([0.1, 1.0, 10.0]))
    )
    return Xp, pick, kernel, draw(st.integers(1, n))


@pytest.mark.filterwarnings(
    "ignore:.*the fitted model is constant:gpc_literate.base.ConvergenceWarning"
)
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(problem=problems())
def test_sparse_ep_on_random_problems(problem):
    Xp, yp, kernel, M = problem
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        # a tiny problem can be truly constant (e.g. [0, 2, 2] labelled -1, +1, -1
        # with one inducing input): that warning is right, and not what is tested here
        warnings.filterwarnings(
            "ignore",
            message=".*the fitted model is constant",
            category=ConvergenceWarning,
        )
        sparse = SparseEP(
            kernel, n_inducing=M, inducing="random", optimizer=None, random_state=0
        ).fit(Xp, yp)
        proba = sparse.predict_proba(Xp)
        assert np.all(np.isfinite(proba)) and np.all((proba >= 0) & (proba <= 1))
        assert np.isfinite(sparse.log_marginal_likelihood_) and sparse.n_inducing_ == M
        # with every training input an inducing input, sparse EP is full EP
        at_X = SparseEP(kernel, inducing=Xp, optimizer=None, tol=1e-10).fit(Xp, yp)
        full = EP(kernel, method="sequential", tol=1e-10, optimizer=None).fit(Xp, yp)
    scale = 1.0 + abs(full.log_marginal_likelihood_)
    assert (
        abs(at_X.log_marginal_likelihood_ - full.log_marginal_likelihood_)
        < 1e-5 * scale
    )
    np.testing.assert_allclose(
        at_X.predict_proba(Xp), full.predict_proba(Xp), atol=1e-4
    )


def test_fit_with_a_client_needs_chapter_27s_module(monkeypatch):
    """Chapter 25 does not import chapter 27: the cluster fit is a hook that
    gpc_literate.cluster_ep registers, and without it fit(client=) says what to import."""
    import gpc_literate.sparse_ep as sparse_ep

    monkeypatch.setattr(sparse_ep, "_CLUSTER_FIT", [])
    X = np.random.default_rng(0).normal(size=(20, 2))
    y = np.where(X[:, 0] > 0, 1, -1)
    with pytest.raises(ImportError, match="import gpc_literate.cluster_ep"):
        SparseEP(n_inducing=5, optimizer=None).fit(X, y, client=object())
    import gpc_literate.cluster_ep as cluster_ep

    sparse_ep.register_cluster_fit(cluster_ep.fit_on_cluster)
    assert sparse_ep._CLUSTER_FIT == [cluster_ep.fit_on_cluster]


# -- power EP (chapter 26, sec-sep-power) ---------------------------------------------------------


def test_power_ep_next_to_alpha_one_is_chapter_25s_sparse_ep():
    kw = dict(kernel=RBF(1.2, 2.0), n_inducing=10, optimizer=None, tol=1e-12)
    one = SparseEP(**kw).fit(X, Y)
    near = SparseEP(alpha=1.0 - 1e-12, **kw).fit(X, Y)
    assert near.log_marginal_likelihood_ == pytest.approx(
        one.log_marginal_likelihood_, abs=1e-8
    )
    np.testing.assert_allclose(near.predict_proba(X), one.predict_proba(X), atol=1e-8)


def test_power_ep_evidence_falls_with_alpha_and_learns_in_any_units():
    values = [
        SparseEP(RBF(1.2, 2.0), n_inducing=10, optimizer=None, alpha=a)
        .fit(X, Y)
        .log_marginal_likelihood_
        for a in (1.0, 0.5, 0.1)
    ]
    assert values[0] > values[1] > values[2]
    labels = np.where(Y > 0, "late", "on time")
    metres = SparseEP(n_inducing=10, alpha=0.5, random_state=0).fit(X, labels)
    nanometres = SparseEP(n_inducing=10, alpha=0.5, random_state=0).fit(1e9 * X, labels)
    assert metres.alpha_ == 0.5 and metres.converged_
    assert np.mean(metres.predict(X) == labels) > 0.8
    np.testing.assert_allclose(
        metres.predict_proba(X), nanometres.predict_proba(1e9 * X), atol=1e-5
    )


def test_power_ep_runs_in_process_only():
    with pytest.raises(ValueError, match="client"):
        SparseEP(n_inducing=5, optimizer=None, alpha=0.5).fit(X, Y, client=object())


def test_power_ep_imports_chapter_26_on_first_use():
    """Chapter 25 does not import chapter 26 when it loads: SparseEP(alpha < 1) does, on
    first use, and the module registers its functions."""
    import subprocess
    import sys

    code = (
        "import sys, numpy as np\n"
        "from gpc_literate.sparse_ep import SparseEP\n"
        "assert 'gpc_literate.stochastic_ep' not in sys.modules\n"
        "X = np.random.default_rng(0).normal(size=(30, 2))\n"
        "SparseEP(n_inducing=5, optimizer=None, alpha=0.5).fit(X, X[:, 0] > 0)\n"
        "assert 'gpc_literate.stochastic_ep' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_max_time_stops_the_search_and_says_so(alpha):
    with pytest.warns(ConvergenceWarning, match="increase max_time"):
        model = SparseEP(n_inducing=10, max_time=1e-6, alpha=alpha).fit(X, Y)
    assert model.learning_.message.startswith("max_time")
    # one EP run at the start; EPClock refuses the trial points after it unrun
    assert model.learning_.n_evaluations <= 10
    free = SparseEP(n_inducing=10, alpha=alpha).fit(X, Y)
    assert free.learning_.n_evaluations > model.learning_.n_evaluations


class _Run(NamedTuple):
    n_iter: int
    converged: bool


def test_ep_clock_caps_each_run_at_the_deadline_and_times_out_cut_runs(monkeypatch):
    import gpc_literate.sparse_ep as sparse_ep

    now = [0.0]
    monkeypatch.setattr(sparse_ep.time, "perf_counter", lambda: now[0])
    monkeypatch.setattr(
        sparse_ep, "FINAL_RUN_ITER", 0
    )  # the final run: fixed cost only
    caps = []

    def ep(needed, seconds_per_iteration=1.0):
        def run(cap):
            caps.append(cap)
            done = min(cap, needed)
            now[0] += seconds_per_iteration * done
            return _Run(done, needed <= cap)

        return run

    clock = EPClock(10.0, max_iter=100)
    assert clock.run(ep(2)) == _Run(2, True)  # no pace yet: EP's own cap
    assert caps[-1] == 100 and clock.pace == 1.0 and clock.fixed == 0.0
    assert clock.run(ep(2, 1.5)) == _Run(2, True)  # 8 s left at 1 s: 8 iterations
    # the fastest pace is kept, and the slower run's extra second counted as fixed
    assert caps[-1] == 8 and clock.pace == 1.0 and clock.fixed == 1.0
    # 5 s left, less the fixed second of this run and of the final one: 3 iterations
    with pytest.raises(TimeoutError, match="not converged after the 3 iterations"):
        clock.run(ep(50))
    assert now[0] == 8.0
    with pytest.raises(TimeoutError, match="no EP iteration is left"):
        clock.run(ep(1))
    assert len(caps) == 3  # not run
    # the first pace from the run before the search; a fixed cost from ``then``
    now[0], caps[:] = 0.0, []
    # 0.5 s per iteration; the deadline is the budget plus the first run's 10 s
    clock = EPClock(10.0, max_iter=100, first=(10.0, 20))

    def gradient(fit):
        now[0] += 2.0  # two seconds besides the iterations
        return fit, "gradient"

    assert clock.run(ep(4, 0.5), then=gradient) == (_Run(4, True), "gradient")
    assert caps[-1] == 40 and clock.fixed == 2.0  # 20 s at 0.5 s; then 4 s used
    assert clock.run(ep(4, 0.5), then=gradient) is not None
    assert caps[-1] == 24  # 16 s left, less 2 + 2 fixed, at 0.5 s
    monkeypatch.setattr(sparse_ep, "FINAL_RUN_ITER", 5)
    assert clock.run(ep(4, 0.5), then=lambda fit: None) is None  # then refuses
    assert caps[-1] == 11  # 12 s left, less 2 + 2 fixed and 5 final iterations
    # a tuple whose first item is the fit (chapter 26's power EP) comes back whole
    free = EPClock(None, max_iter=7)
    out = free.run(lambda cap: (_Run(cap, False), "cavities"))
    assert out == (_Run(7, False), "cavities")  # no deadline: EP's cap, kept


# -- the "adam" search (chapter 26, sec-sep-sparse-adam) ------------------------------------------


def test_auto_picks_adam_for_large_n_in_process_with_alpha_one():
    assert resolve_search("auto", None, ADAM_FROM_N, 1.0, None) == ("adam", True)
    assert resolve_search("auto", None, ADAM_FROM_N - 1, 1.0, None) == (
        "fmin_l_bfgs_b",
        False,
    )
    assert resolve_search("auto", None, 10**6, 0.5, None)[0] == "fmin_l_bfgs_b"
    assert resolve_search("auto", None, 10**6, 1.0, object())[0] == "fmin_l_bfgs_b"
    assert resolve_search("adam", False, 10, 1.0, None) == ("adam", False)
    assert resolve_search(None, None, 10**6, 1.0, None) == (None, False)
    with pytest.raises(ValueError, match="client"):
        resolve_search("adam", None, 10, 1.0, object())


def test_adam_search_then_one_ep_run_at_what_it_learned():
    """The fit's EP run, started from the tied site, reaches SparseEP's fixed point at the
    learned kernel and inducing inputs, in any units and with any labels; the search
    moves both and reports itself."""
    labels = np.where(Y > 0, "late", "on time")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SparseEP(
            n_inducing=10, optimizer="adam", max_time=1.0, random_state=0
        ).fit(1e3 * X, labels)
    start = SparseEP(n_inducing=10, optimizer=None, random_state=0).fit(1e3 * X, labels)
    assert not np.allclose(model.inducing_, start.inducing_)
    assert not np.allclose(model.kernel_.theta, start.kernel_.theta)
    assert "stochastic EP" in model.learning_.criterion
    assert model.learning_.n_evaluations > 0
    again = SparseEP(model.kernel_, inducing=model.inducing_, optimizer=None).fit(
        1e3 * X, labels
    )
    assert again.log_marginal_likelihood_ == pytest.approx(
        model.log_marginal_likelihood_, abs=1e-6
    )
    assert model.learning_.value == model.log_marginal_likelihood_
    np.testing.assert_allclose(
        again.predict_proba(1e3 * X), model.predict_proba(1e3 * X), atol=1e-6
    )
    assert model.score(1e3 * X, labels) > 0.7


def test_an_adam_search_cut_short_says_so():
    """Stopped within its first epoch (3 minibatches of 1000), the search warns."""
    X_many, Y_many = np.tile(X, (50, 1)), np.tile(Y, 50)
    with pytest.warns(ConvergenceWarning, match="raise max_time"):
        model = SparseEP(
            n_inducing=10, optimizer="adam", max_time=1e-3, random_state=0
        ).fit(X_many, Y_many)
    assert not model.learning_.converged
    assert model.learning_.message.startswith("stopped by max_time")
