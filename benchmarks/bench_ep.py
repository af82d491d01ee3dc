"""EP fit cost in Cholesky-equivalents on a low-rank kernel (synth) and general ones.

Three data sets: ``synth`` (Ripley-like 2-D data, RBF length-scale 0.5, variance 4: K is close
to low rank), ``twonorm`` and ``ringnorm`` (Breiman's 20-D data, RBF length-scale sqrt(20),
variance 1: K is not). For each n, one Cholesky factorisation of the kernel matrix K + 1e-8 I is timed in the
same run (the unit; best of several, before and after the fits), then converged EP fits with
fixed hyperparameters (probit likelihood, tol = 1e-8 unless stated):

* cold: from zero sites, as ``EP.fit`` does -- sequential (damping 1), parallel (damping 1),
  parallel with Anderson acceleration (also to tol = 1e-4, the looser tolerance of GPML's EP)
  and Newton-type EP, which starts from EP on a pivoted-Cholesky approximation of K when K is
  close to low rank, as here (also to tol = 1e-6, the tolerance of the chapter 18 experiments);
* cold, Newton-type EP without the start and in double precision throughout
  (``lowrank_start=False, single_precision=False``: "newton-prior"), which is what the default
  did on a general kernel before the start kept the residual diagonal, and with the start but
  in double precision throughout (``single_precision=False``: "newton-double");
* warm: at hyperparameters moved by 0.05 in every log-hyperparameter, started from the sites
  converged at the original ones (what ``log_marginal_likelihood(theta)`` does inside an
  optimiser);
* for scale, scikit-learn's GaussianProcessClassifier with the same fixed kernel (a Laplace
  approximation, not EP; its fit also evaluates the kernel, which ours receives precomputed).

Printed: sweeps or iterations (for Newton-type EP the outer iterations after the start; 0 means
the first exact marginals already passed the convergence test), the fit time in
Cholesky-equivalents (the issue's target is at most 10), the same per sweep/iteration, and the
Cholesky time in seconds. Times are CPU times
(time.process_time) of a single-threaded BLAS (run with OPENBLAS_NUM_THREADS=1, as ``make
benchmark`` does), best of several calls: on a busy machine they are much steadier than wall
times, which count the time the process waits for a core.

Usage: python benchmarks/bench_ep.py [synth|twonorm|ringnorm] [n ...] [method ...]
       (default: all data sets, n = 500 1000 2000 4000, and all of sequential, parallel,
       anderson, newton, newton-double, newton-prior, sklearn)
"""

import sys
import time
import warnings

import numpy as np

from common import best_cpu_time, cholesky_time
from gpc_literate.base import ConvergenceWarning
from gpc_literate.datasets import make_ringnorm, make_twonorm
from gpc_literate.ep_classifier import EP
from gpc_literate.ep_fast import solve_ep
from gpc_literate.kernels import RBF
from gpc_literate.likelihoods import Probit


def synth_like(n, seed=0):
    """Ripley's synth construction: each class a mixture of two Gaussians, covariance 0.03 I."""
    rng = np.random.default_rng(seed)
    means = {-1: [(-0.3, 0.7), (0.4, 0.7)], 1: [(-0.7, 0.3), (0.3, 0.3)]}
    y = np.where(rng.random(n) < 0.5, -1, 1)
    comp = rng.integers(0, 2, n)
    centres = np.array([means[c][k] for c, k in zip(y, comp)])
    return centres + np.sqrt(0.03) * rng.standard_normal((n, 2)), y


ALL = (
    "sequential",
    "parallel",
    "anderson",
    "newton",
    "newton-double",
    "newton-prior",
    "sklearn",
)
VARIANT_ARGS = {
    "newton-double": {"single_precision": False},
    "newton-prior": {"lowrank_start": False, "single_precision": False},
}
DATA = {
    "synth": (synth_like, RBF(length_scale=0.5, variance=4.0)),
    "twonorm": (
        lambda n: make_twonorm(n, random_state=n),
        RBF(length_scale=np.sqrt(20.0), variance=1.0),
    ),
    "ringnorm": (
        lambda n: make_ringnorm(n, random_state=n),
        RBF(length_scale=np.sqrt(20.0), variance=1.0),
    ),
}


