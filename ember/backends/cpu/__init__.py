"""The CPU backend: NumPy kernels, one module per operator family (NOTE [Operator families]).

The device registry imports this package the first time an operator needs a CPU kernel
(NOTE [Kernels are found by the registry] in ember/memory/devices.py); it registers the kernels
of every family of ``ember.ops.FAMILIES`` that has a module here.

NOTE [Kernels and array modules]
A device whose array module speaks NumPy's API borrows these kernels (``kernels_from="cpu"``
in its ``DeviceBackend``). The kernels are written against that module, never against host
NumPy memory:

- arrays come from the device: ``numpy_view`` builds a tensor's array with the descriptor's
  ``as_array``; outputs come from the allocation device's allocator (``new_output``,
  ``empty_tensor``, ``workspace``); temporaries from the array module of the arrays at hand,
  ``xp.module_of(a)`` / ``xp.array_module(t)`` (read from the descriptor, cached per device
  type; ``numpy`` on the CPU without a lookup);
- NumPy calls on the arrays themselves (ufuncs with ``out=``/``dtype=``, ``sum``, ``matmul``,
  ``einsum``, ``where``, ``take``, ``take_along_axis``, ``copyto``, ``broadcast_to``...) are
  shared code: NumPy hands them to the array's library through ``__array_ufunc__`` (NEP 13)
  and ``__array_function__`` (NEP 18), as CuPy's arrays answer them;
- Python scalars enter as NumPy scalars (``xp.cast``, ``_np``), never as 0-d host arrays;
- index and weight tables computed from sizes alone (pooling windows, resampling taps, pad
  indices, ``arange``/``eye`` values) are built on the host and moved once with
  ``xp.like(a, table)`` (the descriptor's ``from_host``); CPU index tensors used with device
  tensors go through ``_util.arr_on``; copies between devices through the descriptors'
  ``to_host``/``from_host`` hooks (``copy.py``).

``tests/dispatch/test_device_arrays.py`` proves it: a device whose arrays refuse host arrays,
as CuPy's do, runs the op table's pointwise, reduction, view, matmul, indexing, convolution,
pooling and nn-functional entries, bit for bit equal to the CPU, every output a device array
from the device's allocator.

Where NumPy and CuPy differ, kernels call a named helper of ``ember/backends/cpu/_xp.py``
whose CuPy spelling a backend supplies with ``xp.register_helpers``: ``ufunc_at`` (``np.add.at``
in scatters, col2im; ``cupyx.scatter_add``/``scatter_max``/``scatter_min``), ``as_strided``
(conv/pooling windows; ``cupy.lib.stride_tricks``), ``reduceat``, ``sort``/``argsort`` with a
stable order (NumPy's ``kind=``), ``ufunc_of``. What is not shared yet:

- bfloat16: it is ``ml_dtypes.bfloat16``, which CuPy has no dtype for (a CuPy backend
  computes bfloat16 through float32 storage or refuses it);
- ``_util.ignore_fp_errors``: NumPy's error-state context variable (CuPy never warns, so it
  is harmless there);
- ``linalg``'s LAPACK-only calls (general ``eig``/``eigvals``, ``lstsq`` drivers, pivoted LU)
  and the Householder/QR loops over columns in Python; ``xp.to_host``/``xp.from_host`` are the
  round trip for them, not yet wired into every routine;
- the remaining ``kind=`` sorts in ``reduction``/``shape`` (median, mode, ``_unique_rows``'s
  ``lexsort``) and the NaN ordering built on NumPy's sort;
- ``random``: Philox streams are computed on the host with NumPy ``uint64`` arithmetic, so a
  device backend copies the bits over (or runs the rounds as a device kernel);
- kernels that read values on the host (``.item()``/``.tolist()``/``bool(...)`` of a device
  array in ``copy``, ``creation``, ``scatter_gather`` bounds checks, ``reduction``'s mode):
  they work on CuPy but synchronize the stream;
- ``relu``'s cached zeros blocks are host memory: device arrays take ``maximum(x, 0)``.
"""

import importlib
import importlib.util

from ember.ops import FAMILIES

for _family in FAMILIES:
    if importlib.util.find_spec(f"{__name__}.{_family}") is not None:
        importlib.import_module(f"{__name__}.{_family}")
