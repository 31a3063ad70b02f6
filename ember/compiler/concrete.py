"""Concrete interpreter: executes decoded bytecode (:mod:`ember.compiler.bytecode`) on real
values, with CPython's semantics on 3.11, 3.12 and 3.13.

Used by the driver to execute the instruction at a graph break (one step) and to finish a call
whose remaining code cannot be captured; :func:`run` runs a whole function (equal to calling it).

Frame state follows CPython's layout: ``L`` is the ``localsplus`` list (arguments and locals,
then cell-only names, then free variables; cell and free slots hold ``types.CellType``
objects) and ``S`` the value stack. Unbound slots hold :data:`NULL`, which is also the NULL
pushed by call sequences.

Exception handling follows the zero-cost exception table: when an instruction raises, the
innermost entry covering it gives the handler; the stack is popped to the entry's depth, the
offset is pushed when the entry says so, then the exception. The handler's ``PUSH_EXC_INFO``
runs the handler body inside a Python ``except`` clause for that exception, so
``sys.exc_info()``, bare ``raise`` and implicit exception chaining see the exception CPython
would, until the matching ``POP_EXCEPT``.

Length: one small handler per opcode, kept together as one table (Thunder's layout, without
its size); the file is long for that reason only.
"""

from __future__ import annotations

import builtins as _builtins
import operator
import sys
import types
from collections.abc import Mapping, Sequence

from ember.compiler.bytecode import (
    BINARY_OPS,
    KW_ON_STACK,
    METHOD,
    PUSH_NULL,
    PY,
    SLOT_CELL,
    SLOT_FREE,
    SUPER_TWO_ARG,
    CodeInfo,
    decode,
)

__all__ = ["NULL", "Frame", "run", "make_frame", "bind_arguments", "execute", "step",
           "Return", "StepResult"]


class _Null:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NULL"

    def __reduce__(self):
        return "NULL"


NULL = _Null()

_RETURN = -1
_ENTER_EXC = -2
_POP_EXC = -3

_BIN_FUNCS = {
    "+": operator.add, "&": operator.and_, "//": operator.floordiv, "<<": operator.lshift,
    "@": operator.matmul, "*": operator.mul, "%": operator.mod, "|": operator.or_,
    "**": operator.pow, ">>": operator.rshift, "-": operator.sub, "/": operator.truediv,
    "^": operator.xor,
}
_INPLACE_FUNCS = {
    "+": operator.iadd, "&": operator.iand, "//": operator.ifloordiv, "<<": operator.ilshift,
    "@": operator.imatmul, "*": operator.imul, "%": operator.imod, "|": operator.ior,
    "**": operator.ipow, ">>": operator.irshift, "-": operator.isub, "/": operator.itruediv,
    "^": operator.ixor,
}
BINARY_FUNCS = [(_INPLACE_FUNCS if inplace else _BIN_FUNCS)[sym] for sym, inplace in BINARY_OPS]
COMPARE_FUNCS = {"<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne,
                 ">": operator.gt, ">=": operator.ge}


def _default_call(func, args, kwargs):
    return func(*args, **kwargs)


