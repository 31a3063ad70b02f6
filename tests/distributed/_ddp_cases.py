"""What each rank runs for tests/distributed/test_ddp.py: ``python -m tests.distributed._ddp_cases
OUTDIR CASE...`` under the env contract (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT).

Each case writes ``OUTDIR/<case>.rank<r>.npz`` (gradients and parameters after each step) or,
if it raised, ``OUTDIR/<case>.rank<r>.err`` with the message. Models and data come from the
builders below, which the test also uses for its one-process reference.
"""

from __future__ import annotations

import os
import sys

import numpy as np

import ember
import ember.distributed as dist
import ember.nn as nn
from ember.nn.parallel import DistributedDataParallel as DDP

B = 4  # per-rank batch
STEPS = 2
LR = 0.1


# -- models and data (shared with the test's reference) -------------------------------------------

def mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(),
                         nn.Linear(16, 3)).double()


def cnn():
    ember.manual_seed(0)
    return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.Conv2d(4, 4, 3, stride=2), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.Flatten(), nn.Linear(4 * 3 * 3, 3)).double()


def gpt():
    from ember.examples.gpt import GPT, GPTConfig
    ember.manual_seed(0)
    return GPT(GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=8)).double()


class TwoHeads(nn.Module):
    """``unused`` gets no gradient; ``sometimes`` only on rank 0 (``forward(x, use)``)."""

    def __init__(self):
        super().__init__()
        ember.manual_seed(0)
        self.body = nn.Linear(4, 4)
        self.head = nn.Linear(4, 1)
        self.sometimes = nn.Linear(4, 1)
        self.unused = nn.Linear(4, 1)
        self.double()

    def forward(self, x, use: bool = True):
        h = self.body(x)
        out = self.head(h)
        return out + self.sometimes(h) if use else out


def data(kind: str, step: int, world: int):
    """The global batch of ``step`` (``world * B`` samples): inputs and targets."""
    g = ember.Generator().manual_seed(1000 + step)
    n = world * B
    if kind == "gpt":
        idx = ember.randint(0, 11, (n, 8), generator=g)
        return idx, ember.randint(0, 11, (n, 8), generator=g)
    if kind == "cnn":
        return ember.randn(n, 2, 7, 7, generator=g, dtype=ember.float64), \
            ember.randint(0, 3, (n,), generator=g)
    feat = 4 if kind == "unused" else 6
    return ember.randn(n, feat, generator=g, dtype=ember.float64), \
        ember.randn(n, 1 if kind == "unused" else 3, generator=g, dtype=ember.float64)


def loss_of(kind: str, model, x, y, **kw):
    if kind == "gpt":
        return model(x, y)[1]
    out = model(x, **kw)
    if kind == "cnn":
        return nn.functional.cross_entropy(out, y)
    return ((out - y) ** 2).mean()


def arrays(prefix: str, tensors) -> dict:
    return {f"{prefix}{i}": (np.array(t.detach().numpy()) if t is not None else np.array([]))
            for i, t in enumerate(tensors)}


# -- the cases ----------------------------------------------------------------------------------

def train(kind: str, rank: int, world: int, **ddp_kw) -> dict:
    model = {"mlp": mlp, "cnn": cnn, "gpt": gpt}[kind]()
    if rank:  # different initial values: the construction broadcast must replace them
        with ember.no_grad():
            for p in model.parameters():
                p.add_(1.0)
            for b in model.buffers():
                if b.is_floating_point():
                    b.add_(3.0)
    ddp = DDP(model, **ddp_kw)
    opt = ember.optim.SGD(ddp.parameters(), lr=LR)
    out = arrays("init", model.parameters())
    bufs = [b.array for b in ddp.reducer.buckets]
    out["buckets_disjoint"] = np.array(all(not np.shares_memory(a, b) for i, a in enumerate(bufs)
                                           for b in bufs[i + 1:]))
    kept = []  # each step's gradient tensors themselves: later steps must not change them
    for step in range(STEPS):
        x, y = data(kind, step, world)
        sl = slice(rank * B, (rank + 1) * B)
        opt.zero_grad()
        loss_of(kind, ddp, x[sl], y[sl]).backward()
        kept.append([p.grad for p in model.parameters()])
        out.update(arrays(f"grad{step}_", kept[-1]))
        opt.step()
        out.update(arrays(f"param{step}_", model.parameters()))
        out.update(arrays(f"buf{step}_", model.buffers()))
    for step, grads in enumerate(kept):
        out.update(arrays(f"kept{step}_", grads))
    out["grads_not_views"] = np.array(ddp.gradient_as_bucket_view or
                                      all(g._base is None for g in kept[-1]))
    return out


