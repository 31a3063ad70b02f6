"""Docstring examples: how much of the public API carries one, and that each one is run.

``make test`` runs every ``>>>`` example in the package as a doctest (``--doctest-modules
ember``). This file keeps the share of public callables with an example, and of ``nn`` module
classes with one, from shrinking (ratchets: raise the floors when examples are added, never
lower them) and checks that each counted example sits where the doctest collector finds it,
so that none is silently skipped.

Examples print only what every CPU computes alike: integers, booleans, shapes, dtypes, values
exact in binary, or tensors whose 4-decimal printout is far from a rounding tie.
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

# Percent of public callables of PUBLIC_MODULES whose docstring has an example, and of the
# ``nn.Module`` subclasses in ``ember.nn`` (only ever raised). Both measured 100% when set;
# the floors leave a little room for APIs that land without an example before they get one.
MIN_COVERAGE = 97
MIN_MODULE_COVERAGE = 97


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


def module_classes() -> list[tuple[str, type]]:
    """``(name, class)`` for each ``nn.Module`` subclass that ``ember.nn`` exports."""
    nn = importlib.import_module("ember.nn")
    return [(f"ember.nn.{name}", obj) for name in sorted(dir(nn)) if not name.startswith("_")
            for obj in [getattr(nn, name)]
            if inspect.isclass(obj) and issubclass(obj, nn.Module)]


def has_example(obj) -> bool:
    return ">>>" in (getattr(obj, "__doc__", None) or "")


def _check_floor(objs: list, floor: int, what: str) -> None:
    missing = [name for name, obj in objs if not has_example(obj)]
    have, total = len(objs) - len(missing), len(objs)
    percent = 100 * have / total
    assert percent >= floor, (
        f"{have} of {total} {what} ({percent:.1f}%) have a docstring example; at least "
        f"{floor}% must. Add a short ``Example:`` to: {', '.join(missing[:40])}")


def test_example_coverage_does_not_shrink():
    _check_floor(public_callables(), MIN_COVERAGE, "public callables")


def test_module_example_coverage_does_not_shrink():
    _check_floor(module_classes(), MIN_MODULE_COVERAGE, "nn module classes")


def _collected_docstrings(module_name: str, cache: dict) -> set[str]:
    if module_name not in cache:
        tests = doctest.DocTestFinder().find(sys.modules[module_name])
        cache[module_name] = {t.docstring for t in tests if t.examples}
    return cache[module_name]


def test_every_counted_example_is_collected():
    # An example the collector cannot reach (an object whose __module__ names a module that
    # does not hold it) would count above but never run.
    cache: dict = {}
    lost = []
    for name, obj in public_callables() + module_classes():
        if not has_example(obj):
            continue
        module_name = getattr(obj, "__module__", None)
        if module_name not in sys.modules or not module_name.startswith("ember"):
            lost.append(f"{name} (module {module_name!r})")
        elif obj.__doc__ not in _collected_docstrings(module_name, cache):
            lost.append(name)
    assert not lost, f"examples the doctest collector does not find: {lost}"
