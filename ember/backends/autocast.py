"""The autocast backend: per-operator casting policies at ``AutocastCPU`` and ``AutocastCUDA``.

Owns which operators autocast changes and how (torch's CPU lists, and its CUDA lists at the
CUDA key): ``lower`` casts floating
arguments to the region's lower-precision dtype (matrix products, convolutions), ``fp32``
casts lower-precision arguments up to float32 (linear algebra, ``prod``, ``trace``, ``cdist``,
quantiles, reflection/replication padding), ``promote`` casts every floating argument to the
widest one (``cat``, ``stack``, ``index_copy``). float64 tensors, integer tensors and tensors of
other devices are never cast. Composites that live above the operators (``F.linear``, the
losses) get the same policies through ``autocast_function``. The state and the context manager
are ``ember.dispatch.autocast``'s (NOTE [Autocast keys]).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from ember.core import dtype as dt
from ember.dispatch import dispatcher
from ember.dispatch.autocast import AUTOCAST_KEY, autocast_state, cache_cast, cached_cast_lookup
from ember.dispatch.dispatcher import ExcludeKeys, redispatch
from ember.ops.copy import _to_copy
from ember.tensor import Tensor

__all__ = ["LOWER_PRECISION_OPS", "FP32_OPS", "PROMOTE_OPS", "autocast_function", "cast_floating",
           "policy_of", "CUDA_LOWER_PRECISION_OPS", "CUDA_FP32_OPS", "CUDA_PROMOTE_OPS"]

_LOWER_DTYPES = (dt.float16, dt.bfloat16)

# Operator names (torch's CPU lists, as far as ember defines the operators).
# einsum and tensordot are composites of bmm/mm in torch, kernels of their own here
LOWER_PRECISION_OPS = ("mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "convolution", "einsum",
                       "tensordot")
FP32_OPS = ("prod", "trace", "cdist", "quantile", "nanquantile", "inverse", "linalg_inv",
            "linalg_cholesky", "linalg_eigh", "linalg_eigvalsh", "linalg_qr", "linalg_solve",
            "linalg_svd", "linalg_svdvals", "linalg_matrix_rank")
PROMOTE_OPS = ("cat", "stack", "index_copy")
# torch's CUDA lists (autocast_mode.cpp), as far as ember defines the operators; the
# "fp32_set_opt_dtype" list (softmax, sum, cumsum, ...) runs in float32 like the fp32 list
CUDA_LOWER_PRECISION_OPS = ("mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "convolution",
                            "einsum", "mv", "addmv", "addr", "chain_matmul",
                            "linalg_multi_dot", "prelu", "_convolution", "conv_tbc",
                            "linalg_vecdot")
CUDA_FP32_OPS = ("acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2",
                 "log1p", "reciprocal", "rsqrt", "sinh", "tan", "pow", "softplus",
                 "native_layer_norm", "layer_norm", "group_norm", "native_group_norm",
                 "frobenius_norm", "nuclear_norm", "cosine_similarity", "dist", "pdist",
                 "cdist", "renorm", "logsumexp", "upsample_nearest1d", "upsample_nearest2d",
                 "upsample_nearest3d", "upsample_linear1d", "upsample_bilinear2d",
                 "upsample_trilinear3d", "upsample_bicubic2d",
                 "prod", "softmax", "log_softmax", "cumprod", "cumsum", "linalg_vector_norm",
                 "linalg_matrix_norm", "sum")
CUDA_PROMOTE_OPS = ("addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot",
                    "grid_sampler", "index_put", "scatter_add", "tensordot", "cat", "stack",
                    "index_copy")
# pad runs in float32 where torch's pad reaches a reflection (1-d, 2-d) or replication kernel
_FP32_PADS = {"reflect": (2, 4), "replicate": (2, 4, 6)}


def _eligible(a, device: str) -> bool:
    return isinstance(a, Tensor) and a._dtype.is_floating_point and \
        a._dtype is not dt.float64 and a._device.type == device


def _cast(a, to: dt.DType, device: str):
    """``a`` cast to ``to`` if autocast may cast it; leaf weights' casts are cached."""
    if not _eligible(a, device) or a._dtype is to:
        return a
    st = autocast_state()
    cacheable = st.cache_enabled and to in _LOWER_DTYPES and a._dtype is dt.float32 and \
        a.grad_fn is None and a._requires_grad and a._base is None
    if cacheable:
        hit = cached_cast_lookup(a)
        if hit is not None:
            return hit
    out = _to_copy(a, dtype=to)
    if cacheable:
        cache_cast(a, out)
    return out


def _map(args, kwargs, fn):
    """Apply ``fn`` to every tensor argument, inside lists and tuples too."""
    def one(a):
        if a.__class__ is list or a.__class__ is tuple:
            return a.__class__(fn(t) for t in a)
        return fn(a)
    return tuple(one(a) for a in args), {k: one(v) for k, v in kwargs.items()}


def _tensors(args, kwargs):
    for a in (*args, *kwargs.values()):
        if a.__class__ is list or a.__class__ is tuple:
            yield from a
        else:
            yield a


