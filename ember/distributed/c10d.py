"""The process-group front end: ``init_process_group``, groups and the collectives
(torch.distributed.distributed_c10d's names, signatures and errors).

This module turns tensors into contiguous arrays for the engines (``shm.py``, ``mpi.py``),
translates global ranks into group ranks, checks arguments, runs ``async_op=True`` calls on
the group's communication thread (``ProcessGroup.submit``) and, under
``EMBER_DISTRIBUTED_DEBUG=DETAIL``, logs each collective and checks that every rank calls the
same one with the same shapes before it runs. It knows no engine's internals.
"""

from __future__ import annotations

import atexit
import logging
import os
import pickle
import sys
import time
from datetime import timedelta

import numpy as np

from ember.core import dtype as dt
from ember.core.device import CPU
from ember.distributed.errors import DistBackendError, DistStoreError
from ember.distributed.process_group import PostedWork, ProcessGroup, ReduceOp, Work, _DoneWork
from ember.distributed.store import PrefixStore, Store, TCPStore
from ember.tensor.tensor import Tensor, from_numpy, numpy_view

__all__ = [
    "init_process_group", "destroy_process_group", "is_initialized", "is_available",
    "get_rank", "get_world_size", "get_backend", "new_group", "group", "GroupMember",
    "get_global_rank", "get_group_rank", "get_process_group_ranks", "is_mpi_available",
    "is_nccl_available", "is_gloo_available", "is_torchelastic_launched", "Backend",
    "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
    "reduce_scatter", "reduce_scatter_tensor", "gather", "scatter", "all_to_all_single",
    "all_to_all", "send", "recv", "isend", "irecv", "barrier", "broadcast_object_list",
    "all_gather_object", "gather_object", "empty_shared", "alloc_buffer", "get_debug_level",
    "monitored_barrier", "scatter_object_list", "is_backend_available", "get_node_local_rank",
]

_DEFAULT_TIMEOUT = timedelta(minutes=30)
_log = logging.getLogger("ember.distributed")


class Backend(str):
    """Backend names (``torch.distributed.Backend``): ``Backend("GLOO") == "gloo"``."""

    SHM = "shm"
    MPI = "mpi"
    GLOO = "gloo"
    NCCL = "nccl"
    UNDEFINED = "undefined"

    def __new__(cls, name: str):
        return str.__new__(cls, name.lower())


class _NonMember:
    """What ``new_group`` returns on ranks outside the group (``GroupMember.NON_GROUP_MEMBER``)."""

    def __repr__(self) -> str:
        return "GroupMember.NON_GROUP_MEMBER"


class GroupMember:
    """``GroupMember.WORLD`` (the default group once initialised) and ``NON_GROUP_MEMBER``."""

    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = _NonMember()


group = GroupMember  # torch.distributed.group.WORLD


class _State:
    store: Store | None = None
    backend: str = ""
    groups: list[ProcessGroup] = []
    n_groups = 0
    debug = "OFF"
    hook_installed = False
    retired: list[Store] = []


def get_debug_level() -> str:
    """``"OFF"``, ``"INFO"`` or ``"DETAIL"``: ``EMBER_DISTRIBUTED_DEBUG`` (also read from
    ``TORCH_DISTRIBUTED_DEBUG``) as seen by ``init_process_group``."""
    return _State.debug


# ---- initialisation -------------------------------------------------------------------------
def is_available() -> bool:
    """Whether the distributed package is available (always, in ember)."""
    return True


def is_initialized() -> bool:
    """Whether the default process group has been initialised."""
    return GroupMember.WORLD is not None


def is_mpi_available() -> bool:
    """Whether the ``"mpi"`` backend can be used (mpi4py is installed)."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def is_nccl_available() -> bool:
    """Whether a ``"nccl"`` backend is available (not in this build)."""
    return False


def is_gloo_available() -> bool:
    """Whether ``"gloo"`` is accepted (it is: it names ember's CPU default)."""
    return True


def is_backend_available(backend: str) -> bool:
    """Whether ``backend`` can be passed to ``init_process_group`` here (``"shm"`` and
    ``"gloo"`` always, ``"mpi"`` with mpi4py, ``"nccl"`` not yet;
    ``torch.distributed.is_backend_available``).

    Example:
        >>> import ember.distributed as dist
        >>> dist.is_backend_available("gloo"), dist.is_backend_available("nccl")
        (True, False)
    """
    name = str(backend).lower()
    return name in ("shm", "gloo") or (name == "mpi" and is_mpi_available())


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """This process's rank on its machine: ``LOCAL_RANK`` from the launcher, else
    ``fallback_rank`` (``torch.distributed.get_node_local_rank``).

    Example:
        >>> import ember.distributed as dist
        >>> dist.get_node_local_rank(fallback_rank=0)  # 0 here; LOCAL_RANK under a launcher
        0
    """
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment. Consider passing fallback_rank "
                       "to allow `get_node_local_rank` to work, assuming you are not running "
                       "in a multi-device context and want the code to run locally instead.")


def is_torchelastic_launched() -> bool:
    """Whether this process was started by a launcher (``ember.distributed.run``)."""
    return "TORCHELASTIC_RUN_ID" in os.environ


def _under_mpiexec() -> bool:
    return "RANK" not in os.environ and any(
        k in os.environ for k in ("PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK"))


