"""CPU kernels of copying operators."""

from __future__ import annotations

import numpy as np

from ember.backends.cpu._util import arr
from ember.ops import copy as cp
from ember.tensor import Tensor


@cp.copy_.impl("CPU")
def _copy(self: Tensor, src, non_blocking: bool = False) -> Tensor:
    cp.copy_.meta_rule(self, src)
    if isinstance(src, Tensor) and src._device.type == "meta":
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    self._ver.value += 1
    if self.numel():
        np.copyto(arr(self), arr(src) if isinstance(src, Tensor) else src, casting="unsafe")
    return self


@cp.fill_.impl("CPU")
def _fill(self: Tensor, value) -> Tensor:
    cp.fill_.meta_rule(self, value)
    self._ver.value += 1
    if self.numel():
        arr(self).fill(value.item() if isinstance(value, Tensor) else value)
    return self
