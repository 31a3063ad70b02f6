"""The ``numpy`` backend: a graph becomes one generated Python function over NumPy arrays.

Inputs are read as NumPy views once, each op is one NumPy expression (no dispatcher, no
allocator round trip), and the outputs are wrapped as ember tensors once at the end.
NOTE [NumPy rendering is opt-in per node]
A node is rendered with NumPy only when a rule in ``_RULES`` covers it *and* its dtypes are
ones where NumPy computes what eager ember computes (float32/float64 arithmetic, comparisons,
shape ops on any dtype). Everything else (half precision, integer arithmetic whose overflow
or promotion could differ, in-place ops on graph inputs, outputs that must alias an input)
calls the ember op itself on ember tensors: slower, never wrong. Each rule returns an
expression string or ``None`` ("not this case"), so that decision stays local to the rule.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from ember.backends.cpu import _blas as blas
from ember.backends.cpu._util import _IGNORE, _reset_errstate, _set_errstate
from ember.backends.cpu.scatter_gather import (
    gather_values,
    index_add_values,
    scatter_add_values,
)
from ember.compiler.backends import register_backend
from ember.compiler.graph import (
    GraphModule,
    Node,
    _render,
    _sanitize,
    code_globals,
    compile_source,
)
from ember.compiler.meta import is_impure, lazy_bits
from ember.core import dtype as dt
from ember.core.device import CPU
from ember.core.layout import contiguous_strides
from ember.dispatch import Operator, Tag
from ember.memory.storage import Storage, scratch_array
from ember.tensor import Tensor
from ember.tensor.tensor import from_numpy, make_tensor, numpy_view, user_array

__all__ = ["numpy_backend", "generate", "RULES"]

_FLOATS = (dt.float32, dt.float64)
_LARGE = 1 << 16  # bytes: larger intermediates come from ember's caching allocator
_HALF = (dt.float16, dt.bfloat16)
_INTS = (dt.int8, dt.int16, dt.int32, dt.int64, dt.uint8)
# ops that may return a view of their input (followed when asking "who owns this memory?")
_MAY_ALIAS = {"reshape", "flatten", "_unsafe_view", "contiguous", "view_as", "expand_as",
              "_to_copy_noop"}


# -- wrapping outputs ---------------------------------------------------------------------------
_NP_TO_DT = {np.dtype(d.np): d for d in (dt.float32, dt.float64, dt.float16, dt.bfloat16,
                                          dt.int8, dt.int16, dt.int32, dt.int64, dt.uint8,
                                          dt.bool_)}
_DT_TO_NP = frozenset(_NP_TO_DT.values())


def _values(t: Tensor) -> np.ndarray:
    """The array of an ember op's result: ``user_array`` (it keeps the block alive), or for a
    tensor with a lazy bit (a conjugated or negated view) the values it reads, resolved into a
    fresh array (``numpy_view``), never the raw stored ones."""
    if t._is_conj or getattr(t, "_is_neg", False):
        return numpy_view(t)
    return user_array(t)


def _wrap(a, npdtype):
    """An ember tensor over NumPy result ``a`` (cast to ``npdtype`` first if it differs)."""
    if type(a) is not np.ndarray:
        a = np.asarray(a, npdtype)
    elif a.dtype != npdtype:
        a = a.astype(npdtype)
    if not a.flags.c_contiguous or a.size == 0:
        if a.size and min(a.strides, default=0) < 0:
            a = a.copy()
        return from_numpy(a)
    raw = a.reshape(-1).view(np.uint8)
    item = a.itemsize
    shape = a.shape
    # (a C-contiguous array may give a size-1 dimension any stride: eager's is contiguous)
    strides = contiguous_strides(shape) if 1 in shape else tuple(s // item for s in a.strides)
    t = make_tensor(Storage.wrap(raw, owner=a), shape, strides, 0, _NP_TO_DT[a.dtype], CPU)
    t._arr = a
    return t


# -- rules --------------------------------------------------------------------------------------
RULES: dict[str, callable] = {}


def rule(*names):
    def deco(fn):
        for n in names:
            RULES[n] = fn
        return fn
    return deco


def _is_float_tensor(x) -> bool:
    return isinstance(x, Node) and isinstance(x.val, Tensor) and x.val.dtype in _FLOATS


def _scalar_ok(x, dtype) -> bool:
    """A Python scalar NumPy treats as weakly typed exactly as torch does for ``dtype``."""
    if type(x) is float:
        return dtype in _FLOATS
    if type(x) is int:
        return dtype in _FLOATS and abs(x) < 2 ** 24
    return False


def _same_float(node: Node, *xs) -> bool:
    """All tensor operands share the output's float dtype; scalars are weak."""
    out = node.val
    if not isinstance(out, Tensor) or out.dtype not in _FLOATS:
        return False
    for x in xs:
        if isinstance(x, Node):
            if not isinstance(x.val, Tensor) or x.val.dtype is not out.dtype:
                return False
        elif x is not None and not _scalar_ok(x, out.dtype):
            return False
    return True


class Steps:
    """A rule's result written into an output buffer ``{o}``: NumPy calls with ``out=``.

    The generator picks ``{o}``: a dead input's buffer when ``inplace_ok`` (the rule reads its
    inputs only before it first writes ``{o}``), else a fresh array (from ember's caching
    allocator when large, so big intermediates do not page-fault on every call).
    """

    __slots__ = ("lines", "inplace_ok", "donor")

    def __init__(self, lines: list[str], inplace_ok: bool = True, donor=None):
        self.lines = lines
        self.inplace_ok = inplace_ok
        self.donor = donor  # the one input whose buffer may be reused (None: any)


