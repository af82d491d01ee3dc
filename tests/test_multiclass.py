"""More than two classes through binary models (chapter 1, sec-gpc-multiclass).

Pairwise coupling (its properties, with hypothesis), the binary problems, and every
classifier of the book on a three- and a four-class problem with either scheme: label
values kept, probability rows summing to one, predict = argmax of predict_proba and of
decision_function, clear errors, warnings that name the binary problem, the tools of
scikit-learn (GridSearchCV over multi_class, cross_val_score with log loss).
"""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from gpc_literate.base import (
    MULTI_CLASS,
    ConvergenceWarning,
    GPClassifierBase,
    binary_problems,
    check_multi_class,
    couple_pairwise,
    encode_classes,
    encode_labels,
)
from gpc_literate.comparison import LeastSquaresDiscriminant
from gpc_literate.criteria import BiasedEP
from gpc_literate.ep_classifier import EP
from gpc_literate.kernels import RBF
from gpc_literate.laplace import Laplace
from gpc_literate.meanfield import NaiveMeanField
from gpc_literate.selection import LSCV
from gpc_literate.sparse_ep import SparseEP
from gpc_literate.stochastic_ep import StochasticEP
from gpc_literate.svm import KernelAdatron
from gpc_literate.tap import TAP
from gpc_literate.variational import VariationalGP, VariationalSVM

# three Gaussian classes in 2-D, labels as strings, and a fourth class for K = 4
_rng = np.random.default_rng(0)
_CENTRES = np.array([[-2.0, 0.0], [2.0, 0.0], [0.0, 2.5], [0.0, -2.5]])


def blobs(n_per_class, n_classes, rng):
    X = np.vstack([c + rng.normal(size=(n_per_class, 2)) for c in _CENTRES[:n_classes]])
    y = np.repeat(np.array(["ant", "bee", "cat", "dog"])[:n_classes], n_per_class)
    return X, y


X3, Y3 = blobs(15, 3, _rng)
X3_TEST, Y3_TEST = blobs(30, 3, _rng)
X4, Y4 = blobs(12, 4, _rng)

# fast settings (the interface is tested, not the solvers)
FAST = [
    EP(),
    BiasedEP(gamma=0.1),
    Laplace(),
    NaiveMeanField(max_iter=2000, learning_rate=0.2, optimizer=None),
    TAP(v=0.1, max_iter=30, optimizer=None),
    KernelAdatron(C=1.0),
    LSCV(max_iter=3),
    VariationalGP(max_iter=2, inner_max_iter=30),
    VariationalSVM(max_iter=2, inner_max_iter=30),
    LeastSquaresDiscriminant(),
    SparseEP(n_inducing=10),
    StochasticEP(n_inducing=10, batch_size=20, max_time=None, max_iter=20),
]
WITHOUT_PROBABILITIES = (KernelAdatron, LeastSquaresDiscriminant)


def _ids(estimator):
    return type(estimator).__name__


# -- coupling -------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    K=st.integers(2, 7),
    data=st.data(),
)
def test_coupling_gives_probabilities(K, data):
    U = data.draw(arrays(np.float64, (5, K, K), elements=st.floats(0.0, 1.0)))
    R = np.triu(U, 1) + np.swapaxes(np.triu(1.0 - U, 1), 1, 2)
    P = couple_pairwise(R)
    assert P.shape == (5, K) and np.all(np.isfinite(P)) and np.all(P >= 0)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(K=st.integers(2, 8), seed=st.integers(0, 2**31))
def test_coupling_recovers_consistent_probabilities(K, seed):
    p = np.random.default_rng(seed).dirichlet(np.ones(K), size=4) + 1e-3
    p /= p.sum(axis=1, keepdims=True)
    R = p[:, :, None] / (p[:, :, None] + p[:, None, :])
    np.testing.assert_allclose(couple_pairwise(R), p, atol=1e-9)


def test_coupling_of_two_classes_is_the_binary_model():
    r = np.linspace(0.0, 1.0, 11)
    R = np.zeros((11, 2, 2))
    R[:, 0, 1], R[:, 1, 0] = r, 1.0 - r
    np.testing.assert_allclose(
        couple_pairwise(R), np.column_stack([r, 1 - r]), atol=1e-9
    )


def test_coupling_with_certain_pairs_stays_finite():
    R = np.full((1, 4, 4), 0.5)
    R[0, 0, 1:], R[0, 1:, 0] = 1.0, 0.0  # class 0 beats every other for certain
    R[0, 1, 2], R[0, 2, 1] = 0.0, 1.0
    P = couple_pairwise(R)
    assert np.all(np.isfinite(P)) and P[0, 0] > 0.99


