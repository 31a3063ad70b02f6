"""The Meta kernel of every operator, made from its shape rule when its table is first filled.

One dispatcher-wide fallback (NOTE [Per-operator fallbacks] in ember/dispatch/dispatcher.py)
serves the ``Meta`` key: for an operator declared with ``@operator`` it turns the rule's
``Spec``s into data-less tensors (or checks and returns ``out=``/``self`` for mutating ops).
Shape errors surface here exactly as they would on CPU, because the CPU kernels run the same
rule first. Operators without a rule (composites, views) never reach it: their composite
kernels serve Meta, or the key is missing.
"""

from __future__ import annotations

from typing import NamedTuple

from ember.core import dtype as dt
from ember.core.device import META
from ember.core.layout import contiguous_strides
from ember.dispatch import DispatchKey, Kernel, register_fallback
from ember.dispatch.dispatcher import PerOpFallback
from ember.tensor import empty_tensor

__all__ = ["Spec", "materialize", "meta_kernel"]


class Spec(NamedTuple):
    """What a Meta rule predicts for one output: its shape, dtype and (optional) strides."""

    shape: tuple
    dtype: dt.DType
    stride: tuple | None = None


def materialize(spec, out=None, requires_grad: bool = False):
    """Meta tensors for a Spec (or a tuple of Specs); ``out`` is resized and returned."""
    if isinstance(spec, Spec):
        if out is not None:
            out._set_meta(spec.shape, contiguous_strides(spec.shape), out._offset)
            return out
        t = empty_tensor(spec.shape, spec.dtype, META, spec.stride)
        if requires_grad:
            t.requires_grad_(True)
        return t
    outs = out if out is not None else (None,) * len(spec)
    return tuple(materialize(s, o) for s, o in zip(spec, outs))


def meta_kernel(op):
    """The Meta kernel of ``op`` built from its shape rule ``op.meta_rule``."""
    rule = op.meta_rule
    mutates_self = op._is_inplace
    wrap = getattr(op, "result_tuple", None)
    # ``-> ()`` operators return nothing, except in-place foreach ones: torch's binding gives
    # back their list
    returns_list = op.name.startswith("_foreach_")

    def kernel(*args, **kwargs):
        spec = rule(*args, **kwargs)
        if spec is None:
            return args[0] if returns_list else None
        if mutates_self:
            args[0]._ver.value += 1
            return args[0]
        out = kwargs.get("out")
        result = materialize(spec, out, kwargs.get("requires_grad", False))
        return wrap(*result) if wrap is not None and out is None else result

    kernel.__qualname__ = f"meta_kernel({op.name})"
    return kernel


def _meta_fallback(op) -> Kernel | None:
    rule = getattr(op, "meta_rule", None)
    return None if rule is None else Kernel(meta_kernel(op), source=f"meta rule of {op.name}")


register_fallback(DispatchKey.Meta, PerOpFallback(_meta_fallback, "meta rule"))
