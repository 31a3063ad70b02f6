"""Docstring examples: how much of the public API carries one, and that each one is run.

``make test`` runs every ``>>>`` example in the package as a doctest (``--doctest-modules
ember``). This file keeps the share of public callables with an example from shrinking (a
ratchet: raise ``MIN_COVERAGE`` when examples are added, never lower it) and checks that each
counted example sits where the doctest collector finds it, so that none is silently skipped.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import sys

# The namespaces a PyTorch user reads first; an object re-exported by several counts once.
PUBLIC_MODULES = (
    "ember", "ember.nn", "ember.nn.functional", "ember.optim", "ember.optim.lr_scheduler",
    "ember.autograd", "ember.linalg", "ember.utils.data", "ember.amp", "ember.memory",
    "ember.serialization", "ember.utils.checkpoint", "ember.nn.init", "ember.autograd.functional",
    "ember.random", "ember.testing",
)

# Percent of public callables whose docstring has an example (only ever raised).
MIN_COVERAGE = 90


def public_callables() -> list[tuple[str, object]]:
    """``(qualified name, object)`` for each distinct public callable of PUBLIC_MODULES."""
    seen: set[int] = set()
    found = []
    for mod_name in PUBLIC_MODULES:
        mod = importlib.import_module(mod_name)
        names = getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]
        for name in names:
            obj = getattr(mod, name, None)
            if obj is None or inspect.ismodule(obj) or not callable(obj) or id(obj) in seen:
                continue
            seen.add(id(obj))
            found.append((f"{mod_name}.{name}", obj))
    return found


def has_example(obj) -> bool:
    return ">>>" in (getattr(obj, "__doc__", None) or "")


def coverage() -> tuple[int, int]:
    """``(with an example, total)`` over public_callables()."""
    objs = public_callables()
    return sum(has_example(o) for _, o in objs), len(objs)


def test_example_coverage_does_not_shrink():
    have, total = coverage()
    percent = 100 * have / total
    assert percent >= MIN_COVERAGE, (
        f"{have} of {total} public callables ({percent:.1f}%) have a docstring example; "
        f"at least {MIN_COVERAGE}% must")


def _collected_docstrings(module_name: str, cache: dict) -> set[str]:
    if module_name not in cache:
        finder = doctest.DocTestFinder()
        tests = finder.find(sys.modules[module_name])
        cache[module_name] = {t.docstring for t in tests if t.examples}
    return cache[module_name]


def test_every_counted_example_is_collected():
    # An example the collector cannot reach (an object whose __module__ names a module that
    # does not hold it) would count here but never run.
    cache: dict = {}
    lost = []
    for name, obj in public_callables():
        if not has_example(obj):
            continue
        module_name = getattr(obj, "__module__", None)
        if module_name not in sys.modules or not module_name.startswith("ember"):
            lost.append(f"{name} (module {module_name!r})")
        elif obj.__doc__ not in _collected_docstrings(module_name, cache):
            lost.append(name)
    assert not lost, f"examples doctest does not collect: {lost}"
