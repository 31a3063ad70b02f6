"""A corpus of malicious pickles: weights-only loading rejects every one before it runs, the
scanner flags every one, and (proving the corpus is live) an unsafe load does run each one."""

from __future__ import annotations

import io
import os
import pickle
import struct

import pytest

import ember
import ember.serialization as es

from . import _evil
from ._helpers import zip_with_pickle

EVIL = _evil.__name__


# -- a tiny pickle assembler ---------------------------------------------------------------------
def G(module: str, name: str) -> bytes:
    return pickle.GLOBAL + f"{module}\n{name}\n".encode()


def S(text: str) -> bytes:
    raw = text.encode("utf-8", "surrogatepass")
    return pickle.BINUNICODE + struct.pack("<I", len(raw)) + raw


def SBU(text: str) -> bytes:  # protocol 4 short string
    raw = text.encode()
    return pickle.SHORT_BINUNICODE + bytes([len(raw)]) + raw


def T(*items: bytes) -> bytes:
    return pickle.MARK + b"".join(items) + pickle.TUPLE


def L(*items: bytes) -> bytes:
    return pickle.EMPTY_LIST + pickle.MARK + b"".join(items) + pickle.APPENDS


def D(**items: bytes) -> bytes:
    return pickle.EMPTY_DICT + pickle.MARK + b"".join(S(k) + v for k, v in items.items()) + \
        pickle.SETITEMS


def CALL(func: bytes, *args: bytes) -> bytes:
    return func + T(*args) + pickle.REDUCE


def I(n: int) -> bytes:  # noqa: E743
    return pickle.BININT1 + bytes([n])


def wrap(body: bytes, proto: int = 2) -> bytes:
    return pickle.PROTO + bytes([proto]) + body + pickle.STOP


# -- the corpus: name -> (builder(sentinel) -> pickle bytes, the global that gets refused) -------
# The weights-only unpickler refuses some payloads at an opcode it does not support (INST,
# STACK_GLOBAL, NEWOBJ_EX, ...) before reaching the global; the scanner still names the global.
def _sh(p):
    return f"touch '{p}'"


def _py(p):
    return f"open({p!r}, 'w').close()"


def _inner(p) -> str:
    return wrap(CALL(G("os", "system"), S(_sh(p)))).decode("latin-1")


