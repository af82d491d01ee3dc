"""Large-n classification against the clock: sparse and stochastic EP and SVGP.

Each *system* trains a GP classifier on n = 100,000 points of twonorm or ringnorm
(``gpc_literate.datasets.make_twonorm`` / ``make_ringnorm``, 20 inputs) or of the NYC 2013
flight delays (``load_flights``: 8 standardised inputs, its own fixed split, at most 223,853
training points) under a budget of wall-clock *training* time, and is scored on a separate
test set of 10,000 points at checkpoints (0, 2, 5, 10, 20, 30, 45, 60, 90, 120, 180, 240,
300, ... s and at the budget):

* test error: the fraction of test points whose predicted label, +1 iff P(y = +1 | x) > 1/2,
  is wrong;
* test NLP: the mean of -log p(y_test | x_test) in nats, with the predictive probabilities
  clipped to [tiny, 1 - 2**-53] (tiny = the smallest normal float64), which is only as far as
  needed to avoid log 0; ``n_clipped`` counts the test points where that clipping acted.

The clock is paused while a checkpoint evaluates, so ``seconds`` is training time. It is wall
time (``time.perf_counter``) and includes model construction, the first-step overheads such as
TensorFlow's graph tracing, and any wait for a core; ``cpu_seconds`` (``time.process_time``,
all threads of the process, evaluations excluded) is stored beside it. Library imports come
before the clock starts (``import_seconds``). The floor is the Bayes rule
(``gpc_literate.datasets.bayes_proba``) scored on the same test set.

Data: the training set is drawn with a fixed seed per data set (twonorm 101, ringnorm 201),
the test set with another (102, 202); ``--seed`` (default 0) seeds only the systems (inducing
inputs, minibatch order).

Systems (every setting is stored in each record under ``settings``):

* ``gpflow-svgp``: ``gpflow.models.SVGP`` (Hensman, Matthews & Ghahramani 2015) as in GPflow's
  "Stochastic Variational Inference for scalability with SVGP" notebook: whitened q(u)
  (``whiten=True``, the default), ``num_data=n``, a shuffled, repeated ``tf.data`` stream of
  minibatches of 1,000, ``training_loss_closure(..., compile=True)`` and a ``tf.function``
  step of ``tf_keras.optimizers.Adam`` (via ``gpflow.keras``) over all trainable variables:
  q(u), kernel hyperparameters and inducing inputs. Likelihood ``gpflow.likelihoods.Bernoulli()``
  with its default link ``inv_probit``, which is 1e-3 + 0.998 Phi(f) (GPflow's jitter keeps it
  inside (0, 1)); predictive ``predict_y``. Float64 (GPflow's default).
* ``gpytorch-svgp``: ``gpytorch.models.ApproximateGP`` with ``CholeskyVariationalDistribution``
  and the whitened ``VariationalStrategy(..., learn_inducing_locations=True)``, as in GPyTorch's
  "Stochastic Variational GP Regression" example, with ``BernoulliLikelihood`` (probit, Phi(f)),
  ``VariationalELBO(num_data=n)``, a shuffled ``DataLoader`` of minibatches of 1,000 and
  ``torch.optim.Adam`` over all parameters. Float32 (GPyTorch's default). The predictive
  probability is GPyTorch's ``BernoulliLikelihood.marginal`` formula Phi(mu / sqrt(1 + var)),
  evaluated in float64 from the float32 latent mean and variance, so that float32 rounding of
  P to exactly 0 or 1 does not decide the NLP.

* ``ours-ep-fixed``: chapter 15's full ``EP`` at the data-scaled ARD kernel, held fixed (a
  search of it needs the evidence and its gradient at every step; the time of one such
  evaluation is stored, outside the training time, under ``settings.fitted``). Scored once,
  when its fit returns, whatever the budget.
* ``ours-sep-defaults``: ``StochasticEP`` with its defaults (the ARD kernel scaled to the
  data, ``ard_default_kernel``) but M, the budget (``max_time``) and the seed.
* ``ours-sparse-a1``, ``ours-sparse-a0.5``, ``ours-sparse-a0.1``, ``ours-sparse-a0.01``:
  ``gpc_literate.sparse_ep.SparseEP`` (chapters 25 and 26) with its defaults (ARD kernel scaled to the data, pivoted-Cholesky inducing inputs,
  ``optimizer="auto"``: from 20,000 points with alpha = 1 the kernel and inducing inputs by
  stochastic EP's minibatch Adam and then one EP run, else L-BFGS-B on the evidence with the
  inducing inputs fixed) and ``max_time`` = the budget, power ``alpha`` 1 (EP) or 0.5, 0.1,
  0.01 (power EP). It is scored once, when its fit returns: the search stops early enough to leave time
  for the final EP run, by an estimate, so its training time can exceed the budget;
  ``seconds`` says by how much.
* ``ours-sep``: ``gpc_literate.stochastic_ep.StochasticEP`` (book chapter 26): stochastic EP
  with one tied site on the FITC prior in whitened coordinates, M inducing inputs started at
  k-means++ centres of 5,000 random training inputs, minibatches of 1,000, Adam on the kernel
  hyperparameters (rate 0.05) and the inducing inputs (0.01), both decaying to 10 % over the
  budget, one BLAS thread (its default) in one process (``n_jobs=1``: the method on one core
  against the peers' two threads), float64, probit likelihood; the same kernel and start
  as the peers. ``ours-sep-iso``: the same with one length scale for all inputs. They run in
  the project's own environment (``--ours-python``, default ``.venv/bin/python`` when it
  exists), the peers in theirs: each system with the numpy and BLAS it is installed with.

Both: zero prior mean; squared-exponential ARD kernel initialised at length scale sqrt(20) in
every input and variance 1; the same M inducing inputs initialised at a random subset of the
training inputs (``initial_inducing``); Adam with learning rate 0.01 (GPyTorch's SVGP example and
GPflow's natural-gradients notebook use 0.01; GPflow's big-data notebook uses Keras' default
0.001) and minibatches of 1,000 (GPyTorch's example uses 1,024, GPflow's 100). Expected
log-likelihoods by Gauss-Hermite quadrature in both libraries (their defaults).

Threads: the machine has 2 cores; by default (``--threads 2``) each child gets
OMP/MKL/OPENBLAS_NUM_THREADS=2, TF_NUM_INTRAOP_THREADS=2, TF_NUM_INTEROP_THREADS=2 in its
environment, and sets ``tf.config.threading`` intra/inter-op to 2 and ``torch.set_num_threads(2)``.
Other work on the machine slows the wall clock: each record stores ``os.getloadavg()`` before
and after the run and the CPU model and core count. When the cores are shared, PyTorch's
two OpenMP threads can wait for each other for a scheduler time slice in every parallel
region, and whole stretches of training then run at about one step per second with
``cpu_seconds`` close to ``seconds``; ``--threads 1`` measures without that effect.

Reduced, deterministic runs (``--epochs E``, or the preset ``--reduced``): instead of a time
budget, a system trains for E passes over the training set, so that its final scores depend
only on the code, the data, the seed and rounding, not on how fast the machine is; they are
stored with ``budget`` null and ``epochs`` E. Only the ``ours-*`` systems support it
(StochasticEP's ``max_iter`` with ``max_time=None``; the rates then decay over the epochs).
``--reduced`` is n = 10,000, n_test = 10,000, M = 200, 5 epochs, one thread, the ``ours-*``
systems on both data sets: chapter 26 runs it again and compares its final scores with the
records of the same configuration in ``results/large_n.json``.

Each configuration (system, data set, n, M, budget or epochs, seed, threads) runs in its own
subprocess (``sys.executable``), one at a time, so that its peak resident memory (``ru_maxrss``
of the child, in MB; it includes the library imports and the data) is its own. The worker
process of ``ours-sep-defaults`` (``n_jobs`` = 2) is not in it: forked, it shares the data and
the libraries with the child, and its own memory is its minibatches' arrays (37 MB of private
memory at n = 10^6, read once from /proc/<pid>/smaps_rollup during a run). Records are
written to ``--out`` (default ``results/large_n.json``), and the per-point test NLP of each
run's final predictions (float32, for differences paired over the test points) to
``<out stem>_points/<run id>.npz`` beside it (``points_file`` in the record):
``{"floors": {id: ...}, "runs": {id: record}}``, rewritten atomically (temporary file +
``os.replace``) after every run. A configuration already present is skipped unless
``--force``: an interrupted sweep resumes where it stopped. A system whose library cannot be
imported by this Python is skipped with a message.

Adding a system (e.g. ``ours-...``): write in this file one function::

    @register("ours-sep", modules=("gpc_literate",), settings={"method": "..."})
    def train_ours_sep(X, y, X_test, y_test, budget, M, seed, checkpoint):
        model = ...                              # X (n, d) float64, y (n,) float64 in {-1, +1}
        while checkpoint(model.predict_proba_positive, steps=k):   # False once budget is spent
            ...                                  # one unit of work, well under a second
        return model.predict_proba_positive      # the final predictor

``predict_proba(X_test)`` returns P(y = +1 | x) for each test row, shape (n_test,). Call
``checkpoint`` at least every half second of training; it evaluates the predictor only when a
checkpoint time has passed (clock paused) and returns False at the budget, which it also
scores. A system that finishes early just returns its predictor: the harness scores it then.
``X_test`` is there for test-side precomputation; ``y_test`` is for the harness only and must
not be used by a system. ``checkpoint.elapsed()``, ``checkpoint.budget`` and
``checkpoint.settings`` (a dict stored in the record) are available. ``modules`` are imported
before the clock starts, and their versions (and those of ``distributions``) are stored.
A system that supports ``--epochs`` is registered with ``epochs=True`` and reads
``checkpoint.epochs`` (None under a time budget); ``checkpoint.budget`` is then infinite, and
the system sets ``checkpoint.steps`` to the number of minibatches it took for the final score.

Every record carries ``version`` (gpc_literate's) and ``commit`` (``git rev-parse HEAD``) with
``git_dirty`` (uncommitted changes under benchmarks/ or gpc_literate/ when it ran).

The peers' virtualenv (never the project's own .venv; not part of ``make test``)::

    python3 -m venv .venv-peers
    .venv-peers/bin/pip install gpflow tensorflow-cpu tensorflow-probability tf-keras \\
        torch gpytorch numpy scipy scikit-learn
    .venv-peers/bin/pip install --no-deps -e .

(``pip install -e '.[peers]'`` installs the same set; a CPU-only torch wheel, where one can be
had, avoids some gigabytes of CUDA libraries.)

Usage: python benchmarks/bench_large_n.py [--systems ours-sep ours-sep-iso gpflow-svgp ...]
           [--datasets twonorm ringnorm flights] [--n 100000] [--n-test 10000] [--inducing 200 ...]
           [--budget 60 ...] [--seed 0] [--threads 2] [--out results/large_n.json] [--force]
           [--epochs E] [--ours-python PATH] [--quick | --reduced]
       --quick: n = 2,000, n_test = 2,000, budget 5 s, written to a temporary file (a smoke
       test; it is also what ``make benchmark`` runs).
       --reduced: the reduced, deterministic configuration above (ours-* only), written to
       --out like the full runs.
"""

