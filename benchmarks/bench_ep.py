"""EP fit cost in Cholesky-equivalents: sequential and parallel EP on synth-like 2-D data.

For each n, one Cholesky factorisation of the kernel matrix K + 1e-8 I is timed in the same
run (the unit; best of several, before and after the fits), then converged EP fits with fixed
hyperparameters (RBF kernel, probit likelihood, tol = 1e-8 unless stated):

* cold: from zero sites, as ``EP.fit`` does -- sequential (damping 1), parallel (damping 1),
  parallel with Anderson acceleration (also to tol = 1e-4, the looser tolerance of GPML's EP)
  and Newton-type EP, which starts from EP on a pivoted-Cholesky approximation of K when K is
  close to low rank, as here (also to tol = 1e-6, the tolerance of the chapter 18 experiments);
* warm: at hyperparameters moved by 0.05 in every log-hyperparameter, started from the sites
  converged at the original ones (what ``log_marginal_likelihood(theta)`` does inside an
  optimiser).

Printed: sweeps or iterations (for Newton-type EP the outer iterations after the start; 0 means
the first exact marginals already passed the convergence test), the fit time in
Cholesky-equivalents (the issue's target is at most 10), the same per sweep/iteration, and the
Cholesky time in seconds. Times are CPU times
(time.process_time) of a single-threaded BLAS (run with OPENBLAS_NUM_THREADS=1, as ``make
benchmark`` does), best of several calls: on a busy machine they are much steadier than wall
times, which count the time the process waits for a core.

Usage: python benchmarks/bench_ep.py [n ...] [method ...]
       (default 500 1000 2000 4000 and all of sequential, parallel, anderson, newton)
"""
import sys
import time
import warnings

import numpy as np

from common import best_cpu_time, cholesky_time
from gpc_literate.base import ConvergenceWarning
from gpc_literate.ep_classifier import EP
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


ALL = ("sequential", "parallel", "anderson", "newton")


def main(sizes, methods=ALL):
    kernel, likelihood = RBF(length_scale=0.5, variance=4.0), Probit(1.0)
    moved = kernel.with_theta(kernel.theta + 0.05)
    variants = [("sequential", 1.0, "cold", 1e-8), ("parallel", 1.0, "cold", 1e-8),
                ("anderson", 1.0, "cold", 1e-8), ("anderson", 1.0, "cold", 1e-4),
                ("newton", 1.0, "cold", 1e-8), ("newton", 1.0, "cold", 1e-6),
                ("sequential", 1.0, "warm", 1e-8), ("parallel", 1.0, "warm", 1e-8),
                ("anderson", 1.0, "warm", 1e-8), ("newton", 1.0, "warm", 1e-8)]
    print(f"{'n':>6} {'method':>10} {'eta':>4} {'start':>5} {'tol':>6} {'sweeps':>6} "
          f"{'fit/chol':>9} {'per sweep':>10} {'chol [s]':>9}", flush=True)
    for n in sizes:
        X, y = synth_like(n)
        K = kernel(X)
        repeat = 3 if n <= 2000 else 2
        for method, eta, start, tol in variants:
            if method not in methods:
                continue
            t_chol = cholesky_time(K, clock=time.process_time)
            model = EP(kernel if start == "cold" else moved, likelihood, method=method,
                       damping=eta, max_sweeps=500, tol=tol, optimizer=None)
            fit_kw = {}
            if start == "warm":
                first = EP(kernel, likelihood, method=method, damping=eta, optimizer=None).fit(X, y)
                fit_kw = dict(site_nu_init=first.site_nu_, site_tau_init=first.site_tau_)
            with warnings.catch_warnings():
                warnings.simplefilter("error", ConvergenceWarning)
                t_fit = best_cpu_time(lambda: model.fit(X, y, **fit_kw), repeat=repeat)
            t_chol = min(t_chol, cholesky_time(K, clock=time.process_time))
            ratio = t_fit / t_chol
            print(f"{n:>6} {method:>10} {eta:>4.1f} {start:>5} {tol:>6.0e} {model.n_iter_:>6d} "
                  f"{ratio:>9.1f} "
                  f"{ratio / max(model.n_iter_, 1):>10.2f} {t_chol:>9.3f}", flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:] if a.isdigit()] or [500, 1000, 2000, 4000],
         [a for a in sys.argv[1:] if not a.isdigit()] or ALL)
