"""The launcher (env contract, exit codes, the failing rank's report, signal forwarding) and
faults: a rank killed, raising or hanging makes the others raise DistBackendError naming it
within the timeout; collectives that disagree fail (names both sides) instead of hanging;
EMBER_DISTRIBUTED_DEBUG=DETAIL logs each collective."""

from __future__ import annotations

import json
import os
import re
import signal
import time

import pytest

from tests.distributed import _spawn


def test_launcher_env_contract_and_arguments():
    p = _spawn.launcher(2, ["env", "--flag", "x y"])
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    envs = sorted((json.loads(line[4:]) for line in out.splitlines() if line.startswith("ENV ")),
                  key=lambda e: e["RANK"])
    assert [e["RANK"] for e in envs] == ["0", "1"]
    assert [e["LOCAL_RANK"] for e in envs] == ["0", "1"]
    for e in envs:
        assert e["WORLD_SIZE"] == "2" and e["LOCAL_WORLD_SIZE"] == "2"
        assert e["MASTER_ADDR"] == "127.0.0.1" and int(e["MASTER_PORT"]) > 0
        assert e["argv"] == ["--flag", "x y"] and e["TORCHELASTIC_RUN_ID"]
    assert envs[0]["MASTER_PORT"] == envs[1]["MASTER_PORT"]


def test_launcher_module_mode(tmp_path):
    import subprocess
    import sys

    pkg = tmp_path / "launchmod"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text("import os, sys\nprint('MOD', os.environ['RANK'], "
                                     "sys.argv[1:])\n")
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{_spawn.ROOT}")
    p = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--nproc_per_node", "2",
                        "--standalone", "-m", "launchmod", "a"], env=env, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert sorted(re.findall(r"MOD (\d) \['a'\]", p.stdout)) == ["0", "1"]


def test_launcher_reports_the_failing_rank_and_its_exit_code():
    start = time.monotonic()
    p = _spawn.launcher(2, ["exit_code"], extra=["--stop-grace", "0.5"])
    out, err = p.communicate(timeout=60)
    assert p.returncode == 3
    assert re.search(r"rank 1 \(local_rank 1, pid \d+\) failed with exit code 3", err), err
    assert time.monotonic() - start < 25  # rank 0 (sleeping 30 s) was stopped


@pytest.mark.parametrize("how", ["raise", "kill"])
def test_a_dead_rank_fails_the_others_naming_it(how):
    p = _spawn.launcher(2, ["die", how], env={"CASE_TIMEOUT": "30"})
    out, err = p.communicate(timeout=90)
    assert p.returncode != 0
    caught = re.search(r"CAUGHT ([\d.]+) (.*)", out)
    assert caught, out + err
    assert float(caught.group(1)) < 10  # found by the liveness check, not the 30 s timeout
    if how == "raise":
        assert "rank 1 failed: ValueError: boom on rank 1" in caught.group(2)
        assert re.search(r"rank 1 .* failed with exit code 1\n  ValueError: boom on rank 1", err)
    else:
        assert re.search(r"rank 1 \(pid \d+\) died", caught.group(2))
        assert "rank 1 (local_rank 1" in err and "signal SIGKILL" in err
    assert re.search(r"rank 0 .*failed with exit code 1\n  DistBackendError: .*rank 1", err), err


def test_a_hanging_rank_times_out_the_others():
    results = _spawn.ranks(2, ["die", "hang"], env={"CASE_TIMEOUT": "1.5"}, timeout=60,
                           wait_for=1)
    code, out = results[0]
    assert code != 0
    assert re.search(r"CAUGHT [\d.]+ .*rank 0 timed out after 1.5s in all_reduce .*waiting for "
                     r"rank 1", out), out[-3000:]


@pytest.mark.parametrize("kind,debug", [("shape", "DETAIL"), ("op", "OFF")])
def test_mismatched_collectives_fail_naming_both_sides(kind, debug):
    results = _spawn.ranks(2, ["mismatch", kind], env={"EMBER_DISTRIBUTED_DEBUG": debug,
                                                       "CASE_TIMEOUT": "20"}, timeout=60)
    for code, out in results:
        assert code != 0 and "DistBackendError" in out, out[-3000:]
        if debug == "DETAIL":
            assert "Detected mismatch between collectives" in out, out
            assert "all_reduce[(4,):ember.float32:SUM]" in out, out
            assert "all_reduce[(5,):ember.float32:SUM]" in out, out
        else:
            assert re.search(r"collective mismatch .*rank \d called .* but rank \d called", out)


