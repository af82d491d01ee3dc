"""A probe of our own (issue #29, item 5): bad input and stress for every public estimator.

Each case asserts "clear error or sensible result" (``assert_clear_error_or_sensible``):

* clear error: a ValueError or TypeError whose message names the offending argument (as a
  whole word), never a raw ``numpy.linalg.LinAlgError`` (a project subclass of it with its
  own message is a ValueError and counts, as in tests/test_robustness.py), never a
  FloatingPointError, ZeroDivisionError, IndexError, KeyError, AttributeError, RuntimeError,
  OSError...; after a failed fit the estimator is unfitted (``check_is_fitted`` raises).
  A TypeError for a keyword of fit must come from fit, not from the signature of a private
  method (``_EPFit._fit_fixed() got an unexpected keyword argument``).
* sensible result: the fit completes; ``predict_proba`` is finite, in [0, 1], rows sum to 1;
  where the data carry signal the probabilities are not constant over the test set (spread
  > 1e-3) unless a ConvergenceWarning/UserWarning came with the fit, and when they are not
  constant the test accuracy (of predict and of predict_proba) is clearly above chance
  (> 0.65: on the 200 test points a guess scores 0.5 +- 0.035, the majority class 0.525, the
  clean fits about 0.8); ``converged_ is True`` with a learned kernel hyperparameter on a
  bound of the search box needs a warning that says "bound".

The matrix is estimators x cases (test ids ``<case>-<estimator>``). Failures on today's main
are the "before" picture of issue #29: nothing here is marked xfail. Cases that do not apply
to an estimator (it has no such parameter) are not generated; see ``Spec``.
"""

import functools
import os
import re
import signal
import threading
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import pytest
from sklearn.utils.validation import check_is_fitted

import gpc_literate as g
from gpc_literate import cluster_ep, variational
from gpc_literate.base import GPClassifierBase, NotFittedError, bound_hits, search_box
from gpc_literate.kernels import ard_default_kernel, default_kernel
from gpc_literate.selection import LSCV_BOX

# -- the toy problem of the issue -----------------------------------------------------------------

_rng = np.random.default_rng(1)
X = _rng.normal(size=(40, 2))
_noise = _rng.normal(size=40)
Y = (X[:, 0] + 0.5 * _noise > 0).astype(int)  # = the y, the same draws
X_TEST = _rng.normal(size=(200, 2))  # test points from the same rng
_noise_test = _rng.normal(size=200)
Y_TEST = (X_TEST[:, 0] + 0.5 * _noise_test > 0).astype(int)
Y3 = np.digitize(X[:, 0] + 0.5 * _noise, [-0.6, 0.6])  # three classes, same signal
Y3_TEST = np.digitize(X_TEST[:, 0] + 0.5 * _noise_test, [-0.6, 0.6])

MIN_ACCURACY = 0.65  # binary: a guess scores 0.5 +- 0.035, the majority class 0.525,
# the clean fits about 0.8
MIN_ACCURACY_3 = 0.6  # three classes: the majority class is 0.455 of the test set
MIN_SPREAD = 1e-3  # probabilities "constant" over the test set below this spread


