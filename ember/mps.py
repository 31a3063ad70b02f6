"""``ember.mps``: torch.mps's namespace, answering as torch does on a machine without Metal.

``is_available()`` is False and ``device_count()`` 0; ``manual_seed`` is a no-op; every other
function raises torch's ``RuntimeError("Cannot execute <call>() without MPS backend.")``, until
an ``"mps"`` backend descriptor is registered (NOTE [Device namespaces without a device] in
``ember.backends.cuda``), whose ``extra`` hooks then serve the same names.
"""

from __future__ import annotations

from ember.backends.mps import is_available, mps_backend

__all__ = ["is_available", "device_count", "manual_seed", "seed", "synchronize",
           "get_rng_state", "set_rng_state", "empty_cache", "set_per_process_memory_fraction",
           "current_allocated_memory", "driver_allocated_memory", "recommended_max_memory"]


def _hook(name: str, native: str):
    backend = mps_backend()
    fn = None if backend is None else backend.extra.get(name)
    if fn is None:
        raise RuntimeError(f"Cannot execute {native}() without MPS backend.")
    return fn


def device_count() -> int:
    """Number of MPS devices (0 without an MPS backend).

    Example:
        >>> import ember
        >>> ember.mps.device_count()
        0
    """
    return 1 if mps_backend() is not None else 0


def manual_seed(seed: int) -> None:
    """Seed the MPS generator (a no-op without an MPS backend, as torch)."""
    if mps_backend() is not None:
        _hook("manual_seed", "getDefaultGenerator")(int(seed))


def seed() -> None:
    """Seed the MPS generator from entropy."""
    _hook("seed", "getDefaultGenerator")()


def get_rng_state(device="mps"):
    """The MPS generator's state."""
    return _hook("get_rng_state", "getDefaultGenerator")()


def set_rng_state(new_state, device="mps") -> None:
    """Restore the MPS generator's state."""
    _hook("set_rng_state", "getDefaultGenerator")(new_state)


def synchronize() -> None:
    """Wait for the MPS device's queued work."""
    _hook("synchronize", "deviceSynchronize")()


def empty_cache() -> None:
    """Release the MPS allocator's cached memory."""
    _hook("empty_cache", "emptyCache")()


def set_per_process_memory_fraction(fraction: float) -> None:
    """Cap the MPS allocator at ``fraction`` of the recommended maximum."""
    _hook("set_per_process_memory_fraction", "setMemoryFraction")(fraction)


def current_allocated_memory() -> int:
    """Bytes held by MPS tensors."""
    return _hook("current_allocated_memory", "getCurrentAllocatedMemory")()


def driver_allocated_memory() -> int:
    """Bytes the Metal driver holds for this process."""
    return _hook("driver_allocated_memory", "getDriverAllocatedMemory")()


def recommended_max_memory() -> int:
    """Metal's recommended working-set size in bytes."""
    return _hook("recommended_max_memory", "getRecommendedMaxMemory")()
