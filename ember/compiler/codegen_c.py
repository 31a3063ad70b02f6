"""C source for scheduled kernels: one function per kernel, ``void ember_k<i>(void** buf)``.

A kernel iterates its shape ``F`` as ``rows x F[-1]``: per row, each member runs one pass
over the row (a reduction accumulates into a per-row scalar, a pointwise value stores its
elements), so softmax or layer norm is one kernel with a few passes per row. Pure pointwise
kernels whose operands are contiguous or scalar run one flat ``#pragma omp simd`` loop.
Loads are index expressions over strides (broadcast = stride 0). Sizes, strides and offsets
are not baked: each kernel reads them from its ``sz`` argument (``void ember_k<i>(void** buf,
const int64_t* sz)``; :func:`generate_c` returns their values), so one library serves every
size of a shape class (dynamic shapes) and the disk cache hits across sizes. NaN semantics
follow eager ember: ``maximum``/``minimum``/``relu``/``amax`` propagate NaN.
"""

from __future__ import annotations

import math

from ember.compiler.lower.ir import Layout, LNode, contiguous_strides
from ember.compiler.lower.scheduler import Kernel, realized_reads
from ember.core import dtype as dt

__all__ = ["generate_c", "group_entry", "ctype", "Slot", "PRELUDE"]

CODEGEN_VERSION = 5
# elements: kernels this large get an OpenMP parallel loop (compiler-design.md 7.4: on a small
# shared machine threads hurt below ~1M elements)
PAR_THRESHOLD = 1 << 20
# rows of a column reduction summed side by side (double accumulators on the stack)
COL_TILE = 256
# their accumulators: float32 columns add in float32 (row by row, as NumPy's and so eager's
# ``sum(0)``); converting every element to double halved the throughput
_COL_ACC = {dt.float32: "float"}
# threads of the parallel loops: set after loading by ember.compiler.cc.num_threads()
THREADS_DECL = ("static int ember_nt = 1;\n"
                "void ember_set_threads(int n) { ember_nt = n > 0 ? n : 1; }\n")
# NOTE [Checked indices]: a kernel that reads through an index tensor (gather, scatter_add
# along the last dimension, lowered as a compare with the position in the row) cannot raise;
# it records the first index outside [0, n) here (flag, index, n, dim) and the glue raises
# eager's IndexError-style RuntimeError after the call.
INDEX_CHECK_DECL = """int64_t ember_oob[4];
static inline int64_t ember_check_index(int64_t i, int64_t n, int64_t d) {
    if (__builtin_expect(i < 0 || i >= n, 0) && !ember_oob[0]) {
        ember_oob[1] = i; ember_oob[2] = n; ember_oob[3] = d; ember_oob[0] = 1;
    }
    return i;
}
"""

_CT = {dt.float32: "float", dt.float64: "double", dt.bool_: "uint8_t", dt.int32: "int32_t",
       dt.int64: "int64_t", dt.bfloat16: "float", dt.float16: "float"}
# half dtypes: stored as 16-bit words, computed in float (rounded where eager rounds: at the
# boundary of every graph node, so fused chains equal eager's per-op rounding)
_BT = {dt.bfloat16: "uint16_t", dt.float16: "_Float16"}
HALVES = (dt.bfloat16, dt.float16)
_UT = {dt.int32: "uint32_t", dt.int64: "uint64_t"}

_VEC_FNS = ("exp", "log", "tanh", "sin", "cos", "log1p", "expm1", "erf", "log2", "exp2", "pow")

_PAR_SIMD = "    #pragma omp parallel for simd schedule(static) num_threads(ember_nt)"
PRELUDE = "#include <stdint.h>\n#include <string.h>\n#include <math.h>\n"
HALF_HELPERS = """static inline float ember_bf16_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f;
}
static inline uint16_t ember_f32_bf16(float f) {
    uint32_t u; memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u); return (uint16_t)(u >> 16);
}
static inline float ember_round_bf16(float f) { return ember_bf16_f32(ember_f32_bf16(f)); }
"""


