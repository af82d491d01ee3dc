"""gpc_literate.cluster_ep: sparse EP on shards, locally and on a Dask LocalCluster (chapter 27)."""

import time

import numpy as np
import pytest
from distributed import Client, LocalCluster
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gpc_literate import sparse_ep
from gpc_literate.cluster_ep import (
    _factor,
    gather_sites,
    learn_on_shards,
    make_shards,
    sharded_gradient,
    sharded_log_evidence,
    sharded_sparse_ep,
)
from gpc_literate.base import ConvergenceWarning
from gpc_literate.datasets import make_ringnorm
from gpc_literate.kernels import RBF
from gpc_literate.likelihoods import Probit
from gpc_literate.sparse_ep import (
    SparseEP,
    fit_fitc_ep,
    fitc_evidence_gradient,
    learn_fitc,
)

KERNEL, LIK = RBF(length_scale=np.sqrt(20.0), variance=1.0), Probit(1.0)


@pytest.fixture(scope="module")
def problem():
    X, y = make_ringnorm(900, random_state=5)
    Z = X[::15].copy()  # 60 inducing inputs
    zeros = np.zeros(len(y))
    return X, y, Z, fit_fitc_ep(KERNEL, X, y, LIK, Z, zeros, zeros, 1e-12, 500)


def _check(shards, fit, ref):
    nu, tau = gather_sites(shards)
    assert fit.converged and abs(fit.n_iter - ref.n_iter) <= 1
    np.testing.assert_allclose(nu, ref.posterior.nu, rtol=0, atol=1e-10)
    np.testing.assert_allclose(tau, ref.posterior.tau, rtol=0, atol=1e-10)
    assert sharded_log_evidence(shards) == pytest.approx(ref.log_evidence, abs=1e-10)


@pytest.mark.parametrize("n_shards", [1, 2, 7])
def test_local_shards_reach_chapter_25s_fit(problem, n_shards):
    X, y, Z, ref = problem
    shards = make_shards(X, y, KERNEL, LIK, Z, n_shards=n_shards)
    _check(shards, sharded_sparse_ep(shards, tol=1e-12, max_iter=500), ref)


def test_a_two_worker_cluster_reaches_the_same_fit_moving_the_same_bytes_at_any_n(
    problem,
):
    X, y, Z, ref = problem
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        shards = make_shards(X, y, KERNEL, LIK, Z, client=client)
        fit = sharded_sparse_ep(shards, tol=1e-12, max_iter=500)
        _check(shards, fit, ref)
        X2, y2 = make_ringnorm(3 * len(y), random_state=6)
        bigger = sharded_sparse_ep(
            make_shards(X2, y2, KERNEL, LIK, Z, client=client), tol=1e-12, max_iter=500
        )
    assert bigger.converged and bigger.bytes_per_iter == fit.bytes_per_iter


def test_not_converged_within_max_iter_is_reported(problem):
    X, y, Z, _ = problem
    shards = make_shards(X, y, KERNEL, LIK, Z, n_shards=2)
    fit = sharded_sparse_ep(shards, tol=1e-12, max_iter=3)
    assert not fit.converged and fit.n_iter == 3 and fit.change > 1e-12


@pytest.mark.parametrize("bad", ["labels", "rows", "shards"])
def test_bad_input_is_refused(problem, bad):
    X, y, Z, _ = problem
    if bad == "labels":
        with pytest.raises(ValueError, match="y must be"):
            make_shards(X, (y > 0).astype(float), KERNEL, LIK, Z)
    elif bad == "rows":
        with pytest.raises(ValueError, match="one row per label"):
            make_shards(X[:-1], y, KERNEL, LIK, Z)
    else:
        with pytest.raises(ValueError, match="n_shards"):
            make_shards(X, y, KERNEL, LIK, Z, n_shards=0)


# --- the gradient and the search on shards (section sec-cluster-learn) ---