def _lower(device, args, kwargs):
    to = autocast_state().dtype[device]
    return _map(args, kwargs, lambda a: _cast(a, to, device))


def _fp32(device, args, kwargs):
    return _map(args, kwargs, lambda a: _cast(a, dt.float32, device))


def _widest(device: str, args, kwargs) -> dt.DType:
    """torch's ``promote_type``: float32 wins over the lower precision; two different lower
    precisions cannot be ordered."""
    to = autocast_state().dtype[device]
    for a in _tensors(args, kwargs):
        if not _eligible(a, device) or a._dtype is to or to is dt.float32:
            continue
        if a._dtype is dt.float32:
            to = dt.float32
        else:
            raise RuntimeError("Unexpected floating ScalarType in autocast's type promotion: "
                               f"{a._dtype} meets {to}")
    return to


def _promote(device, args, kwargs):
    if kwargs.get("out") is not None:
        return args, kwargs
    to = _widest(device, args, kwargs)
    return _map(args, kwargs, lambda a: _cast(a, to, device))


def _pad(device, args, kwargs):
    bound = dict(zip(("input", "pad", "mode", "value"), args), **kwargs)
    if len(bound.get("pad", ())) in _FP32_PADS.get(bound.get("mode", "constant"), ()):
        return _fp32(device, args, kwargs)
    return args, kwargs


def cast_floating(args, kwargs, to: dt.DType, device: str):
    """Every floating tensor on ``device`` in ``args``/``kwargs`` (lists, tuples and dicts
    included) cast to ``to``: ``custom_fwd``'s ``cast_inputs``."""
    def one(a):
        if isinstance(a, Tensor):
            ok = a._dtype.is_floating_point and a._device.type == device
            return _to_copy(a, dtype=to) if ok and a._dtype is not to else a
        if a.__class__ is list or a.__class__ is tuple:
            return a.__class__(one(t) for t in a)
        if a.__class__ is dict:
            return {k: one(v) for k, v in a.items()}
        return a
    return one(tuple(args)), one(dict(kwargs))


_POLICIES: dict[str, Callable] = {"lower": _lower, "fp32": _fp32, "promote": _promote}


def policy_of(name: str) -> str | None:
    """The autocast policy of operator ``name`` (``"lower"``, ``"fp32"``, ``"promote"``,
    ``"pad"``), or None when autocast leaves it alone."""
    for policy, names in (("lower", LOWER_PRECISION_OPS), ("fp32", FP32_OPS),
                          ("promote", PROMOTE_OPS), ("pad", ("pad",))):
        if name in names:
            return policy
    return None


def _kernel(cast: Callable, device: str, bit: int):
    def autocast_kernel(op, ks_below, *args, **kwargs):
        with ExcludeKeys(bit):
            args, kwargs = cast(device, args, kwargs)
            return redispatch(op, ks_below, *args, **kwargs)
    return autocast_kernel


def autocast_function(policy: str) -> Callable:
    """Give a composite function (one built of other operators) an operator's autocast policy.

    Inside an autocast region the decorated function's tensor arguments are cast by
    ``policy`` (``"lower"``, ``"fp32"`` or ``"promote"``) and its body runs with autocast off,
    as torch runs a listed composite such as ``linear`` or ``mse_loss``. Outside, the
    function is called as it is.
    """
    cast = _POLICIES[policy]
    ds = dispatcher.dispatch_state()
    devices = tuple((d, 1 << AUTOCAST_KEY[d]) for d in ("cpu", "cuda"))
    bits = devices[0][1] | devices[1][1]

    def deco(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            keep = ds.keep & bits
            if not keep:  # autocast off, or excluded inside another autocast op
                return fn(*args, **kwargs)
            with ExcludeKeys(keep):
                for device, bit in devices:
                    if keep & bit:
                        args, kwargs = cast(device, args, kwargs)
                return fn(*args, **kwargs)
        return wrapper
    return deco


def _register() -> None:
    _POLICIES["pad"] = _pad
    device, key = "cpu", AUTOCAST_KEY["cpu"]
    for policy, names in (("lower", LOWER_PRECISION_OPS), ("fp32", FP32_OPS),
                          ("promote", PROMOTE_OPS), ("pad", ("pad",))):
        for name in names:
            ops = dispatcher.overloads("aten", name)
            if not ops:
                raise RuntimeError(f"autocast: no operator named {name!r} to register")
            for op in ops:
                op.register(key, _kernel(_POLICIES[policy], device, 1 << key),
                            with_keyset=True)
    # CUDA: torch's lists name operators ember may not define (skipped)
    device, key = "cuda", AUTOCAST_KEY["cuda"]
    for policy, names in (("lower", CUDA_LOWER_PRECISION_OPS), ("fp32", CUDA_FP32_OPS),
                          ("promote", CUDA_PROMOTE_OPS)):
        for name in names:
            for op in dispatcher.overloads("aten", name):
                op.register(key, _kernel(_POLICIES[policy], device, 1 << key),
                            with_keyset=True)


_register()
