"""Collation (``torch.utils.data.default_collate`` / ``default_convert``).

``collate`` merges a list of samples into a batch by walking the samples' structure: a table
maps a leaf type to the function that merges a list of such leaves (tensors are stacked, Python
numbers become tensors of torch's dtypes, NumPy arrays become tensors, strings stay lists);
mappings, named tuples and sequences are merged field by field. ``default_convert`` is the
unbatched counterpart (``batch_size=None``): NumPy arrays become tensors, the rest is kept.
"""

from __future__ import annotations

import collections.abc as abc
import copy
import re
from collections.abc import Callable

import numpy as np

from ember.core import dtype as dt
from ember.ops.creation import as_tensor, tensor
from ember.ops.shape import stack
from ember.tensor.tensor import Tensor

__all__ = ["collate", "default_collate", "default_convert", "default_collate_fn_map"]

_NOT_COLLATABLE = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or " \
                  "lists; found {}"
_NUMPY_TEXT = re.compile(r"[SaUO]")  # byte strings, unicode and object arrays have no tensor


def _collate_tensors(batch, *, collate_fn_map=None):
    return stack(batch, 0)


def _collate_arrays(batch, *, collate_fn_map=None):
    if _NUMPY_TEXT.search(batch[0].dtype.str):
        raise TypeError(_NOT_COLLATABLE.format(batch[0].dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def _collate_numpy_scalars(batch, *, collate_fn_map=None):
    return as_tensor(batch)


def _collate_floats(batch, *, collate_fn_map=None):
    return tensor(batch, dtype=dt.float64)


def _collate_ints(batch, *, collate_fn_map=None):
    return tensor(batch)  # int64, or bool when the samples are bools (bool subclasses int)


def _collate_text(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map: dict[type | tuple[type, ...], Callable] = {
    Tensor: _collate_tensors,
    np.ndarray: _collate_arrays,
    (np.bool_, np.number, np.object_): _collate_numpy_scalars,
    float: _collate_floats,
    int: _collate_ints,
    str: _collate_text,
    bytes: _collate_text,
}


def _leaf_fn(elem, collate_fn_map: dict) -> Callable | None:
    fn = collate_fn_map.get(type(elem))
    if fn is not None:
        return fn
    for kind, fn in collate_fn_map.items():
        if isinstance(elem, kind):
            return fn
    return None


def _collate_mapping(batch, elem, collate_fn_map):
    merged = {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
              for key in elem}
    if isinstance(elem, abc.MutableMapping):
        clone = copy.copy(elem)  # keeps the mapping's type and any extra state
        clone.update(merged)
        return clone
    try:
        return type(elem)(merged)
    except TypeError:  # the mapping type cannot be built from a dict
        return merged


def _collate_sequence(batch, elem, collate_fn_map):
    size = len(elem)
    if any(len(sample) != size for sample in batch):
        raise RuntimeError("each element in list of batch should be of equal size")
    fields = [collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)]
    if isinstance(elem, tuple):
        return fields  # torch turns (plain) tuples into lists
    if isinstance(elem, abc.MutableSequence):
        clone = copy.copy(elem)
        clone[:] = fields
        return clone
    try:
        return type(elem)(fields)
    except TypeError:
        return fields


def collate(batch: list, *, collate_fn_map: dict | None = None):
    """Merge a list of samples into a batch using ``collate_fn_map`` for the leaves.

    Args:
        batch: the samples, all with the structure of ``batch[0]``.
        collate_fn_map: leaf type (or tuple of types) -> ``fn(batch, *, collate_fn_map)``; the
            exact type is looked up first, then the first ``isinstance`` match in order.

    Raises:
        TypeError: a leaf type with no entry.
        RuntimeError: sequences of different lengths, or tensors of different shapes.
    """
    elem = batch[0]
    if collate_fn_map is not None:
        fn = _leaf_fn(elem, collate_fn_map)
        if fn is not None:
            return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, abc.Mapping):
        return _collate_mapping(batch, elem, collate_fn_map)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a named tuple
        return type(elem)(*(collate(s, collate_fn_map=collate_fn_map)
                            for s in zip(*batch)))
    if isinstance(elem, abc.Sequence) and not isinstance(elem, str | bytes):
        return _collate_sequence(batch, elem, collate_fn_map)
    raise TypeError(_NOT_COLLATABLE.format(type(elem)))


def default_collate(batch: list):
    """Merge samples into a batch, like ``torch.utils.data.default_collate``.

    Tensors are stacked along a new first dimension; Python floats become a float64 tensor,
    ints an int64 tensor (bools a bool tensor); NumPy arrays and scalars become tensors of their
    dtype; strings and bytes stay a list (a tuple when nested in tuples or lists, as torch);
    dicts, named tuples and lists keep their type and are merged per key / field; plain tuples
    become lists.

    Raises:
        TypeError: an element no rule covers (e.g. None, or a NumPy array of strings).
        RuntimeError: samples of different lengths or tensors of different shapes.

    Example:
        >>> default_collate([{"x": 1.0, "y": "a"}, {"x": 2.0, "y": "b"}])["y"]
        ['a', 'b']
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)


def _convert_mapping(data):
    converted = {key: default_convert(data[key]) for key in data}
    if isinstance(data, abc.MutableMapping):
        clone = copy.copy(data)
        clone.update(converted)
        return clone
    try:
        return type(data)(converted)
    except TypeError:
        return converted


def _convert_sequence(data):
    items = [default_convert(d) for d in data]
    if isinstance(data, tuple):
        return items
    if isinstance(data, abc.MutableSequence):
        clone = copy.copy(data)
        clone[:] = items
        return clone
    try:
        return type(data)(items)
    except TypeError:
        return items


def default_convert(data):
    """Convert one unbatched sample, like ``torch.utils.data.default_convert``.

    NumPy arrays and scalars become tensors (arrays share memory); mappings, named tuples and
    sequences are converted element by element (plain tuples become lists); anything else,
    tensors and strings included, is returned unchanged.

    Example:
        >>> import numpy as np
        >>> default_convert({"a": np.zeros(2)})["a"].shape
        ember.Size([2])
    """
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray | np.bool_ | np.number):
        if isinstance(data, np.ndarray) and _NUMPY_TEXT.search(data.dtype.str):
            return data
        return as_tensor(data)
    if isinstance(data, abc.Mapping):
        return _convert_mapping(data)
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, abc.Sequence) and not isinstance(data, str | bytes):
        return _convert_sequence(data)
    return data
