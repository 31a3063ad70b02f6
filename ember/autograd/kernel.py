"""The Autograd dispatch-key kernel and derivative registration.

NOTE [Recording an op]
The Autograd kernel of a differentiable op checks grad mode and whether any tensor input
requires grad; if not, it calls straight below itself. Otherwise it binds the call's
arguments by name, creates the op's backward Node (``<Op>Backward0``), records one edge per
tensor input, saves exactly the tensors the derivative rule declared (``save=``), runs the
op below autograd, and gives each floating output its ``grad_fn``. An in-place op rewrites
``self``'s history; on a view it also rebases the view's base (NOTE [In-place on views]).

A derivative rule is a plain function of ``(ctx, *grads)`` written with ember ops, so with
``create_graph=True`` the backward pass is itself recorded. ``ctx.<arg>`` is the call's
argument of that name (saved tensors are unpacked and version-checked), ``ctx.result`` the
saved output, ``ctx.shape_of(name)``/``ctx.dtype_of(name)`` the metadata of any tensor input, and
``ctx.needs_input_grad`` one bool per tensor input. It returns one gradient per tensor input
(a list for a tensor-list argument), or a single tensor when there is one input.
``ctx.stride_of(name)`` gives an input's strides when the rule declared ``strides=``.

NOTE [Conditional saves]
A rule saves only what the gradients it will compute read, as torch's derivatives do:
``save={"input": "other", "other": "input"}`` (mul) keeps ``input`` only when ``other`` needs a
gradient and ``other`` only when ``input`` does, so ``w * 2.0`` or ``x @ w`` with a constant
``x`` keeps nothing it will not read (activation memory; a saved-tensors pack hook sees only
real saves). The needs are known once the edges are made, so conditional saves are decided
just after the argument scan. ``grad_fn._saved_<name>`` answers under torch's schema names
(``self`` where ember's signature says ``input``): the saved value, None for a conditional
save whose condition did not hold, AttributeError for an argument the rule never saves.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import NamedTuple

from ember.autograd import anomaly
from ember.autograd._ops import op as aten
from ember.autograd.grad_mode import _grad
from ember.autograd.graph import Node, SavedTensor, _sequence, gradient_edge, save_input
from ember.core import dtype as _dt
from ember.core.dtype import FLOATING as _FLOATING
from ember.dispatch import AliasKey, Tag
from ember.dispatch.keys import AUTOGRAD_KEY_OF_DEVICE, DispatchKey
from ember.tensor import Tensor

__all__ = ["register_derivative", "OpNode", "NotImplementedNode", "mark_requires_grad"]

_RELEASED = ("Trying to backward through the graph a second time (or directly access saved "
             "tensors after they have already been freed). Saved intermediate values of the "
             "graph are freed when you call .backward() or autograd.grad(). Specify "
             "retain_graph=True if you need to backward through the graph a second time or if "
             "you need to access saved tensors after calling backward.")


def _camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.strip("_").split("_"))


def _binder(fn: Callable):
    """A fast ``(args, kwargs) -> {name: value}`` for ``fn``'s signature, defaults included."""
    names, var, defaults = [], None, {}
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind is p.VAR_POSITIONAL:
            var = p.name
        if p.default is not p.empty:
            defaults[p.name] = p.default
    n = len(names)

    def bind(args, kwargs):
        d = dict(defaults)
        d.update(zip(names, args))
        if var is not None:
            d[var] = args[n:]
        if kwargs:
            d.update(kwargs)
        return d

    # what ``_record`` inlines for positional calls of signatures without ``*args``
    bind.positional = (tuple(names), defaults) if var is None and "out" not in names else None

    return bind


