"""gpc_literate.softmax_laplace (chapter 28): the mode, the evidence and its gradient,
predictions, SoftmaxLaplace."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils.estimator_checks import parametrize_with_checks

from gpc_literate.base import ConvergenceWarning, NotFittedError, central_difference
from gpc_literate.kernels import RBF
from gpc_literate.laplace import Laplace, Logistic
from gpc_literate.softmax_laplace import (
    SoftmaxLaplace,
    softmax_latent,
    softmax_log_evidence,
    softmax_mode,
    softmax_probabilities,
)


@pytest.fixture(scope="module")
def three():
    """Forty-five points of three classes in two dimensions."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((45, 2))
    scores = X @ rng.standard_normal((2, 3)) + 0.3 * rng.standard_normal((45, 3))
    codes = np.argmax(scores, axis=1)
    return X, codes


def _dense_newton_evidence(K, codes, C):
    """The Laplace evidence by dense nC x nC algebra, from the mode of softmax_mode."""
    mode = softmax_mode(K, codes, C, tol=1e-12)
    n = len(codes)
    pi = mode.pi.T.reshape(-1)
    Pi = np.vstack([np.diag(mode.pi[:, c]) for c in range(C)])
    W = np.diag(pi) - Pi @ Pi.T
    K_big = np.kron(np.eye(C), K)
    log_det = np.linalg.slogdet(np.eye(n * C) + K_big @ W)[1]
    return mode.log_lik - 0.5 * np.sum(mode.alpha * mode.f) - 0.5 * log_det


def test_mode_solves_the_fixed_point_and_psi_rises(three):
    X, codes = three
    K = RBF(length_scale=1.0, variance=4.0)(X)
    mode = softmax_mode(K, codes, 3)
    assert mode.converged and mode.residual < 1e-8
    Y = np.eye(3)[codes]
    np.testing.assert_allclose(mode.alpha, Y - mode.pi, atol=1e-8)
    np.testing.assert_allclose(mode.f, K @ mode.alpha, atol=1e-12)
    assert np.all(np.diff(mode.objective) >= -1e-12)


def test_evidence_equals_the_dense_formula(three):
    X, codes = three
    K = RBF(length_scale=0.8, variance=2.0)(X)
    value = softmax_log_evidence(softmax_mode(K, codes, 3, tol=1e-12))
    assert abs(value - _dense_newton_evidence(K, codes, 3)) < 1e-9


@pytest.mark.parametrize("C", [2, 3, 4])
def test_gradient_matches_central_differences(C):
    rng = np.random.default_rng(C)
    X = rng.standard_normal((30, 2))
    codes = np.arange(30) % C
    kernel = RBF(length_scale=[0.9, 1.4], variance=2.5, bias=0.3)

    def evidence(theta):
        K = kernel.with_theta(theta)(X)
        return softmax_log_evidence(softmax_mode(K, codes, C, tol=1e-12))

    mode = softmax_mode(kernel(X), codes, C, tol=1e-12)
    _, grad = softmax_log_evidence(mode, kernel(X), kernel.gradient(X))
    numeric = central_difference(evidence, kernel.theta, h=1e-5)
    assert np.max(np.abs(grad - numeric)) < 1e-6 * max(1.0, np.max(np.abs(numeric)))


def test_two_classes_equal_binary_logistic_laplace_with_doubled_variance():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((50, 3))
    y = (X[:, 0] - X[:, 2] + 0.5 * rng.standard_normal(50) > 0).astype(int)
    X_test = rng.standard_normal((40, 3))
    smx = SoftmaxLaplace(RBF(length_scale=1.7, variance=0.8), optimizer=None, tol=1e-12)
    binary = Laplace(
        RBF(length_scale=1.7, variance=1.6),
        likelihood=Logistic(),
        optimizer=None,
        tol=1e-12,
    )
    smx.fit(X, y)
    binary.fit(X, y)
    assert abs(smx.log_marginal_likelihood_ - binary.log_marginal_likelihood_) < 1e-8
    np.testing.assert_allclose(
        smx.predict_proba(X_test), binary.predict_proba(X_test), atol=1e-8
    )
    mean, cov = smx.predict_latent(X_test)
    g_mean, g_var = binary.predict_latent(X_test)
    np.testing.assert_allclose(mean[:, 1] - mean[:, 0], g_mean, atol=1e-8)
    np.testing.assert_allclose(
        cov[:, 0, 0] + cov[:, 1, 1] - 2 * cov[:, 0, 1], g_var, atol=1e-8
    )
    np.testing.assert_array_equal(smx.predict(X_test), binary.predict(X_test))


