"""The backward engine: dependency counting, then a ready queue ordered by sequence number.

NOTE [The backward loop]
1. From the roots, count how many edges lead into each node (``dependencies``).
2. Seed the roots' input buffers with the root gradients.
3. Pop the ready node that comes first in the order below, run its tensor pre-hooks,
   pre-hooks, the node, and post-hooks; check each returned gradient against the forward
   input it belongs to (sum a broadcast gradient down to its shape, cast to its dtype); add it
   into the next node's buffer; a node whose count reaches zero is ready.
4. Release saved tensors unless ``retain_graph``; run the queued callbacks at the very end.
``autograd.grad`` captures the gradients flowing into its inputs' edges and runs only nodes
that lie on a path to one of them. One loop serves every call; the common node (one incoming
gradient, no hooks) takes the small ``_apply_one`` step, anything else ``_run_node``.

NOTE [Backward order]
The order is a function of the graph alone, the same in every process:
- every ready ``AccumulateGrad`` runs before any other ready node (its ``sequence_nr`` is
  inf, as PyTorch's UINT64_MAX), so a leaf's ``.grad`` and its post-accumulate-grad hooks
  are done as soon as its last gradient arrives;
- among ready accumulators, the one created first (lowest ``creation_nr``, the number drawn
  from the sequence when the leaf was first used in a recorded op) runs first;
- any other ready node runs highest ``sequence_nr`` first: the forward, replayed in reverse.
For a stack of ``Linear`` layers this is PyTorch's order (last layer first, bias before
weight). Where several accumulators are ready at once (``cat(params).sum()``), PyTorch's
order is whatever its binary heap makes of equal keys; ember's is their creation order.

NOTE [Stealing gradients]
A leaf's first gradient becomes its ``.grad`` without a copy when nothing else can see it,
as PyTorch decides by the use count of the TensorImpl: ``sys.getrefcount`` finds only the
engine's own references (so not a root gradient the caller passed, not one a hook kept, not
one another leaf adopted or still waits for), it has no history, and it is either base-less
or a view that is the only holder of its whole base. With ``create_graph`` the gradient is
adopted, history and all, unless it is a root gradient or already adopted. It must also
obey the layout contract: a dense leaf's gradient has the leaf's strides, any
other leaf's gradient is contiguous; a gradient that does not is copied into that layout.
``mm``'s backward computes a transposed operand's gradient already transposed (NOTE [mm
gradient layout] in ember/ops/linalg.py), so a ``Linear`` weight's gradient arrives
contiguous after ``t``'s backward and is stolen.
"""

from __future__ import annotations

import heapq
import sys
import threading
from collections.abc import Sequence

from ember.autograd import anomaly, grad_mode
from ember.autograd._ops import op as aten
from ember.autograd.graph import AccumulateGrad, Node, _sequence, gradient_edge
from ember.core.device import CPU
from ember.core.layout import is_non_overlapping_and_dense
from ember.dispatch import dispatcher as _dispatcher
from ember.tensor import Tensor, empty_tensor, make_tensor, numpy_view

__all__ = ["backward", "grad", "queue_callback", "run_backward"]


class _EngineState(threading.local):
    def __init__(self):
        self.callbacks: list | None = None  # set while a backward runs
        self.depth = 0
        self.checkpoint_valid = True


_engine = _EngineState()
# ``observer(node, grads) -> outs`` runs each node instead of ``node.apply(grads)`` while the
# profiler records (its backward-node events); None otherwise, so backward pays one test.
node_observer = None
# ``accumulate_observer(node)`` -> a context manager around a leaf's gradient accumulation
# while the profiler records (its AccumulateGrad events); None otherwise.
accumulate_observer = None


def queue_callback(callback) -> None:
    """Run ``callback()`` once the current backward pass finishes (before it returns)."""
    if _engine.callbacks is None:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _engine.callbacks.append(callback)


def is_checkpoint_valid() -> bool:
    """False inside a backward that was started by ``autograd.grad`` or ``backward(inputs=)``."""
    return _engine.checkpoint_valid


