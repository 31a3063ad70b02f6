"""ember.library end to end: defining operators, kernels per key, fakes, fallbacks, cleanup."""

from __future__ import annotations

import pytest

import ember
import ember.library as library
from ember.dispatch import DispatchKey, get_op
from ember.dispatch.dispatcher import _FALLBACKS
from ember.errors import DispatchError
from ember.library import Library, fallthrough_kernel, register_fake
from tests.dispatch import fresh_lib, unary

K = DispatchKey


def _scale_lib(lib: Library):
    """``<ns>::scale(Tensor x, float factor) -> Tensor`` with CPU and fake (Meta) kernels."""
    lib.define("scale(Tensor x, float factor) -> Tensor")
    lib.impl("scale", lambda x, factor: x * factor, "CPU")

    @register_fake(f"{lib.ns}::scale", lib=lib)
    def _(x, factor):
        return x.new_empty(x.shape)

    return getattr(ember.ops, lib.ns).scale


def test_user_op_end_to_end_cpu_and_meta():
    with fresh_lib() as lib:
        scale = _scale_lib(lib)
        out = scale(ember.tensor([1.0, 2.0]), 3.0)
        assert out.tolist() == [3.0, 6.0]
        assert scale.default(ember.ones(1), 2.0).tolist() == [2.0]
        assert scale.overloads() == ["default"]
        m = scale(ember.empty(4, 5, device="meta"), 2.0)
        assert m.device.type == "meta" and m.shape == (4, 5) and m.dtype == ember.float32
        assert get_op(f"{lib.ns}::scale") is scale.default


def test_user_op_keywords_and_overloads():
    with fresh_lib() as lib:
        lib.define("shift(Tensor x, *, float by=1.0) -> Tensor")
        lib.define("shift.twice(Tensor x, *, float by=1.0) -> Tensor")
        lib.impl("shift", lambda x, by=1.0: x + by, "CPU")
        lib.impl("shift.twice", lambda x, by=1.0: x + 2 * by, "CPU")
        ns = getattr(ember.ops, lib.ns)
        x = ember.zeros(2)
        assert ns.shift(x).tolist() == [1.0, 1.0]
        assert ns.shift(x, by=5.0).tolist() == [5.0, 5.0]
        assert ns.shift.twice(x, by=5.0).tolist() == [10.0, 10.0]
        assert ns.shift.overloads() == ["default", "twice"]


def test_empty_dispatch_key_is_composite_implicit():
    with fresh_lib() as lib:
        op = unary(lib)
        lib.impl("op", lambda x: x.t())
        assert op.resolve(K.CPU)[1] == "math kernel"
        assert op(ember.ones(2, 3)).shape == (3, 2)
        assert op(ember.ones(2, 3, device="meta")).shape == (3, 2)


def test_library_dispatch_key_default():
    with fresh_lib() as lib:
        op = unary(lib)
        impl_lib = Library(lib.ns, "IMPL", "Meta")
        try:
            impl_lib.impl("op", lambda x: "meta")
            assert op.resolve(K.Meta)[1] == "kernel"
            assert op(ember.ones(1, device="meta")) == "meta"
        finally:
            impl_lib._destroy()
        assert op.resolve(K.Meta)[1] == "missing"


def test_module_level_define_and_impl_decorator():
    with fresh_lib("FRAGMENT") as lib:
        op = library.define(f"{lib.ns}::cube", "(Tensor x) -> Tensor", lib=lib)
        op2 = library.define(f"{lib.ns}::cube2(Tensor x) -> Tensor", lib=lib)
        assert op.qualname == f"{lib.ns}::cube" and op2.qualname == f"{lib.ns}::cube2"

        @library.impl(f"{lib.ns}::cube", ["cpu", "meta"], lib=lib)
        def cube(x):
            return x * x * x

        assert cube.__name__ == "cube"  # the decorator returns the function
        assert op(ember.full((2,), 2.0)).tolist() == [8.0, 8.0]
        assert op(ember.ones(3, device="meta")).device.type == "meta"
        library.impl(op2, "default", lambda x: x * 0, lib=lib)  # CompositeExplicitAutograd
        assert op2.resolve(K.CPU)[1] == "default backend kernel"


