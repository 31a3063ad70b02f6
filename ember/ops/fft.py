"""The discrete Fourier transforms of ``torch.fft``: three primitives and their composites.

As in torch, three operators do every transform: ``_fft_c2c`` (complex to complex),
``_fft_r2c`` (real to complex, optionally one-sided) and ``_fft_c2r`` (Hermitian one-sided
complex to real), each over a list of dims with a normalization code. The public functions
(``fft_fft`` ... ``fft_irfftn``; ``ember.fft.fft`` ...) are composites that validate ``n``/``s``/
``dim``/``norm``, promote the input, pad or trim it and call a primitive, so their gradients
follow from the primitives' rules. ``fftfreq``/``rfftfreq``/``fftshift``/``ifftshift`` are
composites of ``arange`` and ``roll``; ``stft``/``istft`` frame, window and transform with
the same primitives. The file is over 800 lines because it is one family: the primitives,
their argument rules and normalization codes are shared by every function here.
"""

from __future__ import annotations

import math
import warnings
from operator import index as as_index

from ember.core import dtype as dt
from ember.core.layout import canonical_dim, contiguous_strides
from ember.ops import views
from ember.ops._define import Spec, composite, derivative, operator
from ember.ops.conv import _pad_op, constant_pad_nd
from ember.ops.creation import arange, ones, zeros
from ember.ops.shape import roll
from ember.tensor import Tensor

__all__ = ["fft_fft", "fft_ifft", "fft_rfft", "fft_irfft", "fft_hfft", "fft_ihfft", "fft_fft2",
           "fft_ifft2", "fft_rfft2", "fft_irfft2", "fft_hfft2", "fft_ihfft2", "fft_fftn",
           "fft_ifftn", "fft_rfftn", "fft_irfftn", "fft_hfftn", "fft_ihfftn", "fft_fftfreq",
           "fft_rfftfreq", "fft_fftshift", "fft_ifftshift", "stft", "istft"]

# NOTE [FFT normalization codes]
# The primitives take torch's ``fft_norm_mode`` code, which says what to divide by whatever
# the direction: 0 nothing, 1 sqrt(n), 2 n (n: the product of the transformed sizes). The
# public ``norm=`` names a convention per direction: "backward" (default) leaves the forward
# transform unscaled and divides the inverse by n, "forward" the reverse, "ortho" divides
# both by sqrt(n). So the adjoint of a transform is the opposite-direction transform with
# the *same* code, which is what the derivative rules below use.
NORM_NONE, NORM_BY_ROOT_N, NORM_BY_N = 0, 1, 2


def norm_code(norm: str | None, forward: bool) -> int:
    """torch's ``norm_from_string``: the normalization code of ``norm`` for one direction."""
    if norm is not None and not isinstance(norm, str):
        raise TypeError(f"argument 'norm' must be str, not {type(norm).__name__}")
    if norm is None or norm == "backward":
        return NORM_NONE if forward else NORM_BY_N
    if norm == "forward":
        return NORM_BY_N if forward else NORM_NONE
    if norm == "ortho":
        return NORM_BY_ROOT_N
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


# -- output layout --------------------------------------------------------------------------
def _sorted_dims(strides: tuple, dims: tuple, exclude_last: bool = False) -> tuple:
    """The transform dims ordered by decreasing input stride (the last one kept last for
    r2c), as torch's CPU FFT plans them."""
    head = dims[:-1] if exclude_last else dims
    tail = dims[-1:] if exclude_last else ()
    return tuple(sorted(head, key=lambda d: -strides[d])) + tail


def fft_out_strides(in_strides: tuple, out_shape: tuple, dims: tuple) -> tuple:
    """The strides torch gives an FFT's output: batch dims outermost (in decreasing input
    stride order), then the transform dims in ``dims`` order, densely packed."""
    batch = sorted((d for d in range(len(out_shape)) if d not in dims),
                   key=lambda d: -in_strides[d])
    order = tuple(batch) + tuple(dims)
    packed = contiguous_strides(tuple(out_shape[d] for d in order))
    strides = [0] * len(out_shape)
    for d, s in zip(order, packed):
        strides[d] = s
    return tuple(strides)


def _check_dims(x: Tensor, dim) -> tuple:
    """``dim`` wrapped into ``x``'s dims (torch's ``maybe_wrap_dims`` without scalar wrapping)."""
    nd = len(x._shape)
    if nd == 0 and dim:
        raise IndexError(f"Dimension specified as {dim[0]} but tensor has no dimensions")
    return tuple(canonical_dim(int(d), nd) for d in dim)


# -- primitives -------------------------------------------------------------------------------
@operator("_fft_c2c(Tensor self, SymInt[] dim, int normalization, bool forward) -> Tensor",
          method=False)
def _fft_c2c(self: Tensor, dim, normalization: int, forward: bool):
    """Complex-to-complex DFT of ``self`` over ``dim`` (``torch._fft_c2c``).

    Args:
        self: a complex tensor. dim: the dims to transform. normalization: a code of
            NOTE [FFT normalization codes]. forward: the sign of the exponent (True: ``-``).

    Shape: same as ``self``; the dtype is ``self``'s.

    Example:
        >>> x = ember.tensor([1.0, 0.0, 0.0, 0.0]).to(ember.complex64)
        >>> ember.ops.fft._fft_c2c(x, [0], 0, True).real.tolist()
        [1.0, 1.0, 1.0, 1.0]
    """
    dims = _check_dims(self, dim)
    if not self._dtype.is_complex:
        raise RuntimeError(f"Only supports complex dtypes, but found: {self._dtype.scalar_name}")
    strides = fft_out_strides(self._stride, self._shape, _sorted_dims(self._stride, dims))
    return Spec(self._shape, self._dtype, strides if dims else None)


@derivative(_fft_c2c)
def _fft_c2c_backward(ctx, grad):
    return _fft_c2c(grad, ctx.dim, ctx.normalization, not ctx.forward)


@operator("_fft_r2c(Tensor self, int[] dim, int normalization, bool onesided) -> Tensor",
          method=False)