class Return:
    """Step result: the frame returned ``value``."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


StepResult = int | Return


class Frame:
    """Concrete frame state: decoded code, ``L`` (localsplus), ``S`` (value stack), globals."""

    __slots__ = ("info", "L", "S", "g", "b", "fn", "call", "reraise", "trace", "retval",
                 "error_pc")

    def __init__(self, info: CodeInfo, L: list, g: dict, fn=None, call=None):
        self.info = info
        self.L = L
        self.S: list = []
        self.g = g
        b = g.get("__builtins__", _builtins)
        self.b = b.__dict__ if isinstance(b, types.ModuleType) else b
        self.fn = fn
        self.call = call or _default_call
        self.reraise = None
        self.trace = None
        self.retval = NULL
        self.error_pc = -1


# ---------------------------------------------------------------------------------------------
# argument binding

_BINDER_CODES: dict[types.CodeType, types.CodeType] = {}


def _binder_code(code: types.CodeType) -> types.CodeType:
    bc = _BINDER_CODES.get(code)
    if bc is not None:
        return bc
    npos = code.co_argcount
    nposonly = code.co_posonlyargcount
    nkw = code.co_kwonlyargcount
    names = [n if n.isidentifier() else f"_arg{i}" for i, n in enumerate(code.co_varnames)]
    params = []
    for i in range(npos):
        params.append(names[i])
        if nposonly and i == nposonly - 1:
            params.append("/")
    idx = npos + nkw
    star = names[idx] if code.co_flags & 0x04 else None
    if star is not None:
        params.append("*" + star)
    elif nkw:
        params.append("*")
    params.extend(names[npos:npos + nkw])
    if code.co_flags & 0x08:
        params.append("**" + names[idx + (1 if star is not None else 0)])
    nargs = npos + nkw + (1 if star is not None else 0) + (1 if code.co_flags & 0x08 else 0)
    argnames = [p.lstrip("*") for p in params if p not in ("/", "*")]
    # return values in localsplus order: positional, kw-only, *args, **kwargs
    order = names[:nargs]
    assert sorted(order) == sorted(argnames)
    src = (f"def binder({', '.join(params)}):\n"
           f"    return ({''.join(n + ', ' for n in order)})\n")
    ns: dict = {}
    exec(compile(src, code.co_filename, "exec"), ns)  # noqa: S102 - generated binder
    bc = ns["binder"].__code__.replace(co_name=code.co_name, co_qualname=code.co_qualname)
    _BINDER_CODES[code] = bc
    return bc


def bind_arguments(fn: types.FunctionType, args, kwargs) -> list:
    """Bind ``args``/``kwargs`` to ``fn``'s parameters with CPython's rules (errors included)
    and return the initial ``localsplus`` list with cells made and free variables copied."""
    code = fn.__code__
    info = decode(code)
    binder = types.FunctionType(_binder_code(code), {}, code.co_name, fn.__defaults__)
    if fn.__kwdefaults__:
        binder.__kwdefaults__ = fn.__kwdefaults__
    binder.__qualname__ = fn.__qualname__
    vals = binder(*args, **kwargs)
    n = len(info.slot_names)
    L = list(vals) + [NULL] * (n - len(vals))
    kinds = info.slot_kinds
    for i in range(n):
        if kinds[i] == SLOT_CELL:
            L[i] = types.CellType() if L[i] is NULL else types.CellType(L[i])
    if code.co_freevars:
        nfree = len(code.co_freevars)
        L[n - nfree:] = list(fn.__closure__)
    return L


def make_frame(fn: types.FunctionType, args=(), kwargs=None, call=None) -> Frame:
    """Bind arguments and build a :class:`Frame` positioned after the prologue."""
    info = decode(fn.__code__)
    L = bind_arguments(fn, args, kwargs or {})
    return Frame(info, L, fn.__globals__, fn, call)


def run(fn, *args, **kwargs):
    """Run ``fn(*args, **kwargs)`` entirely under the concrete interpreter."""
    if isinstance(fn, types.MethodType):
        return run(fn.__func__, fn.__self__, *args, **kwargs)
    fr = make_frame(fn, args, kwargs)
    if fr.info.native_only_reason and fr.info.unsupported:
        raise NotImplementedError(fr.info.native_only_reason)
    return execute(fr, fr.info.entry_index)


def execute(fr: Frame, pc: int):
    """Execute ``fr`` from instruction ``pc`` until it returns; returns the return value."""
    r = _run(fr, pc, 0)
    assert r == _RETURN
    v = fr.retval
    fr.retval = NULL
    return v


def step(fr: Frame, pc: int) -> StepResult:
    """Execute the single instruction ``pc`` (with exception-table unwinding, and handler
    bodies run to their ``POP_EXCEPT``); returns the next instruction index or :class:`Return`.

    Exceptions not handled in the frame propagate."""
    instrs = fr.info.instrs
    ins = instrs[pc]
    try:
        r = HANDLERS[ins.op](fr, ins)
    except BaseException as e:
        _restore_reraise(fr, e)
        return _unwind(fr, pc, e)
    return _after(fr, pc, r, 0)


def _after(fr: Frame, pc: int, r, level: int):
    if r is None:
        return pc + 1
    if r >= 0:
        return r
    if r == _RETURN:
        v = fr.retval
        fr.retval = NULL
        return Return(v)
    if r == _ENTER_EXC:
        r2 = _run_handler(fr, pc + 1, level + 1)
        if r2 == _RETURN:
            v = fr.retval
            fr.retval = NULL
            return Return(v)
        return r2
    return pc + 1


def _restore_reraise(fr: Frame, e: BaseException) -> None:
    rr = fr.reraise
    if rr is not None:
        fr.reraise = None
        if rr[0] is e:
            e.__context__ = rr[1]
            e.__suppress_context__ = rr[2]
            e.__traceback__ = rr[3]


def _unwind(fr: Frame, pc: int, e: BaseException) -> int:
    entry = fr.info.handler_for(pc)
    if entry is None:
        fr.error_pc = pc        # where the exception leaves the frame (for tracebacks)
        raise e
    S = fr.S
    del S[entry.depth:]
    if entry.lasti:
        S.append(fr.info.instrs[pc].offset)
    S.append(e)
    return entry.target


def _run_handler(fr: Frame, pc: int, level: int):
    exc = fr.S[-1]
    ctx, sup, tb = exc.__context__, exc.__suppress_context__, exc.__traceback__
    try:
        raise exc
    except BaseException:
        exc.__context__, exc.__suppress_context__, exc.__traceback__ = ctx, sup, tb
        return _run(fr, pc, level)


def _run(fr: Frame, pc: int, level: int):
    instrs = fr.info.instrs
    trace = fr.trace
    while True:
        ins = instrs[pc]
        if trace is not None:
            depth = len(fr.S)
        try:
            r = HANDLERS[ins.op](fr, ins)
        except BaseException as e:
            _restore_reraise(fr, e)
            pc = _unwind(fr, pc, e)
            continue
        if trace is not None:
            trace.append((ins, depth, len(fr.S), r))
        if r is None:
            pc += 1
        elif r >= 0:
            pc = r
        elif r == _RETURN:
            return _RETURN
        elif r == _ENTER_EXC:
            r2 = _run_handler(fr, pc + 1, level + 1)
            if r2 == _RETURN:
                return _RETURN
            pc = r2
        elif r == _POP_EXC:
            if level > 0:
                return pc + 1
            pc += 1


# ---------------------------------------------------------------------------------------------
# handlers: fn(frame, instr) -> None (next) | index (jump) | signal

HANDLERS: dict = {}


def _h(*names):
    def deco(f):
        for n in names:
            HANDLERS[n] = f
        return f
    return deco


@_h("NOP", "RESUME", "CACHE", "EXTENDED_ARG", "COPY_FREE_VARS")
def _nop(fr, ins):
    return None


@_h("POP_TOP")
def _pop_top(fr, ins):
    fr.S.pop()


@_h("PUSH_NULL")
def _push_null(fr, ins):
    fr.S.append(NULL)


@_h("COPY")
def _copy(fr, ins):
    fr.S.append(fr.S[-ins.arg])


@_h("SWAP")
def _swap(fr, ins):
    S = fr.S
    S[-1], S[-ins.arg] = S[-ins.arg], S[-1]


@_h("END_FOR")
def _end_for(fr, ins):
    fr.S.pop()
    if PY < (3, 13):
        fr.S.pop()


@_h("LOAD_CONST")
def _load_const(fr, ins):
    fr.S.append(ins.argval)


def _unbound_local(name):
    return UnboundLocalError(
        f"cannot access local variable '{name}' where it is not associated with a value")


@_h("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_CLOSURE")
def _load_fast(fr, ins):
    v = fr.L[ins.arg]
    if v is NULL:
        raise _unbound_local(ins.argval)
    fr.S.append(v)


@_h("LOAD_FAST_AND_CLEAR")
def _load_fast_and_clear(fr, ins):
    fr.S.append(fr.L[ins.arg])
    fr.L[ins.arg] = NULL


@_h("STORE_FAST")
def _store_fast(fr, ins):
    fr.L[ins.arg] = fr.S.pop()


@_h("DELETE_FAST")
def _delete_fast(fr, ins):
    if fr.L[ins.arg] is NULL:
        raise _unbound_local(ins.argval)
    fr.L[ins.arg] = NULL


def _deref_error(fr, ins):
    if fr.info.slot_kinds[ins.arg] == SLOT_FREE:
        return NameError(f"cannot access free variable '{ins.argval}' where it is not "
                         f"associated with a value in enclosing scope")
    return _unbound_local(ins.argval)


@_h("LOAD_DEREF")
def _load_deref(fr, ins):
    try:
        v = fr.L[ins.arg].cell_contents
    except ValueError:
        raise _deref_error(fr, ins) from None
    fr.S.append(v)


@_h("STORE_DEREF")
def _store_deref(fr, ins):
    fr.L[ins.arg].cell_contents = fr.S.pop()


@_h("DELETE_DEREF")
def _delete_deref(fr, ins):
    cell = fr.L[ins.arg]
    try:
        del cell.cell_contents
    except ValueError:
        raise _deref_error(fr, ins) from None


@_h("MAKE_CELL")
def _make_cell(fr, ins):
    v = fr.L[ins.arg]
    if not isinstance(v, types.CellType) or fr.info.slot_kinds[ins.arg] != SLOT_CELL:
        fr.L[ins.arg] = types.CellType() if v is NULL else types.CellType(v)


def load_global(fr, name):
    try:
        return fr.g[name]
    except KeyError:
        pass
    try:
        return fr.b[name]
    except KeyError:
        raise NameError(f"name '{name}' is not defined", name=name) from None


@_h("LOAD_GLOBAL")
def _load_global(fr, ins):
    v = load_global(fr, ins.argval)
    if ins.flags & PUSH_NULL:
        push_method_pair(fr.S, v)
    else:
        fr.S.append(v)


@_h("STORE_GLOBAL")
def _store_global(fr, ins):
    fr.g[ins.argval] = fr.S.pop()


@_h("DELETE_GLOBAL")
def _delete_global(fr, ins):
    try:
        del fr.g[ins.argval]
    except KeyError:
        raise NameError(f"name '{ins.argval}' is not defined", name=ins.argval) from None


def push_method_pair(S, bound):
    """Push an already-bound callable in the slot layout a method call expects."""
    if PY >= (3, 13):
        S.append(bound)
        S.append(NULL)
    else:
        S.append(NULL)
        S.append(bound)


@_h("LOAD_ATTR")
def _load_attr(fr, ins):
    S = fr.S
    obj = S.pop()
    v = getattr(obj, ins.argval)
    if ins.flags & METHOD:
        push_method_pair(S, v)
    else:
        S.append(v)


@_h("LOAD_SUPER_ATTR")
def _load_super_attr(fr, ins):
    S = fr.S
    self_ = S.pop()
    cls = S.pop()
    gsuper = S.pop()
    if gsuper is super or ins.flags & SUPER_TWO_ARG:
        sup = gsuper(cls, self_)
    else:
        sup = gsuper()
    v = getattr(sup, ins.argval)
    if ins.flags & METHOD:
        push_method_pair(S, v)
    else:
        S.append(v)


@_h("STORE_ATTR")
def _store_attr(fr, ins):
    S = fr.S
    obj = S.pop()
    v = S.pop()
    setattr(obj, ins.argval, v)


@_h("DELETE_ATTR")
def _delete_attr(fr, ins):
    delattr(fr.S.pop(), ins.argval)


@_h("BINARY_OP")
def _binary_op(fr, ins):
    S = fr.S
    b = S.pop()
    a = S.pop()
    S.append(BINARY_FUNCS[ins.arg](a, b))


@_h("BINARY_SUBSCR")
def _binary_subscr(fr, ins):
    S = fr.S
    k = S.pop()
    S[-1] = S[-1][k]


@_h("STORE_SUBSCR")
def _store_subscr(fr, ins):
    S = fr.S
    k = S.pop()
    c = S.pop()
    v = S.pop()
    c[k] = v


@_h("DELETE_SUBSCR")
def _delete_subscr(fr, ins):
    S = fr.S
    k = S.pop()
    c = S.pop()
    del c[k]


@_h("BINARY_SLICE")
def _binary_slice(fr, ins):
    S = fr.S
    e = S.pop()
    s = S.pop()
    S[-1] = S[-1][s:e]


@_h("STORE_SLICE")
def _store_slice(fr, ins):
    S = fr.S
    e = S.pop()
    s = S.pop()
    c = S.pop()
    v = S.pop()
    c[s:e] = v


@_h("UNARY_NEGATIVE")
def _neg(fr, ins):
    fr.S[-1] = -fr.S[-1]


@_h("UNARY_POSITIVE")
def _pos(fr, ins):
    fr.S[-1] = +fr.S[-1]


@_h("UNARY_INVERT")
def _inv(fr, ins):
    fr.S[-1] = ~fr.S[-1]


@_h("UNARY_NOT")
def _not(fr, ins):
    fr.S[-1] = not fr.S[-1]


@_h("TO_BOOL")
def _to_bool(fr, ins):
    fr.S[-1] = bool(fr.S[-1])


@_h("COMPARE_OP")
def _compare(fr, ins):
    S = fr.S
    b = S.pop()
    S[-1] = COMPARE_FUNCS[ins.argval](S[-1], b)


@_h("IS_OP")
def _is_op(fr, ins):
    S = fr.S
    b = S.pop()
    S[-1] = (S[-1] is not b) if ins.arg else (S[-1] is b)


@_h("CONTAINS_OP")
def _contains_op(fr, ins):
    S = fr.S
    b = S.pop()
    S[-1] = (S[-1] not in b) if ins.arg else (S[-1] in b)


def _popn(S, n):
    if not n:
        return []
    items = S[-n:]
    del S[-n:]
    return items


@_h("BUILD_TUPLE")
def _build_tuple(fr, ins):
    fr.S.append(tuple(_popn(fr.S, ins.arg)))


@_h("BUILD_LIST")
def _build_list(fr, ins):
    fr.S.append(_popn(fr.S, ins.arg))


@_h("BUILD_SET")
def _build_set(fr, ins):
    fr.S.append(set(_popn(fr.S, ins.arg)))


@_h("BUILD_MAP")
def _build_map(fr, ins):
    items = _popn(fr.S, 2 * ins.arg)
    d = {}
    for i in range(0, len(items), 2):
        d[items[i]] = items[i + 1]
    fr.S.append(d)


@_h("BUILD_CONST_KEY_MAP")
def _build_const_key_map(fr, ins):
    keys = fr.S.pop()
    vals = _popn(fr.S, ins.arg)
    fr.S.append(dict(zip(keys, vals)))


@_h("BUILD_STRING")
def _build_string(fr, ins):
    fr.S.append("".join(_popn(fr.S, ins.arg)))


@_h("BUILD_SLICE")
def _build_slice(fr, ins):
    fr.S.append(slice(*_popn(fr.S, ins.arg)))


@_h("LIST_APPEND")
def _list_append(fr, ins):
    v = fr.S.pop()
    fr.S[-ins.arg].append(v)


@_h("SET_ADD")
def _set_add(fr, ins):
    v = fr.S.pop()
    fr.S[-ins.arg].add(v)


@_h("MAP_ADD")
def _map_add(fr, ins):
    v = fr.S.pop()
    k = fr.S.pop()
    fr.S[-ins.arg][k] = v


def _is_iterable(v):
    try:
        iter(v)
    except TypeError:
        return False
    return True


@_h("LIST_EXTEND")
def _list_extend(fr, ins):
    v = fr.S.pop()
    if not _is_iterable(v):
        raise TypeError(f"Value after * must be an iterable, not {type(v).__name__}")
    fr.S[-ins.arg].extend(v)


@_h("SET_UPDATE")
def _set_update(fr, ins):
    v = fr.S.pop()
    fr.S[-ins.arg].update(v)


@_h("DICT_UPDATE")
def _dict_update(fr, ins):
    v = fr.S.pop()
    if not hasattr(v, "keys"):
        raise TypeError(f"'{type(v).__name__}' object is not a mapping")
    fr.S[-ins.arg].update(v)


def _function_str(f):
    q = getattr(f, "__qualname__", None) or type(f).__name__
    m = getattr(f, "__module__", None)
    if m and m not in ("builtins", "__main__") and isinstance(m, str):
        return f"{m}.{q}()"
    return f"{q}()"


@_h("DICT_MERGE")
def _dict_merge(fr, ins):
    S = fr.S
    v = S.pop()
    d = S[-ins.arg]
    func = S[-ins.arg - 2] if PY < (3, 13) else S[-ins.arg - 3]
    if not hasattr(v, "keys"):
        raise TypeError(f"{_function_str(func)} argument after ** must be a mapping, "
                        f"not {type(v).__name__}")
    for k in v.keys():
        if k in d:
            raise TypeError(f"{_function_str(func)} got multiple values for keyword "
                            f"argument '{k}'")
        d[k] = v[k]


@_h("LIST_TO_TUPLE")
def _list_to_tuple(fr, ins):
    fr.S[-1] = tuple(fr.S[-1])


def unpack(v, n):
    """``UNPACK_SEQUENCE``'s semantics: the ``n`` items of ``v`` (errors as CPython)."""
    if type(v) in (tuple, list) and len(v) == n:
        return list(v)
    try:
        it = iter(v)
    except TypeError:
        raise TypeError(f"cannot unpack non-iterable {type(v).__name__} object") from None
    out = []
    for x in it:
        if len(out) == n:
            raise ValueError(f"too many values to unpack (expected {n})")
        out.append(x)
    if len(out) < n:
        raise ValueError(f"not enough values to unpack (expected {n}, got {len(out)})")
    return out