def _resolve_backend(backend) -> str:
    name = str(backend or "").lower()
    if ":" in name:  # "cpu:gloo,cuda:nccl": the CPU entry
        parts = dict(p.split(":", 1) for p in name.split(",") if ":" in p)
        name = parts.get("cpu", "")
    if name in ("", "undefined"):
        return "mpi" if _under_mpiexec() else "shm"
    if name == "gloo":
        chosen = "mpi" if _under_mpiexec() else "shm"
        if os.environ.get("RANK", "0") == "0" and not os.environ.get("EMBER_QUIET_GLOO"):
            print(f"ember.distributed: backend 'gloo' runs on ember's '{chosen}' engine",
                  file=sys.stderr)
        return chosen
    if name == "nccl":
        raise RuntimeError("Distributed package doesn't have NCCL built in: ember has no GPU "
                           "collective engine yet\nhint: use backend='shm' (one machine) or "
                           "'mpi' (several machines)")
    if name not in ("shm", "mpi"):
        raise ValueError(f"init_process_group: unknown backend {backend!r}; expected one of "
                         "'shm', 'mpi', 'gloo' (CPU default)")
    return name


def _env_int(name: str) -> int:
    value = os.environ.get(name)
    if value is None:
        raise ValueError(f"Error initializing ember.distributed using env:// rendezvous: "
                         f"environment variable {name} expected, but not set")
    return int(value)


def _rendezvous(init_method: str | None, rank: int, world_size: int,
                timeout: float) -> tuple[Store, int, int]:
    init_method = init_method or "env://"
    if init_method.startswith("env://"):
        rank = _env_int("RANK") if rank < 0 else rank
        world_size = _env_int("WORLD_SIZE") if world_size < 0 else world_size
        host = os.environ.get("MASTER_ADDR")
        if host is None:
            _env_int("MASTER_ADDR")
        port = _env_int("MASTER_PORT")
    elif init_method.startswith("tcp://"):
        hostport = init_method[len("tcp://"):].split("?")[0].rstrip("/")
        host, _, p = hostport.rpartition(":")
        port = int(p)
        if rank < 0 or world_size < 0:
            raise ValueError("init_process_group: init_method='tcp://...' needs rank and "
                             "world_size")
    else:
        raise ValueError(f"init_process_group: unsupported init_method {init_method!r}; "
                         "expected 'env://' or 'tcp://host:port'")
    _check_rank(rank, world_size)
    store = TCPStore(host, port, world_size, rank == 0, timedelta(seconds=timeout))
    return store, rank, world_size


def _check_rank(rank: int, world_size: int) -> None:
    if world_size < 1:
        raise ValueError(f"init_process_group: world_size must be positive; got {world_size}")
    if not 0 <= rank < world_size:
        raise ValueError(f"init_process_group: rank {rank} is out of range for world_size "
                         f"{world_size}; expected 0 <= rank < world_size")


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: timedelta | None = None, world_size: int = -1,
                       rank: int = -1, store: Store | None = None, group_name: str = "",
                       pg_options=None, device_id=None) -> None:
    """Join the default process group (``torch.distributed.init_process_group``).

    Args:
        backend: ``"shm"`` (one machine, the default), ``"mpi"`` (mpi4py; the default under
            ``mpiexec``), ``"gloo"`` (accepted: ember's CPU default, shm or MPI). ``"nccl"``
            raises: there is no GPU engine yet.
        init_method: ``"env://"`` (default: ``MASTER_ADDR``, ``MASTER_PORT``, ``RANK``,
            ``WORLD_SIZE``) or ``"tcp://host:port"`` with ``rank`` and ``world_size``.
        timeout: how long a collective waits for its peers before ``DistBackendError``
            (default 30 minutes).
        world_size, rank: override the environment (under MPI they must match it).
        store: a ``TCPStore`` to meet at instead of ``init_method`` (needs rank/world_size).

    Raises:
        ValueError: initialised twice, a missing environment variable, a rank outside the
            world, ranks that disagree on the world size.
        DistNetworkError: the master's port is in use, or the master cannot be reached.
        RuntimeError: ``backend="nccl"``.

    Example (one process; a launcher starts several)::

        ember.distributed.init_process_group("shm", init_method="tcp://127.0.0.1:29500",
                                             rank=0, world_size=1)
    """
    if GroupMember.WORLD is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = _resolve_backend(backend)
    secs = (timeout or _DEFAULT_TIMEOUT).total_seconds()
    _State.debug = os.environ.get("EMBER_DISTRIBUTED_DEBUG",
                                  os.environ.get("TORCH_DISTRIBUTED_DEBUG", "OFF")).upper()
    if name == "mpi":
        from ember.distributed.mpi import MpiProcessGroup

        pg = MpiProcessGroup.world(secs)
        for given, actual, what in ((rank, pg.rank(), "rank"),
                                    (world_size, pg.size(), "world_size")):
            if given >= 0 and given != actual:
                raise ValueError(f"init_process_group: {what}={given} but MPI says {actual}")
        _State.store = None
    else:
        if store is None:
            store, rank, world_size = _rendezvous(init_method, rank, world_size, secs)
        else:
            _check_rank(rank, world_size)
        _agree_world_size(store, rank, world_size, secs)
        from ember.distributed.shm import ShmProcessGroup

        pg = ShmProcessGroup(PrefixStore("pg0", store), rank, world_size,
                             list(range(world_size)), secs, "pg0")
        _State.store = store
    _State.backend, _State.groups, _State.n_groups = name, [pg], 1
    GroupMember.WORLD = pg
    _install_failure_hook()
    if _State.debug == "DETAIL" and not _log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        _log.addHandler(handler)
        _log.setLevel(logging.INFO)


