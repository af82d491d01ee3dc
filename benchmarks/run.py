"""Run every benchmark script ``benchmarks/bench_*.py`` (``make benchmark``).

Benchmarks measure speed as *ratios* to a reference operation timed in the same
run (usually one Cholesky factorisation of a kernel matrix of the same size), so
the numbers mean the same on a slow or a busy machine. They are not tests: no
timing is ever asserted in the test suite.

Usage::

    python benchmarks/run.py [NAME ...]     # e.g. `kernels` runs bench_kernels.py
"""

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv):
    scripts = sorted(HERE.glob("bench_*.py"))
    if argv:
        scripts = [s for s in scripts if s.stem.removeprefix("bench_") in argv]
    for script in scripts:
        print(f"\n=== {script.name} ===", flush=True)
        sys.path.insert(0, str(HERE))
        runpy.run_path(str(script), run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