def test_binary_problems_cover_the_classes():
    codes = np.array([0, 1, 2, 2, 1, 0, 2])
    rest = binary_problems(codes, 3, "one_vs_rest")
    assert [pair for _, _, pair in rest] == [(0, -1), (1, -1), (2, -1)]
    assert all(
        len(rows) == 7 and labels.sum() == (codes == k).sum()
        for k, (rows, labels, _) in enumerate(rest)
    )
    pairs = binary_problems(codes, 3, "one_vs_one")
    assert [pair for _, _, pair in pairs] == [(0, 1), (0, 2), (1, 2)]
    rows, labels, _ = pairs[1]
    assert rows.tolist() == [0, 2, 3, 5, 6] and labels.tolist() == [1, 0, 0, 1, 0]


@pytest.mark.parametrize("bad", ["ovr", "one-vs-rest", None, 1, "OVO"])
def test_check_multi_class_names_the_parameter(bad):
    with pytest.raises(
        ValueError, match="multi_class must be 'one_vs_rest' or 'one_vs_one'"
    ):
        check_multi_class(bad)
    assert [check_multi_class(v) for v in MULTI_CLASS] == list(MULTI_CLASS)


def test_encode_classes_and_labels():
    codes, classes = encode_classes(np.array([3, 1, 2, 3]))
    assert codes.tolist() == [2, 0, 1, 2] and classes.tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match="y has 3 classes .* where two are needed"):
        encode_labels([1, 2, 3])


# -- every classifier ------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::gpc_literate.base.ConvergenceWarning")
@pytest.mark.parametrize("multi_class", MULTI_CLASS)
@pytest.mark.parametrize("estimator", FAST, ids=_ids)
def test_every_classifier_takes_three_classes(estimator, multi_class):
    model = clone(estimator).set_params(multi_class=multi_class).fit(X3, Y3)
    K = 3
    assert model.classes_.tolist() == ["ant", "bee", "cat"]
    assert model.multi_class_ == multi_class and len(model.estimators_) == K
    assert all(isinstance(m, type(estimator)) for m in model.estimators_)
    assert all(m.multi_class == multi_class for m in model.estimators_)
    decision = model.decision_function(X3_TEST)
    pred = model.predict(X3_TEST)
    assert decision.shape == (len(X3_TEST), K)
    np.testing.assert_array_equal(pred, model.classes_[decision.argmax(axis=1)])
    assert np.mean(pred == Y3_TEST) > 0.8  # well-separated blobs
    if isinstance(model, WITHOUT_PROBABILITIES):
        assert not hasattr(model, "predict_proba")
        return
    P = model.predict_proba(X3_TEST)
    assert P.shape == (len(X3_TEST), K) and np.all(P >= 0)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(pred, model.classes_[P.argmax(axis=1)])


@pytest.mark.filterwarnings("ignore::gpc_literate.base.ConvergenceWarning")
@pytest.mark.parametrize("multi_class", MULTI_CLASS)
def test_four_classes_and_their_binary_models(multi_class):
    model = EP(multi_class=multi_class).fit(X4, Y4)
    n_models = 4 if multi_class == "one_vs_rest" else 6
    assert len(model.estimators_) == n_models
    assert model.n_iter_.shape == (n_models,) and model.converged_.dtype == bool
    # each binary model saw the rows of its problem, with the positive class first
    sizes = [len(m.X_train_) for m in model.estimators_]
    assert sizes == ([48] * 4 if multi_class == "one_vs_rest" else [24] * 6)
    P = model.predict_proba(X4)
    if multi_class == "one_vs_rest":
        q = np.column_stack([m.predict_proba(X4)[:, 1] for m in model.estimators_])
        np.testing.assert_allclose(P, q / q.sum(axis=1, keepdims=True), rtol=1e-12)
    else:
        r01 = model.estimators_[0].predict_proba(X4)[:, 1]  # P(ant | ant or bee)
        ratio = P[:, 0] / (P[:, 0] + P[:, 1])
        assert np.corrcoef(r01, ratio)[0, 1] > 0.9


def test_two_classes_are_unchanged_by_multi_class():
    rows = Y3 != "cat"
    fits = [EP(multi_class=m).fit(X3[rows], Y3[rows]) for m in MULTI_CLASS]
    assert not any(hasattr(f, "estimators_") for f in fits)
    np.testing.assert_array_equal(
        fits[0].predict_proba(X3_TEST), fits[1].predict_proba(X3_TEST)
    )
    assert fits[0].decision_function(X3_TEST).ndim == 1


