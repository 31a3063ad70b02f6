"""Loop-level IR of the C backend.

An ``LNode`` is one value of the lowered graph:

- ``buffer``: memory that exists when the kernels run (a graph input, a constant, or the
  result of a node left to the NumPy backend's rendering); ``layout`` gives its strides;
- ``view``: a buffer read through another ``layout`` (transpose, expand, slice, reshape
  expressed as strides) - it never materialises;
- ``pw``: a pointwise value of ``shape`` whose element is ``expr`` (a scalar expression DAG);
- ``red``: a reduction over the last dimension of ``src_shape`` of ``expr`` (evaluated over
  ``src_shape``), ``kind`` in sum/amax/amin; ``shape`` is the result's shape.

Scalar expressions (``Expr``) read other LNodes with right-aligned broadcasting to the
iteration shape of the LNode that holds them.
"""

from __future__ import annotations

import math

from ember.core import dtype as dt

__all__ = ["Expr", "LNode", "Layout", "load", "const", "op", "cast", "rowpos", "checked",
           "contiguous_strides"]


def contiguous_strides(shape) -> tuple:
    """Row-major strides (in elements) of ``shape``."""
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(out))


class Layout:
    """``shape``, element ``strides`` and element ``offset`` of a read from a base buffer."""

    __slots__ = ("shape", "strides", "offset")

    def __init__(self, shape, strides, offset=0):
        self.shape, self.strides, self.offset = tuple(shape), tuple(strides), offset

    def __repr__(self):
        return f"Layout({self.shape}, {self.strides}, {self.offset})"


class LNode:
    """One value of the lowered graph (see the module docstring)."""

    __slots__ = ("kind", "shape", "dtype", "expr", "src_shape", "rkind", "layout", "base",
                 "node", "users", "index", "realized", "stored", "external", "kernel", "scale",
                 "segment")

    def __init__(self, kind, shape, dtype, expr=None, *, src_shape=None, rkind=None,
                 layout=None, base=None, node=None, scale=None):
        self.kind, self.shape, self.dtype, self.expr = kind, tuple(shape), dtype, expr
        self.src_shape, self.rkind, self.layout, self.base = src_shape, rkind, layout, base
        self.node = node            # graph Node holding the array (buffers)
        self.scale = scale          # reductions: multiply the result (mean = sum * 1/n)
        self.users: list[LNode] = []
        self.index = 0
        self.realized = kind != "pw"
        self.stored = False
        self.external = False
        self.kernel = None
        self.segment = 0            # number of nodes left to NumPy before this one

    @property
    def iter_shape(self) -> tuple:
        """The shape a kernel iterates to compute this node."""
        return tuple(self.src_shape) if self.kind == "red" else self.shape

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def __repr__(self):
        return f"LNode#{self.index}({self.kind}, {self.shape}, {self.dtype})"


class Expr:
    """A scalar expression: ``load`` (of an LNode), ``const``, ``op`` (named), ``cast``."""

    __slots__ = ("kind", "dtype", "args", "value")

    def __init__(self, kind, dtype, args=(), value=None):
        self.kind, self.dtype, self.args, self.value = kind, dtype, tuple(args), value

    def loads(self):
        """The LNodes this expression reads (with repeats)."""
        if self.kind == "load":
            yield self.value
        for a in self.args:
            yield from a.loads()

    def count(self) -> int:
        """Number of operations (a cost estimate for inlining)."""
        return (self.kind in ("op", "cast")) + sum(a.count() for a in self.args)


def load(ln: LNode) -> Expr:
    return Expr("load", ln.dtype, (), ln)


def const(value, dtype) -> Expr:
    return Expr("const", dtype, (), value)


def op(name: str, dtype, *args) -> Expr:
    return Expr("op", dtype, args, name)


def rowpos() -> Expr:
    """The position (int64) along the last dimension of the shape being iterated."""
    return Expr("rowpos", dt.int64)


def checked(index: Expr, dim: int) -> Expr:
    """``index`` (int64, one per row) after a bounds check against the row length: an index
    outside ``[0, n)`` makes the call raise (NOTE [Checked indices] in codegen_c.py)."""
    return Expr("checked", index.dtype, (index,), dim)


def cast(e: Expr, dtype) -> Expr:
    return e if e.dtype is dtype else Expr("cast", dtype, (e,))
