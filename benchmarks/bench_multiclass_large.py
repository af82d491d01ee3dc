"""More than two classes against the clock: MulticlassSEP, GPflow's SVGP and an SVM.

Each *system* trains a multi-class classifier on the training part of a real data set
and is scored on its test part at checkpoints of wall-clock training time (0, 2, 5, 10,
20, 30, 45, 60, 90, 120, 180, 240, 300 s and the budget):

* test error: the fraction of test points whose most probable class is wrong;
* test log loss (stored as ``nlp``): the mean of -log p(y_test | x_test) in nats, with each
  probability clipped below at the smallest normal float64 (``n_clipped`` counts where that
  acted).

Data (``gpc_literate.datasets.load_multiclass``), the sources' own training/test split:

* ``letter``: 20,000 images of the 26 capital letters, 16 integer features; the first
  16,000 rows train, the last 4,000 test (UCI's suggested split);
* ``satimage``: 6,435 pixel neighbourhoods, 36 features, 6 classes; sat.trn's 4,435 rows
  train, sat.tst's 2,000 test.

The inputs are standardised with the training part's mean and standard deviation, for every
system alike. Classes are coded 0..C-1 in sorted order of their names.

Systems (their settings are stored in each record):

* ``ours-msep``: ``gpc_literate.multiclass_sep.MulticlassSEP`` (book chapter 32) with its
  defaults (tied sites, ARD RBF kernel scaled to the data, M = 200 inducing inputs at
  k-means++ centres, minibatches of 1,000, Adam at 0.05 on the log-hyperparameters and 0.01
  on the inducing inputs, decaying to 10 % over the budget) and ``max_time`` = the budget,
  ``blas_threads`` = the threads of the run. Its clock includes the k-means start.
* ``gpflow-svgp-robustmax``: ``gpflow.models.SVGP`` with C latent GPs sharing one
  squared-exponential ARD kernel (length scale sqrt(d) in every input, variance 1) and M
  inducing inputs at a random subset of the training inputs, whitened, ``num_data=n``,
  ``gpflow.likelihoods.MultiClass(C)`` (robust-max, epsilon 1e-3; its expected
  log-likelihood by Gauss-Hermite quadrature), minibatches of 1,000 from a shuffled
  ``tf.data`` stream, ``tf_keras`` Adam at 0.01 over q(u), kernel and inducing inputs, in a
  ``tf.function`` step (as GPflow's SVGP notebook); ``predict_y`` for the probabilities.
* ``gpflow-svgp-softmax``: the same with ``gpflow.likelihoods.Softmax(C)`` (Monte Carlo
  expected log-likelihood and predictive, 100 samples, GPflow's default).
* ``svm-platt``: scikit-learn's ``SVC(probability=True)`` with its defaults (RBF kernel,
  gamma "scale", C = 1; one-vs-one SVMs coupled by Wu, Lin & Weng's method, Platt's scaling by
  internal 5-fold cross-validation), trained once; its time is the fit's.

The harness (checkpoints with the clock paused while scoring, one subprocess per
configuration, thread settings, peak memory, the record's machine, versions and commit) is
``bench_large_n.py``'s. ``ours-msep`` and ``svm-platt`` run with the project's interpreter
(``--ours-python``), the GPflow systems with the one that runs this script: the peers'
virtualenv of ``benchmarks/README.md``. Records go to ``--out`` (default
``results/multiclass_large.json``) as ``{"runs": {id: record}}``; a configuration already
there is skipped unless ``--force``.

Reduced, deterministic runs (``--epochs E``; ``ours-msep`` and ``svm-platt`` only): the
model trains for E passes over the data instead of a time budget, so that the scores depend
only on code, data, seed and rounding. Chapter 32 recomputes such a record.

Usage: python benchmarks/bench_multiclass_large.py [--systems ...] [--datasets letter satimage]
           [--inducing 200] [--budget 60 300] [--seed 0] [--threads 2] [--epochs E]
           [--out results/multiclass_large.json] [--force] [--quick]
       --quick: satimage, budget 5 s, a temporary file (what ``make benchmark`` runs).
"""

import argparse
import importlib
import importlib.util
import json
import os
import resource
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import bench_large_n as harness  # noqa: E402

