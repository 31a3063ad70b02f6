"""Symbolic capture: run a frame's bytecode over *shadow values* and record its tensor work.

Design choice (differs from the Var-per-kind design of compiler-design.md section 4.2, and
why): the capture executes the decoded bytecode with the concrete interpreter's own handlers,
on a shadow copy of the frame in which

- every tensor read from the frame, a global, an attribute or a closure cell is replaced by a
  data-less ``meta`` tensor bound to a graph placeholder (lifted input) with its *source*
  expression (``L[0]``, ``L[0].fc1.weight``, ``G['W']``), and a guard on its metadata;
- every list/tuple/dict read from a source is replaced by a shallow shadow copy (elements
  shadowed recursively), so mutations during capture never touch the user's objects;
- every other value read from a source is the real object, guarded by what the capture relies
  on (value for constants, identity for functions/classes/modules, structure version for
  ``nn.Module``, type otherwise).

Ember operators run for real on the meta tensors inside a recording dispatch mode
(``ember.compiler.tracing.RecordingMode``), so each operator call becomes a graph node and
shape/dtype propagation is exactly eager's; Python arithmetic on ints, ``isinstance``,
``len(x)``, ``x.shape[0]`` fold to constants simply by running. One set of handlers therefore
gives CPython semantics for everything that is not a tensor, with no per-kind re-implementation
to drift from CPython. What the shadow world cannot do — read tensor data (``bool(t)``,
``.item()``), call unknown C code, raise — raises, and an exception in capture is a *graph
break* at that instruction (root frame) or, inside an inlined call, a restart that makes the
root ``CALL`` the break (compiler-design.md 4.1).

Side effects are recorded, never applied: attribute/global/closure-cell writes go to overlays
that later reads consult; mutated shadow containers are compared with their snapshot at exit.
:mod:`ember.compiler.side_effects` turns them into replay code.

Length: the capture state, the call policy and the opcode overrides belong together; the file
is over 800 lines because the call policy (what is inlined, run, or a break) is spelled out.
"""

from __future__ import annotations

import types

from ember.compiler import concrete
from ember.compiler.bytecode import METHOD, PUSH_NULL, SLOT_CELL, SLOT_FREE, CodeInfo, decode
from ember.compiler.concrete import NULL, Frame, push_method_pair
from ember.compiler.config import config
from ember.compiler.graph import Graph
from ember.compiler.meta import MetaUnsupported, map_args, to_meta
from ember.compiler.shapes import (
    ShapeEnv,
    SymInt,
    marked_dynamic_dims,
    repair_shapes,
    symbolic_meta,
)
from ember.compiler.sources import attr_source, global_source, item_source
from ember.compiler.tracing import RecordingMode
from ember.core.device import CPU, META
from ember.tensor import Tensor

__all__ = ["GraphBreak", "Unsupported", "Capture", "CaptureResult", "BreakInfo"]

_CONST_TYPES = (type(None), bool, int, float, str, bytes, complex, type(Ellipsis),
                type(NotImplemented))


