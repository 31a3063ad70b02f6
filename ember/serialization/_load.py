"""``load``: PyTorch's zip checkpoints (optionally memory-mapped) and its legacy format.

Storages are read only when a persistent id names them, after checking that the record exists
and holds exactly ``numel * itemsize`` bytes; the bytes land in a fresh ember Storage (or, with
``mmap=True``, in a copy-on-write map of the file). ``map_location`` then relocates them as
``torch.load`` does. See NOTE [Weights-only unpickling] in _unpickler.py for the pickle side.
"""

from __future__ import annotations

import io
import mmap as _mmap
import os
import sys

import numpy as np

from ember.core.device import CPU, META, Device
from ember.memory.storage import Storage
from ember.serialization._common import CheckpointError, UnpicklingError
from ember.serialization._rebuild import LoadedStorage, StorageType
from ember.serialization._unpickler import Source, UnsafeUnpickler, WeightsUnpickler
from ember.serialization._zip import ZipReader, is_zipfile
from ember.tensor import from_numpy

__all__ = ["load_file", "MAGIC_NUMBER", "PROTOCOL_VERSION"]

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001


# -- map_location --------------------------------------------------------------------------------
def _parse_location(location) -> Device:
    try:
        return Device(location)
    except (RuntimeError, TypeError, ValueError) as e:
        raise CheckpointError(f"load: invalid storage location {location!r} ({e})") from None


def _has_cuda() -> bool:
    from ember.backends.cuda import cuda_backend
    from ember.memory import devices
    if cuda_backend() is None:
        try:
            devices.get_backend("cuda")  # the registry imports ember.cuda, which registers
        except RuntimeError:
            return False
    return True


def _to_device(storage: Storage, dev: Device) -> Storage:
    """A CPU storage's bytes copied to another device with data (``cuda``)."""
    from ember.core import dtype as dt
    from ember.tensor import make_tensor
    t = make_tensor(storage, (storage.nbytes(),), (1,), 0, dt.uint8, CPU)
    return t.to(dev).untyped_storage()


def _target_device(location: str, map_location) -> Device:
    """Where a storage saved at ``location`` goes (callables are applied after reading)."""
    if isinstance(map_location, dict):
        mapped = map_location.get(location, location)
        dev = _parse_location(str(mapped))
    elif isinstance(map_location, str | Device):
        dev = _parse_location(str(map_location))
    else:
        dev = _parse_location(location)
    if dev.type == "cuda" and not callable(map_location) and not _has_cuda():
        raise CheckpointError(
            f"load: Attempting to deserialize object on a CUDA device ({dev}) but ember has no "
            "CUDA backend. If you are running on a CPU-only machine, please use ember.load "
            "with map_location='cpu' to map your storages to the CPU.")
    return dev


def _relocate(storage: Storage, location: str, map_location) -> Storage:
    """Apply a callable ``map_location(storage, location) -> Storage | None``."""
    if not callable(map_location) or isinstance(map_location, Device):
        return storage
    moved = map_location(storage, location)
    if moved is None:
        return storage
    if not isinstance(moved, Storage):
        raise TypeError("load: map_location must return a Storage or None; got "
                        f"{type(moved).__name__}")
    return moved


class StorageLoader:
    """Turns persistent ids into ``LoadedStorage`` objects, reading each record once."""

    def __init__(self, fetch, map_location, byteswap: bool):
        self._fetch = fetch          # fetch(key, nbytes, device) -> Storage
        self._map = map_location
        self._byteswap = byteswap
        self._storages: dict[str, tuple[Storage, int]] = {}

    def __call__(self, pid) -> LoadedStorage:
        if not isinstance(pid, tuple) or len(pid) != 5:
            raise UnpicklingError(f"load: malformed storage persistent id {pid!r}")
        _, stype, key, location, numel = pid
        if not isinstance(stype, StorageType) or type(key) is not str or \
                type(location) is not str or type(numel) is not int or numel < 0:
            raise UnpicklingError(f"load: malformed storage persistent id {pid!r}")
        item = stype.dtype.itemsize if stype.dtype is not None else 1
        nbytes = numel * item
        hit = self._storages.get(key)
        if hit is None:
            storage = self._load(key, nbytes, location, stype)
            self._storages[key] = hit = (storage, nbytes)
        elif hit[1] != nbytes:
            raise CheckpointError(f"load: storage {key!r} is referenced with two sizes "
                                  f"({hit[1]} and {nbytes} bytes)")
        return LoadedStorage(hit[0], stype.dtype, 0, numel)

    def _load(self, key: str, nbytes: int, location: str, stype: StorageType) -> Storage:
        dev = _target_device(location, self._map)
        storage = self._fetch(key, nbytes, META if dev is META else CPU)
        if self._byteswap and stype.dtype is not None and stype.dtype.itemsize > 1 and \
                dev is not META:
            # each part of a complex element on its own (complex32 has no NumPy dtype)
            storage.data.view(stype.dtype.to_real().np).byteswap(inplace=True)
        if dev.type not in ("cpu", "meta") and not callable(self._map):
            storage = _to_device(storage, dev)
        return _relocate(storage, location, self._map)


