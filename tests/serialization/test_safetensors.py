"""ember.serialization.safetensors against the ``safetensors`` package (both ways, byte-identical
files) and its header validation (B8.7)."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
import safetensors
import safetensors.torch as st_torch
import torch

import ember
from ember.serialization import safetensors as st
from ember.serialization.safetensors import SafetensorError

from ._helpers import DTYPES, assert_same_tensor, ember_values, torch_tensor, values


def _pair(shape_by_name: dict):
    """The same tensors in ember and torch, one per dtype."""
    e, t = {}, {}
    for i, name in enumerate(DTYPES):
        shape = shape_by_name.get(name, (2, 3))
        arr = values(name, shape, start=i)
        e[f"t_{name}"] = ember.from_numpy(arr.copy())
        t[f"t_{name}"] = torch_tensor(arr)
    return e, t


SHAPES = {"float16": (), "int8": (0,), "bool": (4,), "int64": (1, 1, 5)}


def test_byte_identical_to_the_package():
    e, t = _pair(SHAPES)
    assert st.save(e) == st_torch.save(t)
    # One metadata key: the package orders __metadata__ entries by a randomly seeded hash map.
    meta = {"note": "é"}
    assert st.save(e, metadata=meta) == st_torch.save(t, metadata=meta)
    assert st.save({}) == st_torch.save({})


def test_ember_files_load_in_the_package(tmp_path):
    e, t = _pair(SHAPES)
    path = tmp_path / "m.safetensors"
    st.save_file(e, path, metadata={"k": "v"})
    loaded = st_torch.load_file(path)
    assert set(loaded) == set(t)
    for k in t:
        assert torch.equal(loaded[k], t[k]) and loaded[k].dtype == t[k].dtype
    with safetensors.safe_open(path, "pt") as f:
        assert f.metadata() == {"k": "v"}


def test_package_files_load_in_ember(tmp_path):
    e, t = _pair(SHAPES)
    path = tmp_path / "m.safetensors"
    st_torch.save_file(t, path, metadata={"a": "b"})
    loaded = st.load_file(path)
    header = json.loads(path.read_bytes()[8:8 + int.from_bytes(path.read_bytes()[:8], "little")])
    header.pop("__metadata__")
    assert list(loaded) == sorted(header, key=lambda k: header[k]["data_offsets"])
    for k in t:
        assert_same_tensor(loaded[k], t[k])
    with st.safe_open(path, framework="pt") as f:
        assert f.metadata() == {"a": "b"}
        assert sorted(f.keys()) == sorted(t)
        assert_same_tensor(f.get_tensor("t_float32"), t["t_float32"])
    with st.safe_open(path, framework="numpy") as f:
        np.testing.assert_array_equal(f.get_tensor("t_int32"), t["t_int32"].numpy())
    loaded = st.load(st_torch.save(t))
    for k in t:
        assert_same_tensor(loaded[k], t[k])


def test_safe_open_reads_lazily(tmp_path, monkeypatch):
    path = tmp_path / "big.safetensors"
    st.save_file({"a": ember.ones(1000), "b": ember.arange(3)}, path)
    with st.safe_open(path, "pt") as f:
        reads = []
        real = f._fh.readinto
        monkeypatch.setattr(f._fh, "readinto", lambda buf: reads.append(len(buf)) or real(buf),
                            raising=False)
        assert f.get_tensor("b").tolist() == [0, 1, 2]
        assert reads == [24]  # only b's bytes
        with pytest.raises(SafetensorError, match="does not contain tensor c"):
            f.get_tensor("c")


def test_meta_device_and_no_metadata(tmp_path):
    path = tmp_path / "m.safetensors"
    st.save_file({"w": ember.ones(2, 3)}, path)
    out = st.load_file(path, device="meta")
    assert out["w"].is_meta and tuple(out["w"].shape) == (2, 3)
    with st.safe_open(path, "pt") as f:
        assert f.metadata() is None


def test_save_refusals():
    a = ember.arange(6.0).reshape(2, 3)
    with pytest.raises(ValueError, match="non contiguous tensor: `t`"):
        st.save({"t": a.t()})
    with pytest.raises(RuntimeError, match="share memory"):
        st.save({"a": a, "row": a[1]})
    st.save({"r0": a[0], "r1": a[1]})  # disjoint slices of one storage are fine (as the package)
    with pytest.raises(TypeError, match="metadata"):
        st.save({"a": a}, metadata={"k": 1})


def test_foreign_dtypes_are_listed_but_not_loaded(tmp_path):
    path = tmp_path / "u16.safetensors"
    st_torch.save_file({"u": torch.zeros(2, dtype=torch.uint16), "f": torch.ones(1)}, path)
    with st.safe_open(path, "pt") as f:
        assert sorted(f.keys()) == ["f", "u"]
        assert f.get_tensor("f").tolist() == [1.0]
        with pytest.raises(SafetensorError, match="U16"):
            f.get_tensor("u")


def _file(header: dict | bytes, data: bytes = b"", pad: bool = True) -> bytes:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def _entry(dtype="F32", shape=(2,), offsets=(0, 8)):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


@pytest.mark.parametrize("blob, match", [
    (b"", "header too small"),
    (b"\x05\x00\x00", "header too small"),
    (struct.pack("<Q", 200_000_000) + b"{}", "exceeds the limit"),
    (struct.pack("<Q", 64) + b"{}", "past the end"),
    (_file(b"{not json"), "not valid UTF-8 JSON"),
    (_file(b"\xff\xfe{}"), "not valid UTF-8 JSON"),
    (_file(b"[1, 2]"), "must be a JSON object"),
    (_file({"a": _entry(dtype="F99")}, bytes(8)), "unknown dtype"),
    (_file({"a": _entry(shape=(-2,))}, bytes(8)), "invalid shape"),
    (_file({"a": _entry(offsets=(8, 0))}, bytes(8)), "invalid data_offsets"),
    (_file({"a": _entry(offsets=(0, 12))}, bytes(12)), "needs 8"),
    (_file({"a": _entry(), "b": _entry(offsets=(4, 12))}, bytes(12)), "expected 8"),
    (_file({"a": _entry(), "b": _entry(offsets=(12, 20))}, bytes(20)), "gaps"),
    (_file({"a": _entry()}, bytes(4)), "data buffer holds 4"),
    (_file({"a": _entry()}, bytes(16)), "cover 8 bytes"),
    (_file({"a": {"dtype": "F32", "shape": [2]}}, bytes(8)), "exactly dtype"),
    (_file({"__metadata__": {"k": 1}}), "__metadata__"),
    (_file({"a": _entry(shape=(2.0,))}, bytes(8)), "invalid shape"),
    (_file(b"[" * 100_000 + b"]" * 100_000), "JSON"),
])
def test_header_validation(blob, match, tmp_path):
    with pytest.raises(SafetensorError, match=match):
        st.load(blob)
    path = tmp_path / "bad.safetensors"
    path.write_bytes(blob)
    with pytest.raises(SafetensorError, match=match):
        st.load_file(path)


def test_package_agrees_on_invalid_headers():
    """The package refuses what ember refuses (a sample of the cases above)."""
    for blob in (_file({"a": _entry(offsets=(0, 12))}, bytes(12)),
                 _file({"a": _entry(), "b": _entry(offsets=(4, 12))}, bytes(12)),
                 _file({"a": _entry()}, bytes(4))):
        with pytest.raises(Exception):  # noqa: B017  (the package raises SafetensorError)
            st_torch.load(blob)
        with pytest.raises(SafetensorError):
            st.load(blob)


def test_zero_size_and_scalar_round_trip():
    d = {"e": ember.zeros(0, 3), "s": ember.tensor(2.5)}
    out = st.load(st.save(d))
    assert tuple(out["e"].shape) == (0, 3) and out["s"].item() == 2.5
    np.testing.assert_array_equal(ember_values(out["e"]), np.zeros((0, 3), np.float32))