_UNARY = {"neg": ["np.negative({x}, out={o})"], "exp": ["np.exp({x}, out={o})"],
          "log": ["np.log({x}, out={o})"], "log2": ["np.log2({x}, out={o})"],
          "log10": ["np.log10({x}, out={o})"], "log1p": ["np.log1p({x}, out={o})"],
          "expm1": ["np.expm1({x}, out={o})"], "sqrt": ["np.sqrt({x}, out={o})"],
          "rsqrt": ["np.sqrt({x}, out={o})", "np.reciprocal({o}, out={o})"],
          "sin": ["np.sin({x}, out={o})"], "cos": ["np.cos({x}, out={o})"],
          "tan": ["np.tan({x}, out={o})"], "tanh": ["np.tanh({x}, out={o})"],
          "abs": ["np.abs({x}, out={o})"], "floor": ["np.floor({x}, out={o})"],
          "ceil": ["np.ceil({x}, out={o})"], "trunc": ["np.trunc({x}, out={o})"],
          "reciprocal": ["np.reciprocal({x}, out={o})"], "square": ["np.square({x}, out={o})"],
          "relu": ["np.maximum({x}, 0.0, out={o})"], "asin": ["np.arcsin({x}, out={o})"],
          "acos": ["np.arccos({x}, out={o})"], "atan": ["np.arctan({x}, out={o})"],
          "sinh": ["np.sinh({x}, out={o})"], "cosh": ["np.cosh({x}, out={o})"],
          "exp2": ["np.exp2({x}, out={o})"],
          "sigmoid": ["np.negative({x}, out={o})", "np.exp({o}, out={o})",
                      "np.add({o}, 1.0, out={o})", "np.reciprocal({o}, out={o})"],
          "silu": ["np.negative({x}, out={o})", "np.exp({o}, out={o})",
                   "np.add({o}, 1.0, out={o})", "np.divide({x}, {o}, out={o})"]}
# rules that read ``x`` after writing ``{o}`` cannot write into ``x``
_READS_LATE = {"silu"}


def _unary(g, node, b):
    x = b.get("self", b.get("input"))
    if not isinstance(x, Node) or not _same_float(node, x):
        return None
    a = g.a(x)
    return Steps([ln.format(x=a, o="{o}") for ln in _UNARY[node.target.name]],
                 node.target.name not in _READS_LATE)


for _n in _UNARY:
    RULES[_n] = _unary


_BINARY = {"add": "np.add", "sub": "np.subtract", "mul": "np.multiply", "div": "np.true_divide",
           "maximum": "np.maximum", "minimum": "np.minimum", "pow": "np.power",
           "atan2": "np.arctan2", "fmod": "np.fmod", "hypot": "np.hypot",
           "true_divide": "np.true_divide", "multiply": "np.multiply",
           "subtract": "np.subtract"}


def _binary(g, node, b):
    x, y = b.get("self"), b.get("other", b.get("exponent"))
    if x is None or y is None or not _same_float(node, x, y):
        return None
    if not isinstance(x, Node) and not isinstance(y, Node):
        return None
    alpha = b.get("alpha", 1)
    if b.get("rounding_mode") is not None:
        return None
    if node.target.name == "pow" and not isinstance(y, Node) and y in (3, -2) and \
            not isinstance(y, bool):
        xs = g.a(x)  # the eager kernel's (and torch's) roundings: x*x*x and 1/(x*x)
        if y == 3:
            return Steps([f"np.multiply({xs}, {xs}, out={{o}})",
                          f"np.multiply({{o}}, {xs}, out={{o}})"], inplace_ok=False)
        return Steps([f"np.multiply({xs}, {xs}, out={{o}})",
                      "np.true_divide(1, {o}, out={o})"], inplace_ok=False)
    ys = g.a(y)
    if alpha != 1:
        if not _scalar_ok(alpha, node.val.dtype):
            return None
        ys = g.tmp(f"np.multiply({ys}, {alpha!r})")
    return Steps([f"{_BINARY[node.target.name]}({g.a(x)}, {ys}, out={{o}})"])


for _n in _BINARY:
    RULES[_n] = _binary

_COMPARE = {"eq": "np.equal", "ne": "np.not_equal", "lt": "np.less", "le": "np.less_equal",
            "gt": "np.greater", "ge": "np.greater_equal"}


@rule(*_COMPARE)
def _compare(g, node, b):
    x, y = b["self"], b["other"]
    ref = x if isinstance(x, Node) else y
    dtype = ref.val.dtype
    for v in (x, y):
        if isinstance(v, Node):
            if v.val.dtype is not dtype or dtype in _HALF:
                return None
        elif not (_scalar_ok(v, dtype) or (type(v) is int and dtype in (dt.int32, dt.int64) and
                                           abs(v) < 2 ** 31)):
            return None
    return f"{_COMPARE[node.target.name]}({g.a(x)}, {g.a(y)})"


@rule("where")
def _where(g, node, b):
    c, x, y = b["condition"], b["self"], b["other"]
    if x is None or y is None or not (isinstance(c, Node) and c.val.dtype is dt.bool_):
        return None
    if _same_int(node, x, y):  # a selection: exact in any integer dtype
        return f"np.where({g.a(c)}, {g.a(x)}, {g.a(y)}).astype({g.np_dtype(node.val.dtype)})"
    if not _same_float(node, x, y):
        return None
    if g.can_donate(x, node):
        return Steps([f"np.copyto({{o}}, {g.a(y)}, where=np.logical_not({g.a(c)}))"], donor=x)
    return Steps([f"np.copyto({{o}}, {g.a(y)})", f"np.copyto({{o}}, {g.a(x)}, where={g.a(c)})"],
                 inplace_ok=False)


def _same_int(node: Node, *xs) -> bool:
    """All tensor operands share the output's integer dtype; scalars are ints it holds."""
    out = node.val
    if not isinstance(out, Tensor) or out.dtype not in _INTS:
        return False
    info = np.iinfo(out.dtype.np)
    for x in xs:
        if isinstance(x, Node):
            if not isinstance(x.val, Tensor) or x.val.dtype is not out.dtype:
                return False
        elif type(x) is not int or not info.min <= x <= info.max:
            return False
    return True


@rule("bitwise_not")
def _bitwise_not(g, node, b):
    x = b["self"]
    if not isinstance(x, Node) or x.val.dtype is not node.val.dtype:
        return None
    if node.val.dtype is dt.bool_:
        return f"np.logical_not({g.a(x)})"
    return f"np.invert({g.a(x)})" if node.val.dtype in _INTS else None


