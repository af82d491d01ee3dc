"""Tests of gpc_literate.base: input validation, label encoding and the estimator interface."""

import subprocess
import sys

import numpy as np
import pytest

from gpc_literate.base import (
    ConvergenceWarning,
    GPClassifierBase,
    NotFittedError,
    check_array,
    check_scalar,
    check_X_y,
    encode_labels,
)


class ToyClassifier(GPClassifierBase):
    """Linear toy: activation scale * x . w + offset with w the label-weighted input mean."""

    def __init__(self, scale=1.0, offset=0.0, note=None):
        self.scale = scale
        self.offset = offset
        self.note = note

    def _validate_params(self):
        check_scalar(self.scale, "scale", low=0.0, low_inclusive=False)
        check_scalar(self.offset, "offset")

    def _fit(self, X, y_pm):
        self.w_ = X.T @ y_pm / len(y_pm)

    def _decision_function(self, X):
        return self.scale * (X @ self.w_) + self.offset

    def _predict_proba_positive(self, X):
        return 1.0 / (1.0 + np.exp(-self._decision_function(X)))


class NoProbaClassifier(GPClassifierBase):
    """Toy without probabilities: the sign of the first feature."""

    def _fit(self, X, y_pm):
        self.fitted_ = True

    def _decision_function(self, X):
        return X[:, 0]


class FailingClassifier(ToyClassifier):
    """Toy whose _fit always fails."""

    def _fit(self, X, y_pm):
        raise RuntimeError("boom")


class Nested:
    """Minimal object with get_params/set_params, standing in for a kernel."""

    def __init__(self, length_scale=1.0):
        self.length_scale = length_scale

    def get_params(self, deep=True):
        return {"length_scale": self.length_scale}

    def set_params(self, **params):
        for key, value in params.items():
            setattr(self, key, value)
        return self


X4 = np.array([[-2.0], [-1.0], [1.0], [2.0]])


def fitted():
    return ToyClassifier().fit(X4, [0, 0, 1, 1])


# -- check_array (scikit-learn's rules, always a float64 copy) --------------------------------


def test_check_array_returns_2d_float_copy():
    X = np.array([[1, 2], [3, 4]])
    out = check_array(X)
    assert out.dtype == np.float64 and out.shape == (2, 2)
    out[0, 0] = 99
    assert X[0, 0] == 1
    Xf = np.ones((2, 2))
    assert check_array(Xf) is not Xf


def test_check_array_accepts_lists_and_bools():
    assert check_array([[True, False]]).tolist() == [[1.0, 0.0]]


@pytest.mark.parametrize(
    "value, pattern",
    [
        (np.nan, "Input X contains NaN"),
        (np.inf, "Input X contains infinity"),
        (-np.inf, "Input X contains infinity"),
    ],
)
def test_check_array_non_finite(value, pattern):
    X = np.ones((3, 2))
    X[1, 1] = value
    with pytest.raises(ValueError, match=pattern):
        check_array(X)


def test_check_array_names_argument():
    with pytest.raises(ValueError, match="^Input Z contains NaN"):
        check_array([[np.nan]], name="Z")


@pytest.mark.parametrize(
    "X, pattern",
    [
        ([1.0, 2.0, 3.0], r"(?s)Expected 2D array, got 1D array.*reshape\(-1, 1\)"),
        (np.ones((2, 2, 2)), "Found array with dim 3"),
        (3.0, "Expected 2D array, got scalar array"),
        (np.empty((0, 3)), r"0 sample\(s\)"),
        (np.empty((3, 0)), r"0 feature\(s\)"),
        ([["a", "b"]], "X contains strings"),
        ([[1.0, 2.0], [3.0]], "inhomogeneous"),
        ([[None]], "Input X contains NaN"),  # None is a missing value
    ],
)
def test_check_array_bad_shapes_and_types(X, pattern):
    with pytest.raises(ValueError, match=pattern):
        check_array(X)


@pytest.mark.parametrize(
    "X",
    [
        np.array([["1.0", "2"], ["3", "4e0"]]),  # numbers written as text
        np.array([["1.0", "2"], ["3", "4e0"]], dtype=object),
        np.array([[b"1", b"2"]]),
        np.array([[1.0, "2"]], dtype=object),  # one string among numbers
        [["1", "2"]],
    ],
)
def test_numbers_written_as_strings_are_refused(X):
    # scikit-learn's validate_data(dtype="numeric") refuses text; float64 would parse it
    y = [0, 1] if len(X) == 2 else [0]
    with pytest.raises(ValueError, match="X contains strings"):
        check_array(X)
    with pytest.raises(ValueError, match="X contains strings"):
        check_X_y(X, y)
    with pytest.raises(ValueError, match="X contains strings"):
        ToyClassifier().fit(X, y)
    est = ToyClassifier().fit(X4, [0, 0, 1, 1])
    for method in ("decision_function", "predict_proba", "predict"):
        with pytest.raises(ValueError, match="X contains strings"):
            getattr(est, method)(np.asarray(X, dtype=object)[:, 1:])
    with pytest.raises(ValueError, match="Z contains strings"):
        check_array(X, name="Z")


