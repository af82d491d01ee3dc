"""gpc_literate.multiclass_sep: sparse and stochastic EP for K classes
(book/32_multiclass_sparse_ep.md)."""

import warnings

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import ndtr
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler

from gpc_literate.base import ConvergenceWarning, NotFittedError
from gpc_literate.kernels import RBF, ArcSin
from gpc_literate.multiclass_sep import (
    MulticlassSEP,
    multiclass_batch_sites,
    multiprobit_log_z,
    multiprobit_probabilities,
    multiprobit_sites,
)
from gpc_literate.sites import cavities, positive_site_marginals
from gpc_literate.stochastic_ep import minibatch_size

IRIS = load_iris()
PICK = np.random.RandomState(0).choice(150, 60, replace=False)
X = StandardScaler().fit_transform(IRIS.data[PICK])
Y = IRIS.target[PICK]
KERNEL = RBF(length_scale=2.0, variance=2.0)


def fast(**options):
    """A short run at a fixed kernel, stopped by epochs."""
    settings = dict(
        kernel=KERNEL,
        n_inducing=10,
        batch_size=20,
        max_time=None,
        max_iter=10,
        random_state=0,
    )
    return MulticlassSEP(**{**settings, **options})


# -- the quadrature -------------------------------------------------------------------------


def random_cavities(B=12, C=4, seed=0):
    rng = np.random.default_rng(seed)
    mean = rng.normal(0.0, 2.0, size=(B, C))
    var = 1.0 + rng.uniform(0.0, 4.0, size=(B, C))
    return rng.integers(0, C, B), mean, var


def test_quadrature_against_adaptive_quadrature():
    codes, mean, var = random_cavities()
    log_z = multiprobit_log_z(codes, mean, var)[0]
    for i, y in enumerate(codes):
        s, others = np.sqrt(var[i]), [c for c in range(mean.shape[1]) if c != y]

        def integrand(a, i=i, y=y, s=s, others=others):
            return stats.norm.pdf(a, mean[i, y], s[y]) * np.prod(
                ndtr((a - mean[i, others]) / s[others])
            )

        z = integrate.quad(integrand, -np.inf, np.inf, epsabs=1e-14, epsrel=1e-12)[0]
        assert abs(np.exp(log_z[i]) - z) < 1e-8


def test_quadrature_against_monte_carlo_and_two_classes():
    codes, mean, var = random_cavities(B=6, C=3, seed=1)
    z = np.exp(multiprobit_log_z(codes, mean, var)[0])
    rng = np.random.default_rng(2)
    draws = mean + np.sqrt(var) * rng.standard_normal((200_000, 6, 3))
    wins = np.mean(draws.argmax(axis=2) == codes, axis=0)
    assert np.all(np.abs(wins - z) < 5 * np.sqrt(z * (1 - z) / 200_000) + 1e-6)
    two = np.arange(6) % 2
    rows = np.arange(6)
    closed = stats.norm.logcdf(
        (mean[rows, two] - mean[rows, 1 - two])
        / np.sqrt(var[rows, two] + var[rows, 1 - two])
    )
    np.testing.assert_allclose(
        multiprobit_log_z(two, mean[:, :2], var[:, :2])[0], closed, atol=1e-10
    )


def test_derivatives_against_central_differences():
    codes, mean, var = random_cavities(seed=3)
    _, d_mean, d_var = multiprobit_log_z(codes, mean, var)
    h = 1e-6
    for c in range(mean.shape[1]):
        E = np.zeros_like(mean)
        E[:, c] = h
        fd_m = multiprobit_log_z(codes, mean + E, var)[0]
        fd_m = (fd_m - multiprobit_log_z(codes, mean - E, var)[0]) / (2 * h)
        fd_v = multiprobit_log_z(codes, mean, var + E)[0]
        fd_v = (fd_v - multiprobit_log_z(codes, mean, var - E)[0]) / (2 * h)
        np.testing.assert_allclose(d_mean[:, c], fd_m, atol=1e-7)
        np.testing.assert_allclose(d_var[:, c], fd_v, atol=1e-7)
    np.testing.assert_allclose(d_mean.sum(axis=1), 0.0, atol=1e-12)


