"""``DataLoader`` (``torch.utils.data.DataLoader``): batches from a dataset, in this process or in
worker processes.

The loader turns its arguments into an *index sampler* (a ``BatchSampler`` when batching, the
plain sampler when ``batch_size=None``) and a fetcher (see ``_worker``); an iterator walks the
index sampler and fetches. With ``num_workers > 0`` the fetching happens in worker processes
(NOTE [Worker protocol] in ``_worker``) and this module only routes indices out and batches
back, in order.
"""

from __future__ import annotations

import itertools
import multiprocessing as mp
import pickle
import queue
import warnings
import weakref
from collections.abc import Callable, Iterable

from ember.core import dtype as dt
from ember.ops.creation import empty
from ember.tensor.random import Generator
from ember.utils.data import _worker
from ember.utils.data._collate import default_collate, default_convert
from ember.utils.data.dataset import Dataset, IterableDataset
from ember.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader"]

_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")
JOIN_TIMEOUT = _worker.POLL_INTERVAL  # how long shutdown waits for a worker before terminate()


class _InfiniteConstantSampler(Sampler):
    """The sampler of an IterableDataset: ``None`` forever (the stream decides when to stop)."""

    def __iter__(self):
        return itertools.repeat(None)


def _start_context(context, num_workers: int):
    if context is None:
        return mp.get_context()
    if num_workers == 0:
        raise ValueError(f"multiprocessing_context can only be used with multi-process loading "
                         f"(num_workers > 0), but got num_workers={num_workers}")
    if isinstance(context, str):
        methods = mp.get_all_start_methods()
        if context not in methods:
            raise ValueError(f"multiprocessing_context option should specify a valid start "
                             f"method in {methods!r}, but got multiprocessing_context="
                             f"{context!r}")
        return mp.get_context(context)
    if not isinstance(context, mp.context.BaseContext):
        raise TypeError(f"multiprocessing_context option should be a valid context object or a "
                        f"string specifying the start method, but got multiprocessing_context="
                        f"{context}")
    return context


def _check_worker_options(num_workers, timeout, prefetch_factor, persistent_workers) -> int | None:
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                         "disable multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                         "let num_workers > 0 to enable multiprocessing, otherwise set "
                         "prefetch_factor to None.")
    if num_workers > 0 and prefetch_factor is None:
        prefetch_factor = 2
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    return prefetch_factor


def _check_iterable_options(shuffle, sampler, batch_sampler) -> None:
    for name, value in (("shuffle", shuffle), ("sampler", sampler),
                        ("batch_sampler", batch_sampler)):
        if value not in (None, False):
            raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} "
                             f"option, but got {name}={value}")


class DataLoader:
    """Iterates over batches of a dataset (``torch.utils.data.DataLoader``).

    Args:
        dataset: a map-style dataset (``__getitem__``, ``__len__``) or an IterableDataset.
        batch_size: samples per batch; ``None`` turns batching off (each sample is passed
            through ``collate_fn``, default :func:`default_convert`).
        shuffle: reshuffle every epoch (a RandomSampler drawing from ``generator``).
        sampler: an iterable of indices; excludes ``shuffle``.
        batch_sampler: an iterable of index lists; excludes ``batch_size``, ``shuffle``,
            ``sampler`` and ``drop_last``.
        num_workers: worker processes (0: load in this process).
        collate_fn: merges a list of samples into a batch (default :func:`default_collate`).
        pin_memory: accepted for compatibility; there is no pinned memory on the CPU.
        drop_last: drop the last incomplete batch.
        timeout: seconds to wait for a batch from the workers (0: forever), then RuntimeError.
        worker_init_fn: called with the worker id in each worker after seeding.
        multiprocessing_context: a start method name (``'fork'``, ``'spawn'``, ...) or context.
        generator: the ``ember.Generator`` of the shuffling and of the workers' base seed.
        prefetch_factor: batches loaded in advance per worker (default 2 with workers).
        persistent_workers: keep the workers alive between epochs.

    Raises:
        ValueError: contradictory options (messages as torch's).

    Example:
        >>> import ember
        >>> from ember.utils.data import TensorDataset
        >>> dl = DataLoader(TensorDataset(ember.arange(5)), batch_size=2)
        >>> [b[0].tolist() for b in dl]
        [[0, 1], [2, 3], [4]]
    """

    __initialized = False

    def __init__(self, dataset: Dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | Iterable | None = None,
                 batch_sampler: Sampler | Iterable | None = None, num_workers: int = 0,
                 collate_fn: Callable | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable | None = None, multiprocessing_context=None,
                 generator: Generator | None = None, *, prefetch_factor: int | None = None,
                 persistent_workers: bool = False, pin_memory_device: str = "") -> None:
        self.prefetch_factor = _check_worker_options(num_workers, timeout, prefetch_factor,
                                                     persistent_workers)
        self.multiprocessing_context = _start_context(multiprocessing_context, num_workers)
        self.dataset = dataset
        self.num_workers = num_workers
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        self.persistent_workers = persistent_workers
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        if pin_memory:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, "
                          "then device pinned memory won't be used.", stacklevel=2)
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            _check_iterable_options(shuffle, sampler, batch_sampler)
        self._choose_samplers(batch_size, shuffle, sampler, batch_sampler, drop_last)
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._iterator = None
        self._len_reported = None  # len() of an IterableDataset, to warn when it is exceeded
        self.__initialized = True

    def _choose_samplers(self, batch_size, shuffle, sampler, batch_sampler, drop_last) -> None:
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(self.dataset, generator=self.generator)
            else:
                sampler = SequentialSampler(self.dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size, self.drop_last = batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler

    def __setattr__(self, name, value) -> None:
        if self.__initialized and name in _FROZEN:
            raise ValueError(f"{name} attribute should not be set after "
                             f"{type(self).__name__} is initialized")
        super().__setattr__(name, value)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        return _MultiProcessIter(self)

    def __iter__(self):
        if not (self.persistent_workers and self.num_workers > 0):
            return self._get_iterator()
        if self._iterator is None:
            self._iterator = self._get_iterator()
        else:
            self._iterator._reset(self)
        return self._iterator

    def __len__(self) -> int:
        """Batches per epoch; for an IterableDataset, computed from ``len(dataset)``."""
        if not self._iterable:
            return len(self._index_sampler)
        length = self._len_reported = len(self.dataset)
        if self.batch_size is not None:
            length = length // self.batch_size if self.drop_last else -(-length //
                                                                        self.batch_size)
        return length


