"""Run GPU tests against the CuPy stand-in (``tests/cuda/fake_cupy.py``) on a machine without
a GPU: ``python -m tests.cuda.run_fake [pytest args]`` (default: the tests/cuda files)."""

from __future__ import annotations

import sys

from tests.cuda import fake_cupy

if __name__ == "__main__":
    fake_cupy.install()
    import pytest

    args = sys.argv[1:] or ["tests/cuda/test_cuda_device.py"]
    sys.exit(pytest.main(["-p", "no:cacheprovider", *args]))
