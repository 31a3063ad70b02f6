"""``ProcessGroup``: the interface every backend engine implements, ``Work`` and ``ReduceOp``.

A backend moves bytes between the ranks of one group: its methods take C-contiguous arrays
(NumPy on CPU; a GPU engine would take its own array type), ranks local to the group, and run
synchronously. The front end (``ember.distributed.c10d``) turns tensors into such arrays, checks
arguments, and runs ``async_op=True`` calls on the group's communication thread so that the
engines need no asynchrony of their own (an engine with stream-ordered collectives, such as a
future ``"nccl"``, overrides ``submit``). Calls on one group run in the order they were made.
"""

from __future__ import annotations

import enum
import queue
import threading
from collections.abc import Callable
from datetime import timedelta

import numpy as np

from ember.distributed.errors import DistBackendError

__all__ = ["ReduceOp", "Work", "PostedWork", "Future", "ProcessGroup", "reduce_into",
           "REDUCE_UFUNCS"]


class ReduceOp(enum.Enum):
    """Reduction of ``all_reduce``/``reduce``/``reduce_scatter`` (``torch.distributed.ReduceOp``).

    Example:
        >>> from ember.distributed import ReduceOp
        >>> ReduceOp.SUM, ReduceOp.AVG.name
        (<RedOpType.SUM: 0>, 'AVG')
    """

    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7

    def __repr__(self) -> str:
        return f"<RedOpType.{self.name}: {self.value}>"


ReduceOp.RedOpType = ReduceOp  # torch spells the enum ReduceOp.RedOpType too

REDUCE_UFUNCS = {ReduceOp.SUM: np.add, ReduceOp.AVG: np.add, ReduceOp.PRODUCT: np.multiply,
                 ReduceOp.MIN: np.minimum, ReduceOp.MAX: np.maximum,
                 ReduceOp.BAND: np.bitwise_and, ReduceOp.BOR: np.bitwise_or,
                 ReduceOp.BXOR: np.bitwise_xor}


def reduce_into(out: np.ndarray, parts: list[np.ndarray], op: ReduceOp, size: int) -> None:
    """``out = parts[0] op parts[1] op ...`` in rank order (the same result on every rank),
    then the division of ``AVG`` by ``size``. ``out`` may be one of ``parts``' memory only if
    it is ``parts[0]``."""
    ufunc = REDUCE_UFUNCS[op]
    if len(parts) == 1:
        if out is not parts[0]:
            np.copyto(out, parts[0])
    else:
        ufunc(parts[0], parts[1], out=out)
        for p in parts[2:]:
            ufunc(out, p, out=out)
    if op is ReduceOp.AVG:
        if out.dtype == np.bool_:
            raise TypeError("ReduceOp.AVG is not defined for bool tensors")
        np.divide(out, size, out=out, casting="unsafe")


class Future:
    """The result of an asynchronous call (``torch.futures.Future``'s core): ``wait``,
    ``value``, ``done``, ``then``."""

    def __init__(self):
        self._event = threading.Event()
        self._value = None
        self._exc: BaseException | None = None
        self._callbacks: list[Callable] = []
        self._lock = threading.Lock()

    def set_result(self, value) -> None:
        self._finish(value, None)

    def set_exception(self, exc: BaseException) -> None:
        self._finish(None, exc)

    def _finish(self, value, exc) -> None:
        with self._lock:
            self._value, self._exc = value, exc
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(self)

    def done(self) -> bool:
        """Whether the result (or an error) is there."""
        return self._event.is_set()

    def wait(self):
        """Block until done; return the value or raise the error."""
        self._event.wait()
        if self._exc is not None:
            raise self._exc
        return self._value

    def value(self):
        """The value of a finished future (raises its error)."""
        return self.wait()

    def then(self, callback: Callable) -> Future:
        """A future holding ``callback(self)``, run when this one finishes."""
        nxt = Future()

        def run(fut):
            try:
                nxt.set_result(callback(fut))
            except BaseException as e:  # noqa: BLE001 - handed to the waiter
                nxt.set_exception(e)

        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(run)
                return nxt
        run(self)
        return nxt