def vector_decls() -> str:
    """Declarations that let gcc call glibc's vector math (libmvec) from simd loops."""
    lines = []
    for f in _VEC_FNS:
        arity = "float, float" if f == "pow" else "float"
        darity = "double, double" if f == "pow" else "double"
        lines.append(f"float {f}f({arity}) __attribute__((simd(\"notinbranch\")));")
        lines.append(f"double {f}({darity}) __attribute__((simd(\"notinbranch\")));")
    return "\n".join(lines) + "\n"


def ctype(d) -> str:
    """The C type of a value of dtype ``d`` in registers (halves compute in float)."""
    return _CT[d]


def btype(d) -> str:
    """The C type of an element of a buffer of dtype ``d``."""
    return _BT.get(d) or _CT[d]


def load_code(d, ref: str) -> str:
    if d is dt.bfloat16:
        return f"ember_bf16_f32({ref})"
    if d is dt.float16:
        return f"((float){ref})"
    return ref


def store_code(d, v: str) -> str:
    if d is dt.bfloat16:
        return f"ember_f32_bf16({v})"
    if d is dt.float16:
        return f"((_Float16){v})"
    return f"(({ctype(d)}){v})"


class Slot:
    """One pointer argument: the LNode whose array is passed, and input or output."""

    def __init__(self, ln: LNode, is_out: bool):
        self.ln, self.is_out = ln, is_out


def _fn(name: str, d) -> str:
    return name + ("f" if d is dt.float32 else "")


def _const(v, d) -> str:
    if d is dt.bool_:
        return "1" if v else "0"
    if d in _UT:
        return f"(({ctype(d)}){int(v)}LL)"
    v = float(v)
    if math.isnan(v):
        text = "NAN"
    elif math.isinf(v):
        text = "INFINITY" if v > 0 else "(-INFINITY)"
    else:
        text = repr(v)
    return f"(({ctype(d)}){text})"


def _int_op(name: str, d, a: list[str]) -> str | None:
    """Integer forms: two's-complement wrapping (through unsigned), as NumPy and torch."""
    ct, ut = _CT[d], _UT[d]
    if name in ("add", "sub", "mul"):
        sym = {"add": "+", "sub": "-", "mul": "*"}[name]
        return f"(({ct})(({ut}){a[0]} {sym} ({ut}){a[1]}))"
    if name == "neg":
        return f"(({ct})(({ut})0 - ({ut}){a[0]}))"
    if name == "abs":
        return f"({a[0]} < 0 ? (({ct})(({ut})0 - ({ut}){a[0]})) : {a[0]})"
    if name == "relu":
        return f"({a[0]} > 0 ? {a[0]} : 0)"
    return None


def _op(name: str, d, a: list[str], arg_dtype) -> str:
    if d in _UT:
        code = _int_op(name, d, a)
        if code is not None:
            return code
    one = _const(1.0, d) if d not in _UT else "1"
    if name == "neg":
        return f"(-{a[0]})"
    if name in ("exp", "log", "tanh", "sqrt", "sin", "cos", "log1p", "expm1", "erf", "floor",
                "ceil", "trunc", "log2", "exp2"):
        return f"{_fn(name, d)}({a[0]})"
    if name == "abs":
        return f"{_fn('fabs', d)}({a[0]})"
    if name == "sigmoid":
        return f"({one} / ({one} + {_fn('exp', d)}(-{a[0]})))"
    if name == "relu":
        return f"(({a[0]} != {a[0]} || {a[0]} > 0) ? {a[0]} : {_const(0.0, d)})"
    if name == "rsqrt":
        return f"({one} / {_fn('sqrt', d)}({a[0]}))"
    if name == "reciprocal":
        return f"({one} / {a[0]})"
    if name in ("add", "sub", "mul", "div"):
        sym = {"add": "+", "sub": "-", "mul": "*", "div": "/"}[name]
        return f"({a[0]} {sym} {a[1]})"
    if name == "maximum":
        return f"(({a[0]} != {a[0]} || {a[0]} > {a[1]}) ? {a[0]} : {a[1]})"
    if name == "minimum":
        return f"(({a[0]} != {a[0]} || {a[0]} < {a[1]}) ? {a[0]} : {a[1]})"
    if name == "clamp_lo":
        return f"(({a[0]} < {a[1]}) ? {a[1]} : {a[0]})"
    if name == "clamp_hi":
        return f"(({a[0]} > {a[1]}) ? {a[1]} : {a[0]})"
    if name in ("pow", "atan2"):
        return f"{_fn(name, d)}({a[0]}, {a[1]})"
    if name == "where":
        return f"({a[0]} ? {a[1]} : {a[2]})"
    cmp = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
    if name in cmp:
        return f"(uint8_t)({a[0]} {cmp[name]} {a[1]})"
    raise KeyError(name)