@_h("UNPACK_SEQUENCE")
def _unpack_sequence(fr, ins):
    v = fr.S.pop()
    items = unpack(v, ins.arg)
    fr.S.extend(reversed(items))


@_h("UNPACK_EX")
def _unpack_ex(fr, ins):
    v = fr.S.pop()
    before, after = ins.arg & 0xFF, ins.arg >> 8
    try:
        it = iter(v)
    except TypeError:
        raise TypeError(f"cannot unpack non-iterable {type(v).__name__} object") from None
    items = list(it)
    if len(items) < before + after:
        raise ValueError(f"not enough values to unpack (expected at least {before + after}, "
                         f"got {len(items)})")
    mid = items[before:len(items) - after]
    res = items[:before] + [mid] + items[len(items) - after:]
    fr.S.extend(reversed(res))


@_h("GET_ITER")
def _get_iter(fr, ins):
    fr.S[-1] = iter(fr.S[-1])


@_h("FOR_ITER")
def _for_iter(fr, ins):
    it = fr.S[-1]
    try:
        v = next(it)
    except StopIteration:
        fr.S.pop()
        return ins.target
    fr.S.append(v)


@_h("JUMP")
def _jump(fr, ins):
    return ins.target


@_h("POP_JUMP_IF_FALSE")
def _pj_false(fr, ins):
    if not fr.S.pop():
        return ins.target


