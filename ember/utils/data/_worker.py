"""What runs inside a DataLoader worker process, and what crosses the process boundary.

Owns the fetchers (index or index batch -> collated batch, shared with the single-process
loader), ``WorkerInfo`` / ``get_worker_info``, ``ExceptionWrapper`` and ``worker_loop``.

NOTE [Worker protocol]
The main process sends each worker tasks on the worker's own index queue; all workers answer
on one shared result queue:
  task ``(idx, index)``    -> ``("data", idx, payload)``; payload is the pickled batch, or a
                              pickled ExceptionWrapper when fetching or collating raised
                              (the worker carries on with the next task);
                           -> ``("stop", idx, worker_id)`` when an iterable dataset's copy in
                              this worker is exhausted (later tasks are ignored until resumed);
  ``RESUME``               -> ``("resume", None, worker_id)`` after restarting the iteration
                              (persistent workers, next epoch);
  ``None``                 -> the worker exits.
The worker pickles the batch itself, so an unpicklable batch becomes an error the main process
re-raises instead of being lost in the queue's feeder thread (which would hang the loader).
Workers poll their queue and exit when the parent process is gone, so no orphan outlives it.
"""

from __future__ import annotations

import os
import pickle
import queue
import random
import sys
import traceback

import numpy as np

from ember.tensor.random import manual_seed

__all__ = ["WorkerInfo", "get_worker_info", "ExceptionWrapper"]

POLL_INTERVAL = 5.0  # seconds between liveness checks while waiting on a queue (as torch)
RESUME = "resume"

_worker_info: WorkerInfo | None = None


class WorkerInfo:
    """What a worker process knows about itself: ``id``, ``num_workers``, ``seed``, ``dataset``.

    Attributes are read-only once set, like torch's.

    Example:
        >>> from ember.utils.data import WorkerInfo
        >>> info = WorkerInfo(id=1, num_workers=4, seed=7, dataset=None)
        >>> info
        WorkerInfo(id=1, num_workers=4, seed=7, dataset=None)
        >>> try:
        ...     info.id = 2
        ... except RuntimeError as e:
        ...     print(e)
        Cannot assign attributes to WorkerInfo objects
    """

    __initialized = False

    def __init__(self, **kwargs) -> None:
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs)
        self.__initialized = True

    def __setattr__(self, key, val) -> None:
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")
        super().__setattr__(key, val)

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)}" for k in self.__keys)
        return f"{type(self).__name__}({fields})"


def get_worker_info() -> WorkerInfo | None:
    """In a DataLoader worker process, its :class:`WorkerInfo`; in the main process, None.

    ``dataset`` is this worker's copy of the dataset, ``seed`` the seed its ember, ``random``
    and NumPy generators were seeded from (``base_seed + id``). Use it in an
    ``IterableDataset.__iter__`` to give each worker its own shard.

    Example:
        >>> from ember.utils.data import get_worker_info
        >>> print(get_worker_info())
        None
    """
    return _worker_info


class _KeyErrorMessage(str):
    """KeyError quotes its message with repr; this keeps the traceback text readable."""

    def __repr__(self) -> str:
        return str(self)


class ExceptionWrapper:
    """An exception caught in a worker, carried to the main process with its traceback text.

    Args:
        exc_info: ``sys.exc_info()`` of the exception (the current one if omitted).
        where: where it happened, e.g. ``"in DataLoader worker process 0"``.
    """

    def __init__(self, exc_info=None, where: str = "in background") -> None:
        exc_info = exc_info or sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where
        try:  # a class that cannot be pickled by reference (a local class) cannot travel
            pickle.dumps(self.exc_type)
        except Exception:
            self.exc_msg = f"({self.exc_type.__qualname__}, re-raised as RuntimeError)\n" \
                           + self.exc_msg
            self.exc_type = RuntimeError

    def reraise(self):
        """Raise an exception of the original type whose message holds the traceback text."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            exc = self.exc_type(msg)
        except Exception:  # constructors that do not take one message
            raise RuntimeError(msg) from None
        raise exc


# -- fetchers --------------------------------------------------------------------------------
class MapFetcher:
    """Fetches ``dataset[i]`` for an index (or each index of a batch) and collates."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        getitems = getattr(dataset, "__getitems__", None)
        self._getitems = getitems if callable(getitems) else None

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if self._getitems is not None:
            return self.collate_fn(self._getitems(index))
        return self.collate_fn([self.dataset[i] for i in index])


