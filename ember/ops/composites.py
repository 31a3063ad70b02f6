"""Composite operators of torch's top level: ``addr``, ``inner``, ``dist``, the window
functions (``hann``, ``hamming``, ``blackman``, ``bartlett``, ``kaiser``), ``asarray`` and
``frombuffer``.

Each is written with ember operators, in the order torch's own composite runs its steps (the
window functions compute in the requested dtype as torch does), so values round the same way
and gradients, Meta shapes and every backend come for free.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ember.core import dtype as dt
from ember.core.device import as_device
from ember.ops._define import TENSOR_METHODS, composite
from ember.ops._promotion import result_type
from ember.ops.copy import clone
from ember.ops.creation import arange, empty, ones, tensor, zeros
from ember.ops.linalg import outer, tensordot
from ember.ops.reduction import linalg_vector_norm
from ember.ops.special import i0
from ember.tensor import Tensor, from_numpy

__all__ = ["addr", "inner", "dist", "hann_window", "hamming_window", "blackman_window",
           "bartlett_window", "kaiser_window", "asarray", "frombuffer"]


def _require(name: str, x, arg: str = "input", pos: int = 1) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")


# -- products and distances -------------------------------------------------------------------
def _check_coefficient(name: str, value, result: dt.DType) -> None:
    """torch's rules for ``beta``/``alpha``: bool only for bool results, no float for ints."""
    if isinstance(value, bool):
        if result is not dt.bool_:
            raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
    elif isinstance(value, float) and not (result.is_floating_point or result.is_complex):
        raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating "
                           "point number.")


@composite("addr(Tensor self, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1, "
           "Tensor(a!)? out=None) -> Tensor")
