"""The frame driver: runs a compiled function as a chain of segments and concrete steps.

NOTE [Graph-break resumption]

``run_frame(ctx, fn, args, kwargs)`` binds the arguments into ``L`` (the frame state: CPython's
localsplus followed by the value stack), then repeatedly looks up the compiled *segment* for
the current instruction in the code object's cache (guards decide which entry applies),
capturing and compiling one on a miss. A segment runs its graph, rebuilds the frame state and
replays side effects, and either returns the frame's value or names the instruction where
capture broke; the driver executes that one instruction with real values
(:func:`ember.compiler.concrete.step`) and continues with the segment that starts after it.
Nothing writes bytecode (compiler-design.md 4.13, design (b)).

Policies: a frame that cannot be captured at all (generators, ``sys._getframe``/``locals()``
users, unsupported opcodes) runs natively; a break inside a loop makes the frame native (the
current call finishes in the concrete interpreter if it had started) — both are reported to
``explain`` and ``EMBER_LOGS=graph_breaks``. ``fullgraph=True`` turns any break into
``GraphBreakError`` with the reason and the user's source line.

Calls executed at a break (a user function, a module) go through ``run_frame`` too, so the
callee is compiled as its own frame.
"""

from __future__ import annotations

import os
import re
import sys
import time
import types

import ember.compiler.explain  # noqa: F401 - the module (the package exports a function too)
from ember.compiler import concrete, shapes
from ember.compiler.bytecode import CodeInfo, decode
from ember.compiler.cache import CacheEntry, CodeCache, CompileContext
from ember.compiler.concrete import Frame, Return
from ember.compiler.config import config
from ember.compiler.graph import compile_source
from ember.compiler.guards import GuardBuilder
from ember.compiler.side_effects import CannotRebuild, Rebuilder
from ember.compiler.symbolic import (
    Capture,
    Unsupported,
    _is_ember_library,
    _Restart,
)

__all__ = ["run_frame", "RETURN", "BREAK"]

events = sys.modules["ember.compiler.explain"]
RETURN = 0
BREAK = 1
_NATIVE = object()
_HANDLER_OPS = frozenset({"PUSH_EXC_INFO", "POP_EXCEPT", "CHECK_EXC_MATCH", "RERAISE",
                          "WITH_EXCEPT_START"})
_COMPILER_DIR = os.path.dirname(os.path.abspath(__file__))


def run_frame(ctx: CompileContext, fn, args, kwargs=None):
    """Call ``fn(*args, **kwargs)`` through the compiler (see module docstring)."""
    kwargs = kwargs or {}
    if isinstance(fn, types.MethodType):
        return run_frame(ctx, fn.__func__, (fn.__self__, *args), kwargs)
    if not isinstance(fn, types.FunctionType):
        return fn(*args, **kwargs)
    code = fn.__code__
    cc = ctx.code_cache(code)
    if cc.native_only:
        return fn(*args, **kwargs)
    info: CodeInfo = cc.info
    if info is None:
        info = cc.info = decode(code)
        if info.native_only_reason:
            _go_native(ctx, cc, info.native_only_reason, None)
            return fn(*args, **kwargs)
        if events.logs.enabled("bytecode"):
            events.record_bytecode(cc.where, "\n".join(map(repr, info.instrs)))
    n = info.nlocals_plus
    if not kwargs and len(args) == info.simple_argcount:
        L = [*args, *info.pad]          # plain positional call of a closure-free function
    else:
        L = concrete.bind_arguments(fn, args, kwargs)
    G = fn.__globals__
    pc = info.entry_index
    while True:
        entry = cc.lookup(pc, L, G)
        if entry is None:
            with cc.lock:
                entry = cc.lookup(pc, L, G)
                if entry is None:
                    entry = _compile_segment_safely(ctx, cc, fn, info, L, len(L) - n, pc)
        if entry is _NATIVE:
            if pc == info.entry_index:
                return fn(*args, **kwargs)
            return _finish_concretely(ctx, fn, info, L, n, pc)
        kind, val = entry.fn(L, G)
        if kind == RETURN:
            return val
        pc = val
        fr = Frame(info, L[:n], G, fn, _call_hook(ctx))
        fr.S = L[n:]
        try:
            r = concrete.step(fr, pc)
            # exception handlers start concretely: capture resumes in the handler's body
            while not isinstance(r, Return) and info.instrs[r].op in _HANDLER_OPS:
                pc = r
                r = concrete.step(fr, pc)
        except BaseException as e:
            at = fr.error_pc if fr.error_pc >= 0 else pc
            raise e.with_traceback(_user_traceback(e, info, at)) from None
        if isinstance(r, Return):
            return r.value
        L = fr.L + fr.S
        pc = r


