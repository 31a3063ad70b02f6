"""``scan``: list what a checkpoint's pickles would import and run, without running anything.

Every pickle in the file (each ``*.pkl`` record of a zip checkpoint, the five pickles of a
legacy checkpoint, or the pickles of a plain pickle file) is walked opcode by opcode with
``pickletools.genops`` over a bounded reader. GLOBAL and INST names are read from the opcode
arguments; STACK_GLOBAL names are recovered when the two strings it pops were pushed as
constants, and reported as ``<computed>`` otherwise. The verdict is the weights-only rule: safe
iff every opcode is one the weights-only unpickler supports and every global is allowlisted.
"""

from __future__ import annotations

import io
import os
import pickletools
from dataclasses import dataclass, field

from ember.serialization._common import CheckpointError, user_allowed_globals
from ember.serialization._rebuild import blocked_reason, is_default_allowed, normalize
from ember.serialization._unpickler import SUPPORTED_OPCODES
from ember.serialization._zip import ZipReader, is_zipfile

__all__ = ["scan", "ScanResult", "PickleScan", "GlobalRef"]

# Opcodes that call, import or hand control to Python code while unpickling.
CODE_OPCODES = frozenset(["REDUCE", "BUILD", "INST", "OBJ", "NEWOBJ", "NEWOBJ_EX", "GLOBAL",
                          "STACK_GLOBAL", "EXT1", "EXT2", "EXT4", "PERSID", "BINPERSID"])
_STRING_OPS = frozenset(["SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE",
                         "SHORT_BINSTRING", "BINSTRING", "STRING"])
_MAX_LEGACY_PICKLES = 5
_MAX_PLAIN_PICKLES = 64


@dataclass(frozen=True)
class GlobalRef:
    """One global a pickle would import: its name, where, how, and the weights-only verdict.

    Example:
        >>> import argparse, os, tempfile, ember.serialization as es
        >>> with tempfile.TemporaryDirectory() as d:
        ...     path = os.path.join(d, "ckpt.pt")
        ...     es.save(argparse.Namespace(lr=0.5), path)
        ...     refs = es.scan(path).pickles[0].globals
        >>> [(r.name, r.status) for r in refs]
        [('argparse.Namespace', 'refused')]
    """

    name: str
    position: int
    opcode: str
    status: str  # "allowed", "allowed (user)", "refused", "blocked", "computed"

    @property
    def safe(self) -> bool:
        return self.status.startswith("allowed")


@dataclass
class PickleScan:
    """The findings for one pickle stream inside the file.

    Example:
        >>> import os, tempfile, ember.serialization as es
        >>> with tempfile.TemporaryDirectory() as d:
        ...     path = os.path.join(d, "w.pt")
        ...     es.save({"w": ember.ones(2)}, path)
        ...     pickle_scan = es.scan(path).pickles[0]
        >>> pickle_scan.record, pickle_scan.safe, pickle_scan.unsupported_opcodes
        ('w/data.pkl', True, [])
    """

    record: str
    globals: list[GlobalRef] = field(default_factory=list)
    code_opcodes: list[tuple[int, str]] = field(default_factory=list)
    unsupported_opcodes: list[tuple[int, str]] = field(default_factory=list)
    error: str | None = None

    @property
    def safe(self) -> bool:
        return (self.error is None and not self.unsupported_opcodes
                and all(g.safe for g in self.globals))


@dataclass
class ScanResult:
    """What ``scan`` found in one file. ``safe`` is the weights-only verdict.

    Example:
        >>> import argparse, os, tempfile, ember.serialization as es
        >>> with tempfile.TemporaryDirectory() as d:
        ...     path = os.path.join(d, "ckpt.pt")
        ...     es.save(argparse.Namespace(lr=0.5), path)
        ...     result = es.scan(path)
        >>> result.format, result.safe, result.unsafe_globals
        ('zip checkpoint', False, ['argparse.Namespace'])
    """

    path: str
    format: str
    pickles: list[PickleScan] = field(default_factory=list)
    error: str | None = None

    @property
    def globals(self) -> list[str]:
        return sorted({g.name for p in self.pickles for g in p.globals})

    @property
    def unsafe_globals(self) -> list[str]:
        return sorted({g.name for p in self.pickles for g in p.globals if not g.safe})

    @property
    def safe(self) -> bool:
        return self.error is None and all(p.safe for p in self.pickles)

    def __str__(self) -> str:
        verdict = "SAFE under weights_only" if self.safe else "UNSAFE (refused by weights_only)"
        lines = [f"{self.path}: {self.format}: {verdict}"]
        if self.error:
            lines.append(f"  error: {self.error}")
        for p in self.pickles:
            counts: dict[str, int] = {}
            for _, op in p.code_opcodes:
                counts[op] = counts.get(op, 0) + 1
            lines.append(f"  {p.record}: " + (", ".join(f"{op} x{n}" for op, n in
                                                         sorted(counts.items())) or "no code"))
            for g in p.globals:
                lines.append(f"    {g.opcode} {g.name} @ {g.position}: {g.status}")
            for pos, op in p.unsupported_opcodes:
                lines.append(f"    unsupported opcode {op} @ {pos}")
            if p.error:
                lines.append(f"    error: {p.error}")
        return "\n".join(lines)