@rule("masked_fill")
def _masked_fill(g, node, b):
    x, mask, v = b["self"], b["mask"], b["value"]
    if not _same_float(node, x, v) or mask.val.dtype is not dt.bool_:
        return None
    return f"np.where({g.a(mask)}, {g.const_dtype(node)}({g.a(v)}), {g.a(x)})"


@rule("clamp", "clip")
def _clamp(g, node, b):
    x, lo, hi = b["self"], b.get("min"), b.get("max")
    if not _same_float(node, x, lo, hi) or (lo is None and hi is None):
        return None
    src, lines = g.a(x), []
    if lo is not None:
        lines.append(f"np.maximum({src}, {g.a(lo)}, out={{o}})")
        src = "{o}"
    if hi is not None:
        lines.append(f"np.minimum({src}, {g.a(hi)}, out={{o}})")
    return Steps(lines)


@rule("gelu")
def _gelu(g, node, b):
    x = b["self"]
    if b.get("approximate") != "tanh" or not _same_float(node, x):
        return None
    c = math.sqrt(2.0 / math.pi)
    a = g.a(x)
    # 0.5 * x * (1 + tanh(u)) == x * (1 / (1 + exp(-2u))), u = c * x * (1 + 0.044715 * x**2),
    # in the eager kernel's order of roundings (reciprocal, then the product)
    return Steps([f"np.multiply({a}, {a}, out={{o}})",
                  f"np.multiply({{o}}, {-2.0 * c * 0.044715!r}, out={{o}})",
                  f"np.add({{o}}, {-2.0 * c!r}, out={{o}})", f"np.multiply({{o}}, {a}, out={{o}})",
                  "np.exp({o}, out={o})", "np.add({o}, 1.0, out={o})",
                  "np.reciprocal({o}, out={o})",
                  f"np.multiply({{o}}, {a}, out={{o}})"], inplace_ok=False)


# -- reductions ---------------------------------------------------------------------------------
def _dims(dim, ndim: int):
    if dim is None or (not isinstance(dim, int) and len(dim) == 0):
        return None     # torch: an empty dim list reduces every dimension
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return tuple(sorted(d % ndim if ndim else 0 for d in dims))


@rule("sum", "mean", "amax", "amin")
def _reduce(g, node, b):
    x = b["self"]
    if b.get("dtype") is not None or not _same_float(node, x) or x.val.ndim == 0:
        return None
    dims = _dims(b.get("dim"), x.val.ndim)
    shape = x.val.shape
    if node.target.name == "mean" and any(
            shape[d] == 0 for d in (range(len(shape)) if dims is None else dims)):
        return None     # NumPy warns "Mean of empty slice"; the ember op gives NaN quietly
    fn = {"sum": "np.sum", "mean": "np.mean", "amax": "np.amax", "amin": "np.amin"}
    return f"{fn[node.target.name]}({g.a(x)}, axis={dims!r}, keepdims={bool(b['keepdim'])})"


@rule("softmax", "_softmax", "log_softmax", "_log_softmax")
def _softmax(g, node, b):
    x = b.get("self", b.get("input"))
    if b.get("dtype") is not None or not _same_float(node, x) or x.val.ndim == 0:
        return None
    d = b["dim"] % x.val.ndim
    a = g.a(x)
    m = g.tmp(f"np.amax({a}, axis={d}, keepdims=True)")
    if "log" in node.target.name:
        return Steps([f"np.subtract({a}, {m}, out={{o}})",
                      f"{m} = np.log(np.sum(np.exp({{o}}), axis={d}, keepdims=True))",
                      f"np.subtract({{o}}, {m}, out={{o}})"])
    return Steps([f"np.subtract({a}, {m}, out={{o}})", "np.exp({o}, out={o})",
                  f"np.divide({{o}}, np.sum({{o}}, axis={d}, keepdims=True), out={{o}})"])


@rule("native_layer_norm")
def _layer_norm(g, node, b):
    x, w, bias, eps = b["input"], b["weight"], b["bias"], b["eps"]
    if not isinstance(x, Node) or x.val.dtype not in _FLOATS or \
            node.val[0].dtype is not x.val.dtype:
        return None
    for p in (w, bias):
        if p is not None and (not isinstance(p, Node) or p.val.dtype is not x.val.dtype):
            return None
    k = len(b["normalized_shape"])
    axes = tuple(range(x.val.ndim - k, x.val.ndim))
    a = g.a(x)
    mean = g.tmp(f"np.mean({a}, axis={axes!r}, keepdims=True)")
    shape = tuple(node.val[1].shape)
    rstd = f"_r{mean}"
    lines = [f"np.subtract({a}, {mean}, out={{o}})",
             f"{rstd} = np.mean(np.square({{o}}, out={g.scratch(x.val)}), axis={axes!r}, "
             f"keepdims=True)",
             f"np.add({rstd}, {float(eps)!r}, out={rstd})", f"np.sqrt({rstd}, out={rstd})",
             f"np.reciprocal({rstd}, out={rstd})", f"np.multiply({{o}}, {rstd}, out={{o}})"]
    if w is not None:
        lines.append(f"np.multiply({{o}}, {g.a(w)}, out={{o}})")
    if bias is not None:
        lines.append(f"np.add({{o}}, {g.a(bias)}, out={{o}})")
    lines.append(f"{{o}} = ({{o}}, {mean}.reshape({shape!r}), {rstd}.reshape({shape!r}))")
    return Steps(lines)


# -- matmul -------------------------------------------------------------------------------------
@rule("matmul", "mm", "bmm")
def _matmul_rule(g, node, b):
    x, y = b["self"], b.get("other", b.get("mat2"))
    if not _same_float(node, x, y) or not isinstance(y, Node) or node.val.ndim == 0:
        return None
    return Steps([f"_matmul({g.a(x)}, {g.a(y)}, {{o}})"], inplace_ok=False)


