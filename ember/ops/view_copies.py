"""The ``*_scatter`` and ``*_copy`` forms of the view operators.

``diagonal_scatter(input, src, ...)`` is ``input`` with the elements that ``input.diagonal(...)``
views replaced by ``src`` (a new tensor; ``input`` is untouched); ``select_``, ``slice_`` and
``as_strided_scatter`` likewise. ``view_copy(x, ...)`` and its siblings return what the view
would, as a new contiguous tensor that shares nothing with ``x``. All are composites of the view
ops, ``clone`` and ``copy_``, so autograd and the Meta device need nothing more.
"""

from __future__ import annotations

from ember.ops._define import TENSOR_METHODS, composite
from ember.ops.copy import clone
from ember.ops.views import (
    alias,
    as_strided,
    chunk,
    detach,
    diagonal,
    expand,
    narrow,
    permute,
    resolve_conj,
    select,
    slice,
    split,
    split_with_sizes,
    squeeze,
    t,
    transpose,
    unbind,
    unfold,
    unsqueeze,
    view,
    view_as_complex,
    view_as_real,
)
from ember.tensor import Tensor

__all__ = ["diagonal_scatter", "select_scatter", "slice_scatter", "as_strided_scatter"]


def _require(name: str, x, arg: str = "input", pos: int = 1) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")


def _scatter(name: str, input: Tensor, src: Tensor, view_of) -> Tensor:
    """``input`` cloned, with the region ``view_of(clone)`` picks overwritten by ``src``."""
    _require(name, input)
    _require(name, src, "src", 2)
    out = clone(input)
    region = view_of(out)
    if region._shape != src._shape:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src._shape)}, slice size = {list(region._shape)}")
    region.copy_(src)
    return out


# -- scatters -----------------------------------------------------------------------------------
@composite("diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1) "
           "-> Tensor")
