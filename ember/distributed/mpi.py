"""The ``"mpi"`` engine: collectives through mpi4py, for ranks on one or several machines.

Ranks and the world size come from ``MPI.COMM_WORLD`` (start the job with ``mpiexec``); the
world group works on a duplicate of it and ``new_group`` splits that. Data moves as bytes;
reductions use MPI's own operations for the types MPI knows (float32/64, integers, bool as
logical operations) and a NumPy-backed user operation over ``itemsize``-byte elements for
float16 and bfloat16, so every ember dtype reduces.

NOTE [MPI faults]
MPI calls cannot time out, and a blocking one cannot be left. So every collective is issued
nonblocking (small all-reduces as persistent requests, NOTE [MPI small all_reduce]) and
completed by ``_complete``: it tests the request in a tight loop (a small
message finishes there), then yields the CPU between tests and, every 50 ms, polls the
*fault channel* and the peers' liveness. The fault channel is a second duplicate of
``COMM_WORLD`` on which a failing rank sends every peer a short notice (its uncaught
exception, a collective error, or "left the group" from ``destroy_process_group``); a peer on
this machine whose pid is gone (its pid and machine were exchanged at ``init_process_group``)
is dead; no completion within the group's timeout is a timeout, which names the members of
this machine that never entered the call (each rank counts the collectives it entered per
group in a shared MPI window). Each makes the waiting rank raise ``DistBackendError`` naming
the rank. The group is unusable afterwards (the abandoned
request never completes): later calls raise at once. A rank ending on an uncaught exception
sends its notice, gives its peers a moment (until each has sent one too, or a few seconds) to
raise and report their own errors, then ends the job with ``MPI_Abort``: ``MPI_Finalize``
could wait forever for a dead peer. A rank *killed* by a signal is MPICH's to report: its
``mpiexec`` (Hydra) ends the whole job at once, naming the process and the signal, and its
progress engine ends a rank that touches the dead one even under
``mpiexec -disable-auto-cleanup``; the pid check covers the ranks that are not ended so.

NOTE [MPI small all_reduce]
An all-reduce of at most 16 KiB of an MPI type with an MPI operation runs on a *persistent*
request (``MPI_Allreduce_init`` once, then ``Start`` and ``Test`` per call), made for a staging
array of that dtype and size: MPICH builds the nonblocking schedule once instead of per call,
which more than pays for copying the 16 KiB in and out (measured at 4 KiB, 2 ranks: 3.2 us
against 3.9 us for ``Iallreduce`` + ``Test`` or a blocking ``Allreduce``). Completion is the same
deadline-bound ``_complete`` as every collective's, after a few bare tests, so faults and
timeouts behave as above. Creating a persistent request is itself collective, so whether a
call gets one must be decided alike on every rank without asking the others: it depends
only on ``(dtype, op, element count)`` (what every rank passes alike) and on how many requests
the group already made (at most 32, in the order of the calls), never on the array's
address. Larger messages use ``Iallreduce`` on the array itself; above 16 KiB the copies cost
more than the schedule. The last array and its request are remembered, so a loop that
reduces one tensor again skips even the table lookup.
"""

from __future__ import annotations

import atexit
import os
import pickle
import socket
import sys
import threading
import time

import numpy as np

from ember.distributed.errors import DistBackendError
from ember.distributed.process_group import REDUCE_UFUNCS, ProcessGroup, ReduceOp

__all__ = ["MpiProcessGroup"]

_FAULT_TAG = 77
_FAILED, _EXITED = "failed", "exited"
_LEFT_GRACE = 2.0  # seconds
_GROUPS_TRACKED = 64  # groups whose progress the shared counts follow
_PERSISTENT_MAX_BYTES = 16384  # NOTE [MPI small all_reduce]
_PERSISTENT_MAX = 32  # persistent all-reduce requests per group
_MISSING = object()
_AVG = ReduceOp.AVG
_SPINS = range(64)  # tests of a small all-reduce's request before the deadline's loop


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise RuntimeError("init_process_group: backend 'mpi' needs mpi4py\nhint: pip install "
                           "'ember[mpi]' (mpi4py and the MPICH wheel)") from e
    return MPI