class IterableFetcher:
    """Takes the next sample (or the next ``len(index)`` samples) of an iterable dataset.

    Raises StopIteration when the stream is exhausted, or when ``drop_last`` and the final
    batch is short.
    """

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool) -> None:
        self.stream = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.stream))
        data = []
        for _ in index:
            try:
                data.append(next(self.stream))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


def make_fetcher(iterable: bool, dataset, auto_collation, collate_fn, drop_last):
    """The fetcher for a map-style (``iterable=False``) or iterable dataset."""
    cls = IterableFetcher if iterable else MapFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)


# -- the worker process ----------------------------------------------------------------------
def _seed_everything(seed: int, base_seed: int, worker_id: int) -> None:
    manual_seed(seed)
    random.seed(seed)
    words = np.random.SeedSequence([worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32])
    np.random.seed(words.generate_state(4))


def _pack(idx: int, make_batch, where: str) -> tuple:
    try:
        return ("data", idx, pickle.dumps(make_batch(), protocol=pickle.HIGHEST_PROTOCOL))
    except Exception:
        wrapped = ExceptionWrapper(where=where)
        return ("data", idx, pickle.dumps(wrapped, protocol=pickle.HIGHEST_PROTOCOL))


class _Worker:
    """The state of one worker process: its fetcher and whether its stream has ended."""

    def __init__(self, iterable, dataset, auto_collation, collate_fn, drop_last, worker_id):
        self.args = (iterable, dataset, auto_collation, collate_fn, drop_last)
        self.worker_id = worker_id
        self.where = f"in DataLoader worker process {worker_id}"
        self.fetcher = None
        self.ended = False
        self.pending_error = None  # an exception from worker_init_fn, answered to task one

    def start(self, init_fn) -> None:
        try:
            if init_fn is not None:
                init_fn(self.worker_id)
            self.fetcher = make_fetcher(*self.args)
        except Exception:
            self.pending_error = ExceptionWrapper(where=self.where)

    def resume(self) -> tuple:
        self.ended = False
        try:
            self.fetcher = make_fetcher(*self.args)
        except Exception:
            self.pending_error = ExceptionWrapper(where=self.where)
        return ("resume", None, self.worker_id)

    def answer(self, idx: int, index) -> tuple:
        if self.pending_error is not None:
            error, self.pending_error = self.pending_error, None
            return _pack(idx, lambda: error, self.where)
        try:
            batch = self.fetcher.fetch(index)
        except StopIteration:
            if self.args[0]:
                self.ended = True
                return ("stop", idx, self.worker_id)
            return _pack(idx, lambda: ExceptionWrapper(where=self.where), self.where)
        except Exception:
            return _pack(idx, lambda: ExceptionWrapper(where=self.where), self.where)
        return _pack(idx, lambda: batch, self.where)


def worker_loop(iterable, dataset, index_queue, result_queue, done_event, auto_collation,
                collate_fn, drop_last, base_seed, init_fn, worker_id, num_workers):
    """The body of a worker process; see NOTE [Worker protocol]."""
    global _worker_info
    parent = os.getppid()
    try:
        seed = base_seed + worker_id
        _seed_everything(seed, base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        worker = _Worker(iterable, dataset, auto_collation, collate_fn, drop_last, worker_id)
        worker.start(init_fn)
        while True:
            try:
                task = index_queue.get(timeout=POLL_INTERVAL)
            except queue.Empty:
                if os.getppid() != parent:  # the main process died: do not linger
                    break
                continue
            if task is None:
                break
            if isinstance(task, str):  # RESUME
                result_queue.put(worker.resume())
            elif not (done_event.is_set() or worker.ended):
                result_queue.put(worker.answer(*task))
            del task
    except KeyboardInterrupt:
        pass  # the main process is told by the interrupt itself
    if done_event.is_set():  # unread results must not keep this process alive
        result_queue.cancel_join_thread()
        result_queue.close()
