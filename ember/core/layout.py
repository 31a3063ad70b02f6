"""Pure shape/stride/offset math over tuples: the geometry of views.

Nothing here knows about tensors or storage. Functions take shapes, strides (in elements) and
offsets, and return new ones, or ``None`` where the geometry cannot be expressed without a copy.
Errors raised here carry PyTorch's messages, because view ops surface them unchanged.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

__all__ = [
    "contiguous_strides", "is_contiguous", "is_non_overlapping_and_dense", "numel",
    "canonical_dim", "infer_size", "view_strides", "broadcast_shapes", "expand_geometry",
    "storage_extent", "normalize_shape",
]


def numel(shape: Sequence[int]) -> int:
    """Number of elements of ``shape`` (1 for ``()``)."""
    return math.prod(shape)


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides: ``stride[-1] = 1``, ``stride[d] = stride[d+1] * max(size[d+1], 1)``."""
    try:
        return _STRIDE_CACHE[shape]
    except (KeyError, TypeError):
        pass
    strides = _compute_contiguous_strides(shape)
    if len(_STRIDE_CACHE) < 4096 and isinstance(shape, tuple):
        _STRIDE_CACHE[shape] = strides
    return strides


_STRIDE_CACHE: dict[tuple, tuple] = {}


def _compute_contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides = []
    acc = 1
    for size in reversed(shape):
        strides.append(acc)
        acc *= size if size > 1 else 1
    return tuple(reversed(strides))


def is_contiguous(shape: Sequence[int], stride: Sequence[int]) -> bool:
    """PyTorch's rule: empty tensors are contiguous and size-1 dims may have any stride."""
    if 0 in shape:
        return True
    expected = 1
    for size, st in zip(reversed(shape), reversed(stride)):
        if size == 0:
            return True
        if size == 1:
            continue
        if st != expected:
            return False
        expected *= size
    return True


def is_non_overlapping_and_dense(shape: Sequence[int], stride: Sequence[int]) -> bool:
    """True when the elements exactly tile a dense block (some permutation is contiguous)."""
    if is_contiguous(shape, stride):
        return True
    dims = sorted((st, size) for size, st in zip(shape, stride) if size != 1)
    expected = 1
    for st, size in dims:
        if st != expected:
            return False
        expected *= size
    return True


def canonical_dim(dim: int, ndim: int, op: str = "dim") -> int:
    """Wrap a possibly negative ``dim`` into ``[0, ndim)``; IndexError like torch otherwise."""
    bound = max(ndim, 1)
    if not -bound <= dim < bound:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-bound}, {bound - 1}], "
            f"but got {dim})"
        )
    return dim + bound if dim < 0 else dim


def normalize_shape(shape) -> tuple[int, ...]:
    """Accept ``(2, 3)``, ``[2, 3]``, ``((2, 3),)`` or a Size and return a tuple of ints."""
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = shape[0]
    try:
        # int subclasses other than bool kept as they are (the compiler's symbolic sizes)
        return tuple(s if s.__class__ is int or (isinstance(s, int) and s.__class__ is not bool)
                     else operator.index(s) for s in shape)
    except TypeError:
        raise TypeError(f"expected a sequence of integers for a shape; got {shape!r}") from None


def infer_size(shape: Sequence[int], count: int) -> tuple[int, ...]:
    """Resolve one ``-1`` in ``shape`` so that it has ``count`` elements (``infer_size``)."""
    infer_at = None
    known = 1
    for i, size in enumerate(shape):
        if size == -1:
            if infer_at is not None:
                raise RuntimeError("only one dimension can be inferred")
            infer_at = i
        elif size < 0:
            raise RuntimeError(f"invalid shape dimension {size}")
        else:
            known *= size
    if infer_at is not None:
        if known == 0 or count % known != 0:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {count}")
        shape = list(shape)
        shape[infer_at] = count // known
        return tuple(shape)
    if known != count:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {count}")
    return tuple(shape)


