"""Training through compiled regions (AOTAutograd-lite): joint graph, partition, one autograd node.

NOTE [Compiled training regions]
A captured graph whose inputs require grad (with grad mode on) is compiled as a *training*
region (compiler-design.md section 8):

1. **Joint graph.** The captured graph is replayed with ember ops on meta tensors under a
   recording dispatch mode (``_JointTracer``). The mode sits below autograd, so autograd records
   the forward exactly as in eager; ``ember.autograd.grad`` then runs ember's own engine and
   derivative rules on the meta tensors, and the mode records every op they call. The result
   is ``(primals, tangents) -> (outputs, input grads)``. Custom ``autograd.Function``s and
   checkpointed code are traced through the same way (their ``backward`` calls ember ops);
   one that reads tensor data makes the trace fail, and the region then runs on the eager
   backend (autograd records it op by op), which is always correct.
2. **Partition.** Nodes that depend on a tangent form the backward graph. Forward nodes that
   the outputs need, or that change state (in-place ops such as BatchNorm's running-stat
   updates, random ops), form the forward graph. Forward-side nodes that only the backward
   reads (``w.t()`` for a matmul's gradient, a sigmoid recomputed for its derivative) are
   *recomputed* in the backward graph from saved inputs instead of being saved, as are views
   of graph inputs (the input is saved; pointwise chains the forward needs are saved, not
   recomputed: on the NumPy backend recomputing costs more than keeping them). Everything
   the backward reads from the forward is saved (``save_for_backward``, so eager's
   modified-in-place checks hold).
3. **Runtime.** Both graphs are compiled with the region's backend (the backward on first
   use) and run as one ``CompiledFunction`` autograd node: ``loss.backward()`` walks it like any
   other node, gradients reach parameters through ordinary leaf accumulation, and regions on
   either side of a graph break chain through the tensors that cross the break.

Under ``create_graph=True`` the backward graph runs as a ``CompiledBackward`` node: the
first-order gradients come out connected (requiring grad where eager's would) and
differentiating them again raises, as torch.compile's AOTAutograd does.

Random ops stay in the forward graph, run in graph order and draw from ember's counter-based
Philox generator (``ember.tensor.random``) exactly as eager does; the backward reads the saved
mask. A compiled step and an eager step from the same generator state therefore make
bit-identical dropout masks.

Regions that this path does not take (the eager backend replays them op by op under autograd):
graph inputs that are not tensors, outputs that are graph inputs or views of them (they must
stay views of the caller's tensors), and any failure of the joint trace.
"""

from __future__ import annotations

import operator

from ember.autograd.function import Function
from ember.autograd.grad_mode import _grad, enable_grad, grad_state
from ember.compiler.embeds import fold_embeds
from ember.compiler.graph import Graph, GraphModule, Node
from ember.compiler.meta import MetaUnsupported, is_impure, lazy_bits, map_args, to_meta
from ember.compiler.tracing import RecordingMode, _snapshot
from ember.core.device import CPU, META
from ember.dispatch import Operator, Tag
from ember.tensor import Tensor
from ember.tensor.tensor import empty_tensor

__all__ = ["AotUnsupported", "trace_joint", "partition", "compile_training", "JointGraph",
           "CompiledBackward"]


class AotUnsupported(RuntimeError):
    """The region cannot be compiled for training; the caller uses the eager backend."""


class _JointTracer(RecordingMode):
    """``RecordingMode`` for the joint trace: a meta tensor it has not seen is an error, and a
    captured real tensor that requires grad cannot be a constant."""

    def node_of(self, t: Tensor) -> Node:
        hit = self._nodes.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        if t._device is META:
            node = self.alias_node(t)
            if node is not None:
                return node
            raise AotUnsupported("a meta tensor that is neither an input nor the result of a "
                                 "traced op reached an operator")
        if t.requires_grad:
            raise AotUnsupported("the region reads a tensor constant that requires grad")
        return super().node_of(t)


class JointGraph:
    """The traced joint graph and what the partitioner needs to know about it."""

    def __init__(self, graph, primals, tangents, fwd_outputs, grad_outputs, diff_outputs,
                 grad_inputs):
        self.graph = graph
        self.primals = primals              # placeholder per captured-graph input
        self.tangents = tangents            # placeholder per differentiable output
        self.fwd_outputs = fwd_outputs      # the captured graph's outputs (Nodes / values)
        self.grad_outputs = grad_outputs    # Node or None per input that requires grad
        self.diff_outputs = diff_outputs    # indices of fwd_outputs that get a tangent
        self.grad_inputs = grad_inputs      # indices of primals that require grad


