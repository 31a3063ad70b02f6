"""The caching allocator: round-trip cost, and a training loop with and without caching.

1. Alloc + free round trip (µs) of 4 KiB, 1 MiB and 64 MiB blocks: the allocator alone
   (``malloc``/``free``), a whole ember tensor (``ember.empty`` then ``del``), and
   ``numpy.empty`` for reference. Every round trip after the first is served from the cache.
2. Tiny ops (the per-call overhead of ``bench/overhead.py``) with outputs from the allocator
   and, patched in for comparison, from ``numpy.empty`` as before the allocator existed.
3. A training-like loop: an MLP (``ember.nn`` + ``ember.optim.SGD`` when they are there, else
   the same MLP written with matmuls and a manual update) run with the caching allocator and
   with a pass-through allocator (each block its own segment, released on free: what
   ``EMBER_NO_MEMORY_CACHING=1`` gives), reporting ms per step and reserved/allocated at peak.

Times are CPU time of this process (``time.process_time``), not wall time, so that a shared,
loaded machine distorts them less; each figure is the best of several repetitions.

    python bench/allocator.py [--repeat 7] [--steps 10]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import timeit  # noqa: E402

import numpy as np  # noqa: E402

import ember  # noqa: E402
import ember.memory.allocator as A  # noqa: E402
import ember.memory.storage as S  # noqa: E402
from ember import memory  # noqa: E402
from ember.memory.allocator import CachingAllocator, CpuBackend  # noqa: E402

KiB, MiB = 1 << 10, 1 << 20


def best(fn, number: int, repeat: int) -> float:
    """Best seconds per call over ``repeat`` runs of ``number`` calls (CPU time)."""
    return min(timeit.repeat(fn, number=number, repeat=repeat, timer=time.process_time)) / number


def use(alloc: CachingAllocator) -> CachingAllocator:
    """Make ``alloc`` the CPU allocator for new tensors; returns the previous one."""
    old = A.ALLOCATORS["cpu"]
    A.ALLOCATORS["cpu"] = A.CPU_ALLOCATOR = S.CPU_ALLOCATOR = alloc
    return old


def round_trips(repeat: int) -> None:
    print("| size | allocator malloc+free µs | ember.empty + del µs | numpy.empty µs |")
    print("|---|---:|---:|---:|")
    alloc = CachingAllocator("cpu", CpuBackend())
    old = use(alloc)
    try:
        for label, n in (("4 KiB", 4 * KiB), ("1 MiB", MiB), ("64 MiB", 64 * MiB)):
            number = 20000 if n < 64 * MiB else 2000
            alloc.free(alloc.malloc(n))  # warm: the segment exists and is cached

            def raw(n=n):
                alloc.free(alloc.malloc(n))

            def tensor(n=n):
                ember.empty(n, dtype=ember.uint8)

            def numpy(n=n):
                np.empty(n, np.uint8)
            cells = [best(f, number, repeat) * 1e6 for f in (raw, tensor, numpy)]
            print(f"| {label} | {cells[0]:.2f} | {cells[1]:.2f} | {cells[2]:.2f} |", flush=True)
    finally:
        use(old)


def mlp_step_factory(batch: int, width: int, depth: int):
    """One training step of an MLP; ``ember.nn``/``ember.optim`` if usable, else by hand."""
    gen = np.random.default_rng(0)
    x = ember.from_numpy(gen.standard_normal((batch, width), dtype=np.float32))
    target = ember.from_numpy(gen.integers(0, 10, batch).astype(np.int64))
    try:
        from ember import nn, optim
        layers = []
        for _ in range(depth - 1):
            layers += [nn.Linear(width, width), nn.ReLU()]
        model = nn.Sequential(*layers, nn.Linear(width, 10))
        opt = optim.SGD(model.parameters(), lr=1e-3)
        loss_fn = nn.CrossEntropyLoss()

        def step():
            opt.zero_grad()
            loss = loss_fn(model(x), target)
            loss.backward()
            opt.step()
            return loss.item()
        step()
        return step, "ember.nn MLP + SGD"
    except Exception as err:  # noqa: BLE001  (nn/optim still being built)
        reason = f"{type(err).__name__}: {str(err)[:60]}"
    ws = [(ember.randn(width, width) * width ** -0.5).requires_grad_()
          for _ in range(depth - 1)]
    ws.append((ember.randn(width, 10) * width ** -0.5).requires_grad_())

    def step():
        h = x
        for w in ws[:-1]:
            h = (h @ w).relu()
        loss = (h @ ws[-1]).pow(2).mean()
        loss.backward()
        with ember.no_grad():
            for w in ws:
                w.sub_(w.grad * 1e-3)
                w.grad = None
        return loss.item()
    step()
    return step, f"matmul-chain MLP by hand ({reason})"


def training(steps: int, repeat: int, batch: int = 256, width: int = 512,
             depth: int = 4) -> None:
    print(f"\nMLP: batch {batch}, width {width}, {depth} linear layers, {steps} steps per run")
    print("| allocator | ms / step | peak allocated | peak reserved | reserved/allocated at "
          "peak | segments allocated |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, caching in (("caching", True), ("pass-through", False)):
        alloc = CachingAllocator("cpu", CpuBackend(), caching=caching)
        old = use(alloc)
        try:
            step, what = mlp_step_factory(batch, width, depth)
            memory.reset_peak_memory_stats()
            seconds = min(timeit.repeat(step, number=steps, repeat=repeat,
                                        timer=time.process_time)) / steps
            peak_a, peak_r = memory.max_memory_allocated(), memory.max_memory_reserved()
            print(f"| {label} | {seconds * 1e3:.2f} | {memory.format_size(peak_a)} | "
                  f"{memory.format_size(peak_r)} | {peak_r / peak_a:.3f} | "
                  f"{alloc.num_device_alloc} |", flush=True)
            del step
        finally:
            use(old)
    print(f"(model: {what})")


def tiny_ops(repeat: int) -> None:
    """Tiny ops with every output from the allocator vs. from ``numpy.empty`` (the pre-allocator
    path, patched in for comparison), interleaved in one process."""
    import sys
    tensor_mod = sys.modules["ember.tensor.tensor"]
    real = tensor_mod.new_cpu_array

    def numpy_path(nbytes, shape, npdtype):
        buf = np.empty(shape, npdtype)
        return S.Storage.wrap(buf), buf

    gen = np.random.default_rng(0)
    a16, b16 = (ember.from_numpy(gen.standard_normal(16, dtype=np.float32)) for _ in "ab")
    a, b = (ember.from_numpy(gen.standard_normal((64, 64), dtype=np.float32)) for _ in "ab")
    cases = [("add (16,)", lambda: a16 + b16), ("add (64,64)", lambda: a + b),
             ("mul (64,64)", lambda: a * b), ("sum (64,64)", lambda: a.sum()),
             ("relu (64,64)", lambda: a.relu())]
    print("\n| op | allocator µs | numpy.empty µs | difference µs |")
    print("|---|---:|---:|---:|")
    for name, fn in cases:
        got = {}
        for _ in range(repeat):
            for label, path in (("alloc", real), ("numpy", numpy_path)):
                tensor_mod.new_cpu_array = path
                try:
                    t = best(fn, 5000, 1)
                finally:
                    tensor_mod.new_cpu_array = real
                got[label] = min(got.get(label, 1.0), t)
        e, n = got["alloc"] * 1e6, got["numpy"] * 1e6
        print(f"| {name} | {e:.2f} | {n:.2f} | {e - n:+.2f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    print(f"# {platform.python_version()}, NumPy {np.__version__}, ember {ember.__version__}; "
          f"best of {args.repeat}, CPU time")
    round_trips(args.repeat)
    tiny_ops(args.repeat)
    for batch, width in ((256, 512), (128, 2048)):
        training(args.steps, max(args.repeat // 2, 2), batch, width)


if __name__ == "__main__":
    main()