# -- the estimators -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    """How to build one estimator fast, and where its parameters differ from the others'.

    Parameter names differ across estimators today (issue #29 may unify them):
    ``iter_name`` is the iteration budget (EP and BiasedEP count sweeps, StochasticEP
    epochs); ``bounds_name`` the box of the hyperparameter search ("hyperparameter_bounds"
    in positive units, VariationalGP/SVM's "bounds" in log units, LSCV has only
    "noise_var_bounds"; KernelAdatron learns nothing); ``box`` the log-box the kernel's
    theta is searched in, for the converged_-on-a-bound check (LSCV's is hidden: (-10, 10),
    selection._lscv_minimise); ``fixed`` keeps the kernel fixed; ``remedies`` are
    parameters an error about a degenerate kernel matrix may name as the fix.
    """

    cls: type
    fast: dict = field(default_factory=dict)
    iter_name: str = "max_iter"
    bounds_name: str | None = "hyperparameter_bounds"
    bounds_kind: str = "positive"  # "positive", "variational", "noise_var" or "none"
    fixed: dict = field(default_factory=lambda: {"optimizer": None})
    remedies: tuple = ("likelihood",)
    start_kernel: object = None  # the kernel an estimator starts from (default_kernel)
    # the spread of a search's end point on a flat criterion, where the rounding floor
    # below does not show it (measured; see _units_tolerance)
    units_floor: float = 0.0

    def make(self, **params):
        return self.cls(**{**self.fast, **params})

    def box(self, model, X):
        """The log-box (low, high) the kernel search of ``model`` (fitted on X) ran in, or None
        (kernel fixed): each estimator's box is placed about its starting kernel."""
        if self.bounds_kind == "none" or any(
            getattr(model, k) == v for k, v in self.fixed.items()
        ):
            return None
        X = np.asarray(X, dtype=float)
        if self.bounds_kind == "variational":  # natural units, its own "auto" box
            start = (
                model.kernel
                if model.kernel is not None
                else variational._default_kernel(X)
            )
            return variational._box(model.hyperparameter_bounds, start.theta)
        start = model.kernel
        if start is None:
            start = (self.start_kernel or default_kernel)(X)
        if self.bounds_kind == "noise_var":
            return start.theta - LSCV_BOX, start.theta + LSCV_BOX
        return search_box(model.hyperparameter_bounds, start.theta)


SPECS = {
    "EP": Spec(g.EP, iter_name="max_iter"),
    "BiasedEP": Spec(g.BiasedEP, {"gamma": 0.1}, iter_name="max_iter"),
    "Laplace": Spec(g.Laplace),
    "SoftmaxLaplace": Spec(g.SoftmaxLaplace, remedies=("kernel",), units_floor=1e-4),
    "NestedEP": Spec(g.NestedEP, iter_name="max_iter", remedies=("kernel",)),
    # the noise-free default (v = kappa = 0) breaks down on overlapping classes: not the point
    "TAP": Spec(g.TAP, {"v": 0.1, "max_iter": 200}, remedies=("kappa", "v")),
    "NaiveMeanField": Spec(
        g.NaiveMeanField,
        {"max_iter": 2000, "learning_rate": 0.2},
        remedies=("kappa", "v"),
    ),
    "SparseEP": Spec(
        g.SparseEP,
        {"n_inducing": 10, "random_state": 0},
        start_kernel=ard_default_kernel,
    ),
    "StochasticEP": Spec(
        g.StochasticEP,
        {"n_inducing": 10, "max_time": None, "max_iter": 50, "random_state": 0},
        iter_name="max_iter",
        start_kernel=ard_default_kernel,
    ),
    "MulticlassSEP": Spec(
        g.MulticlassSEP,
        {"n_inducing": 10, "max_time": None, "max_iter": 50, "random_state": 0},
        iter_name="max_iter",
        remedies=("kernel",),
        start_kernel=ard_default_kernel,
    ),
    "LSCV": Spec(
        g.LSCV,
        bounds_name="noise_var_bounds",
        bounds_kind="noise_var",
        fixed={"optimizer": None},
        remedies=("noise_var",),
    ),
    "VariationalGP": Spec(
        g.VariationalGP,
        {"inner_max_iter": 100},
        bounds_kind="variational",
        fixed={"optimizer": None},
        remedies=(),
    ),
    # one factor of the covariance, not two: half the cost (VariationalSVM is the slowest here)
    "VariationalSVM": Spec(
        g.VariationalSVM,
        {"inner_max_iter": 100, "n_factors": 1},
        bounds_kind="variational",
        fixed={"optimizer": None},
        remedies=(),
    ),
    # C = inf (hard margin) never converges on overlapping classes
    "KernelAdatron": Spec(
        g.KernelAdatron,
        {"C": 1.0},
        bounds_name=None,
        bounds_kind="none",
        fixed={},
        remedies=("C", "v"),
    ),
}
NAMES = sorted(SPECS)


def test_every_public_estimator_is_probed():
    public = {
        name
        for name in g._PUBLIC
        if isinstance(getattr(g, name), type)
        and issubclass(getattr(g, name), GPClassifierBase)
        and name != "GPClassifierBase"
    }
    assert public == set(SPECS)


# -- the helper -----------------------------------------------------------------------------------


def _names(message, names):
    """True if one of ``names`` appears in ``message`` as a whole word (X, not 'EXAMPLE')."""
    return any(
        re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])", message)
        for n in names
    )


