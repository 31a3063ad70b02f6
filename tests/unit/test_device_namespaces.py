"""Device namespaces on a machine without GPUs, checked against torch's CPU-only answers:
``ember.cuda`` (+ ``amp``), ``ember.backends.cuda``/``cudnn``/``mps``, ``ember.mps``,
``ember.accelerator``, ``Tensor.cuda``/``pin_memory``/``is_pinned``, ``Module.cuda`` and the
BLAS thread count."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import textwrap
import warnings
from collections import OrderedDict

import pytest
import threadpoolctl
import torch

import ember
from ember.testing import assert_close

NOT_COMPILED = r"not compiled with CUDA enabled"
NO_ACCELERATOR = r"Cannot access accelerator device when none is available\."


def _outcome(fn):
    """(value, exception type, exception message, [(warning category, message)])."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value, exc, msg = fn(), None, ""
        except Exception as e:  # noqa: BLE001  (the exception is what is compared)
            value, exc, msg = None, type(e), str(e)
    return value, exc, msg, [(w.category, str(w.message)) for w in caught]


def _cuda_call(lib, name: str, args: tuple):
    return lambda: getattr(lib.cuda, name)(*args)


# -- ember.cuda: values ---------------------------------------------------------------------
VALUE_CALLS = [
    ("is_available", ()), ("device_count", ()), ("is_initialized", ()),
    ("manual_seed", (0,)), ("manual_seed_all", (3,)), ("seed", ()), ("seed_all", ()),
    ("memory_allocated", ()), ("memory_allocated", (0,)), ("memory_allocated", ("cuda:1",)),
    ("max_memory_allocated", ()), ("memory_reserved", ()), ("max_memory_reserved", ()),
    ("memory_stats", ()), ("memory_stats_as_nested_dict", ()), ("empty_cache", ()),
    ("get_rng_state_all", ()), ("set_rng_state_all", ([],)), ("get_arch_list", ()),
    ("get_gencode_flags", ()), ("is_bf16_supported", ()), ("is_tf32_supported", ()),
]


@pytest.mark.parametrize("name,args", VALUE_CALLS, ids=lambda v: str(v))
def test_cuda_function_returns_what_torch_returns_without_cuda(name, args):
    got = _outcome(_cuda_call(ember, name, args))
    want = _outcome(_cuda_call(torch, name, args))
    assert got[1] is None and want[1] is None
    assert got[0] == want[0] and type(got[0]) is type(want[0])
    assert got[3] == want[3] == []


def test_memory_stats_is_an_empty_ordered_dict():
    assert ember.cuda.memory_stats() == OrderedDict() and \
        type(ember.cuda.memory_stats()) is OrderedDict


# -- ember.cuda: errors ---------------------------------------------------------------------
ERROR_CALLS = [
    ("initial_seed", (), NOT_COMPILED), ("synchronize", (), NOT_COMPILED),
    ("current_device", (), NOT_COMPILED), ("get_device_name", (), NOT_COMPILED),
    ("get_device_name", (0,), NOT_COMPILED), ("get_device_capability", (), NOT_COMPILED),
    ("get_device_properties", (), NOT_COMPILED), ("init", (), NOT_COMPILED),
    ("get_rng_state", (), NOT_COMPILED), ("current_stream", (), NOT_COMPILED),
    ("default_stream", (), NOT_COMPILED), ("ipc_collect", (), NOT_COMPILED),
    ("mem_get_info", (), NOT_COMPILED), ("set_per_process_memory_fraction", (0.5,), NOT_COMPILED),
    ("get_per_process_memory_fraction", (), NOT_COMPILED),
    # torch's CPU build raises AttributeError / KeyError here; ember keeps the type and says why
    ("set_device", (0,), NOT_COMPILED), ("reset_peak_memory_stats", (), NOT_COMPILED),
    ("reset_max_memory_allocated", (), NOT_COMPILED),
    ("reset_accumulated_memory_stats", (), NOT_COMPILED), ("memory_snapshot", (), NOT_COMPILED),
    ("memory_summary", (), NOT_COMPILED),
]


@pytest.mark.parametrize("name,args,pattern", ERROR_CALLS, ids=lambda v: str(v))
def test_cuda_function_raises_torchs_exception_type_without_cuda(name, args, pattern):
    got = _outcome(_cuda_call(ember, name, args))
    want = _outcome(_cuda_call(torch, name, args))
    assert want[1] is not None and got[1] is want[1], (got, want)
    assert re.search(pattern, got[2]), got[2]
    assert "ember.cuda.is_available()" in got[2]  # the hint names the way out


