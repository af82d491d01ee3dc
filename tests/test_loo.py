"""gpc_literate.loo (chapter 6): the partitioned-inverse identities (derived in chapter 5), the
exact leave-one-out error for any estimator, and the linear-response estimate of the SVM
against it."""

import warnings

import numpy as np
import pytest
from scipy.linalg import solve

from gpc_literate import datasets
from gpc_literate.base import ConvergenceWarning, GPClassifierBase, check_scalar
from gpc_literate.kernels import RBF
from gpc_literate.loo import (
    LOOComparison,
    LOOResult,
    approximate_vs_exact,
    exact_loo_error,
    lr_loo_activations,
)
from gpc_literate.svm import KernelAdatron, kernel_adatron, svm_groups


@pytest.fixture(scope="module")
def crabs():
    data = datasets.load("crabs", n_train=80)
    return data.X_train, data.y_train


def subset(data, n):
    """n examples, half of each class, from the front of the (random) crabs training set."""
    X, y = data
    idx = np.sort(
        np.concatenate(
            [np.flatnonzero(y > 0)[: n // 2], np.flatnonzero(y < 0)[: n - n // 2]]
        )
    )
    return X[idx], y[idx]


def test_partitioned_inverse_identity():
    """[A^{-1}]_ll = 1 / (A_ll - a_l' A_{-l}^{-1} a_l), eq-loo-partitioned, for every l."""
    rng = np.random.default_rng(0)
    G = rng.normal(size=(25, 25))
    for A in (
        G @ G.T + 0.1 * np.eye(25),
        RBF()(rng.normal(size=(25, 3))) + 0.05 * np.eye(25),
    ):
        inv_diag = np.diag(np.linalg.inv(A))
        for l in range(25):
            keep = np.arange(25) != l
            a = A[keep, l]
            schur = A[l, l] - a @ solve(A[np.ix_(keep, keep)], a)
            assert inv_diag[l] == pytest.approx(1.0 / schur, rel=1e-9)


def test_bordered_inverse():
    """Block inverse of the bordered matrix of the bias case, eq-loo-bordered-inverse."""
    rng = np.random.default_rng(1)
    K = RBF()(rng.normal(size=(15, 2))) + 0.3 * np.eye(15)
    A = np.block([[K, np.ones((15, 1))], [np.ones((1, 15)), np.zeros((1, 1))]])
    Ki = np.linalg.inv(K)
    k1 = Ki.sum(axis=1)
    s = k1.sum()
    expected = np.block(
        [
            [Ki - np.outer(k1, k1) / s, k1[:, None] / s],
            [k1[None, :] / s, -np.array([[1.0 / s]])],
        ]
    )
    np.testing.assert_allclose(np.linalg.inv(A), expected, atol=1e-10)
    # and the identity holds for the indefinite bordered matrix too
    inv_diag = np.diag(np.linalg.inv(A))
    for l in range(15):
        keep = np.arange(16) != l
        a = A[keep, l]
        assert inv_diag[l] == pytest.approx(
            1.0 / (A[l, l] - a @ solve(A[np.ix_(keep, keep)], a)), rel=1e-8
        )


def manual_loo(make, X, y):
    decisions, errors = [], []
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        model = make().fit(X[keep], y[keep])
        decisions.append(model.decision_function(X[i : i + 1])[0])
        errors.append(model.predict(X[i : i + 1])[0] != y[i])
    return np.array(decisions), np.array(errors)


def test_exact_loo_matches_a_manual_loop_warm_and_cold(crabs):
    X, y = subset(crabs, 30)
    est = KernelAdatron(
        kernel=RBF(length_scale=1.2), C=5.0, v=0.5, fit_bias=True, tol=1e-7
    )
    warm = exact_loo_error(est, X, y)
    cold = exact_loo_error(est, X, y, warm_start=False)
    decisions, errors = manual_loo(
        lambda: KernelAdatron(**est.get_params(deep=False)), X, y
    )
    for res in (warm, cold):
        assert isinstance(res, LOOResult)
        np.testing.assert_allclose(res.decision, decisions, atol=1e-5)
        np.testing.assert_array_equal(res.errors, errors)
        assert res.n_errors == errors.sum() and res.error_rate == pytest.approx(
            errors.mean()
        )
        assert res.converged.all() and res.converged.shape == (30,)
        assert np.all(res.n_iter >= 1)
    assert warm.warm_start and warm.n_fits == 31
    assert not cold.warm_start and cold.n_fits == 30
    assert warm.n_iter.sum() < cold.n_iter.sum()
    # the estimator passed in is left alone
    assert not hasattr(est, "alpha_")


def test_exact_loo_with_string_labels(crabs):
    X, y = subset(crabs, 20)
    labels = np.where(y > 0, "m", "f")
    est = KernelAdatron(C=np.inf, v=0.5)
    res_str = exact_loo_error(est, X, labels)
    res_pm = exact_loo_error(est, X, y)
    np.testing.assert_array_equal(res_str.errors, res_pm.errors)
    np.testing.assert_allclose(res_str.decision, res_pm.decision, atol=1e-8)


class NearestMean(GPClassifierBase):
    """A classifier without warm start or alpha_: kernel distance to the class means."""

    def __init__(self, length_scale=1.0):
        self.length_scale = length_scale

    def _validate_params(self):
        check_scalar(self.length_scale, "length_scale", low=0.0, low_inclusive=False)

    def _fit(self, X, y_pm):
        self.X_, self.y_ = X, y_pm
        return self

    def _decision_function(self, X):
        K = RBF(length_scale=self.length_scale)(X, self.X_)
        return K[:, self.y_ > 0].mean(axis=1) - K[:, self.y_ < 0].mean(axis=1)


def test_exact_loo_is_generic(crabs):
    X, y = crabs
    res = exact_loo_error(NearestMean(length_scale=2.0), X, y)
    decisions, errors = manual_loo(lambda: NearestMean(length_scale=2.0), X, y)
    assert not res.warm_start and res.n_fits == len(y)
    np.testing.assert_allclose(res.decision, decisions)
    np.testing.assert_array_equal(res.errors, errors)
    assert res.converged.all() and np.all(res.n_iter == -1)
    with pytest.raises(TypeError, match="no approximate leave-one-out"):
        approximate_vs_exact(NearestMean(), X, y)


def test_exact_loo_reports_nonconvergence(crabs):
    X, y = subset(crabs, 15)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = exact_loo_error(KernelAdatron(C=10.0, max_iter=2), X, y)
    messages = [
        str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)
    ]
    assert any("15 of 15 leave-one-out fits did not converge" in m for m in messages)
    # the n inner warnings are summarised, not repeated
    assert sum("KernelAdatron did not converge" in m for m in messages) <= 1
    assert not res.converged.any()


def test_exact_loo_progress_bar(crabs, capsys):
    X, y = subset(crabs, 10)
    exact_loo_error(KernelAdatron(C=np.inf, v=0.5), X, y, progress=True)
    assert "leave-one-out fits" in capsys.readouterr().err


def test_exact_loo_input_validation(crabs):
    X, y = crabs
    with pytest.raises(ValueError):
        exact_loo_error(KernelAdatron(), X, y[:-1])
    with pytest.raises(ValueError):
        exact_loo_error(KernelAdatron(), X, np.ones(len(y)))


@pytest.mark.parametrize("fit_bias", [False, True])
def test_linear_response_agrees_with_exact_loo_on_crabs(crabs, fit_bias):
    """Quadratic slack on 80 crabs: within one misclassification (in fact none differ)."""
    X, y = crabs
    cmp = approximate_vs_exact(
        KernelAdatron(kernel=RBF(length_scale=1.0), C=np.inf, v=0.5, fit_bias=fit_bias),
        X,
        y,
    )
    assert isinstance(cmp, LOOComparison)
    assert abs(cmp.error_count_difference) <= 1
    assert cmp.n_disagree <= 1
    assert cmp.exact.converged.all() and cmp.n_examples == 80
    model = KernelAdatron(
        kernel=RBF(length_scale=1.0), C=np.inf, v=0.5, fit_bias=fit_bias
    ).fit(X, y)
    assert cmp.approx_error_rate == model.loo_error_
    np.testing.assert_array_equal(
        cmp.approx_errors, np.where(y > 0, 1, -1) * model.loo_decision_ <= 0
    )
    # a linear-response activation is close to the exact one for every example
    assert np.max(np.abs(model.loo_decision_ - cmp.exact.decision)) < 0.1


def test_linear_response_is_exact_when_no_example_changes_group(crabs):
    """If removing l moves no other example across a group boundary, eq-svm-loo is exact;
    so the two estimates can only disagree on removals that change some group."""
    X, y = subset(crabs, 40)
    y = np.where(y > 0, 1.0, -1.0)
    C, v = 3.0, 0.1
    K = RBF(length_scale=0.6)(X)
    full = kernel_adatron(K, y, C=C, v=v, fit_bias=True, tol=1e-8, max_iter=200000)
    lr = lr_loo_activations(K, y, full.alpha, full.bias, C=C, v=v, fit_bias=True)
    groups = np.select(list(svm_groups(full.alpha, C)), [0, 1, 2])
    assert np.any(groups == 2) and np.any(groups == 1)
    n_unchanged = 0
    for l in np.flatnonzero(full.alpha > 0):
        keep = np.arange(40) != l
        res = kernel_adatron(
            K[np.ix_(keep, keep)],
            y[keep],
            C=C,
            v=v,
            fit_bias=True,
            tol=1e-8,
            max_iter=200000,
            alpha_init=full.alpha[keep],
        )
        assert res.converged
        exact = K[l, keep] @ (y[keep] * res.alpha) + res.bias
        unchanged = np.array_equal(
            np.select(list(svm_groups(res.alpha, C)), [0, 1, 2]), groups[keep]
        )
        if unchanged:  # then the two must agree exactly
            n_unchanged += 1
            assert exact == pytest.approx(lr[l], abs=1e-6)
    assert n_unchanged >= 5  # the check is not vacuous