import argparse
import contextlib
import datetime
import importlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpc_literate import __version__  # noqa: E402
from gpc_literate.datasets import (  # noqa: E402
    bayes_proba,
    load_flights,
    make_ringnorm,
    make_twonorm,
)

THREADS = 2  # --threads; set in the child
BATCH_SIZE = 1000
LEARNING_RATE = 0.01


def length_scale_init(d):
    """The peers' and ours-sep's starting length scale: sqrt(d), for inputs of unit
    variance (twonorm's and ringnorm's by construction, flights' standardised)."""
    return float(np.sqrt(d))


VARIANCE_INIT = 1.0
CHECKPOINT_TIMES = (
    0,
    2,
    5,
    10,
    20,
    30,
    45,
    60,
    90,
    120,
    180,
    240,
    300,
    450,
    600,
    900,
    1200,
    1800,
    2700,
    3600,
)
DATASETS = {
    "twonorm": (make_twonorm, 101, 102),
    "ringnorm": (make_ringnorm, 201, 202),
    "flights": (None, None, None),  # load_flights: its own fixed split, standardised
}
EXIT_IMPORT = 3
REDUCED = {
    "n": 10_000,
    "n_test": 10_000,
    "inducing": [200],
    "epochs": 5.0,
    "threads": 1,
    "systems": ["ours-sep", "ours-sep-iso"],
    "datasets": ["twonorm", "ringnorm"],
}
P_LOW, P_HIGH = np.finfo(np.float64).tiny, 1.0 - np.finfo(np.float64).epsneg


