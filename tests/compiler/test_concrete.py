"""The concrete interpreter runs the corpus exactly like CPython (results, argument
mutations, exception types and messages), on the running Python version."""

from __future__ import annotations

import copy
import sys

import pytest

from ember.compiler import concrete
from tests.compiler.corpus import CASES

_IDS = [f"{i}-{f.__name__}" for i, (f, _, _) in enumerate(CASES)]


def _outcome(fn, args, kwargs):
    try:
        return ("ok", fn(*args, **kwargs))
    except Exception as e:  # noqa: BLE001 - compared below
        return ("raise", type(e), str(e))


def _same(a, b):
    if a == b:
        return True
    return repr(a) == repr(b)


def test_corpus_size():
    assert len({f for f, _, _ in CASES}) >= 150


@pytest.mark.parametrize("fn,args,kwargs", CASES, ids=_IDS)
def test_corpus_matches_cpython(fn, args, kwargs):
    a1, k1 = copy.deepcopy(args), copy.deepcopy(kwargs)
    a2, k2 = copy.deepcopy(args), copy.deepcopy(kwargs)
    expected = _outcome(fn, a1, k1)
    got = _outcome(lambda *a, **k: concrete.run(fn, *a, **k), a2, k2)
    assert got[0] == expected[0], (got, expected)
    if expected[0] == "ok":
        assert _same(got[1], expected[1]), (got[1], expected[1])
    else:
        assert got[1:] == expected[1:]
    assert _same(a1, a2) and _same(k1, k2), "argument mutations differ"


def test_exception_chaining_and_traceback_context():
    def f():
        try:
            raise KeyError("a")
        except KeyError:
            raise ValueError("b")  # noqa: B904 - implicit chaining under test

    with pytest.raises(ValueError) as ei:
        concrete.run(f)
    assert isinstance(ei.value.__context__, KeyError)
    assert sys.exc_info()[1] is None or not isinstance(sys.exc_info()[1], KeyError)


def test_step_by_step_equals_run():
    from tests.compiler.corpus import try_except_else_finally

    for x in (0, 1, 2):
        fr = concrete.make_frame(try_except_else_finally, (x,))
        pc = fr.info.entry_index
        while True:
            r = concrete.step(fr, pc)
            if isinstance(r, concrete.Return):
                break
            pc = r
        assert r.value == try_except_else_finally(x)


def test_call_hook_sees_calls():
    seen = []

    def hook(func, args, kwargs):
        seen.append(getattr(func, "__name__", None))
        return func(*args, **kwargs)

    def g(v):
        return v + 1

    def f(x):
        return g(x) * len([x])

    fr = concrete.make_frame(f, (3,), call=hook)
    assert concrete.execute(fr, fr.info.entry_index) == 4
    assert seen == ["g", "len"]
