"""Dynamic shapes: symbolic sizes during capture, relational guards, per-size specialisation.

NOTE [Dynamic shapes]
A dimension becomes dynamic by ``ember.compile(dynamic=True)`` (every dimension of size >= 2
of every input), by ``ember._dynamo.mark_dynamic(t, dim)``, or automatically (``dynamic=None``)
after a recompile caused by a size change of that dimension (compiler-design.md 5.5; torch's
"automatic dynamic"). Its capture reads the input as a meta tensor whose sizes are
:class:`SymInt` values: ``int`` subclasses carrying an expression over symbols ``s0, s1, ...``
(each symbol is one input dimension). Arithmetic on them stays symbolic, so ``x.view(B * T, C)``
records ``B * T`` as an expression; a comparison (``if T > 8``, a broadcast check in an ember
op) answers with the example's value and records a guard that the answer stays the same
(``s0 >= 2`` is assumed, as in torch: sizes 0 and 1 specialise). The compiled entry's guards
check relations between sizes, not their values.

Backends see concrete graphs only: :func:`dynamic_graph` binds the symbols from the input
shapes at each call and compiles the graph specialised to those sizes once per size tuple (a
cheap re-propagation plus the backend's code generation; the C backend's kernels come from its
disk cache after the first process). Soundness check: a capture whose recorded shapes do not
follow its symbols (an ember op computed a size through code that drops the expression, so the
graph baked a constant) is detected at capture time by re-propagating the graph with other
sizes; such a frame is recaptured with static shapes.
"""

from __future__ import annotations

import operator
import weakref

from ember.tensor import Tensor

__all__ = ["SymInt", "ShapeEnv", "mark_dynamic", "marked_dynamic_dims", "has_symbols",
           "dynamic_graph", "stats"]

stats = {"specializations": 0}
_marked: dict[int, tuple] = {}        # id(tensor) -> (weakref, dims)


def mark_dynamic(t: Tensor, index) -> None:
    """Mark dimension(s) ``index`` of ``t`` dynamic for ``ember.compile`` (as
    ``torch._dynamo.mark_dynamic``): the first capture that reads ``t`` already treats those
    sizes as symbols, so other sizes reuse the compiled code.

    Raises:
        IndexError: a dimension out of range.
    """
    dims = (index,) if isinstance(index, int) else tuple(index)
    n = t.ndim
    for d in dims:
        if not -n <= d < n:
            raise IndexError(f"mark_dynamic: dimension {d} out of range for a {n}-d tensor")
    key = id(t)
    old = _marked.get(key)
    prev = old[1] if old is not None and old[0]() is t else ()
    ref = weakref.ref(t, lambda _r, key=key: _marked.pop(key, None))
    _marked[key] = (ref, tuple(sorted(set(prev) | {d % n for d in dims})))


def marked_dynamic_dims(t: Tensor) -> tuple:
    """Dimensions of ``t`` marked by :func:`mark_dynamic` (empty when none)."""
    hit = _marked.get(id(t))
    return hit[1] if hit is not None and hit[0]() is t else ()


class ShapeEnv:
    """The symbols of one capture (``sources[i]`` = (source, dim) of ``s<i>``), their example
    values, and the guards recorded on them (Python expressions over the symbols)."""

    def __init__(self):
        self.sources: list[tuple[str, int]] = []
        self.hints: list[int] = []
        self.guards: list[str] = []
        self._seen: set[str] = set()
        self.specialized = False
        # > 0 while an ember op runs on meta tensors: its internal size checks record no
        # guards (a specialisation re-runs the op with the real sizes anyway)
        self.quiet = 0

    def symbol(self, src: str, dim: int, hint: int) -> SymInt:
        i = len(self.sources)
        self.sources.append((src, dim))
        self.hints.append(int(hint))
        return SymInt(hint, f"s{i}", self)

    def guard(self, text: str) -> None:
        if text not in self._seen:
            self._seen.add(text)
            self.guards.append(text)

    def render(self, expr: str) -> str:
        """``expr`` with each symbol replaced by its source's size (Python over L and G)."""
        import re

        return re.sub(r"\bs(\d+)\b",
                      lambda m: "{}._shape[{}]".format(*self.sources[int(m.group(1))]), expr)

    def holds(self, values) -> bool:
        env = {f"s{i}": v for i, v in enumerate(values)}
        try:
            return all(eval(g, {}, env) for g in self.guards)  # noqa: S307 - our own text
        except Exception:  # noqa: BLE001
            return False