def _flat(x) -> list:
    if isinstance(x, tuple | list):
        return [b for a in x for b in _flat(a)]
    return [x]


def _unflatten(template, it):
    if isinstance(template, tuple):
        return tuple(_unflatten(a, it) for a in template)
    if isinstance(template, list):
        return [_unflatten(a, it) for a in template]
    return next(it)


def trace_joint(graph: Graph, example_inputs) -> JointGraph:
    """Trace ``graph``'s forward and ember's backward over it into one joint graph.

    Raises:
        AotUnsupported: the region cannot be traced for training (see the module docstring).
    """
    phs = graph.placeholders()
    if len(phs) != len(example_inputs):
        raise AotUnsupported("placeholders and inputs differ in number")
    out_node = graph.output_node
    if out_node is None:
        raise AotUnsupported("graph has no output")
    jg = Graph()
    devices = [a.device for a in example_inputs if isinstance(a, Tensor)]
    tracer = _JointTracer(jg, devices[0] if devices else CPU)
    primals, metas, grad_inputs = [], [], []
    for i, (ph, ex) in enumerate(zip(phs, example_inputs)):
        if not isinstance(ex, Tensor):
            raise AotUnsupported("a graph input is not a tensor")
        m = to_meta(ex) if ex._device is not META else ex
        if ex.requires_grad and m is ex:
            m = m.detach().requires_grad_(True)
        node = jg.placeholder(ph.name, _snapshot(m), source=ph.meta.get("source"))
        node.meta["requires_grad"] = m.requires_grad
        tracer.bind(m, node)
        primals.append(node)
        metas.append(m)
        if m.requires_grad:
            grad_inputs.append(i)
    gm = GraphModule(graph)
    try:
        with enable_grad(), tracer:
            outs = gm(*metas)
    except AotUnsupported:
        raise
    except Exception as e:
        raise AotUnsupported(f"forward trace failed: {type(e).__name__}: {e}") from e
    flat = _flat(outs)
    diff = [k for k, o in enumerate(flat) if isinstance(o, Tensor) and o.requires_grad]
    tangents, tmetas = [], []
    for k in diff:
        o = flat[k]
        tm = empty_tensor(o._shape, o._dtype, META)
        node = jg.placeholder(f"tangent_{len(tangents)}", tm)
        tracer.bind(tm, node)
        tangents.append(node)
        tmetas.append(tm)
    fwd_outputs = [tracer.node_of(o) if isinstance(o, Tensor) else o for o in flat]
    grads: tuple = ()
    if diff and grad_inputs:
        from ember.autograd import grad as autograd_grad

        try:
            with tracer:
                grads = autograd_grad([flat[k] for k in diff], [metas[i] for i in grad_inputs],
                                      tmetas, allow_unused=True)
        except AotUnsupported:
            raise
        except Exception as e:
            raise AotUnsupported(f"backward trace failed: {type(e).__name__}: {e}") from e
    else:
        grads = (None,) * len(grad_inputs)
    grad_outputs = [tracer.node_of(g) if isinstance(g, Tensor) else None for g in grads]
    joint = JointGraph(jg, primals, tangents, fwd_outputs, grad_outputs, diff, grad_inputs)
    joint.structure = out_node.args[0]
    return joint


def _aliases_input(node) -> bool:
    """Whether ``node`` is a graph input or a view chain from one (it must stay a view)."""
    cur = node
    while isinstance(cur, Node) and cur.op == "call" and (cur.target is operator.getitem or (
            isinstance(cur.target, Operator) and (Tag.view in cur.target.tags
                                                  or cur.target._is_inplace))):
        cur = cur.args[0]
    return isinstance(cur, Node) and cur.op == "placeholder"


_MAY_ALIAS = frozenset({"reshape", "flatten", "_unsafe_view", "contiguous", "view_as",
                        "expand_as", "_to_copy_noop", "alias"})


def _aliases_arg0(n: Node) -> bool:
    t = n.target
    return isinstance(t, Operator) and bool(n.args) and isinstance(n.args[0], Node) and (
        Tag.view in t.tags or t._is_inplace or t.name in _MAY_ALIAS)


