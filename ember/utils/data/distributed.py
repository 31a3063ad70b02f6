"""``DistributedSampler`` (``torch.utils.data.distributed``): each rank's share of a dataset.

Without ``num_replicas``/``rank`` the sampler asks the default process group; ``ember.utils``
(L8) may not import ``ember.distributed`` (L9), so it asks the loaded module: a group can only
exist once ``ember.distributed`` has been imported (NOTE [DDP and the layers] in
ember/nn/parallel/distributed.py).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator

from ember.ops.random import randperm
from ember.tensor.random import Generator
from ember.utils.data.sampler import Sampler

__all__ = ["DistributedSampler"]


def _default_group_query(name: str) -> int:
    dist = sys.modules.get("ember.distributed")
    if dist is None or not dist.is_initialized():
        raise ValueError("Default process group has not been initialized, please make sure to "
                         "call init_process_group.")
    return getattr(dist, name)()


class DistributedSampler(Sampler):
    """The indices of one rank's share of ``dataset`` (``torch.utils.data.DistributedSampler``).

    Every rank draws the same permutation (seeded with ``seed + epoch``), pads it by repeating
    its head to a multiple of ``num_replicas`` (or, with ``drop_last``, cuts the tail), and
    takes every ``num_replicas``-th index starting at ``rank``. Call ``set_epoch`` at the start
    of each epoch so the permutation changes. The permutation comes from ember's generator, so
    it differs from torch's for the same seed; everything else is torch's arithmetic.

    Args:
        dataset: the dataset (its length is used).
        num_replicas: number of ranks (default: the default group's world size).
        rank: this rank (default: the default group's rank).
        shuffle: permute the indices (otherwise ``0..len-1`` in order).
        seed: the permutation's seed, the same on every rank.
        drop_last: drop the tail so every rank gets the same count, instead of padding.

    Raises:
        ValueError: ``rank`` is outside ``[0, num_replicas - 1]``, or no default group exists
            when ``num_replicas``/``rank`` are not given.

    Example:
        >>> from ember.utils.data.distributed import DistributedSampler
        >>> list(DistributedSampler(range(5), num_replicas=2, rank=1, shuffle=False))
        [1, 3, 0]
    """

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None:
            num_replicas = _default_group_query("get_world_size")
        if rank is None:
            rank = _default_group_query("get_rank")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            g = Generator().manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        if len(indices) != self.total_size:
            raise AssertionError(f"Number of indices ({len(indices)}) does not match total_size "
                                 f"({self.total_size})")
        indices = indices[self.rank:self.total_size:self.num_replicas]
        if len(indices) != self.num_samples:
            raise AssertionError(f"Number of subsampled indices ({len(indices)}) does not match "
                                 f"num_samples ({self.num_samples})")
        return iter(indices)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch: with ``shuffle``, each epoch draws a different permutation (the same on
        every rank)."""
        self.epoch = epoch