# -- zip -----------------------------------------------------------------------------------------
def _zip_root(reader: ZipReader) -> str:
    for name in reader.members:
        root = name.split("/", 1)[0]
        if f"{root}/data.pkl" in reader.members:
            return root
    raise CheckpointError("load: the archive has no <name>/data.pkl record; not a checkpoint")


def _load_zip(f, map_location, weights_only: bool, mmap_path: str | None):
    reader = ZipReader(f)
    root = _zip_root(reader)
    byteorder = sys.byteorder
    if f"{root}/byteorder" in reader.members:
        byteorder = reader.read(f"{root}/byteorder").decode("ascii", "replace")
        if byteorder not in ("little", "big"):
            raise CheckpointError(f"load: unknown byteorder record {byteorder!r}")
    mapped = _map_file(mmap_path) if mmap_path is not None else None

    def fetch(key: str, nbytes: int, device: Device) -> Storage:
        name = f"{root}/data/{key}"
        member = reader.get(name)
        if member.size != nbytes:
            raise CheckpointError(f"load: record {name!r} holds {member.size} bytes but the "
                                  f"checkpoint describes {nbytes}")
        if device is META:
            return Storage(nbytes, META)
        if mapped is not None and member.method == 0 and nbytes:
            arr = np.frombuffer(mapped, np.uint8, nbytes, member.data_offset)
            return from_numpy(arr).untyped_storage()
        storage = Storage(nbytes, CPU)
        if nbytes:
            reader.readinto(name, storage.data)
        return storage

    loader = StorageLoader(fetch, map_location, byteorder != sys.byteorder)
    data = reader.read(f"{root}/data.pkl")
    return _unpickle(Source(data), loader, weights_only)


def _map_file(path: str):
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            return None
        # Copy-on-write: writes to loaded tensors never reach the file (torch's shared=False).
        return _mmap.mmap(fh.fileno(), size, access=_mmap.ACCESS_COPY)


def _unpickle(source: Source, persistent_load, weights_only: bool):
    if weights_only:
        return WeightsUnpickler(source, persistent_load).load()
    return UnsafeUnpickler(_SourceFile(source), persistent_load).load()


class _SourceFile(io.RawIOBase):
    """A file-like view of a Source for the stdlib unpickler."""

    def __init__(self, source: Source):
        self._src = source

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        n = min(len(buf), self._src.size - self._src.tell())
        buf[:n] = self._src._f.read(n)
        return n

    def readline(self, size=-1) -> bytes:
        return self._src._f.readline(size)


# -- legacy (non-zip) format ---------------------------------------------------------------------
def _load_legacy(f, size: int, map_location, weights_only: bool):
    src = Source(f, size)

    def plain(what: str):
        try:
            return _unpickle(src, _no_storage, True)
        except UnpicklingError as e:
            raise UnpicklingError(f"load: reading the {what} failed: {e}") from None

    if plain("magic number") != MAGIC_NUMBER:
        raise CheckpointError("load: Invalid magic number; corrupt file?")
    if plain("protocol version") != PROTOCOL_VERSION:
        raise CheckpointError("load: Invalid protocol version")
    sys_info = plain("system info")
    if not isinstance(sys_info, dict):
        raise CheckpointError("load: invalid legacy system info record")
    little = sys_info.get("little_endian", True)
    pending: dict[str, tuple[Storage, int, int]] = {}   # key -> storage, numel, itemsize
    budget = [size - src.tell()]

    def persistent_load(pid):
        return _legacy_storage(pid, pending, budget, map_location)

    result = _unpickle(src, persistent_load, weights_only)
    keys = plain("storage keys")
    if not isinstance(keys, list) or any(type(k) is not str for k in keys):
        raise CheckpointError("load: invalid legacy storage key list")
    for key in keys:
        _read_legacy_record(src, key, pending, little != (sys.byteorder == "little"))
    return result


