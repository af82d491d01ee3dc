"""scikit-learn compatibility of every classifier of the book (issue #12, chapter 1's interface).

``check_estimator`` (through ``parametrize_with_checks``) runs scikit-learn's own estimator
checks on each classifier, then the tools a user reaches for: clone, nested set_params,
GridSearchCV, Pipeline, cross_val_score and CalibratedClassifierCV; and the crashes of the
issue, each reproduced.
"""

import copy
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse
from sklearn.base import clone, is_classifier
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError as SklearnNotFittedError
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from gpc_literate.base import ConvergenceWarning, GPClassifierBase, NotFittedError
from gpc_literate.comparison import LeastSquaresDiscriminant
from gpc_literate.criteria import BiasedEP
from gpc_literate.ep_classifier import EP
from gpc_literate.kernels import RBF, ArcSin, Cauchy, Linear, Matern
from gpc_literate.laplace import Laplace
from gpc_literate.likelihoods import Probit
from gpc_literate.meanfield import NaiveMeanField
from gpc_literate.selection import LSCV
from gpc_literate.multiclass_sep import MulticlassSEP
from gpc_literate.nested_ep import NestedEP
from gpc_literate.softmax_laplace import SoftmaxLaplace
from gpc_literate.sparse_ep import SparseEP
from gpc_literate.stochastic_ep import StochasticEP
from gpc_literate.svm import KernelAdatron
from gpc_literate.tap import TAP
from gpc_literate.variational import VariationalGP, VariationalSVM

# Instances checked by scikit-learn, with cheap settings where the defaults are slow on its
# small data sets (fewer iterations: the checks test the interface, not the solvers).
ESTIMATORS = [
    EP(),
    BiasedEP(gamma=0.1),
    Laplace(),
    NaiveMeanField(max_iter=2000, learning_rate=0.2, optimizer=None),
    TAP(v=0.1, max_iter=30),
    KernelAdatron(),
    LSCV(max_iter=3),
    VariationalGP(max_iter=2, inner_max_iter=30),
    VariationalSVM(max_iter=2, inner_max_iter=30),
    LeastSquaresDiscriminant(),
    SparseEP(n_inducing=10),
    StochasticEP(n_inducing=10, batch_size=20, max_time=None, max_iter=20),
    SoftmaxLaplace(),
    NestedEP(optimizer=None),  # learning: tests/test_nested_ep.py
    MulticlassSEP(n_inducing=10, batch_size=20, max_time=None, max_iter=20),
]

# Why a check is expected to fail, per estimator (chapter 1, "The estimator interface").
# For VariationalGP, VariationalSVM and SparseEP the two rankings happen to agree on
# scikit-learn's data set (XPASS); they need not in general, for the same reason, so the entry
# stays.
RANKING = (
    "decision_function is the posterior mean <f(x)> of the book's equations; predict_proba "
    "is Phi(<f(x)> / sqrt(c + Var f(x))), which also depends on the posterior variance, "
    "so the two rank points differently (same sign, so predict agrees); chapter 1"
)
EXPECTED_FAILURES = {
    "EP": {"check_decision_proba_consistency": RANKING},
    "BiasedEP": {"check_decision_proba_consistency": RANKING},
    "Laplace": {"check_decision_proba_consistency": RANKING},
    "NaiveMeanField": {"check_decision_proba_consistency": RANKING},
    "TAP": {"check_decision_proba_consistency": RANKING},
    "KernelAdatron": {},
    "LSCV": {"check_decision_proba_consistency": RANKING},
    "VariationalGP": {"check_decision_proba_consistency": RANKING},
    "VariationalSVM": {"check_decision_proba_consistency": RANKING},
    "LeastSquaresDiscriminant": {},
    "SparseEP": {"check_decision_proba_consistency": RANKING},
    "StochasticEP": {"check_decision_proba_consistency": RANKING},
    "SoftmaxLaplace": {},
    "NestedEP": {},
    "MulticlassSEP": {},
}


def expected_failed_checks(estimator):
    return EXPECTED_FAILURES[type(estimator).__name__]