def test_learned_gradient_at_the_fitted_kernel(three):
    X, codes = three
    model = SoftmaxLaplace(tol=1e-12).fit(X, codes)
    assert model.learning_ is not None
    value, grad = model.log_marginal_likelihood(None, eval_gradient=True)
    assert value == model.log_marginal_likelihood_
    numeric = central_difference(model.log_marginal_likelihood, model.kernel_.theta)
    np.testing.assert_allclose(grad, numeric, atol=1e-5)
    before = model.predict_proba(X)
    model.log_marginal_likelihood(model.kernel_.theta + 0.3)  # the fit is unchanged
    np.testing.assert_array_equal(model.predict_proba(X), before)


def test_probabilities_latent_shapes_and_decision(three):
    X, codes = three
    labels = np.array(["setosa", "versicolor", "virginica"])[codes]
    model = SoftmaxLaplace(RBF(length_scale=1.0, variance=3.0), optimizer=None)
    model.fit(X, labels)
    P = model.predict_proba(X)
    assert P.shape == (45, 3) and np.all(P >= 0)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    D = model.decision_function(X)
    np.testing.assert_allclose(D, np.log(P))
    assert set(model.predict(X)) <= set(labels)
    np.testing.assert_array_equal(
        model.predict(X), model.classes_[np.argmax(P, axis=1)]
    )
    mean, cov = model.latent_mean_and_variance(X[:5])
    assert mean.shape == (5, 3) and cov.shape == (5, 3, 3)
    np.testing.assert_allclose(cov, np.swapaxes(cov, 1, 2), atol=1e-12)
    assert np.all(np.linalg.eigvalsh(cov) > -1e-12)
    assert model.score(X, labels) > 0.8
    assert isinstance(model.n_iter_, int) and model.converged_


def test_probabilities_do_not_depend_on_the_batch(three):
    X, codes = three
    model = SoftmaxLaplace(RBF(length_scale=1.0, variance=3.0), optimizer=None)
    model.fit(X, codes + 10)
    np.testing.assert_array_equal(model.classes_, [10, 11, 12])
    whole = model.predict_proba(X)
    np.testing.assert_allclose(model.predict_proba(X[7:9]), whole[7:9], atol=1e-12)
    np.testing.assert_array_equal(model.predict_proba(X), whole)


def test_monte_carlo_probabilities_are_close_to_a_long_run():
    mean = np.array([[0.5, -0.2, 0.1], [2.0, 0.0, -1.0]])
    cov = np.array(
        [np.eye(3) * 2.0, [[1.0, 0.5, 0.0], [0.5, 2.0, 0.3], [0.0, 0.3, 1.5]]]
    )
    P = softmax_probabilities(mean, cov)
    rng = np.random.default_rng(11)
    for i in range(2):
        F = rng.multivariate_normal(mean[i], cov[i], size=400_000)
        F = np.exp(F - F.max(axis=1, keepdims=True))
        ref = np.mean(F / F.sum(axis=1, keepdims=True), axis=0)
        assert np.max(np.abs(P[i] - ref)) < 0.01


def test_softmax_latent_is_the_fitted_prediction(three):
    X, codes = three
    model = SoftmaxLaplace(RBF(length_scale=1.0), optimizer=None).fit(X, codes)
    mean, cov = softmax_latent(model._state, model.kernel_, model.X_train_, X[:4])
    ref_mean, ref_cov = model.predict_latent(X[:4])
    np.testing.assert_array_equal(mean, ref_mean)
    np.testing.assert_array_equal(cov, ref_cov)