class GraphBreak(Exception):
    """Capture cannot continue at this instruction; ``reason`` says why, ``hint`` the fix."""

    def __init__(self, reason: str, hint: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.hint = hint


class Unsupported(Exception):
    """The frame cannot be compiled at all (run it natively); ``reason`` says why."""


class _InlineBreak(Exception):
    def __init__(self, gb: GraphBreak, stack: list):
        super().__init__(gb.reason)
        self.gb = gb
        self.stack = stack       # [(code, instr index)] from the outermost inlined frame in


class _Restart(Exception):
    pass


class BreakInfo:
    """Where and why a segment ended before an instruction."""

    __slots__ = ("reason", "hint", "code", "index", "inline_stack")

    def __init__(self, reason, hint, code, index, inline_stack=()):
        self.reason, self.hint, self.code, self.index = reason, hint, code, index
        self.inline_stack = list(inline_stack)

    def user_stack(self) -> list[tuple]:
        """``[(filename, lineno, source_line, qualname)]``, outermost first."""
        import linecache
        out = []
        for code, idx in [(self.code, self.index), *self.inline_stack]:
            info = decode(code)
            ln = info.line_of(idx)
            src = linecache.getline(code.co_filename, ln).rstrip("\n") if ln else ""
            out.append((code.co_filename, ln, src, code.co_qualname))
        return out


# ---------------------------------------------------------------------------------------------
# hints for the usual breaks

_HINT_ITEM = "`.item()` reads tensor data: keep the value as a tensor, or accept the break"
_HINT_JUMP = ("branching on a tensor's value: compute both sides and select with "
              "`ember.where(cond, a, b)`, or accept the break")
_HINT_DATA = ("the call needs tensor values (a data-dependent check or result): keep it "
              "outside the compiled region, or accept the break")
_HINT_PRINT = "`print` is not captured: remove it from the compiled region, or accept the break"
_HINT_CALL = ("wrap the call in a function marked `ember.compiler.disable`, or move it out of "
              "the compiled region")

_DATA_METHODS = {"item": _HINT_ITEM, "tolist": "`.tolist()` reads tensor data: keep a tensor",
                 "numpy": "`.numpy()` reads tensor data: convert outside the compiled region",
                 "__bool__": _HINT_JUMP, "__int__": _HINT_ITEM, "__float__": _HINT_ITEM,
                 "__index__": _HINT_ITEM, "nonzero": "output shape depends on data",
                 "__array__": "NumPy conversion reads tensor data"}

# builtins run directly on shadow values (pure, no I/O)
_PURE_BUILTINS = {
    len, isinstance, issubclass, range, zip, enumerate, reversed, min, max, abs, sum, any, all,
    sorted, map, filter, iter, next, divmod, round, pow, callable, hash, format, chr, ord,
    repr, id, type, slice, tuple, list, dict, set, frozenset, int, float, bool, str, complex,
    object, getattr, hasattr, setattr, super, bytes, ascii, bin, hex, oct, property,
    staticmethod, classmethod, vars,
}
_BREAK_BUILTINS = {print: _HINT_PRINT, input: None, open: None, breakpoint: None, exec: None,
                   eval: None, compile: None, globals: None, locals: None, delattr: None,
                   __import__: None}
_REAL_TENSOR_ATTRS = frozenset({"grad", "data", "_version", "grad_fn", "is_leaf", "_base"})
_MAPPING_READS = frozenset({"items", "keys", "values", "get", "__getitem__", "__contains__",
                            "__len__"})
_PURE_MODULES = ("math", "operator", "_operator", "cmath", "itertools", "functools",
                 "collections", "_collections", "_functools", "typing", "numbers")


def _qualname(f) -> str:
    mod = getattr(f, "__module__", None) or getattr(type(f), "__module__", "")
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or type(f).__name__
    return f"{mod}.{name}" if mod and mod != "builtins" else name


def _is_ember_library(f) -> bool:
    mod = getattr(f, "__module__", None) or ""
    return mod == "ember" or (mod.startswith("ember.") and not mod.startswith("ember.nn.modules")
                              and not mod.startswith("ember.compiler"))


_META_SAFE_PREFIXES = ("ember.ops", "ember.nn.functional", "ember.tensor", "ember.linalg",
                       "ember.fft", "ember.special", "ember.core", "ember.dispatch",
                       "ember.autograd.grad_mode", "ember.backends", "ember.nn.init")
_RNG_STATE = frozenset({"manual_seed", "seed", "set_rng_state", "get_rng_state",
                        "initial_seed"})


def _runs_on_meta(f) -> bool:
    """ember code that only computes with tensors (operators, functional API, Tensor
    methods): called directly on meta tensors, it records its operators. Other ember code
    (optimizers, nn.utils) reads state a meta tensor lacks (``.grad``), so it is inlined."""
    mod = getattr(f, "__module__", None) or ""
    return mod == "ember" or mod.startswith(_META_SAFE_PREFIXES)


def _is_custom_function(cls) -> bool:
    from ember.autograd.function import Function

    return issubclass(cls, Function) and cls is not Function


def _module_types():
    from ember.nn.modules.module import Module
    return Module


# ---------------------------------------------------------------------------------------------
# the recording mode with lazily created placeholders


class _CaptureMode(RecordingMode):
    def __init__(self, capture: Capture, graph: Graph):
        super().__init__(graph, CPU)
        self.capture = capture

    def node_of(self, t: Tensor):
        hit = self._nodes.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        lazy = self.capture.lazy_inputs.get(id(t))
        if lazy is not None and lazy[0] is t:
            node = self.capture.make_placeholder(t)
            return node
        return super().node_of(t)

    def __ember_dispatch__(self, func, types, args=(), kwargs=None):
        env = self.capture.shape_env
        env.quiet += 1
        try:
            out = super().__ember_dispatch__(func, types, args, kwargs)
            if env.sources:
                kwargs = kwargs or {}
                margs = map_args(args, self._meta_arg)
                mkwargs = map_args(kwargs, self._meta_arg)
                if func._is_factory:
                    mkwargs = {**mkwargs, "device": META}
                snaps = [self._nodes.get(id(t), (None, None))[1] for t in _out_list(out)]
                repair_shapes(env, func, margs, mkwargs, out,
                              [n.meta["val"] if n is not None else None for n in snaps])
            return out
        finally:
            env.quiet -= 1


def _out_list(out) -> list:
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [o for o in out if isinstance(o, Tensor)]
    return []


# ---------------------------------------------------------------------------------------------


class CaptureResult:
    """What one capture produced: the graph, the ending (return/break), state to rebuild."""

    def __init__(self):
        self.graph: Graph | None = None
        self.kind = "return"              # "return" | "break"
        self.break_index: int | None = None
        self.break_info: BreakInfo | None = None
        self.retval = NULL
        self.L: list = []                 # shadow localsplus at the end
        self.S: list = []                 # shadow stack at the end
        self.capture: Capture | None = None


class Capture:
    """One capture attempt of a frame from instruction ``start`` (see module docstring).

    ``F`` is the driver's frame state: the localsplus followed by the value stack (stack items
    have sources ``L[n + j]``). ``guards`` is a guard builder (``add_tensor_match``, ...).
    """

    def __init__(self, fn, info: CodeInfo, F: list, nstack: int, start: int, guards,
                 break_at: set[int] | None = None):
        self.fn = fn
        self.info = info
        self.F = F
        self.nstack = nstack
        self.start = start
        self.guards = guards
        self.break_at = set(break_at or ())
        self.G = fn.__globals__
        self.graph = Graph()
        self.mode = _CaptureMode(self, self.graph)
        # id(meta) -> (meta, source, real tensor): inputs not yet turned into placeholders
        self.lazy_inputs: dict[int, tuple[Tensor, str, Tensor]] = {}
        self.inputs: list[tuple[str, Tensor, object]] = []              # (source, real, node)
        self.meta_of_real: dict[str, Tensor] = {}
        self.real_tensor: dict[int, tuple[Tensor, Tensor, str]] = {}   # id(meta) -> real
        self.source_of: dict[int, tuple[object, str]] = {}    # id(shadow/real) -> (obj, expr)
        self.shadow_of: dict[int, object] = {}                 # id(real container) -> shadow
        self.real_of: dict[int, tuple[object, object, list]] = {}  # id(shadow)->(shadow,real,snap)
        # id(shadow cell) -> (shadow cell, real cell, contents at capture start)
        self.cell_real: dict[int, tuple[object, object, object]] = {}
        self.attr_overlay: dict[tuple[int, str], object] = {}
        self.attr_writes: list[tuple[object, str, object]] = []     # (real obj, name, value)
        self.global_overlay: dict[str, object] = {}
        self.global_writes: list[tuple[str, object]] = []
        self.keep: list = []
        self.guarded: set[str] = set()
        self.count = 0
        self.with_depth = 0
        self.created_fns: set[int] = set()
        self.guard_grad_mode = True
        self.cell_shadow: dict[int, object] = {}
        self.depth = 0
        self.L0: list = []
        self.trace: list | None = None     # (instr, depth before, depth after, result)
        self.entry_grad = self.exit_grad = True
        # dynamic shapes (NOTE [Dynamic shapes] in shapes.py): dims per source, or all dims
        self.shape_env = ShapeEnv()
        self.dynamic_sources: dict[str, set] = {}
        self.dynamic_all = False
        self.dynamic_off = False
        self.tensor_dims: dict[str, tuple] = {}
        self.input_shapes: dict[str, tuple] = {}

    # -- sources and guards ----------------------------------------------------------------
    def wrap(self, value, src: str | None, module_owned: bool = False):
        """The shadow of a real ``value`` read from ``src`` (installs the guards it needs)."""
        if src is None:
            return value
        t = type(value)
        if isinstance(value, Tensor):
            # one meta tensor per *source*: two names for one tensor stay two graph inputs,
            # so a later call passing two different tensors is still right
            m = self.meta_of_real.get(src)
            if m is not None:
                return m
            dims = self._dynamic_dims(src, value)
            if dims:
                m = symbolic_meta(value, src, dims, self.shape_env)
                self.tensor_dims[src] = dims
            else:
                m = to_meta(value) if value._device is not META else value
            self.input_shapes[src] = tuple(value._shape)
            self.meta_of_real[src] = m
            self.lazy_inputs[id(m)] = (m, src, value)
            self.real_tensor[id(m)] = (m, value, src)
            self.source_of[id(m)] = (m, src)
            self.keep.append(value)
            self._guard("tensor", src, value)
            return m
        if t in _CONST_TYPES:
            if not module_owned:
                self._guard("const", src, value)
            return value
        if t is list or t is tuple or t is dict:
            sh = self.shadow_of.get(id(value))
            if sh is not None:
                return sh
            if t is dict and not all(_const_key(k) for k in value):
                self._guard("type", src, value)
                self.source_of[id(value)] = (value, src)
                return value
            if t is dict:
                self._guard("dict_keys", src, value)
                sh = {k: self.wrap(v, item_source(src, k)) for k, v in value.items()}
                snap = list(sh.items())
            else:
                self._guard("len", src, value)
                items = [self.wrap(v, item_source(src, i)) for i, v in enumerate(value)]
                sh = items if t is list else tuple(items)
                snap = list(sh)
            if t is tuple and all(a is b for a, b in zip(sh, value)):
                sh = value       # nothing shadowed inside: the tuple itself is fine
            self.shadow_of[id(value)] = sh
            self.real_of[id(sh)] = (sh, value, snap)
            self.source_of[id(sh)] = (sh, src)
            self.keep.append(value)
            return sh
        self.source_of.setdefault(id(value), (value, src))
        self.keep.append(value)
        if isinstance(value, types.MethodType) and self.source(value.__self__) is None:
            # the receiver of a bound method read from the frame keeps a source too
            self.wrap(value.__self__, f"{src}.__self__")
        Module = _module_types()
        if isinstance(value, Module):
            self._guard("module", src, value)
        elif isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type,
                                types.ModuleType)) or callable(value):
            if not module_owned:
                self._guard("id", src, value)
        else:
            if not module_owned:
                self._guard("type", src, value)
        return value

    def _dynamic_dims(self, src: str, value: Tensor) -> tuple:
        """Dimensions of input ``value`` (read from ``src``) captured as symbols."""
        if self.dynamic_off or value._device is META or not value.is_contiguous():
            return ()
        if self.dynamic_all and "." not in src and not getattr(value, "_is_param", False) and \
                type(value).__name__ != "Parameter":
            # dynamic=True: tensors passed in (not module parameters/buffers, as torch)
            dims = set(range(value.ndim))
        elif self.dynamic_all:
            dims = set(marked_dynamic_dims(value))
        else:
            dims = set(self.dynamic_sources.get(src, ())) | set(marked_dynamic_dims(value))
        return tuple(sorted(d for d in dims if d < value.ndim and value._shape[d] >= 2))

    def _guard(self, kind: str, src: str, value) -> None:
        key = f"{kind}:{src}"
        if key in self.guarded:
            return
        self.guarded.add(key)
        g = self.guards
        if kind == "tensor":
            g.add_tensor_match(src, value, self.tensor_dims.get(src, ()))
        elif kind == "const":
            g.add_constant_match(src, value)
        elif kind == "id":
            g.add_id_match(src, value)
        elif kind == "type":
            g.add_type_match(src, value)
        elif kind == "len":
            g.add_type_match(src, value)
            g.add_len_match(src, value)
        elif kind == "dict_keys":
            g.add_type_match(src, value)
            g.add_dict_keys_match(src, value)
        elif kind == "module":
            g.add_module_match(src, value)

    def make_placeholder(self, m: Tensor):
        _m, src, real = self.lazy_inputs.pop(id(m))
        node = self.graph.placeholder(_placeholder_name(src), m, source=src)
        self.mode.bind(m, node)
        self.inputs.append((src, real, node))
        return node

    def source(self, v) -> str | None:
        hit = self.source_of.get(id(v))
        if hit is not None and hit[0] is v:
            return hit[1]
        return None

    # -- running -------------------------------------------------------------------------
    def run(self) -> CaptureResult:
        """Capture from ``start`` until the frame returns or an instruction breaks."""
        from ember.autograd.grad_mode import grad_state

        gs = grad_state()
        saved = gs.enabled
        self.entry_grad = saved
        try:
            res = self._run_root()
            self.exit_grad = gs.enabled     # a segment exit sets grad mode when they differ
            return res
        finally:
            gs.enabled = saved

    def _root_frame(self) -> Frame:
        info = self.info
        n = info.nlocals_plus
        F = self.F
        L = []
        live = info.live_locals(self.start)
        for i in range(n):
            v = F[i]
            kind = info.slot_kinds[i]
            if v is NULL or i not in live:
                L.append(v)   # unbound, or never read again: no guard, left as it is
            elif kind in (SLOT_CELL, SLOT_FREE) and isinstance(v, types.CellType):
                L.append(self._shadow_cell(v, f"L[{i}]"))
            else:
                L.append(self.wrap(v, f"L[{i}]"))
        fr = Frame(info, L, self.G, self.fn, self.sym_call)
        fr.S = [self.wrap(F[n + j], f"L[{n + j}]") for j in range(self.nstack)]
        self.L0 = list(L)
        return fr

    def _shadow_cell(self, cell, src):
        sh = self.cell_shadow.get(id(cell))
        if sh is not None:
            return sh
        sh = self._new_shadow_cell(cell, src)
        self.cell_shadow[id(cell)] = sh
        return sh

    def _new_shadow_cell(self, cell, src):
        try:
            contents = cell.cell_contents
        except ValueError:
            sh = types.CellType()
            self.cell_real[id(sh)] = (sh, cell, NULL)
            self.source_of[id(sh)] = (sh, src)
            return sh
        v = self.wrap(contents, f"{src}.cell_contents")
        sh = types.CellType(v)
        self.cell_real[id(sh)] = (sh, cell, v)
        self.source_of[id(sh)] = (sh, src)
        self.keep.append(cell)
        return sh

    def _run_root(self) -> CaptureResult:
        fr = self._root_frame()
        res = CaptureResult()
        res.capture = self
        instrs = self.info.instrs
        pc = self.start
        mode = self.mode
        while True:
            ins = instrs[pc]
            if pc in self.break_at:
                reason = self.break_at_reason.get(pc) if hasattr(self, "break_at_reason") \
                    else None
                return self._end_break(res, fr, pc, reason or GraphBreak("call graph-breaks"),
                                       self.break_at_stack.get(pc, ()) if hasattr(
                                           self, "break_at_stack") else ())
            snapshot = list(fr.S)
            try:
                with mode:
                    r = self._exec(fr, ins)
            except _InlineBreak as ib:
                fr.S[:] = snapshot
                if not hasattr(self, "break_at_reason"):
                    self.break_at_reason = {}
                    self.break_at_stack = {}
                self.break_at_reason[pc] = ib.gb
                self.break_at_stack[pc] = ib.stack
                raise _Restart() from None
            except GraphBreak as gb:
                fr.S[:] = snapshot
                return self._end_break(res, fr, pc, gb, ())
            except (Unsupported, _Restart):
                raise
            except Exception as e:  # noqa: BLE001 - CPython would raise here: break, run for real
                fr.S[:] = snapshot
                return self._end_break(res, fr, pc, _as_break(e, ins), ())
            if r is None:
                pc += 1
            elif r >= 0:
                pc = r
            elif r == concrete._RETURN:
                res.kind = "return"
                res.retval = fr.retval
                res.L, res.S = fr.L, fr.S
                res.graph = self.graph
                return res
            else:
                fr.S[:] = snapshot
                return self._end_break(res, fr, pc, GraphBreak("exception handling"), ())

    def _end_break(self, res, fr, pc, gb: GraphBreak, inline_stack) -> CaptureResult:
        res.kind = "break"
        res.break_index = pc
        res.break_info = BreakInfo(gb.reason, gb.hint, self.info.code, pc, inline_stack)
        res.L, res.S = fr.L, fr.S
        res.graph = self.graph
        return res

    def _exec(self, fr: Frame, ins):
        self.count += 1
        if self.count > config.instruction_budget:
            raise GraphBreak("too many instructions to capture (loop too long to unroll)")
        h = _SYM_HANDLERS.get(ins.op)
        if h is None:
            h = concrete.HANDLERS.get(ins.op)
            if h is None:
                raise GraphBreak(f"unsupported bytecode {ins.op}")
        if self.trace is None:
            return h(self, fr, ins) if h.__module__ == __name__ else h(fr, ins)
        depth = len(fr.S)
        r = h(self, fr, ins) if h.__module__ == __name__ else h(fr, ins)
        self.trace.append((ins, depth, len(fr.S), r))
        return r

    def _run_inlined(self, fn, args, kwargs, depth_stack, gen=None):
        """Interpret user function ``fn`` inline; returns its (shadow) return value, or for
        a generator expression (``gen`` a list) the list of the values it yields."""
        code = fn.__code__
        info = decode(code)
        if info.native_only_reason and not (gen is not None and info.native_only_reason in (
                "generator or coroutine function", "generator")):
            raise GraphBreak(f"call to {fn.__qualname__}: {info.native_only_reason}")
        if self.depth >= config.inline_depth:
            raise GraphBreak("inlining depth limit reached (recursion?)")
        L = concrete.bind_arguments(fn, args, kwargs)
        # shadow real closure cells of pre-existing functions
        n = info.nlocals_plus
        nfree = len(code.co_freevars)
        if nfree and id(fn) not in self.created_fns:
            fsrc = self.source(fn)
            for k in range(nfree):
                cell = L[n - nfree + k]
                if id(cell) in self.cell_real or not isinstance(cell, types.CellType):
                    continue
                src = f"{fsrc}.__closure__[{k}]" if fsrc else None
                if src is None:
                    continue
                L[n - nfree + k] = self._shadow_cell(cell, src)
        fr = Frame(info, L, fn.__globals__, fn, self.sym_call)
        pc = info.entry_index
        instrs = info.instrs
        self.depth += 1
        try:
            r = self._inline_loop(fr, code, pc, instrs, gen)
            return gen if gen is not None else r
        finally:
            self.depth -= 1

    def _inline_loop(self, fr, code, pc, instrs, gen=None):
        while True:
            ins = instrs[pc]
            try:
                if gen is not None and ins.op in ("RETURN_GENERATOR", "YIELD_VALUE"):
                    if ins.op == "YIELD_VALUE":
                        gen.append(fr.S.pop())
                    fr.S.append(None)     # the value sent back in
                    pc += 1
                    continue
                r = self._exec(fr, ins)
            except _InlineBreak as ib:
                ib.stack.insert(0, (code, pc))
                raise
            except GraphBreak as gb:
                raise _InlineBreak(gb, [(code, pc)]) from None
            except (Unsupported, _Restart):
                raise
            except Exception as e:  # noqa: BLE001
                raise _InlineBreak(_as_break(e, ins), [(code, pc)]) from None
            if r is None:
                pc += 1
            elif r >= 0:
                pc = r
            elif r == concrete._RETURN:
                v = fr.retval
                fr.retval = NULL
                return v
            else:
                raise _InlineBreak(GraphBreak("exception handling inside an inlined call"),
                                   [(code, pc)])

    # -- calls ---------------------------------------------------------------------------
    def sym_call(self, func, args, kwargs):
        """The capture's call policy (compiler-design.md 4.4)."""
        Module = _module_types()
        if isinstance(func, types.MethodType):
            self_ = func.__self__
            f = func.__func__
            if isinstance(self_, Tensor):
                return self._call_tensor_method(f.__name__, func, args, kwargs)
            if f.__name__ == "apply" and isinstance(self_, type) and _is_custom_function(self_):
                return self._custom_function(func, args, kwargs)
            if isinstance(f, types.FunctionType) and (
                    not _runs_on_meta(f) or self._is_real_object(self_)):
                # ember's own methods on real objects (an optimizer's step) are inlined too:
                # run directly they would mutate real state during capture
                return self._inline(f, [self_, *args], kwargs)
            return self._direct(func, args, kwargs)
        if isinstance(func, types.BuiltinMethodType) and isinstance(
                getattr(func, "__self__", None), Tensor):
            return self._call_tensor_method(func.__name__, func, args, kwargs)
        if isinstance(func, Module):
            self._guard_hooks(func)
            if func._backward_hooks or func._backward_pre_hooks:
                raise GraphBreak(f"call of {type(func).__name__} with backward hooks")
            if func._forward_hooks or func._forward_pre_hooks or _global_hooks():
                # ember's Module.__call__ is plain Python: inline it, hooks included
                return self._inline(type(func).__call__, [func, *args], kwargs)
            fwd = type(func).forward
            if isinstance(fwd, types.FunctionType):
                return self._inline(fwd, [func, *args], kwargs)
            return self._direct(func, args, kwargs)
        if getattr(func, "_ember_compiler_disabled", False) or getattr(
                func, "_torchdynamo_disable", False):
            raise GraphBreak(f"call to {_qualname(func)}, marked ember.compiler.disable",
                             "remove the `disable` marker to capture it")
        if getattr(func, "_ember_allow_in_graph", False):
            return self._opaque_call(func, args, kwargs)
        if isinstance(func, types.FunctionType):
            if func.__code__.co_name == "<genexpr>" and func.__code__.co_flags & 0x20:
                # a generator expression: run it to completion inline, hand out its values
                return iter(self._run_inlined(func, args, kwargs, [], gen=[]))
            if func.__code__.co_flags & 0x2a0:
                raise GraphBreak(f"call to generator function {func.__qualname__}",
                                 "generators run eagerly; move the loop over it outside")
            if _is_ember_library(func) and (func.__module__.startswith("ember.autograd")
                                            and func.__name__ in ("backward", "grad")):
                raise GraphBreak(f"ember.autograd.{func.__name__}() runs autograd; it runs "
                                 f"eagerly")
            if _is_ember_library(func) and func.__name__ in _RNG_STATE:
                raise GraphBreak(f"{_qualname(func)} changes the random-number state",
                                 "seed outside the compiled region")
            if _runs_on_meta(func) and id(func) not in self.created_fns:
                if not any(self._is_real_object(a) for a in (*args, *kwargs.values())):
                    return self._direct(func, args, kwargs)
                # an ember function handed a user object (an optimizer to a step wrapper):
                # inline it, so it cannot mutate real state during capture
            return self._inline(func, args, kwargs)
        try:
            hashable = hash(func) is not None
        except TypeError:
            hashable = False
        if hashable:
            if func in _BREAK_BUILTINS:
                raise GraphBreak(f"call to builtin {func.__name__}",
                                 _BREAK_BUILTINS[func] or _HINT_CALL)
            if func in _PURE_BUILTINS:
                return self._call_builtin(func, args, kwargs)
        if isinstance(func, type):
            if issubclass(func, BaseException) or func.__module__ in ("builtins",) or \
                    _is_ember_library(func) or func.__module__ in _PURE_MODULES:
                return self._direct(func, args, kwargs)
            raise GraphBreak(f"constructing an object of class {func.__qualname__}",
                             "build the object outside the compiled region and pass it in")
        if isinstance(func, (types.BuiltinFunctionType, types.BuiltinMethodType,
                             types.MethodWrapperType, types.WrapperDescriptorType,
                             types.MethodDescriptorType)):
            owner = getattr(func, "__self__", None)
            if (isinstance(owner, dict) and type(owner) is not dict and self.source(owner)
                    and func.__name__ in _MAPPING_READS):
                return self._mapping_method(owner, func.__name__, args, kwargs)
            if owner is not None and not isinstance(owner, types.ModuleType):
                if id(owner) in self.real_of or type(owner) in (
                        list, dict, set, str, tuple, bytes, int, float, bool, complex,
                        frozenset, range, slice) or self.source(owner) is None:
                    return self._direct(func, args, kwargs)
            mod = getattr(func, "__module__", None) or getattr(owner, "__name__", "")
            if mod in _PURE_MODULES or _is_ember_library(func) or (
                    isinstance(owner, types.ModuleType) and owner.__name__.startswith("ember")):
                return self._direct(func, args, kwargs)
            raise GraphBreak(f"call to unsupported callable {_qualname(func)}", _HINT_CALL)
        import functools
        if isinstance(func, functools.partial):
            return self.sym_call(func.func, [*func.args, *args], {**func.keywords, **kwargs})
        if type(func).__module__.startswith("ember") and not isinstance(func, Module):
            return self._direct(func, args, kwargs)
        call = type(func).__dict__.get("__call__") if isinstance(func, object) else None
        if isinstance(call, types.FunctionType) and not _is_ember_library(call):
            return self._inline(call, [func, *args], kwargs)
        raise GraphBreak(f"call to unsupported callable {_qualname(func)}", _HINT_CALL)

    def _guard_hooks(self, m) -> None:
        """Hook registration does not change a module's structure version: guard the hook
        tables' lengths (the module's when it has a source, and the global ones)."""
        src = self.source(m)
        names = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks",
                 "_backward_pre_hooks")
        if src is not None:
            # one check per module: the four table sizes as a tuple
            expr = "(" + ", ".join(f"len({src}.{n})" for n in names) + ")"
            self._guard("const", expr, tuple(len(getattr(m, n)) for n in names))
        mod = "__import__('sys').modules['ember.nn.modules.module']"
        from ember.nn.modules import module as mm
        self._guard("const", f"(len({mod}._global_forward_hooks), "
                             f"len({mod}._global_forward_pre_hooks))",
                    (len(mm._global_forward_hooks), len(mm._global_forward_pre_hooks)))

    def _mapping_method(self, owner, name, args, kwargs):
        """Read-only methods of a sourced dict subclass (``OrderedDict``, hook tables): the
        values come back wrapped with their sources, and the keys are guarded."""
        src = self.source(owner)
        if not all(_const_key(k) for k in owner):
            raise GraphBreak(f"{type(owner).__name__}.{name} on a mapping with non-constant "
                             f"keys")
        self._guard("dict_keys", src, owner)
        if name == "keys":
            return list(owner.keys())
        if name == "__len__":
            return len(owner)
        if name == "__contains__":
            return args[0] in owner
        vals = {k: self.wrap(v, item_source(src, k)) for k, v in owner.items()}
        if name == "values":
            return list(vals.values())
        if name == "items":
            return list(vals.items())
        if name in ("get", "__getitem__"):
            if args[0] in vals:
                return vals[args[0]]
            if name == "get":
                return args[1] if len(args) > 1 else kwargs.get("default")
            raise KeyError(args[0])
        raise GraphBreak(f"{type(owner).__name__}.{name} is not captured")

    def _custom_function(self, func, args, kwargs):
        """``MyFunction.apply(...)``: one graph node, inlined into the compiled region (its
        forward and backward are traced for training, ember.compiler.aot); a forward that
        cannot run on meta tensors is a break."""
        try:
            return self._opaque_call(func, args, kwargs)
        except MetaUnsupported as e:
            raise GraphBreak(f"custom autograd.Function {func.__self__.__qualname__} cannot "
                             f"be traced: {e}") from None

    def _opaque_call(self, func, args, kwargs):
        """``allow_in_graph``: one graph node for the whole call (its result's meta comes
        from running ``func`` on meta tensors, outside the recording mode)."""
        import operator

        from ember.compiler.meta import map_args

        mode = self.mode
        nargs = map_args(args, mode._record_arg)
        nkwargs = map_args(kwargs, mode._record_arg)
        mode.__exit__(None, None, None)
        try:
            node = self.graph.call(func, nargs, nkwargs)
        finally:
            mode.__enter__()
        out = node.meta["val"]
        if isinstance(out, Tensor):
            mode.bind(out, node)
        elif isinstance(out, (tuple, list)):
            for i, o in enumerate(out):
                if isinstance(o, Tensor):
                    mode.bind(o, self.graph.call(operator.getitem, (node, i), meta={"val": o}))
        return out

    def _inline(self, f, args, kwargs):
        return self._run_inlined(f, args, kwargs, [])

    def _direct(self, func, args, kwargs):
        try:
            return func(*args, **kwargs)
        except MetaUnsupported as e:
            raise GraphBreak(str(e), _HINT_ITEM if "item" in str(e) else None) from None
        except (NotImplementedError, RuntimeError) as e:
            if "meta" in str(e) and ("no data" in str(e) or "data" in str(e)):
                raise GraphBreak(f"{_qualname(func)} reads tensor data ({e})",
                                 _HINT_DATA) from None
            raise

    def _is_real_object(self, obj) -> bool:
        """A user-visible object that capture must not mutate (read from the frame)."""
        if isinstance(obj, (Tensor, type, types.ModuleType, types.FunctionType,
                            types.BuiltinFunctionType)) or type(obj) in _CONST_TYPES:
            return False
        if type(obj).__module__ == "ember.autograd.grad_mode":
            return False    # grad-mode managers act on the thread's grad state, restored after
        return self.source(obj) is not None and id(obj) not in self.real_of

    def _call_tensor_method(self, name, bound, args, kwargs):
        if name in ("backward", "register_hook", "retain_grad"):
            raise GraphBreak(f"Tensor.{name}() runs autograd; it runs eagerly",
                             "compile the forward only, and call backward outside")
        if name in _DATA_METHODS:
            raise GraphBreak(f"Tensor.{name}() reads tensor data", _DATA_METHODS[name])
        return self._direct(bound, args, kwargs)

    def _call_builtin(self, func, args, kwargs):
        if func is getattr:
            obj, name = args[0], args[1]
            try:
                return self.load_attr(obj, name)
            except AttributeError:
                if len(args) > 2:
                    return args[2]
                raise
        if func is hasattr:
            try:
                self.load_attr(args[0], args[1])
                return True
            except AttributeError:
                return False
        if func is setattr:
            self.store_attr(args[0], args[1], args[2])
            return None
        if func is len and args:
            _truth_guard(self, args[0])
            if isinstance(args[0], Tensor) and args[0]._shape and \
                    isinstance(args[0]._shape[0], SymInt) and not kwargs:
                return args[0]._shape[0]        # len() would drop the symbol
        if func is range and any(isinstance(a, SymInt) for a in args):
            args = _static_range_args(args)
        if func is vars or (func is super and not args):
            raise GraphBreak(f"call to builtin {func.__name__} without arguments")
        for a in args:
            if (hasattr(type(a), "__next__") and self.source(a) is not None
                    and id(a) not in self.real_of):
                raise GraphBreak(f"{func.__name__}() would advance a "
                                 f"{type(a).__name__} created outside the compiled region")
        if func in (bool, int, float, complex) and args and isinstance(args[0], Tensor):
            raise GraphBreak(f"{func.__name__}() of a tensor reads tensor data", _HINT_ITEM)
        if func is iter and args and not _iterable_ok(self, args[0]):
            raise GraphBreak(f"iteration over {type(args[0]).__name__} cannot be unrolled")
        return self._direct(func, args, kwargs)

    # -- attributes ----------------------------------------------------------------------
    def load_attr(self, obj, name: str):
        if isinstance(obj, Tensor):
            if name in _REAL_TENSOR_ATTRS:
                hit = self.real_tensor.get(id(obj))
                if hit is not None and hit[0] is obj:
                    # state a meta tensor does not carry: read it from the real input
                    return self.wrap(getattr(hit[1], name), attr_source(hit[2], name))
            return getattr(obj, name)
        key = (id(obj), name)
        if key in self.attr_overlay:
            return self.attr_overlay[key]
        src = self.source(obj)
        if src is None or id(obj) in self.real_of:
            return getattr(obj, name)
        # a Python property on a real object: run its getter inline
        for k in type(obj).__mro__:
            d = k.__dict__.get(name)
            if d is not None:
                if isinstance(d, property) and isinstance(d.fget, types.FunctionType):
                    if not isinstance(obj, type):
                        return self._inline(d.fget, [obj], {})
                break
        value = getattr(obj, name)
        Module = _module_types()
        owned = isinstance(obj, Module) and (name in obj.__dict__.get("_modules", {}) or
                                             name in obj.__dict__.get("_parameters", {}) or
                                             name in obj.__dict__.get("_buffers", {}) or
                                             name == "training")
        if isinstance(value, types.MethodType) and value.__self__ is obj:
            return value
        if isinstance(obj, types.ModuleType) and isinstance(value, types.ModuleType):
            return self.wrap(value, attr_source(src, name))
        return self.wrap(value, attr_source(src, name), module_owned=owned)

    def store_attr(self, obj, name: str, value):
        if isinstance(obj, Tensor) and self.source(obj) is None:
            setattr(obj, name, value)
            return
        if self.source(obj) is None and id(obj) not in self.real_of and not isinstance(
                obj, Tensor):
            if id(obj) in self.created_fns:
                setattr(obj, name, value)
                return
            raise GraphBreak(f"attribute write on an object without a source "
                             f"({type(obj).__name__}.{name})")
        if isinstance(obj, Tensor):
            raise GraphBreak(f"attribute write on an input tensor ({name})")
        for k in type(obj).__mro__:
            d = k.__dict__.get(name)
            if d is None:
                continue
            if isinstance(d, property) and isinstance(d.fset, types.FunctionType):
                self._inline(d.fset, [obj, value], {})
                return
            if hasattr(type(d), "__set__"):
                raise GraphBreak(f"attribute write through a descriptor "
                                 f"({type(obj).__name__}.{name})")
            break
        if not hasattr(obj, "__dict__") and not isinstance(obj, type):
            raise GraphBreak(f"attribute write on a {type(obj).__name__} without __dict__")
        self.attr_overlay[(id(obj), name)] = value
        self.attr_writes.append((obj, name, value))