def _fft_r2c(self: Tensor, dim, normalization: int, onesided: bool):
    """Forward DFT of a real tensor over ``dim`` (``torch._fft_r2c``).

    Args:
        self: a float32/float64 tensor. dim: the dims to transform (at least one).
            normalization: NOTE [FFT normalization codes]. onesided: keep only the
            ``n // 2 + 1`` non-redundant frequencies of the last dim of ``dim``.

    Shape: ``self``'s, with the last transformed dim ``n // 2 + 1`` when ``onesided``; the
        dtype is the complex dtype of ``self``'s.

    Example:
        >>> ember.ops.fft._fft_r2c(ember.tensor([1.0, 2.0, 3.0]), [0], 0, True).real.tolist()
        [6.0, -1.5]
    """
    dims = _check_dims(self, dim)
    if not self._dtype.is_floating_point:
        raise RuntimeError(f"Only supports floating-point dtypes, but found: "
                           f"{self._dtype.scalar_name}")
    shape = list(self._shape)
    if onesided:
        shape[dims[-1]] = shape[dims[-1]] // 2 + 1
    order = _sorted_dims(self._stride, dims, exclude_last=True)
    return Spec(tuple(shape), self._dtype.to_complex(),
                fft_out_strides(self._stride, tuple(shape), order))


@operator("_fft_c2r(Tensor self, int[] dim, int normalization, SymInt last_dim_size) -> Tensor",
          method=False)
def _fft_c2r(self: Tensor, dim, normalization: int, last_dim_size: int):
    """Inverse DFT of one-sided Hermitian data to a real tensor (``torch._fft_c2r``).

    The last dim of ``dim`` holds ``last_dim_size // 2 + 1`` frequencies of a signal of
    ``last_dim_size`` points; the imaginary parts of its zero (and, for even sizes, Nyquist)
    frequency are ignored. The other dims go through a complex inverse transform first.

    Shape: ``self``'s with the last transformed dim ``last_dim_size``; real dtype.

    Example:
        >>> x = ember.tensor([6.0, -1.5]).to(ember.complex64)
        >>> ember.ops.fft._fft_c2r(x, [0], 2, 3).tolist()
        [1.0, 2.5, 2.5]
    """
    dims = _check_dims(self, dim)
    if not self._dtype.is_complex:
        raise RuntimeError(f"Only supports complex dtypes, but found: {self._dtype.scalar_name}")
    shape = list(self._shape)
    shape[dims[-1]] = int(last_dim_size)
    c2c_strides = fft_out_strides(self._stride, self._shape, _sorted_dims(self._stride,
                                                                          dims[:-1]))
    strides = c2c_strides if len(dims) > 1 else self._stride
    return Spec(tuple(shape), self._dtype.to_real(),
                fft_out_strides(strides, tuple(shape), dims[-1:]))


# NOTE [Gradients of the real transforms]
# r2c and c2r are R-linear maps between real and complex tensors; their gradients are the
# adjoint maps, as torch's ``fft_r2c_backward``/``fft_c2r_backward`` compute them:
# - r2c: zero-pad a one-sided gradient back to the full length, inverse c2c, keep the real
#   part (the dropped half of a one-sided output carries no gradient);
# - c2r: r2c of the gradient, with the frequencies that stand for two conjugate bins
#   (``1 .. n - (n // 2 + 1)`` of the last dim) doubled.
# Both are operators of their own with CPU kernels, so they need no complex pointwise ops;
# each is linear and its own gradient is the primitive it is the adjoint of.
@operator("_fft_r2c_backward(Tensor grad, int[] dim, int normalization, bool onesided, "
          "SymInt last_dim_size) -> Tensor", method=False)
def _fft_r2c_backward(grad: Tensor, dim, normalization: int, onesided: bool,
                      last_dim_size: int):
    """The gradient of :func:`_fft_r2c` (NOTE [Gradients of the real transforms]).

    Shape: ``grad``'s with the last transformed dim ``last_dim_size``; real dtype.

    Example:
        >>> g = ember.tensor([1.0, 0.0]).to(ember.complex64)
        >>> ember.ops.fft._fft_r2c_backward(g, [0], 0, True, 3).tolist()
        [1.0, 1.0, 1.0]
    """
    dims = _check_dims(grad, dim)
    shape = list(grad._shape)
    shape[dims[-1]] = int(last_dim_size)
    return Spec(tuple(shape), grad._dtype.to_real())


@operator("_fft_c2r_backward(Tensor grad, int[] dim, int normalization) -> Tensor",
          method=False)
def _fft_c2r_backward(grad: Tensor, dim, normalization: int):
    """The gradient of :func:`_fft_c2r` (NOTE [Gradients of the real transforms]).

    Shape: ``grad``'s with the last transformed dim ``n // 2 + 1``; complex dtype.

    Example:
        >>> g = ember.tensor([1.0, 0.0, 0.0])
        >>> ember.ops.fft._fft_c2r_backward(g, [0], 0).real.tolist()
        [1.0, 2.0]
    """
    dims = _check_dims(grad, dim)
    shape = list(grad._shape)
    shape[dims[-1]] = shape[dims[-1]] // 2 + 1
    return Spec(tuple(shape), grad._dtype.to_complex())


@derivative(_fft_r2c)
def _fft_r2c_grad(ctx, grad):
    n = ctx.shape_of("self")[canonical_dim(ctx.dim[-1], len(ctx.shape_of("self")))]
    return _fft_r2c_backward(grad, ctx.dim, ctx.normalization, ctx.onesided, n)


@derivative(_fft_c2r)
def _fft_c2r_grad(ctx, grad):
    return _fft_c2r_backward(grad, ctx.dim, ctx.normalization)


@derivative(_fft_r2c_backward)
def _fft_r2c_backward_grad(ctx, gg):
    return _fft_r2c(gg, ctx.dim, ctx.normalization, ctx.onesided)


