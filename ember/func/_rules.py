"""Batching rules: each operator's call on a batch, written on values whose batch dim is first.

A rule receives the operator, the level being unwrapped (its size ``B``) and the call's
arguments, in which that level's wrappers still stand; it returns the result as wrappers of
that level. Families share one rule each (pointwise with broadcasting, dimension arguments
shifted by one, sizes prefixed with ``B``, matmul, convolution, indexing, concatenation).
An operator without a rule is decomposed when it is a ``CompositeImplicitAutograd`` operator,
and otherwise run once per example and stacked, with torch's performance warning. More rules
live in ``_rules_index`` (scatter, index_put, index_select/add/copy/fill, searchsorted),
``_rules_math`` (FFT, complex views, triangular parts, linear algebra, cross, roll, einsum and
other products, layer norm) and ``_rules_spatial`` (pooling, upsampling, padding).

Operators that still loop over the examples (found by vmapping every op-table entry over a
batch of 3, every tensor argument batched):

- indexing: ``masked_scatter``/``masked_scatter_``,
  ``index_put`` with boolean masks, ``index_fill`` with a batched fill value, ``as_strided``;
- products: ``einsum`` with an implicit output or a path;
- linear algebra: ``linalg_solve`` with ``left=False``
  and ``linalg_ldl_solve``;
- statistics: ``histc``, ``quantile``, ``nanquantile``;
- nn: ``max_unpool2d``/``max_unpool3d``,
  ``fractional_max_pool2d``/``fractional_max_pool3d``, ``col2im``;
- every ``out=`` form (as in torch).
"""

from __future__ import annotations

import warnings

from ember.autograd.function import Function
from ember.dispatch.dispatcher import Tag, get_op
from ember.dispatch.keys import AliasKey
from ember.func import _batched
from ember.func._batched import front, is_batched_at, wrap
from ember.tensor import Tensor

__all__ = ["apply", "loop", "stack_plain", "RULES"]

RULES: dict[str, object] = {}  # operator name -> rule(op, info, args, kwargs)
_warned: set[str] = set()


def _op(name: str):
    return get_op(name)


def stack_plain(tensors: list) -> Tensor:
    """``stack(tensors, 0)`` through the dispatcher."""
    return _op("aten::stack")(list(tensors), 0)


def _lift(out, level: int):
    """Wrap a rule's outputs (batch first) as wrappers of ``level``."""
    if isinstance(out, Tensor):
        return wrap(out, 0, level)
    if isinstance(out, list | tuple):
        items = [_lift(o, level) for o in out]
        return type(out)(items) if out.__class__ in (list, tuple) else type(out)(*items)
    return out


def apply(op, info, args: tuple, kwargs: dict):
    """The result of ``op(*args, **kwargs)`` with ``info``'s level batched."""
    if Tag.data_dependent_output in op.tags and op.name != "index":
        raise RuntimeError(f"vmap: We do not support batching operators that can output "
                           f"dynamic shape. Attempted to vmap over {op.namespace}::{op.name}.")
    rule = RULES.get(op.name)
    if rule is None and Tag.pointwise in op.tags:
        rule = pointwise
    if rule is not None:
        out = rule(op, info, args, kwargs)
        if out is not NotImplemented:
            return out
    composite = op._alias.get(AliasKey.CompositeImplicitAutograd)
    if composite is not None:  # user-level code again: its random draws are batched
        _batched._state.physical -= 1
        try:
            return composite.fn(*args, **kwargs)
        finally:
            _batched._state.physical += 1
    return loop(op, info, args, kwargs)


# -- the fallback ----------------------------------------------------------------------------
def loop(op, info, args: tuple, kwargs: dict, same_randomness: bool = False):
    """Run ``op`` once per example and stack the results (torch's slow fallback)."""
    level, size = info.level, info.size
    if not same_randomness and op.qualname not in _warned:
        _warned.add(op.qualname)
        warnings.warn(f"There is a performance drop because we have not yet implemented the "
                      f"batching rule for {op.namespace}::{op.short_name}. Please file us an "
                      f"issue on GitHub so that we can prioritize its implementation.",
                      UserWarning, stacklevel=4)
    fronted_args = [_front_any(a, level) for a in args]
    fronted_kwargs = {k: _front_any(v, level) for k, v in kwargs.items()}
    state = _rng_state() if same_randomness else None
    results = []
    for i in range(size):
        if state is not None:
            _set_rng_state(state)
        a = [_pick(v, i) for v in fronted_args]
        k = {n: _pick(v, i) for n, v in fronted_kwargs.items()}
        results.append(op(*a, **k))
    if op._is_inplace:
        return args[0]
    return _stack_results(results, level)