@_h("POP_JUMP_IF_TRUE")
def _pj_true(fr, ins):
    if fr.S.pop():
        return ins.target


@_h("POP_JUMP_IF_NONE")
def _pj_none(fr, ins):
    if fr.S.pop() is None:
        return ins.target


@_h("POP_JUMP_IF_NOT_NONE")
def _pj_not_none(fr, ins):
    if fr.S.pop() is not None:
        return ins.target


@_h("JUMP_IF_TRUE_OR_POP")
def _j_true_or_pop(fr, ins):
    if fr.S[-1]:
        return ins.target
    fr.S.pop()


@_h("JUMP_IF_FALSE_OR_POP")
def _j_false_or_pop(fr, ins):
    if not fr.S[-1]:
        return ins.target
    fr.S.pop()


def pop_call(S, ins):
    """Pop a ``CALL``'s operands: returns ``(callable, args, kwargs)``."""
    argc = ins.arg
    kwnames = S.pop() if ins.flags & KW_ON_STACK else ins.argval
    args = _popn(S, argc)
    b = S.pop()
    a = S.pop()
    if PY >= (3, 13):
        func = a
        if b is not NULL:
            args.insert(0, b)
    elif a is NULL:
        func = b
    else:
        func = a
        args.insert(0, b)
    if kwnames:
        nk = len(kwnames)
        kwargs = dict(zip(kwnames, args[len(args) - nk:]))
        del args[len(args) - nk:]
    else:
        kwargs = {}
    return func, args, kwargs


