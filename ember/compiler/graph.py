"""The graph IR: an FX-like list of nodes (placeholder / call / constant / output).

A ``Graph`` is append-only and topologically ordered by construction. Each ``call`` node runs
its target (an ember ``Operator`` or a plain Python callable such as ``operator.getitem``) on
meta tensors as it is added, so ``node.meta["val"]`` always holds the result's shape, strides
and dtype. The graph prints as Python (``python_code()``); ``GraphModule`` executes that code
with ember ops. Passes: ``dce`` (dead code), ``cse`` (common subexpressions), ``lint``.
Backends (``ember.compiler.backends``) turn a graph into something faster.
"""

from __future__ import annotations

import keyword
import math
import operator
import re
from types import SimpleNamespace

from ember.autograd.grad_mode import grad_state
from ember.compiler.meta import is_impure, map_args, requires_grad_of, run_meta
from ember.core.device import Device
from ember.core.dtype import DType
from ember.dispatch import Operator
from ember.tensor import Tensor

__all__ = ["Node", "Graph", "GraphModule", "describe_val"]

_OPS = ("placeholder", "call", "constant", "output")
# Names the generated code binds globally; nodes never take them.
_RESERVED = ("getitem", "device", "inf", "aten", "prims", "float32", "float64", "float16",
             "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool", "self", "forward",
             "float", "int", "len", "range", "tuple", "list", "slice", "None", "True", "False")


class Node:
    """One value of a graph: an input (``placeholder``), an op call, a constant or the output.

    ``args``/``kwargs`` hold other Nodes and Python constants (nested tuples/lists allowed);
    ``meta["val"]`` is the result on the meta device (a tensor, a tuple of them, or a Python
    value); ``users`` lists the nodes that read this one, in graph order.

    Example:
        >>> gm = ember.compiler.explain(lambda x: (x + 1).relu())(ember.ones(2)).graphs[0]
        >>> nodes = list(gm.graph.nodes)
        >>> nodes[0].op, nodes[-1].op
        ('placeholder', 'output')
    """

    __slots__ = ("graph", "name", "op", "target", "args", "kwargs", "meta", "users")

    def __init__(self, graph: Graph, name: str, op: str, target, args: tuple, kwargs: dict,
                 meta: dict):
        self.graph, self.name, self.op, self.target = graph, name, op, target
        self.args, self.kwargs, self.meta = args, kwargs, meta
        self.users: list[Node] = []

    # -- what the value looks like --------------------------------------------------------------
    @property
    def val(self):
        return self.meta.get("val")

    @property
    def shape(self):
        return self.val.shape

    @property
    def dtype(self):
        return self.val.dtype

    @property
    def ndim(self) -> int:
        return self.val.ndim

    def stride(self, dim: int | None = None):
        return self.val.stride(dim)

    def size(self, dim: int | None = None):
        return self.val.size(dim)

    @property
    def requires_grad(self) -> bool:
        return bool(self.meta.get("requires_grad", False))

    def input_nodes(self) -> list[Node]:
        """The distinct nodes among ``args``/``kwargs``, in first-use order."""
        seen: dict[int, Node] = {}

        def visit(a):
            if isinstance(a, Node):
                seen.setdefault(id(a), a)
            return a

        map_args((self.args, self.kwargs), visit)
        return list(seen.values())

    def __repr__(self) -> str:
        return self.name


def describe_val(val) -> str:
    """Short type text of a meta value: ``f32[3, 4]``, ``(f32[2], i64[2])``, ``int``."""
    if isinstance(val, Tensor):
        return f"{_short_dtype(val.dtype)}[{', '.join(str(d) for d in val.shape)}]"
    if isinstance(val, tuple | list):
        return "(" + ", ".join(describe_val(v) for v in val) + ")"
    return type(val).__name__


_SHORT = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
          "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
          "bool": "b8"}


def _short_dtype(dtype: DType) -> str:
    name = str(dtype).removeprefix("ember.")
    return _SHORT.get(name, name)


def _target_name(target) -> str:
    if isinstance(target, Operator):
        return target.name
    return getattr(target, "__name__", type(target).__name__)


