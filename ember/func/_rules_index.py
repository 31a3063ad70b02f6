"""Batching rules for scatter, index_put and index_select with batched indices.

Every tensor argument is brought to the batch (batch first; unbatched ones expanded), the
dimension argument moves past the batch dim, and advanced indices gain a leading ``arange``
over the batch so each example only reads and writes its own slice.
"""

from __future__ import annotations

from ember.func._batched import front, is_batched_at, wrap
from ember.func._rules import _INPLACE_MSG, RULES, _arg, _bfront, _op, _set, _wrap_dim


def _scatter(op, info, args, kwargs):
    """``scatter``/``scatter_add``/``scatter_reduce`` (and in-place forms): per example."""
    level, size = info.level, info.size
    x = args[0]
    if kwargs.get("out") is not None or x.dim() == 0:
        return NotImplemented
    if op._is_inplace and not is_batched_at(x, level):
        raise RuntimeError(_INPLACE_MSG)
    a, k = list(args), dict(kwargs)
    a[0] = front(x) if op._is_inplace else _bfront(x, level, size)
    where, d = _arg(op, args, kwargs, "dim")
    _set(a, k, where, _wrap_dim(d, x.dim()) + 1)
    for name in ("index", "src"):
        try:
            w, t = _arg(op, args, kwargs, name)
        except KeyError:
            continue
        if t is not None and hasattr(t, "dim"):
            _set(a, k, w, _bfront(t, level, size))
    out = op(*a, **k)
    return args[0] if op._is_inplace else wrap(out, 0, level)


for _name in ("scatter", "scatter_", "scatter_add", "scatter_add_", "scatter_reduce",
              "scatter_reduce_"):
    RULES[_name] = _scatter


def _batch_arange(size: int, rank: int):
    return _op("aten::arange")(size).reshape(size, *([1] * rank))


def _index_put(op, info, args, kwargs):
    """``self[indices] = values`` per example, the indexed dims moved next to the batch
    (NOTE [Indexed dims next to the batch] in ``_rules.py``)."""
    level, size = info.level, info.size
    x = args[0]
    _, indices = _arg(op, args, kwargs, "indices")
    _, values = _arg(op, args, kwargs, "values")
    _, accumulate = _arg(op, args, kwargs, "accumulate")
    indices = list(indices)
    present = [i for i, t in enumerate(indices) if t is not None]
    if not present or any(indices[i].dtype.name == "bool" for i in present):
        return NotImplemented
    if op._is_inplace and not is_batched_at(x, level):
        raise RuntimeError(_INPLACE_MSG)
    adjacent = present == list(range(present[0], present[-1] + 1))
    idx_rank = max(indices[i].dim() for i in present)
    idx = []
    for i in present:
        t = indices[i]
        if is_batched_at(t, level):
            v = front(t)
            while v.dim() < idx_rank + 1:
                v = v.unsqueeze(1)
            idx.append(v)
        else:
            idx.append(t)
    others = [d for d in range(x.dim()) if d not in present]
    perm = [0, *[d + 1 for d in present], *[d + 1 for d in others]]
    # per example the indexed part is (*index, *others), or (*before, *index, *after) when
    # the indices are adjacent and not leading: values are brought to the first layout
    part_rank = idx_rank + len(others)
    lead = 1 if is_batched_at(values, level) else 0
    vv = front(values) if lead else values
    while vv.dim() < part_rank + lead:
        vv = vv.unsqueeze(lead)
    if adjacent and present[0] > 0:
        block = list(range(lead + present[0], lead + present[0] + idx_rank))
        vv = vv.movedim(block, [b - present[0] for b in block])
    vx = (front(x) if op._is_inplace else _bfront(x, level, size)).permute(perm)
    out = op(vx, [_batch_arange(size, idx_rank), *idx], vv, accumulate)
    if op._is_inplace:
        return args[0]
    inverse = sorted(range(len(perm)), key=perm.__getitem__)
    return wrap(out.permute(inverse), 0, level)