def _expr(x) -> str | None:
    if isinstance(x, SymInt):
        return x.expr
    if isinstance(x, int):
        return str(int(x))
    return None


def _is_atom(e: str) -> bool:
    return e.startswith("s") and e[1:].isdigit()


_CMP = {"eq": ("==", "!=", operator.eq), "ne": ("!=", "==", operator.ne),
        "lt": ("<", ">=", operator.lt), "le": ("<=", ">", operator.le),
        "gt": (">", "<=", operator.gt), "ge": (">=", "<", operator.ge)}


class SymInt(int):
    """A size during capture: an ``int`` (the example's value) with an expression over the
    capture's symbols (see NOTE [Dynamic shapes])."""

    def __new__(cls, value, expr: str, env: ShapeEnv):
        obj = int.__new__(cls, int(value))
        obj.expr = expr
        obj.env = env
        return obj

    def __repr__(self) -> str:
        return int.__repr__(self)

    __str__ = __repr__

    def __reduce__(self):
        return (int, (int(self),))

    def __hash__(self) -> int:
        return int.__hash__(self)

    def _arith(self, other, sym: str, fn, reflected=False):
        eo = _expr(other)
        if eo is None or isinstance(other, bool):
            return NotImplemented
        if not isinstance(other, SymInt):
            o = int(other)
            if (o == 0 and sym in ("+", "-") and not (reflected and sym == "-")) or \
                    (o == 1 and (sym == "*" or (sym == "//" and not reflected))):
                return self
            if o == 1 and sym == "%" and not reflected:
                return 0
            if o == 0 and sym == "*":
                return 0
        a, b = (eo, self.expr) if reflected else (self.expr, eo)
        value = fn(int(other), int(self)) if reflected else fn(int(self), int(other))
        if not isinstance(value, int):
            return value
        return SymInt(value, f"({a} {sym} {b})", self.env)

    def __add__(self, o):
        return self._arith(o, "+", operator.add)

    def __radd__(self, o):
        return self._arith(o, "+", operator.add, True)

    def __sub__(self, o):
        return self._arith(o, "-", operator.sub)

    def __rsub__(self, o):
        return self._arith(o, "-", operator.sub, True)

    def __mul__(self, o):
        return self._arith(o, "*", operator.mul)

    def __rmul__(self, o):
        return self._arith(o, "*", operator.mul, True)

    def __floordiv__(self, o):
        if _expr(o) is not None and int(o) == 0:
            return int(self) // int(o)
        return self._arith(o, "//", operator.floordiv)

    def __rfloordiv__(self, o):
        return self._arith(o, "//", operator.floordiv, True)

    def __mod__(self, o):
        if _expr(o) is not None and int(o) == 0:
            return int(self) % int(o)
        return self._arith(o, "%", operator.mod)

    def __rmod__(self, o):
        return self._arith(o, "%", operator.mod, True)

    def __neg__(self):
        return SymInt(-int(self), f"(-{self.expr})", self.env)

    def __pos__(self):
        return self

    def __abs__(self):
        return self._specialize()

    def _specialize(self) -> int:
        """The value as a plain int, guarded equal (a use the expressions cannot follow)."""
        if self.env.quiet:
            return int(self)
        self.env.guard(f"{self.expr} == {int(self)}")
        self.env.specialized = True
        return int(self)

    def __truediv__(self, o):
        return self._specialize() / o

    def __rtruediv__(self, o):
        return o / self._specialize()

    def __pow__(self, o, mod=None):
        return pow(self._specialize(), o, mod)

    def __rpow__(self, o):
        return pow(o, self._specialize())

    def __float__(self):
        return float(self._specialize())

    def __and__(self, o):
        return self._specialize() & o

    def __or__(self, o):
        return self._specialize() | o

    def __lshift__(self, o):
        return self._specialize() << o

    def __rshift__(self, o):
        return self._specialize() >> o

    def __divmod__(self, o):
        return (self // o, self % o)

    def __bool__(self) -> bool:
        return self._compare(0, "ne")

    def _compare(self, other, name: str) -> bool:
        eo = _expr(other)
        if eo is None:
            return NotImplemented
        sym, neg, fn = _CMP[name]
        res = fn(int(self), int(other))
        if self.env.quiet:
            return res
        # sizes of symbols are >= 2 (sizes 0 and 1 specialise): comparisons of a bare symbol
        # with a constant below 2 are known without a guard
        if _is_atom(self.expr) and not isinstance(other, SymInt) and int(other) <= 1:
            return res
        if eo == self.expr:
            return res
        self.env.guard(f"{self.expr} {sym if res else neg} {eo}")
        return res

    def __eq__(self, o):
        return self._compare(o, "eq")

    def __ne__(self, o):
        return self._compare(o, "ne")

    def __lt__(self, o):
        return self._compare(o, "lt")

    def __le__(self, o):
        return self._compare(o, "le")

    def __gt__(self, o):
        return self._compare(o, "gt")

    def __ge__(self, o):
        return self._compare(o, "ge")


def symbolic_strides(shape) -> tuple:
    """Row-major strides of a (possibly symbolic) ``shape``."""
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc = acc * s if not (isinstance(s, int) and int(s) == 0) else acc
    return tuple(reversed(out))


def symbolic_meta(t: Tensor, src: str, dims, env: ShapeEnv) -> Tensor:
    """A meta tensor like ``t`` whose sizes at ``dims`` are new symbols (``t`` contiguous)."""
    from ember.compiler.meta import to_meta

    m = to_meta(t)
    shape = tuple(env.symbol(src, d, s) if d in dims else s for d, s in enumerate(t.shape))
    m._shape = shape
    m._stride = symbolic_strides(shape)
    return m


def has_symbols(graph) -> bool:
    """Whether any placeholder of ``graph`` has a symbolic size."""
    for n in graph.nodes:
        if n.op == "placeholder" and isinstance(n.val, Tensor) and any(
                isinstance(s, SymInt) for s in n.val._shape):
            return True
    return False


def _subst(x, env: dict):
    if isinstance(x, SymInt):
        return eval(x.expr, {}, env)  # noqa: S307 - our own expression text
    if isinstance(x, tuple):
        return tuple(_subst(a, env) for a in x)
    if isinstance(x, list):
        return [_subst(a, env) for a in x]
    if isinstance(x, dict):
        return {k: _subst(v, env) for k, v in x.items()}
    return x


def _bindings(graph) -> list[tuple[int, int, int]]:
    """(symbol, placeholder index, dim) for each symbol's bare occurrence in an input."""
    out, seen = [], set()
    for i, n in enumerate(graph.placeholders()):
        if not isinstance(n.val, Tensor):
            continue
        for d, s in enumerate(n.val._shape):
            if isinstance(s, SymInt) and _is_atom(s.expr):
                k = int(s.expr[1:])
                if k not in seen:
                    seen.add(k)
                    out.append((k, i, d))
    return out


def specialize(graph, values) -> object:
    """A copy of ``graph`` with symbol ``s<i>`` = ``values[i]`` (meta re-propagated).

    Raises:
        ValueError: a recorded shape does not follow the symbols (see NOTE [Dynamic shapes]).
    """
    from ember.compiler.graph import Graph
    from ember.compiler.meta import meta_like

    env = {f"s{i}": v for i, v in enumerate(values)}
    g = Graph()
    new: dict[int, object] = {}

    def sub(x):
        if type(x).__name__ == "Node" and id(x) in new:
            return new[id(x)]
        if isinstance(x, (tuple, list)):
            r = [sub(a) for a in x]
            return tuple(r) if isinstance(x, tuple) else r
        if isinstance(x, dict):
            return {k: sub(v) for k, v in x.items()}
        return _subst(x, env)

    for n in graph.nodes:
        if n.op == "placeholder":
            val = n.val
            if isinstance(val, Tensor):
                val = meta_like(val, tuple(_subst(s, env) for s in val._shape),
                                tuple(_subst(s, env) for s in val._stride))
            nn = g.placeholder(n.name, val, n.meta.get("source"))
            nn.meta["requires_grad"] = n.meta.get("requires_grad", False)
        elif n.op == "constant":
            nn = g.constant(graph.constants[n.name], n.name)
        elif n.op == "call":
            meta = {k: v for k, v in n.meta.items() if k not in ("val", "requires_grad")}
            nn = g.call(n.target, sub(n.args), sub(n.kwargs), meta)
            _check_shapes(n.val, nn.val, env)
        else:
            g.output(sub(n.args[0]))
            continue
        new[id(n)] = nn
    return g


def _check_shapes(old, new, env) -> None:
    if isinstance(old, Tensor):
        if not isinstance(new, Tensor):
            raise ValueError("dynamic shapes: a value changed kind")
        want = tuple(_subst(s, env) for s in old._shape)
        if tuple(new._shape) != want:
            raise ValueError(f"dynamic shapes: recorded shape {want} but {tuple(new._shape)}")
    elif isinstance(old, (tuple, list)) and isinstance(new, (tuple, list)):
        for a, b in zip(old, new, strict=False):
            _check_shapes(a, b, env)


def validate(graph, env: ShapeEnv) -> bool:
    """Whether ``graph``'s recorded shapes follow its symbols (a re-propagation with other
    sizes that satisfy the guards reproduces them)."""
    if env.specialized:
        return False
    for delta in (1, 2, 3, 5, 8):
        values = [h + delta for h in env.hints]
        if not env.holds(values):
            values = [h + delta * h for h in env.hints]
            if not env.holds(values):
                continue
        try:
            specialize(graph, values)
        except Exception:  # noqa: BLE001 - any failure means "not shape-generic"
            return False
        return True
    return False


def dynamic_graph(graph, example_inputs, backend):
    """A callable running ``graph`` (which has symbolic sizes) for any sizes its guards
    admit: the symbols are read from the inputs, and each size tuple gets its own compiled
    specialisation (cached)."""
    from ember.compiler.backends import compile_graph

    binds = _bindings(graph)
    nsym = 1 + max((k for k, _i, _d in binds), default=-1)
    cache: dict[tuple, object] = {}

    def run(*inputs):
        values = [0] * nsym
        for k, i, d in binds:
            values[k] = inputs[i]._shape[d]
        key = tuple(values)
        fn = cache.get(key)
        if fn is None:
            stats["specializations"] += 1
            fn = cache[key] = compile_graph(specialize(graph, values), inputs, backend)
        return fn(*inputs)

    first = compile_graph(specialize(graph, [0] * 0 + _example_values(binds, nsym,
                                                                       example_inputs)),
                          example_inputs, backend)
    cache[tuple(_example_values(binds, nsym, example_inputs))] = first
    run.specializations = cache
    for attr in ("kernels", "c_source", "source"):
        if hasattr(first, attr):
            setattr(run, attr, getattr(first, attr))
    return run


def _example_values(binds, nsym, inputs) -> list[int]:
    values = [0] * nsym
    for k, i, d in binds:
        values[k] = int(inputs[i]._shape[d])
    return values


def add_guards(gb, env: ShapeEnv) -> None:
    """The capture's size relations as SHAPE_ENV checks on ``gb``."""
    for i in range(len(env.sources)):
        gb.add_shape_guard(env.render(f"s{i} >= 2"), f"s{i} >= 2 ({env.render(f's{i}')})")
    for g in env.guards:
        gb.add_shape_guard(env.render(g), g)


def configure(cap, ctx, cc, pc: int, L, G) -> None:
    """Set ``cap``'s dynamic dimensions from ``ctx.dynamic`` and, for ``dynamic=None``, from
    the sizes that changed since the entries already compiled at ``pc`` (automatic dynamic)."""
    from ember.compiler.config import config

    if ctx.dynamic is False:
        cap.dynamic_off = True
        return
    if ctx.dynamic is True:
        cap.dynamic_all = True
        return
    if not config.automatic_dynamic_shapes:
        return
    state = cc.frame_state.setdefault(pc, {})
    for entry in cc.entries.get(pc, ()):
        shapes = (entry.info or {}).get("input_shapes") or {}
        for src, old in shapes.items():
            try:
                v = eval(src, {"L": L, "G": G})  # noqa: S307 - a source expression
            except Exception:  # noqa: BLE001
                continue
            if isinstance(v, Tensor) and v.ndim == len(old):
                changed = {d for d, (a, b) in enumerate(zip(old, v._shape)) if a != b}
                if changed:
                    state.setdefault(src, set()).update(changed)
    cap.dynamic_sources = state


def _syms_in(x, out: list) -> None:
    if isinstance(x, SymInt):
        out.append(x)
    elif isinstance(x, Tensor):
        for s in x._shape:
            if isinstance(s, SymInt):
                out.append(s)
    elif isinstance(x, (tuple, list)):
        for a in x:
            _syms_in(a, out)
    elif isinstance(x, dict):
        for a in x.values():
            _syms_in(a, out)


def _perturbed(x, env: dict):
    """``x`` with its sizes evaluated at the symbol values ``env`` (meta tensors rebuilt)."""
    from ember.compiler.meta import meta_like

    if isinstance(x, SymInt):
        return eval(x.expr, {}, env)  # noqa: S307 - our own expression text
    if isinstance(x, Tensor):
        shape = tuple(_perturbed(s, env) for s in x._shape)
        if any(isinstance(s, SymInt) for s in x._stride) or not any(
                isinstance(s, SymInt) for s in x._shape):
            stride = tuple(_perturbed(s, env) for s in x._stride)
        else:
            stride = symbolic_strides(shape) if x.is_contiguous() else None
            if stride is None:
                raise ValueError("strides of a non-contiguous symbolic tensor")
        return meta_like(x, shape, stride)
    if isinstance(x, tuple):
        return tuple(_perturbed(a, env) for a in x)
    if isinstance(x, list):
        return [_perturbed(a, env) for a in x]
    if isinstance(x, dict):
        return {k: _perturbed(v, env) for k, v in x.items()}
    return x


def _out_tensors(out) -> list:
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [o for o in out if isinstance(o, Tensor)]
    return []


def repair_shapes(env: ShapeEnv, func, margs, mkwargs, out, snapshots) -> None:
    """Give symbolic sizes back to the outputs of an op whose shape code dropped them.

    The op is re-run on meta inputs with the symbols moved (+1, +2); a size that moves is
    matched to a size expression of the inputs (or their pairwise products), else to a linear
    form of the single symbol. Sizes left unexplained stay plain ints: the capture's final
    validation then recaptures the frame with static shapes.
    """
    outs = _out_tensors(out)
    if not outs or not env.sources:
        return
    todo = [(k, d) for k, t in enumerate(outs) for d, s in enumerate(t._shape)
            if not isinstance(s, SymInt)]
    if not todo:
        return
    syms: list[SymInt] = []
    _syms_in((margs, mkwargs), syms)
    if not syms:
        return
    probes = []
    for delta in (1, 2):
        values = {f"s{i}": h + delta for i, h in enumerate(env.hints)}
        try:
            res = func(*_perturbed(margs, values), **_perturbed(mkwargs, values))
        except Exception:  # noqa: BLE001 - cannot probe: leave it to the validation
            return
        probes.append((values, _out_tensors(res)))
    cands = {s.expr: s for s in syms}
    for a in list(cands.values()):
        for b in list(cands.values()):
            p = a * b
            cands.setdefault(p.expr, p)
    fixed = set()
    for k, d in todo:
        base = int(outs[k]._shape[d])
        got = [int(p[1][k]._shape[d]) for p in probes]
        if got == [base, base]:
            continue
        hit = None
        for c in cands.values():
            if int(c) == base and all(eval(c.expr, {}, v) == g  # noqa: S307
                                      for (v, _o), g in zip(probes, got, strict=True)):
                hit = c
                break
        if hit is None and len(env.sources) == 1:
            a = got[0] - base
            if got[1] - base == 2 * a:
                s0 = SymInt(env.hints[0], "s0", env)
                hit = s0 * a + (base - a * env.hints[0])
        if hit is not None:
            fixed.add(k)
            shape = list(outs[k]._shape)
            shape[d] = hit
            outs[k]._shape = tuple(shape)
    for k in fixed:
        t = outs[k]
        if t.is_contiguous():
            t._stride = symbolic_strides(t._shape)
        for snap in snapshots[k:k + 1]:
            if snap is not None:
                snap._shape, snap._stride = t._shape, t._stride
