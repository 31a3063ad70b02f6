"""Guards: generated checks per kind, their order, failure reasons, dedupe, weakrefs."""

from __future__ import annotations

import gc

import pytest

import ember
from ember.compiler.guards import GuardBuilder


def _build(*adds):
    gb = GuardBuilder()
    for kind, *args in adds:
        getattr(gb, f"add_{kind}")(*args)
    return gb.build()


def test_tensor_match_hit_and_each_kind_of_miss():
    x = ember.ones(3, 4)
    gs = _build(("tensor_match", "L[0]", x))
    assert gs([ember.zeros(3, 4)], {}) == 0
    cases = {
        "dtype mismatch: expected ember.float32, actual ember.float64": ember.ones(3, 4).double(),
        "size mismatch at index 1: expected 4, actual 5": ember.ones(3, 5),
        "rank mismatch: expected 2, actual 1": ember.ones(12),
        "stride mismatch: expected (4, 1), actual (1, 3)": ember.ones(4, 3).t(),
        "requires_grad mismatch: expected False, actual True": ember.ones(3, 4,
                                                                          requires_grad=True),
        "expected a Tensor, got list": [1.0],
    }
    for message, value in cases.items():
        assert gs([value], {}) == 1
        assert gs.reason([value], {}) == f"TENSOR_MATCH L[0]: {message}"


def test_non_leaf_requires_grad_is_seen():
    gs = _build(("tensor_match", "L[0]", ember.ones(2)))
    w = ember.ones(2, requires_grad=True)
    assert gs([w * 2], {}) == 1


def test_parameter_type_is_guarded():
    p = ember.nn.Parameter(ember.ones(2))
    gs = _build(("tensor_match", "L[0]", p))
    assert gs([p], {}) == 0
    assert "type mismatch" in gs.reason([ember.ones(2, requires_grad=True)], {})


def test_dynamic_dims_ignore_size_and_strides():
    gs = _build(("tensor_match", "L[0]", ember.ones(3, 4), (0,)))
    assert gs([ember.ones(7, 4)], {}) == 0
    assert gs([ember.ones(7, 5)], {}) == 1
    assert "index 1" in gs.reason([ember.ones(7, 5)], {})


def test_constant_match_is_type_strict():
    gs = _build(("constant_match", "L[0]", 1))
    assert gs([1], {}) == 0
    assert gs([1.0], {}) == 1 and gs([True], {}) == 1
    assert gs.reason([2], {}) == "EQUALS L[0]: expected 1 (int), actual 2 (int)"
    assert _build(("constant_match", "L[0]", None))([None], {}) == 0
    assert _build(("constant_match", "L[0]", float("nan")))([float("nan")], {}) == 0
    assert _build(("constant_match", "G['k']", (1, 2)))(None, {"k": (1, 2)}) == 0


def test_id_match_uses_weakrefs_and_notices_death():
    class Obj:
        pass

    o = Obj()
    gs = _build(("id_match", "L[0]", o))
    dead = []
    gs.on_dead(lambda: dead.append(True))
    assert gs([o], {}) == 0 and gs([Obj()], {}) == 1
    assert "expected the object Obj" in gs.reason([Obj()], {})
    del o
    gc.collect()
    assert dead == [True] and not gs.alive()
    # objects without weakref support are held strongly
    assert _build(("id_match", "L[0]", 5))([5], {}) == 0


def test_type_len_and_dict_keys():
    gs = _build(("type_match", "L[0]", [1]), ("len_match", "L[1]", (1, 2)),
                ("dict_keys_match", "L[2]", {"a": 1, "b": 2}))
    assert gs([[9], (3, 4), {"a": 0, "b": 0}], {}) == 0
    assert gs.reason([(9,), (3, 4), {}], {}).startswith("TYPE_MATCH L[0]: expected type list")
    assert gs.reason([[9], (3,), {}], {}) == "LEN L[1]: length mismatch: expected 2, actual 1"
    assert gs.reason([[9], (3, 4), {"b": 0, "a": 0}], {}) == \
        "DICT_KEYS L[2]: keys mismatch: expected ['a', 'b'], actual ['b', 'a']"