def assert_clear_error(err, names, model=None, *, types=(ValueError, TypeError)):
    """``err`` is a clear error naming one of ``names``; ``model`` (if given) is unfitted."""
    text = f"{type(err).__name__}: {err}"
    assert isinstance(err, types), f"unclear error type: {text}"
    assert type(err) is not np.linalg.LinAlgError, f"raw LinAlgError: {text}"
    assert not isinstance(
        err, (FloatingPointError, ZeroDivisionError, ArithmeticError)
    ), text
    assert _names(str(err), names), (
        f"the message does not name {' or '.join(names)}: {text}"
    )
    if model is not None:
        with pytest.raises(NotFittedError):
            check_is_fitted(model)


def _output(model, X_test):
    """predict_proba's positive-class column (or all columns), or the decision function."""
    if hasattr(model, "predict_proba"):
        return model.predict_proba(X_test)
    return model.decision_function(X_test)


def _on_bound(model, spec, X):
    """Names of the learned kernel hyperparameters on a bound of the search box."""
    box = spec.box(model, X)
    kernel = getattr(model, "kernel_", None)
    if box is None or kernel is None or kernel.theta.size == 0:
        return []
    return list(bound_hits(kernel.theta, kernel.hyperparameter_names, *box))


def assert_clear_error_or_sensible(
    spec,
    X_train,
    y_train,
    *,
    names,
    X_test=X_TEST,
    y_test=Y_TEST,
    fit_kwargs=None,
    signal=True,
    allow_error=True,
    allow_result=True,
    strict_collapse=False,
    require_warning=None,
    warning_excuses_accuracy=False,
    **params,
):
    """Fit ``spec.make(**params)``; assert a clear error (naming one of ``names``) or a
    sensible result (module docstring). Returns the fitted model, or None after an error.

    ``signal``: the data carry signal, so constant probabilities need a warning and accuracy
    is checked against y_test. ``strict_collapse``: constant probabilities also need
    converged_ False. ``require_warning``: a regex a warning of a completed fit must match
    (the first such warning does not excuse constant probabilities or a bound).
    ``warning_excuses_accuracy``: on degenerate data, a fit that warned may score at chance.
    """
    model = spec.make(**params)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model.fit(X_train, y_train, **(fit_kwargs or {}))
        except Exception as err:  # noqa: BLE001 - the property under test
            assert allow_error, (
                f"fit must succeed here; it raised {type(err).__name__}: {err}"
            )
            assert_clear_error(err, names, model)
            return None
    assert allow_result, (
        f"fit must refuse this input (naming {' or '.join(names)}); it "
        f"returned with warnings {[str(w.message)[:80] for w in caught]}"
    )
    told = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    if require_warning is not None:
        matched = [i for i, m in enumerate(told) if re.search(require_warning, m)]
        assert matched, f"no warning matching {require_warning!r}; warnings: {told}"
        del told[matched[0]]  # the first one is the one required
    out = np.asarray(_output(model, X_test))
    assert np.all(np.isfinite(out)), "non-finite predictions"
    pred = model.predict(X_test)
    assert set(np.asarray(pred).tolist()) <= set(np.asarray(model.classes_).tolist())
    if hasattr(model, "predict_proba"):  # probabilities
        assert out.shape == (len(X_test), len(model.classes_))
        assert np.all((out >= 0) & (out <= 1)), "probabilities outside [0, 1]"
        np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=0, atol=1e-9)
        spread = float(np.max(np.ptp(out, axis=0)))
    else:  # KernelAdatron's activations
        spread = float(np.ptp(out)) / max(1.0, float(np.abs(out).max()))
    converged = getattr(model, "converged_", None)
    if signal and spread <= MIN_SPREAD:
        assert told, (
            f"constant predictions (spread {spread:.2g}) without a warning; "
            f"converged_={converged}"
        )
        if strict_collapse:
            assert converged is not True, (
                f"collapsed (spread {spread:.2g}) but converged_ is "
                f"True; warnings: {told}"
            )
    elif signal and y_test is not None:
        chance = MIN_ACCURACY if len(model.classes_) == 2 else MIN_ACCURACY_3
        accuracy = float(np.mean(pred == y_test))
        assert accuracy > chance or (warning_excuses_accuracy and told), (
            f"test accuracy of predict {accuracy:.3f} (chance level), no warning"
        )
        if out.ndim == 2 and hasattr(model, "predict_proba"):
            accuracy = float(np.mean(model.classes_[np.argmax(out, axis=1)] == y_test))
            assert accuracy > chance or (warning_excuses_accuracy and told), (
                f"test accuracy of predict_proba {accuracy:.3f}, no warning"
            )
    at_bound = _on_bound(model, spec, X_train)
    if converged is True and at_bound:
        assert any("bound" in m for m in told), (
            f"converged_ is True with {at_bound} on a bound of the search box "
            f"{spec.box(model, X_train)} and no warning about it (kernel_ = {model.kernel_!r})"
        )
    return model


