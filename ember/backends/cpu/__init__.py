"""The CPU backend: NumPy kernels, one module per operator family (NOTE [Operator families]).

The device registry imports this package the first time an operator needs a CPU kernel
(NOTE [Kernels are found by the registry] in ember/memory/devices.py); it registers the kernels
of every family of ``ember.ops.FAMILIES`` that has a module here.

NOTE [Kernels and array modules]
A device whose array module speaks NumPy's API borrows these kernels (``kernels_from="cpu"``
in its ``DeviceBackend``): they reach memory only through the backend (``numpy_view`` builds
arrays with ``DeviceBackend.as_array``; outputs and ``workspace`` come from the allocation
device's allocator; ``_util.array_module``, ``run_ufunc`` and ``write_result`` use its
module). Most kernels still call ``np.<function>`` on those arrays, and the pointwise factories
(``make_unary``/``make_binary``) bind NumPy's ufuncs when they build each kernel; that is right
for NumPy-backed devices, and a CuPy device builds its kernels with the same factories from
its own module's functions, or switches a family to ``array_module(t).<function>``: the
ufuncs, reductions, ``matmul``/``einsum``, ``as_strided`` (conv, pooling), ``take``/``put``
and the special functions written with ufuncs (erf, erfinv, lgamma, digamma) exist with the
same names and arguments in CuPy. These cannot be shared as they are:

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