def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * outer(vec1, vec2)``; ``input`` is ignored when ``beta == 0``
    (NaN in it does not propagate). Bool tensors use logical or/and, as torch.

    Shape: ``input`` broadcast to ``(n, m)``; ``vec1: (n,)``, ``vec2: (m,)``.

    Example:
        >>> ember.addr(ember.zeros(2, 2), ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0]))
        tensor([[3., 4.],
                [6., 8.]])
    """
    _require("addr", input)
    for v, name in ((vec1, "vec1"), (vec2, "vec2")):
        _require("addr", v, name)
        if v.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v.ndim}-D")
    res = result_type(input, vec1, vec2)
    _check_coefficient("beta", beta, res)
    _check_coefficient("alpha", alpha, res)
    shape = (vec1._shape[0], vec2._shape[0])
    base = input.expand(shape)  # torch's broadcast check and message
    prod = outer(vec1, vec2)
    if res is dt.bool_:
        value = (prod if alpha else zeros(shape, dtype=res, device=prod._device)) | \
            (base if beta else zeros(shape, dtype=res, device=prod._device))
    else:
        value = prod if alpha == 1 else prod * alpha
        if beta != 0:
            value = (base if beta == 1 else base * beta) + value
    return _out(value.to(res) if value._dtype is not res else value, out)


def _out(value: Tensor, out) -> Tensor:
    if out is None:
        return value
    from ember.ops.special import write_out
    return write_out(value, out)


@composite("inner(Tensor self, Tensor other, *, Tensor(a!)? out=None) -> Tensor")
def inner(input, other, *, out=None):
    """Sum of products over the last dims of ``input`` and ``other`` (a product when either
    is 0-d).

    Shape: ``input.shape[:-1] + other.shape[:-1]``.

    Example:
        >>> ember.inner(ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0]))
        tensor(11.)
    """
    _require("inner", input)
    _require("inner", other, "other", 2)
    if input.ndim == 0 or other.ndim == 0:
        return _out(input * other, out)
    if input._shape[-1] != other._shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input._shape)} and {list(other._shape)}")
    return _out(tensordot(input, other, dims=([-1], [-1])), out)


@composite("dist(Tensor self, Tensor other, Scalar p=2) -> Tensor")
def dist(input, other, p=2):
    """The ``p``-norm of ``input - other`` (broadcast), a 0-d tensor; complex inputs give the
    real norm of the moduli, as ``torch.dist``.

    Example:
        >>> ember.dist(ember.tensor([0.0, 0.0]), ember.tensor([3.0, 4.0]))
        tensor(5.)
    """
    _require("dist", input)
    _require("dist", other, "other", 2)
    diff = input - other
    if not (diff._dtype.is_floating_point or diff._dtype.is_complex):
        raise RuntimeError("norm(): input dtype should be either floating point or complex. "
                           f"Got {diff._dtype.scalar_name} instead.")
    return linalg_vector_norm(diff, p)


# -- windows ----------------------------------------------------------------------------------
_WINDOW_KW = ", *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, " \
             "bool? pin_memory=None, bool requires_grad=False) -> Tensor"


def _window_args(name: str, length: int, dtype, device) -> tuple[dt.DType, object]:
    dtype = dtype or dt.get_default_dtype()
    # complex dtypes pass (lengths 0 and 1 are filled; longer ones reach arange's refusal)
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    if length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={length}")
    return dtype, (as_device(device) if device is not None else None)


def _window(name, length, periodic, dtype, device, requires_grad, body) -> Tensor:
    """Shared shape logic: empty for 0, ones for 1, else ``body(n, N)`` over ``N`` points
    (``length + 1`` when periodic, then the first ``length`` kept)."""
    dtype, device = _window_args(name, length, dtype, device)
    if length == 0:
        w = empty(0, dtype=dtype, device=device)
    elif length == 1:
        w = ones(1, dtype=dtype, device=device)
    else:
        n_points = length + 1 if periodic else length
        w = body(arange(n_points, dtype=dtype, device=device), n_points)
        if periodic:
            w = w.narrow(0, 0, length).contiguous()
    return w.requires_grad_(True) if requires_grad else w


@composite("hamming_window.periodic_alpha_beta(int window_length, bool periodic=True, "
           "float alpha=0.54, float beta=0.46" + _WINDOW_KW, method=False)
def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, pin_memory=None, requires_grad=False):
    """Hamming window ``alpha - beta cos(2 pi n / (N - 1))``; ``periodic`` drops the last of
    ``window_length + 1`` points (for spectral analysis).

    Example:
        >>> ember.hamming_window(3, periodic=False).tolist()[1]
        1.0
    """
    def body(n, size):
        return (n * (math.pi * 2.0 / (size - 1))).cos() * -beta + alpha

    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   body)


@composite("hann_window.periodic(int window_length, bool periodic=True" + _WINDOW_KW,
           method=False)
def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                pin_memory=None, requires_grad=False):
    """Hann window ``0.5 - 0.5 cos(2 pi n / (N - 1))`` (a Hamming window with 0.5, 0.5).

    Example:
        >>> ember.hann_window(4).tolist()
        [0.0, 0.5, 1.0, 0.5]
    """
    _window_args("hann_window", window_length, dtype, device)
    return hamming_window(window_length, periodic, 0.5, 0.5, dtype=dtype, device=device,
                          requires_grad=requires_grad)


@composite("blackman_window.periodic(int window_length, bool periodic=True" + _WINDOW_KW,
           method=False)
def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=None, requires_grad=False):
    """Blackman window ``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))``.

    Example:
        >>> round(ember.blackman_window(3, periodic=False).tolist()[1], 6)
        1.0
    """
    def body(n, size):
        w = n * (math.pi / (size - 1))
        return (w * 4).cos() * 0.08 - (w * 2).cos() * 0.5 + 0.42

    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   body)


@composite("bartlett_window.periodic(int window_length, bool periodic=True" + _WINDOW_KW,
           method=False)
def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=None, requires_grad=False):
    """Bartlett (triangular) window ``1 - |2 n / (N - 1) - 1|``.

    Example:
        >>> ember.bartlett_window(5, periodic=False).tolist()
        [0.0, 0.5, 1.0, 0.5, 0.0]
    """
    def body(n, size):
        w = n * (2.0 / (size - 1))
        return _join(w, ((size - 1) >> 1) + 1, size)

    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   body)


def _join(w: Tensor, first: int, size: int) -> Tensor:
    """The rising half of ``w`` followed by ``2 - w`` over the falling half (torch's order of
    operations: the second half is computed as ``-w + 2`` in the window's dtype)."""
    from ember.ops.shape import cat
    return cat([w.narrow(0, 0, first), w.narrow(0, first, size - first) * -1 + 2])


@composite("kaiser_window.beta(int window_length, bool periodic=True, float beta=12.0"
           + _WINDOW_KW, method=False)
def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, pin_memory=None, requires_grad=False):
    """Kaiser window ``i0(beta sqrt(1 - ((n - a) / a)**2)) / i0(beta)``, ``a = (N - 1) / 2``.

    Half types compute in float32 and round once, as torch's kernel.

    Example:
        >>> ember.kaiser_window(3, periodic=False, beta=0.0).tolist()
        [1.0, 1.0, 1.0]
    """
    def body(n, size):
        comp = dt.float32 if n._dtype in (dt.float16, dt.bfloat16) else n._dtype
        x = n.to(comp)
        a = (size - 1) / 2.0
        arg = (1 - ((x - a) / a).pow(2)).abs().sqrt() * beta
        return (i0(arg) / i0(tensor(beta, dtype=comp, device=x._device))).to(n._dtype)

    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   body)