@derivative(_fft_c2r_backward)
def _fft_c2r_backward_grad(ctx, gg):
    shape = ctx.shape_of("grad")
    return _fft_c2r(gg, ctx.dim, ctx.normalization, shape[canonical_dim(ctx.dim[-1],
                                                                        len(shape))])


# -- argument handling (torch's SpectralOps.cpp) ----------------------------------------------
def _promote(x: Tensor, require_complex: bool = False) -> Tensor:
    """torch's ``promote_tensor_fft``: integers to the default dtype, then (optionally) to the
    complex dtype; the CPU transforms take float32/float64 and their complex dtypes only."""
    d = x._dtype
    if d.is_complex:
        return x
    if not d.is_floating_point:
        d = dt.get_default_dtype()
    if d not in (dt.float32, dt.float64):
        raise RuntimeError(f"Unsupported dtype {d.scalar_name}")
    if require_complex:
        d = d.to_complex()
    return x if d is x._dtype else x.to(d)


def _wrap(x: Tensor, dim) -> int:
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"argument 'dim' must be int, not {type(dim).__name__}")
    return _check_dims(x, (dim,))[0]


def _points(n) -> int:
    n = _index(n, "n", "int")
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return n


def _index(value, arg: str, expected: str) -> int:
    """``value`` as an int (anything with ``__index__``); TypeError like torch's parser."""
    try:
        return as_index(value)
    except TypeError:
        raise TypeError(f"argument '{arg}' must be {expected}, not "
                        f"{type(value).__name__}") from None


def _resize(x: Tensor, dims: tuple, sizes: tuple) -> Tensor:
    """torch's ``resize_fft_input``: trim (a view) or zero-pad ``x`` to ``sizes`` along
    ``dims``."""
    pad = [0] * (2 * len(x._shape))
    for d, n in zip(dims, sizes):
        if x._shape[d] > n:
            x = x.narrow(d, 0, n)
        elif x._shape[d] < n:
            pad[len(pad) - 2 * d - 1] = n - x._shape[d]
    return constant_pad_nd(x, pad) if any(pad) else x


def _shape_and_dims(x: Tensor, s, dim) -> tuple[tuple, tuple]:
    """torch's ``canonicalize_fft_shape_and_dim_args``: the sizes and dims to transform."""
    nd = len(x._shape)
    dims = None
    if dim is not None:
        dims = _check_dims(x, (dim,) if isinstance(dim, int) else tuple(dim))
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        s = (s,) if isinstance(s, int) else tuple(s)
        if dims is not None and len(dims) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > nd:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {nd} "
                               "dimensions.")
        dims = tuple(range(nd - len(s), nd)) if dims is None else dims
        s = tuple(_index(n, "s", "tuple of ints") for n in s)
        shape = tuple(x._shape[d] if n == -1 else n for d, n in zip(dims, s))
    else:
        dims = tuple(range(nd)) if dims is None else dims
        shape = tuple(x._shape[d] for d in dims)
    for n in shape:
        _points(n)
    return shape, dims


def _c2r_shape_and_dims(name: str, x: Tensor, s, dim) -> tuple[tuple, tuple, int]:
    """The sizes, dims and output length of a c2r transform (Hermitian last dim)."""
    shape, dims = _shape_and_dims(x, s, dim)
    if not shape:
        raise RuntimeError(f"{name} must transform at least one axis")
    s_last = None if s is None else s if isinstance(s, int) else tuple(s)[-1]
    last = _points(shape[-1] if s_last not in (None, -1) else 2 * (x._shape[dims[-1]] - 1))
    return shape[:-1] + (last // 2 + 1,), dims, last


def _write_out(name: str, result: Tensor, out: Tensor | None, complex_out: bool) -> Tensor:
    if out is None:
        return result
    if out._dtype.is_complex != complex_out:
        kind = "complex" if complex_out else "floating point" if name == "hfftn" else "real"
        raise RuntimeError(f"{name} expects a {kind} output tensor, but got "
                           f"{out._dtype.scalar_name}")
    if out._shape != result._shape:
        out.resize_(result._shape)
    return out.copy_(result)


def _real_input(name: str, x: Tensor, what: str = "real") -> None:
    if x._dtype.is_complex:
        raise RuntimeError(f"{name} expects a {what} input tensor, but got "
                           f"{x._dtype.scalar_name}")


# -- one-dimensional transforms ---------------------------------------------------------------
def _c2c_1d(name, x, n, dim, norm, forward, out):
    d = _wrap(x, dim)
    n = _points(x._shape[d] if n is None else n)
    x = _resize(x, (d,), (n,))
    return _write_out(name, _fft_c2c(x, [d], norm_code(norm, forward), forward), out, True)


def _r2c_1d(name, x, n, dim, norm, forward, onesided, out):
    _real_input(name, x)
    x = _promote(x)
    d = _wrap(x, dim)
    n = _points(x._shape[d] if n is None else n)
    x = _resize(x, (d,), (n,))
    result = _fft_r2c(x, [d], norm_code(norm, forward), onesided)
    return _write_out(name, result if forward else result.conj(), out, True)


def _c2r_1d(name, x, n, dim, norm, forward, out):
    x = _promote(x, require_complex=True)
    d = _wrap(x, dim)
    n = _points(2 * (x._shape[d] - 1) if n is None else n)
    x = _resize(x, (d,), (n // 2 + 1,))
    if forward:
        x = x.conj()
    return _write_out(name, _fft_c2r(x, [d], norm_code(norm, forward), n), out, False)


_ONE_D = ("(Tensor self, SymInt? n=None, int dim=-1, str? norm=None, *, "
          "Tensor(a!)? out=None) -> Tensor")


@composite("fft_fft" + _ONE_D, method=False)
def fft_fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *,
            out: Tensor | None = None) -> Tensor:
    """The one-dimensional discrete Fourier transform of ``input`` along ``dim``
    (``torch.fft.fft``).

    Args:
        input: a real or complex tensor (integers promote to the default dtype).
        n: the signal length: ``input`` is zero-padded or trimmed to ``n`` along ``dim``.
        dim: the dim to transform. norm: ``"backward"`` (default: no scaling),
            ``"forward"`` (divide by ``n``) or ``"ortho"`` (divide by ``sqrt(n)``).
        out: optional complex output tensor.

    Shape: ``input``'s with ``dim`` of length ``n``; complex dtype.

    Raises:
        RuntimeError: ``n < 1``, a float16/bfloat16 input, an unknown ``norm``.

    Example:
        >>> ember.fft.fft(ember.tensor([1.0, 2.0, 3.0, 4.0]))
        tensor([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j])
    """
    if input._dtype.is_complex:
        return _c2c_1d("fft", input, n, dim, norm, True, out)
    return _r2c_1d("fft", input, n, dim, norm, True, False, out)


@composite("fft_ifft" + _ONE_D, method=False)
def fft_ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *,
             out: Tensor | None = None) -> Tensor:
    """The inverse of :func:`fft_fft` (``torch.fft.ifft``; ``norm="backward"`` divides by
    ``n``). Arguments and shape as :func:`fft_fft`.

    Example:
        >>> ember.fft.ifft(ember.fft.fft(ember.tensor([1.0, 2.0, 3.0]))).real.tolist()
        [1.0, 2.0, 3.0]
    """
    if input._dtype.is_complex:
        return _c2c_1d("ifft", input, n, dim, norm, False, out)
    return _r2c_1d("ifft", input, n, dim, norm, False, False, out)


@composite("fft_rfft" + _ONE_D, method=False)
def fft_rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *,
             out: Tensor | None = None) -> Tensor:
    """The DFT of a real ``input`` keeping the ``n // 2 + 1`` non-negative frequencies
    (``torch.fft.rfft``). Arguments as :func:`fft_fft`; a complex input raises RuntimeError.

    Shape: ``input``'s with ``dim`` of length ``n // 2 + 1``; complex dtype.

    Example:
        >>> ember.fft.rfft(ember.tensor([1.0, 2.0, 3.0, 4.0]))
        tensor([10.+0.j, -2.+2.j, -2.+0.j])
    """
    return _r2c_1d("rfft", input, n, dim, norm, True, True, out)


