"""Distributed benchmarks: ember.distributed against torch.distributed (gloo) on this machine.

Sections (each a function of its own; ``python bench/distributed.py SECTION [options]``):

- ``ddp``: one DDP training step (zero_grad, forward, cross-entropy, backward with the bucketed
  all-reduce, SGD step) of an MLP 784-1024-1024-10, batch 64 per rank, 2 ranks: ember's
  ``DistributedDataParallel`` on the shm engine against torch's on gloo, launched alternately
  (ember, torch, ember, torch, ...), both single-threaded (``torch.set_num_threads(1)``,
  ``OPENBLAS_NUM_THREADS=1``). A rep's time is the slowest rank's mean step time over
  ``--steps`` steps; the figure is the median over every rep of every launch. Also printed:
  each library's step without communication (``no_sync``), which is the compute floor.

- ``collectives``: in-place float32 SUM all-reduce, 2 ranks: latency at 4 KiB and bus bandwidth
  at 16 MiB (``--sizes 4K,16M,64M`` adds 64 MiB, more than one staging slot) (busbw = bytes /
  time * 2(n-1)/n) of ember's shm engine (a tensor in ordinary
  memory, and one from ``empty_shared``), ember's mpi engine, raw mpi4py (``Allreduce`` on a
  NumPy array) and torch's gloo (``set_num_threads(1)``); launches interleaved; a rep's time is
  the slowest rank's mean over its iterations; the figure is the median over every rep.

Example::

    python bench/distributed.py ddp --launches 3 --reps 5 --steps 20 [--boost]
    python bench/distributed.py collectives --launches 3 --reps 5 [--boost]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# ==== DDP section ===============================================================================

SIZES = (784, 1024, 1024, 10)
BATCH = 64


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ddp_worker_ember(mode: str, reps: int, steps: int, warmup: int) -> list[float]:
    import ember
    import ember.distributed as dist
    from ember.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("shm")
    nn = ember.nn
    ember.manual_seed(0)
    layers = []
    for a, b in zip(SIZES[:-1], SIZES[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    model = DDP(nn.Sequential(*layers[:-1]))
    opt = ember.optim.SGD(model.parameters(), lr=0.01)
    x = ember.randn(BATCH, SIZES[0])
    y = ember.randint(0, SIZES[-1], (BATCH,))

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    times = _timed(step, model.no_sync if mode == "nosync" else None, reps, steps, warmup,
                   dist.barrier)
    dist.destroy_process_group()
    return times


def _ddp_worker_torch(mode: str, reps: int, steps: int, warmup: int) -> list[float]:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    nn = torch.nn
    torch.manual_seed(0)
    layers = []
    for a, b in zip(SIZES[:-1], SIZES[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    model = DDP(nn.Sequential(*layers[:-1]))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(BATCH, SIZES[0])
    y = torch.randint(0, SIZES[-1], (BATCH,))

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    times = _timed(step, model.no_sync if mode == "nosync" else None, reps, steps, warmup,
                   dist.barrier)
    dist.destroy_process_group()
    return times


def _timed(step, no_sync, reps: int, steps: int, warmup: int, barrier) -> list[float]:
    """Mean step time (seconds) of each rep; ranks start each rep together."""
    import contextlib
    ctx = no_sync if no_sync is not None else contextlib.nullcontext
    with ctx():
        for _ in range(warmup):
            step()
    out = []
    for _ in range(reps):
        barrier()
        with ctx():
            t0 = time.perf_counter()
            for _ in range(steps):
                step()
            out.append((time.perf_counter() - t0) / steps)
    return out


def _boost() -> None:
    """Raise this rank's CPU share on a shared machine: its own session (setsid, done by the
    launcher) has its own autogroup, whose nice value -15 the kernel honours across groups
    (plain ``nice`` is not, with ``sched_autogroup_enabled=1``). Best effort."""
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write("-15")
    except OSError:
        pass


def _launch_ddp(lib: str, mode: str, world: int, reps: int, steps: int, warmup: int,
                boost: bool = False) -> list:
    """Per-rep step time of the slowest rank (ms) for one launch of ``world`` ranks."""
    port = _free_port()
    with tempfile.TemporaryDirectory() as tmp:
        procs = []
        for r in range(world):
            env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                       RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(world),
                       OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
            cmd = [sys.executable, __file__, "_ddp_worker", lib, mode, str(reps), str(steps),
                   str(warmup), os.path.join(tmp, f"rank{r}.json")]
            if boost:
                env["EMBER_BENCH_BOOST"] = "1"
            procs.append(subprocess.Popen(cmd, cwd=ROOT, env=env, start_new_session=boost))
        for p in procs:
            if p.wait(timeout=600) != 0:
                raise RuntimeError(f"{lib} {mode} rank failed with exit code {p.returncode}")
        per_rank = [json.loads(Path(tmp, f"rank{r}.json").read_text()) for r in range(world)]
    return [max(ts) * 1e3 for ts in zip(*per_rank)]


def ddp_section(args) -> None:
    """ember DDP vs torch gloo DDP, step time of the MLP (module docstring)."""
    configs = [("ember", "ddp"), ("torch", "ddp"), ("ember", "nosync"), ("torch", "nosync")]
    results: dict = {c: [] for c in configs}
    for _ in range(args.launches):
        for lib, mode in configs:
            results[(lib, mode)] += _launch_ddp(lib, mode, args.world, args.reps, args.steps,
                                                args.warmup, args.boost)
    med = {c: statistics.median(v) for c, v in results.items()}
    print(f"DDP step, MLP {'-'.join(map(str, SIZES))}, batch {BATCH} per rank, "
          f"{args.world} ranks; median of {args.launches} launches x {args.reps} reps x "
          f"{args.steps} steps (slowest rank per rep)")
    print(f"{'config':28s} {'ms/step':>9s} {'range':>17s} {'samples/s':>10s}")
    for (lib, mode), v in results.items():
        what = f"{lib} {'DDP' if mode == 'ddp' else 'no_sync (compute only)'}"
        print(f"{what:28s} {med[(lib, mode)]:9.2f} {min(v):8.2f}..{max(v):<8.2f} "
              f"{args.world * BATCH / med[(lib, mode)] * 1e3:10.0f}")
    ratio = med[("ember", "ddp")] / med[("torch", "ddp")]
    print(f"ember / torch DDP step: {ratio:.2f}x (target <= 0.8x)")


def _ddp_worker_main(argv: list[str]) -> None:
    lib, mode, reps, steps, warmup, out = argv
    if os.environ.get("EMBER_BENCH_BOOST") == "1":
        _boost()
    fn = _ddp_worker_ember if lib == "ember" else _ddp_worker_torch
    times = fn(mode, int(reps), int(steps), int(warmup))
    Path(out).write_text(json.dumps(times))


# ==== collectives section =======================================================================

COLL_SIZES = {"4K": 4096, "16M": 16 << 20, "64M": 64 << 20}
COLL_ITERS = {"4K": 2000, "16M": 20, "64M": 6}
COLL_LIBS = ("ember-shm", "ember-shm-zero", "ember-mpi", "mpi4py", "torch-gloo")


def _coll_worker(lib: str, size: str, reps: int, out: str) -> None:
    """One rank: ``reps`` timings (seconds per all-reduce) of ``COLL_ITERS[size]`` in-place
    float32 SUM all-reduces of ``COLL_SIZES[size]`` bytes, written to ``out.rank{r}.json``."""
    import numpy as np

    n = COLL_SIZES[size] // 4
    iters = COLL_ITERS[size]
    if lib == "mpi4py":
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
        buf = np.zeros(n, np.float32)

        def op():
            comm.Allreduce(MPI.IN_PLACE, buf, MPI.SUM)

        rank, barrier = comm.Get_rank(), comm.Barrier
    elif lib == "torch-gloo":
        import torch
        import torch.distributed as tdist

        torch.set_num_threads(1)
        tdist.init_process_group("gloo")
        t = torch.zeros(n)

        def op():
            tdist.all_reduce(t)

        rank, barrier = tdist.get_rank(), tdist.barrier
    else:
        import ember
        import ember.distributed as dist

        dist.init_process_group("mpi" if lib == "ember-mpi" else "shm")
        t = dist.empty_shared(n) if lib == "ember-shm-zero" else ember.empty(n)
        t.zero_()

        def op():
            dist.all_reduce(t)

        rank, barrier = dist.get_rank(), dist.barrier
    for _ in range(max(3, iters // 10)):
        op()
    times = []
    for _ in range(reps):
        barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            op()
        times.append((time.perf_counter() - t0) / iters)
    barrier()
    Path(f"{out}.rank{rank}.json").write_text(json.dumps(times))
    if lib == "torch-gloo":
        tdist.destroy_process_group()
    elif lib != "mpi4py":
        dist.destroy_process_group()


def _launch_coll(lib: str, size: str, world: int, reps: int, boost: bool) -> list[float]:
    """Seconds per all-reduce of the slowest rank, per rep, for one launch."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    if boost:
        env["EMBER_BENCH_BOOST"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "coll")
        cmd = [sys.executable, __file__, "_coll_worker", lib, size, str(reps), out]
        if lib in ("ember-mpi", "mpi4py"):
            mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
            procs = [subprocess.Popen([mpiexec, "-n", str(world), *cmd], cwd=ROOT, env=env)]
        else:
            port = _free_port()
            procs = [subprocess.Popen(cmd, cwd=ROOT, start_new_session=boost,
                                      env=dict(env, MASTER_ADDR="127.0.0.1",
                                               MASTER_PORT=str(port), RANK=str(r),
                                               LOCAL_RANK=str(r), WORLD_SIZE=str(world)))
                     for r in range(world)]
        for p in procs:
            if p.wait(timeout=600) != 0:
                raise RuntimeError(f"{lib} {size}: a rank failed with exit code {p.returncode}")
        per_rank = [json.loads(Path(f"{out}.rank{r}.json").read_text()) for r in range(world)]
    return [max(ts) for ts in zip(*per_rank)]


