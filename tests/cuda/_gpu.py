"""What the GPU tests share: the skip marker with its reason, and geometry-keeping copies.

``requires_cuda`` skips a test when there is no ``cuda`` device (CuPy missing, no GPU, or
``EMBER_CUDA=0``) and says which (``pytest -rs`` prints it).
"""

from __future__ import annotations

import pytest

import ember
from ember.backends import cupy_device
from ember.memory import Storage
from ember.tensor import make_tensor

AVAILABLE = ember.cuda.is_available()
REASON = None if AVAILABLE else \
    f"no CUDA device: {cupy_device.unavailable_reason() or 'no cuda backend registered'}"

requires_cuda = pytest.mark.skipif(not AVAILABLE, reason=REASON or "")


def to_cuda(x, memo=None):
    """``x`` with every tensor copied to cuda in the same geometry (storage sharing kept)."""
    memo = {} if memo is None else memo
    if isinstance(x, ember.Tensor):
        st = x.untyped_storage()
        dev = ember.device("cuda")
        if id(st) not in memo:
            new = Storage(st.nbytes(), dev)
            if st.nbytes():
                new.data.set(st.data)
            memo[id(st)] = new
        t = make_tensor(memo[id(st)], x._shape, x._stride, x._offset, x.dtype, dev)
        return t.requires_grad_() if x.requires_grad else t
    if isinstance(x, list | tuple):
        return type(x)(to_cuda(v, memo) for v in x)
    if isinstance(x, dict):
        return {k: to_cuda(v, memo) for k, v in x.items()}
    return x


def to_cpu(x):
    """``x`` with every tensor copied to the CPU (detached)."""
    if isinstance(x, ember.Tensor):
        return x.detach().cpu()
    if isinstance(x, list | tuple):
        return type(x)(to_cpu(v) for v in x)
    return x
