"""Bytecode decoder: CPython 3.11, 3.12 and 3.13 code objects -> canonical instructions.

The compiler never writes bytecode; it only reads it, through :mod:`dis`, and turns the
version-specific instruction stream into one canonical form shared by the concrete stepper
(:mod:`ember.compiler.concrete`) and the symbolic interpreter (:mod:`ember.compiler.symbolic`).

Normalisations (see the compiler design, section 3):

- every instruction gets an *index* (its position in :attr:`CodeInfo.instrs`); jump targets are
  indices, never byte offsets;
- 3.13 superinstructions (``LOAD_FAST_LOAD_FAST``, ``STORE_FAST_LOAD_FAST``,
  ``STORE_FAST_STORE_FAST``) are split in two instructions at the same offset with ``sub`` 0 and 1;
- ``KW_NAMES`` (3.11/3.12) is folded into the following ``CALL`` (its ``argval`` is the keyword
  names tuple) and becomes a ``NOP``; ``PRECALL`` (3.11) is a ``NOP``; ``CALL_KW`` (3.13) is a
  ``CALL`` whose keyword names are on the stack (``flags & KW_ON_STACK``);
- ``LOAD_METHOD`` (3.11) and ``LOAD_ATTR`` with the method bit (3.12+) are ``LOAD_ATTR`` with
  ``flags & METHOD``; ``LOAD_GLOBAL`` carries ``flags & PUSH_NULL``;
- direction-specific jumps (3.11) become ``JUMP`` / ``POP_JUMP_IF_*``;
- a 3.13 ``COMPARE_OP`` with the "coerce to bool" bit is split into ``COMPARE_OP`` + ``TO_BOOL``
  so a tensor comparison and its ``bool()`` are separate steps;
- ``CALL_INTRINSIC_1`` (3.12+) becomes the named intrinsic where one exists
  (``UNARY_POSITIVE``, ``LIST_TO_TUPLE``, ...);
- ``FOR_ITER`` carries ``target`` = the index of the first instruction after the loop's
  ``END_FOR`` group (3.12: ``END_FOR``; 3.13: ``END_FOR``, ``POP_TOP``), so an exhausted
  iterator is popped and control continues there on every version.
"""

from __future__ import annotations

import dis
import sys
import types
from dataclasses import dataclass, field

__all__ = [
    "Instr",
    "CodeInfo",
    "ExcEntry",
    "decode",
    "PY",
    "METHOD",
    "PUSH_NULL",
    "KW_ON_STACK",
    "COERCE_BOOL",
    "SUPER_TWO_ARG",
    "BINARY_OPS",
    "SLOT_PLAIN",
    "SLOT_CELL",
    "SLOT_FREE",
    "UnsupportedBytecode",
    "uncovered_opcodes",
    "JUMP_OPS",
    "HANDLED_OPS",
]

PY = sys.version_info[:2]

# flag bits on canonical instructions
METHOD = 1          # LOAD_ATTR / LOAD_SUPER_ATTR: push a method pair
PUSH_NULL = 2       # LOAD_GLOBAL: also push NULL
KW_ON_STACK = 4     # CALL: keyword names tuple is on top of the stack (3.13 CALL_KW)
COERCE_BOOL = 8     # informational: COMPARE_OP was followed by a split TO_BOOL
SUPER_TWO_ARG = 16  # LOAD_SUPER_ATTR: explicit two-argument super()

SLOT_PLAIN, SLOT_CELL, SLOT_FREE = 0, 1, 2


class UnsupportedBytecode(Exception):
    """The code object uses an opcode this decoder does not model."""


@dataclass(frozen=True, slots=True)
class Instr:
    """One canonical instruction.

    ``op`` is the canonical opcode name, ``arg`` its small-int argument, ``argval`` the
    resolved value (name, constant, operator, kwnames tuple), ``offset``/``sub`` the position in
    the original code (``sub`` is 1 for the second half of a split instruction), ``index`` the
    position in :attr:`CodeInfo.instrs`, ``target`` the jump target index (or ``None``).
    ``orig`` is the original :class:`dis.Instruction` (shared by the two halves of a split).
    """

    op: str
    arg: int | None
    argval: object
    offset: int
    sub: int
    index: int
    target: int | None
    flags: int
    line: int | None
    positions: object
    orig: dis.Instruction

    def __repr__(self) -> str:
        t = f" ->{self.target}" if self.target is not None else ""
        orig = f" ({self.orig.opname})" if self.orig.opname != self.op else ""
        return (f"<{self.index:>4} @{self.offset}.{self.sub} line {self.line}: {self.op}"
                f"{orig} {self.argval!r}{t}>")


