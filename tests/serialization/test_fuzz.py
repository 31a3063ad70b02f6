"""Fuzzing: mutated and truncated checkpoints and safetensors files raise only the documented
errors, never crash, never hang (inputs are small and bounded), and never allocate more than
the file could justify. Plus deterministic lying-header cases."""

from __future__ import annotations

import io
import pickle
import re
import struct
import tracemalloc
import zipfile

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

import ember
import ember.serialization as es
from ember.serialization import CheckpointError
from ember.serialization import safetensors as st
from ember.serialization._unpickler import Source, WeightsUnpickler
from ember.tensor import numpy_view

from ._helpers import rezip, save_bytes, torch_save_bytes, zip_with_pickle

DOCUMENTED = (pickle.UnpicklingError, CheckpointError)
FUZZ = settings(max_examples=120, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _sample_object(lib):
    a = lib.arange(12.0).reshape(3, 4)
    p = lib.nn.Parameter(lib.ones(2)) if lib is torch else \
        __import__("ember.tensor.parameter", fromlist=["Parameter"]).Parameter(ember.ones(2))
    return {"a": a, "t": a.t(), "row": a[1], "p": p, "i": lib.arange(5),
            "h": lib.ones(3, dtype=lib.float16), "meta": {"step": 3, "names": ["x", "y"]}}


EMBER_ZIP = save_bytes(_sample_object(ember))
TORCH_ZIP = torch_save_bytes(_sample_object(torch))
LEGACY = torch_save_bytes(_sample_object(torch), _use_new_zipfile_serialization=False)
TORCH_PKL = zipfile.ZipFile(io.BytesIO(TORCH_ZIP)).read("archive/data.pkl")
SAFETENSORS = st.save({"w": ember.arange(6.0).reshape(2, 3), "b": ember.ones(4, dtype=ember.int8),
                       "h": ember.ones(2, dtype=ember.float16)}, metadata={"k": "v"})


@hs.composite
def mutated(draw, base: bytes) -> bytes:
    """``base`` with a few bytes overwritten, a span deleted or inserted, or truncated."""
    data = bytearray(base)
    kind = draw(hs.sampled_from(["flip", "flip", "truncate", "delete", "insert"]))
    if kind == "flip":
        for _ in range(draw(hs.integers(1, 6))):
            data[draw(hs.integers(0, len(data) - 1))] = draw(hs.integers(0, 255))
    elif kind == "truncate":
        del data[draw(hs.integers(0, len(data) - 1)):]
    elif kind == "delete":
        start = draw(hs.integers(0, len(data) - 1))
        del data[start:start + draw(hs.integers(1, 16))]
    else:
        at = draw(hs.integers(0, len(data)))
        data[at:at] = draw(hs.binary(min_size=1, max_size=16))
    return bytes(data)


def _touch(obj, depth: int = 0) -> None:
    """Look at every loaded tensor's first and last element (bounds are real)."""
    if depth > 50:
        return
    if isinstance(obj, ember.Tensor):
        if obj.device.type == "cpu" and obj.numel():
            arr = numpy_view(obj)
            arr.flat[0], arr.flat[arr.size - 1]  # noqa: B018
    elif isinstance(obj, dict):
        for v in list(obj.values())[:100]:
            _touch(v, depth + 1)
    elif isinstance(obj, list | tuple):
        for v in list(obj)[:100]:
            _touch(v, depth + 1)


def _check(load, data: bytes, errors=DOCUMENTED) -> None:
    tracemalloc.start()
    try:
        try:
            _touch(load(data))
        except errors:
            pass
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # A small pool segment of the caching allocator is 2 MiB; nothing may scale with a header.
    assert peak <= 32 * len(data) + (3 << 20), peak


def _load_bytes(data: bytes):
    return es.load(io.BytesIO(data))


@FUZZ
@given(mutated(EMBER_ZIP))
def test_fuzz_ember_zip(data):
    _check(_load_bytes, data)


@FUZZ
@given(mutated(TORCH_ZIP))
def test_fuzz_torch_zip(data):
    _check(_load_bytes, data)


@FUZZ
@given(mutated(TORCH_PKL))
def test_fuzz_pickle_inside_a_valid_archive(data):
    """CRCs stay valid, so the mutations reach the weights-only unpickler and the rebuilders."""
    records = {n.split("/")[-1]: zipfile.ZipFile(io.BytesIO(TORCH_ZIP)).read(n)
               for n in zipfile.ZipFile(io.BytesIO(TORCH_ZIP)).namelist() if "/data/" in n}
    _check(_load_bytes, zip_with_pickle(data, records))


@FUZZ
@given(mutated(LEGACY))
def test_fuzz_legacy(data):
    _check(_load_bytes, data)


@FUZZ
@given(mutated(SAFETENSORS))
def test_fuzz_safetensors(data):
    _check(st.load, data)


@FUZZ
@given(hs.binary(max_size=64))
def test_fuzz_random_bytes(data):
    _check(_load_bytes, data)
    _check(st.load, data)
    _check(lambda d: WeightsUnpickler(Source(d), lambda pid: None).load(), data)


def test_fuzz_baselines_load():
    """The unmutated inputs load, so the fuzzers start from valid files."""
    for data in (EMBER_ZIP, TORCH_ZIP, LEGACY):
        out = _load_bytes(data)
        assert out["row"].tolist() == [4.0, 5.0, 6.0, 7.0]
    assert st.load(SAFETENSORS)["w"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


# -- lying headers, deterministically -----------------------------------------------------------
def _peak(fn) -> int:
    tracemalloc.start()
    try:
        with pytest.raises(DOCUMENTED):
            fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_storage_numel_larger_than_its_record():
    pkl = zipfile.ZipFile(io.BytesIO(EMBER_ZIP)).read("archive/data.pkl")
    # ('storage', FloatStorage, '0', 'cpu', 12): claim 2**40 elements instead (LONG1).
    lying = re.sub(rb"(X\x03\x00\x00\x00cpuq.)K\x0c",
                   lambda m: m.group(1) + pickle.LONG1 + b"\x06" + (2**40).to_bytes(6, "little"),
                   pkl, count=1, flags=re.S)
    assert lying != pkl
    data = rezip(EMBER_ZIP, {"archive/data.pkl": lying})
    assert _peak(lambda: _load_bytes(data)) < 1 << 20
    with pytest.raises(CheckpointError, match="holds 48 bytes"):
        _load_bytes(data)


def test_view_outside_its_storage():
    obj = {"v": ember.arange(4.0)[1:]}
    pkl = zipfile.ZipFile(io.BytesIO(save_bytes(obj))).read("archive/data.pkl")
    lying = pkl.replace(b"K\x01K\x03\x85", b"K\x03K\x03\x85", 1)  # offset 1 -> 3
    assert lying != pkl
    with pytest.raises(CheckpointError, match="reach element 5 of a storage of 4"):
        _load_bytes(rezip(save_bytes(obj), {"archive/data.pkl": lying}))


def test_zip_central_directory_lies():
    data = bytearray(EMBER_ZIP)
    eocd = data.rfind(b"PK\x05\x06")
    struct.pack_into("<I", data, eocd + 12, 2**31)  # central directory size
    with pytest.raises(CheckpointError, match="central directory"):
        _load_bytes(bytes(data))
    data = bytearray(EMBER_ZIP)
    cd = data.find(b"PK\x01\x02")
    struct.pack_into("<II", data, cd + 20, 2**31, 2**31)  # sizes of the first record
    assert _peak(lambda: _load_bytes(bytes(data))) < 1 << 20


def test_path_traversal_member_names_rejected():
    out = io.BytesIO()
    from ember.serialization._zip import ZipWriter
    for bad in ("../evil/data.pkl", "/abs/data.pkl", "a\\..\\data.pkl", "a/../../data.pkl"):
        out = io.BytesIO()
        w = ZipWriter(out)
        w.write_record(bad, b"\x80\x02N.")
        w.close()
        with pytest.raises(CheckpointError, match="unsafe record name"):
            _load_bytes(out.getvalue())


def test_legacy_storage_larger_than_the_file():
    data = bytearray(LEGACY)
    # The first storage persistent id holds numel 12 as BININT1 after 'cpu'.
    at = data.find(b"X\x03\x00\x00\x00cpu")
    head = data[at:at + 12]
    assert b"K\x0c" in head
    i = at + head.index(b"K\x0c")
    data[i:i + 2] = pickle.BININT + (2**30).to_bytes(4, "little")
    assert _peak(lambda: _load_bytes(bytes(data))) < 1 << 20
    with pytest.raises(CheckpointError, match="more than the rest of the file"):
        _load_bytes(bytes(data))


def test_safetensors_shape_larger_than_the_file():
    head = b'{"w":{"dtype":"F32","shape":[1000000000000],"data_offsets":[0,4000000000000]}}'
    blob = struct.pack("<Q", len(head)) + head + bytes(8)
    assert _peak(lambda: st.load(blob)) < 1 << 20


def test_truncated_files_raise_documented_errors():
    for base in (EMBER_ZIP, TORCH_ZIP, LEGACY):
        for cut in range(0, len(base), max(1, len(base) // 97)):
            try:
                _load_bytes(base[:cut])
            except DOCUMENTED:
                continue
            raise AssertionError(f"truncation at {cut} loaded")
    for cut in range(len(SAFETENSORS)):
        with pytest.raises(CheckpointError):
            st.load(SAFETENSORS[:cut])


def test_deep_nesting_does_not_recurse():
    deep = pickle.PROTO + b"\x02" + pickle.EMPTY_LIST * 200_000 + pickle.APPEND * 199_999 + \
        pickle.STOP
    out = es.load(io.BytesIO(zip_with_pickle(deep)))
    depth = 0
    while out:
        out, depth = out[0], depth + 1
    assert depth == 199_999
    np.testing.assert_equal(depth, 199_999)