# -- 1. units -------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _reference(name):
    """The clean fit on the toy problem, its output on X_TEST, and the largest change of that
    output when the fit and the test points are X * (1 + 1e-12) (the rounding floor)."""
    spec = SPECS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = spec.make().fit(X, Y)
        nudged = spec.make().fit(X * (1 + 1e-12), Y)
    out = _output(model, X_TEST)
    floor = np.abs(_output(nudged, X_TEST * (1 + 1e-12)) - out).max()
    return model, out, float(floor)


def _units_tolerance(name):
    """The tolerance of the units case, absolute on probabilities (on the decision function
    relative to its largest value for KernelAdatron).

    When the start and the bounds of the search follow the data's scale, scaling X by s only
    shifts the log length scale by log(s): the fit is the same up to rounding in the
    distances, which the optimiser's path may amplify. That amplification is measured, not
    guessed: the same fit on X * (1 + 1e-12), a rounding-level change of the data (the floor
    is ~1e-13 for EP, Laplace, TAP, SparseEP, KernelAdatron; up to ~1e-4 for LSCV and the
    variational estimators, whose outer searches stop on a flat criterion). Tolerance: 10 x
    that floor, and at least 1e-6. SoftmaxLaplace's search on the toy problem ends on a flat
    evidence (signal variance ~513): at X * 1e8 its L-BFGS stops 9e-6 lower in log variance
    than at X * 1, moving the probabilities by 1.4e-5, while X * (1 + 1e-12) and exact
    power-of-two scalings (2^26) move them by 1e-8; its Spec's units_floor, 1e-4, says so.
    """
    return max(1e-6, 10 * _reference(name)[2], SPECS[name].units_floor)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("scale", [1e-8, 1.0, 1e8], ids=["X*1e-8", "X*1", "X*1e8"])
def test_units(name, scale):
    spec = SPECS[name]
    model = assert_clear_error_or_sensible(
        spec, X * scale, Y, X_test=X_TEST * scale, names=("X",), allow_error=False
    )
    if scale == 1.0:
        return
    _, ref, floor = _reference(name)
    norm = 1.0 if ref.ndim == 2 else max(1.0, float(np.abs(ref).max()))
    assert np.ptp(ref, axis=0).max() / norm > MIN_SPREAD, "the fit at X * 1 is constant"
    out = np.asarray(_output(model, X_TEST * scale))
    diff = float(np.abs(out - ref).max()) / norm
    tol = _units_tolerance(name)
    assert diff <= tol, (
        f"X * {scale:g} changes the predictions by {diff:.3g} > {tol:.1g} "
        f"(rounding floor {floor:.1g}); kernel_ = {model.kernel_!r}"
    )


# -- 2. bounds of the hyperparameter search -------------------------------------------------------

BAD_BOUNDS = {  # Spec.bounds_kind -> case -> a bad value
    "positive": {
        "negative": (-1.0, 1e5),
        "zero": (0.0, 1e5),
        "reversed": (1e5, 1e-5),
        "strings": ("1e-5", "1e5"),
        "wrong-length": (1e-5, 1.0, 1e5),
        "nan": (np.nan, 1e5),
        "scalar": 1e5,
    },
    # LSCV: noise_var_bounds must hold noise_var = 0.1
    "noise_var": {
        "negative": (-1.0, 1.0),
        "zero": (0.0, 1.0),
        "reversed": (1.0, 1e-3),
        "strings": ("1e-3", "1"),
        "wrong-length": (1e-3, 0.5, 1.0),
        "nan": (np.nan, 1.0),
        "scalar": 1.0,
    },
}
BAD_BOUNDS["variational"] = BAD_BOUNDS["positive"]  # natural units, like the others
BOUNDS_CASES = [
    (name, case)
    for name in NAMES
    if SPECS[name].bounds_name
    for case in BAD_BOUNDS[SPECS[name].bounds_kind]
]


