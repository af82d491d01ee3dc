"""Timing helpers shared by the benchmark scripts."""

import time

import numpy as np
from scipy.linalg import cho_factor


def best_time(fn, repeat=5, clock=time.perf_counter):
    """Best time of ``fn()`` over ``repeat`` calls, in seconds (wall clock by default)."""
    best = np.inf
    for _ in range(repeat):
        start = clock()
        fn()
        best = min(best, clock() - start)
    return best


def best_cpu_time(fn, repeat=5):
    """Best CPU time (time.process_time) of ``fn()``: steadier than wall time on a busy machine."""
    return best_time(fn, repeat, clock=time.process_time)


def cholesky_time(K, repeat=5, clock=time.perf_counter):
    """Time of one Cholesky factorisation of K + 1e-8 I: the unit of our ratios."""
    A = K + 1e-8 * np.eye(len(K))
    return best_time(lambda: cho_factor(A, lower=True), repeat, clock=clock)
