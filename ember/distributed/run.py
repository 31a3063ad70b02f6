"""``python -m ember.distributed.run``: start one process per rank on this machine (torchrun's
environment contract) and watch them.

Each rank gets ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``GROUP_RANK``,
``MASTER_ADDR``, ``MASTER_PORT`` and ``TORCHELASTIC_RUN_ID``. SIGINT and SIGTERM are forwarded
to the ranks. When a rank fails the launcher prints which one, with its exit code or signal and
the exception it raised, gives the others a moment to report, stops them (SIGTERM, then
SIGKILL) and exits non-zero.

Example::

    python -m ember.distributed.run --nproc-per-node 2 train.py --lr 0.1
    python -m ember.distributed.run --nproc-per-node 2 -m ember.examples.charlm --ddp
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

__all__ = ["main", "parse_args"]


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The launcher's command line (torchrun's spellings with ``-`` or ``_``)."""
    p = argparse.ArgumentParser(prog="python -m ember.distributed.run",
                                description="Start a data-parallel job on this machine.")
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1,
                   help="ranks to start on this machine")
    p.add_argument("--nnodes", type=int, default=1, help="machines in the job")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0, help="this machine's index")
    p.add_argument("--master-addr", "--master_addr", default="127.0.0.1",
                   help="address of rank 0's machine")
    p.add_argument("--master-port", "--master_port", type=int, default=29500,
                   help="port of the rendezvous store (0: pick a free one)")
    p.add_argument("--standalone", action="store_true", help="one machine, a free port")
    p.add_argument("--stop-grace", type=float, default=2.0,
                   help="seconds the other ranks get to exit after a failure before SIGTERM")
    p.add_argument("-m", "--module", action="store_true",
                   help="run the target as a module (python -m)")
    p.add_argument("--no-python", "--no_python", action="store_true",
                   help="run the target as an executable, not with Python")
    p.add_argument("target", help="script (or module with -m)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    return p.parse_args(argv)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _signame(rc: int) -> str:
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


class _Job:
    def __init__(self, ns: argparse.Namespace):
        self.ns = ns
        self.port = _free_port() if ns.standalone or ns.master_port == 0 else ns.master_port
        self.errdir = tempfile.mkdtemp(prefix="ember-run-")
        self.procs: list[subprocess.Popen] = []
        self.ranks: list[int] = []
        self.signalled = 0

    def command(self) -> list[str]:
        ns = self.ns
        if ns.no_python:
            return [ns.target, *ns.args]
        target = ["-m", ns.target] if ns.module else [ns.target]
        return [sys.executable, "-u", "-m", "ember.distributed._worker", *target, *ns.args]

    def start(self) -> None:
        ns = self.ns
        world = ns.nnodes * ns.nproc_per_node
        run_id = uuid.uuid4().hex[:12]
        for local in range(ns.nproc_per_node):
            rank = ns.node_rank * ns.nproc_per_node + local
            env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(local),
                       WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(ns.nproc_per_node),
                       GROUP_RANK=str(ns.node_rank), MASTER_ADDR=ns.master_addr,
                       MASTER_PORT=str(self.port), TORCHELASTIC_RUN_ID=run_id,
                       EMBER_ERROR_FILE=os.path.join(self.errdir, f"rank{rank}.json"))
            if ns.nproc_per_node > 1:
                env.setdefault("OMP_NUM_THREADS", "1")
            self.procs.append(subprocess.Popen(self.command(), env=env))
            self.ranks.append(rank)

    def forward(self, signum, frame) -> None:
        self.signalled = signum
        for p in self.procs:
            if p.poll() is None:
                try:
                    p.send_signal(signum)
                except ProcessLookupError:
                    pass

    def stop(self, grace: float) -> None:
        """SIGTERM the ranks still running after ``grace`` seconds, SIGKILL 5 s later."""
        for sig, wait in ((None, grace), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
            if sig is not None:
                for p in self.procs:
                    if p.poll() is None:
                        p.send_signal(sig)
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and any(p.poll() is None for p in self.procs):
                time.sleep(0.02)

    def error_of(self, rank: int) -> dict | None:
        try:
            with open(os.path.join(self.errdir, f"rank{rank}.json")) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def report(self, failed: list[tuple[int, int, int]]) -> int:
        """Print the first failure (a rank's own error before the errors of ranks that saw a
        peer fail; then the earliest) and the others'; return the launcher's exit status."""
        def when(item):  # a DistBackendError is a consequence of another rank's failure
            err = self.error_of(item[0])
            consequence = err is not None and err["type"] == "DistBackendError"
            return (consequence, err["time"] if err else float("inf"))

        failed = sorted(failed, key=when)
        out = sys.stderr
        for i, (rank, pid, rc) in enumerate(failed):
            how = f"exit code {rc}" if rc > 0 else f"signal {_signame(rc)}"
            head = "failed" if i == 0 else "also failed"
            print(f"ember.distributed.run: rank {rank} (local_rank "
                  f"{rank - self.ns.node_rank * self.ns.nproc_per_node}, pid {pid}) {head} "
                  f"with {how}", file=out)
            err = self.error_of(rank)
            if err:
                print(f"  {err['type']}: {err['message']}", file=out)
        rc = failed[0][2]
        return rc if rc > 0 else 1

    def watch(self) -> int:
        failed: list[tuple[int, int, int]] = []
        while True:
            if self.signalled:
                self.stop(self.ns.stop_grace)
                return 128 + self.signalled
            running = 0
            for rank, p in zip(self.ranks, self.procs):
                rc = p.poll()
                if rc is None:
                    running += 1
                elif rc != 0 and all(f[0] != rank for f in failed):
                    failed.append((rank, p.pid, rc))
            if failed:
                self.stop(self.ns.stop_grace)
                for rank, p in zip(self.ranks, self.procs):  # ranks that failed meanwhile
                    rc = p.returncode
                    if rc not in (0, None, -signal.SIGTERM, -signal.SIGKILL) and \
                            all(f[0] != rank for f in failed):
                        failed.append((rank, p.pid, rc))
                return self.report(failed)
            if not running:
                return 0
            time.sleep(0.05)


def main(argv: list[str] | None = None) -> int:
    """Run the launcher; returns its exit status (0 when every rank exited with 0)."""
    ns = parse_args(sys.argv[1:] if argv is None else argv)
    if ns.nproc_per_node < 1:
        print("ember.distributed.run: --nproc-per-node must be at least 1", file=sys.stderr)
        return 2
    job = _Job(ns)
    previous = {s: signal.signal(s, job.forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        job.start()
        return job.watch()
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


if __name__ == "__main__":
    sys.exit(main())
