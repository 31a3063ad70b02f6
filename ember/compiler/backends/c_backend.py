"""The ``c`` backend: fused C kernels for pointwise and last-dim reduction chains.

The graph is lowered (``ember.compiler.lower``), fused into kernels (one loop nest per
kernel, several passes per row for softmax/layer norm), emitted as one C file, compiled by
``gcc`` and loaded with ctypes (``ember.compiler.cc``). Every node that is not lowered -
matmul/linear/conv (NumPy/BLAS), integer and half-precision arithmetic, in-place ops,
anything without a rule - is rendered exactly as the ``numpy`` backend renders it, between
kernel calls. Shapes and strides are baked into the kernels; a call whose input strides
differ from the compiled ones runs the NumPy function instead. Without gcc, or when a build
fails, the backend warns once and returns the NumPy backend's function.
"""

from __future__ import annotations

import ctypes
import math
import threading

import numpy as np

from ember.compiler import cc, logs
from ember.compiler.backends import numpy_backend as npb
from ember.compiler.backends import register_backend
from ember.compiler.codegen_c import generate_c, group_entry, needs_openmp
from ember.compiler.graph import GraphModule, Node, compile_source
from ember.compiler.lower.decomp import Lowering
from ember.compiler.lower.ir import LNode
from ember.compiler.lower.scheduler import schedule
from ember.compiler.meta import lazy_bits
from ember.dispatch import Operator
from ember.tensor import Tensor
from ember.tensor.tensor import empty_tensor, user_array

__all__ = ["c_backend"]


