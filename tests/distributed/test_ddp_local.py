"""DistributedDataParallel in one process: bucket assignment (against torch's), bucket views,
ready order and rebuild, no_sync, unused parameters, the timeline file.

A world of one rank needs no communication; the process group is a stand-in that reports
rank 0 of 1 (the multi-rank behaviour is tested in test_ddp.py).
"""

from __future__ import annotations

import json
import types

import numpy as np
import pytest
import torch
import torch.distributed as tdist

import ember
import ember.nn.parallel.distributed as ddp_mod
from ember.nn.parallel import DistributedDataParallel as DDP
from ember.nn.parallel._timeline import recorder
from ember.nn.parallel.distributed import compute_bucket_assignment_by_size


@pytest.fixture
def world1(monkeypatch):
    """A one-rank 'ember.distributed' (no collective is ever called with one rank)."""
    def never(*a, **k):
        raise AssertionError("a one-rank DDP called a collective")

    fake = types.SimpleNamespace(
        is_initialized=lambda: True, get_rank=lambda group=None: 0,
        get_world_size=lambda group=None: 1, all_reduce=never, broadcast=never,
        ReduceOp=types.SimpleNamespace(SUM="sum", MAX="max"))
    monkeypatch.setattr(ddp_mod, "_dist", lambda: fake)
    return fake


def _mlp(dtype=ember.float64, sizes=(6, 8, 8, 3)):
    ember.manual_seed(0)
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [ember.nn.Linear(a, b, dtype=dtype), ember.nn.Tanh()]
    return ember.nn.Sequential(*layers[:-1])


# -- bucket assignment ---------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("reverse", [False, True])
def test_bucket_assignment_matches_torch(seed, reverse):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12))
    numels = [int(v) for v in rng.integers(1, 200_000, n)]
    dtypes = [(torch.float32, torch.float64)[int(k)] for k in rng.integers(0, 2, n)]
    limits = [int(v) for v in sorted(rng.integers(1, 1_500_000, int(rng.integers(1, 3))))]
    ts = [torch.empty(k, dtype=d) for k, d in zip(numels, dtypes)]
    sizes = [t.numel() * t.element_size() for t in ts]
    if reverse:
        order = list(reversed(range(n)))
        expect = tdist._compute_bucket_assignment_by_size([ts[i] for i in order], limits,
                                                          [False] * n, order)
        got = compute_bucket_assignment_by_size([sizes[i] for i in order],
                                                [dtypes[i] for i in order], limits, order)
    else:
        expect = tdist._compute_bucket_assignment_by_size(ts, limits)
        got = compute_bucket_assignment_by_size(sizes, dtypes, limits)
    expect = (list(map(list, expect[0])), list(expect[1]))
    if reverse and len(set(dtypes)) > 1:
        # torch appends the still open buckets (one per dtype) in its hash map's order
        got, expect = sorted(zip(*got)), sorted(zip(*expect))
    assert got == expect


def test_error_without_a_process_group(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "ember.distributed", None)
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DDP(ember.nn.Linear(2, 2))


def test_module_without_trainable_parameters(world1):
    m = ember.nn.Linear(2, 2).requires_grad_(False)
    with pytest.raises(RuntimeError, match="doesn't have any parameter that requires a gradient"):
        DDP(m)


# -- buckets in one process ----------------------------------------------------------------------

def test_buckets_reverse_registration_first_bucket_small(world1):
    # weights of 0.5 MiB (float32): the first bucket closes at 1 MiB, the next ones at 2 MiB
    m = ember.nn.Sequential(*[ember.nn.Linear(256, 512, bias=False) for _ in range(6)])
    d = DDP(m, bucket_cap_mb=None)
    assert d.reducer.bucket_indices() == [[5, 4], [3, 2, 1, 0]]
    d = DDP(m, bucket_cap_mb=1)  # a user cap: every bucket has it
    assert d.reducer.bucket_indices() == [[5, 4], [3, 2], [1, 0]]


