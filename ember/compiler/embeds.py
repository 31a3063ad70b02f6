"""Folding the zero-filled gradient buffers of view backwards into one buffer.

NOTE [Folding embeds]
The derivative of a view that picks a region of its input (``narrow``, ``slice`` with step 1,
``select``) is an *embed*: a zero tensor of the input's shape with the incoming gradient copied
into that region. When one tensor is split into pieces that are all used (``q, k, v =
x.split(n, dim)``, ``unbind``), its gradient is the sum of one embed per piece: the traced
backward fills ``k`` full-size buffers with zeros, copies each piece's gradient into its own,
and adds them (``k`` fills, ``k - 1`` full-size additions, for what is a concatenation).

The pass rewrites ``add(A, B)`` where ``A`` and ``B`` are such buffers (only written through
copies into their regions, read by nothing but this addition) and the regions lie on the same
dimension without overlapping: ``B``'s views are retargeted to ``A``, so ``B``'s gradients are
copied straight into ``A``, and the addition becomes ``A``. Applied along a chain of additions
the ``k`` pieces land in one buffer; when the regions then tile the whole dimension the buffer
is not zero-filled at all (``empty`` instead of ``zeros``). Values are unchanged: adding zeros
is exact, and the regions are disjoint.
"""

from __future__ import annotations

from ember.compiler.graph import Graph, Node, _rewrite_inputs
from ember.ops.views import _clamp_slice

__all__ = ["fold_embeds"]


def _op(node: Node, name: str, overload: str | None = None) -> bool:
    t = node.target
    return (node.op == "call" and getattr(t, "name", None) == name
            and (overload is None or getattr(t, "overload", None) == overload))


def _region(view: Node, ndim: int):
    """``(dim, start, stop)`` that a view node picks from its base, or None."""
    args = view.args
    if _op(view, "narrow") and len(args) == 4 and all(isinstance(a, int) for a in args[1:]):
        d, start, length = args[1:]
        d %= ndim
        start += view.args[0].shape[d] if start < 0 else 0
        return d, start, start + length
    if _op(view, "select") and len(args) == 3 and all(isinstance(a, int) for a in args[1:]):
        d, index = args[1] % ndim, args[2]
        size = view.args[0].shape[d]
        index = index % size if size else index
        return d, index, index + 1
    if _op(view, "slice"):
        d, start, end, step = (tuple(args[1:]) + (0, None, None, 1)[len(args) - 1:])[:4]
        if step != 1 or not all(isinstance(a, int | None) for a in (d, start, end)) or d is None:
            return None
        d %= ndim
        start, end, _ = _clamp_slice(start, end, view.args[0].shape[d])
        return d, start, end
    return None


def _buffer(node: Node, add: Node):
    """The regions written into ``node`` if it is an embed buffer read only by ``add``:
    ``(list of (dim, start, stop, view), zeros node)``, else None."""
    if not _op(node, "zeros") or not node.users:
        return None
    regions = []
    ndim = node.ndim
    for user in node.users:
        if user is add:
            continue
        region = _region(user, ndim) if user.args and user.args[0] is node else None
        if region is None or any(not _op(u, "copy_") or u.args[0] is not user
                                 for u in user.users):
            return None
        regions.append((*region, user))
    if sum(u is add for u in node.users) != 1:
        return None
    return regions


def _disjoint(regions) -> bool:
    dims = {r[0] for r in regions}
    if len(dims) != 1:
        return False
    spans = sorted((r[1], r[2]) for r in regions)
    return all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))


def fold_embeds(graph: Graph) -> int:
    """Fold additions of disjoint embeds into one buffer (NOTE [Folding embeds]); returns the
    number of additions removed."""
    folded = 0
    for add in list(graph.nodes):
        if not _op(add, "add", "Tensor") or len(add.args) != 2 or add.kwargs.get("alpha", 1) != 1:
            continue
        a, b = add.args
        if not (isinstance(a, Node) and isinstance(b, Node)) or a is b:
            continue
        if a.shape != add.shape or b.shape != add.shape or a.dtype != add.dtype \
                or b.dtype != add.dtype:
            continue
        ra, rb = _buffer(a, add), _buffer(b, add)
        if not ra or not rb or not _disjoint(ra + rb):
            continue
        if graph.nodes.index(b) < graph.nodes.index(a):
            a, b, ra, rb = b, a, rb, ra
        for *_, view in rb:
            _rewrite_inputs(view, {id(b): a})
        for user in list(add.users):
            _rewrite_inputs(user, {id(add): a})
        add.users = []
        graph.erase_node(add)
        graph.erase_node(b)
        folded += 1
        _fill_only_gaps(a)
    return folded


def _written_regions(buffer: Node) -> list:
    """Regions of ``buffer`` that views written only by ``copy_`` pick."""
    out = []
    for u in buffer.users:
        if not (u.args and u.args[0] is buffer) or not u.users:
            continue
        region = _region(u, buffer.ndim)
        if region is not None and all(_op(c, "copy_") and c.args[0] is u for c in u.users):
            out.append(region)
    return out


def _fill_only_gaps(buffer: Node) -> None:
    """A zeros buffer whose regions tile its whole dimension needs no fill."""
    regions = _written_regions(buffer)
    if not regions or not _op(buffer, "zeros") or len({r[0] for r in regions}) != 1:
        return
    d = regions[0][0]
    spans = sorted((r[1], r[2]) for r in regions)
    if spans[0][0] != 0 or spans[-1][1] != buffer.shape[d]:
        return
    if any(x[1] != y[0] for x, y in zip(spans, spans[1:])):
        return
    from ember.dispatch import get_op

    buffer.target = get_op("aten::empty.memory_format")
