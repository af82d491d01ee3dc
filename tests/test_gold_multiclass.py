"""gpc_literate.gold_multiclass: the gold standard for C classes (chapter 30,
book/30_multiclass_gold.md).

Monte Carlo checks pass within N_SE standard errors; the seeds are fixed.
"""

import warnings

import numpy as np
import pytest
from scipy.special import log_ndtr

from gpc_literate.base import ConvergenceWarning
from gpc_literate.gold_multiclass import (
    GAUSS_HERMITE_ORDER,
    PROBIT_SCALE,
    BlockSiteRatio,
    block_site_gaussian,
    class_log_prob,
    class_probabilities,
    compare_with_gold,
    laplace_sites,
    multiclass_gold_standard,
    multiclass_predictive,
    multinomial_probit_log_prob,
    multinomial_probit_probabilities,
    stack_latents,
    unstack_latents,
)
from gpc_literate.kernels import RBF
from gpc_literate.softmax_laplace import softmax_log_prob

N_SE = 4.0
# the short chains of these tests are checked against exact answers, not diagnostics
pytestmark = pytest.mark.filterwarnings("ignore::gpc_literate.base.ConvergenceWarning")
FAST = dict(n_samples=400, n_chains=4, burn_in=50, ais_runs=32, ais_schedule=20)


def _zero_sites(n, C):
    return np.zeros((n, C, C)), np.zeros((n, C))


def test_probit_two_classes_closed_form():
    gap = np.linspace(-12.0, 12.0, 49)
    F = np.column_stack([gap, np.zeros_like(gap)])
    log_p = multinomial_probit_log_prob(np.array([1.0, 0.0]), F)
    assert np.max(np.abs(log_p - log_ndtr(gap / np.sqrt(2.0)))) < 1e-12
    P = multinomial_probit_probabilities(F)
    assert np.allclose(P.sum(axis=-1), 1.0, atol=1e-13)


def test_probit_against_brute_force_monte_carlo():
    rng = np.random.default_rng(0)
    F = np.array([[0.0, 0.5, -1.0], [1.5, -0.3, 0.2], [-2.0, 2.0, 0.0]])
    P = multinomial_probit_probabilities(F)
    eps = rng.standard_normal((200_000, *F.shape))
    freq = np.stack(
        [np.mean(np.argmax(F + eps, axis=-1) == c, axis=0) for c in range(3)], axis=-1
    )
    se = np.sqrt(P * (1 - P) / len(eps))
    assert np.all(np.abs(freq - P) < N_SE * se + 1e-12)


def test_probit_high_order_rule_and_stacks():
    rng = np.random.default_rng(1)
    F = 2.0 * rng.standard_normal((5, 7, 4))  # a stack of five latent matrices
    Y = np.eye(4)[rng.integers(0, 4, 7)]
    low = multinomial_probit_log_prob(Y, F)
    high = multinomial_probit_log_prob(Y, F, order=150)
    assert low.shape == (5, 7)
    assert np.max(np.abs(low - high)) < 1e-9
    assert np.allclose(low[2], multinomial_probit_log_prob(Y, F[2]))
    assert np.allclose(class_log_prob("softmax", Y, F), softmax_log_prob(Y, F))
    assert np.allclose(class_probabilities("softmax", F).sum(axis=-1), 1.0)


def test_stack_round_trip():
    F = np.arange(24.0).reshape(2, 4, 3)
    f = stack_latents(F)
    assert f.shape == (2, 12)
    assert np.array_equal(f[0, :4], F[0, :, 0])  # class by class
    assert np.array_equal(unstack_latents(f, 3), F)


def test_block_gaussian_of_zero_sites_is_the_prior():
    X = np.random.default_rng(2).standard_normal((5, 2))
    K = RBF(length_scale=1.0, variance=1.5)(X)
    q = block_site_gaussian(K, *_zero_sites(5, 3))
    assert np.allclose(q.cov, np.kron(np.eye(3), K), atol=1e-12)
    assert np.allclose(q.mean, 0.0) and abs(q.log_norm) < 1e-12


def test_laplace_sites_give_laplace_mean():
    rng = np.random.default_rng(3)
    X, codes = rng.standard_normal((12, 2)), rng.integers(0, 3, 12)
    K = RBF(length_scale=1.0, variance=2.0)(X)
    W, b = laplace_sites(K, codes, 3, scale=PROBIT_SCALE)
    assert W.shape == (12, 3, 3) and b.shape == (12, 3)
    assert np.all(np.linalg.eigvalsh(W) > -1e-12)
    q = block_site_gaussian(K, W, b)
    ratio = BlockSiteRatio("probit", W, b, q.mean, GAUSS_HERMITE_ORDER)
    assert ratio.log_prob(stack_latents(np.eye(3)[codes]), np.zeros(36)).shape == (12,)


@pytest.mark.parametrize("model", ["softmax", "probit"])
def test_weak_data_posterior_is_the_prior(model):
    # a prior variance of 1e-4: the likelihood is nearly 1/C everywhere
    X = np.random.default_rng(4).standard_normal((4, 1))
    kernel = RBF(length_scale=1.0, variance=1e-4)
    K = kernel(X)
    gold = multiclass_gold_standard(
        K, np.array([0, 1, 2, 0]), 3, model, *_zero_sites(4, 3), rng=5, **FAST
    )
    mcmc = gold.mcmc
    assert np.all(np.abs(mcmc.mean) < N_SE * mcmc.mean_se)
    prior_var = np.tile(np.diag(K), 3)
    assert np.all(np.abs(mcmc.var - prior_var) < N_SE * mcmc.var_se + 1e-3 * 1e-4)
    assert gold.mean.shape == gold.var.shape == (4, 3) and gold.cov.shape == (4, 3, 3)
    pred = multiclass_predictive(gold, kernel(X[:2], X), kernel.diag(X[:2]), rng=0)
    assert np.allclose(pred.prob, 1.0 / 3.0, atol=0.01)