@composite("fft_irfft" + _ONE_D, method=False)
def fft_irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *,
              out: Tensor | None = None) -> Tensor:
    """The inverse of :func:`fft_rfft`: a real signal of ``n`` points (default
    ``2 * (size - 1)``) from its one-sided spectrum (``torch.fft.irfft``).

    ``input`` is trimmed or zero-padded to ``n // 2 + 1`` along ``dim``; the imaginary parts
    of its zero and Nyquist frequencies are ignored.

    Shape: ``input``'s with ``dim`` of length ``n``; real dtype.

    Example:
        >>> ember.fft.irfft(ember.fft.rfft(ember.tensor([1.0, 2.0, 3.0])), n=3).tolist()
        [1.0, 2.0, 3.0]
    """
    return _c2r_1d("irfft", input, n, dim, norm, False, out)


@composite("fft_hfft" + _ONE_D, method=False)
def fft_hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *,
             out: Tensor | None = None) -> Tensor:
    """The DFT of a Hermitian-symmetric signal given by its first half: a real result of
    ``n`` points, default ``2 * (size - 1)`` (``torch.fft.hfft``).

    Shape: ``input``'s with ``dim`` of length ``n``; real dtype.

    Example:
        >>> ember.fft.hfft(ember.tensor([1.0, 2.0, 3.0])).tolist()
        [8.0, -2.0, 0.0, -2.0]
    """
    return _c2r_1d("hfft", input, n, dim, norm, True, out)


@composite("fft_ihfft" + _ONE_D, method=False)
def fft_ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *,
              out: Tensor | None = None) -> Tensor:
    """The inverse of :func:`fft_hfft`: the one-sided inverse DFT of a real ``input``
    (``torch.fft.ihfft``).

    Shape: ``input``'s with ``dim`` of length ``n // 2 + 1``; complex dtype.

    Example:
        >>> ember.fft.ihfft(ember.tensor([8.0, -2.0, 0.0, -2.0])).real.tolist()
        [1.0, 2.0, 3.0]
    """
    return _r2c_1d("ihfft", input, n, dim, norm, False, True, out)


# -- n-dimensional transforms -----------------------------------------------------------------
def _c2c_nd(name, x, s, dim, norm, forward, out):
    shape, dims = _shape_and_dims(x, s, dim)
    x = _resize(_promote(x, require_complex=True), dims, shape)
    return _write_out(name, _fft_c2c(x, list(dims), norm_code(norm, forward), forward), out,
                      True)


def _rfftn(x, s, dim, norm, out):
    _real_input("rfftn", x, "real-valued")
    shape, dims = _shape_and_dims(x, s, dim)
    if not shape:
        raise RuntimeError("rfftn must transform at least one axis")
    x = _resize(_promote(x), dims, shape)
    return _write_out("rfftn", _fft_r2c(x, list(dims), norm_code(norm, True), True), out, True)


def _irfftn(x, s, dim, norm, out):
    shape, dims, last = _c2r_shape_and_dims("irfftn", x, s, dim)
    x = _resize(_promote(x, require_complex=True), dims, shape)
    return _write_out("irfftn", _fft_c2r(x, list(dims), norm_code(norm, False), last), out,
                      False)


_ND = ("(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None, *, "
       "Tensor(a!)? out=None) -> Tensor")
_2D = ("(Tensor self, SymInt[1]? s=None, int[1] dim=[-2,-1], str? norm=None, *, "
       "Tensor(a!)? out=None) -> Tensor")


