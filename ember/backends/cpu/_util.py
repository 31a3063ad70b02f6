"""Helpers shared by CPU kernels: NumPy views of tensors and output allocation.

NOTE [Outputs and version counters]
Kernels allocate outputs from the Meta rule's Spec, or write into a caller's ``out=``
tensor. Writing into ``out`` (and every in-place op, which is ``out=self``) bumps the shared
version counter exactly once, here, so views and autograd see the mutation.
"""

from __future__ import annotations

import numpy as np

from ember.backends.cpu._xp import array_module, from_host, to_host
from ember.core import dtype as dt
from ember.core.device import CPU
from ember.core.layout import contiguous_strides, storage_extent
from ember.memory.devices import guard_state
from ember.memory.storage import Storage, new_array
from ember.tensor import Tensor, empty_tensor, numpy_view

__all__ = ["arr", "arr_on", "new_output", "resize_out", "write_result", "np_scalar_or_array",
           "compute_dtype", "run_ufunc", "operand", "ignore_fp_errors", "workspace",
           "array_module"]

arr = numpy_view




def arr_on(t: Tensor, like: Tensor):
    """``t``'s array on ``like``'s device: its own view when they share the device, else a copy
    through the descriptors' host hooks (a CPU index tensor used on another device)."""
    if t._device is like._device or t._device == like._device:
        return numpy_view(t)
    return from_host(like, to_host(t, numpy_view(t)))


def np_scalar_or_array(x):
    """A NumPy operand for ``x``: the array view of a tensor, or the Python scalar itself."""
    return numpy_view(x) if isinstance(x, Tensor) else x


def resize_out(out: Tensor, shape: tuple, op_name: str = "out") -> None:
    """Give ``out`` the shape ``shape`` (torch's ``resize_`` of out= tensors)."""
    if out._shape == shape:
        return
    stride = contiguous_strides(shape)
    need = storage_extent(shape, stride, out._offset) * out._dtype.itemsize
    if need > out._storage._nbytes:
        out._storage = Storage(storage_extent(shape, stride, 0) * out._dtype.itemsize,
                               out._device)
        out._set_meta(shape, stride, 0)
    else:
        out._set_meta(shape, stride, out._offset)


def new_output(shape: tuple, dtype: dt.DType, out: Tensor | None = None,
               op_name: str = "op") -> Tensor:
    """An output tensor for a kernel: fresh, or the caller's ``out`` (checked, resized, bumped)."""
    if out is None:
        return empty_tensor(shape, dtype)
    if not dt.can_cast(dtype, out._dtype):
        raise RuntimeError(f"result type {_tname(dtype)} can't be cast to the desired output "
                           f"type {_tname(out._dtype)}")
    resize_out(out, shape, op_name)
    out._ver.value += 1
    return out


# NOTE [Kernel workspace]
# A NumPy temporary is memory from glibc: blocks of a few hundred KiB and up are mapped fresh
# (or carved from a heap top that glibc trims again), so every large temporary pays page
# faults that zero its pages. A kernel that chains elementwise passes over a big tensor
# (gelu, softmax) spends most of its time there: gelu_backward of 1024 x 512 float32 took
# 29 ms (exact) / 13.5 ms (tanh) with temporaries, 6.3 / 5.4 ms in place. Such kernels
# compute into their output and into workspace from the caching allocator, which keeps its
# segments mapped.
def workspace(shape: tuple, npdtype: np.dtype) -> tuple[Storage, np.ndarray]:
    """Scratch memory for a kernel from the caching allocator: ``(storage, array)``.

    The array is only valid while the storage is referenced: hold both (NOTE [Kernel
    workspace]); dropping the storage returns the block to the cache.
    """
    n = npdtype.itemsize
    for d in shape:
        n *= d
    return new_array(n, shape, npdtype, guard_state.device)


def write_result(result, out: Tensor) -> Tensor:
    """Copy an array result into ``out``'s memory (casting as needed) and return ``out``."""
    dst = numpy_view(out)
    (np if out._device is CPU else array_module(out)).copyto(dst, result, casting="unsafe")
    return out


def _tname(d: dt.DType) -> str:
    return d.scalar_name


def compute_dtype(d: dt.DType) -> np.dtype:
    """The NumPy dtype a kernel computes in: float32 for half types (PyTorch's opmath)."""
    return _F32 if d is dt.float16 or d is dt.bfloat16 else d.np


_F32 = np.dtype(np.float32)


class _ErrstateVar:
    """Fallback when NumPy's error-state context variable is not reachable."""

    def set(self, _):
        es = np.errstate(all="ignore")
        es.__enter__()
        return es

    def reset(self, es):
        es.__exit__(None, None, None)


# NOTE [Silent floating-point errors]
# torch never warns on overflow or invalid operations; NumPy does unless told otherwise.
# ``np.errstate`` costs ~0.8 us per entry, so kernels set NumPy's error-state context variable
# directly (~0.1 us) and reset it after the call.
try:
    from numpy._core import _ufunc_config as _uc

    _IGNORE = _uc._make_extobj(all="ignore")
    _set_errstate, _reset_errstate = _uc._extobj_contextvar.set, _uc._extobj_contextvar.reset
except (ImportError, AttributeError):  # pragma: no cover - other NumPy versions
    _IGNORE = None
    _var = _ErrstateVar()
    _set_errstate, _reset_errstate = _var.set, _var.reset


class ignore_fp_errors:
    """Context manager: NumPy floating-point errors are silent inside (cheap ``np.errstate``)."""

    __slots__ = ("_token",)

    def __enter__(self):
        self._token = _set_errstate(_IGNORE)

    def __exit__(self, *exc):
        _reset_errstate(self._token)


def run_ufunc(ufunc, operands, out: Tensor, compute: np.dtype, **kw) -> Tensor:
    """Apply ``ufunc`` to NumPy ``operands`` computing in ``compute``; land the result in ``out``.

    Floating errors (overflow, invalid) are silent, as in torch: they produce inf/nan. On a
    device with another array module, a NumPy ufunc is that module's ufunc of the same name
    (NOTE [Kernels and array modules] in ``ember/backends/cpu/__init__.py``).
    """
    dst = numpy_view(out)
    xp = np
    if out._device is not CPU:
        xp = array_module(out)
        if xp is not np and isinstance(ufunc, np.ufunc):
            ufunc = getattr(xp, ufunc.__name__)
    token = _set_errstate(_IGNORE)
    try:
        if dst.dtype == compute:
            ufunc(*operands, out=dst, dtype=compute, casting="unsafe", **kw)
        else:
            tmp = ufunc(*operands, dtype=compute, casting="unsafe", **kw)
            xp.copyto(dst, tmp, casting="unsafe")
    finally:
        _reset_errstate(token)
    return out


def operand(x, compute: np.dtype):
    """A NumPy operand: a tensor's strided view, or a Python scalar cast to ``compute``."""
    if isinstance(x, Tensor):
        return numpy_view(x)
    # a NumPy scalar, which every array module takes (a 0-d array would be a host array)
    return np.asarray(x).astype(compute, copy=False)[()] if compute.kind != "b" else x