def test_sites_are_nonnegative_and_far_points_finite():
    codes, mean, var = random_cavities(seed=4)
    mean[0] = [-40.0, 0.0, 0.0, 0.0]  # a point far on the wrong side
    codes[0] = 0
    nu, tau, log_z, _, _, ok = multiprobit_sites(codes, mean, var - 1.0, np.zeros(12))
    assert np.all(np.isfinite(log_z)) and log_z[0] < -100
    assert np.all(tau[ok] >= -1e-10) and ok[1:].all()


# -- the fixed point and the gradient -------------------------------------------------------


def dense_factorised_ep(K, codes, C):
    n = len(codes)
    nu, tau = np.zeros((n, C)), np.zeros((n, C))
    for _ in range(2000):
        post = [positive_site_marginals(K, nu[:, c], tau[:, c]) for c in range(C)]
        mean = np.column_stack([p.mean for p in post])
        var = np.column_stack([p.var for p in post])
        mu, v, proper = cavities(mean, var, nu - tau * mean, tau)
        nu_new, tau_new, *_ = multiprobit_sites(codes, mu, v, np.zeros(n))
        change = max(np.max(np.abs(nu_new - nu)), np.max(np.abs(tau_new - tau)))
        nu, tau = nu + 0.5 * (nu_new - nu), tau + 0.5 * (tau_new - tau)
        if change < 1e-11:
            return mean, var
    raise AssertionError("dense EP did not converge")


def test_inducing_inputs_at_the_training_inputs_give_dense_factorised_ep():
    mean, var = dense_factorised_ep(KERNEL(X), Y, 3)
    model = MulticlassSEP(
        kernel=KERNEL,
        inducing=X,
        sites="per-point",
        batch_size=60,
        damping=0.5,
        optimizer=None,
        max_time=None,
        max_iter=400,
        tol=1e-9,
    ).fit(X, Y)
    m, v = model.predict_latent(X)
    assert np.max(np.abs(m - mean)) < 1e-6 and np.max(np.abs(v - var)) < 1e-6
    assert model.converged_


def test_frozen_site_gradient_against_central_differences():
    Z = X[::4].copy()
    state = (
        fast(inducing=Z, optimizer=None, batch_size=60, max_iter=20).fit(X, Y)._state
    )
    grad = multiclass_batch_sites(state, X, Y, None, with_gradient=True)

    def log_z(theta, Z_):
        state.kernel, state.Z = KERNEL.with_theta(theta), Z_
        return multiclass_batch_sites(state, X, Y, None, False).log_z.sum()

    theta, h = KERNEL.theta, 1e-6
    fd_theta = [
        (log_z(theta + h * e, Z) - log_z(theta - h * e, Z)) / (2 * h)
        for e in np.eye(theta.size)
    ]
    E = np.zeros_like(Z)
    E[3, 1] = h
    fd_z = (log_z(theta, Z + E) - log_z(theta, Z - E)) / (2 * h)
    np.testing.assert_allclose(grad.grad_theta, fd_theta, rtol=1e-6)
    assert abs(grad.grad_Z[3, 1] - fd_z) < 1e-6 * np.max(np.abs(grad.grad_Z))


# -- the estimator ----------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::gpc_literate.base.ConvergenceWarning")
@pytest.mark.parametrize("sites", ["tied", "per-point"])
def test_learns_iris_and_rows_sum_to_one(sites):
    model = MulticlassSEP(
        n_inducing=15,
        batch_size=30,
        max_time=None,
        max_iter=40,
        sites=sites,
        random_state=0,
    ).fit(X, Y)
    P = model.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    raw = multiprobit_probabilities(*model.predict_latent(X), normalise=False)
    assert np.max(np.abs(raw.sum(axis=1) - 1.0)) < 1e-6
    assert np.mean(model.predict(X) == Y) > 0.9
    assert (
        model.kernel_.theta.tolist() != model.kernel.theta.tolist()
        if model.kernel
        else True
    )
    assert model.inducing_.shape == (15, 4) and model.n_iter_ == 40
    assert model.fit_seconds_ > 0 and model.n_batches_ == 80


