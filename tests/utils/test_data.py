"""ember.utils.data without worker processes: datasets, samplers, collation; torch is the oracle
for structure, dtypes and error messages."""

from __future__ import annotations

import collections
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import ember
import ember.utils.data as edata

Point = collections.namedtuple("Point", "x y")


def gen(seed: int = 0) -> ember.Generator:
    return ember.Generator().manual_seed(seed)


def same_error(build_ember, build_torch):
    """Both calls raise the same builtin type with the same message."""
    with pytest.raises(Exception) as want:
        build_torch()
    with pytest.raises(want.type) as got:
        build_ember()
    assert str(got.value) == str(want.value)


# -- datasets -----------------------------------------------------------------------------------
def test_tensor_dataset_rows_and_mismatch():
    x, y = ember.arange(6).reshape(3, 2), ember.tensor([1.0, 2.0, 3.0])
    ds = edata.TensorDataset(x, y)
    assert len(ds) == 3
    row = ds[1]
    assert isinstance(row, tuple) and row[0].tolist() == [2, 3] and row[1].item() == 2.0
    same_error(lambda: edata.TensorDataset(ember.zeros(3), ember.zeros(4)),
               lambda: tdata.TensorDataset(torch.zeros(3), torch.zeros(4)))


def test_concat_dataset_cumulative_sizes_and_negative_indices():
    a, b, c = list(range(3)), list(range(10, 12)), list(range(20, 24))
    ours, theirs = edata.ConcatDataset([a, b, c]), tdata.ConcatDataset([a, b, c])
    assert ours.cumulative_sizes == theirs.cumulative_sizes == [3, 5, 9]
    assert len(ours) == 9
    assert [ours[i] for i in range(-9, 9)] == [theirs[i] for i in range(-9, 9)]
    same_error(lambda: ours[-10], lambda: theirs[-10])
    with pytest.raises(IndexError):
        ours[9]
    same_error(lambda: edata.ConcatDataset([]), lambda: tdata.ConcatDataset([]))
    same_error(lambda: edata.ConcatDataset([_Stream([])]),
               lambda: tdata.ConcatDataset([_TStream()]))
    same_error(edata.IterableDataset, tdata.IterableDataset)


class _Items(edata.Dataset):
    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


class _Stream(edata.IterableDataset):
    def __init__(self, items):
        self.items = items

    def __iter__(self):
        return iter(self.items)

    def __len__(self):
        return len(self.items)


class _TStream(tdata.IterableDataset):
    def __iter__(self):
        return iter([])


def test_dataset_add_concatenates_and_iterable_add_chains():
    both = _Items([1, 2]) + _Items([3])
    assert isinstance(both, edata.ConcatDataset) and [both[i] for i in range(3)] == [1, 2, 3]
    chained = _Stream([1, 2]) + _Stream([3]) + _Stream([])
    assert isinstance(chained, edata.ChainDataset)
    assert list(chained) == [1, 2, 3] and len(chained) == 3
    with pytest.raises(NotImplementedError):
        edata.Dataset()[0]
    with pytest.raises(AssertionError, match="only supports IterableDataset"):
        list(edata.ChainDataset([_Items([1])]))


def test_subset_and_stack_dataset():
    sub = edata.Subset(_Items(list("abcdef")), [5, 0, 2])
    assert len(sub) == 3 and [sub[i] for i in range(3)] == ["f", "a", "c"]
    assert sub.__getitems__([2, 0]) == ["c", "f"]
    stacked = edata.StackDataset(_Items([1, 2]), _Items(["a", "b"]))
    assert stacked[1] == (2, "b") and len(stacked) == 2
    assert edata.StackDataset(x=_Items([1]), y=_Items([2]))[0] == {"x": 1, "y": 2}
    same_error(lambda: edata.StackDataset(_Items([1]), _Items([1, 2])),
               lambda: tdata.StackDataset([1], [1, 2]))


@pytest.mark.parametrize("n, lengths", [(11, [0.3, 0.3, 0.4]), (10, [0.5, 0.5]), (7, [3, 4]),
                                        (5, [1 / 3, 1 / 3, 1 / 3]), (2, [0.1, 0.1, 0.8])])
