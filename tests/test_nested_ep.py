"""gpc_literate.nested_ep (chapter 29): nested EP for the multinomial probit model, its
evidence and gradient, orthant probabilities, the cavity LOO and NestedEP."""

import numpy as np
import pytest
from scipy.special import log_ndtr
from sklearn.base import clone

from gpc_literate.base import ConvergenceWarning, NotFittedError, central_difference
from gpc_literate.ep_classifier import EP
from gpc_literate.kernels import RBF
from gpc_literate.likelihoods import Probit
from gpc_literate.nested_ep import (
    NestedEP,
    multinomial_probit_probabilities,
    nested_ep,
    nested_ep_log_evidence,
    nested_ep_loo,
    orthant_ep,
    projection_marginals,
)


@pytest.fixture(scope="module")
def three():
    """Forty-five points of three classes in two dimensions."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((45, 2))
    scores = X @ rng.standard_normal((2, 3)) + 0.3 * rng.standard_normal((45, 3))
    return X, np.argmax(scores, axis=1)


def _projections(codes, C):
    """The projections b_ic (eq-nep-projection) as rows of a dense matrix acting on
    w = (f stacked class by class, u): (n (C-1), n C + n)."""
    n = len(codes)
    rows, which = [], []
    for i, y in enumerate(codes):
        for c in range(C):
            if c != y:
                b = np.zeros(n * C + n)
                b[y * n + i], b[c * n + i], b[n * C + i] = 1.0, -1.0, 1.0
                rows.append(b)
                which.append((i, c))
    return np.array(rows), which


def test_fixed_point_and_evidence_by_dense_algebra(three):
    """At convergence every site matches its tilted moments in the dense augmented
    Gaussian, and the evidence equals the dense formula."""
    X, codes = three
    C, n = 3, len(codes)
    K = RBF(length_scale=0.9, variance=3.0)(X)
    result = nested_ep(K, codes, C, tol=1e-11, max_iter=1000)
    assert result.converged
    B, which = _projections(codes, C)
    tau = np.array([result.tau[i, c] for i, c in which])
    nu = np.array([result.nu[i, c] for i, c in which])
    prior = np.zeros((n * C + n, n * C + n))
    prior[: n * C, : n * C] = np.kron(np.eye(C), K)
    prior[n * C :, n * C :] = np.eye(n)
    precision = np.linalg.inv(prior) + B.T @ (tau[:, None] * B)
    Sigma_w = np.linalg.inv(precision)
    mean_w = Sigma_w @ (B.T @ nu)
    # the marginals of f agree with the block computation
    for i in (0, 17, 44):
        idx = [c * n + i for c in range(C)]
        np.testing.assert_allclose(result.mean[i], mean_w[idx], atol=1e-8)
        np.testing.assert_allclose(
            result.Sigma[i], Sigma_w[np.ix_(idx, idx)], atol=1e-8
        )
    # the projections' marginals, and moment matching at every site
    m_s, v_s = B @ mean_w, np.einsum("ij,jk,ik->i", B, Sigma_w, B)
    m_blk, v_blk = projection_marginals(result)
    np.testing.assert_allclose(m_s, [m_blk[i, c] for i, c in which], atol=1e-8)
    np.testing.assert_allclose(v_s, [v_blk[i, c] for i, c in which], atol=1e-8)
    v_cav = 1.0 / (1.0 / v_s - tau)
    m_cav = v_cav * (m_s / v_s - nu)
    log_z, d1, d2 = Probit().log_Z(np.ones_like(m_cav), m_cav, v_cav)
    np.testing.assert_allclose(m_cav + v_cav * d1, m_s, atol=1e-8)
    np.testing.assert_allclose(v_cav * (1 + v_cav * d2), v_s, atol=1e-8)
    # the evidence: site masses plus the Gaussian integral over w
    ratio = 1.0 + tau * v_cav
    scale = np.log(ratio) + (tau * m_cav**2 - 2 * nu * m_cav - nu**2 * v_cav) / ratio
    gauss = (
        -0.5
        * np.linalg.slogdet(np.eye(len(prior)) + prior @ B.T @ (tau[:, None] * B))[1]
    )
    gauss += 0.5 * (B.T @ nu) @ mean_w
    dense = np.sum(log_z + 0.5 * scale) + gauss
    assert abs(nested_ep_log_evidence(result) - dense) < 1e-8


@pytest.mark.parametrize("C", [3, 4])
def test_gradient_matches_central_differences(C):
    rng = np.random.default_rng(C)
    X = rng.standard_normal((30, 2))
    codes = np.arange(30) % C
    kernel = RBF(length_scale=1.1, variance=2.5)

    def value(theta):
        K = kernel.with_theta(theta)(X)
        return nested_ep_log_evidence(nested_ep(K, codes, C, tol=1e-12, max_iter=2000))

    K = kernel(X)
    result = nested_ep(K, codes, C, tol=1e-12, max_iter=2000)
    _, gradient = nested_ep_log_evidence(result, K, kernel.gradient(X))
    np.testing.assert_allclose(
        gradient, central_difference(value, kernel.theta), rtol=1e-6
    )


def test_two_classes_equal_binary_probit_ep():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((40, 3))
    y = np.where(X[:, 0] - X[:, 1] + 0.5 * rng.standard_normal(40) > 0, 7, -2)
    kernel = RBF(length_scale=1.4, variance=2.0)
    nested = NestedEP(kernel, optimizer=None, tol=1e-12, max_iter=2000).fit(X, y)
    binary = EP(kernel, likelihood=Probit(), optimizer=None, tol=1e-12).fit(X, y)
    assert abs(nested.log_marginal_likelihood_ - binary.log_marginal_likelihood_) < 1e-8
    X_test = rng.standard_normal((50, 3))
    np.testing.assert_allclose(
        nested.predict_proba(X_test), binary.predict_proba(X_test), atol=1e-8
    )
    assert np.array_equal(nested.predict(X_test), binary.predict(X_test))


def test_orthant_ep_is_exact_in_one_dimension_and_close_in_more():
    rng = np.random.default_rng(0)
    mu = rng.standard_normal((20, 1))
    C = rng.uniform(0.1, 3.0, (20, 1, 1))
    log_p, converged = orthant_ep(mu, C)
    assert converged
    np.testing.assert_allclose(
        log_p, log_ndtr(mu[:, 0] / np.sqrt(1 + C[:, 0, 0])), atol=1e-10
    )
    # independent coordinates: the integral factorises
    mu = rng.standard_normal((10, 4))
    var = rng.uniform(0.1, 2.0, (10, 4))
    log_p, _ = orthant_ep(mu, var[:, :, None] * np.eye(4))
    np.testing.assert_allclose(
        log_p, log_ndtr(mu / np.sqrt(1 + var)).sum(axis=1), atol=1e-10
    )


def test_probabilities_sum_to_one_and_match_monte_carlo():
    rng = np.random.default_rng(3)
    mean = rng.standard_normal((15, 4))
    A = 0.5 * rng.standard_normal((15, 4, 4))
    cov = A @ A.transpose(0, 2, 1)
    P = multinomial_probit_probabilities(mean, cov)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    draws = rng.standard_normal((100_000, 4))
    for i in range(0, 15, 4):
        F = mean[i] + draws @ np.linalg.cholesky(cov[i]).T
        F += rng.standard_normal(F.shape)
        P_mc = np.bincount(F.argmax(axis=1), minlength=4) / len(F)
        assert np.max(np.abs(P[i] - P_mc)) < 0.015


def test_cavity_loo_is_close_to_refits(three):
    X, codes = three
    X, codes = X[:24], codes[:24]
    kernel = RBF(length_scale=1.0, variance=3.0)
    full = NestedEP(kernel, optimizer=None, tol=1e-10, max_iter=1000).fit(X, codes)
    loo = full.loo_log_predictive()
    assert loo.shape == (24,) and np.all(loo < 0)
    refit = []
    for i in range(24):
        keep = np.arange(24) != i
        model = NestedEP(kernel, optimizer=None, tol=1e-10, max_iter=1000)
        model.fit(X[keep], codes[keep])
        refit.append(np.log(model.predict_proba(X[i : i + 1])[0, codes[i]]))
    assert abs(np.mean(loo) - np.mean(refit)) < 0.03
    assert np.corrcoef(loo, refit)[0, 1] > 0.9


def test_learning_raises_the_evidence_and_labels_of_any_type(three):
    X, codes = three
    labels = np.array(["setosa", "virginica", "versicolor"])[codes]
    start = RBF(length_scale=3.0, variance=0.5)
    fixed = NestedEP(start, optimizer=None).fit(X, labels)
    learned = NestedEP(start).fit(X, labels)
    assert learned.log_marginal_likelihood_ > fixed.log_marginal_likelihood_
    assert learned.learning_ is not None
    assert set(learned.predict(X)) <= set(labels)
    assert learned.predict_proba(X).shape == (45, 3)
    np.testing.assert_allclose(
        learned.decision_function(X), np.log(learned.predict_proba(X)), atol=1e-12
    )
    mean, cov = learned.latent_mean_and_variance(X[:5])
    assert mean.shape == (5, 3) and cov.shape == (5, 3, 3)
    assert np.all(np.linalg.eigvalsh(cov) > 0)


def test_loose_search_ends_at_the_tight_fit(three):
    X, codes = three
    start = RBF(length_scale=3.0, variance=0.5)
    loose = NestedEP(start).fit(X, codes)
    tight = NestedEP(start, search_tol=1e-8).fit(X, codes)
    assert loose.converged_ and tight.converged_
    assert abs(loose.log_marginal_likelihood_ - tight.log_marginal_likelihood_) < 1e-3
    assert loose.learning_.value == loose.log_marginal_likelihood_
    again = nested_ep(loose.kernel_(X), codes, 3, tol=loose.tol)  # fit to tol
    assert abs(nested_ep_log_evidence(again) - loose.log_marginal_likelihood_) < 1e-9


def test_warm_start_and_convergence_warning(three):
    X, codes = three
    kernel = RBF(length_scale=1.0, variance=5.0)
    with pytest.warns(ConvergenceWarning, match="increase max_iter"):
        model = NestedEP(kernel, optimizer=None, max_iter=1).fit(X, codes)
    assert model.n_iter_ == 1 and not model.converged_
    full = NestedEP(kernel, optimizer=None).fit(X, codes)
    sites = (full._state.tau, full._state.nu)
    warm = NestedEP(kernel, optimizer=None).fit(X, codes, sites_init=sites)
    assert warm.converged_ and warm.n_iter_ < full.n_iter_


@pytest.mark.parametrize(
    "params, error, match",
    [
        ({"damping": 0.0}, ValueError, "damping"),
        ({"damping": 1.5}, ValueError, "damping"),
        ({"max_iter": 0}, ValueError, "max_iter"),
        ({"max_iter": 2.5}, TypeError, "max_iter"),
        ({"tol": 0.0}, ValueError, "tol"),
        ({"tol": "small"}, TypeError, "tol"),
        ({"search_tol": 0.0}, ValueError, "search_tol"),
        ({"search_tol": None}, TypeError, "search_tol"),
        ({"search_tol": "loose"}, TypeError, "search_tol"),
        ({"optimizer": "adam"}, ValueError, "optimizer"),
        ({"verbose": "yes"}, TypeError, "verbose"),
        ({"kernel": "rbf"}, TypeError, "kernel"),
    ],
)
def test_bad_parameters_are_refused_by_name(three, params, error, match):
    X, codes = three
    model = NestedEP(**params)
    with pytest.raises(error, match=match):
        model.fit(X, codes)
    assert not hasattr(model, "classes_")


def test_bad_data_and_calls(three):
    X, codes = three
    with pytest.raises(ValueError, match="only one class"):
        NestedEP().fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match="sites_init"):
        NestedEP(optimizer=None).fit(X, codes, sites_init=(np.zeros(3), np.zeros(3)))
    with pytest.raises(ValueError, match="non-negative"):
        bad = -np.ones((len(X), 3))
        NestedEP(optimizer=None).fit(X, codes, sites_init=(bad, bad))
    for call in ("predict_proba", "log_marginal_likelihood", "loo_log_predictive"):
        with pytest.raises(NotFittedError):
            method = getattr(NestedEP(), call)
            method(X) if call == "predict_proba" else method()
    K = RBF()(X)
    with pytest.raises(ValueError, match="codes"):
        nested_ep(K, codes[:-1], 3)
    with pytest.raises(ValueError, match="codes must be integers"):
        nested_ep(K, codes + 3, 3)
    result = nested_ep(K, codes, 3)
    with pytest.raises(ValueError, match="dK must have shape"):
        nested_ep_log_evidence(result, K, np.zeros((3, 3, 1)))
    improper = result._replace(Sigma=0.0 * result.Sigma + 1e6 * np.eye(3))
    with pytest.raises(ValueError, match="improper"):
        nested_ep_loo(improper)


def test_clone_keeps_the_parameters():
    model = NestedEP(RBF(length_scale=2.0), damping=0.7, max_iter=7)
    copy_ = clone(model)
    assert copy_.kernel is not model.kernel and copy_.damping == 0.7
    assert copy_.get_params()["max_iter"] == 7