def _machine_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return socket.gethostname()


def _pid_gone(pid: int) -> bool:
    """Whether ``pid`` (a process of this machine) has exited or is a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return stat[stat.rindex(b")") + 2:][:1] in (b"Z", b"X")
    except (FileNotFoundError, ProcessLookupError):
        return True
    except OSError:
        return False


class _Faults:
    """The world's fault channel and what it has learnt (NOTE [MPI faults]); shared by every
    group of the world. ``failed`` maps a global rank to its notice ``(kind, blame, text)``."""

    def __init__(self, MPI, timeout: float):
        world = MPI.COMM_WORLD
        self.MPI = MPI
        self.comm = world.Dup()
        self.me = world.Get_rank()
        self.size = world.Get_size()
        mine = (_machine_id(), os.getpid())
        here = self.comm.allgather(mine)
        self.local_pids = {j: pid for j, (machine, pid) in enumerate(here)
                           if machine == mine[0] and j != self.me}
        self.failed: dict[int, tuple[str, int, str]] = {}
        self.left_at: dict[int, float] = {}
        self.broken: str | None = None  # the first error this rank raised
        self.notified = False
        self.sends: list = []
        self.lock = threading.Lock()
        self.grace = min(timeout, 5.0)
        self.aborting = False
        # how many collectives each rank of this machine has entered, per group (a shared
        # MPI window): a rank that times out names the members that never entered its call
        node = world.Split_type(MPI.COMM_TYPE_SHARED)
        self.window = MPI.Win.Allocate_shared(_GROUPS_TRACKED * 8, 8, comm=node)
        self.entered = {g: np.frombuffer(self.window.Shared_query(i)[0], np.int64)
                        for i, g in enumerate(node.allgather(self.me))}
        self.groups = 0
        atexit.register(self._at_exit)

    def new_group_index(self) -> int:
        """The next group's column in the entered counts (-1: not tracked); every rank of
        the world asks, in the same order."""
        i, self.groups = self.groups, self.groups + 1
        return i if i < _GROUPS_TRACKED else -1

    def _at_exit(self) -> None:
        """After a failure ``MPI_Finalize`` could wait for the dead rank forever: end the
        job instead (a rank that caught the ``DistBackendError`` and exits normally)."""
        if self.broken is not None and not self.aborting:
            sys.stdout.flush()
            print(f"ember.distributed (mpi): rank {self.me} ends the MPI job after a failed "
                  f"collective: {self.broken}", file=sys.stderr, flush=True)
            time.sleep(0.1)
            self.MPI.COMM_WORLD.Abort(1)
            os._exit(1)

    def poll(self) -> None:
        """Take in the notices that have arrived."""
        MPI = self.MPI
        with self.lock:
            status = MPI.Status()
            while self.comm.Iprobe(MPI.ANY_SOURCE, _FAULT_TAG, status):
                src = status.Get_source()
                n = status.Get_count(MPI.BYTE)
                buf = bytearray(n)
                self.comm.Recv([buf, MPI.BYTE], src, _FAULT_TAG)
                self.failed.setdefault(src, pickle.loads(bytes(buf)))

    def notify(self, kind: str, blame: int, text: str) -> None:
        """Send every peer this rank's notice (once)."""
        with self.lock:
            if self.notified:
                return
            self.notified = True
            data = bytearray(pickle.dumps((kind, blame, text)))
            self.sends = [self.comm.Isend([data, self.MPI.BYTE], j, _FAULT_TAG)
                          for j in range(self.size) if j != self.me]
            self._data = data

    def trouble(self, members: list[int], op: str) -> tuple[int, str] | None:
        """``(blame, text)`` when some rank failed (any: the job is going down), a member
        left the group or a member on this machine died; else None."""
        self.poll()
        now = time.monotonic()
        for j, (kind, blame, text) in sorted(self.failed.items()):
            if kind == _FAILED:
                who = j if blame < 0 or blame == j else blame
                return who, (f"rank {who} failed: {text}" if who == j else
                             f"rank {who} failed (reported by rank {j}: {text})")
            # a rank that left may have finished its part of this very call: only a wait
            # that outlasts its leaving by a while is blamed on it
            if j in members and now - self.left_at.setdefault(j, now) > _LEFT_GRACE:
                return j, (f"rank {j} left the process group (destroy_process_group or exit) "
                           f"while rank {self.me} waited for it in {op}")
        for j in members:
            pid = self.local_pids.get(j)
            if pid is not None and j not in self.failed and _pid_gone(pid):
                return j, (f"rank {j} (pid {pid}) died while rank {self.me} waited for it in "
                           f"{op}")
        return None

    def linger(self) -> None:
        """Wait until every peer has sent its notice or died, or ``grace`` seconds."""
        deadline = time.monotonic() + self.grace
        while time.monotonic() < deadline:
            self.poll()
            if all(j in self.failed or (j in self.local_pids and _pid_gone(self.local_pids[j]))
                   for j in range(self.size) if j != self.me):
                return
            time.sleep(0.02)


