"""linalg.eig and linalg.eigvals against torch: complex outputs for real and complex input,
batches and non-contiguous layouts, eigenvalues as a set (LAPACK builds may order them
differently), eigenvectors up to torch's guarantee (unit columns, a phase each), gradients of
losses that depend on neither order nor phases, gradcheck, and torch's refusals."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck

_RNG = np.random.default_rng(7)
DTYPES = ["float32", "float64", "complex64", "complex128"]


def _matrix(shape, dtype: str) -> np.ndarray:
    a = _RNG.uniform(-2, 2, shape)
    if dtype.startswith("complex"):
        a = a + 1j * _RNG.uniform(-2, 2, shape)
    return a.astype(dtype)


def _eps(dtype: str) -> float:
    return float(np.finfo(dtype).eps)


def _leaf(lib, a: np.ndarray, transposed: bool, grad: bool = False):
    t = lib.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2))).mT if transposed \
        else lib.tensor(a)
    return t.requires_grad_(grad) if grad else t


def _set_distance(x: np.ndarray, y: np.ndarray) -> float:
    """Largest distance from an entry of either set to the nearest entry of the other."""
    d = np.abs(x[..., :, None] - y[..., None, :])
    return float(max(d.min(-1).max(), d.min(-2).max()))


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_eig_values_against_torch(dtype, transposed):
    a = _matrix((3, 5, 5), dtype)
    L, V = ember.linalg.eig(_leaf(ember, a, transposed))
    tL, tV = torch.linalg.eig(_leaf(torch, a, transposed))
    assert str(L.dtype).split(".")[1] == str(tL.dtype).split(".")[1]
    assert V.dtype == L.dtype and tuple(V.shape) == (3, 5, 5)
    Ln, Vn, tLn, tVn = (x.numpy() for x in (L, V, tL, tV))
    scale = np.abs(a).sum((-1, -2)).max()
    tol = 200 * _eps(dtype) * scale  # eigenvalues of distinct random matrices: well separated
    assert np.abs(a.astype(Vn.dtype) @ Vn - Vn * Ln[..., None, :]).max() < tol
    np.testing.assert_allclose(np.linalg.norm(Vn, axis=-2), 1, atol=50 * _eps(dtype))
    assert _set_distance(Ln, tLn) < tol
    # the same eigenvector up to its phase: |<v, v_torch>| = 1 for matching eigenvalues
    for b in range(3):
        match = np.abs(Ln[b][:, None] - tLn[b][None, :]).argmin(1)
        overlap = np.abs(np.einsum("ij,ij->j", Vn[b].conj(), tVn[b][:, match]))
        np.testing.assert_allclose(overlap, 1, atol=1e3 * _eps(dtype))
    np.testing.assert_allclose(ember.linalg.eigvals(_leaf(ember, a, transposed)).numpy(), Ln,
                               atol=tol)


def test_eig_of_rotation_and_real_spectrum():
    L = ember.linalg.eigvals(ember.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=ember.float64))
    assert sorted(L.numpy().tolist(), key=lambda z: z.imag) == [-1j, 1j]
    L, V = ember.linalg.eig(ember.tensor([[2.0, 1.0], [0.0, 3.0]]))
    assert np.abs(L.numpy().imag).max() == 0 and sorted(L.numpy().real) == [2.0, 3.0]


def _vector_loss(lib, L, V):
    # depends on neither the order of the pairs nor the eigenvectors' phases
    return ((V.abs() ** 2) * (L.abs() + L.real).unsqueeze(-2)).sum() + (L ** 2).sum().real


def _value_loss(lib, L):
    return (L ** 3).sum().imag + L.abs().sum() + (L ** 2).sum().real


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_eig_gradients_against_torch(dtype):
    a = _matrix((2, 4, 4), dtype)
    grads = []
    for lib in (ember, torch):
        x = _leaf(lib, a, True, grad=True)
        L, V = lib.linalg.eig(x)
        _vector_loss(lib, L, V).backward()
        y = _leaf(lib, a, False, grad=True)
        _value_loss(lib, lib.linalg.eigvals(y)).backward()
        grads.append((x.grad.numpy(), y.grad.numpy()))
    assert grads[0][0].dtype == a.dtype
    for e, t in zip(*grads):
        np.testing.assert_allclose(e, t, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_eig_gradcheck(dtype):
    a = ember.tensor(_matrix((3, 3), dtype), requires_grad=True)
    assert gradcheck(lambda x: _vector_loss(ember, *ember.linalg.eig(x)), (a,))
    assert gradcheck(lambda x: _value_loss(ember, ember.linalg.eigvals(x)), (a,))
    assert gradcheck(lambda x: ember.linalg.eigvals(x).abs(), (a,))


def test_phase_dependent_loss_raises_like_torch():
    a = _matrix((3, 3), "float64")
    messages = []
    for lib in (ember, torch):
        x = lib.tensor(a, requires_grad=True)
        _, V = lib.linalg.eig(x)
        with pytest.raises(RuntimeError, match="specified up to multiplication") as e:
            V.sum().abs().backward()
        messages.append(str(e.value))
    assert messages[0] == messages[1]


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
@pytest.mark.parametrize("fn", ["eig", "eigvals"])
@pytest.mark.parametrize("make,exc", [
    (lambda lib: lib.ones(2, 3), RuntimeError),
    (lambda lib: lib.ones(3), RuntimeError),
    (lambda lib: lib.ones(3, 3, dtype=lib.int64), RuntimeError),
    (lambda lib: lib.ones(3, 3, dtype=lib.float16), NotImplementedError),
    (lambda lib: lib.ones(3, 3, dtype=lib.bfloat16), NotImplementedError),
])
def test_errors_like_torch(fn, make, exc):
    with pytest.raises(exc) as theirs:
        getattr(torch.linalg, fn)(make(torch))
    with pytest.raises(exc) as ours:
        getattr(ember.linalg, fn)(make(ember))
    assert str(ours.value) == str(theirs.value)


def test_eig_rejects_non_finite_like_torch():
    with pytest.raises(RuntimeError, match="should not contain infs or NaNs"):
        ember.linalg.eig(ember.tensor([[float("nan"), 1.0], [1.0, 1.0]]))


def test_empty_batches():
    L, V = ember.linalg.eig(ember.ones(2, 0, 0, dtype=ember.float64))
    assert L.dtype == ember.complex128 and tuple(L.shape) == (2, 0) and tuple(V.shape) == (2, 0, 0)
    assert tuple(ember.linalg.eigvals(ember.ones(0, 3, 3)).shape) == (0, 3)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("hermitian", [False, True])
def test_matrix_rank_of_complex_matrices_like_torch(dtype, hermitian):
    x = _matrix((2, 4, 2), dtype)
    a = x @ np.swapaxes(x, -1, -2).conj() if hermitian else x @ _matrix((2, 2, 4), dtype)
    a = np.concatenate([a, _matrix((1, 4, 4), dtype)]).astype(dtype)  # ranks 2, 2 and 4
    if hermitian:
        a[2] = a[2] + a[2].conj().T
    ours = ember.linalg.matrix_rank(ember.tensor(a), hermitian=hermitian)
    theirs = torch.linalg.matrix_rank(torch.tensor(a), hermitian=hermitian)
    assert ours.tolist() == theirs.tolist() == [2, 2, 4]
