"""ember.profiler against torch.profiler: events, shapes, time sums, memory, traces, schedule."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest
import torch
import torch.profiler as tprof

import ember
from ember import memory
from ember.autograd import engine
from ember.dispatch.modes import current_modes
from ember.profiler import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    record_function,
    schedule,
    tensorboard_trace_handler,
)
from ember.profiler.report import memory_timeline, operator_times, write_report


def _program(lib, x, w):
    with (record_function if lib is ember else tprof.record_function)("fwd"):
        y = x.mm(w).add(1.0).relu().sum()
    y.backward()


def _inputs(lib):
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((4, 3)).astype(np.float32), requires_grad=True)
    w = lib.tensor(rng.standard_normal((3, 5)).astype(np.float32))
    return x, w


def _profiled(**kw):
    x, w = _inputs(ember)
    with profile(activities=[ProfilerActivity.CPU], **kw) as prof:
        _program(ember, x, w)
    return prof


@pytest.fixture(scope="module")
def torch_events():
    x, w = _inputs(torch)
    with tprof.profile(activities=[tprof.ProfilerActivity.CPU], record_shapes=True) as prof:
        _program(torch, x, w)
    return prof.events()


def test_forward_events_names_counts_shapes_as_torch(torch_events):
    prof = _profiled(record_shapes=True)
    ours = [e for e in prof.events() if e.cpu_parent is not None and e.cpu_parent.name == "fwd"]
    theirs = [e for e in torch_events if e.cpu_parent is not None and e.cpu_parent.name == "fwd"]
    assert [e.name for e in ours] == [e.name for e in theirs] == \
        ["aten::mm", "aten::add", "aten::relu", "aten::sum"]
    for a, b in zip(ours, theirs):
        assert a.input_shapes[0] == b.input_shapes[0]
    by_name = {e.name: e for e in ours}
    for name in ("aten::mm", "aten::add", "aten::relu"):  # same schema arguments as torch
        assert by_name[name].input_shapes == {e.name: e for e in theirs}[name].input_shapes
    counts = {a.key: a.count for a in prof.key_averages()}
    assert counts["fwd"] == 1 and counts["aten::relu"] == 1
    assert counts["aten::mm"] == 2  # forward and MmBackward0


def test_backward_nodes_are_events(torch_events):
    prof = _profiled()
    prefix = "autograd::engine::evaluate_function: "
    ours = [e.name[len(prefix):] for e in prof.events() if e.name.startswith(prefix)]
    theirs = [e.name[len(prefix):] for e in torch_events if e.name.startswith(prefix)]
    acc = "torch::autograd::AccumulateGrad"
    assert ours == theirs == ["SumBackward0", "ReluBackward0", "AddBackward0", "MmBackward0",
                              acc]
    for e in prof.events():
        if e.name == acc:
            assert e.cpu_parent.name == prefix + acc
    mm_node = next(e for e in prof.events() if e.name == "MmBackward0")
    assert mm_node.cpu_parent.name == prefix + "MmBackward0"
    assert "aten::mm" in [c.name for c in mm_node.cpu_children]


def test_self_time_adds_up_to_total():
    prof = _profiled()
    events = prof.events()
    top_total = sum(e.cpu_time_total for e in events if e.cpu_parent is None)
    self_total = sum(e.self_cpu_time_total for e in events)
    assert math.isclose(self_total, top_total, rel_tol=1e-9, abs_tol=1e-6)
    for e in events:  # children lie inside their parent
        assert e.self_cpu_time_total >= -1e-6
        for c in e.cpu_children:
            assert e.time_range.start <= c.time_range.start <= c.time_range.end \
                <= e.time_range.end
    avg = events.key_averages()
    assert math.isclose(sum(a.self_cpu_time_total for a in avg), self_total, rel_tol=1e-9)
    assert math.isclose(avg.total_average().cpu_time_total,
                        sum(e.cpu_time_total for e in events), rel_tol=1e-9)


def test_memory_events_sum_to_the_allocators_peak():
    x = ember.randn(64, 32, requires_grad=True)
    w = ember.randn(32, 48)
    memory.reset_peak_memory_stats()
    start = memory.memory_allocated()
    with profile(profile_memory=True) as prof:
        h = (x @ w).tanh()
        loss = (h * h).sum()
        loss.backward()
        del h, loss
    peak, end = memory.max_memory_allocated(), memory.memory_allocated()
    records = prof.events().memory_records
    running = np.cumsum([start] + [m.nbytes for m in records])
    assert running.max() == peak
    assert running[-1] == end
    assert [m.total_allocated for m in records] == list(running[1:])
    # every record is attributed once: to an event's self memory or to a [memory] event
    assert sum(e.self_cpu_memory_usage for e in prof.events()) == sum(m.nbytes for m in records)
    mm = next(e for e in prof.events() if e.name == "aten::matmul")
    assert mm.self_cpu_memory_usage == memory.round_size(64 * 48 * 4)


def test_chrome_trace_is_valid_and_nested(tmp_path):
    prof = _profiled(record_shapes=True, profile_memory=True, with_stack=True)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    data = json.loads(path.read_text())
    spans = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert len(spans) == sum(1 for e in prof.events() if e.name != "[memory]")
    assert len([e for e in data["traceEvents"] if e["name"] == "[memory]"]) == \
        len(prof.events().memory_records)
    by_tid: dict = {}
    for e in spans:
        by_tid.setdefault(e["tid"], []).append(e)
    for events in by_tid.values():  # each span ends inside the span it begins in
        events.sort(key=lambda e: (e["ts"], -e["dur"]))
        open_ends: list = []
        for e in events:
            while open_ends and open_ends[-1] <= e["ts"]:
                open_ends.pop()
            end = e["ts"] + e["dur"]
            assert not open_ends or end <= open_ends[-1] + 1e-3
            open_ends.append(end)
    mm = next(e for e in spans if e["name"] == "aten::mm")
    assert mm["args"]["Input Dims"][:2] == [[4, 3], [3, 5]]
    assert "test_profiler.py" in mm["args"]["Call stack"]


def test_record_function_nesting_and_decorator():
    @record_function("decorated")
    def f(t):
        return t + 1

    with profile() as prof:
        with record_function("outer"):
            with record_function("inner"):
                f(ember.ones(2))
    parents = {e.name: e.cpu_parent and e.cpu_parent.name for e in prof.events()}
    assert parents["outer"] is None
    assert parents["inner"] == "outer"
    assert parents["decorated"] == "inner"
    assert parents["aten::add"] == "decorated"
    with record_function("ignored"):  # no profiler: nothing is recorded, nothing breaks
        f(ember.ones(1))


@pytest.mark.parametrize("kw", [dict(wait=1, warmup=1, active=2),
                                dict(wait=0, warmup=2, active=1, repeat=2),
                                dict(wait=2, warmup=1, active=3, repeat=1, skip_first=3)])
def test_schedule_actions_as_torch(kw):
    ours, theirs = schedule(**kw), tprof.schedule(**kw)
    assert [ours(i).name for i in range(30)] == [theirs(i).name for i in range(30)]


def test_schedule_phases_record_only_active_steps():
    saved = []
    sched = schedule(wait=1, warmup=1, active=2, repeat=2)
    with profile(schedule=sched, on_trace_ready=lambda p: saved.append(p.events())) as prof:
        for i in range(10):
            with record_function(f"iter{i}"):
                ember.ones(1)
            prof.step()
    assert len(saved) == 2
    names = [[e.name for e in ev if e.name.startswith(("iter", "ProfilerStep"))] for ev in saved]
    assert names[0] == ["ProfilerStep#2", "iter2", "ProfilerStep#3", "iter3"]
    assert names[1] == ["ProfilerStep#6", "iter6", "ProfilerStep#7", "iter7"]
    assert prof.current_action is ProfilerAction.NONE


def test_profiler_leaves_no_trace_when_done():
    alloc = memory.get_allocator("cpu")
    before = alloc.recording
    with profile(profile_memory=True):
        assert current_modes() and engine.node_observer is not None
        ember.ones(3).sum()
    assert current_modes() == ()
    assert engine.node_observer is None
    assert "_record" not in alloc.__dict__ and alloc.recording == before
    with profile():
        with pytest.raises(RuntimeError, match="already recording"):
            profile().start()


def _table_lines(table: str) -> list[str]:
    return table.splitlines()


def test_table_layout_as_torch():
    label = "a_label_longer_than_every_operator"
    x, w = ember.ones(2, 2), ember.ones(2, 2)
    with profile(profile_memory=True) as prof:
        with record_function(label):
            x.mm(w)
    tx, tw = torch.ones(2, 2), torch.ones(2, 2)
    with tprof.profile(activities=[tprof.ProfilerActivity.CPU], profile_memory=True) as tp:
        with tprof.record_function(label):
            tx.mm(tw)
    ours = _table_lines(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=1))
    theirs = _table_lines(tp.key_averages().table(sort_by="self_cpu_time_total", row_limit=1))
    assert ours[:3] == theirs[:3]  # rule, header, rule
    assert len(ours) == len(theirs) == 6
    assert ours[-1].startswith("Self CPU time total: ")
    assert len(ours[3]) == len(theirs[3])  # a row spans the same columns


def test_group_by_input_shape():
    with profile(record_shapes=True) as prof:
        for n in (2, 3, 3):
            ember.ones(n, 4).mm(ember.ones(4, 2))
    rows = {(a.key, str(a.input_shapes)): a.count
            for a in prof.key_averages(group_by_input_shape=True) if a.key == "aten::mm"}
    assert rows == {("aten::mm", "[[2, 4], [4, 2]]"): 1, ("aten::mm", "[[3, 4], [4, 2]]"): 2}
    table = prof.key_averages(group_by_input_shape=True).table(sort_by="count", row_limit=3)
    assert "Input Shapes" in table and "[[3, 4], [4, 2]]" in table
    with pytest.raises(ValueError, match="sort_by"):
        prof.key_averages().table(sort_by="bogus")


def test_trace_handler_report_and_memory_timeline(tmp_path):
    with profile(profile_memory=True, on_trace_ready=tensorboard_trace_handler(
            str(tmp_path), "worker")) as prof:
        y = ember.ones(128) * 2
        del y
    (trace,) = os.listdir(tmp_path)
    assert trace.startswith("worker.") and trace.endswith(".pt.trace.json")
    data = json.loads((tmp_path / trace).read_text())
    rows = operator_times(data)
    assert {r[0] for r in rows} >= {"aten::ones", "aten::mul"}
    times, sizes = memory_timeline(data)
    assert sizes == [m.total_allocated for m in prof.events().memory_records]
    page = open(write_report(str(tmp_path / trace))).read()
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") == 2
    prof.export_memory_timeline(str(tmp_path / "mem.json"))
    t, s = json.loads((tmp_path / "mem.json").read_text())
    assert s == sizes and len(t) == len(s)
    prof.export_memory_timeline(str(tmp_path / "mem.html"))
    assert "<svg" in (tmp_path / "mem.html").read_text()


def test_charlm_profile_option(tmp_path):
    from ember.examples import charlm
    tiny = ["--batch-size", "2", "--block-size", "8", "--layers", "1", "--heads", "2",
            "--d-model", "16", "--eval-iters", "1", "--sample-chars", "4", "--quiet",
            "--steps", "6", "--out", str(tmp_path / "ckpt.pt")]
    charlm.main(tiny + ["--profile", str(tmp_path / "prof")])
    data = json.loads((tmp_path / "prof" / "charlm.pt.trace.json").read_text())
    names = {e["name"] for e in data["traceEvents"]}
    assert {"ProfilerStep#2", "ProfilerStep#4", "aten::mm"} <= names
    assert "ProfilerStep#1" not in names and "ProfilerStep#5" not in names
    assert (tmp_path / "prof" / "charlm.pt.trace.html").exists()