from gpc_literate.datasets import load_multiclass  # noqa: E402

BATCH_SIZE, LEARNING_RATE = harness.BATCH_SIZE, harness.LEARNING_RATE
DATASETS = ("letter", "satimage")
OURS_SYSTEMS = ("ours-msep", "svm-platt")  # run with the project's interpreter
EXIT_IMPORT = harness.EXIT_IMPORT
TINY = np.finfo(np.float64).tiny


def score_multiclass(P, y):
    """Test error, mean log loss (nats) and clip count for probabilities P (n, C), codes y."""
    P = np.asarray(P, dtype=np.float64)
    if P.shape != (len(y), P.shape[-1]) or not np.all(np.isfinite(P)):
        return {"error": None, "nlp": None, "n_clipped": None}
    p_true = P[np.arange(len(y)), y]
    clipped = np.maximum(p_true, TINY)
    return {
        "error": float(np.mean(np.argmax(P, axis=1) != y)),
        "nlp": float(-np.mean(np.log(clipped))),
        "n_clipped": int(np.count_nonzero(clipped != p_true)),
    }


def make_data(dataset):
    """The source's training and test parts, standardised by the training part, codes 0..C-1."""
    data = load_multiclass(dataset)
    n = data.n_train_source
    codes = np.searchsorted(data.classes, data.y)
    X_train, X_test = data.X[:n], data.X[n:]
    mean, std = X_train.mean(axis=0), X_train.std(axis=0)
    std[std == 0] = 1.0
    return (X_train - mean) / std, codes[:n], (X_test - mean) / std, codes[n:]


SYSTEMS = {}


def register(name, modules, distributions=None, settings=None, epochs=False):
    """Decorator: add ``train(X, y, C, M, seed, threads, checkpoint)`` as ``name``."""

    def decorate(train):
        SYSTEMS[name] = harness.System(
            train,
            tuple(modules),
            tuple(modules if distributions is None else distributions),
            dict(settings or {}),
            bool(epochs),
        )
        return train

    return decorate


@register(
    "ours-msep",
    modules=("gpc_literate.multiclass_sep",),
    distributions=("gpc_literate", "scikit-learn", "threadpoolctl"),
    settings={
        "estimator": "MulticlassSEP(n_inducing=M, max_time=budget, random_state=seed, "
        "blas_threads=threads); every other parameter its default",
        "dtype": "float64",
    },
    epochs=True,
)
def train_ours_msep(X, y, C, M, seed, threads, checkpoint):
    """MulticlassSEP with its defaults, for the budget or for checkpoint.epochs."""
    from gpc_literate.multiclass_sep import MulticlassSEP

    if checkpoint.epochs is None:
        limits = {"max_time": checkpoint.budget}
    else:
        limits = {"max_time": None, "max_iter": checkpoint.epochs}
    model = MulticlassSEP(
        n_inducing=M, random_state=seed, blas_threads=threads, **limits
    )

    def callback(state, seconds):
        return checkpoint(state.predict_proba, state.t)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a ConvergenceWarning at a short budget
        model.fit(X, y, callback=callback)
    checkpoint.steps = int(model.n_batches_)
    checkpoint.settings["fitted"] = {
        "theta": [float(t) for t in model.kernel_.theta],
        "n_epochs": float(model.n_iter_),
        "kernel": repr(model.kernel_),
    }
    return model.predict_proba


@register(
    "svm-platt",
    modules=("sklearn.svm",),
    distributions=("scikit-learn",),
    settings={
        "estimator": "sklearn.svm.SVC(probability=True, random_state=seed); RBF, "
        "gamma='scale', C=1 (defaults)"
    },
    epochs=True,
)
def train_svm_platt(X, y, C, M, seed, threads, checkpoint):
    """An RBF SVM with Platt's scaling, trained once (its time is the fit's)."""
    from sklearn.svm import SVC

    with warnings.catch_warnings():
        # scikit-learn 1.9 deprecates probability=True for CalibratedClassifierCV, which
        # calibrates one-vs-rest scores; chapter 31's SVM is libsvm's coupled Platt model
        warnings.simplefilter("ignore", FutureWarning)
        model = SVC(probability=True, random_state=seed).fit(X, y)
    checkpoint.steps = 1
    checkpoint.settings["n_support_vectors"] = int(model.n_support_.sum())
    return model.predict_proba


