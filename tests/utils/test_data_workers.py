"""DataLoader with worker processes: same batches as the main process, worker state, errors,
timeouts, persistent workers, and no process left behind by any test."""

from __future__ import annotations

import gc
import multiprocessing as mp

import pytest
import torch
import torch.utils.data as tdata

import ember
import ember.utils.data as edata
from ember.utils.data import _worker, dataloader
from tests.utils import _datasets as D

# fork starts workers fastest; spawn (tested once below) must work too
CTX = "fork" if "fork" in mp.get_all_start_methods() else "spawn"


@pytest.fixture(autouse=True)
def _no_process_left_behind():
    yield
    if mp.active_children():  # only an iterator kept alive by a reference cycle may remain
        gc.collect()
    assert mp.active_children() == []


def loader(ds, **kw):
    if kw.get("num_workers", 0) > 0:
        kw.setdefault("multiprocessing_context", CTX)
    return edata.DataLoader(ds, **kw)


def tolist(b):
    if isinstance(b, ember.Tensor | torch.Tensor):
        return b.tolist()
    if isinstance(b, dict):
        return {k: tolist(v) for k, v in b.items()}
    if isinstance(b, list | tuple):
        return [tolist(v) for v in b]
    return b


def run(dl):
    return [tolist(b) for b in dl]


@pytest.mark.parametrize("kwargs", [{"batch_size": 3}, {"batch_size": 3, "drop_last": True},
                                    {"batch_size": None}, {"batch_size": 4, "shuffle": True}])
def test_map_dataset_workers_match_main_process(kwargs):
    def epoch(num_workers):
        g = ember.Generator().manual_seed(11)
        return run(loader(D.Squares(11), num_workers=num_workers, generator=g, **kwargs))
    main = epoch(0)
    assert main == epoch(2)
    assert len(main) == len(loader(D.Squares(11), num_workers=2, **kwargs))


@pytest.mark.parametrize("drop_last", [False, True])
def test_sharded_iterable_workers_match_main_process(drop_last):
    ds = D.InterleavedRange(22, batch_size=4)
    main = run(loader(ds, batch_size=4, drop_last=drop_last))
    assert main == run(loader(ds, batch_size=4, drop_last=drop_last, num_workers=2))
    assert main[-1] == ([16, 17, 18, 19] if drop_last else [20, 21])


