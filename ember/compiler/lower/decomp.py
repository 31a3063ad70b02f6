"""Graph node -> loop-level IR: pointwise, last-dim reductions, views as index expressions.

Each rule gets the lowering context, the node and its bound arguments and returns an
``LNode`` (a tuple of them for multi-output ops) or ``None`` ("not lowerable"), in which case
the node stays with the NumPy backend's rendering (or the ember op): correct, never wrong.
Softmax, log-softmax, layer norm and GELU are decompositions into the same primitives, so
the scheduler fuses them like hand-written chains.
"""

from __future__ import annotations

import math
import operator

from ember.compiler.graph import Node
from ember.compiler.lower.ir import (
    Expr,
    Layout,
    LNode,
    cast,
    checked,
    const,
    contiguous_strides,
    load,
    op,
    rowpos,
)
from ember.compiler.meta import lazy_bits
from ember.core import dtype as dt
from ember.dispatch import Operator
from ember.tensor import Tensor

__all__ = ["Lowering", "RULES", "FLOATS"]

FLOATS = (dt.float32, dt.float64)
INTS = (dt.int32, dt.int64)
HALVES = (dt.bfloat16, dt.float16)     # stored as 16 bits, computed in float32
# ops whose integer form is exact in C (wrapping arithmetic through unsigned types)
_INT_OK = {"add", "sub", "mul", "neg", "abs", "maximum", "minimum", "where", "clamp",
           "clamp_min", "clamp_max", "clip", "rsub", "subtract", "multiply", "clone",
           "contiguous", "relu"}
RULES: dict = {}


class NotLowerable(Exception):
    """Raised inside a rule when an argument cannot be lowered."""


def rule(*names):
    def deco(fn):
        for n in names:
            RULES[n] = fn
        return fn
    return deco


