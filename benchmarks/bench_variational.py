"""Seeger's variational model selection (chapter 20): cost of a full fit, and where it goes.

Data: random training sets of the twonorm task (d = 20, so the ARD kernel has 22
hyperparameters) of n = 100, 200, 400, 800 rows, the default estimator settings
(n_factors = 2, jitter 0.1). For each n and each estimator the script prints the CPU time of
one complete fit (the nested optimisation: inner L-BFGS-B over P, outer L-BFGS-B over theta),
the number of outer iterations, the time per outer iteration, and all three as multiples of
one Cholesky factorisation of the kernel matrix (CPU time, same run). The outer iteration is
bounded below by its O(n^3) part (a factorisation, L^-1 and K^-1 V K^-1), so the number to
watch is the time per outer iteration in Cholesky-equivalents, and how it changes with n.

Usage: python benchmarks/bench_variational.py [n ...]   (default 100 200 400 800)
"""

import sys
import time
import warnings

import numpy as np
from scipy.linalg import cho_factor

from common import best_cpu_time
from gpc_literate import datasets
from gpc_literate.kernels import RBF
from gpc_literate.variational import VariationalGP, VariationalSVM


def main(sizes):
    print(
        f"{'n':>5} {'estimator':>15} {'outer':>6} {'fit [s]':>8} {'fit/chol':>9} "
        f"{'per outer/chol':>15} {'chol [ms]':>10}",
        flush=True,
    )
    for n in sizes:
        data = datasets.load("twonorm", n_train=n).split(0)
        X, y = data.X_train, data.y_train
        K = RBF(np.full(X.shape[1], np.sqrt(X.shape[1])))(X) + 1e-8 * np.eye(n)
        t_chol = best_cpu_time(lambda: cho_factor(K, lower=True), repeat=7)
        for cls in (VariationalGP, VariationalSVM):
            model = cls()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start = time.process_time()
                model.fit(X, y)
                t_fit = time.process_time() - start
            ratio = t_fit / t_chol
            print(
                f"{n:>5} {cls.__name__:>15} {model.n_iter_:>6d} {t_fit:>8.1f} {ratio:>9.0f} "
                f"{ratio / max(model.n_iter_, 1):>15.0f} {1e3 * t_chol:>10.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:] if a.isdigit()] or [100, 200, 400, 800])