def test_set_device_with_a_negative_index_is_a_no_op_as_in_torch():
    torch.cuda.set_device(-1)
    ember.cuda.set_device(-1)


@pytest.mark.parametrize("name,args", [("Stream", ()), ("Event", ()),
                                       ("Event", (True,))])
def test_streams_and_events_need_cuda(name, args):
    got = _outcome(_cuda_call(ember, name, args))
    want = _outcome(_cuda_call(torch, name, args))
    assert got[1] is want[1] is RuntimeError
    assert "CUDA support" in got[2]


def test_device_context_managers():
    for lib in (torch, ember):
        ctx = lib.cuda.device(0)
        assert ctx.idx == 0 and lib.cuda.device("cuda:1").idx == 1
        with pytest.raises(RuntimeError, match="compiled without CUDA support"):
            with lib.cuda.device(0):
                pass
        with lib.cuda.device(-1):
            pass
        with lib.cuda.device_of(lib.zeros(1)):
            pass
        with lib.cuda.stream(None):
            pass


def test_out_of_memory_error_is_the_top_level_one():
    assert ember.cuda.OutOfMemoryError is ember.OutOfMemoryError
    assert torch.cuda.OutOfMemoryError is torch.OutOfMemoryError
    assert issubclass(ember.cuda.OutOfMemoryError, RuntimeError)


@pytest.mark.parametrize("name", ["memory_cached", "max_memory_cached"])
def test_deprecated_memory_names_warn_as_torch(name):
    got = _outcome(_cuda_call(ember, name, ()))
    want = _outcome(_cuda_call(torch, name, ()))
    assert got[0] == want[0] == 0
    assert got[3] == want[3]


# -- ember.cuda.amp -------------------------------------------------------------------------
def _amp_warnings(lib, make):
    got = _outcome(lambda: make(lib))
    assert got[1] is None, got
    return got[0], [(c, m.replace("torch_xla is imported", "").replace(" or ", " "))
                    for c, m in got[3]]


def test_cuda_amp_autocast_warns_and_disables_itself_as_torch():
    e_ctx, e_w = _amp_warnings(ember, lambda lib: lib.cuda.amp.autocast())
    t_ctx, t_w = _amp_warnings(torch, lambda lib: lib.cuda.amp.autocast())
    assert [c for c, _ in e_w] == [c for c, _ in t_w] == [FutureWarning, UserWarning]
    assert e_w[0] == t_w[0]
    assert "Disabling autocast" in e_w[1][1]
    assert isinstance(e_ctx, ember.amp.autocast) and e_ctx.fast_dtype is ember.float16
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with ember.cuda.amp.autocast():
            assert not ember.is_autocast_enabled("cuda")
            y = ember.ones(2, 2) @ ember.ones(2, 2)
    assert y.dtype is ember.float32


def test_cuda_amp_grad_scaler_warns_and_passes_losses_through_as_torch():
    e_s, e_w = _amp_warnings(ember, lambda lib: lib.cuda.amp.GradScaler())
    t_s, t_w = _amp_warnings(torch, lambda lib: lib.cuda.amp.GradScaler())
    assert e_w == t_w and [c for c, _ in e_w] == [FutureWarning, UserWarning]
    assert e_s.is_enabled() is t_s.is_enabled() is False
    e_only, e_w2 = _amp_warnings(ember, lambda lib: lib.cuda.amp.GradScaler(enabled=False))
    t_only, t_w2 = _amp_warnings(torch, lambda lib: lib.cuda.amp.GradScaler(enabled=False))
    assert e_w2 == t_w2 and len(e_w2) == 1
    w = ember.ones(2, requires_grad=True)
    opt = ember.optim.SGD([w], lr=0.5)
    loss = (w * w).sum()
    assert e_s.scale(loss) is loss
    loss.backward()
    e_s.step(opt)
    e_s.update()
    assert w.tolist() == [0.0, 0.0]


def test_cuda_amp_custom_fwd_and_bwd_warn_as_torch():
    for which in ("custom_fwd", "custom_bwd"):
        got = _outcome(lambda w=which: getattr(ember.cuda.amp, w)(lambda ctx, x: x))
        want = _outcome(lambda w=which: getattr(torch.cuda.amp, w)(lambda ctx, x: x))
        assert got[3] == want[3] and got[3][0][0] is FutureWarning
    got = _outcome(lambda: ember.cuda.amp.custom_fwd(cast_inputs=ember.float32))
    want = _outcome(lambda: torch.cuda.amp.custom_fwd(cast_inputs=torch.float32))
    assert got[3] == want[3] and callable(got[0])