@composite("fft_fftn" + _ND, method=False)
def fft_fftn(input: Tensor, s=None, dim=None, norm: str | None = None, *,
             out: Tensor | None = None) -> Tensor:
    """The n-dimensional DFT over ``dim`` (``torch.fft.fftn``).

    Args:
        input: the tensor. s: the signal sizes (``-1`` keeps a dim's size); ``input`` is
            zero-padded or trimmed to them. dim: the dims to transform (default: the last
            ``len(s)`` dims, or every dim). norm, out: as for :func:`fft_fft`.

    Raises:
        RuntimeError: repeated dims, ``s`` and ``dim`` of different lengths, a size below 1.

    Shape: ``input``'s with the transformed dims of sizes ``s``; complex dtype.

    Example:
        >>> ember.fft.fftn(ember.tensor([[1.0, 2.0], [3.0, 4.0]]))
        tensor([[10.+0.j, -2.+0.j],
                [-4.+0.j,  0.+0.j]])
    """
    return _c2c_nd("fftn", input, s, dim, norm, True, out)


@composite("fft_ifftn" + _ND, method=False)
def fft_ifftn(input: Tensor, s=None, dim=None, norm: str | None = None, *,
              out: Tensor | None = None) -> Tensor:
    """The inverse of :func:`fft_fftn` (``torch.fft.ifftn``).

    Args:
        input: the tensor. s: the signal sizes (``-1`` keeps a dim's size); ``input`` is
            zero-padded or trimmed to them. dim: the dims to transform (default: the last
            ``len(s)`` dims, or every dim). norm, out: as for :func:`fft_fft`.

    Raises:
        RuntimeError: repeated dims, ``s`` and ``dim`` of different lengths, a size below 1.

    Example:
        >>> x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> ember.fft.ifftn(ember.fft.fftn(x)).real.tolist()
        [[1.0, 2.0], [3.0, 4.0]]
    """
    return _c2c_nd("ifftn", input, s, dim, norm, False, out)


@composite("fft_rfftn" + _ND, method=False)
def fft_rfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *,
              out: Tensor | None = None) -> Tensor:
    """The n-dimensional DFT of a real ``input``, one-sided in the last of ``dim``
    (``torch.fft.rfftn``).

    Args:
        input: the tensor. s: the signal sizes (``-1`` keeps a dim's size); ``input`` is
            zero-padded or trimmed to them. dim: the dims to transform (default: the last
            ``len(s)`` dims, or every dim). norm, out: as for :func:`fft_fft`.

    Raises:
        RuntimeError: repeated dims, ``s`` and ``dim`` of different lengths, a size below 1.

    Shape: ``input``'s with the transformed dims of sizes ``s``, the last ``s[-1] // 2 + 1``.

    Example:
        >>> ember.fft.rfftn(ember.ones(2, 4)).shape
        ember.Size([2, 3])
    """
    return _rfftn(input, s, dim, norm, out)


@composite("fft_irfftn" + _ND, method=False)
def fft_irfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *,
               out: Tensor | None = None) -> Tensor:
    """The inverse of :func:`fft_rfftn`: a real tensor whose last transformed dim has
    ``s[-1]`` points (default ``2 * (size - 1)``) (``torch.fft.irfftn``).

    Args:
        input: the tensor. s: the signal sizes (``-1`` keeps a dim's size); ``input`` is
            zero-padded or trimmed to them. dim: the dims to transform (default: the last
            ``len(s)`` dims, or every dim). norm, out: as for :func:`fft_fft`.

    Raises:
        RuntimeError: repeated dims, ``s`` and ``dim`` of different lengths, a size below 1.

    Example:
        >>> x = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        >>> ember.fft.irfftn(ember.fft.rfftn(x), x.shape).allclose(x)
        True
    """
    return _irfftn(input, s, dim, norm, out)


@composite("fft_fft2" + _2D, method=False)
def fft_fft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *,
             out: Tensor | None = None) -> Tensor:
    """:func:`fft_fftn` over the last two dims by default (``torch.fft.fft2``).

    Example:
        >>> ember.fft.fft2(ember.ones(2, 2)).real.tolist()
        [[4.0, 0.0], [0.0, 0.0]]
    """
    return _c2c_nd("fftn", input, s, dim, norm, True, out)


@composite("fft_ifft2" + _2D, method=False)
def fft_ifft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *,
              out: Tensor | None = None) -> Tensor:
    """:func:`fft_ifftn` over the last two dims by default (``torch.fft.ifft2``).

    Example:
        >>> ember.fft.ifft2(ember.ones(2, 2)).real.tolist()
        [[1.0, 0.0], [0.0, 0.0]]
    """
    return _c2c_nd("ifftn", input, s, dim, norm, False, out)


@composite("fft_rfft2" + _2D, method=False)
def fft_rfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *,
              out: Tensor | None = None) -> Tensor:
    """:func:`fft_rfftn` over the last two dims by default (``torch.fft.rfft2``).

    Example:
        >>> ember.fft.rfft2(ember.ones(2, 4)).shape
        ember.Size([2, 3])
    """
    return _rfftn(input, s, dim, norm, out)


@composite("fft_irfft2" + _2D, method=False)
def fft_irfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *,
               out: Tensor | None = None) -> Tensor:
    """:func:`fft_irfftn` over the last two dims by default (``torch.fft.irfft2``).

    Example:
        >>> ember.fft.irfft2(ember.fft.rfft2(ember.ones(2, 4))).tolist()
        [[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]]
    """
    return _irfftn(input, s, dim, norm, out)


def _hfftn(x, s, dim, norm, out):
    shape, dims, last = _c2r_shape_and_dims("hfftn", x, s, dim)
    x = _resize(_promote(x, require_complex=True), dims, shape)
    code = norm_code(norm, True)
    half = _fft_c2c(x, list(dims[:-1]), code, True) if len(dims) > 1 else x
    return _write_out("hfftn", _fft_c2r(half.conj(), [dims[-1]], code, last), out, False)


def _ihfftn(x, s, dim, norm, out):
    shape, dims = _shape_and_dims(x, s, dim)
    if not shape:
        raise RuntimeError("ihfftn must transform at least one axis")
    x = _resize(_promote(x), dims, shape)
    code = norm_code(norm, False)
    half = _fft_r2c(x, [dims[-1]], code, True)
    if len(dims) > 1:
        half = _fft_c2c(half.conj().resolve_conj(), list(dims[:-1]), code, False)
    else:
        half = half.conj()
    return _write_out("ihfftn", half, out, True)


