"""gpc_literate.cluster_ep: sparse EP on shards, locally and on a Dask LocalCluster (chapter 27)."""
import numpy as np
import pytest
from distributed import Client, LocalCluster

from gpc_literate.cluster_ep import (gather_sites, make_shards, sharded_log_evidence,
                                     sharded_sparse_ep)
from gpc_literate.datasets import make_ringnorm
from gpc_literate.kernels import RBF
from gpc_literate.likelihoods import Probit
from gpc_literate.sparse_ep import fit_fitc_ep

KERNEL, LIK = RBF(length_scale=np.sqrt(20.0), variance=1.0), Probit(1.0)


@pytest.fixture(scope="module")
def problem():
    X, y = make_ringnorm(900, random_state=5)
    Z = X[::15].copy()                                   # 60 inducing inputs
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


def test_a_two_worker_cluster_reaches_the_same_fit_moving_the_same_bytes_at_any_n(problem):
    X, y, Z, ref = problem
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        shards = make_shards(X, y, KERNEL, LIK, Z, client=client)
        fit = sharded_sparse_ep(shards, tol=1e-12, max_iter=500)
        _check(shards, fit, ref)
        X2, y2 = make_ringnorm(3 * len(y), random_state=6)
        bigger = sharded_sparse_ep(make_shards(X2, y2, KERNEL, LIK, Z, client=client),
                                   tol=1e-12, max_iter=500)
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