class _Ctx:
    """What a derivative rule sees (see NOTE [Recording an op])."""

    __slots__ = ("_node",)

    def __init__(self, node: OpNode):
        self._node = node

    def __getattr__(self, name: str):
        node = self._node
        bound = node._bound
        if bound is None:
            raise RuntimeError(_RELEASED)
        if name == "result":
            res = node._result
            if isinstance(res, tuple):
                return tuple(r.unpack(node.name()) if r is not None else None for r in res)
            return res.unpack(node.name()) if res is not None else None
        if name.startswith("result") and name[6:].isdigit():  # one output: ``result1``
            res, i = node._result, int(name[6:])
            if isinstance(res, tuple) and i < len(res) and res[i] is not None:
                return res[i].unpack(node.name())
        try:
            value = bound[name]
        except KeyError:
            raise AttributeError(f"{node.name()}: argument {name!r} was not saved or does not "
                                 "exist") from None
        if value.__class__ is SavedTensor:
            return value.unpack(type(node).__name__)  # OpNode.name(), without the call
        if isinstance(value, list) and value and isinstance(value[0], SavedTensor):
            return [v.unpack(node.name()) for v in value]
        if value is _UNSAVED:
            raise AttributeError(f"{node.name()}: tensor argument {name!r} is not saved; add it "
                                 "to the rule's save=")
        if value is _NOT_NEEDED:
            raise AttributeError(f"{node.name()}: tensor argument {name!r} was saved only if "
                                 f"{' or '.join(type(node).op._autograd.conds[name])} needed "
                                 "a gradient")
        return value

    def stride_of(self, name: str):
        """Strides of tensor argument ``name`` at record time (the rule declares it in
        ``strides=``)."""
        try:
            return self._node._bound[name + ".stride"]
        except (KeyError, TypeError):
            raise AttributeError(f"{self._node.name()}: the strides of {name!r} were not "
                                 "recorded; add it to the rule's strides=") from None

    def shape_of(self, name: str):
        """Shape of tensor argument ``name`` at record time (a list for a tensor list)."""
        meta = self._node._meta_of[name]
        return [m[0] for m in meta] if isinstance(meta, list) else meta[0]

    def dtype_of(self, name: str):
        """dtype of tensor argument ``name`` at record time (a list for a tensor list)."""
        meta = self._node._meta_of[name]
        return [m[1] for m in meta] if isinstance(meta, list) else meta[1]

    def tensor_needs(self, name0: str, name1: str) -> tuple:
        """For arguments ``name0`` and ``name1`` (the first two tensor arguments when both are
        tensors): None where the argument is not a tensor, else whether it needs a gradient."""
        node = self._node
        meta_of = node._meta_of
        edges = node.next_functions
        if name0 in meta_of:
            return (edges[0][0] is not None,
                    edges[1][0] is not None if name1 in meta_of else None)
        return None, (edges[0][0] is not None if name1 in meta_of else None)

    @property
    def needs_input_grad(self) -> tuple:
        return tuple([e[0] is not None for e in self._node.next_functions])


_UNSAVED = object()  # a tensor argument the rule never reads
_NOT_NEEDED = object()  # a conditionally saved argument whose condition did not hold
_NO_EDGE = (None, 0)
_PLAIN_VALUES = frozenset((int, float, bool, str))
_SEQUENCES = (list, tuple)
_new = object.__new__


