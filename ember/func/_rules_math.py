"""Batching rules for FFTs, complex views, triangular parts and linear algebra.

These kernels act on trailing dims (or on listed ones) and take leading batch dims natively,
so the batch rides in front of each example's dims.
"""

from __future__ import annotations

from ember.func._batched import front, is_batched_at, wrap
from ember.func._rules import (
    RULES,
    _arg,
    _bfront,
    _dim_rule,
    _lift,
    _only_self_batched,
    _op,
    _wrap_dim,
)


def _trailing(op, info, args, kwargs):
    """Operators on the example's trailing dims, with no other batched tensor: on the value."""
    if not _only_self_batched(args, kwargs, info.level):
        return NotImplemented
    out = op(front(args[0]), *args[1:], **kwargs)
    return args[0] if op._is_inplace else _lift(out, info.level)


for _name in ("view_as_real", "view_as_complex", "conj_physical",
              "tril", "triu", "tril_", "triu_", "linalg_inv", "linalg_det",
              "linalg_slogdet", "logdet", "linalg_cholesky",
              "linalg_qr", "linalg_svd", "linalg_svdvals",
              "linalg_eigh", "linalg_eigvalsh", "linalg_lu_factor_ex",
              "linalg_lu", "linalg_pinv", "linalg_matrix_power", "linalg_matrix_exp",
              "_lu_pivots_to_permutation", "linalg_ldl_factor_ex"):
    RULES[_name] = _trailing

for _name in ("_fft_c2c", "_fft_r2c", "_fft_c2r"):
    RULES[_name] = _dim_rule("dim")
RULES["linalg_vector_norm"] = _dim_rule("dim", none="all")
RULES["linalg_matrix_norm"] = _dim_rule("dim")


def _pad_to(v, rank: int):
    """Size-1 dims after the batch dim until ``v`` (batch first) has ``rank`` dims."""
    while v.dim() < rank:
        v = v.unsqueeze(1)
    return v


def _solve_like(op, info, args, kwargs, a_name: str, b_name: str, matrix_rank_b: int):
    """``op(A, B)`` with batched ``A`` (square matrices) and/or ``B``: both batch first with
    their leading dims lined up; a per-example vector ``B`` gets a trailing unit dim."""
    level, size = info.level, info.size
    wa, a = _arg(op, args, kwargs, a_name)
    wb, b = _arg(op, args, kwargs, b_name)
    vector = matrix_rank_b == 1 and (b.dim() == 1 or (b.dim() == a.dim() - 1
                                                      and tuple(b.shape) == tuple(a.shape[:-1])))
    va, vb = _bfront(a, level, size), _bfront(b, level, size)
    if vector:
        vb = vb.unsqueeze(-1)
    rank = max(va.dim(), vb.dim())
    va, vb = _pad_to(va, rank), _pad_to(vb, rank)
    a2, k2 = list(args), dict(kwargs)
    for where, v in ((wa, va), (wb, vb)):
        if isinstance(where, int):
            a2[where] = v
        else:
            k2[where] = v
    out = op(*a2, **k2)
    return wrap(out.squeeze(-1) if vector else out, 0, level)


def _linalg_solve(op, info, args, kwargs):
    if kwargs.get("out") is not None or not kwargs.get("left", True):
        return NotImplemented
    return _solve_like(op, info, args, kwargs, "A", "B", 1)


def _triangular_solve(op, info, args, kwargs):
    return _solve_like(op, info, args, kwargs, "A", "B", 2)


RULES["linalg_solve"] = _linalg_solve
RULES["_linalg_triangular_solve"] = _triangular_solve


def _outer(op, info, args, kwargs):
    """``outer(a, b)`` of two vectors per example: a broadcast product."""
    level, size = info.level, info.size
    a, b = args[0], args[1]
    if a.dim() != 1 or b.dim() != 1:
        return NotImplemented
    va = front(a).unsqueeze(-1) if is_batched_at(a, level) else a.unsqueeze(-1)
    vb = front(b).unsqueeze(-2) if is_batched_at(b, level) else b.unsqueeze(-2)
    out = _op("aten::mul.Tensor")(va, vb)
    if out.dim() == 2:  # neither batched at this level cannot happen; kept for shape safety
        out = out.unsqueeze(0).expand(size, *out.shape)
    return wrap(out, 0, level)


