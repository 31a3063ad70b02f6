"""The weights-only rules and the allowlist API (B8.4, B8.5), plus atomic saving."""

from __future__ import annotations

import io
import os
import pickle
from collections import Counter, OrderedDict

import pytest
import torch

import ember
import ember.serialization as es
from ember.serialization import _zip

from ._helpers import save_bytes, torch_save_bytes, zip_with_pickle
from .test_malicious import CALL, D, G, I, L, S, T, wrap


class Point:
    """A user class that is safe to rebuild once allowlisted."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __eq__(self, other):
        return isinstance(other, Point) and (self.x, self.y) == (other.x, other.y)


@pytest.fixture(autouse=True)
def _clean_allowlist():
    es.clear_safe_globals()
    yield
    es.clear_safe_globals()


def _load(pkl: bytes, **kw):
    return es.load(io.BytesIO(zip_with_pickle(pkl)), **kw)


def test_unknown_class_refused_with_remedy():
    data = save_bytes({"p": Point(1, 2), "w": ember.ones(1)})
    with pytest.raises(pickle.UnpicklingError) as info:
        es.load(io.BytesIO(data))
    msg = str(info.value)
    assert f"GLOBAL {__name__}.Point was not an allowed global" in msg
    assert "add_safe_globals([Point])" in msg and "safe_globals([Point])" in msg


def test_safe_globals_context_and_add_get_clear():
    data = save_bytes({"p": Point(1, 2)})
    with es.safe_globals([Point]):
        assert es.load(io.BytesIO(data))["p"] == Point(1, 2)
        assert es.get_safe_globals() == [Point]
    with pytest.raises(pickle.UnpicklingError):
        es.load(io.BytesIO(data))
    es.add_safe_globals([Point])
    assert es.get_safe_globals() == [Point]
    assert es.load(io.BytesIO(data))["p"] == Point(1, 2)
    es.clear_safe_globals()
    assert es.get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError):
        es.load(io.BytesIO(data))


def test_allowlist_under_another_name():
    pkl = wrap(CALL(G("mylib.geometry", "Pt"), I(3), I(4)))
    with pytest.raises(pickle.UnpicklingError, match="mylib.geometry.Pt"):
        _load(pkl)
    es.add_safe_globals([(Point, "mylib.geometry.Pt")])
    assert _load(pkl) == Point(3, 4)
    assert es.get_safe_globals() == [(Point, "mylib.geometry.Pt")]


def test_torch_refuses_and_accepts_the_same_user_class():
    """Parity: torch refuses the class ember refuses, and the same remedy works in both."""
    data = save_bytes({"p": Point(5, 6)})
    with pytest.raises(pickle.UnpicklingError, match="add_safe_globals"):
        torch.load(io.BytesIO(data), weights_only=True)
    with torch.serialization.safe_globals([Point]), es.safe_globals([Point]):
        assert torch.load(io.BytesIO(data), weights_only=True)["p"] == Point(5, 6)
        assert es.load(io.BytesIO(data))["p"] == Point(5, 6)


@pytest.mark.parametrize("pkl, match", [
    (wrap(CALL(G("torch", "float32"), I(1))), "unrecognized function"),
    (wrap(CALL(G("torch", "Tensor"), I(100))), "unrecognized function"),
    (wrap(CALL(G("torch", "FloatStorage"))), "unrecognized function"),
    (wrap(T(S("module"), S("x")) + b"Q"), "Only persistent_load of storage"),
    (wrap(b"Q"), "stack underflow"),
    (wrap(pickle.EMPTY_DICT + I(1) + pickle.APPEND), "Can only append to lists"),
    (wrap(CALL(G("builtins", "set"), L()) + I(1) + I(2) + pickle.SETITEM),
     "Can only SETITEM"),
    (wrap(CALL(G("builtins", "bytearray"), pickle.BININT + (10**9).to_bytes(4, "little"))),
     "bytearray: refused"),
    (wrap(CALL(G("_codecs", "encode"), S("x"), S("rot13"))), "_codecs.encode: refused"),
    (wrap(CALL(G("collections", "OrderedDict")) + I(1) + pickle.BUILD), "refused state"),
    (wrap(pickle.EMPTY_LIST + D(x=I(1)) + pickle.BUILD), "unsupported type"),
    (wrap(G("collections", "Counter") + T() + pickle.NEWOBJ), "unsupported class"),
    (wrap(pickle.BINGET + b"\x07"), "memo key 7"),
    (wrap(pickle.MARK + pickle.APPENDS), "Can only extend lists"),
    (wrap(pickle.TUPLE), "MARK expected"),
    (pickle.PROTO + b"\x02" + pickle.NONE, "truncated"),
    (wrap(pickle.BINUNICODE + b"\xff\xff\xff\x7f" + b"abc"), "truncated"),
    (wrap(G("os", "path") + pickle.POP + pickle.NONE), "blocked"),
    (wrap(G("builtins", "eval")), "blocked"),
    (wrap(b"\x95" + b"\x00" * 8 + pickle.NONE, 4), r"Unsupported operand 149 \(FRAME\)"),
])
def test_weights_only_rules(pkl, match):
    with pytest.raises(pickle.UnpicklingError, match=match):
        _load(pkl)


def test_tensor_state_cannot_touch_internals():
    pkl = save_bytes(ember.ones(2))  # data.pkl of a real checkpoint + BUILD {'_storage': 1}
    z = _zip.ZipReader(io.BytesIO(pkl))
    data = z.read("archive/data.pkl")
    evil = data[:-1] + D(_storage=I(1)) + pickle.BUILD + pickle.STOP
    nice = data[:-1] + D(note=S("hi")) + pickle.BUILD + pickle.STOP
    records = {"0": z.read("archive/data/0")}
    with pytest.raises(pickle.UnpicklingError, match="_storage"):
        es.load(io.BytesIO(zip_with_pickle(evil, records)))
    t = es.load(io.BytesIO(zip_with_pickle(nice, records)))
    assert t.note == "hi" and t.tolist() == [1.0, 1.0]


def test_plain_containers_and_allowed_types():
    obj = {"c": Counter("aab"), "od": OrderedDict(a=1), "n": None, "f": 1.5, "l": [1, [2]]}
    assert es.load(io.BytesIO(torch_save_bytes(obj))) == obj


def test_error_classes():
    assert issubclass(es.UnpicklingError, pickle.UnpicklingError)
    assert issubclass(es.CheckpointError, RuntimeError)
    assert issubclass(es.safetensors.SafetensorError, es.CheckpointError)


# -- atomic save --------------------------------------------------------------------------------
class Exploding:
    def __reduce__(self):
        raise RuntimeError("boom in the middle of pickling")


def test_atomic_save_keeps_the_old_file_on_error(tmp_path, monkeypatch):
    path = tmp_path / "model.pt"
    es.save({"w": ember.ones(3)}, path)
    before = path.read_bytes()
    with pytest.raises(RuntimeError, match="boom"):
        es.save({"w": ember.zeros(3), "x": Exploding()}, path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["model.pt"]

    calls = []
    real = _zip.ZipWriter.write_record

    def crash_on_a_storage(self, name, data):
        calls.append(name)
        if "/data/" in name:  # some bytes of the new archive are already on disk
            raise OSError("disk full")
        return real(self, name, data)

    monkeypatch.setattr(_zip.ZipWriter, "write_record", crash_on_a_storage)
    with pytest.raises(OSError, match="disk full"):
        es.save({"w": ember.zeros(3)}, path)
    assert any("/data/" in c for c in calls)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["model.pt"]
    monkeypatch.undo()
    assert es.load(path)["w"].tolist() == [1.0, 1.0, 1.0]


def test_atomic_save_also_for_new_files_and_keeps_mode(tmp_path):
    path = tmp_path / "new.pt"
    with pytest.raises(RuntimeError):
        es.save([Exploding()], path)
    assert os.listdir(tmp_path) == []
    es.save([ember.ones(1)], path)
    os.chmod(path, 0o640)
    es.save([ember.zeros(1)], path)
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert es.load(path)[0].tolist() == [0.0]