def _const_key(k) -> bool:
    t = type(k)
    if t is tuple:
        return all(_const_key(x) for x in k)
    if t is float:
        return k == k and k not in (float("inf"), float("-inf"))
    return t in (str, int, bool, bytes, type(None))


def _global_hooks() -> bool:
    from ember.nn.modules import module as m
    return bool(m._global_forward_hooks or m._global_forward_pre_hooks)


def _iterable_ok(cap: Capture, v) -> bool:
    if isinstance(v, (list, tuple, dict, range, str, bytes, set, frozenset, Tensor, zip,
                      enumerate, reversed, map, filter, type({}.keys()), type({}.values()),
                      type({}.items()))):
        return True
    Module = _module_types()
    if isinstance(v, Module):
        return True
    return cap.source(v) is None and not isinstance(v, types.GeneratorType)


def _placeholder_name(src: str) -> str:
    import re
    s = re.sub(r"\[(\d+)\]", r"_\1", src)
    s = re.sub(r"[^0-9a-zA-Z_]+", "_", s).strip("_")
    return s or "arg"


def _as_break(e: BaseException, ins) -> GraphBreak:
    if isinstance(e, MetaUnsupported):
        return GraphBreak(str(e), _HINT_ITEM if "item" in str(e) else None)
    msg = str(e)
    if ins.op in ("POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "TO_BOOL", "UNARY_NOT",
                  "JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP"):
        return GraphBreak("data-dependent jump on Tensor", _HINT_JUMP)
    if isinstance(e, (NotImplementedError, RuntimeError)) and "meta" in msg and "data" in msg:
        return GraphBreak(f"{ins.op} reads tensor data ({msg})", _HINT_DATA)
    if isinstance(e, RuntimeError) and "ambiguous" in msg:
        return GraphBreak("data-dependent jump on Tensor", _HINT_JUMP)
    return GraphBreak(f"{ins.op} would raise {type(e).__name__}: {msg}",
                      "the exception is raised by the real code after the break")


