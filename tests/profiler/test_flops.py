"""``profile(with_flops=True)`` against torch's profiler: the same FLOP estimates per operator,
the same total over a program with a backward pass, and the table's scaled FLOPs column."""

import numpy as np
import pytest
import torch
from torch.profiler import profile as torch_profile

import ember
import ember.nn.functional as F
from ember.profiler import profile


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    shapes = {"a": (8, 4), "b": (4, 6), "c": (6,), "x": (2, 3, 10, 10), "w": (5, 3, 3, 3),
              "xg": (2, 4, 6, 6), "wg": (4, 2, 3, 3), "bb": (3, 8, 4), "bc": (3, 4, 6),
              "bi": (3, 8, 6), "lw": (6, 4), "lb": (6,), "v": (4,)}
    return {k: rng.standard_normal(s) for k, s in shapes.items()}


def _program(lib, F_, t, requires_grad):
    """The same calls in torch and ember; returns a scalar loss when gradients are wanted."""
    lib.mm(t["a"], t["b"])
    lib.addmm(t["c"], t["a"], t["b"])
    lib.bmm(t["bb"], t["bc"])
    lib.baddbmm(t["bi"], t["bb"], t["bc"], beta=0.5, alpha=2.0)
    F_.conv2d(t["x"], t["w"], stride=2, padding=1)
    F_.conv2d(t["xg"], t["wg"], groups=2)
    F_.conv1d(t["x"][:, :, 0], t["w"][:, :, 0])
    t["a"] * t["a"]
    t["a"] + t["a"]
    t["a"] * 2.0
    t["a"].add(t["a"], alpha=3.0)
    t["a"] - t["a"]
    t["a"] / 2.0
    t["a"].relu()
    t["a"] @ t["v"]
    y = F_.linear(t["a"], t["lw"], t["lb"])
    if requires_grad:
        loss = (y * t["c"]).sum()  # no gradient accumulation: engines sum differently
        loss.backward()


def _run_torch(arrays, requires_grad):
    torch.set_num_threads(1)
    t = {k: torch.tensor(v, requires_grad=requires_grad and k in ("a", "lw"))
         for k, v in arrays.items()}
    with torch_profile(with_flops=True, record_shapes=True) as prof:
        _program(torch, torch.nn.functional, t, requires_grad)
    return prof


def _run_ember(arrays, requires_grad):
    t = {k: ember.tensor(v, requires_grad=requires_grad and k in ("a", "lw"))
         for k, v in arrays.items()}
    with profile(with_flops=True, record_shapes=True) as prof:
        _program(ember, F, t, requires_grad)
    return prof


def _flops_by_name(events, names):
    out = {}
    for e in events:
        if e.name in names and e.flops:
            out.setdefault(e.name, []).append(e.flops)
    return out


def test_flops_per_operator_equal_torchs():
    arrays = _inputs()
    te, ee = _run_torch(arrays, False).events(), _run_ember(arrays, False).events()
    names = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::mul", "aten::add")
    assert _flops_by_name(ee, names) == _flops_by_name(te, names)
    conv_torch = [e.flops for e in te if e.name == "aten::conv2d"]
    conv_ember = [e.flops for e in ee if e.name == "aten::convolution" and e.flops]
    assert conv_ember == conv_torch == [13500, 4608]
    assert all(e.flops == 0 for e in ee if e.name in ("aten::sub", "aten::div", "aten::relu"))


@pytest.mark.parametrize("requires_grad", [False, True])
def test_total_flops_of_a_program_equal_torchs(requires_grad):
    arrays = _inputs(1)
    torch_total = sum(e.flops for e in _run_torch(arrays, requires_grad).events())
    ember_total = sum(e.flops for e in _run_ember(arrays, requires_grad).events())
    assert ember_total == torch_total
    averages = _run_ember(arrays, requires_grad).key_averages()
    assert sum(a.flops for a in averages) == torch_total


def test_table_shows_flops_scaled_by_the_smallest_count():
    arrays = _inputs()
    table = _run_ember(arrays, False).key_averages().table(row_limit=-1)
    header = table.splitlines()[1]
    assert header.rstrip().endswith("Total FLOPs")
    mm_row = next(r for r in table.splitlines() if r.strip().startswith("aten::mm "))
    assert mm_row.split()[-1] == "384.000"
    relu_row = next(r for r in table.splitlines() if r.strip().startswith("aten::relu "))
    assert relu_row.split()[-1] == "--"

    big = ember.ones(500, 500)
    with profile(with_flops=True) as prof:
        big @ big
    table = prof.key_averages().table()
    assert "Total MFLOPs" in table.splitlines()[1]
    assert "250.000" in table
    with profile(with_flops=True) as prof:
        big.relu()
    assert "FLOPs" not in prof.key_averages().table()  # no operator counted: no column


def test_without_with_flops_nothing_is_counted():
    with profile() as prof:
        ember.ones(3, 3) @ ember.ones(3, 3)
    assert [e.flops for e in prof.events()] == [0, 0, 0]
    assert "FLOPs" not in prof.key_averages().table()
    assert sorted(prof.key_averages(), key=lambda e: e.flops)[0].flops == 0
