"""ember.distributed: process groups, collectives and a launcher (torch.distributed's API).

Engines (``backend=``): ``"shm"``, ember's shared-memory engine for the ranks of one machine
(the default); ``"mpi"``, mpi4py over any MPI (``pip install "ember[mpi]"`` brings mpi4py and
the MPICH wheel), for several machines and the default under ``mpiexec``; ``"gloo"`` is
accepted as the CPU default (shm, or MPI under ``mpiexec``); ``"nccl"`` is refused until a GPU
engine exists (the ``ProcessGroup`` interface is where it would plug in).

One machine, two ranks::

    python -m ember.distributed.run --nproc-per-node 2 train.py --epochs 3

Two hosts over MPI (the same venv and script path on both; ``-hosts`` or a hostfile, ssh
between the hosts; use ``--allow-run-as-root`` with the Open MPI wheel as root)::

    .venv/bin/mpiexec -n 4 -ppn 2 -hosts node1,node2 .venv/bin/python train.py

where ``train.py`` calls ``init_process_group("mpi")`` (or ``"gloo"``); ranks and the world
size come from MPI. Under Slurm: ``srun -N 2 --ntasks-per-node 2 python train.py``.

``empty_shared`` allocates tensors the engine reduces without a copy-in (DDP's buckets);
``EMBER_DISTRIBUTED_DEBUG=DETAIL`` logs every collective and checks that the ranks agree.

Faults: a rank that raises, dies or hangs makes the others raise ``DistBackendError`` naming
it (a hang: the timeout) within ``init_process_group(timeout=...)`` on both engines; the
launcher then reports the first failure and exits non-zero. Under ``mpiexec`` a rank killed
by a signal ends the whole job at once (MPICH's launcher names it); a raising rank tells the
others, then ends the job with ``MPI_Abort`` (NOTE [MPI faults] in ``mpi.py``).
``Work.wait(timeout)`` and ``monitored_barrier`` bound a single wait.
"""

from __future__ import annotations

from ember.distributed.c10d import (
    Backend,
    GroupMember,
    all_gather,
    all_gather_into_tensor,
    all_gather_object,
    all_reduce,
    all_to_all,
    all_to_all_single,
    alloc_buffer,
    barrier,
    broadcast,
    broadcast_object_list,
    destroy_process_group,
    empty_shared,
    gather,
    gather_object,
    get_backend,
    get_debug_level,
    get_global_rank,
    get_group_rank,
    get_node_local_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    irecv,
    is_available,
    is_backend_available,
    is_gloo_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
    is_torchelastic_launched,
    isend,
    monitored_barrier,
    new_group,
    recv,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
    scatter_object_list,
    send,
)
from ember.distributed.errors import DistBackendError, DistError, DistNetworkError, DistStoreError
from ember.distributed.p2p import P2POp, batch_isend_irecv, recv_object_list, send_object_list
from ember.distributed.process_group import Future, ProcessGroup, ReduceOp, Work
from ember.distributed.store import PrefixStore, Store, TCPStore
from ember.distributed.timeline import record_timeline, timeline

__all__ = [
    "Backend", "GroupMember", "group", "ReduceOp", "Work", "Future", "ProcessGroup",
    "Store", "TCPStore", "PrefixStore",
    "DistError", "DistBackendError", "DistNetworkError", "DistStoreError",
    "init_process_group", "destroy_process_group", "is_initialized", "is_available",
    "get_rank", "get_world_size", "get_backend", "new_group", "get_global_rank",
    "get_group_rank", "get_process_group_ranks", "is_mpi_available", "is_nccl_available",
    "is_gloo_available", "is_torchelastic_launched", "get_debug_level",
    "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
    "reduce_scatter", "reduce_scatter_tensor", "gather", "scatter", "all_to_all_single",
    "all_to_all", "send", "recv", "isend", "irecv", "barrier", "broadcast_object_list",
    "all_gather_object", "gather_object", "empty_shared", "alloc_buffer", "record_timeline",
    "timeline", "monitored_barrier", "scatter_object_list", "P2POp", "batch_isend_irecv",
    "send_object_list", "recv_object_list", "is_backend_available", "get_node_local_rank",
]
