"""Decoder invariants on every code object of the corpus: local-slot layout, jump targets,
exception-table entries, opcode coverage, and stack effects equal to ``dis.stack_effect``
(observed while the concrete interpreter runs the corpus, nested functions included)."""

from __future__ import annotations

import dis
import types

import pytest

from ember.compiler import bytecode, concrete
from tests.compiler.corpus import CASES


def _code_objects():
    seen = []
    stack = [f.__code__ for f, _, _ in CASES]
    import tests.compiler.corpus as corpus
    for v in vars(corpus).values():
        if isinstance(v, types.FunctionType):
            stack.append(v.__code__)
        if isinstance(v, type) and v.__module__ == corpus.__name__:
            for a in vars(v).values():
                a = getattr(a, "fget", a)
                a = getattr(a, "__func__", a)
                if isinstance(a, types.FunctionType):
                    stack.append(a.__code__)
    ids = set()
    while stack:
        c = stack.pop()
        if id(c) in ids:
            continue
        ids.add(id(c))
        seen.append(c)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return seen


CODES = _code_objects()


def test_binary_op_table_matches_dis():
    nb = dis._nb_ops
    assert len(nb) >= len(bytecode.BINARY_OPS)
    for (_name, sym), (ours, inplace) in zip(nb, bytecode.BINARY_OPS):
        assert sym == ours + ("=" if inplace else "")


def test_layout_targets_and_table():
    for code in CODES:
        info = bytecode.decode(code)
        n = len(info.instrs)
        names, kinds = info.slot_names, info.slot_kinds
        assert names[:len(code.co_varnames)] == list(code.co_varnames)
        assert names[len(names) - len(code.co_freevars):] == list(code.co_freevars) or \
            not code.co_freevars
        for c in code.co_cellvars:
            assert kinds[names.index(c)] == bytecode.SLOT_CELL
        for ins in info.instrs:
            assert info.instrs[ins.index] is ins
            if ins.op in bytecode.JUMP_OPS:
                assert ins.target is not None and 0 <= ins.target <= n
            if ins.op in ("LOAD_FAST", "STORE_FAST", "LOAD_DEREF", "STORE_DEREF",
                          "DELETE_FAST", "MAKE_CELL", "LOAD_CLOSURE"):
                assert names[ins.arg] == ins.argval
        for e in info.exc_entries:
            assert 0 <= e.start < e.end <= n and 0 <= e.target < n
            assert info.instrs[e.target].offset in {i.offset for i in dis.get_instructions(code)}


def test_every_corpus_opcode_is_handled():
    used = set()
    for code in CODES:
        info = bytecode.decode(code)
        if code.co_flags & 0x2a0 or not code.co_flags & 0x1:
            continue   # generators and class bodies are never interpreted (native-only)
        used |= {i.op for i in info.instrs}
        assert not info.unsupported, (code.co_qualname, info.unsupported)
    missing = used - set(concrete.HANDLERS)
    assert not missing


def test_generator_code_is_native_only():
    gens = [c for c in CODES if c.co_flags & 0x20]
    assert gens
    for c in gens:
        assert bytecode.decode(c).native_only_reason


def test_superinstructions_and_kwnames_are_normalised():
    def f(a, b):
        c, d = a, b
        return g(c, key=d)

    def g(x, key):
        return x, key

    info = bytecode.decode(f.__code__)
    ops = [i.op for i in info.instrs]
    assert "KW_NAMES" not in ops and "CALL_KW" not in ops and "PRECALL" not in ops
    assert "LOAD_FAST_LOAD_FAST" not in ops and "STORE_FAST_STORE_FAST" not in ops
    call = next(i for i in info.instrs if i.op == "CALL")
    assert call.argval == ("key",) or call.flags & bytecode.KW_ON_STACK
    subs = [(i.offset, i.sub) for i in info.instrs]
    assert len(subs) == len(set(subs))


