"""The CPU backend: NumPy kernels, one module per operator family (NOTE [Operator families]).

The device registry imports this package the first time an operator needs a CPU kernel
(NOTE [Kernels are found by the registry] in ember/memory/devices.py); it registers the kernels
of every family of ``ember.ops.FAMILIES`` that has a module here.

NOTE [Kernels and array modules]
A device whose array module speaks NumPy's API borrows these kernels (``kernels_from="cpu"``
in its ``DeviceBackend``): they reach memory only through the backend (``numpy_view`` builds
arrays with ``DeviceBackend.as_array``; outputs and ``workspace`` come from the allocation
device's allocator; ``_util.array_module``, ``run_ufunc`` and ``write_result`` use its
module). The kernels' own ``np.<function>(array, ...)`` calls are written against NumPy's API
on arrays they are given, and NumPy hands such a call to the array's own library when the
array implements the dispatch protocols (``__array_ufunc__``, NEP 13, for ufuncs with ``out=``
and ``dtype=``; ``__array_function__``, NEP 18, for ``sum``, ``matmul``, ``einsum``,
``where``, ``take``, ``copyto``, ``broadcast_to`` and the rest), as CuPy's arrays do. So the
ufunc tables of the pointwise family (bound to NumPy's ufuncs in ``make_unary`` /
``make_binary``), the reductions, ``matmul``, conv's ``einsum``/``as_strided`` (CuPy has
``cupy.lib.stride_tricks``) and the special functions written with ufuncs (erf, erfinv, lgamma,
digamma) are shared code. These cannot be shared as they are:

- calls that make arrays from nothing (``np.empty``/``np.zeros``/``np.arange``/``np.array``
  without ``like=``) or turn device arrays into host ones (``np.asarray``): kernels must take
  them from ``array_module(t)`` or allocate through ``workspace``/``new_output``;
- bfloat16 everywhere: it is ``ml_dtypes.bfloat16``, which CuPy has no dtype for;
- ``_util.ignore_fp_errors``: NumPy's error-state context variable (CuPy never warns, so a
  CuPy backend makes it a no-op);
- ``linalg``: the LAPACK-backed ``np.linalg`` calls CuPy lacks (general ``eig``/``eigvals``,
  ``lstsq`` drivers, pivoted LU) and the Householder/QR loops over columns in Python;
- ``ufunc.at`` scatters (``np.add.at`` in conv's col2im and ``scatter_gather``): CuPy spells
  them ``cupyx.scatter_add``/``scatter_max``;
- sorts that pass ``kind=`` (``reduction``, ``shape``: stable sort, median, mode) and the
  NaN ordering rules built on NumPy's sort;
- ``random``: Philox streams are computed on the host with NumPy ``uint64`` arithmetic, so a
  device backend copies the bits over (or runs the rounds as a device kernel);
- kernels that read values on the host (``.item()``/``.tolist()`` in ``copy``, ``creation``,
  ``scatter_gather``): they work on CuPy but synchronize the stream.
"""

import importlib
import importlib.util

from ember.ops import FAMILIES

for _family in FAMILIES:
    if importlib.util.find_spec(f"{__name__}.{_family}") is not None:
        importlib.import_module(f"{__name__}.{_family}")
