"""Rank programs for tests/distributed: ``python _cases.py SCENARIO [ARGS]`` on every rank.

Each rank builds every rank's inputs from seeds, so it computes the expected result of each
collective in NumPy by itself and asserts its own output; a failed assertion makes the rank
exit non-zero and the test report its stderr. The last line a rank prints is ``OK``.
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import sys
import time

import numpy as np

import ember
import ember.distributed as dist
from ember.distributed import ReduceOp

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int8", "uint8", "bool"]
SHAPES = [(7,), (3, 1001)]


def data(rank: int, shape, dtype: str, op=ReduceOp.SUM, salt: int = 0) -> np.ndarray:
    """Rank ``rank``'s input, the same on every rank that asks."""
    rng = np.random.default_rng([rank, len(shape), salt, DTYPES.index(dtype)])
    npdt = getattr(ember, dtype).np
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if npdt.kind in "iu":
        lo = 1 if op is ReduceOp.PRODUCT else (0 if npdt.kind == "u" else -3)
        return rng.integers(lo, 4, shape).astype(npdt)
    lo, hi = (0.5, 1.5) if op is ReduceOp.PRODUCT else (-1.0, 1.0)
    return rng.uniform(lo, hi, shape).astype(npdt)


def expected(parts: list[np.ndarray], op: ReduceOp):
    """The reduction in float64 for floats (with its tolerance), exactly for the others."""
    if parts[0].dtype.kind == "b":
        f = np.logical_or if op in (ReduceOp.SUM, ReduceOp.MAX) else np.logical_and
        return f.reduce(np.stack(parts)), 0.0
    if parts[0].dtype.kind in "iu":
        uf = {ReduceOp.SUM: np.add, ReduceOp.PRODUCT: np.multiply, ReduceOp.MIN: np.minimum,
              ReduceOp.MAX: np.maximum}[op]
        return uf.reduce(np.stack(parts)), 0.0
    wide = np.stack([p.astype(np.float64) for p in parts])
    n = len(parts)
    eps = float(np.finfo(parts[0].dtype).eps)
    if op in (ReduceOp.SUM, ReduceOp.AVG):
        ref, tol = wide.sum(0), (n + 1) * eps * np.abs(wide).sum(0)
        return (ref / n, tol / n) if op is ReduceOp.AVG else (ref, tol)
    if op is ReduceOp.PRODUCT:
        ref = wide.prod(0)
        return ref, (n + 1) * eps * np.abs(ref)
    return (wide.min(0) if op is ReduceOp.MIN else wide.max(0)), 0.0


def check(t, ref, tol=0.0, what=""):
    got = t.float().double().numpy() if t.dtype in (ember.bfloat16, ember.float16) else t.numpy()
    if ref.dtype.kind == "f" or tol:
        err = np.abs(got.astype(np.float64) - ref)
        assert np.all(err <= tol), f"{what}: max error {err.max()} > tolerance"
    else:
        assert np.array_equal(got, ref), f"{what}: {got} != {ref}"


def ops_for(dtype: str) -> list[ReduceOp]:
    base = [ReduceOp.SUM, ReduceOp.PRODUCT, ReduceOp.MIN, ReduceOp.MAX]
    return base + [ReduceOp.AVG] if getattr(ember, dtype).is_floating_point else base


def t_of(a: np.ndarray):
    return ember.from_numpy(a.copy())


