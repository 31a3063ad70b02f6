"""Entry caches: MRU lookup, recompile events, limits and their warning, weakref cleanup,
one compile per miss under threads."""

from __future__ import annotations

import gc
import threading

import pytest

import ember
from ember.compiler import config, set_logs
from ember.compiler.cache import CacheEntry, CompileContext
from ember.compiler.guards import GuardBuilder


def f(x):
    return x


def _entry(value, tag=None):
    gb = GuardBuilder()
    gb.add_constant_match("L[0]", value)
    return CacheEntry(gb.build(), tag if tag is not None else value)


def test_lookup_hits_and_moves_to_front():
    cc = CompileContext().code_cache(f.__code__)
    for v in (1, 2, 3):
        assert cc.install(0, _entry(v), [v], {})
    assert [e.fn for e in cc.entries[0]] == [3, 2, 1]
    assert cc.lookup(0, [1], {}).fn == 1
    assert [e.fn for e in cc.entries[0]] == [1, 3, 2]
    assert cc.lookup(0, [9], {}) is None
    assert cc.lookup(4, [1], {}) is None
    assert cc.miss_reasons(0, [9], {})[0] == "EQUALS L[0]: expected 1 (int), actual 9 (int)"


def test_code_cache_per_code_and_context():
    a, b = CompileContext(), CompileContext()
    assert a.code_cache(f.__code__) is a.code_cache(f.__code__)
    assert a.code_cache(f.__code__) is not b.code_cache(f.__code__)


def test_recompile_is_logged_with_the_failed_guard(capsys):
    cc = CompileContext().code_cache(f.__code__)
    set_logs(recompiles=True)
    try:
        cc.install(0, _entry(1), [1], {})
        cc.install(0, _entry(2), [2], {})
    finally:
        set_logs()
    err = capsys.readouterr().err
    assert "[ember.compiler.recompiles] Recompiling f" in err
    assert "EQUALS L[0]: expected 1 (int), actual 2 (int)" in err
    assert cc.ctx.recompiles == 1 and cc.ctx.compiles == 2


def test_recompile_limit_warns_once_naming_the_limit():
    cc = CompileContext().code_cache(f.__code__)
    with config.patch(recompile_limit=2):
        assert cc.install(0, _entry(1), [1], {})
        assert cc.install(0, _entry(2), [2], {})
        with pytest.warns(RuntimeWarning, match=r"config.recompile_limit \(2\).*actual 3"):
            assert not cc.install(0, _entry(3), [3], {})
        assert not cc.install(0, _entry(4), [4], {})  # no second warning
    assert cc.native_only.startswith("recompile limit")
    assert len(cc) == 2


def test_accumulated_limit():
    ctx = CompileContext()
    with config.patch(accumulated_recompile_limit=3):
        for i in range(3):
            assert ctx.code_cache(f.__code__).install(i, _entry(i), [i], {})
        with pytest.warns(RuntimeWarning, match="accumulated_recompile_limit"):
            assert not ctx.code_cache(f.__code__).install(9, _entry(9), [9], {})


def test_entry_dropped_when_identity_guard_referent_dies():
    class Obj:
        pass

    o = Obj()
    gb = GuardBuilder()
    gb.add_id_match("L[0]", o)
    cc = CompileContext().code_cache(f.__code__)
    cc.install(0, CacheEntry(gb.build(), "fn"))
    assert len(cc) == 1
    del o
    gc.collect()
    assert len(cc) == 0


def test_threads_compile_once_per_miss():
    cc = CompileContext().code_cache(f.__code__)
    compiles = []
    barrier = threading.Barrier(4)

    def worker():
        barrier.wait()
        for _ in range(50):
            if cc.lookup(0, [1], {}) is None:
                with cc.lock:
                    if cc.lookup(0, [1], {}) is None:
                        compiles.append(1)
                        cc.install(0, _entry(1), [1], {})

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert compiles == [1] and len(cc) == 1


def test_reset_forgets_entries():
    ctx = CompileContext()
    ctx.code_cache(f.__code__).install(0, _entry(1))
    ctx.reset()
    assert ctx.entry_count() == 0


def test_config_validates_names_and_values():
    assert config.recompile_limit == 8
    assert config.cache_size_limit == config.recompile_limit
    with pytest.raises(AttributeError, match="no setting 'recompile_limt'"):
        config.recompile_limt = 3
    with pytest.raises(ValueError, match="non-negative int"):
        config.recompile_limit = -1
    with config.patch(cache_size_limit=3):
        assert config.recompile_limit == 3
    assert config.recompile_limit == 8
    assert ember._dynamo.config is config