class Lowering:
    """Walks a graph and builds LNodes; ``map`` takes a graph node to its LNode(s)."""

    def __init__(self, graph, example_inputs, skip: set):
        self.graph = graph
        self.map: dict[int, object] = {}
        self.nodes: list[LNode] = []
        self.skip = skip
        ph = [n for n in graph.nodes if n.op == "placeholder"]
        self.examples = {id(n): v for n, v in zip(ph, example_inputs, strict=False)}

    # -- construction helpers -----------------------------------------------------------------
    def add(self, ln: LNode) -> LNode:
        ln.index = len(self.nodes)
        self.nodes.append(ln)
        if ln.expr is not None:
            seen = set()
            for src in ln.expr.loads():
                if id(src) not in seen:
                    seen.add(id(src))
                    src.users.append(ln)
        return ln

    def buffer(self, node: Node) -> LNode:
        """A buffer LNode for a node whose array exists at run time."""
        val = node.val
        if node.op == "placeholder":
            t = self.examples.get(id(node))
            # a conjugated or negated view: its array is a resolved copy, not its memory
            if not isinstance(t, Tensor) or any(lazy_bits(t)):
                raise NotLowerable
            strides = tuple(t.stride())
        elif node.op == "constant":
            if any(lazy_bits(self.graph.constants[node.name])):
                raise NotLowerable
            strides = tuple(self.graph.constants[node.name].stride())
        else:
            strides = contiguous_strides(val.shape)
        ln = self.add(LNode("buffer", val.shape, val.dtype, node=node,
                            layout=Layout(val.shape, strides, 0)))
        self.map[id(node)] = ln
        return ln

    def get(self, x) -> LNode:
        if not isinstance(x, Node) or not isinstance(x.val, Tensor):
            raise NotLowerable
        ln = self.map.get(id(x))
        if ln is None:
            if x.op in ("placeholder", "constant"):
                return self.buffer(x)
            raise NotLowerable
        if isinstance(ln, tuple):
            raise NotLowerable
        return ln

    def ref(self, x, dtype) -> Expr:
        """The expression of argument ``x`` (node or Python scalar) as ``dtype``."""
        if isinstance(x, Node):
            ln = self.get(x)
            if ln.dtype in HALVES:
                if dtype is not dt.float32:
                    raise NotLowerable
                return cast(load(ln), dtype)
            if ln.dtype not in FLOATS and ln.dtype is not dt.bool_ and ln.dtype not in INTS:
                raise NotLowerable
            if ln.dtype in INTS and dtype not in FLOATS and ln.dtype is not dtype:
                raise NotLowerable      # int -> other int / bool: leave to NumPy
            return cast(load(ln), dtype)
        if type(x) in (int, float, bool):
            if dtype in INTS:
                if type(x) is float or not -2 ** 31 <= x < 2 ** 31:
                    raise NotLowerable
                return const(int(x), dtype)
            return const(float(x) if dtype in FLOATS else x, dtype)
        raise NotLowerable

    def pw(self, node_or_shape, dtype, expr) -> LNode:
        shape = node_or_shape.val.shape if isinstance(node_or_shape, Node) else node_or_shape
        if isinstance(node_or_shape, Node) and node_or_shape.val.dtype in HALVES and \
                dtype is dt.float32:
            # a half-precision node: computed in float32, rounded to its dtype as eager does
            dtype = node_or_shape.val.dtype
            expr = cast(expr, dtype)
        return self.add(LNode("pw", shape, dtype, expr))

    def red(self, kind, src: Expr, src_shape, keepdim, post=None, dtype=None) -> LNode:
        """A last-dim reduction; ``dtype`` a half dtype stores the (float) result rounded."""
        shape = tuple(src_shape[:-1]) + ((1,) if keepdim else ())
        if dtype is not None and dtype is not src.dtype:
            post = cast(post if post is not None else Expr("acc", src.dtype), dtype)
        return self.add(LNode("red", shape, dtype or src.dtype, src, src_shape=tuple(src_shape),
                              rkind=kind, scale=post))

    # -- the walk -------------------------------------------------------------------------------
    def lower_node(self, node: Node):
        """Lower one call node; returns the LNode(s) or None."""
        t = node.target
        if id(node) in self.skip:
            return None
        if t is operator.getitem:
            src = self.map.get(id(node.args[0]))
            if isinstance(src, tuple):
                ln = src[node.args[1]]
                self.map[id(node)] = ln
                return ln
            return None
        if not isinstance(t, Operator) or node.kwargs.get("out") is not None or t._is_inplace:
            return None
        fn = RULES.get(t.name)
        if fn is None:
            return None
        mark = len(self.nodes)
        try:
            res = fn(self, node, t.schema.bind(node.args, node.kwargs))
        except (NotLowerable, KeyError, TypeError, IndexError, ZeroDivisionError,
                AttributeError, ValueError):
            res = None
        if res is None:
            for ln in self.nodes[mark:]:        # undo partial work
                for src in (ln.expr.loads() if ln.expr is not None else ()):
                    if ln in src.users:
                        src.users.remove(ln)
            for ln in self.nodes[mark:]:
                if ln.kind == "buffer" and ln.node is not None:
                    self.map.pop(id(ln.node), None)
            del self.nodes[mark:]
            return None
        self.map[id(node)] = res
        return res


def _out_float(node) -> dt.DType:
    """The output dtype: float32/float64, or int32/int64 for the ops in ``_INT_OK``."""
    v = node.val
    if not isinstance(v, Tensor):
        raise NotLowerable
    if v.dtype in FLOATS:
        return v.dtype
    if v.dtype in HALVES:
        return dt.float32
    if v.dtype in INTS and node.target.name in _INT_OK:
        return v.dtype
    raise NotLowerable


# -- pointwise ------------------------------------------------------------------------------------
_UNARY = ("neg", "exp", "log", "tanh", "sigmoid", "relu", "sqrt", "rsqrt", "abs", "sin", "cos",
          "log1p", "expm1", "reciprocal", "square", "erf", "floor", "ceil", "trunc", "silu",
          "log2", "exp2")