def diagonal_scatter(input, src, offset: int = 0, dim1: int = 0, dim2: int = 1):
    """``input`` with its ``diagonal(offset, dim1, dim2)`` replaced by ``src``.

    Raises:
        RuntimeError: ``src``'s shape is not the diagonal's.

    Example:
        >>> ember.diagonal_scatter(ember.zeros(2, 2), ember.ones(2)).tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    return _scatter("diagonal_scatter", input, src, lambda o: diagonal(o, offset, dim1, dim2))


@composite("select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor")
def select_scatter(input, src, dim: int, index: int):
    """``input`` with ``input.select(dim, index)`` replaced by ``src``.

    Example:
        >>> ember.select_scatter(ember.zeros(2, 2), ember.ones(2), 0, 1).tolist()
        [[0.0, 0.0], [1.0, 1.0]]
    """
    return _scatter("select_scatter", input, src, lambda o: select(o, dim, index))


@composite("slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, "
           "SymInt? end=None, SymInt step=1) -> Tensor")
def slice_scatter(input, src, dim: int = 0, start=None, end=None, step: int = 1):
    """``input`` with the slice ``start:end:step`` along ``dim`` replaced by ``src``.

    Example:
        >>> ember.slice_scatter(ember.zeros(4), ember.ones(2), start=2).tolist()
        [0.0, 0.0, 1.0, 1.0]
    """
    return _scatter("slice_scatter", input, src, lambda o: slice(o, dim, start, end, step))


@composite("as_strided_scatter(Tensor self, Tensor src, SymInt[] size, SymInt[] stride, "
           "SymInt? storage_offset=None) -> Tensor")
def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """``input`` (cloned) with ``clone.as_strided(size, stride, storage_offset)`` replaced by
    ``src``; the geometry addresses the clone's storage, as in torch.

    Example:
        >>> ember.as_strided_scatter(ember.zeros(4), ember.ones(2), (2,), (2,)).tolist()
        [1.0, 0.0, 1.0, 0.0]
    """
    _require("as_strided_scatter", input)
    _require("as_strided_scatter", src, "src", 2)
    # the positions the geometry picks in a contiguous clone, written by one scatter, so that
    # autograd sees a scatter (input: grad with the written positions zeroed; src: a gather)
    from ember.ops.creation import arange
    n = input.numel()
    index = as_strided(arange(n, device=input._device), size, stride, storage_offset)
    if index._shape != src._shape:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src._shape)}, slice size = {list(index._shape)}")
    flat = input.reshape(-1)
    if not index.numel():
        return clone(input, memory_format="contiguous_format")
    out = flat.scatter(0, index.reshape(-1), src.reshape(-1).to(input._dtype))
    return out.view(input._shape)


# -- copies -------------------------------------------------------------------------------------
def _contiguous_copy(x):
    if isinstance(x, tuple | list):
        return [_contiguous_copy(v) for v in x]
    return clone(x, memory_format="contiguous_format")


# name -> (schema arguments after ``Tensor self``, the view it copies)
_COPIES = {
    "view_copy": ("SymInt[] size", view),
    "permute_copy": ("int[] dims", permute),
    "transpose_copy": ("int dim0, int dim1", transpose),
    "t_copy": ("", t),
    "expand_copy": ("SymInt[] size, *, bool implicit=False", expand),
    "narrow_copy": ("int dim, SymInt start, SymInt length", narrow),
    "select_copy": ("int dim, SymInt index", select),
    "slice_copy": ("int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1", slice),
    "diagonal_copy": ("int offset=0, int dim1=0, int dim2=1", diagonal),
    "squeeze_copy": ("int[]? dim=None", squeeze),
    "unsqueeze_copy": ("int dim", unsqueeze),
    "unfold_copy": ("int dimension, int size, int step", unfold),
    "as_strided_copy": ("SymInt[] size, SymInt[] stride, SymInt? storage_offset=None",
                        as_strided),
    # torch's detach_copy output requires grad and its backward raises; ember's is a plain
    # copy outside autograd, like detach()
    "detach_copy": ("", detach),
    "alias_copy": ("", alias),
    "split_copy": ("SymInt split_size, int dim=0", split),
    "split_with_sizes_copy": ("SymInt[] split_sizes, int dim=0", split_with_sizes),
    "unbind_copy": ("int dim=0", unbind),
    # a copy has no conjugation bit to keep: torch resolves it instead of refusing
    "view_as_real_copy": ("", lambda x: view_as_real(resolve_conj(x))),
    "view_as_complex_copy": ("", view_as_complex),
}


def _declare_copy(name: str, args: str, view_op) -> None:
    def fn(input, *a, **k):
        _require(name, input)
        return _contiguous_copy(view_op(input, *a, **k))

    view_name = name.removesuffix("_copy")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""What ``{view_name}`` returns, as a new contiguous tensor (no storage shared).

    Example:
        >>> x = ember.zeros(2, 3); ember.{name} is not None
        True
    """
    multi = name in ("split_copy", "split_with_sizes_copy", "unbind_copy")
    sep = ", " if args else ""
    schema = f"{name}(Tensor self{sep}{args}) -> Tensor{'[]' if multi else ''}"
    op = composite(schema, method=False)(fn)
    globals()[name] = op
    __all__.append(name)


for _name, (_args, _view) in _COPIES.items():
    _declare_copy(_name, _args, _view)

TENSOR_METHODS["narrow_copy"] = globals()["narrow_copy"]  # torch has it as a method too


# -- unsafe splits ------------------------------------------------------------------------------
@composite("unsafe_chunk(Tensor self, int chunks, int dim=0) -> Tensor[]")
def unsafe_chunk(input, chunks: int, dim: int = 0):
    """:func:`chunk` whose views autograd does not guard against in-place changes (torch's
    "unsafe" variant); the views are the same.

    Example:
        >>> [t.tolist() for t in ember.unsafe_chunk(ember.arange(5), 2)]
        [[0, 1, 2], [3, 4]]
    """
    return chunk(input, chunks, dim)


@composite("unsafe_split.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]")
def unsafe_split(input, split_size, dim: int = 0):
    """:func:`split` without autograd's guard on in-place changes of the views.

    Example:
        >>> [t.tolist() for t in ember.unsafe_split(ember.arange(5), 2)]
        [[0, 1], [2, 3], [4]]
    """
    return split(input, split_size, dim)


@composite("unsafe_split_with_sizes(Tensor self, SymInt[] split_sizes, int dim=0) -> Tensor[]")
def unsafe_split_with_sizes(input, split_sizes, dim: int = 0):
    """:func:`split_with_sizes` without autograd's guard on in-place changes of the views.

    Example:
        >>> [t.shape for t in ember.unsafe_split_with_sizes(ember.zeros(5, 2), [2, 3])]
        [ember.Size([2, 2]), ember.Size([3, 2])]
    """
    return split_with_sizes(input, split_sizes, dim)


__all__ += ["unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes"]
