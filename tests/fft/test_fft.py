"""ember.fft beyond the op table: direct complex cotangents, second derivatives of the real
transforms, ``out=``, the Meta device, the normalization codes and stft/istft round trips."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ember
from ember.ops import fft as F
from tests.opinfo import make, to_torch

EPS64 = float(np.finfo(np.float64).eps)


def _close(e: ember.Tensor, t: torch.Tensor, points: int = 64):
    """Equal within the DFT's rounding bound ``eps * points * max |value|``."""
    e = e.detach().resolve_conj().numpy()
    t = t.detach().resolve_conj().numpy()
    assert e.shape == t.shape and e.dtype == t.dtype
    eps = np.finfo(t.real.dtype).eps
    scale = max(1.0, float(np.abs(t).max())) if t.size else 1.0
    np.testing.assert_allclose(e, t, rtol=0, atol=4 * eps * points * scale)


@pytest.mark.parametrize("norm", [None, "backward", "forward", "ortho"])
@pytest.mark.parametrize("forward", [True, False])
def test_norm_codes_are_torchs(norm, forward):
    """fft_norm_mode: what to divide by, whatever the direction."""
    expected = {(None, True): 0, ("backward", True): 0, ("forward", True): 2,
                ("ortho", True): 1, (None, False): 2, ("backward", False): 2,
                ("forward", False): 0, ("ortho", False): 1}
    assert F.norm_code(norm, forward) == expected[(norm, forward)]


