"""Fixtures for allocator tests: a fresh CPU allocator, restored afterwards.

Tests that change the limit, the settings or history recording use these, so that tests run
after them in the same process (``pytest -n 2``) see the allocator as it was.
"""

from __future__ import annotations

import pytest

import ember.memory.allocator as A
import ember.memory.storage as S
import ember.utils.memory_history  # noqa: F401  (op names in history; until ember imports it)
from ember import memory
from ember.memory.allocator import CachingAllocator, CpuBackend, MetaBackend
from ember.memory.config import AllocatorConfig, parse_alloc_conf


def _swap(device: str, new: CachingAllocator) -> CachingAllocator:
    old = A.ALLOCATORS[device]
    A.ALLOCATORS[device] = new
    if device == "cpu":
        A.CPU_ALLOCATOR = new
        S.CPU_ALLOCATOR = new
    else:
        A.META_ALLOCATOR = new
    return old


@pytest.fixture
def fresh():
    """A brand-new CPU allocator serving every new CPU tensor during the test.

    Call ``fresh.configure(parse_alloc_conf("..."))`` or ``fresh.set_limit(n)`` freely: the
    process-wide allocator comes back untouched afterwards.
    """
    new = CachingAllocator("cpu", CpuBackend(), AllocatorConfig())
    old = _swap("cpu", new)
    try:
        yield new
    finally:
        if new.recording:
            memory.record_history(False)
        _swap("cpu", old)


@pytest.fixture
def fresh_meta():
    new = CachingAllocator("meta", MetaBackend(), AllocatorConfig(), capacity=A.UNLIMITED)
    old = _swap("meta", new)
    try:
        yield new
    finally:
        _swap("meta", old)


def configured(alloc: CachingAllocator, text: str) -> CachingAllocator:
    alloc.configure(parse_alloc_conf(text))
    return alloc