@rule(*_UNARY)
def _unary(lw, node, b):
    d = _out_float(node)
    x = lw.ref(b.get("self", b.get("input")), d)
    name = node.target.name
    if name == "square":
        return lw.pw(node, d, op("mul", d, x, x))
    if name == "silu":
        return lw.pw(node, d, op("mul", d, x, op("sigmoid", d, x)))
    return lw.pw(node, d, op(name, d, x))


_BIN = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "true_divide": "div",
        "multiply": "mul", "subtract": "sub", "maximum": "maximum", "minimum": "minimum",
        "rsub": "rsub", "atan2": "atan2"}


@rule(*_BIN)
def _binary(lw, node, b):
    d = _out_float(node)
    if b.get("rounding_mode") is not None:
        return None
    x, y = b["self"], b["other"]
    if not isinstance(x, Node) and not isinstance(y, Node):
        return None
    ex, ey = lw.ref(x, d), lw.ref(y, d)
    name = _BIN[node.target.name]
    alpha = b.get("alpha", 1)
    if alpha not in (1, None):
        ey = op("mul", d, ey, lw.ref(alpha, d))
    if name == "rsub":
        ex, ey, name = ey, ex, "sub"
    return lw.pw(node, d, op(name, d, ex, ey))


@rule("pow")
def _pow(lw, node, b):
    d = _out_float(node)
    x, e = b["self"], b.get("exponent", b.get("other"))
    if not isinstance(x, Node):
        return None
    ex = lw.ref(x, d)
    if isinstance(e, Node):
        return lw.pw(node, d, op("pow", d, ex, lw.ref(e, d)))
    if e == 2:
        return lw.pw(node, d, op("mul", d, ex, ex))
    if e == 3:
        return lw.pw(node, d, op("mul", d, op("mul", d, ex, ex), ex))
    if e == 1:
        return lw.pw(node, d, op("mul", d, ex, const(1.0, d)))
    if e == 0.5:
        return lw.pw(node, d, op("sqrt", d, ex))
    if e == -1:
        return lw.pw(node, d, op("div", d, const(1.0, d), ex))
    return lw.pw(node, d, op("pow", d, ex, lw.ref(e, d)))


_CMP = ("eq", "ne", "lt", "le", "gt", "ge")


@rule(*_CMP)
def _compare(lw, node, b):
    x, y = b["self"], b["other"]
    ref = x if isinstance(x, Node) else y
    if not isinstance(ref, Node) or not isinstance(ref.val, Tensor):
        return None
    d = ref.val.dtype
    if (d not in FLOATS and d not in INTS and d not in HALVES) or node.val.dtype is not dt.bool_:
        return None
    for v in (x, y):
        if isinstance(v, Node) and v.val.dtype is not d:
            return None
    if d in HALVES:
        d = dt.float32
    return lw.pw(node, dt.bool_, op(node.target.name, dt.bool_, lw.ref(x, d), lw.ref(y, d)))


@rule("where")
def _where(lw, node, b):
    d = _out_float(node)
    c = b["condition"]
    if not isinstance(c, Node) or c.val.dtype is not dt.bool_:
        return None
    return lw.pw(node, d, op("where", d, lw.ref(c, dt.bool_), lw.ref(b["self"], d),
                             lw.ref(b["other"], d)))


@rule("clamp", "clip", "clamp_min", "clamp_max")
def _clamp(lw, node, b):
    d = _out_float(node)
    name = node.target.name
    lo = b.get("min") if name != "clamp_max" else None
    hi = b.get("max") if name != "clamp_min" else None
    if name == "clamp_max":
        hi = b.get("max")
    e = lw.ref(b["self"], d)
    if lo is None and hi is None:
        return None
    if lo is not None:
        e = op("clamp_lo", d, e, lw.ref(lo, d))
    if hi is not None:
        e = op("clamp_hi", d, e, lw.ref(hi, d))
    return lw.pw(node, d, e)


