"""Meta propagation: the shape, strides and dtype of an op's result, computed without data.

Every ember operator has a Meta kernel (``ember.backends.meta``), so running an op on
data-less ``meta`` tensors gives exactly the shapes and dtypes eager would produce; the graph
builder and the tracer use that and nothing else. This module knows nothing about bytecode.
"""

from __future__ import annotations

from ember.autograd.grad_mode import grad_state, no_grad
from ember.core.device import META
from ember.dispatch import Operator, Tag
from ember.tensor import Tensor
from ember.tensor.tensor import empty_tensor

__all__ = ["MetaUnsupported", "to_meta", "meta_like", "lazy_bits", "run_meta", "map_args",
           "is_data_dependent", "is_impure", "requires_grad_of"]


class MetaUnsupported(RuntimeError):
    """An op could not be run on meta tensors (data-dependent, or no Meta kernel)."""


def to_meta(t: Tensor) -> Tensor:
    """A data-less tensor on ``meta`` with ``t``'s shape, strides, dtype, requires_grad (float
    and complex tensors) and lazy bits (:func:`lazy_bits`: composites such as ``real``/``imag``
    branch on them at trace time, so the traced graph is right for inputs that carry them;
    guards check them)."""
    if t._device is META:
        return t
    out = meta_like(t, t._shape, t._stride)
    if t.requires_grad and t._dtype.is_differentiable:
        out.requires_grad_(True)
    return out


def lazy_bits(t: Tensor) -> tuple[bool, bool]:
    """``(is_conj, is_neg)``: the lazy bits by which a tensor's values differ from what its
    memory stores (NOTE [The conjugation bit], NOTE [The negative bit] in
    ember/tensor/tensor.py). Kernels see the values through ``numpy_view``; the compiler keeps
    the bits on meta values, guards on them and never hands raw memory of such a tensor to
    generated code."""
    return t._is_conj, getattr(t, "_is_neg", False)


def meta_like(t: Tensor, shape, stride) -> Tensor:
    """A data-less ``meta`` tensor of ``shape``/``stride`` with ``t``'s dtype and lazy bits
    (the geometry of snapshots and re-specialised values; no requires_grad)."""
    out = empty_tensor(shape, t._dtype, META, stride)
    conj, neg = lazy_bits(t)
    if conj:
        out._is_conj = True
    if neg:
        out._is_neg = True
    return out


def map_args(x, fn):
    """Apply ``fn`` to every leaf of nested tuples/lists/dicts (structure kept)."""
    if isinstance(x, tuple):
        return tuple(map_args(a, fn) for a in x)
    if isinstance(x, list):
        return [map_args(a, fn) for a in x]
    if isinstance(x, dict):
        return {k: map_args(v, fn) for k, v in x.items()}
    return fn(x)


def _meta_value(x):
    val = getattr(x, "meta", None)
    if isinstance(val, dict) and "val" in val and type(x).__name__ == "Node":
        return val["val"]
    if isinstance(x, Tensor):
        return to_meta(x)
    return x


def is_data_dependent(target) -> bool:
    """Whether ``target``'s output shape depends on tensor data (capture breaks before it)."""
    return isinstance(target, Operator) and Tag.data_dependent_output in target.tags


def is_impure(target, kwargs=None) -> bool:
    """Ops that must not be removed or merged: in-place, random, ``out=`` and mutating ones."""
    if not isinstance(target, Operator):
        return bool(getattr(target, "_ember_impure", False))
    if target._is_inplace or Tag.random in target.tags or Tag.nondeterministic in target.tags:
        return True
    if kwargs and kwargs.get("out") is not None:
        return True
    return any(a.is_write and a.name != "out" for a in target.schema.arguments)


def run_meta(target, args: tuple, kwargs: dict):
    """Run ``target`` on meta versions of ``args`` (Nodes read as their ``meta['val']``).

    Factory operators are redirected to ``device='meta'``. Runs under ``no_grad``.

    Raises:
        MetaUnsupported: the op is data-dependent or its Meta kernel failed.
    """
    name = getattr(target, "short_name", None) or getattr(target, "__name__", repr(target))
    if is_data_dependent(target):
        raise MetaUnsupported(f"{name}: output shape depends on tensor data")
    margs = map_args(args, _meta_value)
    mkwargs = map_args(kwargs, _meta_value)
    if isinstance(target, Operator) and target._is_factory:
        mkwargs = {**mkwargs, "device": META}
    try:
        with no_grad():
            return target(*margs, **mkwargs)
    except MetaUnsupported:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure means "cannot capture this op"
        raise MetaUnsupported(f"{name}: {type(exc).__name__}: {exc}") from exc


def requires_grad_of(target, args: tuple, kwargs: dict) -> bool:
    """Autograd's rule: grad mode on and some tensor input requires grad."""
    if not grad_state().enabled:
        return False
    if isinstance(target, Operator) and (target._is_factory or
                                         Tag.data_dependent_output in target.tags):
        return bool(kwargs.get("requires_grad", False))
    found = []

    def visit(x):
        rg = None
        if type(x).__name__ == "Node":
            rg = x.meta.get("requires_grad")
        elif isinstance(x, Tensor):
            rg = x.requires_grad
        if rg:
            found.append(True)
        return x

    map_args((args, kwargs), visit)
    return bool(found)