def test_gradients_handed_over_are_their_own_tensors(world1):
    # NOTE [DDP hand-over]: the reduced buckets become the gradients; a gradient kept from a
    # step keeps its values through the next steps, and is not a view of anything
    ref, m = _mlp(), _mlp()
    d = DDP(m, bucket_cap_mb=0.0001)
    xs = [ember.randn(5, 6, dtype=ember.float64) for _ in range(3)]
    kept, want = [], []
    for x in xs:
        ref.zero_grad()
        d.zero_grad()
        ref(x).pow(2).sum().backward()
        d(x).pow(2).sum().backward()
        kept.append([p.grad for p in m.parameters()])
        want.append([q.grad.numpy().copy() for q in ref.parameters()])
        assert all(g._base is None for g in kept[-1])
        buckets = [b.array for b in d.reducer.buckets]
        assert not any(np.shares_memory(g.numpy(), a) for g in kept[-1] for a in buckets)
    for grads, ws in zip(kept, want):
        for g, w in zip(grads, ws):
            np.testing.assert_array_equal(g.numpy(), w)


@pytest.mark.parametrize("as_view", [False, True])
def test_one_rank_gradients_equal_plain_backward(world1, as_view):
    ref, m = _mlp(), _mlp()
    d = DDP(m, bucket_cap_mb=0.0001, gradient_as_bucket_view=as_view)
    assert len(d.reducer.buckets) > 1
    x = ember.randn(5, 6, dtype=ember.float64)
    for step in range(3):
        ref.zero_grad()
        d.zero_grad(set_to_none=step % 2 == 0)
        ref(x).pow(2).sum().backward()
        d(x).pow(2).sum().backward()
        for (name, p), q in zip(m.named_parameters(), ref.parameters()):
            np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy(), err_msg=name)
    for i, p in enumerate(d.reducer.params):
        b, k = d.reducer.where[i]
        views_bucket = np.shares_memory(p.grad.numpy(), b.array)
        assert views_bucket == as_view


def test_bucket_view_grads_accumulate_in_place(world1):
    m = _mlp()
    d = DDP(m, gradient_as_bucket_view=True)
    x = ember.randn(4, 6, dtype=ember.float64)
    d(x).sum().backward()
    first = [p.grad.clone() for p in m.parameters()]
    d(x).sum().backward()  # no zero_grad: accumulates into the bucket views
    for p, g in zip(m.parameters(), first):
        np.testing.assert_allclose(p.grad.numpy(), 2 * g.numpy(), rtol=1e-15, atol=0)


def test_rebuild_follows_the_ready_order(world1):
    class Swapped(ember.nn.Module):  # registered a, b; used b first, so a's grad is ready first
        def __init__(self):
            super().__init__()
            self.a = ember.nn.Linear(300, 300, bias=False)
            self.b = ember.nn.Linear(300, 300, bias=False)
            self.c = ember.nn.Linear(300, 300, bias=False)

        def forward(self, x):
            return self.a(self.c(self.b(x)))

    d = DDP(Swapped(), bucket_cap_mb=0.3)
    assert d.reducer.bucket_indices() == [[2], [1], [0]]
    x = ember.randn(2, 300)
    d(x).sum().backward()
    assert d.reducer.ready_order == [0, 2, 1]
    g = [p.grad.clone() for p in d.module.parameters()]
    d.zero_grad()
    d(x).sum().backward()  # this forward rebuilt the buckets
    assert d.reducer.has_rebuilt
    assert d.reducer.bucket_indices() == [[0], [2], [1]]
    for p, q in zip(d.module.parameters(), g):
        np.testing.assert_array_equal(p.grad.numpy(), q.numpy())


def test_no_sync_accumulates_locally_then_syncs(world1):
    ref, m = _mlp(), _mlp()
    d = DDP(m)
    x1, x2 = ember.randn(3, 6, dtype=ember.float64), ember.randn(3, 6, dtype=ember.float64)
    recorder.clear()
    with d.no_sync():
        d(x1).sum().backward()
    assert not [e for e in recorder.snapshot() if e[1] == "allreduce"]
    d(x2).sum().backward()
    assert [e for e in recorder.snapshot() if e[1] == "allreduce"]
    ref(x1).sum().backward()
    ref(x2).sum().backward()
    for p, q in zip(m.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-14, atol=1e-15)


