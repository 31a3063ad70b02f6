"""Tensor API behaviour the op table cannot express, against torch: storage writes, sharing,
autograd of in-place views, refusals of resize_/set_/type, sgn's zero gradient."""

from __future__ import annotations

import os
import warnings

import pytest
import torch

import ember


def test_type_names_match_torch_for_every_dtype():
    for name in ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32",
                 "int64", "uint8", "bool"):
        e = ember.zeros(2, dtype=getattr(ember, name))
        t = torch.zeros(2, dtype=getattr(torch, name))
        assert e.type() == t.type()
    assert ember.zeros(2, device="meta").type() == torch.zeros(2, device="meta").type()


def test_type_same_dtype_returns_self_and_cuda_name_refused():
    x = ember.zeros(2)
    assert x.type(ember.float32) is x and x.type("torch.FloatTensor") is x
    with pytest.raises(RuntimeError, match="CUDA"):
        x.type("torch.cuda.FloatTensor")
    with pytest.raises(RuntimeError):
        torch.zeros(2).type("torch.cuda.FloatTensor")


def test_storage_writes_show_in_the_tensor_and_views():
    x = ember.arange(6.0)
    v = x[2:].view(2, 2)
    s = v.storage()
    assert s.data_ptr() == x.data_ptr() and len(s) == 6 and s.dtype is ember.float32
    s[3] = 42.0
    assert x[3].item() == 42.0 and v[0, 1].item() == 42.0
    s.fill_(1.0)
    assert x.tolist() == [1.0] * 6
    assert s.type() == torch.arange(6.0).storage().type()
    with pytest.raises(IndexError):
        s[6]


def test_share_memory_marks_the_storage_for_every_view():
    x = ember.zeros(4)
    v = x[1:]
    assert not x.is_shared() and not v.is_shared()
    assert x.share_memory_() is x
    assert x.is_shared() and v.is_shared() and v.storage().is_shared()
    t = torch.zeros(4)
    assert not t.is_shared() and t.share_memory_().is_shared()


def test_share_memory_moves_the_bytes_into_memory_a_forked_child_writes():
    x = ember.arange(8.0).reshape(2, 4)
    v = x.t()[1:]  # a non-contiguous view, its array cached before the move
    before = v.tolist()
    grad_owner = ember.ones(3, requires_grad=True)
    (grad_owner * 2).sum().backward()
    old_ptr = x.untyped_storage().data_ptr()
    x.share_memory_()
    assert x.untyped_storage().data_ptr() != old_ptr and v.tolist() == before
    assert x.share_memory_().untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    grad_owner.grad.share_memory_()  # a gradient as DDP shares it
    pid = os.fork()
    if pid == 0:  # the child writes through a view and leaves at once
        v[0, 0] = -1.0
        grad_owner.grad.mul_(5)
        os._exit(0)
    assert os.waitpid(pid, 0)[1] == 0
    assert x[0, 1].item() == -1.0 and v[0, 0].item() == -1.0
    assert grad_owner.grad.tolist() == [10.0, 10.0, 10.0]
    x.add_(1)  # the parent's own writes still reach every view
    assert v[0, 0].item() == 0.0


@pytest.mark.parametrize("op,args", [("squeeze_", ()), ("unsqueeze_", (0,)), ("t_", ()),
                                     ("transpose_", (0, 1)), ("swapdims_", (1, 0))])
def test_inplace_view_refuses_a_leaf_and_records_on_a_result(op, args):
    for lib in (ember, torch):
        x = lib.ones(3, 1, requires_grad=True)
        with pytest.raises(RuntimeError, match="leaf Variable"):
            getattr(x, op)(*args)
        with lib.no_grad():
            getattr(lib.ones(3, 1, requires_grad=True), op)(*args)  # allowed without grad
    e_x = ember.tensor([[1.0], [2.0], [3.0]], requires_grad=True)
    t_x = torch.tensor([[1.0], [2.0], [3.0]], requires_grad=True)
    e_y, t_y = e_x * 2, t_x * 2
    v0 = e_y._version
    getattr(e_y, op)(*args)
    getattr(t_y, op)(*args)
    assert tuple(e_y.shape) == tuple(t_y.shape) and e_y._version == v0 + 1
    g = torch.randn(t_y.shape)
    (e_y * ember.tensor(g.numpy())).sum().backward()
    (t_y * g).sum().backward()
    assert e_x.grad.reshape(-1).tolist() == pytest.approx(t_x.grad.reshape(-1).tolist())