_FINAL = -1  # key of the final-writes table in _inputs_with_mutations' result


def _inputs_with_mutations(graph: Graph) -> dict:
    """Each call's inputs plus the latest in-place op on storage it reads.

    A derivative rule may write through a view of a buffer it made (``zeros`` then
    ``narrow(...).copy_(grad)``) and read the buffer afterwards; the write is an input of that
    read even though no data edge says so. Mutations of one storage chain through each other,
    so the latest one is enough.
    """
    root: dict[int, int] = {}
    last_write: dict[int, Node] = {}
    deps: dict[int, list[Node]] = {}
    for n in graph.nodes:
        ins = n.input_nodes()
        if n.op != "call":
            root[id(n)] = id(n)
            deps[id(n)] = ins
            continue
        extra = []
        for i in ins:
            w = last_write.get(root.get(id(i), id(i)))
            if w is not None and w is not n and all(w is not e for e in extra):
                extra.append(w)
        deps[id(n)] = ins + extra
        if _aliases_arg0(n):
            root[id(n)] = root.get(id(n.args[0]), id(n.args[0]))
            if n.target._is_inplace:
                last_write[root[id(n)]] = n
        else:
            root[id(n)] = id(n)
    # the graph's outputs are read after its last op: they see every write to their storage
    deps[_FINAL] = {id(n): w for n in graph.nodes
                    if (w := last_write.get(root.get(id(n), id(n)))) is not None and w is not n}
    return deps


def _ancestors(roots, inputs: dict[int, list[Node]]) -> set[int]:
    seen: set[int] = set()
    stack = [r for r in roots if isinstance(r, Node)]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        stack.extend(inputs[id(n)])
    return seen


def _copy_node(g: Graph, n: Node, env: dict) -> Node:
    def sub(a):
        return env[id(a)] if isinstance(a, Node) else a

    meta = {k: v for k, v in n.meta.items() if k in ("val", "loc", "stack")}
    meta["grad_mode"] = False
    meta["requires_grad"] = False
    return g.call(n.target, map_args(n.args, sub), map_args(n.kwargs, sub), meta=meta)


