"""memory_stats, memory_summary and memory_snapshot agree with a hand-computed scenario;
history recording, pictures and live_tensors."""

from __future__ import annotations

import ember
from ember import memory
from ember.dispatch.modes import current_modes

MiB = 1 << 20


def scenario():
    """Hand-computed: a (1000 B) b (3000 B) in one 2 MiB small segment, c (5 MiB) in a
    20 MiB large segment; then a is freed (a 1024-byte inactive split hole)."""
    a = ember.empty(1000, dtype=ember.uint8)
    b = ember.empty(3000, dtype=ember.uint8)
    c = ember.empty(5 * MiB, dtype=ember.uint8)
    del a
    return b, c


def test_stats_match_the_hand_computed_scenario(fresh):
    keep = scenario()
    s = memory.memory_stats()
    assert list(s) == sorted(s)
    expect = {
        "allocated_bytes.all.current": 3072 + 5 * MiB,
        "allocated_bytes.small_pool.current": 3072,
        "allocated_bytes.large_pool.current": 5 * MiB,
        "allocated_bytes.all.peak": 1024 + 3072 + 5 * MiB,
        "allocated_bytes.all.allocated": 1024 + 3072 + 5 * MiB,
        "allocated_bytes.all.freed": 1024,
        "requested_bytes.all.current": 3000 + 5 * MiB,
        "reserved_bytes.all.current": 22 * MiB,
        "reserved_bytes.small_pool.current": 2 * MiB,
        "segment.all.current": 2,
        "allocation.all.current": 2,
        "allocation.all.allocated": 3,
        "active_bytes.all.current": 3072 + 5 * MiB,
        "inactive_split.small_pool.current": 2,  # the hole and the tail
        "inactive_split_bytes.small_pool.current": 2 * MiB - 3072,
        "inactive_split_bytes.large_pool.current": 15 * MiB,
        "num_device_alloc": 2, "num_device_free": 0, "num_ooms": 0, "num_alloc_retries": 0,
        "max_split_size": -1,
    }
    for key, value in expect.items():
        assert s[key] == value, key
    assert memory.memory_allocated() == s["allocated_bytes.all.current"]
    assert memory.max_memory_reserved() == 22 * MiB
    del keep


def test_snapshot_agrees_with_stats(fresh):
    keep = scenario()
    snap = memory.memory_snapshot()
    assert len(snap) == 2
    assert [seg["address"] for seg in snap] == sorted(seg["address"] for seg in snap)
    small = next(seg for seg in snap if seg["segment_type"] == "small")
    large = next(seg for seg in snap if seg["segment_type"] == "large")
    assert [(b["size"], b["requested_size"], b["state"]) for b in small["blocks"]] == [
        (1024, 0, "inactive"), (3072, 3000, "active_allocated"),
        (2 * MiB - 4096, 0, "inactive")]
    assert [(b["size"], b["state"]) for b in large["blocks"]] == [
        (5 * MiB, "active_allocated"), (15 * MiB, "inactive")]
    assert small["total_size"] == 2 * MiB and small["allocated_size"] == 3072
    assert small["requested_size"] == 3000
    for seg in snap:  # blocks tile their segment
        offset = seg["address"]
        for b in seg["blocks"]:
            assert b["address"] == offset
            offset += b["size"]
        assert offset == seg["address"] + seg["total_size"]
    s = memory.memory_stats()
    assert sum(seg["allocated_size"] for seg in snap) == s["allocated_bytes.all.current"]
    assert sum(seg["total_size"] for seg in snap) == s["reserved_bytes.all.current"]
    assert keep[0].data_ptr() == small["blocks"][1]["address"]
    full = memory._snapshot()
    assert full["allocator_settings"]["max_split_size"] == -1
    assert "EMBER_ALLOC_CONF" in full["allocator_settings"]


def test_summary_shows_the_same_numbers(fresh):
    keep = scenario()
    text = memory.memory_summary()
    lines = text.splitlines()
    assert all(len(ln) == 77 and ln[0] == ln[-1] == "|" for ln in lines)
    assert "ember CPU memory summary" in lines[1]
    assert "OOMs: 0" in lines[3]
    assert lines[5].split("|")[1:-1] == ["        Metric         ", " Cur Usage  ",
                                         " Peak Usage ", " Tot Alloc  ", " Tot Freed  "]
    row = next(ln for ln in lines if ln.startswith("| Allocated memory"))
    cells = [c.strip() for c in row.split("|")[2:6]]
    # each column scales by its "all" value: 1024 B freed stays in bytes
    assert cells == ["5123 KiB", "5124 KiB", "5124 KiB", "1024 B"]
    seg_row = next(ln for ln in lines if ln.startswith("| Reserved segments"))
    assert [c.strip() for c in seg_row.split("|")[2:6]] == ["2", "2", "2", "0"]
    small_rows = [ln for ln in lines if "from small pool" in ln]
    assert len(small_rows) == 9
    short = memory.memory_summary(abbreviated=True)
    assert "from small pool" not in short and "Allocated memory" in short
    del keep


def test_history_records_op_and_source_line_and_plots(fresh, tmp_path):
    memory.record_history(True, max_entries=1000)
    assert current_modes()  # the op-context mode sits on the stack while recording
    x = ember.ones(100)
    y = x * 3  # noqa: F841
    snap = memory.memory_snapshot()
    blocks = [b for seg in snap for b in seg["blocks"] if b["state"] == "active_allocated"]
    ops = {b["op"] for b in blocks}
    assert {"ones.default", "mul.Tensor"} <= ops
    here = [b for b in blocks if b["op"] == "mul.Tensor"][0]
    assert any(f["filename"].endswith("test_views_of_memory.py") for f in here["frames"])
    trace = memory._snapshot()["device_traces"][0]
    actions = [e["action"] for e in trace]
    assert "segment_alloc" in actions and "alloc" in actions
    svg = memory.plot_snapshot(tmp_path / "snap.svg")
    text = open(svg).read()
    assert text.startswith("<svg") and "mul.Tensor" in text and "#4878cf" in text
    del x
    timeline = open(memory.plot_timeline(tmp_path / "time.svg")).read()
    assert "<polyline" in timeline
    memory.record_history(False)
    assert not current_modes()
    z = ember.ones(3)
    block = [b for seg in memory.memory_snapshot() for b in seg["blocks"]
             if b["address"] == z.data_ptr()][0]
    assert "op" not in block and block["frames"] == []


def test_fragmentation_is_visible_in_the_picture(fresh, tmp_path):
    ts = [ember.empty(2 * MiB, dtype=ember.uint8) for _ in range(6)]
    del ts[::2]
    text = open(memory.plot_snapshot(tmp_path / "frag.svg")).read()
    assert text.count('fill="#ee854a"') >= 4  # inactive split holes (+ legend)


def test_live_tensors_lists_largest_first(fresh):
    a = ember.empty(10)
    b = ember.empty(100, 100)
    live = memory.live_tensors()
    assert [t.shape for t in live[:2]] == [(100, 100), (10,)]
    assert live[0].nbytes == 40448 and live[0].requested == 40000
    assert not live[0].saved and live[0].device == "cpu"
    del a, b