class Work:
    """A handle on a collective started with ``async_op=True`` (``torch.distributed.Work``).

    ``wait()`` blocks until the collective has finished on this rank (and raises its error,
    such as a ``DistBackendError``); ``is_completed()`` says whether it has, without blocking.
    """

    def __init__(self, result=None):
        self._future = Future()
        self._result = [] if result is None else \
            list(result) if isinstance(result, (list, tuple)) else [result]

    def _done(self, exc: BaseException | None = None) -> None:
        if exc is None:
            self._future.set_result(self._result)
        else:
            self._future.set_exception(exc)

    def wait(self, timeout: timedelta | None = None) -> bool:
        """Block until the collective finished; returns True or raises its error.

        With a ``timeout`` (a ``timedelta``; zero or None: no limit), a collective still
        running after it raises ``DistBackendError("Operation timed out! ...")`` (torch's
        message; the collective itself goes on, bounded by the group's timeout)."""
        secs = timeout.total_seconds() if isinstance(timeout, timedelta) else timeout
        if secs and not self._future._event.wait(secs):
            raise DistBackendError(f"Operation timed out! The work did not finish within "
                                   f"{secs:g}s")
        self._future.wait()
        return True

    def is_completed(self) -> bool:
        """Whether the collective finished (successfully or not)."""
        return self._future.done()

    def is_success(self) -> bool:
        """Whether it finished without an error."""
        return self._future.done() and self._future._exc is None

    def exception(self) -> BaseException | None:
        """The error it finished with, if any."""
        return self._future._exc

    def result(self) -> list:
        """The tensors the collective wrote (after ``wait``)."""
        self.wait()
        return self._result

    def get_future(self) -> Future:
        """A ``Future`` completed with the list of output tensors."""
        return self._future


class PostedWork(Work):
    """The ``Work`` of a send or receive the engine posted at once (``start_p2p``): waiting
    and ``is_completed`` drive the engine's request; ``finish(source)`` runs once, when it
    completes."""

    def __init__(self, handle, result, finish: Callable[[int], None] | None = None):
        super().__init__(result)
        self._handle = handle
        self._finish = finish
        self._lock_p2p = threading.Lock()
        self._future = _DrivenFuture(self)  # get_future().wait() drives the request too

    def _settle(self, source: int) -> None:
        if self._finish is not None:
            self._finish(source)
        self._done()

    def wait(self, timeout: timedelta | None = None) -> bool:
        secs = timeout.total_seconds() if isinstance(timeout, timedelta) else timeout
        with self._lock_p2p:
            if not self._future.done():
                try:
                    source = self._handle.wait(secs or None)
                except TimeoutError as e:
                    raise DistBackendError(f"Operation timed out! {e}") from None
                except BaseException as e:  # noqa: BLE001 - the work keeps its error
                    self._done(e)
                    raise
                self._settle(source)
        return super().wait()

    def is_completed(self) -> bool:
        with self._lock_p2p:
            if not self._future.done() and self._handle.test():
                self._settle(self._handle.source)
        return self._future.done()


class _DrivenFuture(Future):
    """A ``PostedWork``'s future: nothing else progresses the request, so waiting on the
    future waits on the work (callbacks of ``then`` run once someone has waited or
    polled ``is_completed``)."""

    def __init__(self, work: PostedWork):
        super().__init__()
        self._work = work

    def wait(self):
        if not self.done():
            self._work.wait()
        return super().wait()


class _DoneWork(Work):
    def __init__(self, result=None):
        super().__init__(result)
        self._done()


