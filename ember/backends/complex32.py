"""complex32 (chalf) operators: torch's CPU support set, computed in complex64.

Owns the ``ComplexHalf`` dispatch key's fallback and the complex32 handling of factories. It
knows which operators torch's CPU runs on ComplexHalf tensors and how to compute them (in
complex64, each part of the result rounded to float16); it does not know how any one operator
computes (it calls them on complex64 tensors).

NOTE [The ComplexHalf key]
NumPy has no complex32, so no NumPy kernel can compute on one (NOTE [complex32 storage] in
ember/tensor/tensor.py). Every complex32 tensor carries the ``ComplexHalf`` key, the highest,
so an operator called with one comes here first, and the fallback picks by operator:
- views, ``copy_``/``_to_copy`` (which encode and decode the pairs) and operators made of
  other operators fall through (their parts come back here);
- an operator in ``_SUPPORTED`` (torch's CPU support for ComplexHalf) runs on complex64 copies
  of the complex32 arguments, and its results are rounded back to complex32 (or float16 for
  real results such as ``abs``) when the arguments' promoted dtype is complex32 (a float32
  operand makes the result complex64, as torch). In-place ones compute on a complex64 copy of
  ``self`` and store it back. Every step is an ember operator, so autograd records it;
- any other operator raises torch's ``NotImplementedError: "<kernel>" not implemented for
  'ComplexHalf'``.
A factory asked for complex32 (``zeros(..., dtype=ember.chalf)``) builds complex64 and rounds.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtype as dt
from ember.dispatch import FALLTHROUGH, AliasKey, DispatchKey, Kernel, Tag, register_fallback
from ember.dispatch.dispatcher import PerOpFallback, all_ops
from ember.ops.creation import data_shape_dtype
from ember.tensor import Tensor
from ember.tensor.tensor import warn_chalf

__all__: list[str] = []

_CHALF, _C64 = dt.complex32, dt.complex64

# Operators that handle complex32 themselves (they move or re-type bytes, or read its values
# through ``numpy_view``), beyond the views.
_NATIVE = frozenset({
    "copy_", "_to_copy", "empty", "empty_strided", "detach", "alias", "_conj", "_neg_view",
    "view_as_real", "view_as_complex", "set_", "resize_", "is_nonzero", "_local_scalar_dense",
    "item", "equal_shape", "lift_fresh",
})

# torch 2.13's CPU kernels that accept ComplexHalf (found by calling each on a complex32
# tensor); operators built from these are served through them.
_SUPPORTED = frozenset({
    "add", "add_", "sub", "sub_", "mul", "mul_", "neg", "neg_", "abs", "sgn", "clone",
    "eq", "ne", "isnan", "isfinite", "isinf", "cat", "stack", "fill_", "zero_", "index",
    "index_put", "index_put_", "masked_fill", "masked_fill_", "where", "index_select",
    "masked_select", "nonzero", "any", "all", "roll", "repeat", "tril", "triu", "diag",
    "diag_embed", "constant_pad_nd", "addcmul", "addcmul_", "isclose", "linalg_vector_norm",
    "norm", "var", "std", "dist", "outer", "narrow_copy", "conj_physical", "randn", "rand",
    "contiguous", "_unsafe_view", "zeros_like", "ones_like", "full_like", "expand_copy",
    "flatten_copy", "reshape_copy", "unfold_copy", "select_copy", "slice_copy",
    "view_copy", "t_copy", "transpose_copy", "permute_copy", "squeeze_copy", "unsqueeze_copy",
    "getitem", "setitem", "split_copy", "pad",
})

# torch's kernel names in its "not implemented" messages, where they are not ``<op>_cpu``.
_KERNEL_NAME = {
    "exp": "exp_vml_cpu", "log": "log_vml_cpu", "sqrt": "sqrt_vml_cpu", "sin": "sin_vml_cpu",
    "cos": "cos_vml_cpu", "tanh": "tanh_vml_cpu", "tan": "tan_vml_cpu", "asin": "asin_vml_cpu",
    "atan": "atan_vml_cpu", "expm1": "expm1_vml_cpu", "log1p": "log1p_vml_cpu",
    "log10": "log10_vml_cpu", "pow": "pow", "exp2": "exp2", "mm": "addmm_impl_cpu_",
    "addmm": "addmm_impl_cpu_", "matmul": "dot", "dot": "dot", "vdot": "vdot", "bmm": "bmm",
    "prod": "prod_out_cpu", "cumsum": "cumsum_out_cpu", "cumprod": "cumprod_out_cpu",
    "max": "max_all", "min": "min_all", "fliplr": "flip_cpu", "flipud": "flip_cpu",
    "trace": "trace", "equal": "equal_cpu",
    "lerp": "lerp_kernel_scalar", "gather": "scatter_gather_tensor_cpu",
    "scatter": "scatter_gather_tensor_cpu", "scatter_": "scatter_gather_tensor_cpu",
    "mean": "sum_cpu", "eye": "eye", "square": "pow", "angle": "angle_cpu",
}


def _not_implemented(name: str) -> NotImplementedError:
    base = name.rstrip("_")
    kernel = _KERNEL_NAME.get(name) or _KERNEL_NAME.get(base) or f"{base}_cpu"
    return NotImplementedError(f'"{kernel}" not implemented for \'ComplexHalf\'')


def _is_chalf(a) -> bool:
    return isinstance(a, Tensor) and a._dtype is _CHALF


def _up(a):
    """A complex32 tensor as complex64 (through ``_to_copy``, so autograd sees it)."""
    if _is_chalf(a):
        return a.to(_C64)
    if isinstance(a, list | tuple) and any(_is_chalf(t) for t in a):
        return type(a)(_up(t) for t in a)
    return a


def _wanted(args, kwargs) -> dt.DType:
    """The dtype torch's promotion gives the original arguments (complex32 or wider)."""
    dims, zeros, scalars = [], [], []
    for a in (*args, *kwargs.values()):
        for t in (a if isinstance(a, list | tuple) else (a,)):
            if isinstance(t, Tensor):
                (dims if t._shape else zeros).append(t._dtype)
            elif isinstance(t, bool | int | float | complex) and a is not kwargs.get("dim"):
                scalars.append(dt.scalar_dtype(t))
    return dt.result_type_of(dims, zeros, scalars)


