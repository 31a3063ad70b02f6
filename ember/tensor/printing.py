"""``repr`` of tensors in PyTorch's format: ``tensor([1., 2.], dtype=ember.float64)``.

Works on a NumPy copy-free view of the tensor's data and knows no operators. The layout rules
(one width for every element, int/fixed/scientific mode chosen over the finite non-zero values,
summarisation with ``...`` beyond ``threshold`` elements, wrapping at ``linewidth``, suffixes)
reproduce ``torch._tensor_str`` behaviour so that ember's output reads like PyTorch's.

NOTE [Printing modes]
One formatter serves the whole tensor (computed over the summarised data only). Floating values
print in *scientific mode* (``1.0000e+10``) when, over the finite non-zero magnitudes, max/min
exceeds 1000, the max exceeds 1e8 or the min is below 1e-4 (``sci_mode`` overrides); otherwise
in *int mode* (``1.``) when every finite non-zero value is integral, else in *fixed mode*
(``0.1000``). Every element is right-aligned to the widest one. A tensor with no finite
non-zero value prints in int mode whatever ``sci_mode`` says.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ember.core import dtype as dt

__all__ = ["tensor_repr", "set_printoptions", "get_printoptions"]


@dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


_OPTS = _PrintOptions()
_PROFILES = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}


def set_printoptions(precision: int | None = None, threshold: float | None = None,
                     edgeitems: int | None = None, linewidth: int | None = None,
                     profile: str | None = None, sci_mode: bool | None = None) -> None:
    """Set how tensors print (``torch.set_printoptions``).

    Args:
        precision: digits after the decimal point (default 4).
        threshold: element count above which the output is summarised (default 1000).
        edgeitems: items shown at each end of a summarised dim (default 3).
        linewidth: characters per line before wrapping (default 80).
        profile: ``"default"``, ``"short"`` or ``"full"``; applied before the other arguments.
        sci_mode: force scientific notation on (True) or off (False); None chooses per tensor.

    Example:
        >>> ember.set_printoptions(precision=2)
        >>> ember.tensor([1.0, 2.0 / 3.0])
        tensor([1.00, 0.67])
        >>> ember.set_printoptions(profile="default")
        >>> ember.tensor([1.0, 2.0 / 3.0])
        tensor([1.0000, 0.6667])
    """
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: unknown profile {profile!r}; expected one of "
                             f"{sorted(_PROFILES)}")
        for key, value in _PROFILES[profile].items():
            setattr(_OPTS, key, value)
    for key, value in (("precision", precision), ("threshold", threshold),
                       ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            setattr(_OPTS, key, value)
    _OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current print options as a dict (``torch._tensor_str.get_printoptions``).

    Example:
        >>> ember.get_printoptions()["precision"]
        4
    """
    return dict(vars(_OPTS))


class _Formatter:
    """One width and one mode for all elements of a tensor (NOTE [Printing modes])."""

    def __init__(self, values: np.ndarray):
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        flat = values.reshape(-1)
        if not self.floating:
            for v in flat.tolist():
                self.width = max(self.width, len(str(v)))
        else:
            self._scan_floats(flat)

    def _scan_floats(self, flat: np.ndarray) -> None:
        vals = flat[np.isfinite(flat) & (flat != 0)]
        if vals.size == 0:  # nothing finite and non-zero: int mode, width 1, never scientific
            return
        mags = np.abs(vals.astype(np.float64))
        lo, hi = float(mags.min()), float(mags.max())
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        self.sci_mode = _OPTS.sci_mode
        if self.sci_mode is None:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        p = _OPTS.precision
        if self.sci_mode:
            strs, extra = [f"{v:.{p}e}" for v in vals.tolist()], 0
        elif self.int_mode:
            strs, extra = [f"{v:.0f}" for v in vals.tolist()], 1
        else:
            strs, extra = [f"{v:.{p}f}" for v in vals.tolist()], 0
        self.width = max(self.width, max(len(s) for s in strs) + extra)

    def format(self, value) -> str:
        if not self.floating:
            s = str(value)
        elif self.sci_mode:
            s = f"{value:{self.width}.{_OPTS.precision}e}"
        elif self.int_mode:
            s = f"{value:.0f}"
            if math.isfinite(value):
                s += "."
        else:
            s = f"{value:.{_OPTS.precision}f}"
        return " " * (self.width - len(s)) + s