def _trace(op, info, args, kwargs):
    if not _only_self_batched(args, kwargs, info.level):
        return NotImplemented
    return wrap(front(args[0]).diagonal(0, 1, 2).sum(-1), 0, info.level)


def _diag(op, info, args, kwargs):
    """``diag``: a vector's diagonal matrix or a matrix's diagonal, per example."""
    if not _only_self_batched(args, kwargs, info.level) or kwargs.get("out") is not None:
        return NotImplemented
    x = args[0]
    _, k = _arg(op, args, kwargs, "diagonal")
    v = front(x)
    if x.dim() == 1:
        return wrap(_op("aten::diag_embed")(v, k, -2, -1), 0, info.level)
    if x.dim() == 2:
        return wrap(v.diagonal(k, 1, 2), 0, info.level)
    return NotImplemented


def _diag_embed(op, info, args, kwargs):
    if not _only_self_batched(args, kwargs, info.level):
        return NotImplemented
    x = args[0]
    _, offset = _arg(op, args, kwargs, "offset")
    _, d1 = _arg(op, args, kwargs, "dim1")
    _, d2 = _arg(op, args, kwargs, "dim2")
    r = x.dim() + 1
    d1, d2 = d1 % r + 1, d2 % r + 1
    return wrap(op(front(x), offset, d1, d2), 0, info.level)


RULES.update({"outer": _outer, "trace": _trace, "diag": _diag, "diag_embed": _diag_embed})


def _conj(op, info, args, kwargs):
    """``_conj``: the conjugate values (the lazy conjugate bit does not cross the batch)."""
    return wrap(_op("aten::conj_physical")(front(args[0])), 0, info.level)


def _cross(op, info, args, kwargs):
    """``cross``/``linalg_cross`` of broadcast operands along a logical dim."""
    level, size = info.level, info.size
    a, b = args[0], args[1]
    if kwargs.get("out") is not None:
        return NotImplemented
    if a.dim() != b.dim():
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    _, d = _arg(op, args, kwargs, "dim")
    rank = a.dim()
    if d is None:  # the first dim of size 3 of the broadcast shape (cross's old default)
        shape = [max(x, y) for x, y in zip((1,) * (rank - a.dim()) + tuple(a.shape),
                                           (1,) * (rank - b.dim()) + tuple(b.shape))]
        if 3 not in shape:
            return NotImplemented
        d = shape.index(3)
    d = _wrap_dim(d, rank) + 1
    va = _pad_to(_bfront(a, level, size), rank + 1)
    vb = _pad_to(_bfront(b, level, size), rank + 1)
    return wrap(_op("aten::linalg_cross")(va, vb, dim=d), 0, level)


def _roll(op, info, args, kwargs):
    if not _only_self_batched(args, kwargs, info.level):
        return NotImplemented
    x = args[0]
    _, shifts = _arg(op, args, kwargs, "shifts")
    _, dims = _arg(op, args, kwargs, "dims")
    v = front(x)
    if not isinstance(shifts, list | tuple):
        shifts = [shifts]
    if dims is None or (isinstance(dims, list | tuple) and not dims):
        flat = v.reshape(info.size, -1)
        return wrap(op(flat, shifts, [1]).reshape(v.shape), 0, info.level)
    if not isinstance(dims, list | tuple):
        dims = [dims]
    return wrap(op(v, shifts, [_wrap_dim(e, x.dim()) + 1 for e in dims]), 0, info.level)


RULES.update({"_conj": _conj, "cross": _cross, "linalg_cross": _cross, "roll": _roll})


def _vdot(op, info, args, kwargs):
    """``vdot`` of two vectors per example: ``sum(conj(a) * b)``."""
    level, size = info.level, info.size
    a, b = args[0], args[1]
    if kwargs.get("out") is not None or a.dim() != 1 or b.dim() != 1:
        return NotImplemented
    va = _bfront(a, level, size)
    if va.is_complex():
        va = _op("aten::conj_physical")(va)
    return wrap((va * _bfront(b, level, size)).sum(-1), 0, level)