def sklearn_fit_time(X, y, kernel):
    """CPU time of scikit-learn's GaussianProcessClassifier (Laplace) with the same fixed kernel."""
    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF as SkRBF, ConstantKernel

    sk_kernel = ConstantKernel(kernel.variance, "fixed") * SkRBF(
        kernel.length_scale, "fixed"
    )
    model = GaussianProcessClassifier(sk_kernel, optimizer=None)
    return best_cpu_time(lambda: model.fit(X, y), repeat=2)


def main(data_names, sizes, methods=ALL):
    likelihood = Probit(1.0)
    variants = [
        ("sequential", 1.0, "cold", 1e-8),
        ("parallel", 1.0, "cold", 1e-8),
        ("anderson", 1.0, "cold", 1e-8),
        ("anderson", 1.0, "cold", 1e-4),
        ("newton", 1.0, "cold", 1e-8),
        ("newton", 1.0, "cold", 1e-6),
        ("newton-double", 1.0, "cold", 1e-8),
        ("newton-prior", 1.0, "cold", 1e-8),
        ("sequential", 1.0, "warm", 1e-8),
        ("parallel", 1.0, "warm", 1e-8),
        ("anderson", 1.0, "warm", 1e-8),
        ("newton", 1.0, "warm", 1e-8),
    ]
    print(
        f"{'data':>8} {'n':>6} {'method':>12} {'eta':>4} {'start':>5} {'tol':>6} {'sweeps':>6} "
        f"{'fit/chol':>9} {'per sweep':>10} {'chol [s]':>9}",
        flush=True,
    )
    for name in data_names:
        make, kernel = DATA[name]
        moved = kernel.with_theta(kernel.theta + 0.05)
        for n in sizes:
            X, y = make(n)
            K = kernel(X)
            repeat = 3 if n <= 2000 else 2
            for method, eta, start, tol in variants:
                if method not in methods:
                    continue
                t_chol = cholesky_time(K, clock=time.process_time)
                ep_method, extra = (
                    (method, {})
                    if method not in VARIANT_ARGS
                    else ("newton", VARIANT_ARGS[method])
                )
                model = EP(
                    kernel if start == "cold" else moved,
                    likelihood,
                    method=ep_method,
                    damping=eta,
                    max_iter=500,
                    tol=tol,
                    optimizer=None,
                )
                fit_kw = {}
                if start == "warm":
                    first = EP(
                        kernel, likelihood, method=method, damping=eta, optimizer=None
                    ).fit(X, y)
                    fit_kw = dict(
                        site_nu_init=first.site_nu_, site_tau_init=first.site_tau_
                    )
                with warnings.catch_warnings():
                    warnings.simplefilter("error", ConvergenceWarning)
                    if extra:
                        runs = []
                        t_fit = best_cpu_time(
                            lambda: runs.append(
                                solve_ep(K, y, likelihood, tol=tol, **extra)
                            ),
                            repeat=repeat,
                        )
                        n_iter = runs[-1].n_iter
                    else:
                        t_fit = best_cpu_time(
                            lambda: model.fit(X, y, **fit_kw), repeat=repeat
                        )
                        n_iter = model.n_iter_
                t_chol = min(t_chol, cholesky_time(K, clock=time.process_time))
                ratio = t_fit / t_chol
                print(
                    f"{name:>8} {n:>6} {method:>12} {eta:>4.1f} {start:>5} {tol:>6.0e} "
                    f"{n_iter:>6d} {ratio:>9.1f} {ratio / max(n_iter, 1):>10.2f} "
                    f"{t_chol:>9.3f}",
                    flush=True,
                )
            if "sklearn" in methods:
                t_chol = cholesky_time(K, clock=time.process_time)
                ratio = sklearn_fit_time(X, y, kernel) / t_chol
                print(
                    f"{name:>8} {n:>6} {'sklearn GPC':>12} {'':>4} {'cold':>5} {'':>6} "
                    f"{'':>6} {ratio:>9.1f} {'':>10} {t_chol:>9.3f}",
                    flush=True,
                )


if __name__ == "__main__":
    args = sys.argv[1:]
    main(
        [a for a in args if a in DATA] or list(DATA),
        [int(a) for a in args if a.isdigit()] or [500, 1000, 2000, 4000],
        [a for a in args if not a.isdigit() and a not in DATA] or ALL,
    )