class MpiProcessGroup(ProcessGroup):
    """A group over an MPI communicator (see the module docstring)."""

    backend_name = "mpi"
    abort_after_report = True  # MPI_Abort ends the process: print the traceback first

    def __init__(self, comm, ranks: list[int], timeout: float, faults: _Faults, index: int):
        super().__init__(comm.Get_rank(), comm.Get_size(), ranks, timeout)
        self.comm = comm
        self.MPI = _mpi()
        self.faults = faults
        self._index = index
        self._count = 0  # collectives this rank has entered on this group
        # this rank's shared counts (a memoryview: the cheapest store)
        self._cell = memoryview(faults.entered[faults.me]) if index >= 0 else None
        self._in_place = self.MPI.IN_PLACE
        self._types: dict = {}
        self._user_ops: dict = {}
        self._specs: dict = {}
        self._native: dict = {}  # (dtype, op) -> (MPI type, MPI op) for MPI's own types
        # NOTE [MPI small all_reduce]: (dtype, op, elements) -> (persistent request, its
        # staging array's bytes), or None (a type, operation or size it is not made for, or
        # the table was full)
        self._persistent: dict = {}
        self._last: tuple = (None, None, None)  # the latest lookup: (array, op, _small's)

    @classmethod
    def world(cls, timeout: float) -> MpiProcessGroup:
        """The world group: every rank of ``MPI.COMM_WORLD``."""
        MPI = _mpi()
        comm = MPI.COMM_WORLD.Dup()
        faults = _Faults(MPI, timeout)
        return cls(comm, list(range(comm.Get_size())), timeout, faults, faults.new_group_index())

    def split(self, ranks: list[int], timeout: float) -> MpiProcessGroup | None:
        """A group of ``ranks`` (collective over this group; None on the others)."""
        MPI = self.MPI
        me = self.rank()
        sub = self.comm.Split(0 if me in ranks else MPI.UNDEFINED, me)
        index = self.faults.new_group_index()
        if sub == MPI.COMM_NULL:
            return None
        return MpiProcessGroup(sub, [self.ranks[r] for r in ranks], timeout, self.faults, index)

    # ---- completion with a deadline (NOTE [MPI faults]) -------------------------------------
    def _complete(self, req, op: str, status=None) -> None:
        if self.faults.broken is not None:
            raise DistBackendError(f"ember.distributed (mpi): the process group cannot be used "
                                   f"after an earlier failure: {self.faults.broken}")
        test = req.Test if status is None else (lambda: req.Test(status))
        try:
            spins = 0
            while not test():  # a tight loop: each test is also MPI's progress
                spins += 1
                if spins > 2000:
                    break
            else:
                return
            start = time.monotonic()
            check_at = start + 0.05
            spins = 0
            while not test():
                spins += 1
                if spins & 15:
                    continue
                now = time.monotonic()
                if now - start < 0.2:
                    os.sched_yield()
                else:
                    time.sleep(0.0002)
                if now >= check_at:
                    check_at = now + 0.05
                    hit = self.faults.trouble(self.ranks, op)
                    if hit is not None and not test():
                        self._fail(hit[0], hit[1])
                    if now - start > self.timeout and not test():
                        self._fail(-1, f"rank {self.ranks[self.rank()]} timed out after "
                                   f"{self.timeout:g}s in {op} (collective #{self.seq}) waiting "
                                   f"for the ranks {self.ranks}{self._not_arrived()}")
        except self.MPI.Exception as e:  # a library that reports failed peers (ULFM)
            self._fail(-1, f"{op} failed in MPI: {e}")

    def _enter(self) -> None:
        """Count one more collective entered on this group (in the shared counts)."""
        self._count += 1
        if self._cell is not None:
            self._cell[self._index] = self._count

    def _not_arrived(self) -> str:
        """The members on this machine that have not entered this rank's current call."""
        if self._cell is None:
            return ""
        late = [g for g in self.ranks if g in self.faults.entered
                and self.faults.entered[g][self._index] < self._count]
        if not late:
            return ""
        who = ", ".join(str(g) for g in late)
        return (f"; rank{'s' if len(late) > 1 else ''} {who} "
                f"{'have' if len(late) > 1 else 'has'} not reached it")

    def _fail(self, blame: int, text: str) -> None:
        self.faults.broken = text
        self.faults.notify(_FAILED, blame, text)
        raise DistBackendError(f"ember.distributed (mpi): {text}")

    # ---- datatypes and operations ---------------------------------------------------------
    def _spec(self, arr: np.ndarray, op: ReduceOp | None = None):
        """``[bytes, count, MPI datatype]`` for ``arr`` and the MPI operation for ``op``."""
        flat = arr.reshape(-1)
        key = (flat.dtype, op)
        hit = self._specs.get(key)
        if hit is None:
            hit = self._specs[key] = self._lookup(flat.dtype, flat.itemsize, op)
        return [flat.view(np.uint8), flat.size, hit[0]], hit[1]

    def _lookup(self, dtype: np.dtype, itemsize: int, op: ReduceOp | None) -> tuple:
        MPI = self.MPI
        native = {np.dtype(np.float32): MPI.FLOAT, np.dtype(np.float64): MPI.DOUBLE,
                  np.dtype(np.int8): MPI.INT8_T, np.dtype(np.int16): MPI.INT16_T,
                  np.dtype(np.int32): MPI.INT32_T, np.dtype(np.int64): MPI.INT64_T,
                  np.dtype(np.uint8): MPI.UINT8_T, np.dtype(np.bool_): MPI.C_BOOL}
        mtype = native.get(dtype)
        mop = None
        if op is not None:
            if dtype == np.bool_:
                mop = {ReduceOp.SUM: MPI.LOR, ReduceOp.MAX: MPI.LOR, ReduceOp.BOR: MPI.LOR,
                       ReduceOp.PRODUCT: MPI.LAND, ReduceOp.MIN: MPI.LAND,
                       ReduceOp.BAND: MPI.LAND, ReduceOp.BXOR: MPI.LXOR}[op]
            elif mtype is not None:
                mop = {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD,
                       ReduceOp.MIN: MPI.MIN, ReduceOp.MAX: MPI.MAX, ReduceOp.BAND: MPI.BAND,
                       ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR}[op]
            else:
                mop = self._user_op(op, dtype)
        return (mtype if mtype is not None else self._bytes_type(itemsize)), mop

    def _bytes_type(self, itemsize: int):
        t = self._types.get(itemsize)
        if t is None:
            t = self._types[itemsize] = self.MPI.BYTE.Create_contiguous(itemsize).Commit()
        return t

    def _user_op(self, op: ReduceOp, dtype: np.dtype):
        key = (op, dtype)
        mop = self._user_ops.get(key)
        if mop is None:
            ufunc = REDUCE_UFUNCS[op]

            def fn(inbuf, inoutbuf, datatype):
                a = np.frombuffer(inbuf, dtype)
                b = np.frombuffer(inoutbuf, dtype)
                ufunc(a, b, out=b)

            mop = self._user_ops[key] = self.MPI.Op.Create(fn, commute=True)
        return mop

    def _avg(self, arr: np.ndarray, op: ReduceOp) -> None:
        if op is ReduceOp.AVG:
            np.divide(arr, self.size(), out=arr, casting="unsafe")

    # ---- collectives ----------------------------------------------------------------------
    def allreduce(self, arr: np.ndarray, op: ReduceOp) -> None:
        """In place over the group. A small message of MPI's own types goes through a
        persistent request (NOTE [MPI small all_reduce])."""
        self._count = count = self._count + 1
        if self._cell is not None:
            self._cell[self._index] = count
        last = self._last
        hit = last[2] if arr is last[0] and op is last[1] else self._small(arr, op)
        if hit is not None:
            req, stage, data = hit
            if self.faults.broken is not None:
                self._complete(req, "all_reduce")  # raises: the group is unusable
            stage[:] = data  # (byte memoryviews: the cheapest copy)
            req.Start()
            test = req.Test
            for _ in _SPINS:
                if test():
                    break
            else:
                self._complete(req, "all_reduce")
            data[:] = stage
            if op is _AVG:
                self._avg(arr, op)
            return
        hit = self._native.get((arr.dtype, op))
        if hit is not None:  # MPI's own type and operation: the array as it is
            spec, mop = [arr, arr.size, hit[0]], hit[1]
        else:
            spec, mop = self._spec(arr, op)
            if spec[2] is not self._types.get(arr.itemsize):
                self._native[(arr.dtype, op)] = (spec[2], mop)
        self._complete(self.comm.Iallreduce(self._in_place, spec, mop), "all_reduce")
        if op is ReduceOp.AVG:
            self._avg(arr, op)

    def _small(self, arr: np.ndarray, op: ReduceOp):
        """``(persistent request, its staging bytes, arr's bytes)`` (memoryviews) for an
        all-reduce of ``arr``, None when it takes the general path (NOTE [MPI small
        all_reduce]); remembered for the next call with the same array."""
        hit = None
        if arr.nbytes <= _PERSISTENT_MAX_BYTES:
            key = (arr.dtype, op, arr.size)
            hit = self._persistent.get(key, _MISSING)
            if hit is _MISSING:  # every rank decides alike: it depends on the calls so far
                spec, mop = self._spec(arr, op)
                hit = None
                if (spec[2] is not self._types.get(arr.itemsize) and mop is not None
                        and arr.size and len(self._persistent) < _PERSISTENT_MAX):
                    stage = np.zeros(arr.size, arr.dtype)
                    hit = (self.comm.Allreduce_init(self._in_place, [stage, arr.size, spec[2]],
                                                    mop), memoryview(stage).cast("B"))
                self._persistent[key] = hit
            if hit is not None:  # (the caller's arrays are C-contiguous)
                hit = hit[0], hit[1], memoryview(arr).cast("B")
        self._last = (arr, op, hit)
        return hit

    def broadcast(self, arr: np.ndarray, root: int) -> None:
        self._enter()
        self._complete(self.comm.Ibcast([arr.reshape(-1).view(np.uint8), self.MPI.BYTE], root),
                       "broadcast")

    def reduce(self, arr: np.ndarray, root: int, op: ReduceOp) -> None:
        self._enter()
        spec, mop = self._spec(arr, op)
        if self.rank() == root:
            self._complete(self.comm.Ireduce(self.MPI.IN_PLACE, spec, mop, root), "reduce")
            self._avg(arr, op)
        else:
            self._complete(self.comm.Ireduce(spec, None, mop, root), "reduce")

    def _raw(self, arr: np.ndarray | None):
        return None if arr is None else [arr.reshape(-1).view(np.uint8), self.MPI.BYTE]

    def allgather(self, out: np.ndarray, inp: np.ndarray) -> None:
        self._enter()
        self._complete(self.comm.Iallgather(self._raw(inp), self._raw(out)), "all_gather")

    def reduce_scatter(self, out: np.ndarray, inp: np.ndarray, op: ReduceOp) -> None:
        self._enter()
        send, mop = self._spec(inp, op)
        recv, _ = self._spec(out)
        # mpi4py wants [buffer, datatype] here: it derives the counts from the byte sizes
        self._complete(self.comm.Ireduce_scatter_block([send[0], send[2]], [recv[0], recv[2]],
                                                       mop), "reduce_scatter")
        self._avg(out, op)

    def gather(self, out: np.ndarray | None, inp: np.ndarray, root: int) -> None:
        self._enter()
        self._complete(self.comm.Igather(self._raw(inp),
                                         self._raw(out) if self.rank() == root else None, root),
                       "gather")

    def scatter(self, out: np.ndarray, inp: np.ndarray | None, root: int) -> None:
        self._enter()
        self._complete(self.comm.Iscatter(self._raw(inp) if self.rank() == root else None,
                                          self._raw(out), root), "scatter")

    def alltoall(self, out: np.ndarray, out_counts: list[int], inp: np.ndarray,
                 in_counts: list[int]) -> None:
        self._enter()
        def displs(counts):
            return [0, *np.cumsum(counts)[:-1].tolist()]

        self._complete(self.comm.Ialltoallv(
            [inp.reshape(-1).view(np.uint8), (in_counts, displs(in_counts)), self.MPI.BYTE],
            [out.reshape(-1).view(np.uint8), (out_counts, displs(out_counts)), self.MPI.BYTE]),
            "all_to_all")

    def send(self, arr: np.ndarray, dst: int, tag: int) -> None:
        self._complete(self.comm.Isend(self._raw(arr), dst, tag), "send")

    def recv(self, arr: np.ndarray, src: int | None, tag: int,
             timeout: float | None = None) -> int:
        MPI = self.MPI
        source = MPI.ANY_SOURCE if src is None else src
        status = MPI.Status()
        if timeout is not None:  # probe first: a message that never comes leaves nothing behind
            deadline = time.monotonic() + timeout
            while not self.comm.Iprobe(source, tag, status):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no message from rank "
                                       f"{'any' if src is None else self.ranks[src]} within "
                                       f"{timeout:g}s")
                hit = self.faults.trouble(self.ranks, "recv")
                if hit is not None:
                    self._fail(*hit)
                time.sleep(0.001)
            source = status.Get_source()
        self._complete(self.comm.Irecv(self._raw(arr), source, tag), "recv", status)
        return status.Get_source()

    def start_p2p(self, kind: str, arr: np.ndarray, peer: int | None, tag: int):
        """Post the send or receive now (``isend``/``irecv``): a send larger than MPI's
        eager limit waits for its receiver, so running it on the communication thread
        would hold up a receive queued behind it (a ring of exchanges would deadlock)."""
        MPI = self.MPI
        if kind == "send":
            return _Posted(self, self.comm.Isend(self._raw(arr), peer, tag), "send", peer, arr)
        source = MPI.ANY_SOURCE if peer is None else peer
        return _Posted(self, self.comm.Irecv(self._raw(arr), source, tag), "recv", peer, arr)

    def batch_p2p(self, plan: list[tuple[str, np.ndarray, int, int]]) -> None:
        """Every send and receive posted at once, then completed (large sends wait for
        their receiver under MPI, so one at a time could deadlock a ring)."""
        reqs = [(self.comm.Isend if kind == "send" else self.comm.Irecv)(self._raw(arr), peer,
                                                                         tag)
                for kind, arr, peer, tag in plan]
        for (kind, *_), req in zip(plan, reqs):
            self._complete(req, f"batch_isend_irecv ({kind})")

    def barrier(self) -> None:
        self._enter()
        self._complete(self.comm.Ibarrier(), "barrier")

    def allgather_bytes(self, data: bytes) -> list[bytes]:
        self._enter()
        n = self.size()
        lengths = np.empty(n, np.int64)
        self._complete(self.comm.Iallgather([np.array([len(data)], np.int64), self.MPI.INT64_T],
                                            [lengths, self.MPI.INT64_T]), "objects")
        counts = lengths.tolist()
        displs = [0, *np.cumsum(counts)[:-1].tolist()]
        out = np.empty(max(sum(counts), 1), np.uint8)
        self._complete(self.comm.Iallgatherv([np.frombuffer(data, np.uint8) if data else
                                              np.empty(0, np.uint8), self.MPI.BYTE],
                                             [out, (counts, displs), self.MPI.BYTE]), "objects")
        return [out[d:d + c].tobytes() for d, c in zip(displs, counts)]

    def abort(self, reason: str) -> None:
        """An uncaught exception on this rank (after its traceback was printed): tell the
        peers, give them a moment to report, then end the MPI job (NOTE [MPI faults])."""
        f = self.faults
        f.notify(_FAILED, -1, reason)
        f.linger()
        print(f"ember.distributed (mpi): rank {f.me} failed: {reason}; aborting the MPI job",
              file=sys.stderr, flush=True)
        sys.stdout.flush()
        time.sleep(0.1)  # mpiexec forwards what is still in the pipes only until the abort
        f.aborting = True
        self.MPI.COMM_WORLD.Abort(1)
        os._exit(1)  # under mpiexec -disable-auto-cleanup MPI_Abort may return

    def shutdown(self) -> None:
        """Leave the group; leaving the world tells the peers (a peer still waiting for this
        rank then raises). After a failure the job ends at exit with ``MPI_Abort`` instead
        (``_Faults._at_exit``): ``MPI_Finalize`` could wait for the dead rank forever."""
        super().shutdown()
        f = self.faults
        if f.broken is None:  # (a request left running by a failure cannot be freed)
            for hit in self._persistent.values():
                if hit is not None:
                    hit[0].Free()
        self._persistent = {}
        self._last = (None, None, None)
        if f.broken is None and self.ranks == list(range(f.size)):
            f.notify(_EXITED, -1, "left")


class _Posted:
    """A posted MPI send or receive (``MpiProcessGroup.start_p2p``)."""

    def __init__(self, pg: MpiProcessGroup, req, kind: str, peer: int | None,
                 arr: np.ndarray):
        self.pg, self.req, self.kind = pg, req, kind
        self.arr = arr  # MPI reads or writes it until the request completes
        self.status = pg.MPI.Status()
        self.source = pg.rank() if kind == "send" else peer
        self.finished = False

    def _record(self) -> None:
        self.finished = True
        if self.kind == "recv":
            self.source = self.status.Get_source()

    def test(self) -> bool:
        """Whether it completed (progresses MPI)."""
        if not self.finished and self.req.Test(self.status):
            self._record()
        return self.finished

    def wait(self, timeout: float | None = None) -> int:
        """Complete it (the group's deadline and fault checks; ``timeout`` seconds:
        ``TimeoutError`` after them, the request left running); returns the source rank."""
        if timeout is not None:
            deadline = time.monotonic() + timeout
            while not self.test():
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the {self.kind} did not finish within {timeout:g}s")
                time.sleep(0.0002)
        if not self.finished:
            self.pg._complete(self.req, self.kind, self.status)
            self._record()
        return self.source