def _agree_world_size(store: Store, rank: int, world_size: int, secs: float) -> None:
    # A rank started with another size fails every rank, not just itself. Rank 0 hosts the
    # store, so it must not exit before the others have read its size: they read rank 0's
    # size before publishing their own, and rank 0 waits for theirs.
    if rank == 0:
        store.set("world_size/0", str(world_size))
        for j in range(1, world_size):
            other = int(store.get(f"world_size/{j}"))
            if other != world_size:
                raise _world_size_mismatch((j, other), (0, world_size))
        return
    other = int(store.get("world_size/0"))
    if other == world_size:
        store.set(f"world_size/{rank}", str(world_size))
        return
    mismatch = _world_size_mismatch((rank, world_size), (0, other))
    try:
        store.set(f"world_size/{rank}", str(world_size))
    except DistStoreError as lost:  # rank 0 may exit on this mismatch before it replies
        raise mismatch from lost
    raise mismatch


def _world_size_mismatch(a: tuple[int, int], b: tuple[int, int]) -> ValueError:
    return ValueError(f"init_process_group: rank {a[0]} has world_size {a[1]} but rank "
                      f"{b[0]} has {b[1]}; every rank must be started with the same "
                      "WORLD_SIZE")


def _install_failure_hook() -> None:
    if _State.hook_installed:
        return
    _State.hook_installed = True
    previous = sys.excepthook

    def hook(exc_type, exc, tb):
        groups = list(_State.groups)
        for late in (False, True):
            for pg in groups:
                if pg.abort_after_report == late:
                    try:
                        pg.abort(f"{exc_type.__name__}: {exc}")
                    except Exception:  # noqa: BLE001 - report the user's error, not ours
                        pass
            if not late:
                previous(exc_type, exc, tb)

    sys.excepthook = hook
    atexit.register(_shutdown_all)