def _bcast(layout: Layout, shape) -> tuple[tuple, int]:
    """Strides of ``layout`` read broadcast (right-aligned) over ``shape``."""
    k = len(shape) - len(layout.shape)
    out = []
    for i in range(len(shape)):
        j = i - k
        if j < 0 or layout.shape[j] == 1:
            out.append(0)
        else:
            out.append(layout.strides[j])
    return tuple(out), layout.offset


class _KernelGen:
    def __init__(self, k: Kernel):
        self.k = k
        self.F = k.shape
        self.nd = len(self.F)
        self.L = self.F[-1] if self.F else 1
        self.R = math.prod(self.F[:-1]) if self.F else 1
        self.slots: list[Slot] = []
        self.slot_of: dict[int, int] = {}
        self.lines: list[str] = []
        self.bases: dict = {}
        self.tmp = 0
        members = set(map(id, k.members))
        for ln in k.members:
            for src in realized_reads(ln):
                if id(src) in members and (src.kind == "red"):
                    continue
                if id(src) in members and src.kind == "pw":
                    continue
                self._slot(src.base if src.kind == "view" else src, False)
        for ln in k.members:
            if ln.stored:
                self._slot(ln, True)
        self.flat = self._flat_ok()
        self.col = not self.flat and self._col_ok()
        self.parallel = math.prod(self.F) >= PAR_THRESHOLD
        self.sizes: list[int] = []          # values of sz[0], sz[1], ...
        self.size_of: dict = {}

    def num(self, key, value) -> str:
        """``sz[k]`` holding ``value``; ``key`` names the quantity (one slot per quantity,
        never per value: two quantities equal at this size may differ at another)."""
        k = self.size_of.get(key)
        if k is None:
            k = self.size_of[key] = len(self.sizes)
            self.sizes.append(int(value))
        return f"sz[{k}]"

    def _slot(self, ln, is_out):
        if id(ln) not in self.slot_of:
            self.slot_of[id(ln)] = len(self.slots)
            self.slots.append(Slot(ln, is_out))

    def _layout(self, src: LNode) -> tuple[int, Layout]:
        if src.kind == "buffer":
            return self.slot_of[id(src)], src.layout
        if src.kind == "view":
            return self.slot_of[id(src.base)], src.layout
        return self.slot_of[id(src)], Layout(src.shape, contiguous_strides(src.shape), 0)

    def _flat_ok(self) -> bool:
        if any(m.kind == "red" for m in self.k.members):
            return False
        cs = tuple(0 if s == 1 else st for s, st in zip(self.F, contiguous_strides(self.F),
                                                      strict=True))
        for m in self.k.members:
            for src in realized_reads(m):
                if src.kind in ("pw", "red") and src.kernel is self.k:
                    continue
                _, lay = self._layout(src)
                st, _ = _bcast(lay, self.F)
                st = tuple(0 if s == 1 else x for s, x in zip(self.F, st, strict=True))
                if st != cs and any(st):
                    return False
        return True

    def _col_ok(self) -> bool:
        """Whether the kernel is a column reduction: only stored sums whose inputs are
        strided along the reduced (last) dimension and unit-stride along the one before it
        (``sum(0)`` of a row-major ``[N, C]``, a bias gradient). It then loops over the
        reduced dimension outside and over a tile of adjacent rows inside, vectorised."""
        if self.nd < 2 or self.F[-2] < 2:
            return False
        members = set(map(id, self.k.members))
        unit = False
        for m in self.k.members:
            if m.kind != "red" or m.rkind != "sum" or not m.stored:
                return False
            for src in realized_reads(m):
                if id(src) in members or (src.kind in ("pw", "red") and src.kernel is self.k):
                    return False
                _, lay = self._layout(src)
                st, _ = _bcast(lay, self.F)
                if st[-1] == 1 or st[-2] not in (0, 1):
                    return False
                unit = unit or st[-2] == 1
        return unit

    # -- expressions ----------------------------------------------------------------------------
    def index(self, src: LNode) -> tuple[int, str]:
        slot, lay = self._layout(src)
        st, off = _bcast(lay, self.F)
        lid = id(src)            # the value read: its layout is one quantity per dim
        o = self.num(("off", lid), off) if off else "0"
        if self.flat:
            return slot, (f"{o} + j" if any(st) else o)
        outer = st[:-1]
        key = (slot, lid)
        name = self.bases.get(key)
        if name is None:
            name = f"b{len(self.bases)}"
            terms = [o] + [f"i{d} * {self.num(('st', lid, d), s)}"
                           for d, s in enumerate(outer) if s]
            self.row_decl.append(f"        const int64_t {name} = {' + '.join(terms)};")
            self.bases[key] = name
        last = st[-1] if st else 0
        if self.col and st[-2]:
            name = f"{name} + c"        # the tile's row within the unit-stride dimension
        if not last:
            return slot, name
        if last == 1:       # unit stride stays literal: the inner loop vectorises
            return slot, f"{name} + j"
        return slot, f"{name} + j * {self.num(('st', lid, len(st) - 1), last)}"

    def expr(self, e, memo: dict, body: list, acc: str | None = None) -> str:
        if id(e) in memo:
            return memo[id(e)]
        if e.kind == "const":
            return _const(e.value, e.dtype)
        if e.kind == "acc":
            return f"(({ctype(e.dtype)}){acc})"
        if e.kind == "rowlen":
            return f"(({ctype(e.dtype)}){self.num('L', self.L)})"
        if e.kind == "rowpos":      # the position along the last dimension
            return f"(j % {self.num('L', self.L)})" if self.flat else "j"
        if e.kind == "checked":     # NOTE [Checked indices]
            i = self.expr(e.args[0], memo, body, acc)
            self.k.checks_index = True
            return f"ember_check_index({i}, {self.num('L', self.L)}, {int(e.value)})"
        if e.kind == "load":
            src = e.value
            if src.kind == "pw" and not src.realized:
                key = ("ln", id(src))
                if key in memo:
                    return memo[key]
                v = self.expr(src.expr, memo, body, acc)
                memo[key] = v
                return v
            if src.kind == "red" and src.kernel is self.k:
                return f"r{src.index}"
            slot, idx = self.index(src)
            code = load_code(src.dtype, f"p{slot}[{idx}]")
        elif e.kind == "cast":
            a = self.expr(e.args[0], memo, body, acc)
            if e.dtype is dt.bfloat16:
                code = f"ember_round_bf16({a})"
            elif e.dtype is dt.float16:
                code = f"((float)(_Float16)({a}))"
            elif e.dtype is dt.bool_:
                code = f"(({ctype(e.dtype)})({a} != 0))"
            else:
                code = f"(({ctype(e.dtype)}){a})"
        else:
            args = [self.expr(a, memo, body, acc) for a in e.args]
            code = _op(e.value, e.dtype, args, e.args[0].dtype if e.args else None)
        self.tmp += 1
        name = f"t{self.tmp}"
        body.append(f"const {ctype(e.dtype)} {name} = {code};")
        memo[id(e)] = name
        return name

    # -- the function ---------------------------------------------------------------------------
    def source(self) -> str:
        k = self.k
        head = [f"void ember_k{k.index}(void** buf, const int64_t* sz) {{"]
        for i, s in enumerate(self.slots):
            ct = btype(s.ln.dtype)
            q = "" if s.is_out else "const "
            head.append(f"    {q}{ct}* restrict p{i} = ({q}{ct}*)buf[{i}];")
        if self.flat:
            n = self.num("n", math.prod(self.F))
            body = []
            for m in k.members:
                stmts: list[str] = []
                v = self.expr(m.expr, {}, stmts)
                loop = [f"    for (int64_t j = 0; j < {n}; j++) {{"]
                loop += ["        " + s for s in stmts]
                loop.append(f"        p{self.slot_of[id(m)]}[j] = {store_code(m.dtype, v)};")
                loop.append("    }")
                # the parallel loop only on the large branch (a C branch: an OpenMP ``if``
                # clause still enters libgomp, and its serial path lost vectorisation here)
                body.append(f"    if ({n} >= {PAR_THRESHOLD} && ember_nt > 1) {{")
                body.append(_PAR_SIMD)
                body += loop
                body.append("    } else {")
                body.append("    #pragma omp simd")
                body += loop
                body.append("    }")
            return "\n".join(head + body + ["}"]) + "\n"
        self.row_decl: list[str] = []
        if self.col:
            return "\n".join(head + self._col_body() + ["}"]) + "\n"
        passes: list[str] = []
        for m in k.members:
            passes += self._pass(m)
        R = self.num("R", self.R)
        total = self.num("n", math.prod(self.F))
        decode = [f"    for (int64_t r = 0; r < {R}; r++) {{", "        int64_t q = r;"]
        for d in range(self.nd - 2, -1, -1):
            fd = self.num(("F", d), self.F[d])
            decode.append(f"        const int64_t i{d} = q % {fd}; q /= {fd};")
        decode.append("        (void)q;")
        loop = decode + self.row_decl + passes + ["    }"]
        # the parallel loop only on the large branch (a C branch, not an OpenMP if clause:
        # that still enters libgomp): small sizes never start threads
        body = [f"    if ({total} >= {PAR_THRESHOLD} && {R} > 1 && ember_nt > 1) {{",
                "    #pragma omp parallel for schedule(static) num_threads(ember_nt)"]
        body += loop + ["    } else {"] + loop + ["    }"]
        return "\n".join(head + body + ["}"]) + "\n"

    def _col_body(self) -> list[str]:
        """The loops of a column reduction (see :meth:`_col_ok`): per tile of ``COL_TILE``
        adjacent rows, double accumulators summed in the order of the reduced index."""
        C = self.num(("F", self.nd - 2), self.F[-2])
        nt = f"(({C} + {COL_TILE - 1}) / {COL_TILE})"
        ro = self.num("RO", math.prod(self.F[:-2]))
        total = self.num("n", math.prod(self.F))
        L = self.num("L", self.L)
        decode = [f"    for (int64_t t = 0; t < {ro} * {nt}; t++) {{",
                  f"        int64_t q = t / {nt};",
                  f"        const int64_t c0 = (t % {nt}) * {COL_TILE};",
                  f"        const int64_t cn = {C} - c0 < {COL_TILE} ? {C} - c0 : {COL_TILE};",
                  "        const int64_t rq = q;",
                  f"        const int64_t i{self.nd - 2} = c0;"]
        for d in range(self.nd - 3, -1, -1):
            fd = self.num(("F", d), self.F[d])
            decode.append(f"        const int64_t i{d} = q % {fd}; q /= {fd};")
        decode.append("        (void)q; (void)rq;")
        stmts: list[str] = []
        memo: dict = {}
        accs, inner, post = [], [], []
        for m in self.k.members:
            v = self.expr(m.expr, memo, stmts)
            a = f"acc{m.index}"
            accs.append(f"        {_COL_ACC.get(m.dtype, 'double')} {a}[{COL_TILE}];")
            accs.append(f"        for (int64_t c = 0; c < cn; c++) {a}[c] = 0;")
            inner.append(f"                {a}[c] += {v};")
            ct = ctype(m.dtype)
            pv = f"({ct}){a}[c]"
            if m.scale is not None:
                ps: list[str] = []
                pv = self.expr(m.scale, {}, ps, acc=f"{a}[c]")
                post += ["            " + x for x in ps]
            post.append(f"            p{self.slot_of[id(m)]}[rq * {C} + c0 + c] = "
                        f"{store_code(m.dtype, pv)};")
        loop = decode + self.row_decl + accs
        loop += [f"        for (int64_t j = 0; j < {L}; j++) {{",
                 "            #pragma omp simd",
                 "            for (int64_t c = 0; c < cn; c++) {"]
        loop += ["                " + x for x in stmts] + inner + ["            }", "        }"]
        loop += ["        for (int64_t c = 0; c < cn; c++) {"] + post + ["        }", "    }"]
        body = [f"    if ({total} >= {PAR_THRESHOLD} && {ro} * {nt} > 1 && ember_nt > 1) {{",
                "    #pragma omp parallel for schedule(static) num_threads(ember_nt)"]
        return body + loop + ["    } else {"] + loop + ["    }"]

    def _pass(self, m: LNode) -> list[str]:
        stmts: list[str] = []
        out = []
        ct = ctype(m.dtype)
        if m.kind == "red":
            v = self.expr(m.expr, {}, stmts)
            accd = "double" if m.rkind == "sum" else ct
            if m.rkind == "sum":
                init, upd, pragma = "0.0", f"acc += {v};", "#pragma omp simd reduction(+:acc)"
            else:
                # a vectorisable max/min plus a NaN flag: amax/amin propagate NaN (as eager)
                init = "-INFINITY" if m.rkind == "amax" else "INFINITY"
                cmpop = ">" if m.rkind == "amax" else "<"
                upd = f"acc = {v} {cmpop} acc ? {v} : acc; nan |= ({v} != {v});"
                pragma = (f"#pragma omp simd reduction({'max' if m.rkind == 'amax' else 'min'}"
                          ":acc) reduction(|:nan)")
            out.append(f"        {ct} r{m.index};")
            out.append("        {")
            out.append(f"            {accd} acc = {init};")
            if m.rkind != "sum":
                out.append("            int nan = 0;")
            if pragma:
                out.append(f"            {pragma}")
            out.append(f"            for (int64_t j = 0; j < {self.num('L', self.L)}; j++) {{")
            out += ["                " + s for s in stmts] + [f"                {upd}",
                                                              "            }"]
            if m.rkind != "sum":
                out.append("            if (nan) acc = NAN;")
            if m.scale is not None:
                post: list[str] = []
                pv = self.expr(m.scale, {}, post, acc="acc")
                out += ["            " + s for s in post]
                out.append(f"            r{m.index} = ({ct}){pv};")
            else:
                out.append(f"            r{m.index} = ({ct})acc;")
            if m.stored:
                out.append(f"            p{self.slot_of[id(m)]}[r] = "
                           f"{store_code(m.dtype, f'r{m.index}')};")
            out.append("        }")
            return out
        v = self.expr(m.expr, {}, stmts)
        L = self.num("L", self.L)
        out.append("        #pragma omp simd")
        out.append(f"        for (int64_t j = 0; j < {L}; j++) {{")
        out += ["            " + s for s in stmts]
        out.append(f"            p{self.slot_of[id(m)]}[r * {L} + j] = {store_code(m.dtype, v)};")
        out.append("        }")
        return out


