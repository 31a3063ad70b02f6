"""``DistributedDataParallel``: gradients all-reduced in buckets while backward runs.

NOTE [DDP and the layers]
DDP lives in ``ember.nn`` (L8), as torch's does, but the collectives live in
``ember.distributed`` (L9), which ``ember.nn`` may not import. DDP therefore reaches the
collectives through the *loaded* module (``sys.modules``): a process group exists only after
``ember.distributed.init_process_group`` ran, so by the time a DDP is built that module is
loaded; if it is not, no group can exist and DDP says so with torch's message. Nothing in
``ember.nn`` imports ``ember.distributed``.

NOTE [DDP buckets]
Gradients are reduced in buckets: flat buffers, one dtype each, which hold the gradients of
several parameters back to back (``bucket.views[k]`` is parameter k's gradient, shaped as the
parameter, over the bucket's memory). Buckets are assigned as torch's
``_compute_bucket_assignment_by_size``: parameters in the order given, one open bucket per
dtype, a bucket closes once it holds at least its limit (the first limit 1 MiB, the next ones
``bucket_cap_mb``). The parameters are given in *reverse registration order*, the order in
which a feed-forward model's backward produces their gradients (the last layer's first), so
the first bucket fills early and its all-reduce starts while backward is still computing the
earlier layers. After the first synchronized iteration the buckets are rebuilt once in the
order the gradients actually became ready, rank 0's order broadcast to every rank (torch's
bucket rebuild; not with ``find_unused_parameters`` unless ``static_graph``).

NOTE [DDP backward]
1. ``forward`` (grad enabled, outside ``no_sync``) arms the reducer: every parameter pending;
   with ``find_unused_parameters`` (or on ``static_graph``'s first iteration) the graph from the
   outputs is searched for the parameters that will get no gradient.
2. Each parameter's post-accumulate-grad hook (run by the engine right after its ``.grad`` is
   final for this backward) copies the gradient into its bucket view (nothing to copy when
   ``.grad`` already is the view: ``gradient_as_bucket_view``), marks it ready and, once its
   bucket has no pending parameter, launches the all-reduce of the bucket asynchronously
   (``all_reduce(..., async_op=True)``), buckets strictly in index order so every rank issues
   the same collectives in the same order. The first hook of a backward queues the final
   callback on the engine and marks the unused parameters ready (their view zeroed).
3. The final callback (end of backward) waits for every bucket's work, then writes the
   averaged gradients back: ``.grad`` becomes the bucket view (``gradient_as_bucket_view``) or
   gets a copy of it. In the plain case (no bucket views, no use map) nothing is copied: the
   bucket's memory is *handed over* (NOTE [DDP hand-over]). With ``find_unused_parameters``
   the ranks all-reduce which parameters each used; a parameter no rank used keeps its
   ``.grad`` untouched.
4. If some parameter never got a gradient and ``find_unused_parameters`` is off, its bucket
   never launches; the next ``forward`` raises torch's "Expected to have finished reduction"
   error listing the parameter indices.
NOTE [DDP hand-over]
Without bucket views, torch copies each reduced bucket back into the parameters' own
``.grad``: a pass over every gradient per step. Here the reduced bucket's memory becomes the
gradients instead: each ``.grad`` is set to a tensor of its own (not a view: ``_base`` is None)
over its slice of the bucket, and the bucket takes fresh memory (uninitialised: every
element is written as the next backward copies its gradient in). Nothing DDP writes later
aliases those gradients, so they behave as torch's copies do (a gradient kept across steps is
not overwritten); the memory returns to the engine's heap when the last of them dies (after
``zero_grad()`` sets them to None, the next bucket reuses it, already paged in). Bucket
memory is therefore always NumPy's or the engine's (``empty_shared``), kept alive by the
arrays over it; never the caching allocator's, whose block would be reused as soon as the
bucket tensor died, under the gradients still viewing it.

NOTE [DDP join]
Inside ``ddp.join()`` every synchronized forward starts with an all-reduce of (1, "will rebuild
its buckets") per training rank. A rank whose inputs ran out contributes (0, 0) from a loop at
the end of the ``with`` block and, while the count is not zero, shadows one iteration of the
others' collectives in their order: the bucket rebuild's broadcast (when announced), the
buffer broadcast, one all-reduce of a zeroed bucket per bucket, the use-map all-reduce. When
the count is zero every rank is done; the ranks agree on the highest rank among those that ran
the most iterations and broadcast its parameters and buffers (torch syncs the final model from
the last rank to join).

Averaging divides each gradient by the world size as it is copied into its bucket (in place
when it is the bucket view already), before the all-reduce, as torch's default comm hook
divides the bucket.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

import numpy as np

from ember.autograd import grad_mode
from ember.autograd.engine import queue_callback
from ember.autograd.graph import AccumulateGrad
from ember.core.device import CPU
from ember.nn.modules.module import Module
from ember.nn.parallel._timeline import recorder
from ember.tensor import Tensor, from_numpy, numpy_view

__all__ = ["DistributedDataParallel"]

_MB = 1024 * 1024
_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024  # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES
_BROADCAST_BUCKET_BYTES = 250 * _MB  # torch's _DEFAULT_BUCKET_BYTES for state broadcasts
_SHARED_BUCKETS = True  # allocate buckets with ember.distributed.empty_shared when offered


def _dist():
    """The loaded ``ember.distributed`` module (NOTE [DDP and the layers])."""
    mod = sys.modules.get("ember.distributed")
    if mod is None or not mod.is_initialized():
        raise ValueError("Default process group has not been initialized, please make sure to "
                         "call init_process_group.")
    return mod


class _Comm:
    """The collectives DDP uses, bound to one process group."""

    def __init__(self, group) -> None:
        dist = _dist()
        self.dist = dist
        self.group = group
        self.rank = dist.get_rank(group)
        self.world_size = dist.get_world_size(group)
        get_global = getattr(dist, "get_global_rank", None)
        self.root = 0 if group is None or get_global is None else get_global(group, 0)
        self.SUM = dist.ReduceOp.SUM
        self.MAX = dist.ReduceOp.MAX

    def all_reduce_async(self, t: Tensor):
        return self.dist.all_reduce(t, op=self.SUM, group=self.group, async_op=True)

    def all_reduce(self, t: Tensor, op=None) -> None:
        self.dist.all_reduce(t, op=self.SUM if op is None else op, group=self.group)

    def broadcast(self, t: Tensor, src: int | None = None) -> None:
        """Broadcast from the group's rank 0 (or the global rank ``src``)."""
        self.dist.broadcast(t, src=self.root if src is None else src, group=self.group)

    def buffer(self, numel: int, dtype, zero: bool = True) -> Tensor:
        """A flat tensor for a bucket (zeroed, or uninitialised with ``zero=False``): in the
        engine's shared memory when it offers it (``empty_shared``: the all-reduce then reads
        it without a copy), else ordinary memory."""
        alloc = getattr(self.dist, "empty_shared", None)
        if _SHARED_BUCKETS and alloc is not None and self.world_size > 1 and numel:
            t = alloc(numel, dtype=dtype, group=self.group)
            if zero:
                numpy_view(t).fill(0)
            return t
        # NumPy's memory, not the caching allocator's: a handed-over gradient is a NumPy view
        # of it, which keeps NumPy memory alive but not an allocator block
        # (NOTE [DDP hand-over])
        return from_numpy(np.zeros(numel, dtype.np) if zero else np.empty(numel, dtype.np))