def test_every_classifier_is_checked():
    import gpc_literate

    classes = {
        getattr(gpc_literate, name)
        for name in dir(gpc_literate)
        if isinstance(getattr(gpc_literate, name), type)
        and issubclass(getattr(gpc_literate, name), GPClassifierBase)
    }
    classes.discard(GPClassifierBase)
    checked = {type(est) for est in ESTIMATORS}
    assert classes <= checked, classes - checked
    assert set(EXPECTED_FAILURES) == {cls.__name__ for cls in checked}


@pytest.mark.filterwarnings("ignore::gpc_literate.base.ConvergenceWarning")
@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failed_checks)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# -- the crashes of issue #12, reproduced -----------------------------------------------------

X, Y = make_classification(
    n_samples=60, n_features=3, n_informative=2, n_redundant=0, random_state=0
)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_is_a_multi_class_sklearn_classifier(estimator):
    assert is_classifier(estimator)
    tags = estimator.__sklearn_tags__()
    assert tags.estimator_type == "classifier"
    assert tags.classifier_tags.multi_class is True and tags.input_tags.sparse is False


def test_not_fitted_error_is_sklearns():
    assert NotFittedError is SklearnNotFittedError
    with pytest.raises(SklearnNotFittedError):
        EP().predict(X)


def test_clone_copies_the_kernel():
    model = EP(kernel=RBF(length_scale=2.0))
    copy_ = clone(model)
    assert copy_.kernel is not model.kernel and copy_.kernel.length_scale == 2.0
    copy_.set_params(kernel__length_scale=5.0)
    assert model.kernel.length_scale == 2.0
    ard = clone(Laplace(kernel=RBF(length_scale=[1.0, 2.0, 3.0])))
    assert ard.kernel.length_scale.tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize(
    "kernel",
    [RBF(2.0, variance=3.0, bias=0.5), ArcSin(2.0), Linear(), Cauchy(0.5)],
    ids=repr,
)
def test_kernel_parameters_follow_sklearn(kernel):
    params = kernel.get_params(deep=True)
    assert params == kernel.get_params(deep=False)
    new = clone(kernel)
    assert new is not kernel and repr(new) == repr(kernel)
    name = next(iter(params))
    assert kernel.set_params(**{name: 4.0}) is kernel and getattr(kernel, name) == 4.0
    with pytest.raises(ValueError, match="Invalid parameter"):
        kernel.set_params(nonsense=1.0)


def test_nested_set_params_and_get_params():
    model = EP(kernel=RBF()).set_params(
        kernel__length_scale=2.0, likelihood=Probit(0.5)
    )
    assert model.kernel.length_scale == 2.0
    params = model.get_params(deep=True)
    assert (
        params["kernel__length_scale"] == 2.0 and params["likelihood__noise_var"] == 0.5
    )
    with pytest.raises(ValueError, match="must be positive"):
        model.set_params(kernel__length_scale=-1.0)
    assert model.kernel.length_scale == 2.0


@settings(max_examples=30, deadline=None)
@given(
    length_scale=st.floats(1e-3, 1e3),
    variance=st.floats(1e-3, 1e3),
    bias=st.one_of(st.just(0.0), st.floats(1e-3, 1e3)),
)
def test_kernel_clone_round_trip(length_scale, variance, bias):
    kernel = RBF(length_scale, variance=variance, bias=bias)
    new = clone(EP(kernel=kernel)).kernel
    assert new is not kernel and np.array_equal(new.theta, kernel.theta)
    Z = np.linspace(-1, 1, 4).reshape(-1, 1)
    assert np.array_equal(new(Z), kernel(Z))


def test_grid_search_over_length_scale_and_over_kernels():
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    # a grid over a fixed kernel (optimizer=None: fit does not move what the grid sets)
    search = GridSearchCV(
        EP(kernel=RBF(), optimizer=None), {"kernel__length_scale": [0.5, 2.0]}, cv=cv
    )
    search.fit(X, Y)
    assert search.best_params_["kernel__length_scale"] in (0.5, 2.0)
    assert (
        search.best_estimator_.kernel_.length_scale
        == search.best_params_["kernel__length_scale"]
    )
    kernels = [RBF(1.0), RBF(3.0)]
    search = GridSearchCV(
        Laplace(optimizer=None), {"kernel": kernels}, cv=cv, scoring="roc_auc"
    ).fit(X, Y)
    assert repr(search.best_params_["kernel"]) in {repr(k) for k in kernels}
    assert [k.length_scale for k in kernels] == [1.0, 3.0]  # the grid is left alone