def _shutdown_all() -> None:
    for pg in list(_State.groups):
        pg.shutdown()


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Leave ``group``, or every group when None (``torch.distributed.destroy_process_group``).

    Peers still waiting for this rank in a collective then fail with ``DistBackendError``.
    """
    if group is None or group is GroupMember.WORLD:
        _require_init()
        for pg in _State.groups:
            pg.shutdown()
        _State.groups = []
        GroupMember.WORLD = None
        if _State.store is not None:  # the master keeps serving slower peers until exit
            _State.retired.append(_State.store)
        _State.store = None
    elif isinstance(group, ProcessGroup):
        group.shutdown()
        if group in _State.groups:
            _State.groups.remove(group)


def _require_init() -> ProcessGroup:
    pg = GroupMember.WORLD
    if pg is None:
        raise ValueError("Default process group has not been initialized, please make sure to "
                         "call init_process_group.")
    return pg


def _group(group) -> ProcessGroup | None:
    """The engine for ``group`` (None: this rank is not a member)."""
    world = _require_init()
    if group is None or group is GroupMember.WORLD:
        return world
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"expected a ProcessGroup; got {type(group).__name__}")
    return group


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in ``group`` (default: the world); -1 if it is not a member."""
    pg = _group(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    """Number of ranks in ``group`` (default: the world); -1 if this rank is not a member."""
    pg = _group(group)
    return -1 if pg is None else pg.size()


def get_backend(group: ProcessGroup | None = None) -> str:
    """The engine's name: ``"shm"`` or ``"mpi"``."""
    pg = _group(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return pg.backend_name


def get_process_group_ranks(group: ProcessGroup) -> list[int]:
    """The global ranks of ``group``'s members, in group-rank order."""
    pg = _group(group)
    return list(pg.ranks)


def get_global_rank(group: ProcessGroup, group_rank: int) -> int:
    """The global rank of ``group``'s rank ``group_rank``."""
    pg = _group(group)
    if not 0 <= group_rank < pg.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {pg.ranks}")
    return pg.ranks[group_rank]


def get_group_rank(group: ProcessGroup, global_rank: int) -> int:
    """``global_rank``'s rank within ``group``."""
    pg = _group(group)
    if global_rank not in pg.ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg.ranks}")
    return pg.ranks.index(global_rank)


def new_group(ranks: list[int] | None = None, timeout: timedelta | None = None,
              backend: str | None = None, pg_options=None,
              use_local_synchronization: bool = False, group_desc: str | None = None,
              device_id=None, sort_ranks: bool = True):
    """A group of a subset of the ranks (``torch.distributed.new_group``).

    Every rank of the world must call it, in the same order, with the same ``ranks``; ranks
    outside get ``GroupMember.NON_GROUP_MEMBER``, on which collectives do nothing.

    Raises:
        ValueError: a rank outside the world.
    """
    world = _require_init()
    ranks = sorted(set(range(world.size()) if ranks is None else ranks))
    for r in ranks:
        if not 0 <= r < world.size():
            raise ValueError(f"new_group: rank {r} is outside the world of {world.size()} ranks")
    secs = timeout.total_seconds() if timeout is not None else world.timeout
    tag = f"pg{_State.n_groups}"
    _State.n_groups += 1
    me = world.rank()
    if _State.backend == "mpi":
        pg = world.split(ranks, secs)
    elif me in ranks:
        from ember.distributed.shm import ShmProcessGroup

        pg = ShmProcessGroup(PrefixStore(tag, _State.store), ranks.index(me), len(ranks), ranks,
                             secs, tag)
    else:
        pg = None
    if pg is None:
        return GroupMember.NON_GROUP_MEMBER
    _State.groups.append(pg)
    return pg


# ---- tensors as engine arrays -----------------------------------------------------------------
class _Buf:
    """A contiguous array over a tensor (a copy for a non-contiguous one, written back)."""

    __slots__ = ("t", "arr", "copy")

    def __init__(self, t, what: str = "tensor"):
        if not isinstance(t, Tensor):
            raise TypeError(f"{what}: expected an ember Tensor; got {type(t).__name__}")
        if t._device is not CPU:
            raise ValueError(f"{what}: the shm and mpi engines need CPU tensors; got a tensor "
                             f"on {t.device}")
        self.t = t
        view = numpy_view(t)
        self.copy = not view.flags.c_contiguous
        self.arr = np.ascontiguousarray(view) if self.copy else view

    def flat(self) -> np.ndarray:
        return self.arr.reshape(-1)

    def done(self) -> None:
        if self.copy:
            np.copyto(numpy_view(self.t), self.arr)
        self.t._bump_version()


def _desc(t: Tensor) -> str:
    return f"{tuple(t.shape)}:{t.dtype}"


def _check_detail(pg: ProcessGroup, name: str, sig: str) -> None:
    """DETAIL: every rank must be at the same collective with the same shapes."""
    mine = f"{name}[{sig}]"
    theirs = pg.allgather_bytes(mine.encode())
    for j, other in enumerate(theirs):
        other = other.decode()
        if other != mine:
            raise DistBackendError(
                f"Detected mismatch between collectives on ranks. Rank {pg.ranks[pg.rank()]} "
                f"is running collective #{pg.seq}: {mine}, but rank {pg.ranks[j]} is running "
                f"collective: {other}\nhint: every rank must call the same collectives in "
                "the same order with the same shapes and dtypes")


def _run(pg: ProcessGroup, name: str, body, bufs: list[_Buf], async_op: bool, sig,
         result=None) -> Work | None:
    """Run ``body`` on ``pg`` in call order; ``sig`` (a string, or a callable making one) is
    the call's signature for the DETAIL checks and log."""
    pg.seq += 1
    if _State.debug == "DETAIL":
        return pg.submit(_detailed(pg, name, body, bufs, sig() if callable(sig) else sig),
                         Work(result) if async_op else None)

    def go():
        body()
        for b in bufs:
            b.done()

    return pg.submit(go, Work(result) if async_op else None)


def _detailed(pg: ProcessGroup, name: str, body, bufs: list[_Buf], sig: str):
    seq = pg.seq

    def go():
        _check_detail(pg, name, sig)
        start = time.perf_counter()
        body()
        for b in bufs:
            b.done()
        nbytes = sum(b.arr.nbytes for b in bufs)
        _log.info("[rank %d] %s #%d %s bytes=%d time=%.3fms", pg.ranks[pg.rank()], name, seq,
                  sig, nbytes, (time.perf_counter() - start) * 1e3)

    return go


def _root(pg: ProcessGroup, what: str, rank, group_rank) -> int:
    if group_rank is not None:
        if not 0 <= group_rank < pg.size():
            raise ValueError(f"{what}: group rank {group_rank} is outside the group of "
                             f"{pg.size()} ranks")
        return group_rank
    if rank is None:
        rank = 0 if pg is GroupMember.WORLD else pg.ranks[0]
    if rank not in pg.ranks:
        raise ValueError(f"{what}: rank {rank} is not part of the group {pg.ranks}")
    return pg.ranks.index(rank)


def _check_op(what: str, op, dtype: dt.DType) -> ReduceOp:
    if op is ReduceOp.SUM:
        return op
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{what}: op must be a ReduceOp; got {op!r}")
    if op is ReduceOp.AVG and not dtype.is_floating_point:
        raise ValueError(f"{what}: ReduceOp.AVG needs a floating point tensor; got {dtype}")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and dtype.is_floating_point:
        raise ValueError(f"{what}: {op.name} needs an integer or bool tensor; got {dtype}")
    return op


def _same_dtype(what: str, ref: Tensor, others) -> None:
    for t in others:
        if t.dtype != ref.dtype:
            raise TypeError(f"{what}: tensors must all have the same dtype; got {ref.dtype} "
                            f"and {t.dtype}")


def _none_or_done(async_op: bool) -> Work | None:
    return _DoneWork() if async_op else None


# ---- collectives ------------------------------------------------------------------------------
def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group=None,
               async_op: bool = False) -> Work | None:
    """Reduce ``tensor`` over every rank of ``group``, in place, on every rank
    (``torch.distributed.all_reduce``).

    The reduction runs in rank order on every rank, so every rank ends with the same bits.

    Args:
        tensor: any shape and dtype (non-contiguous tensors are handled).
        op: ``ReduceOp.SUM``, ``AVG`` (floating only), ``PRODUCT``, ``MIN``, ``MAX``,
            ``BAND``/``BOR``/``BXOR`` (integer and bool).
        async_op: return a ``Work`` at once instead of waiting.

    Returns:
        A ``Work`` when ``async_op``, else None.

    Raises:
        ValueError: no default group; an op the dtype does not support.
        DistBackendError: a peer died, failed or timed out; ranks disagree on the call.
    """
    pg = GroupMember.WORLD if group is None else _group(group)
    if pg is None:
        if group is None:
            _require_init()
        return None
    if op is not ReduceOp.SUM:
        op = _check_op("all_reduce", op, tensor.dtype)
    if not (async_op or pg._pending) and type(tensor) is Tensor and tensor._device is CPU \
            and _State.debug != "DETAIL":
        # the common synchronous call, without _Buf and closures
        arr = tensor._arr
        if arr is None:
            arr = numpy_view(tensor)
        if arr.flags.c_contiguous:
            pg.seq += 1
            lock = pg._exec
            lock.acquire()
            try:
                pg.allreduce(arr, op)
            finally:
                lock.release()
            tensor._ver.value += 1  # _bump_version
            return None
    b = _Buf(tensor)
    arr = b.arr
    return _run(pg, "all_reduce", lambda: pg.allreduce(arr, op), [b], async_op,
                lambda: f"{_desc(tensor)}:{op.name}", tensor)