def partition(joint: JointGraph, recompute_pointwise: bool = False):
    """Split the joint graph into a forward and a backward graph (see the module docstring).

    ``recompute_pointwise``: a saved pointwise value whose inputs are all saved anyway and
    whose backward readers are all pointwise (a GELU output scaled by a parameter, next to
    GELU's input) is recomputed in the backward instead: the C backend fuses it into those
    readers' kernel, so it costs no pass and no memory. One read by a matmul's gradient stays
    saved: recomputing it would be one more full pass over it in every step.

    Returns:
        ``(forward, backward, n_saved)``: ``forward`` maps the primals to the outputs followed
        by the ``n_saved`` saved values; ``backward`` maps the saved values followed by the
        tangents to the input gradients (``None`` where an input gets no gradient).
    """
    jg = joint.graph
    tangent_ids = {id(t) for t in joint.tangents}
    inputs = _inputs_with_mutations(jg)
    dep: set[int] = set(tangent_ids)
    for n in jg.nodes:
        if n.op == "call" and any(id(i) in dep for i in inputs[id(n)]):
            dep.add(id(n))
    # forward: what the outputs need, and every state-changing op with its inputs
    roots = list(joint.fwd_outputs)
    roots += [inputs[_FINAL][id(o)] for o in roots
              if isinstance(o, Node) and id(o) in inputs[_FINAL]]
    roots += [n for n in jg.nodes if n.op == "call" and id(n) not in dep
              and is_impure(n.target, n.kwargs)]
    fw_need = _ancestors(roots, inputs)
    # backward: tangent-dependent nodes, and forward-side nodes only the backward reads
    saved: dict[int, Node] = {}
    bw_nodes: set[int] = set()
    stack = [g for g in joint.grad_outputs if isinstance(g, Node)]
    stack += [inputs[_FINAL][id(g)] for g in stack if id(g) in inputs[_FINAL]]
    while stack:
        n = stack.pop()
        if id(n) in bw_nodes or id(n) in saved or id(n) in tangent_ids:
            continue
        if n.op == "placeholder" or (id(n) in fw_need and id(n) not in dep
                                     and n.op != "constant") or (
                n.target is operator.getitem and id(n.args[0]) not in dep):
            saved[id(n)] = n
            continue
        bw_nodes.add(id(n))
        stack.extend(inputs[id(n)])
    # views of inputs (``w.t()`` read by a matmul's gradient) are recomputed, not saved: the
    # backward takes the input itself (never one written in place: its view would change)
    written = inputs[_FINAL]
    for n in list(saved.values()):
        if (n.op == "call" and isinstance(n.target, Operator) and Tag.view in n.target.tags
                and not n.target._is_inplace and id(n) not in written
                and all(i.op == "placeholder" and id(i) not in written
                        for i in inputs[id(n)])):
            del saved[id(n)]
            bw_nodes.add(id(n))
            for i in inputs[id(n)]:
                saved[id(i)] = i
    if recompute_pointwise:
        _recompute_pointwise(saved, bw_nodes, inputs, written)
    order = {id(n): i for i, n in enumerate(jg.nodes)}
    saved_list = sorted(saved.values(), key=lambda n: order[id(n)])
    fw_need |= _ancestors(saved_list, inputs)

    fg = Graph()
    env: dict[int, Node] = {}
    for p in joint.primals:
        env[id(p)] = fg.placeholder(p.name, p.meta["val"], source=p.meta.get("source"))
    for n in jg.nodes:
        if id(n) not in fw_need or id(n) in env:
            continue
        if n.op == "constant":
            env[id(n)] = fg.constant(jg.constants[n.name])
        elif n.op == "call":
            env[id(n)] = _copy_node(fg, n, env)

    def out(a):
        return env[id(a)] if isinstance(a, Node) else a

    fg.output(tuple(out(a) for a in joint.fwd_outputs) + tuple(env[id(s)] for s in saved_list))

    bg = Graph()
    benv: dict[int, Node] = {}
    for s in saved_list:
        benv[id(s)] = bg.placeholder(f"saved_{s.name}", s.meta["val"])
    for t in joint.tangents:
        benv[id(t)] = bg.placeholder(t.name, t.meta["val"])
    for n in jg.nodes:
        if id(n) not in bw_nodes or id(n) in benv:
            continue
        if n.op == "constant":
            benv[id(n)] = bg.constant(jg.constants[n.name])
        elif n.op == "call":
            benv[id(n)] = _copy_node(bg, n, benv)
    bg.output(tuple(benv[id(g)] if isinstance(g, Node) else None for g in joint.grad_outputs))
    return fg, bg, len(saved_list)


def _recompute_pointwise(saved: dict, bw_nodes: set, inputs: dict, written: dict) -> None:
    """Move saved pointwise nodes whose tensor inputs are all saved, and whose backward
    readers are all pointwise, to the backward graph (repeatedly: a chain of them goes back
    to its saved root)."""
    changed = True
    while changed:
        changed = False
        for key, n in list(saved.items()):
            t = n.target
            if (n.op != "call" or not isinstance(t, Operator) or Tag.pointwise not in t.tags
                    or t._is_inplace or Tag.random in t.tags or key in written
                    or is_impure(t, n.kwargs) or not isinstance(n.val, Tensor)):
                continue
            ins = inputs[key]
            if not ins or any(id(i) not in saved and i.op != "constant" for i in ins):
                continue
            if not all(_is_pointwise(u) for u in n.users if id(u) in bw_nodes):
                continue
            if any(id(i) in written for i in ins):
                continue
            del saved[key]
            bw_nodes.add(key)
            changed = True


def _is_pointwise(n: Node) -> bool:
    t = n.target
    return n.op == "call" and isinstance(t, Operator) and Tag.pointwise in t.tags


def _resolve_bits(g):
    """``g`` without lazy bits (a conjugated or negated view becomes a tensor of its values)."""
    if isinstance(g, Tensor) and any(lazy_bits(g)):
        return g.clone()    # clone materialises the values, as ``resolve_conj`` does
    return g


