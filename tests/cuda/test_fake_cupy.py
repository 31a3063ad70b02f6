"""The GPU tests against the CuPy stand-in, in a fresh interpreter (CI has no GPU).

``tests/cuda/fake_cupy.py`` must replace ``cupy`` before ``ember`` is imported, so the GPU
test files run in a subprocess (``python -m tests.cuda.run_fake``); this test passes when they
pass there. On a machine whose CuPy sees a GPU the real tests run directly and this is
skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cuda._gpu import AVAILABLE

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(AVAILABLE, reason="a real CUDA device runs the GPU tests directly")
def test_gpu_tests_pass_on_the_cupy_stand_in():
    env = dict(os.environ, PYTHONPATH=str(ROOT), EMBER_CUDA="")
    proc = subprocess.run(
        [sys.executable, "-m", "tests.cuda.run_fake", "-q", "-rxs", "--tb=short",
         "-W", "ignore::RuntimeWarning",
         "tests/cuda/test_cuda_device.py", "tests/cuda/test_cuda_glue.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    tail = (proc.stdout + proc.stderr)[-6000:]
    assert proc.returncode == 0, tail
    assert "SKIPPED" not in proc.stdout, tail  # the stand-in registered the cuda device
