"""The CPU backend: NumPy kernels, one module per operator family (NOTE [Operator families]).

The device registry imports this package the first time an operator needs a CPU kernel
(NOTE [Kernels are found by the registry] in ember/memory/devices.py); it registers the kernels
of every family of ``ember.ops.FAMILIES`` that has a module here.
"""

import importlib
import importlib.util

from ember.ops import FAMILIES

for _family in FAMILIES:
    if importlib.util.find_spec(f"{__name__}.{_family}") is not None:
        importlib.import_module(f"{__name__}.{_family}")