def zero_arg_super(fr):
    """``super()`` with no arguments, from the interpreted frame's ``__class__`` cell and its
    first argument (what CPython reads from the real frame)."""
    info = fr.info
    code = info.code
    if "__class__" not in code.co_freevars:
        raise RuntimeError("super(): __class__ cell not found")
    cls = fr.L[info.slot_names.index("__class__", len(code.co_varnames))].cell_contents
    if code.co_argcount == 0:
        raise RuntimeError("super(): no arguments")
    first = fr.L[0]
    if info.slot_kinds[0] == SLOT_CELL:
        first = first.cell_contents
    if first is NULL:
        raise RuntimeError("super(): arg[0] deleted")
    return super(cls, first)


@_h("CALL")
def _call(fr, ins):
    S = fr.S
    func, args, kwargs = pop_call(S, ins)
    if func is super and not args and not kwargs:
        S.append(zero_arg_super(fr))
        return
    S.append(fr.call(func, args, kwargs))


@_h("CALL_FUNCTION_EX")
def _call_function_ex(fr, ins):
    S = fr.S
    kwargs = S.pop() if ins.arg & 1 else {}
    args = S.pop()
    b = S.pop()
    a = S.pop()
    func = a if a is not NULL else b
    if not isinstance(args, tuple):
        if not _is_iterable(args):
            raise TypeError(f"{_function_str(func)} argument after * must be an iterable, "
                            f"not {type(args).__name__}")
        args = tuple(args)
    if func is super and not args and not kwargs:
        S.append(zero_arg_super(fr))
        return
    S.append(fr.call(func, list(args), dict(kwargs)))