@dataclass(frozen=True, slots=True)
class ExcEntry:
    """An exception-table entry in indices: instructions ``start <= i < end`` are covered."""

    start: int
    end: int
    target: int
    depth: int
    lasti: bool


# BINARY_OP argument -> (symbol, in-place)
BINARY_OPS: list[tuple[str, bool]] = [
    ("+", False), ("&", False), ("//", False), ("<<", False), ("@", False), ("*", False),
    ("%", False), ("|", False), ("**", False), (">>", False), ("-", False), ("/", False),
    ("^", False),
    ("+", True), ("&", True), ("//", True), ("<<", True), ("@", True), ("*", True),
    ("%", True), ("|", True), ("**", True), (">>", True), ("-", True), ("/", True), ("^", True),
]

_JUMP_CANON = {
    "JUMP_FORWARD": "JUMP",
    "JUMP_BACKWARD": "JUMP",
    "JUMP_BACKWARD_NO_INTERRUPT": "JUMP",
    "JUMP": "JUMP",
    "JUMP_NO_INTERRUPT": "JUMP",
    "POP_JUMP_FORWARD_IF_FALSE": "POP_JUMP_IF_FALSE",
    "POP_JUMP_BACKWARD_IF_FALSE": "POP_JUMP_IF_FALSE",
    "POP_JUMP_FORWARD_IF_TRUE": "POP_JUMP_IF_TRUE",
    "POP_JUMP_BACKWARD_IF_TRUE": "POP_JUMP_IF_TRUE",
    "POP_JUMP_FORWARD_IF_NONE": "POP_JUMP_IF_NONE",
    "POP_JUMP_BACKWARD_IF_NONE": "POP_JUMP_IF_NONE",
    "POP_JUMP_FORWARD_IF_NOT_NONE": "POP_JUMP_IF_NOT_NONE",
    "POP_JUMP_BACKWARD_IF_NOT_NONE": "POP_JUMP_IF_NOT_NONE",
    "POP_JUMP_IF_FALSE": "POP_JUMP_IF_FALSE",
    "POP_JUMP_IF_TRUE": "POP_JUMP_IF_TRUE",
    "POP_JUMP_IF_NONE": "POP_JUMP_IF_NONE",
    "POP_JUMP_IF_NOT_NONE": "POP_JUMP_IF_NOT_NONE",
    "JUMP_IF_TRUE_OR_POP": "JUMP_IF_TRUE_OR_POP",
    "JUMP_IF_FALSE_OR_POP": "JUMP_IF_FALSE_OR_POP",
    "FOR_ITER": "FOR_ITER",
    "SEND": "SEND",
}

JUMP_OPS = frozenset({
    "JUMP", "POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "POP_JUMP_IF_NONE",
    "POP_JUMP_IF_NOT_NONE", "JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP", "FOR_ITER",
})

_INTRINSIC_1 = {
    "INTRINSIC_PRINT": "PRINT_EXPR",
    "INTRINSIC_IMPORT_STAR": "IMPORT_STAR",
    "INTRINSIC_STOPITERATION_ERROR": "STOPITERATION_ERROR",
    "INTRINSIC_ASYNC_GEN_WRAP": "ASYNC_GEN_WRAP",
    "INTRINSIC_UNARY_POSITIVE": "UNARY_POSITIVE",
    "INTRINSIC_LIST_TO_TUPLE": "LIST_TO_TUPLE",
}

