"""Datasets and worker hooks for the DataLoader tests.

Module-level (so a 'spawn' worker can import them by reference) and free of torch, so spawned
workers start quickly.
"""

from __future__ import annotations

import os
import time

import ember
from ember.utils.data import Dataset, IterableDataset, get_worker_info


class Squares(Dataset):
    """``i -> (i, i * i / 2)``: an int and a float per sample."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        return i, i * i / 2


class InterleavedRange(IterableDataset):
    """``range(n)`` sharded so that worker ``k`` yields batches ``k, k + W, ...``.

    With round-robin batch collection, ``num_workers=W`` then gives the same batches as
    ``num_workers=0``.
    """

    def __init__(self, n: int, batch_size: int) -> None:
        self.n, self.batch_size = n, batch_size

    def __iter__(self):
        info = get_worker_info()
        wid, nw = (0, 1) if info is None else (info.id, info.num_workers)
        return (i for i in range(self.n) if (i // self.batch_size) % nw == wid)

    def __len__(self) -> int:
        return self.n


class ContiguousShards(IterableDataset):
    """``range(n)`` split into one contiguous chunk per worker (the pattern of torch's docs)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        per = -(-self.n // info.num_workers)
        return iter(range(info.id * per, min(self.n, (info.id + 1) * per)))


class Unsharded(IterableDataset):
    """``range(n)`` in every worker (no sharding: each worker yields everything)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self) -> int:
        return self.n


class FailAt(Dataset):
    """Raises ``ValueError`` at index ``bad``."""

    def __init__(self, n: int, bad: int) -> None:
        self.n, self.bad = n, bad

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if i == self.bad:
            raise ValueError(f"sample {i} is corrupt")
        return i


class KeyErrorAt(FailAt):
    def __getitem__(self, i):
        if i == self.bad:
            raise KeyError(f"missing key {i}")
        return i


class Sleepy(Dataset):
    """Every sample takes ``seconds`` to load."""

    def __init__(self, n: int, seconds: float) -> None:
        self.n, self.seconds = n, seconds

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        time.sleep(self.seconds)
        return i


class WhoAmI(Dataset):
    """Each sample says which process made it and what that process's worker state is."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        info = get_worker_info()
        return {"index": i, "pid": os.getpid(), "id": info.id, "seed": info.seed,
                "num_workers": info.num_workers, "same_dataset": type(info.dataset) is WhoAmI,
                "init": _INIT_MARK.get("worker_id", -1), "draw": ember.rand(2)}


class Unpicklable(Dataset):
    """Samples that cannot be pickled (a lambda)."""

    def __len__(self) -> int:
        return 2

    def __getitem__(self, i):
        return lambda: i


_INIT_MARK: dict = {}


def mark_init(worker_id: int) -> None:
    """A worker_init_fn that leaves a trace the samples report."""
    _INIT_MARK["worker_id"] = worker_id


def failing_init(worker_id: int) -> None:
    raise ValueError(f"init of worker {worker_id} failed")


def crash_at_one(i):
    """A collate_fn that kills its worker process at sample 1."""
    if i == [1]:
        os._exit(3)
    return i
