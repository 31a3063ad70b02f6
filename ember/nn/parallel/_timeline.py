"""The event recorder behind ``ember.distributed.timeline``.

NOTE [DDP timeline]
DistributedDataParallel records what it does during each backward: the bucket all-reduces
(launch to completion, on a track of their own) always, a few events per step; and, while
node recording is on (``record_timeline(True)`` or ``EMBER_DISTRIBUTED_TIMELINE=1``), every
backward node's begin and end (through node pre- and post-hooks that DDP installs on the graph
of each forward; they cost a little per node, so this part is opt-in). Times are
``time.perf_counter_ns()``: CLOCK_MONOTONIC on Linux, so the files of ranks on one machine
share a time axis. ``ember.distributed.timeline(path)`` writes the events as a Chrome trace.
The recorder lives here, below ``ember.distributed``, because DDP (ember.nn) records into it.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque

__all__ = ["Recorder", "recorder"]

_MAX_EVENTS = 200_000  # a bounded buffer: long runs keep the latest events


class Recorder:
    """A bounded, thread-safe list of complete events ``(name, cat, track, t0_ns, t1_ns, args)``.

    ``track`` is ``"backward"`` or ``"comm"`` (a Chrome trace thread); ``cat`` groups events
    (``"node"``, ``"allreduce"``, ``"ready"``, ``"step"``).
    """

    def __init__(self, maxlen: int = _MAX_EVENTS) -> None:
        self.events: deque = deque(maxlen=maxlen)
        self.nodes = os.environ.get("EMBER_DISTRIBUTED_TIMELINE", "") not in ("", "0")
        self._lock = threading.Lock()

    @staticmethod
    def now() -> int:
        """The recorder's clock, in nanoseconds."""
        return time.perf_counter_ns()

    def add(self, name: str, cat: str, track: str, t0: int, t1: int, args=None) -> None:
        """Record one complete event from ``t0`` to ``t1`` (nanoseconds)."""
        with self._lock:
            self.events.append((name, cat, track, t0, t1, args))

    def snapshot(self) -> list:
        """A copy of the recorded events, oldest first."""
        with self._lock:
            return list(self.events)

    def clear(self) -> None:
        """Forget every recorded event."""
        with self._lock:
            self.events.clear()


recorder = Recorder()
