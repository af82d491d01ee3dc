"""Timing helpers shared by the benchmark scripts."""
import time

import numpy as np
from scipy.linalg import cho_factor


def best_time(fn, repeat=5):
    """Best wall-clock time of ``fn()`` over ``repeat`` calls, in seconds."""
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def cholesky_time(K, repeat=5):
    """Time of one Cholesky factorisation of K + 1e-8 I: the unit of our ratios."""
    A = K + 1e-8 * np.eye(len(K))
    return best_time(lambda: cho_factor(A, lower=True), repeat)
