"""Property-based tests: every estimator on random small problems.

Valid data (two classes, finite inputs; constant features, duplicated inputs and labels of
any type allowed) must fit: ``fit`` returns, ``predict_proba`` is finite, in [0, 1], rows sum
to 1, and ``predict`` returns labels from the training labels. The one exception is a model
that the data contradict: the noise-free likelihood (kappa = v = 0, naive mean field and TAP)
gives two examples with the same latent value and different labels probability zero, so no
posterior exists; that fit must be refused with a ValueError naming the pair. Bad input (NaN
or infinite values, one class or three, mismatched lengths) must be refused with a
ValueError or TypeError that explains itself, never a bare LinAlgError or a
FloatingPointError.
"""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from conftest import inputs, two_class_labels

from gpc_literate.base import ConvergenceWarning, search_box
from gpc_literate.ep_classifier import EP
from gpc_literate.kernels import RBF
from gpc_literate.laplace import Laplace
from gpc_literate.meanfield import NaiveMeanField, check_no_conflicting_pair
from gpc_literate.selection import LSCV
from gpc_literate.sparse_ep import SparseEP
from gpc_literate.stochastic_ep import StochasticEP
from gpc_literate.svm import KernelAdatron
from gpc_literate.tap import TAP
from gpc_literate.variational import VariationalGP, VariationalSVM

CLASSES = (
    EP,
    Laplace,
    TAP,
    NaiveMeanField,
    KernelAdatron,
    VariationalGP,
    VariationalSVM,
    LSCV,
    SparseEP,
    StochasticEP,
)
# The estimators' one vocabulary: each gets those of these settings that it has. A short
# iteration cap and a fixed kernel; for the sparse ones a few inducing inputs, and the
# epochs alone to stop StochasticEP (no time limit, so that a run is reproducible).
FIXED = dict(max_iter=100, optimizer=None, n_inducing=10, max_time=None)


def build(cls, kernel, **settings):
    """``cls(kernel=kernel)`` with those of FIXED and ``settings`` that it takes."""
    names = cls().get_params(deep=False)
    chosen = {k: v for k, v in {**FIXED, **settings}.items() if k in names}
    return cls(kernel=kernel, **chosen)


ESTIMATORS = {cls.__name__: (lambda k, cls=cls: build(cls, k)) for cls in CLASSES}


@st.composite
def problems(draw):
    n = draw(st.integers(2, 25))
    d = draw(st.integers(1, 4))
    X = draw(inputs(n, d))
    if draw(st.booleans()):  # constant features
        X[:, draw(st.integers(0, d - 1))] = draw(st.floats(-3, 3))
    if n > 2 and draw(st.booleans()):  # duplicated inputs (labels drawn freely)
        X[-1] = X[0]
    labels = draw(st.sampled_from([(0, 1), ("a", "b"), (-1, 1)]))
    y = draw(two_class_labels(n, labels))
    scale = 10.0 ** draw(st.integers(-2, 3))
    kernel = RBF(length_scale=draw(st.sampled_from([0.3, 1.0, 3.0])), variance=scale)
    return X, y, kernel


def _check_error(err):
    assert isinstance(err, (ValueError, TypeError)), repr(err)
    assert not isinstance(err, FloatingPointError), repr(err)
    assert type(err) is not np.linalg.LinAlgError, f"raw LinAlgError: {err}"
    assert len(str(err)) > 20, f"unhelpful message: {err!r}"


# The fixed-kernel entries of these use the noise-free likelihood (kappa = v = 0).
NOISE_FREE = {"NaiveMeanField", "TAP"}


def _contradicts_noise_free(X, y, kernel):
    """True if two examples with different labels are tied under the kernel (no posterior)."""
    try:
        check_no_conflicting_pair(
            kernel(np.asarray(X, dtype=float)), np.asarray(y), "", ""
        )
    except ValueError:
        return True
    return False


def _fit(model, X, y):
    """Fit valid data; a ConvergenceWarning is allowed, an exception is a failure."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(X, y)


# With learning in fit (each estimator's default optimizer): the same properties, and the
# learned kernel inside the bounds. Naive mean field's Nelder-Mead search is left to
# tests/test_learning.py (slower), and the SVM, the variational estimators and LSCV learn in
# ways tested in their own files. TAP learns with input noise v, as the chapters do.
LEARNING = (EP, Laplace, TAP, SparseEP, StochasticEP)
LEARNERS = {
    cls.__name__: (lambda k, cls=cls: build(cls, k, optimizer=cls().optimizer, v=0.1))
    for cls in LEARNING
}
CASES = [(name, False) for name in sorted(ESTIMATORS)] + [
    (name, True) for name in sorted(LEARNERS)
]


@pytest.mark.parametrize(
    "name, learn", CASES, ids=[f"{n}-{'learned' if l else 'fixed'}" for n, l in CASES]
)
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(problem=problems())
def test_fit_predict_properties(name, learn, problem):
    X, y, kernel = problem
    model = (LEARNERS if learn else ESTIMATORS)[name](kernel)
    # valid data must fit, except data that contradict a noise-free model (tested below)
    assume(learn or name not in NOISE_FREE or not _contradicts_noise_free(X, y, kernel))
    _fit(model, X, y)
    assert list(model.classes_) == sorted(set(y.tolist()))
    pred = model.predict(X)
    assert set(np.asarray(pred).tolist()) <= set(y.tolist())
    if hasattr(model, "predict_proba"):
        proba = model.predict_proba(X)
        assert proba.shape == (len(y), 2)
        assert np.all(np.isfinite(proba)) and np.all((proba >= 0) & (proba <= 1))
        assert np.allclose(proba.sum(axis=1), 1.0)
    if learn:
        low, high = search_box(model.hyperparameter_bounds, kernel.theta)
        theta = model.kernel_.theta
        assert np.all(theta >= low - 1e-9) and np.all(theta <= high + 1e-9)
        if hasattr(model, "learning_"):  # StochasticEP reports no criterion value
            assert np.isfinite(model.learning_.value)


@pytest.mark.parametrize("name", sorted(NOISE_FREE))
@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(problem=problems())
def test_noise_free_models_refuse_contradicting_data(name, problem):
    X, y, kernel = problem
    X, y = np.vstack([X, X[:1]]), np.concatenate([y, y[1:2]])  # x_0 again, other label
    assert y[-1] != y[0] and _contradicts_noise_free(X, y, kernel)
    with pytest.raises(ValueError, match="same latent value") as info:
        ESTIMATORS[name](kernel).fit(X, y)
    _check_error(info.value)


def _corrupt(problem, how):
    X, y, kernel = problem
    X = X.copy()
    if how == "nan":
        X[0, 0] = np.nan
    elif how == "inf":
        X[-1, -1] = np.inf
    elif how == "one class":
        y = np.full(len(y), y[0])
    elif how == "lengths":
        y = y[:-1]
    return X, y, kernel


BAD = ["nan", "inf", "one class", "lengths"]
BAD_CASES = [(name, how) for name in sorted(ESTIMATORS) for how in BAD]


@pytest.mark.parametrize("name, how", BAD_CASES, ids=[f"{n}-{h}" for n, h in BAD_CASES])
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(problem=problems())
def test_bad_input_is_refused_clearly(name, how, problem):
    X, y, kernel = _corrupt(problem, how)
    with pytest.raises(Exception) as info:  # noqa: PT011 - checked below
        ESTIMATORS[name](kernel).fit(X, y)
    _check_error(info.value)
