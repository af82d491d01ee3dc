"""Laplace approximation (chapter 12): a converged fit and the evidence gradient in Cholesky-equivalents.

Data are drawn like Ripley's synth set (two classes, each a mixture of two Gaussians with
covariance 0.03 I, in the plane); the kernel is RBF(length_scale=0.5, variance=10) with fixed
hyperparameters and the probit likelihood (v = 1). The unit is one Cholesky factorisation of
the same kernel matrix, timed in the same run (common.cholesky_time). A fit computes K, runs
Newton's method to tol = 1e-8 (one Cholesky of B per iterate) and the evidence; the target is
at most 20 Cholesky-equivalents per fit. The gradient computes K, dK/dtheta, B^{-1} (potri) and
L^{-1} W^1/2 K at the fitted mode, then O(n^2) per hyperparameter.

Wall-clock ratios (common.best_time, common.cholesky_time) are printed first; on a shared,
oversubscribed machine they scatter, most for the short timings at small n, so the ratios of
CPU time (time.process_time; meaningful with one BLAS thread, as `make benchmark` sets) are
printed beside them.
"""

import numpy as np
from scipy.linalg import cho_factor

from common import best_cpu_time, best_time, cholesky_time
from gpc_literate.kernels import RBF
from gpc_literate.laplace import Laplace
from gpc_literate.likelihoods import Probit

CENTRES = {
    -1: np.array([[-0.7, 0.3], [0.3, 0.3]]),
    1: np.array([[-0.3, 0.7], [0.4, 0.7]]),
}


def synth_like(n, rng):
    """n points drawn like Ripley's synth data: labels +-1, each class a two-Gaussian mixture."""
    y = rng.choice([-1, 1], size=n)
    component = rng.integers(0, 2, size=n)
    means = np.where((y == 1)[:, None], CENTRES[1][component], CENTRES[-1][component])
    return means + np.sqrt(0.03) * rng.standard_normal((n, 2)), y


rng = np.random.default_rng(0)
kernel = RBF(length_scale=0.5, variance=10.0)
print(f"{'':>14}{'wall clock':^36}{'CPU time':^26}")
print(
    f"{'n':>6} {'Newton':>7} {'fit/chol':>9} {'per iterate':>12} {'grad/chol':>10} {'chol [s]':>9}"
    f" {'fit/chol':>9} {'per iterate':>12} {'grad/chol':>10}"
)
worst = {"wall": 0.0, "cpu": 0.0}
for n in [500, 1000, 2000, 4000]:
    X, y = synth_like(n, rng)
    K = kernel(X)
    A = K + 1e-8 * np.eye(n)  # what common.cholesky_time factorises
    clf = Laplace(kernel, Probit(1.0), optimizer=None)

    def fit():
        clf.fit(X, y)

    def grad():
        clf.log_marginal_likelihood(eval_gradient=True)

    # interleave the timings, so that a burst of load on a shared machine hits all alike
    wall = dict(chol=np.inf, fit=np.inf, grad=np.inf)
    cpu = dict(chol=np.inf, fit=np.inf, grad=np.inf)
    for _ in range(15 if n <= 1000 else 5 if n < 4000 else 3):
        wall["chol"] = min(wall["chol"], cholesky_time(K, repeat=1))
        wall["fit"] = min(wall["fit"], best_time(fit, repeat=1))
        wall["grad"] = min(wall["grad"], best_time(grad, repeat=1))
        cpu["chol"] = min(
            cpu["chol"], best_cpu_time(lambda: cho_factor(A, lower=True), 1)
        )
        cpu["fit"] = min(cpu["fit"], best_cpu_time(fit, 1))
        cpu["grad"] = min(cpu["grad"], best_cpu_time(grad, 1))
    assert clf.converged_
    cols = []
    for kind, t in (("wall", wall), ("cpu", cpu)):
        worst[kind] = max(worst[kind], t["fit"] / t["chol"])
        cols.append(
            f"{t['fit'] / t['chol']:>9.1f} {t['fit'] / t['chol'] / (clf.n_iter_ + 1):>12.2f} "
            f"{t['grad'] / t['chol']:>10.1f}"
        )
    print(
        f"{n:>6} {clf.n_iter_:>7} {cols[0]} {wall['chol']:>9.4f} {cols[1]}", flush=True
    )
print(
    f"target: a fit within 20 Cholesky-equivalents; worst here {worst['wall']:.1f} (wall clock), "
    f"{worst['cpu']:.1f} (CPU time)"
)
