"""Segment exits: rebuild real values from shadow ones and replay the capture's side effects.

A :class:`Rebuilder` renders each shadow value as a Python expression over the segment's
namespace: tensors computed by the graph are graph outputs ``O[k]``; inputs (tensors, shadowed
containers, sourced objects) are their source expressions, so identity is kept; containers,
closures and cells created during capture are built anew; constants are literals.

Replay follows a fixed order (compiler-design.md 4.11): (1) run the graph; (2) evaluate every
value to be written, and every object a write targets, from the *pre-mutation* sources;
(3) apply the side effects in program order (container contents, attributes, globals, closure
cells); (4) write the frame state.
"""

from __future__ import annotations

import collections
import math
import types

from ember.compiler.concrete import NULL
from ember.compiler.shapes import SymInt
from ember.core.device import Device
from ember.core.dtype import DType
from ember.tensor import Tensor

__all__ = ["Rebuilder", "CannotRebuild"]

_LITERALS = (type(None), bool, int, str)
_REBUILT_MUTABLE = (collections.OrderedDict, collections.defaultdict, collections.Counter)


class CannotRebuild(Exception):
    """A live value has no faithful reconstruction (an iterator, a foreign object)."""


def _cell(*v):
    return types.CellType(*v)


def _setstate(obj, state):
    obj.__setstate__(state)
    return obj


def _mkobj(cls, state):
    obj = cls.__new__(cls)
    obj.__dict__.update(state)
    return obj


def _mkfn(code, g, name, qualname, defaults, kwdefaults, closure):
    f = types.FunctionType(code, g, name, defaults, closure)
    f.__qualname__ = qualname
    if kwdefaults:
        f.__kwdefaults__ = kwdefaults
    return f


