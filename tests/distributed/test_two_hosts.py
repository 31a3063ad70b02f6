"""Two "hosts" on this machine: two network namespaces joined through the root namespace,
each rank in its own (own hostname, own interface), started by mpiexec through a launcher
that enters the namespace. The mpi engine's all-reduce of 4 MiB must give the right result
and its bytes must cross the virtual network (interface counters), as between two machines.
Needs root, ``ip`` and ``unshare``, and mpi4py; skipped otherwise."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.distributed import _spawn

PROGRAM = """
import socket, ember, ember.distributed as dist
dist.init_process_group("mpi")
x = ember.full((1 << 20,), float(dist.get_rank() + 1))  # 4 MiB of float32
dist.all_reduce(x)
assert x.min().item() == 3.0 and x.max().item() == 3.0
print("RANK", dist.get_rank(), socket.gethostname(), flush=True)
"""

# hydra's rsh launcher runs `<exec> <host> <proxy command...>`: enter that host's namespace
# with its own hostname; UCX / libfabric use TCP on the namespace's interface
LAUNCH = """#!/bin/sh
host=$1; shift
i=${host#h}
export UCX_TLS=tcp,self UCX_NET_DEVICES={tag}n$i FI_PROVIDER=tcp FI_TCP_IFACE={tag}n$i
exec ip netns exec {tag}$i unshare --uts sh -c "hostname $host; $*"
"""


def _sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True, timeout=20)


@pytest.fixture
def two_hosts(tmp_path):
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("unshare"):
        pytest.skip("needs root, ip and unshare to build network namespaces")
    if not _spawn.has_mpi():
        pytest.skip("mpi4py (pip install 'ember[mpi]') is not installed")
    tag = f"em{os.getpid() % 100000}"
    made = []
    try:
        for i in (1, 2):
            ns, outer, inner = f"{tag}{i}", f"{tag}r{i}", f"{tag}n{i}"
            _sh("ip", "netns", "add", ns)
            made.append(i)
            _sh("ip", "link", "add", outer, "type", "veth", "peer", "name", inner)
            _sh("ip", "link", "set", inner, "netns", ns)
            _sh("ip", "addr", "add", f"10.{77 + i}.{os.getpid() % 250}.1/24", "dev", outer)
            _sh("ip", "link", "set", outer, "up")
            for args in (["addr", "add", f"10.{77 + i}.{os.getpid() % 250}.2/24", "dev", inner],
                         ["link", "set", inner, "up"], ["link", "set", "lo", "up"],
                         ["route", "add", "default", "via",
                          f"10.{77 + i}.{os.getpid() % 250}.1"]):
                _sh("ip", "netns", "exec", ns, "ip", *args)
        _sh("sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as e:
        _teardown(tag, made)
        pytest.skip(f"network namespaces unavailable: {e}")
    launch = tmp_path / "launch.sh"
    launch.write_text(LAUNCH.replace("{tag}", tag))
    launch.chmod(0o755)
    yield tag, str(launch)
    _teardown(tag, made)


def _teardown(tag: str, made: list[int]) -> None:
    for i in made:
        subprocess.run(["ip", "netns", "del", f"{tag}{i}"], capture_output=True, timeout=20)
        subprocess.run(["ip", "link", "del", f"{tag}r{i}"], capture_output=True, timeout=20)


def _counter(dev: str, what: str) -> int:
    with open(f"/sys/class/net/{dev}/statistics/{what}_bytes") as f:
        return int(f.read())


def test_mpi_all_reduce_between_two_hosts_crosses_the_network(two_hosts, tmp_path):
    tag, launch = two_hosts
    program = tmp_path / "two_hosts.py"
    program.write_text(PROGRAM)
    dev = f"{tag}r2"
    before = _counter(dev, "rx"), _counter(dev, "tx")
    env = dict(os.environ, MPIR_CVAR_NOLOCAL="1", PYTHONPATH=str(_spawn.ROOT))
    p = subprocess.run([_spawn.MPIEXEC, "-n", "2", "-ppn", "1", "-hosts", "h1,h2", "-iface",
                        f"{tag}r1", "-launcher", "rsh", "-launcher-exec", launch,
                        sys.executable, str(program)], env=env, capture_output=True,
                       text=True, timeout=90)
    assert p.returncode == 0, p.stdout + p.stderr
    # each rank ran on its own host (the lines of the two ranks may interleave)
    assert p.stdout.count("RANK") == 2 and "h1" in p.stdout and "h2" in p.stdout, p.stdout
    crossed = _counter(dev, "rx") - before[0], _counter(dev, "tx") - before[1]
    assert min(crossed) >= 4 << 20, crossed  # host 2's 4 MiB out, host 1's 4 MiB in
