"""Storage: a contiguous block of bytes on a device, shared by every view of it.

NOTE [Storage owns bytes, not elements]
A Storage is untyped: tensors interpret its bytes through (dtype, shape, stride, offset). Its
bytes are a block of the device's caching allocator (``_block``), given back when the Storage
dies (``__del__``: reference counting returns memory at once, cycles on garbage collection; the
block is parked for the allocator to count, NOTE [Parked frees] in allocator.py).
On a device with data the bytes are also an array of the device's array module over the block
(``_buf``: NumPy on ``cpu``; NOTE [Backend descriptors] in ``devices.py``); a fresh tensor's
storage holds that array typed and shaped as the tensor that asked for it, which saves a
reinterpretation on the hot path, and ``data`` gives the flat ``uint8`` view whenever bytes are
wanted. On ``meta`` the block has an address and a size but no bytes. The data pointer never
changes; for allocator blocks it is the block's address, computed arithmetically from its
segment's.

NOTE [Foreign memory]
``Storage.wrap`` (``from_numpy``, ``from_dlpack``) shares memory ember did not allocate: it has
no block, is not counted by ``ember.memory`` statistics (as torch does not count
``from_numpy`` memory), and ``_owner`` keeps the producer alive.

NOTE [Arrays handed to users keep the block]
``Tensor.numpy()``, ``__array__`` and DLPack export build their arrays over a ``_Exported``
object that holds the Storage, so an array that outlives every tensor keeps its block allocated
and the allocator never hands that memory to anyone else. Kernels' internal views (a tensor's
``_arr``) do not need this: the tensor holds the storage.
"""

from __future__ import annotations

import mmap

import numpy as np

from ember.core.device import CPU, Device
from ember.memory.allocator import CPU_ALLOCATOR, K_SMALL_SIZE, allocator_for
from ember.memory.devices import array_module_of, get_backend

__all__ = ["Storage", "UntypedStorage", "new_cpu_array", "new_array", "export_array"]

_new = object.__new__
_EMPTY = np.empty(0, np.uint8)
_EMPTY.flags.writeable = False


class Storage:
    """Untyped bytes on a device (``torch.UntypedStorage``), from the device's allocator.

    Args:
        nbytes: size in bytes (0 allocates nothing).
        device: where the bytes live; ``meta`` storages hold no data.

    Example:
        >>> x = ember.ones(4)
        >>> s = x.untyped_storage()
        >>> s.nbytes(), s.device, x[1:].untyped_storage().data_ptr() == s.data_ptr()
        (16, device(type='cpu'), True)
    """

    __slots__ = ("_buf", "_bytes", "_nbytes", "_device", "_ptr", "_owner", "_block", "_alloc",
                 "__weakref__")

    def __init__(self, nbytes: int, device: Device = CPU):
        self._block = None
        self._nbytes = nbytes
        self._device = device
        self._owner = None
        self._bytes = None
        alloc = self._alloc = allocator_for(device)
        self._ptr = 0
        xp = np if device is CPU else array_module_of(device)  # None: no data (meta)
        self._buf = None if xp is None else _EMPTY if xp is np else xp.empty(0, np.uint8)
        if not nbytes:
            return
        block = alloc.malloc(nbytes)
        if block is None:  # re-entered from a finalizer: memory outside the cache
            if xp is not None:
                self._buf = xp.empty(nbytes, np.uint8)
                self._ptr = None
            return
        self._block = block
        seg = block.seg
        if seg.buf is not None:
            start = block.ptr - seg.addr
            self._buf = seg.buf[start:start + nbytes]
            self._ptr = block.ptr

    def __del__(self):
        block = self._block
        if block is not None:
            block.arr = self._buf
            try:
                self._alloc.park(block)  # NOTE [Parked frees] in allocator.py
            except Exception:  # interpreter shutdown  # noqa: BLE001
                pass

    @classmethod
    def wrap(cls, buf: np.ndarray, owner=None) -> Storage:
        """A CPU storage over foreign memory: a C-contiguous NumPy array (NOTE [Foreign memory])."""
        st = _new(cls)
        st._block = None
        st._alloc = None
        st._buf = buf
        st._bytes = None
        st._nbytes = buf.nbytes
        st._device = CPU
        st._ptr = None
        st._owner = owner
        return st

    from_buffer = wrap

    @property
    def data(self) -> np.ndarray | None:
        """The bytes as a flat ``uint8`` NumPy array (None on meta)."""
        b = getattr(self, "_bytes", None)
        if b is None and self._buf is not None:
            buf = self._buf
            b = self._bytes = buf if buf.dtype == np.uint8 and buf.ndim == 1 else \
                buf.reshape(-1).view(np.uint8)
        return b

    _data = data

    @property
    def device(self) -> Device:
        return self._device

    def nbytes(self) -> int:
        """Size in bytes."""
        return self._nbytes

    def size(self) -> int:
        """Size in bytes (an untyped storage counts bytes)."""
        return self._nbytes

    def data_ptr(self) -> int:
        """Address of the first byte (0 for meta and empty storages)."""
        ptr = self._ptr
        if ptr is None:
            ptr = self._ptr = self._buf.ctypes.data if self._buf is not None and \
                self._nbytes else 0
        return ptr

    def __len__(self) -> int:
        return self._nbytes

    def is_shared(self) -> bool:
        """Whether the bytes live in shared memory (``torch.UntypedStorage.is_shared``)."""
        return isinstance(getattr(self, "_owner", None), mmap.mmap)

    def share_memory_(self) -> Storage:
        """Move the bytes into shared memory (``torch.UntypedStorage.share_memory_``).

        NOTE [Shared storages]
        A CPU storage's bytes are copied into an anonymous shared mapping, which processes
        forked afterwards (DataLoader workers, data-parallel ranks on one machine) share with
        this one: a write on either side is seen by the other. The allocator block the bytes
        came from is released; arrays over the old bytes must be dropped by the caller
        (``Tensor.share_memory_`` clears the tensors' cached arrays). As in torch, an array
        handed out earlier by ``numpy()`` keeps the old bytes. Storages on other devices are
        left alone (torch: CUDA memory is already shareable). Returns ``self``.
        """
        if self._device is not CPU or self.is_shared():
            return self
        nbytes = self._nbytes
        shared = mmap.mmap(-1, max(nbytes, 1))  # anonymous MAP_SHARED: inherited by fork
        buf = np.frombuffer(shared, np.uint8, nbytes)
        if nbytes:
            buf[:] = self.data
        block, alloc = self._block, self._alloc
        self._block = None
        self._alloc = None
        self._buf, self._bytes, self._ptr, self._owner = buf, None, None, shared
        if block is not None:
            block.arr = None  # the block's cached array must not be handed out again
            alloc.free(block)
        return self

    def __repr__(self) -> str:
        return f"<ember.UntypedStorage nbytes={self._nbytes} device={self._device}>"