CORPUS = {
    "os.system": (lambda p: wrap(CALL(G("os", "system"), S(_sh(p)))), "os.system"),
    "posix.system": (lambda p: wrap(CALL(G("posix", "system"), S(_sh(p)))), "posix.system"),
    "subprocess.call": (lambda p: wrap(CALL(G("subprocess", "call"), L(S("touch"), S(p)))),
                        "subprocess.call"),
    "subprocess.run": (lambda p: wrap(CALL(G("subprocess", "run"), L(S("touch"), S(p)))),
                       "subprocess.run"),
    "builtins.eval": (lambda p: wrap(CALL(G("builtins", "eval"), S(_py(p)))), "builtins.eval"),
    "builtins.exec": (lambda p: wrap(CALL(G("__builtin__", "exec"), S(_py(p)))),
                      "builtins.exec"),
    "builtins.open": (lambda p: wrap(CALL(G("builtins", "open"), S(p), S("w"))),
                      "builtins.open"),
    "__import__+getattr": (lambda p: wrap(CALL(CALL(
        G("builtins", "getattr"), CALL(G("builtins", "__import__"), S("os")), S("system")),
        S(_sh(p)))), "builtins.getattr"),
    "getattr chain": (lambda p: wrap(CALL(CALL(
        G("builtins", "getattr"), CALL(G("pathlib", "Path"), S(p)), S("touch")))),
        "builtins.getattr"),
    "functools.partial": (lambda p: wrap(CALL(CALL(
        G("functools", "partial"), G("os", "system"), S(_sh(p))))), "functools.partial"),
    "operator.attrgetter": (lambda p: wrap(CALL(CALL(
        CALL(G("operator", "attrgetter"), S("system")),
        CALL(G("importlib", "import_module"), S("os"))), S(_sh(p)))), "operator.attrgetter"),
    "operator.methodcaller": (lambda p: wrap(CALL(
        CALL(G("operator", "methodcaller"), S("touch")), CALL(G("pathlib", "Path"), S(p)))),
        "operator.methodcaller"),
    "pydoc.locate": (lambda p: wrap(CALL(CALL(G("pydoc", "locate"), S("os.system")),
                                         S(_sh(p)))), "pydoc.locate"),
    "importlib.import_module": (lambda p: wrap(CALL(CALL(
        G("builtins", "getattr"), CALL(G("importlib", "import_module"), S("subprocess")),
        S("run")), L(S("touch"), S(p)))), "builtins.getattr"),
    "INST": (lambda p: wrap(pickle.MARK + S(_sh(p)) + pickle.INST + b"os\nsystem\n"),
             "os.system"),
    "OBJ": (lambda p: wrap(pickle.MARK + G("os", "system") + S(_sh(p)) + pickle.OBJ),
            "os.system"),
    "NEWOBJ arbitrary class": (lambda p: wrap(G(EVIL, "EvilNew") + T(S(p)) + pickle.NEWOBJ),
                               f"{EVIL}.EvilNew"),
    "NEWOBJ_EX": (lambda p: wrap(G(EVIL, "EvilNew") + T(S(p)) + pickle.EMPTY_DICT +
                                 pickle.NEWOBJ_EX, 4), f"{EVIL}.EvilNew"),
    "BUILD arbitrary class": (lambda p: wrap(G(EVIL, "EvilSetstate") + pickle.EMPTY_TUPLE +
                                             pickle.NEWOBJ + D(path=S(p)) + pickle.BUILD),
                              f"{EVIL}.EvilSetstate"),
    "copyreg._reconstructor + BUILD": (lambda p: wrap(CALL(
        G("copy_reg", "_reconstructor"), G(EVIL, "EvilSetstate"), G("__builtin__", "object"),
        pickle.NONE) + D(path=S(p)) + pickle.BUILD), "copyreg._reconstructor"),
    "STACK_GLOBAL constant names": (lambda p: wrap(
        SBU("os") + SBU("system") + pickle.STACK_GLOBAL + T(S(_sh(p))) + pickle.REDUCE, 4),
        "os.system"),
    "STACK_GLOBAL computed names": (lambda p: wrap(
        CALL(G("operator", "add"), S("o"), S("s")) + SBU("system") + pickle.STACK_GLOBAL +
        T(S(_sh(p))) + pickle.REDUCE, 4), "operator.add"),
    "nested in a state_dict": (lambda p: wrap(
        CALL(G("collections", "OrderedDict")) + pickle.MARK + S("weight") + I(1) + S("evil") +
        CALL(G("os", "system"), S(_sh(p))) + pickle.SETITEMS), "os.system"),
    "inside rebuild args": (lambda p: wrap(CALL(
        G("torch._utils", "_rebuild_tensor_v2"), CALL(G("os", "system"), S(_sh(p))), I(0),
        T(), T(), pickle.NEWFALSE, CALL(G("collections", "OrderedDict")))), "os.system"),
    "timeit": (lambda p: wrap(CALL(G("timeit", "timeit"), S(_py(p)), S("pass"),
                                   G("time", "perf_counter"), I(1))), "timeit.timeit"),
    "pickle.loads nested": (lambda p: wrap(CALL(
        G("pickle", "loads"), CALL(G("_codecs", "encode"), S(_inner(p)), S("latin1")))),
        "pickle.loads"),
    "allowlist itself": (lambda p: wrap(CALL(
        G("ember.serialization", "add_safe_globals"), L(G("os", "system"))) + pickle.POP +
        CALL(G("os", "system"), S(_sh(p)))), "ember.serialization.add_safe_globals"),
    "sys.modules": (lambda p: wrap(CALL(CALL(
        G("builtins", "getattr"), CALL(CALL(G("operator", "itemgetter"), S("os")),
                                       G("sys", "modules")), S("system")), S(_sh(p)))),
        "builtins.getattr"),
    "shutil.copyfile": (lambda p: wrap(CALL(G("shutil", "copyfile"), S(os.devnull), S(p))),
                        "shutil.copyfile"),
    "code.InteractiveInterpreter": (lambda p: wrap(CALL(CALL(
        G("builtins", "getattr"), CALL(G("code", "InteractiveInterpreter")), S("runsource")),
        S(_py(p)))), "builtins.getattr"),
}


