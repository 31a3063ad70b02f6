"""``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``.

NOTE [Transforms over levels]
Autograd only ever sees plain tensors (NOTE [Batched sits above autograd]). A transform
called inside ``vmap`` therefore *materializes* each differentiated input: the plain tensor
under its wrappers, with one leading dimension per active ``vmap`` level (expanded where the
input is not batched at that level, so every example owns its copy). That tensor becomes the
autograd leaf, and the function sees it re-wrapped at every level. Because batching rules keep
examples independent, differentiating the sum over all examples gives each example its own
gradient: ``vmap(grad(f))`` is per-sample gradients. Transforms inside transforms keep the
graph (``create_graph``) so the outer one can differentiate the inner one's result.
``jvp`` and ``jacfwd`` use forward-mode AD (``ember.autograd.forward_ad``).
"""

from __future__ import annotations

import functools
import threading

from ember.autograd import engine as _engine
from ember.autograd.grad_mode import enable_grad
from ember.dispatch.dispatcher import get_op
from ember.func._batched import BatchedTensor, current_levels, wrap
from ember.func._pytree import tree_flatten, tree_unflatten
from ember.tensor import Tensor

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian"]


class _Depth(threading.local):
    def __init__(self):
        self.n = 0  # transforms whose function is running on this thread


_depth = _Depth()


def _strip(x):
    """The plain tensor under ``x``'s wrappers and, per level, its batch dim there."""
    if x.__class__ is not BatchedTensor:
        return x, {}
    p, dims = _strip(x._value)
    taken = set(dims.values())
    free = [i for i in range(p.dim()) if i not in taken]
    dims = dict(dims)
    dims[x._level] = free[x._bdim]
    return p, dims


def materialize(x: Tensor, levels) -> Tensor:
    """``x`` as a plain tensor of shape ``(B_1, ..., B_L, *x.shape)`` over ``levels``."""
    p, dims = _strip(x)
    present = [lv for lv in levels if lv.level in dims]
    if present:
        p = p.movedim([dims[lv.level] for lv in present], list(range(len(present))))
    for i, lv in enumerate(levels):
        if lv.level not in dims:
            p = p.unsqueeze(i)
            shape = list(p.shape)
            shape[i] = lv.size
            p = p.expand(shape)
    return p


def rewrap(p: Tensor, levels) -> Tensor:
    """``p`` (batch dims first, one per level) seen at every level: the inverse of
    :func:`materialize`."""
    for lv in levels:
        p = wrap(p, 0, lv.level)
    return p


def _leaf(p: Tensor) -> Tensor:
    """An autograd input for ``p``: itself in the graph when it already is, else a new leaf."""
    if p.requires_grad:
        return p.view_as(p)
    leaf = p.detach().requires_grad_()
    tangents = p.__dict__.get("_fw_tangents")  # forward AD sees through the new leaf
    if tangents is not None:
        leaf.__dict__["_fw_tangents"] = tangents
    return leaf


def _argnums_tuple(argnums, nargs: int, api: str) -> tuple[int, ...]:
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    if not nums:
        raise RuntimeError(f"{api}: argnums must be non-empty")
    out = []
    for n in nums:
        if not isinstance(n, int):
            raise RuntimeError(f"{api}: argnums must be int or Tuple[int, ...], got: "
                               f"{type(n)}")
        if not -nargs <= n < nargs:
            raise RuntimeError(f"Got argnum={n}, but only {nargs} positional inputs")
        out.append(n % nargs)
    return tuple(out)