# Canonical opcodes the concrete stepper executes (module/class-body and async opcodes are
# deliberately absent: such code objects are never interpreted).
HANDLED_OPS = frozenset({
    "NOP", "RESUME", "CACHE", "EXTENDED_ARG", "POP_TOP", "PUSH_NULL", "COPY", "SWAP",
    "END_FOR", "LOAD_CONST", "LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR",
    "LOAD_CLOSURE", "STORE_FAST", "DELETE_FAST", "LOAD_DEREF", "STORE_DEREF", "DELETE_DEREF",
    "MAKE_CELL", "COPY_FREE_VARS", "LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL",
    "LOAD_ATTR", "STORE_ATTR", "DELETE_ATTR", "LOAD_SUPER_ATTR", "BINARY_OP",
    "BINARY_SUBSCR", "STORE_SUBSCR", "DELETE_SUBSCR", "BINARY_SLICE", "STORE_SLICE",
    "UNARY_NEGATIVE", "UNARY_NOT", "UNARY_INVERT", "UNARY_POSITIVE", "TO_BOOL",
    "COMPARE_OP", "IS_OP", "CONTAINS_OP", "BUILD_TUPLE", "BUILD_LIST", "BUILD_SET",
    "BUILD_MAP", "BUILD_CONST_KEY_MAP", "BUILD_STRING", "BUILD_SLICE", "LIST_APPEND",
    "SET_ADD", "MAP_ADD", "LIST_EXTEND", "SET_UPDATE", "DICT_UPDATE", "DICT_MERGE",
    "LIST_TO_TUPLE", "UNPACK_SEQUENCE", "UNPACK_EX", "GET_ITER", "FOR_ITER", "JUMP",
    "POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE",
    "JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP", "CALL", "CALL_FUNCTION_EX",
    "MAKE_FUNCTION", "SET_FUNCTION_ATTRIBUTE", "RETURN_VALUE", "RETURN_CONST",
    "FORMAT_VALUE", "CONVERT_VALUE", "FORMAT_SIMPLE", "FORMAT_WITH_SPEC", "BEFORE_WITH",
    "WITH_EXCEPT_START", "PUSH_EXC_INFO", "POP_EXCEPT", "CHECK_EXC_MATCH", "RERAISE",
    "RAISE_VARARGS", "LOAD_ASSERTION_ERROR", "IMPORT_NAME", "IMPORT_FROM",
    "LOAD_BUILD_CLASS", "GET_LEN", "MATCH_CLASS", "MATCH_MAPPING", "MATCH_SEQUENCE",
    "MATCH_KEYS",
})

# Opcodes that make a code object "native-only" (generators, coroutines, class bodies...).
_NATIVE_OPS = {
    "RETURN_GENERATOR": "generator or coroutine",
    "YIELD_VALUE": "generator",
    "SEND": "generator delegation",
    "GET_AWAITABLE": "coroutine",
    "LOAD_NAME": "module or class body",
    "STORE_NAME": "module or class body",
    "IMPORT_STAR": "import *",
    "CHECK_EG_MATCH": "except*",
    "PREP_RERAISE_STAR": "except*",
    "BEFORE_ASYNC_WITH": "coroutine",
    "END_ASYNC_FOR": "coroutine",
    "GET_AITER": "coroutine",
    "GET_ANEXT": "coroutine",
    "ASYNC_GEN_WRAP": "coroutine",
    "GET_YIELD_FROM_ITER": "generator delegation",
    "END_SEND": "generator delegation",
    "CLEANUP_THROW": "generator delegation",
    "DELETE_NAME": "module or class body",
    "LOAD_CLASSDEREF": "module or class body",
    "SETUP_ANNOTATIONS": "module or class body",
    "LOAD_FROM_DICT_OR_DEREF": "module or class body",
    "LOAD_FROM_DICT_OR_GLOBALS": "module or class body",
    "LOAD_LOCALS": "module or class body",
    "PRINT_EXPR": "interactive statement",
    "INTERPRETER_EXIT": "interpreter-internal opcode",
    "RESERVED": "interpreter-internal opcode",
    "ENTER_EXECUTOR": "interpreter-internal opcode",
    "EXIT_INIT_CHECK": "interpreter-internal opcode",
}

# dis names that the decoder rewrites to another canonical name
_RENAMED = {"KW_NAMES": "NOP", "PRECALL": "NOP", "CALL_KW": "CALL", "LOAD_METHOD": "LOAD_ATTR",
            "LOAD_FAST_LOAD_FAST": "LOAD_FAST", "STORE_FAST_LOAD_FAST": "STORE_FAST",
            "STORE_FAST_STORE_FAST": "STORE_FAST", "CALL_INTRINSIC_1": "NOP",
            "CALL_INTRINSIC_2": "NOP"}