# -- bucket assignment ----------------------------------------------------------------------------

def compute_bucket_assignment_by_size(sizes_bytes, keys, limits, indices=None):
    """Group tensors into buckets as ``torch.distributed._compute_bucket_assignment_by_size``.

    Args:
        sizes_bytes: each tensor's size in bytes, in the order to bucket them.
        keys: each tensor's bucket key (its dtype and device): tensors of different keys never
            share a bucket.
        limits: bucket size limits in bytes; bucket j of a key closes once it holds at least
            ``limits[min(j, len(limits) - 1)]`` bytes.
        indices: the index to report for each tensor (default: its position); when given, the
            buckets keep the order in which they closed, else they are sorted by their lowest
            index (torch's rule).

    Returns:
        ``(buckets, bucket_limits)``: lists of indices, and the limit each bucket had.
    """
    if indices is None:
        indices_given, indices = False, list(range(len(sizes_bytes)))
    else:
        indices_given, indices = True, list(indices)
    open_: dict = {}  # key -> [members, size, limit position]
    done: list = []
    for nbytes, key, idx in zip(sizes_bytes, keys, indices):
        b = open_.get(key)
        if b is None:
            b = open_[key] = [[], 0, 0]
        b[0].append(idx)
        b[1] += nbytes
        limit = limits[min(b[2], len(limits) - 1)]
        if b[1] >= limit:
            done.append((b[0], limit))
            open_[key] = [[], 0, b[2] + 1]
    for b in open_.values():
        if b[0]:
            done.append((b[0], limits[min(b[2], len(limits) - 1)]))
    if not indices_given:
        done.sort(key=lambda m: min(m[0]))
    return [m for m, _ in done], [lim for _, lim in done]