def test_resize_refusals_and_growth():
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            lib.zeros(3, requires_grad=True).resize_(2)
    x = ember.arange(4.0)
    v0 = x._version
    x.resize_(3, 3)
    assert x.shape == (3, 3) and x.stride() == (3, 1) and x._version == v0 + 1
    assert x.reshape(-1)[:4].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert ember.zeros(5).resize_as_(ember.zeros(2, 2)).shape == (2, 2)


def test_set_from_storage_typed_and_untyped():
    base = ember.arange(6.0)
    for src in (base.untyped_storage(), base.storage()):
        x = ember.zeros(1)
        x.set_(src, 2, (2, 2), (1, 2))
        assert x.tolist() == [[2.0, 4.0], [3.0, 5.0]]
        assert x.data_ptr() == base.data_ptr() + 8
    x = ember.zeros(1)
    assert x.set_(base.storage()).tolist() == base.tolist()
    with pytest.raises(RuntimeError, match="out of bounds"):
        ember.zeros(1).set_(base.untyped_storage(), 4, (3,))
    assert ember.zeros(3).set_().shape == (0,)
    assert ember.is_storage(base.storage()) and not ember.is_storage(base)


def test_sgn_has_zero_gradient_like_torch():
    x = ember.tensor([-2.0, 0.0, 3.0], requires_grad=True)
    ember.sgn(x).sum().backward()
    t = torch.tensor([-2.0, 0.0, 3.0], requires_grad=True)
    torch.sgn(t).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0] and t.grad._is_zerotensor()


def test_heaviside_backward_refuses_like_torch():
    for lib in (ember, torch):
        x = lib.tensor([1.0, 0.0], requires_grad=True)
        out = lib.heaviside(x, lib.tensor([0.5, 0.5]))
        assert out.requires_grad
        with pytest.raises(RuntimeError, match="heaviside"):
            out.sum().backward()


def test_i0_double_backward_matches_torch():
    e = ember.tensor([0.3, -1.2, 2.5], dtype=ember.float64, requires_grad=True)
    t = torch.tensor([0.3, -1.2, 2.5], dtype=torch.float64, requires_grad=True)
    (eg,) = ember.autograd.grad(ember.i0(e).sum(), e, create_graph=True)
    (tg,) = torch.autograd.grad(torch.i0(t).sum(), t, create_graph=True)
    (egg,) = ember.autograd.grad(eg.sum(), e)
    (tgg,) = torch.autograd.grad(tg.sum(), t)
    assert eg.tolist() == pytest.approx(tg.tolist(), rel=1e-12)
    assert egg.tolist() == pytest.approx(tgg.tolist(), rel=1e-12)