# ---- scenarios ----------------------------------------------------------------------------
def collectives(r: int, n: int) -> None:
    """Every collective, reduce op and dtype against NumPy (also under a tiny slot size)."""
    for dtype in DTYPES:
        for shape in SHAPES:
            for op in ops_for(dtype):
                parts = [data(j, shape, dtype, op) for j in range(n)]
                ref, tol = expected(parts, op)
                x = t_of(parts[r])
                dist.all_reduce(x, op=op)
                check(x, ref, tol, f"all_reduce {dtype} {shape} {op}")
                if op is ReduceOp.SUM:
                    y = t_of(parts[r])
                    dist.reduce(y, dst=n - 1, op=op)
                    check(y, ref if r == n - 1 else parts[r].astype(ref.dtype) if
                          ref.dtype.kind != "f" else parts[r].astype(np.float64), tol,
                          f"reduce {dtype}")
            parts = [data(j, shape, dtype, salt=1) for j in range(n)]
            # broadcast from the last rank
            b = t_of(parts[r])
            dist.broadcast(b, src=n - 1)
            assert np.array_equal(b.numpy(), parts[n - 1]), f"broadcast {dtype}"
            # all_gather / all_gather_into_tensor / gather
            outs = [ember.empty(shape, dtype=getattr(ember, dtype)) for _ in range(n)]
            dist.all_gather(outs, t_of(parts[r]))
            assert all(np.array_equal(o.numpy(), parts[j]) for j, o in enumerate(outs)), dtype
            big = ember.empty((n, *shape), dtype=getattr(ember, dtype))
            dist.all_gather_into_tensor(big, t_of(parts[r]))
            assert np.array_equal(big.numpy(), np.stack(parts)), f"all_gather_into_tensor {dtype}"
            glist = [ember.empty(shape, dtype=getattr(ember, dtype)) for _ in range(n)] \
                if r == 0 else None
            dist.gather(t_of(parts[r]), glist, dst=0)
            if r == 0:
                assert all(np.array_equal(o.numpy(), parts[j]) for j, o in enumerate(glist))
            # scatter from rank 1 % n
            src = 1 % n
            chunks = [data(src, shape, dtype, salt=10 + j) for j in range(n)]
            out = ember.empty(shape, dtype=getattr(ember, dtype))
            dist.scatter(out, [t_of(c) for c in chunks] if r == src else None, src=src)
            assert np.array_equal(out.numpy(), chunks[r]), f"scatter {dtype}"
            # reduce_scatter / reduce_scatter_tensor
            for op in (ReduceOp.SUM, ReduceOp.MAX):
                full = [data(j, (n, *shape), dtype, op, salt=2) for j in range(n)]
                ref, tol = expected([f[r] for f in full], op)
                o1 = ember.empty(shape, dtype=getattr(ember, dtype))
                dist.reduce_scatter(o1, [t_of(c) for c in full[r]], op=op)
                check(o1, ref, tol, f"reduce_scatter {dtype} {op}")
                o2 = ember.empty(shape, dtype=getattr(ember, dtype))
                dist.reduce_scatter_tensor(o2, t_of(full[r]), op=op)
                check(o2, ref, tol, f"reduce_scatter_tensor {dtype} {op}")
    alltoall(r, n)
    point_to_point(r, n)
    objects(r, n)
    non_contiguous(r, n)
    asynchronous(r, n)
    subgroups(r, n)
    shared(r, n)
    batched_and_objects(r, n)
    pieces(r, n)
    dist.barrier()


def pieces(r: int, n: int) -> None:
    """An all_reduce over several pipelined pieces and a ragged last one (shm), from ordinary
    and from shared memory."""
    pg = dist.GroupMember.WORLD
    numel = 3 * pg.piece_bytes // 4 + 17 if dist.get_backend() == "shm" else 1 << 20
    parts = [np.random.default_rng([j, 7]).uniform(-1, 1, numel).astype(np.float32)
             for j in range(n)]
    ref, tol = expected(parts, ReduceOp.SUM)
    for t in (t_of(parts[r]), dist.empty_shared(numel).copy_(t_of(parts[r]))):
        dist.all_reduce(t)
        check(t, ref, tol, "all_reduce in pieces")
    avg = t_of(parts[r])
    dist.all_reduce(avg, op=ReduceOp.AVG)
    check(avg, ref / n, tol / n, "all_reduce AVG in pieces")
    for dtype, op in (("bfloat16", ReduceOp.SUM), ("int8", ReduceOp.MAX), ("bool", ReduceOp.SUM),
                      ("float64", ReduceOp.PRODUCT)):
        item = getattr(ember, dtype).itemsize
        count = 2 * pg.piece_bytes // item + 5 if dist.get_backend() == "shm" else 1 << 16
        parts = [data(j, (count,), dtype, op, salt=3) for j in range(n)]
        ref, tol = expected(parts, op)
        x = t_of(parts[r])
        dist.all_reduce(x, op=op)
        check(x, ref, tol, f"all_reduce {dtype} {op} in pieces")
    # even ranks' tensors in the shared heap (their chunks reduced in place, NOTE [In-place
    # chunks] in shm.py), odd ranks' in ordinary memory; each overwritten as soon as its call
    # returns, which a peer still reading it would see
    count = 2 * pg.piece_bytes // 4 + 33 if dist.get_backend() == "shm" else 1 << 16
    for k, op in enumerate((ReduceOp.AVG, ReduceOp.MAX, ReduceOp.SUM, ReduceOp.PRODUCT)):
        parts = [data(j, (count,), "float64", op, salt=20 + k) for j in range(n)]
        ref, tol = expected(parts, op)
        t = dist.empty_shared(count, dtype=ember.float64) if r % 2 == 0 else \
            ember.empty(count, dtype=ember.float64)
        t.copy_(t_of(parts[r]))
        dist.all_reduce(t, op=op)
        check(t, ref, tol, f"all_reduce {op} from mixed memory")
        t.fill_(float("nan"))


