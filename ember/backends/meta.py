"""The Meta backend: every operator's output shape, strides and dtype, with no data.

One generic kernel serves every operator that has a Meta rule: it turns the rule's
``Spec``s into data-less tensors (or checks and returns ``out=``/``self`` for mutating ops).
Shape errors surface here exactly as they would on CPU, because the CPU kernels run the same
rule first.
"""

from __future__ import annotations

from ember.core.device import META
from ember.core.layout import contiguous_strides
from ember.dispatch import DispatchKey, Tag, all_ops
from ember.ops._define import Spec
from ember.tensor import Tensor, empty_tensor

__all__ = ["materialize", "register_meta_kernels"]


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


def _meta_kernel(op):
    rule = op.meta_rule
    mutates_self = Tag.inplace in op.tags
    wrap = getattr(op, "result_tuple", None)

    def kernel(*args, **kwargs):
        spec = rule(*args, **kwargs)
        if mutates_self:
            args[0]._ver.value += 1
            return args[0]
        out = kwargs.get("out")
        result = materialize(spec, out, kwargs.get("requires_grad", False))
        return wrap(*result) if wrap is not None and out is None else result

    return kernel


def _copy_meta(self: Tensor, src, non_blocking=False):
    if self._device is not META:
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    self._ver.value += 1
    return self


def register_meta_kernels() -> None:
    """Give every operator with a Meta rule and no Meta kernel the generic one."""
    for op in all_ops():
        if getattr(op, "meta_rule", None) is not None and \
                DispatchKey.Meta not in op._direct:
            op.register(DispatchKey.Meta, _meta_kernel(op))
    from ember.ops.copy import copy_
    copy_.register(DispatchKey.Meta, _copy_meta)