@rule("gelu")
def _gelu(lw, node, b):
    d = _out_float(node)
    x = lw.ref(b["self"], d)
    half, one = const(0.5, d), const(1.0, d)
    if b.get("approximate", "none") == "tanh":
        inner = op("mul", d, const(math.sqrt(2.0 / math.pi), d),
                   op("add", d, x, op("mul", d, const(0.044715, d),
                                      op("mul", d, op("mul", d, x, x), x))))
        return lw.pw(node, d, op("mul", d, op("mul", d, half, x),
                                 op("add", d, one, op("tanh", d, inner))))
    if b.get("approximate", "none") != "none":
        return None
    inner = op("mul", d, x, const(1.0 / math.sqrt(2.0), d))
    return lw.pw(node, d, op("mul", d, op("mul", d, half, x),
                             op("add", d, one, op("erf", d, inner))))


@rule("_to_copy")
def _to_copy(lw, node, b):
    x = b["self"]
    dev = b.get("device")
    if (dev is not None and str(dev) != "cpu") or b.get("memory_format") is not None:
        return None
    src = lw.get(x)
    d = node.val.dtype
    if src.dtype in HALVES and d in FLOATS + HALVES:
        return lw.pw(node, dt.float32, cast(load(src), dt.float32))
    if d in HALVES and (src.dtype in FLOATS or src.dtype is dt.bool_ or src.dtype in INTS):
        return lw.pw(node, dt.float32, cast(load(src), dt.float32))
    if d not in FLOATS or (src.dtype not in FLOATS and src.dtype is not dt.bool_ and
                           src.dtype not in INTS):
        return None
    return lw.pw(node, d, cast(load(src), d))


# -- reductions over the last dimension ---------------------------------------------------------
def _last_dim(x, dim) -> bool:
    n = x.val.ndim
    if n == 0 or x.val.shape[-1] == 0:
        return False
    if dim is None or dim == [] or dim == ():
        return n == 1
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return len(dims) == 1 and dims[0] % n == n - 1


def _reduce_dims(x, dim) -> tuple:
    n = x.val.ndim
    if dim is None or (not isinstance(dim, int) and len(dim) == 0):
        return tuple(range(n))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return tuple(sorted({d % n for d in dims}))


def _reduce_other_dims(lw, node, b, d, x):
    """A reduction over dimensions other than (only) the last: the input read through a view
    that moves the reduced dimensions last and merges them (``sum(0)`` of ``[N, C]`` reads
    ``[C, N]`` with strides); a pointwise producer is realised first."""
    n = x.val.ndim
    dims = _reduce_dims(x, b.get("dim"))
    shape = tuple(x.val.shape)
    if n == 0 or not dims or any(shape[i] == 0 for i in dims):
        return None
    src = lw.get(x)
    if src.kind == "buffer":
        base, lay = src, src.layout
    elif src.kind == "view":
        base, lay = src.base, src.layout
    elif src.kind == "pw":
        base, lay = src, Layout(src.shape, contiguous_strides(src.shape), 0)
    else:
        return None
    kept = [i for i in range(n) if i not in dims]
    perm = kept + list(dims)
    play = Layout([lay.shape[i] for i in perm], [lay.strides[i] for i in perm], lay.offset)
    rsize = math.prod(shape[i] for i in dims)
    merged = reshape_layout(play, tuple(shape[i] for i in kept) + (rsize,))
    if merged is None:
        return None
    keep = bool(b.get("keepdim"))
    out_shape = tuple(node.val.shape)
    kept_shape = tuple(shape[i] for i in kept)
    if keep and out_shape != (1,) * len(dims) + kept_shape:
        return None         # 1s between kept dimensions: not a right-aligned broadcast
    view = lw.add(LNode("view", merged.shape, src.dtype, base=base, layout=merged))
    if base.kind == "pw":
        base.users.append(view)
    name = node.target.name
    post = op("div", d, Expr("acc", d), Expr("rowlen", d)) if name == "mean" else None
    ln = lw.red("sum" if name == "mean" else name, cast(load(view), d), merged.shape, False,
                post, node.val.dtype)
    if keep:
        return lw.pw(node, d, load(ln))
    if ln.shape != out_shape:
        raise NotLowerable
    return ln