def _sanitize(name: str) -> str:
    name = re.sub(r"\W", "_", name)
    if not name or name[0].isdigit():
        name = "_" + name
    return name + "_" if keyword.iskeyword(name) else name


class Graph:
    """An append-only, topologically ordered list of Nodes.

    Example:
        >>> import ember
        >>> g = Graph()
        >>> x = g.placeholder("x", ember.ones(3))
        >>> y = g.call("relu.default", (g.call("add.Tensor", (x, x)),))
        >>> _ = g.output((y,))
        >>> print(g.python_code().splitlines()[1].strip())
        add = aten.add.Tensor(x, x)  # f32[3]
    """

    def __init__(self):
        self.nodes: list[Node] = []
        self.constants: dict[str, Tensor] = {}
        self._names: dict[str, int] = dict.fromkeys(_RESERVED, 0)
        self._output: Node | None = None

    # -- construction --------------------------------------------------------------------------
    def _fresh(self, base: str) -> str:
        base = _sanitize(base)
        if base not in self._names:
            self._names[base] = 0
            return base
        n = self._names[base]
        while True:
            n += 1
            name = f"{base}_{n}"
            if name not in self._names:
                break
        self._names[base] = n
        self._names[name] = 0
        return name

    def _add(self, op: str, name: str, target, args: tuple, kwargs: dict, meta: dict) -> Node:
        if self._output is not None:
            raise RuntimeError("Graph: cannot add nodes after output()")
        node = Node(self, self._fresh(name), op, target, args, kwargs, meta)
        for inp in node.input_nodes():
            inp.users.append(node)
        self.nodes.append(node)
        return node

    def placeholder(self, name: str, val=None, source: str | None = None) -> Node:
        """A graph input. ``val``: an example (a tensor is stored as its meta version)."""
        meta = {"val": _as_meta_val(val), "source": source}
        if isinstance(val, Tensor):
            meta["requires_grad"] = val.requires_grad
        return self._add("placeholder", name, name, (), {}, meta)

    def constant(self, value: Tensor, name: str = "_tensor_constant") -> Node:
        """A tensor the graph reads but does not take as an input (kept by the graph)."""
        node = self._add("constant", name, None, (), {}, {"val": _as_meta_val(value),
                                                           "requires_grad": value.requires_grad})
        node.target = node.name
        self.constants[node.name] = value
        return node

    def call(self, target, args: tuple = (), kwargs: dict | None = None,
             meta: dict | None = None) -> Node:
        """Append a call of ``target`` (Operator, ``"ns::op.overload"`` name, or callable).

        Computes ``meta["val"]`` by running the target on meta tensors.

        Raises:
            MetaUnsupported: the op cannot run without data; no node is added.
        """
        from ember.dispatch import get_op

        if isinstance(target, str):
            target = get_op(target)
        kwargs = dict(kwargs or {})
        args = tuple(args)
        info = dict(meta or {})
        if "val" not in info:
            info["val"] = run_meta(target, args, kwargs)
        info.setdefault("requires_grad", requires_grad_of(target, args, kwargs))
        info.setdefault("grad_mode", grad_state().enabled)
        if isinstance(target, Operator):
            self._names.setdefault(target.namespace, 0)
        else:
            self._names.setdefault(_render_target(target), 0)
        return self._add("call", _target_name(target), target, args, kwargs, info)

    def insert_call(self, before: Node, target, args: tuple = (), kwargs: dict | None = None,
                    meta: dict | None = None) -> Node:
        """:meth:`call`, placed just before node ``before`` (which may be the output)."""
        output, self._output = self._output, None
        try:
            node = self.call(target, args, kwargs, meta)
        finally:
            self._output = output
        self.nodes.pop()
        self.nodes.insert(self.nodes.index(before), node)
        return node

    def replace_all_uses_with(self, old: Node, new: Node) -> None:
        """Make every reader of ``old`` read ``new`` instead (``old`` is left without users)."""
        for user in list(old.users):
            if user is not new:
                _rewrite_inputs(user, {id(old): new})

    def output(self, value) -> Node:
        """Mark the graph's result (a tuple of Nodes/constants, or one value)."""
        node = self._add("output", "output", "output", (value,), {}, {})
        self._output = node
        return node

    # -- queries -------------------------------------------------------------------------------
    def placeholders(self) -> list[Node]:
        return [n for n in self.nodes if n.op == "placeholder"]

    def calls(self) -> list[Node]:
        return [n for n in self.nodes if n.op == "call"]

    @property
    def output_node(self) -> Node | None:
        return self._output

    def op_count(self) -> int:
        """Number of op calls (``getitem`` of multi-output ops not counted)."""
        return sum(1 for n in self.nodes if n.op == "call" and n.target is not operator.getitem)

    # -- passes --------------------------------------------------------------------------------
    def erase_node(self, node: Node) -> None:
        """Remove a node that has no users."""
        if node.users:
            raise RuntimeError(f"erase_node: {node.name} still has users {node.users}")
        for inp in node.input_nodes():
            inp.users = [u for u in inp.users if u is not node]
        self.nodes.remove(node)
        if node.op == "constant":
            self.constants.pop(node.name, None)

    def dce(self) -> int:
        """Remove op calls and constants whose results are never used; returns how many.

        Impure calls (in-place, random, ``out=``) stay: removing them would change state.
        """
        removed = 0
        for node in reversed(list(self.nodes)):
            if node.users or node.op not in ("call", "constant"):
                continue
            if node.op == "call" and is_impure(node.target, node.kwargs):
                continue
            self.erase_node(node)
            removed += 1
        return removed

    def cse(self) -> int:
        """Merge identical pure calls on identical inputs; returns how many were merged.

        Calls made under different grad modes are never merged (their results differ in
        ``requires_grad``), nor are impure ones.
        """
        seen: dict = {}
        replace: dict[int, Node] = {}
        merged = 0
        for node in list(self.nodes):
            if replace:
                _rewrite_inputs(node, replace)
            if node.op != "call" or is_impure(node.target, node.kwargs):
                continue
            try:
                key = (node.target, _key(node.args), _key(node.kwargs),
                       node.meta.get("grad_mode"))
                hash(key)
            except TypeError:
                continue
            prev = seen.get(key)
            if prev is None:
                seen[key] = node
                continue
            replace[id(node)] = prev
            merged += 1
        for node in reversed(list(self.nodes)):
            if id(node) in replace:
                self.erase_node(node)
        return merged

    def lint(self) -> None:
        """Check invariants: unique names, inputs defined before use, users consistent, one
        output at the end. Raises RuntimeError naming the first violation."""
        defined: set[int] = set()
        names: set[str] = set()
        for i, node in enumerate(self.nodes):
            if node.op not in _OPS:
                raise RuntimeError(f"lint: node {node.name} has unknown op {node.op!r}")
            if node.name in names:
                raise RuntimeError(f"lint: duplicate node name {node.name}")
            names.add(node.name)
            for inp in node.input_nodes():
                if id(inp) not in defined:
                    raise RuntimeError(f"lint: {node.name} uses {inp.name} before it is defined")
                if node not in inp.users:
                    raise RuntimeError(f"lint: {inp.name}.users misses {node.name}")
            if node.op == "output" and i != len(self.nodes) - 1:
                raise RuntimeError("lint: output is not the last node")
            defined.add(id(node))
        for node in self.nodes:
            for u in node.users:
                if u not in self.nodes:
                    raise RuntimeError(f"lint: {node.name} has a user outside the graph")

    # -- printing ------------------------------------------------------------------------------
    def python_code(self, fn_name: str = "forward") -> str:
        """The graph as Python source: ``def forward(x, y): ...`` with a type comment per line."""
        params = ", ".join(n.name for n in self.placeholders())
        lines = [f"def {fn_name}({params}):"]
        for node in self.nodes:
            if node.op == "call":
                call = f"{_render_target(node.target)}({_render_call_args(node)})"
                lines.append(f"    {node.name} = {call}  # {describe_val(node.val)}")
            elif node.op == "output":
                lines.append(f"    return {_render(node.args[0])}")
        if self._output is None:
            lines.append("    return None")
        return "\n".join(lines) + "\n"

    @property
    def code(self) -> str:
        return self.python_code()

    def print_readable(self, print_output: bool = True) -> str:
        """The generated code with each input's source and type; printed unless told not to."""
        head = [f"# {n.name}: {describe_val(n.val)}" + (f"  (source {n.meta['source']})"
                                                          if n.meta.get("source") else "")
                for n in self.placeholders()]
        text = "\n".join([*head, self.python_code()])
        if print_output:
            print(text)
        return text

    def print_tabular(self) -> str:
        """One row per node: opcode, name, target, args, kwargs (printed and returned)."""
        rows = [("opcode", "name", "target", "args", "kwargs")]
        for n in self.nodes:
            target = _render_target(n.target) if n.op == "call" else str(n.target)
            rows.append((n.op, n.name, target, _render(n.args), _render(n.kwargs)))
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        text = "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)
        print(text)
        return text

    def __str__(self) -> str:
        return self.python_code()


