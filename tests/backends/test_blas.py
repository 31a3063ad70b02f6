"""The GEMM provider (ember/backends/cpu/_blas.py): the CBLAS stride, transpose and leading-
dimension logic against np.matmul, run through NumPy's own OpenBLAS (its ILP64 ``scipy_cblas_``
symbols) so it is tested where MKL is absent; MKL itself when installed; every float product
of the eager kernels and of the compiled code going through it; threads and fork.

Tolerances: two GEMMs of the same operands each lie within ``k * eps * (|A| @ |B|)`` of the
exact product, so they differ by at most twice that, on any CPU and BLAS kernel.
"""

from __future__ import annotations

import ctypes
import glob
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
from ember.backends.cpu import _blas as blas

DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
_RNG = np.random.default_rng(0)


def _openblas() -> blas.Gemm:
    libs = glob.glob(os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs",
                                  "libscipy_openblas64_*.so"))
    if not libs:
        pytest.skip("NumPy is not linked to scipy-openblas (ILP64 cblas symbols)")
    names = {np.float32: "s", np.float64: "d", np.complex64: "c", np.complex128: "z"}
    return blas.Gemm(ctypes.CDLL(libs[0]),
                     {dt: f"scipy_cblas_{c}gemm64_" for dt, c in names.items()},
                     name="openblas", min_macs=0, batch_macs=0)


@pytest.fixture(scope="module")
def openblas():
    return _openblas()


@pytest.fixture
def restore_provider():
    saved = list(blas._provider), blas.gemm
    yield
    blas._provider[:], blas.gemm = saved


def _sample(shape, dtype):
    a = _RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * _RNG.standard_normal(shape)
    return a.astype(dtype)


def _close(got, x, y, want=None):
    """``got`` against np.matmul (or ``want``) within twice the GEMM error bound."""
    want = np.matmul(x, y) if want is None else want
    k = x.shape[-1]
    eps = np.finfo(np.dtype(x.dtype)).eps
    bound = 2 * max(k, 1) * eps * np.matmul(np.abs(x).astype(np.float64),
                                            np.abs(y).astype(np.float64))
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.all(np.abs(got.astype(np.complex128) - want) <= bound + np.finfo(np.float64).tiny)


# operand layouts: (name, make(rows, cols, dtype) -> array)
def _c(r, c, dt):
    return _sample((r, c), dt)


def _f(r, c, dt):
    return np.asfortranarray(_sample((r, c), dt))


def _sliced(r, c, dt):      # leading dimension larger than the row: lda > cols
    return _sample((r, c + 5), dt)[:, 2:c + 2]


def _sliced_t(r, c, dt):    # a column block of a transposed matrix: Trans with lda > rows
    return _sample((c, r + 3), dt)[:, 1:r + 1].T


def _row_step(r, c, dt):    # every other row: lda = 2 * cols
    return _sample((2 * r, c), dt)[::2]


LAYOUTS = {"C": _c, "F": _f, "sliced": _sliced, "sliced_T": _sliced_t, "row_step": _row_step}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("lx", LAYOUTS)
@pytest.mark.parametrize("ly", LAYOUTS)
@pytest.mark.parametrize("lo", ["C", "F", "sliced"])
def test_layouts_run_in_blas(openblas, dtype, lx, ly, lo):
    m, k, n = 7, 11, 5
    x, y = LAYOUTS[lx](m, k, dtype), LAYOUTS[ly](k, n, dtype)
    out = {"C": np.empty((m, n), dtype), "F": np.empty((n, m), dtype).T,
           "sliced": np.empty((m, n + 4), dtype)[:, 3:n + 3]}[lo]
    assert openblas._plan(x, y, out, 0) is not None, "this layout must reach the library"
    assert openblas.gemm(x, y, out) is out
    _close(out, x, y)