@pytest.mark.filterwarnings("ignore::gpc_literate.base.ConvergenceWarning")
def test_any_label_values_and_two_classes():
    labels = np.array(["setosa", "versicolor", "virginica"], dtype=object)[Y]
    model = fast().fit(X, labels)
    assert list(model.classes_) == ["setosa", "versicolor", "virginica"]
    assert set(model.predict(X)) <= set(labels)
    assert model.decision_function(X).shape == (60, 3)
    binary = np.where(Y == 0, -7, 12)
    two = fast().fit(X, binary)
    assert two.predict_proba(X).shape == (60, 2) and two.decision_function(X).shape == (
        60,
    )
    assert np.mean(two.predict(X) == binary) > 0.95


def test_convergence_warning_and_converged_():
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        short = fast(max_iter=0.5, optimizer=None).fit(X, Y)
    assert not short.converged_
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        long = fast(optimizer=None, sites="per-point", batch_size=60, max_iter=100)
        assert long.fit(X, Y).converged_


def test_callback_stops_the_fit():
    seen = []
    model = fast(max_iter=50).fit(
        X, Y, callback=lambda s, t: seen.append(t) or len(seen) < 4
    )
    assert len(seen) == 4 and model.stopped_by_ == "callback"
    with pytest.raises(TypeError, match="callback"):
        fast().fit(X, Y, callback=3)


@pytest.mark.parametrize(
    "option, value, name",
    [
        ("kernel", ArcSin(), "RBF"),
        ("kernel", "rbf", "kernel"),
        ("n_inducing", 0, "n_inducing"),
        ("inducing", "grid", "inducing"),
        ("inducing", np.zeros((3, 2)), "inducing"),
        ("sites", "shared", "sites"),
        ("batch_size", 0, "batch_size"),
        ("batch_size", "big", "batch_size"),
        ("batch_size", 2.5, "batch_size"),
        ("max_time", -1.0, "max_time"),
        ("max_iter", 0, "max_iter"),
        ("optimizer", "sgd", "optimizer"),
        ("learning_rate", -0.1, "learning_rate"),
        ("inducing_learning_rate", -1, "inducing_learning_rate"),
        ("learn_inducing", "yes", "learn_inducing"),
        ("window", 0, "window"),
        ("damping", 0.0, "damping"),
        ("tol", 0.0, "tol"),
        ("hyperparameter_bounds", (2.0, 1.0), "hyperparameter_bounds"),
        ("random_state", "seed", "random_state"),
        ("blas_threads", 0, "blas_threads"),
        ("verbose", 2, "verbose"),
    ],
)
def test_bad_arguments_are_named(option, value, name):
    model = fast(**{option: value})
    with pytest.raises((ValueError, TypeError), match=name):
        model.fit(X, Y)
    with pytest.raises(NotFittedError):
        model.predict(X)


def test_both_budgets_none_is_refused():
    with pytest.raises(ValueError, match="max_time and max_iter"):
        fast(max_iter=None).fit(X, Y)


@pytest.mark.parametrize(
    "n, expected",
    [(1, 1), (9, 1), (120, 12), (4435, 444), (10_000, 1000), (10**6, 1000)],
)
def test_auto_batch_gives_ten_minibatches_per_epoch_up_to_1000_points(n, expected):
    assert minibatch_size("auto", n) == expected
    assert minibatch_size(50, n) == min(50, n)


def test_auto_batch_takes_ten_adam_steps_per_epoch_on_small_data():
    X, y = load_iris(return_X_y=True)
    model = MulticlassSEP(max_time=None, max_iter=3, random_state=0).fit(X, y)
    assert model.n_batches_ == 30  # 150 points, minibatches of 15
