"""CPU kernels of copying operators."""

from __future__ import annotations

import warnings

import numpy as np

from ember.backends.cpu._util import arr, ignore_fp_errors
from ember.backends.cpu._xp import array_module
from ember.core import dtype as dt
from ember.core.device import CPU, Device
from ember.memory.devices import get_backend
from ember.ops import copy as cp
from ember.tensor import Tensor, store_resolved
from ember.tensor.tensor import warn_chalf


def _transfer(source, src: Device, dst: Device, non_blocking: bool):
    """``source`` (an array on ``src``) as an array on ``dst``, through the descriptors' copy
    hooks (NOTE [Backend descriptors] in ember/memory/devices.py); a blocking copy off a device
    waits for it (``synchronize``)."""
    if src is not CPU:
        backend = get_backend(src.type)
        source = backend.to_host(source, non_blocking)
        if not non_blocking:
            backend.synchronize()
    if dst is not CPU:
        source = get_backend(dst.type).from_host(source, non_blocking)
    return source


@cp.copy_.impl("CPU")
def _copy(self: Tensor, src, non_blocking: bool = False) -> Tensor:
    cp.copy_.meta_rule(self, src)
    if isinstance(src, Tensor) and src._device.type == "meta":
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    self._ver.value += 1
    if self.numel():
        source = src
        if isinstance(src, Tensor):
            source = arr(src)
            if src._dtype.itemsize == 2 and src._dtype.is_floating_point and \
                    not self._dtype.is_floating_point:
                # half -> integer goes through float32 so out-of-range values wrap like torch's
                # casts instead of saturating
                source = source.astype(np.float32)
            elif src._dtype.is_complex and not self._dtype.is_complex:
                warnings.warn("Casting complex values to real discards the imaginary part",
                              UserWarning, stacklevel=4)
                source = source.real
            if src._device is not self._device and src._device != self._device:
                source = _transfer(source, src._device, self._device, non_blocking)
        if self._dtype is dt.complex32:  # NOTE [complex32 storage] in ember/tensor/tensor.py
            warn_chalf()
            store_resolved(self, source)
            return self
        xp = np if self._device is CPU else array_module(self)
        with ignore_fp_errors():
            xp.copyto(arr(self), source, casting="unsafe")
    return self


@cp.fill_.impl("CPU")
def _fill(self: Tensor, value) -> Tensor:
    cp.fill_.meta_rule(self, value)
    self._ver.value += 1
    if self.numel():
        arr(self).fill(value.item() if isinstance(value, Tensor) else value)
    return self