class Rebuilder:
    """Expressions for shadow values of one capture; collects graph outputs and constants."""

    def __init__(self, capture):
        self.cap = capture
        self.outputs: list = []          # graph nodes to output, in order
        self._out_index: dict[int, int] = {}
        self.env: dict = {"NULL": NULL, "_cell": _cell, "_mkfn": _mkfn, "_mkobj": _mkobj,
                          "_setstate": _setstate}
        self._nconst = 0
        self.pre: list[str] = []         # statements evaluating values (step 2)
        self.effects: list[str] = []     # mutations (step 3)
        self._tmp = 0
        self._memo: dict[int, str] = {}

    def const(self, v) -> str:
        name = f"K{self._nconst}"
        self._nconst += 1
        self.env[name] = v
        return name

    def temp(self, expr: str) -> str:
        name = f"t{self._tmp}"
        self._tmp += 1
        self.pre.append(f"{name} = {expr}")
        return name

    def expr(self, v, depth: int = 0) -> str:
        if depth > 50:
            raise CannotRebuild("value nested too deeply")
        cap = self.cap
        if v is NULL:
            return "NULL"
        t = type(v)
        if t in _LITERALS:
            return repr(v)
        if t is SymInt:     # a size computed from dynamic input sizes (shapes.py)
            return f"({cap.shape_env.render(v.expr)})"
        if t is float:
            return repr(v) if math.isfinite(v) else self.const(v)
        if isinstance(v, Tensor):
            src = cap.source(v)
            if src is not None:
                return src
            node = cap.mode.node_of(v)
            k = self._out_index.get(id(node))
            if k is None:
                k = self._out_index[id(node)] = len(self.outputs)
                self.outputs.append(node)
            return f"O[{k}]"
        if t in (bytes, complex, type(Ellipsis), type(NotImplemented)) or isinstance(
                v, (DType, Device)):
            return self.const(v)
        src = cap.source(v)
        if src is not None:
            return src
        if t in (list, dict, set, types.CellType, types.FunctionType) or t in _REBUILT_MUTABLE \
                or hasattr(t, "__next__"):
            # mutable objects made during capture: built once, shared by every reference
            hit = self._memo.get(id(v))
            if hit is not None:
                return hit
            e = self._expr_new(v, t, depth)
            name = self.temp(e)
            self._memo[id(v)] = name
            return name
        return self._expr_new(v, t, depth)

    def _expr_new(self, v, t, depth):
        cap = self.cap
        if t is list:
            return "[" + ", ".join(self.expr(x, depth + 1) for x in v) + "]"
        if t is tuple:
            return "(" + "".join(self.expr(x, depth + 1) + ", " for x in v) + ")"
        if t is dict:
            return "{" + ", ".join(f"{self.expr(k, depth + 1)}: {self.expr(x, depth + 1)}"
                                   for k, x in v.items()) + "}"
        if t is set or t is frozenset:
            items = ", ".join(self.expr(x, depth + 1) for x in v)
            return f"{t.__name__}([{items}])"
        if t is slice:
            return (f"slice({self.expr(v.start, depth + 1)}, {self.expr(v.stop, depth + 1)}, "
                    f"{self.expr(v.step, depth + 1)})")
        if t is range:
            return self.const(v)
        if isinstance(v, tuple):   # namedtuple / Size: rebuild with its type
            items = "".join(self.expr(x, depth + 1) + ", " for x in v)
            if hasattr(t, "_make"):
                return f"{self.const(t)}._make(({items}))"
            return f"{self.const(t)}(({items}))"
        if t is types.CellType:
            try:
                contents = v.cell_contents
            except ValueError:
                return "_cell()"
            return f"_cell({self.expr(contents, depth + 1)})"
        if t is types.FunctionType and id(v) in cap.created_fns:
            closure = "None"
            if v.__closure__:
                closure = "(" + "".join(self.expr(c, depth + 1) + ", "
                                        for c in v.__closure__) + ")"
            return (f"_mkfn({self.const(v.__code__)}, {self.const(v.__globals__)}, "
                    f"{v.__name__!r}, {v.__qualname__!r}, {self.expr(v.__defaults__, depth + 1)},"
                    f" {self.expr(v.__kwdefaults__, depth + 1)}, {closure})")
        if isinstance(v, (types.ModuleType, type, types.BuiltinFunctionType, types.FunctionType,
                          types.MethodDescriptorType, types.WrapperDescriptorType)):
            return self.const(v)
        if isinstance(v, types.MethodType):
            return f"{self.const(types.MethodType)}({self.expr(v.__func__, depth + 1)}, " \
                   f"{self.expr(v.__self__, depth + 1)})"
        if t is collections.Counter:
            return f"{self.const(t)}({self.expr(dict(v), depth + 1)})"
        if t is collections.OrderedDict:
            return f"{self.const(t)}({self.expr(list(v.items()), depth + 1)})"
        if t is collections.defaultdict:
            return (f"{self.const(t)}({self.expr(v.default_factory, depth + 1)}, "
                    f"{self.expr(dict(v), depth + 1)})")
        if hasattr(t, "__next__") and type(v).__module__ == "builtins":
            # a builtin iterator made during capture (list/range/dict iteration), live at a
            # break: rebuilt at the same position from its pickle recipe
            try:
                red = v.__reduce__()
            except TypeError as e:
                raise CannotRebuild(f"a live {t.__name__}") from e
            if not (isinstance(red, tuple) and red[0] in (iter, reversed)):
                raise CannotRebuild(f"a live {t.__name__}")
            it = f"{self.const(red[0])}(*{self.expr(red[1], depth + 1)})"
            if len(red) > 2 and red[2] is not None:
                return f"_setstate({it}, {self.expr(red[2], depth + 1)})"
            return it
        if isinstance(v, BaseException) and not vars(v):
            # an exception built during capture, about to be raised by the concrete step
            return f"{self.const(type(v))}(*{self.expr(v.args, depth + 1)})"
        if type(v).__module__ == "ember.autograd.grad_mode" and hasattr(v, "__dict__"):
            # a grad-mode manager entered during capture, live at a break inside its block:
            # an equivalent object whose __exit__ restores the same state
            return f"_mkobj({self.const(type(v))}, {self.const(dict(v.__dict__))})"
        raise CannotRebuild(f"a live {type(v).__name__} object created during capture")

    # -- side effects ------------------------------------------------------------------
    def side_effects(self) -> None:
        """Emit replay statements for every recorded mutation (values evaluated first)."""
        cap = self.cap
        if cap.exit_grad != cap.entry_grad:
            from ember.autograd.grad_mode import grad_state
            self.effects.append(f"{self.const(grad_state())}.enabled = {cap.exit_grad}")
        for sh, _real, snap in cap.real_of.values():
            if type(sh) is list:
                if len(sh) != len(snap) or any(a is not b for a, b in zip(sh, snap)):
                    obj = self.temp(cap.source(sh))
                    val = self.temp(self.expr(list(sh)))
                    self.effects.append(f"{obj}[:] = {val}")
            elif type(sh) is dict:
                items = list(sh.items())
                if len(items) != len(snap) or any(a[0] is not b[0] or a[1] is not b[1]
                                                  for a, b in zip(items, snap)):
                    obj = self.temp(cap.source(sh))
                    val = self.temp(self.expr(dict(sh)))
                    self.effects.append(f"{obj}.clear(); {obj}.update({val})")
        for obj, name, value in cap.attr_writes:
            o = self.temp(self.expr(obj))
            val = self.temp(self.expr(value))
            self.effects.append(f"setattr({o}, {name!r}, {val})")
        for name, value in cap.global_writes:
            val = self.temp(self.expr(value))
            self.effects.append(f"G[{name!r}] = {val}")
        for sh, _real, snap in cap.cell_real.values():
            try:
                cur = sh.cell_contents
            except ValueError:
                cur = NULL
            if cur is not snap:
                c = self.temp(cap.source(sh))
                if cur is NULL:
                    self.effects.append(f"del {c}.cell_contents")
                else:
                    val = self.temp(self.expr(cur))
                    self.effects.append(f"{c}.cell_contents = {val}")
