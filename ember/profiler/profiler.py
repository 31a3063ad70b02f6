"""``ember.profiler.profile``: per-operator time, input shapes, memory and stacks.

NOTE [The profiler is a dispatch mode]
Operators are timed by a dispatch mode that exists only while a profile records: entering one
pushes the mode (the Python key joins the thread's included set), leaving pops it, so a
program that never profiles runs the dispatcher's hot path untouched. The mode sits below
autograd, so an operator's time is its kernel's; ``CompositeImplicitAutograd`` operators show
as the operators they are made of. Backward nodes are timed by the engine's ``node_observer``
(one ``is None`` test per node when off), ``record_function`` by a module global.

NOTE [Profiling memory]
With ``profile_memory=True`` the CPU caching allocator records every block it hands out and
takes back (``set_recording``; its exact-size lane is off meanwhile, so each free is seen). The
profiler shadows the allocator's ``_record`` on the instance for the recording's duration,
attributes each alloc/free to the innermost open event of the thread, and hands the entry on
to the allocator's own history when ``ember.memory.record_history`` was on already. Nothing
in ``ember.memory`` changes; the running sum of the records is the allocator's allocated
bytes, so its maximum is ``max_memory_allocated()`` over the window.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import socket
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from enum import Enum
from functools import wraps

from ember import memory as _memory
from ember.autograd import engine as _engine
from ember.dispatch.modes import DispatchMode, current_modes
from ember.profiler._events import EventList, FunctionEvent, MemoryRecord, chrome_trace
from ember.profiler._flops import flops_of
from ember.tensor import Tensor

__all__ = ["profile", "record_function", "ProfilerActivity", "ProfilerAction", "schedule",
           "tensorboard_trace_handler", "supported_activities"]

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_now_us = time.perf_counter_ns


class ProfilerActivity(Enum):
    """What to profile (``torch.profiler.ProfilerActivity``); ember profiles ``CPU``."""

    CPU = "CPU"
    CUDA = "CUDA"


class ProfilerAction(Enum):
    """What the profiler does during a step (``torch.profiler.ProfilerAction``)."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set[ProfilerActivity]:
    """The activities this build can profile: ``{ProfilerActivity.CPU}``."""
    return {ProfilerActivity.CPU}


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0,
             skip_first: int = 0) -> Callable[[int], ProfilerAction]:
    """A step -> action function (``torch.profiler.schedule``).

    After ``skip_first`` steps, cycles of ``wait`` idle steps, ``warmup`` steps profiled and
    discarded, and ``active`` steps recorded (the last one saves: ``on_trace_ready`` runs);
    ``repeat`` cycles (0: forever).

    Example:
        >>> s = schedule(wait=1, warmup=1, active=2)
        >>> [s(i).name for i in range(4)]
        ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE']
    """
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError(f"schedule: invalid arguments; got wait={wait}, warmup={warmup}, "
                         f"active={active}, repeat={repeat}, skip_first={skip_first}; "
                         f"expected non-negative values and active > 0")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    cycle = wait + warmup + active

    def action(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        at = step % cycle
        if at < wait:
            return ProfilerAction.NONE
        if at < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if at < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False) -> Callable[[profile], None]:
    """An ``on_trace_ready`` that writes ``{worker}.{time_ms}.pt.trace.json[.gz]`` in
    ``dir_name`` (``torch.profiler.tensorboard_trace_handler``); worker defaults to
    ``{hostname}_{pid}``.

    Example:
        >>> import tempfile, os
        >>> d = tempfile.mkdtemp()
        >>> with profile(on_trace_ready=tensorboard_trace_handler(d, "w")):
        ...     _ = ember.ones(2) + 1
        >>> [f.split(".")[-3:] for f in os.listdir(d)]
        [['pt', 'trace', 'json']]
    """
    def handler(prof: profile) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns() // 1_000_000}.pt.trace.json"
        prof.export_chrome_trace(os.path.join(dir_name, name + (".gz" if use_gzip else "")))

    return handler