def _annotations(v):
    if isinstance(v, tuple):
        return dict(zip(v[::2], v[1::2]))
    return v


def set_function_attribute(f, flag, v):
    if flag == 8:
        raise AssertionError("closure is set at creation")
    if flag == 4:
        f.__annotations__ = _annotations(v)
    elif flag == 2:
        f.__kwdefaults__ = v
    elif flag == 1:
        f.__defaults__ = v
    elif flag == 16:
        pass  # annotate function (3.14+)


def make_function(code, g, defaults=None, kwdefaults=None, annotations=None, closure=None):
    f = types.FunctionType(code, g, code.co_name, defaults, closure)
    f.__qualname__ = code.co_qualname
    if kwdefaults is not None:
        f.__kwdefaults__ = kwdefaults
    if annotations is not None:
        f.__annotations__ = _annotations(annotations)
    return f


@_h("MAKE_FUNCTION")
def _make_function(fr, ins):
    S = fr.S
    code = S.pop()
    fl = ins.arg or 0
    closure = S.pop() if fl & 8 else None
    ann = S.pop() if fl & 4 else None
    kwd = S.pop() if fl & 2 else None
    dfl = S.pop() if fl & 1 else None
    if closure is None and code.co_freevars:
        # 3.13: the closure arrives through SET_FUNCTION_ATTRIBUTE right after
        closure = tuple(types.CellType() for _ in code.co_freevars)
    S.append(make_function(code, fr.g, dfl, kwd, ann, closure))