# -- asarray and frombuffer -------------------------------------------------------------------
def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False) -> Tensor:
    """``obj`` as a tensor, sharing memory when it can (``torch.asarray``).

    A tensor of the requested dtype and device is returned itself; NumPy arrays, objects
    with ``__array_interface__`` or ``__dlpack__`` share their memory; Python scalars and
    sequences are copied. ``copy=True`` always copies; ``copy=False`` refuses to copy.

    Raises:
        ValueError: ``copy=False`` but a copy is needed.

    Example:
        >>> import numpy as np
        >>> a = np.zeros(2); ember.asarray(a).dtype
        ember.float64
    """
    device = as_device(device) if device is not None else None
    if isinstance(obj, Tensor):
        out = obj
    elif isinstance(obj, np.ndarray) or hasattr(obj, "__array_interface__"):
        out = from_numpy(np.asarray(obj))
    elif hasattr(obj, "__dlpack__"):
        from ember.tensor.interop import from_dlpack
        out = from_dlpack(obj)
    else:
        out = tensor(obj, dtype=dtype, device=device)
        return out.requires_grad_(True) if requires_grad else out
    converted = out
    if (dtype is not None and dtype is not out._dtype) or \
            (device is not None and device != out._device):
        if copy is False:
            raise ValueError("asarray: can't alias the given object with copy=False: a dtype "
                             "or device conversion is needed")
        converted = out.to(dtype=dtype or out._dtype, device=device or out._device)
    elif copy:
        converted = clone(out)
    if requires_grad:
        converted = converted.detach().requires_grad_(True) if converted is obj else \
            converted.requires_grad_(True)
    return converted


def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:
    """A 1-d tensor over the bytes of a buffer-protocol object (no copy; ``torch.frombuffer``).

    Args:
        buffer: bytes, bytearray, memoryview, array.array, mmap, ...
        dtype: element type. count: number of elements (-1: all after ``offset``).
        offset: bytes to skip.

    Raises:
        ValueError: empty buffer, an offset outside it, or a length not a multiple of the
            element size.

    Example:
        >>> ember.frombuffer(bytearray(b"\\x01\\x00\\x02\\x00"), dtype=ember.int16).tolist()
        [1, 2]
    """
    view = memoryview(buffer)
    length, item = view.nbytes, dtype.itemsize
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if offset < 0 or offset >= length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % item:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} "
                             f"bytes) must be a multiple of element size ({item})")
        count = (length - offset) // item
    elif offset + count * item > length:
        raise ValueError(f"requested buffer length ({count} * {item} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({length} bytes)")
    if view.readonly:
        warnings.warn("The given buffer is not writable: the tensor shares its memory, so "
                      "in-place writes to it fail. Copy the buffer, or pass a writable one, "
                      "to write.", UserWarning, stacklevel=2)
    arr = np.frombuffer(view.cast("B"), dtype=dtype.np, count=count, offset=offset)
    out = from_numpy(arr)
    return out.requires_grad_(True) if requires_grad else out



# -- deprecated norms and small creation helpers -----------------------------------------------
def _deprecated_norm(name: str, replacement: str) -> None:
    import warnings
    warnings.warn(f"{name} is deprecated and it is just left for JIT compatibility. It will be "
                  f"removed in a future PyTorch release. Please use `{replacement}` instead",
                  UserWarning, stacklevel=3)


