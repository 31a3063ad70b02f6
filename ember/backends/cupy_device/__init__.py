"""The ``cuda`` device on CuPy: its backend descriptor, registered when a GPU is present.

NOTE [The CuPy device]
``register()`` adds the ``"cuda"`` device type to the device registry (NOTE [Backend
descriptors] in ``ember/memory/devices.py``) with CuPy as its array module, ``cudaMalloc``
segments for its caching allocator (NOTE [CUDA memory belongs to ember's allocator] in
``runtime.py``), CuPy views as its arrays, the CPU kernels reused through NumPy's dispatch
protocols (``kernels_from="cpu"``), and the kernels of ``kernels.py`` where NumPy and CuPy
differ (copies between host and device, ...). ``ember.cuda`` calls ``register()`` when it
is imported; it registers nothing when CuPy is missing, when it finds no GPU, or when
``EMBER_CUDA=0``, so a machine without a GPU sees torch's CPU-only answers.

The descriptor's ``extra`` hooks serve ``ember.cuda``'s device queries, streams and events,
pinned memory and ``mem_get_info`` (``cudaMemGetInfo``).
"""

from __future__ import annotations

import importlib.util
import os

__all__ = ["available", "register", "unavailable_reason"]

_REASON: list[str] = []


def unavailable_reason() -> str | None:
    """Why no CUDA device is registered (None when one is, or before ``available()`` ran)."""
    return _REASON[0] if _REASON else None


def available() -> bool:
    """Whether CuPy imports and sees at least one GPU (and ``EMBER_CUDA`` is not ``0``)."""
    _REASON.clear()
    if os.environ.get("EMBER_CUDA", "") == "0":
        _REASON.append("EMBER_CUDA=0")
        return False
    if importlib.util.find_spec("cupy") is None:
        _REASON.append("CuPy is not installed")
        return False
    try:
        from ember.backends.cupy_device import runtime
    except Exception as e:  # noqa: BLE001  (a broken CuPy install)
        _REASON.append(f"CuPy does not import: {e}")
        return False
    if runtime.device_count() == 0:
        _REASON.append("CuPy finds no CUDA device")
        return False
    return True


def register():
    """Register the ``cuda`` backend when ``available()``; its descriptor, or None."""
    from ember.memory.devices import get_backend, registered_backends

    for b in registered_backends():
        if b.name == "cuda":
            return b
    if not available():
        return None
    from ember.backends.cupy_device import runtime as rt
    from ember.memory.allocator import allocator_for
    from ember.memory.devices import DeviceBackend, register_backend

    props = rt.properties(0)
    streams = rt.CudaStreams()
    backend = DeviceBackend(
        "cuda", "CUDA", rt.cupy, rt.CudaMemory(0), as_array=rt.as_array,
        capacity=props.total_memory, kernels="ember.backends.cupy_device.kernels",
        kernels_from="cpu", synchronize=lambda: rt.cupy.cuda.Device(0).synchronize(),
        current_stream=rt.current_stream, extra=_hooks(rt, props, streams))
    backend.extra["stream_ops"] = streams
    backend.to_host = rt.to_host  # the descriptor's host-transfer hooks
    backend.from_host = rt.from_host
    register_backend(backend)
    rt.register_kernel_helpers()
    alloc = allocator_for("cuda")
    alloc.set_streams(streams)
    rt.route_cupy_allocations(alloc)
    assert get_backend("cuda") is backend
    return backend


def _hooks(rt, props, streams) -> dict:
    """``ember.cuda``'s device hooks for the descriptor's ``extra``."""
    seeds = {"seed": 0}

    def set_device(index):
        if index not in (None, 0):
            raise RuntimeError(f"CUDA error: invalid device ordinal (device {index}; one CUDA "
                               "device, 0, is served)")

    def manual_seed(seed):
        # random kernels on the device draw from the default generator's counter-based
        # streams (the CPU kernels' Philox), which ``ember.manual_seed`` seeds
        seeds["seed"] = int(seed)

    def pin_memory(t):
        return _pin(t, rt)

    def is_pinned(t):
        st = t._storage
        return t._device.type == "cpu" and rt.is_pinned_array(getattr(st, "_owner", None))

    return {
        "device_count": lambda: 1,
        "current_device": lambda: 0,
        "set_device": set_device,
        "get_device_name": lambda index=None: rt.properties(index).name,
        "get_device_capability": lambda index=None: (rt.properties(index).major,
                                                     rt.properties(index).minor),
        "get_device_properties": rt.properties,
        "manual_seed": manual_seed,
        "manual_seed_all": manual_seed,
        "seed": lambda: None,
        "seed_all": lambda: None,
        "initial_seed": lambda: seeds["seed"],
        "is_bf16_supported": lambda: False,  # CuPy has no bfloat16 dtype
        "is_tf32_supported": lambda: props.major >= 8,
        "get_arch_list": lambda: [f"sm_{props.major}{props.minor}"],
        "ipc_collect": lambda: None,
        "Stream": lambda device=None, priority=0, **kw: rt.Stream(device, priority),
        "Event": lambda **kw: rt.Event(**kw),
        "default_stream": rt.default_stream,
        "set_stream": rt.set_stream,
        "current_stream": rt.current_stream,
        "pin_memory": pin_memory,
        "is_pinned": is_pinned,
        "mem_get_info": lambda index=None: tuple(int(v) for v in rt._rt.memGetInfo()),
        "record_stream": lambda t, stream: _record_stream(t, stream, streams),
    }


def _pin(t, rt):
    """A copy of CPU tensor ``t`` in page-locked host memory (``Tensor.pin_memory``)."""
    from ember.memory.storage import Storage
    from ember.tensor import make_tensor

    if t._device.type != "cpu":
        raise RuntimeError(f"cannot pin '{t._device.type}' memory: only dense CPU tensors can "
                           "be pinned")
    src = t.contiguous()
    nbytes = src.numel() * src.dtype.itemsize
    buf, owner = rt.pinned_empty(nbytes)
    if nbytes:
        buf[:] = src.untyped_storage().data[src._offset * src.dtype.itemsize:
                                            src._offset * src.dtype.itemsize + nbytes]
    st = Storage.wrap(buf, owner)
    out = make_tensor(st, src._shape, src._stride, 0, src.dtype, src._device)
    return out.requires_grad_() if t.requires_grad and t.is_leaf else out


def _record_stream(t, stream, streams) -> None:
    """``Tensor.record_stream(stream)``: the block is not reused until ``stream``'s work done
    at the time of its free has completed (NOTE [Streams in the allocator])."""
    block = t._storage._block
    if block is None or t._device.type != "cuda":
        return
    t._storage._alloc.record_stream(block, streams.key(stream))
