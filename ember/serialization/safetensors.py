"""The safetensors format, implemented from its specification (no dependency).

Layout: an unsigned little-endian 64-bit header length N, N bytes of UTF-8 JSON (padded with
spaces so the data buffer starts 8-byte aligned), then the data buffer. The header maps each
name to ``{"dtype", "shape", "data_offsets": [begin, end]}`` (offsets relative to the buffer)
plus an optional ``"__metadata__"`` of str -> str. Writers lay tensors out by dtype rank
(descending) then name and emit compact JSON, as the ``safetensors`` package does, so files
are byte-identical to its output.

NOTE [Validating safetensors headers]
Before any tensor is touched: the header length must fit in the file and stay under 100 MB; the
JSON must parse to an object; every entry needs a known dtype, a shape of non-negative ints and
``end - begin == numel * itemsize``; entries sorted by offset must tile the buffer exactly (no
gaps, no overlaps, nothing past its end). No pickle is ever involved.
"""

from __future__ import annotations

import json
import os
import tempfile

import numpy as np

from ember.core import dtype as dt
from ember.core.device import CPU, META, Device, as_device
from ember.core.layout import contiguous_strides
from ember.memory.storage import Storage
from ember.serialization._common import CheckpointError
from ember.tensor import Tensor, make_tensor
from ember.tensor.tensor import numpy_view

__all__ = ["save", "save_file", "load", "load_file", "safe_open", "SafetensorError"]

MAX_HEADER_SIZE = 100_000_000

# Codes in the order of the format's dtype enumeration (the writer sorts by it, descending).
_CODES = ["BOOL", "U8", "I8", "I16", "F16", "BF16", "I32", "F32", "C64", "F64", "I64"]
_DTYPE_OF_CODE = {"BOOL": dt.bool_, "U8": dt.uint8, "I8": dt.int8, "I16": dt.int16,
                  "F16": dt.float16, "BF16": dt.bfloat16, "I32": dt.int32, "F32": dt.float32,
                  "C64": dt.complex64, "F64": dt.float64, "I64": dt.int64}
_CODE_OF_DTYPE = {d: c for c, d in _DTYPE_OF_CODE.items()}
_RANK = {c: i for i, c in enumerate(_CODES)}
# Valid in the format but without an ember dtype: listed, and refused when a tensor is read.
_FOREIGN_CODES = {"U16": 2, "U32": 4, "U64": 8, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1,
                  "F4": None, "F6_E2M3": None, "F6_E3M2": None}


class SafetensorError(CheckpointError):
    """A safetensors file or header is invalid, or a tensor cannot be saved in the format."""


# -- writing -------------------------------------------------------------------------------------
def _check_tensors(tensors: dict) -> None:
    if not isinstance(tensors, dict):
        raise TypeError(f"safetensors.save: expected a dict of tensors; got {type(tensors)}")
    spans: dict[int, list] = {}
    for name, t in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"safetensors.save: tensor names must be str; got {name!r}")
        if not isinstance(t, Tensor):
            raise TypeError(f"safetensors.save: {name!r} is a {type(t).__name__}, not a Tensor")
        if t.device is META:
            raise ValueError(f"safetensors.save: {name!r} is on the meta device (no data)")
        if t.dtype not in _CODE_OF_DTYPE:  # the format has C64 but no 128-bit complex
            raise SafetensorError(f"safetensors.save: {name!r} has dtype {t.dtype}, which the "
                                  "safetensors format cannot hold (its only complex dtype is "
                                  "C64, complex64)")
        if t.is_conj():
            raise ValueError(f"safetensors.save: {name!r} is a conjugated view; call "
                             "resolve_conj() before saving")
        if t.is_neg():  # the format has no negative bit (safetensors.torch drops it)
            raise ValueError(f"safetensors.save: {name!r} has the negative bit set; call "
                             "resolve_neg() before saving")
        if not t.is_contiguous():
            raise ValueError(
                f"You are trying to save a non contiguous tensor: `{name}` which is not allowed. "
                "It either means you are trying to save tensors which are reference of each "
                "other in which case it's recommended to save only the full tensors, and "
                "reslice at load time, or simply call `.contiguous()` on your tensor to pack it "
                "before saving.")
        if t.numel():
            spans.setdefault(id(t.untyped_storage()), []).append(
                (t.storage_offset() * t.element_size(), t.nbytes, name))
    shared = []
    for group in spans.values():
        group.sort()
        names = {group[0][2]}
        end = group[0][0] + group[0][1]
        for start, size, name in group[1:]:
            if start < end:
                names.add(name)
            end = max(end, start + size)
        if len(names) > 1:
            shared.append(names)
    if shared:
        raise RuntimeError(
            "Some tensors share memory, this will lead to duplicate memory on disk and "
            f"potential differences when loading them again: {shared}. A potential way to "
            "correctly save is to clone the shared tensors first.")