class _CGen(npb._Gen):
    """The NumPy generator with lowered nodes replaced by kernel calls."""

    def __init__(self, gm: GraphModule, example_inputs):
        super().__init__(gm)
        g = self.graph
        lw = Lowering(g, example_inputs, self._must_alias)
        self.lw = lw
        self.owner: dict[int, Node] = {}
        barriers: set[int] = set()
        lowered: set[int] = set()
        for node in g.nodes:
            if node.op != "call":
                continue
            mark = len(lw.nodes)
            res = lw.lower_node(node)
            if res is not None:
                lowered.add(id(node))
            elif isinstance(node.val, Tensor):
                barriers.add(lw.buffer(node).index)
            else:
                barriers.add(lw.add(LNode("buffer", (), None)).index)
            for ln in lw.nodes[mark:]:
                self.owner[id(ln)] = node
        self.lowered = lowered
        outs = {id(n) for n in npb._leaves(g.output_node.args[0]) if isinstance(n, Node)} \
            if g.output_node is not None else set()
        self.gnodes_of: dict[int, list[Node]] = {}
        for node in g.nodes:
            if id(node) not in lowered:
                continue
            ln = lw.map[id(node)]
            if isinstance(ln, tuple):
                continue
            self.gnodes_of.setdefault(id(ln), []).append(node)
            if id(node) in outs or any(id(u) not in lowered for u in node.users):
                ln.external = True
        # an external view is rendered by NumPy too: so are the lowered views it reads
        for node in reversed(g.nodes):
            ln = lw.map.get(id(node)) if id(node) in lowered else None
            if isinstance(ln, LNode) and ln.kind == "view" and ln.external:
                src = node.args[0]
                up = lw.map.get(id(src)) if id(src) in lowered else None
                if isinstance(up, LNode) and up.kind == "view":
                    up.external = True
        self.kernels = schedule(lw.nodes, barriers)
        self.emit_after: dict[int, list] = {}
        for k in self.kernels:
            last = max(k.members, key=lambda m: m.index)
            self.emit_after.setdefault(id(self.owner[id(last)]), []).append(k)
        self.ln_var: dict[int, str] = {}
        self.contig: dict[int, str] = {}
        self.c_source = None
        self.slots = None
        self.sizes = None
        self.pending: list = []         # kernels emitted since the last other line
        self.groups: list[list] = []    # consecutive kernels: one foreign call each
        self.group_refs: list[list] = []  # per group, per kernel: where each input comes from
        self.group_lines: list[tuple[int, list[str]]] = []  # per group: its line, its names
        self.internal: list[set] = []    # per group: outputs no other line reads

    def prepare(self) -> bool:
        if not self.kernels:
            return False
        self.c_source, self.slots, self.sizes = generate_c(self.kernels, cc.vector_math_ok())
        return True

    def finish(self) -> None:
        """Append the group entry points (after :meth:`run` chose the groups) and find the
        outputs only the group itself reads (they live in a reused workspace)."""
        import re

        used: dict[str, int] = {}
        for line in self.lines:
            for name in re.findall(r"\b_[ot]\d+_\d+\b", line):
                used[name] = used.get(name, 0) + 1
        for _pos, per_kernel in self.group_lines:
            internal, base = set(), 0
            for names in per_kernel:        # arrays, then their tensors
                half = len(names) // 2
                internal |= {base + i for i in range(half)
                             if used.get(names[i], 0) == 1 and used.get(names[half + i], 0) == 1}
                base += len(names)
            self.internal.append(internal)
        parts = [self.c_source]
        for j, group in enumerate(self.groups):
            members, p, z = [], 0, 0
            for k in group:
                members.append((k.index, p, z))
                p += len(self.slots[k.index])
                z += len(self.sizes[k.index])
            parts.append(group_entry(j, members))
        self.c_source = "\n".join(parts)

    def symbols(self) -> list[str]:
        return ["ember_set_threads", "ember_oob"] + \
            [f"ember_g{j}" for j in range(len(self.groups))]

    def bind(self, lib) -> None:
        lib.ember_set_threads.argtypes = [ctypes.c_int]
        lib.ember_set_threads.restype = None
        lib.ember_set_threads(cc.num_threads())
        for j, group in enumerate(self.groups):
            cfn = getattr(lib, f"ember_g{j}")
            cfn.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
            cfn.restype = None
            oob = (ctypes.c_int64 * 4).in_dll(lib, "ember_oob") \
                if any(k.checks_index for k in group) else None
            self.globals[f"_g{j}"] = _group_call(
                cfn, [(k, self.slots[k.index], self.sizes[k.index], refs)
                      for k, refs in zip(group, self.group_refs[j], strict=True)],
                self.internal[j], oob)

    def emit(self, line: str) -> None:
        if self.pending:
            self._flush()
        super().emit(line)

    def _flush(self) -> None:
        group, self.pending = self.pending, []
        j = len(self.groups)
        self.groups.append([k for k, _i, _o in group])
        # an input made by an earlier kernel of the group is taken from inside the call
        made: dict[str, int] = {}
        args: list[str] = []
        refs = []
        for _k, ins, outs in group:
            r = []
            for a in ins:
                if a in made:
                    r.append(("out", made[a]))
                else:
                    r.append(("arg", len(args)))
                    args.append(a)
            refs.append(r)
            for a in outs:
                made[a] = len(made)
        self.group_refs.append(refs)
        outs = [a for _k, _i, o in group for a in o]
        super().emit(f"{', '.join(outs)}, = _g{j}({', '.join(args)})")
        self.group_lines.append((len(self.lines) - 1, [o for _k, _i, o in group]))

    def run(self) -> str:
        source = super().run()
        if self.pending:
            raise RuntimeError("kernels after the return statement")
        return source

    def _call(self, node: Node) -> None:
        if id(node) in self.lowered:
            ln = self.lw.map[id(node)]
            if isinstance(ln, LNode) and ln.kind == "view" and ln.external:
                super()._call(node)
        else:
            super()._call(node)
        for k in self.emit_after.get(id(node), ()):
            self._emit_kernel(k)

    def _array(self, ln: LNode) -> str:
        if id(ln) in self.ln_var:
            return self.ln_var[id(ln)]
        node = ln.node
        name = self.a(node)
        if node.op in ("placeholder", "constant"):
            return name
        if id(ln) not in self.contig:
            self.contig[id(ln)] = self.tmp(f"np.ascontiguousarray({name}, "
                                           f"{self.np_dtype(ln.dtype)})")
        return self.contig[id(ln)]

    def _emit_kernel(self, k) -> None:
        slots = self.slots[k.index]
        ins = [self._array(s.ln) for s in slots if not s.is_out]
        outs = [s.ln for s in slots if s.is_out]
        names = [f"_o{k.index}_{i}" for i in range(len(outs))]
        tnames = [f"_t{k.index}_{i}" for i in range(len(outs))]
        self.pending.append((k, ins, names + tnames))
        for ln, name, tname in zip(outs, names, tnames, strict=True):
            self.ln_var[id(ln)] = name
            for gnode in self.gnodes_of.get(id(ln), ()):
                self.arr[id(gnode)] = name
                if _large(ln):
                    self.ten[id(gnode)] = tname
        self.rendered += len(outs)


_LARGE = 1 << 20     # bytes: outputs this large come from ember's caching allocator


def _large(ln) -> bool:
    return math.prod(ln.shape) * ln.dtype.itemsize >= _LARGE