class _BaseIter:
    """What both iterators share: the index sampler, the count of batches yielded."""

    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._index_sampler = loader._index_sampler
        self._auto_collation = loader._auto_collation
        self._collate_fn = loader.collate_fn
        self._drop_last = loader.drop_last
        self._num_workers = loader.num_workers
        self._base_seed = _base_seed(loader.generator)  # drawn with or without workers, so a
        self._start(loader)                              # seeded shuffle is the same either way
        self._reset(loader, first=True)

    def _start(self, loader: DataLoader) -> None:
        pass

    def _reset(self, loader: DataLoader, first: bool = False) -> None:
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._len_reported = loader._len_reported

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        if self._iterable and self._len_reported is not None \
                and self._num_yielded > self._len_reported:
            warnings.warn(self._overrun_message(), stacklevel=2)
        return data

    def _overrun_message(self) -> str:
        msg = (f"Length of IterableDataset {self._dataset} was reported to be "
               f"{self._len_reported} (when accessing len(dataloader)), but {self._num_yielded} "
               f"samples have been fetched. ")
        if self._num_workers > 0:
            msg += ("With num_workers > 0 each worker iterates its own copy of the dataset: "
                    "shard it in __iter__ with get_worker_info().")
        return msg


# NOTE [Shutting workers down]
# The workers are stopped by a weakref.finalize callback, not by __del__: when the iterator dies
# inside a reference cycle (an exception's traceback holds the frame that holds it), the garbage
# collector clears the weakrefs of everything in the cycle before calling __del__, and the
# queues' own finalizers would close their feeder threads first, so the ``None`` that asks a
# worker to exit would never be sent and shutdown would wait for the join timeout. The
# finalizer holds the workers and queues itself, so they stay out of the garbage until it
# has run; it also runs at interpreter exit. Sequence: set the done event, send ``None``, wait
# ``JOIN_TIMEOUT``, terminate whatever is still alive.
def _stop_workers(workers, index_queues, result_queue, done_event) -> None:
    try:
        done_event.set()
        for q, w in zip(index_queues, workers):
            if w.is_alive():
                q.put(None)
        for w in workers:
            w.join(timeout=JOIN_TIMEOUT)
        for q in index_queues:
            q.close()
        result_queue.cancel_join_thread()
        result_queue.close()
    finally:
        for w in workers:
            if w.is_alive():
                w.terminate()
                w.join()


def _base_seed(generator: Generator | None) -> int:
    return int(empty((), dtype=dt.int64).random_(generator=generator).item())


class _SingleProcessIter(_BaseIter):
    """Fetches in this process."""

    def _reset(self, loader: DataLoader, first: bool = False) -> None:
        super()._reset(loader, first)
        self._fetcher = _worker.make_fetcher(self._iterable, self._dataset, self._auto_collation,
                                             self._collate_fn, self._drop_last)

    def _next_data(self):
        index = next(self._sampler_iter)  # StopIteration ends the epoch
        return self._fetcher.fetch(index)