@composite("norm_except_dim(Tensor v, int pow=2, int dim=0) -> Tensor", method=False)
def norm_except_dim(v, pow=2, dim: int = 0):
    """The ``pow``-norm over every dim but ``dim`` (kept, the others size 1); ``dim=-1``: the
    norm of everything (weight normalisation's helper).

    Example:
        >>> ember.norm_except_dim(ember.tensor([[3.0, 0.0], [4.0, 0.0]]), 2, 1)
        tensor([[5., 0.]])
    """
    _require("norm_except_dim", v, "v")
    if dim == -1:
        return linalg_vector_norm(v, pow)
    others = tuple(d for d in range(v.ndim) if d != dim)
    return linalg_vector_norm(v, pow, others, True)


@composite("frobenius_norm.dim(Tensor self, int[1] dim, bool keepdim=False) -> Tensor",
           method=False)
def frobenius_norm(input, dim, keepdim: bool = False):
    """Deprecated: ``linalg.vector_norm(input, 2, dim, keepdim)`` (warns, as torch).

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     print(ember.frobenius_norm(ember.tensor([[3.0, 4.0]]), dim=(0, 1)))
        tensor(5.)
    """
    _deprecated_norm("at::frobenius_norm", "linalg.vector_norm(A, 2., dim, keepdim)")
    return linalg_vector_norm(input, 2, dim, keepdim)


@composite("nuclear_norm(Tensor self, bool keepdim=False) -> Tensor", method=False)
def nuclear_norm(input, dim=None, keepdim: bool = False):
    """Deprecated: ``linalg.matrix_norm(input, 'nuc', dim, keepdim)`` (dims (0, 1) by
    default; warns, as torch).

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     print(ember.nuclear_norm(ember.tensor([[3.0, 0.0], [0.0, 2.5]])))
        tensor(5.5000)
    """
    from ember.ops.reduction import linalg_matrix_norm
    if isinstance(dim, bool):  # nuclear_norm(input, keepdim) positionally
        dim, keepdim = None, dim
    _deprecated_norm("at::nuclear_norm", "linalg.matrix_norm(A, 'nuc', dim, keepdim)")
    return linalg_matrix_norm(input, "nuc", (0, 1) if dim is None else dim, keepdim)