@pytest.mark.parametrize("bad", ["ovr", None])
def test_bad_multi_class_is_refused_at_fit(bad):
    with pytest.raises(ValueError, match="multi_class must be"):
        EP(multi_class=bad).fit(X3, Y3)


def test_binary_attributes_of_a_multi_class_fit_are_explained():
    model = Laplace(optimizer=None).fit(X3, Y3)
    with pytest.raises(
        AttributeError, match=r"fitted to 3 classes .* estimators_\[k\]\.kernel_"
    ):
        model.kernel_  # noqa: B018
    assert model.estimators_[0].kernel_ is not None
    assert not hasattr(model, "log_marginal_likelihood_")
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        model.nonsense  # noqa: B018


def test_refits_forget_the_other_kind_of_fit():
    model = Laplace(optimizer=None).fit(X3, Y3)
    rows = Y3 != "cat"
    model.fit(X3[rows], Y3[rows])
    assert not hasattr(model, "estimators_") and model.kernel_ is not None
    model.fit(X3, Y3)
    assert len(model.estimators_) == 3 and "kernel_" not in vars(model)


def test_warm_starts_apply_to_two_classes_only():
    with pytest.raises(ValueError, match="alpha_init applies to one two-class problem"):
        TAP(optimizer=None).fit(X3, Y3, alpha_init=np.zeros(len(Y3)))
    TAP(optimizer=None, max_iter=30).fit(X3, Y3, alpha_init=None)  # the default is fine


def test_warnings_name_the_binary_problem_and_the_callers_line():
    with pytest.warns(ConvergenceWarning) as record:
        EP(max_iter=1, optimizer=None).fit(X3, Y3)
    messages = [str(w.message) for w in record]
    assert any(m.startswith("classes 'ant' versus 'bee': ") for m in messages)
    assert all(w.filename == __file__ for w in record)


def test_verbose_shows_one_bar_over_the_problems(capsys):
    EP(verbose=True, optimizer=None).fit(X3, Y3)
    err = capsys.readouterr().err
    assert "3/3" in err and err.count("EP") >= 1


def test_variational_mode_is_for_two_classes():
    model = VariationalGP(max_iter=2, inner_max_iter=30).fit(X3, Y3)
    assert model.predict(X3).shape == (len(Y3),)
    with pytest.raises(ValueError, match="use='mode' predicts with one binary model"):
        model.decision_function(X3, use="mode")


# -- scikit-learn's tools -------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::gpc_literate.base.ConvergenceWarning")
def test_grid_search_over_multi_class_and_log_loss_cv():
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    pipe = make_pipeline(StandardScaler(), EP())
    search = GridSearchCV(
        pipe, {"ep__multi_class": list(MULTI_CLASS)}, cv=cv, scoring="neg_log_loss"
    ).fit(X3, Y3)
    assert search.best_params_["ep__multi_class"] in MULTI_CLASS
    scores = cross_val_score(pipe, X3 * 1000.0, Y3, cv=cv, scoring="neg_log_loss")
    # 10 training points per class, separable: a few confident mistakes, yet far
    # better than the uniform log loss log 3 = 1.10
    assert scores.shape == (3,) and np.all(np.isfinite(scores))
    assert np.mean(scores) > -0.8


@pytest.mark.filterwarnings("ignore::gpc_literate.base.ConvergenceWarning")
def test_integer_labels_in_any_order_and_units():
    y = np.select([Y3 == "ant", Y3 == "bee"], [7, -3], 100)
    model = EP(kernel=RBF(1000.0)).fit(X3 * 1000.0, y)
    assert model.classes_.tolist() == [-3, 7, 100]
    assert (
        np.mean(
            model.predict(X3_TEST * 1000.0)
            == np.select([Y3_TEST == "ant", Y3_TEST == "bee"], [7, -3], 100)
        )
        > 0.8
    )


def test_subclass_without_the_parameter_uses_the_default():
    class Nearest(GPClassifierBase):
        def _fit(self, X, y_pm):
            self.w_ = X.T @ y_pm

        def _decision_function(self, X):
            return X @ self.w_

    model = Nearest().fit(X3, Y3)
    assert model.multi_class_ == "one_vs_one" and len(model.estimators_) == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert model.predict(X3).shape == (45,)