# -- ember.backends.cuda ---------------------------------------------------------------------
@pytest.fixture
def restore_backend_flags():
    saved = {lib: (lib.backends.cuda.matmul.allow_tf32,
                   lib.backends.cuda.matmul.fp32_precision,
                   lib.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
                   lib.backends.cuda.flash_sdp_enabled(),
                   lib.backends.cudnn.benchmark, lib.backends.cudnn.deterministic,
                   lib.backends.cudnn.enabled, lib.backends.cudnn.allow_tf32)
             for lib in (torch, ember)}
    yield
    for lib, (tf32, precision, fp16, flash, bench, det, enabled, ctf32) in saved.items():
        lib.backends.cuda.matmul.allow_tf32 = tf32
        lib.backends.cuda.matmul.fp32_precision = precision  # allow_tf32 = ... changed it
        lib.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = fp16
        lib.backends.cuda.enable_flash_sdp(flash)
        lib.backends.cudnn.benchmark, lib.backends.cudnn.deterministic = bench, det
        lib.backends.cudnn.enabled, lib.backends.cudnn.allow_tf32 = enabled, ctf32


MATMUL_FLAGS = ["allow_tf32", "allow_fp16_reduced_precision_reduction",
                "allow_bf16_reduced_precision_reduction", "fp32_precision"]


@pytest.mark.parametrize("flag", MATMUL_FLAGS)
def test_matmul_flags_default_as_torch(flag):
    assert getattr(ember.backends.cuda.matmul, flag) == getattr(torch.backends.cuda.matmul, flag)


def test_matmul_flags_set_and_check_types_as_torch(restore_backend_flags):
    for lib in (torch, ember):
        lib.backends.cuda.matmul.allow_tf32 = True
        assert lib.backends.cuda.matmul.allow_tf32 is True
        assert lib.backends.cuda.matmul.fp32_precision == "tf32"
        lib.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
        assert lib.backends.cuda.matmul.allow_fp16_reduced_precision_reduction is False
        with pytest.raises(RuntimeError, match="set_allow_tf32_cublas expects a bool, but got int"):
            lib.backends.cuda.matmul.allow_tf32 = 1
        lib.backends.cuda.matmul.allow_tf32 = False
        assert lib.backends.cuda.matmul.fp32_precision == "ieee"
        with pytest.raises(AttributeError, match="Unknown attribute foo"):
            lib.backends.cuda.matmul.foo  # noqa: B018
        with pytest.raises(AttributeError, match="Unknown attribute foo"):
            lib.backends.cuda.matmul.foo = True


def test_sdp_flags_and_deprecated_context_manager(restore_backend_flags):
    kinds = ("flash", "mem_efficient", "math", "cudnn")
    for lib in (torch, ember):
        bc = lib.backends.cuda
        assert [getattr(bc, f"{k}_sdp_enabled")() for k in kinds] == [True] * 4
        bc.enable_flash_sdp(False)
        assert bc.flash_sdp_enabled() is False
        bc.enable_flash_sdp(True)
        with pytest.raises(RuntimeError, match="expects a bool, but got int"):
            bc.enable_math_sdp(1)
        assert bc.fp16_bf16_reduction_math_sdp_allowed() is False
    got = _outcome(lambda: ember.backends.cuda.sdp_kernel(enable_flash=False))
    want = _outcome(lambda: torch.backends.cuda.sdp_kernel(enable_flash=False))
    assert got[3] == want[3] and got[3][0][0] is FutureWarning
    for lib in (torch, ember):
        bc = lib.backends.cuda
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with bc.sdp_kernel(enable_flash=False, enable_mem_efficient=False):
                inside = [bc.flash_sdp_enabled(), bc.mem_efficient_sdp_enabled(),
                          bc.math_sdp_enabled(), bc.cudnn_sdp_enabled()]
        assert inside == [False, False, True, True]
        assert bc.flash_sdp_enabled() and bc.mem_efficient_sdp_enabled()
    assert list(ember.backends.cuda.SDPBackend.__members__) == \
        list(torch.backends.cuda.SDPBackend.__members__)
    assert int(ember.backends.cuda.SDPBackend.MATH) == int(torch.backends.cuda.SDPBackend.MATH)


