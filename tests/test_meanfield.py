"""gpc_literate.meanfield: naive mean field, chapter 9 (book/09_naive_mean_field.md)."""

import math
import warnings

import numpy as np
import pytest

from gpc_literate import datasets
from gpc_literate.base import ConvergenceWarning
from gpc_literate.kernels import RBF, Linear
from gpc_literate.likelihoods import Probit, StepFlip
from gpc_literate.loo import exact_loo_error
from gpc_literate.meanfield import (
    NaiveMeanField,
    embedding_strength,
    naive_loo,
    naive_mean_field,
    naive_residual,
)
from gpc_literate.sites import SitePosterior


@pytest.fixture(scope="module")
def crabs():
    d = datasets.load("crabs")
    return d.X_train, d.y_train.astype(float), d.X_test, d.y_test


def test_embedding_strength_is_eq_17_40():
    z = np.linspace(-6, 6, 241)
    for kappa in [0.0, 0.1, 0.3]:
        Phi = 0.5 * np.vectorize(math.erfc)(-z / np.sqrt(2))
        direct = (
            (1 - 2 * kappa)
            * np.exp(-(z**2) / 2)
            / np.sqrt(2 * np.pi)
            / (kappa + (1 - 2 * kappa) * Phi)
        )
        assert np.allclose(embedding_strength(z, kappa), direct, rtol=1e-10)
    assert np.all(np.diff(embedding_strength(z, 0.0)) < 0)


def test_fixed_point_satisfies_the_equations(crabs):
    X, y, _, _ = crabs
    K = RBF(length_scale=1.5)(X) + 0.2 * np.eye(len(y))
    res = naive_mean_field(K, y, StepFlip(0.0), tol=1e-9)
    assert res.converged and res.residual < 1e-9
    assert naive_residual(K, y, StepFlip(0.0), res.alpha) < 1e-9
    assert np.allclose(res.mean, K @ (y * res.alpha))
    assert np.all(y * res.mean > 0)  # kappa = 0: all training examples correct
    # the same solution from the probit likelihood on the noise-free kernel
    res_p = naive_mean_field(
        RBF(length_scale=1.5)(X), y, Probit(noise_var=0.2), tol=1e-9
    )
    assert np.allclose(res.alpha, res_p.alpha, atol=1e-7)


def test_stable_loo_equals_eqs_17_41_17_42(crabs):
    X, y, _, _ = crabs
    K = RBF(length_scale=1.5)(X) + 0.2 * np.eye(len(y))
    res = naive_mean_field(K, y, StepFlip(0.0), tol=1e-12)
    f_loo, var_loo, _ = naive_loo(K, y, res.alpha, StepFlip(0.0))
    omega = np.diag(K) * (1.0 / (y * res.alpha * res.mean) - 1.0)
    bracket = 1.0 / np.diag(np.linalg.solve(K + np.diag(omega), np.eye(len(y)))) - omega
    assert np.allclose(var_loo, bracket, rtol=1e-8)
    assert np.allclose(y * f_loo, y * res.mean - bracket * res.alpha, atol=1e-9)


def test_site_posterior_matches_dense_inverse():
    rng = np.random.default_rng(0)
    kernel = RBF(length_scale=1.0)
    X, Xn = rng.normal(size=(15, 2)), rng.normal(size=(4, 2))
    K = kernel(X) + 0.1 * np.eye(15)
    Kinv = np.linalg.inv(K)
    for tau in [rng.uniform(0, 2, 15), rng.normal(size=15) * 0.3]:
        dense = np.linalg.inv(Kinv + np.diag(tau))
        b = rng.normal(size=15)
        sp = SitePosterior(K, b, tau, allow_improper=True)
        assert sp.proper == bool(np.linalg.eigvalsh(Kinv + np.diag(tau)).min() > 0)
        assert np.allclose(sp.var, np.diag(dense), rtol=1e-8)
        assert np.allclose(K @ sp.coef, dense @ b, rtol=1e-8, atol=1e-10)
        # Var f(x) = k(x,x) - k' K^-1 k + k' K^-1 Sigma K^-1 k for the Gaussian N(0, K) * sites
        Kx = kernel(Xn, X)
        A = Kx @ Kinv
        expected = (
            kernel.diag(Xn) - np.sum(A * Kx, axis=1) + np.sum((A @ dense) * A, axis=1)
        )
        assert np.allclose(sp.predictive_var(Kx, kernel.diag(Xn)), expected, rtol=1e-7)