def batched_and_objects(r: int, n: int) -> None:
    """scatter_object_list, batch_isend_irecv (receives listed before sends; 1 MiB messages,
    which MPI sends only once the receiver is there), send/recv_object_list, a passing
    monitored_barrier."""
    out = [None]
    inputs = [{"to": j, "pad": "x" * (100 * j)} for j in range(n)] if r == n - 1 else None
    dist.scatter_object_list(out, inputs, src=n - 1)
    assert out == [{"to": r, "pad": "x" * (100 * r)}], out
    nxt, prv = (r + 1) % n, (r - 1) % n
    size = 1 << 18
    mine = ember.from_numpy(np.arange(size, dtype=np.float32) + 1000 * r)
    theirs = ember.empty(size)
    small = ember.empty(3, dtype=ember.int64)
    ops = [dist.P2POp(dist.irecv, theirs, prv), dist.P2POp(dist.irecv, small, nxt, tag=3),
           dist.P2POp(dist.isend, mine, nxt), dist.P2POp(dist.isend, ember.tensor([r] * 3),
                                                           prv, tag=3)]
    works = dist.batch_isend_irecv(ops)
    assert len(works) == 4
    for w in works:
        w.wait()
    assert np.array_equal(theirs.numpy(), np.arange(size, dtype=np.float32) + 1000 * prv)
    assert small.tolist() == [nxt] * 3, "batch_isend_irecv"
    if r == 0:
        dist.send_object_list([{"a": 1}, list(range(50))], dst=n - 1)
    elif r == n - 1:
        got = [None, None]
        assert dist.recv_object_list(got, src=0) == 0
        assert got == [{"a": 1}, list(range(50))], got
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=30))
    assert dist.get_node_local_rank(fallback_rank=r) == r


def alltoall(r: int, n: int) -> None:
    # equal splits: row block j of rank r's input goes to rank j
    inp = ember.from_numpy(np.arange(n * 4 * 3, dtype=np.float32).reshape(n * 4, 3) + 1000 * r)
    out = ember.empty(n * 4, 3)
    dist.all_to_all_single(out, inp)
    want = np.concatenate([(np.arange(n * 4 * 3, dtype=np.float32).reshape(n * 4, 3)
                            + 1000 * j)[r * 4:(r + 1) * 4] for j in range(n)])
    assert np.array_equal(out.numpy(), want), "all_to_all_single"
    # uneven splits: rank i sends i + j + 1 rows to rank j
    rows_in = [r + j + 1 for j in range(n)]
    rows_out = [j + r + 1 for j in range(n)]
    src = np.concatenate([np.full((k, 2), 100 * r + j, np.int64) for j, k in enumerate(rows_in)])
    out = ember.empty(sum(rows_out), 2, dtype=ember.int64)
    dist.all_to_all_single(out, ember.from_numpy(src), rows_out, rows_in)
    want = np.concatenate([np.full((k, 2), 100 * j + r, np.int64) for j, k in enumerate(rows_out)])
    assert np.array_equal(out.numpy(), want), "all_to_all_single (uneven)"
    outs = [ember.empty(2) for _ in range(n)]
    dist.all_to_all(outs, [ember.full((2,), float(10 * r + j)) for j in range(n)])
    assert [o.tolist() for o in outs] == [[float(10 * j + r)] * 2 for j in range(n)], "all_to_all"