class OpNode(Node):
    """Backward node of a built-in op; subclasses are made per op by ``register_derivative``."""

    __slots__ = ("_bound", "_result", "_meta_of", "_structure", "_out_meta", "_flat")
    rule: Callable = None
    op = None
    saves_result = False
    saved_names: frozenset = frozenset()
    schema_names: dict = {}
    schema_types: dict = {}
    nondiff_outputs: frozenset = frozenset()  # outputs that never require grad (e.g. stats)

    def __getattr__(self, name: str):
        # ``grad_fn._saved_<arg>`` / ``_saved_result``: saved values for inspection, as in
        # torch, under torch's schema names (``MulBackward0._saved_self``)
        if name.startswith("_saved_"):
            return self._saved(name[len("_saved_"):], name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def _saved(self, arg: str, attr: str):
        cls = type(self)
        arg = cls.schema_names.get(arg, arg)
        if arg.startswith("result"):
            if not cls.saves_result:
                raise AttributeError(f"'{cls.__name__}' object has no attribute '{attr}'")
        else:
            bound = self._bound
            value = bound.get(arg, _UNSAVED) if bound is not None else None
            if value is _UNSAVED or arg.endswith(".stride"):
                raise AttributeError(f"'{cls.__name__}' object has no attribute '{attr}'")
            if value is _NOT_NEEDED:
                return None
        return _as_saved_by_torch(getattr(_Ctx(self), arg), cls.schema_types.get(arg))

    def apply(self, grads: tuple) -> tuple:
        if self._bound is None and self._released:
            if self._needs_saved():
                raise RuntimeError(_RELEASED)
        for g in grads:
            if g is None:
                grads = _materialize(self, grads)
                break
        ctx = _new(_Ctx)  # _Ctx(self), without the __init__ frame
        ctx._node = self
        out = type(self).rule(ctx, *grads)
        structure = self._structure
        if self._flat:
            if out.__class__ is tuple:
                if len(out) == len(structure):
                    return out
            elif out.__class__ is Tensor and len(structure) == 1:
                return (out,)
        return _flatten(out, structure, self.name())

    def _needs_saved(self) -> bool:
        return type(self).saves_anything

    def release_variables(self) -> None:
        if type(self).saves_anything:
            self._bound = None
            self._result = None
        self._released = True

    @property
    def _saved_tensors(self):
        return tuple(v for v in (self._bound or {}).values() if isinstance(v, SavedTensor))


def _materialize(node: OpNode, grads: tuple) -> tuple:
    metas = node._out_meta
    return tuple(g if g is not None else aten("zeros")(metas[i][0], dtype=metas[i][1])
                 for i, g in enumerate(grads))


def _flatten(out, structure, name: str) -> tuple:
    if not isinstance(out, tuple | list):
        out = (out,)
    if len(out) != len(structure):
        raise RuntimeError(f"function {name} returned an incorrect number of gradients "
                           f"(expected {len(structure)}, got {len(out)})")
    flat = []
    for g, n in zip(out, structure):
        if n is None:
            flat.append(g)
        else:
            flat.extend(g if g is not None else [None] * n)
    return tuple(flat)


class NotImplementedNode(Node):
    """Recorded for ops without a derivative rule: backward raises instead of being wrong."""

    __slots__ = ("op_name",)

    def apply(self, grads):
        raise RuntimeError(f"derivative for {self.op_name} is not implemented")


def _requires(t) -> bool:
    return t._requires_grad or t.grad_fn is not None


def mark_requires_grad(t: Tensor, node: Node, output_nr: int) -> None:
    """Attach ``node`` as ``t``'s history and give ``t`` (and its views) the autograd key."""
    t.grad_fn = node
    t._output_nr = output_nr
    t._ver.keys |= 1 << AUTOGRAD_KEY_OF_DEVICE[t._device.type]
    t._mkey = None


def _check_inplace(op_name: str, t: Tensor) -> None:
    if t._is_inference:
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not "
                           "allowed.You can make a clone to get a normal tensor before doing "
                           "inplace update.")
    if t.grad_fn is None and t._requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    base = t._base
    if base is not None and base.grad_fn is None and base._requires_grad:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    if t._creation_meta == 1 and t._base is not None:
        name, index = t.__dict__.get("_view_op", ("SplitBackward0", 0))
        raise RuntimeError(f"Output {index} of {name} is a view and is being modified "
                           "inplace. This view is the output of a function that returns "
                           "multiple views. Such functions do not allow the output views to be "
                           "modified inplace. You should replace the inplace operation by an "
                           "out-of-place one.")
    if t._creation_meta == 2 and _grad.enabled:
        raise RuntimeError("A view was created in no_grad mode and is being modified inplace "
                           "with grad mode enabled. Given that this use case is ambiguous and "
                           "error-prone, it is forbidden. You can clarify your code by moving "
                           "both the view and the inplace either both inside the no_grad block "
                           "(if you don't want the inplace to be tracked) or both outside (if "
                           "you want the inplace to be tracked).")