def test_random_split_lengths_match_torch(n, lengths):
    with warnings.catch_warnings(record=True) as caught_t:
        warnings.simplefilter("always")
        want = [len(s) for s in tdata.random_split(range(n), lengths)]
    with warnings.catch_warnings(record=True) as caught_e:
        warnings.simplefilter("always")
        parts = edata.random_split(range(n), lengths, generator=gen(3))
    assert [len(s) for s in parts] == want
    assert [str(w.message) for w in caught_e] == [str(w.message) for w in caught_t]
    assert sorted(i for p in parts for i in p) == list(range(n))  # disjoint and complete


def test_random_split_reproducible_with_generator():
    def split(seed):
        return [list(s) for s in edata.random_split(range(20), [0.5, 0.5], generator=gen(seed))]
    assert split(1) == split(1)
    assert split(1) != split(2)
    ember.manual_seed(5)
    first = [list(s) for s in edata.random_split(range(20), [10, 10])]
    ember.manual_seed(5)
    assert [list(s) for s in edata.random_split(range(20), [10, 10])] == first


@pytest.mark.parametrize("lengths", [[3, 3], [1.2, -0.2], [0.5, 0.6]])
def test_random_split_errors_match_torch(lengths):
    same_error(lambda: edata.random_split(range(5), lengths, generator=gen()),
               lambda: tdata.random_split(range(5), lengths))