# -- recording --------------------------------------------------------------------------------
class _Recorder:
    """The events of one recording window: spans per thread, memory records."""

    def __init__(self, record_shapes: bool, with_stack: bool, with_flops: bool = False):
        self.record_shapes = record_shapes
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.events: list[FunctionEvent] = []
        self.open: dict[int, list[FunctionEvent]] = {}
        self.memory: list[tuple] = []  # (MemoryRecord, event or None)
        self.lock = threading.Lock()

    def begin(self, name: str, category: str, shapes=None) -> FunctionEvent:
        tid = threading.get_native_id()
        stack = _python_stack() if self.with_stack else None
        with self.lock:
            ev = FunctionEvent(len(self.events) + 1, name, tid, 0.0, shapes, stack, category)
            self.events.append(ev)
        opened = self.open.setdefault(tid, [])
        if opened:
            ev.cpu_parent = opened[-1]
            opened[-1].cpu_children.append(ev)
        opened.append(ev)
        ev.time_range.start = ev.time_range.end = _now_us() / 1000.0
        return ev

    def end(self, ev: FunctionEvent) -> None:
        ev.time_range.end = _now_us() / 1000.0
        opened = self.open.get(ev.thread)
        if opened and ev in opened:
            while opened.pop() is not ev:
                pass

    def memory_event(self, nbytes: int, addr: int, allocated: int, reserved: int) -> None:
        tid = threading.get_native_id()
        opened = self.open.get(tid)
        rec = MemoryRecord(_now_us() / 1000.0, nbytes, addr, allocated, reserved, tid)
        self.memory.append((rec, opened[-1] if opened else None))

    def close_all(self) -> None:
        end = _now_us() / 1000.0
        for opened in self.open.values():
            for ev in opened:
                ev.time_range.end = end
            opened.clear()

    def result(self, profile_memory: bool) -> EventList:
        """The finished events; memory outside any span becomes ``[memory]`` events."""
        events = list(self.events)
        for rec, ev in self.memory:
            if ev is not None:
                ev.self_cpu_memory_usage += rec.nbytes
            else:
                mem = FunctionEvent(0, "[memory]", rec.thread, rec.ts_us, category="memory")
                mem.self_cpu_memory_usage = rec.nbytes
                events.append(mem)
        events.sort(key=lambda e: e.time_range.start)
        for i, e in enumerate(events, 1):
            e.id = i
        return EventList(events, profile_memory=profile_memory,
                         memory=[rec for rec, _ in self.memory], with_flops=self.with_flops)


_active: _Recorder | None = None  # the recording window, if any (record_function reads it)


def _python_stack(limit: int = 32) -> list[str]:
    """User frames of the calling thread, innermost first, ``file(line): function``."""
    frames = []
    f = sys._getframe(2)
    while f is not None and len(frames) < limit:
        code = f.f_code
        if not code.co_filename.startswith(_EMBER_DIR):
            frames.append(f"{code.co_filename}({f.f_lineno}): {code.co_name}")
        f = f.f_back
    return frames


def _shape_of(value) -> list:
    if isinstance(value, Tensor):
        return list(value.shape)
    if isinstance(value, list | tuple) and value and all(isinstance(v, Tensor) for v in value):
        return [list(v.shape) for v in value]
    return []


def _input_shapes(func, args: tuple, kwargs: dict) -> list:
    """One entry per schema argument (defaults included), as torch's ``Input Dims``."""
    try:
        bound = func.schema.bind(args, kwargs)
    except (AttributeError, IndexError, TypeError):
        return [_shape_of(a) for a in (*args, *kwargs.values())]
    return [_shape_of(v) for k, v in bound.items() if not (k == "out" and v is None)]


class _ProfilerMode(DispatchMode):
    """Times each operator call (NOTE [The profiler is a dispatch mode])."""

    def __init__(self, recorder: _Recorder):
        self.recorder = recorder

    def __ember_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        rec = self.recorder
        shapes = _input_shapes(func, args, kwargs) if rec.record_shapes else None
        ev = rec.begin(f"{func.namespace}::{func.name}", "cpu_op", shapes)
        try:
            out = func(*args, **kwargs)
        finally:
            rec.end(ev)
        if rec.with_flops:
            ev.flops = flops_of(func.name, args, kwargs, out)
        return out


def _observe_node(node, grads: tuple):
    """The engine's ``node_observer`` while recording: two spans around each backward node."""
    rec = _active
    if rec is None:
        return node.apply(grads)
    name = node.name()
    outer = rec.begin(f"autograd::engine::evaluate_function: {name}", "cpu_op")
    shapes = [list(g.shape) if isinstance(g, Tensor) else [] for g in grads] \
        if rec.record_shapes else None
    inner = rec.begin(name, "cpu_op", shapes)
    try:
        return node.apply(grads)
    finally:
        rec.end(inner)
        rec.end(outer)


@contextlib.contextmanager
def _observe_accumulate(node):
    """The engine's ``accumulate_observer`` while recording: torch's two AccumulateGrad spans."""
    rec = _active
    if rec is None:
        yield
        return
    outer = rec.begin("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
                      "cpu_op")
    inner = rec.begin("torch::autograd::AccumulateGrad", "cpu_op")
    try:
        yield
    finally:
        rec.end(inner)
        rec.end(outer)