class _GraphRoot(Node):
    __slots__ = ("grads",)

    def __init__(self, edges, grads):
        # Node.__init__'s slots, set here (made only to search the graph for ``inputs``)
        self._in_meta = ()
        self._num_outputs = 1
        self.next_functions = tuple(edges)
        self.grads = tuple(grads)
        self.sequence_nr = _INF

    def apply(self, grads):
        return self.grads


_INF = float("inf")
_ACCUMULATE_FIRST = -_INF  # ready-queue key of every AccumulateGrad (then its creation_nr)
_GRAD_PROPERTY = Tensor.grad
_heappush, _heappop = heapq.heappush, heapq.heappop
_getrefcount = sys.getrefcount
# References to a gradient nobody else holds, counted in ``_accumulate`` (and where the loop
# inlines it): the engine's input buffer, the ``grad`` argument (local) and ``getrefcount``'s
# own argument.
_STEALABLE_REFS = 3


def _as_tuple(x) -> tuple:
    if x is None:
        return ()
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _make_root_grads(tensors: Sequence[Tensor], grad_tensors: Sequence, create_graph: bool):
    out = []
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if g is None:
            if t.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not t._dtype.is_floating_point:
                raise RuntimeError(f"grad can be implicitly created only for real scalar "
                                   f"outputs but got {t._dtype}")
            if not t._shape and t._device is CPU and not _dispatcher._state.modes:
                # the usual scalar loss: what ones_like(t) makes, without a dispatch round trip
                g = empty_tensor((), t._dtype)
                numpy_view(g)[()] = 1
            else:
                g = aten("ones_like")(t)
        elif not isinstance(g, Tensor):
            g = aten("full_like")(t, g)
        elif g._shape != t._shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                               f"{_size(g._shape)} and output[{i}] has a shape of "
                               f"{_size(t._shape)}.")
        out.append(g)
    return out


def _size(shape) -> str:
    return f"ember.Size({list(shape)})"


def _root_edges(tensors):
    edges = []
    for i, t in enumerate(tensors):
        edge = gradient_edge(t)
        if edge is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not "
                               "have a grad_fn")
        edges.append(edge)
    return edges


def _dependencies(edges) -> dict:
    """How many edges lead into each node reachable from the root ``edges``."""
    deps: dict = {}
    for nxt, _ in edges:
        if nxt is not None:
            deps[nxt] = deps.get(nxt, 0) + 1
    stack = list(deps)
    while stack:
        for nxt, _ in stack.pop().next_functions:
            if nxt is None:
                continue
            n = deps.get(nxt)
            if n is None:
                deps[nxt] = 1
                stack.append(nxt)
            else:
                deps[nxt] = n + 1
    return deps


def _needed_nodes(root: Node, targets: set) -> set:
    """Nodes on some path from ``root`` to a node in ``targets`` (by id)."""
    needed: set = set()
    memo: dict = {}
    order = []
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            hit = key in targets or any(
                memo.get(id(n), False) for n, _ in node.next_functions if n is not None)
            memo[key] = hit
            if hit:
                needed.add(key)
            continue
        if key in memo or key in order:
            continue
        order.append(key)
        stack.append((node, True))
        for n, _ in node.next_functions:
            if n is not None and id(n) not in memo:
                stack.append((n, False))
    return needed


def _validate(node: Node, grads) -> list:
    """One gradient per edge, each summed to its input's shape and cast to its dtype."""
    edges = node.next_functions
    if len(grads) != len(edges):
        raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients "
                           f"(expected {len(edges)}, got {len(grads)})")
    metas = node._in_meta
    out = []
    i = 0
    for g, edge in zip(grads, edges):
        if g is None or edge[0] is None:
            out.append(None)
        elif g.__class__ is not Tensor and not isinstance(g, Tensor):
            raise TypeError(f"function {node.name()} returned a gradient of type "
                            f"{type(g).__name__} at index {i}; expected a Tensor or None")
        elif metas:
            shape, dtype = metas[i]
            if g._shape != shape:
                g = _sum_to(g, shape, node, i)
            if g._dtype is not dtype:
                if g._dtype.is_complex and not dtype.is_complex:
                    g = g.real  # a real input of a complex computation: torch's handle_r_to_c
                g = g.to(dtype)
            out.append(g)
        else:
            out.append(g)
        i += 1
    return out