def broadcast(tensor: Tensor, src: int | None = None, group=None, async_op: bool = False,
              group_src: int | None = None) -> Work | None:
    """Copy rank ``src``'s ``tensor`` into every rank's ``tensor``
    (``torch.distributed.broadcast``; ``src`` is a global rank, ``group_src`` a group rank).
    """
    pg = _group(group)
    if pg is None:
        return None
    root = _root(pg, "broadcast", src, group_src)
    b = _Buf(tensor)
    return _run(pg, "broadcast", lambda: pg.broadcast(b.flat(), root), [b], async_op,
                f"{_desc(tensor)}:src={root}", tensor)


def reduce(tensor: Tensor, dst: int | None = None, op: ReduceOp = ReduceOp.SUM, group=None,
           async_op: bool = False, group_dst: int | None = None) -> Work | None:
    """Reduce ``tensor`` over the ranks into rank ``dst``'s ``tensor``
    (``torch.distributed.reduce``); the other ranks' tensors are left unchanged."""
    pg = _group(group)
    if pg is None:
        return None
    root = _root(pg, "reduce", dst, group_dst)
    op = _check_op("reduce", op, tensor.dtype)
    b = _Buf(tensor)
    return _run(pg, "reduce", lambda: pg.reduce(b.flat(), root, op), [b], async_op,
                f"{_desc(tensor)}:{op.name}:dst={root}", tensor)


def _check_list(what: str, name: str, tensors, pg: ProcessGroup, ref: Tensor) -> None:
    if not isinstance(tensors, (list, tuple)) or len(tensors) != pg.size():
        got = len(tensors) if isinstance(tensors, (list, tuple)) else type(tensors).__name__
        raise ValueError(f"{what}: {name} must hold one tensor per rank ({pg.size()}); got {got}")
    for t in tensors:
        if t.numel() != ref.numel():
            raise ValueError(f"{what}: every tensor in {name} must have {ref.numel()} elements "
                             f"(the size of the input); got {tuple(t.shape)}")
    _same_dtype(what, ref, tensors)


def _scatter_out(flat: np.ndarray, outs: list[Tensor]) -> None:
    m = flat.size // max(len(outs), 1)
    for i, t in enumerate(outs):
        np.copyto(numpy_view(t), flat[i * m:(i + 1) * m].reshape(tuple(t.shape)))
        t._bump_version()


def all_gather(tensor_list: list[Tensor], tensor: Tensor, group=None,
               async_op: bool = False) -> Work | None:
    """Every rank's ``tensor`` into ``tensor_list[r]`` on every rank
    (``torch.distributed.all_gather``)."""
    pg = _group(group)
    if pg is None:
        return None
    _check_list("all_gather", "tensor_list", tensor_list, pg, tensor)
    b = _Buf(tensor)
    out = np.empty(pg.size() * tensor.numel(), tensor.dtype.np)

    def body():
        pg.allgather(out, b.flat())
        _scatter_out(out, list(tensor_list))

    return _run(pg, "all_gather", body, [], async_op, _desc(tensor), list(tensor_list))


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group=None,
                           async_op: bool = False) -> Work | None:
    """Every rank's ``input_tensor`` concatenated (rank order) into ``output_tensor``, whose
    size is ``world_size`` times the input's (``torch.distributed.all_gather_into_tensor``;
    a ``(world_size * n, ...)`` or ``(world_size, n, ...)`` output)."""
    pg = _group(group)
    if pg is None:
        return None
    if output_tensor.numel() != pg.size() * input_tensor.numel():
        raise ValueError(f"all_gather_into_tensor: output tensor size must be equal to "
                         f"world_size times input tensor size; got {tuple(output_tensor.shape)}"
                         f" for input {tuple(input_tensor.shape)} and world_size {pg.size()}")
    _same_dtype("all_gather_into_tensor", output_tensor, [input_tensor])
    bi, bo = _Buf(input_tensor), _Buf(output_tensor)
    return _run(pg, "all_gather_into_tensor", lambda: pg.allgather(bo.flat(), bi.flat()), [bo],
                async_op, _desc(input_tensor), output_tensor)


def reduce_scatter(output: Tensor, input_list: list[Tensor], op: ReduceOp = ReduceOp.SUM,
                   group=None, async_op: bool = False) -> Work | None:
    """Rank r gets ``input_list[r]`` reduced over the ranks
    (``torch.distributed.reduce_scatter``)."""
    pg = _group(group)
    if pg is None:
        return None
    _check_list("reduce_scatter", "input_list", input_list, pg, output)
    op = _check_op("reduce_scatter", op, output.dtype)
    b = _Buf(output)
    inp = np.concatenate([np.ascontiguousarray(numpy_view(t)).reshape(-1) for t in input_list])
    return _run(pg, "reduce_scatter", lambda: pg.reduce_scatter(b.flat(), inp, op), [b],
                async_op, f"{_desc(output)}:{op.name}", output)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: ReduceOp = ReduceOp.SUM,
                          group=None, async_op: bool = False) -> Work | None:
    """Rank r gets chunk r of ``input`` (``world_size`` chunks of ``output``'s size, in
    order) reduced over the ranks (``torch.distributed.reduce_scatter_tensor``)."""
    pg = _group(group)
    if pg is None:
        return None
    if input.numel() != pg.size() * output.numel():
        raise ValueError(f"reduce_scatter_tensor: input tensor must be the same size as output "
                         f"size times world size; got {tuple(input.shape)} for output "
                         f"{tuple(output.shape)} and world_size {pg.size()}")
    _same_dtype("reduce_scatter_tensor", output, [input])
    op = _check_op("reduce_scatter_tensor", op, output.dtype)
    bo, bi = _Buf(output), _Buf(input)
    return _run(pg, "reduce_scatter_tensor", lambda: pg.reduce_scatter(bo.flat(), bi.flat(), op),
                [bo], async_op, f"{_desc(output)}:{op.name}", output)