class _MultiProcessIter(_BaseIter):
    """Routes indices to worker processes and their batches back in order.

    ``_tasks`` maps each sent, unanswered task to its worker; ``_early`` holds batches that
    arrived before their turn; ``_next_idx`` is the task whose batch is returned next. Tasks of
    a worker whose stream ended are dropped. At most ``prefetch_factor * num_workers`` tasks
    are in flight.
    """

    def _start(self, loader: DataLoader) -> None:
        self._timeout = loader.timeout
        self._prefetch = loader.prefetch_factor * loader.num_workers
        self._persistent = loader.persistent_workers
        self._workers, self._index_queues = [], []
        ctx = loader.multiprocessing_context
        self._result_queue = ctx.Queue()
        self._done_event = ctx.Event()
        self._finalizer = weakref.finalize(self, _stop_workers, self._workers,
                                           self._index_queues, self._result_queue,
                                           self._done_event)  # sees workers as they start
        for wid in range(loader.num_workers):
            index_queue = ctx.Queue()
            index_queue.cancel_join_thread()  # a dead worker must not block our exit
            proc = ctx.Process(target=_worker.worker_loop, daemon=True, args=(
                loader._iterable, loader.dataset, index_queue, self._result_queue,
                self._done_event, loader._auto_collation, loader.collate_fn, loader.drop_last,
                self._base_seed, loader.worker_init_fn, wid, loader.num_workers))
            proc.start()
            self._workers.append(proc)
            self._index_queues.append(index_queue)

    # -- epochs --------------------------------------------------------------------------
    def _reset(self, loader: DataLoader, first: bool = False) -> None:
        super()._reset(loader, first)
        self._send_idx = self._next_idx = 0
        self._tasks: dict[int, int] = {}
        self._early: dict[int, bytes] = {}
        self._active = [True] * len(self._workers)
        self._cycle = itertools.cycle(range(len(self._workers)))
        if not first:  # persistent workers: restart their streams, drain the last epoch
            for q in self._index_queues:
                q.put(_worker.RESUME)
            waiting = len(self._workers)
            while waiting:
                if self._get_message()[0] == "resume":
                    waiting -= 1
        self._fill()

    def _fill(self) -> None:
        while len(self._tasks) < self._prefetch and any(self._active):
            try:
                index = next(self._sampler_iter)
            except StopIteration:
                return
            wid = next(w for w in self._cycle if self._active[w])
            self._index_queues[wid].put((self._send_idx, index))
            self._tasks[self._send_idx] = wid
            self._send_idx += 1

    # -- receiving -----------------------------------------------------------------------
    def _next_data(self):
        while True:
            while self._next_idx < self._send_idx and self._next_idx not in self._tasks \
                    and self._next_idx not in self._early:
                self._next_idx += 1  # a dropped task
            if self._next_idx in self._early:
                return self._deliver(self._early.pop(self._next_idx))
            if not self._tasks:
                if not self._persistent:
                    self._shutdown()
                raise StopIteration
            kind, idx, payload = self._get_message()
            if kind == "stop":
                self._retire(payload)
                self._fill()
            elif kind == "data":
                del self._tasks[idx]
                if idx == self._next_idx:
                    return self._deliver(payload)
                self._early[idx] = payload

    def _deliver(self, payload: bytes):
        self._next_idx += 1
        self._fill()
        data = pickle.loads(payload)
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        return data

    def _retire(self, wid: int) -> None:
        """Worker ``wid``'s stream has ended: drop its unanswered tasks, stop sending to it."""
        self._active[wid] = False
        for idx in [i for i, w in self._tasks.items() if w == wid]:
            del self._tasks[idx]
        if not self._persistent:
            self._index_queues[wid].put(None)

    def _get_message(self) -> tuple:
        if self._timeout > 0:
            try:
                return self._result_queue.get(timeout=self._timeout)
            except queue.Empty:
                self._check_workers_alive()
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds") \
                    from None
        while True:
            try:
                return self._result_queue.get(timeout=_worker.POLL_INTERVAL)
            except queue.Empty:
                self._check_workers_alive()

    def _check_workers_alive(self) -> None:
        dead = [w.pid for w, on in zip(self._workers, self._active) if on and not w.is_alive()]
        if dead:
            self._shutdown()
            pids = ", ".join(str(p) for p in dead)
            raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly")

    # -- shutdown ------------------------------------------------------------------------
    def _shutdown(self) -> None:
        """Stop every worker now (idempotent); see NOTE [Shutting workers down]."""
        self._finalizer()