@pytest.mark.parametrize(
    "name, case", BOUNDS_CASES, ids=[f"{c}-{n}" for n, c in BOUNDS_CASES]
)
def test_bad_bounds(name, case):
    spec = SPECS[name]
    value = BAD_BOUNDS[spec.bounds_kind][case]
    assert_clear_error_or_sensible(
        spec,
        X,
        Y,
        names=(spec.bounds_name,),
        allow_result=False,
        **{spec.bounds_name: value},
    )


# The start RBF(length_scale=1e7): log 16.1, outside (1e-5, 1e5) (log +-11.5), outside the
# variational bounds (-8, 8) and LSCV's hidden box (-10, 10). A good fit (length scale ~1)
# lies inside every box, so the search can find it.
START_NAMES = [n for n in NAMES if SPECS[n].bounds_kind != "none"]


@pytest.mark.parametrize("name", START_NAMES)
def test_start_outside_bounds(name):
    """A start far from the data: with an explicit box that excludes it, a warning about the
    start; with the default box (placed about the start), a result, constant or not, that
    says so if it is constant or on a bound."""
    spec = SPECS[name]
    names = ("kernel", spec.bounds_name or "kernel")
    far = g.RBF(length_scale=1e7)
    explicit = {"positive": (1e-5, 1e5), "log": (-8.0, 8.0)}.get(spec.bounds_kind)
    if explicit is not None:
        assert_clear_error_or_sensible(
            spec,
            X,
            Y,
            names=names,
            require_warning="start|outside",
            kernel=far,
            **{spec.bounds_name: explicit},
        )
    assert_clear_error_or_sensible(spec, X, Y, names=names, kernel=far)


# -- 3. learning rates ----------------------------------------------------------------------------

RATE_NAMES = [n for n in NAMES if "learning_rate" in SPECS[n].cls().get_params()]
RATE_CASES = [(n, r) for n in RATE_NAMES for r in (1e3, 0.0, -1.0, np.nan)]


@pytest.mark.parametrize(
    "name, rate", RATE_CASES, ids=[f"{r:g}-{n}" for n, r in RATE_CASES]
)
def test_learning_rate(name, rate):
    assert_clear_error_or_sensible(
        SPECS[name],
        X,
        Y,
        names=("learning_rate",),
        strict_collapse=True,
        learning_rate=rate,
    )


# -- 4. the AIS schedule --------------------------------------------------------------------------

SCHEDULES = {
    "nan": [0.0, np.nan, 1.0],
    "inf": [0.0, np.inf, 1.0],
    "not-from-0": [0.2, 0.6, 1.0],
    "not-to-1": [0.0, 0.5, 0.9],
    "decreasing": [0.0, 0.7, 0.3, 1.0],
}


@pytest.mark.parametrize("case", SCHEDULES)
def test_ais_schedule(case):
    K = g.RBF()(X)
    with pytest.raises(Exception) as info:
        result = g.ais_log_evidence(
            K,
            np.where(Y > 0, 1.0, -1.0),
            g.Probit(),
            n_runs=5,
            schedule=np.array(SCHEDULES[case]),
            rng=0,
        )
        pytest.fail(
            f"schedule {SCHEDULES[case]} accepted: log_evidence = {result.log_evidence}"
        )
    assert_clear_error(info.value, ("schedule",), types=(ValueError,))


# -- 5. a Dask client that is closed, a worker that dies ------------------------------------------


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
    ) as cluster:
        yield cluster


def test_closed_client(cluster):
    from distributed import Client

    client = Client(cluster)
    client.close()
    model = SPECS["SparseEP"].make()
    start = time.perf_counter()
    with pytest.raises(Exception) as info:
        model.fit(X, Y, client=client)
    elapsed = time.perf_counter() - start
    assert_clear_error(info.value, ("client",), model)
    assert elapsed < 2.0, f"the error took {elapsed:.1f} s"