def gather(tensor: Tensor, gather_list: list[Tensor] | None = None, dst: int | None = None,
           group=None, async_op: bool = False, group_dst: int | None = None) -> Work | None:
    """Every rank's ``tensor`` into ``gather_list`` on rank ``dst``
    (``torch.distributed.gather``); other ranks pass no list."""
    pg = _group(group)
    if pg is None:
        return None
    root = _root(pg, "gather", dst, group_dst)
    if pg.rank() == root:
        _check_list("gather", "gather_list", gather_list, pg, tensor)
        out = np.empty(pg.size() * tensor.numel(), tensor.dtype.np)
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination "
                         "ranks.")
    else:
        out = None
    b = _Buf(tensor)

    def body():
        pg.gather(out, b.flat(), root)
        if out is not None:
            _scatter_out(out, list(gather_list))

    return _run(pg, "gather", body, [], async_op, f"{_desc(tensor)}:dst={root}", gather_list)


def scatter(tensor: Tensor, scatter_list: list[Tensor] | None = None, src: int | None = None,
            group=None, async_op: bool = False, group_src: int | None = None) -> Work | None:
    """Rank r's ``tensor`` receives ``scatter_list[r]`` of rank ``src``
    (``torch.distributed.scatter``); other ranks pass no list."""
    pg = _group(group)
    if pg is None:
        return None
    root = _root(pg, "scatter", src, group_src)
    if pg.rank() == root:
        _check_list("scatter", "scatter_list", scatter_list, pg, tensor)
        inp = np.concatenate([np.ascontiguousarray(numpy_view(t)).reshape(-1)
                              for t in scatter_list])
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    else:
        inp = None
    b = _Buf(tensor)
    return _run(pg, "scatter", lambda: pg.scatter(b.flat(), inp, root), [b], async_op,
                f"{_desc(tensor)}:src={root}", tensor)