class _Bucket:
    __slots__ = ("index", "members", "offsets", "sizes", "shapes", "numel", "dtype", "tensor",
                 "array", "views", "arrays", "pending", "work", "t_launch", "t_done", "nbytes",
                 "after")

    def __init__(self, index: int, members: list, params: list, comm: _Comm) -> None:
        self.index = index
        self.members = members  # parameter indices
        self.dtype = dtype = params[members[0]]._dtype
        offsets, n = [], 0
        for i in members:
            offsets.append(n)
            n += params[i].numel()
        self.offsets = offsets
        self.sizes = [params[i].numel() for i in members]
        self.shapes = [params[i]._shape for i in members]
        self.numel = n
        self.nbytes = n * dtype.itemsize
        self._memory(comm.buffer(n, dtype))
        self.make_views()
        self.pending = len(members)
        self.work = self.after = None
        self.t_launch = self.t_done = 0

    def _memory(self, tensor: Tensor) -> None:
        self.tensor = tensor
        self.array = numpy_view(tensor)
        self.arrays = [self.array[off:off + size].reshape(shape) for off, size, shape in
                       zip(self.offsets, self.sizes, self.shapes)]
        self.views = [None] * len(self.members)  # make_views() makes them

    def make_views(self) -> None:
        """``views[k]``: parameter k's gradient as a view of the bucket tensor."""
        self.views = [self.tensor[off:off + size].view(shape) for off, size, shape in
                      zip(self.offsets, self.sizes, self.shapes)]

    def hand_over(self, params: list, comm: _Comm) -> None:
        """Make the reduced gradients the parameters' ``.grad`` and take fresh memory
        (NOTE [DDP hand-over])."""
        for i, a in zip(self.members, self.arrays):
            params[i].grad = from_numpy(a)
        self._memory(comm.buffer(self.numel, self.dtype, zero=False))


# -- the reducer ----------------------------------------------------------------------------------

_UNFINISHED = (
    "Expected to have finished reduction in the prior iteration before starting a new one. "
    "This error indicates that your module has parameters that were not used in producing "
    "loss. You can enable unused parameter detection by passing the keyword argument "
    "`find_unused_parameters=True` to `ember.nn.parallel.DistributedDataParallel`, and by \n"
    "making sure all `forward` function outputs participate in calculating loss. \n"
    "If you already have done the above, then the distributed data parallel module wasn't able "
    "to locate the output tensors in the return value of your module's `forward` function. "
    "Please include the loss function and the structure of the return value of `forward` of "
    "your module when reporting this issue (e.g. list, dict, iterable).\n"
    "Parameter indices which did not receive grad for rank {rank}: {indices}")
_UNFINISHED_HINT = (
    "\n In addition, you can set the environment variable EMBER_DISTRIBUTED_DEBUG to either "
    "INFO or DETAIL to print out information about which particular parameters did not receive "
    "gradient on this rank as part of this error")