def test_worker_killed_during_fit(cluster, monkeypatch):
    """Kill one worker (SIGKILL) at the third round of calls to the shards: a clear error that
    says a worker was lost, or the local fit."""
    import dask
    from distributed import Client

    spec = SPECS["SparseEP"]
    local = spec.make().fit(X, Y)
    with (
        Client(cluster) as client,
        dask.config.set({"distributed.comm.timeouts.connect": "5s"}),
    ):
        client.wait_for_workers(2, timeout=30)
        victim = next(iter(client.run(os.getpid).values()))
        calls, on_shards = [0], cluster_ep._on_shards

        def kill_at_third_call(*args, **kwargs):
            calls[0] += 1
            if calls[0] == 3:
                os.kill(victim, signal.SIGKILL)
            return on_shards(*args, **kwargs)

        monkeypatch.setattr(cluster_ep, "_on_shards", kill_at_third_call)
        model, outcome = spec.make(), {}

        def fit():
            try:
                outcome["model"] = model.fit(X, Y, client=client)
            except Exception as err:  # noqa: BLE001 - the property under test
                outcome["error"] = err

        thread = threading.Thread(target=fit, daemon=True)
        thread.start()
        thread.join(60)
        assert not thread.is_alive(), "fit hangs after a worker died"
        assert calls[0] >= 3, "the fit ended before the worker was killed"
    if "error" in outcome:
        err = outcome["error"]
        # a lost worker is not bad input: its own error type, which says what happened
        assert_clear_error(
            err,
            ("client", "worker"),
            model,
            types=(ValueError, TypeError, cluster_ep.WorkerLostError),
        )
        assert re.search(
            r"worker.*(lost|died|killed|gone)|(lost|died|killed).*worker",
            str(err),
            re.I,
        ), f"the message does not say a worker was lost: {err}"
    else:
        np.testing.assert_allclose(
            model.predict_proba(X_TEST), local.predict_proba(X_TEST), rtol=0, atol=1e-8
        )


# -- 6. strings in X ------------------------------------------------------------------------------

STRING_X = {
    "numeric-str": lambda A: A.astype(str),
    "numeric-str-object": lambda A: A.astype(str).astype(object),
    "words-object": lambda A: np.where(A > 0, "up", "down").astype(object),
}
STRING_CASES = [(n, c, w) for n in NAMES for c in STRING_X for w in ("fit", "predict")]


@pytest.mark.parametrize(
    "name, case, where", STRING_CASES, ids=[f"{w}-{c}-{n}" for n, c, w in STRING_CASES]
)
def test_strings_in_X(name, case, where):
    spec = SPECS[name]
    if where == "fit":
        assert_clear_error_or_sensible(
            spec, STRING_X[case](X), Y, names=("X",), allow_result=False
        )
        return
    model = _reference(name)[0]
    with pytest.raises(Exception) as info:
        out = _output(model, STRING_X[case](X_TEST))
        pytest.fail(
            f"{'predict_proba' if out.ndim == 2 else 'decision_function'} accepted "
            f"strings"
        )
    assert_clear_error(info.value, ("X",))


# -- 7. keyword arguments of fit ------------------------------------------------------------------

PRIVATE = re.compile(r"(?<![A-Za-z0-9_])_[A-Za-z]\w*[.(]")  # _EPFit._fit_fixed(


@pytest.mark.parametrize("name", NAMES)
def test_sample_weight(name):
    """A clear TypeError from fit naming sample_weight, or support: unit weights are no
    weights (a finer check of the weighting belongs with the change that adds it)."""
    spec = SPECS[name]
    model = spec.make()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X, Y, sample_weight=np.ones(len(Y)))
    except Exception as err:  # noqa: BLE001 - the property under test
        assert_clear_error(err, ("sample_weight",), model, types=(TypeError,))
        assert not PRIVATE.search(str(err)), f"raised inside a private method: {err}"
        return
    np.testing.assert_allclose(
        _output(model, X_TEST), _reference(name)[1], rtol=0, atol=_units_tolerance(name)
    )


@pytest.mark.parametrize("name", NAMES)
def test_unknown_fit_keyword(name):
    model = SPECS[name].make()
    with pytest.raises(Exception) as info:
        model.fit(X, Y, foo=1)
    assert_clear_error(info.value, ("foo",), model, types=(TypeError,))
    assert not PRIVATE.search(str(info.value)), (
        f"raised inside a private method: {info.value}"
    )


