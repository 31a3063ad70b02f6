"""The device registry (NOTE [Backend descriptors] in ember/memory/devices.py)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.core.device import CPU, META
from ember.memory import devices
from ember.memory.allocator import ALLOCATORS, allocator_for
from ember.tensor import empty_tensor


def test_builtin_backends():
    cpu, meta = devices.get_backend("cpu"), devices.get_backend(META)
    assert (cpu.name, cpu.dispatch_key, cpu.autograd_key) == ("cpu", "CPU", "AutogradCPU")
    assert cpu.array_module is np and cpu.has_data and cpu.kernels == "ember.backends.cpu"
    assert meta.array_module is None and not meta.has_data
    # the allocators carve their segments from the descriptors' raw memory providers
    assert ALLOCATORS["cpu"].backend is cpu.memory and ALLOCATORS["meta"].backend is meta.memory
    assert devices.kernel_modules("CPU") == ["ember.backends.cpu"]
    assert devices.kernel_modules("Meta") == []


def test_unknown_device_type():
    with pytest.raises(RuntimeError, match="no backend is registered for device type 'tpu'"):
        devices.get_backend("tpu")
    with pytest.raises(RuntimeError, match="no allocator for device 'tpu'"):
        allocator_for("tpu")
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, meta"):
        ember.device("tpu")


def test_privateuse1_needs_its_name():
    with pytest.raises(RuntimeError, match="rename_privateuse1_backend"):
        devices.register_backend(devices.DeviceBackend("not_the_name", "PrivateUse1"))
    with pytest.raises(RuntimeError, match="already has a backend"):
        devices.register_backend(devices.DeviceBackend("cpu", "CPU"))
    # a rename is final for the process, so which error comes depends on whether it happened
    expected = "built-in device type" if devices.privateuse1_name() == "privateuseone" else \
        "already been set"
    with pytest.raises(RuntimeError, match=expected):
        devices.rename_privateuse1_backend("meta")


def test_device_guard_sets_the_allocation_device():
    assert devices.allocation_device() is CPU
    with devices.device_guard(META):
        assert devices.allocation_device() is META
        assert empty_tensor((2, 3), ember.float32).device is META
        assert empty_tensor((2,), ember.float32, CPU).device is CPU  # an explicit device wins
    assert devices.allocation_device() is CPU
