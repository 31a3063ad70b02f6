"""CPU kernels of copying operators."""

from __future__ import annotations

import numpy as np

from ember.backends.cpu._util import arr, ignore_fp_errors
from ember.ops import copy as cp
from ember.tensor import Tensor


@cp.copy_.impl("CPU")
def _copy(self: Tensor, src, non_blocking: bool = False) -> Tensor:
    cp.copy_.meta_rule(self, src)
    if isinstance(src, Tensor) and src._device.type == "meta":
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    self._ver.value += 1
    if self.numel():
        source = arr(src) if isinstance(src, Tensor) else src
        if isinstance(src, Tensor) and src._dtype.itemsize == 2 and \
                src._dtype.is_floating_point and not self._dtype.is_floating_point:
            # half -> integer goes through float32 so out-of-range values wrap like torch's
            # casts instead of saturating
            source = source.astype(np.float32)
        with ignore_fp_errors():
            np.copyto(arr(self), source, casting="unsafe")
    return self


@cp.fill_.impl("CPU")
def _fill(self: Tensor, value) -> Tensor:
    cp.fill_.meta_rule(self, value)
    self._ver.value += 1
    if self.numel():
        arr(self).fill(value.item() if isinstance(value, Tensor) else value)
    return self