class _TwoHeads(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = ember.nn.Linear(4, 4, dtype=ember.float64)
        self.used = ember.nn.Linear(4, 1, dtype=ember.float64)
        self.unused = ember.nn.Linear(4, 1, dtype=ember.float64)

    def forward(self, x):
        return self.used(self.body(x))


def test_unused_parameters_without_find_unused_raise_at_next_forward(world1):
    d = DDP(_TwoHeads())
    x = ember.randn(2, 4, dtype=ember.float64)
    d(x).sum().backward()
    with pytest.raises(RuntimeError, match=r"Expected to have finished reduction in the prior "
                       r"iteration(.|\n)*find_unused_parameters=True(.|\n)*"
                       r"Parameter indices which did not receive grad for rank 0: 4 5"):
        d(x)


def test_unused_parameters_with_find_unused(world1):
    d = DDP(_TwoHeads(), find_unused_parameters=True)
    x = ember.randn(2, 4, dtype=ember.float64)
    for _ in range(2):
        d.zero_grad()
        d(x).sum().backward()
        assert d.module.unused.weight.grad is None and d.module.unused.bias.grad is None
        assert d.module.used.weight.grad is not None


def test_static_graph_finds_unused_once(world1):
    d = DDP(_TwoHeads(), static_graph=True)
    assert d.static_graph
    x = ember.randn(2, 4, dtype=ember.float64)
    for _ in range(3):
        d.zero_grad()
        d(x).sum().backward()
        assert d.module.unused.weight.grad is None
    assert d.reducer.static_unused == [4, 5]


def test_parameter_used_twice_in_reentrant_backward_raises(world1):
    d = DDP(ember.nn.Linear(3, 1, dtype=ember.float64))
    y = d(ember.randn(2, 3, dtype=ember.float64)).sum()
    y.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="Expected to mark a variable ready only once"):
        # a second backward of one forward: the reducer was disarmed; re-arm as a reentrant
        # backward would and mark twice
        d.reducer.armed = True
        d.reducer.in_backward = True
        y.backward()


def test_timeline_chrome_trace(world1, tmp_path):
    from ember.distributed import record_timeline, timeline
    d = DDP(_mlp(), bucket_cap_mb=0.0001)
    recorder.clear()
    record_timeline(True)
    try:
        d(ember.randn(3, 6, dtype=ember.float64)).sum().backward()
    finally:
        record_timeline(False)
    out = timeline(tmp_path / "trace.json", clear=True)
    trace = json.loads(open(out).read())
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    cats = {e["cat"] for e in events}
    assert {"node", "allreduce", "ready", "step"} <= cats
    for e in events:
        assert e["dur"] >= 0 and isinstance(e["ts"], float)
    nodes = [e for e in events if e["cat"] == "node"]
    assert any(e["name"] == "AddmmBackward0" for e in nodes)
    buckets = sorted((e for e in events if e["cat"] == "allreduce"), key=lambda e: e["ts"])
    assert len(buckets) == len(d.reducer.buckets)
    # the first bucket is launched before backward's last node has run
    assert buckets[0]["ts"] < max(e["ts"] + e["dur"] for e in nodes)
    assert not recorder.snapshot()


def test_variable_execution_engine_queue_callback():
    # torch's spelling of the engine's end-of-backward queue, which DDP-style code calls
    seen = []
    w = ember.ones(2, requires_grad=True)
    w.register_hook(lambda g: ember.autograd.Variable._execution_engine.queue_callback(
        lambda: seen.append(w.grad is not None)))
    (w * 2).sum().backward()
    assert seen == [True]
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during "
                                           "backward pass"):
        ember.autograd.Variable._execution_engine.queue_callback(lambda: None)
