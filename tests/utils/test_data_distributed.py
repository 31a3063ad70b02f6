"""DistributedSampler against torch.utils.data.DistributedSampler.

Without shuffling the indices are torch's exactly; with shuffling the permutation is ember's
generator's (it differs from torch's for a seed), and everything around it is checked against
torch's sampler run over the same permutation.
"""

from __future__ import annotations

import pytest
import torch.utils.data as tdata

import ember
from ember.utils.data import DataLoader, DistributedSampler, TensorDataset


@pytest.mark.parametrize("n", [0, 1, 2, 5, 7, 12])
@pytest.mark.parametrize("replicas", [1, 2, 3, 5])
@pytest.mark.parametrize("drop_last", [False, True])
def test_unshuffled_equals_torch(n, replicas, drop_last):
    if n == 0 and not drop_last:
        pytest.skip("torch divides by zero padding an empty dataset")
    for rank in range(replicas):
        ours = DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        ref = tdata.DistributedSampler(range(n), replicas, rank, shuffle=False,
                                       drop_last=drop_last)
        assert list(ours) == list(ref)
        assert len(ours) == len(ref) and ours.total_size == ref.total_size


@pytest.mark.parametrize("n,replicas,drop_last", [(10, 3, False), (10, 3, True), (2, 5, False),
                                                  (9, 2, False)])
def test_shuffled_is_torchs_arithmetic_over_embers_permutation(n, replicas, drop_last):
    for epoch in (0, 3):
        perm = ember.randperm(n, generator=ember.Generator().manual_seed(7 + epoch)).tolist()
        for rank in range(replicas):
            s = DistributedSampler(range(n), replicas, rank, shuffle=True, seed=7,
                                   drop_last=drop_last)
            s.set_epoch(epoch)
            ref = tdata.DistributedSampler(range(n), replicas, rank, shuffle=False,
                                           drop_last=drop_last)
            assert list(s) == [perm[i] for i in ref]


def test_ranks_partition_the_dataset_and_epochs_differ():
    n, replicas = 23, 4
    samplers = [DistributedSampler(range(n), replicas, r, seed=1) for r in range(replicas)]
    first = [list(s) for s in samplers]
    assert {i for part in first for i in part} == set(range(n))
    assert sum(len(p) for p in first) == 24  # padded to a multiple of 4
    assert [list(s) for s in samplers] == first  # same epoch: same order
    for s in samplers:
        s.set_epoch(1)
    assert [list(s) for s in samplers] != first


def test_invalid_rank_and_missing_group(monkeypatch):
    for rank in (-1, 2):
        with pytest.raises(ValueError, match=r"Invalid rank .*, rank should be in the interval "
                                             r"\[0, 1\]"):
            DistributedSampler(range(4), num_replicas=2, rank=rank)
    monkeypatch.setitem(__import__("sys").modules, "ember.distributed", None)
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedSampler(range(4))


def test_with_a_dataloader():
    ds = TensorDataset(ember.arange(10))
    s = DistributedSampler(ds, num_replicas=2, rank=1, shuffle=False)
    got = [b[0].tolist() for b in DataLoader(ds, batch_size=2, sampler=s)]
    assert got == [[1, 3], [5, 7], [9]]
