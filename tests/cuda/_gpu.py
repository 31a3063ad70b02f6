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
# the CuPy stand-in of tests/cuda/fake_cupy.py (CPU arrays): tests size their work down
FAKE = AVAILABLE and getattr(__import__("sys").modules.get("cupy"), "__version__", "").endswith(
    "fake")


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


class kernels_pending:  # noqa: N801  (a context manager, named like one)
    """On the CuPy stand-in, turn a CPU kernel that still mixes host arrays into device
    computations (``HostArrayMixed``) into an expected failure naming it; elsewhere, nothing.

    The backend's glue is what the stand-in checks; which kernels are device-clean is the
    kernels' own test (tests/dispatch/test_device_arrays.py).
    """

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if FAKE and exc_type is not None and exc_type.__name__ == "HostArrayMixed":
            import traceback
            frames = [f for f in traceback.extract_tb(tb) if "/ember/backends/cpu/" in f.filename]
            where = f"{frames[-1].filename.split('/ember/')[-1]}:{frames[-1].lineno}" \
                if frames else "?"
            pytest.xfail(f"a CPU kernel mixes host arrays into device ones ({where}): {exc}")
        return False
