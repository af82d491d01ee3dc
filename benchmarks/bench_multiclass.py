"""More than two classes: joint and binary GP classifiers against scikit-learn's, by 5-fold CV.

Every *system* is put in ``make_pipeline(StandardScaler(), model)`` with its defaults and
scored by stratified 5-fold cross-validation (``StratifiedKFold(5, shuffle=True,
random_state=0)``) on each data set: the mean over the folds of the test log loss (nats,
``sklearn.metrics.log_loss`` with every class listed) and of the error rate, and the wall-clock
seconds of ``fit`` and of ``predict_proba`` per fold (one BLAS thread unless ``--threads``).

Systems:

* ``nested-ep``: ``gpc_literate.NestedEP()`` (chapter 29), the joint multinomial probit model;
* ``softmax-laplace``: ``gpc_literate.SoftmaxLaplace()`` (chapter 28);
* ``multiclass-sep``: ``gpc_literate.MulticlassSEP(random_state=0)`` (chapter 32), the same
  likelihood on a FITC prior with a factorised posterior (200 inducing inputs, minibatches of
  min(1000, n/10), a 60-s or 100-epoch budget);
* ``ep-ovo``, ``ep-ovr``: ``gpc_literate.EP()`` with ``multi_class="one_vs_one"`` (its
  default) and ``"one_vs_rest"`` (chapter 1's reductions of binary EP);
* ``sklearn-gpc``: ``sklearn.gaussian_process.GaussianProcessClassifier()`` (binary Laplace,
  one-vs-rest); with ``kernel=None`` its kernel is 1.0 * RBF(1.0) with both hyperparameters
  *fixed*, so nothing is learned;
* ``sklearn-gpc-learned``: the same with ``kernel=ConstantKernel(1.0) * RBF(1.0)``, whose
  variance and length scale are learned by each binary problem's Laplace evidence;
* ``logistic``: ``sklearn.linear_model.LogisticRegression(max_iter=1000)``;
* ``svm-platt``: ``sklearn.svm.SVC(probability=True, random_state=0)`` (RBF kernel, Platt's
  scaling by internal 5-fold CV).

Data: iris, wine and digits from ``sklearn.datasets``; glass, ecoli, yeast, vehicle, car and
segment from ``gpc_literate.datasets.load_multiclass`` (chapter 4). satimage and letter, too
large for the full joint models, belong to the sparse benchmarks.

Results go to ``results/multiclass.json``, one record per (data set, system), written after
each; a record already there is skipped unless ``--force``, so an interrupted run resumes.

Usage::

    python benchmarks/bench_multiclass.py                       # every missing record
    python benchmarks/bench_multiclass.py --sets iris wine --systems nested-ep logistic
    python benchmarks/bench_multiclass.py --quick               # iris only, to a temp file
"""

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results" / "multiclass.json"
SETS = (
    "iris",
    "wine",
    "glass",
    "ecoli",
    "vehicle",
    "yeast",
    "car",
    "segment",
    "digits",
)
SYSTEMS = (
    "nested-ep",
    "softmax-laplace",
    "multiclass-sep",
    "ep-ovo",
    "ep-ovr",
    "sklearn-gpc",
    "sklearn-gpc-learned",
    "logistic",
    "svm-platt",
)


def load(name):
    """(X, y) of a data set by name."""
    if name in ("iris", "wine", "digits"):
        import sklearn.datasets

        return getattr(sklearn.datasets, f"load_{name}")(return_X_y=True)
    from gpc_literate.datasets import load_multiclass

    data = load_multiclass(name)
    return data.X, data.y


def make(system):
    """A fresh estimator for a system name, with its defaults."""
    if system == "nested-ep":
        from gpc_literate import NestedEP

        return NestedEP()
    if system == "softmax-laplace":
        from gpc_literate import SoftmaxLaplace

        return SoftmaxLaplace()
    if system == "multiclass-sep":
        from gpc_literate import MulticlassSEP

        return MulticlassSEP(random_state=0)
    if system in ("ep-ovo", "ep-ovr"):
        from gpc_literate import EP

        return EP(multi_class="one_vs_one" if system == "ep-ovo" else "one_vs_rest")
    if system == "sklearn-gpc":
        from sklearn.gaussian_process import GaussianProcessClassifier

        return GaussianProcessClassifier()
    if system == "sklearn-gpc-learned":
        from sklearn.gaussian_process import GaussianProcessClassifier
        from sklearn.gaussian_process.kernels import RBF, ConstantKernel

        return GaussianProcessClassifier(kernel=ConstantKernel(1.0) * RBF(1.0))
    if system == "logistic":
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(max_iter=1000)
    if system == "svm-platt":
        from sklearn.svm import SVC

        return SVC(probability=True, random_state=0)
    raise ValueError(f"unknown system {system!r}; choose from {SYSTEMS}")


def cross_validate(name, system):
    """The record of one (data set, system): per-fold log loss, error and seconds."""
    import numpy as np
    from sklearn.metrics import log_loss
    from sklearn.model_selection import StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = load(name)
    classes = np.unique(y)
    folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
    record = {"data": name, "system": system, "n": len(y), "d": X.shape[1]}
    record.update(n_classes=len(classes), log_loss=[], error=[], fit_seconds=[])
    record["predict_seconds"] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # too few members per class, convergence notes
        for train, test in folds.split(X, y):
            model = make_pipeline(StandardScaler(), make(system))
            start = time.perf_counter()
            model.fit(X[train], y[train])
            middle = time.perf_counter()
            P = model.predict_proba(X[test])
            record["fit_seconds"].append(middle - start)
            record["predict_seconds"].append(time.perf_counter() - middle)
            cols = list(model.classes_)
            full = np.zeros((len(test), len(classes)))
            full[:, [list(classes).index(c) for c in cols]] = P
            record["log_loss"].append(log_loss(y[test], full, labels=classes))
            record["error"].append(
                float(np.mean(classes[full.argmax(axis=1)] != y[test]))
            )
    record["mean_log_loss"] = float(np.mean(record["log_loss"]))
    record["mean_error"] = float(np.mean(record["error"]))
    record["mean_fit_seconds"] = float(np.mean(record["fit_seconds"]))
    return record


def environment():
    """Library versions and the machine, stored with the results."""
    import numpy
    import scipy
    import sklearn

    return {
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "sklearn": sklearn.__version__,
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "threads": os.environ.get("OPENBLAS_NUM_THREADS"),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--force", action="store_true", help="recompute existing records"
    )
    parser.add_argument(
        "--quick", action="store_true", help="iris only, to a temp file"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.sets, args.out = ["iris"], Path(tempfile.mkdtemp()) / "multiclass.json"
    store = json.loads(args.out.read_text()) if args.out.exists() else {"runs": []}
    store["environment"] = environment()
    done = {(r["data"], r["system"]) for r in store["runs"]}
    for name in args.sets:
        for system in args.systems:
            if (name, system) in done and not args.force:
                continue
            record = cross_validate(name, system)
            store["runs"] = [
                r for r in store["runs"] if (r["data"], r["system"]) != (name, system)
            ] + [record]
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(store, indent=1) + "\n")
            print(
                f"{name:8s} {system:16s} log loss {record['mean_log_loss']:.4f} "
                f"error {record['mean_error']:.4f} fit {record['mean_fit_seconds']:.1f} s",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
