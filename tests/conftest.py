"""Suite-wide fixtures: every test draws its sample values from generators seeded by its id,
so results never depend on which tests ran before it in the same worker (pytest -n 2).

Test modules that keep a module-level NumPy generator named ``_RNG`` (tests/opinfo.py and the
op-table modules) get it reseeded before each test.
"""

from __future__ import annotations

import sys
import zlib

import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _deterministic_samples(request):
    seed = zlib.crc32(request.node.nodeid.encode())
    for name, module in list(sys.modules.items()):
        if name.startswith("tests.") and isinstance(getattr(module, "_RNG", None),
                                                    np.random.Generator):
            module._RNG = np.random.default_rng([seed, zlib.crc32(name.encode())])
    yield