# ----------------------------------------------------------------------------- scoring


def score_predictions(p, y):
    """Test error, mean NLP (nats) and how many P were clipped, for P(y=+1) ``p``, labels ±1."""
    p = np.asarray(p, dtype=np.float64).ravel()
    if p.shape != y.shape or not np.all(np.isfinite(p)):
        return {"error": None, "nlp": None, "n_clipped": None}
    clipped = np.clip(p, P_LOW, P_HIGH)
    p_true = np.where(y > 0, clipped, 1.0 - clipped)
    return {
        "error": float(np.mean(np.where(p > 0.5, 1.0, -1.0) != y)),
        "nlp": float(-np.mean(np.log(p_true))),
        "n_clipped": int(np.count_nonzero(clipped != p)),
    }


def point_nlp(p, y):
    """-log p(y_i | x_i) at each test point, P clipped as in score_predictions (float32)."""
    clipped = np.clip(np.asarray(p, dtype=np.float64).ravel(), P_LOW, P_HIGH)
    return (-np.log(np.where(y > 0, clipped, 1.0 - clipped))).astype(np.float32)


def make_data(dataset, n, n_test):
    """Training and test sets of ``dataset`` with its fixed seeds: (X, y, X_test, y_test, seeds)."""
    if dataset == "flights":
        ds = load_flights(n_train=n, n_test=n_test)
        return (
            ds.X_train,
            ds.y_train.astype(np.float64),
            ds.X_test,
            ds.y_test.astype(np.float64),
            make_data_seeds(dataset),
        )
    make, train_seed, test_seed = DATASETS[dataset]
    X, y = make(n, random_state=train_seed)
    X_test, y_test = make(n_test, random_state=test_seed)
    return X, y, X_test, y_test, {"train": train_seed, "test": test_seed}


class Checkpoint:
    """The clock of one run: training time with evaluations paused, and the checkpoint scores."""

    def __init__(self, X_test, y_test, budget, label="", epochs=None, score=None):
        """budget: training seconds, or None when the system trains for ``epochs`` passes;
        ``score(predictions, y_test)``: a dict with "error" and "nlp" (default:
        ``score_predictions``)."""
        self.score = score_predictions if score is None else score
        self.X_test, self.y_test, self.label, self.epochs = (
            X_test,
            y_test,
            label,
            epochs,
        )
        self.budget = np.inf if budget is None else float(budget)
        self.times = [t for t in CHECKPOINT_TIMES if t < self.budget]
        if budget is not None:
            self.times.append(self.budget)
        self.records, self.settings, self.done = [], {}, False
        self.last_points = None  # the per-point NLP of the last evaluation
        self.steps = None  # a system that stops by itself may set its count
        self._next = 0
        self._t0 = self._c0 = None
        self._paused = self._paused_cpu = 0.0

    def start(self):
        self._t0, self._c0 = time.perf_counter(), time.process_time()

    def elapsed(self):
        """Training time so far in seconds (wall clock, evaluations excluded)."""
        return time.perf_counter() - self._t0 - self._paused

    def cpu_elapsed(self):
        return time.process_time() - self._c0 - self._paused_cpu

    @contextlib.contextmanager
    def paused(self):
        """Work inside is not training time (a measurement of the system's own)."""
        w0, c0 = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self._paused += time.perf_counter() - w0
            self._paused_cpu += time.process_time() - c0

    def evaluate(self, predict_proba, steps=None):
        t, c = self.elapsed(), self.cpu_elapsed()
        w0, c0 = time.perf_counter(), time.process_time()
        p = predict_proba(self.X_test)
        scores = self.score(p, self.y_test)
        if self.score is score_predictions and scores["nlp"] is not None:
            self.last_points = point_nlp(p, self.y_test)  # for paired differences
        record = {
            "seconds": round(t, 3),
            "cpu_seconds": round(c, 3),
            "steps": steps,
            **scores,
        }
        self.records.append(record)
        self._paused += time.perf_counter() - w0
        self._paused_cpu += time.process_time() - c0
        while self._next < len(self.times) and self.times[self._next] <= t:
            self._next += 1
        err = "nan" if record["error"] is None else f"{record['error']:.4f}"
        nlp = "nan" if record["nlp"] is None else f"{record['nlp']:.4f}"
        print(
            f"  {self.label} t={t:7.1f} s cpu={c:7.1f} s steps={steps} error={err} "
            f"nlp={nlp}",
            flush=True,
        )

    def __call__(self, predict_proba, steps=None):
        """Score ``predict_proba`` if a checkpoint time is past; False once the budget is spent."""
        if self.done:
            return False
        t = self.elapsed()
        if t >= self.budget:
            self.evaluate(predict_proba, steps)
            self.done = True
            return False
        if self._next < len(self.times) and t >= self.times[self._next]:
            self.evaluate(predict_proba, steps)
        return True