def _split_counts(what: str, t: Tensor, splits, n: int) -> list[int]:
    rows = t.shape[0] if t.dim() else 1
    per_row = t.numel() // rows if rows else 0
    if not splits:
        if rows % n:
            raise ValueError(f"{what}: dimension 0 ({rows}) must divide evenly by world_size "
                             f"({n}) when no split sizes are given")
        splits = [rows // n] * n
    if len(splits) != n or sum(splits) != rows:
        raise ValueError(f"{what}: split sizes {list(splits)} must have {n} entries summing to "
                         f"dimension 0 ({rows})")
    return [s * per_row * t.dtype.itemsize for s in splits]


def all_to_all_single(output: Tensor, input: Tensor, output_split_sizes: list[int] | None = None,
                      input_split_sizes: list[int] | None = None, group=None,
                      async_op: bool = False) -> Work | None:
    """Rank r sends the j-th split (along dim 0) of ``input`` to rank j and receives rank j's
    r-th split into the j-th split of ``output`` (``torch.distributed.all_to_all_single``);
    equal splits when no sizes are given."""
    pg = _group(group)
    if pg is None:
        return None
    _same_dtype("all_to_all_single", output, [input])
    n = pg.size()
    in_counts = _split_counts("all_to_all_single", input, input_split_sizes, n)
    out_counts = _split_counts("all_to_all_single", output, output_split_sizes, n)
    bo, bi = _Buf(output), _Buf(input)
    return _run(pg, "all_to_all_single",
                lambda: pg.alltoall(bo.flat(), out_counts, bi.flat(), in_counts), [bo],
                async_op, f"{input.dtype}", output)


def all_to_all(output_tensor_list: list[Tensor], input_tensor_list: list[Tensor], group=None,
               async_op: bool = False) -> Work | None:
    """Rank r sends ``input_tensor_list[j]`` to rank j and receives rank j's r-th tensor into
    ``output_tensor_list[j]`` (``torch.distributed.all_to_all``)."""
    pg = _group(group)
    if pg is None:
        return None
    n = pg.size()
    if len(output_tensor_list) != n or len(input_tensor_list) != n:
        raise ValueError(f"all_to_all: both lists must hold one tensor per rank ({n})")
    _same_dtype("all_to_all", input_tensor_list[0],
                list(input_tensor_list) + list(output_tensor_list))
    inp = np.concatenate([np.ascontiguousarray(numpy_view(t)).reshape(-1).view(np.uint8)
                          for t in input_tensor_list])
    in_counts = [t.numel() * t.dtype.itemsize for t in input_tensor_list]
    out_counts = [t.numel() * t.dtype.itemsize for t in output_tensor_list]
    out = np.empty(sum(out_counts), np.uint8)

    def body():
        pg.alltoall(out, out_counts, inp, in_counts)
        start = 0
        for t, c in zip(output_tensor_list, out_counts):
            np.copyto(numpy_view(t), out[start:start + c].view(t.dtype.np).reshape(t.shape))
            t._bump_version()
            start += c

    return _run(pg, "all_to_all", body, [], async_op, f"{input_tensor_list[0].dtype}",
                list(output_tensor_list))


def barrier(group=None, async_op: bool = False, device_ids=None,
            timeout: timedelta | None = None) -> Work | None:
    """Wait until every rank of ``group`` has reached the barrier
    (``torch.distributed.barrier``); with ``timeout``, a barrier not passed by then raises
    ``DistBackendError`` (as ``Work.wait(timeout)``)."""
    pg = _group(group)
    if pg is None:
        return None
    if timeout is not None and not async_op:
        _run(pg, "barrier", pg.barrier, [], True, "").wait(timeout)
        return None
    return _run(pg, "barrier", pg.barrier, [], async_op, "")


_MONITORED_TAG = 32001  # the tag monitored_barrier's messages use


def monitored_barrier(group=None, timeout: timedelta | None = None,
                      wait_all_ranks: bool = False) -> None:
    """A barrier that names the ranks that did not reach it
    (``torch.distributed.monitored_barrier``).

    Every rank other than the group's rank 0 reports to rank 0 and waits for its answer; rank
    0 waits up to ``timeout`` (default: the group's) in all for the reports and raises
    ``DistBackendError`` (a ``RuntimeError``) naming the first rank that did not report,
    or, with ``wait_all_ranks``, every one of them (torch's ``[Rank 0]: Ranks 1, 2 failed to
    pass monitoredBarrier in 1000 ms``). Messages travel as point to point with tag 32001.

    Example (on every rank; rank 2 never arrives)::

        dist.monitored_barrier(timeout=timedelta(seconds=5), wait_all_ranks=True)
        # rank 0: DistBackendError: [Rank 0]: Rank 2 failed to pass monitoredBarrier in 5000 ms
    """
    pg = _group(group)
    if pg is None:
        return
    secs = timeout.total_seconds() if timeout is not None else pg.timeout
    token = np.zeros(1, np.uint8)
    me = pg.ranks[pg.rank()]

    def root():
        deadline = time.monotonic() + secs
        missing = []
        for j in range(1, pg.size()):
            try:
                pg.recv(token, j, _MONITORED_TAG, max(deadline - time.monotonic(), 0.0))
            except TimeoutError:
                missing.append(pg.ranks[j])
                if not wait_all_ranks:
                    break
        if missing:
            who = (f"Rank {missing[0]}" if len(missing) == 1 else
                   "Ranks " + ", ".join(str(r) for r in missing))
            raise DistBackendError(f"[Rank {me}]: {who} failed to pass monitoredBarrier in "
                                   f"{round(secs * 1000)} ms")
        for j in range(1, pg.size()):
            pg.send(token, j, _MONITORED_TAG)
        pg.barrier()  # every answer read (shm's messages live in rank 0's store)

    def member():
        pg.send(token, 0, _MONITORED_TAG)
        pg.recv(token, 0, _MONITORED_TAG)
        pg.barrier()

    pg.seq += 1
    pg.submit(root if pg.rank() == 0 else member, None)


# ---- point to point ---------------------------------------------------------------------------
def _peer(pg: ProcessGroup, what: str, rank, group_rank) -> int:
    if rank is None and group_rank is None:
        raise ValueError(f"{what}: a peer rank is required")
    peer = _root(pg, what, rank, group_rank)
    if peer == pg.rank():
        raise ValueError(f"Invalid destination rank: should not be the same as the rank of the "
                         f"current process ({pg.ranks[peer]})" if what == "send" else
                         f"Invalid source rank: should not be the same as the rank of the "
                         f"current process ({pg.ranks[peer]})")
    return peer


def isend(tensor: Tensor, dst: int | None = None, group=None, tag: int = 0,
          group_dst: int | None = None) -> Work | None:
    """Send ``tensor`` to rank ``dst`` without waiting (``torch.distributed.isend``)."""
    pg = _group(group)
    if pg is None:
        return None
    peer = _peer(pg, "send", dst, group_dst)
    data = np.ascontiguousarray(numpy_view(tensor)).copy()
    handle = pg.start_p2p("send", data.reshape(-1), peer, tag)
    if handle is not None:
        return PostedWork(handle, tensor)
    return pg.submit(lambda: pg.send(data, peer, tag), Work(tensor))


def send(tensor: Tensor, dst: int | None = None, group=None, tag: int = 0,
         group_dst: int | None = None) -> None:
    """Send ``tensor`` to rank ``dst`` (``torch.distributed.send``); pairs with ``recv``."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def irecv(tensor: Tensor, src: int | None = None, group=None, tag: int = 0,
          group_src: int | None = None) -> Work | None:
    """Receive into ``tensor`` from rank ``src`` (any rank when None) without waiting
    (``torch.distributed.irecv``)."""
    pg = _group(group)
    if pg is None:
        return None
    peer = None if src is None and group_src is None else _peer(pg, "recv", src, group_src)
    b = _Buf(tensor)
    handle = pg.start_p2p("recv", b.flat(), peer, tag)
    if handle is not None:
        def finish(source: int) -> None:
            posted.source = pg.ranks[source]
            b.done()

        posted = PostedWork(handle, tensor, finish)
        return posted
    work = Work(tensor)

    def body():
        work.source = pg.ranks[pg.recv(b.flat(), peer, tag)]
        b.done()

    return pg.submit(body, work)


def recv(tensor: Tensor, src: int | None = None, group=None, tag: int = 0,
         group_src: int | None = None) -> int:
    """Receive into ``tensor`` from rank ``src`` (any when None); returns the sender's global
    rank, or -1 when this rank is not in ``group`` (``torch.distributed.recv``)."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    return work.source


# ---- objects ----------------------------------------------------------------------------------
def _gather_bytes(pg: ProcessGroup, name: str, data: bytes) -> list[bytes]:
    out: list[bytes] = []

    def body():
        out.extend(pg.allgather_bytes(data))

    _run(pg, name, body, [], False, "")
    return out


def all_gather_object(object_list: list, obj, group=None) -> None:
    """Every rank's picklable ``obj`` into ``object_list[r]`` (``torch.distributed.
    all_gather_object``; ``object_list`` must have ``world_size`` entries)."""
    pg = _group(group)
    if pg is None:
        return
    if len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list must have {pg.size()} entries; got "
                         f"{len(object_list)}")
    for i, data in enumerate(_gather_bytes(pg, "all_gather_object", pickle.dumps(obj))):
        object_list[i] = pickle.loads(data)


