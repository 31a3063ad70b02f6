"""Fusion: which pointwise values are inlined, and how realised values group into kernels.

Rules (compiler-design.md 7.3): a pointwise value is inlined into its readers when every
reader iterates its exact shape and it is read once or is cheap; reductions read their
producers inline; a kernel iterates one shape ``F`` as rows of its last dimension, so
reductions over that dimension and the pointwise values after them (softmax, layer norm)
share one kernel with several passes per row. Kernels never cross a node left to NumPy.
"""

from __future__ import annotations

from ember.compiler.lower.ir import LNode

__all__ = ["Kernel", "schedule", "realized_reads"]

_CHEAP = 4


class Kernel:
    """Realised LNodes computed by one generated C function, iterating ``shape``."""

    def __init__(self, index: int, shape):
        self.index, self.shape = index, tuple(shape)
        self.members: list[LNode] = []
        self.checks_index = False   # reads through a checked index (set by the code generator)

    @property
    def rows_shape(self):
        return self.shape[:-1] + (1,) if self.shape else ()

    def __repr__(self):
        return f"Kernel{self.index}({self.shape}, {self.members})"


def realized_reads(ln: LNode) -> list[LNode]:
    """The realised (or buffer/view) LNodes that ``ln``'s expression reads, through inlined
    pointwise producers."""
    out, seen = [], set()

    def walk(e):
        for src in e.loads():
            if id(src) in seen:
                continue
            seen.add(id(src))
            if src.kind == "pw" and not src.realized:
                walk(src.expr)
            else:
                out.append(src)

    walk(ln.expr)
    return out


def schedule(nodes: list[LNode], barriers: set[int]) -> list[Kernel]:
    """Decide inlining, group realised nodes into kernels, mark stored ones.

    ``barriers``: indices of buffer LNodes made by nodes left to NumPy (a kernel never spans
    one, so its inputs exist when it runs and its outputs exist for the nodes after it).
    """
    seg = 0
    for ln in nodes:
        if ln.kind == "buffer" and ln.index in barriers:
            seg += 1
        ln.segment = seg
    for ln in reversed(nodes):
        if ln.kind != "pw":
            continue
        # never inline across a node left to NumPy: it may mutate what the value reads
        inline = not ln.external and ln.users and all(
            u.kind in ("pw", "red") and u.iter_shape == ln.shape and u.segment == ln.segment
            for u in ln.users)
        if inline and len(ln.users) > 1 and _cost(ln) > _CHEAP:
            inline = False      # computed once and stored beats recomputing it per reader
        ln.realized = not inline
    kernels: list[Kernel] = []
    cur: Kernel | None = None
    for ln in nodes:
        if ln.kind == "buffer":
            if ln.index in barriers:
                cur = None
            continue
        if ln.kind not in ("pw", "red") or not ln.realized:
            continue
        shape = ln.iter_shape
        if cur is not None and cur.shape == shape and _joinable(cur, ln):
            cur.members.append(ln)
            ln.kernel = cur
            continue
        cur = Kernel(len(kernels), shape)
        kernels.append(cur)
        cur.members.append(ln)
        ln.kernel = cur
    # storage: graph-visible values, values read by other kernels, pointwise read in-kernel
    for k in kernels:
        for ln in k.members:
            if ln.external or ln.kind == "pw":
                ln.stored = True
            for src in realized_reads(ln):
                if src.kind in ("pw", "red") and src.kernel is not k:
                    src.stored = True
                if src.kind == "view" and src.base.kind in ("pw", "red"):
                    src.base.stored = True      # read through strides by a later kernel
    return kernels


_COSTLY = {"exp", "log", "tanh", "sigmoid", "sin", "cos", "erf", "log1p", "expm1", "pow",
           "atan2", "sqrt", "rsqrt", "div", "reciprocal", "exp2", "log2"}


def _cost(ln: LNode) -> int:
    """Operations to recompute ``ln`` (through the producers inlined into it; a
    transcendental function or a division counts as several)."""
    total, seen = 0, set()

    def walk(e):
        nonlocal total
        if e.kind == "op":
            total += 8 if e.value in _COSTLY else 1
        elif e.kind == "cast":
            total += 1
        elif e.kind == "load":
            src = e.value
            if src.kind == "pw" and not src.realized and id(src) not in seen:
                seen.add(id(src))
                walk(src.expr)
        for a in e.args:
            walk(a)

    walk(ln.expr)
    return total


def _joinable(k: Kernel, ln: LNode) -> bool:
    rows = k.rows_shape
    for src in realized_reads(ln):
        if src.kind == "view" and src.base.kind in ("pw", "red") and src.base.kernel is k:
            return False        # a strided read of a value this kernel is still writing
        if src.kernel is not k:
            continue
        if src.kind == "red" and src.shape != rows:
            return False
        if src.kind == "pw" and src.shape != k.shape:
            return False
    return True
