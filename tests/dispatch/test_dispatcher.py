"""The dispatcher: key order and key sets, kernel selection, fallthrough, redispatch,
thread-local include/exclude, table caching, resolution precedence, BackendSelect."""

from __future__ import annotations

import itertools
import threading

import pytest
import torch

import ember
from ember.dispatch import FALLTHROUGH, DispatchKey, ExcludeKeys, IncludeKeys, redispatch
from ember.dispatch.dispatcher import _FALLBACKS, excluded_keys, included_keys
from ember.dispatch.keys import key_names, keyset
from ember.errors import DispatchError
from ember.library import fallthrough_kernel
from tests.dispatch import fresh_lib, unary

K = DispatchKey
CPU_BIT, META_BIT = 1 << K.CPU, 1 << K.Meta


def _tag(name):
    """A kernel that marks its result so a test can tell which kernel ran."""
    def kernel(x):
        out = ember.zeros_like(x)
        out._tag = name
        return out
    return kernel


def _torch_key_names(t: torch.Tensor) -> set[str]:
    text = str(torch._C._dispatch_keys(t))
    return {k.strip() for k in text[text.index("(") + 1:text.rindex(")")].split(",")}


# -- keys and key sets ------------------------------------------------------------------------
def test_key_order_matches_pytorch_pairwise():
    # torch's DispatchKeySet.highestPriorityTypeId is the oracle for every pair of our keys.
    dk, ks = torch._C.DispatchKey, torch._C.DispatchKeySet
    compared = 0
    # Batched (NOTE [Batched sits above autograd] in ember/func/_batched.py) is torch's
    # FuncTorchBatched by another name, and sits below Autocast where torch's sits above it.
    # ComplexHalf is ember's own (NOTE [The ComplexHalf key] in ember/backends/complex32.py).
    for a, b in itertools.combinations([k for k in K if k not in (K.Batched, K.ComplexHalf)],
                                       2):
        winner = (ks(getattr(dk, a.name)) | ks(getattr(dk, b.name))).highestPriorityTypeId()
        if winner.name not in (a.name, b.name):
            continue  # per-backend union (e.g. CUDA + AutogradCPU -> AutogradCUDA)
        assert max(a, b).name == winner.name, (a, b, winner)
        compared += 1
    assert compared >= 45


def test_key_order_chain():
    chain = [K.AutocastCPU, K.AutogradCPU, K.ADInplaceOrView, K.Python, K.BackendSelect,
             K.Meta, K.CUDA, K.CPU]
    assert chain == sorted(chain, reverse=True)
    assert K.AutocastCUDA > K.AutogradMeta > K.AutogradCUDA > K.AutogradCPU


def test_key_sets_are_ints():
    t = ember.ones(2)
    assert type(t._keys) is int
    assert type(keyset(K.CPU, K.Meta)) is int
    assert keyset(K.CPU, K.Meta) == CPU_BIT | META_BIT == K.CPU.bit | K.Meta.bit
    assert type(included_keys()) is int and type(excluded_keys()) is int


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_tensor_key_set(device):
    # NOTE [Autograd keys are earned]: a fresh tensor holds its backend key and ADInplaceOrView
    # (a subset of torch's set); the Autograd<Backend> key joins once it requires grad.
    t = ember.ones(2, device=device)
    backend, autograd = ("CPU", "AutogradCPU") if device == "cpu" else ("Meta", "AutogradMeta")
    assert key_names(t._keys) == ["ADInplaceOrView", backend]
    assert set(key_names(t._keys)) <= _torch_key_names(torch.ones(2, device=device))
    t.requires_grad_()
    assert key_names(t._keys) == [autograd, "ADInplaceOrView", backend]
    assert set(key_names(t._keys)) <= _torch_key_names(torch.ones(2, device=device))


def test_view_shares_key_set_with_base():
    base = ember.ones(4)
    view = base[1:]
    base.requires_grad_()
    assert view._keys & K.AutogradCPU.bit


def test_default_thread_local_sets():
    assert included_keys() & K.BackendSelect.bit
    assert excluded_keys() & K.AutocastCPU.bit and excluded_keys() & K.AutocastCUDA.bit
    assert not excluded_keys() & K.AutogradCPU.bit