def _half_scalar(a):
    if a.__class__ is float:
        return float(np.float16(a))
    if a.__class__ is complex:
        return complex(float(np.float16(a.real)), float(np.float16(a.imag)))
    return a


def _down(out, narrow: bool):
    """Round complex64 results back to complex32 (float32 ones to float16) when ``narrow``."""
    if isinstance(out, tuple):
        return tuple(_down(o, narrow) for o in out)
    if isinstance(out, list):
        return [_down(o, narrow) for o in out]
    if not narrow or not isinstance(out, Tensor):
        return out
    if out._dtype is _C64:
        return out.to(_CHALF)
    return out.to(dt.float16) if out._dtype is dt.float32 else out


def _any_chalf(args, kwargs) -> bool:
    for a in (*args, *kwargs.values()):
        if _is_chalf(a) or a is _CHALF or \
                isinstance(a, list | tuple) and any(_is_chalf(t) for t in a):
            return True
    return False


def _compute(op, ks: int, *args, _allow: bool = False, **kwargs):
    if not _any_chalf(args, kwargs):  # a float16 view of a complex32 base shares its key set
        return op.lookup(ks)(*args, **kwargs)
    name = op.name
    if name not in _SUPPORTED and not _allow:
        mode = kwargs.get("rounding_mode")
        raise _not_implemented(f"div_{mode}" if name.startswith("div") and mode else name)
    if kwargs.get("dtype") is _CHALF:
        narrow = True
        kwargs = {**kwargs, "dtype": _C64}
    else:
        narrow = kwargs.get("dtype") is None and _wanted(args, kwargs) is _CHALF
    if narrow:  # torch casts a Python float or complex operand to complex32 first
        args = tuple(_half_scalar(a) for a in args)
        kwargs = {k: _half_scalar(v) for k, v in kwargs.items()}
    if op._is_inplace and _is_chalf(args[0]):
        self_t = args[0]
        scratch = self_t.to(_C64)
        op(scratch, *(_up(a) for a in args[1:]), **{k: _up(v) for k, v in kwargs.items()})
        return self_t.copy_(scratch)
    out = op(*(_up(a) for a in args), **{k: _up(v) for k, v in kwargs.items()})
    return _down(out, narrow)