@pytest.mark.parametrize("m,k,n", [(1, 6, 4), (5, 6, 1), (5, 1, 4), (1, 1, 1), (1, 6, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vector_shaped_matrices(openblas, m, k, n, dtype):
    for x in (_c(m, k, dtype), _f(m, k, dtype), _c(k, m, dtype).T):
        for y in (_c(k, n, dtype), _f(k, n, dtype)):
            for out in (np.empty((m, n), dtype), np.empty((n, m), dtype).T):
                assert openblas._plan(x, y, out, 0) is not None
                _close(openblas.gemm(x, y, out), x, y)


def _broadcast(r, c, dt):
    return np.broadcast_to(_sample((1, c), dt), (r, c))


def _negative(r, c, dt):
    return _sample((r, c), dt)[::-1]


def _gapped(r, c, dt):      # no unit stride in either dimension
    return _sample((2 * r, 2 * c), dt)[::2, ::2]


@pytest.mark.parametrize("make", [_broadcast, _negative, _gapped])
@pytest.mark.parametrize("side", ["x", "y"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layouts_numpy_must_copy_fall_back(openblas, make, side, dtype):
    m, k, n = 6, 8, 4
    x = make(m, k, dtype) if side == "x" else _c(m, k, dtype)
    y = make(k, n, dtype) if side == "y" else _c(k, n, dtype)
    out = np.empty((m, n), dtype)
    assert openblas._plan(x, y, out, 0) is None
    _close(openblas.gemm(x, y, out), x, y)


@pytest.mark.parametrize("m,k,n", [(0, 3, 4), (3, 0, 4), (3, 4, 0), (0, 0, 0)])
def test_zero_sizes(openblas, m, k, n):
    x, y = _c(m, k, np.float32), _c(k, n, np.float32)
    out = np.full((m, n), np.nan, np.float32)
    assert openblas._plan(x, y, out, 0) is None
    np.testing.assert_array_equal(openblas.gemm(x, y, out), np.zeros((m, n), np.float32))


def test_overlapping_out_falls_back(openblas):
    buf = _c(8, 8, np.float64)
    x, y = buf[:, :4], _c(4, 4, np.float64)
    want = x @ y
    out = buf[:, 4:]           # beside x in the same rows: the byte ranges interleave
    assert openblas._plan(x, y, out, 0) is None
    xs = x.copy()
    openblas.gemm(x, y, out)
    _close(out, xs, y, want)
    assert openblas._plan(x, y, buf[:, :4], 0) is None  # out is x itself


def test_out_none_mixed_dtypes_and_small_products(openblas):
    x, y = _c(5, 6, np.float32), _c(6, 3, np.float32)
    _close(openblas.gemm(x, y), x, y)
    assert openblas._plan(x, y.astype(np.float64), np.empty((5, 3)), 0) is None
    small = blas.Gemm(openblas._lib, {np.float32: "scipy_cblas_sgemm64_"}, min_macs=1000)
    assert small._plan(x, y, np.empty((5, 3), np.float32), small.min_macs) is None
    assert np.float16 not in openblas._routines  # half types are NumPy's (kernels widen them)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_batched(openblas, dtype):
    x, y = _c(3 * 4, 5, dtype).reshape(3, 4, 5), _sample((3, 5, 2), dtype)
    out = np.empty((3, 4, 2), dtype)
    assert openblas.gemm(x, y.transpose(0, 1, 2), out) is out
    _close(out, x, y)
    yb = np.broadcast_to(_sample((1, 5, 2), dtype), (3, 5, 2))  # broadcast batch: NumPy's
    _close(openblas.gemm(x, yb, out), x, yb)


def test_operand_layout_is_pure():
    assert blas.operand_layout(3, 4, 16, 4, 4) == (111, 4)
    assert blas.operand_layout(3, 4, 4, 12, 4) == (112, 3)
    assert blas.operand_layout(3, 4, 40, 4, 4) == (111, 10)
    assert blas.operand_layout(3, 4, 4, 40, 4) == (112, 10)
    assert blas.operand_layout(3, 4, 0, 4, 4) is None        # broadcast rows
    assert blas.operand_layout(3, 4, -16, 4, 4) is None      # reversed rows
    assert blas.operand_layout(3, 4, 8, 4, 4) is None        # rows overlap
    assert blas.operand_layout(1, 4, 0, 4, 4) == (111, 4)    # one row: any row stride
    assert blas.operand_layout(3, 1, 4, 0, 4) == (111, 1)    # one column


# -- every product goes through the provider ---------------------------------------------------
class _Counting:
    def __init__(self, g):
        self.g, self.calls = g, 0

    def gemm(self, x, y, out=None):
        self.calls += 1
        return self.g.gemm(x, y, out)


def _cases():
    F = ember.nn.functional
    return {
        "mm": lambda a, w, b, x3: a @ w.t(),
        "matmul_3d_2d": lambda a, w, b, x3: ember.matmul(x3, w.t()),
        "addmm": lambda a, w, b, x3: ember.addmm(b, a, w.t()),
        "linear": lambda a, w, b, x3: F.linear(a, w, b),
        "linear_3d": lambda a, w, b, x3: F.linear(x3, w, b),
        "bmm": lambda a, w, b, x3: ember.bmm(x3, x3.transpose(1, 2)),
    }


@pytest.mark.parametrize("case", list(_cases()))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_eager_and_compiled_products_use_the_provider(openblas, restore_provider, case, dtype):
    counting = _Counting(openblas)
    blas.set_provider(counting)
    dt = getattr(ember, dtype)
    a, w, b = ember.randn(6, 7, dtype=dt), ember.randn(5, 7, dtype=dt), ember.randn(5, dtype=dt)
    x3 = ember.randn(3, 4, 7, dtype=dt)
    fn = _cases()[case]
    eager = fn(a, w, b, x3)
    assert counting.calls >= 1, "the eager kernel did not call blas.gemm"
    want = np.asarray(eager.numpy())
    for backend in ("numpy", "c"):
        counting.calls = 0
        got = ember.compile(fn, backend=backend)(a, w, b, x3)
        assert counting.calls >= 1, f"compiled ({backend}) product bypassed blas.gemm"
        np.testing.assert_array_equal(got.numpy(), want)  # one GEMM: bit-identical


def test_gradients_run_through_the_provider(openblas, restore_provider):
    counting = _Counting(openblas)
    blas.set_provider(counting)
    x = ember.randn(4, 6, requires_grad=True)
    w = ember.randn(3, 6, requires_grad=True)
    ember.nn.functional.linear(x, w).sum().backward()
    assert counting.calls >= 3  # forward, grad of x, grad of w


# -- MKL, threads and fork ---------------------------------------------------------------------
needs_mkl = pytest.mark.skipif(blas.mkl_library() is None, reason="the mkl package is absent")


_THREAD_VARS = ("MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")


def _run(code: str, env: dict | None = None, timeout: float = 120) -> str:
    """Run ``code`` in a fresh interpreter (its own BLAS and thread state); its stdout."""
    full = {k: v for k, v in os.environ.items() if k not in _THREAD_VARS}
    full.update(env or {})
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full,
                         capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


@needs_mkl
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_mkl_matches_numpy(dtype):
    import threadpoolctl

    with threadpoolctl.threadpool_limits(1):
        g = blas._load_mkl()
    g.min_macs = g.batch_macs = 0
    for lx in LAYOUTS:
        for ly in ("C", "F", "sliced_T"):
            x, y = LAYOUTS[lx](9, 13, dtype), LAYOUTS[ly](13, 6, dtype)
            out = np.empty((9, 6), dtype)
            assert g._plan(x, y, out, 0) is not None
            _close(g.gemm(x, y, out), x, y)


@needs_mkl
def test_mkl_is_used_and_can_be_switched_off():
    assert _run("import ember; print(ember.backends.mkl.is_available())").strip() == "True"
    off = _run("import ember; print(ember.backends.mkl.is_available(), "
               "ember.backends.mkl.version())", env={"EMBER_BLAS": "numpy"})
    assert off.split() == ["False", "None"]


def test_without_mkl_products_are_numpy_matmul():
    out = _run("""
        import numpy as np, ember
        from ember.backends.cpu import _blas as blas
        (ember.ones(2, 2) @ ember.ones(2, 2))
        print(blas.gemm is np.matmul, ember.backends.mkl.is_available())
    """, env={"EMBER_BLAS": "numpy"})
    assert out.split() == ["True", "False"]


# The pool is sized by ember.set_num_threads before and after the library loads.
_THREADS = """
    import ctypes, ember
    {pre}
    from ember.backends.cpu import _blas as blas
    g = blas.provider()
    if g is None:
        print("none"); raise SystemExit
    get = g._lib.MKL_Get_Max_Threads
    get.restype = ctypes.c_int
    a = [get()]
    ember.set_num_threads(2)
    a.append(get())
    ember.set_num_threads(1)
    a += [get(), ember.get_num_threads()]
    print(*a)
"""


@needs_mkl
def test_set_num_threads_sizes_mkl_before_and_after_it_loads():
    # (MKL caps its pool at the machine's cores: at least 2 in CI)
    got = _run(_THREADS.format(pre="ember.set_num_threads(1)")).split()
    assert got == ["1", "2", "1", "1"]
    # without set_num_threads, MKL starts with NumPy's BLAS pool (OPENBLAS_NUM_THREADS)
    got = _run(_THREADS.format(pre=""), env={"OPENBLAS_NUM_THREADS": "1"}).split()
    assert got[0] == "1"


# A parent that ran multi-threaded GEMMs forks; the child runs GEMMs too (DataLoader workers,
# ember.distributed's ranks). With torch imported first, MKL runs on GNU OpenMP (NOTE [MKL
# threading layer] in ember/backends/cpu/_blas.py).
_FORK = """
    import os, time, numpy as np
    {pre}
    import ember
    ember.set_num_threads(2)
    a = ember.randn(512, 512)
    x = a.numpy().astype(np.float64)
    ref, bound = x @ x, 2 * 512 * np.finfo(np.float32).eps * (np.abs(x) @ np.abs(x))
    def ok():
        return bool(np.all(np.abs((a @ a).numpy() - ref) <= bound))
    assert all(ok() for _ in range(3))
    pid = os.fork()
    if pid == 0:
        os._exit(0 if ok() and ok() else 3)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            print("child", os.waitstatus_to_exitcode(status), ok())
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        print("child hung")
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.parametrize("pre", ["", "import torch"], ids=["alone", "torch_first"])
def test_fork_after_multithreaded_gemm(pre):
    assert _run(_FORK.format(pre=pre)).split() == ["child", "0", "True"]
