"""``repr`` of tensors in PyTorch's format: ``tensor([1., 2.], dtype=ember.float64)``."""

from __future__ import annotations

import numpy as np

from ember.core import dtype as dt

__all__ = ["tensor_repr"]

_IMPLICIT = {"float32", "int64", "bool"}


def _format_values(t) -> str:
    from ember.tensor.tensor import numpy_view
    a = numpy_view(t)
    if t._dtype is dt.bfloat16 or t._dtype is dt.float16:
        a = a.astype(np.float32)
    if t._dtype.is_floating_point:
        finite = a[np.isfinite(a)]
        if finite.size and np.all(finite == np.round(finite)) and np.abs(finite).max() < 1e8:
            fmt = lambda v: f"{v:.0f}." if np.isfinite(v) else str(v)  # noqa: E731
        else:
            nz = np.abs(finite[finite != 0]) if finite.size else finite
            sci = nz.size and (nz.max() / nz.min() > 1000 or nz.max() > 1e8 or nz.min() < 1e-4)
            fmt = (lambda v: f"{v:.4e}") if sci else (lambda v: f"{v:.4f}")  # noqa: E731
        formatter = {"float_kind": lambda v: fmt(v).replace("nan", "nan")}
    else:
        formatter = None
    body = np.array2string(a, separator=", ", formatter=formatter, prefix="tensor(",
                           threshold=1000, edgeitems=3, max_line_width=80)
    return body.replace("False", "False").replace("True", "True")


def tensor_repr(t) -> str:
    """PyTorch-style repr of tensor ``t``."""
    suffix = []
    if t._device.type == "meta":
        body = "..."
        suffix.append(f"device='meta', size={tuple(t._shape)}")
    elif t.numel() == 0:
        body = "[]"
        if len(t._shape) != 1:
            suffix.append(f"size={tuple(t._shape)}")
    else:
        body = _format_values(t)
    if t._device.type != "meta" and t._dtype.name not in _IMPLICIT:
        suffix.append(f"dtype={t._dtype!r}")
    elif t._device.type != "meta" and t.numel() == 0 and t._dtype is not dt.float32:
        suffix.append(f"dtype={t._dtype!r}")
    elif t._device.type == "meta" and t._dtype is not dt.get_default_dtype():
        suffix.append(f"dtype={t._dtype!r}")
    if t.grad_fn is not None:
        suffix.append(f"grad_fn=<{type(t.grad_fn).__name__}>")
    elif t._requires_grad:
        suffix.append("requires_grad=True")
    return "tensor(" + ", ".join([body, *suffix]) + ")"
