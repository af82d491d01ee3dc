"""gpc_literate.reference: the brute-force ground truth of chapter 7 (book/07_exact_relations.md)."""

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from gpc_literate.kernels import RBF
from gpc_literate.likelihoods import Gaussian, Probit, StepFlip
from gpc_literate.reference import (
    exact_embedding_strengths,
    exact_posterior_moments,
    flip_noise_parameters,
    sequential_importance_sample,
)

N_SE = 4.0
X6 = np.array([[-2.0], [-1.1], [-0.3], [0.4], [1.0], [2.1]])
Y6 = np.array([-1.0, -1.0, 1.0, -1.0, 1.0, 1.0])
K6 = RBF(length_scale=1.0)(X6)


def test_flip_noise_parameters():
    assert flip_noise_parameters(StepFlip(0.1)) == (0.1, 0.0)
    assert flip_noise_parameters(Probit(noise_var=0.3, kappa=0.05)) == (0.05, 0.3)
    assert flip_noise_parameters(Gaussian(1.0)) is None


def test_sampler_weights_estimate_the_orthant_probability():
    rng = np.random.default_rng(0)
    g, log_w = sequential_importance_sample(K6, Y6, 0.0, 200_000, rng)
    assert g.shape == (200_000, 6) and log_w.shape == (200_000,)
    assert np.all(Y6 * g > 0)  # kappa = 0: every draw satisfies the labels
    w = np.exp(log_w)
    estimate, se = w.mean(), w.std() / np.sqrt(len(w))
    D = np.diag(Y6)
    genz = multivariate_normal.cdf(
        np.zeros(6), mean=np.zeros(6), cov=D @ K6 @ D, abseps=1e-7, releps=1e-7, rng=0
    )
    assert abs(estimate - genz) < N_SE * se + 2e-6


@pytest.mark.parametrize(
    "lik", [StepFlip(0.0), StepFlip(0.1), Probit(noise_var=0.3, kappa=0.05)]
)
def test_sequential_and_prior_sampling_agree(lik):
    seq = exact_posterior_moments(K6, Y6, lik, n_samples=200_000, rng=1)
    pri = exact_posterior_moments(K6, Y6, lik, n_samples=400_000, rng=2, method="prior")
    z = (seq.mean - pri.mean) / np.hypot(seq.mean_se, pri.mean_se)
    assert np.all(np.abs(z) < N_SE)
    z_ev = (seq.log_evidence - pri.log_evidence) / np.hypot(
        seq.log_evidence_se, pri.log_evidence_se
    )
    assert abs(z_ev) < N_SE
    assert np.allclose(seq.cov, seq.cov.T) and np.all(
        np.linalg.eigvalsh(seq.cov) > -1e-10
    )


@pytest.mark.parametrize("lik", [StepFlip(0.1), Probit(noise_var=0.3, kappa=0.05)])
def test_mean_equals_kernel_expansion_with_independent_alpha(lik):
    mom = exact_posterior_moments(K6, Y6, lik, n_samples=200_000, rng=1)
    alpha, alpha_cov = exact_embedding_strengths(K6, Y6, lik, n_samples=100_000, rng=2)
    KY = K6 * Y6
    rep = KY @ alpha
    se = np.hypot(mom.mean_se, np.sqrt(np.diag(KY @ alpha_cov @ KY.T)))
    assert np.all(alpha > 0)
    assert np.all(np.abs(rep - mom.mean) < N_SE * se)


def test_gaussian_likelihood_is_closed_form():
    y = np.array([0.3, -1.2, 0.8, 2.0, -0.1, 0.5])
    mom = exact_posterior_moments(K6, y, Gaussian(0.2))
    A = K6 + 0.2 * np.eye(6)
    assert np.allclose(mom.mean, K6 @ np.linalg.solve(A, y), atol=1e-12)
    assert np.allclose(mom.cov, K6 - K6 @ np.linalg.solve(A, K6), atol=1e-12)
    assert np.isclose(mom.log_evidence, multivariate_normal(np.zeros(6), A).logpdf(y))
    # with labels +-1 (least-squares classification) the expansion <f> = K (y alpha) holds
    alpha, alpha_cov = exact_embedding_strengths(K6, Y6, Gaussian(0.2))
    mom = exact_posterior_moments(K6, Y6, Gaussian(0.2))
    assert np.allclose(K6 @ (Y6 * alpha), mom.mean) and not alpha_cov.any()


def test_probit_is_step_on_the_noisy_process():
    v = 0.3
    probit = exact_posterior_moments(
        K6, Y6, Probit(noise_var=v), n_samples=50_000, rng=7
    )
    noisy = exact_posterior_moments(
        K6 + v * np.eye(6), Y6, StepFlip(0.0), n_samples=50_000, rng=7
    )
    assert probit.log_evidence == pytest.approx(noisy.log_evidence, abs=1e-12)
    C = K6 + v * np.eye(6)
    assert np.allclose(probit.mean, K6 @ np.linalg.solve(C, noisy.mean), atol=1e-10)


def test_unlabelled_points_marginalise_out():
    X = np.vstack([X6, [[0.1], [3.0]]])
    y = np.concatenate([Y6, [np.nan, np.nan]])
    joint = exact_posterior_moments(
        RBF(length_scale=1.0)(X), y, StepFlip(0.1), n_samples=200_000, rng=3
    )
    alone = exact_posterior_moments(K6, Y6, StepFlip(0.1), n_samples=200_000, rng=4)
    z = (joint.mean[:6] - alone.mean) / np.hypot(joint.mean_se[:6], alone.mean_se)
    assert np.all(np.abs(z) < N_SE)
    assert joint.log_evidence == pytest.approx(
        alone.log_evidence,
        abs=N_SE * np.hypot(joint.log_evidence_se, alone.log_evidence_se),
    )
    alpha, _ = exact_embedding_strengths(
        RBF(length_scale=1.0)(X), y, StepFlip(0.1), n_samples=20_000, rng=5
    )
    assert alpha[6] == alpha[7] == 0.0


def test_reproducible_and_validated():
    a = exact_posterior_moments(K6, Y6, StepFlip(0.0), n_samples=10_000, rng=11)
    b = exact_posterior_moments(K6, Y6, StepFlip(0.0), n_samples=10_000, rng=11)
    assert np.array_equal(a.mean, b.mean) and a.log_evidence == b.log_evidence
    with pytest.raises(ValueError, match="method"):
        exact_posterior_moments(K6, Y6, StepFlip(0.0), method="magic")
    with pytest.raises(ValueError, match="n_samples"):
        exact_posterior_moments(K6, Y6, StepFlip(0.0), n_samples=0)
    with pytest.raises(ValueError, match="shape"):
        exact_posterior_moments(K6, Y6[:5], StepFlip(0.0))
    with pytest.raises(TypeError):
        exact_posterior_moments(K6, Y6, object())


def test_singular_covariance_is_handled():
    X = np.vstack([X6, X6[:1]])  # a repeated input: K is singular
    y = np.concatenate([Y6, Y6[:1]])
    mom = exact_posterior_moments(
        RBF(length_scale=1.0)(X), y, StepFlip(0.0), n_samples=20_000, rng=0
    )
    assert np.all(np.isfinite(mom.mean)) and abs(mom.mean[0] - mom.mean[-1]) < 1e-4