def uncovered_opcodes() -> list[str]:
    """Opcodes of the running Python that are neither executed by the concrete interpreter
    nor listed as making a frame native-only (empty on 3.11-3.13; a new Python version shows
    here first)."""
    from ember.compiler.concrete import HANDLERS

    out = []
    for name, op in dis.opmap.items():
        if op >= 256 or name.startswith("INSTRUMENTED"):
            continue
        canon = _JUMP_CANON.get(name, _RENAMED.get(name, name))
        if canon not in HANDLERS and name not in _NATIVE_OPS:
            out.append(name)
    return sorted(out)
_INTROSPECTION_GLOBALS = frozenset({"locals", "vars", "exec", "eval"})
_INTROSPECTION_ATTRS = frozenset({"_getframe", "currentframe", "settrace", "setprofile"})


@dataclass
class CodeInfo:
    """The decoded, version-normalised view of one code object (cached per code object)."""

    code: types.CodeType
    instrs: list[Instr]
    offset_to_index: dict[int, int]
    exc_entries: list[ExcEntry]
    slot_names: list[str]
    slot_kinds: list[int]
    entry_index: int                       # first instruction after the frame prologue
    loops: list[tuple[int, int]]           # (header index, back-edge index)
    native_only_reason: str | None
    unsupported: list[str] = field(default_factory=list)
    _live: list[frozenset[int]] | None = None
    # argument count of a call that binds positionally with no work (-1: never), and the
    # NULLs that fill the remaining slots
    simple_argcount: int = -1
    pad: tuple = ()

    @property
    def nlocals_plus(self) -> int:
        return len(self.slot_names)

    def handler_for(self, index: int) -> ExcEntry | None:
        """The exception-table entry covering instruction ``index``, or ``None``."""
        offset = self.instrs[index].offset
        for e in self.exc_entries:
            if self.instrs[e.start].offset <= offset < self._end_offset(e):
                return e
        return None

    def _end_offset(self, e: ExcEntry) -> int:
        return self.instrs[e.end].offset if e.end < len(self.instrs) else 1 << 60

    def in_loop(self, index: int) -> bool:
        """Whether instruction ``index`` lies inside a loop body (between a header and its
        back edge)."""
        return any(h <= index <= b for h, b in self.loops)

    def line_of(self, index: int) -> int | None:
        """Source line of instruction ``index`` (walks back over instructions without one)."""
        for i in range(index, -1, -1):
            ln = self.instrs[i].line
            if ln is not None:
                return ln
        return self.code.co_firstlineno

    def successors(self, index: int) -> list[int]:
        ins = self.instrs[index]
        op = ins.op
        if op in ("RETURN_VALUE", "RETURN_CONST", "RERAISE", "RAISE_VARARGS"):
            return []
        if op == "JUMP":
            return [ins.target]
        out = [index + 1] if index + 1 < len(self.instrs) else []
        if ins.target is not None:
            out.append(ins.target)
        return out

    def live_locals(self, index: int) -> frozenset[int]:
        """Local slots whose current value may be read at or after instruction ``index``
        (backward liveness over the control-flow graph, exception edges included)."""
        if self._live is None:
            self._live = _liveness(self)
        return self._live[index]


def _slot_layout(code: types.CodeType) -> tuple[list[str], list[int]]:
    names = list(code.co_varnames)
    kinds = [SLOT_PLAIN] * len(names)
    for c in code.co_cellvars:
        if c in code.co_varnames:
            kinds[names.index(c)] = SLOT_CELL
        else:
            names.append(c)
            kinds.append(SLOT_CELL)
    for fv in code.co_freevars:
        names.append(fv)
        kinds.append(SLOT_FREE)
    return names, kinds


_LOCAL_OPS = frozenset({
    "LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "STORE_FAST", "DELETE_FAST",
    "LOAD_CLOSURE", "LOAD_DEREF", "STORE_DEREF", "DELETE_DEREF", "MAKE_CELL",
})