class _Recording(NamedTuple):
    """What ``_record`` needs to know about a differentiable op, computed once."""

    cls: type
    bind: Callable
    params: tuple
    now: frozenset  # tensor arguments saved as the arguments are scanned
    later: frozenset  # tensor arguments decided after the scan (conditions, in-place, strides)
    late: dict  # argument in ``later`` -> (record its strides, save it, condition or None)
    conds: dict  # argument -> names of which one must need a gradient for it to be saved
    save_result: bool
    inplace: bool
    which: frozenset | None  # outputs saved (None: all)
    positional: tuple | None


def _save_spec(save) -> tuple[tuple, dict]:
    """``save=`` as (always-saved names, {name: condition names})."""
    if isinstance(save, dict):
        always = tuple(k for k, v in save.items() if v is None or v is True)
        conds = {k: (v,) if isinstance(v, str) else tuple(v) for k, v in save.items()
                 if not (v is None or v is True)}
        return always, conds
    return tuple(save), {}


def register_derivative(op, rule: Callable, *, save=(), signature: Callable | None = None,
                        name: str | None = None, nondifferentiable_outputs=(),
                        strides=()) -> type:
    """Make ``op`` differentiable with ``rule`` (see NOTE [Recording an op]).

    Args:
        op: the Operator.
        rule: ``rule(ctx, *grads)`` returning one gradient per tensor input.
        save: names of the tensor arguments the rule reads, and ``"result"`` (every output)
            or ``"result<i>"`` (output ``i`` only, e.g. ``"result1"`` for returned indices).
            A dict saves conditionally (NOTE [Conditional saves]): ``{"input": "other",
            "other": "input"}`` saves ``input`` only when ``other`` needs a gradient and the
            reverse; a value of None saves always.
        signature: a function with the op's Python signature (default: its Meta rule or
            view geometry).
        name: the Node class name (default ``<Op>Backward0``).
        nondifferentiable_outputs: indices of outputs that never require grad (torch's
            ``output_differentiability``), e.g. the saved statistics of a fused norm.
        strides: tensor arguments whose strides at record time the rule reads with
            ``ctx.stride_of`` (to lay a gradient out like its input, as ``mm`` does).
    """
    sig = signature or getattr(op, "meta_rule", None) or getattr(op, "geometry", None)
    if sig is None:
        raise TypeError(f"register_derivative: no signature known for {op!r}")
    params = [p for p in inspect.signature(sig).parameters if p != "out"]
    always, conds = _save_spec(save)
    results = tuple(s for s in always if s.startswith("result"))
    if any(s.startswith("result") for s in conds):
        raise TypeError("register_derivative: outputs cannot be saved conditionally")
    inputs = frozenset(s for s in always if s not in results)
    saves = inputs | frozenset(conds)
    inplace = Tag.inplace in op.tags
    names, types = _schema_names(op, params)
    cls = type(name or f"{_camel(op.name)}Backward0", (OpNode,), {
        "__slots__": (), "rule": staticmethod(rule), "op": op,
        "saves_anything": bool(saves or results),
        "saves_result": bool(results),
        "saved_names": saves,
        "schema_names": names, "schema_types": types,
        "nondiff_outputs": frozenset(nondifferentiable_outputs)})
    op.derivative = cls
    which = None if "result" in results or not results else \
        frozenset(int(s[len("result"):]) for s in results)
    bind = _binder(sig)
    strides = frozenset(strides)
    later = frozenset(conds) | strides | (inputs if inplace else frozenset())
    op._autograd = _Recording(
        cls, bind, tuple(params), frozenset() if inplace else inputs, later,
        {n: (n in strides, n in saves, conds.get(n)) for n in later}, conds,
        bool(results), inplace, which, bind.positional)
    op.register(AliasKey.Autograd, autograd_kernel, with_keyset=True)
    return cls


def _schema_names(op, params: list) -> tuple[dict, dict]:
    """(torch's schema argument name -> this rule's argument name where they differ (the
    schema says ``self``, ember's signature ``input``), rule argument -> schema type), for
    ``grad_fn._saved_<name>``."""
    schema = getattr(op, "schema", None)
    args = [a for a in getattr(schema, "arguments", ()) if a.name != "out"]
    if len(args) != len(params):
        return {}, {}
    return ({a.name: p for a, p in zip(args, params) if a.name != p},
            {p: a.type for a, p in zip(args, params)})