def _finish_concretely(ctx, fn, info, L, n, pc):
    fr = Frame(info, L[:n], fn.__globals__, fn, _call_hook(ctx))
    fr.S = L[n:]
    try:
        return concrete.execute(fr, pc)
    except BaseException as e:
        at = fr.error_pc if fr.error_pc >= 0 else pc
        raise e.with_traceback(_user_traceback(e, info, at)) from None


def _call_hook(ctx: CompileContext):
    def call(func, args, kwargs):
        f, fargs = func, args
        if isinstance(func, types.MethodType) and isinstance(func.__func__, types.FunctionType):
            f = func.__func__
            fargs = [func.__self__, *args]
        else:
            from ember.nn.modules.module import Module
            if isinstance(func, Module) and not (
                    func._forward_hooks or func._forward_pre_hooks or func._backward_hooks
                    or func._backward_pre_hooks):
                fwd = type(func).forward
                if isinstance(fwd, types.FunctionType):
                    return run_frame(ctx, fwd, [func, *args], kwargs)
        if (isinstance(f, types.FunctionType) and not _is_ember_library(f)
                and not _is_library_file(f.__code__.co_filename)
                and not f.__code__.co_flags & 0x2a0
                and not getattr(f, "_ember_compiler_disabled", False)
                and not getattr(f, "_torchdynamo_disable", False)):
            return run_frame(ctx, f, fargs, kwargs)
        return func(*args, **kwargs)
    return call


_LIBRARY_DIRS = tuple({os.path.dirname(os.__file__), os.path.dirname(os.path.dirname(
    types.__file__))} | {p for p in sys.path if p.endswith(("site-packages", "dist-packages"))})


def _is_library_file(filename: str) -> bool:
    """Standard-library and installed-package code: run natively when called at a break
    (as Dynamo's skip files), never compiled as a frame of its own."""
    return filename.startswith(_LIBRARY_DIRS)


def _go_native(ctx, cc: CodeCache, reason: str, break_info) -> None:
    cc.native_only = reason
    events.record_native(cc.where, reason)


def _compile_segment_safely(ctx, cc, fn, info, L, nstack, pc):
    from ember.compiler.exc import CompileError

    try:
        return _compile_segment(ctx, cc, fn, info, L, nstack, pc)
    except CompileError:
        raise
    except Exception as e:
        # a failure of the compiler itself (not of the user's code)
        if not config.suppress_errors:
            raise CompileError(f"ember.compile: compiling {cc.where} failed: "
                               f"{type(e).__name__}: {e} (set ember.compiler.config."
                               f"suppress_errors = True to run such frames eagerly)") from e
        import warnings
        warnings.warn(f"ember.compile: compiling {cc.where} failed ({type(e).__name__}: {e}); "
                      f"running it eagerly", RuntimeWarning, stacklevel=4)
        _go_native(ctx, cc, f"compiler error: {type(e).__name__}: {e}", None)
        return _NATIVE


