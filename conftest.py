"""Doctests over the ``ember`` package see ``ember`` already imported, as a user's session would."""

import importlib.util

import pytest

# the CUDA backend's modules import CuPy; without it only its package __init__ is importable
collect_ignore_glob = [] if importlib.util.find_spec("cupy") else [
    "ember/backends/cupy_device/runtime.py", "ember/backends/cupy_device/kernels.py"]


@pytest.fixture(autouse=True)
def _ember_in_doctests(doctest_namespace):
    import ember

    doctest_namespace["ember"] = ember
