"""Data loading (``torch.utils.data``): datasets, samplers, collation and the DataLoader.

L8: built on ember.ops and ember.tensor only (never ember.nn or ember.optim). All randomness
(shuffling, splits, worker seeds) comes from ``ember.Generator`` so a seeded run is repeatable.
"""

from ember.utils.data._collate import default_collate, default_convert
from ember.utils.data._worker import WorkerInfo, get_worker_info
from ember.utils.data.dataloader import DataLoader
from ember.utils.data.dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from ember.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
           "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "StackDataset",
           "Subset", "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler",
           "WorkerInfo", "default_collate", "default_convert", "get_worker_info", "random_split"]

from ember.utils.data import distributed  # noqa: E402
from ember.utils.data.distributed import DistributedSampler  # noqa: E402

__all__ += ["DistributedSampler", "distributed"]