@rule("sum", "mean", "amax", "amin")
def _reduce(lw, node, b):
    d = _out_float(node)
    x = b["self"]
    if b.get("dtype") is not None or not isinstance(x, Node) or \
            x.val.dtype is not node.val.dtype:
        return None
    if not _last_dim(x, b.get("dim")):
        return _reduce_other_dims(lw, node, b, d, x)
    name = node.target.name
    shape = tuple(x.val.shape)
    post = None
    if name == "mean":
        post = op("div", d, Expr("acc", d), Expr("rowlen", d))
    # halves accumulate in float32 and round the result, as eager
    ln = lw.red("sum" if name == "mean" else name, lw.ref(x, d), shape, bool(b.get("keepdim")),
                post, node.val.dtype)
    if ln.shape != tuple(node.val.shape):
        raise NotLowerable
    return ln


@rule("softmax", "_softmax", "log_softmax", "_log_softmax")
def _softmax(lw, node, b):
    d = _out_float(node)
    x = b.get("self", b.get("input"))
    if b.get("dtype") is not None or b.get("half_to_float") or not isinstance(x, Node) or \
            x.val.dtype is not node.val.dtype or not _last_dim(x, b["dim"]):
        return None
    shape = tuple(x.val.shape)
    ex = lw.ref(x, d)
    m = lw.red("amax", ex, shape, True)
    sh = lw.pw(shape, d, op("sub", d, ex, load(m)))
    if _may_be_neg_inf(lw.get(x)):
        e = lw.pw(shape, d, _exp_of_shifted(lw, shape, d, sh))
    else:
        e = lw.pw(shape, d, op("exp", d, load(sh)))
    s = lw.red("sum", load(e), shape, True)
    if "log" in node.target.name:
        return lw.pw(node, d, op("sub", d, load(sh), op("log", d, load(s))))
    return lw.pw(node, d, op("div", d, load(e), load(s)))


# below this a float's exp is subnormal (float32: < 1.18e-38); see _exp_of_shifted
_EXP_LOW = {dt.float32: -87.33, dt.float64: -708.39}


def _may_be_neg_inf(ln) -> bool:
    """Whether a lowered pointwise value puts a -inf constant in (a mask), through the
    pointwise producers it reads."""
    stack, seen = [ln.expr] if ln.kind == "pw" else [], set()
    while stack:
        e = stack.pop()
        if e.kind == "const" and isinstance(e.value, float) and e.value == -math.inf:
            return True
        if e.kind == "load" and e.value.kind == "pw" and id(e.value) not in seen:
            seen.add(id(e.value))
            stack.append(e.value.expr)
        stack.extend(e.args)
    return False


def _exp_of_shifted(lw, shape, d, sh):
    """``exp(sh)`` for softmax's ``x - max`` where a mask put -inf in ``x``.

    glibc's vector exp leaves its fast path for a whole vector when one lane's result is
    subnormal or zero (a causal mask's -inf: several times slower), and gcc moves a clamp of
    the argument back out of the call. So the clamped argument is stored (its own pass over
    the row, a value gcc cannot see through) and the exp reads it; lanes below the clamp give
    0 (a subnormal probability flushed: an absolute error below 1.2e-38).
    """
    low = const(_EXP_LOW[d], d)
    arg = lw.pw(shape, d, op("where", d, op("lt", dt.bool_, load(sh), low), low, load(sh)))
    arg.external = True          # realised: stored by one loop, read by the next
    return op("where", d, op("lt", dt.bool_, load(sh), low), const(0.0, d),
              op("exp", d, load(arg)))