RULES["index_put"] = _index_put
RULES["index_put_"] = _index_put


def _index_select(op, info, args, kwargs):
    """``index_select``: a batched index picks each example's own rows."""
    level, size = info.level, info.size
    x = args[0]
    where, d = _arg(op, args, kwargs, "dim")
    _, index = _arg(op, args, kwargs, "index")
    if kwargs.get("out") is not None:
        return NotImplemented
    if not is_batched_at(index, level):
        a, k = list(args), dict(kwargs)
        a[0] = front(x)
        _set(a, k, where, _wrap_dim(d, x.dim()) + 1)
        return wrap(op(*a, **k), 0, level)
    if x.dim() == 0:
        return NotImplemented
    d = _wrap_dim(d, x.dim()) + 1
    vx = _bfront(x, level, size).movedim(d, 1)  # (B, n, *rest)
    vi = front(index).reshape(size, -1)  # (B, k)
    out = _op("aten::index.Tensor")(vx, [_batch_arange(size, 1), vi])  # (B, k, *rest)
    return wrap(out.movedim(1, d), 0, level)


RULES["index_select"] = _index_select


def _index_into(op, info, args, kwargs):
    """``index_add``/``index_copy``/``index_fill`` with an unbatched index (and in-place
    forms): self and source brought to the batch, the dim past it."""
    level, size = info.level, info.size
    x = args[0]
    _, index = _arg(op, args, kwargs, "index")
    if kwargs.get("out") is not None or x.dim() == 0:
        return NotImplemented
    if op._is_inplace and not is_batched_at(x, level):
        raise RuntimeError(_INPLACE_MSG)
    if is_batched_at(index, level):
        return _index_into_batched_index(op, info, args, kwargs)
    a, k = list(args), dict(kwargs)
    a[0] = front(x) if op._is_inplace else _bfront(x, level, size)
    where, d = _arg(op, args, kwargs, "dim")
    _set(a, k, where, _wrap_dim(d, x.dim()) + 1)
    for name in ("source", "value"):
        try:
            w, t = _arg(op, args, kwargs, name)
        except KeyError:
            continue
        if is_batched_at(t, level):
            _set(a, k, w, front(t) if name == "source" else NotImplemented)
        elif name == "source" and t.dim() > 0:
            _set(a, k, w, _bfront(t, level, size))
    if any(v is NotImplemented for v in (*a, *k.values())):
        return NotImplemented  # a batched fill value
    out = op(*a, **k)
    return args[0] if op._is_inplace else wrap(out, 0, level)


for _name in ("index_add", "index_add_", "index_copy", "index_copy_", "index_fill",
              "index_fill_"):
    RULES[_name] = _index_into


def _index_into_batched_index(op, info, args, kwargs):
    """A batched index: the indexed dim moves next to the batch and ``index_put`` writes
    ``x[b, index[b]]`` (accumulating for ``index_add``)."""
    level, size = info.level, info.size
    x = args[0]
    _, d = _arg(op, args, kwargs, "dim")
    _, index = _arg(op, args, kwargs, "index")
    d = _wrap_dim(d, x.dim()) + 1
    vx = (front(x) if op._is_inplace else _bfront(x, level, size)).movedim(d, 1)
    vi = front(index).reshape(size, -1)
    base = op.name.rstrip("_")
    if base == "index_fill":
        _, value = _arg(op, args, kwargs, "value")
        if is_batched_at(value, level):
            return NotImplemented
        vals = value if hasattr(value, "dim") else _op("aten::scalar_tensor")(value,
                                                                              dtype=vx.dtype)
    else:
        _, source = _arg(op, args, kwargs, "source")
        vals = _bfront(source, level, size)
        if source.dim() == 0:
            vals = vals.reshape(size, 1)
        vals = vals.movedim(d, 1) if source.dim() else vals
        if base == "index_add":
            _, alpha = _arg(op, args, kwargs, "alpha")
            if alpha != 1:
                vals = vals * alpha
    put = _op("aten::index_put_" if op._is_inplace else "aten::index_put")
    out = put(vx, [_batch_arange(size, 1), vi], vals, base == "index_add")
    return args[0] if op._is_inplace else wrap(out.movedim(1, d), 0, level)