def test_backends_cuda_is_built_and_preferred_libraries():
    assert ember.backends.cuda.is_built() is torch.backends.cuda.is_built() is False
    assert ember.backends.cuda.preferred_linalg_library().name == \
        torch.backends.cuda.preferred_linalg_library().name
    assert ember.backends.cuda.preferred_blas_library().name == \
        torch.backends.cuda.preferred_blas_library().name


# -- ember.backends.cudnn / mps ---------------------------------------------------------------
def test_import_backends_cudnn_works():
    mod = importlib.import_module("ember.backends.cudnn")
    assert mod is ember.backends.cudnn


@pytest.mark.parametrize("flag", ["enabled", "benchmark", "deterministic", "allow_tf32",
                                  "benchmark_limit"])
def test_cudnn_flags_default_as_torch(flag):
    assert getattr(ember.backends.cudnn, flag) == getattr(torch.backends.cudnn, flag)


def test_cudnn_flags_set_and_check_types_as_torch(restore_backend_flags):
    for lib in (torch, ember):
        cd = lib.backends.cudnn
        cd.benchmark = True
        cd.deterministic = True
        assert cd.benchmark is True and cd.deterministic is True
        for flag, setter in (("enabled", "set_enabled_cudnn"),
                             ("benchmark", "set_benchmark_cudnn"),
                             ("deterministic", "set_deterministic_cudnn"),
                             ("allow_tf32", "set_allow_tf32_cublas")):
            with pytest.raises(RuntimeError, match=f"{setter} expects a bool, but got int"):
                setattr(cd, flag, 1)
        with pytest.raises(RuntimeError, match="expects a bool, but got NoneType"):
            cd.enabled = None
        with cd.flags(enabled=False, benchmark=False):
            assert (cd.enabled, cd.benchmark) == (False, False)
        assert (cd.enabled, cd.benchmark) == (True, True)


def test_cudnn_availability_as_torch():
    cd, tcd = ember.backends.cudnn, torch.backends.cudnn
    assert cd.is_available() is tcd.is_available() is False
    assert cd.version() is tcd.version() is None
    assert cd.is_acceptable(ember.zeros(1)) is tcd.is_acceptable(torch.zeros(1)) is False


def test_mps_namespaces_as_torch():
    for lib in (torch, ember):
        assert lib.backends.mps.is_available() is False
        assert lib.backends.mps.is_built() is False
        assert lib.mps.is_available() is False
        assert lib.mps.device_count() == 0
        assert lib.mps.manual_seed(0) is None
    for name, args in (("seed", ()), ("synchronize", ()), ("empty_cache", ()),
                       ("current_allocated_memory", ()), ("driver_allocated_memory", ()),
                       ("recommended_max_memory", ()), ("get_rng_state", ()),
                       ("set_per_process_memory_fraction", (0.5,))):
        got = _outcome(lambda n=name, a=args: getattr(ember.mps, n)(*a))
        want = _outcome(lambda n=name, a=args: getattr(torch.mps, n)(*a))
        assert got[1] is want[1] is RuntimeError and got[2] == want[2], name


# -- ember.accelerator -----------------------------------------------------------------------
def test_accelerator_answers_as_torch_without_one():
    for lib in (torch, ember):
        acc = lib.accelerator
        assert acc.is_available() is False and acc.device_count() == 0
        assert acc.current_accelerator() is None
        assert acc.current_accelerator(check_available=True) is None
        with acc.device_index(None):
            pass
    for name, args in (("current_device_index", ()), ("current_device_idx", ()),
                       ("set_device_index", (0,)), ("synchronize", ()),
                       ("current_stream", ()), ("empty_cache", ()), ("memory_allocated", ()),
                       ("max_memory_allocated", ()), ("memory_reserved", ()),
                       ("memory_stats", ()), ("reset_peak_memory_stats", ()),
                       ("get_memory_info", ())):
        got = _outcome(lambda n=name, a=args: getattr(ember.accelerator, n)(*a))
        want = _outcome(lambda n=name, a=args: getattr(torch.accelerator, n)(*a))
        assert got[1] is want[1] is RuntimeError and got[2] == want[2], name
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match=NO_ACCELERATOR):
            with lib.accelerator.device_index(0):
                pass