# -- kernel selection -------------------------------------------------------------------------
def test_highest_key_wins_meta_over_cpu():
    with fresh_lib() as lib:
        lib.define("pair(Tensor a, Tensor b) -> Tensor")
        lib.impl("pair", lambda a, b: "cpu", "CPU")
        lib.impl("pair", lambda a, b: "meta", "Meta")
        op = getattr(ember.ops, lib.ns).pair
        c, m = ember.ones(2), ember.ones(2, device="meta")
        assert op(c, c) == "cpu"
        assert op(m, m) == "meta"
        assert op(c, m) == "meta" and op(m, c) == "meta"


def test_autograd_key_runs_before_backend():
    with fresh_lib() as lib:
        op = unary(lib)
        seen = []
        lib.impl("op", lambda x: seen.append("cpu") or x, "CPU")

        def autograd(op_, ks, x):
            seen.append("autograd")
            assert not ks & K.AutogradCPU.bit and ks & CPU_BIT
            return redispatch(op_, ks, x)

        lib.impl("op", autograd, "AutogradCPU", with_keyset=True)
        x = ember.ones(2, requires_grad=True)
        assert op(x) is x
        assert seen == ["autograd", "cpu"]


def test_with_keyset_kernel_redispatches_below_itself():
    with fresh_lib() as lib:
        op = unary(lib)
        lib.impl("op", lambda x: x * 10, "CPU")
        got = {}

        def above(op_, ks, x):
            got["ks"] = ks
            return redispatch(op_, ks, x) + 1

        lib.impl("op", above, "ADInplaceOrView", with_keyset=True)
        out = op(ember.full((2,), 2.0))
        assert out.tolist() == [21.0, 21.0]
        # the key set handed down holds only keys strictly below ADInplaceOrView
        assert got["ks"] < K.ADInplaceOrView.bit and got["ks"] & CPU_BIT


def test_fallthrough_registration_skips_key():
    with fresh_lib() as lib:
        op = unary(lib)
        seen = []
        lib.impl("op", lambda x: seen.append("cpu") or x, "CPU")
        lib.impl("op", lambda x: seen.append("autograd") or x, "AutogradCPU")
        x = ember.ones(1, requires_grad=True)
        op(x)
        assert seen == ["autograd"]  # a plain kernel that does not redispatch ends the call
        seen.clear()
        lib.impl("op", fallthrough_kernel, "AutogradCPU")
        assert op._direct[K.AutogradCPU] is FALLTHROUGH
        op(x)
        assert seen == ["cpu"]


# -- thread-local include / exclude -----------------------------------------------------------
def _recording_op(lib):
    op = unary(lib)
    seen = []
    lib.impl("op", lambda x: seen.append("cpu") or "cpu", "CPU")
    lib.impl("op", lambda x: seen.append("meta") or "meta", "Meta")
    lib.impl("op", lambda x: seen.append("autograd") or "autograd", "AutogradCPU")
    return op, seen


def test_exclude_keys_skips_autograd_and_restores():
    with fresh_lib() as lib:
        op, _ = _recording_op(lib)
        x = ember.ones(1, requires_grad=True)
        assert op(x) == "autograd"
        with ExcludeKeys(K.AutogradCPU.bit):
            assert excluded_keys() & K.AutogradCPU.bit
            assert op(x) == "cpu"
        assert op(x) == "autograd"


def test_include_keys_adds_a_key():
    with fresh_lib() as lib:
        op, _ = _recording_op(lib)
        x = ember.ones(1, requires_grad=True)
        with ExcludeKeys(K.AutogradCPU.bit), IncludeKeys(META_BIT):
            assert included_keys() & META_BIT
            assert op(x) == "meta"  # Meta > CPU
        assert not included_keys() & META_BIT


def test_include_exclude_are_thread_local():
    with fresh_lib() as lib:
        op, _ = _recording_op(lib)
        x = ember.ones(1, requires_grad=True)
        other = {}

        def worker():
            other["excluded"] = excluded_keys()
            other["included"] = included_keys()
            other["result"] = op(x)

        with ExcludeKeys(K.AutogradCPU.bit), IncludeKeys(META_BIT):
            assert op(x) == "meta"
            t = threading.Thread(target=worker)
            t.start()
            t.join()
        assert not other["excluded"] & K.AutogradCPU.bit
        assert not other["included"] & META_BIT
        assert other["result"] == "autograd"