def gather_object(obj, object_gather_list: list | None = None, dst: int | None = None,
                  group=None, group_dst: int | None = None) -> None:
    """Every rank's ``obj`` into ``object_gather_list`` on rank ``dst``
    (``torch.distributed.gather_object``)."""
    pg = _group(group)
    if pg is None:
        return
    root = _root(pg, "gather_object", dst, group_dst)
    datas = _gather_bytes(pg, "gather_object", pickle.dumps(obj))
    if pg.rank() == root:
        for i, data in enumerate(datas):
            object_gather_list[i] = pickle.loads(data)


def scatter_object_list(scatter_object_output_list: list,
                        scatter_object_input_list: list | None = None, src: int | None = None,
                        group=None, group_src: int | None = None) -> None:
    """Rank r's ``scatter_object_output_list[0]`` receives ``scatter_object_input_list[r]`` of
    rank ``src`` (picklable objects; ``torch.distributed.scatter_object_list``)."""
    pg = _group(group)
    if not isinstance(scatter_object_output_list, list) or not scatter_object_output_list:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at "
                         "least 1.")
    if pg is None:
        return
    root = _root(pg, "scatter_object_list", src, group_src)
    n = pg.size()
    sizes = np.zeros(n, np.int64)
    if pg.rank() == root:
        if scatter_object_input_list is None or len(scatter_object_input_list) != n:
            got = None if scatter_object_input_list is None else len(scatter_object_input_list)
            raise ValueError(f"scatter_object_list: scatter_object_input_list must hold one "
                             f"object per rank ({n}) on the source rank; got {got}")
        blobs = [pickle.dumps(o) for o in scatter_object_input_list]
        sizes[:] = [len(b) for b in blobs]
    box: list = []

    def body():
        pg.broadcast(sizes, root)
        width = int(sizes.max())
        out = np.empty(width, np.uint8)
        inp = None
        if pg.rank() == root:
            inp = np.zeros(n * width, np.uint8)
            for j, b in enumerate(blobs):
                inp[j * width:j * width + len(b)] = np.frombuffer(b, np.uint8)
        pg.scatter(out, inp, root)
        box.append(out[:int(sizes[pg.rank()])].tobytes())

    _run(pg, "scatter_object_list", body, [], False, "")
    scatter_object_output_list[0] = pickle.loads(box[0])


def broadcast_object_list(object_list: list, src: int | None = None, group=None, device=None,
                          group_src: int | None = None) -> None:
    """Rank ``src``'s picklable objects replace ``object_list``'s entries on every rank
    (``torch.distributed.broadcast_object_list``)."""
    pg = _group(group)
    if pg is None:
        return
    root = _root(pg, "broadcast_object_list", src, group_src)
    data = pickle.dumps(list(object_list)) if pg.rank() == root else b""
    objs = pickle.loads(_gather_bytes(pg, "broadcast_object_list", data)[root])
    if len(objs) != len(object_list):
        raise ValueError(f"broadcast_object_list: rank {pg.ranks[root]} sent {len(objs)} "
                         f"objects; this rank's list has {len(object_list)} entries")
    object_list[:] = objs


# ---- memory the engine reduces in place -------------------------------------------------------
def empty_shared(*size, dtype: dt.DType | None = None, group=None) -> Tensor:
    """An uninitialised contiguous CPU tensor whose storage the group's engine can reduce
    without a copy-in (ember's own; DDP allocates its gradient buckets with it).

    On the ``shm`` engine the storage lives in this rank's shared segment, where peers read it
    directly during ``all_reduce`` (NOTE [Epochs and slots] in ``shm.py``); views of it (for
    example gradients as views of a bucket) stay in the segment. On other engines, or when the
    segment's heap (``EMBER_SHM_HEAP_MB``) is full, it is an ordinary tensor: the result is
    the same, only slower. Memory returns to the segment when the last view dies.

    Args:
        size: the shape, as ints or one tuple.
        dtype: element type (default: the default dtype).
        group: whose engine provides the memory (default: the world).
    """
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    dtype = dtype or dt.get_default_dtype()
    pg = _group(group)
    numel = int(np.prod(size, dtype=np.int64)) if size else 1
    raw = pg.empty_shared(numel * dtype.itemsize) if pg is not None and numel else None
    if raw is None:
        return from_numpy(np.empty(size, dtype.np))
    return from_numpy(raw.view(dtype.np).reshape(size))


def alloc_buffer(nbytes: int, group=None) -> np.ndarray:
    """A ``uint8`` NumPy array of ``nbytes`` that the group's engine reduces without a copy-in
    (in the shm segment on the ``shm`` engine, ordinary memory elsewhere); see
    ``empty_shared``. ``ember.from_numpy(buf.view(np.float32))`` makes a tensor over it; the
    memory returns to the segment when the last array or tensor over it dies."""
    pg = _group(group)
    raw = pg.empty_shared(nbytes) if pg is not None and nbytes else None
    return np.empty(nbytes, np.uint8) if raw is None else raw