def _sum_to(g: Tensor, shape: tuple, node: Node, i: int) -> Tensor:
    gs = g._shape
    lead = len(gs) - len(shape)
    ok = lead >= 0 and all(s == 1 or s == d for s, d in zip(shape, gs[lead:]))
    if not ok:
        raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {i} - "
                           f"got {list(gs)} but expected shape compatible with {list(shape)}")
    inner = tuple(lead + k for k, s in enumerate(shape) if s == 1 and gs[lead + k] != 1)
    if not inner:  # only leading dims to drop: the sum has the shape already (no view)
        return g.sum(tuple(range(lead))) if lead else g
    g = g.sum(tuple(range(lead)) + inner, keepdim=True)
    return g.view(shape) if g._shape != shape else g


def _call_tensor_pre_hooks(node: Node, grads: list) -> list:
    if node.__class__ is AccumulateGrad:
        leaf_hooks = node.variable._hooks
        if leaf_hooks and grads[0] is not None:
            for fn in list(leaf_hooks.values()):
                res = fn(grads[0])
                if res is not None:
                    grads[0] = res
    hooks = node._tensor_pre_hooks
    if hooks:
        for nr, fns in hooks.items():
            for fn in list(fns.values()):
                if grads[nr] is None:
                    continue
                res = fn(grads[nr])
                if res is not None:
                    grads[nr] = res
    retain = node._retain_hooks
    if retain:
        for nr, fn in retain.items():
            if grads[nr] is not None:
                fn(grads[nr])
    return grads


def _accumulate(node: AccumulateGrad, grad: Tensor, create_graph: bool, root_grads,
                taken: dict) -> None:
    """Add ``grad`` into ``node.variable.grad`` (see NOTE [Stealing gradients])."""
    var = node.variable
    if grad is None:
        return
    if var._grad is None:
        if create_graph:
            new = grad if _owned(grad, root_grads, taken) else grad.clone()
            if new is grad:
                taken[id(grad)] = grad
        elif _getrefcount(grad) <= _STEALABLE_REFS and grad.grad_fn is None and (
                (grad._base is None and grad._stride == var._stride and
                 grad._shape == var._shape) or (_obeys_layout(grad, var) and _sole_view(grad))):
            new = _detach(grad)
        else:
            new = _clone_obeying_layout(grad.detach(), var)
        if type(var).grad is _GRAD_PROPERTY and new._dtype is var._dtype and \
                new._device is var._device and new._shape == var._shape:
            var._grad = new  # what the setter would store after its checks
        else:
            var.grad = new
    elif create_graph or grad_mode.is_grad_enabled():
        var.grad = var.grad + grad
    else:
        var.grad.add_(grad)
    if var._post_hooks:
        for fn in list(var._post_hooks.values()):
            fn(var)


def _owned(grad: Tensor, root_grads, taken: dict) -> bool:
    """Whether ``grad`` may become a ``.grad`` as it is: not a root gradient the caller passed
    and not already adopted by another leaf (a node may hand one tensor to several inputs)."""
    if id(grad) in taken:
        return False
    for r in root_grads:
        if grad is r:
            return False
    return True


def _sole_view(grad: Tensor) -> bool:
    """A gradient with no base, or a view that is the only holder of its whole base.

    The base is then referenced by ``grad._base``, this frame's ``base`` and
    ``getrefcount``'s argument; a fourth reference means someone else (a hook, the caller,
    another view of it) sees that memory.
    """
    base = grad._base
    if base is None:
        return True
    return base.grad_fn is None and _getrefcount(base) <= 3 and \
        base.numel() == grad.numel()