def initial_inducing(X, M, seed):
    """M distinct training inputs chosen at random (seeded): the initial inducing inputs."""
    rng = np.random.default_rng(seed)
    return X[np.sort(rng.choice(len(X), size=min(M, len(X)), replace=False))].copy()


# ----------------------------------------------------------------------------- systems


@dataclass
class System:
    """A registered system: its train function, the modules it imports and fixed settings."""

    train: callable
    modules: tuple = ()
    distributions: tuple = ()
    settings: dict = field(default_factory=dict)
    epochs: bool = False  # can train for a fixed number of epochs


SYSTEMS = {}


def register(name, modules=(), distributions=None, settings=None, epochs=False):
    """Decorator: add ``train(X, y, X_test, y_test, budget, M, seed, checkpoint)`` as ``name``."""

    def decorate(train):
        SYSTEMS[name] = System(
            train,
            tuple(modules),
            tuple(modules if distributions is None else distributions),
            dict(settings or {}),
            bool(epochs),
        )
        return train

    return decorate


COMMON = {
    "kernel": "squared exponential, ARD",
    "mean": "zero",
    "kernel_init": {"length_scale": "sqrt(d)", "variance": VARIANCE_INIT},
    "inducing_init": "random subset of the training inputs",
    "whitened": True,
    "learned": "q(u), kernel hyperparameters, inducing inputs",
    "optimizer": "Adam",
    "learning_rate": LEARNING_RATE,
    "batch_size": BATCH_SIZE,
}


@register(
    "gpflow-svgp",
    modules=("tensorflow", "gpflow"),
    distributions=("gpflow", "tensorflow", "tensorflow-probability", "tf-keras"),
    settings={
        **COMMON,
        "dtype": "float64",
        "likelihood": "gpflow.likelihoods.Bernoulli() (inv_probit: "
        "1e-3 + 0.998 Phi(f))",
        "objective": "SVGP ELBO, training_loss_closure(compile=True)",
    },
)
def train_gpflow_svgp(X, y, X_test, y_test, budget, M, seed, checkpoint):
    """GPflow's SVGP for classification, trained with minibatch Adam until the budget is spent."""
    import gpflow

    gpflow_start(THREADS, seed)
    n, d = X.shape
    kernel = gpflow.kernels.SquaredExponential(
        variance=VARIANCE_INIT, lengthscales=np.full(d, length_scale_init(d))
    )
    model = gpflow.models.SVGP(
        kernel,
        gpflow.likelihoods.Bernoulli(),
        initial_inducing(X, M, seed),
        num_data=n,
        whiten=True,
    )

    def predict_proba(Xs):
        return model.predict_y(Xs)[0].numpy().ravel()

    Y = (y > 0).astype(np.float64)[:, None]
    return gpflow_adam(model, X, Y, seed, checkpoint, predict_proba)


def gpflow_start(threads, seed):
    """TensorFlow's intra- and inter-op threads and its random seed, before a GPflow run."""
    import tensorflow as tf

    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError:  # the runtime was already initialised
        pass
    tf.random.set_seed(seed)


def gpflow_adam(model, X, Y, seed, checkpoint, predict_proba):
    """Train a GPflow ``model`` on a shuffled, repeated tf.data stream of minibatches of
    BATCH_SIZE with tf_keras' Adam at LEARNING_RATE over all trainable variables (a
    compiled loss, a tf.function step), until ``checkpoint`` stops it; ``predict_proba``."""
    import tensorflow as tf
    from gpflow.keras import tf_keras

    data = (
        tf.data.Dataset.from_tensor_slices((X, Y)).repeat().shuffle(len(X), seed=seed)
    )
    training_loss = model.training_loss_closure(
        iter(data.batch(BATCH_SIZE)), compile=True
    )
    optimizer = tf_keras.optimizers.Adam(learning_rate=LEARNING_RATE)

    @tf.function
    def optimization_step():
        optimizer.minimize(training_loss, model.trainable_variables)

    steps = 0
    while checkpoint(predict_proba, steps):
        optimization_step()
        steps += 1
    return predict_proba