def point_to_point(r: int, n: int) -> None:
    nxt, prv = (r + 1) % n, (r - 1) % n
    got = ember.empty(3, 4, dtype=ember.bfloat16)
    if r % 2 == 0:
        dist.send(ember.full((3, 4), float(r), dtype=ember.bfloat16), dst=nxt)
        src = dist.recv(got, src=prv)
    else:
        src = dist.recv(got, src=prv)
        dist.send(ember.full((3, 4), float(r), dtype=ember.bfloat16), dst=nxt)
    assert src == prv and got.float().tolist() == [[float(prv)] * 4] * 3, "send/recv"
    box = ember.empty(5, dtype=ember.int64)
    w1 = dist.isend(ember.arange(5) + r, dst=nxt)
    w2 = dist.irecv(box, src=prv)
    w1.wait()
    w2.wait()
    assert w2.is_completed() and box.tolist() == [prv + k for k in range(5)], "isend/irecv"
    # a ring of 1 MiB exchanges, each rank's send posted before its receive (MPI sends this
    # size only once the receiver is there)
    big = ember.empty(1 << 18)
    ws = dist.isend(ember.full((1 << 18,), float(r)), dst=nxt, tag=5)
    wr = dist.irecv(big, src=prv, tag=5)
    while not wr.is_completed():
        time.sleep(0.001)
    sent = ws.get_future().wait()  # the future alone completes the send (MPI: drives it)
    assert wr.wait() and len(sent) == 1 and ws.is_completed()
    assert big[0].item() == big[-1].item() == float(prv), "isend/irecv ring of 1 MiB"
    if r == 0:  # any source
        who = ember.empty(1, dtype=ember.int64)
        assert dist.recv(who, tag=7) == n - 1 and who.item() == n - 1
    elif r == n - 1:
        dist.send(ember.tensor([r]), dst=0, tag=7)


def objects(r: int, n: int) -> None:
    objs = [None] * n
    dist.all_gather_object(objs, {"rank": r, "tags": ["x"] * r})
    assert objs == [{"rank": j, "tags": ["x"] * j} for j in range(n)], objs
    lst = [r, "mine", None] if r == 1 % n else [None, None, None]
    dist.broadcast_object_list(lst, src=1 % n)
    assert lst == [1 % n, "mine", None], lst
    big = [None]
    dist.broadcast_object_list(big if r else [bytes(range(256)) * 200], src=0)
    assert r == 0 or big[0] == bytes(range(256)) * 200
    gathered = [None] * n if r == 0 else None
    dist.gather_object(("g", r), gathered, dst=0)
    assert r != 0 or gathered == [("g", j) for j in range(n)]


def non_contiguous(r: int, n: int) -> None:
    base = ember.from_numpy(np.arange(24, dtype=np.float64).reshape(4, 6) * (r + 1))
    v = base.t()[1::2]  # (3, 4), strided
    dist.all_reduce(v)
    tri = n * (n + 1) // 2
    want = (np.arange(24, dtype=np.float64).reshape(4, 6) * (r + 1))
    want.T[1::2] = (np.arange(24, dtype=np.float64).reshape(4, 6) * tri).T[1::2]
    assert np.array_equal(base.numpy(), want), "all_reduce on a non-contiguous view"
    w = ember.zeros(4, 6)
    bv = w[:, ::3]
    if r == 0:
        bv.copy_(ember.ones(4, 2) * 5)
    dist.broadcast(bv, src=0)
    assert w[:, 0].tolist() == [5.0] * 4 and w[:, 1].tolist() == [0.0] * 4, "broadcast view"


def asynchronous(r: int, n: int) -> None:
    xs = [ember.full((1000,), float(r + k)) for k in range(5)]
    works = [dist.all_reduce(x, async_op=True) for x in xs]
    b = ember.full((3,), float(r))
    wb = dist.broadcast(b, src=0, async_op=True)
    dist.barrier()  # a synchronous call after pending async ones runs after them
    for k, (x, w) in enumerate(zip(xs, works)):
        assert w.wait() and w.is_completed()
        assert x[0].item() == sum(j + k for j in range(n)), "async all_reduce"
    wb.wait()
    assert b.tolist() == [0.0] * 3
    fut = dist.all_reduce(ember.ones(2), async_op=True).get_future()
    assert fut.wait()[0].tolist() == [float(n)] * 2
    w = dist.all_gather_into_tensor(ember.empty(n), ember.tensor([float(r)]), async_op=True)
    w.wait()
    assert w.result()[0].tolist() == [float(j) for j in range(n)]