class _MemoryTap:
    """Feeds the CPU allocator's alloc/free records to a recorder (NOTE [Profiling memory])."""

    def __init__(self, recorder: _Recorder):
        self.recorder = recorder
        self.alloc = _memory.get_allocator("cpu")

    def start(self) -> None:
        alloc, rec = self.alloc, self.recorder
        self.user_recording = alloc.recording
        forward = alloc._record if self.user_recording else None
        alloc.flush()
        state = [alloc.all.ab]

        def record(action: str, addr: int, size: int, ctx) -> None:
            if action == "alloc" or action == "free_requested":
                state[0] += size if action == "alloc" else -size
                rec.memory_event(size if action == "alloc" else -size, addr, state[0],
                                 alloc.all.rb)
            if forward is not None:
                forward(action, addr, size, ctx)

        alloc._record = record
        if not self.user_recording:
            alloc._context = _no_context
            alloc.set_recording(True)

    def stop(self) -> None:
        alloc = self.alloc
        if not self.user_recording:
            alloc.set_recording(False)
            alloc.__dict__.pop("_context", None)
        alloc.__dict__.pop("_record", None)


def _no_context():
    return None


class profile:
    """Profile a region of a program (``torch.profiler.profile``).

    Inside ``with profile(...) as prof:`` every operator call, ``record_function`` label and
    backward node is timed; afterwards ``prof.key_averages().table(...)``,
    ``prof.events()`` and ``prof.export_chrome_trace(path)`` report it.

    Args:
        activities: ``ProfilerActivity`` values; ember profiles ``CPU`` (others are ignored
            with a warning, as torch does for an unavailable device).
        schedule: a step -> ``ProfilerAction`` function (see :func:`schedule`); without it the
            whole region is recorded.
        on_trace_ready: called with the profiler when a recorded window ends.
        record_shapes: record each operator's input shapes (one entry per schema argument).
        profile_memory: record the CPU allocator's allocations and frees per operator.
        with_stack: record the Python stack (user frames) of each event.
        with_flops: estimate each operator call's floating-point operations (``event.flops``
            and a ``Total FLOPs`` column), for torch's operators and formulas (see
            ``ember.profiler._flops``).

    Raises:
        RuntimeError: when another profile is already recording.

    Example:
        >>> x = ember.ones(4, 4)
        >>> with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        ...     with record_function("step"):
        ...         y = (x @ x).relu()
        >>> [e.name for e in prof.events()]
        ['step', 'aten::matmul', 'aten::relu']
        >>> prof.events()[1].input_shapes
        [[4, 4], [4, 4]]
    """

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[[profile], object] | None = None,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config=None,
                 execution_trace_observer=None, acc_events: bool = False,
                 use_cuda: bool | None = None):
        acts = set(activities) if activities is not None else supported_activities()
        for a in sorted(acts - supported_activities(), key=lambda a: a.value):
            warnings.warn(f"profile: activity {a} is not available; profiling CPU only",
                          stacklevel=2)
        self.activities = acts
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.step_num = 0
        self.current_action = schedule(0) if schedule is not None else ProfilerAction.RECORD
        self._recorder: _Recorder | None = None
        self._mode: _ProfilerMode | None = None
        self._tap: _MemoryTap | None = None
        self._step_rf: record_function | None = None
        self._result: EventList | None = None
        self._started = False

    # -- lifecycle ------------------------------------------------------------------------------
    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc) -> bool:
        self.stop()
        return False

    def start(self) -> None:
        """Begin profiling (the schedule's action for step 0 applies)."""
        self._started = True
        self._transit(ProfilerAction.NONE, self.current_action)
        self._open_step()

    def stop(self) -> None:
        """End profiling; a window being recorded is finished and ``on_trace_ready`` runs."""
        if not self._started:
            return
        self._close_step()
        self._started = False
        if self.current_action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._finish(save=True)
        elif self.current_action is ProfilerAction.WARMUP:
            self._finish(save=False)

    def step(self) -> None:
        """Mark the end of a training step: the schedule decides what the next step does."""
        self._close_step()
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num) if self.schedule is not None \
            else ProfilerAction.RECORD
        self._transit(prev, self.current_action)
        self._open_step()

    def _open_step(self) -> None:
        if self.schedule is not None and self._recorder is not None:
            self._step_rf = record_function(f"ProfilerStep#{self.step_num}").__enter__()

    def _close_step(self) -> None:
        if self._step_rf is not None:
            self._step_rf.__exit__(None, None, None)
            self._step_rf = None

    def _transit(self, prev: ProfilerAction, new: ProfilerAction) -> None:
        on = (ProfilerAction.WARMUP, ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if prev is ProfilerAction.RECORD_AND_SAVE or (
                prev is ProfilerAction.RECORD and new not in on[1:]):
            self._finish(save=True)
        elif prev is ProfilerAction.WARMUP and new is not ProfilerAction.WARMUP:
            self._finish(save=False)
        if new in on and self._recorder is None:
            self._begin()

    def _begin(self) -> None:
        global _active
        if _active is not None:
            raise RuntimeError("profile: another profiler is already recording; profilers "
                               "cannot be nested")
        rec = self._recorder = _Recorder(self.record_shapes, self.with_stack, self.with_flops)
        _active = rec
        self._mode = _ProfilerMode(rec).__enter__()
        _engine.node_observer = _observe_node
        _engine.accumulate_observer = _observe_accumulate
        if self.profile_memory:
            self._tap = _MemoryTap(rec)
            self._tap.start()

    def _finish(self, save: bool) -> None:
        global _active
        rec = self._recorder
        if rec is None:
            return
        if self._tap is not None:
            self._tap.stop()
            self._tap = None
        _engine.node_observer = None
        _engine.accumulate_observer = None
        _remove_mode(self._mode)
        self._mode = None
        _active = None
        self._recorder = None
        rec.close_all()
        if save:
            self._result = rec.result(self.profile_memory)
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)

    # -- results -------------------------------------------------------------------------------
    def events(self) -> EventList:
        """Every event of the last recorded window, in order of start time."""
        if self._result is None:
            raise RuntimeError("profile: no recorded events yet (the profiler records inside "
                               "its `with` block, or between start() and stop())")
        return self._result

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """Events summed per name (and input shapes; and top ``group_by_stack_n`` frames)."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        """Write a Chrome trace (JSON; ``.gz`` compresses) that Perfetto opens."""
        data = json.dumps(chrome_trace(self.events(), path)).encode()
        if path.endswith(".gz"):
            data = gzip.compress(data)
        with open(path, "wb") as f:
            f.write(data)

    def export_memory_timeline(self, path: str, device: str | None = None) -> None:
        """Write the allocated bytes over time: ``.html`` (a plot), ``.json`` or ``.json.gz``
        (``[times_us, allocated_bytes]``; torch writes sizes per category instead)."""
        recs = self.events().memory_records
        times = [round(m.ts_us, 3) for m in recs]
        sizes = [m.total_allocated for m in recs]
        if path.endswith(".html"):
            from ember.profiler.report import memory_timeline_html
            with open(path, "w", encoding="utf-8") as f:
                f.write(memory_timeline_html(times, sizes))
            return
        data = json.dumps([times, sizes]).encode()
        if path.endswith(".gz"):
            data = gzip.compress(data)
        with open(path, "wb") as f:
            f.write(data)


def _remove_mode(mode: DispatchMode | None) -> None:
    """Take ``mode`` off the stack even when a mode entered later is still active."""
    if mode is None:
        return
    if current_modes() and current_modes()[-1] is mode:
        mode.__exit__(None, None, None)
        return
    from ember.dispatch.dispatcher import _PYTHON_BIT, dispatch_state
    st = dispatch_state()
    if mode in st.modes:
        st.modes.remove(mode)
    if not st.modes:
        st.included &= ~_PYTHON_BIT


class record_function:
    """Label a region of code in the profile (``torch.profiler.record_function``).

    A context manager or a decorator; free when no profiler records.

    Example:
        >>> with profile() as prof:
        ...     with record_function("outer"):
        ...         with record_function("inner"):
        ...             _ = ember.ones(1)
        >>> [(e.name, e.cpu_parent and e.cpu_parent.name) for e in prof.events()]
        [('outer', None), ('inner', 'outer'), ('aten::ones', 'inner')]
    """

    def __init__(self, name: str, args: str | None = None):
        self.name = name
        self.args = args
        self._event: FunctionEvent | None = None
        self._recorder: _Recorder | None = None

    def __enter__(self) -> record_function:
        rec = _active
        if rec is not None:
            self._recorder = rec
            self._event = rec.begin(self.name, "user_annotation")
        return self

    def __exit__(self, *exc) -> bool:
        if self._event is not None:
            self._recorder.end(self._event)
            self._event = self._recorder = None
        return False

    def __call__(self, fn: Callable) -> Callable:
        @wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return wrapper
