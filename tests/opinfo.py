"""The op table's machinery: OpInfo entries, hostile sample inputs, and torch comparison.

"One lambda, two libraries": an entry's ``fn(lib, *args, **kwargs)`` is evaluated with
``lib=ember`` on ember tensors and ``lib=torch`` on torch tensors of the *same geometry*
(same strides, offsets and storage sharing), and the results are compared: shape, dtype,
values, and for view ops strides, offset and storage sharing. Samples are hostile by default
(see :func:`hostile`). Entries live in ``tests/ops/opdb/*.py`` as module-level ``OPS`` lists.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import torch

import ember

ALL = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8",
       "bool")
FLOATS = ("float32", "float64", "float16", "bfloat16")
INTS = ("int8", "int16", "int32", "int64", "uint8")
NUMERIC = FLOATS + INTS
COMPLEX = ("complex64", "complex128")  # entries list them where torch computes in complex

TOL = {"float32": (1e-5, 1.3e-6), "float64": (1e-7, 1e-7), "float16": (1e-3, 1e-3),
       "bfloat16": (1.6e-2, 1e-5), "complex64": (1e-5, 1.3e-6), "complex128": (1e-7, 1e-7)}


@dataclass
class SampleInput:
    """Arguments of one call; tensors are ember tensors (converted for torch on the fly)."""

    args: tuple
    kwargs: dict = field(default_factory=dict)
    name: str = ""

    def __repr__(self) -> str:
        return self.name or f"SampleInput({len(self.args)} args)"


@dataclass
class ErrorInput:
    """A call that must raise ``error`` in both libraries (ember's message matches ``match``)."""

    sample: SampleInput
    error: type
    match: str | None = None


@dataclass
class OpInfo:
    """One op-table entry.

    Args:
        name: test id (usually the op name).
        fn: ``fn(lib, *args, **kwargs)`` computing the op with ``lib`` = ember or torch.
        samples: ``samples(dtype_name) -> iterable of SampleInput``.
        dtypes: dtype names the op supports (each gets its own test).
        is_view: the result must be a view of the first argument (strides/offset/storage checked).
        meta: check that the Meta kernel predicts shape/stride/dtype of the CPU result.
        errors: ``errors() -> iterable of ErrorInput``.
        tol: ``{dtype_name: (rtol, atol)}`` overrides.
        compare_values: False for ops whose values are implementation defined (empty, random).
        check_stride: compare strides with torch even for non-view ops.
    """

    name: str
    fn: Callable
    samples: Callable[[str], Iterable[SampleInput]]
    dtypes: tuple = FLOATS
    is_view: bool = False
    meta: bool = True
    errors: Callable[[], Iterable[ErrorInput]] | None = None
    tol: dict = field(default_factory=dict)
    compare_values: bool = True
    check_stride: bool = False
    equal_nan: bool = True


# -- making hostile inputs --------------------------------------------------------------------
_RNG = np.random.default_rng(1234)


def _values(shape, dtype: str, low=None, high=None) -> np.ndarray:
    n = math.prod(shape)
    if dtype == "bool":
        return _RNG.integers(0, 2, n).astype(bool).reshape(shape)
    if dtype in INTS:
        lo = 0 if dtype == "uint8" else (-9 if low is None else low)
        hi = 10 if high is None else high
        return _RNG.integers(lo, hi, n).astype(dtype).reshape(shape)
    lo = -3.0 if low is None else low
    hi = 3.0 if high is None else high
    if dtype in COMPLEX:  # both parts in the range
        return (_RNG.uniform(lo, hi, n) + 1j * _RNG.uniform(lo, hi, n)).reshape(shape)
    return _RNG.uniform(lo, hi, n).reshape(shape)


def make(shape, dtype: str = "float32", *, layout: str = "contiguous", low=None, high=None,
         requires_grad: bool = False) -> ember.Tensor:
    """An ember tensor of ``shape`` whose memory layout is ``layout``.

    Layouts: ``contiguous``; ``permuted`` (memory in reversed dim order, viewed back);
    ``strided`` (every other element of a larger buffer along each dim); ``offset`` (a slice
    that starts inside its storage); ``expanded`` (size-1 dims broadcast with stride 0;
    ``shape`` is the expanded shape and size-1 source dims are chosen automatically).
    """
    shape = tuple(shape)
    d = getattr(ember, dtype) if dtype != "bool" else ember.bool
    if layout == "contiguous":
        t = ember.tensor(_values(shape, dtype, low, high), dtype=d)
    elif layout == "permuted":
        rev = tuple(reversed(shape))
        base = ember.tensor(_values(rev, dtype, low, high), dtype=d)
        t = base.permute(*reversed(range(len(shape))))
    elif layout == "strided":
        big = tuple(2 * s for s in shape)
        base = ember.tensor(_values(big, dtype, low, high), dtype=d)
        t = base[tuple(slice(None, None, 2) for _ in shape)] if shape else base
    elif layout == "offset":
        flat = ember.tensor(_values((math.prod(shape) + 3,), dtype, low, high), dtype=d)
        t = flat[3:].view(shape)
    elif layout == "expanded":
        src = tuple(1 if (i % 2 == 0 and s > 0) else s for i, s in enumerate(shape))
        t = ember.tensor(_values(src, dtype, low, high), dtype=d).expand(shape)
    else:
        raise ValueError(layout)
    if requires_grad:
        t.requires_grad_(True)
    return t


LAYOUTS = ("contiguous", "permuted", "strided", "offset", "expanded")


def hostile(shape, dtype: str, *, low=None, high=None, layouts=LAYOUTS, writable=False):
    """One tensor of ``shape`` per layout (``writable`` drops the expanded layout)."""
    for lay in layouts:
        if writable and lay == "expanded":
            continue
        if lay == "permuted" and len(shape) < 2:
            continue
        yield lay, make(shape, dtype, layout=lay, low=low, high=high)


SHAPES = [(), (0,), (1,), (5,), (3, 4), (2, 1, 3), (2, 3, 0), (1, 1)]


def unary_samples(dtype: str, *, low=None, high=None, **kwargs):
    """Every shape of :data:`SHAPES` in every layout."""
    for shape in SHAPES:
        for lay, t in hostile(shape, dtype, low=low, high=high):
            yield SampleInput((t,), dict(kwargs), f"{lay}{list(shape)}")


BROADCAST_PAIRS = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((5,), ()),
                   ((), ()), ((0, 3), (1, 3)), ((1,), (2, 2))]