@register(
    "gpytorch-svgp",
    modules=("torch", "gpytorch"),
    settings={
        **COMMON,
        "dtype": "float32",
        "likelihood": "gpytorch.likelihoods.BernoulliLikelihood() (Phi(f))",
        "objective": "gpytorch.mlls.VariationalELBO",
    },
)
def train_gpytorch_svgp(X, y, X_test, y_test, budget, M, seed, checkpoint):
    """GPyTorch's SVGP (ApproximateGP) for classification, minibatch Adam until the budget."""
    import gpytorch
    import torch
    from scipy.special import ndtr

    torch.set_num_threads(THREADS)
    torch.manual_seed(seed)
    n, d = X.shape

    class SVGP(gpytorch.models.ApproximateGP):
        def __init__(self, Z):
            distribution = gpytorch.variational.CholeskyVariationalDistribution(
                Z.size(0)
            )
            strategy = gpytorch.variational.VariationalStrategy(
                self, Z, distribution, learn_inducing_locations=True
            )
            super().__init__(strategy)
            self.mean_module = gpytorch.means.ZeroMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(
                gpytorch.kernels.RBFKernel(ard_num_dims=d)
            )

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(
                self.mean_module(x), self.covar_module(x)
            )

    model = SVGP(torch.as_tensor(initial_inducing(X, M, seed), dtype=torch.float32))
    model.covar_module.base_kernel.lengthscale = length_scale_init(d)
    model.covar_module.outputscale = VARIANCE_INIT
    likelihood = gpytorch.likelihoods.BernoulliLikelihood()
    train_x = torch.as_tensor(X, dtype=torch.float32)
    train_y = torch.as_tensor(y > 0, dtype=torch.float32)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(train_x, train_y),
        batch_size=BATCH_SIZE,
        shuffle=True,
        generator=torch.Generator().manual_seed(seed),
    )
    optimizer = torch.optim.Adam(
        [{"params": model.parameters()}, {"params": likelihood.parameters()}],
        lr=LEARNING_RATE,
    )
    mll = gpytorch.mlls.VariationalELBO(likelihood, model, num_data=n)
    test_x = torch.as_tensor(X_test, dtype=torch.float32)

    def predict_proba(Xs):
        Xs = test_x if Xs is X_test else torch.as_tensor(Xs, dtype=torch.float32)
        model.eval()
        with torch.no_grad():
            f = [model(Xs[i : i + 5000]) for i in range(0, len(Xs), 5000)]
            mean = np.concatenate([fi.mean.double().numpy() for fi in f])
            var = np.concatenate([fi.variance.double().numpy() for fi in f])
        model.train()
        return ndtr(
            mean / np.sqrt(1.0 + var)
        )  # BernoulliLikelihood.marginal, in float64

    model.train()
    likelihood.train()
    steps = 0
    while True:
        for x_batch, y_batch in loader:
            if not checkpoint(predict_proba, steps):
                return predict_proba
            optimizer.zero_grad()
            loss = -mll(model(x_batch), y_batch)
            loss.backward()
            optimizer.step()
            steps += 1


OURS = {
    "kernel_init": {"length_scale": "sqrt(d)", "variance": VARIANCE_INIT},
    "mean": "zero",
    "inducing_init": "k-means++ centres of 5000 random training inputs "
    "(StochasticEP's default)",
    "whitened": True,
    "sites": "tied (stochastic EP)",
    "learned": "sites, kernel hyperparameters, inducing inputs",
    "optimizer": "Adam, rates 0.05 (log-hyperparameters) and 0.01 (inducing inputs), "
    "decaying to 10 % over the budget (or over the epochs, with --epochs)",
    "batch_size": BATCH_SIZE,
    "dtype": "float64",
    "likelihood": "probit, Phi(f)",
    "blas_threads": 1,
    "n_jobs": 1,
    "objective": "EP's log marginal likelihood, gradient at fixed sites",
}


def train_ours(X, y, budget, M, seed, checkpoint, kernel, n_jobs=1):
    """gpc_literate's StochasticEP with ``kernel`` on ``n_jobs`` processes, for the budget or
    for checkpoint.epochs."""
    from gpc_literate.stochastic_ep import StochasticEP

    if checkpoint.epochs is None:  # a time budget (and StochasticEP's 100 epochs)
        limits = {"max_time": budget}
    else:  # a fixed number of epochs, no time limit
        limits = {"max_time": None, "max_iter": checkpoint.epochs}
    model = StochasticEP(
        kernel,
        n_inducing=M,
        batch_size=BATCH_SIZE,
        random_state=seed,
        n_jobs=n_jobs,
        **limits,
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
    }
    return lambda Xs: model.predict_proba(Xs)[:, 1]


@register(
    "ours-sep",
    modules=("gpc_literate.stochastic_ep",),
    distributions=("gpc_literate", "scikit-learn", "threadpoolctl"),
    settings={**OURS, "kernel": "squared exponential, ARD"},
    epochs=True,
)
def train_ours_sep(X, y, X_test, y_test, budget, M, seed, checkpoint):
    """Stochastic EP with the peers' kernel: ARD, length scale sqrt(20) in every input."""
    from gpc_literate.kernels import RBF

    d = X.shape[1]
    kernel = RBF(np.full(d, length_scale_init(d)), VARIANCE_INIT)
    return train_ours(X, y, budget, M, seed, checkpoint, kernel)