@composite("fft_hfftn" + _ND, method=False)
def fft_hfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *,
              out: Tensor | None = None) -> Tensor:
    """The n-dimensional DFT of a signal Hermitian-symmetric in the last of ``dim``, given by
    its first half: a real result whose last transformed dim has ``s[-1]`` points (default
    ``2 * (size - 1)``) (``torch.fft.hfftn``).

    Args:
        input: the tensor. s: the output signal sizes (``-1`` keeps a dim's size). dim: the
            dims to transform (default: the last ``len(s)`` dims, or every dim). norm, out:
            as for :func:`fft_fft`.

    Shape: ``input``'s with the transformed dims of sizes ``s``; real dtype.

    Example:
        >>> ember.fft.hfftn(ember.ones(2, 3)).tolist()
        [[8.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]
    """
    return _hfftn(input, s, dim, norm, out)


@composite("fft_ihfftn" + _ND, method=False)
def fft_ihfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *,
               out: Tensor | None = None) -> Tensor:
    """The inverse of :func:`fft_hfftn`: the n-dimensional inverse DFT of a real ``input``,
    one-sided in the last of ``dim`` (``torch.fft.ihfftn``).

    Args:
        input: a real tensor. s, dim, norm, out: as for :func:`fft_fftn`.

    Shape: ``input``'s with the transformed dims of sizes ``s``, the last ``s[-1] // 2 + 1``;
        complex dtype.

    Example:
        >>> ember.fft.ihfftn(ember.ones(2, 4)).real.tolist()
        [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    """
    return _ihfftn(input, s, dim, norm, out)


@composite("fft_hfft2" + _2D, method=False)
def fft_hfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *,
              out: Tensor | None = None) -> Tensor:
    """:func:`fft_hfftn` over the last two dims by default (``torch.fft.hfft2``).

    Example:
        >>> ember.fft.hfft2(ember.ones(2, 3)).shape
        ember.Size([2, 4])
    """
    return _hfftn(input, s, dim, norm, out)


@composite("fft_ihfft2" + _2D, method=False)
def fft_ihfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *,
               out: Tensor | None = None) -> Tensor:
    """:func:`fft_ihfftn` over the last two dims by default (``torch.fft.ihfft2``).

    Example:
        >>> ember.fft.ihfft2(ember.ones(2, 4)).shape
        ember.Size([2, 3])
    """
    return _ihfftn(input, s, dim, norm, out)


# -- short-time Fourier transform ------------------------------------------------------------
def _repr(name: str, x: Tensor, n_fft, hop, win, window, rest: str) -> str:
    """The call as torch's stft/istft errors print it."""
    w = "None" if window is None else f"{window._dtype!r}{list(window._shape)}"
    return (f"{name}({x._dtype!r}{list(x._shape)}, n_fft={n_fft}, hop_length={hop}, "
            f"win_length={win}, window={w}, {rest}) ")


def _centered_window(window: Tensor | None, n_fft: int, win: int, like: Tensor):
    """The window zero-padded to ``n_fft`` on both sides (None: no window to apply)."""
    if win == n_fft:
        return window
    if window is None:
        window = ones(win, dtype=like._dtype.to_real(), device=like._device)
    left = (n_fft - win) // 2
    return constant_pad_nd(window, [left, n_fft - win - left])