class ProcessGroup:
    """Base of the backend engines: one group of ranks and its collectives.

    Subclasses implement the methods below on C-contiguous arrays (``flat`` = 1-d, the
    per-rank layout in rank order); ranks are group ranks. Everything runs synchronously; the
    base class provides ordered asynchronous execution (``submit``) on one thread per group.

    Attributes:
        backend_name: ``"shm"``, ``"mpi"``...
        ranks: the global ranks of the members, in group-rank order.
    """

    backend_name = "undefined"
    abort_after_report = False  # abort() before the traceback is printed (it returns)

    def __init__(self, rank: int, size: int, ranks: list[int], timeout: float):
        self._rank = rank
        self._size = size
        self.ranks = list(ranks)
        self.timeout = timeout
        self._queue: queue.SimpleQueue | None = None
        self._pending = 0
        self._lock = threading.Lock()
        self._exec = threading.Lock()  # one call in the engine at a time
        self.seq = 0  # collectives issued on this group (DETAIL checks and error messages)

    def rank(self) -> int:
        """This process's rank in the group."""
        return self._rank

    def size(self) -> int:
        """Number of ranks in the group."""
        return self._size

    def name(self) -> str:
        return self.backend_name

    # ---- asynchronous execution -------------------------------------------------------------
    def submit(self, fn: Callable[[], None], work: Work | None) -> Work | None:
        """Run ``fn`` after every call submitted before it; with a ``work``, return at once
        and finish ``work`` when ``fn`` has run, else run it here (or wait for it)."""
        with self._lock:
            inline = work is None and self._pending == 0
            if not inline:
                self._pending += 1
                if self._queue is None:
                    self._queue = queue.SimpleQueue()
                    threading.Thread(target=self._loop, daemon=True,
                                     name=f"ember-{self.backend_name}-comm").start()
        if inline:
            with self._exec:
                fn()
            return None
        own = work if work is not None else Work()
        self._queue.put((fn, own))
        if work is None:
            own.wait()
            return None
        return own

    def _loop(self) -> None:
        q = self._queue
        while True:
            fn, work = q.get()
            if fn is None:
                return
            try:
                with self._exec:
                    fn()
                exc = None
            except BaseException as e:  # noqa: BLE001 - handed to the waiter
                exc = e
            with self._lock:
                self._pending -= 1
            work._done(exc)

    def shutdown(self) -> None:
        """Stop the communication thread and release the engine's resources."""
        if self._queue is not None:
            self._queue.put((None, None))
            self._queue = None

    # ---- the engine's collectives (group ranks, contiguous arrays, synchronous) ------------
    def allreduce(self, arr: np.ndarray, op: ReduceOp) -> None:
        raise NotImplementedError

    def broadcast(self, arr: np.ndarray, root: int) -> None:
        raise NotImplementedError

    def reduce(self, arr: np.ndarray, root: int, op: ReduceOp) -> None:
        raise NotImplementedError

    def allgather(self, out: np.ndarray, inp: np.ndarray) -> None:
        """``out`` (flat, ``size * inp.size``) receives every rank's ``inp`` in rank order."""
        raise NotImplementedError

    def reduce_scatter(self, out: np.ndarray, inp: np.ndarray, op: ReduceOp) -> None:
        """``inp`` is ``size`` chunks of ``out.size``; rank r gets chunk r reduced over ranks."""
        raise NotImplementedError

    def gather(self, out: np.ndarray | None, inp: np.ndarray, root: int) -> None:
        raise NotImplementedError

    def scatter(self, out: np.ndarray, inp: np.ndarray | None, root: int) -> None:
        raise NotImplementedError

    def alltoall(self, out: np.ndarray, out_counts: list[int], inp: np.ndarray,
                 in_counts: list[int]) -> None:
        """Bytes: ``inp`` holds ``in_counts[j]`` bytes for rank j in rank order; ``out``
        receives ``out_counts[j]`` bytes from rank j."""
        raise NotImplementedError

    def send(self, arr: np.ndarray, dst: int, tag: int) -> None:
        raise NotImplementedError

    def recv(self, arr: np.ndarray, src: int | None, tag: int,
             timeout: float | None = None) -> int:
        """Receive into ``arr``; ``src=None`` takes any sender. Returns the sender's rank.
        With ``timeout`` (seconds), no message by then raises ``TimeoutError`` and leaves the
        group usable (``monitored_barrier``); without, the group's timeout is a failure."""
        raise NotImplementedError

    def start_p2p(self, kind: str, arr: np.ndarray, peer: int | None, tag: int):
        """Start a ``"send"`` or ``"recv"`` at once and return a handle with ``test() ->
        bool`` and ``wait(timeout) -> source rank`` (engines whose point to point can be
        posted without blocking: MPI); None (here): ``isend``/``irecv`` run on the
        communication thread."""
        return None

    def batch_p2p(self, plan: list[tuple[str, np.ndarray, int, int]]) -> None:
        """``("send" | "recv", flat array, peer, tag)`` entries, every send started before
        any receive waits. Here: sends first, for engines whose sends do not wait for the
        receiver."""
        for kind, arr, peer, tag in sorted(plan, key=lambda p: p[0] != "send"):
            if kind == "send":
                self.send(arr, peer, tag)
            else:
                self.recv(arr, peer, tag)

    def barrier(self) -> None:
        raise NotImplementedError

    def allgather_bytes(self, data: bytes) -> list[bytes]:
        """Every rank's ``data``, in rank order (objects and the DETAIL checks)."""
        raise NotImplementedError

    def empty_shared(self, nbytes: int) -> np.ndarray | None:
        """A ``uint8`` array the engine can reduce without copying (None: no such memory)."""
        return None

    def alloc_buffer(self, nbytes: int) -> np.ndarray:
        """``empty_shared`` memory, or ordinary memory when the engine has none."""
        raw = self.empty_shared(nbytes) if nbytes else None
        return np.empty(nbytes, np.uint8) if raw is None else raw

    def abort(self, reason: str) -> None:
        """Tell the peers this rank is failing (best effort)."""


def check_failed(what: str, rank: int, detail: str) -> DistBackendError:
    """The error a rank raises when a peer failed."""
    return DistBackendError(f"{what}: {detail} (seen by rank {rank})")