def _matmul(x, y, out):
    """``x @ y`` into ``out`` through the eager kernels' GEMM (``blas.gemm``: MKL or NumPy,
    NOTE [GEMM provider]), so compiled products round as eager ones; the batched-times-matrix
    case as one GEMM (NOTE [Batched times matrix] in ember/backends/cpu/linalg.py)."""
    if x.ndim > 2 and y.ndim == 2 and out.flags.c_contiguous:
        blas.gemm(x.reshape(-1, x.shape[-1]), y, out.reshape(-1, y.shape[-1]))
    else:
        blas.gemm(x, y, out)


@rule("addmm")
def _addmm(g, node, b):
    s, m1, m2 = b["self"], b["mat1"], b["mat2"]
    if not _same_float(node, s, m1, m2) or b["beta"] != 1 or b["alpha"] != 1:
        return None
    return Steps([f"_matmul({g.a(m1)}, {g.a(m2)}, {{o}})",
                  f"np.add({{o}}, {g.a(s)}, out={{o}})"], inplace_ok=False)


# -- shapes and views ---------------------------------------------------------------------------
def _shape_ok(node) -> bool:
    return isinstance(node.val, Tensor)


@rule("view", "reshape", "_unsafe_view", "flatten", "squeeze", "unflatten", "view_as",
      "reshape_as")
def _reshape(g, node, b):
    x = b.get("self", b.get("input"))
    if not isinstance(x, Node) or not _shape_ok(node):
        return None
    if _folded_reshape(g, node) is not None:
        return "None"   # the copy_ reading it writes ``x`` through a view of its destination
    return f"np.reshape({g.a(x)}, {tuple(node.val.shape)!r})"


_RESHAPES = frozenset({"view", "reshape", "_unsafe_view", "flatten", "squeeze", "unflatten",
                       "view_as", "reshape_as"})


def _folded_reshape(g, node: Node) -> Node | None:
    """NOTE [Copies through a reshape]: for a reshape read only by ``copy_(dst, reshape)``
    (a split's gradient pieces written into their buffer), the reshape's input, when ``dst``
    can be viewed with that input's shape: the copy then writes the input's values through
    that view, and the reshape (which NumPy makes by copying a non-contiguous input) is never
    materialised. None when the pattern does not hold (decided once per node)."""
    try:
        return g.folds[id(node)]
    except KeyError:
        inner = g.folds[id(node)] = _fold_of(g, node)
        return inner


def _fold_of(g, node: Node) -> Node | None:
    t = node.target
    if node.op != "call" or not isinstance(t, Operator) or t.name not in _RESHAPES or \
            len(node.users) != 1:
        return None
    user, inner = node.users[0], node.args[0]
    if user.op != "call" or not isinstance(user.target, Operator) or \
            user.target.name != "copy_" or user.args[1] is not node or user.args[0] is node:
        return None
    dst = user.args[0]
    if not (isinstance(inner, Node) and isinstance(dst, Node) and isinstance(inner.val, Tensor)
            and isinstance(dst.val, Tensor)):
        return None
    d = node.val.dtype
    if d in _HALF or inner.val.dtype is not d or dst.val.dtype is not d or \
            tuple(dst.val.shape) != tuple(node.val.shape) or not g.owned(dst) or \
            not g._renderable(user) or not inner.val.numel():
        return None
    if not _viewable(dst.val, tuple(inner.val.shape)):
        return None
    if not _nothing_writes(inner, node, user):
        return None
    return inner


def _root(node: Node) -> Node:
    """The node whose memory ``node`` views (itself when it is not a view)."""
    while node.op == "call" and isinstance(node.target, Operator) and \
            Tag.view in node.target.tags and isinstance(node.args[0], Node):
        node = node.args[0]
    return node


def _nothing_writes(value: Node, start: Node, end: Node) -> bool:
    """No impure call strictly between ``start`` and ``end`` may change ``value``: copies
    into buffers made inside the graph (other than ``value``'s own) are the only ones
    allowed, as the gradient pieces written one after another into their buffer."""
    nodes = value.graph.nodes
    mine = _root(value)
    for n in nodes[nodes.index(start) + 1:nodes.index(end)]:
        if n.op != "call" or not is_impure(n.target, n.kwargs):
            continue
        if not (isinstance(n.target, Operator) and n.target.name == "copy_" and
                isinstance(n.args[0], Node)):
            return False
        dst = _root(n.args[0])
        if dst is mine or not (dst.op == "call" and isinstance(dst.target, Operator) and
                               dst.target._is_factory):
            return False
    return True


def _viewable(val: Tensor, shape: tuple) -> bool:
    """Whether an array laid out as ``val`` (shape, strides) can be viewed with ``shape`` by
    :func:`_reshaped` (asked of NumPy itself, on a strided probe that is never read)."""
    item = val.element_size()
    probe = np.lib.stride_tricks.as_strided(np.empty(1, np.uint8), tuple(val.shape),
                                            tuple(st * item for st in val.stride()))
    try:
        _reshaped(probe, shape)
    except (AttributeError, ValueError):
        return False
    return True


def _reshaped(a: np.ndarray, shape: tuple) -> np.ndarray:
    """``a`` viewed with ``shape``; raises rather than copying (the caller writes through
    it)."""
    v = a.view()
    v.shape = shape
    return v


@rule("unsqueeze")
def _unsqueeze(g, node, b):
    return f"{g.a(b['self'])}.reshape({tuple(node.val.shape)!r})"  # never copies


@rule("transpose", "swapaxes")
def _transpose(g, node, b):
    x = b["self"]
    n = max(x.val.ndim, 1)
    d0, d1 = b.get("dim0", b.get("axis0")), b.get("dim1", b.get("axis1"))
    if x.val.ndim < 2:
        return g.a(x)
    return f"np.swapaxes({g.a(x)}, {d0 % n}, {d1 % n})"


@rule("t")
def _t(g, node, b):
    return f"{g.a(b['self'])}.T"


@rule("permute")
def _permute(g, node, b):
    x = b["self"]
    n = x.val.ndim
    dims = tuple(d % n for d in b["dims"])
    return f"np.transpose({g.a(x)}, {dims!r})"


