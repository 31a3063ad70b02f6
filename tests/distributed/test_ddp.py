"""DistributedDataParallel over two real ranks (the shm engine; the MLP and the GPT also over
the mpi engine) against one process.

One launch of two ranks runs every case in tests/distributed/_ddp_cases.py (about ten seconds
on two cores); the tests compare what the ranks saved with the same computation in this
process: 2 ranks x batch B give the gradients and parameters of one process on the 2B batch
(float64: to 1e-12 of the gradients' scale), for an MLP, a GPT and (with its per-rank BatchNorm
statistics) a CNN; ``no_sync`` accumulation; unused parameters; the shape check; the timeline.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
from tests.distributed import _ddp_cases as C

ROOT = Path(__file__).resolve().parents[2]
WORLD = 2
CASES = ["mlp", "mlp_view", "cnn", "gpt", "no_sync", "find_unused", "unused_error", "timeline",
         "shapes", "join", "join_active", "join_throw"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    out = tmp_path_factory.mktemp("ddp")
    port = _free_port()
    procs = []
    for r in range(WORLD):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(r),
                   WORLD_SIZE=str(WORLD), LOCAL_RANK=str(r), OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable, "-m", "tests.distributed._ddp_cases",
                                       str(out), *CASES], cwd=ROOT, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=240)[0].decode(errors="replace"))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert all(p.returncode == 0 for p in procs), "\n".join(logs)
    return out


def _load(out: Path, case: str, rank: int) -> dict:
    err = out / f"{case}.rank{rank}.err"
    assert not err.exists(), err.read_text()
    with np.load(out / f"{case}.rank{rank}.npz") as f:
        return dict(f)


def _close(got, ref, what: str) -> None:
    ref = np.asarray(ref)
    scale = max(float(np.abs(ref).max()) if ref.size else 0.0, 1e-300)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * scale, err_msg=what)


def _grads(model) -> list:
    return [None if p.grad is None else p.grad.numpy().copy() for p in model.parameters()]


def _one_process_run(kind: str):
    """Grads and parameters of each step of plain SGD on the whole 2B batch."""
    model = {"mlp": C.mlp, "gpt": C.gpt}[kind]()
    opt = ember.optim.SGD(model.parameters(), lr=C.LR)
    steps = []
    for step in range(C.STEPS):
        x, y = C.data(kind, step, WORLD)
        opt.zero_grad()
        C.loss_of(kind, model, x, y).backward()
        grads = _grads(model)
        opt.step()
        steps.append((grads, [p.detach().numpy().copy() for p in model.parameters()]))
    return steps


@pytest.fixture(scope="module")
def mpi_ranks(tmp_path_factory):
    """The MLP and the GPT cases over the mpi engine (bucket all-reduces as nonblocking MPI
    requests on the communication thread)."""
    from tests.distributed import _spawn

    if not _spawn.has_mpi():
        pytest.skip("mpi4py (pip install 'ember[mpi]') is not installed")
    out = tmp_path_factory.mktemp("ddp_mpi")
    env = dict(os.environ, CASE_BACKEND="mpi", OMP_NUM_THREADS="1")
    for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"):
        env.pop(k, None)
    p = subprocess.run([_spawn.MPIEXEC, "-n", str(WORLD), sys.executable, "-m",
                        "tests.distributed._ddp_cases", str(out), "mlp", "gpt"], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    return out


@pytest.mark.parametrize("case,kind,engine", [("mlp", "mlp", "shm"), ("mlp_view", "mlp", "shm"),
                                              ("gpt", "gpt", "shm"), ("mlp", "mlp", "mpi"),
                                              ("gpt", "gpt", "mpi")])
def test_two_ranks_equal_one_process_on_the_double_batch(request, case, kind, engine):
    ranks = request.getfixturevalue("ranks" if engine == "shm" else "mpi_ranks")
    ref = _one_process_run(kind)
    for r in range(WORLD):
        got = _load(ranks, case, r)
        assert bool(got["buckets_disjoint"])  # buckets in the engine's shared memory
        init0 = _load(ranks, case, 0)
        for i in range(len(ref[0][0])):  # rank 0's initial values everywhere
            np.testing.assert_array_equal(got[f"init{i}"], init0[f"init{i}"])
        for step, (grads, params) in enumerate(ref):
            for i, (g, p) in enumerate(zip(grads, params)):
                _close(got[f"grad{step}_{i}"], g, f"rank {r} step {step} grad {i}")
                _close(got[f"param{step}_{i}"], p, f"rank {r} step {step} param {i}")
                if case != "mlp_view":  # a gradient kept from a step is its own memory
                    np.testing.assert_array_equal(got[f"kept{step}_{i}"],
                                                  got[f"grad{step}_{i}"])
        assert bool(got["grads_not_views"])  # handed-over gradients are tensors of their own


def test_cnn_with_batchnorm_buffers_broadcast(ranks):
    # BatchNorm normalises each rank's batch with that rank's statistics, so the reference
    # is the mean over ranks of one-process gradients on each half, every rank starting from
    # rank 0's buffers (broadcast at each forward); each rank then updates its own buffers.
    ref = C.cnn()
    state = {k: v.clone() for k, v in ref.state_dict().items()}
    got = [_load(ranks, "cnn", r) for r in range(WORLD)]
    for step in range(C.STEPS):
        x, y = C.data("cnn", step, WORLD)
        grads, bufs = [], []
        for r in range(WORLD):
            m = C.cnn()
            m.load_state_dict(state)
            sl = slice(r * C.B, (r + 1) * C.B)
            C.loss_of("cnn", m, x[sl], y[sl]).backward()
            grads.append(_grads(m))
            bufs.append([b.numpy().copy() for b in m.buffers()])
        mean = [sum(g[i] for g in grads) / WORLD for i in range(len(grads[0]))]
        m = C.cnn()
        m.load_state_dict(state)
        with ember.no_grad():
            for p, g in zip(m.parameters(), mean):
                p.sub_(C.LR * ember.from_numpy(g))
        for r in range(WORLD):
            for i, g in enumerate(mean):
                _close(got[r][f"grad{step}_{i}"], g, f"rank {r} step {step} grad {i}")
            for i, p in enumerate(m.parameters()):
                _close(got[r][f"param{step}_{i}"], p.detach().numpy(), f"param {i}")
            for i, b in enumerate(bufs[r]):
                _close(got[r][f"buf{step}_{i}"], b, f"rank {r} step {step} buffer {i}")
        state = {k: v.clone() for k, v in m.state_dict().items()}
        for (name, _), b in zip(m.named_buffers(), bufs[0]):  # rank 0's buffers go on
            state[name] = ember.from_numpy(b.copy())


def test_no_sync_accumulation_equals_one_synchronized_step(ranks):
    x, y = C.data("mlp", 0, WORLD)
    x2, y2 = C.data("mlp", 1, WORLD)
    total = None
    for r in range(WORLD):
        m = C.mlp()
        sl = slice(r * C.B, (r + 1) * C.B)
        C.loss_of("mlp", m, x[sl], y[sl]).backward()
        local = _grads(m)
        C.loss_of("mlp", m, x2[sl], y2[sl]).backward()
        g = _grads(m)
        got = _load(ranks, "no_sync", r)
        for i, lg in enumerate(local):  # inside no_sync: this rank's own gradient only
            _close(got[f"local{i}"], lg, f"rank {r} local grad {i}")
        total = g if total is None else [a + b for a, b in zip(total, g)]
    for r in range(WORLD):
        got = _load(ranks, "no_sync", r)
        for i, t in enumerate(total):
            _close(got[f"grad{i}"], t / WORLD, f"rank {r} grad {i}")


def test_find_unused_parameters(ranks):
    names = [n for n, _ in C.TwoHeads().named_parameters()]
    for step in range(2):
        x, y = C.data("unused", step, WORLD)
        per_rank = []
        for r in range(WORLD):
            m = C.TwoHeads()
            sl = slice(r * C.B, (r + 1) * C.B)
            C.loss_of("unused", m, x[sl], y[sl], use=r == 0).backward()
            per_rank.append(_grads(m))
        for r in range(WORLD):
            got = _load(ranks, "find_unused", r)
            for i, name in enumerate(names):
                g = got[f"grad{step}_{i}"]
                if name.startswith("unused"):  # no rank used it: .grad stays None
                    assert g.size == 0, name
                    continue
                # `sometimes` is used by rank 0 only: rank 1 contributes zeros
                ref = sum(p[i] if p[i] is not None else 0 for p in per_rank) / WORLD
                _close(g, ref, f"rank {r} step {step} {name}")


def test_unused_parameters_without_find_unused_raise_torchs_error(ranks):
    for r in range(WORLD):
        msg = (ranks / f"unused_error.rank{r}.err").read_text()
        assert msg.startswith("RuntimeError: Expected to have finished reduction in the prior "
                              "iteration before starting a new one.")
        assert "find_unused_parameters=True" in msg
        assert f"Parameter indices which did not receive grad for rank {r}: 6 7" in msg


def test_parameter_shapes_are_checked_across_ranks(ranks):
    msg1 = (ranks / "shapes.rank1.err").read_text()
    assert msg1 == ("RuntimeError: [1]: params[0] in this process with sizes [6, 3] appears not "
                    "to match sizes of the same param in process 0.")
    assert (ranks / "shapes.rank0.err").read_text().startswith("RuntimeError: [0]: DDP expects "
                                                                "same model across all ranks")


def test_timeline_shows_allreduce_overlapping_backward(ranks):
    assert int(_load(ranks, "timeline", 0)["buckets"]) > 1
    for name, rank in (("trace.json", 0), ("trace.rank1.json", 1)):
        trace = json.loads((ranks / name).read_text())
        events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
        assert {e["pid"] for e in trace["traceEvents"]} == {rank}
        steps = sorted((e for e in events if e["cat"] == "step"), key=lambda e: e["ts"])
        assert len(steps) == 2
        lo = 0.0
        for s in steps:
            hi = s["ts"] + s["dur"]
            nodes = [e for e in events if e["cat"] == "node" and lo < e["ts"] <= hi]
            comm = sorted((e for e in events if e["cat"] == "allreduce" and lo < e["ts"] <= hi),
                          key=lambda e: e["ts"])
            assert nodes and len(comm) > 1
            # the first bucket's all-reduce starts before backward's last node finishes
            assert comm[0]["ts"] < max(e["ts"] + e["dur"] for e in nodes)
            lo = hi


@pytest.mark.parametrize("case,by_world", [("join", True), ("join_active", False)])
def test_join_with_uneven_inputs(ranks, case, by_world):
    # rank 0 trains on three batches, rank 1 on one: from the second step on rank 1 shadows
    # with zero gradients; the gradient is divided by 2 (initial world) or 1 (active ranks)
    model = C.mlp()
    opt = ember.optim.SGD(model.parameters(), lr=C.LR)
    for step in range(3):
        x, y = C.data("mlp", step, WORLD)
        grads = []
        for r in range(WORLD if step == 0 else 1):
            opt.zero_grad()
            sl = slice(r * C.B, (r + 1) * C.B)
            C.loss_of("mlp", model, x[sl], y[sl]).backward()
            grads.append(_grads(model))
        divisor = WORLD if by_world or step == 0 else 1
        with ember.no_grad():
            for i, p in enumerate(model.parameters()):
                p.grad = ember.from_numpy(sum(g[i] for g in grads) / divisor)
        opt.step()
    for r in range(WORLD):  # rank 1 ends with rank 0's (the longest-running) parameters
        got = _load(ranks, case, r)
        for i, p in enumerate(model.parameters()):
            _close(got[f"param{i}"], p.detach().numpy(), f"rank {r} param {i}")


def test_join_throw_on_early_termination(ranks):
    for r in range(WORLD):
        assert (ranks / f"join_throw.rank{r}.err").read_text() == (
            "RuntimeError: Detected at least one rank that exhausted inputs. Throwing across all "
            "ranks.")