def test_redefining_an_existing_op_raises():
    with fresh_lib() as lib:
        unary(lib)
        with pytest.raises(RuntimeError, match="same name and overload name"):
            lib.define("op(Tensor x) -> Tensor")
        frag = Library(lib.ns, "FRAGMENT")
        try:
            with pytest.raises(RuntimeError, match="same name and overload name"):
                frag.define("op(Tensor y) -> Tensor")
            assert frag.define("op.other(Tensor y) -> Tensor") == "op"  # a new overload is fine
        finally:
            frag._destroy()
    aten = Library("aten", "FRAGMENT")
    try:
        with pytest.raises(RuntimeError, match="same name and overload name"):
            aten.define("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
    finally:
        aten._destroy()
    assert (ember.ones(1) + 1).tolist() == [2.0]


def test_library_kinds():
    with pytest.raises(ValueError, match="Unsupported kind"):
        Library("whatever", "BAD")
    with pytest.raises(RuntimeError, match="Only a single 'DEF' Library"):
        Library("aten", "DEF")
    with fresh_lib() as lib:
        with pytest.raises(RuntimeError, match="Only a single 'DEF' Library"):
            Library(lib.ns, "DEF")
        impl_lib = Library(lib.ns, "IMPL")
        with pytest.raises(RuntimeError, match="Cannot define an operator inside of an IMPL"):
            impl_lib.define("nope(Tensor x) -> Tensor")
        with pytest.raises(RuntimeError, match="not defined"):
            impl_lib.impl("missing_op", lambda x: x, "CPU")
        with pytest.raises(RuntimeError, match="namespace"):
            lib.define("other_ns::f(Tensor x) -> Tensor")
        impl_lib._destroy()
    # the namespace is free again once its DEF library is destroyed
    again = Library(lib.ns, "DEF")
    again._destroy()


def test_destroy_removes_ops_and_kernels():
    with fresh_lib() as lib:
        ns = lib.ns
        op = unary(lib)
        lib.impl("op", lambda x: x, "CPU")
        assert getattr(ember.ops, ns).op(ember.ones(1)).tolist() == [1.0]
    with pytest.raises(AttributeError):
        getattr(ember.ops, ns).op  # noqa: B018
    with pytest.raises(KeyError):
        get_op(f"{ns}::op")
    assert op.resolve(K.CPU)[1] == "missing"
    lib._destroy()  # idempotent
    with pytest.raises(RuntimeError, match="destroyed"):
        lib.define("again(Tensor x) -> Tensor")


def test_destroy_in_any_order_restores_the_right_kernel():
    with fresh_lib() as lib:
        op = unary(lib)
        a, b = Library(lib.ns, "IMPL"), Library(lib.ns, "IMPL")
        a.impl("op", lambda x: "a", "CPU")
        b.impl("op", lambda x: "b", "CPU")
        x = ember.ones(1)
        assert op(x) == "b"
        a._destroy()
        assert op(x) == "b"
        b._destroy()
        with pytest.raises(DispatchError):
            op(x)


def test_impl_on_builtin_op_is_undone():
    add = get_op("add.Tensor")
    before = add._direct[K.CPU]
    aten = Library("aten", "IMPL")
    try:
        aten.impl("add.Tensor", lambda self, other, alpha=1: "patched", "CPU")
        assert ember.ones(1) + 1 == "patched"
    finally:
        aten._destroy()
    assert add._direct[K.CPU] is before
    assert (ember.ones(1) + 1).tolist() == [2.0]


def test_fallthrough_kernel_via_library():
    with fresh_lib() as lib:
        op = unary(lib)
        lib.impl("op", lambda x: "cpu", "CPU")
        lib.impl("op", lambda x: "autograd", "AutogradCPU")
        x = ember.ones(1, requires_grad=True)
        assert op(x) == "autograd"
        skip = Library(lib.ns, "IMPL")
        skip.impl("op", fallthrough_kernel, "AutogradCPU")
        assert op(x) == "cpu"
        skip._destroy()
        assert op(x) == "autograd"
    with pytest.raises(NotImplementedError):
        fallthrough_kernel()


def test_allow_override_false():
    with fresh_lib() as lib:
        unary(lib)
        lib.impl("op", lambda x: x, "CPU")
        with pytest.raises(RuntimeError, match="already has a kernel for CPU"):
            lib.impl("op", lambda x: x, "CPU", allow_override=False)


def test_fallback_registration_and_removal():
    seen = []

    def logging_fallback(op, ks, *args, **kwargs):
        seen.append(op.short_name)
        return op.lookup(ks)(*args, **kwargs)

    before = _FALLBACKS[K.AutogradCPU], _FALLBACKS[K.AutogradMeta]
    with fresh_lib() as lib:
        op = unary(lib)
        lib.impl("op", lambda x: x + 1, "CPU")
        lib.fallback(logging_fallback, "Autograd", with_keyset=True)
        assert op.resolve(K.AutogradMeta)[1] == "backend fallback"
        y = op(ember.ones(2, requires_grad=True))
        assert y.tolist() == [2.0, 2.0]
        assert seen[0] == "op.default"
    assert (_FALLBACKS[K.AutogradCPU], _FALLBACKS[K.AutogradMeta]) == before
    with pytest.raises(ValueError):
        Library("x", "IMPL").fallback(logging_fallback)


def test_register_fake_must_return_meta_tensors():
    with fresh_lib() as lib:
        op = unary(lib)

        @register_fake(op, lib=lib)
        def _(x):
            return ember.zeros(x.shape)  # a CPU tensor: not a fake

        with pytest.raises(RuntimeError, match="expected meta tensors"):
            op(ember.ones(2, device="meta"))


def test_register_fake_multiple_outputs():
    with fresh_lib() as lib:
        lib.define("split2(Tensor x) -> (Tensor, Tensor)")

        @register_fake(f"{lib.ns}::split2", lib=lib)
        def _(x):
            n = x.shape[0] // 2
            return x.new_empty((n,)), x.new_empty((x.shape[0] - n,))

        a, b = getattr(ember.ops, lib.ns).split2(ember.empty(5, device="meta"))
        assert (a.shape, b.shape) == ((2,), (3,))


def test_missing_backend_for_user_op():
    with fresh_lib() as lib:
        op = unary(lib)
        lib.impl("op", lambda x: x, "CPU")
        with pytest.raises(NotImplementedError,
                           match=rf"Could not run '{lib.ns}::op' with arguments from the "
                                 r"'Meta' backend"):
            op(ember.ones(1, device="meta"))


def test_user_op_tags():
    from ember.dispatch import Tag

    with fresh_lib() as lib:
        lib.define("pw(Tensor x) -> Tensor", tags=(Tag.pointwise, "nondeterministic"))
        op = getattr(ember.ops, lib.ns).pw.default
        assert op.tags == {Tag.pointwise, Tag.nondeterministic}