def collectives_section(args) -> None:
    """All-reduce bus bandwidth (16 MiB) and latency (4 KiB), float32, every engine."""
    libs = args.libs.split(",") if args.libs else list(COLL_LIBS)
    sizes = args.sizes.split(",")
    results: dict = {(lib, size): [] for lib in libs for size in sizes}
    for _ in range(args.launches):
        for size in sizes:
            for lib in libs:
                results[(lib, size)] += _launch_coll(lib, size, args.world, args.reps,
                                                     args.boost)
    n = args.world
    print(f"all-reduce, float32 SUM in place, {n} ranks; median over {args.launches} launches "
          f"x {args.reps} reps (slowest rank per rep); busbw = bytes / time * 2(n-1)/n")
    heads = [f"{size} latency us" if size == "4K" else f"{size} busbw GB/s" for size in sizes]
    print(f"{'engine':16s} " + " ".join(f"{h:>15s} {'range':>13s}" for h in heads))
    for lib in libs:
        cells = []
        for size in sizes:
            ts = results[(lib, size)]
            vals = ([t * 1e6 for t in ts] if size == "4K" else
                    [COLL_SIZES[size] / t * 2 * (n - 1) / n / 1e9 for t in ts])
            cells.append(f"{statistics.median(vals):15.2f} {min(vals):6.2f}..{max(vals):<6.2f}")
        print(f"{lib:16s} " + " ".join(cells))


