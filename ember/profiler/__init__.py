"""ember.profiler (``torch.profiler``): where a program's time and memory go, per operator.

``profile`` records operator calls through a dispatch mode that exists only while it records
(NOTE [The profiler is a dispatch mode] in ``profiler.py``), backward nodes through the
autograd engine's observer, and the CPU caching allocator's allocations and frees. Results:
``key_averages().table(...)`` in torch's layout, a Chrome trace (Perfetto), a memory timeline,
and ``python -m ember.profiler.report trace.json`` for an HTML page of both.
"""

from __future__ import annotations

from ember.profiler._events import EventList, FunctionEvent, FunctionEventAvg
from ember.profiler.profiler import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    record_function,
    schedule,
    supported_activities,
    tensorboard_trace_handler,
)

__all__ = ["profile", "record_function", "ProfilerActivity", "ProfilerAction", "schedule",
           "tensorboard_trace_handler", "supported_activities", "EventList", "FunctionEvent",
           "FunctionEventAvg"]