class _Reducer:
    """The bucketed gradient all-reduce of one DDP (NOTE [DDP backward])."""

    def __init__(self, params: list, names: list, comm: _Comm, bucket_bytes_cap: int,
                 first_bucket_bytes_cap: int, find_unused: bool, as_view: bool,
                 static_graph: bool) -> None:
        self.params = params
        self.names = names
        self.comm = comm
        self.bucket_bytes_cap = bucket_bytes_cap
        self.first_bucket_bytes_cap = first_bucket_bytes_cap
        self.find_unused = find_unused
        self.as_view = as_view
        self.static_graph = static_graph
        self.limits = [first_bucket_bytes_cap, bucket_bytes_cap] \
            if first_bucket_bytes_cap < bucket_bytes_cap else [bucket_bytes_cap]
        order = list(reversed(range(len(params))))
        self._build(self._assign(order))
        self.has_rebuilt = False
        self.ready_order: list = []
        self.armed = False  # forward prepared a synchronized backward
        self.in_backward = False
        self.unfinished: list | None = None  # parameter indices left pending by a backward
        self.unused: list = []
        self.static_unused: list | None = None
        self.iteration = 0
        self.divisor = comm.world_size  # gradients are divided by it (join may lower it)
        # a reduced bucket's memory becomes the gradients (NOTE [DDP hand-over]); not with
        # bucket views (nothing to copy) nor when a use map decides what is copied
        self.hand_over = not as_view and not find_unused and not static_graph
        self._node_handles: list = []
        self.handles = [p.register_post_accumulate_grad_hook(self._make_hook(i))
                        for i, p in enumerate(params)]

    # -- buckets ------------------------------------------------------------------------------
    def _assign(self, order: list) -> list:
        ps = self.params
        return compute_bucket_assignment_by_size(
            [ps[i].numel() * ps[i]._dtype.itemsize for i in order],
            [(ps[i]._dtype, ps[i]._device) for i in order], self.limits, order)[0]

    def _build(self, assignment: list) -> None:
        old = getattr(self, "buckets", None)
        self.buckets = [_Bucket(j, m, self.params, self.comm) for j, m in enumerate(assignment)]
        self.where = [None] * len(self.params)  # param index -> (bucket, position)
        for b in self.buckets:
            for k, i in enumerate(b.members):
                self.where[i] = (b, k)
        if old is not None and self.as_view:  # gradients that viewed the old buckets move
            for i, p in enumerate(self.params):
                g = p._grad
                if g is not None:
                    b, k = self.where[i]
                    np.copyto(b.arrays[k], numpy_view(g))
                    p.grad = b.views[k]
        self.next_bucket = 0

    def bucket_indices(self) -> list:
        """The parameter indices of each bucket, in launch order."""
        return [list(b.members) for b in self.buckets]

    def _rebuild(self) -> None:
        """Rebuild the buckets in the order the gradients became ready (rank 0's order)."""
        self.has_rebuilt = True
        seen = set(self.ready_order)
        order = self.ready_order + [i for i in reversed(range(len(self.params)))
                                    if i not in seen]
        if self.comm.world_size > 1:
            t = from_numpy(np.asarray(order, dtype=np.int64))
            self.comm.broadcast(t)
            order = numpy_view(t).tolist()
        assignment = self._assign(order)
        if assignment != self.bucket_indices():
            self._build(assignment)

    # -- forward --------------------------------------------------------------------------------
    def prepare_for_forward(self) -> None:
        if self.unfinished:
            indices = " ".join(str(i) for i in self.unfinished)
            msg = _UNFINISHED.format(rank=self.comm.rank, indices=indices)
            if os.environ.get("EMBER_DISTRIBUTED_DEBUG", "").upper() in ("INFO", "DETAIL"):
                names = ", ".join(self.names[i] for i in self.unfinished)
                msg += f"\nParameters which did not receive grad for rank {self.comm.rank}: " \
                       f"{names}"
            else:
                msg += _UNFINISHED_HINT
            raise RuntimeError(msg)
        if self.will_rebuild():
            self._rebuild()

    def will_rebuild(self) -> bool:
        """Whether the next synchronized forward rebuilds the buckets."""
        return bool(self.ready_order) and not self.has_rebuilt and \
            (self.static_graph or not self.find_unused)

    def prepare_for_backward(self, outputs) -> None:
        """Arm the reducer for the backward of ``outputs`` (NOTE [DDP backward] step 1)."""
        for b in self.buckets:
            b.pending = len(b.members)
            b.work = b.after = None
            b.t_launch = b.t_done = 0
        self.next_bucket = 0
        self.ready = [False] * len(self.params)
        self.in_backward = False
        self.unfinished = None
        self.unused = []
        if self.find_unused or (self.static_graph and self.static_unused is None):
            used = _reachable_params(outputs)
            self.unused = [i for i, p in enumerate(self.params) if id(p) not in used]
            if self.static_graph:
                self.static_unused = list(self.unused)
        elif self.static_graph:
            self.unused = list(self.static_unused)
        if recorder.nodes:
            self._hook_nodes(outputs)
        self.armed = True

    def _hook_nodes(self, outputs) -> None:
        for h in self._node_handles:
            h.remove()
        self._node_handles = []
        starts: dict = {}

        def pre(node):
            def fn(grads):
                starts[id(node)] = recorder.now()
            return fn

        def post(node):
            def fn(grad_inputs, grad_outputs):
                t1 = recorder.now()
                recorder.add(node.name(), "node", "backward", starts.pop(id(node), t1), t1)
            return fn

        for node in _graph_nodes(outputs):
            if node.__class__ is not AccumulateGrad:
                self._node_handles.append(node.register_prehook(pre(node)))
                self._node_handles.append(node.register_hook(post(node)))

    # -- backward -------------------------------------------------------------------------------
    def _make_hook(self, i: int):
        def hook(p):
            if self.armed:
                self._mark_ready(i, p)
        return hook

    def _begin_backward(self) -> None:
        self.in_backward = True
        self.t_backward = recorder.now()
        queue_callback(self._finalize)
        for i in self.unused:
            self._mark_ready(i, None)

    def _mark_ready(self, i: int, p) -> None:
        if not self.in_backward:
            self._begin_backward()
        if self.ready[i]:
            raise RuntimeError(
                f"Expected to mark a variable ready only once. This error is caused by one of "
                f"the following reasons: 1) Use of a module parameter outside the `forward` "
                f"function. 2) Reused parameters in multiple reentrant backward passes. "
                f"Parameter at index {i} with name {self.names[i]} has been marked as ready "
                f"twice.")
        self.ready[i] = True
        if not self.has_rebuilt and p is not None:
            self.ready_order.append(i)
        b, k = self.where[i]
        if p is None:
            b.arrays[k].fill(0)
        else:
            g = p._grad
            world = self.divisor
            if g is None:
                b.arrays[k].fill(0)
            elif g is not b.views[k]:  # copy in, divided by the world size on the way
                if world != 1:
                    np.divide(numpy_view(g), world, out=b.arrays[k])
                else:
                    np.copyto(b.arrays[k], numpy_view(g))
                if self.as_view:
                    p.grad = b.views[k]
            elif world != 1:  # accumulated in the bucket already
                b.arrays[k] /= world
            if recorder.nodes:
                t = recorder.now()
                recorder.add(f"ready {self.names[i]}", "ready", "backward", t, t)
        b.pending -= 1
        if not b.pending:
            buckets = self.buckets
            while self.next_bucket < len(buckets) and not buckets[self.next_bucket].pending:
                self._launch(buckets[self.next_bucket])
                self.next_bucket += 1

    def _launch(self, b: _Bucket) -> None:
        b.t_launch = recorder.now()
        if self.comm.world_size > 1:  # (each gradient was divided as it was copied in)
            b.work = self.comm.all_reduce_async(b.tensor)
            future = getattr(b.work, "get_future", None)
            if future is not None:  # the timeline's end: when the engine finished it

                def done(fut, b=b):
                    b.t_done = recorder.now()
                b.after = future().then(done)  # finishes once ``done`` has returned
        else:
            b.t_done = b.t_launch

    def _finalize(self) -> None:
        """The end-of-backward callback (NOTE [DDP backward] step 3)."""
        self.armed = False
        self.in_backward = False
        self.iteration += 1
        for b in self.buckets:
            if b.work is not None:
                b.work.wait()
                if b.after is not None:  # the timeline's callback has run
                    b.after.wait()
                if not b.t_done:
                    b.t_done = recorder.now()
            if b.t_launch:
                recorder.add(f"all_reduce bucket {b.index}", "allreduce", "comm", b.t_launch,
                             b.t_done, {"bytes": b.nbytes, "params": len(b.members)})
        if self.next_bucket < len(self.buckets):
            self.unfinished = [i for i, r in enumerate(self.ready) if not r]
            return
        globally_unused = set()
        # every rank all-reduces its use map when any rank may have unused parameters (a
        # rank without any must still take part)
        if (self.find_unused or self.static_graph) and self.comm.world_size > 1:
            used = np.ones(len(self.params), dtype=np.int32)
            used[self.unused] = 0
            t = from_numpy(used)
            self.comm.all_reduce(t, self.comm.MAX)
            globally_unused = {i for i in self.unused if not used[i]}
        elif self.unused:
            globally_unused = set(self.unused)
        if self.hand_over and not globally_unused:
            for b in self.buckets:
                b.hand_over(self.params, self.comm)
            t1 = recorder.now()
            recorder.add("backward (DDP)", "step", "backward", self.t_backward, t1)
            return
        for i, p in enumerate(self.params):
            if i in globally_unused:
                continue
            b, k = self.where[i]
            if b.views[k] is None:
                b.make_views()
            g = p._grad
            if self.as_view:
                if g is not b.views[k]:
                    p.grad = b.views[k]
            elif g is None:
                p.grad = b.views[k].clone()
            else:
                np.copyto(numpy_view(g), b.arrays[k])
        t1 = recorder.now()
        recorder.add("backward (DDP)", "step", "backward", self.t_backward, t1)