RULES["vdot"] = _vdot


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _einsum(op, info, args, kwargs):
    """``einsum``: the batch gets a letter of its own on each batched operand and the output."""
    level = info.level
    _, equation = _arg(op, args, kwargs, "equation")
    tensors = args[1:]  # the operands follow the equation
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        tensors = tensors[0]
    eq = equation.replace(" ", "")
    if "->" not in eq or kwargs.get("path") is not None:
        return NotImplemented
    lhs, out = eq.split("->")
    terms = lhs.split(",")
    if len(terms) != len(tensors):
        return NotImplemented
    z = next(c for c in _LETTERS if c not in eq)
    vals, new_terms = [], []
    for term, t in zip(terms, tensors):
        if is_batched_at(t, level):
            vals.append(front(t))
            new_terms.append(z + term)
        else:
            vals.append(t)
            new_terms.append(term)
    result = op(f"{','.join(new_terms)}->{z}{out}", *vals)
    return wrap(result, 0, level)


def _tensordot(op, info, args, kwargs):
    """``tensordot`` per example, written as an ``einsum`` (which batches)."""
    a, b = args[0], args[1]
    _, dims = _arg(op, args, kwargs, "dims")
    if kwargs.get("out") is not None:
        return NotImplemented
    if isinstance(dims, int):
        da, db = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
    da = [_wrap_dim(d, a.dim()) for d in da]
    db = [_wrap_dim(d, b.dim()) for d in db]
    if len(da) != len(db) or a.dim() + b.dim() > len(_LETTERS) - 1:
        return NotImplemented
    la = list(_LETTERS[:a.dim()])
    lb = list(_LETTERS[a.dim():a.dim() + b.dim()])
    for i, j in zip(da, db):
        lb[j] = la[i]
    out = [c for i, c in enumerate(la) if i not in da] + [c for j, c in enumerate(lb)
                                                          if j not in db]
    return _op("aten::einsum")(f"{''.join(la)},{''.join(lb)}->{''.join(out)}", a, b)


def _kron(op, info, args, kwargs):
    """``kron`` per example: interleaved broadcast product, then each pair of dims merged."""
    level, size = info.level, info.size
    a, b = args[0], args[1]
    if kwargs.get("out") is not None:
        return NotImplemented
    r = max(a.dim(), b.dim())
    sa = (1,) * (r - a.dim()) + tuple(a.shape)
    sb = (1,) * (r - b.dim()) + tuple(b.shape)
    va = _bfront(a, level, size).reshape(size, *[x for s in sa for x in (s, 1)])
    vb = _bfront(b, level, size).reshape(size, *[x for s in sb for x in (1, s)])
    prod = va * vb
    return wrap(prod.reshape(size, *[x * y for x, y in zip(sa, sb)]), 0, level)


RULES.update({"einsum": _einsum, "tensordot": _tensordot, "kron": _kron})


def _layer_norm(op, info, args, kwargs):
    """``native_layer_norm``: normalise the batch's values, then scale and shift by the
    (batched or shared) weight and bias over the trailing normalised dims."""
    level, size = info.level, info.size
    x, shape, weight, bias, eps = (_arg(op, args, kwargs, n)[1] for n in
                                   ("input", "normalized_shape", "weight", "bias", "eps"))
    if _only_self_batched(args, kwargs, level):
        return _lift(op(front(x), shape, weight, bias, eps), level)
    out, mean, rstd = op(_bfront(x, level, size), shape, None, None, eps)
    rank = out.dim()
    if weight is not None:
        out = out * (_pad_to(front(weight), rank) if is_batched_at(weight, level) else weight)
    if bias is not None:
        out = out + (_pad_to(front(bias), rank) if is_batched_at(bias, level) else bias)
    return wrap(out, 0, level), wrap(mean, 0, level), wrap(rstd, 0, level)


RULES["native_layer_norm"] = _layer_norm


def _tolerances(*names: str):
    """Matrix operators on the trailing two dims with tolerance arguments that may be batched
    tensors (broadcast against the example's leading dims)."""
    def rule(op, info, args, kwargs):
        level, size = info.level, info.size
        if kwargs.get("out") is not None:
            return NotImplemented
        a = args[0]
        k = dict(kwargs)
        a2 = list(args)
        for name in names:
            where, t = _arg(op, args, kwargs, name)
            if is_batched_at(t, level):
                v = _pad_to(front(t), a.dim() - 2 + 1)
                if isinstance(where, int):
                    a2[where] = v
                else:
                    k[where] = v
        a2[0] = _bfront(a, level, size)
        return _lift(op(*a2, **k), level)

    return rule


RULES["linalg_matrix_rank"] = _tolerances("atol", "rtol", "tol")
RULES["linalg_pinv"] = _tolerances("rcond", "atol", "rtol")