def test_as_strided_scatter_gradient_is_the_derivative():
    x = ember.randn(4, 5, dtype=ember.float64, requires_grad=True)
    s = ember.randn(2, 2, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(
        lambda a, b: ember.as_strided_scatter(a, b, (2, 2), (1, 2)), (x, s))
    g = ember.randn(4, 5, dtype=ember.float64)
    gx, gs = ember.autograd.grad(ember.as_strided_scatter(x, s, (2, 2), (1, 2)), (x, s), g)
    written = [0, 1, 2, 3]
    assert gx.reshape(-1)[written].tolist() == [0.0] * 4
    assert gx.reshape(-1)[4:].tolist() == g.reshape(-1)[4:].tolist()
    assert gs.tolist() == [[g[0, 0].item(), g[0, 2].item()], [g[0, 1].item(), g[0, 3].item()]]


def test_global_switches_round_trip_like_torch():
    saved = (torch.get_deterministic_debug_mode(), torch.get_float32_matmul_precision(),
             torch.is_warn_always_enabled(), torch.backends.cuda.matmul.fp32_precision)
    try:
        for lib in (ember, torch):
            lib.set_deterministic_debug_mode("warn")
            assert lib.get_deterministic_debug_mode() == 1
            assert lib.are_deterministic_algorithms_enabled()
            assert lib.is_deterministic_algorithms_warn_only_enabled()
            lib.use_deterministic_algorithms(False)
            assert lib.get_deterministic_debug_mode() == 0
            with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
                lib.set_deterministic_debug_mode("bad")
            lib.set_float32_matmul_precision("high")
            assert lib.get_float32_matmul_precision() == "high"
            with pytest.warns(UserWarning, match="has no effect"):
                lib.set_float32_matmul_precision("bad")
            assert lib.get_float32_matmul_precision() == "high"
            lib.set_warn_always(True)
            assert lib.is_warn_always_enabled()
            lib.set_warn_always(False)
            lib.set_float32_matmul_precision("highest")
    finally:
        torch.set_deterministic_debug_mode(saved[0])
        torch.set_float32_matmul_precision(saved[1])
        torch.set_warn_always(saved[2])
        # torch's set_float32_matmul_precision also sets the cuBLAS switch ('highest': 'ieee'),
        # which tests/unit/test_device_namespaces.py compares with ember's default
        torch.backends.cuda.matmul.fp32_precision = saved[3]
    assert not ember.is_anomaly_enabled()
    ember.set_anomaly_enabled(True)
    assert ember.is_anomaly_enabled() and ember.is_anomaly_check_nan_enabled()
    ember.set_anomaly_enabled(False)
    assert not ember.is_anomaly_enabled()


@pytest.mark.parametrize("args", [(1, 2, 0.5), (0, 3), (-1.0, 1.0, 0.3), (3, 0, -1)])
def test_range_includes_the_end_like_torch(args):
    with pytest.warns(UserWarning, match="deprecated"):
        e = ember.range(*args)
    with pytest.warns(UserWarning):
        t = torch.range(*args)
    assert e.tolist() == pytest.approx(t.tolist()) and str(e.dtype)[6:] == str(t.dtype)[6:]


def test_top_level_inplace_forms_match_torch():
    for name, args in (("fill_", (2.5,)), ("zero_", ()), ("detach_", ())):
        e, t = ember.ones(2, 3), torch.ones(2, 3)
        assert getattr(ember, name)(e, *args) is e and getattr(torch, name)(t, *args) is t
        assert e.tolist() == t.tolist()
    assert ember.fill(ember.ones(2), 4.0).tolist() == torch.fill(torch.ones(2), 4.0).tolist()
    e, t = ember.ones(2), torch.ones(2)
    ember.addmv_(e, ember.ones(2, 3), ember.arange(3.0), beta=2, alpha=0.5)
    torch.addmv_(t, torch.ones(2, 3), torch.arange(3.0), beta=2, alpha=0.5)
    assert e.tolist() == t.tolist()


@pytest.mark.parametrize("name", ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor",
                                  "ByteTensor", "CharTensor", "ShortTensor", "IntTensor",
                                  "LongTensor", "BoolTensor"])
def test_legacy_tensor_classes_construct_and_check_like_torch(name):
    e_cls, t_cls = getattr(ember, name), getattr(torch, name)
    for args in ((2, 3), ([1, 0, 1],), ()):
        e, t = e_cls(*args), t_cls(*args)
        assert tuple(e.shape) == tuple(t.shape) and e.type() == t.type() == f"torch.{name}"
        if args and isinstance(args[0], list):
            assert e.tolist() == t.tolist()
    for d in ("float32", "int64", "bool"):
        assert isinstance(ember.zeros(2, dtype=getattr(ember, d)), e_cls) == \
            isinstance(torch.zeros(2, dtype=getattr(torch, d)), t_cls)
    assert ember.zeros(2).type(e_cls).type() == torch.zeros(2).type(t_cls).type()
    same = ember.zeros(2, dtype=e_cls.dtype)
    assert e_cls(same) is same


def test_set_default_tensor_type_like_torch():
    with pytest.warns(UserWarning, match="deprecated"):
        ember.set_default_tensor_type(ember.FloatTensor)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns only once per process
            for lib in (ember, torch):
                lib.set_default_tensor_type(lib.DoubleTensor)
                assert lib.get_default_dtype() == lib.float64
                assert lib.zeros(1).type() == "torch.DoubleTensor"
                lib.set_default_tensor_type("torch.FloatTensor")
                assert lib.get_default_dtype() == lib.float32
                with pytest.raises(TypeError):
                    lib.set_default_tensor_type(lib.LongTensor)
    finally:
        torch.set_default_dtype(torch.float32)
        ember.set_default_dtype(ember.float32)


