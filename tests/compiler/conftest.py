"""Shared fixtures of the compiler tests."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="module")
def isolated_kernel_cache(tmp_path_factory):
    """``EMBER_CACHE_DIR`` pointed at a fresh directory for one test module (restored after),
    so the C backend's disk cache starts cold and leaves nothing behind."""
    old = os.environ.get("EMBER_CACHE_DIR")
    os.environ["EMBER_CACHE_DIR"] = str(tmp_path_factory.mktemp("ember_cache"))
    yield
    if old is None:
        os.environ.pop("EMBER_CACHE_DIR", None)
    else:
        os.environ["EMBER_CACHE_DIR"] = old