def subgroups(r: int, n: int) -> None:
    members = [j for j in range(n) if j % 2 == 0] if n > 2 else [1]
    g = dist.new_group(members)
    if r in members:
        assert dist.get_rank(g) == members.index(r) and dist.get_world_size(g) == len(members)
        x = ember.tensor([float(r)])
        dist.all_reduce(x, group=g)
        assert x.item() == float(sum(members)), "subgroup all_reduce"
        y = ember.tensor([float(r)])
        dist.broadcast(y, src=members[-1], group=g)
        assert y.item() == float(members[-1]), "subgroup broadcast (global src)"
        assert dist.get_global_rank(g, 0) == members[0]
    else:
        assert g is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(g) == -1
        x = ember.tensor([float(r)])
        assert dist.all_reduce(x, group=g) is None and x.item() == float(r)
    everyone = dist.new_group()
    z = ember.ones(3)
    dist.all_reduce(z, group=everyone)
    assert z.tolist() == [float(n)] * 3


def shared(r: int, n: int) -> None:
    s = dist.empty_shared(3, 1001)
    s.copy_(ember.from_numpy(data(r, (3, 1001), "float32")))
    parts = [data(j, (3, 1001), "float32") for j in range(n)]
    ref, tol = expected(parts, ReduceOp.SUM)
    for _ in range(2):
        dist.all_reduce(s)
        check(s, ref, tol * n, "empty_shared all_reduce")
        ref, tol = ref * n, tol * n * n
    buf = dist.alloc_buffer(64)
    assert buf.dtype == np.uint8 and buf.size == 64
    # views keep the memory: the next allocations must not reuse it
    kept = dist.alloc_buffer(4096)[128:].view(np.float64)
    kept[:] = 7.0
    t = dist.empty_shared(100, dtype=ember.int64)[10:20]
    t.fill_(5)
    import gc
    gc.collect()
    for _ in range(4):
        dist.empty_shared(1000).fill_(-1.0)
        dist.alloc_buffer(4096)[:] = 0
    assert np.all(kept == 7.0) and t.tolist() == [5] * 10, "shared memory reused while in use"
    if dist.get_backend() == "shm":
        assert dist.GroupMember.WORLD._heap_offset(s.numpy()) >= 0


# ---- launcher and faults --------------------------------------------------------------------
def env(r: int, n: int) -> None:
    keys = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
            "MASTER_PORT", "TORCHELASTIC_RUN_ID"]
    print("ENV " + json.dumps({k: os.environ.get(k) for k in keys} | {"argv": sys.argv[2:]}))


def exit_code(r: int, n: int) -> None:
    if r == 1:
        sys.exit(3)
    time.sleep(30)


def signals(r: int, n: int) -> None:
    marker = sys.argv[2]

    def on_term(signum, frame):
        with open(f"{marker}.{r}", "w") as f:
            f.write(signal.Signals(signum).name)
        sys.exit(0)

    signal.signal(signal.SIGTERM, on_term)
    with open(f"{marker}.ready.{r}", "w"):
        pass
    time.sleep(60)


def small(r: int, n: int) -> None:
    """Small all-reduces (the mpi engine's persistent requests, NOTE [MPI small all_reduce]):
    more distinct sizes than it keeps requests for, one size under several shapes and
    tensors, every op, views, large messages in between, each call checked against NumPy."""
    calls = []
    for shape in [(12,), (3, 4), (2, 2, 3), (12,), (1, 12)]:
        for op in ops_for("float64"):
            calls.append((shape, "float64", op))
    calls += [((), "float32", ReduceOp.SUM), ((5,), "int32", ReduceOp.MAX),
              ((2, 3), "bool", ReduceOp.SUM), ((5,), "bool", ReduceOp.SUM),
              ((6,), "float16", ReduceOp.SUM), ((5000,), "float32", ReduceOp.SUM),
              ((4096,), "float32", ReduceOp.AVG), ((4097,), "float32", ReduceOp.SUM)]
    for k in range(40):  # more sizes than the engine keeps requests for: the last take the
        calls.append(((k + 1,), "float32", ReduceOp.SUM))  # general path
    same = t_of(data(0, (9,), "float32"))  # one tensor, alike on every rank, again and again
    for rnd in range(2):
        for i, (shape, dtype, op) in enumerate(calls):
            parts = [data(j, shape, dtype, op, salt=100 + i) for j in range(n)]
            ref, tol = expected(parts, op)
            x = t_of(parts[r])
            dist.all_reduce(x, op=op)
            check(x, ref, tol, f"small all_reduce {dtype} {shape} {op} (round {rnd})")
            before = same.numpy().copy()
            dist.all_reduce(same, op=ReduceOp.MAX)
            assert np.array_equal(same.numpy(), before), "the same tensor again"
    base = t_of(data(r, (4, 6), "float32"))
    want = sum(data(j, (4, 6), "float32") for j in range(n))
    view = base[1:3]  # a contiguous view in the middle of its storage
    dist.all_reduce(view)
    got = base.numpy()
    assert np.allclose(got[1:3], want[1:3], rtol=1e-6) and \
        np.array_equal(got[[0, 3]], data(r, (4, 6), "float32")[[0, 3]]), "a view's neighbours"