def _rng_state():
    from ember.tensor.random import default_generator
    return default_generator.get_state()


def _set_rng_state(state) -> None:
    from ember.tensor.random import default_generator
    default_generator.set_state(state)


class _Fronted:
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _front_any(a, level: int):
    if is_batched_at(a, level):
        return _Fronted(front(a))
    if a.__class__ is list or a.__class__ is tuple:
        return type(a)(_front_any(t, level) for t in a)
    return a


def _pick(a, i: int):
    if a.__class__ is _Fronted:
        return a.value.select(0, i)
    if a.__class__ is list or a.__class__ is tuple:
        return type(a)(_pick(t, i) for t in a)
    return a


def _stack_results(results: list, level: int):
    first = results[0]
    if isinstance(first, Tensor):
        return wrap(stack_plain(results), 0, level)
    if isinstance(first, list | tuple):
        cols = [_stack_results([r[j] for r in results], level) for j in range(len(first))]
        return type(first)(cols) if first.__class__ in (list, tuple) else type(first)(*cols)
    if first is None or all(r == first for r in results):
        return first
    raise RuntimeError("vmap: an operator returned a different non-tensor value per example; "
                       "only Tensor results can be batched")


# -- helpers for rules -----------------------------------------------------------------------
def _arg(op, args: tuple, kwargs: dict, name: str):
    """``(where, value)`` of argument ``name``: where is an index into args or the name."""
    for i, a in enumerate(op.schema.arguments):
        if a.name == name:
            if i < len(args) and not a.kwarg_only:
                return i, args[i]
            return name, kwargs.get(name, a.default)
    raise KeyError(name)


def _set(args: list, kwargs: dict, where, value) -> None:
    if isinstance(where, int):
        args[where] = value
    else:
        kwargs[where] = value


def _wrap_dim(d: int, rank: int) -> int:
    r = max(rank, 1)
    if not -r <= d < r:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-r}, {r - 1}], "
                         f"but got {d})")
    return d % r


def _only_self_batched(args, kwargs, level) -> bool:
    """Whether the first argument is the only tensor of ``level``."""
    if not is_batched_at(args[0] if args else None, level):
        return False
    rest = (*args[1:], *kwargs.values())
    for a in rest:
        if is_batched_at(a, level):
            return False
        if a.__class__ is list or a.__class__ is tuple:
            if any(is_batched_at(t, level) for t in a):
                return False
    return True


def _expand_to(x, size: int):
    """A plain (not batched at this level) tensor with a new leading batch dim of ``size``."""
    return x.unsqueeze(0).expand(size, *x.shape)


def _bfront(x, level: int, size: int):
    """``x``'s batch-first value if batched at ``level``, else ``x`` expanded to the batch."""
    return front(x) if is_batched_at(x, level) else _expand_to(x, size)


# -- pointwise -------------------------------------------------------------------------------
_INPLACE_MSG = ("vmap: inplace arithmetic(self, *extra_args) is not possible because there "
                "exists a Tensor `other` in extra_args that has more elements than `self`. This "
                "happened due to `other` being vmapped over but `self` not being vmapped over in "
                "a vmap. Please try to use out-of-place operators instead of inplace "
                "arithmetic.")