def test_module_match_sees_train_eval_and_parameter_swap_not_inplace_updates():
    m = ember.nn.Linear(2, 2)
    gs = _build(("module_match", "L[0]", m))
    assert gs([m], {}) == 0
    with ember.no_grad():
        m.weight.add_(1)  # optimizer-style in-place update: still a hit
    assert gs([m], {}) == 0
    m.eval()
    assert gs.reason([m], {}) == ("MODULE_MATCH L[0]: training mode changed: expected True, "
                                  "actual False")
    m.train()
    m.weight = ember.nn.Parameter(ember.zeros(2, 2))
    assert "module structure changed" in gs.reason([m], {})
    assert "expected the module" in gs.reason([ember.nn.Linear(2, 2)], {})


def test_global_state_grad_mode_and_default_dtype():
    gs = _build(("global_state",))
    assert gs(None, None) == 0
    with ember.no_grad():
        assert gs.reason(None, None) == \
            "GLOBAL_STATE: grad mode changed: expected True, actual False"
    ember.set_default_dtype(ember.float64)
    try:
        assert "default dtype changed" in gs.reason(None, None)
    finally:
        ember.set_default_dtype(ember.float32)


def test_no_alias():
    x = ember.ones(4)
    gs = _build(("no_alias", ["L[0]", "L[1]"]))
    assert gs([x, ember.ones(4)], {}) == 0
    assert gs([x, x[::2]], {}) == 1
    assert "share memory" in gs.reason([x, x[::2]], {})


def test_checks_ordered_cheap_first_and_deduplicated():
    gb = GuardBuilder()
    gb.add_global_state()
    gb.add_tensor_match("L[0]", ember.ones(2))
    gb.add_tensor_match("L[0]", ember.ones(2))
    gb.add_constant_match("L[1]", 3)
    gs = gb.build()
    assert [c.kind for c in gs.checks] == ["EQUALS", "TENSOR_MATCH", "GLOBAL_STATE"]
    assert gs.source.count("v0 = L[1]") == 1
    assert "# TENSOR_MATCH L[0]" in gs.source and gs.source.startswith("def guard(L, G):")
    assert gs.describe()[0] == "EQUALS L[1]: == 3"


def test_chains_inside_an_expression_share_the_hoisted_prefixes():
    """An expression over several chains (a module's hook-table lengths, a module found
    through ``__import__``) walks each shared prefix once."""
    m = ember.nn.Sequential(ember.nn.Linear(2, 2))
    gb = GuardBuilder()
    gb.add_id_match("L[0]._modules['0']", m[0])
    expr = "(len(L[0]._modules['0']._forward_hooks), len(L[0]._modules['0']._backward_hooks))"
    gb.add_constant_match(expr, (0, 0))
    mod = "__import__('sys').modules['ember.nn.modules.module']"
    gb.add_constant_match(f"(len({mod}._global_forward_hooks), len({mod}._global_forward_pre_hooks))",
                          (0, 0))
    gs = gb.build()
    code = [ln.split("#")[0] for ln in gs.source.splitlines()]
    assert sum("._modules" in ln for ln in code) == 1
    assert sum("__import__" in ln for ln in code) == 1
    assert gs([m], {}) == 0
    handle = m[0].register_forward_hook(lambda *a: None)
    assert gs([m], {}) == 2
    handle.remove()
    assert gs([m], {}) == 0


def test_unreadable_source_is_a_miss_with_reason():
    gs = _build(("constant_match", "L[0].missing", 1))
    assert gs([object()], {}) == -1
    assert "could not be read (AttributeError" in gs.reason([object()], {})


@pytest.mark.parametrize("n", [1, 2])
def test_first_failing_check_number(n):
    gs = _build(("constant_match", "L[0]", 1), ("constant_match", "L[1]", 2))
    values = [1, 2]
    values[n - 1] = 0
    assert gs(values, {}) == n


def test_shared_source_prefixes_are_read_once():
    m = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.Linear(2, 2))
    gb = GuardBuilder()
    gb.add_tensor_match("L[0][0].weight", m[0].weight)
    gb.add_tensor_match("L[0][0].bias", m[0].bias)
    gb.add_tensor_match("L[0][1].weight", m[1].weight)
    gs = gb.build()
    assert gs.source.count("= L[0]\n") == 1 and gs.source.count("[0]\n") == 2
    assert gs([m], {}) == 0
    m[0].bias = ember.nn.Parameter(ember.ones(3))
    assert gs.reason([m], {}) == "TENSOR_MATCH L[0][0].bias: size mismatch at index 0: " \
        "expected 2, actual 3"