def die(r: int, n: int) -> None:
    """Rank 1 dies (killed, raising, or hanging); the others must fail naming it."""
    how = sys.argv[2]
    x = ember.ones(8)
    dist.all_reduce(x)
    if r == 1:
        if how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if how == "raise":
            raise ValueError("boom on rank 1")
        time.sleep(60)  # "hang": the others time out
    start = time.monotonic()
    try:
        dist.all_reduce(x)
    except dist.DistBackendError as e:
        print(f"CAUGHT {time.monotonic() - start:.2f} {e}")
        raise
    raise AssertionError("the collective did not fail")


def late(r: int, n: int) -> None:
    """Ranks 1.. are late: rank 0's ``Work.wait(timeout)`` gives up (a plain wait then
    succeeds) and its monitored barriers name them; then everyone passes one."""
    x = ember.ones(3)
    if r:
        time.sleep(1.0)
    work = dist.all_reduce(x, async_op=True)
    if r == 0:
        start = time.monotonic()
        try:
            work.wait(timeout=datetime.timedelta(seconds=0.2))
            raise AssertionError("wait(timeout) returned while the other ranks had not joined")
        except dist.DistBackendError as e:
            took = time.monotonic() - start
            assert "Operation timed out!" in str(e) and 0.19 <= took < 5, (took, e)
    assert work.wait() and x.tolist() == [float(n)] * 3
    assert work.wait(timeout=datetime.timedelta(seconds=0.2))  # finished: returns at once
    for wait_all in (True, False):
        if r == 0:
            try:
                dist.monitored_barrier(timeout=datetime.timedelta(seconds=0.5),
                                       wait_all_ranks=wait_all)
                raise AssertionError("monitored_barrier passed without the late ranks")
            except dist.DistBackendError as e:
                print(f"MONITORED {wait_all} {e}")
        else:
            time.sleep(0.7)
        dist.barrier()
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=30), wait_all_ranks=True)


def mismatch(r: int, n: int) -> None:
    kind = sys.argv[2]
    dist.all_reduce(ember.ones(4))
    if kind == "shape":
        dist.all_reduce(ember.ones(4 + r))
    else:
        (dist.all_reduce if r == 0 else dist.barrier)(*([ember.ones(4)] if r == 0 else []))
    raise AssertionError("no mismatch reported")


def detail_log(r: int, n: int) -> None:
    dist.all_reduce(ember.ones(2, 3))
    dist.broadcast(ember.ones(5, dtype=ember.bfloat16), src=0)
    dist.barrier()


SCENARIOS = {f.__name__: f for f in (collectives, small, env, exit_code, signals, die, mismatch,
                                     detail_log, late)}
NO_GROUP = {"env", "exit_code", "signals"}


def main() -> None:
    name = sys.argv[1]
    timeout = datetime.timedelta(seconds=float(os.environ.get("CASE_TIMEOUT", "60")))
    if name in NO_GROUP:
        SCENARIOS[name](int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    else:
        dist.init_process_group(os.environ.get("CASE_BACKEND", "shm"), timeout=timeout)
        SCENARIOS[name](dist.get_rank(), dist.get_world_size())
        dist.destroy_process_group()
    print("OK", flush=True)


if __name__ == "__main__":
    main()