# ---------------------------------------------------------------------------------------------
# symbolic handlers (override the concrete ones where the shadow world needs care)

_SYM_HANDLERS: dict = {}


def _s(*names):
    def deco(f):
        for n in names:
            _SYM_HANDLERS[n] = f
        return f
    return deco


@_s("LOAD_GLOBAL")
def _load_global(cap: Capture, fr: Frame, ins):
    name = ins.argval
    if fr.g is cap.G and name in cap.global_overlay:
        v = cap.global_overlay[name]
    else:
        v = concrete.load_global(fr, name)
        if name in fr.g:
            v = cap.wrap(v, global_source(fr.g, cap.G, name))
    if ins.flags & PUSH_NULL:
        push_method_pair(fr.S, v)
    else:
        fr.S.append(v)


@_s("STORE_GLOBAL")
def _store_global(cap: Capture, fr: Frame, ins):
    if fr.g is not cap.G:
        raise GraphBreak("global write in another module")
    v = fr.S.pop()
    cap.global_overlay[ins.argval] = v
    cap.global_writes.append((ins.argval, v))


@_s("DELETE_GLOBAL", "DELETE_ATTR", "IMPORT_NAME", "IMPORT_FROM", "LOAD_BUILD_CLASS",
    "PUSH_EXC_INFO", "POP_EXCEPT", "CHECK_EXC_MATCH", "RERAISE", "WITH_EXCEPT_START")
