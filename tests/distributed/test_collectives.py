"""Every collective, reduce op and dtype on the shm and mpi engines against NumPy (the checks
run inside the ranks: tests/distributed/_cases.py ``collectives``), async forms, subgroups,
non-contiguous tensors, objects, point to point; the TCPStore against torch's; argument errors.
"""

from __future__ import annotations

import datetime

import pytest
import torch.distributed as tdist

import ember
import ember.distributed as dist
from tests.distributed import _spawn


def _ok(results):
    for code, out in results:
        assert code == 0 and out.rstrip().endswith("OK"), out[-4000:]


def test_collectives_shm_two_ranks():
    # 256 KiB all_reduce pieces: the pipelined path at a test's sizes (NOTE [Pipelined all_reduce])
    _ok(_spawn.ranks(2, ["collectives"], env={"EMBER_SHM_PIECE_MB": "0.25"}))


def test_collectives_shm_four_ranks_cut_into_pieces():
    # 10 KiB slots: every message above cuts into several pieces (NOTE [Epochs and slots])
    _ok(_spawn.ranks(4, ["collectives"], env={"EMBER_SHM_SLOT_MB": "0.01"}, timeout=150))


@pytest.mark.skipif(not _spawn.has_mpi(), reason="mpi4py (pip install 'ember[mpi]') is not "
                    "installed: the mpi engine cannot be tested")
def test_collectives_mpi_two_ranks():
    _ok(_spawn.mpi_ranks(2, ["collectives"]))


@pytest.mark.skipif(not _spawn.has_mpi(), reason="mpi4py (pip install 'ember[mpi]') is not "
                    "installed: the mpi engine cannot be tested")
def test_small_all_reduces_mpi_and_shm():
    # the mpi engine's persistent requests for small messages, and the same calls on shm
    _ok(_spawn.mpi_ranks(2, ["small"]))
    _ok(_spawn.ranks(2, ["small"]))


def test_gloo_is_accepted_and_nccl_refused():
    results = _spawn.ranks(2, ["detail_log"], env={"CASE_BACKEND": "gloo"})
    _ok(results)
    assert "backend 'gloo' runs on ember's 'shm' engine" in results[0][1]
    with pytest.raises(RuntimeError, match="NCCL"):
        dist.init_process_group("nccl", init_method="tcp://127.0.0.1:1", rank=0, world_size=1)
    with pytest.raises(ValueError, match="unknown backend"):
        dist.init_process_group("ucc", init_method="tcp://127.0.0.1:1", rank=0, world_size=1)
    assert not dist.is_initialized()


def test_uninitialized_group_errors_as_torch():
    for fn in (lambda m: m.get_rank(), lambda m: m.barrier(),
               lambda m: m.all_reduce(ember.ones(2) if m is dist else __import__("torch").ones(2))):
        with pytest.raises(ValueError) as ours:
            fn(dist)
        with pytest.raises(ValueError) as theirs:
            fn(tdist)
        assert str(ours.value).replace("ember.distributed", "") == \
            str(theirs.value).replace("torch.distributed", "")


def test_one_rank_world_over_tcp_init_method():
    port = _spawn.free_port()
    dist.init_process_group("shm", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1,
                            timeout=datetime.timedelta(seconds=10))
    try:
        assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
        assert dist.get_backend() == "shm"
        x = ember.arange(6.0).reshape(2, 3)
        dist.all_reduce(x, op=dist.ReduceOp.AVG)
        assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
        with pytest.raises(ValueError, match="twice"):
            dist.init_process_group("shm", init_method=f"tcp://127.0.0.1:{port}", rank=0,
                                    world_size=1)
        with pytest.raises(ValueError, match="AVG needs a floating point"):
            dist.all_reduce(ember.ones(2, dtype=ember.int64), op=dist.ReduceOp.AVG)
        with pytest.raises(ValueError, match="output tensor size must be equal to world_size"):
            dist.all_gather_into_tensor(ember.empty(3), ember.empty(2))
        with pytest.raises(ValueError, match="one tensor per rank"):
            dist.all_gather([ember.empty(2)] * 2, ember.empty(2))
        with pytest.raises(ValueError, match="not part of the group"):
            dist.broadcast(ember.ones(2), src=3)
        with pytest.raises(ValueError, match="scatter_object_output_list to be a list of size"):
            dist.scatter_object_list([], [1])
        out = [None]
        dist.scatter_object_list(out, [{"only": 0}])
        assert out == [{"only": 0}]
        dist.monitored_barrier(wait_all_ranks=True)  # one rank: nobody to wait for
        with pytest.raises(ValueError, match="same as the rank of the current process"):
            dist.batch_isend_irecv([dist.P2POp(dist.isend, ember.ones(1), 0)])
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized()


