"""Tests of the dispatcher, dispatch modes, ``ember.library`` and ``ember.utils.dispatch``."""

from __future__ import annotations

import itertools
from contextlib import contextmanager

from ember.library import Library

_counter = itertools.count()


@contextmanager
def fresh_lib(kind: str = "DEF"):
    """A Library in a namespace no other test uses, destroyed (all registrations undone) after."""
    lib = Library(f"tdisp{next(_counter)}", kind)
    try:
        yield lib
    finally:
        lib._destroy()


def unary(lib: Library, name: str = "op") -> object:
    """Define ``<ns>::<name>(Tensor x) -> Tensor`` in ``lib`` and return its Operator."""
    import ember

    lib.define(f"{name}(Tensor x) -> Tensor")
    return getattr(getattr(ember.ops, lib.ns), name).default