def _as_saved_by_torch(value, schema_type: str | None):
    """A saved argument as torch shows it: a Python number passed for a Tensor argument is a
    0-d tensor (float64, int64 or bool, torch's wrapped numbers); an ``int[]`` is a tuple."""
    if schema_type is None:
        return value
    if schema_type.startswith("Tensor") and "[" not in schema_type and \
            value.__class__ in (bool, int, float):
        dtype = _dt.bool_ if value.__class__ is bool else \
            _dt.int64 if value.__class__ is int else _dt.float64
        return aten("scalar_tensor")(value, dtype=dtype)
    if schema_type.startswith("int[") and value is not None:
        return (value,) if value.__class__ is int else tuple(value)
    return value


def autograd_kernel(op, ks: int, *args, **kwargs):
    """The Autograd-key kernel shared by every differentiable op."""
    if _grad.enabled:
        for a in args:
            if isinstance(a, Tensor):
                if a._requires_grad or a.grad_fn is not None:
                    return _record(op, ks, args, kwargs)
            elif a.__class__ is list or a.__class__ is tuple:
                for t in a:
                    if isinstance(t, Tensor) and (t._requires_grad or t.grad_fn is not None):
                        return _record(op, ks, args, kwargs)
        if kwargs:
            for a in kwargs.values():
                if isinstance(a, Tensor) and (a._requires_grad or a.grad_fn is not None):
                    return _record(op, ks, args, kwargs)
        if op._is_inplace and _modifies_view_of_grad_base(op, args):
            return _record(op, ks, args, kwargs)
    elif op._is_view:
        out = op.lookup(ks)(*args, **kwargs)
        _mark_no_grad_view(args, out)
        return out
    fn = op._cache.get(ks)  # op.lookup(ks), inlined
    return (fn if fn is not None else op._compute(ks))(*args, **kwargs)


def _modifies_view_of_grad_base(op, args) -> bool:
    """An in-place op on a view whose base requires grad must be checked and recorded."""
    if not op._is_inplace or not args or not isinstance(args[0], Tensor):
        return False
    base = args[0]._base
    return base is not None and _requires(base)


def _mark_no_grad_view(args, out) -> None:
    src = args[0] if args and isinstance(args[0], Tensor) else None
    if src is not None and _requires(src) and isinstance(out, Tensor):
        out._creation_meta = 2


