"""The ``"mpi"`` engine: collectives through mpi4py, for ranks on one or several machines.

Ranks and the world size come from ``MPI.COMM_WORLD`` (start the job with ``mpiexec``); the
world group works on a duplicate of it and ``new_group`` splits that. Data moves as bytes;
reductions use MPI's own operations for the types MPI knows (float32/64, integers, bool as
logical operations) and a NumPy-backed user operation over ``itemsize``-byte elements for
float16 and bfloat16, so every ember dtype reduces. Blocking MPI calls release the GIL, so a
collective on the group's communication thread runs beside autograd. MPI calls cannot time
out: a rank that raises aborts the whole MPI job (``MPI_Abort``) instead of leaving its peers
waiting, and ``mpiexec`` reports it.
"""

from __future__ import annotations

import sys

import numpy as np

from ember.distributed.process_group import REDUCE_UFUNCS, ProcessGroup, ReduceOp

__all__ = ["MpiProcessGroup"]


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise RuntimeError("init_process_group: backend 'mpi' needs mpi4py\nhint: pip install "
                           "'ember[mpi]' (mpi4py and the MPICH wheel)") from e
    return MPI


class MpiProcessGroup(ProcessGroup):
    """A group over an MPI communicator (see the module docstring)."""

    backend_name = "mpi"
    abort_after_report = True  # MPI_Abort ends the process: print the traceback first

    def __init__(self, comm, ranks: list[int], timeout: float):
        super().__init__(comm.Get_rank(), comm.Get_size(), ranks, timeout)
        self.comm = comm
        self.MPI = _mpi()
        self._in_place = self.MPI.IN_PLACE
        self._types: dict = {}
        self._user_ops: dict = {}
        self._specs: dict = {}

    @classmethod
    def world(cls, timeout: float) -> MpiProcessGroup:
        """The world group: every rank of ``MPI.COMM_WORLD``."""
        comm = _mpi().COMM_WORLD.Dup()
        return cls(comm, list(range(comm.Get_size())), timeout)

    def split(self, ranks: list[int], timeout: float) -> MpiProcessGroup | None:
        """A group of ``ranks`` (collective over this group; None on the others)."""
        MPI = self.MPI
        me = self.rank()
        sub = self.comm.Split(0 if me in ranks else MPI.UNDEFINED, me)
        if sub == MPI.COMM_NULL:
            return None
        return MpiProcessGroup(sub, [self.ranks[r] for r in ranks], timeout)

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
        spec, mop = self._spec(arr, op)
        self.comm.Allreduce(self._in_place, spec, mop)
        if op is ReduceOp.AVG:
            self._avg(arr, op)

    def broadcast(self, arr: np.ndarray, root: int) -> None:
        self.comm.Bcast([arr.reshape(-1).view(np.uint8), self.MPI.BYTE], root)

    def reduce(self, arr: np.ndarray, root: int, op: ReduceOp) -> None:
        spec, mop = self._spec(arr, op)
        if self.rank() == root:
            self.comm.Reduce(self.MPI.IN_PLACE, spec, mop, root)
            self._avg(arr, op)
        else:
            self.comm.Reduce(spec, None, mop, root)

    def _raw(self, arr: np.ndarray | None):
        return None if arr is None else [arr.reshape(-1).view(np.uint8), self.MPI.BYTE]

    def allgather(self, out: np.ndarray, inp: np.ndarray) -> None:
        self.comm.Allgather(self._raw(inp), self._raw(out))

    def reduce_scatter(self, out: np.ndarray, inp: np.ndarray, op: ReduceOp) -> None:
        send, mop = self._spec(inp, op)
        recv, _ = self._spec(out)
        # mpi4py wants [buffer, datatype] here: it derives the counts from the byte sizes
        self.comm.Reduce_scatter_block([send[0], send[2]], [recv[0], recv[2]], mop)
        self._avg(out, op)

    def gather(self, out: np.ndarray | None, inp: np.ndarray, root: int) -> None:
        self.comm.Gather(self._raw(inp), self._raw(out) if self.rank() == root else None, root)

    def scatter(self, out: np.ndarray, inp: np.ndarray | None, root: int) -> None:
        self.comm.Scatter(self._raw(inp) if self.rank() == root else None, self._raw(out), root)

    def alltoall(self, out: np.ndarray, out_counts: list[int], inp: np.ndarray,
                 in_counts: list[int]) -> None:
        def displs(counts):
            return [0, *np.cumsum(counts)[:-1].tolist()]

        self.comm.Alltoallv([inp.reshape(-1).view(np.uint8), (in_counts, displs(in_counts)),
                             self.MPI.BYTE],
                            [out.reshape(-1).view(np.uint8), (out_counts, displs(out_counts)),
                             self.MPI.BYTE])

    def send(self, arr: np.ndarray, dst: int, tag: int) -> None:
        self.comm.Send(self._raw(arr), dst, tag)

    def recv(self, arr: np.ndarray, src: int | None, tag: int) -> int:
        status = self.MPI.Status()
        self.comm.Recv(self._raw(arr), self.MPI.ANY_SOURCE if src is None else src, tag, status)
        return status.Get_source()

    def barrier(self) -> None:
        self.comm.Barrier()

    def allgather_bytes(self, data: bytes) -> list[bytes]:
        return self.comm.allgather(data)

    def abort(self, reason: str) -> None:
        """An uncaught exception on this rank: end the whole MPI job rather than leave the
        peers blocked in MPI calls that cannot time out."""
        print(f"ember.distributed (mpi): rank {self.ranks[self.rank()]} failed: {reason}; "
              "aborting the MPI job", file=sys.stderr, flush=True)
        self.MPI.COMM_WORLD.Abort(1)