# -- 8. other stress ------------------------------------------------------------------------------


def _with(A, i, j, value):
    A = np.array(A, dtype=float)
    A[i, j] = value
    return A


def _y_with(value):
    y = Y.astype(float)
    y[3] = value
    return y


_pair = [int(np.flatnonzero(Y == 0)[0]), int(np.flatnonzero(Y == 1)[0])]
_flip = np.r_[Y, 1 - Y[:5]]

# case -> (X, y, X_test, y_test, options of assert_clear_error_or_sensible); "degenerate":
# an error may instead name a parameter that regularises the fit (Spec.remedies, e.g. TAP's
# "set kappa > 0 or v > 0" for conflicting duplicates under the noise-free likelihood)
STRESS = {
    "nan-X": (
        _with(X, 3, 1, np.nan),
        Y,
        X_TEST,
        Y_TEST,
        dict(names=("X",), allow_result=False),
    ),
    "inf-X": (
        _with(X, 3, 1, np.inf),
        Y,
        X_TEST,
        Y_TEST,
        dict(names=("X",), allow_result=False),
    ),
    "nan-y": (
        X,
        _y_with(np.nan),
        X_TEST,
        Y_TEST,
        dict(names=("y",), allow_result=False),
    ),
    "inf-y": (
        X,
        _y_with(np.inf),
        X_TEST,
        Y_TEST,
        dict(names=("y",), allow_result=False),
    ),
    "one-class": (
        X,
        np.zeros(40, int),
        X_TEST,
        Y_TEST,
        dict(names=("y",), allow_result=False),
    ),
    # three classes through multi_class: the result must be sensible
    "three-classes": (X, Y3, X_TEST, Y3_TEST, dict(names=("y",))),
    "n=1": (X[:1], Y[:1], X_TEST, Y_TEST, dict(names=("X", "y"), allow_result=False)),
    "n=2": (
        X[_pair],
        Y[_pair],
        X_TEST,
        Y_TEST,
        dict(names=("X", "y"), signal=False, degenerate=True),
    ),
    "duplicate-rows": (
        np.vstack([X, X]),
        np.r_[Y, Y],
        X_TEST,
        Y_TEST,
        dict(names=("X", "y"), degenerate=True),
    ),
    "conflicting-duplicates": (
        np.vstack([X, X[:5]]),
        _flip,
        X_TEST,
        Y_TEST,
        dict(names=("X", "y"), degenerate=True),
    ),
    "constant-feature": (
        np.c_[X, np.full(40, 3.0)],
        Y,
        np.c_[X_TEST, np.full(200, 3.0)],
        Y_TEST,
        dict(names=("X",), degenerate=True),
    ),
    "all-constant": (
        np.ones((40, 2)),
        Y,
        X_TEST,
        Y_TEST,
        dict(names=("X",), signal=False, degenerate=True),
    ),
    "zero-features": (
        X[:, :0],
        Y,
        X_TEST[:, :0],
        Y_TEST,
        dict(names=("X",), allow_result=False),
    ),
}
STRESS_CASES = [(n, c) for n in NAMES for c in STRESS]


@pytest.mark.parametrize(
    "name, case", STRESS_CASES, ids=[f"{c}-{n}" for n, c in STRESS_CASES]
)
def test_stress(name, case):
    X_train, y_train, X_test, y_test, options = STRESS[case]
    options = dict(options)
    if options.pop("degenerate", False):
        options["names"] += SPECS[name].remedies
        options["warning_excuses_accuracy"] = True
    assert_clear_error_or_sensible(
        SPECS[name], X_train, y_train, X_test=X_test, y_test=y_test, **options
    )


LABELS = {"strings": ("a", "b"), "pm1": (-1, 1), "01": (0, 1), "bool": (False, True)}
LABEL_CASES = [(n, c) for n in NAMES for c in LABELS]