@pytest.fixture(scope="module")
def client():
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as c,
    ):
        yield c


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(8, 60),
    M=st.integers(1, 8),
    n_shards=st.integers(1, 5),
    ard=st.booleans(),
)
def test_the_sharded_gradient_is_chapter_25s(seed, n, M, n_shards, ard):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    Z = rng.normal(size=(M, 3))
    kernel = RBF(length_scale=[1.0, 1.5, 2.0] if ard else 1.3, variance=2.0)
    zeros = np.zeros(n)
    ref = fit_fitc_ep(kernel, X, y, LIK, Z, zeros, zeros, 1e-10, 500)
    assume(ref.converged and np.isfinite(ref.log_evidence))
    shards = make_shards(
        X,
        y,
        kernel,
        LIK,
        Z,
        n_shards=min(n_shards, n),
        nu=ref.posterior.nu,
        tau=ref.posterior.tau,
    )
    g_theta, g_Z = sharded_gradient(shards, kernel, Z, _factor(shards))
    r_theta, r_Z = fitc_evidence_gradient(kernel, X, Z, ref.prior, ref.posterior)
    scale = max(np.abs(r_theta).max(), np.abs(r_Z).max(), 1e-12)
    np.testing.assert_allclose(g_theta, r_theta, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(g_Z, r_Z, rtol=0, atol=1e-9 * scale)


@pytest.mark.filterwarnings("ignore::gpc_literate.base.ConvergenceWarning")
def test_learning_on_local_shards_follows_learn_fitc_with_the_inducing_inputs(
    monkeypatch,
):
    # the same evaluations in the same order: ten L-BFGS-B iterations (over 200 the search,
    # which drives this FITC model's variance to its bound, parts on rounding)
    monkeypatch.setattr(sparse_ep, "SEARCH_MAX_ITER", 10)
    X, y = make_ringnorm(300, random_state=8)
    Z = X[:8].copy()
    zeros = np.zeros(len(y))
    options = dict(
        learn_inducing=True, bounds=(np.log(1e-3), np.log(1e3)), tol=1e-10, max_iter=500
    )
    start = fit_fitc_ep(KERNEL, X, y, LIK, Z, zeros, zeros, 1e-10, 500)
    kern_1, Z_1, learned_1, fit_1 = learn_fitc(KERNEL, X, y, LIK, Z, start, **options)
    shards = make_shards(X, y, KERNEL, LIK, Z, n_shards=3)
    sharded_sparse_ep(shards, 1e-10, 500)
    kern_s, Z_s, learned_s = learn_on_shards(shards, KERNEL, Z, **options)
    assert learned_s.n_evaluations == learned_1.n_evaluations
    np.testing.assert_allclose(kern_s.theta, kern_1.theta, rtol=0, atol=1e-8)
    np.testing.assert_allclose(Z_s, Z_1, rtol=0, atol=1e-8)
    assert learned_s.value == pytest.approx(learned_1.value, abs=1e-8)


def test_set_prior_keeps_the_sites_and_revert_restores_them(problem):
    X, y, Z, ref = problem
    shard = make_shards(
        X, y, KERNEL, LIK, Z, nu=ref.posterior.nu, tau=ref.posterior.tau
    )[0]
    shard.set_prior(RBF(length_scale=3.0), Z[:10])
    assert shard.Qt.shape == (10, len(y)) and shard.L.shape == (10, 10)
    np.testing.assert_array_equal(shard.nu, ref.posterior.nu)
    shard.nu, shard.tau = shard.nu + 1.0, shard.tau + 1.0
    shard.revert()
    np.testing.assert_array_equal(shard.tau, ref.posterior.tau)


def _estimator_differences(one, two, X_test):
    return max(
        np.abs(one.site_nu_ - two.site_nu_).max(),
        np.abs(one.site_tau_ - two.site_tau_).max(),
        np.abs(one.posterior_mean_ - two.posterior_mean_).max(),
        np.abs(one.var_cav_ - two.var_cav_).max(),
        abs(one.log_marginal_likelihood_ - two.log_marginal_likelihood_),
        np.abs(one.predict_proba(X_test) - two.predict_proba(X_test)).max(),
        np.abs(one.kernel_.theta - two.kernel_.theta).max(),
        np.abs(one.inducing_ - two.inducing_).max(),
    )


@pytest.mark.filterwarnings("ignore::gpc_literate.base.ConvergenceWarning")
@pytest.mark.parametrize(
    "optimizer, learn_inducing, tol",
    [
        (None, False, 1e-10),
        ("fmin_l_bfgs_b", False, 1e-8),
        ("fmin_l_bfgs_b", True, 1e-8),
    ],
)
def test_sparse_ep_fitted_on_a_two_worker_cluster_is_the_single_process_fit(
    client, monkeypatch, optimizer, learn_inducing, tol
):
    if learn_inducing:  # as above: the first ten iterations of the search
        monkeypatch.setattr(sparse_ep, "SEARCH_MAX_ITER", 10)
    X, y = make_ringnorm(600, random_state=9)
    X_test, _ = make_ringnorm(200, random_state=10)
    labels = np.where(y > 0, "yes", "no")
    options = dict(
        kernel=RBF(length_scale=4.0),
        n_inducing=12,
        optimizer=optimizer,
        learn_inducing=learn_inducing,
        tol=1e-10,
        random_state=0,
    )
    one = SparseEP(**options).fit(X, labels)
    two = SparseEP(**options).fit(X, labels, client=client)
    assert list(two.classes_) == ["no", "yes"] and two.converged_ == one.converged_
    if optimizer is None:  # after a search, one process keeps the search's own run
        assert two.n_iter_ == one.n_iter_  # at the point (chapter 25's SearchFits)
    assert _estimator_differences(one, two, X_test) < tol
    if optimizer is not None:
        assert two.learning_.n_evaluations == one.learning_.n_evaluations
        assert two.learning_.value == pytest.approx(one.learning_.value, abs=tol)
    np.testing.assert_array_equal(one.predict(X_test), two.predict(X_test))


def test_a_warm_start_on_the_cluster_needs_one_iteration(client):
    X, y = make_ringnorm(400, random_state=11)
    options = dict(
        kernel=RBF(length_scale=4.0),
        n_inducing=10,
        optimizer=None,
        tol=1e-10,
        random_state=0,
    )
    cold = SparseEP(**options).fit(X, y)
    warm = SparseEP(**options).fit(
        X, y, site_nu_init=cold.site_nu_, site_tau_init=cold.site_tau_, client=client
    )
    assert warm.converged_ and warm.n_iter_ == 1


def test_max_time_stops_the_search_on_the_cluster_and_says_so(client):
    X, y = make_ringnorm(400, random_state=13)
    with pytest.warns(ConvergenceWarning, match="increase max_time"):
        model = SparseEP(n_inducing=10, max_time=1e-6, random_state=0).fit(
            X, y, client=client
        )
    assert model.learning_.message.startswith("max_time")
    assert model.converged_ and np.isfinite(model.log_marginal_likelihood_)


def test_a_client_that_is_not_one_is_refused():
    X, y = make_ringnorm(50, random_state=12)
    model = SparseEP(n_inducing=5, optimizer=None)
    with pytest.raises(TypeError, match="client must be a dask.distributed Client"):
        model.fit(X, y, client="tcp://127.0.0.1:8786")
    assert not hasattr(model, "classes_")


def _small_problem():
    r = np.random.default_rng(1)
    X = r.normal(size=(40, 2))
    return X, (X[:, 0] + 0.5 * r.normal(size=40) > 0).astype(int)


def test_a_closed_client_is_refused_at_once():
    X, y = _small_problem()
    with LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        closed = Client(cluster)
        closed.close()
    model = SparseEP(n_inducing=10)
    start = time.perf_counter()
    with pytest.raises(ValueError, match="client is closed"):
        model.fit(X, y, client=closed)
    assert time.perf_counter() - start < 1.0 and not hasattr(model, "classes_")


def test_grid_search_passes_the_client_on_to_every_fit(client):
    from sklearn.model_selection import GridSearchCV

    X, y = make_ringnorm(300, random_state=13)
    grid = {"kernel__length_scale": [2.0, 4.0]}
    options = dict(
        kernel=RBF(length_scale=1.0), n_inducing=8, optimizer=None, random_state=0
    )
    local = GridSearchCV(SparseEP(**options), grid, cv=2).fit(X, y)
    on_cluster = GridSearchCV(SparseEP(**options), grid, cv=2).fit(X, y, client=client)
    np.testing.assert_allclose(
        on_cluster.cv_results_["mean_test_score"],
        local.cv_results_["mean_test_score"],
        rtol=0,
        atol=1e-12,
    )
    assert on_cluster.best_params_ == local.best_params_
