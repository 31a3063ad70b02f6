"""Samplers (``torch.utils.data.sampler``): iterables of dataset indices (or of index batches).

Every random sampler draws from an ``ember.Generator``: the one it was given (advancing it, so
successive epochs differ but a re-seeded generator replays them), or, without one, a fresh
generator seeded from the default generator at the start of each pass, like torch.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence

from ember.core import dtype as dt
from ember.ops.creation import as_tensor, empty
from ember.ops.random import multinomial, randint, randperm
from ember.tensor.random import Generator

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]

_CHUNK = 32  # with replacement, indices are drawn this many at a time (as torch)


def _fresh_generator() -> Generator:
    seed = int(empty((), dtype=dt.int64).random_().item())
    return Generator().manual_seed(seed)


def _check_positive_int(name: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} should be a positive integer value, but got {name}={value}")


class Sampler:
    """Base class of samplers: subclasses define ``__iter__`` (and ``__len__`` when finite).

    Example:
        >>> from ember.utils.data import Sampler
        >>> class Reversed(Sampler):
        ...     def __init__(self, n): self.n = n
        ...     def __iter__(self): return iter(range(self.n - 1, -1, -1))
        ...     def __len__(self): return self.n
        >>> list(Reversed(3))
        [2, 1, 0]
    """

    def __init__(self, data_source=None) -> None:
        if data_source is not None:
            warnings.warn("`data_source` argument is not used and will be removed in 2.2.0."
                          "You may still have custom implementation that utilizes it.",
                          UserWarning, stacklevel=2)

    def __iter__(self) -> Iterator:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """Indices ``0, 1, ..., len(data_source) - 1`` in order.

    Example:
        >>> from ember.utils.data import SequentialSampler
        >>> list(SequentialSampler(["a", "b", "c"]))
        [0, 1, 2]
    """

    def __init__(self, data_source) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """Random indices: a permutation (repeated to ``num_samples``) or draws with replacement.

    Args:
        data_source: the dataset (only its length is used).
        replacement: draw with replacement.
        num_samples: how many indices per pass (default ``len(data_source)``).
        generator: the ``ember.Generator`` to draw from.

    Raises:
        TypeError: ``replacement`` is not a bool.
        ValueError: ``num_samples`` is not a positive int.

    Example:
        >>> import ember
        >>> sorted(RandomSampler(range(4), generator=ember.Generator().manual_seed(0)))
        [0, 1, 2, 3]
    """

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None,
                 generator: Generator | None = None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got "
                            f"replacement={replacement}")
        _check_positive_int("num_samples", self.num_samples)

    @property
    def num_samples(self) -> int:
        """Indices per pass: ``num_samples`` if given, else ``len(data_source)``."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n, total = len(self.data_source), self.num_samples
        gen = self.generator if self.generator is not None else _fresh_generator()
        if self.replacement:
            for _ in range(total // _CHUNK):
                yield from randint(n, (_CHUNK,), dtype=dt.int64, generator=gen).tolist()
            yield from randint(n, (total % _CHUNK,), dtype=dt.int64, generator=gen).tolist()
            return
        for _ in range(total // n):
            yield from randperm(n, generator=gen).tolist()
        yield from randperm(n, generator=gen).tolist()[:total % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in a random order (a fresh permutation each pass).

    Example:
        >>> from ember.utils.data import SubsetRandomSampler
        >>> sorted(SubsetRandomSampler([4, 7, 9]))
        [4, 7, 9]
    """

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """Indices ``0..len(weights)-1`` drawn with probabilities proportional to ``weights``.

    Args:
        weights: 1-d sequence of non-negative weights (need not sum to 1).
        num_samples: how many indices per pass.
        replacement: draw with replacement (without, each index appears at most once).
        generator: the ``ember.Generator`` to draw from (``ember.multinomial`` does the drawing).

    Raises:
        ValueError: ``num_samples`` not a positive int, ``replacement`` not a bool, or
            ``weights`` not 1-d.

    Example:
        >>> from ember.utils.data import WeightedRandomSampler
        >>> list(WeightedRandomSampler([0.0, 1.0, 0.0], num_samples=3))
        [1, 1, 1]
        >>> len(WeightedRandomSampler([0.5, 0.5], num_samples=5, replacement=True))
        5
    """

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Generator | None = None) -> None:
        _check_positive_int("num_samples", num_samples)
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        self.weights = as_tensor(weights, dtype=dt.float64)
        if self.weights.dim() != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(self.weights.shape)}")
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        drawn = multinomial(self.weights, self.num_samples, self.replacement,
                            generator=self.generator)
        return iter(drawn.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size``.

    Args:
        sampler: any iterable of indices.
        batch_size: indices per batch.
        drop_last: drop a final batch shorter than ``batch_size``.

    Raises:
        ValueError: ``batch_size`` not a positive int, or ``drop_last`` not a bool.

    Example:
        >>> list(BatchSampler(range(5), 2, drop_last=False))
        [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler, batch_size: int, drop_last: bool) -> None:
        _check_positive_int("batch_size", batch_size)
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got "
                             f"drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return -(-len(self.sampler) // self.batch_size)
