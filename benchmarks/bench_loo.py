"""Approximate against exact leave-one-out at n = 614 (a Wisconsin training fold), in Cholesky-equivalents.

For the SVM (kernel Adatron, quadratic slack), naive mean field and TAP, with the kernel and
noise of Opper & Winther's Wisconsin experiment (chapter 11): the time of a fit without the
leave-one-out estimator, the extra time of ``compute_loo=True`` (the approximate estimator:
``lr_loo_activations`` for the SVM and ``naive_loo`` for naive mean field, timed on their own
at the fitted solution, which is steadier than the difference of two fits; TAP's estimate is
read off its solution, so its extra time is the difference of two fits and is ~0), and the
time of the exact leave-one-out error by n warm-started refits (``exact_loo_error``).
Every time is divided by the time of one Cholesky factorisation of the same 614 x 614 kernel
matrix (``common.cholesky_time``). TAP factorises a 614 x 614 matrix in every iteration, so
its exact leave-one-out time is extrapolated from ``TAP_REFITS`` warm-started refits.

Usage: python benchmarks/run.py loo
"""

import time
import warnings

import numpy as np

from common import best_time, cholesky_time
from gpc_literate import datasets
from gpc_literate.base import ConvergenceWarning
from gpc_literate.kernels import RBF
from gpc_literate.likelihoods import StepFlip
from gpc_literate.loo import exact_loo_error, lr_loo_activations
from gpc_literate.meanfield import NaiveMeanField, naive_loo
from gpc_literate.svm import KernelAdatron
from gpc_literate.tap import TAP

TAP_REFITS = 40  # refits timed for TAP's exact leave-one-out (then scaled to n)

fold = datasets.load("wisconsin").split(0)
X, y = fold.X_train, fold.y_train
n = len(y)
kernel = RBF.from_sigma2(0.15, fold.n_features)  # w_i = 1 / (0.15 N), ch. 17's sigma^2
v = 1.3
K0 = kernel(X)
K = K0 + v * np.eye(n)
t_chol = cholesky_time(K)

ESTIMATORS = {  # the settings of chapter 11
    "SVM (Adatron)": KernelAdatron(
        kernel=kernel, C=np.inf, v=v, tol=1e-3, learning_rate=1.9
    ),
    "naive MF": NaiveMeanField(kernel=kernel, kappa=0.0, v=v, tol=1e-4, optimizer=None),
    "TAP": TAP(kernel=kernel, kappa=0.0, v=v, tol=1e-5, optimizer=None),
}
LOO_ONLY = {  # what compute_loo=True adds to a fit, evaluated at a fitted solution
    "SVM (Adatron)": lambda m: lr_loo_activations(
        K0, y, m.alpha_, m.bias_, C=np.inf, v=v
    ),
    "naive MF": lambda m: naive_loo(K, y, m.alpha_, StepFlip(0.0)),
}


def timed_refits(estimator, indices):
    """Seconds for warm-started leave-one-out refits at ``indices`` (as exact_loo_error does them)."""
    full = estimator.set_params(compute_loo=False).fit(X, y)
    start = time.perf_counter()
    for i in indices:
        keep = np.arange(n) != i
        model = type(estimator)(**estimator.get_params(deep=False))
        model.fit(X[keep], y[keep], alpha_init=full.alpha_[keep])
        model.decision_function(X[i : i + 1])
    return time.perf_counter() - start


print(
    f"n = {n}, d = {X.shape[1]}; one Cholesky of the {n} x {n} kernel matrix: "
    f"{t_chol * 1e3:.1f} ms (the unit below)"
)
print(
    f"{'estimator':<15} {'iter':>5} {'fit':>9} {'approx LOO':>11} {'exact LOO':>11} "
    f"{'exact/approx':>13} {'exact/fit':>10}  {'exact [s]':>9}  note"
)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)
    for name, est in ESTIMATORS.items():
        params = est.get_params(deep=False)
        t_without = best_time(
            lambda: type(est)(**{**params, "compute_loo": False}).fit(X, y)
        )
        fitted = type(est)(**params).fit(X, y)
        n_iter = fitted.n_iter_
        if name in LOO_ONLY:
            t_approx = best_time(lambda: LOO_ONLY[name](fitted))
        else:
            t_with = best_time(
                lambda: type(est)(**{**params, "compute_loo": True}).fit(X, y)
            )
            t_approx = t_with - t_without
        # below 2% of a fit the difference is timing noise: the estimator is free (TAP)
        free = t_approx < 0.02 * t_without
        if name == "TAP":
            rng = np.random.default_rng(0)
            idx = rng.choice(n, size=TAP_REFITS, replace=False)
            t_exact = timed_refits(type(est)(**params), idx) * n / TAP_REFITS
            note = f"extrapolated from {TAP_REFITS} refits"
        else:
            start = time.perf_counter()
            res = exact_loo_error(
                type(est)(**params), X, y, warm_start=True, progress=False
            )
            t_exact = time.perf_counter() - start
            note = f"{res.n_fits} fits, {res.n_errors} errors"
        approx = "~0" if free else f"{t_approx / t_chol:.1f}"
        ratio = "free" if free else f"{t_exact / t_approx:.0f}"
        print(
            f"{name:<15} {n_iter:>5} {t_without / t_chol:>9.1f} {approx:>11} "
            f"{t_exact / t_chol:>11.0f} {ratio:>13} {t_exact / t_without:>10.0f}  "
            f"{t_exact:>9.1f}  {note}"
        )
print(
    "fit = fit without the LOO estimator, approx LOO = extra time of compute_loo=True, exact "
    "LOO = n warm-started refits, all in Cholesky-equivalents (best of 5 for the first two)"
)
