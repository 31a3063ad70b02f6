"""Per-call overhead: tiny-tensor ops in ember and in PyTorch, in one process.

Both libraries run single-threaded (BLAS and OpenMP pinned to one thread before NumPy or
torch is imported) on inputs holding the same values. Each op is timed with ``timeit``:
``autorange`` picks a loop count per library, then repetitions alternate ember and torch so
that drift on a shared machine hits both alike; the figure is the median per call. An op
that ember does not have yet prints "n/a".

    python bench/overhead.py [--repeat 7] [--cpu]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import timeit  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import ember  # noqa: E402

torch.set_num_threads(1)
MIN_TIME = 0.05  # seconds per timing sample
TIMER = time.perf_counter  # ``--cpu``: this thread's CPU time (steadier on a loaded machine)


def both(*arrays: np.ndarray) -> tuple[list, list]:
    """The same values as ember tensors and as torch tensors."""
    return ([ember.from_numpy(a.copy()) for a in arrays],
            [torch.from_numpy(a.copy()) for a in arrays])


def loops(fn: Callable[[], object]) -> int:
    """A loop count whose run takes about MIN_TIME (``timeit``'s autorange, shorter)."""
    timer = timeit.Timer(fn, timer=TIMER)
    n = 1
    while True:
        if timer.timeit(n) >= MIN_TIME:
            return n
        n *= 2 if n < 1000 else 5


def measure(ember_fn: Callable, torch_fn: Callable, repeat: int) -> tuple[float, float]:
    """Median seconds per call of each function, repetitions interleaved."""
    n_e, n_t = loops(ember_fn), loops(torch_fn)
    t_e, t_t = timeit.Timer(ember_fn, timer=TIMER), timeit.Timer(torch_fn, timer=TIMER)
    ember_s, torch_s = [], []
    for _ in range(repeat):
        ember_s.append(t_e.timeit(n_e) / n_e)
        torch_s.append(t_t.timeit(n_t) / n_t)
    return statistics.median(ember_s), statistics.median(torch_s)


def probe(fn: Callable) -> str | None:
    """None if ``fn`` runs, else why not (an op that is not there yet)."""
    try:
        fn()
    except (AttributeError, NotImplementedError, TypeError, RuntimeError) as err:
        return f"{type(err).__name__}: {str(err).splitlines()[0][:60]}" if str(err) else \
            type(err).__name__
    return None


def report(cases: list[tuple[str, Callable, Callable]], repeat: int, unit: str = "us") -> None:
    """Time each case and print one row: ember, torch, ratio ember/torch."""
    scale = {"us": 1e6, "ms": 1e3}[unit]
    print(f"{'op':<30} {'ember ' + unit:>11} {'torch ' + unit:>11} {'ember/torch':>12}")
    for name, e_fn, t_fn in cases:
        why = probe(e_fn)
        if why is not None:
            print(f"{name:<30} {'n/a':>11} {'':>11} {'':>12}  ({why})")
            continue
        e, t = measure(e_fn, t_fn, repeat)
        print(f"{name:<30} {e * scale:>11.2f} {t * scale:>11.2f} {e / t:>11.1f}x", flush=True)


def machine() -> str:
    """One line: CPU, core count, versions."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return (f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"NumPy {np.__version__}, torch {torch.__version__}, ember {ember.__version__}, "
            f"1 thread")


def cases() -> list[tuple[str, Callable, Callable]]:
    rng = np.random.default_rng(0)
    (a16, b16), (ta16, tb16) = both(*rng.standard_normal((2, 16), dtype=np.float32))
    (a, b), (ta, tb) = both(*rng.standard_normal((2, 64, 64), dtype=np.float32))
    (idx,), (tidx,) = both(rng.integers(0, 64, size=8).astype(np.int64))
    return [
        ("add (16,)", lambda: a16 + b16, lambda: ta16 + tb16),
        ("add (64,64)", lambda: a + b, lambda: ta + tb),
        ("mul (64,64)", lambda: a * b, lambda: ta * tb),
        ("matmul 64x64", lambda: a @ b, lambda: ta @ tb),
        ("sum (64,64)", lambda: a.sum(), lambda: ta.sum()),
        ("relu (64,64)", lambda: a.relu(), lambda: ta.relu()),
        ("transpose view", lambda: a.transpose(0, 1), lambda: ta.transpose(0, 1)),
        ("x[1:, ::2] view", lambda: a[1:, ::2], lambda: ta[1:, ::2]),
        ("x[idx] (8 int64 indices)", lambda: a[idx], lambda: ta[tidx]),
    ]


def _leaves(lib, arrays):
    return [lib.from_numpy(a.copy()).requires_grad_() for a in arrays]


def _chain(x, w):
    # ten differentiable ops on (64, 64)
    h = (x * w + 1.0).tanh()
    h = (h - 0.5).relu() * 2.0
    h = h.exp().log1p()
    return (h / 3.0).sum()


def _mlp_step(lib, params, x, y):
    w1, b1, w2, b2, w3, b3 = params
    h = (x @ w1 + b1).relu()
    h = (h @ w2 + b2).relu()
    loss = ((h @ w3 + b3 - y) ** 2).mean()
    loss.backward()
    for p in params:
        p.grad = None
    return loss


def autograd_cases() -> list[tuple[str, Callable, Callable]]:
    """Forward + backward: (a*b).sum() on (64,64), a 10-op chain, a 3-layer MLP at batch 128."""
    rng = np.random.default_rng(1)
    ab = rng.standard_normal((2, 64, 64), dtype=np.float32)
    ea, eb = _leaves(ember, ab)
    ta, tb = _leaves(torch, ab)
    xw = rng.standard_normal((2, 64, 64), dtype=np.float32) * 0.5
    ex, ew = _leaves(ember, xw)
    tx, tw = _leaves(torch, xw)
    shapes = [(784, 256), (256,), (256, 256), (256,), (256, 10), (10,)]
    arrays = [(rng.standard_normal(s) * 0.05).astype(np.float32) for s in shapes]
    ep, tp = _leaves(ember, arrays), _leaves(torch, arrays)
    data = rng.standard_normal((128, 784), dtype=np.float32)
    target = rng.standard_normal((128, 10), dtype=np.float32)
    (edata, etarget), (tdata, ttarget) = both(data, target)

    def step(lib, a, b):
        (a * b).sum().backward()
        a.grad = b.grad = None

    def chain(lib, x, w):
        _chain(x, w).backward()
        x.grad = w.grad = None

    return [
        ("fwd+bwd (a*b).sum() 64x64", lambda: step(ember, ea, eb), lambda: step(torch, ta, tb)),
        ("fwd+bwd 10-op chain 64x64", lambda: chain(ember, ex, ew),
         lambda: chain(torch, tx, tw)),
        ("MLP 784-256-256-10 b128 fwd+bwd", lambda: _mlp_step(ember, ep, edata, etarget),
         lambda: _mlp_step(torch, tp, tdata, ttarget)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="timing repetitions per op")
    parser.add_argument("--cpu", action="store_true",
                        help="time this thread's CPU time instead of wall time (a loaded, "
                             "shared machine)")
    args = parser.parse_args()
    global TIMER
    if args.cpu:
        TIMER = time.thread_time
    print(f"# per-call overhead, tiny float32 tensors; median of {args.repeat} interleaved "
          f"repetitions, {'CPU' if args.cpu else 'wall'} time\n# {machine()}")
    report(cases(), args.repeat)
    print("\n# autograd: forward + backward")
    report(autograd_cases(), args.repeat)


if __name__ == "__main__":
    main()