def _state_dict_payload(p) -> bytes:
    """A real ember.save archive: tensors plus one value that pickles as os.system(...)."""
    buf = io.BytesIO()
    es.save({"weight": ember.ones(2), "bias": ember.zeros(3), "evil": _evil.EvilReduce(p)}, buf)
    return buf.getvalue()


assert len(CORPUS) >= 25


@pytest.fixture(autouse=True)
def _clean_allowlist():
    es.clear_safe_globals()
    yield
    es.clear_safe_globals()


def _forms(name: str, sentinel) -> dict[str, bytes]:
    build, _ = CORPUS[name]
    pkl = build(str(sentinel))
    return {"plain": pkl, "zip": zip_with_pickle(pkl)}


@pytest.mark.parametrize("form", ["plain", "zip"])
@pytest.mark.parametrize("name", list(CORPUS))
def test_rejected_before_running(name, form, tmp_path):
    sentinel = tmp_path / "pwned"
    path = tmp_path / "ckpt.pt"
    path.write_bytes(_forms(name, sentinel)[form])
    refused = CORPUS[name][1]
    with pytest.raises(pickle.UnpicklingError) as info:
        es.load(path)
    assert isinstance(info.value, es.UnpicklingError)
    message = str(info.value)
    assert f"GLOBAL {refused}" in message or "Unsupported operand" in message, message
    assert "add_safe_globals" in message or "blocked" in message or "operand" in message
    assert not sentinel.exists()


@pytest.mark.parametrize("name", list(CORPUS))
def test_scan_flags_every_payload(name, tmp_path):
    sentinel = tmp_path / "pwned"
    for form, data in _forms(name, sentinel).items():
        path = tmp_path / f"{form}.pt"
        path.write_bytes(data)
        result = es.scan(path)
        assert not result.safe, (form, str(result))
        assert CORPUS[name][1] in result.unsafe_globals, (form, str(result))
    assert not sentinel.exists()


@pytest.mark.parametrize("name", list(CORPUS))
def test_corpus_is_live_under_unsafe_loading(name, tmp_path):
    """The payloads are real: the stdlib unpickler (weights_only=False) runs each one."""
    sentinel = tmp_path / "pwned"
    try:
        es.load(io.BytesIO(_forms(name, sentinel)["zip"]), weights_only=False)
    except Exception:
        pass  # many payloads leave a non-object behind; what matters is the side effect
    assert sentinel.exists()


def test_payload_nested_in_a_real_state_dict(tmp_path):
    sentinel = tmp_path / "pwned"
    path = tmp_path / "sd.pt"
    path.write_bytes(_state_dict_payload(str(sentinel)))
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL posix\.system|os\.system"):
        es.load(path)
    assert not sentinel.exists()
    result = es.scan(path)
    assert not result.safe and any(g.endswith(".system") for g in result.unsafe_globals)
    assert "torch._utils._rebuild_tensor_v2" in result.globals
    es.load(path, weights_only=False)  # and it is live
    assert sentinel.exists()


def test_blocked_even_when_allowlisted(tmp_path):
    sentinel = tmp_path / "pwned"
    es.add_safe_globals([os.system, (os.system, "posix.system"), (os.system, "os.system")])
    for name in ("os.system", "posix.system", "OBJ"):
        with pytest.raises(pickle.UnpicklingError):
            es.load(io.BytesIO(_forms(name, sentinel)["zip"]))
    with pytest.raises(pickle.UnpicklingError, match="blocked"):
        es.load(io.BytesIO(_forms("os.system", sentinel)["zip"]))
    assert not sentinel.exists()