def _record(op, ks: int, args, kwargs):
    """Record ``op``'s node, run it below autograd, attach the node to its outputs.

    One pass over the arguments makes the edges, the input metadata and the unconditional
    saves; saves that depend on which inputs need a gradient, saves of an in-place op (after
    its checks, so a pack hook never sees a refused call) and strides follow the scan.
    """
    cls, bind, params, now, later, late, conds, save_result, inplace, which, positional = \
        op._autograd
    if positional is not None and not kwargs:  # bind(args, kwargs), inlined
        bound = dict(positional[1])
        bound.update(zip(positional[0], args))
    else:
        bound = bind(args, kwargs)
        if bound.get("out") is not None:
            raise RuntimeError(f"{op.name}(): functions with out=... arguments don't support "
                               "automatic differentiation, but one of the arguments requires "
                               "grad.")
    node = _new(cls)  # OpNode: the slots Node.__init__ would set are all set here
    node.sequence_nr = next(_sequence)
    edges, metas, meta_of = [], [], {}
    structure = None  # built only when a tensor-list argument appears
    pending = None
    needs = {} if conds else None  # name -> needs a gradient, for conditional saves
    self_t = None
    for name in params:
        v = bound.get(name)
        if v is None or v.__class__ in _PLAIN_VALUES:
            continue
        if isinstance(v, Tensor):
            if self_t is None:
                self_t = v
            fn = v.grad_fn
            edge = (fn, v._output_nr) if fn is not None else gradient_edge(v) or _NO_EDGE
            edges.append(edge)
            meta = (v._shape, v._dtype)
            metas.append(meta)
            meta_of[name] = meta
            if structure is not None:
                structure.append(None)
            if needs is not None:
                needs[name] = edge[0] is not None
        elif isinstance(v, _SEQUENCES) and v and all(isinstance(t, Tensor) for t in v):
            if structure is None:
                structure = [None] * len(edges)
            structure.append(len(v))
            hit = False
            for t in v:
                edge = gradient_edge(t) or _NO_EDGE
                edges.append(edge)
                hit = hit or edge[0] is not None
                metas.append((t._shape, t._dtype))
            meta_of[name] = metas[-len(v):]
            if needs is not None:
                needs[name] = hit
            if name in now:
                bound[name] = [save_input(t) for t in v]
                continue
        else:
            continue
        if name in now:
            bound[name] = save_input(v)
        elif name in later:
            if pending is None:
                pending = [name]
            else:
                pending.append(name)
        else:
            bound[name] = _UNSAVED
    node.next_functions = tuple(edges)
    node._in_meta = tuple(metas)
    if structure is None:
        node._structure = (None,) * len(edges)
        node._flat = True
    else:
        node._structure = tuple(structure)
        node._flat = False
    node._meta_of = meta_of
    node._result = None
    if inplace:
        _check_inplace(op.name, self_t)
    if pending is not None:  # see NOTE [Conditional saves]
        for name in pending:
            v = bound[name]
            keep_stride, save, cond = late[name]
            if keep_stride:
                bound[name + ".stride"] = v._stride if isinstance(v, Tensor) else \
                    [t._stride for t in v]
            if not save:
                bound[name] = _UNSAVED
                continue
            if cond is not None:
                for c in cond:
                    if needs.get(c):
                        break
                else:
                    bound[name] = _NOT_NEEDED
                    continue
            if inplace and v is self_t:
                bound[name] = SavedTensor(v.clone())  # the op is about to overwrite it
            elif isinstance(v, Tensor):
                bound[name] = save_input(v)
            else:  # a tensor list
                bound[name] = [save_input(t) for t in v]
    node._bound = bound
    if anomaly._state.enabled:
        anomaly.record_stack(node)
    fn = op._cache.get(ks)  # op.lookup(ks), inlined
    out = (fn if fn is not None else op._compute(ks))(*args, **kwargs)
    if out.__class__ is not Tensor or inplace:
        return _mark_outputs(out, node, inplace, self_t, save_result, which)
    node._num_outputs = 1
    node._out_meta = ((out._shape, out._dtype),)
    if out._dtype.category >= _FLOATING:  # mark_requires_grad(out, node, 0), inlined
        out.grad_fn = node
        out._output_nr = 0
        out._ver.keys |= 1 << AUTOGRAD_KEY_OF_DEVICE[out._device.type]
        out._mkey = None
    if save_result:
        node._result = SavedTensor(out, node, is_output=True)
    return out


def _mark_outputs(out, node, inplace: bool, self_t, save_result: bool, which):
    if out.__class__ is Tensor:
        outs = (out,)
        node._num_outputs = 1
        node._out_meta = ((out._shape, out._dtype),)
        if inplace:
            _rebase_history(self_t, node)
        elif out._dtype.category >= _FLOATING:  # mark_requires_grad(out, node, 0), inlined
            out.grad_fn = node
            out._output_nr = 0
            out._ver.keys |= 1 << AUTOGRAD_KEY_OF_DEVICE[out._device.type]
            out._mkey = None
    else:
        outs = out if isinstance(out, tuple) else (out,)
        node._num_outputs = len(outs)
        node._out_meta = tuple((o._shape, o._dtype) if isinstance(o, Tensor) else ((), None)
                               for o in outs)
        skip = type(node).nondiff_outputs
        if inplace:
            _rebase_history(self_t, node)
        else:
            for i, o in enumerate(outs):
                if isinstance(o, Tensor) and o._dtype.is_differentiable and i not in skip:
                    mark_requires_grad(o, node, i)
    if save_result:
        # one SavedTensor per output for multi-output ops (``ctx.result`` is then a tuple)
        node._result = SavedTensor(outs[0], node, is_output=True) if len(outs) == 1 else tuple(
            SavedTensor(o, node, is_output=o._dtype.is_differentiable and i not in skip)
            if isinstance(o, Tensor) and (which is None or i in which) else None
            for i, o in enumerate(outs))
    return out