def test_check_array_refuses_sparse():
    from scipy import sparse

    with pytest.raises(TypeError, match="Sparse data was passed"):
        check_array(sparse.csr_matrix(np.eye(2)))


# -- check_X_y and encode_labels --------------------------------------------------------------


def test_check_X_y_ok():
    X, y = check_X_y([[1.0], [2.0]], ["a", "b"])
    assert X.shape == (2, 1) and list(y) == ["a", "b"]


def test_check_X_y_mismatched_lengths():
    with pytest.raises(ValueError, match=r"inconsistent numbers of samples: \[4, 3\]"):
        check_X_y(X4, [0, 1, 1])


def test_check_X_y_2d_y():
    with pytest.raises(ValueError, match="y should be a 1d array"):
        check_X_y(X4, np.array([[0, 1], [0, 1], [1, 0], [1, 0]]))
    with pytest.warns(UserWarning, match="column-vector y"):  # a column is raveled
        assert check_X_y(X4, np.array([[0], [0], [1], [1]]))[1].shape == (4,)


@pytest.mark.parametrize(
    "y, pattern",
    [
        ([1, 1, 1], r"y has only one class \(\[1\]\)"),
        (
            [0, 1, 2],
            r"y has 3 classes \(\[0, 1, 2\]\) where two are needed",
        ),
        ([], "y is empty"),
        ([0.0, np.nan, 1.0], "y contains NaN"),
        (np.array([[0, 1]]), "y must be a 1-D array"),
        (
            np.array([1, "a", None], dtype=object),
            "y contains labels of types that cannot be compared",
        ),
    ],
)
def test_encode_labels_errors(y, pattern):
    with pytest.raises(ValueError, match=pattern):
        encode_labels(y)


@pytest.mark.parametrize(
    "labels",
    [
        [0, 1, 1, 0],
        [-1, 1, 1, -1],
        [3, 7, 7, 3],
        ["cat", "dog", "dog", "cat"],
        [False, True, True, False],
        [2.5, 10.0, 10.0, 2.5],
    ],
)
def test_encode_labels_mapping(labels):
    y_pm, classes = encode_labels(labels)
    assert list(classes) == sorted(set(labels))
    assert y_pm.dtype == np.float64
    assert y_pm.tolist() == [-1.0, 1.0, 1.0, -1.0]
    assert classes[(y_pm > 0).astype(int)].tolist() == labels


# -- check_scalar -----------------------------------------------------------------------------


def test_check_scalar_accepts_and_returns_float():
    assert check_scalar(3, "max_iter", low=1) == 3.0
    assert isinstance(check_scalar(np.int64(2), "n"), float)
    assert check_scalar(np.float32(0.5), "kappa", low=0, high=0.5) == 0.5
    assert check_scalar(0.0, "kappa", low=0.0) == 0.0
    assert check_scalar(-1e300, "offset") == -1e300