@rule("native_layer_norm")
def _layer_norm(lw, node, b):
    x, w, bias, eps = b["input"], b["weight"], b["bias"], b["eps"]
    d = _out_float(node.args[0]) if isinstance(node.args[0], Node) else None
    if d is None or len(b["normalized_shape"]) != 1 or not _last_dim(x, -1) or \
            x.val.dtype in HALVES:
        return None
    if any(u.target is not operator.getitem for u in node.users):
        return None
    if node.val[0].dtype is not d:
        return None
    shape = tuple(x.val.shape)
    n = Expr("rowlen", d)        # the row length: a kernel argument, not a constant
    ex = lw.ref(x, d)
    mean = lw.red("sum", ex, shape, True, op("div", d, Expr("acc", d), n))
    cen = lw.pw(shape, d, op("sub", d, ex, load(mean)))
    rstd = lw.red("sum", op("mul", d, load(cen), load(cen)), shape, True,
                  op("rsqrt", d, op("add", d, op("div", d, Expr("acc", d), n),
                                    const(float(eps), d))))
    out = op("mul", d, load(cen), load(rstd))
    if w is not None:
        out = op("mul", d, out, lw.ref(w, d))
    if bias is not None:
        out = op("add", d, out, lw.ref(bias, d))
    res = lw.pw(shape, d, out)
    if tuple(node.val[1].shape) != mean.shape:
        raise NotLowerable
    return (res, mean, rstd)


# -- views ----------------------------------------------------------------------------------------
def _base(lw, x):
    ln = lw.get(x)
    if ln.kind == "buffer":
        return ln, ln.layout
    if ln.kind == "view":
        return ln.base, ln.layout
    raise NotLowerable


def _view(lw, node, base, layout):
    if tuple(layout.shape) != tuple(node.val.shape):
        raise NotLowerable
    return lw.add(LNode("view", layout.shape, node.val.dtype, base=base, layout=layout))


def reshape_layout(lay: Layout, shape) -> Layout | None:
    """Strides that read ``lay`` as ``shape`` without a copy (NumPy's no-copy reshape)."""
    shape = tuple(shape)
    old = [(s, st) for s, st in zip(lay.shape, lay.strides, strict=True) if s != 1]
    if math.prod(shape) != math.prod(lay.shape):
        return None
    if math.prod(shape) == 0:
        return Layout(shape, contiguous_strides(shape), lay.offset)
    new_strides = []
    i = 0
    for size in shape:
        if size == 1:
            new_strides.append(0)
            continue
        # take old dims until their product reaches size; they must be contiguous among them
        if i >= len(old):
            return None
        prod, group = 1, []
        while prod < size and i < len(old):
            group.append(old[i])
            prod *= old[i][0]
            i += 1
        if prod != size:
            # split an old dim into several new ones
            return _split_reshape(lay, shape)
        for (_s0, st0), (_s1, st1) in zip(group, group[1:], strict=False):
            if st0 != st1 * _s1:
                return None
        new_strides.append(group[-1][1])
    return Layout(shape, new_strides, lay.offset)


def _split_reshape(lay: Layout, shape) -> Layout | None:
    # general case: only contiguous layouts
    if tuple(lay.strides) == contiguous_strides(lay.shape) or all(
            st == cs for s, st, cs in zip(lay.shape, lay.strides, contiguous_strides(lay.shape),
                                          strict=True) if s != 1):
        return Layout(shape, contiguous_strides(shape), lay.offset)
    return None


@rule("view", "reshape", "_unsafe_view", "flatten", "squeeze", "unsqueeze", "unflatten",
      "view_as", "reshape_as")