def _unsupported_op(cap: Capture, fr: Frame, ins):
    if ins.op == "IMPORT_NAME":
        raise GraphBreak("import statement inside the compiled region",
                         "import at module level")
    raise GraphBreak(f"{ins.op} is not captured")


@_s("RAISE_VARARGS")
def _raise(cap: Capture, fr: Frame, ins):
    raise GraphBreak("raise statement", "the exception is raised by the real code")


@_s("LOAD_ATTR")
def _load_attr(cap: Capture, fr: Frame, ins):
    S = fr.S
    obj = S.pop()
    v = cap.load_attr(obj, ins.argval)
    if ins.flags & METHOD:
        push_method_pair(S, v)
    else:
        S.append(v)


@_s("STORE_ATTR")
def _store_attr(cap: Capture, fr: Frame, ins):
    S = fr.S
    obj = S.pop()
    v = S.pop()
    cap.store_attr(obj, ins.argval, v)


@_s("STORE_DEREF")
def _store_deref(cap: Capture, fr: Frame, ins):
    fr.L[ins.arg].cell_contents = fr.S.pop()


@_s("MAKE_FUNCTION", "SET_FUNCTION_ATTRIBUTE")
def _make_function(cap: Capture, fr: Frame, ins):
    r = concrete.HANDLERS[ins.op](fr, ins)
    f = fr.S[-1]
    cap.created_fns.add(id(f))
    cap.keep.append(f)
    return r