def pointwise(op, info, args: tuple, kwargs: dict):
    """Broadcasting operators: each batched tensor gets size-1 dims so ranks line up."""
    level = info.level
    ranks = [a.dim() for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
    rank = max(ranks)

    def fix(a):
        if is_batched_at(a, level):
            v = front(a)
            for _ in range(rank - a.dim()):
                v = v.unsqueeze(1)
            return v
        return a

    if op._is_inplace and not is_batched_at(args[0], level):
        raise RuntimeError(_INPLACE_MSG)
    out = op(*[fix(a) for a in args], **{k: fix(v) for k, v in kwargs.items()})
    return args[0] if op._is_inplace else _lift(out, level)


for _name in ("clone", "detach", "alias", "_to_copy", "zeros_like", "ones_like", "empty_like",
              "full_like", "rand_like", "randn_like", "copy_", "masked_fill", "where", "clamp",
              "lerp", "threshold_backward", "fill_", "zero_", "bernoulli", "native_dropout",
              "lift_fresh", "contiguous", "relu_", "masked_fill_", "_standard_gamma_grad",
              "_dirichlet_grad"):
    RULES[_name] = pointwise


def _self_only(op, info, args, kwargs):
    """Operators whose other arguments are not tensors of this level: run on the value."""
    if not _only_self_batched(args, kwargs, info.level):
        return NotImplemented
    return _lift(op(front(args[0]), *args[1:], **kwargs), info.level)


# -- dimension arguments ---------------------------------------------------------------------
def _shift(d, rank: int):
    if isinstance(d, list | tuple):
        return [_wrap_dim(x, rank) + 1 for x in d]
    return _wrap_dim(d, rank) + 1


def _dim_rule(*names: str, new: bool = False, none: str | None = None):
    """A rule shifting the dimension arguments ``names`` past the batch dim.

    ``new``: the dim indexes the output (rank + 1, as ``unsqueeze``). ``none``: what a None
    (or empty list) dim means: ``"all"`` every logical dim, ``"flat"`` the flattened tensor.
    """
    def rule(op, info, args, kwargs):
        if not _only_self_batched(args, kwargs, info.level):
            return NotImplemented
        x = args[0]
        if x.dim() == 0 and not new:  # NOTE [Dimension arguments of a 0-d example]
            if op.name in _NEEDS_A_DIM:
                _wrap_dim(1, 0)  # torch's vmap: the dim lands past the batch, out of range
            return _scalar_dims(op, info, args, kwargs, names)
        rank = x.dim() + (1 if new else 0)
        a, k = list(args), dict(kwargs)
        v = front(x)
        for name in names:
            where, d = _arg(op, args, kwargs, name)
            if d is None or (isinstance(d, list | tuple) and not d and none is not None):
                if none == "all":
                    if x.dim() == 0:
                        return NotImplemented
                    _set(a, k, where, list(range(1, x.dim() + 1)))
                elif none == "flat":
                    v = v.reshape(v.shape[0], -1)
                    _set(a, k, where, 1)
                continue
            _set(a, k, where, _shift(d, rank))
        a[0] = v
        out = op(*a, **k)
        return args[0] if op._is_inplace else _lift(out, info.level)

    return rule


# NOTE [Dimension arguments of a 0-d example]
# A 0-d example accepts dim 0 or -1 (and None), naming the example itself. On the value the
# example becomes a size-1 dim after the batch: the operator runs over that dim and results
# that keep it (keepdim, or operators that do not reduce) lose it again.
_NEEDS_A_DIM = frozenset({"split", "chunk", "unbind", "select", "narrow", "slice",
                          "split_with_sizes", "unfold", "diagonal", "glu"})


def _scalar_dims(op, info, args, kwargs, names):
    a, k = list(args), dict(kwargs)
    types = {arg.name: arg.type for arg in op.schema.arguments}
    for name in names:
        where, d = _arg(op, args, kwargs, name)
        for x in d if isinstance(d, list | tuple) else [d]:
            if x is not None:
                _wrap_dim(x, 0)
        if isinstance(d, list | tuple) and len(d) > 1:
            _wrap_dim(1, 0)  # repeated dims of a 0-d example: torch's vmap IndexError
        if "[" in types[name]:
            _set(a, k, where, [1])
        else:
            _set(a, k, where, 1)
    a[0] = front(args[0]).unsqueeze(1)
    return _lift(_drop_unit(op(*a, **k)), info.level)


def _drop_unit(out):
    if isinstance(out, Tensor):
        return out.squeeze(1) if out.dim() > 1 else out
    if isinstance(out, list | tuple):
        items = [_drop_unit(o) for o in out]
        return type(out)(items) if out.__class__ in (list, tuple) else type(out)(*items)
    return out


for _name in ("sum", "mean", "std", "var", "all", "any", "norm", "count_nonzero", "amax", "amin",
              "nansum", "nanmean", "var_mean", "std_mean", "aminmax"):
    RULES[_name] = _dim_rule("dim", none="all")
for _name in ("prod", "argmax", "argmin"):
    RULES[_name] = _dim_rule("dim", none="flat")
for _name in ("softmax", "log_softmax", "cumsum", "cumprod", "cumsum_", "cumprod_",
              "logcumsumexp", "cummax", "cummin", "topk", "kthvalue", "mode", "select", "slice",
              "narrow", "unbind", "split", "chunk", "split_with_sizes", "logsumexp", "flip",
              "_softmax", "_log_softmax", "squeeze_dim", "nanmedian", "glu"):
    RULES[_name] = _dim_rule("dims" if _name == "flip" else "dim")
def _sort_like(op, info, args, kwargs):
    """``sort``/``argsort``: ``dim`` and ``descending`` may come positionally although the
    schema lists them keyword-only (after ``stable``)."""
    if len(args) > 1:
        kwargs = {**dict(zip(("dim", "descending"), args[1:])), **kwargs}
        args = args[:1]
    return _dim_rule("dim")(op, info, args, kwargs)


RULES["sort"] = RULES["argsort"] = _sort_like
def _flip(op, info, args, kwargs):
    """``flip``: the dims may come spread over the positional arguments."""
    if len(args) > 2 or (len(args) == 2 and not isinstance(args[1], list | tuple)):
        args = (args[0], list(args[1:]))
    return _dim_rule("dims")(op, info, args, kwargs)


RULES["flip"] = _flip
RULES["transpose"] = _dim_rule("dim0", "dim1")
RULES["diagonal"] = _dim_rule("dim1", "dim2")
RULES["movedim"] = _dim_rule("source", "destination")
RULES["unfold"] = _dim_rule("dimension")
RULES["unsqueeze"] = _dim_rule("dim", new=True)


def _max_min(op, info, args, kwargs):
    """``max``/``min``/``median`` with a ``dim`` (values, indices), or over everything."""
    if not _only_self_batched(args, kwargs, info.level):
        return NotImplemented
    if op.overload == "dim":
        return _dim_rule("dim")(op, info, args, kwargs)
    v = front(args[0]).reshape(info.size, -1)
    full = {"max": "amax", "min": "amin"}.get(op.name)
    if full is not None:
        return _lift(_op(f"aten::{full}")(v, [1]), info.level)
    return _lift(_op(f"aten::{op.name}.dim")(v, 1)[0], info.level)


for _name in ("max", "min", "median", "nanmedian"):
    RULES[_name] = _max_min


def _squeeze(op, info, args, kwargs):
    if not _only_self_batched(args, kwargs, info.level):
        return NotImplemented
    x = args[0]
    where, d = _arg(op, args, kwargs, "dim")
    if d is None:
        d = [i for i, s in enumerate(x.shape) if s == 1]
    elif not isinstance(d, list | tuple):
        d = [d]
    dims = [_wrap_dim(i, x.dim()) + 1 for i in d]
    v = front(x)
    return wrap(v.squeeze(dims) if dims else v.alias(), 0, info.level)


RULES["squeeze"] = _squeeze


def _permute(op, info, args, kwargs):
    if not _only_self_batched(args, kwargs, info.level):
        return NotImplemented
    x = args[0]
    dims = _sizes(args, kwargs, op, "dims")
    return wrap(front(x).permute([0, *_shift(dims, x.dim())]), 0, info.level)


def _t(op, info, args, kwargs):
    x = args[0]
    v = front(x)
    return wrap(v.transpose(1, 2) if x.dim() == 2 else v.alias(), 0, info.level)


RULES["permute"] = _permute
RULES["t"] = _t


# -- sizes -----------------------------------------------------------------------------------
def _sizes(args, kwargs, op, name: str) -> list:
    """A size argument given as a list or spread over the positional arguments."""
    if len(args) > 1 and not isinstance(args[1], list | tuple):
        return list(args[1:])
    return list(_arg(op, args, kwargs, name)[1])


def _view_like(op, info, args, kwargs):
    """``view``/``reshape``: the batch size joins the front of the requested shape."""
    if not _only_self_batched(args, kwargs, info.level):
        return NotImplemented
    s = _sizes(args, kwargs, op, "shape" if op.name == "reshape" else "size")
    return wrap(op(front(args[0]), [info.size, *s]), 0, info.level)


def _expand(op, info, args, kwargs):
    if not _only_self_batched(args, kwargs, info.level):
        return NotImplemented
    x = args[0]
    s = _sizes(args, kwargs, op, "size")
    v = front(x)
    for _ in range(len(s) - x.dim()):
        v = v.unsqueeze(1)
    return wrap(v.expand(info.size, *s), 0, info.level)


def _repeat(op, info, args, kwargs):
    if not _only_self_batched(args, kwargs, info.level):
        return NotImplemented
    x = args[0]
    s = _sizes(args, kwargs, op, "repeats")
    v = front(x)
    for _ in range(len(s) - x.dim()):
        v = v.unsqueeze(1)
    return wrap(v.repeat(1, *s), 0, info.level)


def _as_other(op, info, args, kwargs):
    """``view_as``/``expand_as``: the other tensor's (logical) shape."""
    self, other = args[0], args[1]
    target = "view" if op.name == "view_as" else "expand"
    return getattr(self, target)(list(other.shape))


RULES.update({"view": _view_like, "reshape": _view_like, "_unsafe_view": _view_like,
              "expand": _expand, "repeat": _repeat, "view_as": _as_other,
              "expand_as": _as_other})


# -- matmul family ---------------------------------------------------------------------------
def _matmul(op, info, args, kwargs):
    """``matmul`` (and ``mm``, ``bmm``, ``mv``, ``dot``) per example, batch first."""
    a, b = args[0], args[1]
    level = info.level
    ab, bb = is_batched_at(a, level), is_batched_at(b, level)
    ra, rb = a.dim(), b.dim()
    mm = _op("aten::matmul")
    if ab and not bb:
        va = front(a)
        if ra == 1 and rb == 1:
            return wrap(mm(va, b), 0, level)
        if ra == 1:
            return wrap(mm(va.unsqueeze(-2), b).squeeze(-2), 0, level)
        return wrap(mm(va, b), 0, level)
    if bb and not ab:
        vb = front(b)
        if rb == 1:  # (..., k) @ (B, k): contract against each example's vector
            return wrap(mm(vb, a.transpose(-1, -2)) if ra >= 2 else mm(vb, a), 0, level)
        if ra == 1:
            return wrap(mm(a, vb), 0, level)
        return wrap(mm(a, vb), 0, level)
    va, vb = front(a), front(b)
    if rb == 2 and ra >= 1 and vb.stride(0) == 0:  # NOTE [A weight shared by the batch]
        lhs = va.unsqueeze(-2) if ra == 1 else va
        out = _SharedRight.apply(lhs, vb)
        return wrap(out.squeeze(-2) if ra == 1 else out, 0, level)
    if ra == 1 and rb == 1:
        return wrap((va * vb).sum(-1), 0, level)
    if rb == 1:
        return wrap(mm(va, vb.unsqueeze(-1)).squeeze(-1), 0, level)
    if ra == 1:
        return wrap(mm(va.unsqueeze(-2), vb).squeeze(-2), 0, level)
    for _ in range(rb - ra):
        va = va.unsqueeze(1)
    for _ in range(ra - rb):
        vb = vb.unsqueeze(1)
    return wrap(mm(va, vb), 0, level)


# NOTE [A weight shared by the batch]
# ``grad`` inside ``vmap`` gives every example its own copy of an unbatched parameter, as an
# expanded view (batch stride 0; NOTE [Transforms over levels]). ``x @ W.T`` on it would be a
# batched matmul over B copies of W and, backwards, batched products of strided operands,
# which NumPy runs without BLAS. Since the copies are equal, the forward is one GEMM of the
# whole batch against W; the backward gives the input one GEMM and the per-example copies
# their own gradient ``x_b^T g_b`` (an outer product when each example is one row).
class _SharedRight(Function):
    @staticmethod
    def forward(ctx, lhs, rhs):
        ctx.save_for_backward(lhs, rhs)
        return lhs @ rhs[0]

    @staticmethod
    def backward(ctx, g):
        lhs, rhs = ctx.saved_tensors
        grad_lhs = g @ rhs[0].transpose(-1, -2) if ctx.needs_input_grad[0] else None
        grad_rhs = None
        if ctx.needs_input_grad[1]:
            lt = lhs.transpose(-1, -2)  # (B, ..., k, m)
            if lhs.shape[-2] == 1:
                prod = lt * g  # (B, ..., k, 1) * (B, ..., 1, n): an outer product each
            else:
                prod = lt.contiguous() @ g.contiguous()
            while prod.dim() > 3:  # examples with leading dims of their own: sum them
                prod = prod.sum(1)
            grad_rhs = prod
        return grad_lhs, grad_rhs


def _mm_checked(op, info, args, kwargs):
    """``mm``/``bmm``/``mv``/``dot``: torch's rank checks on the examples, then matmul."""
    expected = {"mm": (2, 2), "bmm": (3, 3), "mv": (2, 1), "dot": (1, 1)}[op.name]
    got = (args[0].dim(), args[1].dim())
    if got != expected:
        raise RuntimeError(f"{op.name}: expected {expected[0]}-D and {expected[1]}-D tensors "
                           f"per example; got {got[0]}-D and {got[1]}-D")
    return _matmul(op, info, args, kwargs)


def _addmm_like(op, info, args, kwargs):
    """``addmm``/``addmv``/``baddbmm``/``addbmm``: ``beta * self + alpha * (m1 @ m2)``."""
    _, beta = _arg(op, args, kwargs, "beta")
    _, alpha = _arg(op, args, kwargs, "alpha")
    prod = args[1] @ args[2]
    if op.name.rstrip("_") == "addbmm":
        prod = prod.sum(0)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        out = prod
    else:
        out = prod + (args[0] * beta if beta != 1 else args[0])
    if op._is_inplace:
        if not is_batched_at(args[0], info.level):
            raise RuntimeError(_INPLACE_MSG)
        return args[0].copy_(out)
    return out


RULES["matmul"] = _matmul
for _name in ("mm", "bmm", "mv", "dot"):
    RULES[_name] = _mm_checked
for _name in ("addmm", "addmv", "baddbmm", "addbmm", "addmm_", "addmv_", "baddbmm_", "addbmm_"):
    RULES[_name] = _addmm_like


# -- convolution -----------------------------------------------------------------------------
def _convolution(op, info, args, kwargs):
    """``convolution``: batched inputs fold into the conv's batch; batched weights into its
    groups (one group set per example)."""
    level, size = info.level, info.size
    names = ("input", "weight", "bias", "stride", "padding", "dilation", "transposed",
             "output_padding", "groups")
    vals = [_arg(op, args, kwargs, n)[1] for n in names]
    x, w, b = vals[:3]
    xb, wb, bb = (is_batched_at(t, level) for t in (x, w, b))
    rest = vals[3:8]
    groups = vals[8]
    unbatched_input = x.dim() == w.dim() - 1
    if not wb and not bb:
        v = front(x)
        if unbatched_input:
            return wrap(op(v, w, b, *rest, groups), 0, level)
        n = v.shape[1]
        out = op(v.reshape(size * n, *v.shape[2:]), w, b, *rest, groups)
        return wrap(out.reshape(size, n, *out.shape[1:]), 0, level)
    v = _bfront(x, level, size)  # (B, [N,] C, *sp)
    if unbatched_input:
        v = v.unsqueeze(1)
    n, c = v.shape[1], v.shape[2]
    v = v.movedim(0, 1).reshape(n, size * c, *v.shape[3:])  # (N, B*C, *sp)
    wv = _bfront(w, level, size)  # (B, O, C/g, *k)
    wv = wv.reshape(size * wv.shape[1], *wv.shape[2:])  # transposed: (B*C, O/g, *k)
    bv = None
    if b is not None:
        bv = _bfront(b, level, size).reshape(-1)
    out = op(v, wv, bv, *rest, groups * size)  # (N, B*O, *sp')
    o = out.shape[1] // size
    out = out.reshape(n, size, o, *out.shape[2:]).movedim(1, 0)  # (B, N, O, *sp')
    return wrap(out.squeeze(1) if unbatched_input else out, 0, level)


RULES["convolution"] = _convolution


# -- indexing and joining --------------------------------------------------------------------
def _gather(op, info, args, kwargs):
    level, size = info.level, info.size
    x = args[0]
    where, d = _arg(op, args, kwargs, "dim")
    _, index = _arg(op, args, kwargs, "index")
    a, k = list(args), dict(kwargs)
    a[0] = _bfront(x, level, size)
    _set(a, k, where, _wrap_dim(d, x.dim()) + 1)
    iw, _ = _arg(op, args, kwargs, "index")
    _set(a, k, iw, _bfront(index, level, size))
    return wrap(op(*a, **k), 0, level)


def _index(op, info, args, kwargs):
    """Advanced indexing ``self[indices]`` per example."""
    level, size = info.level, info.size
    x, indices = args[0], list(args[1])
    if any(t is not None and t.dtype.name == "bool" for t in indices):
        raise RuntimeError("vmap: We do not support batching operators that can output "
                           "dynamic shape. Attempted to vmap over aten::index (boolean mask).")
    batched_idx = any(is_batched_at(t, level) for t in indices if t is not None)
    present = [i for i, t in enumerate(indices) if t is not None]
    adjacent = present == list(range(present[0], present[-1] + 1)) if present else True
    if not batched_idx and adjacent:
        return wrap(op(front(x), [None, *indices]), 0, level)
    if not present:
        return NotImplemented
    # NOTE [Indexed dims next to the batch]: the indexed dims move right after the batch and
    # an arange over the batch joins the indices, so the result is (B, *index, *other dims);
    # torch puts the index block where the indexed dims were when they are adjacent.
    rank = max(indices[i].dim() for i in present)
    others = [d for d in range(x.dim()) if d not in present]
    vx = _bfront(x, level, size).permute([0, *[d + 1 for d in present],
                                          *[d + 1 for d in others]])
    idx = [_pad_batch(front(indices[i]), rank) if is_batched_at(indices[i], level)
           else indices[i] for i in present]
    arange = _op("aten::arange")(size).reshape(size, *([1] * rank))
    out = op(vx, [arange, *idx])
    if adjacent and present[0] > 0:
        block = list(range(1, 1 + rank))
        out = out.movedim(block, [b + present[0] for b in block])
    return wrap(out, 0, level)


def _pad_batch(v, rank: int):
    """Size-1 dims after the batch dim of ``v`` until it has ``rank`` dims past the batch."""
    while v.dim() < rank + 1:
        v = v.unsqueeze(1)
    return v


def _cat_like(op, info, args, kwargs):
    level, size = info.level, info.size
    tensors = list(args[0])
    where, d = _arg(op, args, kwargs, "dim")
    logical = next(t for t in tensors if is_batched_at(t, level))
    rank = logical.dim() + (1 if op.name == "stack" else 0)
    vals = [_bfront(t, level, size) if t.dim() or op.name == "stack" else t for t in tensors]
    a, k = list(args), dict(kwargs)
    a[0] = vals
    _set(a, k, where, _wrap_dim(d, rank) + 1)
    return wrap(op(*a, **k), 0, level)


RULES.update({"gather": _gather, "index": _index, "cat": _cat_like, "stack": _cat_like})

# Operators acting on trailing dims or elementwise along the leading ones: run on the value.
for _name in ("_softmax_backward_data", "_log_softmax_backward_data",
              "constant_pad_nd"):
    RULES.setdefault(_name, _self_only)

from ember.func import _rules_index, _rules_math, _rules_spatial  # noqa: E402, F401  (they add to RULES)