def test_warm_start_and_convergence_warning(three):
    X, codes = three
    kernel = RBF(length_scale=1.0, variance=5.0)
    with pytest.warns(ConvergenceWarning, match="increase max_iter"):
        model = SoftmaxLaplace(kernel, optimizer=None, max_iter=1).fit(X, codes)
    assert model.n_iter_ == 1 and not model.converged_
    full = SoftmaxLaplace(kernel, optimizer=None).fit(X, codes)
    warm = SoftmaxLaplace(kernel, optimizer=None).fit(X, codes, alpha_init=full.alpha_)
    assert warm.n_iter_ == 0 and warm.converged_


@pytest.mark.parametrize(
    "params, error, match",
    [
        ({"max_iter": 0}, ValueError, "max_iter"),
        ({"max_iter": 2.5}, TypeError, "max_iter"),
        ({"tol": 0.0}, ValueError, "tol"),
        ({"tol": "small"}, TypeError, "tol"),
        ({"optimizer": "adam"}, ValueError, "optimizer"),
        ({"n_restarts_optimizer": -1}, ValueError, "n_restarts_optimizer"),
        ({"verbose": "yes"}, TypeError, "verbose"),
        ({"kernel": "rbf"}, TypeError, "kernel"),
    ],
)
def test_bad_parameters_are_refused_by_name(three, params, error, match):
    X, codes = three
    model = SoftmaxLaplace(**params)
    with pytest.raises(error, match=match):
        model.fit(X, codes)
    assert not hasattr(model, "classes_")


def test_bad_data_and_calls(three):
    X, codes = three
    with pytest.raises(ValueError, match="only one class"):
        SoftmaxLaplace().fit(X, np.zeros(len(X)))
    with pytest.raises(TypeError, match="does not support sample_weight"):
        SoftmaxLaplace().fit(X, codes, sample_weight=np.ones(len(X)))
    with pytest.raises(ValueError, match="alpha_init"):
        SoftmaxLaplace(optimizer=None).fit(X, codes, alpha_init=np.zeros(len(X)))
    with pytest.raises(NotFittedError):
        SoftmaxLaplace().predict_proba(X)
    with pytest.raises(NotFittedError):
        SoftmaxLaplace().log_marginal_likelihood()
    K = RBF()(X)
    with pytest.raises(ValueError, match="codes"):
        softmax_mode(K, codes[:-1], 3)
    with pytest.raises(ValueError, match="codes must be integers"):
        softmax_mode(K, codes + 3, 3)
    mode = softmax_mode(K, codes, 3)
    with pytest.raises(ValueError, match="dK shape"):
        softmax_log_evidence(mode, K, np.zeros((3, 3, 1)))


def test_clone_keeps_the_parameters():
    model = SoftmaxLaplace(RBF(length_scale=2.0), max_iter=7, tol=1e-6)
    copy_ = clone(model)
    assert copy_.kernel is not model.kernel and copy_.max_iter == 7
    assert copy_.get_params()["tol"] == 1e-6


@pytest.mark.filterwarnings("ignore::gpc_literate.base.ConvergenceWarning")
@parametrize_with_checks([SoftmaxLaplace(optimizer=None)])
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


@pytest.mark.parametrize("make", ["softmax", "nested"])
def test_joint_search_first_step_stays_near_the_start(make):
    """The search sees the evidence per point: L-BFGS-B's first trial kernel is not
    thrown onto the box's bounds by a large gradient."""
    from sklearn.datasets import load_iris
    from sklearn.preprocessing import StandardScaler

    from gpc_literate.nested_ep import NestedEP

    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    base = SoftmaxLaplace if make == "softmax" else NestedEP
    tried = []

    class Traced(base):
        def _criterion(self, theta, eval_gradient):
            if theta is not None:
                tried.append(np.array(theta))
            return super()._criterion(theta, eval_gradient)

    model = Traced().fit(X, y)
    assert np.max(np.abs(tried[1] - tried[0])) < 1.0
    options = model._search_options()
    assert options["scale"] == 1.0 / len(X)
    if make == "nested":
        assert options["tol"] == pytest.approx(model.search_tol**2)