@register(
    "ours-sep-iso",
    modules=("gpc_literate.stochastic_ep",),
    distributions=("gpc_literate", "scikit-learn", "threadpoolctl"),
    settings={**OURS, "kernel": "squared exponential, one length scale"},
    epochs=True,
)
def train_ours_sep_iso(X, y, X_test, y_test, budget, M, seed, checkpoint):
    """Stochastic EP with one length scale (started at sqrt(20)) for all inputs."""
    from gpc_literate.kernels import RBF

    return train_ours(
        X,
        y,
        budget,
        M,
        seed,
        checkpoint,
        RBF(length_scale_init(X.shape[1]), VARIANCE_INIT),
    )


@register(
    "ours-sep-defaults",
    modules=("gpc_literate.stochastic_ep",),
    distributions=("gpc_literate", "scikit-learn", "threadpoolctl"),
    settings={
        **OURS,
        "n_jobs": "--threads: two processes (StochasticEP's default on two cores)",
        "kernel": "StochasticEP's default: ard_default_kernel(X), ARD, length scales "
        "sqrt(d) times each input's standard deviation, variance 1",
    },
    epochs=True,
)
def train_ours_sep_defaults(X, y, X_test, y_test, budget, M, seed, checkpoint):
    """Stochastic EP as a user gets it: every default but M, the budget and the seed."""
    return train_ours(X, y, budget, M, seed, checkpoint, None, n_jobs=THREADS)


SPARSE = {
    "kernel": "SparseEP's default: ard_default_kernel(X)",
    "mean": "zero",
    "inducing_init": "pivoted Cholesky on max(1000, 2 M) random training inputs "
    "(SparseEP's default)",
    "learned": "optimizer='auto': from 20,000 points with alpha = 1, the kernel "
    "hyperparameters and inducing inputs by stochastic EP's minibatch Adam, then one "
    "EP run; else the kernel hyperparameters by L-BFGS-B on the evidence, the "
    "inducing inputs fixed",
    "dtype": "float64",
    "likelihood": "probit, Phi(f)",
    "max_time": "the budget (the search stops early enough to leave time for the "
    "final EP run, by an estimate that may be short)",
    "processes": "the minibatch search on StochasticEP's default processes (two on "
    "two cores)",
}


def train_sparse(X, y, budget, M, seed, checkpoint, alpha):
    """gpc_literate's SparseEP with its defaults, power ``alpha``, max_time = budget;
    scored once, when it returns."""
    from gpc_literate.sparse_ep import SparseEP

    model = SparseEP(n_inducing=M, max_time=budget, alpha=alpha, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the search stopped by max_time
        model.fit(X, y)
    learned = model.learning_
    checkpoint.steps = None if learned is None else int(learned.n_evaluations)
    checkpoint.settings["fitted"] = {
        "theta": [float(t) for t in model.kernel_.theta],
        "search": None if learned is None else learned.message,
        "criterion": None if learned is None else learned.criterion,
    }
    return lambda Xs: model.predict_proba(Xs)[:, 1]


@register(
    "ours-ep-fixed",
    modules=("gpc_literate.ep_classifier",),
    distributions=("gpc_literate", "scikit-learn"),
    settings={
        "kernel": "EP's ARD start: ard_default_kernel(X), held fixed (optimizer=None)",
        "mean": "zero",
        "method": "EP's default (newton)",
        "dtype": "float64",
        "likelihood": "probit, Phi(f)",
        "max_time": "none: full EP cannot stop within a run; scored when its fit returns",
    },
)
def train_full_ep(X, y, X_test, y_test, budget, M, seed, checkpoint):
    """Chapter 15's full EP at the data-scaled ARD kernel, which it keeps: one fit, and
    (not counted as training) the time of one evaluation of the evidence and its gradient,
    which every step of a search of the kernel would need."""
    from gpc_literate.ep_classifier import EP
    from gpc_literate.kernels import ard_default_kernel

    model = EP(ard_default_kernel(X), optimizer=None).fit(X, y)
    with checkpoint.paused():
        start = time.perf_counter()
        model.log_marginal_likelihood(model.kernel_.theta, eval_gradient=True)
        gradient_seconds = time.perf_counter() - start
    checkpoint.steps = int(model.n_iter_)
    checkpoint.settings["fitted"] = {
        "theta": [float(t) for t in model.kernel_.theta],
        "evidence_gradient_seconds": round(gradient_seconds, 2),
        "converged": bool(model.converged_),
    }
    return lambda Xs: model.predict_proba(Xs)[:, 1]


for _alpha in (1.0, 0.5, 0.1, 0.01):

    @register(
        f"ours-sparse-a{_alpha:g}",
        modules=("gpc_literate.stochastic_ep",),
        distributions=("gpc_literate", "scikit-learn"),
        settings={**SPARSE, "alpha": _alpha},
    )
    def _train_sparse(X, y, X_test, y_test, budget, M, seed, checkpoint, a=_alpha):
        return train_sparse(X, y, budget, M, seed, checkpoint, a)


# ----------------------------------------------------------------------------- harness


def versions(names):
    """Installed versions of the distributions ``names`` (None where not installed)."""
    out = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def machine():
    """CPU model, core counts, memory and platform of this machine."""
    model = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {
        "cpu_model": model or platform.processor(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)),
        "memory_gb": round(mem_gb, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def child_main(spec_path):
    """Inside the subprocess: import, draw the data, train under the budget, write the record."""
    global THREADS
    spec = json.loads(Path(spec_path).read_text())
    THREADS = spec["threads"]
    system = SYSTEMS[spec["system"]]
    t = time.perf_counter()
    try:
        for module in system.modules:
            importlib.import_module(module)
    except Exception as exc:  # ImportError, or a library broken at import
        print(
            f"{spec['system']}: cannot import its library ({type(exc).__name__}: {exc})",
            file=sys.stderr,
            flush=True,
        )
        return EXIT_IMPORT
    import_seconds = time.perf_counter() - t
    X, y, X_test, y_test, _ = make_data(spec["dataset"], spec["n"], spec["n_test"])
    checkpoint = Checkpoint(
        X_test, y_test, spec["budget"], label=spec["system"], epochs=spec.get("epochs")
    )
    checkpoint.start()
    predict_proba = system.train(
        X, y, X_test, y_test, spec["budget"], spec["M"], spec["seed"], checkpoint
    )
    if not checkpoint.done:  # the system stopped before the budget
        checkpoint.evaluate(predict_proba, checkpoint.steps)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if spec.get("points_path") and checkpoint.last_points is not None:
        Path(spec["points_path"]).parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(spec["points_path"], nlp=checkpoint.last_points)
    result = {
        "checkpoints": checkpoint.records,
        "final": checkpoint.records[-1],
        "training_seconds": checkpoint.records[-1]["seconds"],
        "import_seconds": round(import_seconds, 2),
        "peak_memory_mb": round(peak_mb, 1),
        "settings": {**system.settings, **checkpoint.settings},
        "versions": versions((*system.distributions, "numpy", "scipy")),
    }
    Path(spec["result_path"]).write_text(json.dumps(result))
    return 0


def child_env(threads):
    """The environment of a child: ``threads`` for every library, the worktree's package first."""
    env = dict(os.environ)
    for var in (
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "TF_NUM_INTRAOP_THREADS",
        "TF_NUM_INTEROP_THREADS",
    ):
        env[var] = str(threads)
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT), env.get("PYTHONPATH")])
    )
    return env