def binary_samples(dtype: str, *, low=None, high=None, rhs_low=None, rhs_high=None,
                   scalars=(2, -1.5, True), **kwargs):
    """Broadcast pairs in several layouts, plus tensor-scalar pairs."""
    for sa, sb in BROADCAST_PAIRS:
        for lay in ("contiguous", "permuted", "strided", "expanded"):
            a = make(sa, dtype, layout=lay if len(sa) >= 2 or lay != "permuted" else
                     "contiguous", low=low, high=high)
            b = make(sb, dtype, layout="strided" if lay == "permuted" else "contiguous",
                     low=rhs_low if rhs_low is not None else low,
                     high=rhs_high if rhs_high is not None else high)
            yield SampleInput((a, b), dict(kwargs), f"{lay}{list(sa)}x{list(sb)}")
    for s in scalars:
        yield SampleInput((make((3, 4), dtype, layout="strided", low=low, high=high), s),
                          dict(kwargs), f"scalar{s!r}")


# -- conversion and comparison ----------------------------------------------------------------
def torch_dtype(d) -> torch.dtype:
    return getattr(torch, d if isinstance(d, str) else d.name)


def to_torch(x, memo=None):
    """Convert ember tensors inside ``x`` to torch tensors with identical geometry.

    Tensors that share an ember storage share a torch storage too (``memo`` keys by storage).
    """
    memo = {} if memo is None else memo
    if isinstance(x, ember.Tensor):
        st = x.untyped_storage()
        key = id(st)
        if key not in memo:
            raw = np.array(st._data, copy=True) if st._data is not None else None
            memo[key] = torch.from_numpy(raw) if raw is not None else None
        raw_t = memo[key]
        td = torch_dtype(x.dtype)
        if raw_t is None:
            out = torch.empty_strided(x.shape, x.stride(), dtype=td, device="meta")
        else:
            typed = raw_t.view(td) if raw_t.numel() else torch.empty(0, dtype=td)
            if x.numel() == 0:
                out = torch.empty_strided(tuple(x.shape), x.stride(), dtype=td)
            else:
                out = typed.as_strided(tuple(x.shape), x.stride(), x.storage_offset())
        if x.is_conj():  # the stored values, read conjugated in both libraries
            out = out.conj()
        return out.requires_grad_(x.requires_grad) if x.requires_grad else out
    if isinstance(x, ember.DType):
        return torch_dtype(x)
    if isinstance(x, list):
        return [to_torch(v, memo) for v in x]
    if isinstance(x, tuple):
        return tuple(to_torch(v, memo) for v in x)
    if isinstance(x, dict):
        return {k: to_torch(v, memo) for k, v in x.items()}
    if isinstance(x, ember.Device):
        return torch.device(str(x))
    return x