def test_rank_outside_world_and_port_in_use():
    with pytest.raises(ValueError, match="rank 2 is out of range for world_size 2"):
        dist.init_process_group("shm", init_method="tcp://127.0.0.1:1", rank=2, world_size=2)
    holder = dist.TCPStore("127.0.0.1", 0, 1, True)
    with pytest.raises(dist.DistNetworkError, match="EADDRINUSE, message: address already in use"):
        dist.init_process_group("shm", init_method=f"tcp://127.0.0.1:{holder.port}", rank=0,
                                world_size=1)
    holder.close()
    assert not dist.is_initialized()


def test_ranks_disagreeing_on_world_size_fail_fast():
    results = _spawn.ranks(2, ["detail_log"], per_rank={1: {"WORLD_SIZE": "3"}}, timeout=60,
                           env={"CASE_TIMEOUT": "20"})
    assert all(code != 0 for code, _ in results)
    assert "world_size 3 but rank 0 has 2" in results[1][1], results[1][1][-2000:]


def test_tcp_store_matches_torch():
    timeout = datetime.timedelta(seconds=1)
    ours = dist.TCPStore("127.0.0.1", 0, 1, True, timeout=timeout)
    theirs = tdist.TCPStore("127.0.0.1", 0, 1, True, timeout=timeout)
    steps = [("num_keys",), ("set", "a", "1"), ("get", "a"), ("set", "b", b"\x00\xff"),
             ("get", "b"), ("add", "n", 5), ("add", "n", -2), ("get", "n"),
             ("compare_set", "a", "1", "2"), ("compare_set", "a", "x", "3"),
             ("compare_set", "new", "", "v"), ("compare_set", "other", "zz", "v"),
             ("check", ["a", "new"]), ("check", ["a", "nope"]), ("num_keys",),
             ("delete_key", "a"), ("delete_key", "a"), ("num_keys",), ("wait", ["b", "n"])]
    for name, *args in steps:
        assert getattr(ours, name)(*args) == getattr(theirs, name)(*args), (name, args)
    with pytest.raises(dist.DistStoreError, match="wait timeout after 1000ms, keys: /missing"):
        ours.get("missing")
    with pytest.raises(dist.DistStoreError, match="wait timeout after 200ms"):
        ours.wait(["missing"], datetime.timedelta(milliseconds=200))
    with pytest.raises(dist.DistNetworkError, match="EADDRINUSE"):
        dist.TCPStore("127.0.0.1", ours.port, 1, True)
    client = dist.TCPStore("127.0.0.1", ours.port, timeout=timeout)
    assert client.get("b") == b"\x00\xff" and client.add("n", 1) == 4
    assert isinstance(dist.DistStoreError("x"), RuntimeError)
    prefixed = dist.PrefixStore("p", client)
    prefixed.set("k", "v")
    assert ours.get("p/k") == b"v" and prefixed.get("k") == b"v"
    client.close()
    ours.close()


def test_batched_p2p_and_object_argument_errors_match_torch(monkeypatch):
    import torch

    monkeypatch.delenv("LOCAL_RANK", raising=False)
    cases = [
        (lambda m, t: m.P2POp(m.send, t(2), 0), ValueError),
        (lambda m, t: m.batch_isend_irecv([1]), ValueError),
        (lambda m, t: m.scatter_object_list([], [1]), ValueError),
        (lambda m, t: m.get_node_local_rank(), RuntimeError),
    ]
    for fn, kind in cases:
        with pytest.raises(kind) as ours:
            fn(dist, ember.ones)
        with pytest.raises(kind) as theirs:
            fn(tdist, torch.ones)
        assert str(ours.value) == str(theirs.value)
    assert dist.get_node_local_rank(fallback_rank=3) == tdist.get_node_local_rank(3) == 3
    for name in ("gloo", "mpi", "nccl", "ucc"):
        assert dist.is_backend_available(name) == (name == "gloo" or
                                                   (name == "mpi" and _spawn.has_mpi()))