@rule("expand")
def _expand(g, node, b):
    return f"np.broadcast_to({g.a(b['self'])}, {tuple(node.val.shape)!r})"


def _index(ndim: int, dim: int, item: str) -> str:
    return "[" + ", ".join([":"] * dim + [item]) + "]" if dim < ndim else "[...]"


@rule("narrow")
def _narrow(g, node, b):
    x, start, length = b["self"], b["start"], b["length"]
    if isinstance(start, Node) or isinstance(length, Node):
        return None
    n = x.val.ndim
    d = b["dim"] % n
    s0 = start + x.val.shape[d] if start < 0 else start
    stop = s0 + length
    return f"{g.a(x)}{_index(n, d, f'{s0}:{stop}')}"


@rule("slice")
def _slice(g, node, b):
    x = b["self"]
    n = x.val.ndim
    d = b["dim"] % n
    size = x.val.shape[d]
    start, end, step = b["start"], b["end"], b["step"]
    if any(isinstance(v, Node) for v in (start, end, step)):
        return None
    start, end, _ = slice(start, end, step).indices(size)
    end = max(end, start)
    return f"{g.a(x)}{_index(n, d, f'{start}:{end}:{step}')}"


@rule("select")
def _select(g, node, b):
    x, idx = b["self"], b["index"]
    if isinstance(idx, Node):
        return None
    n = x.val.ndim
    d = b["dim"] % n
    return f"{g.a(x)}{_index(n, d, str(idx % x.val.shape[d]))}"


@rule("split", "split_with_sizes")
def _split(g, node, b):
    x = b["self"]
    n = x.val.ndim
    d = b.get("dim", 0) % n
    pieces, start = [], 0
    for part in node.val:
        stop = start + part.shape[d]
        pieces.append(f"{g.a(x)}{_index(n, d, f'{start}:{stop}')}")
        start = stop
    return "(" + ", ".join(pieces) + ",)"


@rule("clone")
def _clone(g, node, b):
    return f"np.copy({g.a(b['self'])}, order='K')"


@rule("contiguous")
def _contiguous(g, node, b):
    return f"np.ascontiguousarray({g.a(b['self'])})"


@rule("cat", "concat", "concatenate", "stack")
def _cat(g, node, b):
    ts = b["tensors"]
    if not all(isinstance(t, Node) and t.val.dtype is node.val.dtype for t in ts):
        return None
    if node.val.dtype in _HALF:
        return None
    fn = "np.stack" if node.target.name == "stack" else "np.concatenate"
    nd = node.val.ndim
    if fn == "np.concatenate" and any(t.val.ndim != nd for t in ts):
        return None
    return f"{fn}([{', '.join(g.a(t) for t in ts)}], axis={b['dim'] % nd})"


@rule("index_select")
def _index_select(g, node, b):
    x, d, idx = b["self"], b["dim"], b["index"]
    if node.val.dtype in _HALF or x.val.ndim == 0:
        return None
    return f"np.take({g.a(x)}, np.reshape({g.a(idx)}, -1), axis={d % x.val.ndim})"


@rule("gather")
def _gather(g, node, b):
    x, idx = b["self"], b["index"]
    if b.get("sparse_grad") or not isinstance(x, Node) or node.val.dtype not in _DT_TO_NP:
        return None
    dim = b["dim"] % max(x.val.ndim, 1)
    return f"_gather_values({g.a(x)}, {dim}, {g.a(idx)}).reshape({tuple(node.val.shape)!r})"


@rule("scatter_add", "index_add")
def _accumulate(g, node, b):
    """``self`` copied into the output, then ``src`` added at the indices by the eager
    kernels' own core (``scatter_add_values`` / ``index_add_values``: same order, same bits)."""
    s, idx, src = b["self"], b["index"], b.get("src", b.get("source"))
    alpha = b.get("alpha", 1)
    if not (isinstance(s, Node) and isinstance(src, Node)) or isinstance(alpha, Node) or \
            node.val.dtype not in _DT_TO_NP or src.val.dtype is not node.val.dtype:
        return None
    dim = b["dim"] % max(s.val.ndim, 1)
    add = (f"_scatter_add_values({{o}}, {dim}, {g.a(idx)}, {g.a(src)})"
           if node.target.name == "scatter_add" else
           f"_index_add_values({{o}}, {dim}, {g.a(idx)}, {g.a(src)}, {alpha!r})")
    return Steps([f"np.copyto({{o}}, {g.a(s)})", add], donor=s)


@rule("embedding")
def _embedding(g, node, b):
    w, idx = b["weight"], b["indices"]
    if node.val.dtype in _HALF:
        return None
    return f"np.take({g.a(w)}, {g.a(idx)}, axis=0)"


@rule("tril", "triu")
def _tril(g, node, b):
    x = b["self"]
    if x.val.ndim < 2 or node.val.dtype in _HALF:
        return None
    return f"np.{node.target.name}({g.a(x)}, {b['diagonal']})"


# -- factories, copies, casts -------------------------------------------------------------------
def _factory_ok(node, b) -> bool:
    dev = b.get("device")
    return (not b.get("requires_grad") and b.get("out") is None and
            (dev is None or str(dev) == "cpu") and node.val.dtype not in _HALF)


@rule("ones", "zeros", "empty", "empty_strided", "full", "zeros_like", "ones_like",
      "empty_like", "full_like")