@_h("SET_FUNCTION_ATTRIBUTE")
def _set_function_attribute(fr, ins):
    S = fr.S
    f = S.pop()
    v = S.pop()
    if ins.arg == 8:
        # a closure can only be given at creation; the function has not escaped yet
        f = make_function(f.__code__, f.__globals__, f.__defaults__, f.__kwdefaults__,
                          f.__annotations__ or None, v)
    else:
        set_function_attribute(f, ins.arg, v)
    S.append(f)


@_h("RETURN_VALUE")
def _return_value(fr, ins):
    fr.retval = fr.S.pop()
    return _RETURN


@_h("RETURN_CONST")
def _return_const(fr, ins):
    fr.retval = ins.argval
    return _RETURN


def format_value(v, conv, spec):
    if conv == 1:
        v = str(v)
    elif conv == 2:
        v = repr(v)
    elif conv == 3:
        v = ascii(v)
    if spec is None and type(v) is str:
        return v
    return format(v, spec or "")


@_h("FORMAT_VALUE")
def _format_value(fr, ins):
    S = fr.S
    spec = S.pop() if ins.arg & 4 else None
    v = S.pop()
    S.append(format_value(v, ins.arg & 3, spec))


@_h("CONVERT_VALUE")
def _convert_value(fr, ins):
    fr.S[-1] = format_value(fr.S[-1], ins.arg, None)


@_h("FORMAT_SIMPLE")
def _format_simple(fr, ins):
    v = fr.S[-1]
    if type(v) is not str:
        fr.S[-1] = format(v)


@_h("FORMAT_WITH_SPEC")
def _format_with_spec(fr, ins):
    S = fr.S
    spec = S.pop()
    S[-1] = format(S[-1], spec)


def _lookup_special(obj, name):
    for k in type(obj).__mro__:
        if name in k.__dict__:
            return k.__dict__[name]
    return NULL


@_h("BEFORE_WITH")
def _before_with(fr, ins):
    S = fr.S
    mgr = S.pop()
    enter = _lookup_special(mgr, "__enter__")
    if enter is NULL:
        msg = f"'{type(mgr).__name__}' object does not support the context manager protocol"
        raise TypeError(msg)
    ex = _lookup_special(mgr, "__exit__")
    if ex is NULL:
        msg = f"'{type(mgr).__name__}' object does not support the context manager protocol"
        if PY >= (3, 12):
            msg += " (missed __exit__ method)"
        raise TypeError(msg)
    bound_exit = ex.__get__(mgr, type(mgr)) if hasattr(ex, "__get__") else ex
    res = enter.__get__(mgr, type(mgr))() if hasattr(enter, "__get__") else enter(mgr)
    S.append(bound_exit)
    S.append(res)


@_h("WITH_EXCEPT_START")
def _with_except_start(fr, ins):
    S = fr.S
    exc = S[-1]
    ex = S[-4]
    S.append(ex(type(exc), exc, exc.__traceback__))


@_h("PUSH_EXC_INFO")
def _push_exc_info(fr, ins):
    S = fr.S
    exc = S.pop()
    S.append(sys.exc_info()[1])
    S.append(exc)
    return _ENTER_EXC


