"""torch.special's kernels on a device whose arrays refuse host arrays (as CuPy's do).

The CPU kernels of ember.special serve any device with a NumPy-like array module; on the
private test device (tests/dispatch/device_numpy.py) every op-table entry of ember.special
must give the CPU's result bit for bit, with its output on the device, so no kernel built a
host array or mixed one into device arrays.
"""

from __future__ import annotations

import pytest

from tests.dispatch.test_device_arrays import _Only, _run
from tests.dispatch.test_private_device import _cases
from tests.ops.opdb import special as special_db

SPECIAL = {info.name for info in special_db.OPS if info.name.startswith("special.")}


@pytest.mark.parametrize("info,dtype", _cases(_Only(special_db, SPECIAL)))
def test_special_on_device_arrays(info, dtype):
    _run(info, dtype)