def _fill(g, node, b):
    if not _factory_ok(node, b):
        return None
    name = node.target.name.removesuffix("_like").removesuffix("_strided")
    shape, stride = tuple(node.val.shape), tuple(node.val.stride())
    if name == "empty":
        # a dense layout is a permutation of a contiguous one: allocate, then permute
        perm = sorted(range(len(shape)), key=lambda d: -stride[d])
        alloc = tuple(shape[d] for d in perm)
        inv = tuple(perm.index(d) for d in range(len(shape)))
        if tuple(contiguous_strides(alloc)[inv[d]] for d in range(len(shape))) != stride:
            return None
        base = g.scratch_shape(alloc, node.val)
        return base if inv == tuple(range(len(shape))) else f"{base}.transpose({inv!r})"
    if stride != contiguous_strides(shape):
        return None  # NumPy's arrays would have another layout than eager's
    npd = g.np_dtype(node.val.dtype)
    v = {"zeros": 0, "ones": 1}.get(name)
    if name == "full":
        v = b["fill_value"]
        if isinstance(v, Node) or not isinstance(v, int | float | bool):
            return None
    if node.val.numel() * node.val.element_size() >= _LARGE:
        # NOTE [Large intermediates]: np.zeros maps fresh zero pages that fault on first
        # write (a split's backward writes slices of three (B, T, 3C) zero buffers)
        return f"_filled({g.scratch_shape(shape, node.val)}, {_render(v)})"
    if name == "full":
        return f"np.full({shape!r}, {_render(v)}, {npd})"
    return f"np.{name}({shape!r}, {npd})"


def _filled(a, value):
    """``a`` with every element set to ``value``."""
    a.fill(value)
    return a


@rule("arange")
def _arange(g, node, b):
    if not _factory_ok(node, b) or node.val.dtype not in (dt.int64, dt.int32):
        return None
    start, end, step = b.get("start", 0), b.get("end"), b.get("step", 1)
    if end is None:
        start, end = 0, start
    if not all(type(v) is int for v in (start, end, step)):
        return None
    return f"np.arange({start}, {end}, {step}, dtype={g.np_dtype(node.val.dtype)})"


@rule("_to_copy")
def _to_copy(g, node, b):
    x = b["self"]
    dev = b.get("device")
    if (dev is not None and str(dev) != "cpu") or b.get("memory_format") is not None:
        return None
    if node.val.dtype in _HALF or x.val.dtype in _HALF:
        return None
    return f"{g.a(x)}.astype({g.np_dtype(node.val.dtype)})"


@rule("copy_")
def _copy_(g, node, b):
    dst, src = b["self"], b["src"]
    if not g.owned(dst) or node.val.dtype in _HALF or src.val.dtype in _HALF:
        return None
    if _only_copied_again(g, node, src):
        return g.a(src)  # the next copy_ reads ``src`` itself: this copy is never seen
    inner = _folded_reshape(g, src) if isinstance(src, Node) else None
    if inner is not None:   # NOTE [Copies through a reshape]
        g.emit(f"np.copyto(_reshaped({g.a(dst)}, {tuple(inner.val.shape)!r}), {g.a(inner)}, "
               "casting='unsafe')")
        return g.a(dst)
    g.emit(f"np.copyto({g.a(dst)}, {g.a(src)}, casting='unsafe')")
    return g.a(dst)


def _only_copied_again(g, node: Node, src) -> bool:
    """``copy_(fresh, src)`` whose only reader is another ``copy_`` taking it as source, or a
    reshape that such a copy writes through (NOTE [Copies through a reshape]), with nothing
    in between that could change ``src`` (``reshape`` of a transposed tensor copies twice this
    way)."""
    if not isinstance(src, Node) or src.val.dtype is not node.val.dtype or len(node.users) != 1:
        return False
    user = node.users[0]
    if _folded_reshape(g, user) is node:
        return _nothing_writes(src, node, user.users[0])
    if user.op != "call" or user.target is not node.target or user.args[1] is not node or \
            user.args[0] is node:
        return False
    return _nothing_writes(src, node, user)