# -- samplers -----------------------------------------------------------------------------------
def test_sequential_and_batch_sampler():
    assert list(edata.SequentialSampler(range(4))) == [0, 1, 2, 3]
    for drop_last in (False, True):
        ours = edata.BatchSampler(range(7), 3, drop_last)
        theirs = tdata.BatchSampler(range(7), 3, drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
    assert list(edata.BatchSampler(range(6), 3, True)) == [[0, 1, 2], [3, 4, 5]]


def test_random_sampler_permutations_and_reproducibility():
    s = edata.RandomSampler(range(10), generator=gen(0))
    first, second = list(s), list(s)
    assert sorted(first) == sorted(second) == list(range(10))
    assert first != second  # the generator advances between passes
    assert list(edata.RandomSampler(range(10), generator=gen(0))) == first
    ember.manual_seed(9)  # without a generator: seeded from the default generator each pass
    a = list(edata.RandomSampler(range(10)))
    ember.manual_seed(9)
    assert list(edata.RandomSampler(range(10))) == a


def test_random_sampler_num_samples_and_replacement():
    out = list(edata.RandomSampler(range(4), num_samples=10, generator=gen(1)))
    assert len(out) == 10 and sorted(out[:4]) == sorted(out[4:8]) == [0, 1, 2, 3]
    assert len(set(out[8:])) == 2
    drawn = list(edata.RandomSampler(range(5), replacement=True, num_samples=70, generator=gen()))
    assert len(drawn) == 70 and set(drawn) == set(range(5))  # 70 draws from 5 values
    assert len(edata.RandomSampler(range(5), replacement=True, num_samples=70)) == 70


@pytest.mark.parametrize("kwargs", [{"replacement": 1}, {"num_samples": 0},
                                    {"num_samples": 2.5}])
def test_random_sampler_errors_match_torch(kwargs):
    same_error(lambda: edata.RandomSampler(range(3), **kwargs),
               lambda: tdata.RandomSampler(range(3), **kwargs))


def test_subset_random_sampler():
    idx = [10, 20, 30, 40]
    out = list(edata.SubsetRandomSampler(idx, generator=gen(2)))
    assert sorted(out) == idx and len(edata.SubsetRandomSampler(idx)) == 4
    assert list(edata.SubsetRandomSampler(idx, generator=gen(2))) == out


def test_weighted_random_sampler_frequencies():
    weights = [1.0, 3.0, 0.0, 6.0]
    n = 20000
    drawn = np.array(list(edata.WeightedRandomSampler(weights, n, generator=gen(7))))
    freq = np.bincount(drawn, minlength=4) / n
    # expected 0.1, 0.3, 0, 0.6; the standard error is below 0.004, so 0.03 is > 7 sigma
    np.testing.assert_allclose(freq, [0.1, 0.3, 0.0, 0.6], atol=0.03)
    assert freq[2] == 0
    no_repl = list(edata.WeightedRandomSampler(weights, 3, replacement=False, generator=gen()))
    assert sorted(no_repl) == [0, 1, 3]
    assert list(edata.WeightedRandomSampler(weights, 50, generator=gen(7))) == drawn[:50].tolist()


@pytest.mark.parametrize("args", [([1.0, 2.0], 0), ([1.0, 2.0], True), ([[1.0, 2.0]], 2),
                                  ([1.0], 2, 1)])
def test_weighted_random_sampler_errors_match_torch(args):
    same_error(lambda: edata.WeightedRandomSampler(*args),
               lambda: tdata.WeightedRandomSampler(*args))


@pytest.mark.parametrize("args", [(range(3), 0, False), (range(3), True, False),
                                  (range(3), 2, None)])
def test_batch_sampler_errors_match_torch(args):
    same_error(lambda: edata.BatchSampler(*args), lambda: tdata.BatchSampler(*args))


# -- collation ------------------------------------------------------------------------------------
_DTYPES = {torch.float32: ember.float32, torch.float64: ember.float64, torch.int64: ember.int64,
           torch.int32: ember.int32, torch.int16: ember.int16, torch.uint8: ember.uint8,
           torch.bool: ember.bool}


def assert_same_structure(ours, theirs, path="batch"):
    """Same container types, keys, lengths, tensor shapes/dtypes/values and leaves."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, ember.Tensor), path
        assert ours.dtype == _DTYPES[theirs.dtype], path
        assert tuple(ours.shape) == tuple(theirs.shape), path
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=path)
        return
    assert type(ours) is type(theirs), f"{path}: {type(ours)} vs {type(theirs)}"
    if isinstance(theirs, dict):
        assert list(ours) == list(theirs), path
        for k in theirs:
            assert_same_structure(ours[k], theirs[k], f"{path}[{k!r}]")
    elif isinstance(theirs, list | tuple):
        assert len(ours) == len(theirs), path
        for i, (o, t) in enumerate(zip(ours, theirs)):
            assert_same_structure(o, t, f"{path}[{i}]")
    elif isinstance(theirs, np.ndarray):
        np.testing.assert_array_equal(ours, theirs)
    else:
        assert ours == theirs, path


def _samples(lib, i):
    """A nested sample in library ``lib`` (tensors built from the same NumPy data)."""
    arr = np.arange(6, dtype=np.float32).reshape(2, 3) + i
    return {
        "image": lib.from_numpy(arr.copy()),
        "label": i,
        "weight": 0.5 * i,
        "flag": i % 2 == 0,
        "name": f"s{i}",
        "raw": b"x",
        "np": arr.astype(np.int16),
        "np_scalar": np.float32(i),
        "np_0d": np.array(i, dtype=np.int32),
        "pair": (i, float(i)),
        "seq": [np.uint8(i), [i, i + 1]],
        "point": Point(x=i, y=lib.tensor([i, -i])),
        "ordered": collections.OrderedDict(b=i, a=[f"t{i}"]),
        "counter": collections.defaultdict(int, k=i),
    }


def test_default_collate_nested_matches_torch():
    ours = edata.default_collate([_samples(ember, i) for i in range(3)])
    theirs = tdata.default_collate([_samples(torch, i) for i in range(3)])
    assert_same_structure(ours, theirs)
    assert ours["counter"].default_factory is int


@pytest.mark.parametrize("batch", [
    [1.5, 2.0], [1, 2], [True, False], [np.float64(1), np.float64(2)], [np.bool_(True)],
    [np.zeros((2, 2), np.uint8), np.ones((2, 2), np.uint8)], [("a", 1), ("b", 2)],
    [[1, 2.0], [3, 4.0]], [{"k": [1]}, {"k": [2]}], [Point(1, "a"), Point(2, "b")]])
def test_default_collate_leaves_match_torch(batch):
    assert_same_structure(edata.default_collate(batch), tdata.default_collate(batch))


def _lib_tensors(lib):
    return [lib.zeros(2), lib.zeros(3)]


@pytest.mark.parametrize("make", [
    lambda lib: [[1, 2], [3]], lambda lib: [None, None], lambda lib: [object(), object()],
    lambda lib: [np.array(["a"]), np.array(["b"])], lambda lib: [np.array([b"a"])],
    lambda lib: [np.array([object()])] * 2, _lib_tensors])
def test_default_collate_errors_match_torch(make):
    same_error(lambda: edata.default_collate(make(ember)),
               lambda: tdata.default_collate(make(torch)))


def test_default_collate_error_for_unknown_class_names_it():
    class Box:
        pass
    with pytest.raises(TypeError, match="found <class '.*Box'>"):
        edata.default_collate([Box(), Box()])


@pytest.mark.parametrize("data", [
    np.arange(3, dtype=np.int32), np.float32(2.5), (1, np.zeros(2)), [np.ones(1), "s"],
    {"a": np.zeros(1), "b": 3}, Point(1, np.zeros(2)), "text", 7, np.array(["a", "b"])])
def test_default_convert_matches_torch(data):
    assert_same_structure(edata.default_convert(data), tdata.default_convert(data))


def test_default_convert_shares_numpy_memory_and_keeps_tensors():
    arr = np.zeros(3)
    t = edata.default_convert(arr)
    arr[0] = 5
    assert t[0].item() == 5
    x = ember.ones(2)
    assert edata.default_convert(x) is x


def test_collate_with_custom_map():
    def join(batch, *, collate_fn_map=None):
        return "".join(batch)
    out = edata._collate.collate([("a", 1.0), ("b", 2.0)],
                                 collate_fn_map={str: join, float: lambda b, **k: sum(b)})
    assert out == ["ab", 3.0]


# -- DataLoader in this process ---------------------------------------------------------------
def _batches(loader):
    return [edata_tolist(b) for b in loader]


def edata_tolist(b):
    if isinstance(b, ember.Tensor):
        return b.tolist()
    if isinstance(b, dict):
        return {k: edata_tolist(v) for k, v in b.items()}
    if isinstance(b, list | tuple):
        return [edata_tolist(v) for v in b]
    return b


def _ttolist(b):
    if isinstance(b, torch.Tensor):
        return b.tolist()
    if isinstance(b, dict):
        return {k: _ttolist(v) for k, v in b.items()}
    if isinstance(b, list | tuple):
        return [_ttolist(v) for v in b]
    return b


@pytest.mark.parametrize("kwargs", [{}, {"batch_size": 3}, {"batch_size": 3, "drop_last": True},
                                    {"batch_size": 4, "drop_last": True}, {"batch_size": None},
                                    {"batch_size": 20}, {"batch_size": 20, "drop_last": True}])
def test_loader_batches_and_len_match_torch(kwargs):
    data = [(i, i / 4, f"n{i}") for i in range(10)]
    ours, theirs = edata.DataLoader(data, **kwargs), tdata.DataLoader(data, **kwargs)
    assert len(ours) == len(theirs)
    assert _batches(ours) == [_ttolist(b) for b in theirs]


def test_loader_drop_last_counts():
    ds = edata.TensorDataset(ember.arange(10))
    assert [len(b[0]) for b in edata.DataLoader(ds, batch_size=4)] == [4, 4, 2]
    assert [len(b[0]) for b in edata.DataLoader(ds, batch_size=4, drop_last=True)] == [4, 4]
    assert len(edata.DataLoader(ds, batch_size=4, drop_last=True)) == 2
    assert len(edata.DataLoader(ds, batch_size=4)) == 3


def test_loader_shuffle_reproducible_with_generator():
    ds = edata.TensorDataset(ember.arange(12))

    def epochs(seed):
        dl = edata.DataLoader(ds, batch_size=5, shuffle=True, generator=gen(seed))
        return [[b[0].tolist() for b in dl] for _ in range(2)]
    first = epochs(4)
    assert first == epochs(4)
    assert first != epochs(5)
    assert first[0] != first[1]  # each epoch reshuffles
    assert sorted(sum(first[0], [])) == list(range(12))


def test_loader_sampler_batch_sampler_collate_fn():
    data = list(range(10, 20))
    dl = edata.DataLoader(data, sampler=[9, 0, 5], batch_size=2)
    assert _batches(dl) == [[19, 10], [15]]
    dl = edata.DataLoader(data, batch_sampler=[[1, 2, 3], [0]], collate_fn=lambda b: sum(b))
    assert list(dl) == [36, 10] and len(dl) == 2
    dl = edata.DataLoader(data, batch_size=None, sampler=[3, 1])
    assert list(dl) == [13, 11]


class _Batched(edata.Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        raise AssertionError("__getitems__ should be used")

    def __getitems__(self, idx):
        return [i * 10 for i in idx]


def test_loader_uses_getitems():
    assert _batches(edata.DataLoader(_Batched(), batch_size=4)) == [[0, 10, 20, 30], [40, 50]]


@pytest.mark.parametrize("kwargs", [
    {"sampler": [0], "shuffle": True}, {"batch_sampler": [[0]], "batch_size": 2},
    {"batch_sampler": [[0]], "drop_last": True}, {"batch_sampler": [[0]], "shuffle": True},
    {"batch_sampler": [[0]], "sampler": [0]}, {"batch_size": None, "drop_last": True},
    {"num_workers": -1}, {"timeout": -1}, {"prefetch_factor": 2},
    {"num_workers": 1, "prefetch_factor": -1}, {"persistent_workers": True},
    {"batch_size": 0}, {"multiprocessing_context": "fork"},
    {"num_workers": 1, "multiprocessing_context": "nope"}])
def test_loader_option_errors_match_torch(kwargs):
    same_error(lambda: edata.DataLoader(list(range(3)), **kwargs),
               lambda: tdata.DataLoader(list(range(3)), **kwargs))


@pytest.mark.parametrize("kwargs", [{"shuffle": True}, {"sampler": [0]},
                                    {"batch_sampler": [[0]]}])
def test_loader_iterable_option_errors_match_torch(kwargs):
    class T(tdata.IterableDataset):
        def __iter__(self):
            return iter([])

    class E(edata.IterableDataset):
        def __iter__(self):
            return iter([])

    with pytest.raises(ValueError) as want:
        tdata.DataLoader(T(), **kwargs)
    with pytest.raises(ValueError) as got:
        edata.DataLoader(E(), **kwargs)
    assert str(got.value).split(" but got")[0] == str(want.value).split(" but got")[0]


def test_loader_attributes_frozen_after_init():
    dl = edata.DataLoader([1, 2])
    same_error(lambda: setattr(dl, "batch_size", 3),
               lambda: setattr(tdata.DataLoader([1, 2]), "batch_size", 3))
    dl.timeout = 1  # other attributes stay assignable


@pytest.mark.parametrize("batch_size, drop_last", [(None, False), (3, False), (3, True),
                                                   (20, True)])
def test_loader_iterable_dataset_batches_and_len(batch_size, drop_last):
    ds = _Stream(list(range(10)))
    dl = edata.DataLoader(ds, batch_size=batch_size, drop_last=drop_last)
    want = [b if batch_size is None else _ttolist(b)
            for b in tdata.DataLoader(list(range(10)), batch_size=batch_size,
                                      drop_last=drop_last)]
    assert _batches(dl) == want
    assert len(dl) == len(want)


def test_loader_iterable_len_overrun_warns():
    class Liar(_Stream):
        def __len__(self):
            return 2
    dl = edata.DataLoader(Liar([1, 2, 3]), batch_size=None)
    assert len(dl) == 2
    with pytest.warns(UserWarning, match="was reported to be 2"):
        list(dl)


def test_worker_info_is_none_in_main_process():
    assert edata.get_worker_info() is None
    info = edata.WorkerInfo(id=1, num_workers=2, seed=3, dataset=None)
    assert repr(info) == "WorkerInfo(id=1, num_workers=2, seed=3, dataset=None)"
    with pytest.raises(RuntimeError, match="Cannot assign attributes to WorkerInfo objects"):
        info.id = 2