def _deep_call(trace):
    def call(func, args, kwargs):
        if (isinstance(func, types.FunctionType) and not func.__code__.co_flags & 0x2a0
                and not bytecode.decode(func.__code__).native_only_reason):
            fr = concrete.make_frame(func, args, kwargs, call=call)
            fr.trace = trace
            return concrete.execute(fr, fr.info.entry_index)
        if isinstance(func, types.MethodType) and isinstance(func.__func__, types.FunctionType):
            return call(func.__func__, [func.__self__, *args], kwargs)
        return func(*args, **kwargs)
    return call


def _expected_effect(ins, jumped):
    o = ins.orig
    arg = o.arg if o.opcode >= dis.HAVE_ARGUMENT else None
    if o.opname == "PRECALL":
        return 0   # 3.11: folded into CALL, which pops the whole call
    eff = dis.stack_effect(o.opcode, arg, jump=jumped)
    if o.opname == "CALL" and "PRECALL" in dis.opmap:
        eff += dis.stack_effect(dis.opmap["PRECALL"], arg)
    if ins.op == "FOR_ITER" and jumped and bytecode.PY >= (3, 12):
        eff -= 2   # END_FOR (3.12: pops 2; 3.13: END_FOR + POP_TOP) is skipped
    return eff


@pytest.mark.parametrize("fn,args,kwargs", CASES,
                         ids=[f"{i}-{f.__name__}" for i, (f, _, _) in enumerate(CASES)])
def test_stack_effects_equal_dis(fn, args, kwargs):
    import copy
    trace = []
    fr = concrete.make_frame(fn, copy.deepcopy(args), copy.deepcopy(kwargs),
                             call=_deep_call(trace))
    fr.trace = trace
    try:
        concrete.execute(fr, fr.info.entry_index)
    except Exception:  # noqa: BLE001 - corpus cases that raise on purpose
        pass
    # combine the halves of split instructions (same offset, consecutive)
    i = 0
    while i < len(trace):
        ins, before, after, r = trace[i]
        j = i + 1
        while (j < len(trace) and trace[j][0].offset == ins.offset and trace[j][0].sub
               and trace[j][0].orig is ins.orig):
            after = trace[j][2]
            r = trace[j][3]
            j += 1
        jumped = ins.op in bytecode.JUMP_OPS and ins.op != "JUMP" and r is not None and \
            isinstance(r, int) and r >= 0
        if ins.op in bytecode.JUMP_OPS:
            assert after - before == _expected_effect(ins, jumped), (ins, before, after)
        else:
            assert after - before == _expected_effect(ins, False), (ins, before, after)
        i = j


@pytest.mark.parametrize("fn,args,kwargs", CASES,
                         ids=[f"{i}-{f.__name__}" for i, (f, _, _) in enumerate(CASES)])
def test_symbolic_stack_effects_equal_dis(fn, args, kwargs):
    """The symbolic interpreter's handlers move the stack exactly as ``dis`` says, on every
    instruction it captures (until the frame returns or breaks)."""
    import copy

    from ember.compiler.guards import GuardBuilder
    from ember.compiler.symbolic import Capture, Unsupported, _Restart

    info = bytecode.decode(fn.__code__)
    if info.native_only_reason:
        return
    L = concrete.bind_arguments(fn, copy.deepcopy(args), copy.deepcopy(kwargs))
    cap = Capture(fn, info, L, 0, info.entry_index, GuardBuilder())
    cap.trace = []
    try:
        cap.run()
    except (Unsupported, _Restart):
        pass
    trace = cap.trace
    i = 0
    while i < len(trace):
        ins, before, after, r = trace[i]
        j = i + 1
        while (j < len(trace) and trace[j][0].sub and trace[j][0].orig is ins.orig):
            after, r = trace[j][2], trace[j][3]
            j += 1
        jumped = ins.op in bytecode.JUMP_OPS and ins.op != "JUMP" and isinstance(r, int) \
            and r >= 0
        assert after - before == _expected_effect(ins, jumped), (ins, before, after)
        i = j


def test_every_opcode_of_this_python_is_covered():
    assert bytecode.uncovered_opcodes() == []
    assert bytecode.HANDLED_OPS <= set(concrete.HANDLERS)
