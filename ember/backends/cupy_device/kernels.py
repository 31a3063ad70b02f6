"""CUDA kernels where the CPU kernels cannot serve a CuPy array as they are.

Every other operator borrows its CPU kernel (``kernels_from="cpu"``; NOTE [Kernels and array
modules] in ``ember/backends/cpu/__init__.py``). Registered here, at the ``CUDA`` key:

- ``copy_`` between host and device: NumPy's ``copyto`` cannot mix a NumPy and a CuPy
  array, so a host source is uploaded (``ndarray.set``, asynchronous from pinned memory on the
  current stream) and a device source downloaded (``ndarray.get``) before the cast.
- ``fill_``: a 0-d device tensor's value is read on the host first.
"""

from __future__ import annotations

import numpy as np

from ember.backends.cupy_device import runtime as rt
from ember.ops import copy as cp
from ember.tensor import Tensor, numpy_view

cupy = rt.cupy


def _half_to_int(src: Tensor, dst: Tensor) -> bool:
    """half -> integer goes through float32, so out-of-range values wrap as torch's casts."""
    return src._dtype.itemsize == 2 and src._dtype.is_floating_point and \
        not dst._dtype.is_floating_point


@cp.copy_.impl("CUDA")
def _copy(self: Tensor, src, non_blocking: bool = False) -> Tensor:
    cp.copy_.meta_rule(self, src)
    if isinstance(src, Tensor) and src._device.type == "meta":
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    self._ver.value += 1
    if not self.numel():
        return self
    dst = numpy_view(self)
    if not isinstance(src, Tensor):
        dst.fill(src)
        return self
    s = numpy_view(src)
    on_dev_dst = self._device.type == "cuda"
    on_dev_src = src._device.type == "cuda"
    if on_dev_dst and on_dev_src:
        if _half_to_int(src, self):
            s = s.astype(np.float32)
        cupy.copyto(dst, s, casting="unsafe")
    elif on_dev_dst:  # host -> device
        _upload(dst, s, _half_to_int(src, self), non_blocking)
    else:  # device -> host
        if s.shape != dst.shape:
            s = cupy.broadcast_to(s, dst.shape)
        host = cupy.ascontiguousarray(s).get()
        if _half_to_int(src, self):
            host = host.astype(np.float32)
        with np.errstate(all="ignore"):
            np.copyto(dst, host, casting="unsafe")
    return self


def _upload(dst, s: np.ndarray, via_float32: bool, non_blocking: bool) -> None:
    """Copy host array ``s`` (broadcastable to ``dst``) into the device array ``dst``."""
    if s.dtype == dst.dtype and s.shape == dst.shape and dst.flags.c_contiguous and \
            s.flags.c_contiguous:
        stream = rt.current_stream()._cs if non_blocking else None
        dst.set(s, stream=stream)
        if not non_blocking:
            rt.current_stream()._cs.synchronize()
        return
    host = np.asarray(s)
    if not host.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
        host = host.copy(order="C")
    if via_float32:
        host = host.astype(np.float32)
    cupy.copyto(dst, cupy.asarray(host), casting="unsafe")


@cp.fill_.impl("CUDA")
def _fill(self: Tensor, value) -> Tensor:
    cp.fill_.meta_rule(self, value)
    self._ver.value += 1
    if self.numel():
        if isinstance(value, Tensor):
            v = numpy_view(value)
            if value._device.type == "cuda" and self._device.type == "cuda":
                numpy_view(self)[...] = v.astype(numpy_view(self).dtype)
                return self
            value = v.item()
        numpy_view(self).fill(value)
    return self