@_s("GET_ITER")
def _get_iter(cap: Capture, fr: Frame, ins):
    v = fr.S[-1]
    if not _iterable_ok(cap, v):
        raise GraphBreak(f"iteration over {type(v).__name__} cannot be unrolled")
    if isinstance(v, Tensor) and v._shape and isinstance(v._shape[0], SymInt):
        _static_range_args((v._shape[0],))     # one iteration per row: unrolled
    src = cap.source(v)
    if src is not None and _is_indexed_module_container(v):
        # ModuleList / Sequential: the children keep sources (guards, lifted parameters)
        fr.S[-1] = iter([cap.wrap(m, item_source(src, i)) for i, m in enumerate(v)])
        return
    fr.S[-1] = iter(v)


def _is_indexed_module_container(v) -> bool:
    from ember.nn.modules.container import ModuleList, Sequential
    return type(v).__iter__ in (ModuleList.__iter__, Sequential.__iter__)


@_s("BINARY_SUBSCR")
def _binary_subscr(cap: Capture, fr: Frame, ins):
    S = fr.S
    key = S[-1]
    obj = S[-2]
    src = cap.source(obj)
    if (src is not None and _const_key(key) and id(obj) not in cap.real_of
            and not isinstance(obj, Tensor)):
        v = obj[key]
        S.pop()
        S[-1] = cap.wrap(v, item_source(src, key))
        return
    if isinstance(obj, dict) and isinstance(key, Tensor):
        raise GraphBreak("dynamic dict key (a tensor used as a dict key)")
    return concrete.HANDLERS["BINARY_SUBSCR"](fr, ins)


