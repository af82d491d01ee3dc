"""Kernel matrix and gradient cost in Cholesky-equivalents (ARD RBF, arcsin)."""

import numpy as np

from common import best_time, cholesky_time
from gpc_literate.kernels import RBF, ArcSin

rng = np.random.default_rng(0)
d = 10
print(
    f"{'n':>6} {'kernel':>8} {'K(X) / chol':>12} {'grad(X) / chol':>15} {'chol [s]':>9}"
)
for n in [500, 1000, 2000]:
    X = rng.standard_normal((n, d))
    for name, kern in [
        ("RBF-ARD", RBF(length_scale=np.ones(d), bias=0.1)),
        ("ArcSin", ArcSin(weight_variance=np.full(d, 0.1), bias_variance=0.1)),
    ]:
        K = kern(X)
        t_chol = cholesky_time(K)
        t_K = best_time(lambda: kern(X))
        t_grad = best_time(lambda: kern.gradient(X), repeat=3)
        print(
            f"{n:>6} {name:>8} {t_K / t_chol:>12.2f} {t_grad / t_chol:>15.2f} {t_chol:>9.4f}"
        )