# -- the table cache --------------------------------------------------------------------------
def test_table_cache_invalidated_on_reregistration():
    with fresh_lib() as lib:
        op = unary(lib)
        lib.impl("op", lambda x: "first", "CPU")
        x = ember.ones(1)
        assert op(x) == "first"
        ks = (x._keys | included_keys()) & ~excluded_keys()
        assert ks in op._cache
        lib.impl("op", lambda x: "second", "CPU")
        assert ks not in op._cache
        assert op(x) == "second"


def test_table_cache_invalidated_by_fallback_registration():
    with fresh_lib() as lib:
        op = unary(lib)
        lib.impl("op", lambda x: "cpu", "CPU")
        x = ember.ones(1, requires_grad=True)
        assert op(x) == "cpu"
        lib.fallback(lambda op_, ks, *a, **k: "fallback", "AutogradCPU", with_keyset=True)
        assert op(x) == "fallback"
    assert ember.ones(2).add(1).tolist() == [2.0, 2.0]  # fallback gone again


# -- kernel resolution precedence ---------------------------------------------------------------
def test_resolution_precedence_backend_key():
    with fresh_lib() as lib:
        op = unary(lib)
        assert op.resolve(K.CPU) == (None, "missing")
        lib.fallback(lambda x: "fb", "CPU")
        assert op.resolve(K.CPU)[1] == "backend fallback"
        lib.impl("op", lambda x: "cia")  # empty key: CompositeImplicitAutograd, like torch
        assert op.resolve(K.CPU)[1] == "math kernel"
        lib.impl("op", lambda x: "cea", "CompositeExplicitAutograd")
        assert op.resolve(K.CPU)[1] == "default backend kernel"
        lib.impl("op", lambda x: "direct", "CPU")
        assert op.resolve(K.CPU)[1] == "kernel"
        with ExcludeKeys(K.AutogradCPU.bit):
            assert op(ember.ones(1)) == "direct"
    assert K.CPU not in _FALLBACKS  # destroying the library removed the fallback


def test_resolution_precedence_autograd_key():
    with fresh_lib() as lib:
        op = unary(lib)
        kernel, why = op.resolve(K.AutogradCPU)  # the dispatcher-wide autograd fallback
        assert kernel is _FALLBACKS[K.AutogradCPU]
        assert why in ("fallthrough", "backend fallback")
        lib.impl("op", lambda x: "autograd", "Autograd")
        assert op.resolve(K.AutogradCPU)[1] == "autograd kernel"
        assert op.resolve(K.AutogradMeta)[1] == "autograd kernel"
        lib.impl("op", lambda x: "math")
        # math kernel beats the Autograd alias only while the op has no backend kernel
        assert op.resolve(K.AutogradCPU)[1] == "math kernel"
        lib.impl("op", lambda x: "cpu", "CPU")
        assert op.resolve(K.AutogradCPU)[1] == "autograd kernel"
        lib.impl("op", lambda x: "direct", "AutogradCPU")
        assert op.resolve(K.AutogradCPU)[1] == "kernel"
        assert op.resolve(K.AutogradMeta)[1] == "autograd kernel"


def test_composite_runs_on_every_backend():
    with fresh_lib() as lib:
        op = unary(lib)
        lib.impl("op", lambda x: x * 2 + 1)
        assert op(ember.ones(2)).tolist() == [3.0, 3.0]
        m = op(ember.ones(2, 3, device="meta"))
        assert m.device.type == "meta" and m.shape == (2, 3)


def test_missing_kernel_error():
    with fresh_lib() as lib:
        op = unary(lib)
        lib.impl("op", lambda x: x, "Meta")
        with pytest.raises(DispatchError) as info:
            op(ember.ones(1))
        assert isinstance(info.value, NotImplementedError)
        qual = f"{lib.ns}::op"
        assert f"Could not run '{qual}' with arguments from the 'CPU' backend" in \
            str(info.value)
        assert "['Meta']" in str(info.value)
        assert op(ember.ones(1, device="meta")).device.type == "meta"


# -- BackendSelect ----------------------------------------------------------------------------
@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("factory", ["zeros", "ones", "empty"])
def test_backend_select_routes_factories_by_device(factory, device):
    t = getattr(ember, factory)(2, 3, device=device)
    assert t.device.type == device and t.shape == (2, 3)
    assert t._keys & (META_BIT if device == "meta" else CPU_BIT)


def test_factory_without_device_is_cpu():
    t = ember.zeros(2)
    assert t.device.type == "cpu" and t.tolist() == [0.0, 0.0]
