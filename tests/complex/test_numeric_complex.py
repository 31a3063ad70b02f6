"""sinc, cov and corrcoef of complex tensors as torch's (values and gradients): sinc stays
complex (sin(pi z) / (pi z), 1 at 0)."""

import numpy as np
import pytest
import torch

import ember

Z = [0j, 0.5 + 0.5j, 1e-20 + 0j, 2 - 1j, -3 + 0.25j]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_sinc_equals_torchs(dtype):
    ours = ember.sinc(ember.tensor(Z, dtype=getattr(ember, dtype)))
    theirs = torch.sinc(torch.tensor(Z, dtype=getattr(torch, dtype)))
    assert ours.dtype is getattr(ember, dtype)
    eps = np.finfo(np.float32 if dtype == "complex64" else np.float64).eps
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=16 * eps, atol=16 * eps)


def test_complex_sinc_gradients_equal_torchs():
    a = ember.tensor(Z, dtype=ember.complex128, requires_grad=True)
    b = torch.tensor(Z, dtype=torch.complex128, requires_grad=True)
    ember.sinc(a).abs().sum().backward()
    torch.sinc(b).abs().sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-13, atol=1e-13)
    z = ember.tensor(Z[1:], dtype=ember.complex128, requires_grad=True)
    assert ember.autograd.gradcheck(ember.sinc, (z,))


@pytest.mark.parametrize("name", ["cov", "corrcoef"])
def test_complex_cov_and_corrcoef_equal_torchs(name):
    """The covariance conjugates the second factor; corrcoef clips real and imaginary parts."""
    rng = np.random.default_rng(0)
    z = rng.standard_normal((3, 5)) + 1j * rng.standard_normal((3, 5))
    a = ember.tensor(z, requires_grad=True)
    b = torch.tensor(z, requires_grad=True)
    ours, theirs = getattr(ember, name)(a), getattr(torch, name)(b)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-13,
                               atol=1e-13)
    ours.abs().sum().backward()
    theirs.abs().sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-12)
    if name == "cov":
        w, aw = [1, 2, 1, 3, 1], rng.uniform(0.5, 1, 5)
        ours = ember.cov(a, fweights=ember.tensor(w), aweights=ember.tensor(aw))
        theirs = torch.cov(b, fweights=torch.tensor(w), aweights=torch.tensor(aw))
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(),
                                   rtol=1e-13, atol=1e-13)
