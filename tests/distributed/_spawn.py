"""Start small multi-rank jobs for tests/distributed: ranks as subprocesses, each bounded by a
timeout, with their exit codes and output collected."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASES = str(Path(__file__).with_name("_cases.py"))
MPIEXEC = shutil.which("mpiexec", path=os.path.dirname(sys.executable))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def has_mpi() -> bool:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return MPIEXEC is not None


def _env(extra: dict | None) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK",
              "EMBER_DISTRIBUTED_DEBUG", "TORCH_DISTRIBUTED_DEBUG"):
        env.pop(k, None)
    env.update(extra or {})
    return env


def ranks(n: int, args: list[str], env: dict | None = None, timeout: float = 180,
          per_rank: dict | None = None, wait_for: int | None = None) -> list[tuple[int, str]]:
    """Run ``_cases.py args`` as ``n`` ranks (env:// rendezvous); [(exit code, output)].
    With ``wait_for``, only the first ``wait_for`` ranks are waited for; the others are
    killed then (their entries are absent)."""
    port = free_port()
    procs = []
    for r in range(n):
        e = _env(env) | {"RANK": str(r), "WORLD_SIZE": str(n), "LOCAL_RANK": str(r),
                         "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        e.update((per_rank or {}).get(r, {}))
        procs.append(subprocess.Popen([sys.executable, CASES, *args], cwd=ROOT, env=e,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    return _collect(procs, timeout, wait_for)


def mpi_ranks(n: int, args: list[str], env: dict | None = None, timeout: float = 180,
              mpiexec_args: list[str] | None = None) -> list[tuple[int, str]]:
    """Run ``_cases.py args`` under ``mpiexec -n n`` with the mpi engine; [(code, output)]."""
    e = _env(env) | {"CASE_BACKEND": "mpi"}
    p = subprocess.Popen([MPIEXEC, *(mpiexec_args or []), "-n", str(n), sys.executable, CASES,
                          *args], cwd=ROOT, env=e, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    return _collect([p], timeout)


def launcher(n: int, args: list[str], env: dict | None = None, timeout: float = 90,
             extra: list[str] | None = None) -> subprocess.Popen:
    """``python -m ember.distributed.run --nproc-per-node n ... _cases.py args`` (started)."""
    cmd = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", str(n),
           "--master-port", "0", *(extra or []), CASES, *args]
    return subprocess.Popen(cmd, cwd=ROOT, env=_env(env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _collect(procs, timeout: float, wait_for: int | None = None) -> list[tuple[int, str]]:
    out = []
    try:
        for p in procs[:wait_for]:
            text = p.communicate(timeout=timeout)[0].decode(errors="replace")
            out.append((p.returncode, text))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return out