class CompiledFunction(Function):
    """The autograd node of one call of a compiled training region."""

    @staticmethod
    def forward(ctx, region, *inputs):
        outs = region.fw(*inputs)
        n = region.n_out
        ctx.region = region
        ctx.save_for_backward(*outs[n:])
        user = outs[:n]
        non_diff = [o for k, o in enumerate(user) if isinstance(o, Tensor)
                    and k not in region.diff_set]
        if non_diff:
            ctx.mark_non_differentiable(*non_diff)
        return tuple(user)

    @staticmethod
    def backward(ctx, *grads):
        region = ctx.region
        # the backward graph was traced with plain tangents: an incoming gradient with a lazy
        # bit (``out.conj()`` used downstream) is materialised first, since a traced
        # ``view_as_real``/``resolve_conj`` on it would refuse or take the other branch
        tangents = [_resolve_bits(grads[k]) for k in region.diff]
        if grad_state().enabled:        # create_graph=True: gradients that refuse a 2nd pass
            res = CompiledBackward.apply(region, *ctx.saved_tensors, *tangents)
        else:
            res = region.backward_fn()(*ctx.saved_tensors, *tangents)
        out = [None] * (1 + region.n_in)
        for j, i in enumerate(region.grad_inputs):
            out[1 + i] = res[j]
        return tuple(out)


DOUBLE_BACKWARD = ("ember.compile: double backward through a compiled region is not supported "
                   "(torch.compile with aot_autograd does not support it either): the "
                   "gradients it returned under create_graph=True cannot be differentiated; "
                   "run the code eagerly (ember.compiler.disable) to take higher derivatives")


class CompiledBackward(Function):
    """The backward graph run under ``create_graph=True``: its results are connected to the
    saved values and the incoming gradients (so they require grad as eager's would), and
    differentiating them raises (torch's AOTAutograd behaves the same way)."""

    @staticmethod
    def forward(ctx, region, *args):
        return tuple(region.backward_fn()(*args))

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(DOUBLE_BACKWARD)


class TrainingRegion:
    """A compiled forward graph, its backward graph (compiled on first use) and the wrapper
    that runs them as one ``CompiledFunction`` node. Calling it returns the outputs."""

    def __init__(self, fw_graph, bw_graph, joint: JointGraph, n_in, backend, example_inputs):
        from ember.compiler.backends import compile_graph

        self.fw_graph, self.bw_graph = fw_graph, bw_graph
        self.backend = backend
        self.n_in = n_in
        self.n_out = len(joint.fwd_outputs)
        self.diff = list(joint.diff_outputs)
        self.diff_set = frozenset(self.diff)
        self.grad_inputs = list(joint.grad_inputs)
        self.fw = compile_graph(fw_graph, example_inputs, backend, _training=False)
        self._bw = None
        out = joint.structure
        flat_tuple = isinstance(out, tuple) and not any(isinstance(a, tuple | list) for a in out)
        self.structure = None if flat_tuple else joint.structure

    def backward_fn(self):
        if self._bw is None:
            from ember.compiler.backends import compile_graph

            examples = [p.meta["val"] for p in self.bw_graph.placeholders()]
            self._bw = compile_graph(self.bw_graph, examples, self.backend, _training=False)
        return self._bw

    def __call__(self, *inputs):
        if _grad.enabled:
            outs = CompiledFunction.apply(self, *inputs)
        else:  # the region starts inside a no_grad block and leaves it
            with enable_grad():
                outs = CompiledFunction.apply(self, *inputs)
        if self.structure is None:
            return outs
        return _unflatten(self.structure, iter(outs))


def compile_training(graph: Graph, example_inputs, backend) -> TrainingRegion:
    """Compile ``graph`` for training with ``backend`` (see NOTE [Compiled training regions]).

    Raises:
        AotUnsupported: the region must run on the eager backend instead.
    """
    out_node = graph.output_node
    if out_node is None:
        raise AotUnsupported("graph has no output")
    outs = _flat(out_node.args[0])
    if any(isinstance(o, Node) and _aliases_input(o) for o in outs):
        raise AotUnsupported("an output is a graph input or a view of one")
    if any(isinstance(o, Node) and isinstance(o.val, tuple | list) for o in outs):
        raise AotUnsupported("an output is a tuple")
    try:
        joint = trace_joint(graph, example_inputs)
    except MetaUnsupported as e:
        raise AotUnsupported(str(e)) from e
    from ember.compiler.backends import lookup_backend

    # on the C backend a recomputed pointwise op is one more fused kernel; on the NumPy
    # backend it costs more than the memory it saves
    fused = lookup_backend(backend) is lookup_backend("c")
    fg, bg, _n_saved = partition(joint, recompute_pointwise=fused)
    fold_embeds(bg)
    return TrainingRegion(fg, bg, joint, len(example_inputs), backend, example_inputs)
