"""Per-sample gradients of an MLP (batch 64): ember vmap(grad) vs torch.func vs a Python loop.

The same model (784-128-10 MLP, cross-entropy) and data in ember and torch, single-threaded
(BLAS and OpenMP pinned to one thread before NumPy or torch is imported). Three ways:
``ember.func.vmap(ember.func.grad(loss))``, ``torch.func.vmap(torch.func.grad(loss))``, and a
Python loop of 64 single-example ember backward passes. Each is timed over ``--repeat``
interleaved rounds in this thread's CPU time (steadier than wall time on a shared machine;
``--wall`` for wall time); the figure is the median per batch. Gradients are checked against
torch first.

    python bench/func.py [--repeat 7] [--batch 64] [--wall]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.func as tf  # noqa: E402

import ember  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember.func import grad, vmap  # noqa: E402

torch.set_num_threads(1)
TIMER = time.thread_time


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo where there is one)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def setup(batch: int):
    rng = np.random.default_rng(0)
    shapes = {"w1": (128, 784), "b1": (128,), "w2": (10, 128), "b2": (10,)}
    arrays = {k: (rng.standard_normal(s) * 0.05).astype(np.float32) for k, s in shapes.items()}
    x = rng.standard_normal((batch, 784)).astype(np.float32)
    y = rng.integers(0, 10, batch)
    pe = {k: ember.tensor(v) for k, v in arrays.items()}
    pt = {k: torch.tensor(v) for k, v in arrays.items()}
    return (pe, ember.tensor(x), ember.tensor(y)), (pt, torch.tensor(x), torch.tensor(y))


def loss_ember(p, x, y):
    h = F.relu(F.linear(x, p["w1"], p["b1"]))
    return F.cross_entropy(F.linear(h, p["w2"], p["b2"]).unsqueeze(0), y.unsqueeze(0))


def loss_torch(p, x, y):
    tfn = torch.nn.functional
    h = tfn.relu(tfn.linear(x, p["w1"], p["b1"]))
    return tfn.cross_entropy(tfn.linear(h, p["w2"], p["b2"]).unsqueeze(0), y.unsqueeze(0))


def ember_vmap(args):
    return vmap(grad(loss_ember), in_dims=(None, 0, 0))(*args)


def torch_vmap(args):
    return tf.vmap(tf.grad(loss_torch), in_dims=(None, 0, 0))(*args)


def ember_loop(args):
    p, x, y = args
    leaves = {k: v.detach().requires_grad_() for k, v in p.items()}
    out = {k: [] for k in p}
    for i in range(x.shape[0]):
        loss_ember(leaves, x[i], y[i]).backward()
        for k, v in leaves.items():
            out[k].append(v.grad)
            v.grad = None
    return {k: ember.stack(v) for k, v in out.items()}


def timed(fn, args) -> float:
    t = TIMER()
    fn(args)
    return TIMER() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--wall", action="store_true", help="wall time instead of CPU time")
    args = parser.parse_args()
    global TIMER
    TIMER = time.perf_counter if args.wall else time.thread_time
    e_args, t_args = setup(args.batch)
    ge, gt, gl = ember_vmap(e_args), torch_vmap(t_args), ember_loop(e_args)
    for k in ge:
        np.testing.assert_allclose(ge[k].numpy(), gt[k].numpy(), rtol=1e-3, atol=1e-5)
        np.testing.assert_allclose(gl[k].numpy(), gt[k].numpy(), rtol=1e-3, atol=1e-5)
    fns = {"ember vmap(grad)": (ember_vmap, e_args), "torch.func vmap(grad)": (torch_vmap, t_args),
           "ember loop of backward": (ember_loop, e_args)}
    for fn, a in fns.values():  # warm up
        fn(a)
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(args.repeat):
        for k, (fn, a) in fns.items():
            times[k].append(timed(fn, a))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"per-sample gradients, MLP 784-128-10, batch {args.batch}, 1 thread; "
          f"{cpu_model()}; torch {torch.__version__}; "
          f"{'wall' if args.wall else 'CPU'} time, median of {args.repeat}")
    for k, v in med.items():
        print(f"  {k:<24} {v * 1e3:8.2f} ms")
    e, t, loop = med["ember vmap(grad)"], med["torch.func vmap(grad)"], \
        med["ember loop of backward"]
    print(f"  ember/torch = {e / t:.2f}x (target <= 1.5x); loop/ember vmap = {loop / e:.1f}x "
          f"(target >= 5x)")


if __name__ == "__main__":
    main()