def gpflow_svgp(likelihood_name, X, y, C, M, seed, threads, checkpoint):
    """GPflow's SVGP with C latent GPs and ``likelihood_name``, minibatch Adam to the budget."""
    import gpflow

    harness.gpflow_start(threads, seed)
    n, d = X.shape
    kernel = gpflow.kernels.SquaredExponential(
        variance=1.0, lengthscales=np.full(d, np.sqrt(d))
    )
    if likelihood_name == "robustmax":
        likelihood = gpflow.likelihoods.MultiClass(C)
    else:
        likelihood = gpflow.likelihoods.Softmax(C)
    model = gpflow.models.SVGP(
        kernel,
        likelihood,
        harness.initial_inducing(X, M, seed),
        num_latent_gps=C,
        num_data=n,
        whiten=True,
    )

    def predict_proba(Xs):
        return np.concatenate(
            [
                model.predict_y(Xs[i : i + 2000])[0].numpy()
                for i in range(0, len(Xs), 2000)
            ]
        )

    Y = y.astype(np.int64)[:, None]
    return harness.gpflow_adam(model, X, Y, seed, checkpoint, predict_proba)


GPFLOW = {
    "kernel": "squared exponential, ARD, shared by the C latent GPs",
    "kernel_init": "length scale sqrt(d) in every input, variance 1",
    "inducing_init": "random subset of the training inputs, shared",
    "whitened": True,
    "learned": "q(u), kernel hyperparameters, inducing inputs",
    "optimizer": "Adam (tf_keras)",
    "learning_rate": LEARNING_RATE,
    "batch_size": BATCH_SIZE,
    "dtype": "float64",
}
GPFLOW_DISTRIBUTIONS = ("gpflow", "tensorflow", "tensorflow-probability", "tf-keras")


@register(
    "gpflow-svgp-robustmax",
    modules=("tensorflow", "gpflow"),
    distributions=GPFLOW_DISTRIBUTIONS,
    settings={**GPFLOW, "likelihood": "gpflow.likelihoods.MultiClass(C) (robust-max)"},
)
def train_gpflow_robustmax(X, y, C, M, seed, threads, checkpoint):
    return gpflow_svgp("robustmax", X, y, C, M, seed, threads, checkpoint)


@register(
    "gpflow-svgp-softmax",
    modules=("tensorflow", "gpflow"),
    distributions=GPFLOW_DISTRIBUTIONS,
    settings={**GPFLOW, "likelihood": "gpflow.likelihoods.Softmax(C) (Monte Carlo)"},
)
def train_gpflow_softmax(X, y, C, M, seed, threads, checkpoint):
    return gpflow_svgp("softmax", X, y, C, M, seed, threads, checkpoint)


def child_main(spec_path):
    """Inside the subprocess: import, read the data, train, write the record."""
    spec = json.loads(Path(spec_path).read_text())
    system = SYSTEMS[spec["system"]]
    t = time.perf_counter()
    try:
        for module in system.modules:
            importlib.import_module(module)
    except Exception as exc:  # ImportError, or a library broken at import
        print(f"{spec['system']}: cannot import ({exc})", file=sys.stderr, flush=True)
        return EXIT_IMPORT
    import_seconds = time.perf_counter() - t
    X, y, X_test, y_test = make_data(spec["dataset"])
    C = int(max(y.max(), y_test.max()) + 1)
    checkpoint = harness.Checkpoint(
        X_test,
        y_test,
        spec["budget"],
        label=spec["system"],
        epochs=spec.get("epochs"),
        score=score_multiclass,
    )
    checkpoint.start()
    predict_proba = system.train(
        X, y, C, spec["M"], spec["seed"], spec["threads"], checkpoint
    )
    if not checkpoint.done:  # the system stopped before the budget
        checkpoint.evaluate(predict_proba, checkpoint.steps)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = {
        "n_train": len(y),
        "n_test": len(y_test),
        "n_classes": C,
        "checkpoints": checkpoint.records,
        "final": checkpoint.records[-1],
        "training_seconds": checkpoint.records[-1]["seconds"],
        "import_seconds": round(import_seconds, 2),
        "peak_memory_mb": round(peak_mb, 1),
        "settings": {**system.settings, **checkpoint.settings},
        "versions": harness.versions((*system.distributions, "numpy", "scipy")),
    }
    Path(spec["result_path"]).write_text(json.dumps(result))
    return 0