@pytest.mark.parametrize(
    "name, case", LABEL_CASES, ids=[f"labels-{c}-{n}" for n, c in LABEL_CASES]
)
def test_labels(name, case):
    """Any two labels give the {0, 1} fit; predictions map back to the given labels."""
    labels = np.array(LABELS[case])
    model = assert_clear_error_or_sensible(
        SPECS[name],
        X,
        labels[Y],
        y_test=labels[Y_TEST],
        names=("y",),
        allow_error=False,
    )
    ref_model, ref, _ = _reference(name)
    assert (
        np.array_equal(model.classes_, labels) and model.classes_.dtype == labels.dtype
    )
    pred = model.predict(X_TEST)
    assert pred.dtype == labels.dtype
    np.testing.assert_array_equal(pred, labels[ref_model.predict(X_TEST)])
    np.testing.assert_allclose(_output(model, X_TEST), ref, rtol=0, atol=1e-9)


# Fixed kernels with extreme length scales: no usable signal (1e-5: the test points are
# uncorrelated with the training points, so prediction = prior; 1e5: K is a constant matrix
# plus O(1e-10)). The result must be valid, or the error clear (naming the kernel or a
# parameter that regularises it, e.g. TAP's kappa/v).
SCALE_CASES = [(n, s) for n in NAMES for s in (1e-5, 1e5)]


@pytest.mark.parametrize(
    "name, length_scale",
    SCALE_CASES,
    ids=[f"length_scale={s:g}-{n}" for n, s in SCALE_CASES],
)
def test_extreme_fixed_length_scale(name, length_scale):
    spec = SPECS[name]
    assert_clear_error_or_sensible(
        spec,
        X,
        Y,
        names=("kernel", "length_scale") + spec.remedies,
        signal=False,
        kernel=g.RBF(length_scale=length_scale),
        **spec.fixed,
    )


ITER_CASES = [(n, v) for n in NAMES for v in (0, -1, 1.5, "10")]


@pytest.mark.parametrize(
    "name, value",
    ITER_CASES,
    ids=[f"{SPECS[n].iter_name}={v!r}-{n}" for n, v in ITER_CASES],
)
def test_iteration_budget(name, value):
    spec = SPECS[name]
    assert_clear_error_or_sensible(
        spec, X, Y, names=(spec.iter_name,), **{spec.iter_name: value}
    )


TOL_CASES = [(n, v) for n in NAMES for v in (-1.0, np.nan)]


@pytest.mark.parametrize(
    "name, value", TOL_CASES, ids=[f"tol={v}-{n}" for n, v in TOL_CASES]
)
def test_tolerance(name, value):
    assert_clear_error_or_sensible(SPECS[name], X, Y, names=("tol",), tol=value)


# -- the probe probes: deliberate defects must fail it --------------------------------------------


def _fails(check):
    with pytest.raises(AssertionError):
        check()


def test_probe_catches_defects(monkeypatch):
    spec = SPECS["Laplace"]
    # a silent constant model
    from gpc_literate import base

    with monkeypatch.context() as m:
        m.setattr(
            g.Laplace, "_predict_proba_positive", lambda self, X: np.full(len(X), 0.5)
        )
        m.setattr(
            base, "_warn_if_constant", lambda *args: None
        )  # and fit's check silenced
        _fails(lambda: assert_clear_error_or_sensible(spec, X, Y, names=("X",)))
    # a raw LinAlgError, and a ValueError that names nothing
    for err in (
        np.linalg.LinAlgError("Matrix is not positive definite"),
        ValueError("something went wrong"),
    ):
        with monkeypatch.context() as m:

            def broken(self, *args, err=err, **kwargs):
                raise err

            m.setattr(g.Laplace, "_fit_fixed", broken)
            _fails(lambda: assert_clear_error_or_sensible(spec, X, Y, names=("X",)))
    # a fit at chance level
    with monkeypatch.context() as m:
        m.setattr(
            g.Laplace,
            "_predict_proba_positive",
            lambda self, X: np.linspace(0.2, 0.8, len(X)),
        )
        _fails(lambda: assert_clear_error_or_sensible(spec, X, Y, names=("X",)))
    # converged_ True with the learned variance on the bound 2.0, the warning silenced
    assert_clear_error_or_sensible(
        spec, X, Y, names=("X",), hyperparameter_bounds=(0.5, 2.0)
    )
    with monkeypatch.context() as m:
        m.setattr(base, "_report_search", lambda *args, **kwargs: ())
        _fails(
            lambda: assert_clear_error_or_sensible(
                spec, X, Y, names=("X",), hyperparameter_bounds=(0.5, 2.0)
            )
        )
