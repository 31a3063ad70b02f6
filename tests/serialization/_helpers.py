"""Helpers shared by the serialization tests: ember <-> torch tensor conversion by bytes,
exact comparison (dtype, shape, strides, offset, values), and rewriting zip checkpoints."""

from __future__ import annotations

import io

import ml_dtypes
import numpy as np
import torch

import ember
import ember.serialization as es
from ember.serialization._zip import ZipReader, ZipWriter
from ember.tensor import numpy_view

DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
          "uint8", "bool"]


def values(name: str, shape, start: int = 1) -> np.ndarray:
    """Deterministic, dtype-appropriate values (negative numbers for signed types)."""
    n = int(np.prod(shape))
    if name == "bool":
        return (np.arange(n) % 3 == 0).reshape(shape)
    raw = np.arange(start, start + n) % 97
    if name in ("int8", "int16", "int32", "int64", "float32", "float64", "float16", "bfloat16"):
        raw = raw - 40
    npd = ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name)
    out = raw.astype(npd)
    if name.startswith(("float", "bfloat")):
        out = (raw / 8).astype(npd)
    return out.reshape(shape)


def torch_tensor(arr: np.ndarray) -> torch.Tensor:
    """A contiguous torch tensor holding ``arr`` (torch's strides, even for empty arrays)."""
    if arr.dtype == ml_dtypes.bfloat16:
        t = torch.from_numpy(arr.view(np.int16).copy()).view(torch.bfloat16)
    else:
        t = torch.from_numpy(arr.copy())
    return t.clone(memory_format=torch.contiguous_format)


def torch_values(t: torch.Tensor) -> np.ndarray:
    t = t.detach()
    if t.dtype is torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def ember_values(t: ember.Tensor) -> np.ndarray:
    return np.array(numpy_view(t))


def assert_same_tensor(e: ember.Tensor, t: torch.Tensor) -> None:
    """ember tensor ``e`` equals torch tensor ``t`` in dtype, geometry and bytes."""
    assert e.dtype.name == str(t.dtype).removeprefix("torch."), (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    assert tuple(e.stride()) == tuple(t.stride())
    assert e.storage_offset() == t.storage_offset()
    assert e.untyped_storage().nbytes() == t.untyped_storage().nbytes()
    assert e.requires_grad == t.requires_grad
    assert np.ascontiguousarray(ember_values(e)).tobytes() == \
        np.ascontiguousarray(torch_values(t)).tobytes()


def rezip(data: bytes, replace: dict[str, bytes] | None = None,
          drop: tuple[str, ...] = ()) -> bytes:
    """Rebuild a zip checkpoint with some records replaced or removed (valid CRCs)."""
    reader = ZipReader(io.BytesIO(data))
    out = io.BytesIO()
    w = ZipWriter(out)
    for name in reader.members:
        if name in drop:
            continue
        w.write_record(name, (replace or {}).get(name, reader.read(name)))
    w.close()
    return out.getvalue()


def zip_with_pickle(pkl: bytes, records: dict[str, bytes] | None = None,
                    root: str = "archive") -> bytes:
    """A minimal zip checkpoint whose data.pkl is ``pkl``."""
    out = io.BytesIO()
    w = ZipWriter(out)
    w.write_record(f"{root}/data.pkl", pkl)
    w.write_record(f"{root}/byteorder", b"little")
    for key, data in (records or {}).items():
        w.write_record(f"{root}/data/{key}", data)
    w.write_record(f"{root}/version", b"3\n")
    w.close()
    return out.getvalue()


def save_bytes(obj) -> bytes:
    buf = io.BytesIO()
    es.save(obj, buf)
    return buf.getvalue()


def torch_save_bytes(obj, **kw) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf, **kw)
    return buf.getvalue()