def _no_storage(pid):
    raise UnpicklingError("load: a storage reference where none is allowed")


def _legacy_storage(pid, pending, budget, map_location):
    if not isinstance(pid, tuple) or len(pid) != 6:
        raise UnpicklingError(f"load: malformed legacy storage persistent id {pid!r}")
    _, stype, key, location, numel, view = pid
    if not isinstance(stype, StorageType) or stype.dtype is None or type(key) is not str or \
            type(location) is not str or type(numel) is not int or numel < 0:
        raise UnpicklingError(f"load: malformed legacy storage persistent id {pid!r}")
    item = stype.dtype.itemsize
    hit = pending.get(key)
    if hit is None:
        if numel * item + 8 > budget[0]:
            raise CheckpointError(f"load: storage {key!r} claims {numel * item} bytes, more than "
                                  "the rest of the file holds")
        budget[0] -= numel * item + 8
        dev = _target_device(location, map_location)
        storage = _relocate(Storage(numel * item, META if dev is META else CPU), location,
                            map_location)
        pending[key] = hit = (storage, numel, item)
    elif hit[1:] != (numel, item):
        raise CheckpointError(f"load: legacy storage {key!r} is referenced inconsistently")
    if view is None:
        return LoadedStorage(hit[0], stype.dtype, 0, numel)
    if not isinstance(view, tuple) or len(view) != 3 or \
            any(type(v) is not int or v < 0 for v in view[1:]):
        raise UnpicklingError(f"load: malformed legacy storage view {view!r}")
    _, offset_bytes, view_numel = view
    if offset_bytes % item or offset_bytes // item + view_numel > numel:
        raise CheckpointError(f"load: legacy storage view {view!r} lies outside its storage")
    return LoadedStorage(hit[0], stype.dtype, offset_bytes // item, view_numel)


def _read_legacy_record(src: Source, key: str, pending, swap: bool) -> None:
    hit = pending.get(key)
    if hit is None:
        raise CheckpointError(f"load: legacy storage key {key!r} was never referenced")
    storage, numel, item = hit
    count = int.from_bytes(src.read(8), "little")
    if count != numel:
        raise CheckpointError(f"load: legacy storage {key!r} holds {count} elements; expected "
                              f"{numel}")
    data = src.read(numel * item)
    if storage.device is META or not data:
        return
    storage.data[:] = np.frombuffer(data, np.uint8)
    if swap and item > 1:
        storage.data.view(f"u{item}").byteswap(inplace=True)


# -- entry point ---------------------------------------------------------------------------------
def load_file(f, map_location, weights_only: bool, mmap: bool):
    """Open ``f`` (path or binary file) and load a zip or legacy checkpoint from it."""
    path = os.fspath(f) if isinstance(f, str | os.PathLike) else None
    if mmap and path is None:
        raise ValueError("load: f must be a file path in order to use the mmap argument")
    fh = open(path, "rb") if path is not None else f
    try:
        if not (hasattr(fh, "seekable") and fh.seekable()):
            fh = io.BytesIO(fh.read())
        start = fh.tell()
        head = fh.read(4)
        fh.seek(start)
        if is_zipfile(head):
            if start:
                fh = io.BytesIO(fh.read())
            return _load_zip(fh, map_location, weights_only, path if mmap else None)
        if mmap:
            raise RuntimeError("mmap can only be used with files saved with `torch.save(<f>, "
                               "_use_new_zipfile_serialization=True), please torch.save your "
                               "checkpoint with this option in order to use mmap.")
        end = fh.seek(0, os.SEEK_END)
        fh.seek(start)
        return _load_legacy(fh, end, map_location, weights_only)
    finally:
        if path is not None:
            fh.close()