def _through_bits(grad: Tensor, conj: bool, neg: bool) -> Tensor:
    """``grad`` mapped through a view's lazy bits (conjugation and negation are their own
    adjoints), from the stored values' side to the view's or back."""
    if conj:
        grad = grad.conj()
    return grad.neg() if neg else grad


def _region(full: Tensor, geometry: tuple, real_part: bool) -> Tensor:
    """The view's region of a base-shaped tensor; a real view of a complex base (``real``,
    ``imag``) lays its geometry over the base's (real, imag) pairs."""
    if real_part:
        full = aten("view_as_real")(full)
    return full.as_strided(*geometry)


class CopySlices(Node):
    """The base's history after an in-place op on one of its views.

    NOTE [In-place on views]
    ``fn`` is the in-place op's node, recorded with the *view's* old history as input 0.
    CopySlices replaces that input by the base's old history: the base's gradient is cloned,
    the view's region of it is handed to ``fn``, and ``fn``'s gradient for the view's old
    values is written back into that region. The view's own history becomes "a strided view
    of the base's new history", so later uses of the view flow into CopySlices too. A view
    with lazy bits (conjugation, negation) maps gradients through them both ways; a real view
    of a complex base (``x.imag``) addresses the base's gradient as (real, imag) pairs.
    """

    __slots__ = ("fn", "geometry", "base_stride", "conj", "neg", "real_part")

    def apply(self, grads: tuple) -> tuple:
        (grad,) = grads
        # The view's geometry is laid out over the base's strides, so the base-shaped
        # gradient must have them too (the base may be permuted).
        result = aten("empty_strided")(grad._shape, self.base_stride, dtype=grad._dtype,
                                       device=grad._device).copy_(grad)
        region = _region(result, self.geometry, self.real_part)
        res = list(self.fn.apply((_through_bits(region.clone(), self.conj, self.neg),)))
        if res and res[0] is not None:
            region.copy_(_through_bits(res[0], self.conj, self.neg))
        else:
            region.fill_(0)
        return (result, *res[1:])

    def release_variables(self) -> None:
        self.fn.release_variables()
        self._released = True


class ViewOfBaseBackward(Node):
    """History of a view whose base was rebased: its gradient lands in the base's region."""

    __slots__ = ("geometry", "base_meta", "base_stride", "conj", "neg", "real_part")

    def apply(self, grads: tuple) -> tuple:
        (grad,) = grads
        shape, dtype = self.base_meta
        out = aten("empty_strided")(shape, self.base_stride, dtype=dtype,
                                    device=grad._device).zero_()
        _region(out, self.geometry, self.real_part).copy_(
            _through_bits(grad, self.conj, self.neg))
        return (out,)


def _rebase_history(t: Tensor, node: Node) -> None:
    if not t._dtype.is_differentiable:  # an integer or bool tensor written in place (copy_)
        return  # never requires grad, as in torch
    base = t._base
    if base is None:
        mark_requires_grad(t, node, 0)
        return
    real_part = base._dtype.is_complex and not t._dtype.is_complex
    geometry = (t._shape, t._stride, t._offset - base._offset * (2 if real_part else 1))
    cs = CopySlices()
    cs.fn = node
    cs.geometry = geometry
    cs.base_stride = base._stride
    cs.conj, cs.neg, cs.real_part = t._is_conj, t._is_neg, real_part
    base_edge = gradient_edge(base) or (None, 0)
    cs.next_functions = (base_edge, *node.next_functions[1:])
    cs._in_meta = ((base._shape, base._dtype), *node._in_meta[1:])
    mark_requires_grad(base, cs, 0)
    view_node = ViewOfBaseBackward()
    view_node.geometry = geometry
    view_node.base_meta = (base._shape, base._dtype)
    view_node.base_stride = base._stride
    view_node.conj, view_node.neg, view_node.real_part = t._is_conj, t._is_neg, real_part
    view_node.next_functions = ((cs, 0),)
    view_node._in_meta = ((base._shape, base._dtype),)
    mark_requires_grad(t, view_node, 0)


