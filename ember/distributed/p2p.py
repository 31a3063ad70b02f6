"""Batched point to point and objects between two ranks (torch.distributed's ``P2POp``,
``batch_isend_irecv``, ``send_object_list``, ``recv_object_list``).

``batch_isend_irecv`` hands the whole batch to the engine at once (``ProcessGroup.batch_p2p``),
which starts every send before it waits for any receive: a ring of exchanges, where each rank
receives from one neighbour while it sends to the other, cannot deadlock whatever the order
of the list, as in torch.
"""

from __future__ import annotations

import pickle

import numpy as np

from ember.distributed import c10d
from ember.distributed.process_group import Work
from ember.tensor.tensor import Tensor

__all__ = ["P2POp", "batch_isend_irecv", "send_object_list", "recv_object_list"]


class P2POp:
    """One send or receive of a batch (``torch.distributed.P2POp``).

    Args:
        op: ``ember.distributed.isend`` or ``ember.distributed.irecv``.
        tensor: what to send, or where to receive.
        peer: the other rank (global); or ``group_peer``, its rank in ``group``.
        group: the process group (default: the world).
        tag: matches a send with a receive.

    Example:
        >>> import ember, ember.distributed as dist
        >>> dist.P2POp(dist.isend, ember.ones(2), peer=1).peer
        1
    """

    def __init__(self, op, tensor: Tensor, peer: int | None = None, group=None, tag: int = 0,
                 group_peer: int | None = None):
        if op not in (c10d.isend, c10d.irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type "
                             "``torch.distributed.isend`` or ``torch.distributed.irecv``.")
        if not isinstance(tensor, Tensor):
            raise TypeError(f"P2POp: expected an ember Tensor; got {type(tensor).__name__}")
        self.op, self.tensor, self.peer, self.group = op, tensor, peer, group
        self.tag, self.group_peer = tag, group_peer

    def __repr__(self) -> str:
        kind = "isend" if self.op is c10d.isend else "irecv"
        return f"P2POp({kind} peer={self.peer} tag={self.tag} shape={tuple(self.tensor.shape)})"


def batch_isend_irecv(p2p_op_list: list[P2POp]) -> list[Work]:
    """Start every send and receive of ``p2p_op_list``; one ``Work`` per op, in order
    (``torch.distributed.batch_isend_irecv``). Every op must use the same group.

    Raises:
        ValueError: an entry that is not a ``P2POp``, or ops on different groups.

    Example (two ranks swap a tensor)::

        ops = [dist.P2POp(dist.isend, mine, peer=1 - rank),
               dist.P2POp(dist.irecv, theirs, peer=1 - rank)]
        for work in dist.batch_isend_irecv(ops):
            work.wait()
    """
    if not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``torch.distributed.P2POp``.")
    if not p2p_op_list:
        raise IndexError("list index out of range")
    group = p2p_op_list[0].group
    if any(p.group is not group for p in p2p_op_list):
        raise ValueError("All ops need to use the same group.")
    pg = c10d._group(group)
    if pg is None:
        return []
    plan, works, bufs = [], [], []
    for p in p2p_op_list:
        sending = p.op is c10d.isend
        peer = c10d._peer(pg, "send" if sending else "recv", p.peer, p.group_peer)
        if sending:
            arr = np.ascontiguousarray(c10d.numpy_view(p.tensor)).copy()
            bufs.append(None)
        else:
            b = c10d._Buf(p.tensor)
            arr = b.flat()
            bufs.append(b)
        plan.append(("send" if sending else "recv", arr.reshape(-1), peer, p.tag))
        works.append(Work(p.tensor))
    batch = Work()

    def body():
        pg.batch_p2p(plan)
        for b in bufs:
            if b is not None:
                b.done()

    pg.seq += 1
    pg.submit(body, batch)
    batch.get_future().then(lambda fut: [w._done(fut._exc) for w in works])
    return works


def send_object_list(object_list: list, dst: int | None = None, group=None, device=None,
                     group_dst: int | None = None, use_batch: bool = False) -> None:
    """Send the picklable objects of ``object_list`` to rank ``dst``, which receives them with
    ``recv_object_list`` into a list of the same length (``torch.distributed.
    send_object_list``)."""
    pg = c10d._group(group)
    if pg is None:
        return
    peer = c10d._peer(pg, "send", dst, group_dst)
    blobs = [pickle.dumps(o) for o in object_list]
    sizes = np.array([len(b) for b in blobs], np.int64)
    data = np.frombuffer(b"".join(blobs) or b"\0", np.uint8)
    pg.submit(lambda: (pg.send(sizes, peer, 0), pg.send(data, peer, 0)), None)


def recv_object_list(object_list: list, src: int | None = None, group=None, device=None,
                     group_src: int | None = None, use_batch: bool = False) -> int:
    """Receive the objects ``send_object_list`` sent into ``object_list`` (which must have as
    many entries); returns the sender's global rank, -1 outside ``group``
    (``torch.distributed.recv_object_list``)."""
    pg = c10d._group(group)
    if pg is None:
        return -1
    peer = None if src is None and group_src is None else c10d._peer(pg, "recv", src,
                                                                      group_src)
    sizes = np.empty(len(object_list), np.int64)
    got: list = []

    def body():
        sender = pg.recv(sizes, peer, 0)
        data = np.empty(max(int(sizes.sum()), 1), np.uint8)
        pg.recv(data, sender, 0)
        got.extend([sender, data])

    pg.submit(body, None)
    sender, data = got
    start = 0
    for i, n in enumerate(sizes.tolist()):
        object_list[i] = pickle.loads(data[start:start + n].tobytes())
        start += n
    return pg.ranks[sender]