SPEC_KEYS = (
    "system",
    "dataset",
    "n",
    "n_test",
    "M",
    "budget",
    "seed",
    "threads",
    "python",
)


def run_system(spec, script=None, keys=SPEC_KEYS, extra=None):
    """Run one configuration in a subprocess; its record, or None when it was skipped or failed.

    ``script`` (default this file) is run as ``python script --child spec.json``; the
    record holds ``spec``'s ``keys``, ``extra`` (default: this file's data seeds), the
    child's result, the load averages, machine, date, version and commit.
    """
    script = Path(__file__ if script is None else script).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        spec = {**spec, "result_path": str(Path(tmp) / "result.json")}
        spec_path = Path(tmp) / "spec.json"
        spec_path.write_text(json.dumps(spec))
        load_start = os.getloadavg()
        proc = subprocess.run(
            [spec["python"], str(script), "--child", str(spec_path)],
            env=child_env(spec["threads"]),
        )
        load_end = os.getloadavg()
        if proc.returncode == EXIT_IMPORT:
            print(
                f"skipping {spec['system']}: its library is not importable by "
                f"{spec['python']} (see the docstring for the peers' virtualenv)",
                flush=True,
            )
            return None
        if proc.returncode != 0:
            print(
                f"{spec['system']} on {spec['dataset']} failed (exit {proc.returncode}); "
                "nothing recorded",
                flush=True,
            )
            return None
        result = json.loads(Path(spec["result_path"]).read_text())
    from gpc_literate.experiments import (
        git_state,
    )  # the parent only: children stay lean

    commit, dirty = git_state(("benchmarks", "gpc_literate"))
    if extra is None:
        extra = {"data_seeds": make_data_seeds(spec["dataset"])}
    return (
        {key: spec[key] for key in keys}
        | ({} if spec.get("epochs") is None else {"epochs": spec["epochs"]})
        | {
            **extra,
            **result,
            "loadavg_start": [round(v, 2) for v in load_start],
            "loadavg_end": [round(v, 2) for v in load_end],
            "machine": machine(),
            "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "version": __version__,
            "commit": commit,
            "git_dirty": dirty,
        }
    )


def make_data_seeds(dataset):
    if dataset == "flights":
        return {"split": "load_flights: one seeded permutation, test = its last rows"}
    _, train_seed, test_seed = DATASETS[dataset]
    return {"train": train_seed, "test": test_seed}


def bayes_floor(dataset, n_test):
    """The Bayes rule's test error and NLP on the test set of ``dataset`` (None for real
    data)."""
    make, _, test_seed = DATASETS[dataset]
    if make is None:
        return None
    X_test, y_test = make(n_test, random_state=test_seed)
    return {
        "dataset": dataset,
        "n_test": n_test,
        "test_seed": test_seed,
        "method": "Bayes rule, gpc_literate.datasets.bayes_proba",
        **score_predictions(bayes_proba(dataset, X_test), y_test),
    }


def load_results(path):
    if path.exists():
        return json.loads(path.read_text())
    return {
        "description": "bench_large_n.py: test error and NLP against training time; "
        "see the docstring of benchmarks/bench_large_n.py",
        "floors": {},
        "runs": {},
    }


def save_results(results, path):
    """Write ``results`` to ``path`` atomically, by chapter 18's results store."""
    from gpc_literate.experiments import write_json_atomic

    write_json_atomic(path, results, allow_nan=False)