def _as_meta_val(val):
    from ember.compiler.meta import to_meta

    return map_args(val, lambda v: to_meta(v) if isinstance(v, Tensor) else v)


def _key(x):
    if isinstance(x, Node):
        return ("node", id(x))
    if isinstance(x, tuple | list):
        return (type(x).__name__, *(_key(a) for a in x))
    if isinstance(x, dict):
        return ("dict", *sorted((k, _key(v)) for k, v in x.items()))
    if isinstance(x, float) and math.isnan(x):
        return ("nan",)
    return (type(x).__name__, x)


def _rewrite_inputs(node: Node, replace: dict[int, Node]) -> None:
    def sub(a):
        return replace.get(id(a), a) if isinstance(a, Node) else a

    old = node.input_nodes()
    node.args = map_args(node.args, sub)
    node.kwargs = map_args(node.kwargs, sub)
    for inp in old:
        if id(inp) in replace:
            inp.users = [u for u in inp.users if u is not node]
            new = replace[id(inp)]
            if node not in new.users:
                new.users.append(node)


# -- rendering --------------------------------------------------------------------------------
def _render_target(target) -> str:
    if isinstance(target, Operator):
        return f"{target.namespace}.{target.name}.{_sanitize(target.overload)}"
    if target is operator.getitem:
        return "getitem"
    return _sanitize(getattr(target, "__name__", "fn"))