def _obeys_layout(grad: Tensor, var: Tensor) -> bool:
    """torch's layout contract: a dense leaf's gradient has the leaf's strides, any other
    leaf's gradient is contiguous."""
    if grad._shape != var._shape:
        return False
    if grad._stride == var._stride:
        return True
    if _contiguous(var):  # size-1 dims may carry any stride
        return _contiguous(grad)
    return not is_non_overlapping_and_dense(var._shape, var._stride) and _contiguous(grad)


def _clone_obeying_layout(grad: Tensor, var: Tensor) -> Tensor:
    """A copy of ``grad`` laid out by the contract (``torch``'s ``clone_obey_contract``)."""
    if grad._shape == var._shape and not _contiguous(var) and \
            is_non_overlapping_and_dense(var._shape, var._stride):
        return aten("empty_strided")(var._shape, var._stride, dtype=grad._dtype,
                                     device=grad._device).copy_(grad)
    return grad.clone(memory_format="contiguous_format")


def _contiguous(t: Tensor) -> bool:
    """``t.is_contiguous()``; read off the cached NumPy view when there is one (NumPy's
    relaxed C-contiguity is PyTorch's rule: size-1 dims ignored, empty is contiguous)."""
    a = t._arr
    return a.flags.c_contiguous if a is not None else t.is_contiguous()


def _detach(t: Tensor) -> Tensor:
    """``t.detach()``; built directly unless a dispatch mode should see the call."""
    if _dispatcher._state.modes:
        return t.detach()
    out = make_tensor(t._storage, t._shape, t._stride, t._offset, t._dtype, t._device,
                      version=t._ver)  # what the detach op builds
    out._is_inference = t._is_inference
    out._arr = t._arr  # same memory and geometry: the cached NumPy view stays valid
    if t._is_conj:
        out._is_conj = True
    if t._is_neg:
        out._is_neg = True
    return out