def _not_implemented_node(op, tensors) -> NotImplementedNode:
    node = NotImplementedNode()
    node.op_name = op.qualname
    node.next_functions = tuple(gradient_edge(t) or (None, 0) for t in tensors)
    node._in_meta = tuple((t._shape, t._dtype) for t in tensors)
    return node


def _not_implemented_fallback(op, ks: int, *args, **kwargs):
    """Autograd kernel of ops without a derivative rule: backward through them raises.

    Factories (``linspace(t0, t1)``, ``tensor(t)``) read tensors as values: never recorded.
    """
    if not _grad.enabled or op._is_factory:
        return op.lookup(ks)(*args, **kwargs)
    flat = []
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, Tensor):
            flat.append(a)
        elif isinstance(a, list | tuple):
            flat.extend(t for t in a if isinstance(t, Tensor))
    if not any(_requires(t) for t in flat) and not _modifies_view_of_grad_base(op, args):
        return op.lookup(ks)(*args, **kwargs)
    inplace = op._is_inplace
    if inplace:
        _check_inplace(op.name, flat[0])
    node = _not_implemented_node(op, flat)
    out = op.lookup(ks)(*args, **kwargs)
    if inplace:
        _rebase_history(flat[0], node)
        return out
    outs = out if isinstance(out, tuple) else (out,)
    for i, o in enumerate(outs):
        if isinstance(o, Tensor) and o._dtype.is_differentiable:
            mark_requires_grad(o, node, i)
    return out


def _inplace_or_view_kernel(op, ks: int, *args, **kwargs):
    self_t = args[0] if args else None
    if isinstance(self_t, Tensor):
        if self_t._is_inference:
            raise RuntimeError("Inplace update to inference tensor outside InferenceMode is "
                               "not allowed.You can make a clone to get a normal tensor before "
                               "doing inplace update.")
        if self_t._is_conj or self_t._is_neg:
            return _inplace_into_conjugated(op, ks, self_t, args, kwargs)
    return op.lookup(ks)(*args, **kwargs)


def _inplace_into_conjugated(op, ks: int, self_t: Tensor, args, kwargs):
    """An in-place op on a view with lazy bits (NOTE [The conjugation bit], NOTE [The negative
    bit] in ember/tensor/tensor.py) runs on a scratch copy of its values; the result is then
    stored through the bits, so the view reads the result and its base changes as torch's
    does."""
    from ember.tensor import empty_tensor, numpy_view, store_resolved
    if self_t._device.type == "meta":
        return op.lookup(ks)(*args, **kwargs)
    # complex32 values are read and computed as complex64 (NOTE [complex32 storage])
    scratch = empty_tensor(self_t._shape, self_t._dtype if self_t._dtype is not _dt.complex32
                           else _dt.complex64)
    numpy_view(scratch)[...] = numpy_view(self_t)
    op.lookup(ks)(scratch, *args[1:], **kwargs)
    store_resolved(self_t, numpy_view(scratch))
    self_t._ver.value += 1
    return self_t


def install_autograd_fallback() -> None:
    """Ops without a derivative rule get a node that raises in backward; in-place ops refuse
    inference tensors outside inference mode (the ADInplaceOrView kernel)."""
    from ember.dispatch import FALLTHROUGH, Kernel, register_fallback
    from ember.dispatch.dispatcher import PerOpFallback
    register_fallback(AliasKey.Autograd, _not_implemented_fallback, with_keyset=True)
    inplace = Kernel(_inplace_or_view_kernel, True, "ADInplaceOrView (in-place)")
    register_fallback(DispatchKey.ADInplaceOrView, PerOpFallback(
        lambda op: inplace if op._is_inplace else FALLTHROUGH, "backend fallback"))