def to_meta(x):
    """Replace ember CPU tensors inside ``x`` by meta tensors of the same geometry."""
    if isinstance(x, ember.Tensor):
        m = ember.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta") \
            if x.storage_offset() == 0 else ember.empty_strided(
                x.shape, x.stride(), dtype=x.dtype, device="meta")
        return m.conj() if x.is_conj() else m
    if isinstance(x, list):
        return [to_meta(v) for v in x]
    if isinstance(x, tuple):
        return tuple(to_meta(v) for v in x)
    if isinstance(x, dict):
        return {k: to_meta(v) for k, v in x.items()}
    return x


def as_numpy(t: torch.Tensor) -> np.ndarray:
    t = t.detach().resolve_conj().resolve_neg()
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.numpy()


def assert_same(e_out, t_out, info: OpInfo, dtype: str, path="out"):
    """Compare an ember result with torch's: structure, shape, dtype, values."""
    if isinstance(t_out, torch.Tensor):
        assert isinstance(e_out, ember.Tensor), f"{path}: expected a Tensor, got {type(e_out)}"
        assert tuple(e_out.shape) == tuple(t_out.shape), \
            f"{path}: shape {tuple(e_out.shape)} != torch {tuple(t_out.shape)}"
        assert e_out.dtype.name == str(t_out.dtype).removeprefix("torch."), \
            f"{path}: dtype {e_out.dtype} != torch {t_out.dtype}"
        if info.check_stride and t_out.numel() > 1:
            assert e_out.stride() == t_out.stride(), \
                f"{path}: stride {e_out.stride()} != torch {t_out.stride()}"
        if info.compare_values and t_out.device.type != "meta":
            rtol, atol = info.tol.get(dtype, TOL.get(e_out.dtype.name, (0, 0)))
            e = np.asarray(e_out.detach().resolve_conj().resolve_neg().numpy()
                           if e_out.dtype.name != "bfloat16" else e_out.detach().float().numpy())
            t = as_numpy(t_out)
            wide = np.complex128 if e.dtype.kind == "c" else np.float64
            np.testing.assert_allclose(e.astype(wide) if e.dtype != bool else e,
                                       t.astype(wide) if t.dtype != bool else t,
                                       rtol=rtol, atol=atol, equal_nan=info.equal_nan,
                                       err_msg=f"{path} values differ")
    elif isinstance(t_out, tuple | list):
        assert isinstance(e_out, tuple | list) and len(e_out) == len(t_out), \
            f"{path}: expected a sequence of {len(t_out)}, got {e_out!r}"
        for i, (a, b) in enumerate(zip(e_out, t_out)):
            assert_same(a, b, info, dtype, f"{path}[{i}]")
    elif isinstance(t_out, float) and math.isnan(t_out):
        assert math.isnan(e_out)
    else:
        assert e_out == t_out, f"{path}: {e_out!r} != torch {t_out!r}"


def assert_view_geometry(e_out, t_out, e_base: ember.Tensor, t_base: torch.Tensor):
    """A view result must match torch's strides and offset and share the input's storage."""
    outs = e_out if isinstance(e_out, tuple | list) else (e_out,)
    touts = t_out if isinstance(t_out, tuple | list) else (t_out,)
    for e, t in zip(outs, touts):
        assert e.untyped_storage().data_ptr() == e_base.untyped_storage().data_ptr(), \
            "view result does not share the input's storage"
        if t.numel() > 0:
            assert e.stride() == t.stride(), f"stride {e.stride()} != torch {t.stride()}"
            assert e.storage_offset() == t.storage_offset(), \
                f"offset {e.storage_offset()} != torch {t.storage_offset()}"
        assert e._version == e_base._version