def _reshape_rule(lw, node, b):
    base, lay = _base(lw, b.get("self", b.get("input")))
    new = reshape_layout(lay, node.val.shape)
    if new is None:
        return None
    return _view(lw, node, base, new)


@rule("transpose", "swapaxes", "t", "permute")
def _permute(lw, node, b):
    x = b.get("self")
    base, lay = _base(lw, x)
    n = len(lay.shape)
    if node.target.name == "permute":
        dims = [d % n for d in b["dims"]]
    else:
        dims = list(range(n))
        if n >= 2:
            if node.target.name == "t":
                d0, d1 = 0, 1
            else:
                d0, d1 = b.get("dim0", b.get("axis0")) % n, b.get("dim1", b.get("axis1")) % n
            dims[d0], dims[d1] = dims[d1], dims[d0]
    return _view(lw, node, base, Layout([lay.shape[d] for d in dims],
                                        [lay.strides[d] for d in dims], lay.offset))


@rule("expand")
def _expand(lw, node, b):
    base, lay = _base(lw, b["self"])
    shape = tuple(node.val.shape)
    k = len(shape) - len(lay.shape)
    strides = [0] * k + [0 if (s == 1 and n != 1) else st for s, st, n in
                         zip(lay.shape, lay.strides, shape[k:], strict=True)]
    return _view(lw, node, base, Layout(shape, strides, lay.offset))


@rule("slice", "narrow", "select")
def _slice(lw, node, b):
    base, lay = _base(lw, b["self"])
    n = len(lay.shape)
    d = b["dim"] % n
    shape, strides = list(lay.shape), list(lay.strides)
    name = node.target.name
    if name == "select":
        idx = b["index"]
        if isinstance(idx, Node):
            return None
        idx %= shape[d]
        off = lay.offset + idx * strides[d]
        del shape[d], strides[d]
        return _view(lw, node, base, Layout(shape, strides, off))
    if name == "narrow":
        start, step = b["start"], 1
        if isinstance(start, Node):
            return None
        start = start + shape[d] if start < 0 else start
        length = b["length"]
    else:
        start, end, step = b["start"], b["end"], b["step"]
        if any(isinstance(v, Node) for v in (start, end, step)):
            return None
        start, end, _ = slice(start, end, step).indices(shape[d])
        length = len(range(start, end, step)) if end > start else 0
    off = lay.offset + start * strides[d] if length else lay.offset
    shape[d], strides[d] = length, strides[d] * step
    return _view(lw, node, base, Layout(shape, strides, off))


@rule("clone", "contiguous", "alias", "detach")
def _clone(lw, node, b):
    src = lw.get(b["self"])
    if src.dtype not in FLOATS and src.dtype is not dt.bool_ and src.dtype not in INTS:
        return None
    if node.target.name in ("alias", "detach"):
        return None
    return lw.pw(node, src.dtype, load(src))


# -- activation gradients -------------------------------------------------------------------------
# -- indexed reads and writes along the last dimension -------------------------------------------
def _row_index(lw, x, idx, dim) -> Expr | None:
    """The checked per-row index of a gather/scatter along ``x``'s last dimension with one
    index per row (a class label: cross-entropy's ``gather`` and its gradient's
    ``scatter_add``), or None for any other indexing."""
    n = x.val.ndim
    shape = tuple(x.val.shape)
    if n == 0 or dim % n != n - 1 or shape[-1] == 0 or not isinstance(idx, Node) or \
            idx.val.dtype is not dt.int64 or tuple(idx.val.shape) != shape[:-1] + (1,):
        return None
    return checked(lw.ref(idx, dt.int64), n - 1)