def _searchsorted(op, info, args, kwargs):
    """``searchsorted``: a sorted 1-D sequence per example searches that example's values,
    flattened to one row each; N-D sequences keep their leading dims next to the batch."""
    level, size = info.level, info.size
    if kwargs.get("out") is not None:
        return NotImplemented
    seq, values = args[0], args[1]
    sorter = kwargs.get("sorter")
    if not is_batched_at(seq, level) and not is_batched_at(sorter, level):
        return wrap(op(seq, front(values), *args[2:], **kwargs), 0, level)
    k = dict(kwargs)
    vs = _bfront(seq, level, size)
    if sorter is not None:
        k["sorter"] = _bfront(sorter, level, size)
    vv = _bfront(values, level, size)
    if seq.dim() != 1:
        return wrap(op(vs, vv, *args[2:], **k), 0, level)
    out = op(vs, vv.reshape(size, -1), *args[2:], **k)
    return wrap(out.reshape(vv.shape), 0, level)


def _bucketize(op, info, args, kwargs):
    """``bucketize``: batched boundaries turn it into ``searchsorted`` per example."""
    level = info.level
    x, boundaries = args[0], args[1]
    if kwargs.get("out") is not None:
        return NotImplemented
    if not is_batched_at(boundaries, level):
        return wrap(op(front(x), boundaries, *args[2:], **kwargs), 0, level)
    if boundaries.dim() != 1 or len(args) > 2:
        return NotImplemented
    ss = _op("aten::searchsorted.Tensor")
    return _searchsorted(ss, info, (boundaries, x),
                         {"out_int32": kwargs.get("out_int32", False),
                          "right": kwargs.get("right", False)})


RULES["searchsorted"] = _searchsorted
RULES["bucketize"] = _bucketize


def _take(op, info, args, kwargs):
    """``take``: each example's flattened values gathered at its flat indices."""
    level, size = info.level, info.size
    x, index = args[0], args[1]
    if kwargs.get("out") is not None:
        return NotImplemented
    flat = _bfront(x, level, size).reshape(size, -1)
    vi = _bfront(index, level, size)
    if flat.shape[1] == 0:
        return NotImplemented
    out = _op("aten::take_along_dim")(flat, vi.reshape(size, -1) % flat.shape[1], 1)
    return wrap(out.reshape(vi.shape), 0, level)


def _put(op, info, args, kwargs):
    """``put``/``put_``: scatter (or scatter_add) into each example's flattened values."""
    level, size = info.level, info.size
    x, index, source = args[0], args[1], args[2]
    _, accumulate = _arg(op, args, kwargs, "accumulate")
    if op._is_inplace and not is_batched_at(x, level):
        raise RuntimeError(_INPLACE_MSG)
    vx = _bfront(x, level, size)
    vi = _bfront(index, level, size).reshape(size, -1)
    vs = _bfront(source, level, size).reshape(size, -1)
    n = vi.shape[1]
    if vs.shape[1] != n:
        return NotImplemented  # the per-example call raises torch's error
    flat = vx.reshape(size, -1)
    numel = flat.shape[1]
    if numel == 0:
        return NotImplemented
    vi = vi % numel  # negative flat indices count from the end
    scatter = _op("aten::scatter_add" if accumulate else "aten::scatter.src")
    out = scatter(flat, 1, vi, vs).reshape(vx.shape)
    if op._is_inplace:
        front(x).copy_(out)
        return args[0]
    return wrap(out, 0, level)


RULES.update({"take": _take, "put": _put, "put_": _put})