@pytest.mark.parametrize("name", ["FloatStorage", "DoubleStorage", "LongStorage", "BoolStorage",
                                  "ByteStorage", "HalfStorage", "BFloat16Storage"])
def test_legacy_storage_classes_like_torch(name):
    e_cls, t_cls = getattr(ember, name), getattr(torch, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's TypedStorage deprecation warning
        for args in ((3,), ([1, 0, 1],), ()):
            e, t = e_cls(*args), t_cls(*args)
            assert len(e) == len(t) and e.dtype.name == str(t.dtype)[6:]
            if args and isinstance(args[0], list):
                assert e.tolist() == t.tolist()
        for d in ("float32", "int64"):
            assert isinstance(ember.zeros(2, dtype=getattr(ember, d)).storage(), e_cls) == \
                isinstance(torch.zeros(2, dtype=getattr(torch, d)).storage(), t_cls)


def test_variable_is_a_tensor_like_torch():
    from torch.autograd import Variable as TV

    from ember.autograd import Variable as EV
    for lib, var in ((ember, EV), (torch, TV)):
        t = lib.ones(2)
        v = var(t, requires_grad=True)
        assert v is not t and v.requires_grad and v.is_leaf and isinstance(t, var)
        assert v.data_ptr() == t.data_ptr() and not var(t).requires_grad
        assert tuple(var().shape) == (0,)
        with pytest.raises(TypeError, match="Variable data has to be a tensor"):
            var([1.0])


def test_memory_formats_and_layout_like_torch():
    e, t = ember.zeros(2, 3, 4).permute(2, 0, 1), torch.zeros(2, 3, 4).permute(2, 0, 1)
    for name in ("preserve_format", "contiguous_format"):
        assert e.clone(memory_format=getattr(ember, name)).stride() == \
            t.clone(memory_format=getattr(torch, name)).stride()
    assert e.layout is ember.strided and t.layout is torch.strided
    for name in ("channels_last", "channels_last_3d", "contiguous_format", "preserve_format"):
        assert repr(getattr(ember, name)) == repr(getattr(torch, name)).replace("torch", "ember")
        assert isinstance(getattr(ember, name), ember.memory_format)
    assert ember.legacy_contiguous_format is ember.contiguous_format
    y = ember.zeros(1, 2, 3, 3).contiguous(memory_format=ember.channels_last)
    assert y.shape == (1, 2, 3, 3)  # accepted; ember keeps row-major strides


def test_deprecated_autocast_spellings_storage_type_dlpack_map2():
    with pytest.warns(DeprecationWarning):
        assert ember.is_autocast_cpu_enabled() is False
    with pytest.warns(DeprecationWarning):
        assert ember.get_autocast_cpu_dtype() is ember.bfloat16
    assert ember.zeros(2).storage_type() is ember.FloatStorage
    assert ember.zeros(2, dtype=ember.int64).storage_type() is ember.LongStorage
    x = ember.arange(3.0)
    assert ember.from_dlpack(ember.to_dlpack(x)).data_ptr() == x.data_ptr()
    for lib in (ember, torch):
        y = lib.zeros(3)
        y.map2_(lib.ones(3), lib.arange(3.0), lambda a, b, c: a + b * c)
        assert y.tolist() == [0.0, 1.0, 2.0]


def test_deprecated_non_inplace_resize_like_torch():
    for lib in (ember, torch):
        x = lib.arange(6.0)
        with pytest.warns(UserWarning, match="non-inplace resize"):
            y = x.resize(2, 3)
        assert tuple(y.shape) == (2, 3) and y.reshape(-1).tolist() == x.tolist()
        with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="preserving the number"):
            x.resize(4)
        with pytest.warns(UserWarning):
            assert tuple(x.resize_as(lib.zeros(3, 2)).shape) == (3, 2)


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool", "uint8", "float64", "float16"])
def test_casts_and_copies_into_non_float_tensors_do_not_require_grad_like_torch(dtype):
    for lib in (ember, torch):
        x = lib.ones(3, requires_grad=True)
        y = x.to(getattr(lib, dtype))
        out = lib.zeros(3, dtype=getattr(lib, dtype))
        out.copy_(x)
        want = dtype.startswith("float")
        assert y.requires_grad is want and (y.grad_fn is not None) is want, lib.__name__
        assert out.requires_grad is want, lib.__name__