def run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs=(),
                 capture: bool = False, allow_unused: bool = False):
    """Run the engine from ``tensors`` (see NOTE [The backward loop]).

    With ``capture`` (``autograd.grad``) returns the gradients flowing into ``inputs``
    without touching ``.grad``; otherwise accumulates into leaves (only ``inputs`` if given).
    """
    if tensors.__class__ is Tensor:
        tensors = (tensors,)
        grads = [grad_tensors] if grad_tensors is None or grad_tensors.__class__ is Tensor \
            else list(_as_tuple(grad_tensors))
    else:
        tensors = _as_tuple(tensors)
        grads = [None] * len(tensors) if grad_tensors is None else \
            list(_as_tuple(grad_tensors)) or [None] * len(tensors)
    if len(grads) != len(tensors):
        raise RuntimeError(f"got {len(grads)} tensors and {len(tensors)} gradients")
    root_grads = _make_root_grads(tensors, grads, create_graph)
    fn = tensors[0].grad_fn if len(tensors) == 1 else None
    edges = ((fn, tensors[0]._output_nr),) if fn is not None else _root_edges(tensors)
    next(_sequence)  # the graph root's number (PyTorch's GraphRoot takes one too)
    if retain_graph is None:
        retain_graph = create_graph

    capture_at, needed = None, None
    if inputs:
        capture_at, targets = {}, {}
        for k, t in enumerate(inputs):
            edge = gradient_edge(t)
            if edge is None:
                if capture:
                    raise RuntimeError("One of the differentiated Tensors does not require "
                                       "grad")
                raise RuntimeError("element of inputs does not require grad")
            capture_at.setdefault(id(edge[0]), []).append((edge[1], k))
            targets[id(edge[0])] = edge[0]
        needed = _needed_nodes(_GraphRoot(edges, root_grads), set(targets))
    captured = [None] * len(inputs)

    deps = _dependencies(edges)
    taken: dict = {}  # id -> gradient adopted as a .grad (held: ids of dead tensors recur)
    buffers: dict = {}
    ready: list = []
    _feed(edges, root_grads, buffers, deps, ready, needed)

    prev = (_engine.callbacks, _engine.checkpoint_valid)
    _engine.callbacks = []
    _engine.checkpoint_valid = prev[1] and not inputs
    _engine.depth += 1
    grad_st = grad_mode._grad
    saved_grad_mode = grad_st.enabled
    grad_st.enabled = create_graph
    try:
        while ready:
            node = _heappop(ready)[2]
            in_grads = buffers.pop(node)
            if node.__class__ is AccumulateGrad:
                if node._tensor_pre_hooks is not None or node._retain_hooks is not None or \
                        node.variable._hooks:
                    in_grads = _call_tensor_pre_hooks(node, in_grads)
                if capture_at is not None:
                    at = capture_at.get(id(node))
                    if at:
                        for nr, k in at:
                            captured[k] = in_grads[nr]
                if capture or (needed is not None and id(node) not in needed):
                    continue
                if accumulate_observer is not None:
                    with accumulate_observer(node):
                        _accumulate(node, in_grads[0], create_graph, root_grads, taken)
                    continue
                grad = in_grads[0]
                var = node.variable
                if grad is not None and var._grad is None and not create_graph and \
                        grad.__class__ is Tensor and grad._base is None and \
                        grad.grad_fn is None and grad._stride == var._stride and \
                        grad._shape == var._shape and grad._dtype is var._dtype and \
                        grad._device is var._device and not var._post_hooks and \
                        type(var).grad is _GRAD_PROPERTY and \
                        _getrefcount(grad) <= _STEALABLE_REFS:
                    var._grad = _detach(grad)  # _accumulate's usual case, inlined
                else:
                    grad = None  # _accumulate counts the references to in_grads[0]
                    _accumulate(node, in_grads[0], create_graph, root_grads, taken)
                grad = None
                continue
            if node._tensor_pre_hooks is not None or node._retain_hooks is not None:
                in_grads = _call_tensor_pre_hooks(node, in_grads)
            if capture_at is not None:
                at = capture_at.get(id(node))
                if at:
                    for nr, k in at:
                        captured[k] = in_grads[nr]
            if needed is not None and id(node) not in needed:
                continue
            if node._pre_hooks is None and node._post_hooks is None and \
                    len(in_grads) == 1 and in_grads[0] is not None and \
                    not anomaly._state.enabled:
                outs = _apply_one(node, in_grads[0])
                if not retain_graph:
                    node.release_variables()
                _feed(node.next_functions, outs, buffers, deps, ready, needed)
                outs = None  # the buffers alone hold the gradients (NOTE [Stealing gradients])
            else:
                _run_node(node, in_grads, retain_graph, buffers, deps, ready, needed)
        callbacks = _engine.callbacks
        while callbacks:
            callbacks.pop(0)()
    finally:
        grad_st.enabled = saved_grad_mode
        _engine.callbacks, _engine.checkpoint_valid = prev
        _engine.depth -= 1
    if capture:
        for k, g in enumerate(captured):
            if g is None and not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {k} appears to not have "
                                   "been used in the graph. Set allow_unused=True if this is "
                                   "the desired behavior.")
        return tuple(captured)
    return None


def _apply_one(node: Node, grad: Tensor) -> tuple:
    """The hot step: ``node`` with one incoming gradient, no hooks, no anomaly mode.

    What ``_run_node`` does in that case, with ``_validate``'s common case (every returned
    gradient already has its input's shape and dtype) checked inline.
    """
    try:
        outs = node.apply((grad,)) if node_observer is None else node_observer(node, (grad,))
    except Exception:
        _anomaly_report(node)
        raise
    edges = node.next_functions
    metas = node._in_meta
    if len(outs) == len(edges) and metas:
        for g, edge, meta in zip(outs, edges, metas):
            if g is not None and edge[0] is not None and (
                    g.__class__ is not Tensor or g._shape != meta[0] or g._dtype is not meta[1]):
                return _validate(node, outs)
        return outs
    return _validate(node, outs)


