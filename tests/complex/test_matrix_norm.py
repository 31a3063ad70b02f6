"""linalg.matrix_norm and norm of complex matrices against torch: values (real results) and
gradients by torch's conjugate convention, for every order, on a transposed (strided) input."""

import numpy as np
import pytest
import torch

import ember

ORDS = ["fro", "nuc", 2, -2, 1, -1, float("inf"), -float("inf")]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("ord", ORDS, ids=[str(o) for o in ORDS])
def test_complex_matrix_norm_values_and_gradients_equal_torchs(dtype, ord):
    rng = np.random.default_rng(7)
    z = (rng.standard_normal((2, 4, 3)) + 1j * rng.standard_normal((2, 4, 3))).astype(dtype)
    e = ember.tensor(z).transpose(-2, -1).detach().requires_grad_()
    t = torch.tensor(z).transpose(-2, -1).detach().requires_grad_()
    ours, theirs = ember.linalg.matrix_norm(e, ord), torch.linalg.matrix_norm(t, ord)
    assert str(ours.dtype) == str(theirs.dtype).replace("torch", "ember")
    eps = np.finfo(np.float32 if dtype == "complex64" else np.float64).eps
    tol = 32 * eps * np.abs(z).sum()  # sums of a dozen moduli, SVDs of 3x4 matrices
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), atol=tol, rtol=0)
    cot = rng.standard_normal(ours.shape)
    ours.backward(ember.tensor(cot, dtype=ours.dtype))
    theirs.backward(torch.tensor(cot, dtype=theirs.dtype))
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), atol=tol, rtol=0)


def test_complex_matrix_norm_gradcheck():
    z = ember.randn(3, 3, dtype=ember.complex128, requires_grad=True)
    for ord in ("fro", "nuc", 2, 1):
        assert ember.autograd.gradcheck(lambda a, o=ord: ember.linalg.matrix_norm(a, o), (z,))