def _ref(module: str, name: str, pos: int, opcode: str) -> GlobalRef:
    module, name = normalize(module, name)
    full = f"{module}.{name}"
    if blocked_reason(module, name):
        status = "blocked"
    elif is_default_allowed(full):
        status = "allowed"
    elif full in user_allowed_globals():
        status = "allowed (user)"
    else:
        status = "refused"
    return GlobalRef(full, pos, opcode, status)


class _Bounded(io.RawIOBase):
    """A reader over bytes that refuses reads past the end (genops never over-allocates)."""

    def __init__(self, data: bytes, start: int = 0):
        self._data, self._pos = data, start

    def tell(self) -> int:
        return self._pos

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            n = len(self._data) - self._pos
        if n > len(self._data) - self._pos:
            raise ValueError("pickle data was truncated")
        out = self._data[self._pos: self._pos + n]
        self._pos += n
        return out

    def readline(self, size: int = -1) -> bytes:
        end = self._data.find(b"\n", self._pos)
        end = len(self._data) if end < 0 else end + 1
        out = self._data[self._pos: end]
        self._pos = end
        return out


def _scan_pickle(record: str, reader: _Bounded) -> PickleScan:
    out = PickleScan(record)
    recent: list = []          # values of recent pushes (str or None when unknown)
    memo: dict = {}
    try:
        for op, arg, pos in pickletools.genops(reader):
            name = op.name
            if op.code.encode("latin-1")[0] not in SUPPORTED_OPCODES:
                out.unsupported_opcodes.append((pos, name))
            if name in CODE_OPCODES:
                out.code_opcodes.append((pos, name))
            _track(out, name, arg, pos, recent, memo)
            if name == "STOP":
                break
    except Exception as e:  # genops raises ValueError and friends on malformed data
        out.error = f"malformed pickle ({type(e).__name__}: {e})"
    return out


def _track(out: PickleScan, name: str, arg, pos: int, recent: list, memo: dict) -> None:
    if name in ("GLOBAL", "INST"):
        module, _, attr = str(arg).partition(" ")
        out.globals.append(_ref(module, attr, pos, name))
        recent.append(None)
    elif name == "STACK_GLOBAL":
        module, attr = (recent[-2], recent[-1]) if len(recent) >= 2 else (None, None)
        if isinstance(module, str) and isinstance(attr, str):
            out.globals.append(_ref(module, attr, pos, name))
        else:
            out.globals.append(GlobalRef("<computed>", pos, name, "computed"))
        recent.append(None)
    elif name in _STRING_OPS:
        recent.append(arg if isinstance(arg, str) else None)
    elif name == "MEMOIZE":
        memo[len(memo)] = recent[-1] if recent else None
    elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
        memo[arg] = recent[-1] if recent else None
    elif name in ("GET", "BINGET", "LONG_BINGET"):
        recent.append(memo.get(arg))
    elif name not in ("FRAME", "PROTO", "MARK"):
        recent.append(None)
    del recent[:-2]


def _scan_stream(result: ScanResult, data: bytes, limit: int, label: str) -> None:
    reader = _Bounded(data)
    for i in range(limit):
        if reader.tell() >= len(data):
            break
        found = _scan_pickle(f"{label}[{i}]", reader)
        result.pickles.append(found)
        if found.error:
            break


def _read_all(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def scan(path) -> ScanResult:
    """Scan a checkpoint (zip, legacy, plain pickle or safetensors) without executing it.

    Args:
        path: the file to scan.

    Returns:
        A ``ScanResult``: every global each pickle would import (with its weights-only
        verdict), every opcode that could run code, opcodes the weights-only unpickler
        refuses, and ``safe``.

    Example:
        >>> import ember, ember.serialization as es, tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "w.pt"); es.save({"w": ember.ones(2)}, p)
        >>> es.scan(p).safe
        True
    """
    path = os.fspath(path)
    with open(path, "rb") as fh:
        head = fh.read(8)
        if is_zipfile(head):
            return _scan_zip(path, fh)
    data = _read_all(path)
    if not data:
        return ScanResult(path, "empty file", error="the file is empty")
    if _looks_like_safetensors(data):
        return ScanResult(path, "safetensors (no pickle)")
    legacy = data[:3] == b"\x80\x02\x8a"
    result = ScanResult(path, "legacy checkpoint" if legacy else "pickle")
    _scan_stream(result, data, _MAX_LEGACY_PICKLES if legacy else _MAX_PLAIN_PICKLES,
                 "legacy" if legacy else "pickle")
    if not legacy and result.pickles and result.pickles[-1].error and len(result.pickles) > 1:
        result.pickles.pop()  # trailing non-pickle bytes after complete pickles
    return result


def _scan_zip(path: str, fh) -> ScanResult:
    result = ScanResult(path, "zip checkpoint")
    try:
        reader = ZipReader(fh)
        for name in sorted(n for n in reader.members if n.endswith(".pkl")):
            result.pickles.append(_scan_pickle(name, _Bounded(reader.read(name))))
    except CheckpointError as e:
        result.error = str(e)
    return result


def _looks_like_safetensors(data: bytes) -> bool:
    if len(data) < 10:
        return False
    n = int.from_bytes(data[:8], "little")
    return 2 <= n <= len(data) - 8 and data[8:9] == b"{"