# -- tensors and modules on "cuda" -----------------------------------------------------------
TENSOR_CALLS = {
    "x.cuda()": lambda lib, x: x.cuda(),
    "x.cuda(non_blocking=True)": lambda lib, x: x.cuda(non_blocking=True),
    "x.to('cuda')": lambda lib, x: x.to("cuda"),
    "x.to('cuda:1')": lambda lib, x: x.to("cuda:1"),
    "x.to(device='cuda')": lambda lib, x: x.to(device="cuda"),
    "x.to(device('cuda'))": lambda lib, x: x.to(lib.device("cuda")),
    "x.to('cuda', float64)": lambda lib, x: x.to("cuda", lib.float64),
    "zeros(device='cuda')": lambda lib, x: lib.zeros(2, device="cuda"),
    "ones(device='cuda:0')": lambda lib, x: lib.ones(2, device="cuda:0"),
    "tensor(device='cuda')": lambda lib, x: lib.tensor([1.0], device="cuda"),
    "randn(device='cuda')": lambda lib, x: lib.randn(2, device="cuda"),
    "empty(device='cuda')": lambda lib, x: lib.empty(2, device="cuda"),
    "arange(device='cuda')": lambda lib, x: lib.arange(2, device="cuda"),
    "full(device='cuda')": lambda lib, x: lib.full((2,), 1.0, device="cuda"),
    "zeros_like(device='cuda')": lambda lib, x: lib.zeros_like(x, device="cuda"),
    "new_zeros(device='cuda')": lambda lib, x: x.new_zeros(2, device="cuda"),
    "requires_grad x.cuda()": lambda lib, x: x.detach().requires_grad_().cuda(),
    "strided x.cuda()": lambda lib, x: lib.ones(3, 4).t().cuda(),
    "Linear.cuda()": lambda lib, x: lib.nn.Linear(2, 2).cuda(),
    "Linear.to('cuda')": lambda lib, x: lib.nn.Linear(2, 2).to("cuda"),
}


@pytest.mark.parametrize("call", list(TENSOR_CALLS))
def test_tensors_on_cuda_raise_torchs_not_compiled_error(call):
    fn = TENSOR_CALLS[call]
    got = _outcome(lambda: fn(ember, ember.ones(2)))
    want = _outcome(lambda: fn(torch, torch.ones(2)))
    assert want[1] is AssertionError and got[1] is AssertionError, (got, want)
    assert re.search(NOT_COMPILED, got[2])


def test_pin_memory_and_is_pinned_as_torch():
    for lib in (torch, ember):
        x = lib.ones(2)
        assert x.is_pinned() is False and x.is_cuda is False
        with pytest.raises(RuntimeError, match=NO_ACCELERATOR):
            x.pin_memory()
        assert x.cpu() is x and lib.nn.Linear(1, 1).cpu() is not None


PIN_CALLS = {
    "zeros": lambda lib: lib.zeros(2, pin_memory=True),
    "empty": lambda lib: lib.empty(2, pin_memory=True),
    "ones": lambda lib: lib.ones(2, pin_memory=True),
    "full": lambda lib: lib.full((2,), 1.0, pin_memory=True),
    "tensor": lambda lib: lib.tensor([1.0], pin_memory=True),
    "arange": lambda lib: lib.arange(2, pin_memory=True),
    "randn": lambda lib: lib.randn(2, pin_memory=True),
    "zeros_like": lambda lib: lib.zeros_like(lib.ones(1), pin_memory=True),
    "full_like": lambda lib: lib.full_like(lib.ones(1), 2.0, pin_memory=True),
}


@pytest.mark.parametrize("call", list(PIN_CALLS))
def test_factories_with_pin_memory_need_an_accelerator_as_in_torch(call):
    got = _outcome(lambda: PIN_CALLS[call](ember))
    want = _outcome(lambda: PIN_CALLS[call](torch))
    assert got[1] is want[1] is RuntimeError and got[2] == want[2]
    assert ember.zeros(2, pin_memory=False).tolist() == [0.0, 0.0]


def test_cuda_with_an_index_fails_like_torch_without_an_accelerator():
    got = _outcome(lambda: ember.ones(2).cuda(0))
    want = _outcome(lambda: torch.ones(2).cuda(0))
    assert got[1] is want[1] is RuntimeError and got[2] == want[2]


def test_cuda_with_a_non_cuda_device_is_refused():
    with pytest.raises(RuntimeError, match="must be cuda device"):
        ember.ones(1).cuda("cpu")


# -- threads ---------------------------------------------------------------------------------
def _numpy_blas_threads() -> int:
    pools = [p for p in threadpoolctl.threadpool_info()
             if p["user_api"] == "blas" and "numpy" in p["filepath"]]
    if not pools:
        pytest.skip("NumPy's BLAS is not visible to threadpoolctl here")
    return pools[0]["num_threads"]