@pytest.mark.parametrize("model, C", [("softmax", 2), ("softmax", 3), ("probit", 3)])
def test_ais_one_point_evidence(model, C):
    # one point: by the symmetry of the classes under the prior, p(y) = 1/C
    K = np.array([[2.0]])
    W, b = laplace_sites(K, np.array([0]), C)
    gold = multiclass_gold_standard(K, np.array([0]), C, model, W, b, rng=6, **FAST)
    ais = gold.ais
    assert abs(ais.log_evidence + np.log(C)) < N_SE * ais.log_evidence_se + 1e-3


def test_ais_two_points_probit_orthant():
    # C = 2: p(y) = 1/4 + arcsin(+-rho)/(2 pi), rho = K12 / (k + 1) (eq-mcg-orthant)
    K = np.array([[1.5, 1.0], [1.0, 1.5]])
    rho = 1.0 / 2.5
    for codes, sign in (([0, 0], 1.0), ([0, 1], -1.0)):
        exact = 0.25 + np.arcsin(sign * rho) / (2.0 * np.pi)
        W, b = laplace_sites(K, np.array(codes), 2, scale=PROBIT_SCALE)
        gold = multiclass_gold_standard(
            K, np.array(codes), 2, "probit", W, b, rng=7, **FAST
        )
        err = abs(gold.ais.log_evidence - np.log(exact))
        assert err < N_SE * gold.ais.log_evidence_se + 1e-3


def test_compare_with_gold():
    K = np.array([[2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        gold = multiclass_gold_standard(
            K, np.array([1]), 3, "softmax", *_zero_sites(1, 3), rng=8, **FAST
        )
    gold_prob = np.array([[0.2, 0.5, 0.3]])
    r = compare_with_gold(gold, gold_prob, [1], np.array([[0.3, 0.4, 0.3]]))
    assert r["d_mean"] is None and r["d_var"] is None and r["d_log_evidence"] is None
    assert np.isclose(r["d_prob"], 0.2 / 3) and np.isclose(r["max_d_prob"], 0.1)
    assert np.isclose(r["log_loss"], -np.log(0.4))
    assert np.isclose(r["gold_log_loss"], -np.log(0.5))
    r = compare_with_gold(
        gold, gold_prob, [1], gold_prob, mean=gold.mean, cov=gold.cov, log_evidence=0.0
    )
    assert r["d_mean"] == 0.0 and abs(r["d_var"]) < 1e-12
    assert r["d_log_evidence"] == -gold.ais.log_evidence
    with pytest.raises(ValueError, match="prob"):
        compare_with_gold(gold, gold_prob, [1], np.ones((2, 3)) / 3)


def test_bad_arguments():
    K = np.eye(3)
    codes = np.array([0, 1, 2])
    sites = _zero_sites(3, 3)
    with pytest.raises(ValueError, match="model"):
        multiclass_gold_standard(K, codes, 3, "logit", *sites)
    with pytest.raises(ValueError, match="model"):
        class_probabilities("logit", np.zeros((2, 3)))
    with pytest.raises(ValueError, match="codes"):
        multiclass_gold_standard(K, np.array([0, 1, 3]), 3, "softmax", *sites)
    with pytest.raises(ValueError, match="codes"):
        multiclass_gold_standard(K, np.array([0.0, 1.0, 2.0]), 3, "softmax", *sites)
    with pytest.raises(ValueError, match="n_classes"):
        multiclass_gold_standard(K, np.array([0, 0, 0]), 1, "softmax", *sites)
    with pytest.raises(ValueError, match="site_W"):
        multiclass_gold_standard(K, codes, 3, "softmax", np.zeros((3, 2, 2)), sites[1])
    with pytest.raises(ValueError, match="site_W"):
        block_site_gaussian(K, -np.ones((3, 3, 3)) * np.eye(3), sites[1])
    with pytest.raises(ValueError, match="site_b"):
        block_site_gaussian(K, sites[0], np.full((3, 3), np.nan))
    with pytest.raises(ValueError, match="K must"):
        block_site_gaussian(np.eye(2), *sites)
    with pytest.raises(TypeError, match="rng"):
        multiclass_gold_standard(K, codes, 3, "softmax", *sites, rng="seed")
    with pytest.raises(ValueError, match="order"):
        multinomial_probit_log_prob(np.eye(3), np.zeros((3, 3)), order=0)
    with pytest.raises(ValueError, match="scale"):
        laplace_sites(K, codes, 3, scale=0.0)
    K1 = np.array([[2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        gold = multiclass_gold_standard(
            K1, np.array([0]), 3, "softmax", *_zero_sites(1, 3), rng=0, **FAST
        )
    with pytest.raises(ValueError, match="K_cross"):
        multiclass_predictive(gold, np.ones((2, 3)), np.ones(2))
    with pytest.raises(ValueError, match="thin"):
        multiclass_predictive(gold, np.ones((2, 1)), np.ones(2), thin=0)