UntypedStorage = Storage


def new_cpu_array(nbytes: int, shape: tuple, npdtype) -> tuple[Storage, np.ndarray]:
    """A fresh CPU Storage of ``nbytes`` and the typed array ``shape`` over it (the hot path)."""
    st = _new(Storage)  # ``_owner`` and ``_bytes`` stay unset (read with defaults)
    st._block = None  # set before malloc: an OutOfMemoryError drops ``st`` (``__del__``)
    st._nbytes = nbytes
    st._device = CPU
    alloc = st._alloc = CPU_ALLOCATOR
    if nbytes:
        parked = alloc.parked
        block = None
        if parked and nbytes <= K_SMALL_SIZE:
            # NOTE [Parked frees]: the latest freed block, when it served exactly this request
            try:
                block = parked.pop()
            except IndexError:
                pass
            else:
                trips = alloc.trips
                if block.requested == nbytes and alloc.lane_on and len(trips) < 1024:
                    trips.append(nbytes)
                else:
                    parked.append(block)
                    block = None
        if block is None:
            block = alloc.malloc(nbytes)
        if block is not None:
            st._block = block
            arr = block.arr  # the array of the block's last tensor, when it came from the lane
            if arr is None or arr.shape != shape or \
                    (arr.dtype is not npdtype and arr.dtype != npdtype):
                seg = block.seg
                arr = np.ndarray(shape, npdtype, seg.buf, block.ptr - seg.addr)
            st._ptr = block.ptr
            st._buf = arr
            return st, arr
    arr = st._buf = np.empty(shape, npdtype)
    st._ptr = None
    return st, arr


def scratch_array(shape: tuple, npdtype) -> np.ndarray:
    """A fresh C-contiguous CPU array from the caching allocator, for code that needs the
    memory but no tensor (compiled code's intermediates): the array keeps the block allocated
    (NOTE [Arrays handed to users keep the block]) and gives it back when it dies."""
    npdtype = np.dtype(npdtype)
    nbytes = npdtype.itemsize
    for d in shape:
        nbytes *= d
    st, arr = new_cpu_array(nbytes, shape, npdtype)
    if st._block is None:
        return arr          # (no block: a plain NumPy array, alive on its own)
    return np.ndarray(shape, npdtype, np.asarray(_Exported(st, st._ptr, nbytes)))


def new_array(nbytes: int, shape: tuple, npdtype, device: Device = CPU):
    """A fresh Storage of ``nbytes`` on ``device`` and the typed array ``shape`` over it.

    The array comes from the device's backend (``as_array``); ``cpu`` takes the hot path.
    """
    if device is CPU:
        return new_cpu_array(nbytes, shape, npdtype)
    st = Storage(nbytes, device)
    npdtype = np.dtype(npdtype)
    strides, step = [], npdtype.itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    arr = get_backend(device.type).as_array(st._buf, shape, npdtype, 0, tuple(reversed(strides)))
    return st, arr


class _Exported:
    """The base of an array handed to a user: holds the Storage (NOTE [Arrays handed ...])."""

    __slots__ = ("storage", "__array_interface__")

    def __init__(self, storage: Storage, ptr: int, nbytes: int):
        self.storage = storage
        self.__array_interface__ = {"data": (ptr, False), "shape": (nbytes,), "typestr": "|u1",
                                    "version": 3}


def export_array(storage: Storage, shape: tuple, npdtype, offset: int,
                 strides: tuple) -> np.ndarray | None:
    """A NumPy array over ``storage`` that keeps it alive (byte ``offset`` and ``strides``).

    Returns None for storages without an allocator block (foreign or empty memory): their
    arrays' base chains already keep the memory alive.
    """
    if storage._block is None:
        return None
    raw = np.asarray(_Exported(storage, storage._ptr, storage._nbytes))
    return np.ndarray(shape, npdtype, raw, offset, strides)
