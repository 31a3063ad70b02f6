"""Caches of compiled entries: one ``CompileContext`` per ``ember.compile`` call, one
``CodeCache`` per code object inside it, an MRU list of entries per bytecode offset.

NOTE [Entry lists]
Entries at one ``(code, offset)`` form a most-recently-used list: a hit moves the entry to
the front. Lists are replaced copy-on-write, so a lookup needs no lock; installing takes the
CodeCache's lock, which the driver also holds while it compiles, so two threads that miss at
the same place compile once (the second finds the first's entry when it re-checks). More
than ``config.recompile_limit`` entries at one place, or ``accumulated_recompile_limit`` in
the context, and ``install`` refuses: the caller runs that frame natively, with a warning
naming the limit and the last guard failure. An entry whose ID_MATCH referent dies is
dropped.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from types import CodeType

import ember.compiler.explain  # noqa: F401 - the module (the package exports a function too)
from ember.compiler.config import config
from ember.compiler.guards import GuardSet

__all__ = ["CompileContext", "CodeCache", "CacheEntry", "code_location"]


def code_location(code: CodeType) -> str:
    """``qualname (file.py:12)`` for messages."""
    name = getattr(code, "co_qualname", code.co_name)
    return f"{name} ({code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno})"


class CacheEntry:
    """One compiled entry: its guards, the function the driver runs, and facts for explain."""

    __slots__ = ("guards", "check", "fn", "info")

    def __init__(self, guards: GuardSet, fn: Callable, info: dict | None = None):
        self.guards = guards
        self.check = guards.check
        self.fn = fn
        self.info = info or {}

    def __repr__(self) -> str:
        return f"CacheEntry({len(self.guards)} guards)"


class CodeCache:
    """Compiled entries of one code object, keyed by bytecode offset (NOTE [Entry lists])."""

    def __init__(self, code: CodeType, ctx: CompileContext):
        self.code = code
        self.ctx = ctx
        self.entries: dict[int, list[CacheEntry]] = {}
        self.native_only: str | None = None
        self.lock = threading.RLock()
        self.frame_state: dict = {}     # per offset: last-seen input facts (automatic dynamic)
        self.info = None                # the decoded code, kept by the capture side

    @property
    def where(self) -> str:
        return code_location(self.code)

    def lookup(self, offset: int, L, G) -> CacheEntry | None:
        """The first entry at ``offset`` whose guards hold; moved to the front. None on miss."""
        lst = self.entries.get(offset)
        if not lst:
            return None
        for i, e in enumerate(lst):
            if e.check(L, G) == 0:
                if i:
                    self.entries[offset] = [e, *lst[:i], *lst[i + 1:]]
                return e
        return None

    def miss_reasons(self, offset: int, L, G) -> list[str]:
        """Why each entry at ``offset`` rejects ``(L, G)``, most recently used first."""
        return [e.guards.reason(L, G) or "guards hold" for e in self.entries.get(offset, ())]

    def install(self, offset: int, entry: CacheEntry, L=None, G=None) -> bool:
        """Add ``entry`` at the front of ``offset``'s list; False when a limit forbids it.

        With ``L``/``G`` (the values that missed), a recompile is reported with the first
        entry's failure reason (``EMBER_LOGS=recompiles``).
        """
        with self.lock:
            old = self.entries.get(offset, [])
            reason = None
            if old and L is not None:
                reason = old[0].guards.reason(L, G) or "no entry matched"
            limit = config.recompile_limit
            total = self.ctx.entry_count()
            if len(old) >= limit or total >= config.accumulated_recompile_limit:
                which = (f"config.recompile_limit ({limit})" if len(old) >= limit else
                         f"config.accumulated_recompile_limit "
                         f"({config.accumulated_recompile_limit})")
                self._limit_hit(offset, which, reason)
                return False
            if old:
                self.ctx.recompiles += 1
                _events().record_recompile(f"{self.where} at offset {offset}",
                                        reason or "no entry matched")
            self.entries[offset] = [entry, *old]
            entry.guards.on_dead(lambda: self._drop(offset, entry))
            self.ctx.compiles += 1
            return True

    def _drop(self, offset: int, entry: CacheEntry) -> None:
        with self.lock:
            lst = self.entries.get(offset, [])
            if any(e is entry for e in lst):
                self.entries[offset] = [e for e in lst if e is not entry]

    def _limit_hit(self, offset: int, which: str, reason: str | None) -> None:
        msg = (f"ember.compiler: {self.where} hit {which} at offset {offset}; running it "
               f"eagerly from now on. Last recompile reason: {reason or 'unknown'}. "
               f"hint: raise the limit, or mark the varying input dynamic / stop passing a "
               f"changing Python constant")
        if offset == 0:
            self.native_only = f"recompile limit: {which}"
        key = (self.code, offset)
        if key not in self.ctx.warned:
            self.ctx.warned.add(key)
            warnings.warn(msg, RuntimeWarning, stacklevel=4)
        _events().record_native(f"{self.where} at offset {offset}", f"{which} reached; last "
                             f"reason: {reason or 'unknown'}")

    def __len__(self) -> int:
        return sum(len(v) for v in self.entries.values())


class CompileContext:
    """State of one ``ember.compile(...)`` result: its options and its caches.

    Keeping caches per context means two compiled wrappers of the same function (say with
    different backends) never share entries or recompile budgets.
    """

    def __init__(self, backend="numpy", fullgraph: bool = False, dynamic: bool | None = None,
                 mode: str | None = None, options: dict | None = None):
        self.backend = backend
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.mode = mode
        self.options = dict(options or {})
        self.code_caches: dict[CodeType, CodeCache] = {}
        self.lock = threading.Lock()
        self.compiles = 0
        self.recompiles = 0
        self.warned: set = set()

    def code_cache(self, code: CodeType) -> CodeCache:
        """The CodeCache of ``code`` (created on first use)."""
        cc = self.code_caches.get(code)
        if cc is None:
            with self.lock:
                cc = self.code_caches.get(code)
                if cc is None:
                    cc = self.code_caches[code] = CodeCache(code, self)
        return cc

    def entry_count(self) -> int:
        return sum(len(cc) for cc in self.code_caches.values())

    def reset(self) -> None:
        """Forget every compiled entry."""
        with self.lock:
            self.code_caches.clear()
            self.compiles = self.recompiles = 0
            self.warned.clear()


def _events():
    import sys

    return sys.modules["ember.compiler.explain"]