@composite("nonzero_static(Tensor self, *, SymInt size, int fill_value=-1) -> Tensor")
def nonzero_static(input, *, size: int, fill_value: int = -1):
    """:func:`nonzero` padded with ``fill_value`` rows (or truncated) to exactly ``size`` rows.

    Example:
        >>> ember.nonzero_static(ember.tensor([0, 3]), size=2).tolist()
        [[1], [-1]]
    """
    from ember.ops.creation import full
    from ember.ops.shape import cat
    _require("nonzero_static", input)
    idx = input.nonzero()
    n = idx._shape[0]
    if n >= size:
        return idx[:size]
    pad = full((size - n, input.ndim), fill_value, dtype=idx._dtype, device=idx._device)
    return cat([idx, pad])


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   pin_memory=None, requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor of ``size`` whose memory holds its dims in the order
    ``physical_layout`` (outermost first), as ``torch.empty_permuted``.

    Example:
        >>> ember.empty_permuted((2, 3, 4), (0, 2, 1)).stride()
        (12, 1, 3)
    """
    size, order = tuple(size), tuple(physical_layout)
    if sorted(order) != list(range(len(size))):
        raise RuntimeError(f"physical_layout must be a permutation of the dims, got {order}")
    inverse = [order.index(d) for d in range(len(order))]
    out = empty([size[d] for d in order], dtype=dtype, device=device).permute(*inverse)
    return out.requires_grad_(True) if requires_grad else out


__all__ += ["norm_except_dim", "frobenius_norm", "nuclear_norm", "nonzero_static",
            "empty_permuted"]


# -- gradient -----------------------------------------------------------------------------------
def _along(x: Tensor, d: int, start: int, stop) -> Tensor:
    return x.narrow(d, start, (x._shape[d] if stop is None else stop) - start)


def _coords_along(c: Tensor, d: int, ndim: int, start: int, stop) -> Tensor:
    """A slice of the 1-d coordinates ``c`` shaped to broadcast along dim ``d``."""
    part = _along(c, 0, start, stop)
    return part.reshape([-1 if i == d else 1 for i in range(ndim)])


def _uniform_gradient(x: Tensor, d: int, h, edge_order: int) -> Tensor:
    from ember.ops.shape import cat
    n = x._shape[d]
    inner = (_along(x, d, 2, None) - _along(x, d, 0, n - 2)) / (2 * h)
    if edge_order == 1:
        first = (_along(x, d, 1, 2) - _along(x, d, 0, 1)) / h
        last = (_along(x, d, n - 1, n) - _along(x, d, n - 2, n - 1)) / h
    else:
        first = (_along(x, d, 0, 1) * -1.5 + _along(x, d, 1, 2) * 2
                 - _along(x, d, 2, 3) * 0.5) / h
        last = (_along(x, d, n - 3, n - 2) * 0.5 - _along(x, d, n - 2, n - 1) * 2
                + _along(x, d, n - 1, n) * 1.5) / h
    return cat([first, inner, last], d)


def _coordinate_gradient(x: Tensor, d: int, c: Tensor, edge_order: int) -> Tensor:
    from ember.ops.shape import cat
    n, nd = x._shape[d], x.ndim
    c = c.to(x._dtype)

    def cs(start, stop):
        return _coords_along(c, d, nd, start, stop)

    def xs(start, stop):
        return _along(x, d, start, stop)

    a, b = cs(1, n - 1) - cs(0, n - 2), cs(2, None) - cs(1, n - 1)
    inner = (a * a * xs(2, None) - b * b * xs(0, n - 2) + (b * b - a * a) * xs(1, n - 1)) / \
        (a * b * (a + b))
    if edge_order == 1:
        first = (xs(1, 2) - xs(0, 1)) / (cs(1, 2) - cs(0, 1))
        last = (xs(n - 1, n) - xs(n - 2, n - 1)) / (cs(n - 1, n) - cs(n - 2, n - 1))
    else:
        h1, h2 = cs(1, 2) - cs(0, 1), cs(2, 3) - cs(1, 2)
        first = xs(0, 1) * (-(2 * h1 + h2) / (h1 * (h1 + h2))) + \
            xs(1, 2) * ((h1 + h2) / (h1 * h2)) + xs(2, 3) * (-h1 / (h2 * (h1 + h2)))
        h1, h2 = cs(n - 2, n - 1) - cs(n - 3, n - 2), cs(n - 1, n) - cs(n - 2, n - 1)
        last = xs(n - 3, n - 2) * (h2 / (h1 * (h1 + h2))) + \
            xs(n - 2, n - 1) * (-(h2 + h1) / (h1 * h2)) + \
            xs(n - 1, n) * ((2 * h2 + h1) / (h2 * (h1 + h2)))
    return cat([first, inner, last], d)


def gradient(input, *, spacing=1, dim=None, edge_order: int = 1) -> tuple:
    """Derivative estimates by central differences in the interior and one-sided differences
    of order ``edge_order`` at the ends, per dim (``torch.gradient``).

    ``spacing``: a scalar (all dims), one scalar per dim, or one 1-d coordinate tensor per dim.
    Integers promote to the default float dtype.

    Raises:
        RuntimeError: ``edge_order`` not 1 or 2, or a dim shorter than ``edge_order + 1``.

    Example:
        >>> ember.gradient(ember.tensor([1.0, 2.0, 4.0, 8.0]))[0].tolist()
        [1.0, 1.5, 3.0, 4.0]
    """
    _require("gradient", input)
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = list(range(input.ndim)) if dim is None else [dim] if isinstance(dim, int) \
        else list(dim)
    dims = [d % input.ndim for d in dims]
    if isinstance(spacing, list | tuple):
        if len(spacing) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or "
                               f"it's spacing and dim arguments to have the same length, but "
                               f"got a spacing argument of length {len(spacing)} and a dim "
                               f"argument of length {len(dims)}.")
        steps = list(spacing)
    else:
        steps = [spacing] * len(dims)
    if any(input._shape[d] < edge_order + 1 for d in dims):
        raise RuntimeError("torch.gradient expected each dimension size to be at least "
                           "edge_order+1")
    inexact = input._dtype.is_floating_point or input._dtype.is_complex
    x = input if inexact else input.to(dt.get_default_dtype())
    return tuple(_coordinate_gradient(x, d, h, edge_order) if isinstance(h, Tensor)
                 else _uniform_gradient(x, d, h, edge_order) for d, h in zip(dims, steps))


__all__ += ["gradient"]


# -- histogram ----------------------------------------------------------------------------------
def histogram(input, bins=100, *, range=None, weight=None, density: bool = False,  # noqa: A002
              out=None) -> tuple:
    """Counts of ``input``'s elements in bins: ``(hist, bin_edges)`` (``torch.histogram``).

    ``bins`` is a count (equal widths over ``range``, default the data's min and max, widened
    by 0.5 each side when they are equal, or [0, 1] for an empty input) or a 1-d tensor of
    increasing edges. Bins are
    half-open except the last, which includes its right edge; elements outside are ignored.
    ``weight`` weighs each element; ``density`` divides by the total and the bin widths.

    Raises:
        NotImplementedError: a non-floating input, or a half-precision one whose range must
            be found (as torch's kernels).

    Example:
        >>> h, e = ember.histogram(ember.tensor([1.0, 2.0, 1.0, 4.0]), bins=3)
        >>> h.tolist(), e.tolist()
        ([2.0, 1.0, 1.0], [1.0, 2.0, 3.0, 4.0])
    """
    from ember.ops.creation import linspace
    from ember.ops.shape import searchsorted
    _require("histogram", input)
    half_range = input._dtype in (dt.float16, dt.bfloat16) and range is None and \
        not isinstance(bins, Tensor) and input.numel()  # found with no half kernel in torch
    if not input._dtype.is_floating_point or half_range:
        raise NotImplementedError(f"\"histogramdd\" not implemented for "
                                  f"'{input._dtype.scalar_name}'")
    x = input.detach().reshape(-1)
    if isinstance(bins, Tensor):
        edges = bins.to(input._dtype)
    else:
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
        elif x.numel():
            lo, hi = x.min().item(), x.max().item()
        else:
            lo, hi = 0.0, 1.0  # an empty input: torch's default range
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = linspace(lo, hi, bins + 1, dtype=input._dtype, device=input._device)
    n_bins = edges.numel() - 1
    keep = (x >= edges[0]) & (x <= edges[-1])
    idx = (searchsorted(edges.contiguous(), x, right=True) - 1).clamp(0, n_bins - 1)
    w = weight.detach().reshape(-1).to(input._dtype) if weight is not None else None
    counts = idx[keep].bincount(weights=w[keep] if w is not None else None, minlength=n_bins)
    hist = counts.to(input._dtype)
    if density:
        widths = edges[1:] - edges[:-1]
        hist = hist / (hist.sum() * widths)
    return hist, edges


TENSOR_METHODS["histogram"] = histogram
__all__ += ["histogram"]


# -- index_reduce -------------------------------------------------------------------------------
_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


@composite("index_reduce(Tensor self, int dim, Tensor index, Tensor source, str reduce, *, "
           "bool include_self=True) -> Tensor")
def index_reduce(input, dim: int, index, source, reduce: str, *, include_self: bool = True):
    """Reduce slices of ``source`` into ``input`` at positions ``index`` along ``dim``
    (``prod``, ``mean``, ``amax`` or ``amin``), as ``torch.index_reduce``: slice ``i`` of
    ``source`` goes to slice ``index[i]``; ``include_self=False`` leaves ``input``'s own values
    out of every reduced slice.

    Example:
        >>> ember.index_reduce(ember.ones(2, 2), 0, ember.tensor([1]), ember.full((1, 2), 3.0),
        ...                    "prod").tolist()
        [[1.0, 1.0], [3.0, 3.0]]
    """
    _require("index_reduce", input)
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError("index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    if index.ndim > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    from ember.ops.scatter_gather import no_complex_autograd
    if input._dtype.is_complex and (not include_self or reduce in ("amax", "amin")):
        # torch's kernels: no exclude-input init and no maximum/minimum for complex types
        kernel = "index_reduce_func_exclude_input_init" if not include_self else \
            ("maximum_cpu" if reduce == "amax" else "minimum_cpu")
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{input._dtype.scalar_name}'")
    no_complex_autograd("index_reduce", input, source)
    d = dim % max(input.ndim, 1)
    shape = [1] * source.ndim
    shape[d] = index.numel()
    idx = index.reshape(shape).expand(source._shape)
    return input.scatter_reduce(d, idx, source, reduce, include_self=include_self)


def _index_reduce_(self: Tensor, dim: int, index, source, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """In-place :func:`index_reduce`."""
    from ember.autograd.grad_mode import is_grad_enabled
    src = self.clone() if is_grad_enabled() else self
    return self.copy_(index_reduce(src, dim, index, source, reduce, include_self=include_self))


TENSOR_METHODS["index_reduce_"] = _index_reduce_
__all__ += ["index_reduce"]