def _run_node(node: Node, in_grads: list, retain_graph: bool, buffers, deps, ready, needed):
    if node._pre_hooks:
        for fn in list(node._pre_hooks.values()):
            res = fn(tuple(in_grads))
            if res is not None:
                in_grads = list(res)
    for g in in_grads:
        if g is not None:
            try:
                grads = tuple(in_grads)
                outs = _validate(node, node.apply(grads) if node_observer is None
                                 else node_observer(node, grads))
            except Exception:
                _anomaly_report(node)
                raise
            break
    else:  # every incoming gradient is None
        outs = [None] * len(node.next_functions)
    if node._post_hooks:
        for fn in list(node._post_hooks.values()):
            res = fn(tuple(outs), tuple(in_grads))
            if res is not None:
                outs = list(res)
    if anomaly._state.enabled and anomaly.is_anomaly_check_nan_enabled():
        anomaly.check_nan(node, outs)
    if not retain_graph:
        node.release_variables()
    _feed(node.next_functions, outs, buffers, deps, ready, needed)


def _anomaly_report(node: Node) -> None:
    if anomaly.is_anomaly_enabled():
        anomaly.report(node)


def _feed(edges, outs, buffers, deps, ready, needed) -> None:
    """Add the gradients ``outs`` into the buffers of the nodes ``edges`` lead to; push the
    nodes that have all their gradients now (NOTE [Backward order])."""
    for (nxt, nr), g in zip(edges, outs):
        if nxt is None:
            continue
        buf = buffers.get(nxt)
        if buf is None:
            if nxt._num_outputs == 1:
                buffers[nxt] = [g]
                g = None
            else:
                buf = buffers[nxt] = [None] * nxt._num_outputs
        if g is not None:
            buf[nr] = g if buf[nr] is None else buf[nr] + g
        left = deps[nxt] - 1
        deps[nxt] = left
        if not left:
            if nxt.__class__ is AccumulateGrad:
                _heappush(ready, (_ACCUMULATE_FIRST, nxt.creation_nr, nxt))
            else:
                _heappush(ready, (-nxt.sequence_nr, 0, nxt))


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph: bool = False,
             grad_variables=None, inputs=None) -> None:
    """Accumulate gradients of ``tensors`` into the leaves' ``.grad`` (``torch.autograd.backward``).

    Args:
        tensors: roots (tensors with a grad_fn or leaves requiring grad).
        grad_tensors: one gradient per root; None for scalar roots (implicit 1).
        retain_graph: keep saved tensors for another backward (default: ``create_graph``).
        create_graph: record the backward computation so gradients are differentiable.
        inputs: accumulate only into these tensors.

    Example:
        >>> x = ember.tensor([1.0, 2.0], requires_grad=True)
        >>> ember.autograd.backward([(x * x).sum()])
        >>> x.grad
        tensor([2., 4.])
    """
    if grad_variables is not None:
        grad_tensors = grad_variables
    run_backward(tensors, grad_tensors, retain_graph, create_graph, _as_tuple(inputs))


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph: bool = False,
         only_inputs: bool = True, allow_unused=None, is_grads_batched: bool = False,
         materialize_grads: bool = False):
    """Gradients of ``outputs`` with respect to ``inputs``; ``.grad`` is left untouched.

    Raises:
        RuntimeError: an input is not reached by the graph (unless ``allow_unused``).

    Example:
        >>> x = ember.tensor([1.0, 2.0], requires_grad=True)
        >>> ember.autograd.grad((x ** 3).sum(), x)
        (tensor([ 3., 12.]),)
    """
    inputs = _as_tuple(inputs)
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    result = run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs,
                          capture=True, allow_unused=allow_unused)
    if materialize_grads:
        result = tuple(aten("zeros_like")(i) if g is None else g for g, i in zip(result, inputs))
    return result
