"""Tracing by dispatch: a recording mode that turns every operator call into a graph node.

``make_fx(fn)(*example_inputs)`` replaces the tensor inputs by meta tensors, runs ``fn`` once
under :class:`RecordingMode`, and returns a ``GraphModule``. Only tensor operations are
recorded: Python control flow, ``.shape`` reads and scalars are evaluated once and baked in,
so the graph is valid only for functions without data-dependent Python control flow (the
bytecode capture in ``symbolic.py`` exists for the others). Composite operators reach the
mode already decomposed (NOTE [Python dispatch modes] in ember/dispatch/dispatcher.py).
"""

from __future__ import annotations

import inspect
import operator

from ember.compiler.graph import Graph, GraphModule, Node
from ember.compiler.meta import MetaUnsupported, lazy_bits, map_args, meta_like, to_meta
from ember.core.device import CPU, META, Device
from ember.dispatch import DispatchMode, get_op
from ember.tensor import Tensor

__all__ = ["RecordingMode", "make_fx"]

_DETACH = get_op("detach.default")


class RecordingMode(DispatchMode):
    """Records each operator call into ``graph``; tensors are tracked by identity.

    Tensors the mode has not seen (captured real tensors) become graph constants. The calls
    themselves run on meta tensors, so nothing is computed.
    """

    def __init__(self, graph: Graph, device=CPU):
        self.graph = graph
        self.device = device  # the device of the real inputs: replaces "meta" in recorded args
        self._nodes: dict[int, tuple[Tensor, Node]] = {}
        self._geom: dict[tuple, Node] = {}

    def bind(self, t: Tensor, node: Node) -> None:
        """Make ``node`` the graph value of tensor ``t``."""
        self._nodes[id(t)] = (t, node)
        self._geom[_geom_key(t)] = (t, node)

    def node_of(self, t: Tensor) -> Node:
        """The node holding ``t`` (a new constant node for a tensor not seen before).

        A meta tensor made without an operator call over a traced one's storage and geometry
        (``detach()``, autograd's saved outputs) is that tensor's node, behind a ``detach``
        node when it has dropped the other's ``requires_grad``.
        """
        hit = self._nodes.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        if t._device is META:
            node = self.alias_node(t)
            if node is not None:
                return node
            raise RuntimeError("make_fx: a meta tensor that is neither an input nor the result "
                               "of a traced op reached an operator; it has no data to capture")
        node = self.graph.constant(t)
        self.bind(t, node)
        return node

    def alias_node(self, t: Tensor) -> Node | None:
        """The node of a traced tensor with ``t``'s storage and geometry (see ``node_of``)."""
        hit = self._geom.get(_geom_key(t))
        if hit is None:
            return None
        seen, node = hit
        if seen.requires_grad and not t.requires_grad:
            node = self.graph.call(_DETACH, (node,), meta={"val": _snapshot(t),
                                                            "requires_grad": False})
        self._nodes[id(t)] = (t, node)
        return node

    def _meta_arg(self, a):
        if isinstance(a, Tensor) and a._device is not META:
            node = self.node_of(a)
            return node.meta["val"]
        return a

    def _record_arg(self, a):
        if isinstance(a, Tensor):
            return self.node_of(a)
        if isinstance(a, Device) and a.type == "meta":
            return self.device
        return a

    def __ember_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        nargs = map_args(args, self._record_arg)
        nkwargs = map_args(kwargs, self._record_arg)
        margs = map_args(args, self._meta_arg)
        mkwargs = map_args(kwargs, self._meta_arg)
        if func._is_factory:
            mkwargs = {**mkwargs, "device": META}
        try:
            out = func(*margs, **mkwargs)
        except Exception as exc:
            raise MetaUnsupported(f"make_fx: {func.short_name} cannot be traced without data: "
                                  f"{exc}") from exc
        # node values are snapshots: a later in-place op may change ``out``'s geometry
        node = self.graph.call(func, nargs, nkwargs, meta={"val": map_args(out, _snapshot)})
        if isinstance(out, Tensor):
            self.bind(out, node)
        elif isinstance(out, tuple | list):
            for i, o in enumerate(out):
                if isinstance(o, Tensor):
                    item = self.graph.call(operator.getitem, (node, i),
                                           meta={"val": _snapshot(o)})
                    self.bind(o, item)
        return out


def _geom_key(t: Tensor) -> tuple:
    """What makes two tensors read the same values: memory, geometry, dtype and lazy bits
    (``z`` and ``z.conj()`` share everything else)."""
    return (id(t._storage), t._offset, t._shape, t._stride, t._dtype, *lazy_bits(t))


def _snapshot(x):
    if isinstance(x, Tensor):
        return meta_like(x, x._shape, x._stride)
    return x


def _param_names(fn, n: int) -> list[str]:
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        names = [p.name for p in params][:n]
    except (TypeError, ValueError):
        names = []
    return names + [f"arg{i}" for i in range(len(names), n)]


def make_fx(fn):
    """Trace ``fn`` on example inputs into a ``GraphModule`` (``torch.fx.experimental.make_fx``).

    Tensor arguments become graph inputs; every other argument is baked in. The function runs
    once on meta tensors (shapes and dtypes only), so it must not read tensor data
    (``.item()``, ``bool(t)``, data-dependent shapes) nor branch on it.

    Args:
        fn: a function of tensors (and constants).

    Returns:
        A function taking the example inputs and returning the ``GraphModule``; calling the
        module with tensors of the same shapes reproduces ``fn``'s result.

    Raises:
        MetaUnsupported: an op needs tensor data.

    Example:
        >>> import ember
        >>> gm = make_fx(lambda x: (x + 1).relu())(ember.ones(3))
        >>> gm.graph.op_count()
        2
    """

    def trace(*example_inputs):
        graph = Graph()
        devices = [a.device for a in example_inputs if isinstance(a, Tensor)]
        mode = RecordingMode(graph, devices[0] if devices else CPU)
        names = _param_names(fn, len(example_inputs))
        call_args = []
        for name, a in zip(names, example_inputs):
            if isinstance(a, Tensor):
                m = to_meta(a) if a._device is not META else a
                mode.bind(m, graph.placeholder(name, _snapshot(m), source=name))
                mode.graph.placeholders()[-1].meta["requires_grad"] = a.requires_grad
                call_args.append(m)
            else:
                call_args.append(a)
        with mode:
            result = fn(*call_args)
        out = map_args(result, lambda r: mode.node_of(r) if isinstance(r, Tensor) else r)
        graph.output(out)
        graph.dce()
        return GraphModule(graph)

    return trace