def _rng_complex(shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


CASES = [("fft", (6,), {}), ("ifft", (5, 4), {"dim": 0, "norm": "ortho"}),
         ("hfft", (5,), {"n": 7}), ("irfft", (3, 5), {"norm": "forward"}),
         ("fftn", (3, 4), {"s": (4, 3)}), ("irfftn", (4, 3), {"dim": (1, 0)}),
         ("ifft2", (2, 3, 4), {"norm": "forward"})]


@pytest.mark.parametrize("name,shape,kw", CASES, ids=[c[0] for c in CASES])
def test_complex_input_gradients_match_torch(name, shape, kw):
    """A complex leaf and a random complex (or real) cotangent: torch's conjugate-Wirtinger
    gradient, with no real reparametrization in between."""
    z = _rng_complex(shape)
    e_x = ember.tensor(z).requires_grad_()
    t_x = torch.tensor(z).requires_grad_()
    e_y, t_y = getattr(ember.fft, name)(e_x, **kw), getattr(torch.fft, name)(t_x, **kw)
    cot = _rng_complex(tuple(t_y.shape), 1) if t_y.is_complex() else \
        np.random.default_rng(1).standard_normal(tuple(t_y.shape))
    e_g, = ember.autograd.grad(e_y, e_x, ember.tensor(cot))
    t_g, = torch.autograd.grad(t_y, t_x, torch.tensor(cot))
    _close(e_g, t_g)


@pytest.mark.parametrize("op,args", [
    (F._fft_r2c, ([0], 0, True)), (F._fft_r2c, ([1, 0], 1, True)), (F._fft_r2c, ([0], 2, False)),
])
@pytest.mark.parametrize("size", [5, 6])
def test_real_to_complex_second_derivatives(op, args, size):
    """The gradient of r2c is itself differentiable (double backward through its adjoint)."""
    x = make((size, 3), "float64", requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda t: ember.view_as_real(op(t, *args)), (x,))


@pytest.mark.parametrize("n", [5, 6])
@pytest.mark.parametrize("norm", [0, 1, 2])
def test_complex_to_real_second_derivatives(n, norm):
    x = make((n // 2 + 1, 3, 2), "float64", requires_grad=True)

    def fn(t):
        return F._fft_c2r(ember.view_as_complex(t), [0], norm, n)
    assert ember.autograd.gradgradcheck(fn, (x,))


@pytest.mark.parametrize("name,x_dtype,out_dtype", [
    ("fft", "float64", ember.complex128), ("rfft", "float32", ember.complex64),
    ("irfft", "float64", ember.float64), ("fftn", "float32", ember.complex64)])
def test_out_is_resized_and_written(name, x_dtype, out_dtype):
    x = make((4, 6), x_dtype)
    if name == "irfft":
        x = x.to(out_dtype.to_complex())
    out = ember.empty(0, dtype=out_dtype)
    result = getattr(ember.fft, name)(x, out=out)
    assert result is out
    expected = getattr(torch.fft, name)(to_torch(x))
    _close(out, expected)


def test_transforms_on_meta_give_torchs_shapes_and_strides():
    x = ember.empty_strided((3, 4, 5), (1, 3, 12), dtype=ember.float32, device="meta")
    y = ember.fft.rfftn(x, dim=(0, 2))
    t = torch.fft.rfftn(torch.empty_strided((3, 4, 5), (1, 3, 12)), dim=(0, 2))
    assert y.device.type == "meta"
    assert (tuple(y.shape), y.stride(), y.dtype) == (tuple(t.shape), t.stride(),
                                                      ember.complex64)


def test_stft_on_meta_has_torchs_shape():
    x = ember.empty(2, 40, device="meta")
    y = ember.stft(x, 16, hop_length=4, window=ember.ones(16, device="meta"),
                   return_complex=True)
    assert y.device.type == "meta" and tuple(y.shape) == (2, 9, 11)


@pytest.mark.parametrize("n_fft,hop,win", [(16, 4, None), (15, 5, 12), (8, 2, 8)])
@pytest.mark.parametrize("batched", [False, True])
def test_istft_inverts_stft(n_fft, hop, win, batched):
    x = make((2, 50) if batched else (50,), "float64")
    window = ember.hann_window(win or n_fft, dtype=ember.float64)
    spec = ember.stft(x, n_fft, hop, win, window, return_complex=True)
    back = ember.istft(spec, n_fft, hop, win, window, length=50)
    np.testing.assert_allclose(back.numpy(), x.numpy(), rtol=0, atol=64 * EPS64 * 3)


def test_stft_is_a_tensor_method():
    x = make((30,), "float64")
    w = ember.hann_window(8, dtype=ember.float64)
    _close(x.stft(8, window=w, return_complex=True),
           to_torch(x).stft(8, window=to_torch(w), return_complex=True))
    spec = x.stft(8, window=w, return_complex=True)
    _close(spec.istft(8, window=w), to_torch(spec).istft(8, window=to_torch(w)))


def test_stft_and_istft_warn_as_torch():
    x = make((30,), "float32")
    with pytest.warns(UserWarning, match="A window was not provided"):
        ember.stft(x, 8, return_complex=True)
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        out = ember.stft(x, 8, window=ember.ones(8), return_complex=False)
    assert tuple(out.shape) == (5, 16, 2) and out.dtype == ember.float32
    spec = ember.stft(x, 8, window=ember.hann_window(8), return_complex=True)
    with pytest.warns(UserWarning, match="padded with zeros in the tail"):
        y = ember.istft(spec, 8, window=ember.hann_window(8), length=40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.istft(to_torch(spec), 8, window=torch.hann_window(8), length=40)
    np.testing.assert_allclose(y.numpy(), t.numpy(), rtol=0, atol=64 * 2.0 ** -23 * 3)


def test_op_table_samples_mostly_run_in_torch():
    """An entry whose samples torch rejects would compare only errors: most must run."""
    from tests.ops.opdb.fft import OPS
    for info in (i for i in OPS if i.dtypes):
        samples = list(info.samples("float64" if "float64" in info.dtypes else info.dtypes[0]))
        ran = 0
        for s in samples:
            args, kwargs = to_torch((s.args, s.kwargs))
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    info.fn(torch, *args, **kwargs)
                ran += 1
            except RuntimeError:
                pass
        assert 3 * ran >= 2 * len(samples), f"{info.name}: torch ran {ran} of {len(samples)}"