# -- the generator ------------------------------------------------------------------------------
class _Gen:
    """Emits the function body: one NumPy line per rendered node, ember calls for the rest."""

    def __init__(self, gm: GraphModule):
        self.graph = gm.graph
        self.lines: list[str] = []
        self.globals: dict = code_globals(self.graph)[0]
        self.globals.update(np=np, _wrap=_wrap, _nv=numpy_view, _matmul=_matmul,
                            _scratch=scratch_array, _filled=_filled, _reshaped=_reshaped,
                            _vals=_values, _gather_values=gather_values,
                            _scatter_add_values=scatter_add_values,
                            _index_add_values=index_add_values)
        self.folds: dict[int, Node | None] = {}  # NOTE [Copies through a reshape]
        self.arr: dict[int, str] = {}   # node -> NumPy expression name
        self.ten: dict[int, str] = {}   # node -> ember tensor expression name
        self.rendered = 0
        self.fallbacks: list[str] = []
        self._tmp = 0
        self._must_alias = _alias_outputs(self.graph)
        self.fresh: set[int] = set()  # nodes whose buffers this function allocated
        self._last: dict[int, int] | None = None  # node -> position of its last reader
        self.release = False  # emit ``del`` for dead values (generate() turns it on)
        self._mutates = any(n.op == "call" and isinstance(n.target, Operator) and
                            n.target._is_inplace and n.target.name != "copy_"
                            for n in self.graph.nodes)

    # helpers used by rules
    def emit(self, line: str) -> None:
        self.lines.append("    " + line)

    def tmp(self, expr: str) -> str:
        self._tmp += 1
        name = f"_t{self._tmp}"
        self.emit(f"{name} = {expr}")
        return name

    def np_dtype(self, dtype) -> str:
        name = f"_np_{str(dtype).removeprefix('ember.')}"
        self.globals[name] = np.dtype(dtype.np)
        return name

    def can_donate(self, x, node: Node) -> bool:
        """Whether ``node`` may write its result into ``x``'s buffer."""
        return isinstance(x, Node) and self._donor(node, node.val, x) is not None

    def scratch(self, val) -> str:
        """A temporary array shaped like ``val`` (from the caching allocator when large)."""
        return self.scratch_shape(tuple(val.shape), val)

    def scratch_shape(self, shape: tuple, val) -> str:
        if math.prod(shape) * val.element_size() < _LARGE:
            return f"np.empty({shape!r}, {self.np_dtype(val.dtype)})"
        return f"_scratch({shape!r}, {self.np_dtype(val.dtype)})"

    def dtype_obj(self, dtype) -> str:
        name = f"_dt_{str(dtype).removeprefix('ember.')}"
        self.globals[name] = dtype
        return name

    def const_dtype(self, node: Node) -> str:
        name = f"_sc_{str(node.val.dtype).removeprefix('ember.')}"
        self.globals[name] = np.dtype(node.val.dtype.np).type
        return name

    def bind_const(self, value, prefix: str = "_c") -> str:
        name = f"{prefix}{len(self.globals)}"
        self.globals[name] = value
        return name

    def a(self, x) -> str:
        """NumPy spelling of an argument (array name for nodes, literal for constants)."""
        if not isinstance(x, Node):
            text = _render(x)
            return text if not text.startswith("_const(") else self.bind_const(x)
        name = self.arr.get(id(x))
        if name is None:
            if not isinstance(x.val, Tensor) and x.op == "placeholder":
                return x.name
            name = f"a_{x.name}"
            # an input's array may use the fast view; an ember op's result must keep its
            # block alive through the array (NOTE [Large intermediates]); both read the values
            # of a tensor with a lazy bit (conjugated or negated view), not its memory
            view = "_nv" if x.op in ("placeholder", "constant") else "_vals"
            self.emit(f"{name} = {view}({self.t(x)})")
            self.arr[id(x)] = name
        return name

    def t(self, x) -> str:
        """Ember spelling of an argument (tensor name for nodes, literal for constants)."""
        if not isinstance(x, Node):
            text = _render(x)
            return text if not text.startswith("_const(") else self.bind_const(x)
        name = self.ten.get(id(x))
        if name is None:
            name = f"t_{x.name}"
            npd = self.np_dtype(x.val.dtype)
            self.emit(f"{name} = _wrap({self.arr[id(x)]}, {npd})")
            self.ten[id(x)] = name
        return name

    def owned(self, node: Node) -> bool:
        """Whether ``node``'s memory was allocated inside this graph (safe to write)."""
        while node.op == "call" and isinstance(node.target, Operator) and \
                Tag.view in node.target.tags:
            node = node.args[0]
        return node.op == "call" and isinstance(node.target, Operator) and \
            node.target._is_factory

    # the walk
    def run(self) -> str:
        params = []
        for node in self.graph.nodes:
            if node.op == "placeholder":
                params.append(node.name)
                self.ten[id(node)] = node.name
            elif node.op == "constant":
                self.globals[node.name] = self.graph.constants[node.name]
                self.ten[id(node)] = node.name
                # (a constant with a lazy bit is read at each call: its resolved array is a
                # copy, which would miss later writes to the memory it views)
                if isinstance(self.graph.constants[node.name], Tensor) and \
                        self.graph.constants[node.name]._device is CPU and \
                        not any(lazy_bits(self.graph.constants[node.name])):
                    self.globals[f"a_{node.name}"] = numpy_view(self.graph.constants[node.name])
                    self.arr[id(node)] = f"a_{node.name}"
            elif node.op == "call":
                self._call(node)
                if self.release:
                    self._release(node)
            elif node.op == "output":
                self.emit(f"return {self._output(node.args[0])}")
        body = "\n".join(self.lines) or "    pass"
        head = f"def forward({', '.join(params)}):\n    _tok = _set_err(_IGNORE)\n    try:\n"
        body = "\n".join("    " + ln for ln in body.splitlines())
        tail = "\n    finally:\n        _reset_err(_tok)\n"
        self.globals.update(_set_err=_set_errstate, _reset_err=_reset_errstate, _IGNORE=_IGNORE)
        return head + body + tail

    def _call(self, node: Node) -> None:
        t = node.target
        if t is operator.getitem:
            src, i = node.args
            if id(src) in self.arr and id(node) not in self._must_alias:
                self.emit(f"a_{node.name} = {self.arr[id(src)]}[{i}]")
                self.arr[id(node)] = f"a_{node.name}"
            else:
                self.emit(f"t_{node.name} = {self.t(src)}[{i}]")
                self.ten[id(node)] = f"t_{node.name}"
            return
        expr = None
        fn = RULES.get(t.name) if isinstance(t, Operator) else None
        if fn is not None and self._renderable(node):
            mark = len(self.lines)
            try:
                expr = fn(self, node, t.schema.bind(node.args, node.kwargs))
            except (KeyError, TypeError, AttributeError, IndexError, ZeroDivisionError):
                expr = None
            if expr is None:
                del self.lines[mark:]
        if isinstance(expr, Steps):
            self._steps(node, expr)
            self.rendered += 1
            return
        if expr is not None:
            self.emit(f"a_{node.name} = {expr}")
            self.arr[id(node)] = f"a_{node.name}"
            self.rendered += 1
            return
        self._fallback(node)

    def _release(self, node: Node) -> None:
        """``del`` the names of inputs whose last reader is ``node``, so their blocks return
        to the allocator during the call (arrays keep what their views still need)."""
        if self._last is None:
            order = {id(n): i for i, n in enumerate(self.graph.nodes)}
            self._last = {id(n): max((order[id(u)] for u in n.users), default=-1)
                          for n in self.graph.nodes}
            for n in self.graph.nodes:    # NOTE [Copies through a reshape]: the copy reads
                inner = _folded_reshape(self, n)    # the reshape's input
                if inner is not None:
                    self._last[id(inner)] = max(self._last[id(inner)], order[id(n.users[0])])
            self._order = order
        here = self._order[id(node)]
        dead = [x for x in node.input_nodes()
                if x.op == "call" and self._last.get(id(x)) == here]
        if not dead:
            return
        live = {v for k, v in (*self.arr.items(), *self.ten.items())
                if k not in {id(x) for x in dead}}
        names = []
        for x in dead:
            for table in (self.arr, self.ten):
                name = table.pop(id(x), None)
                if name is not None and name not in live and name.isidentifier():
                    names.append(name)
        if names:
            self.emit(f"del {', '.join(dict.fromkeys(names))}")

    def _steps(self, node: Node, steps: Steps) -> None:
        name = f"a_{node.name}"
        val = node.val[0] if isinstance(node.val, tuple) else node.val
        donor = self._donor(node, val, steps.donor) if steps.inplace_ok else None
        if donor is not None:
            name = self.arr[id(donor)]  # write over the dead input, under its name
            if id(donor) in self.ten and not isinstance(node.val, tuple):
                self.ten[id(node)] = self.ten[id(donor)]
        elif val.numel() * val.element_size() >= _LARGE:
            # NOTE [Large intermediates]: fresh multi-megabyte NumPy arrays are new mappings
            # that page-fault on every call; blocks from ember's caching allocator are reused.
            # ``scratch_array`` ties the block's life to the array (and so to every NumPy
            # view of it and every tensor wrapped around one).
            self.emit(f"{name} = _scratch({tuple(val.shape)!r}, {self.np_dtype(val.dtype)})")
        else:
            self.emit(f"{name} = np.empty({tuple(val.shape)!r}, {self.np_dtype(val.dtype)})")
        for line in steps.lines:
            self.emit(line.replace("{o}", name))
        self.arr[id(node)] = name
        self.fresh.add(id(node))

    def _donor(self, node: Node, val, only=None):
        """A dead input whose buffer ``node`` may overwrite (same shape and dtype, owned)."""
        for x in node.input_nodes() if only is None else [only]:
            if id(x) in self.fresh and len(x.users) == 1 and isinstance(x.val, Tensor) and \
                    x.val.shape == val.shape and x.val.dtype is val.dtype:
                return x
        return None

    def _renderable(self, node: Node) -> bool:
        if id(node) in self._must_alias or node.kwargs.get("out") is not None:
            return False
        t = node.target
        if t._is_inplace and t.name != "copy_":
            return False
        if self._mutates and (Tag.view in t.tags or t.name in _MAY_ALIAS or
                              t.name in ("split", "split_with_sizes")):
            # a NumPy reshape may copy where eager made a view: with mutations in the graph,
            # views stay ember views so writes through them reach their base
            return False
        if Tag.random in t.tags:
            return False
        vals = node.val if isinstance(node.val, tuple | list) else (node.val,)
        if not all(isinstance(v, Tensor) and v.dtype not in _HALF and v.dtype in _DT_TO_NP
                   for v in vals):
            return False
        # complex (and other dtypes without a rendering) stay ember ops, inputs included
        if not all(not isinstance(x.val, Tensor) or x.val.dtype in _DT_TO_NP
                   for x in node.input_nodes()):
            return False
        # the array of a tensor with a lazy bit is a resolved copy, taken once: where the graph
        # writes memory in place, the ember op reads such a tensor afresh instead
        return not self._mutates or not any(isinstance(x.val, Tensor) and any(lazy_bits(x.val))
                                            for x in node.input_nodes())

    def _fallback(self, node: Node) -> None:
        label = getattr(node.target, "short_name", None) or getattr(node.target, "__name__", "fn")
        gname = self.bind_const(node.target, f"_op_{_sanitize(label.split('.')[0])}")
        args = [self._tval(a) for a in node.args]
        args += [f"{k}={self._tval(v)}" for k, v in node.kwargs.items()]
        self.emit(f"t_{node.name} = {gname}({', '.join(args)})")
        self.ten[id(node)] = f"t_{node.name}"
        self.fallbacks.append(label)

    def _tval(self, x) -> str:
        if isinstance(x, Node):
            return self.t(x)
        if isinstance(x, tuple):
            inner = ", ".join(self._tval(a) for a in x)
            return f"({inner},)" if len(x) == 1 else f"({inner})"
        if isinstance(x, list):
            return "[" + ", ".join(self._tval(a) for a in x) + "]"
        return self.t(x)

    def _output(self, value) -> str:
        if isinstance(value, Node):
            if not isinstance(value.val, Tensor):
                return self.a(value) if id(value) in self.arr else self.t(value)
            if id(value) in self.ten:
                return self.ten[id(value)]
            return f"_wrap({self.arr[id(value)]}, {self.np_dtype(value.val.dtype)})"
        if isinstance(value, tuple):
            inner = ", ".join(self._output(v) for v in value)
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        if isinstance(value, list):
            return "[" + ", ".join(self._output(v) for v in value) + "]"
        return self._tval(value)


