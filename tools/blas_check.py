"""Run every chapter under one BLAS configuration and compare the printed results.

A one-off diagnostic, not part of ``make test``: the book's checks must hold on a
reader's machine, whose BLAS kernel and thread count round differently from ours.
``run`` executes every chapter of ``_toc.yml`` (converted by ``tools/notebooks.py``)
with the given environment and stores the executed notebooks; ``compare`` lists,
cell by cell, the printed lines that differ between two runs and every cell that
raised (an assert that failed under one configuration but not the other).

Usage::

    OPENBLAS_CORETYPE=Prescott python tools/blas_check.py run  --out _build/blas/prescott
    python tools/blas_check.py compare _build/blas/default _build/blas/prescott
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))


def _execute(path: Path, out: Path, timeout: int) -> tuple[str, float, int]:
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    client = NotebookClient(
        nb,
        timeout=timeout,
        allow_errors=True,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    nbformat.write(nb, out / path.name)
    errors = sum(
        1
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    )
    return path.name, time.perf_counter() - start, errors


def run(out: Path, jobs: int, timeout: int) -> int:
    import notebooks

    src = out / "_src"
    notebooks.main(["--out", str(src)])
    out.mkdir(parents=True, exist_ok=True)
    paths = sorted(src.glob("*.ipynb"))
    env = {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS")}
    print("configuration:", env, flush=True)
    total_errors = 0
    with ProcessPoolExecutor(jobs) as pool:
        for name, seconds, errors in pool.map(
            _execute, paths, [out] * len(paths), [timeout] * len(paths)
        ):
            total_errors += errors
            print(f"{name:45s} {seconds:7.1f} s  {errors} failing cell(s)", flush=True)
    print(f"{len(paths)} chapters, {total_errors} failing cell(s)")
    return 1 if total_errors else 0


_NUMBER = re.compile(r"[-+]?\d+\.\d+(?:[eE][-+]?\d+)?|[-+]?\d+[eE][-+]?\d+")


def _text(cell) -> str:
    parts = []
    for o in cell.get("outputs", []):
        if o.get("output_type") == "stream" and o.get("name") == "stdout":
            parts.append(o["text"])
        elif o.get("output_type") in ("execute_result", "display_data"):
            parts.append(o.get("data", {}).get("text/plain", ""))
        elif o.get("output_type") == "error":
            parts.append(f"ERROR {o['ename']}: {o['evalue']}")
    return "".join(parts)


def _largest_change(a: str, b: str) -> float:
    """Largest relative change between the numbers of two printed lines."""
    x, y = _NUMBER.findall(a), _NUMBER.findall(b)
    if len(x) != len(y):
        return float("nan")
    worst = 0.0
    for p, q in zip(map(float, x), map(float, y)):
        worst = max(worst, abs(p - q) / max(abs(p), abs(q), 1e-300))
    return worst


def compare(first: Path, second: Path) -> int:
    changed = 0
    for path in sorted(first.glob("*.ipynb")):
        other = second / path.name
        if not other.exists():
            print(f"{path.name}: missing in {second}")
            continue
        a, b = nbformat.read(path, 4), nbformat.read(other, 4)
        cells = [
            (i, x, y)
            for i, (x, y) in enumerate(zip(a.cells, b.cells))
            if x.cell_type == "code"
        ]
        for i, x, y in cells:
            ta, tb = _text(x), _text(y)
            if ta == tb:
                continue
            changed += 1
            la, lb = ta.splitlines(), tb.splitlines()
            print(f"--- {path.name}, cell {i}")
            for line in difflib.unified_diff(la, lb, lineterm="", n=0):
                if line.startswith(("---", "+++", "")):
                    continue
                print("   ", line[:160])
            if len(la) == len(lb):
                rel = max(
                    (_largest_change(p, q) for p, q in zip(la, lb) if p != q),
                    default=0.0,
                )
                print(f"    largest relative change of a printed number: {rel:.2e}")
    print(f"{changed} cell(s) print differently")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="execute every chapter, keep the outputs")
    r.add_argument("--out", required=True, type=Path)
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--timeout", type=int, default=3600)
    c = sub.add_parser("compare", help="diff the printed outputs of two runs")
    c.add_argument("first", type=Path)
    c.add_argument("second", type=Path)
    args = parser.parse_args(argv)
    if args.command == "run":
        return run(args.out, args.jobs, args.timeout)
    return compare(args.first, args.second)


if __name__ == "__main__":
    sys.exit(main())