def _decode_uncached(code: types.CodeType) -> CodeInfo:
    raw = list(dis.get_instructions(code))
    slot_names, slot_kinds = _slot_layout(code)
    out: list[dict] = []
    pending_kw: tuple | None = None
    unsupported: list[str] = []
    native_reason: str | None = None
    if code.co_flags & (0x20 | 0x80 | 0x100 | 0x200):
        native_reason = "generator or coroutine function"
    for ins in raw:
        name = ins.opname
        base = dict(op=name, arg=ins.arg, argval=ins.argval, offset=ins.offset, sub=0,
                    target=None, flags=0, line=_line(ins), positions=ins.positions, orig=ins)
        if name in _NATIVE_OPS and native_reason is None:
            native_reason = _NATIVE_OPS[name]
        if native_reason is None and (
                (name == "LOAD_GLOBAL" and ins.argval in _INTROSPECTION_GLOBALS) or
                (name in ("LOAD_ATTR", "LOAD_METHOD") and ins.argval in _INTROSPECTION_ATTRS)):
            native_reason = f"frame introspection (`{ins.argval}`)"
        if name == "KW_NAMES":
            kw = ins.argval
            if not isinstance(kw, tuple):
                kw = code.co_consts[ins.arg]
            pending_kw = kw
            base.update(op="NOP")
            out.append(base)
            continue
        if name == "PRECALL":
            base.update(op="NOP")
            out.append(base)
            continue
        if name == "CALL":
            base.update(argval=pending_kw or ())
            pending_kw = None
            out.append(base)
            continue
        if name == "CALL_KW":
            base.update(op="CALL", argval=None, flags=KW_ON_STACK)
            out.append(base)
            continue
        if name == "LOAD_METHOD":
            base.update(op="LOAD_ATTR", flags=METHOD)
            out.append(base)
            continue
        if name == "LOAD_ATTR":
            if PY >= (3, 12) and ins.arg & 1:
                base.update(flags=METHOD)
            out.append(base)
            continue
        if name == "LOAD_SUPER_ATTR":
            fl = (METHOD if ins.arg & 1 else 0) | (SUPER_TWO_ARG if ins.arg & 2 else 0)
            base.update(flags=fl)
            out.append(base)
            continue
        if name == "LOAD_GLOBAL":
            if ins.arg & 1:
                base.update(flags=PUSH_NULL)
            out.append(base)
            continue
        if name == "COMPARE_OP":
            opname = dis.cmp_op[ins.arg >> (5 if PY >= (3, 13) else 4 if PY >= (3, 12) else 0)]
            base.update(argval=opname)
            if PY >= (3, 13) and ins.arg & 16:
                base.update(flags=COERCE_BOOL)
                out.append(base)
                out.append(dict(base, op="TO_BOOL", arg=None, argval=None, sub=1, flags=0))
                continue
            out.append(base)
            continue
        if name in ("LOAD_FAST_LOAD_FAST", "STORE_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST"):
            a1, a2 = ins.arg >> 4, ins.arg & 15
            op1, op2 = name.split("_FAST_")[0] + "_FAST", name.split("_FAST_")[1]
            out.append(dict(base, op=op1, arg=a1, argval=slot_names[a1]))
            out.append(dict(base, op=op2, arg=a2, argval=slot_names[a2], sub=1))
            continue
        if name == "CALL_INTRINSIC_1":
            desc = dis._intrinsic_1_descs[ins.arg]
            base.update(op=_INTRINSIC_1.get(desc, desc))
            if desc == "INTRINSIC_IMPORT_STAR" and native_reason is None:
                native_reason = "import *"
            out.append(base)
            continue
        if name == "CALL_INTRINSIC_2":
            desc = dis._intrinsic_2_descs[ins.arg]
            base.update(op=desc)
            if native_reason is None and desc == "INTRINSIC_PREP_RERAISE_STAR":
                native_reason = "except*"
            out.append(base)
            continue
        if name in _JUMP_CANON:
            base.update(op=_JUMP_CANON[name])
            out.append(base)
            continue
        out.append(base)
    # indices
    offset_to_index: dict[int, int] = {}
    for i, d in enumerate(out):
        offset_to_index.setdefault(d["offset"], i)
    # jump targets
    for d in out:
        if d["op"] in JUMP_OPS or d["op"] == "SEND":
            t = offset_to_index[d["argval"]]
            if d["op"] == "FOR_ITER":
                if out[t]["op"] == "END_FOR":
                    t += 1
                    if PY >= (3, 13) and t < len(out) and out[t]["op"] == "POP_TOP":
                        t += 1
            d["target"] = t
    instrs = []
    for i, d in enumerate(out):
        instrs.append(Instr(index=i, **d))
        if d["op"] not in HANDLED_OPS and d["op"] not in unsupported:
            unsupported.append(d["op"])
    # local-slot layout check: the decoder relies on localsplus indexing
    for ins in instrs:
        if ins.op in _LOCAL_OPS and ins.arg is not None:
            if slot_names[ins.arg] != ins.argval:
                raise UnsupportedBytecode(
                    f"local slot layout mismatch in {code.co_qualname}: slot {ins.arg} is "
                    f"{slot_names[ins.arg]!r} but {ins.op} names {ins.argval!r}")
    exc_entries = []
    for e in dis.Bytecode(code).exception_entries:
        start = offset_to_index[e.start]
        end = offset_to_index.get(e.end, len(instrs))
        exc_entries.append(ExcEntry(start, end, offset_to_index[e.target], e.depth, e.lasti))
    entry = 0
    while entry < len(instrs) and instrs[entry].op in (
            "RESUME", "MAKE_CELL", "COPY_FREE_VARS", "NOP", "CACHE"):
        entry += 1
    loops = [(ins.target, ins.index) for ins in instrs
             if ins.op == "JUMP" and ins.target is not None and ins.target <= ins.index]
    simple = -1
    if not (code.co_flags & 0x0C or code.co_kwonlyargcount or code.co_cellvars
            or code.co_freevars):
        simple = code.co_argcount
    if unsupported and native_reason is None:
        native_reason = "unsupported opcode " + ", ".join(unsupported)
    return CodeInfo(code=code, instrs=instrs, offset_to_index=offset_to_index,
                    exc_entries=exc_entries, slot_names=slot_names, slot_kinds=slot_kinds,
                    entry_index=entry, loops=loops, native_only_reason=native_reason,
                    unsupported=unsupported, simple_argcount=simple,
                    pad=(None,) * 0 if simple < 0 else _pad(len(slot_names) - simple))


