"""``ember.distributed.timeline(path)``: DDP's backward and all-reduce events as a Chrome trace.

The events come from the recorder in ``ember/nn/parallel/_timeline.py`` (NOTE [DDP timeline]).
The file is the Trace Event Format that ``chrome://tracing`` and https://ui.perfetto.dev open:
one process per rank, a ``backward`` track (the backward nodes, each parameter's gradient
becoming ready, the whole DDP backward) and an ``all-reduce`` track (each bucket's all-reduce
from launch to completion), so the overlap of the two can be seen.
"""

from __future__ import annotations

import json
import os
import sys

from ember.nn.parallel._timeline import recorder

__all__ = ["record_timeline", "timeline"]

_TRACKS = {"backward": (0, "backward"), "comm": (1, "all-reduce")}


def record_timeline(enabled: bool = True) -> None:
    """Record every backward node's begin and end too (not only the all-reduces).

    Bucket all-reduces are always recorded (a few events per step); node events cost a hook
    call per node, so they are recorded only after ``record_timeline(True)`` or with the
    environment variable ``EMBER_DISTRIBUTED_TIMELINE=1``. Takes effect at the next forward.

    Example:
        >>> import ember.distributed as dist
        >>> dist.record_timeline(True)
        >>> dist.record_timeline(False)
    """
    recorder.nodes = bool(enabled)


def _rank() -> int:
    dist = sys.modules.get("ember.distributed")
    try:
        return dist.get_rank() if dist is not None and dist.is_initialized() else 0
    except Exception:  # noqa: BLE001 - a broken group must not stop the trace from being written
        return 0


def _rank_path(path: str, rank: int) -> str:
    if "{rank}" in path:
        return path.format(rank=rank)
    if rank == 0:
        return path
    stem, ext = os.path.splitext(path)
    return f"{stem}.rank{rank}{ext or '.json'}"


def timeline(path, clear: bool = False) -> str:
    """Write the events recorded in this process as a Chrome trace (JSON); return the path.

    Every rank writes its own file: ``path`` on rank 0 and ``<stem>.rank<r><ext>`` on rank r,
    or ``path.format(rank=r)`` when ``path`` contains ``{rank}``. Times are microseconds of the
    machine's monotonic clock, so the files of ranks on one machine line up when loaded
    together. Events: ``ph: "X"`` (complete) with ``name``, ``cat`` (``node``, ``ready``,
    ``allreduce``, ``step``), ``ts``, ``dur``, ``pid`` (the rank), ``tid`` (the track).

    Args:
        path: the file to write (a ``str`` or path-like).
        clear: forget the recorded events after writing.

    Example:
        >>> import ember.distributed as dist, tempfile, os, json
        >>> p = dist.timeline(os.path.join(tempfile.mkdtemp(), "trace.json"))
        >>> "traceEvents" in json.load(open(p))
        True
    """
    rank = _rank()
    out = _rank_path(os.fspath(path), rank)
    events = [{"name": "process_name", "ph": "M", "pid": rank, "tid": 0,
               "args": {"name": f"rank {rank}"}},
              {"name": "process_sort_index", "ph": "M", "pid": rank, "tid": 0,
               "args": {"sort_index": rank}}]
    for tid, label in _TRACKS.values():
        events.append({"name": "thread_name", "ph": "M", "pid": rank, "tid": tid,
                       "args": {"name": label}})
    for name, cat, track, t0, t1, args in recorder.snapshot():
        ev = {"name": name, "cat": cat, "ph": "X", "ts": t0 / 1000.0,
              "dur": max(t1 - t0, 0) / 1000.0, "pid": rank, "tid": _TRACKS[track][0]}
        if args:
            ev["args"] = args
        events.append(ev)
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, f)
    if clear:
        recorder.clear()
    return out