def _compile_segment(ctx: CompileContext, cc: CodeCache, fn, info: CodeInfo, L: list,
                     nstack: int, pc: int):
    t0 = time.perf_counter()
    break_at: set[int] = set()
    reasons: dict = {}
    stacks: dict = {}
    res = None
    cap = None
    static = False
    for _attempt in range(64):
        gb = GuardBuilder()
        gb.add_global_state()
        cap = Capture(fn, info, L, nstack, pc, gb, break_at)
        shapes.configure(cap, ctx, cc, pc, L, fn.__globals__)
        cap.dynamic_off |= static
        cap.break_at_reason = dict(reasons)
        cap.break_at_stack = dict(stacks)
        try:
            res = cap.run()
            if cap.shape_env.sources and not shapes.validate(cap.graph, cap.shape_env):
                static = True       # sizes escaped the symbols: capture with static shapes
                continue
            shapes.add_guards(gb, cap.shape_env)
        except _Restart:
            break_at |= set(cap.break_at_reason)
            reasons.update(cap.break_at_reason)
            stacks.update(cap.break_at_stack)
            continue
        except Unsupported as u:
            if ctx.fullgraph:
                _raise_graph_break(str(u), info, pc, (), None)
            _go_native(ctx, cc, str(u), None)
            return _NATIVE
        break
    else:
        _go_native(ctx, cc, "too many capture restarts", None)
        return _NATIVE
    bi = res.break_info
    if res.kind == "break":
        if ctx.fullgraph:
            _raise_graph_break(bi.reason, info, bi.index, bi.inline_stack, bi.hint)
        if info.in_loop(bi.index) and config.on_break_in_loop == "native":
            events.record_break(bi.reason, bi.user_stack(), bi.hint)
            _go_native(ctx, cc, f"graph break in a loop ({bi.reason})", bi)
            return _NATIVE
    if len(cc.entries.get(pc, ())) >= config.recompile_limit:
        # over the limit: let the cache refuse (it warns once) before compiling anything
        if not cc.install(pc, CacheEntry(cap.guards.build(), None), L, fn.__globals__):
            return _NATIVE
    try:
        entry = _build_segment(ctx, cc, cap, res, info, pc, t0)
    except CannotRebuild as e:
        if ctx.fullgraph:
            _raise_graph_break(f"cannot rebuild frame state: {e}", info, pc, (), None)
        _go_native(ctx, cc, f"cannot rebuild frame state after a break: {e}", bi)
        return _NATIVE
    if res.kind == "break":
        events.record_break(bi.reason, bi.user_stack(), bi.hint)
    if not cc.install(pc, entry, L, fn.__globals__):
        return _NATIVE
    return entry


def _raise_graph_break(reason, info, index, inline_stack, hint):
    from ember.compiler.exc import GraphBreakError
    from ember.compiler.symbolic import BreakInfo

    bi = BreakInfo(reason, hint, info.code, index, inline_stack)
    raise GraphBreakError(reason, bi.user_stack(), hint)