def _pad(n: int) -> tuple:
    from ember.compiler.concrete import NULL
    return (NULL,) * n


def _line(ins: dis.Instruction) -> int | None:
    pos = ins.positions
    if pos is not None and pos.lineno is not None:
        return pos.lineno
    ln = getattr(ins, "line_number", None)
    if ln is not None:
        return ln
    sl = ins.starts_line
    return sl if isinstance(sl, int) and not isinstance(sl, bool) else None


_READS = frozenset({"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "LOAD_CLOSURE",
                    "LOAD_DEREF", "MAKE_CELL", "DELETE_DEREF", "STORE_DEREF"})
_WRITES = frozenset({"STORE_FAST", "DELETE_FAST"})


def _liveness(info: CodeInfo) -> list[frozenset[int]]:
    n = len(info.instrs)
    # every cell/free slot is always live (cells are shared objects); so is the first
    # argument of a function using zero-argument super(), which reads it implicitly
    always = {i for i, k in enumerate(info.slot_kinds) if k != SLOT_PLAIN}
    if "__class__" in info.code.co_freevars and info.code.co_argcount:
        always.add(0)
    always = frozenset(always)
    succ = [info.successors(i) for i in range(n)]
    for e in info.exc_entries:
        for i in range(e.start, min(e.end, n)):
            succ[i] = succ[i] + [e.target]
    live_in: list[set[int]] = [set() for _ in range(n)]
    changed = True
    while changed:
        changed = False
        for i in range(n - 1, -1, -1):
            ins = info.instrs[i]
            out: set[int] = set()
            for s in succ[i]:
                if s < n:
                    out |= live_in[s]
            new = set(out)
            if ins.op in _WRITES:
                new.discard(ins.arg)
            if ins.op in _READS:
                new.add(ins.arg)
            if ins.op == "LOAD_FAST_AND_CLEAR":
                pass
            if new != live_in[i]:
                live_in[i] = new
                changed = True
    return [frozenset(s) | always for s in live_in]


_CACHE: dict[types.CodeType, CodeInfo] = {}


def decode(code: types.CodeType) -> CodeInfo:
    """Decode ``code`` (cached per code object)."""
    info = _CACHE.get(code)
    if info is None:
        info = _decode_uncached(code)
        _CACHE[code] = info
    return info