# Operators built from others whose parts would run, but that torch's CPU refuses.
_REFUSED = frozenset({"angle", "mm", "matmul", "equal", "square", "sort", "argsort", "msort",
                      "flip", "fliplr", "flipud"})


def _flips_rows(input, dims, **_) -> bool:
    """Whether torch's flip copies rows of a contiguous tensor (no complex32 kernel needed)."""
    last = input.dim() - 1
    dims = (dims,) if isinstance(dims, int) else dims
    return input.is_contiguous() and all(d % max(input.dim(), 1) != last for d in dims)


def _refuse(op, ks: int, *args, **kwargs):
    if not _any_chalf(args, kwargs):
        return op.lookup(ks)(*args, **kwargs)
    name = op.name
    if name == "flip" and _flips_rows(*args, **kwargs):  # torch copies whole rows then
        return _compute(op, ks, *args, _allow=True, **kwargs)
    if name == "matmul":  # torch names the kernel its matmul picks
        dims = tuple(a.dim() for a in args[:2] if isinstance(a, Tensor))
        raise _not_implemented("dot" if dims == (1, 1) else "bmm" if max(dims) > 2 else "mm")
    if name in ("sort", "argsort", "msort"):
        raise RuntimeError(" Sort does not support complex dtypes on CPU")
    if name.startswith(("fft_", "_fft")):
        raise RuntimeError("MKL FFT doesn't support tensors of type: Half")
    raise _not_implemented(name)


def _fallback_for(op):
    name = op.name
    if name in _SUPPORTED:
        return _KERNEL
    if name in _REFUSED or name.startswith(("fft_", "_fft")):
        return _REFUSE
    if name in _NATIVE or Tag.view in op.tags or \
            AliasKey.CompositeImplicitAutograd in op._alias:
        return FALLTHROUGH
    return _KERNEL


_KERNEL = Kernel(_compute, True, "ComplexHalf (complex32 in complex64)")
_REFUSE = Kernel(_refuse, True, "ComplexHalf (not supported by torch's CPU)")


# -- factories ------------------------------------------------------------------------------------
_FACTORIES_IN_COMPLEX64 = frozenset({"zeros", "ones", "full", "scalar_tensor", "tensor", "randn",
                                     "rand", "normal"})
_FACTORIES_NATIVE = frozenset({"empty", "empty_strided"})


def _wrap_factory(op) -> None:
    """Route ``op(..., dtype=complex32)`` through complex64 (or refuse it, as torch)."""
    inner = op._direct[DispatchKey.BackendSelect]

    def select(op, ks, *args, **kwargs):
        if kwargs.get("dtype") is None and op.name == "tensor" and \
                dt.get_default_dtype() is dt.float16:  # Python complex data gives complex32
            kwargs = {**kwargs, "dtype": data_shape_dtype(args[0], None)[1]}
        if kwargs.get("dtype") is not _CHALF:
            return inner.fn(op, ks, *args, **kwargs)
        warn_chalf()
        if op.name in _FACTORIES_NATIVE:
            return inner.fn(op, ks, *args, **kwargs)
        if op.name not in _FACTORIES_IN_COMPLEX64:
            raise _not_implemented(op.name)
        requires_grad = kwargs.get("requires_grad", False)
        out = inner.fn(op, ks, *args, **{**kwargs, "dtype": _C64, "requires_grad": False})
        out = out.to(_CHALF)
        return out.requires_grad_(True) if requires_grad else out

    op.register(DispatchKey.BackendSelect, Kernel(select, True, f"{inner.source} (complex32)"))


def _install() -> None:
    register_fallback(DispatchKey.ComplexHalf, PerOpFallback(_fallback_for, "complex32"))
    for op in all_ops():
        kernel = op._direct.get(DispatchKey.BackendSelect)
        if kernel is not None and getattr(kernel.fn, "__name__", "") == "_backend_select":
            _wrap_factory(op)


_install()