def test_detail_logs_each_collective():
    results = _spawn.ranks(2, ["detail_log"], env={"EMBER_DISTRIBUTED_DEBUG": "DETAIL"})
    for r, (code, out) in enumerate(results):
        assert code == 0, out
        assert re.search(rf"\[rank {r}\] all_reduce #1 \(2, 3\):ember.float32:SUM bytes=24 "
                         r"time=[\d.]+ms", out), out
        assert re.search(rf"\[rank {r}\] broadcast #2 \(5,\):ember.bfloat16:src=0 bytes=10", out)
        assert f"[rank {r}] barrier #3" in out


def test_launcher_forwards_sigterm(tmp_path):
    marker = str(tmp_path / "term")
    p = _spawn.launcher(2, ["signals", marker])
    deadline = time.monotonic() + 60
    while not all(os.path.exists(f"{marker}.ready.{r}") for r in range(2)):
        assert time.monotonic() < deadline and p.poll() is None, p.communicate()
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGTERM
    for r in range(2):
        with open(f"{marker}.{r}") as f:
            assert f.read() == "SIGTERM"


_NEEDS_MPI = pytest.mark.skipif(not _spawn.has_mpi(), reason="mpi4py (pip install 'ember[mpi]') "
                                "is not installed: the mpi engine cannot be tested")


@_NEEDS_MPI
def test_mpi_a_raising_rank_fails_the_others_naming_it():
    start = time.monotonic()
    (code, out), = _spawn.mpi_ranks(2, ["die", "raise"], env={"CASE_TIMEOUT": "30"}, timeout=60)
    assert code != 0
    caught = re.search(r"CAUGHT ([\d.]+) (.*)", out)
    assert caught, out[-3000:]
    assert float(caught.group(1)) < 10  # told by the fault channel, not the 30 s timeout
    assert "ember.distributed (mpi): rank 1 failed: ValueError: boom on rank 1" in caught.group(2)
    assert "DistBackendError: ember.distributed (mpi): rank 1 failed" in out, out[-3000:]
    assert "rank 1 failed: ValueError: boom on rank 1; aborting the MPI job" in out
    assert time.monotonic() - start < 30


@_NEEDS_MPI
def test_mpi_a_killed_rank_ends_the_job_and_mpiexec_names_it():
    (code, out), = _spawn.mpi_ranks(2, ["die", "kill"], env={"CASE_TIMEOUT": "30"}, timeout=30)
    assert code != 0 and "Killed (signal 9)" in out, out[-3000:]


@_NEEDS_MPI
def test_mpi_a_hanging_rank_times_out_the_others():
    (code, out), = _spawn.mpi_ranks(2, ["die", "hang"], env={"CASE_TIMEOUT": "1.5"},
                                    timeout=60)
    assert code != 0
    assert re.search(r"CAUGHT [\d.]+ .*rank 0 timed out after 1.5s in all_reduce .*waiting for "
                     r"the ranks \[0, 1\]; rank 1 has not reached it", out), \
        out[-3000:]


@_NEEDS_MPI
def test_mpi_mismatches_are_named():
    (code, out), = _spawn.mpi_ranks(2, ["mismatch", "shape"],
                                    env={"EMBER_DISTRIBUTED_DEBUG": "DETAIL"})
    assert code != 0 and "Detected mismatch between collectives" in out, out[-3000:]
    assert "all_reduce[(5,):ember.float32:SUM]" in out


@pytest.mark.parametrize("backend", ["shm", pytest.param("mpi", marks=_NEEDS_MPI)])
def test_late_ranks_work_wait_timeout_and_monitored_barrier_naming_them(backend):
    n = 3 if backend == "shm" else 2
    results = (_spawn.ranks(n, ["late"], timeout=60) if backend == "shm" else
               _spawn.mpi_ranks(n, ["late"], timeout=60))
    for code, out in results:
        assert code == 0 and out.rstrip().endswith("OK"), out[-3000:]
    out = results[0][1]
    everyone = "Ranks 1, 2" if n == 3 else "Rank 1"
    assert f"MONITORED True [Rank 0]: {everyone} failed to pass monitoredBarrier in 500 ms" \
        in out, out
    assert "MONITORED False [Rank 0]: Rank 1 failed to pass monitoredBarrier in 500 ms" in out