def test_set_num_threads_really_sets_the_blas_pool():
    before = ember.get_num_threads()
    assert before == _numpy_blas_threads()
    original = threadpoolctl.threadpool_limits(limits=None)  # every pool's count, to restore
    try:
        ember.set_num_threads(1)
        assert _numpy_blas_threads() == 1 and ember.get_num_threads() == 1
        a = ember.randn(64, 64)
        assert_close(a @ ember.eye(64), a)
    finally:
        original.restore_original_limits()
    assert _numpy_blas_threads() == before


@pytest.mark.parametrize("bad,msg", [(0, "expects a positive integer"),
                                     (-1, "expects a positive integer"),
                                     (1.5, "expects an int, but got float"),
                                     ("2", "expects an int, but got str"),
                                     (True, "expects an int, but got bool")])
def test_set_num_threads_refuses_as_torch(bad, msg):
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match=f"set_num_threads {msg}"):
            lib.set_num_threads(bad)


def test_interop_threads_settable_once_as_torch(monkeypatch):
    from ember.backends import threads

    monkeypatch.setattr(threads, "_interop", [None])
    assert ember.get_num_interop_threads() >= 1
    with pytest.raises(RuntimeError, match="set_num_interop_threads expects a positive integer"):
        ember.set_num_interop_threads(0)
    ember.set_num_interop_threads(3)
    assert ember.get_num_interop_threads() == 3
    with pytest.raises(RuntimeError, match="cannot set number of interop threads"):
        ember.set_num_interop_threads(2)


# -- a script written for torch's device idiom -----------------------------------------------
SCRIPT = """
import warnings
import ember as torch
import ember.backends.cudnn
from ember.cuda.amp import GradScaler, autocast

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = True
torch.manual_seed(0)
torch.cuda.manual_seed_all(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
model = model.to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    scaler = GradScaler()
x = torch.randn(16, 4, device=device)
y = x.sum(1, keepdim=True)
losses = []
for _ in range(20):
    opt.zero_grad()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with autocast():
            loss = torch.nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    losses.append(loss.item())
if torch.cuda.is_available():
    torch.cuda.synchronize()
print(device, torch.cuda.memory_allocated(), losses[-1] < losses[0])
"""


def test_a_torch_device_idiom_script_runs_with_import_ember_as_torch():
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(SCRIPT)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["cpu", "0", "True"]


# -- a CUDA backend registered later fills the same names in ----------------------------------
FAKE_CUDA = """
import numpy as np
import ember
from ember.memory.allocator import CpuBackend
from ember.memory.devices import DeviceBackend, register_backend

register_backend(DeviceBackend(
    "cuda", "CUDA", np, CpuBackend(), kernels_from="cpu",
    extra={"device_count": lambda: 1, "current_device": lambda: 0,
           "get_device_name": lambda i: "fake cuda", "manual_seed_all": lambda s: None}))
print(ember.cuda.is_available(), ember.cuda.device_count(), ember.cuda.get_device_name(),
      ember.backends.cuda.is_built(), ember.accelerator.current_accelerator(),
      ember.accelerator.device_count())
x = ember.ones(2, 3).cuda()
print(x.device, x.is_cuda, (x * 2).sum().item(), x.cuda() is x,
      ember.cuda.memory_allocated() > 0, ember.cuda.memory_allocated() == ember.accelerator.memory_allocated())
ember.cuda.synchronize()
pinned = ember.arange(3.0).pin_memory()
print(pinned.tolist(), ember.ones(1, pin_memory=True).device, ember.ones(1).cuda(0).device)
print(ember.amp.GradScaler("cuda").is_enabled())
"""


def test_a_registered_cuda_backend_is_what_the_namespaces_report():
    code = textwrap.dedent(FAKE_CUDA) + textwrap.dedent(SCRIPT).replace(
        "import ember as torch", "torch = ember")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["True", "1", "fake", "cuda", "True", "cuda", "1"]
    assert lines[1].split() == ["cuda", "True", "12.0", "True", "True", "True"]
    assert lines[2].startswith("[0.0, 1.0, 2.0] cpu cuda")
    assert lines[3] == "True"  # GradScaler("cuda") is on once CUDA exists
    device, allocated, improved = lines[4].split()
    assert device == "cuda" and int(allocated) > 0 and improved == "True"
