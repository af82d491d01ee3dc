"""gpc_literate: Gaussian-process classification, derived in a book and built from it.

This file is written by hand; every other module in the package is generated
from a chapter of the book (see the header of each module for which one).

Importing the package loads nothing but this file: submodules and the public
names below are imported on first use, so ``import gpc_literate`` has no side
effects and never imports matplotlib.
"""

from importlib import import_module

__version__ = "0.1.0"

# public name -> submodule that defines it
_PUBLIC = {
    "ConvergenceWarning": "base",
    "GPClassifierBase": "base",
    "NotFittedError": "base",
    "RBF": "kernels",
    "ArcSin": "kernels",
    "Linear": "kernels",
    "Cauchy": "kernels",
    "Matern": "kernels",
    "Sum": "kernels",
    "Product": "kernels",
    "SklearnKernel": "kernels",
    "StepFlip": "likelihoods",
    "Probit": "likelihoods",
    "Gaussian": "likelihoods",
    "normal_ratio": "likelihoods",
    "load": "datasets",
    "KernelAdatron": "svm",
    "exact_loo_error": "loo",
    "lr_loo_activations": "loo",
    "NaiveMeanField": "meanfield",
    "TAP": "tap",
    "Laplace": "laplace",
    "Logistic": "laplace",
    "EP": "ep_classifier",
    "select_hyperparameters": "selection",
    "LSCV": "selection",
    "BiasedEP": "criteria",
    "available": "datasets",
    "Dataset": "datasets",
    "load_multiclass": "datasets",
    "available_multiclass": "datasets",
    "MulticlassData": "datasets",
    "load_flights": "datasets",
    "LargeDataset": "datasets",
    "VariationalGP": "variational",
    "VariationalSVM": "variational",
    "check_kernel": "kernels",
    "elliptical_slice_sampling": "mcmc",
    "ais_log_evidence": "mcmc",
    "SparseEP": "sparse_ep",
    "StochasticEP": "stochastic_ep",
    "SoftmaxLaplace": "softmax_laplace",
    "NestedEP": "nested_ep",
    "multiclass_gold_standard": "gold_multiclass",
    "MulticlassSEP": "multiclass_sep",
}
_SUBMODULES = {
    "base",
    "likelihoods",
    "kernels",
    "datasets",
    "svm",
    "loo",
    "reference",
    "sites",
    "meanfield",
    "tap",
    "laplace",
    "ep",
    "ep_fast",
    "ep_classifier",
    "criteria",
    "selection",
    "experiments",
    "free_energy",
    "variational",
    "comparison",
    "mcmc",
    "gold",
    "gold_grid",
    "sparse_ep",
    "stochastic_ep",
    "cluster_ep",
    "softmax_laplace",
    "nested_ep",
    "gold_multiclass",
    "multiclass_sep",
}

__all__ = sorted(_PUBLIC) + sorted(_SUBMODULES)


def __getattr__(name):
    if name in _SUBMODULES:
        return import_module(f"{__name__}.{name}")
    if name in _PUBLIC:
        return getattr(import_module(f"{__name__}.{_PUBLIC[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return __all__