def _group_call(cfn, members, internal=frozenset(), oob=None):
    """``call(*input_arrays) -> per kernel (*output_arrays, *output_tensors)``, running the
    group's kernels in one foreign call; a tensor is None for small outputs. NOTE [Large
    intermediates] in numpy_backend.py: fresh multi-megabyte arrays page-fault on every call,
    so large outputs are blocks of ember's allocator, kept alive by their tensor (the glue
    holds it and returns it).

    ``oob``: the library's index-check record when a kernel of the group checks indices.

    ``internal``: positions (in the result) of outputs read only by later kernels of the group:
    they live in a per-thread workspace allocated on the first call, where an intermediate
    whose last reader has run lends its bytes to a later one (liveness-based reuse).
    """
    plan = []           # per kernel: where its inputs come from, output specs
    nptr, all_sizes, numel = 0, [], 0
    pos = 0
    last_reader: dict[int, int] = {}
    for kpos, (k, slots, sizes, refs) in enumerate(members):
        specs = []
        for s in slots:
            if s.is_out:
                specs.append([tuple(s.ln.shape), np.dtype(s.ln.dtype.np), s.ln.dtype,
                              _large(s.ln), None])
        for kind, i in refs:
            if kind == "out":
                last_reader[i] = kpos
        plan.append((refs, specs, pos))
        pos += 2 * len(specs)
        nptr += len(slots)
        all_sizes += sizes
        numel += math.prod(k.shape)
    # workspace plan: greedy reuse of a dead intermediate's buffer of the same byte size
    slots_ws: list[list] = []       # [nbytes, free after kernel position]
    for kpos, (_refs, specs, base) in enumerate(plan):
        for o, spec in enumerate(specs):
            r = base + o
            if r not in internal:
                continue
            nbytes = max(math.prod(spec[0]) * spec[1].itemsize, 1)
            free_at = last_reader.get(r, kpos)
            for w, (wb, busy) in enumerate(slots_ws):
                if wb == nbytes and busy < kpos:
                    slots_ws[w][1] = free_at
                    spec[4] = w
                    break
            else:
                spec[4] = len(slots_ws)
                slots_ws.append([nbytes, free_at])
    ws_local = threading.local()
    arr_t = ctypes.c_void_p * nptr
    sz = (ctypes.c_int64 * max(len(all_sizes), 1))(*all_sizes)
    sz_addr = ctypes.addressof(sz)
    empty = np.empty

    def workspace():
        """This thread's buffers, as the typed views each internal output uses."""
        flats = [np.empty(nb, np.uint8) for nb, _f in slots_ws]
        views = [[None if w is None else flats[w][:math.prod(shape) * npd.itemsize]
                  .view(npd).reshape(shape) for shape, npd, _d, _lg, w in specs]
                 for _refs, specs, _base in plan]
        ws_local.views = views
        return views

    def call(*ins):
        ptrs, ret = [], []
        views = getattr(ws_local, "views", None) if slots_ws else None
        if slots_ws and views is None:
            views = workspace()
        for kpos, (refs, specs, _base) in enumerate(plan):
            ptrs += [_ptr(ins[i] if kind == "arg" else ret[i]) for kind, i in refs]
            outs, tens = [], []
            for o, (shape, npd, d, large, w) in enumerate(specs):
                if w is not None:
                    tens.append(None)
                    outs.append(views[kpos][o])
                elif large:
                    t = empty_tensor(shape, d)
                    tens.append(t)
                    outs.append(user_array(t))     # keeps the block alive
                else:
                    tens.append(None)
                    outs.append(empty(shape, npd))
            ptrs += [_ptr(o) for o in outs]
            ret += outs
            ret += tens
        if numel:
            cfn(arr_t(*ptrs), sz_addr)
            if oob is not None and oob[0]:
                raise _index_error(oob)
        return ret

    call.sizes = sz         # keeps the size array alive with the closure
    call.internal_outputs = sum(spec[4] is not None for _r, specs, _b in plan for spec in specs)
    call.workspace_buffers = len(slots_ws)
    return call


def _index_error(oob) -> RuntimeError:
    """The error of the first out-of-range index a kernel met (NOTE [Checked indices] in
    codegen_c.py), worded as eager's gather/scatter check; the flag is cleared."""
    oob[0] = 0
    return RuntimeError(f"index {oob[1]} is out of bounds for dimension {oob[3]} with size "
                        f"{oob[2]}")


_addressof, _from_buffer = ctypes.addressof, ctypes.c_char.from_buffer


def _ptr(a) -> int:
    """The data address of array ``a`` (the ctypes buffer route is ~2x cheaper than
    ``a.ctypes.data``; read-only or non-contiguous arrays take the latter)."""
    try:
        return _addressof(_from_buffer(a))
    except (TypeError, ValueError, BufferError):
        return a.ctypes.data