def _build_segment(ctx, cc, cap: Capture, res, info: CodeInfo, pc: int, t0: float):
    from ember.compiler.backends import compile_graph

    rb = Rebuilder(cap)
    n = info.nlocals_plus
    body: list[str] = []
    if res.kind == "return":
        ret = rb.temp(rb.expr(res.retval))
        tail = [f"return {RETURN}, {ret}"]
    else:
        live = info.live_locals(res.break_index)
        writes = []
        for i in range(n):
            v = res.L[i]
            if v is cap.L0[i] or i not in live:
                continue
            writes.append((i, rb.temp(rb.expr(v))))
        stack = [rb.temp(rb.expr(v)) for v in res.S]
        tail = [f"L[{i}] = {t}" for i, t in writes]
        tail.append(f"del L[{n}:]")
        if stack:
            tail.append(f"L.extend(({''.join(s + ', ' for s in stack)}))")
        tail.append(f"return {BREAK}, {res.break_index}")
    rb.side_effects()
    graph = cap.graph
    graph.output(tuple(rb.outputs))
    graph.dce()
    inputs = [(src, real) for src, real, _node in cap.inputs]
    env = rb.env
    if rb.outputs or graph.op_count():
        # a graph mixing grad modes (a `with no_grad()` block inside it) is replayed node by
        # node in each node's recorded mode by the backends (GraphModule); with inputs that
        # require grad, compile_graph traces it so for training (ember.compiler.aot) or runs it
        # on the eager backend
        modes = {n.meta.get("grad_mode", cap.entry_grad) for n in graph.calls()}
        backend = ctx.backend
        if shapes.has_symbols(graph):
            compiled = shapes.dynamic_graph(graph, [real for _s, real in inputs], backend)
        else:
            compiled = compile_graph(graph, [real for _s, real in inputs], backend)
        env["__graph"] = compiled
        lines, names = _hoist([src for src, _r in inputs])
        body += lines
        call = f"O = __graph({', '.join(names)})"
        if modes and len(modes) == 1 and modes != {cap.entry_grad}:
            # the whole graph ran in the other grad mode (e.g. an optimizer step under no_grad)
            from ember.autograd.grad_mode import set_grad_enabled
            env["__grad_mode"] = set_grad_enabled
            body.append(f"with __grad_mode({modes.pop()}):")
            call = "    " + call
        body.append(call)
    body += rb.pre + rb.effects + tail
    name = f"__segment_{re.sub(r'[^0-9A-Za-z_]', '_', info.code.co_name)}_{pc}"
    src = f"def {name}(L, G):\n" + "".join(f"    {line}\n" for line in body)
    fn = compile_source(src, env, name, "segment")
    guards = cap.guards.build()
    where = f"{cc.where} at instruction {pc}"
    dt = time.perf_counter() - t0
    if graph.op_count():
        events.record_graph(graph, guards=guards, code=src, where=where, compile_time=dt)
    elif events.logs.enabled("guards"):
        events.logs.log("guards", f"guards of {where}:\n{guards.source}")
    return CacheEntry(guards, fn, {"source": src, "graph": graph, "kind": res.kind,
                                   "break": res.break_info, "input_shapes": cap.input_shapes})


_STEP = re.compile(r"\.[A-Za-z_]\w*|\[(?:'[^']*'|-?\d+)\]")
_BASE = re.compile(r"^(L\[\d+\]|G\['[^']*'\])")


def _hoist(exprs: list[str]) -> tuple[list[str], list[str]]:
    """Statements computing ``exprs`` with shared prefixes evaluated once
    (``L[0].blocks[0].attn`` is read once for all its parameters)."""
    lines: list[str] = []
    known: dict[str, str] = {}
    out = []
    for e in exprs:
        m = _BASE.match(e)
        steps = _STEP.findall(e[m.end():]) if m else []
        if not m or "".join(steps) != e[m.end():] or len(steps) < 2:
            out.append(e)
            continue
        cur = m.group(1)
        name = cur
        for st in steps[:-1]:
            cur += st
            hit = known.get(cur)
            if hit is None:
                hit = known[cur] = f"h{len(known)}"
                lines.append(f"{hit} = {name}{st}")
            name = hit
        out.append(name + steps[-1])
    return lines, out


def _user_traceback(e: BaseException, info: CodeInfo, pc: int):
    """``e``'s traceback with a frame at the user's line in front, and the compiler's own
    frames removed (the user sees their code, not the interpreter's)."""
    tb = e.__traceback__
    kept = []
    while tb is not None:
        if not os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_COMPILER_DIR):
            kept.append(tb)
        tb = tb.tb_next
    code = info.code
    line = info.line_of(pc) or code.co_firstlineno
    head = None
    try:
        src = "\n" * (line - 1) + "raise __ember_exc__"
        c = compile(src, code.co_filename, "exec").replace(co_name=code.co_name)
        try:
            exec(c, {"__ember_exc__": _Marker()})  # noqa: S102 - a frame at the user's line
        except _Marker as m:
            t = m.__traceback__
            while t is not None and t.tb_frame.f_code is not c:
                t = t.tb_next
            head = t
    except Exception:  # noqa: BLE001 - best effort: keep the original traceback
        head = None
    chain = None
    for t in reversed(kept):
        chain = types.TracebackType(chain, t.tb_frame, t.tb_lasti, t.tb_lineno)
    if head is not None:
        chain = types.TracebackType(chain, head.tb_frame, head.tb_lasti, head.tb_lineno)
    return chain


class _Marker(Exception):
    pass