def _stft_checks(x: Tensor, n_fft, hop, win, window, call) -> None:
    if not (x._dtype.is_floating_point or x._dtype.is_complex):
        raise RuntimeError(call() + ": expected a tensor of floating point or complex values")
    if x.ndim not in (1, 2):
        raise RuntimeError(call() + ": expected a 1D or 2D tensor")
    length = x._shape[-1]
    if n_fft <= 0 or n_fft > length:
        raise RuntimeError(call() + f": expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(call() + f": expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        raise RuntimeError(call() + f": expected 0 < win_length <= n_fft, but got "
                           f"win_length={win}")
    if window is not None and (window.ndim != 1 or window._shape[0] != win):
        raise RuntimeError(call() + f": expected a 1D window tensor of size equal to "
                           f"win_length={win}, but got window with size {list(window._shape)}")


@composite("stft(Tensor self, int n_fft, int? hop_length=None, int? win_length=None, "
           "Tensor? window=None, bool center=True, str pad_mode=\"reflect\", "
           "bool normalized=False, bool? onesided=None, bool? return_complex=None, "
           "bool? align_to_window=None) -> Tensor")
def stft(input: Tensor, n_fft: int, hop_length: int | None = None,
         win_length: int | None = None, window: Tensor | None = None, center: bool = True,
         pad_mode: str = "reflect", normalized: bool = False, onesided: bool | None = None,
         return_complex: bool | None = None, align_to_window: bool | None = None) -> Tensor:
    """The short-time Fourier transform (``torch.stft``): the DFT of ``n_fft``-point frames
    taken every ``hop_length`` samples, each multiplied by ``window``.

    Args:
        input: a 1-d signal or a 2-d batch of signals (floating or complex).
        n_fft: the frame (DFT) size. hop_length: frame step (default ``n_fft // 4``).
        win_length: the window size (default ``n_fft``); shorter windows are zero-padded to
            ``n_fft`` on both sides. window: 1-d tensor of ``win_length`` (default: all ones).
        center: pad the signal by ``n_fft // 2`` on both sides (``pad_mode``) so that frame
            ``t`` is centred at sample ``t * hop_length``.
        normalized: divide by ``sqrt(n_fft)``. onesided: keep ``n_fft // 2 + 1``
            frequencies (default for real input and window).
        return_complex: must be given for real input; True returns complex, False the
            deprecated ``view_as_real`` form. align_to_window: with ``center=False``, start
            the frames where the (shorter) window starts.

    Shape: ``(*, freq, frames)`` with ``frames = 1 + (length - n_fft) // hop_length`` after
        padding, ``*`` the batch dim if any.

    Example:
        >>> x = ember.arange(8.0)
        >>> ember.stft(x, 4, hop_length=2, window=ember.ones(4), return_complex=True).shape
        ember.Size([3, 5])
    """
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied, which "
                      "is known to cause spectral leakage. Other windows such as "
                      "ember.hann_window or ember.hamming_window are recommended to reduce "
                      "spectral leakage.", UserWarning, stacklevel=2)
    if center:
        nd = input.ndim
        padded = _pad_op(input.reshape((1,) * (3 - nd) + tuple(input._shape)),
                         [n_fft // 2, n_fft // 2], pad_mode)
        input = padded.reshape(padded._shape[len(padded._shape) - nd:])
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length

    def call():
        return _repr("stft", input, n_fft, hop, win, window,
                     f"normalized={int(normalized)}, onesided={onesided}, "
                     f"return_complex={return_complex}, align_to_window={align_to_window}")

    complex_out = return_complex if return_complex is not None else \
        input._dtype.is_complex or (window is not None and window._dtype.is_complex)
    if not complex_out:
        if return_complex is None:
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in "
                               "a future PyTorch release.")
        warnings.warn("stft with return_complex=False is deprecated: use return_complex=True "
                      "(ember.view_as_real of the result gives the old format).", UserWarning,
                      stacklevel=2)
    _stft_checks(input, n_fft, hop, win, window, call)
    x = input if input.ndim == 2 else input.unsqueeze(0)
    if align_to_window and win < n_fft:
        left = (n_fft - win) // 2
        x = constant_pad_nd(x, [left, n_fft - win - left])
    frames = x.unfold(-1, n_fft, hop)  # (batch, length) -> (batch, frames, n_fft)
    window = _centered_window(window, n_fft, win, x)
    if window is not None:
        frames = frames * window
    onesided = not frames._dtype.is_complex if onesided is None else onesided
    norm = NORM_BY_ROOT_N if normalized else NORM_NONE
    if frames._dtype.is_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        out = _fft_c2c(frames, [2], norm, True)
    else:
        out = _fft_r2c(frames, [2], norm, onesided)
    out = out.transpose(1, 2)  # (batch, freq, frames)
    if input.ndim == 1:
        out = out.squeeze(0)
    return out if complex_out else views.view_as_real(out.resolve_conj())


def _overlap_add(frames: Tensor, hop: int, length: int) -> Tensor:
    """``(channel, n_frames, n_fft)`` frames summed into ``(channel, length)`` signals, frame
    ``f`` starting at ``f * hop`` (the adjoint of ``unfold``)."""
    n_frames, n_fft = frames._shape[1], frames._shape[2]
    index = (arange(n_frames).unsqueeze(1) * hop + arange(n_fft)).reshape(-1)
    out = zeros(frames._shape[0], length, dtype=frames._dtype, device=frames._device)
    return out.index_add(1, index, frames.reshape(frames._shape[0], n_frames * n_fft))


def _istft_checks(x: Tensor, n_fft, hop, win, window, onesided, call) -> bool:
    if x.numel() == 0:
        raise RuntimeError(call() + ": input tensor cannot be empty.")
    if x.ndim not in (2, 3):
        raise RuntimeError(call() + f": expected a tensor with 3 or 4 dimensions of real, or 2 "
                           f"or 3 dimensions of complex, but got {x.ndim + 1}")
    fft_size = x._shape[-2]
    onesided = fft_size != n_fft if onesided is None else onesided
    if onesided and n_fft // 2 + 1 != fft_size:
        raise RuntimeError(call() + ": expected the frequency dimension (3rd to the last) of the "
                           "input tensor to match n_fft / 2 + 1 when onesided=True, but got "
                           f"{fft_size}")
    if not onesided and n_fft != fft_size:
        raise RuntimeError(call() + ": expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft when onesided=False, but got {fft_size}")
    if not 0 < hop <= win:
        raise RuntimeError(call() + ": expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        raise RuntimeError(call() + ": expected 0 < win_length <= n_fft")
    if window is not None and (window.ndim != 1 or window._shape[0] != win):
        raise RuntimeError(call() + ": Invalid window shape. window has to be 1D and length of "
                           "`win_length`")
    return onesided


@composite("istft(Tensor self, int n_fft, int? hop_length=None, int? win_length=None, "
           "Tensor? window=None, bool center=True, bool normalized=False, "
           "bool? onesided=None, int? length=None, bool return_complex=False) -> Tensor")
def istft(input: Tensor, n_fft: int, hop_length: int | None = None,
          win_length: int | None = None, window: Tensor | None = None, center: bool = True,
          normalized: bool = False, onesided: bool | None = None, length: int | None = None,
          return_complex: bool = False) -> Tensor:
    """The inverse of :func:`stft` (``torch.istft``): inverse DFT of each frame, windowed
    overlap-add, divided by the overlap-added squared window.

    Args:
        input: the complex ``(*, freq, frames)`` output of :func:`stft`.
        n_fft, hop_length, win_length, window, center, normalized, onesided: as given to
            :func:`stft`. length: the signal length to return (trimmed, or zero-padded with a
            warning). return_complex: return a complex signal (two-sided input only).

    Raises:
        RuntimeError: a real or empty input, sizes that disagree with ``n_fft``, or a window
            whose overlap-added square vanishes somewhere (the "window envelope" check: the
            signal cannot be recovered there).

    Shape: ``(*, length)``.

    Example:
        >>> x = ember.arange(8.0)
        >>> w = ember.hann_window(4)
        >>> s = ember.stft(x, 4, hop_length=1, window=w, return_complex=True)
        >>> ember.istft(s, 4, hop_length=1, window=w, length=8).allclose(x, atol=1e-5)
        True
    """
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length

    def call():
        return _repr("istft", input, n_fft, hop, win, window,
                     f"center={int(center)}, normalized={int(normalized)}, "
                     f"onesided={onesided}, length={length}, "
                     f"return_complex={int(return_complex)}")

    if not input._dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    sided = _istft_checks(input, n_fft, hop, win, window, onesided, call)
    if window is None:
        window = ones(win, dtype=input._dtype.to_real(), device=input._device)
    window = _centered_window(window, n_fft, win, input)
    x = (input if input.ndim == 3 else input.unsqueeze(0)).transpose(1, 2)  # (ch, frames, f)
    n_frames = x._shape[1]
    norm = NORM_BY_ROOT_N if normalized else NORM_BY_N
    if return_complex:
        if sided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = _fft_c2c(x, [2], norm, False)
    else:
        if window._dtype.is_complex:
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        frames = _fft_c2r(x if sided else x.narrow(-1, 0, n_fft // 2 + 1), [2], norm, n_fft)
    full = n_fft + hop * (n_frames - 1)
    y = _overlap_add(frames * window, hop, full)
    envelope = _overlap_add((window * window).expand(1, n_frames, n_fft), hop, full)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (full - n_fft // 2 if center else full)
    y, envelope = y[:, start:end], envelope[:, start:end]
    if envelope._device.type != "meta" and bool((envelope.abs().min() < 1e-11).item()):
        raise RuntimeError("window overlap add min: 1 (the overlap-added squared window "
                           "vanishes: the signal cannot be recovered there)")
    y = y / envelope
    if input.ndim == 2:
        y = y.squeeze(0)
    if end > full:
        warnings.warn("The length of signal is shorter than the length parameter. Result is "
                      "being padded with zeros in the tail. Please check your center and "
                      "hop_length settings.", UserWarning, stacklevel=2)
        y = constant_pad_nd(y, [0, end - full])
    return y


# -- frequencies and shifts -------------------------------------------------------------------
def _freq_dtype(name: str, dtype):
    dtype = dt.get_default_dtype() if dtype is None else dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"{name} requires a floating point or complex dtype")
    return dtype


@composite("fft_fftfreq(int n, float d=1.0, *, ScalarType? dtype=None, Layout? layout=None, "
           "Device? device=None, bool? pin_memory=None, bool requires_grad=False) -> Tensor",
           method=False)
def fft_fftfreq(n: int, d: float = 1.0, *, dtype=None, layout=None, device=None,
                pin_memory=None, requires_grad: bool = False) -> Tensor:
    """The sample frequencies of an ``n``-point DFT with sample spacing ``d``
    (``torch.fft.fftfreq``): ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)``.

    Args:
        n: the signal length. d: the sampling interval (the reciprocal of the rate).
        dtype: a floating dtype (default: the default dtype); device, requires_grad: as for
            factories.

    Shape: ``(n,)``.

    Example:
        >>> ember.fft.fftfreq(4).tolist()
        [0.0, 0.25, -0.5, -0.25]
    """
    dtype = _freq_dtype("fftfreq", dtype)
    k = arange(_length(n), dtype=dtype, device=device)
    half = (n + 1) // 2
    if n - half:
        k[half:] -= n
    return _scaled(k, n, d, requires_grad)


def _length(n: int) -> int:
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    return n


def _scaled(k: Tensor, n: int, d, requires_grad: bool) -> Tensor:
    """``k * (1 / (n * d))``, the reciprocal taken as C++ doubles do (inf for a zero
    product, with its sign)."""
    span = n * float(d)
    result = k * (1.0 / span if span else math.copysign(math.inf, span))
    return result.requires_grad_(requires_grad) if requires_grad else result


@composite("fft_rfftfreq(int n, float d=1.0, *, ScalarType? dtype=None, Layout? layout=None, "
           "Device? device=None, bool? pin_memory=None, bool requires_grad=False) -> Tensor",
           method=False)
def fft_rfftfreq(n: int, d: float = 1.0, *, dtype=None, layout=None, device=None,
                 pin_memory=None, requires_grad: bool = False) -> Tensor:
    """The non-negative sample frequencies ``[0, 1, ..., n // 2] / (d * n)`` of an ``n``-point
    real DFT (``torch.fft.rfftfreq``; arguments as :func:`fft_fftfreq`).

    Shape: ``(n // 2 + 1,)``.

    Example:
        >>> ember.fft.rfftfreq(5, 0.5).tolist()
        [0.0, 0.4000000059604645, 0.800000011920929]
    """
    dtype = _freq_dtype("rfftfreq", dtype)
    half = n // 2 if n >= 0 else -(-n // 2)  # C++ division truncates
    return _scaled(arange(_length(half + 1), dtype=dtype, device=device), n, d, requires_grad)


def _shift(input: Tensor, dim, inverse: bool) -> Tensor:
    nd = len(input._shape)
    if dim is None:
        dims = tuple(range(nd))
    else:
        dims = tuple(canonical_dim(int(d), nd) for d in ((dim,) if isinstance(dim, int)
                                                         else dim))
    shifts = tuple((input._shape[d] + inverse) // 2 for d in dims)
    return roll(input, shifts, dims)


@composite("fft_fftshift(Tensor self, int[1]? dim=None) -> Tensor", method=False)
def fft_fftshift(input: Tensor, dim=None) -> Tensor:
    """Move the zero frequency to the centre: ``roll`` by ``size // 2`` along ``dim`` (every
    dim by default), as ``torch.fft.fftshift``.

    Shape: same as ``input``.

    Example:
        >>> ember.fft.fftshift(ember.fft.fftfreq(5)).tolist()
        [-0.4000000059604645, -0.20000000298023224, 0.0, 0.20000000298023224, 0.4000000059604645]
    """
    return _shift(input, dim, False)


@composite("fft_ifftshift(Tensor self, int[1]? dim=None) -> Tensor", method=False)
def fft_ifftshift(input: Tensor, dim=None) -> Tensor:
    """The inverse of :func:`fft_fftshift`: ``roll`` by ``(size + 1) // 2`` along ``dim``
    (``torch.fft.ifftshift``).

    Shape: same as ``input``.

    Example:
        >>> x = ember.fft.fftfreq(5)
        >>> ember.fft.ifftshift(ember.fft.fftshift(x)).equal(x)
        True
    """
    return _shift(input, dim, True)