class _TorchContiguous(tdata.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = tdata.get_worker_info()
        per = -(-self.n // info.num_workers)
        return iter(range(info.id * per, min(self.n, (info.id + 1) * per)))


@pytest.mark.parametrize("batch_size", [3, None])
def test_contiguous_shards_interleave_like_torch(batch_size):
    ours = run(loader(D.ContiguousShards(13), batch_size=batch_size, num_workers=2))
    theirs = run(tdata.DataLoader(_TorchContiguous(13), batch_size=batch_size, num_workers=2,
                                  multiprocessing_context=CTX))
    assert ours == theirs
    if batch_size == 3:
        assert ours[:3] == [[0, 1, 2], [7, 8, 9], [3, 4, 5]]


def test_unsharded_iterable_duplicates_per_worker_and_warns():
    dl = loader(D.Unsharded(3), batch_size=None, num_workers=2)
    assert len(dl) == 3
    with pytest.warns(UserWarning, match="each worker iterates its own copy"):
        out = run(dl)
    assert sorted(out) == [0, 0, 1, 1, 2, 2]


def test_worker_info_seeds_and_init_fn():
    def epoch(seed):
        g = ember.Generator().manual_seed(seed)
        dl = loader(D.WhoAmI(6), batch_size=None, num_workers=2, generator=g,
                    worker_init_fn=D.mark_init)
        return list(dl)
    samples = epoch(3)
    by_worker = {}
    for s in samples:
        by_worker.setdefault(s["id"], []).append(s)
    assert sorted(by_worker) == [0, 1]
    seeds = {w: {s["seed"] for s in ss} for w, ss in by_worker.items()}
    assert len(seeds[0]) == len(seeds[1]) == 1
    assert seeds[1].pop() == seeds[0].pop() + 1  # base_seed + worker id
    for s in samples:
        assert s["num_workers"] == 2 and s["same_dataset"] and s["init"] == s["id"]
        assert s["pid"] != samples[0]["pid"] or s["id"] == samples[0]["id"]
    assert [s["index"] for s in samples] == list(range(6))
    # the workers' ember generators are seeded per worker: different streams, repeatable runs
    first = {s["id"]: s["draw"].tolist() for s in samples if s["index"] < 2}
    assert first[0] != first[1]
    again = epoch(3)
    assert [s["draw"].tolist() for s in again] == [s["draw"].tolist() for s in samples]
    assert [s["seed"] for s in epoch(4)] != [s["seed"] for s in samples]


def test_worker_exception_is_reraised_with_its_traceback():
    dl = loader(D.FailAt(8, bad=5), batch_size=2, num_workers=2)
    it = iter(dl)
    assert [tolist(next(it)), tolist(next(it))] == [[0, 1], [2, 3]]
    with pytest.raises(ValueError) as err:
        next(it)
    msg = str(err.value)
    assert msg.startswith("Caught ValueError in DataLoader worker process 0.")
    assert "Original Traceback (most recent call last)" in msg
    assert "sample 5 is corrupt" in msg and "_datasets.py" in msg and "__getitem__" in msg
    assert tolist(next(it)) == [6, 7]  # like torch, the loader carries on after the bad batch
    with pytest.raises(StopIteration):
        next(it)
    del it, err


def test_worker_key_error_message_is_readable():
    with pytest.raises(KeyError) as err:
        run(loader(D.KeyErrorAt(4, bad=1), batch_size=None, num_workers=1))
    assert str(err.value).startswith("Caught KeyError in DataLoader worker process 0.")
    del err


def test_worker_init_fn_error_and_unpicklable_batch_are_reraised():
    with pytest.raises(ValueError, match=r"(?s)worker process \d.*init of worker \d failed"):
        run(loader(D.Squares(4), num_workers=2, worker_init_fn=D.failing_init))
    with pytest.raises(Exception, match=r"(?s)in DataLoader worker process 0.*pickle"):
        run(loader(D.Unpicklable(), batch_size=None, num_workers=1))


def test_timeout_raises_runtime_error(monkeypatch):
    monkeypatch.setattr(dataloader, "JOIN_TIMEOUT", 0.2)  # do not wait for the sleeping worker
    dl = loader(D.Sleepy(2, seconds=30), batch_size=None, num_workers=1, timeout=0.05)
    it = iter(dl)
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0.05 seconds$"):
        next(it)
    worker = it._workers[0]
    del it
    gc.collect()  # while JOIN_TIMEOUT is still patched
    assert not worker.is_alive()


def test_dead_worker_is_reported(monkeypatch):
    monkeypatch.setattr(_worker, "POLL_INTERVAL", 0.1)
    dl = loader(list(range(4)), num_workers=1, collate_fn=D.crash_at_one, prefetch_factor=1)
    it = iter(dl)
    assert next(it) == [0]
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited "
                                           r"unexpectedly"):
        next(it)
    del it


def test_workers_stop_when_epoch_ends_or_iterator_is_dropped():
    dl = loader(D.Squares(6), batch_size=2, num_workers=2)
    it = iter(dl)
    workers = list(it._workers)
    assert all(w.is_alive() for w in workers)
    assert len(list(it)) == 3
    assert not any(w.is_alive() for w in workers)  # shut down at the end of the epoch
    it = iter(dl)
    next(it)
    workers = list(it._workers)
    del it  # abandoned mid-epoch
    gc.collect()
    assert not any(w.is_alive() for w in workers)


def test_persistent_workers_are_reused_across_epochs():
    g = ember.Generator().manual_seed(0)
    dl = loader(D.WhoAmI(8), batch_size=2, shuffle=True, generator=g, num_workers=2,
                persistent_workers=True)
    epochs = [list(dl) for _ in range(3)]
    pids = [sorted({p for b in e for p in b["pid"].tolist()}) for e in epochs]
    assert len(pids[0]) == 2 and pids[0] == pids[1] == pids[2]
    orders = [[i for b in e for i in b["index"].tolist()] for e in epochs]
    assert all(sorted(o) == list(range(8)) for o in orders)
    assert orders[0] != orders[1]  # still reshuffled every epoch
    workers = list(dl._iterator._workers)
    assert all(w.is_alive() for w in workers)
    del dl, epochs
    gc.collect()
    assert not any(w.is_alive() for w in workers)


def test_persistent_workers_after_an_abandoned_epoch_and_iterable_restart():
    dl = loader(D.Squares(10), batch_size=3, num_workers=2, persistent_workers=True,
                prefetch_factor=1)
    it = iter(dl)
    next(it)  # leave the epoch with batches still in flight
    assert run(dl) == run(loader(D.Squares(10), batch_size=3))
    stream = loader(D.InterleavedRange(10, batch_size=2), batch_size=2, num_workers=2,
                    persistent_workers=True)
    assert run(stream) == run(stream) == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]
    del it, dl, stream


def test_prefetch_factor_bounds_tasks_in_flight():
    it = iter(loader(D.Squares(20), batch_size=1, num_workers=2, prefetch_factor=1))
    assert len(it._tasks) == 2
    assert tolist(next(it)) == [[0], [0.0]]
    assert len(it._tasks) + len(it._early) <= 3
    assert len(list(it)) == 19
    del it


def test_spawn_start_method_gives_the_same_batches():
    assert "spawn" in mp.get_all_start_methods()
    dl = edata.DataLoader(D.Squares(5), batch_size=2, num_workers=2,
                          multiprocessing_context="spawn")
    assert run(dl) == run(edata.DataLoader(D.Squares(5), batch_size=2))
