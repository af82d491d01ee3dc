"""Property-based tests: every estimator on random small problems.

``fit`` returns, or raises a ValueError/TypeError that explains itself (never a bare
LinAlgError or a FloatingPointError); ``predict_proba`` is finite, in [0, 1], rows sum to 1;
``predict`` returns labels from the training labels.
"""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpc_literate.base import ConvergenceWarning, search_box
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

ESTIMATORS = {
    "EP": lambda k: EP(kernel=k, max_sweeps=30, optimizer=None),
    "Laplace": lambda k: Laplace(kernel=k, max_iter=50, optimizer=None),
    "TAP": lambda k: TAP(kernel=k, max_iter=100, optimizer=None),
    "NaiveMeanField": lambda k: NaiveMeanField(kernel=k, max_iter=500, optimizer=None),
    "KernelAdatron": lambda k: KernelAdatron(kernel=k, max_iter=500),
    "VariationalGP": lambda k: VariationalGP(kernel=k, optimize=False, inner_max_iter=100),
    "VariationalSVM": lambda k: VariationalSVM(kernel=k, optimize=False, inner_max_iter=100),
    "LSCV": lambda k: LSCV(kernel=k, optimize=False),
    "SparseEP": lambda k: SparseEP(kernel=k, n_inducing=10, optimizer=None),
    "StochasticEP": lambda k: StochasticEP(kernel=k, n_inducing=10, optimizer=None,
                                           max_time=None, max_epochs=30),
}


@st.composite
def problems(draw):
    n = draw(st.integers(2, 25))
    d = draw(st.integers(1, 4))
    X = np.array(draw(st.lists(st.lists(st.floats(-3, 3), min_size=d, max_size=d),
                               min_size=n, max_size=n)))
    if draw(st.booleans()):                       # constant features
        X[:, draw(st.integers(0, d - 1))] = draw(st.floats(-3, 3))
    if n > 2 and draw(st.booleans()):             # duplicated inputs (labels drawn freely)
        X[-1] = X[0]
    labels = draw(st.sampled_from([(0, 1), ("a", "b"), (-1, 1)]))
    pick = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    pick[0], pick[1] = 0, 1                       # both classes present
    y = np.array([labels[i] for i in pick])
    scale = 10.0 ** draw(st.integers(-2, 3))
    kernel = RBF(length_scale=draw(st.sampled_from([0.3, 1.0, 3.0])), variance=scale)
    return X, y, kernel


def _check_error(err):
    assert isinstance(err, (ValueError, TypeError)), repr(err)
    assert not isinstance(err, FloatingPointError), repr(err)
    assert type(err) is not np.linalg.LinAlgError, f"raw LinAlgError: {err}"
    assert len(str(err)) > 20, f"unhelpful message: {err!r}"


def _fits(model, X, y):
    """Fit; True if it worked, False if it raised an error that explains itself."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        try:
            model.fit(X, y)
        except Exception as err:                   # noqa: BLE001 - the property under test
            _check_error(err)
            return False
    return True


# With learning in fit (the defaults): the same properties, and the learned kernel inside the
# bounds. Naive mean field's Nelder-Mead search is left to tests/test_learning.py (slower).
LEARNERS = {
    "EP": lambda k: EP(kernel=k, max_sweeps=30),
    "Laplace": lambda k: Laplace(kernel=k, max_iter=50),
    "TAP": lambda k: TAP(kernel=k, max_iter=100, v=0.1),
    "SparseEP": lambda k: SparseEP(kernel=k, n_inducing=10),
    "StochasticEP": lambda k: StochasticEP(kernel=k, n_inducing=10, max_time=None,
                                           max_epochs=60),
}
CASES = [(name, False) for name in sorted(ESTIMATORS)] + [(name, True) for name in sorted(LEARNERS)]


@pytest.mark.parametrize("name, learn", CASES,
                         ids=[f"{n}-{'learned' if l else 'fixed'}" for n, l in CASES])
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(problem=problems())
def test_fit_predict_properties(name, learn, problem):
    X, y, kernel = problem
    model = (LEARNERS if learn else ESTIMATORS)[name](kernel)
    if not _fits(model, X, y):
        return
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
        if hasattr(model, "learning_"):          # StochasticEP reports no criterion value
            assert np.isfinite(model.learning_.value)