class _ComplexFormatter:
    """torch's pair of formatters for complex tensors: one over the real parts, one over the
    imaginary parts; an element prints as ``real+imagj`` (``-`` when the imaginary part is)."""

    def __init__(self, values: np.ndarray):
        self.real = _Formatter(values.real)
        self.imag = _Formatter(values.imag)
        # torch's per-line element length: both widths, the sign/"j" and ", "
        self.width = self.real.width + self.imag.width + 1

    def format(self, value) -> str:
        real = self.real.format(value.real)
        imag = (self.imag.format(value.imag) + "j").lstrip()
        return real + imag if imag[0] in "+-" else real + "+" + imag


def _summarized(a: np.ndarray) -> np.ndarray:
    """The elements that a summarised print shows (edge items of every dim)."""
    e = _OPTS.edgeitems
    if a.ndim == 0:
        return a
    if not e:
        return a.reshape(-1)[:0]
    if a.shape[0] > 2 * e:
        a = np.concatenate((a[:e], a[-e:]))
    if a.ndim == 1:
        return a
    return np.stack([_summarized(row) for row in a])


def _vector_str(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    per_line = max(1, int((_OPTS.linewidth - indent) // (fmt.width + 2)))
    e = _OPTS.edgeitems
    if summarize and not e:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * e:
        data = ([fmt.format(v) for v in a[:e].tolist()] + [" ..."]
                + [fmt.format(v) for v in a[-e:].tolist()])
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nd_str(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector_str(a, indent, summarize, fmt)
    e = _OPTS.edgeitems
    n = a.shape[0]
    if summarize and n > 2 * e:
        rows = ([_nd_str(a[i], indent + 1, summarize, fmt) for i in range(e)] + ["..."]
                + [_nd_str(a[i], indent + 1, summarize, fmt) for i in range(n - e, n)])
    else:
        rows = [_nd_str(a[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _values(t) -> np.ndarray:
    from ember.tensor.tensor import numpy_view
    a = numpy_view(t)
    get = getattr(a, "get", None)  # a device array (CuPy): print a host copy
    if get is not None:
        a = get()
    if t._dtype is dt.bfloat16 or t._dtype is dt.float16:
        a = a.astype(np.float32)
    return a


def _data_str(t, indent: int) -> str:
    a = _values(t)
    summarize = a.size > _OPTS.threshold
    make = _ComplexFormatter if t._dtype.is_complex else _Formatter
    fmt = make(_summarized(a) if summarize else a)
    return _nd_str(a, indent, summarize, fmt)


def _add_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    parts = [text]
    # PyTorch measures the last line as ``len - rfind("\n") + 1``; the same rule wraps alike.
    last = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last + len(suffix) + 2 > _OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def _prefix(t) -> str:
    from ember.tensor.tensor import Tensor
    cls = type(t)
    plain = cls is Tensor or cls.__name__ == "Parameter"
    return "tensor(" if plain else f"{cls.__name__}("


def _body_and_suffixes(t, indent: int) -> tuple[str, list[str]]:
    suffixes = []
    default = dt.get_default_dtype()
    if t._device.type != "cpu":
        suffixes.append(f"device='{t._device}'")
    if t._device.type == "meta":
        suffixes.append(f"size={tuple(t._shape)}")
        if t._dtype is not default:
            suffixes.append(f"dtype={t._dtype!r}")
        return "...", suffixes
    if t.numel() == 0:
        if len(t._shape) != 1:
            suffixes.append(f"size={tuple(t._shape)}")
        if t._dtype is not default:
            suffixes.append(f"dtype={t._dtype!r}")
        return "[]", suffixes
    if not _OPTS.edgeitems:
        suffixes.append(f"size={tuple(t._shape)}")
    if t._dtype not in (default, dt.default_complex_dtype(), dt.int64, dt.bool_):
        suffixes.append(f"dtype={t._dtype!r}")
    return _data_str(t, indent), suffixes


def tensor_repr(t) -> str:
    """PyTorch-style repr of tensor ``t``.

    Complex elements print as ``real+imagj`` with one format for the real parts and one for
    the imaginary parts; the default complex dtype (complex64 under a float32 default) gets no
    dtype suffix, as torch.

    Example:
        >>> import ember
        >>> ember.tensor([0.1, -2.5])
        tensor([ 0.1000, -2.5000])
        >>> ember.tensor([1 + 2j, 0.5 - 0.25j])
        tensor([1.0000+2.0000j, 0.5000-0.2500j])
    """
    prefix = _prefix(t)
    body, suffixes = _body_and_suffixes(t, len(prefix))
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(t.grad_fn).__name__}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, len(prefix))