class _Prepared:
    """The differentiated inputs of one transform call: leaves and how to rebuild args."""

    def __init__(self, args: tuple, nums: tuple[int, ...], levels):
        self.levels = levels
        self.leaves: list[Tensor] = []
        self.specs = []
        self.args = list(args)
        for i in nums:
            flat, spec = tree_flatten(args[i])
            new = []
            for t in flat:
                if not isinstance(t, Tensor):
                    raise RuntimeError(f"Expected the differentiated arguments to be Tensors; "
                                       f"got {type(t)}")
                leaf = _leaf(materialize(t, levels))
                self.leaves.append(leaf)
                new.append(rewrap(leaf, levels))
            self.specs.append((i, spec, len(flat)))
            self.args[i] = tree_unflatten(new, spec)
        self.nested = _depth.n > 0 or any(
            lf.grad_fn is not None for lf in self.leaves)

    def call(self, func, kwargs):
        with enable_grad():
            _depth.n += 1
            try:
                return func(*self.args, **kwargs)
            finally:
                _depth.n -= 1

    def unflatten(self, flat: list, single: bool):
        """Per differentiated argument, the gradients in its structure."""
        out, k = [], 0
        for _, spec, n in self.specs:
            out.append(tree_unflatten([rewrap(g, self.levels) for g in flat[k:k + n]], spec))
            k += n
        return out[0] if single else tuple(out)


def _grads(outs, leaves, grad_outputs, create_graph: bool, retain_graph: bool = False):
    """``autograd.grad`` of the outputs that require grad; zeros where nothing flows."""
    pairs = [(o, g) for o, g in zip(outs, grad_outputs) if o.requires_grad]
    if pairs:
        got = _engine.grad([o for o, _ in pairs], leaves, [g for _, g in pairs],
                           retain_graph=retain_graph or create_graph,
                           create_graph=create_graph, allow_unused=True)
    else:
        got = [None] * len(leaves)
    return [g if g is not None else _zeros_like(lf) for g, lf in zip(got, leaves)]


def _zeros_like(t: Tensor) -> Tensor:
    return get_op("aten::zeros_like")(t)


def _ones_like(t: Tensor) -> Tensor:
    return get_op("aten::ones_like")(t)


def _split_aux(out, has_aux: bool, api: str):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{api}(f)(*args): output of function f should be a tuple: "
                           f"(output, aux) if has_aux is True")
    return out


def _result(p: Tensor, levels, nested: bool) -> Tensor:
    if not nested:
        tangents = p.__dict__.get("_fw_tangents")
        p = p.detach()
        if tangents is not None:
            p.__dict__["_fw_tangents"] = tangents
    return rewrap(p, levels)