def _alias_outputs(graph) -> set[int]:
    """Nodes on view chains from a graph input or constant to an output: they stay ember ops,
    so the outputs share storage and version counter with the input, as in eager."""
    out = graph.output_node
    if out is None:
        return set()
    keep: set[int] = set()
    stack = [n for n in _leaves(out.args[0]) if isinstance(n, Node)]
    while stack:
        node = stack.pop()
        chain = []
        cur = node
        while cur.op == "call" and (cur.target is operator.getitem or (
                isinstance(cur.target, Operator) and
                (Tag.view in cur.target.tags or cur.target.name in _MAY_ALIAS or
                 cur.target._is_inplace))):
            chain.append(cur)
            cur = cur.args[0]
        if cur.op in ("placeholder", "constant"):
            keep.update(id(n) for n in chain)
    return keep


def _leaves(x):
    if isinstance(x, tuple | list):
        for a in x:
            yield from _leaves(a)
    else:
        yield x


def generate(gm: GraphModule) -> tuple[str, dict, _Gen]:
    """The NumPy source of ``gm``'s graph, its globals, and the generator (for statistics)."""
    gen = _Gen(gm)
    gen.release = True
    source = gen.run()
    return source, gen.globals, gen


@register_backend("numpy")
def numpy_backend(gm: GraphModule, example_inputs):
    """Compile ``gm`` to one Python function over NumPy arrays (see the module docstring).

    The generated source is kept as ``fn.source``; ``fn.fallbacks`` lists the ops that call
    ember because no NumPy rule covered them.
    """
    source, g, gen = generate(gm)
    fn = compile_source(source, g, "forward", "numpy")
    fn.source = source
    fn.fallbacks = gen.fallbacks
    from ember.compiler import logs

    logs.log("graph_code", f"numpy backend source:\n{source}")
    return fn