def _check_metadata(metadata) -> None:
    if metadata is None:
        return
    if not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise TypeError("safetensors.save: metadata must be a dict of str to str")


def _layout(tensors: dict, metadata) -> tuple[bytes, list[Tensor]]:
    order = sorted(tensors, key=lambda n: (-_RANK[_CODE_OF_DTYPE[tensors[n].dtype]], n))
    header: dict = {} if metadata is None else {"__metadata__": metadata}
    pos = 0
    for name in order:
        t = tensors[name]
        header[name] = {"dtype": _CODE_OF_DTYPE[t.dtype], "shape": list(t.shape),
                        "data_offsets": [pos, pos + t.nbytes]}
        pos += t.nbytes
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text, [tensors[n] for n in order]


def _write(tensors: dict, metadata, fh) -> None:
    _check_tensors(tensors)
    _check_metadata(metadata)
    head, ordered = _layout(tensors, metadata)
    fh.write(head)
    for t in ordered:
        if t.numel():
            fh.write(np.ascontiguousarray(numpy_view(t)).reshape(-1).view(np.uint8).data)


def save(tensors: dict, metadata: dict | None = None) -> bytes:
    """The safetensors bytes of ``tensors`` (name -> contiguous tensor, no shared memory).

    Example:
        >>> import ember
        >>> from ember.serialization import safetensors as st
        >>> st.load(st.save({"w": ember.ones(2)}))["w"]
        tensor([1., 1.])
    """
    import io
    buf = io.BytesIO()
    _write(tensors, metadata, buf)
    return buf.getvalue()


def save_file(tensors: dict, filename, metadata: dict | None = None) -> None:
    """Write ``tensors`` to ``filename`` in safetensors format (atomically).

    Raises:
        ValueError: a tensor is not contiguous (or on the meta device).
        RuntimeError: two tensors share memory.
        TypeError: names, values or metadata of the wrong type.
    """
    path = os.fspath(filename)
    _check_tensors(tensors)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as fh:
            _write(tensors, metadata, fh)
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


# -- reading -------------------------------------------------------------------------------------
class _Entry:
    __slots__ = ("name", "code", "shape", "begin", "end")

    def __init__(self, name, code, shape, begin, end):
        self.name, self.code, self.shape, self.begin, self.end = name, code, shape, begin, end


def _bad(what: str) -> SafetensorError:
    return SafetensorError(f"safetensors: invalid file: {what}")


def _nonneg_int(x) -> bool:
    return type(x) is int and 0 <= x < 2**63


def _parse_entry(name: str, info) -> _Entry:
    if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
        raise _bad(f"entry {name!r} must have exactly dtype, shape and data_offsets; got "
                   f"{info!r:.200}")
    code, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if code not in _DTYPE_OF_CODE and code not in _FOREIGN_CODES:
        raise _bad(f"entry {name!r} has unknown dtype {code!r}")
    if not isinstance(shape, list) or not all(_nonneg_int(s) for s in shape):
        raise _bad(f"entry {name!r} has invalid shape {shape!r:.200}")
    if not isinstance(offsets, list) or len(offsets) != 2 or \
            not all(_nonneg_int(o) for o in offsets) or offsets[0] > offsets[1]:
        raise _bad(f"entry {name!r} has invalid data_offsets {offsets!r:.200}")
    numel = 1
    for s in shape:
        numel *= s
    item = _DTYPE_OF_CODE[code].itemsize if code in _DTYPE_OF_CODE else _FOREIGN_CODES[code]
    if item is not None and offsets[1] - offsets[0] != numel * item:
        raise _bad(f"entry {name!r}: data_offsets {offsets} span {offsets[1] - offsets[0]} "
                   f"bytes but dtype {code} x shape {shape} needs {numel * item}")
    return _Entry(name, code, tuple(shape), offsets[0], offsets[1])