def run_id(system, dataset, M, budget, seed, threads, epochs=None):
    """The key of a configuration in the results file; ``epochs`` replaces the budget."""
    limit = f"budget={budget:g}" if epochs is None else f"epochs={epochs:g}"
    return f"{system}|{dataset}|M={M}|{limit}|seed={seed}|threads={threads}"


def run_system(spec):
    """One configuration in a subprocess (bench_large_n's harness): its record, or None."""
    keys = ("system", "dataset", "M", "budget", "seed", "threads", "python")
    return harness.run_system(spec, script=__file__, keys=keys, extra={})


def load_results(path):
    if path.exists():
        return json.loads(path.read_text())
    return {
        "description": "bench_multiclass_large.py: test error and log loss against "
        "training time; see the docstring of benchmarks/bench_multiclass_large.py",
        "runs": {},
    }


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--systems", nargs="+", default=list(SYSTEMS), choices=list(SYSTEMS)
    )
    parser.add_argument(
        "--datasets", nargs="+", default=list(DATASETS), choices=DATASETS
    )
    parser.add_argument("--inducing", nargs="+", type=int, default=[200])
    parser.add_argument("--budget", nargs="+", type=float, default=[60.0, 300.0])
    parser.add_argument("--epochs", type=float, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--out", type=Path, default=HERE.parent / "results" / "multiclass_large.json"
    )
    parser.add_argument("--force", action="store_true")
    own = HERE.parent / ".venv" / "bin" / "python"
    parser.add_argument(
        "--ours-python", default=str(own) if own.exists() else sys.executable
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.datasets, args.budget, args.force = ["satimage"], [5.0], True
        args.out = Path(tempfile.gettempdir()) / "multiclass_large_quick.json"
    if args.epochs is not None:
        unable = [s for s in args.systems if not SYSTEMS[s].epochs]
        if unable:
            parser.error(
                f"--epochs: {', '.join(unable)} train under a time budget only"
            )
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        return child_main(args.child)
    info = harness.machine()
    print(
        f"{info['cpu_model']}, {info['cpu_count']} cores; load "
        f"{os.getloadavg()[0]:.2f}; {args.threads} threads; out: {args.out}",
        flush=True,
    )
    for dataset in args.datasets:
        for M in args.inducing:
            for budget in [None] if args.epochs is not None else args.budget:
                for system in args.systems:
                    if system == "svm-platt" and budget not in (None, args.budget[0]):
                        continue  # trained once: no budget
                    ours = system in OURS_SYSTEMS
                    python = args.ours_python if ours else sys.executable
                    if not ours and any(
                        importlib.util.find_spec(m) is None
                        for m in SYSTEMS[system].modules
                    ):
                        print(f"skipping {system}: not importable by {python}")
                        continue
                    key = run_id(
                        system, dataset, M, budget, args.seed, args.threads, args.epochs
                    )
                    results = load_results(args.out)
                    if key in results["runs"] and not args.force:
                        print(f"{key}: in {args.out}; skipped (--force reruns)")
                        continue
                    print(f"{key}: training", flush=True)
                    record = run_system(
                        {
                            "system": system,
                            "dataset": dataset,
                            "M": M,
                            "budget": budget,
                            "epochs": args.epochs,
                            "seed": args.seed,
                            "threads": args.threads,
                            "python": python,
                        }
                    )
                    if record is None:
                        continue
                    results = load_results(args.out)
                    results["runs"][key] = record
                    harness.save_results(results, args.out)
                    final = record["final"]
                    print(
                        f"{key}: error {final['error']}, log loss {final['nlp']}, "
                        f"{record['training_seconds']} s, peak "
                        f"{record['peak_memory_mb']:.0f} MB",
                        flush=True,
                    )
    return 0


if __name__ == "__main__":
    by_run_py = any(Path(arg).name == "run.py" for arg in sys.orig_argv)
    sys.exit(main(["--quick"] if by_run_py else None))