def _render_call_args(node: Node) -> str:
    parts = [_render(a) for a in node.args]
    parts += [f"{k}={_render(v)}" for k, v in node.kwargs.items()]
    return ", ".join(parts)


def _render(x) -> str:
    if isinstance(x, Node):
        return x.name
    if isinstance(x, tuple):
        inner = ", ".join(_render(a) for a in x)
        return f"({inner},)" if len(x) == 1 else f"({inner})"
    if isinstance(x, list):
        return "[" + ", ".join(_render(a) for a in x) + "]"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {_render(v)}" for k, v in x.items()) + "}"
    if isinstance(x, float) and not math.isfinite(x):
        return f"float('{x}')"
    if isinstance(x, DType):
        return str(x).removeprefix("ember.")
    if isinstance(x, Device):
        return f"device({str(x)!r})"
    if x is None or isinstance(x, bool | int | float | str):
        return repr(x)
    if isinstance(x, slice):
        return f"slice({_render(x.start)}, {_render(x.stop)}, {_render(x.step)})"
    if x is Ellipsis:
        return "..."
    return f"_const({type(x).__name__})"


def code_globals(graph: Graph) -> tuple[dict, dict[int, str]]:
    """The names the generated code refers to: op namespaces, callables, dtypes, constants.

    Returns the globals dict and, for constants without a literal spelling, the name each one
    is bound to (``id(value) -> name``); ``python_code`` renders those as ``_const(T)`` for
    display, and :func:`executable_code` substitutes the bound names.
    """
    from ember.core import dtype as dt
    from ember.core.device import device

    g: dict = {"getitem": operator.getitem, "device": device, "inf": math.inf}
    for name in ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32",
                 "int64", "uint8", "complex64", "complex128"):
        if hasattr(dt, name):
            g[name] = getattr(dt, name)
    g["bool"] = dt.bool_
    namespaces: dict[str, dict[str, SimpleNamespace]] = {}
    for node in graph.nodes:
        if node.op != "call":
            continue
        t = node.target
        if isinstance(t, Operator):
            ns = namespaces.setdefault(t.namespace, {})
            packet = ns.setdefault(t.name, SimpleNamespace())
            setattr(packet, _sanitize(t.overload), t)
        elif t is not operator.getitem:
            g[_render_target(t)] = t
    for ns, packets in namespaces.items():
        g[ns] = SimpleNamespace(**packets)
    return g, {}