@_s("BEFORE_WITH")
def _before_with(cap: Capture, fr: Frame, ins):
    from ember.autograd import grad_mode as gm
    mgr = fr.S[-1]
    if type(mgr) not in (gm.no_grad, gm.enable_grad, gm.set_grad_enabled):
        raise GraphBreak(f"`with` on {type(mgr).__name__} (only grad-mode managers are "
                         f"captured)")
    cap.with_depth += 1
    return concrete.HANDLERS["BEFORE_WITH"](fr, ins)


@_s("CALL")
def _call(cap: Capture, fr: Frame, ins):
    S = fr.S
    func, args, kwargs = concrete.pop_call(S, ins)
    if func is super and not args and not kwargs:
        S.append(concrete.zero_arg_super(fr))
        return
    if isinstance(func, types.MethodType) and func.__name__ == "__exit__" and \
            cap.with_depth:
        from ember.autograd import grad_mode as gm
        if type(func.__self__) in (gm.no_grad, gm.enable_grad, gm.set_grad_enabled):
            cap.with_depth -= 1
    S.append(cap.sym_call(func, args, kwargs))


@_s("CALL_FUNCTION_EX")
def _call_ex(cap: Capture, fr: Frame, ins):
    return concrete.HANDLERS["CALL_FUNCTION_EX"](fr, ins)