def view_strides(
    old_shape: Sequence[int], old_stride: Sequence[int], new_shape: Sequence[int]
) -> tuple[int, ...] | None:
    """Strides that let ``new_shape`` view memory laid out as (old_shape, old_stride).

    NOTE [View stride computation]
    Old dims are grouped, last to first, into chunks of mutually contiguous dims
    (``stride[d-1] == size[d] * stride[d]``). Each chunk must be covered exactly by a
    consecutive run of new dims whose sizes multiply to the chunk's numel; inside a chunk the new
    strides are contiguous multiples of the chunk's innermost stride. A new dim that would
    straddle two chunks makes the view impossible: return None (reshape then copies).
    """
    n = numel(old_shape)
    if n == 0:
        if tuple(old_shape) == tuple(new_shape):
            return tuple(old_stride)
        return contiguous_strides(new_shape)
    new_stride = [0] * len(new_shape)
    if not old_shape:  # 0-d: only shapes of all ones
        return tuple(1 for _ in new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_stride[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (
            old_shape[tensor_d - 1] != 1
            and old_stride[tensor_d - 1] != tensor_numel * chunk_base_stride
        ):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_stride[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_stride[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_stride)


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The broadcast of several shapes (NumPy/PyTorch rules); RuntimeError when incompatible."""
    if len(shapes) == 2 and shapes[0] == shapes[1]:
        return tuple(shapes[0])
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        offset = ndim - len(s)
        for i, size in enumerate(s):
            cur = out[offset + i]
            if size == cur or size == 1:
                continue
            if cur == 1:
                out[offset + i] = size
            else:
                raise RuntimeError(
                    f"The size of tensor a ({cur}) must match the size of tensor b ({size}) at "
                    f"non-singleton dimension {i - len(s) + ndim}"
                )
    return tuple(out)


def expand_geometry(
    shape: Sequence[int], stride: Sequence[int], target: Sequence[int]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Shape and strides of ``expand(target)``: broadcast dims get stride 0 (``-1`` keeps)."""
    if len(target) < len(shape):
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(target)}) must be greater or equal to "
            f"the number of dimensions in the tensor ({len(shape)})"
        )
    ndim, offset = len(target), len(target) - len(shape)
    new_shape, new_stride = [0] * ndim, [0] * ndim
    for i in range(ndim - 1, -1, -1):
        j = i - offset
        want = target[i]
        if j >= 0:
            size, st = shape[j], stride[j]
        else:
            if want < 0:
                raise RuntimeError(
                    f"expand: -1 is not allowed in a leading, non-existing dimension {i}"
                )
            size = 1
            st = new_shape[i + 1] * new_stride[i + 1] if i + 1 < ndim else 1
        if want == -1:
            want = size
        if size != want:
            if size != 1:
                raise RuntimeError(
                    f"The expanded size of the tensor ({want}) must match the existing size "
                    f"({size}) at non-singleton dimension {i}.  Target sizes: {list(target)}.  "
                    f"Tensor sizes: {list(shape)}"
                )
            st = 0
        new_shape[i], new_stride[i] = want, st
    return tuple(new_shape), tuple(new_stride)


def storage_extent(shape: Sequence[int], stride: Sequence[int], offset: int) -> int:
    """Elements of storage needed to hold the view: ``offset + sum((size-1)*stride) + 1``."""
    if numel(shape) == 0:
        return 0
    return offset + sum((s - 1) * st for s, st in zip(shape, stride)) + 1


def has_internal_overlap(shape: Sequence[int], stride: Sequence[int]) -> bool:
    """True when a dim of size > 1 has stride 0 (PyTorch's definite "overlap: YES" case).

    A tensor without elements never overlaps (torch lets an empty expanded tensor be written).
    """
    if 0 in shape:
        return False
    return any(st == 0 and s > 1 for s, st in zip(shape, stride))