def executable_code(graph: Graph, fn_name: str = "forward") -> tuple[str, dict]:
    """Source and globals that run the graph with ember ops (constants bound by name)."""
    g, _ = code_globals(graph)
    consts: dict[int, str] = {}

    def bind(x):
        if isinstance(x, Node) or _render(x) != f"_const({type(x).__name__})":
            return x
        name = consts.setdefault(id(x), f"_c{len(consts)}")
        g[name] = x
        return _Named(name)

    params = ", ".join(n.name for n in graph.placeholders())
    modes = {n.meta.get("grad_mode") for n in graph.calls()} - {None}
    mixed = len(modes) > 1  # a no_grad block inside the graph: replay each node in its mode
    pad = "        " if mixed else "    "
    body, mode = [], None
    for node in graph.nodes:
        if node.op == "constant":
            g[node.name] = graph.constants[node.name]
        elif node.op == "call":
            if mixed and node.meta.get("grad_mode") not in (None, mode):
                mode = node.meta["grad_mode"]
                body.append(f"{pad}_gs.enabled = {mode}")
            args = map_args(node.args, bind)
            kwargs = map_args(node.kwargs, bind)
            parts = [_render_named(a) for a in args]
            parts += [f"{k}={_render_named(v)}" for k, v in kwargs.items()]
            body.append(f"{pad}{node.name} = {_render_target(node.target)}({', '.join(parts)})")
        elif node.op == "output":
            body.append(f"{pad}return {_render_named(map_args(node.args[0], bind))}")
    lines = [f"def {fn_name}({params}):"]
    if mixed:
        g["_gs"] = grad_state()
        lines += ["    _prev = _gs.enabled", "    try:", *body, "    finally:",
                  "        _gs.enabled = _prev"]
    else:
        lines += body
    return "\n".join(lines) + "\n", g


class _Named:
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


def _render_named(x) -> str:
    if isinstance(x, _Named):
        return x.name
    if isinstance(x, tuple):
        inner = ", ".join(_render_named(a) for a in x)
        return f"({inner},)" if len(x) == 1 else f"({inner})"
    if isinstance(x, list):
        return "[" + ", ".join(_render_named(a) for a in x) + "]"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {_render_named(v)}" for k, v in x.items()) + "}"
    return _render(x)


_counter = [0]


def compile_source(source: str, g: dict, fn_name: str, tag: str):
    """``exec`` generated source under a unique pseudo-file name (shown in tracebacks)."""
    import linecache

    _counter[0] += 1
    filename = f"<ember-{tag}-{_counter[0]}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), g)  # noqa: S102 - our own generated code
    return g[fn_name]


class GraphModule:
    """A callable over a Graph: runs the generated code with ember ops (torch.fx.GraphModule).

    ``gm(*inputs)`` returns what the graph's output returns; ``gm.code`` is the source;
    ``gm.graph`` the Graph.

    Example:
        >>> out = ember.compiler.explain(lambda x: (x + 1).relu())(ember.ones(2))
        >>> gm = out.graphs[0]
        >>> type(gm).__name__, gm(ember.tensor([-3.0, 1.0]))
        ('GraphModule', (tensor([0., 2.]),))
    """

    def __init__(self, graph: Graph, name: str = "forward"):
        self.graph = graph
        self._name = name
        self.recompile()

    def recompile(self) -> None:
        """Regenerate the code after the graph changed."""
        source, g = executable_code(self.graph, self._name)
        self._source = source
        self.forward = compile_source(source, g, self._name, "graph")

    @property
    def code(self) -> str:
        return self.graph.python_code(self._name)

    def print_readable(self, print_output: bool = True) -> str:
        return self.graph.print_readable(print_output)

    def __call__(self, *args):
        return self.forward(*args)

    def __repr__(self) -> str:
        return f"GraphModule(\n{self.code})"