def run_id(system, dataset, n, M, budget, seed, threads, epochs=None):
    """The key of a configuration in the results file; ``epochs`` replaces the budget."""
    limit = f"budget={budget:g}" if epochs is None else f"epochs={epochs:g}"
    return f"{system}|{dataset}|n={n}|M={M}|{limit}|seed={seed}|threads={threads}"


def points_path(out, key):
    """Where the per-point test NLP of run ``key`` goes: a .npz beside the results file."""
    name = "".join(c if c.isalnum() or c in "-." else "_" for c in key)
    return out.parent / f"{out.stem}_points" / f"{name}.npz"


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--systems",
        nargs="+",
        default=["ours-sep", "ours-sep-iso", "gpflow-svgp", "gpytorch-svgp"],
        choices=sorted(SYSTEMS),
    )
    parser.add_argument(
        "--datasets",
        nargs="+",
        default=["twonorm", "ringnorm"],
        choices=list(DATASETS),
    )
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--n-test", type=int, default=10_000)
    parser.add_argument("--inducing", nargs="+", type=int, default=[200])
    parser.add_argument("--budget", nargs="+", type=float, default=[60.0])
    parser.add_argument(
        "--epochs",
        type=float,
        default=None,
        help="train for this many epochs instead of a time budget (ours-* only)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=THREADS)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "large_n.json")
    parser.add_argument(
        "--force", action="store_true", help="rerun configurations present"
    )
    own = ROOT / ".venv" / "bin" / "python"
    parser.add_argument(
        "--ours-python",
        default=str(own) if own.exists() else sys.executable,
        help="the interpreter of the ours-* systems (default: the project's "
        ".venv when it exists)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--quick",
        action="store_true",
        help="smoke test: n = n_test = 2000, budget 5 s, a temporary file",
    )
    mode.add_argument(
        "--reduced",
        action="store_true",
        help="the reduced deterministic runs chapter 26 recomputes: "
        + ", ".join(f"{k} {v}" for k, v in REDUCED.items()),
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.n_test, args.budget, args.force = 2000, 2000, [5.0], True
        args.out = Path(tempfile.gettempdir()) / "large_n_quick.json"
    if args.reduced:
        for key, value in REDUCED.items():
            setattr(args, key, value)
    if args.epochs is not None:
        if not args.epochs > 0:
            parser.error(f"--epochs must be positive; got {args.epochs}")
        unable = [s for s in args.systems if not SYSTEMS[s].epochs]
        if unable:
            parser.error(
                f"--epochs: {', '.join(unable)} can only train under a time budget"
            )
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        return child_main(args.child)
    info = machine()
    print(
        f"{info['cpu_model']}, {info['cpu_count']} cores; load average "
        f"{os.getloadavg()[0]:.2f}; {args.threads} threads per system; out: {args.out}",
        flush=True,
    )
    missing = {
        s: [m for m in SYSTEMS[s].modules if importlib.util.find_spec(m) is None]
        for s in args.systems
    }
    for system in [s for s in args.systems if missing[s]]:
        print(
            f"skipping {system}: {', '.join(missing[system])} not importable by "
            f"{sys.executable} (see the docstring for the peers' virtualenv)",
            flush=True,
        )
    results = load_results(args.out)
    for dataset in args.datasets:
        floor = bayes_floor(dataset, args.n_test)
        if floor is not None:
            results["floors"][
                f"{dataset}|n_test={args.n_test}|seed={floor['test_seed']}"
            ] = floor
            save_results(results, args.out)
            print(
                f"{dataset}: Bayes rule on {args.n_test} test points: error "
                f"{floor['error']:.4f}, NLP {floor['nlp']:.4f}",
                flush=True,
            )
        for M in args.inducing:
            for budget in [None] if args.epochs is not None else args.budget:
                for system in [s for s in args.systems if not missing[s]]:
                    key = run_id(
                        system,
                        dataset,
                        args.n,
                        M,
                        budget,
                        args.seed,
                        args.threads,
                        args.epochs,
                    )
                    if key in results["runs"] and not args.force:
                        print(f"{key}: already in {args.out}; skipped (--force reruns)")
                        continue
                    print(f"{key}: training", flush=True)
                    python = (
                        args.ours_python
                        if system.startswith("ours")
                        else sys.executable
                    )
                    points = points_path(args.out, key)
                    record = run_system(
                        {
                            "system": system,
                            "dataset": dataset,
                            "n": args.n,
                            "n_test": args.n_test,
                            "M": M,
                            "budget": budget,
                            "epochs": args.epochs,
                            "seed": args.seed,
                            "threads": args.threads,
                            "python": python,
                            "points_path": str(points),
                        }
                    )
                    if record is None:
                        continue
                    if points.exists():
                        record["points_file"] = str(points.relative_to(args.out.parent))
                    results = load_results(args.out)
                    results["runs"][key] = record
                    save_results(results, args.out)
                    final = record["final"]
                    print(
                        f"{key}: error {final['error']}, NLP {final['nlp']}, "
                        f"{final['steps']} steps, peak {record['peak_memory_mb']:.0f} MB, "
                        f"load {record['loadavg_start'][0]:.2f} -> "
                        f"{record['loadavg_end'][0]:.2f}",
                        flush=True,
                    )
    return 0


if __name__ == "__main__":
    # Run by benchmarks/run.py (`make benchmark`), whose arguments are not ours: a smoke test.
    by_run_py = any(Path(arg).name == "run.py" for arg in sys.orig_argv)
    sys.exit(main(["--quick"] if by_run_py else None))