def test_estimator_api_and_warm_start(crabs):
    X, y, Xt, yt = crabs
    clf = NaiveMeanField(kernel=RBF(length_scale=1.5), v=0.2, optimizer=None).fit(X, y)
    assert clf.converged_ and clf.residual_ < clf.tol and clf.n_iter_ > 0
    assert clf.alpha_.shape == (80,) and np.all(clf.alpha_ > 0)
    assert 0.0 <= clf.loo_error_ <= 1.0 and clf.loo_decision_.shape == (80,)
    assert np.allclose(clf.decision_function(X), clf.kernel_(X) @ clf.coef_)
    proba = clf.predict_proba(Xt)
    assert proba.shape == (len(yt), 2) and np.allclose(proba.sum(axis=1), 1)
    assert np.array_equal(proba[:, 1] > 0.5, clf.decision_function(Xt) > 0)
    warm = NaiveMeanField(kernel=RBF(length_scale=1.5), v=0.2, optimizer=None).fit(
        X, y, alpha_init=clf.alpha_
    )
    assert warm.n_iter_ == 0 or warm.n_iter_ < clf.n_iter_
    assert np.allclose(warm.alpha_, clf.alpha_, atol=1e-5)
    assert repr(NaiveMeanField(kappa=0.1)) == "NaiveMeanField(kappa=0.1)"
    assert NaiveMeanField(optimizer=None).set_params(v=0.5).v == 0.5


def test_loo_estimate_within_one_error_of_retraining(crabs):
    X, y, _, _ = crabs
    model = NaiveMeanField(
        kernel=RBF(length_scale=2.0), kappa=0.05, v=0.1, optimizer=None
    )
    fitted = NaiveMeanField(**model.get_params(deep=False)).fit(X, y)
    exact = exact_loo_error(model, X, y)
    assert abs(round(fitted.loo_error_ * len(y)) - exact.n_errors) <= 1
    assert np.all(exact.converged)


def test_non_convergence_warns(crabs):
    X, y, _, _ = crabs
    with pytest.warns(ConvergenceWarning, match="no solution"):
        clf = NaiveMeanField(kernel=Linear(), kappa=0.0, v=0.0, optimizer=None).fit(
            X, y
        )
    assert not clf.converged_ and clf.n_iter_ <= 30
    with pytest.warns(ConvergenceWarning):
        clf = NaiveMeanField(
            kernel=RBF(length_scale=2.0), max_iter=3, optimizer=None
        ).fit(X, y)
    assert not clf.converged_


@pytest.mark.parametrize(
    "bad",
    [
        dict(kappa=0.5),
        dict(kappa=-0.1),
        dict(v=-1.0),
        dict(tol=0.0),
        dict(tol=-1e-3),
        dict(max_iter=0),
        dict(learning_rate=0.0),
    ],
)
def test_bad_hyperparameters_name_the_parameter(crabs, bad):
    X, y, _, _ = crabs
    name = next(iter(bad))
    with pytest.raises(ValueError, match=name):
        NaiveMeanField(**bad, optimizer=None).fit(X, y)
    assert not hasattr(NaiveMeanField(**bad, optimizer=None), "classes_")