def grad_and_value(func, argnums=0, has_aux: bool = False):
    """``func``'s gradient with respect to ``argnums`` and its value
    (``torch.func.grad_and_value``).

    Returns a function giving ``(gradient, value)``, or ``(gradient, (value, aux))`` with
    ``has_aux``. The gradient has each differentiated argument's structure; a tuple of them
    when ``argnums`` is a tuple. Works inside ``vmap`` (per-example gradients) and inside
    other transforms (higher derivatives).

    Raises:
        RuntimeError: ``func`` returns a non-tensor or a tensor with more than one element
            (torch's messages); bad ``argnums``.

    Example:
        >>> g, v = grad_and_value(lambda x: (x * x).sum())(ember.tensor([1.0, 2.0]))
        >>> g, v
        (tensor([2., 4.]), tensor(5.))
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "grad_and_value")
        levels = list(current_levels())
        prep = _Prepared(args, nums, levels)
        out, aux = _split_aux(prep.call(func, kwargs), has_aux, "grad_and_value")
        if not isinstance(out, Tensor):
            raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                               f"Tensor, got {type(out)}")
        if out.dim() != 0:
            raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                               f"scalar Tensor, got tensor with {out.dim()} dims. Maybe you "
                               f"wanted to use the vjp or jacrev APIs instead?")
        p = materialize(out, levels)
        flat = _grads([p], prep.leaves, [_ones_like(p)], prep.nested)
        g = prep.unflatten(flat, not isinstance(argnums, tuple))
        value = _result(p, levels, prep.nested)
        return (g, (value, aux)) if has_aux else (g, value)

    return wrapper


def grad(func, argnums=0, has_aux: bool = False):
    """The gradient of a scalar function (``torch.func.grad``).

    ``grad(f)(x)`` is ``df/dx``; ``vmap(grad(f))(xs)`` gives one gradient per example;
    ``grad(grad(f))`` the second derivative. With ``has_aux``, ``f`` returns
    ``(output, aux)`` and the result is ``(gradient, aux)``.

    Example:
        >>> grad(lambda x: x.sin().sum())(ember.tensor([0.0]))
        tensor([1.])
    """
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


def vjp(func, *primals, has_aux: bool = False):
    """``func(*primals)`` and a function of cotangents giving vector-Jacobian products
    (``torch.func.vjp``).

    Returns ``(output, vjp_fn)`` (and ``aux`` with ``has_aux``); ``vjp_fn(cotangents)`` takes
    cotangents shaped like the output and returns one gradient per primal (a tuple).

    Example:
        >>> out, vjp_fn = vjp(lambda x: x * 3, ember.tensor([1.0, 2.0]))
        >>> vjp_fn(ember.tensor([1.0, 10.0]))
        (tensor([ 3., 30.]),)
    """
    levels = list(current_levels())
    prep = _Prepared(primals, tuple(range(len(primals))), levels)
    out, aux = _split_aux(prep.call(func, {}), has_aux, "vjp")
    flat_out, out_spec = tree_flatten(out)
    for o in flat_out:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"vjp(f, *primals): Expected f to be a function that has "
                               f"non-empty output and whose outputs are all Tensors; got "
                               f"{type(o)}")
    out_ps = [materialize(o, levels) for o in flat_out]

    def vjp_fn(cotangents, *, retain_graph: bool = True, create_graph: bool | None = None):
        flat_ct, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as "
                               f"pytree structure of outputs to the function. cotangents: "
                               f"{ct_spec}, primal output: {out_spec}")
        for k, (c, o) in enumerate(zip(flat_ct, flat_out)):
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[{k}] has a shape of "
                                   f"{c.shape} and output[{k}] has a shape of {o.shape}.")
        cts = [materialize(c, levels) for c in flat_ct]
        graph = prep.nested if create_graph is None else create_graph
        flat = _grads(out_ps, prep.leaves, cts, graph, retain_graph=retain_graph)
        return prep.unflatten(flat, False)

    results = tree_unflatten([_result(p, levels, prep.nested) for p in out_ps], out_spec)
    return (results, vjp_fn, aux) if has_aux else (results, vjp_fn)


def _check_jvp_args(primals, tangents):
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it "
                           "should be valid to call f(*primals).")
    if not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected tangents to be a tuple. E.g. "
                           "it should be valid to call f(*primals).")
    flat_p, spec_p = tree_flatten(primals)
    flat_t, spec_t = tree_flatten(tangents)
    if spec_p != spec_t:
        raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to have "
                           f"the same python structure. For example, if primals is a tuple of "
                           f"3 tensors, tangents also must be. Got primals with structure "
                           f"{spec_p} and tangents with structure {spec_t}")
    for p, t in zip(flat_p, flat_t):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to "
                               f"have the same shape; got {p.shape} and {t.shape}")
    return flat_t


def jvp(func, primals: tuple, tangents: tuple, *, strict: bool = False, has_aux: bool = False):
    """``func(*primals)`` and its Jacobian-vector product with ``tangents``
    (``torch.func.jvp``): ``(output, jvp_out)``, plus ``aux`` with ``has_aux``.

    Forward-mode AD: the primals become dual tensors (``ember.autograd.forward_ad``) and each
    operator carries its tangent forward.

    Example:
        >>> jvp(lambda x: x * x, (ember.tensor([3.0]),), (ember.tensor([1.0]),))
        (tensor([9.]), tensor([6.]))
    """
    from ember.autograd import forward_ad as fwAD

    flat_t = _check_jvp_args(primals, tangents)
    flat_p, spec = tree_flatten(primals)
    if current_levels():
        return _jvp_by_vjp(func, primals, flat_t, has_aux)
    with fwAD.dual_level():
        duals = [fwAD.make_dual(p, t) for p, t in zip(flat_p, flat_t)]
        out, aux = _split_aux(func(*tree_unflatten(duals, spec)), has_aux, "jvp")
        flat_out, out_spec = tree_flatten(out)
        primal_out, tangent_out = [], []
        for o in flat_out:
            if not isinstance(o, Tensor):
                raise RuntimeError(f"jvp(f, primals, tangents): Expected f(*primals) to return "
                                   f"only tensors, got unsupported type {type(o)}")
            po, to = fwAD.unpack_dual(o)
            primal_out.append(po)
            tangent_out.append(to if to is not None else _zeros_like(po))
    res = (tree_unflatten(primal_out, out_spec), tree_unflatten(tangent_out, out_spec))
    return (*res, aux) if has_aux else res


def _jvp_by_vjp(func, primals: tuple, flat_t: list, has_aux: bool):
    """``jvp`` inside ``vmap``: forward AD's tangents live on plain tensors, which the batching
    rules re-create, so here the JVP comes from two backward passes over the materialized batch
    (``v = J^T u`` is linear in ``u``, and ``d<v, t>/du = J t``)."""
    levels = list(current_levels())
    prep = _Prepared(primals, tuple(range(len(primals))), levels)
    out, aux = _split_aux(prep.call(func, {}), has_aux, "jvp")
    flat_out, out_spec = tree_flatten(out)
    out_ps = [materialize(o, levels) for o in flat_out]
    us = [_zeros_like(p).requires_grad_() for p in out_ps]
    pairs = [(p, u) for p, u in zip(out_ps, us) if p.requires_grad]
    gs = _engine.grad([p for p, _ in pairs], prep.leaves, [u for _, u in pairs],
                      create_graph=True, allow_unused=True) if pairs else []
    tangents = [materialize(t, levels) for t in flat_t]
    used = [(g, t) for g, t in zip(gs, tangents) if g is not None and g.requires_grad]
    jv = _engine.grad([g for g, _ in used], us, [t for _, t in used], allow_unused=True,
                      create_graph=prep.nested) if used else [None] * len(us)
    tangent_out = [rewrap(j if j is not None else _zeros_like(p), levels)
                   for j, p in zip(jv, out_ps)]
    res = (tree_unflatten([_result(p, levels, prep.nested) for p in out_ps], out_spec),
           tree_unflatten(tangent_out, out_spec))
    return (*res, aux) if has_aux else res


def jacrev(func, argnums=0, *, has_aux: bool = False, chunk_size=None):
    """The Jacobian by reverse mode, one vector-Jacobian product per output element
    (``torch.func.jacrev``): shape ``output.shape + input.shape``.

    The products run one backward pass at a time over the retained graph, so memory is that
    of ``chunk_size=1`` whatever ``chunk_size`` is (it is validated as torch's).

    Example:
        >>> jacrev(lambda x: x * x)(ember.tensor([1.0, 2.0]))
        tensor([[2., 0.],
                [0., 4.]])
    """
    if chunk_size is not None and chunk_size <= 0:
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "jacrev")
        levels = list(current_levels())
        prep = _Prepared(args, nums, levels)
        out, aux = _split_aux(prep.call(func, kwargs), has_aux, "jacrev")
        flat_out, out_spec = tree_flatten(out)
        nl = len(levels)
        jac_trees = []
        for o in flat_out:
            p = materialize(o, levels)
            shape = tuple(o.shape)
            n = 1
            for s in shape:
                n *= s
            eye = get_op("aten::eye")(max(n, 1), dtype=p.dtype)
            rows = []
            for j in range(n):
                ct = eye[j].reshape(shape).expand(tuple(p.shape))
                rows.append(_grads([p], prep.leaves, [ct], prep.nested, retain_graph=True))
            per_leaf = []
            for k, lf in enumerate(prep.leaves):
                in_shape = tuple(lf.shape[nl:])
                if n:
                    j = get_op("aten::stack")([r[k] for r in rows], nl)
                else:
                    j = get_op("aten::zeros")((*lf.shape[:nl], 0, *in_shape), dtype=lf.dtype)
                j = j.reshape((*lf.shape[:nl], *shape, *in_shape))
                per_leaf.append(j)
            jac_trees.append(prep.unflatten(per_leaf, not isinstance(argnums, tuple)))
        result = tree_unflatten(jac_trees, out_spec)
        return (result, aux) if has_aux else result

    return wrapper


def jacfwd(func, argnums=0, has_aux: bool = False, *, randomness: str = "error"):
    """The Jacobian by forward mode, one Jacobian-vector product per input element
    (``torch.func.jacfwd``): shape ``output.shape + input.shape``.

    Example:
        >>> jacfwd(lambda x: x.sin())(ember.tensor([0.0, 0.0]))
        tensor([[1., 0.],
                [0., 1.]])
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "jacfwd")
        flat_in, in_specs = [], []
        for i in nums:
            flat, spec = tree_flatten(args[i])
            flat_in += flat
            in_specs.append((i, spec, len(flat)))

        def rebuilt(flat):
            a, k = list(args), 0
            for i, spec, n in in_specs:
                a[i] = tree_unflatten(flat[k:k + n], spec)
                k += n
            return tuple(a)

        def f_flat(*flat):
            return func(*rebuilt(list(flat)), **kwargs)

        columns: list[list] = []  # per input leaf: per element, the flat output tangents
        out = aux = out_spec = None
        for k, x in enumerate(flat_in):
            n = x.numel()
            cols = []
            for e in range(n):
                tangents = [_zeros_like(t) for t in flat_in]
                tangents[k] = _one_hot(x, e)
                res = jvp(f_flat, tuple(flat_in), tuple(tangents), has_aux=has_aux)
                out, t_out = res[0], res[1]
                aux = res[2] if has_aux else None
                flat_t, out_spec = tree_flatten(t_out)
                cols.append(flat_t)
            columns.append(cols)
        if out_spec is None:
            out = f_flat(*flat_in)
            out, aux = _split_aux(out, has_aux, "jacfwd")
            out_spec = tree_flatten(out)[1]
        flat_out = tree_flatten(out)[0]
        jac_trees = []
        for j, o in enumerate(flat_out):
            per_leaf = []
            for k, x in enumerate(flat_in):
                cols = [c[j] for c in columns[k]]
                if cols:
                    m = get_op("aten::stack")(cols, o.dim())
                else:
                    m = get_op("aten::zeros")((*o.shape, 0), dtype=o.dtype)
                per_leaf.append(m.reshape((*o.shape, *x.shape)))
            trees, q = [], 0
            for _, spec, n in in_specs:
                trees.append(tree_unflatten(per_leaf[q:q + n], spec))
                q += n
            jac_trees.append(trees[0] if not isinstance(argnums, tuple) else tuple(trees))
        result = tree_unflatten(jac_trees, out_spec)
        return (result, aux) if has_aux else result

    return wrapper


def _one_hot(x: Tensor, e: int) -> Tensor:
    t = get_op("aten::zeros")(x.numel(), dtype=x.dtype)
    t[e] = 1
    return t.reshape(tuple(x.shape))


def hessian(func, argnums=0):
    """The Hessian, ``jacfwd(jacrev(func))`` (``torch.func.hessian``).

    Example:
        >>> hessian(lambda x: (x ** 3).sum())(ember.tensor([1.0, 2.0]))
        tensor([[ 6.,  0.],
                [ 0., 12.]])
    """
    return jacfwd(jacrev(func, argnums), argnums)