def parse_header(head8: bytes, read_header, total_size: int):
    """Validate a header; returns (entries by name, metadata, data start)."""
    if len(head8) < 8:
        raise _bad("header too small (the file is shorter than 8 bytes)")
    n = int.from_bytes(head8, "little")
    if n > MAX_HEADER_SIZE:
        raise _bad(f"header of {n} bytes exceeds the limit of {MAX_HEADER_SIZE}")
    if n > total_size - 8:
        raise _bad(f"header of {n} bytes runs past the end of the {total_size}-byte file")
    try:
        header = json.loads(read_header(n).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise _bad(f"header is not valid UTF-8 JSON ({e})") from None
    if not isinstance(header, dict):
        raise _bad("header must be a JSON object")
    metadata = header.pop("__metadata__", None)
    if metadata is not None and (not isinstance(metadata, dict) or not all(
            isinstance(v, str) for v in metadata.values())):
        raise _bad("__metadata__ must map str to str")
    entries = {name: _parse_entry(name, info) for name, info in header.items()}
    pos = 0
    for e in sorted(entries.values(), key=lambda e: (e.begin, e.end)):
        if e.begin != pos:
            raise _bad(f"entry {e.name!r} starts at {e.begin}; expected {pos} (tensors must "
                       "tile the data buffer without gaps or overlaps)")
        pos = e.end
    if pos != total_size - 8 - n:
        raise _bad(f"tensors cover {pos} bytes but the data buffer holds {total_size - 8 - n}")
    return entries, metadata, 8 + n


def _tensor_from(entry: _Entry, fill, device: Device) -> Tensor:
    if entry.code not in _DTYPE_OF_CODE:
        raise SafetensorError(f"safetensors: tensor {entry.name!r} has dtype {entry.code}, which "
                              "ember does not have")
    dtype = _DTYPE_OF_CODE[entry.code]
    nbytes = entry.end - entry.begin
    storage = Storage(nbytes, META if device is META else CPU)
    if device is not META and nbytes:
        fill(entry, storage.data)
    return make_tensor(storage, entry.shape, contiguous_strides(entry.shape), 0, dtype,
                       storage.device)


def _device(device) -> Device:
    dev = as_device(device)
    if dev.type not in ("cpu", "meta"):
        raise RuntimeError(f"safetensors: device {dev} is not available; use 'cpu' or 'meta'")
    return dev


def load(data: bytes, device="cpu") -> dict[str, Tensor]:
    """Tensors from safetensors ``data`` (bytes)."""
    data = bytes(data)
    entries, _, start = parse_header(data[:8], lambda n: data[8:8 + n], len(data))
    view = memoryview(data)

    def fill(e: _Entry, buf) -> None:
        buf[:] = np.frombuffer(view[start + e.begin: start + e.end], np.uint8)

    dev = _device(device)
    return {name: _tensor_from(e, fill, dev) for name, e in entries.items()}


def load_file(filename, device="cpu") -> dict[str, Tensor]:
    """All tensors of a safetensors file, as ``{name: tensor}`` (in file order)."""
    with safe_open(filename, framework="pt", device=device) as f:
        return {name: f.get_tensor(name) for name in f.keys()}


class safe_open:
    """Lazy access to a safetensors file: the header is read at once, each tensor on request.

    Args:
        filename: the file.
        framework: "pt"/"ember" (ember tensors) or "np"/"numpy" (NumPy arrays).
        device: "cpu" or "meta".

    Example:
        >>> import ember, os, tempfile
        >>> from ember.serialization import safetensors as st
        >>> p = os.path.join(tempfile.mkdtemp(), "m.safetensors")
        >>> st.save_file({"w": ember.ones(2)}, p, metadata={"v": "1"})
        >>> with st.safe_open(p, "pt") as f:
        ...     f.keys(), f.metadata(), f.get_tensor("w")
        (['w'], {'v': '1'}, tensor([1., 1.]))
    """

    def __init__(self, filename, framework: str = "pt", device="cpu"):
        if framework not in ("pt", "ember", "np", "numpy"):
            raise ValueError(f"safe_open: unsupported framework {framework!r}; expected 'pt', "
                             "'ember' or 'numpy'")
        self._numpy = framework in ("np", "numpy")
        self._device = _device(device)
        self._fh = open(os.fspath(filename), "rb")
        try:
            size = os.fstat(self._fh.fileno()).st_size
            self._entries, self._metadata, self._start = parse_header(
                self._fh.read(8), self._fh.read, size)
        except BaseException:
            self._fh.close()
            raise

    def __enter__(self) -> safe_open:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._fh.close()

    def keys(self) -> list[str]:
        """Tensor names, in data-offset order."""
        return [e.name for e in sorted(self._entries.values(), key=lambda e: e.begin)]

    def metadata(self) -> dict[str, str] | None:
        """The ``__metadata__`` mapping (None when the file has none)."""
        return None if self._metadata is None else dict(self._metadata)

    def _fill(self, e: _Entry, buf) -> None:
        self._fh.seek(self._start + e.begin)
        if self._fh.readinto(buf) != e.end - e.begin:
            raise _bad(f"tensor {e.name!r} is truncated")

    def get_tensor(self, name: str):
        """Read one tensor (only its bytes are read)."""
        e = self._entries.get(name)
        if e is None:
            raise SafetensorError(f"safetensors: File does not contain tensor {name}")
        t = _tensor_from(e, self._fill, self._device)
        return numpy_view(t) if self._numpy else t