@rule("gather")
def _gather(lw, node, b):
    """``x.gather(-1, idx)`` with one index per row: the sum over the row of ``x`` where the
    position equals the index (exact: one term is not zero), a reduction that fuses with the
    kernel making ``x`` (a log-softmax)."""
    x = b["self"]
    d = node.val.dtype
    if b.get("sparse_grad") or d not in FLOATS or not isinstance(x, Node):
        return None
    i = _row_index(lw, x, b["index"], b["dim"])
    if i is None:
        return None
    pick = op("where", d, op("eq", dt.bool_, rowpos(), i), lw.ref(x, d), const(0.0, d))
    return lw.red("sum", pick, tuple(x.val.shape), True)


@rule("scatter_add")
def _scatter_add(lw, node, b):
    """``s.scatter_add(-1, idx, src)`` with one index and value per row: ``s`` plus ``src``
    where the position equals the index (pointwise: it fuses with the gradient around it)."""
    s, src = b["self"], b["src"]
    d = node.val.dtype
    if d not in FLOATS or not isinstance(s, Node) or not isinstance(src, Node) or \
            src.val.dtype is not d or tuple(src.val.shape) != tuple(b["index"].val.shape):
        return None
    i = _row_index(lw, s, b["index"], b["dim"])
    if i is None:
        return None
    add = op("where", d, op("eq", dt.bool_, rowpos(), i), lw.ref(src, d), const(0.0, d))
    return lw.pw(node, d, op("add", d, lw.ref(s, d), add))


@rule("threshold_backward")
def _threshold_backward(lw, node, b):
    """``0 where input <= threshold, else grad`` (NaN inputs pass the gradient, as eager)."""
    d = _out_float(node)
    g, x = b["grad_output"], b["self"]
    if not isinstance(g, Node) or not isinstance(x, Node) or \
            not g.val.dtype is x.val.dtype is node.val.dtype:
        return None
    keep_zero = op("le", dt.bool_, lw.ref(x, d), lw.ref(b["threshold"], d))
    # ``+ 0`` turns a kept -0.0 gradient into 0.0, as the eager kernel does
    return lw.pw(node, d, op("where", d, keep_zero, const(0.0, d),
                             op("add", d, lw.ref(g, d), const(0.0, d))))


_BETA = math.sqrt(2.0 / math.pi)
_KAPPA = 0.044715


@rule("gelu_backward")
def _gelu_backward(lw, node, b):
    """``grad * gelu'(x)`` in the eager kernel's operation order: tanh form ``s + 2 beta x
    (1 + 3 kappa x**2) s (1 - s)`` with ``s = sigmoid(2 z)``; exact form ``Phi(x) + x phi(x)``."""
    d = _out_float(node)
    g, x = b["grad_output"], b["self"]
    if not isinstance(g, Node) or not isinstance(x, Node) or \
            not g.val.dtype is x.val.dtype is node.val.dtype:
        return None
    a, eg = lw.ref(x, d), lw.ref(g, d)

    def c(v):
        return const(v, d)

    mode = b.get("approximate", "none")
    if mode == "tanh":
        u = op("mul", d, op("add", d, op("mul", d, op("mul", d, a, a),
                                         c(-2.0 * _BETA * _KAPPA)), c(-2.0 * _BETA)), a)
        s = op("reciprocal", d, op("add", d, op("exp", d, u), c(1.0)))
        w = op("mul", d, op("mul", d, op("add", d, op("mul", d, op("mul", d, a, a),
                                                      c(3.0 * _KAPPA)), c(1.0)), a),
               c(2.0 * _BETA))
        r = op("add", d, op("mul", d, op("sub", d, s, op("mul", d, s, s)), w), s)
    elif mode == "none":
        phi = op("mul", d, c(0.5), op("add", d, c(1.0),
                                      op("erf", d, op("mul", d, a, c(1.0 / math.sqrt(2.0))))))
        dens = op("exp", d, op("mul", d, op("mul", d, a, a), c(-0.5)))
        r = op("add", d, op("mul", d, op("mul", d, dens, a), c(1.0 / math.sqrt(2.0 * math.pi))),
               phi)
    else:
        return None
    return lw.pw(node, d, op("mul", d, r, eg))