def _blobs(n, shift, seed=0):
    rng = np.random.default_rng(seed)
    X = np.vstack(
        [rng.normal(size=(n // 2, 2)) + shift, rng.normal(size=(n - n // 2, 2)) - shift]
    )
    return X, np.r_[np.ones(n // 2), -np.ones(n - n // 2)]


def _problems():
    for n in [20, 40, 60]:
        yield (f"overlap{n}",) + _blobs(n, 0.5)
        yield (f"separable{n}",) + _blobs(n, 2.0)
    for name in ["crabs", "sonar", "pima"]:
        d = datasets.load(name)
        X = d.X_train[:40]
        yield name, (X - X.mean(0)) / X.std(0), d.y_train[:40].astype(float)


@pytest.mark.parametrize("v", [0.0, 0.1])
@pytest.mark.parametrize("kappa", [0.0, 0.05])
def test_newton_converges_by_default_on_small_problems(v, kappa):
    """The default (Newton) reaches the fixed point of eq-mf-alpha in a few dozen steps."""
    for name, X, y in _problems():
        for ls in [1.0, np.sqrt(X.shape[1])]:
            K = RBF(length_scale=ls)(X) + v * np.eye(len(y))
            with warnings.catch_warnings():
                warnings.simplefilter("error", ConvergenceWarning)
                res = naive_mean_field(K, y, StepFlip(kappa))
            assert res.converged and res.n_iter <= 60, (name, ls, res.n_iter)
            assert naive_residual(K, y, StepFlip(kappa), res.alpha) < 1e-6
            if kappa == 0.0:
                assert np.all(y * res.mean > 0)


@pytest.mark.parametrize("v", [0.0, 0.2])
def test_newton_finds_the_fixed_point_of_algorithm_17_1(crabs, v):
    """Same fixed point as Algorithm 17.1 where that converges.

    Both stop at max_i |delta alpha_i| < 1e-10; the Jacobian (I - N D)(I + T K) of the
    residual has smallest singular value >= 1e-3 here, so the two solutions agree to 1e-7.
    """
    X, y, _, _ = crabs
    K = RBF(length_scale=1.5 if v else 2.0)(X) + v * np.eye(len(y))
    old = naive_mean_field(
        K, y, StepFlip(0.0), tol=1e-10, method="adaptive", max_iter=100_000
    )
    new = naive_mean_field(K, y, StepFlip(0.0), tol=1e-10)
    assert old.converged and new.converged and new.n_iter < 20 < old.n_iter
    assert np.abs(old.alpha - new.alpha).max() < 1e-7


def test_overlapping_clouds_converge_where_algorithm_17_1_does_not():
    X, y = _blobs(60, 0.5)
    K = RBF(length_scale=1.0)(X)
    slow = naive_mean_field(K, y, StepFlip(0.0), method="adaptive", max_iter=2000)
    assert not slow.converged
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = NaiveMeanField(kernel=RBF(length_scale=1.0), optimizer=None).fit(X, y)
    assert clf.converged_ and clf.n_iter_ <= 40
    assert np.all(y * clf.decision_function(X) > 0)


@pytest.mark.parametrize("name", ["titanic", "breast_cancer"])
def test_no_solution_is_reported_fast(name):
    """Conflicting duplicates make eq-mf-feasible infeasible: refused at once, naming the pair
    and the fix (as TAP and EP do), not 10,000 iterations."""
    d = datasets.load(name)
    X, y = d.X_train[:200], d.y_train[:200]
    with pytest.raises(ValueError, match=r"training examples \d+ and \d+ .*v > 0"):
        NaiveMeanField(optimizer=None).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        assert NaiveMeanField(v=0.1, optimizer=None).fit(X, y).converged_


def test_method_is_checked(crabs):
    X, y, _, _ = crabs
    with pytest.raises(ValueError, match="method"):
        naive_mean_field(RBF()(X), y, StepFlip(0.0), method="gauss-seidel")


def _touching_blobs():
    """Two of make_blobs' three blobs (classes 0 and 2), as scikit-learn's
    check_classifiers_train builds them: shuffled, standardised, 200 points that a
    noise-free fit classifies only with embedding strengths in the millions."""
    from sklearn.datasets import make_blobs
    from sklearn.preprocessing import StandardScaler
    from sklearn.utils import shuffle

    X, c = make_blobs(n_samples=300, random_state=0)
    X, c = shuffle(X, c, random_state=7)
    X = StandardScaler().fit_transform(X)
    return X[c != 1], np.where(c[c != 1] == 0, 1.0, -1.0)


def test_newton_stops_where_no_newton_step_exists():
    """At a long length scale K_ii w_i rounds to 1 (or I + S K S is indefinite in floating
    point): the iteration stops there and says so instead of crawling to max_iter."""
    from gpc_literate.meanfield import _PRECISION_LOST

    X, y = _touching_blobs()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = naive_mean_field(RBF(length_scale=5.0)(X), y, StepFlip(0.0))
    assert not caught  # the linear program finds a solution: no "no solution" warning
    assert run.message == _PRECISION_LOST and not run.converged
    assert run.n_iter < 1_000 and run.learning_rate == 0.0
    with pytest.warns(ConvergenceWarning, match="outgrown double precision"):
        NaiveMeanField(kernel=RBF(length_scale=5.0), optimizer=None).fit(X, y)


def test_default_fit_on_touching_blobs_has_bounded_solves(monkeypatch):
    """NaiveMeanField() learns its kernel on the blobs of scikit-learn's check: every
    Newton solve of the search ends within a bounded number of iterations (they ran to
    thousands at kernels where no Newton step exists), and the fit classifies every
    training example."""
    from gpc_literate import meanfield

    solve, n_iter = meanfield._naive_iterate, []

    def counted(*args):
        result = solve(*args)
        n_iter.append(result.n_iter)
        return result

    monkeypatch.setattr(meanfield, "_naive_iterate", counted)
    X, y = _touching_blobs()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = NaiveMeanField().fit(X, y)
    assert clf.converged_ and clf.learning_.converged
    assert np.all(clf.predict(X) == y)
    assert len(n_iter) > 50 and max(n_iter) <= 200