def _tensors_in(obj, out: list) -> list:
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors_in(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors_in(o, out)
    elif hasattr(obj, "__dataclass_fields__"):
        for name in obj.__dataclass_fields__:
            _tensors_in(getattr(obj, name), out)
    return out


def _graph_nodes(outputs) -> Iterator:
    seen: set = set()
    stack = [t.grad_fn for t in _tensors_in(outputs, []) if t.grad_fn is not None]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        for nxt, _ in node.next_functions:
            if nxt is not None and id(nxt) not in seen:
                stack.append(nxt)


def _reachable_params(outputs) -> set:
    """Ids of the leaves the graph of ``outputs`` reaches (leaves returned as they are too)."""
    used = {id(t) for t in _tensors_in(outputs, []) if t.grad_fn is None and t.requires_grad}
    for node in _graph_nodes(outputs):
        if node.__class__ is AccumulateGrad:
            used.add(id(node.variable))
    return used


# -- the module -----------------------------------------------------------------------------------

class DistributedDataParallel(Module):
    """Data parallelism across processes: one replica per rank, gradients averaged in backward.

    Mirrors ``torch.nn.parallel.DistributedDataParallel``. At construction the parameters and
    buffers of rank 0 are broadcast to every rank (after checking that every rank has the same
    number of parameters with the same shapes). During backward, gradients are packed into
    buckets (NOTE [DDP buckets]) and each bucket is all-reduced asynchronously as soon as all
    its gradients are ready, overlapping communication with the rest of backward; at the end
    of backward every parameter's ``.grad`` holds the average over the ranks.

    Args:
        module: the model (its parameters must be on the CPU).
        device_ids, output_device: accepted for torch's signature; must be None on the CPU.
        broadcast_buffers: broadcast rank 0's buffers (BatchNorm statistics) at every forward.
        process_group: the group to average over (default: the default group).
        bucket_cap_mb: bucket size in MiB (the first bucket is 1 MiB when this is the default).
        find_unused_parameters: search each forward's graph for parameters that get no
            gradient and treat them as ready (their ``.grad`` stays untouched when no rank used
            them). Without it, an unused parameter makes the next forward raise.
        gradient_as_bucket_view: ``.grad`` views the bucket's memory (saves a copy and memory).
        static_graph: the set of used parameters is the same every iteration (found once).

    Example:
        >>> # under ``python -m ember.distributed.run --nproc-per-node 2 train.py``
        >>> # ember.distributed.init_process_group("shm")
        >>> # model = DistributedDataParallel(model)
        >>> # loss_fn(model(x), y).backward()   # grads averaged over the ranks
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None) -> None:
        super().__init__()
        if isinstance(module, DistributedDataParallel):
            raise RuntimeError("DistributedDataParallel can't wrap a DistributedDataParallel "
                               "module")
        if device_mesh is not None or mixed_precision is not None:
            raise NotImplementedError("DistributedDataParallel: device_mesh and mixed_precision "
                                      "are not supported")
        named = []
        seen: set = set()
        for name, p in module.named_parameters():
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                named.append((name, p))
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have "
                               "any parameter that requires a gradient.")
        for name, p in named:
            if p._device is not CPU:
                raise ValueError(f"DistributedDataParallel supports CPU parameters only; "
                                 f"parameter {name} is on {p._device}")
        if device_ids is not None and list(device_ids):
            raise ValueError("DistributedDataParallel device_ids and output_device arguments "
                             "only work with single-device/multiple-device GPU modules or CPU "
                             f"modules, but got device_ids {device_ids}, output_device "
                             f"{output_device}, and module parameters {{device(type='cpu')}}.")
        self.module = module
        self.device_ids = None
        self.output_device = None
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.process_group = process_group
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = False
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        default_cap = bucket_cap_mb is None
        self.bucket_bytes_cap = int((25 if default_cap else bucket_cap_mb) * _MB)
        first_cap = _DEFAULT_FIRST_BUCKET_BYTES if default_cap else self.bucket_bytes_cap
        comm = _Comm(process_group)
        object.__setattr__(self, "_comm", comm)
        params = [p for _, p in named]
        self._verify_params(params, comm)
        self.modules_buffers = [b for b in module.buffers()]
        with grad_mode.no_grad():
            self._broadcast_coalesced(params + self.modules_buffers, comm)
        object.__setattr__(self, "_join", None)
        reducer = _Reducer(params, [n for n, _ in named], comm, self.bucket_bytes_cap,
                           first_cap, find_unused_parameters, gradient_as_bucket_view,
                           static_graph)
        object.__setattr__(self, "reducer", reducer)
        if static_graph:
            self._set_static_graph()

    # -- construction helpers -----------------------------------------------------------------
    @staticmethod
    def _verify_params(params: list, comm: _Comm) -> None:
        """Every rank has rank 0's number of parameters, with the same shapes (torch's check)."""
        if comm.world_size == 1:
            return
        n = len(params)
        counts = from_numpy(np.array([n, -n], dtype=np.int64))
        comm.all_reduce(counts, comm.MAX)
        hi, lo = numpy_view(counts).tolist()
        lo = -lo
        if hi != lo:
            other = lo if n == hi else hi
            raise RuntimeError(f"DDP expects same model across all ranks, but Rank {comm.rank} "
                               f"has {n} params, while another rank has inconsistent {other} "
                               f"params.")
        meta = []
        for p in params:
            meta += [len(p._shape), *p._shape]
        length = from_numpy(np.array([len(meta)], dtype=np.int64))
        comm.all_reduce(length, comm.MAX)
        size = int(numpy_view(length)[0])
        ours = np.full(size, -1, dtype=np.int64)
        ours[:len(meta)] = meta
        theirs = from_numpy(ours.copy())
        comm.broadcast(theirs)
        root = numpy_view(theirs)
        bad = None
        pos = 0
        for k, p in enumerate(params):
            nd = int(root[pos])
            shape = tuple(int(s) for s in root[pos + 1:pos + 1 + nd]) if nd >= 0 else None
            pos += 1 + max(nd, 0)
            if shape != tuple(p._shape):
                bad = k
                break
        flag = from_numpy(np.array([0 if bad is None else 1], dtype=np.int64))
        comm.all_reduce(flag, comm.MAX)
        if bad is not None:
            raise RuntimeError(f"[{comm.rank}]: params[{bad}] in this process with sizes "
                               f"{list(params[bad]._shape)} appears not to match sizes of the "
                               f"same param in process 0.")
        if int(numpy_view(flag)[0]):
            raise RuntimeError(f"[{comm.rank}]: DDP expects same model across all ranks, but "
                               f"another rank has parameters whose sizes do not match process "
                               f"0's.")

    @staticmethod
    def _broadcast_coalesced(tensors: list, comm: _Comm, src: int | None = None) -> None:
        """Overwrite ``tensors`` with rank 0's (or global rank ``src``'s) values, packed by
        dtype into few broadcasts."""
        if comm.world_size == 1 or not tensors:
            return
        groups: dict = {}
        for t in tensors:
            groups.setdefault(t._dtype, []).append(t)
        for dtype, ts in groups.items():
            chunk, size = [], 0
            for t in ts + [None]:
                if t is None or (chunk and size + t.numel() * dtype.itemsize >
                                 _BROADCAST_BUCKET_BYTES):
                    if chunk:
                        flat = np.concatenate([numpy_view(c).reshape(-1) for c in chunk])
                        ft = from_numpy(flat)
                        comm.broadcast(ft, src)
                        off = 0
                        for c in chunk:
                            k = c.numel()
                            numpy_view(c)[...] = flat[off:off + k].reshape(c._shape)
                            off += k
                    chunk, size = [], 0
                if t is not None:
                    chunk.append(t)
                    size += t.numel() * dtype.itemsize

    # -- public API -----------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        """Run the module; arm the gradient all-reduce of the coming backward."""
        reducer = self.reducer
        sync = grad_mode.is_grad_enabled() and self.require_backward_grad_sync
        join = self._join
        if sync and join is not None:
            rebuild = reducer.will_rebuild()
            active = join.agree(1, rebuild)  # the joined ranks shadow this iteration
            join.iterations += 1
            reducer.divisor = self._comm.world_size if join.divide_by_initial_world_size \
                else active
        if sync:
            reducer.prepare_for_forward()
        if self.require_forward_param_sync and self.broadcast_buffers and \
                self.modules_buffers and self._comm.world_size > 1:
            with grad_mode.no_grad():
                self._broadcast_coalesced(self.modules_buffers, self._comm)
        out = self.module(*inputs, **kwargs)
        if sync:
            reducer.prepare_for_backward(out)
        else:
            reducer.armed = False
        return out

    def join(self, divide_by_initial_world_size: bool = True, enable: bool = True,
             throw_on_early_termination: bool = False):
        """A context for training with uneven inputs across ranks (torch's ``DDP.join``).

        Inside it, each synchronized forward first counts the ranks still training. A rank
        whose loop has ended waits at the end of the ``with`` block, taking part in the
        others' collectives with zero gradients (so they do not hang), until every rank is
        done; then every rank gets the parameters and buffers of a rank that ran the most
        iterations. Gradients are divided by the initial world size
        (``divide_by_initial_world_size``) or by the number of ranks still training.

        Args:
            divide_by_initial_world_size: divide by the world size, not the active ranks.
            enable: False makes the context do nothing.
            throw_on_early_termination: raise on every rank as soon as one rank runs out of
                inputs, instead of shadowing.

        Raises:
            RuntimeError: with ``throw_on_early_termination``, "Detected at least one rank
                that exhausted inputs. Throwing across all ranks."

        Example:
            >>> # with ddp.join():
            >>> #     for x in my_uneven_batches:     # fewer on some ranks
            >>> #         ddp(x).sum().backward()
        """
        return _Join(self, divide_by_initial_world_size, enable, throw_on_early_termination)

    @contextlib.contextmanager
    def no_sync(self):
        """Within this context gradients accumulate locally without all-reduce.

        The first forward-backward after the context all-reduces the accumulated gradients
        (torch's ``no_sync``).

        Example:
            >>> # with ddp.no_sync():
            >>> #     ddp(x1).sum().backward()   # local accumulation
            >>> # ddp(x2).sum().backward()       # synchronizes the sum of both
        """
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def _set_static_graph(self) -> None:
        """Declare the graph static: the set of unused parameters is found once."""
        self.static_graph = True
        self.reducer.static_graph = True
        self.reducer.hand_over = False

    def _get_ddp_logging_data(self) -> dict:
        """A few facts about this DDP (torch's logging data keys where they exist)."""
        r = self.reducer
        return {"world_size": self._comm.world_size, "rank": self._comm.rank,
                "bucket_cap_bytes": self.bucket_bytes_cap,
                "find_unused_parameters": self.find_unused_parameters,
                "gradient_as_bucket_view": self.gradient_as_bucket_view,
                "static_graph": self.static_graph, "has_rebuilt_buckets": r.has_rebuilt,
                "bucket_sizes": [b.nbytes for b in r.buckets],
                "num_buckets_reduced": len(r.buckets)}

    def __getstate__(self):
        raise RuntimeError("DistributedDataParallel cannot be pickled; save "
                           "ddp.module.state_dict() instead")


_EARLY = "Detected at least one rank that exhausted inputs. Throwing across all ranks."


class _Join:
    """``DistributedDataParallel.join``'s context (NOTE [DDP join])."""

    def __init__(self, ddp: DistributedDataParallel, divide_by_initial_world_size: bool,
                 enable: bool, throw_on_early_termination: bool) -> None:
        self.ddp = ddp
        self.divide_by_initial_world_size = divide_by_initial_world_size
        self.enable = enable and ddp._comm.world_size > 1
        self.throw = throw_on_early_termination
        self.iterations = 0

    def __enter__(self):
        if self.enable:
            object.__setattr__(self.ddp, "_join", self)
        return self

    def agree(self, active: int, rebuild: bool) -> int:
        """All-reduce (ranks still training, ranks about to rebuild their buckets)."""
        comm = self.ddp._comm
        flags = from_numpy(np.array([active, int(rebuild)], dtype=np.int64))
        comm.all_reduce(flags)
        count, rebuilds = (int(v) for v in numpy_view(flags))
        if self.throw and count < comm.world_size:
            raise RuntimeError(_EARLY)
        if not active and rebuilds:
            self.ddp.reducer._rebuild()
        return count

    def __exit__(self, exc_type, exc, tb) -> None:
        ddp = self.ddp
        if not self.enable:
            return
        object.__setattr__(ddp, "_join", None)
        if exc_type is not None:
            return
        ddp.reducer.armed = False
        comm, reducer = ddp._comm, ddp.reducer
        while self.agree(0, False):  # shadow one iteration of the ranks still training
            if ddp.require_forward_param_sync and ddp.broadcast_buffers and ddp.modules_buffers:
                with grad_mode.no_grad():
                    ddp._broadcast_coalesced(ddp.modules_buffers, comm)
            for b in reducer.buckets:
                b.array.fill(0)
                comm.all_reduce(b.tensor)
            if reducer.find_unused or reducer.static_graph:
                used = from_numpy(np.zeros(len(reducer.params), dtype=np.int32))
                comm.all_reduce(used, comm.MAX)
        # every rank is done: take the model of a rank that ran the most iterations
        most = from_numpy(np.array([self.iterations], dtype=np.int64))
        comm.all_reduce(most, comm.MAX)
        who = from_numpy(np.array([comm.rank if self.iterations == int(numpy_view(most)[0])
                                   else -1], dtype=np.int64))
        comm.all_reduce(who, comm.MAX)
        src = int(numpy_view(who)[0])
        get_global = getattr(comm.dist, "get_global_rank", None)
        if comm.group is not None and get_global is not None:
            src = get_global(comm.group, src)
        with grad_mode.no_grad():
            ddp._broadcast_coalesced(list(reducer.params) + list(ddp.modules_buffers), comm,
                                     src)
        reducer.divisor = comm.world_size