def case_mlp(rank, world):
    return train("mlp", rank, world, bucket_cap_mb=0.001)


def case_mlp_view(rank, world):
    return train("mlp", rank, world, bucket_cap_mb=0.001, gradient_as_bucket_view=True)


def case_cnn(rank, world):
    return train("cnn", rank, world)


def case_gpt(rank, world):
    return train("gpt", rank, world, bucket_cap_mb=0.002)


def case_no_sync(rank, world):
    model = mlp()
    ddp = DDP(model)
    x, y = data("mlp", 0, world)
    x2, y2 = data("mlp", 1, world)
    sl = slice(rank * B, (rank + 1) * B)
    with ddp.no_sync():
        loss_of("mlp", ddp, x[sl], y[sl]).backward()
    local = arrays("local", [p.grad for p in model.parameters()])
    loss_of("mlp", ddp, x2[sl], y2[sl]).backward()
    return {**local, **arrays("grad", [p.grad for p in model.parameters()])}


def case_find_unused(rank, world):
    model = TwoHeads()
    ddp = DDP(model, find_unused_parameters=True)
    out = {}
    for step in range(2):
        x, y = data("unused", step, world)
        sl = slice(rank * B, (rank + 1) * B)
        ddp.zero_grad()
        loss_of("unused", ddp, x[sl], y[sl], use=rank == 0).backward()
        out.update(arrays(f"grad{step}_", [p.grad for p in model.parameters()]))
    return out


def case_unused_error(rank, world):
    model = TwoHeads()
    ddp = DDP(model)
    x, y = data("unused", 0, world)
    sl = slice(rank * B, (rank + 1) * B)
    loss_of("unused", ddp, x[sl], y[sl]).backward()
    loss_of("unused", ddp, x[sl], y[sl])  # raises: `unused` never got a gradient
    return {}


def _join(rank, world, **kw):
    model = mlp()
    ddp = DDP(model, bucket_cap_mb=0.001)
    opt = ember.optim.SGD(ddp.parameters(), lr=LR)
    with ddp.join(**kw):
        for step in range(3 if rank == 0 else 1):  # uneven: rank 0 has three batches
            x, y = data("mlp", step, world)
            sl = slice(rank * B, (rank + 1) * B)
            opt.zero_grad()
            loss_of("mlp", ddp, x[sl], y[sl]).backward()
            opt.step()
    return arrays("param", model.parameters())


def case_join(rank, world):
    return _join(rank, world)


def case_join_active(rank, world):
    return _join(rank, world, divide_by_initial_world_size=False)


def case_join_throw(rank, world):
    return _join(rank, world, throw_on_early_termination=True)


def case_timeline(rank, world):
    from ember.distributed.timeline import record_timeline, timeline
    from ember.nn.parallel._timeline import recorder
    recorder.clear()  # only this case's events
    model = nn.Sequential(*[nn.Linear(64, 64) for _ in range(8)])
    ddp = DDP(model, bucket_cap_mb=0.02)
    record_timeline(True)
    x = ember.randn(8, 64)
    for _ in range(2):
        ddp(x).sum().backward()
    timeline(os.path.join(OUT, "trace.json"))
    return {"buckets": np.array(len(ddp.reducer.buckets))}


def case_shapes(rank, world):
    ember.manual_seed(0)
    DDP(nn.Linear(3, 4 + 2 * rank))
    return {}


OUT = ""


def main() -> None:
    global OUT
    OUT = sys.argv[1]
    dist.init_process_group(os.environ.get("CASE_BACKEND", "shm"))
    rank, world = dist.get_rank(), dist.get_world_size()
    for case in sys.argv[2:]:
        try:
            res = globals()[f"case_{case}"](rank, world)
        except Exception as e:  # noqa: BLE001 - the test reads the message
            with open(os.path.join(OUT, f"{case}.rank{rank}.err"), "w") as f:
                f.write(f"{type(e).__name__}: {e}")
            dist.barrier()
            continue
        np.savez(os.path.join(OUT, f"{case}.rank{rank}.npz"), **res)
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