@pytest.mark.parametrize(
    "value, kwargs, pattern",
    [
        (
            0.0,
            dict(low=0.0, low_inclusive=False),
            r"noise_var must be a finite number in \(0.0, inf\); got 0.0",
        ),
        (
            -1.0,
            dict(low=0.0),
            r"noise_var must be a finite number in \[0.0, inf\); got -1.0",
        ),
        (
            0.5,
            dict(low=0.0, high=0.5, high_inclusive=False),
            r"noise_var .* in \[0.0, 0.5\); got 0.5",
        ),
        (2.0, dict(high=1.0), r"noise_var .* in \(-inf, 1.0\]; got 2.0"),
        (np.nan, {}, "noise_var must be a finite number.*got nan"),
        (np.inf, {}, "noise_var must be a finite number.*got inf"),
        (-np.inf, dict(high=0.0), "noise_var must be a finite number"),
    ],
)
def test_check_scalar_domain_errors(value, kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        check_scalar(value, "noise_var", **kwargs)


@pytest.mark.parametrize(
    "value", ["0.1", None, True, np.bool_(False), [1.0], np.array([1.0]), 1 + 0j]
)
def test_check_scalar_type_errors(value):
    with pytest.raises(TypeError, match="noise_var must be a real number"):
        check_scalar(value, "noise_var", low=0.0)


# -- parameters (scikit-learn's BaseEstimator) -----------------------------------------------


def test_get_params_set_params_round_trip():
    est = ToyClassifier(scale=2.0, offset=0.5, note="x")
    params = est.get_params()
    assert params == {"scale": 2.0, "offset": 0.5, "note": "x"}
    assert ToyClassifier(**params).get_params() == params
    assert est.set_params(scale=3.0, note=None) is est
    assert est.get_params() == {"scale": 3.0, "offset": 0.5, "note": None}
    assert NoProbaClassifier().get_params() == {}


def test_set_params_unknown_name():
    with pytest.raises(
        ValueError, match=r"Invalid parameter 'scal' for estimator ToyClassifier"
    ):
        ToyClassifier().set_params(scal=1.0)


def test_nested_params():
    est = ToyClassifier(note=Nested(2.0))
    assert est.get_params()["note__length_scale"] == 2.0
    assert "note__length_scale" not in est.get_params(deep=False)
    est.set_params(note__length_scale=5.0)
    assert est.note.length_scale == 5.0
    with pytest.raises(ValueError, match="Invalid parameter 'nope'"):
        est.set_params(nope__x=1)


def test_clone_gives_an_unfitted_copy():
    from sklearn.base import clone

    est = ToyClassifier(scale=2.0).fit(X4, [0, 0, 1, 1])
    new = clone(est)
    assert new.get_params() == est.get_params() and not hasattr(new, "classes_")


def test_repr_shows_non_default_params():
    assert repr(ToyClassifier()) == "ToyClassifier()"
    assert (
        repr(ToyClassifier(offset=0.5, note="a"))
        == "ToyClassifier(note='a', offset=0.5)"
    )
    assert repr(NoProbaClassifier()) == "NoProbaClassifier()"


def test_var_positional_init_refused():
    class Bad(GPClassifierBase):
        def __init__(self, *args):
            self.args = args

    with pytest.raises(RuntimeError, match="should always specify their parameters"):
        Bad().get_params()


# -- fit --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "X, y, pattern",
    [
        (
            np.array([[0.0], [np.nan], [1.0], [2.0]]),
            [0, 0, 1, 1],
            "Input X contains NaN",
        ),
        (
            np.array([[0.0], [np.inf], [1.0], [2.0]]),
            [0, 0, 1, 1],
            "Input X contains infinity",
        ),
        (np.array([-2.0, -1.0, 1.0, 2.0]), [0, 0, 1, 1], "Expected 2D array"),
        (X4, [0, 0, 1], "inconsistent numbers of samples"),
        (np.empty((0, 1)), [], r"0 sample\(s\)"),
        (X4, [1, 1, 1, 1], "y has only one class"),
        (X4, [0.5, 1.5, 2.5, 3.5], "Unknown label type"),
        (X4, [0, np.nan, 1, 1], "Input y contains NaN"),
    ],
)
def test_fit_bad_input(X, y, pattern):
    with pytest.raises(ValueError, match=pattern):
        ToyClassifier().fit(X, y)


def test_fit_validates_params():
    with pytest.raises(ValueError, match="scale must be a finite number in"):
        ToyClassifier(scale=-1.0).fit(X4, [0, 0, 1, 1])
    with pytest.raises(TypeError, match="offset must be a real number"):
        ToyClassifier(offset="0").fit(X4, [0, 0, 1, 1])
    assert not hasattr(ToyClassifier(scale=-1.0), "classes_")


def test_fit_records_attributes_and_returns_self():
    est = ToyClassifier()
    assert est.fit(X4, ["b", "b", "a", "a"]) is est
    assert est.classes_.tolist() == ["a", "b"] and est.n_features_in_ == 1
    assert est.w_[0] < 0  # "b" is -1 and sits at negative x


def test_failed_fit_leaves_estimator_unfitted():
    est = FailingClassifier()
    with pytest.raises(RuntimeError, match="boom"):
        est.fit(X4, [0, 0, 1, 1])
    assert not hasattr(est, "classes_") and not hasattr(est, "n_features_in_")
    with pytest.raises(NotFittedError):
        est.predict(X4)


@pytest.mark.parametrize(
    "labels",
    [
        [0, 0, 1, 1],
        [-1, -1, 1, 1],
        [3, 3, 7, 7],
        ["cat", "cat", "dog", "dog"],
        [False, False, True, True],
        np.array(["no", "no", "yes", "yes"], dtype=object),
    ],
)
def test_label_round_trip(labels):
    est = ToyClassifier().fit(X4, labels)
    pred = est.predict(X4)
    assert pred.tolist() == list(labels)
    assert pred.dtype == np.asarray(labels).dtype
    assert est.score(X4, labels) == 1.0
    proba = est.predict_proba(X4)
    assert proba.shape == (4, 2) and np.allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(
        est.classes_[proba.argmax(axis=1)], pred
    )  # columns follow classes_
    assert np.all(est.decision_function(X4)[2:] > 0)  # positive means classes_[1]