def test_grid_search_over_a_nested_kernel_parameter_and_matern_smoothness():
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    grid = {"kernel__k1__length_scale": [0.5, 2.0], "kernel__k1__nu": [0.5, 2.5]}
    model = EP(kernel=Matern() + Linear(0.1), optimizer=None)
    search = GridSearchCV(model, grid, cv=cv).fit(X, Y)
    best = search.best_estimator_.kernel_
    assert best.k1.length_scale == search.best_params_["kernel__k1__length_scale"]
    assert best.k1.nu == search.best_params_["kernel__k1__nu"]
    assert (
        model.kernel.k1.length_scale == 1.0 and model.kernel.k1.nu == 2.5
    )  # untouched
    assert "kernel__k1__nu" in model.get_params(deep=True)


@pytest.mark.parametrize(
    "kernel",
    [Matern(nu=0.5), Matern([1.0] * 3, nu=2.5), RBF() + Linear(0.1), RBF() * Cauchy()],
    ids=repr,
)
@pytest.mark.parametrize("make", [EP, Laplace], ids=lambda c: c.__name__)
@pytest.mark.filterwarnings(
    "ignore::gpc_literate.base.ConvergenceWarning"
)  # separable: bounds
def test_estimators_learn_matern_and_combined_kernels(make, kernel):
    model = make(kernel=kernel).fit(X, Y)
    assert type(model.kernel_) is type(kernel)
    assert not np.allclose(model.kernel_.theta, kernel.theta)  # the search moved
    assert np.isfinite(model.log_marginal_likelihood_)
    assert (
        model.log_marginal_likelihood_
        >= model.log_marginal_likelihood(kernel.theta) - 1e-6
    )
    assert np.mean(model.predict(X) == Y) > 0.7


@pytest.mark.parametrize(
    "kernel",
    [Matern([0.7, 1.0, 1.5], nu=1.5), RBF(1.5) * Linear(0.5, bias=0.2)],
    ids=repr,
)
def test_evidence_gradient_of_combined_kernels(kernel):
    model = EP(kernel=kernel, optimizer=None, tol=1e-10).fit(X[:30], Y[:30])
    theta = kernel.theta
    value, grad = model.log_marginal_likelihood(theta, eval_gradient=True)
    h = 1e-5
    fd = [
        (
            model.log_marginal_likelihood(theta + h * e)
            - model.log_marginal_likelihood(theta - h * e)
        )
        / (2 * h)
        for e in np.eye(theta.size)
    ]
    np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=1e-6)


def test_pipeline_cross_val_score_and_calibration():
    pipe = make_pipeline(StandardScaler(), EP())
    scores = cross_val_score(pipe, X, Y, cv=3, scoring="roc_auc")
    assert scores.shape == (3,) and np.all(scores > 0.7)
    for model in [TAP(max_iter=200), KernelAdatron(C=1.0)]:
        assert np.mean(cross_val_score(model, X, Y, cv=3)) > 0.7
    calibrated = CalibratedClassifierCV(KernelAdatron(C=1.0), cv=3).fit(X, Y)
    proba = calibrated.predict_proba(X)
    assert proba.shape == (60, 2) and np.allclose(proba.sum(axis=1), 1.0)
    assert np.mean(calibrated.predict(X) == Y) > 0.8


@pytest.mark.parametrize(
    "cls",
    [KernelAdatron, NaiveMeanField, TAP, EP, Laplace, LSCV, SparseEP],
    ids=lambda c: c.__name__,
)
def test_fit_never_keeps_the_callers_kernel(cls):
    kernel = RBF(length_scale=1.0)
    model = cls(kernel=kernel, **({"C": 1.0} if cls is KernelAdatron else {})).fit(X, Y)
    before = model.decision_function(X)
    assert model.kernel_ is not kernel and model.kernel is kernel
    kernel.set_params(length_scale=10.0)  # the caller changes its object
    np.testing.assert_array_equal(model.decision_function(X), before)


def test_fit_never_mutates_the_callers_likelihood():
    lik = Probit(noise_var=0.5)
    model = Laplace(likelihood=lik).fit(X, Y)
    assert model.likelihood_ is not lik
    p = model.predict_proba(X)
    lik.set_params(noise_var=5.0)
    np.testing.assert_array_equal(model.predict_proba(X), p)