def needs_openmp(kernels: list[Kernel]) -> bool:
    """Whether any kernel is large enough for an OpenMP parallel loop."""
    return any(math.prod(k.shape) >= PAR_THRESHOLD for k in kernels)


def generate_c(kernels: list[Kernel], vector_math: bool
               ) -> tuple[str, list[list[Slot]], list[list[int]]]:
    """The translation unit for ``kernels``, each kernel's pointer slots and its ``sz``
    values (the sizes, strides and offsets it reads at run time)."""
    parts = [f"/* ember generated kernels (codegen v{CODEGEN_VERSION}) */\n", PRELUDE]
    parts.append(HALF_HELPERS)
    if vector_math:
        parts.append(vector_decls())
    parts.append(THREADS_DECL)
    parts.append(INDEX_CHECK_DECL)
    slots, sizes = [], []
    for k in kernels:
        g = _KernelGen(k)
        parts.append(g.source())
        slots.append(g.slots)
        sizes.append(g.sizes)
    return "\n".join(parts), slots, sizes


def group_entry(j: int, members: list[tuple[int, int, int]]) -> str:
    """``ember_g<j>(buf, sz)``: the kernels ``(index, first pointer, first size)`` of one
    group in order - one foreign call runs consecutive kernels."""
    lines = [f"void ember_g{j}(void** buf, const int64_t* sz) {{"]
    lines += [f"    ember_k{i}(buf + {p}, sz + {z});" for i, p, z in members]
    return "\n".join(lines + ["}"]) + "\n"