def test_label_round_trip_reversed_order():
    est = ToyClassifier().fit(X4, [1, 1, 0, 0])
    assert est.predict(X4).tolist() == [1, 1, 0, 0]
    assert est.predict_proba(X4)[0, 1] > 0.5  # column 1 is class 1, predicted at x = -2


def test_predict_tie_goes_to_first_class():
    est = NoProbaClassifier().fit(X4, ["neg", "neg", "pos", "pos"])
    assert est.predict([[0.0]]).tolist() == ["neg"]


def test_score_counts_mistakes():
    est = ToyClassifier().fit(X4, [0, 0, 1, 1])
    assert est.score(X4, [0, 1, 1, 1]) == 0.75


# -- prediction-time checks ------------------------------------------------------------------


@pytest.mark.parametrize("method", ["decision_function", "predict_proba", "predict"])
def test_predict_before_fit(method):
    with pytest.raises(
        NotFittedError, match="This ToyClassifier instance is not fitted yet"
    ):
        getattr(ToyClassifier(), method)(X4)


def test_score_before_fit():
    with pytest.raises(NotFittedError, match="not fitted yet"):
        ToyClassifier().score(X4, [0, 0, 1, 1])


def test_not_fitted_error_is_value_and_attribute_error():
    assert issubclass(NotFittedError, ValueError) and issubclass(
        NotFittedError, AttributeError
    )


@pytest.mark.parametrize("method", ["decision_function", "predict_proba", "predict"])
def test_wrong_number_of_features(method):
    with pytest.raises(
        ValueError,
        match=r"X has 3 features, but ToyClassifier is expecting 1 "
        r"features as input",
    ):
        getattr(fitted(), method)(np.ones((2, 3)))


@pytest.mark.parametrize("method", ["decision_function", "predict_proba", "predict"])
def test_bad_input_at_predict(method):
    with pytest.raises(ValueError, match="Input X contains NaN"):
        getattr(fitted(), method)([[np.nan]])
    with pytest.raises(ValueError, match="Expected 2D array"):
        getattr(fitted(), method)([1.0, 2.0])


def test_score_mismatched_lengths():
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        fitted().score(X4, [0, 1])


def test_predict_proba_absent_without_probabilities():
    est = NoProbaClassifier().fit(X4, [0, 0, 1, 1])
    assert est.predict(X4).tolist() == [0, 0, 1, 1]
    assert not hasattr(est, "predict_proba") and not hasattr(
        NoProbaClassifier(), "predict_proba"
    )
    with pytest.raises(AttributeError):
        est.predict_proba(X4)
    assert hasattr(ToyClassifier(), "predict_proba")


@pytest.mark.parametrize("keyword", ["sample_weight", "alpha_init", "foo"])
def test_fit_refuses_keywords_its_estimator_does_not_take(keyword):
    est = ToyClassifier()
    with pytest.raises(
        TypeError, match=rf"^ToyClassifier\.fit does not support {keyword}"
    ):
        est.fit(X4, [0, 0, 1, 1], **{keyword: np.ones(4)})
    assert not hasattr(est, "classes_")
    fitted_est = fitted()
    with pytest.raises(TypeError, match=keyword):
        fitted_est.fit(X4, [0, 0, 1, 1], **{keyword: None})
    assert hasattr(fitted_est, "classes_")  # a refused call changes nothing


def test_missing_hooks_raise_not_implemented():
    class Empty(GPClassifierBase):
        pass

    with pytest.raises(NotImplementedError, match="Empty must implement _fit"):
        Empty().fit(X4, [0, 0, 1, 1])


# -- module -----------------------------------------------------------------------------------


def test_convergence_warning_is_user_warning():
    assert issubclass(ConvergenceWarning, UserWarning)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        import warnings

        warnings.warn("did not converge", ConvergenceWarning, stacklevel=1)


def test_import_has_no_heavy_dependencies():
    code = (
        "import sys, gpc_literate; assert 'sklearn' not in sys.modules; "
        "import gpc_literate.base; assert 'matplotlib' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_check_integer_accepts_integers_and_names_the_argument():
    from gpc_literate.base import check_integer

    assert check_integer(np.int64(5), "max_iter") == 5
    assert check_integer(0, "n", low=0) == 0
    with pytest.raises(ValueError, match="max_iter must be at least 1"):
        check_integer(0, "max_iter")
    for bad in [1.5, "3", True, None]:
        with pytest.raises(TypeError, match="max_iter must be an integer"):
            check_integer(bad, "max_iter")