def _static_range_args(args) -> tuple:
    """``range(n)`` over a dynamic size (or iterating a tensor over a dynamic first dim)
    unrolls the loop ``n`` times: each symbolic bound becomes its value, guarded equal, so
    another size recompiles (the capture is redone with static shapes) instead of reusing a
    graph unrolled for this one."""
    from ember.compiler import logs

    out = []
    for a in args:
        if isinstance(a, SymInt):
            logs.log("dynamic", f"a loop over the dynamic size {a.expr} = {int(a)} is "
                                "unrolled: specialised (static shapes for this graph)")
            a = a._specialize()
        out.append(a)
    return tuple(out)


def _truth_guard(cap: Capture, v) -> None:
    if isinstance(v, (dict, list, set, tuple)) and id(v) not in cap.real_of:
        src = cap.source(v)
        if src is not None:
            cap._guard("len", src, v)


@_s("POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "TO_BOOL", "UNARY_NOT", "JUMP_IF_TRUE_OR_POP",
    "JUMP_IF_FALSE_OR_POP")
def _truth(cap: Capture, fr: Frame, ins):
    _truth_guard(cap, fr.S[-1])
    return concrete.HANDLERS[ins.op](fr, ins)


@_s("STORE_SUBSCR")
def _store_subscr(cap: Capture, fr: Frame, ins):
    S = fr.S
    if isinstance(S[-2], dict) and isinstance(S[-1], Tensor):
        raise GraphBreak("dynamic dict key (a tensor used as a dict key)",
                         "key the dict by a Python value (a name or an index)")
    return concrete.HANDLERS["STORE_SUBSCR"](fr, ins)


@_s("FOR_ITER")
def _for_iter(cap: Capture, fr: Frame, ins):
    it = fr.S[-1]
    if cap.source(it) is not None:
        raise GraphBreak(f"iteration over a {type(it).__name__} created outside the compiled "
                         f"region cannot be unrolled")
    try:
        v = next(it)
    except StopIteration:
        fr.S.pop()
        return ins.target
    fr.S.append(v)