# ==== entry point ===============================================================================

SECTIONS = {"ddp": ddp_section, "collectives": collectives_section}


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_ddp_worker":
        return _ddp_worker_main(argv[1:])
    if argv and argv[0] == "_coll_worker":
        if os.environ.get("EMBER_BENCH_BOOST") == "1":
            _boost()
        return _coll_worker(argv[1], argv[2], int(argv[3]), argv[4])
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("section", choices=sorted(SECTIONS))
    p.add_argument("--world", type=int, default=2, help="ranks")
    p.add_argument("--launches", type=int, default=3, help="launches per configuration")
    p.add_argument("--reps", type=int, default=5, help="timed reps per launch")
    p.add_argument("--steps", type=int, default=20, help="steps per rep")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps per launch")
    p.add_argument("--boost", action="store_true",
                   help="run each rank in its own session with autogroup nice -15 (a machine "
                        "shared with other jobs; both libraries get it)")
    p.add_argument("--libs", default="", help="collectives: comma-separated engines of "
                   + ",".join(COLL_LIBS))
    p.add_argument("--sizes", default="4K,16M", help="collectives: comma-separated sizes of "
                   + ",".join(COLL_SIZES))
    args = p.parse_args(argv)
    SECTIONS[args.section](args)


if __name__ == "__main__":
    main()
