"""Datasets (``torch.utils.data.dataset``): map-style and iterable datasets and their combinators.

A map-style dataset answers ``dataset[i]`` and ``len(dataset)``; an iterable dataset yields
samples from ``iter(dataset)``. ``random_split`` draws its permutation from an
``ember.Generator`` so a seeded split is reproducible. Knows nothing of loading or collation.
"""

from __future__ import annotations

import bisect
import collections.abc as abc
import itertools
import math
import warnings
from collections.abc import Iterable, Sequence

from ember.ops.random import randperm
from ember.tensor.random import Generator, default_generator

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
           "ChainDataset", "Subset", "random_split"]


class Dataset:
    """A map-style dataset: subclasses define ``__getitem__`` (and usually ``__len__``).

    ``a + b`` concatenates two datasets into a :class:`ConcatDataset`, like torch.

    Example:
        >>> class Squares(Dataset):
        ...     def __len__(self): return 3
        ...     def __getitem__(self, i): return i * i
        >>> len(Squares() + Squares())
        6
    """

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset, abc.Iterable):
    """A dataset that is a stream of samples: subclasses define ``__iter__``.

    Abstract (as torch's): instantiating one without ``__iter__`` raises TypeError. With
    ``num_workers > 0`` every worker iterates its own copy; shard the stream with
    :func:`ember.utils.data.get_worker_info`. ``a + b`` chains two streams (:class:`ChainDataset`).

    Example:
        >>> class Count(IterableDataset):
        ...     def __iter__(self): return iter(range(3))
        >>> list(Count() + Count())
        [0, 1, 2, 0, 1, 2]
    """

    def __add__(self, other: Dataset) -> ChainDataset:
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are tuples of the ``i``-th rows of tensors sharing their first dimension.

    Raises:
        AssertionError: the tensors' first dimensions differ (torch raises the same type).

    Example:
        >>> import ember
        >>> ds = TensorDataset(ember.arange(3), ember.zeros(3, 2))
        >>> len(ds), ds[1][0].item()
        (3, 1)
    """

    def __init__(self, *tensors) -> None:
        if any(t.size(0) != tensors[0].size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Zips datasets of equal length: samples are tuples (positional) or dicts (keywords).

    Raises:
        ValueError: both positional and keyword datasets, or lengths that differ.

    Example:
        >>> from ember.utils.data import StackDataset, TensorDataset
        >>> ds = StackDataset(image=TensorDataset(ember.arange(3)), label=[10, 11, 12])
        >>> ds[1]
        {'image': (tensor(1),), 'label': 11}
    """

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via "
                             "``kwargs``) like input/output, but both types are given.")
        parts = args or tuple(kwargs.values())
        self._length = len(parts[0])
        if any(len(d) != self._length for d in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset):
    """Concatenation of map-style datasets; ``cumulative_sizes[i]`` ends dataset ``i``.

    Negative indices count from the end, as for a list.

    Raises:
        AssertionError: no datasets, or an :class:`IterableDataset` among them (as torch).
        ValueError: a negative index beyond the length.

    Example:
        >>> from ember.utils.data import ConcatDataset
        >>> ds = ConcatDataset([[1, 2], [3, 4, 5]])
        >>> len(ds), ds[2], ds.cumulative_sizes
        (5, 3, [2, 5])
    """

    @staticmethod
    def cumsum(sequence) -> list[int]:
        """Running totals of ``len(d)`` over ``sequence``."""
        return list(itertools.accumulate(len(d) for d in sequence))

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        if any(isinstance(d, IterableDataset) for d in self.datasets):
            raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]

    @property
    def cummulative_sizes(self) -> list[int]:
        """Deprecated misspelling kept by torch; use ``cumulative_sizes``."""
        warnings.warn("cummulative_sizes attribute is renamed to cumulative_sizes",
                      DeprecationWarning, stacklevel=2)
        return self.cumulative_sizes


class ChainDataset(IterableDataset):
    """Chains iterable datasets: iterates each in turn.

    Raises:
        AssertionError: from ``len`` or iteration when a member is not an IterableDataset.

    Example:
        >>> from ember.utils.data import ChainDataset, IterableDataset
        >>> class Count(IterableDataset):
        ...     def __init__(self, n): self.n = n
        ...     def __iter__(self): return iter(range(self.n))
        >>> list(ChainDataset([Count(2), Count(3)]))
        [0, 1, 0, 1, 2]
    """

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices`` (``subset[i] = dataset[indices[i]]``).

    Example:
        >>> from ember.utils.data import Subset
        >>> ds = Subset(["a", "b", "c", "d"], [3, 0])
        >>> len(ds), ds[0], ds[1]
        (2, 'd', 'a')
    """

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list:
        # a batched fetch: the DataLoader's fetcher calls this when it exists
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


def _fraction_lengths(n: int, fractions: Sequence[float]) -> list[int]:
    lengths = []
    for i, frac in enumerate(fractions):
        if frac < 0 or frac > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        lengths.append(math.floor(n * frac))
    for i in range(n - sum(lengths)):  # the remainder goes round-robin from the first split
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warnings.warn(f"Length of split at index {i} is 0. This might result in an empty "
                          f"dataset.", stacklevel=3)
    return lengths


def random_split(dataset: Dataset, lengths: Sequence[int | float],
                 generator: Generator | None = default_generator) -> list[Subset]:
    """Split ``dataset`` into non-overlapping random subsets (``torch.utils.data.random_split``).

    Args:
        dataset: a map-style dataset.
        lengths: the subsets' lengths, or fractions summing to 1: each gets
            ``floor(len * frac)`` and the remainder is dealt one by one from the first subset.
        generator: the generator of the permutation (the default generator if omitted).

    Returns:
        A list of :class:`Subset`.

    Raises:
        ValueError: a fraction outside [0, 1], or lengths that do not sum to ``len(dataset)``.

    Example:
        >>> import ember
        >>> a, b = random_split(range(10), [0.7, 0.3], ember.Generator().manual_seed(0))
        >>> len(a), len(b)
        (7, 3)
    """
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _fraction_lengths(n, lengths)
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = randperm(sum(lengths), generator=generator).tolist()
    ends = itertools.accumulate(lengths)
    return [Subset(dataset, order[end - length:end]) for end, length in zip(ends, lengths)]