@_h("POP_EXCEPT")
def _pop_except(fr, ins):
    fr.S.pop()
    return _POP_EXC


def exc_match(exc, typ):
    types_ = typ if isinstance(typ, tuple) else (typ,)
    for t in types_:
        if not (isinstance(t, type) and issubclass(t, BaseException)):
            raise TypeError("catching classes that do not inherit from BaseException is not "
                            "allowed")
    mro = type(exc).__mro__
    return any(t in mro for t in types_)


@_h("CHECK_EXC_MATCH")
def _check_exc_match(fr, ins):
    S = fr.S
    typ = S.pop()
    S.append(exc_match(S[-1], typ))


def _reraise(fr, exc):
    fr.reraise = (exc, exc.__context__, exc.__suppress_context__, exc.__traceback__)
    raise exc


@_h("RERAISE")
def _reraise_h(fr, ins):
    exc = fr.S.pop()
    _reraise(fr, exc)


@_h("RAISE_VARARGS")
def _raise_varargs(fr, ins):
    S = fr.S
    n = ins.arg
    if n == 0:
        exc = sys.exc_info()[1]
        if exc is None:
            raise RuntimeError("No active exception to reraise")
        _reraise(fr, exc)
    if n == 1:
        raise S.pop()
    cause = S.pop()
    exc = S.pop()
    raise exc from cause


@_h("LOAD_ASSERTION_ERROR")
def _load_assertion_error(fr, ins):
    fr.S.append(AssertionError)


@_h("IMPORT_NAME")
def _import_name(fr, ins):
    S = fr.S
    fromlist = S.pop()
    level = S.pop()
    imp = fr.b["__import__"]
    S.append(imp(ins.argval, fr.g, None, fromlist, level))


@_h("IMPORT_FROM")
def _import_from(fr, ins):
    mod = fr.S[-1]
    name = ins.argval
    try:
        v = getattr(mod, name)
    except AttributeError:
        pkg = getattr(mod, "__name__", None)
        v = sys.modules.get(f"{pkg}.{name}") if isinstance(pkg, str) else None
        if v is None:
            raise ImportError(f"cannot import name '{name}' from '{pkg}'", name=pkg) from None
    fr.S.append(v)


@_h("LOAD_BUILD_CLASS")
def _load_build_class(fr, ins):
    fr.S.append(fr.b["__build_class__"])


@_h("GET_LEN")
def _get_len(fr, ins):
    fr.S.append(len(fr.S[-1]))


@_h("MATCH_SEQUENCE")
def _match_sequence(fr, ins):
    v = fr.S[-1]
    fr.S.append(isinstance(v, Sequence) and not isinstance(v, (str, bytes, bytearray)))


@_h("MATCH_MAPPING")
def _match_mapping(fr, ins):
    fr.S.append(isinstance(fr.S[-1], Mapping))


@_h("MATCH_KEYS")
def _match_keys(fr, ins):
    S = fr.S
    keys = S[-1]
    subj = S[-2]
    vals = []
    for k in keys:
        if k not in subj:
            S.append(None)
            return
        vals.append(subj[k])
    S.append(tuple(vals))


_MATCH_SELF = (bool, bytearray, bytes, dict, float, frozenset, int, list, set, str, tuple)


@_h("MATCH_CLASS")
def _match_class(fr, ins):
    S = fr.S
    names = S.pop()
    cls = S.pop()
    subj = S.pop()
    if not isinstance(cls, type):
        raise TypeError("called match pattern must be a class")
    if not isinstance(subj, cls):
        S.append(None)
        return
    out = []
    npos = ins.arg
    if npos:
        margs = getattr(cls, "__match_args__", NULL)
        if margs is NULL:
            if any(c in _MATCH_SELF for c in cls.__mro__) and npos == 1:
                out.append(subj)
                margs = ()
            else:
                raise TypeError(f"{cls.__name__}() accepts 0 positional sub-patterns "
                                f"({npos} given)")
        else:
            if len(margs) < npos:
                raise TypeError(f"{cls.__name__}() accepts {len(margs)} positional "
                                f"sub-pattern{'s' if len(margs) != 1 else ''} ({npos} given)")
            for name in margs[:npos]:
                if not hasattr(subj, name):
                    S.append(None)
                    return
                out.append(getattr(subj, name))
    for name in names:
        if not hasattr(subj, name):
            S.append(None)
            return
        out.append(getattr(subj, name))
    S.append(tuple(out))