@pytest.mark.parametrize(
    "model, flag",
    [
        (KernelAdatron(), "fit_bias"),
        (KernelAdatron(), "compute_loo"),
        (NaiveMeanField(), "compute_loo"),
        (TAP(), "compute_loo"),
        (VariationalGP(), "verbose"),
    ],
    ids=lambda x: x if isinstance(x, str) else type(x).__name__,
)
@pytest.mark.parametrize("value", ["no", "False", 0, None])
def test_boolean_flags_must_be_bools(model, flag, value):
    with pytest.raises(TypeError, match=flag):
        clone(model).set_params(**{flag: value}).fit(X, Y)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_predict_proba_exists_exactly_with_probabilities(estimator):
    without = (KernelAdatron, LeastSquaresDiscriminant)
    assert hasattr(estimator, "predict_proba") == (not isinstance(estimator, without))
    assert hasattr(type(estimator), "decision_function")


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_one_vocabulary_for_the_posterior_and_the_evidence(estimator):
    """latent_mean_and_variance (scikit-learn's name) wherever there is a Gaussian
    posterior, equal to predict_latent; log_marginal_likelihood_ wherever there is an
    evidence or a bound on it."""
    without_posterior = (KernelAdatron, LSCV, LeastSquaresDiscriminant)
    has_posterior = not isinstance(estimator, without_posterior)
    assert hasattr(estimator, "latent_mean_and_variance") == has_posterior
    X, y = make_classification(
        n_samples=40, n_features=3, n_redundant=0, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # short runs, on purpose
        model = clone(estimator).fit(X, y)
    if has_posterior:
        mean, var = model.latent_mean_and_variance(X[:7])
        ref_mean, ref_var = model.predict_latent(X[:7])
        assert np.array_equal(mean, ref_mean) and np.array_equal(var, ref_var)
        if isinstance(
            estimator, (SoftmaxLaplace, NestedEP)
        ):  # joint: one latent per class
            assert mean.shape == (7, 2) and var.shape == (7, 2, 2)
            var = np.diagonal(var, axis1=1, axis2=2)
        elif isinstance(estimator, MulticlassSEP):  # factorised: a variance per class
            assert mean.shape == var.shape == (7, 2)
        else:
            assert mean.shape == var.shape == (7,)
        assert np.all(var > 0)
    with_evidence = (
        EP,
        Laplace,
        TAP,
        SparseEP,
        VariationalGP,
        SoftmaxLaplace,
        NestedEP,
    )
    if isinstance(estimator, with_evidence):
        assert np.isfinite(model.log_marginal_likelihood_)


def test_sparse_input_is_refused_clearly():
    with pytest.raises(TypeError, match="Sparse data was passed"):
        EP().fit(sparse.csr_matrix(X), Y)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_fit_refuses_sample_weight_and_unknown_keywords(estimator):
    name = type(estimator).__name__
    model = clone(estimator)
    with pytest.raises(
        TypeError, match=rf"^{name}\.fit does not support sample_weight"
    ):
        model.fit(X, Y, sample_weight=np.ones(len(Y)))
    with pytest.raises(TypeError, match=rf"^{name}\.fit does not support foo"):
        model.fit(X, Y, foo=1)
    assert not hasattr(model, "classes_")


@pytest.mark.filterwarnings("ignore::gpc_literate.base.ConvergenceWarning")
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_numbers_written_as_strings_are_refused(estimator):
    text = X.astype(str)
    for bad in (text, text.astype(object)):
        model = clone(estimator)
        with pytest.raises(ValueError, match="X contains strings"):
            model.fit(bad, Y)
        assert not hasattr(model, "classes_")
    model = clone(estimator).fit(X, Y)
    for method in ("decision_function", "predict_proba", "predict"):
        if hasattr(model, method):
            with pytest.raises(ValueError, match="X contains strings"):
                getattr(model, method)(text[:5])


def test_string_labels_pickle_and_refit():
    labels = np.where(Y > 0, "yes", "no")
    model = TAP(max_iter=200).fit(X, labels)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict(X), model.predict(X))
    assert set(model.predict(X)) <= {"no", "yes"}
    assert copy.deepcopy(model).score(X, labels) == model.score(X, labels)


def test_convergence_warning_is_still_ours():
    with pytest.warns(ConvergenceWarning):
        TAP(max_iter=1).fit(X, Y)
