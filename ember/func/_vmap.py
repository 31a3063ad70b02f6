"""``vmap``: run a function written for one example over a batch (``torch.func.vmap``)."""

from __future__ import annotations

import functools

from ember.dispatch.dispatcher import IncludeKeys
from ember.func._batched import BATCHED_BIT, _Level, _state, front, is_batched_at, wrap
from ember.func._pytree import tree_flatten, tree_unflatten
from ember.tensor import Tensor

__all__ = ["vmap"]


def _fname(func) -> str:
    return getattr(func, "__name__", repr(func))


def _flat_dims(dims, tree, what: str, func, dims_repr: str) -> list:
    """``dims`` (an int, None, or a tuple tree) broadcast to ``tree``'s leaves."""
    leaves, spec = tree_flatten(tree)
    if dims is None or isinstance(dims, int):
        return [dims] * len(leaves)
    if not isinstance(dims, tuple):
        raise ValueError(f"vmap({_fname(func)}, {what}={dims_repr}, ...)(<inputs>): expected "
                         f"`{what}` to be int or a (potentially nested) tuple matching the "
                         f"structure of inputs, got: {type(dims)}.")
    flat = []
    dleaves, dspec = tree_flatten(dims)
    if len(dims) != (len(tree) if isinstance(tree, tuple | list) else 1):
        raise ValueError(f"vmap({_fname(func)}, {what}={dims_repr}, ...)(<inputs>): {what} is "
                         f"not compatible with the structure of `inputs`. {what} has structure "
                         f"{dspec} but inputs has structure {spec}.")
    for d, sub in zip(dims, tree):
        flat += _flat_dims(d, sub, what, func, dims_repr)
    return flat


def _batch_size(flat_args, flat_dims, func, in_dims) -> int:
    sizes = []
    for a, d in zip(flat_args, flat_dims):
        if d is None:
            continue
        if not isinstance(a, Tensor):
            raise ValueError(f"vmap({_fname(func)}, in_dims={in_dims!r}, ...)(<inputs>): Got "
                             f"in_dim={d} for an input but the input is of type {type(a)}. We "
                             f"cannot vmap over non-Tensor arguments, please use None as the "
                             f"respective in_dim")
        n = a.dim()
        if not -n <= d < n:
            raise ValueError(f"vmap({_fname(func)}, in_dims={in_dims!r}, ...)(<inputs>): Got "
                             f"in_dim={d} for some input, but that input is a Tensor of "
                             f"dimensionality {n} so expected in_dim to satisfy "
                             f"-{n} <= in_dim < {n}.")
        sizes.append(a.shape[d])
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    return sizes[0]


def _unwrap_out(out, level: int, size: int, out_dim, func):
    if out_dim is None:
        if is_batched_at(out, level):
            raise ValueError(f"vmap({_fname(func)}, ...): `{_fname(func)}` can not return a "
                             f"BatchedTensor when out_dim is None")
        return out
    if not isinstance(out, Tensor):
        raise ValueError(f"vmap({_fname(func)}, ...): `{_fname(func)}` must only return "
                         f"Tensors, got type {type(out)}. Did you mean to set out_dims= to None "
                         f"for output?")
    v = front(out) if is_batched_at(out, level) else \
        out.unsqueeze(0).expand(size, *out.shape)
    rank = v.dim()
    if not -rank <= out_dim < rank:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, "
                         f"{rank - 1}], but got {out_dim})")
    return v if out_dim % rank == 0 else v.movedim(0, out_dim)


def _run(func, flat_args, flat_dims, spec, kwargs, size, randomness, out_dims):
    levels = _state.levels
    level = (levels[-1].level if levels else 0) + 1
    levels.append(_Level(level, size, randomness))
    try:
        with IncludeKeys(BATCHED_BIT):
            wrapped = [a if d is None else wrap(a, d % a.dim(), level)
                       for a, d in zip(flat_args, flat_dims)]
            out = func(*tree_unflatten(wrapped, spec), **kwargs)
            flat_out, out_spec = tree_flatten(out)
            dims = _flat_out_dims(out_dims, out, func)
            result = [_unwrap_out(o, level, size, d, func) for o, d in zip(flat_out, dims)]
    finally:
        levels.pop()
    return tree_unflatten(result, out_spec)


def _flat_out_dims(out_dims, out, func) -> list:
    leaves, spec = tree_flatten(out)
    if out_dims is None or isinstance(out_dims, int):
        return [out_dims] * len(leaves)
    if not isinstance(out, tuple | list) or len(out) != len(out_dims):
        _, dspec = tree_flatten(out_dims)
        raise ValueError(f"vmap({_fname(func)}, ..., out_dims={out_dims!r})(<inputs>): out_dims "
                         f"is not compatible with the structure of `outputs`. out_dims has "
                         f"structure {dspec} but outputs has structure {spec}.")
    flat = []
    for d, o in zip(out_dims, out):
        flat += _flat_out_dims(d, o, func)
    return flat


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """Vectorise ``func`` over a batch dimension (``torch.func.vmap``).

    ``vmap(f)(x)`` equals ``stack([f(x[i]) for i in range(len(x))])`` but runs each operator
    once on the whole batch, through its batching rule (NOTE [Batched sits above autograd] in
    ``_batched.py``); operators without one run per example with a performance warning.

    Args:
        func: a function of tensors (and nested tuples/lists/dicts of them).
        in_dims: the batch dim of each input: an int for all, or a tuple matching the
            positional arguments (None: not batched).
        out_dims: where the batch dim goes in each output (int or a tuple matching them).
        randomness: ``"error"`` (random operators raise), ``"different"`` (each example draws
            its own values) or ``"same"`` (one draw shared by the batch).
        chunk_size: run the batch this many examples at a time (less memory).

    Returns:
        The vectorised function.

    Raises:
        ValueError: in_dims/out_dims that do not fit the inputs/outputs, inputs with different
            batch sizes, no batched input (torch's messages).
        RuntimeError: data-dependent control flow or ``.item()`` on a batched tensor, random
            operators under ``randomness="error"``, operators with data-dependent shapes.

    Example:
        >>> x = ember.arange(6.0).reshape(2, 3)
        >>> vmap(lambda row: row.dot(row))(x)
        tensor([ 5., 50.])
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")

    @functools.wraps(func)
    def vmapped(*args, **kwargs):
        flat_args, spec = tree_flatten(args)
        flat_dims = _flat_dims(in_dims, args, "in_dims", func, repr(in_dims))
        size = _batch_size(flat_args, flat_dims, func, in_dims)
        if chunk_size is None or chunk_size >= size:
            return _run(func, flat_args, flat_dims, spec, kwargs, size, randomness, out_dims)
        return _chunked(func, flat_args, flat_dims, spec, kwargs, size, randomness, out_dims,
                        chunk_size)

    return vmapped


def _chunked(func, flat_args, flat_dims, spec, kwargs, size, randomness, out_dims, chunk):
    from ember.dispatch.dispatcher import get_op
    cat = get_op("aten::cat")
    parts = []
    for start in range(0, size, chunk):
        n = min(chunk, size - start)
        args = [a if d is None else a.narrow(d, start, n) for a, d in zip(flat_args, flat_dims)]
        parts.append(_run(func, args, flat_dims, spec, kwargs, n, randomness, out_dims))
    flat0, out_spec = tree_flatten(parts[0])
    dims = _flat_out_dims(out_dims, parts[0], func)
    cols = [tree_flatten(p)[0] for p in parts]
    result = [cols[0][j] if d is None else cat([c[j] for c in cols], d)
              for j, d in enumerate(dims)]
    return tree_unflatten(result, out_spec)
