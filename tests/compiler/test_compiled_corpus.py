"""Every corpus function, run through ``ember.compile`` (symbolic capture, graph breaks,
concrete steps, native fallbacks), behaves exactly like CPython: same results, same argument
mutations, same exceptions. This exercises capture on plain Python, where every value is a
constant and every unsupported construct is a break."""

from __future__ import annotations

import copy

import pytest

import ember
from tests.compiler.corpus import CASES
from tests.compiler.test_concrete import _outcome, _same


@pytest.mark.parametrize("fn,args,kwargs", CASES,
                         ids=[f"{i}-{f.__name__}" for i, (f, _, _) in enumerate(CASES)])
def test_compiled_corpus_matches_cpython(fn, args, kwargs):
    a1, k1 = copy.deepcopy(args), copy.deepcopy(kwargs)
    a2, k2 = copy.deepcopy(args), copy.deepcopy(kwargs)
    expected = _outcome(fn, a1, k1)
    cf = ember.compile(fn, backend="eager")
    for _ in range(2):     # first call captures; the second runs the cached segments
        a2, k2 = copy.deepcopy(args), copy.deepcopy(kwargs)
        got = _outcome(cf, a2, k2)
        assert got[0] == expected[0], (got, expected)
        if expected[0] == "ok":
            assert _same(got[1], expected[1]), (got[1], expected[1])
        else:
            assert got[1:] == expected[1:]
        assert _same(a1, a2) and _same(k1, k2), "argument mutations differ"
