"""Higher-level derivatives built on the engine: vjp, jvp, jacobian, hessian, hvp, vhp.

Forward-mode products (``jvp``) use the double-vjp trick: the vjp is linear in its cotangent,
so differentiating it with respect to that cotangent yields the Jacobian-vector product.
"""

from __future__ import annotations

from ember.autograd._ops import op as aten
from ember.autograd.engine import grad as autograd_grad
from ember.autograd.grad_mode import enable_grad
from ember.tensor import Tensor

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _tuple(x):
    return (x, False) if isinstance(x, tuple | list) else ((x,), True)


def _prepare(inputs, create_graph: bool):
    return tuple(t.detach().requires_grad_(True) if not create_graph or not t.requires_grad
                 else t.view_as(t) for t in inputs)


def _zeros_for_none(grads, refs):
    return tuple(aten("zeros_like")(r) if g is None else g for g, r in zip(grads, refs))


def vjp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T J)``: the output and the vector-Jacobian product.

    Example:
        >>> x = ember.tensor([1.0, 2.0])
        >>> out, grad = ember.autograd.functional.vjp(lambda t: t * t, x, ember.ones(2))
        >>> out, grad
        (tensor([1., 4.]), tensor([2., 4.]))
    """
    ins, single_in = _tuple(inputs)
    with enable_grad():
        ins = _prepare(ins, create_graph)
        outs = func(*ins)
        outs_t, single_out = _tuple(outs)
        if v is None:
            if any(o.numel() != 1 for o in outs_t):
                raise RuntimeError("The vector v can only be None if the user-provided function "
                                   "returns a single Tensor with a single element.")
            v_t = None
        else:
            v_t, _ = _tuple(v)
        grads = autograd_grad(outs_t, ins, v_t, create_graph=create_graph, allow_unused=True)
    grads = _zeros_for_none(grads, ins)
    out = outs if create_graph else _detach(outs)
    return out, (grads[0] if single_in else grads)


def _detach(x):
    if isinstance(x, Tensor):
        return x.detach()
    return tuple(t.detach() for t in x)


def jvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), J v)``: the output and the Jacobian-vector product.

    Example:
        >>> x = ember.tensor([1.0, 2.0])
        >>> ember.autograd.functional.jvp(lambda t: t * t, x, ember.tensor([1.0, 0.0]))
        (tensor([1., 4.]), tensor([2., 0.]))
    """
    ins, single_in = _tuple(inputs)
    v_t, _ = _tuple(v) if v is not None else (None, True)
    with enable_grad():
        ins = _prepare(ins, create_graph)
        outs = func(*ins)
        outs_t, single_out = _tuple(outs)
        dummies = tuple(aten("zeros_like")(o).requires_grad_(True) for o in outs_t)
        g = autograd_grad(outs_t, ins, dummies, create_graph=True, allow_unused=True)
        pairs = [(gi, vi) for gi, vi in zip(g, v_t) if gi is not None]
        if not pairs:
            jv = tuple(aten("zeros_like")(o) for o in outs_t)
        else:
            jv = autograd_grad(tuple(p[0] for p in pairs), dummies, tuple(p[1] for p in pairs),
                               create_graph=create_graph, allow_unused=True)
            jv = _zeros_for_none(jv, outs_t)
    out = outs if create_graph else _detach(outs)
    return out, (jv[0] if single_out else jv)


def jacobian(func, inputs, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode"):
    """The Jacobian of ``func`` at ``inputs`` (one row of vjps per output element).

    Example:
        >>> ember.autograd.functional.jacobian(lambda t: t * t, ember.tensor([1.0, 2.0]))
        tensor([[2., 0.],
                [0., 4.]])
    """
    ins, single_in = _tuple(inputs)
    with enable_grad():
        ins = _prepare(ins, create_graph)
        outs = func(*ins)
        outs_t, single_out = _tuple(outs)
        result = []
        for out in outs_t:
            rows = [[] for _ in ins]
            for j in range(out.numel()):
                g = aten("zeros_like")(out)
                g.reshape(-1)[j] = 1.0
                grads = autograd_grad(out, ins, g, retain_graph=True,
                                      create_graph=create_graph, allow_unused=True)
                for k, (gr, inp) in enumerate(zip(grads, ins)):
                    rows[k].append(aten("zeros_like")(inp) if gr is None else gr)
            per_input = tuple(
                (aten("stack")(r).reshape(tuple(out.shape) + tuple(inp.shape)) if r else
                 aten("zeros_like")(inp).reshape(tuple(out.shape) + tuple(inp.shape)))
                for r, inp in zip(rows, ins))
            result.append(per_input[0] if single_in else per_input)
    if not create_graph:
        result = [_detach_nested(r) for r in result]
    return result[0] if single_out else tuple(result)


def _detach_nested(x):
    if isinstance(x, Tensor):
        return x.detach()
    return tuple(_detach_nested(t) for t in x)


def hessian(func, inputs, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode"):
    """The Hessian of a scalar ``func`` at ``inputs``.

    Example:
        >>> ember.autograd.functional.hessian(lambda t: (t ** 3).sum(), ember.tensor([1.0, 2.0]))
        tensor([[ 6.,  0.],
                [ 0., 12.]])
    """
    ins, single_in = _tuple(inputs)

    def gradient(*args):
        out = func(*args)
        if out.numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor "
                               "with a single element.")
        grads = autograd_grad(out, args, create_graph=True, allow_unused=True)
        return _zeros_for_none(grads, args)[0] if single_in else _zeros_for_none(grads, args)

    return jacobian(gradient, ins[0] if single_in else ins, create_graph=create_graph)


def vhp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T H)`` for a scalar ``func``.

    Example:
        >>> f = lambda t: (t ** 3).sum()
        >>> ember.autograd.functional.vhp(f, ember.tensor([1.0, 2.0]), ember.ones(2))[1]
        tensor([ 6., 12.])
    """
    ins, single_in = _tuple(inputs)
    v_t, _ = _tuple(v)
    with enable_grad():
        ins = _prepare(ins, create_graph)
        out = func(*ins)
        g = autograd_grad(out, ins, create_graph=True, allow_unused=True)
        pairs = [(gi, vi, inp) for gi, vi, inp in zip(g, v_t, ins) if gi is not None]
        res = autograd_grad(tuple(p[0] for p in pairs), ins, tuple(p[1] for p in pairs),
                            create_graph=create_graph, allow_unused=True)
    res = _zeros_for_none(res, ins)
    out = out if create_graph else out.detach()
    return out, (res[0] if single_in else res)


def hvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), H v)``; equals ``vhp`` because the Hessian is symmetric.

    Example:
        >>> f = lambda t: (t ** 3).sum()
        >>> value, hvp = ember.autograd.functional.hvp(f, ember.tensor([1.0, 2.0]), ember.ones(2))
        >>> value, hvp
        (tensor(9.), tensor([ 6., 12.]))
    """
    return vhp(func, inputs, v, create_graph, strict)