def split_addmm(graph) -> int:
    """Rewrite ``addmm(bias, m1, m2)`` (float, ``beta == alpha == 1``) as ``mm(m1, m2) + bias``
    so that the bias add fuses into the kernel after the GEMM (a Linear's activation, a
    softmax) instead of taking its own pass. Eager addmm adds the bias to the finished
    product, so the values are the same bits. Returns how many were rewritten."""
    from ember.dispatch import get_op

    rewritten = 0
    for node in list(graph.nodes):
        if node.op != "call" or not isinstance(node.target, Operator) or \
                node.target.name != "addmm" or node.target._is_inplace or node.kwargs.get("out"):
            continue
        b = node.target.schema.bind(node.args, node.kwargs)
        s, m1, m2 = b["self"], b["mat1"], b["mat2"]
        if b["beta"] != 1 or b["alpha"] != 1 or not npb._same_float(node, s, m1, m2) or \
                not all(isinstance(x, Node) for x in (s, m1, m2)):
            continue
        mode = {k: node.meta[k] for k in ("grad_mode",) if k in node.meta}
        mm = graph.insert_call(node, get_op("aten::mm"), (m1, m2), meta=dict(mode))
        add = graph.insert_call(node, get_op("aten::add.Tensor"), (mm, s), meta=dict(mode))
        graph.replace_all_uses_with(node, add)
        graph.erase_node(node)
        rewritten += 1
    return rewritten


def _entry_checks(gm, example_inputs):
    checks = []
    ph = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for i, (_node, t) in enumerate(zip(ph, example_inputs, strict=False)):
        if isinstance(t, Tensor):
            conj, neg = lazy_bits(t)
            checks.append((i, tuple(t.shape), tuple(t.stride()), t.dtype, conj, neg))
    return checks


def _same_steps(a: tuple, b: tuple, shape: tuple) -> bool:
    """Strides ``a`` and ``b`` address the same elements of ``shape`` (a size-1 dimension's
    stride is never stepped: NumPy gives a new axis stride 0 where eager ember gives it a
    contiguous one)."""
    return all(x == y or n <= 1 for x, y, n in zip(a, b, shape, strict=True))


@register_backend("c")
def c_backend(gm: GraphModule, example_inputs):
    """Compile ``gm`` to fused C kernels plus NumPy glue (see the module docstring).

    The result has ``kernels`` (number of generated C kernels), ``c_source`` and ``source``
    (the Python glue); ``EMBER_LOGS=output_code`` prints both.
    """
    split_addmm(gm.graph)
    fallback = npb.numpy_backend(gm, example_inputs)
    fallback.kernels = 0
    fallback.c_source = None
    try:
        gen = _CGen(gm, example_inputs)
        if not gen.prepare():
            return fallback
    except Exception as e:  # noqa: BLE001 - lowering must never break compilation
        logs.log("graph_code", f"c backend: lowering failed ({type(e).__name__}: {e}); "
                 "using the numpy backend")
        return fallback
    try:
        source = gen.run()
        gen.finish()
    except Exception as e:  # noqa: BLE001 - the glue must never break compilation
        logs.log("graph_code", f"c backend: generating the glue failed ({type(e).__name__}: "
                 f"{e}); using the numpy backend")
        return fallback
    logs.log("graph_code", f"c backend kernels:\n{gen.c_source}")
    lib = cc.build(gen.c_source, gen.symbols(), needs_openmp(gen.kernels))
    if lib is None:
        return fallback
    try:
        gen.bind(lib)
        fwd = compile_source(source, gen.globals, "forward", "c")
    except Exception as e:  # noqa: BLE001 - the glue must never break compilation
        logs.log("graph_code", f"c backend: generating the glue failed ({type(e).__name__}: "
                 f"{e}); using the numpy backend")
        return fallback
    logs.log("graph_code", f"c backend glue:\n{source}")
    checks = _entry_checks(gm, example_inputs)
    hinted: list[int] = []   # the first mismatch is logged, once

    def run(*args):
        for i, shape, stride, dtype, conj, neg in checks:
            t = args[i]
            # kernels read inputs' memory with the compiled strides: another layout, or a
            # lazy bit (the values are not the memory), runs the numpy function
            if t._shape != shape or t._dtype is not dtype or t._is_conj is not conj or \
                    getattr(t, "_is_neg", False) is not neg or \
                    (t._stride != stride and not _same_steps(t._stride, stride, shape)):
                if not hinted:
                    hinted.append(i)
                    logs.log("perf_hints", f"c backend: input {i} arrives as {t._dtype} "
                             f"{t._shape} strides {t._stride} (compiled for {dtype} {shape} "
                             f"strides {stride}); running the numpy function")
                return fallback(*args)
        return fwd(*args)

    run.kernels = len(gen.kernels)
    run.calls = len(gen.groups)
    # (intermediates living in the workspace, buffers they share)
    run.workspace = (sum(gen.globals[f"_g{j}"].internal_outputs for j in range(run.calls)),
                     sum(gen.globals[f"_g{j}"].workspace_buffers for j in range(run.calls)))
    run.c_source = gen.c_source
    run.source = source
    run.fallbacks = gen.fallbacks
    return run

