"""Activation checkpointing: keep fewer activations in forward, recompute them in backward.

Owns ``checkpoint`` (reentrant and non-reentrant), ``checkpoint_sequential``, selective
checkpointing (``create_selective_checkpoint_contexts``) and a memory planner (``plan`` /
``apply_plan``) that measures blocks with ember's caching allocator. Knows modules only by
duck typing (``children``, ``parameters``, ``buffers``): it sits beside ``ember.nn``, not above.
The file is long because the four pieces share the frame machinery; each piece stays small.

NOTE [Non-reentrant checkpoint]
The segment runs normally (the graph is recorded, so ``autograd.grad``, ``backward(inputs=)``,
kwargs and nesting work) inside saved-tensor hooks whose pack hook keeps a small ``_Holder``
in place of each tensor autograd wants to save; the frame keeps a weak reference to each
holder, in save order, with the tensor's metadata. The first unpack in a backward pass re-runs
the segment (same inputs, RNG state restored) under recomputation hooks that hand the i-th
saved tensor to the i-th holder, and stops early (``_StopRecomputation``) once every holder is
filled. Holders whose node has already been freed are skipped, and each recomputed tensor is
dropped from the frame when unpacked, so recomputed memory lives no longer than its node.
A recomputation belongs to one backward pass: a ``queue_callback`` forgets it at the end, so a
second backward (``retain_graph=True``) recomputes again. With the RNG state preserved, the
segment's bernoulli draws (dropout masks) go on a ``DrawTape`` in forward, one bit per element,
and the recomputation replays them instead of running the generator again (NOTE [Replayed
draws] in ``ember.tensor.random``): the masks are the same, only cheaper. The recomputation
also re-enters the CPU autocast state the forward ran in, so a segment run under ``autocast``
recomputes in the same dtypes even when backward runs outside the region.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import sys
import time
import warnings
import weakref
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ember import memory
from ember.autograd.engine import backward as _backward
from ember.autograd.engine import is_checkpoint_valid, queue_callback
from ember.autograd.function import Function
from ember.autograd.grad_mode import enable_grad, is_grad_enabled, no_grad
from ember.autograd.graph import saved_tensors_hooks
from ember.dispatch.autocast import (
    autocast,
    get_autocast_dtype,
    is_autocast_cache_enabled,
    is_autocast_enabled,
)
from ember.dispatch.dispatcher import Operator
from ember.dispatch.modes import DispatchMode
from ember.tensor import Tensor
from ember.tensor.random import DrawTape, fork_rng, get_rng_state, set_rng_state

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointPolicy",
           "SelectiveCheckpointContext", "create_selective_checkpoint_contexts",
           "set_checkpoint_early_stop", "set_checkpoint_debug_enabled",
           "set_checkpoint_replay_draws", "noop_context_fn",
           "BlockProfile", "CheckpointPlan", "plan", "apply_plan", "remove_plan",
           "checkpoint_modules"]


class CheckpointError(RuntimeError):
    """A recomputation did not reproduce the forward pass (``torch.utils.checkpoint``'s).

    Example:
        >>> from ember.utils.checkpoint import checkpoint, CheckpointError
        >>> calls = []
        >>> def f(t):
        ...     calls.append(1)
        ...     return t.sin().exp() if len(calls) == 1 else t.sum().sin().exp()  # not the same
        >>> x = ember.ones(2, requires_grad=True)
        >>> try:
        ...     checkpoint(f, x, use_reentrant=False).sum().backward()
        ... except CheckpointError:
        ...     print("recomputation did not match")
        recomputation did not match
    """


def noop_context_fn():
    """The default ``context_fn``: no context around the forward or the recomputation.

    Example:
        >>> from ember.utils.checkpoint import checkpoint, noop_context_fn
        >>> x = ember.ones(2, requires_grad=True)
        >>> checkpoint(lambda t: (t * t).sum(), x, use_reentrant=False,
        ...            context_fn=noop_context_fn).backward()
        >>> x.grad
        tensor([2., 2.])
    """
    return contextlib.nullcontext(), contextlib.nullcontext()


_early_stop_override: bool | None = None
_debug_override: bool | None = None
_replay_draws = True


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Within the block, non-reentrant checkpoints made here stop recomputing early or not.

    Example:
        >>> from ember.utils.checkpoint import checkpoint, set_checkpoint_early_stop
        >>> x = ember.ones(2, requires_grad=True)
        >>> with set_checkpoint_early_stop(False):
        ...     y = checkpoint(lambda t: (t * 3).sum(), x, use_reentrant=False)
        >>> y.backward(); x.grad
        tensor([3., 3.])
    """
    global _early_stop_override
    prev, _early_stop_override = _early_stop_override, enable
    try:
        yield
    finally:
        _early_stop_override = prev


@contextlib.contextmanager
def set_checkpoint_replay_draws(enable: bool):
    """Within the block, checkpoints made here keep their bernoulli draws (dropout masks) as
    bits and replay them in recomputation (the default), or draw them again (torch's way).

    Both give the same masks when ``preserve_rng_state=True``; replay skips the generator's
    work for 1 bit per drawn element (NOTE [Replayed draws] in ``ember.tensor.random``).

    Example:
        >>> import ember.nn.functional as F
        >>> from ember.utils.checkpoint import checkpoint, set_checkpoint_replay_draws
        >>> x = ember.ones(100, requires_grad=True)
        >>> with set_checkpoint_replay_draws(False):
        ...     y = checkpoint(lambda t: F.dropout(t, 0.5), x, use_reentrant=False)
        >>> y.sum().backward()
        >>> ember.equal(x.grad == 0, y == 0)  # the recomputation drew the same mask
        True
    """
    global _replay_draws
    prev, _replay_draws = _replay_draws, enable
    try:
        yield
    finally:
        _replay_draws = prev


def _tape(preserve_rng_state: bool) -> DrawTape | None:
    """A tape for a checkpoint's draws: only a recomputation from the same RNG state can
    replay them."""
    return DrawTape() if preserve_rng_state and _replay_draws else None


def _autocast_now() -> autocast:
    """A context manager that re-enters the CPU autocast state of this moment (torch keeps
    the forward's autocast state for the recomputation too)."""
    return autocast("cpu", dtype=get_autocast_dtype("cpu"), enabled=is_autocast_enabled("cpu"),
                    cache_enabled=is_autocast_cache_enabled())


def _taping(tape: DrawTape | None, replay: bool):
    if tape is None:
        return contextlib.nullcontext()
    return tape.replaying() if replay else tape.recording()


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None):
    """Within the block, checkpoints behave as if ``debug=enabled`` (None: use the argument).

    Example:
        >>> from ember.utils.checkpoint import checkpoint, set_checkpoint_debug_enabled
        >>> x = ember.ones(2, requires_grad=True)
        >>> with set_checkpoint_debug_enabled(True):
        ...     checkpoint(lambda t: t.exp().sum(), x, use_reentrant=False).backward()
        >>> x.grad
        tensor([2.7183, 2.7183])
    """
    global _debug_override
    prev, _debug_override = _debug_override, enabled
    try:
        yield
    finally:
        _debug_override = prev


_TIP = ("\nTip: To see a more detailed error message, either pass `debug=True` to\n"
        "`ember.utils.checkpoint.checkpoint(...)` or wrap the code block\n"
        "with `with ember.utils.checkpoint.set_checkpoint_debug_enabled(True):` to\n"
        "enable checkpoint-debug mode globally.\n")

_REENTRANT_GRAD_ERROR = (
    "When use_reentrant=True, ember.utils.checkpoint is incompatible with .grad() or passing "
    "an `inputs` parameter to .backward(). To resolve this error, you can either set "
    "use_reentrant=False, or call .backward() without passing the `inputs` argument.")


# -- the public entry points ----------------------------------------------------------------------
def checkpoint(function: Callable, *args, use_reentrant: bool | None = None,
               context_fn: Callable = noop_context_fn, determinism_check: str = "default",
               debug: bool = False, early_stop: bool = True, preserve_rng_state: bool = True,
               **kwargs):
    """Run ``function(*args, **kwargs)`` without keeping its activations; recompute in backward.

    Mirrors ``torch.utils.checkpoint.checkpoint``. The non-reentrant form (``use_reentrant=
    False``, recommended) records the graph normally but replaces every saved tensor by a
    placeholder and recomputes the segment at the first unpack in backward, stopping as soon
    as all needed tensors exist (see NOTE [Non-reentrant checkpoint]). The reentrant form runs
    the segment under ``no_grad`` and re-runs it inside its backward with a nested backward
    call; it supports neither ``autograd.grad`` nor ``backward(inputs=)``.

    Args:
        function: the segment; any tensor and non-tensor arguments and outputs.
        use_reentrant: which form; not passing it warns and picks the legacy ``True``.
        context_fn: returns two context managers, entered around the forward and around the
            recomputation (non-reentrant only); see ``create_selective_checkpoint_contexts``.
        determinism_check: ``"default"`` compares shape, dtype and device of every recomputed
            saved tensor with the original; ``"none"`` skips the check.
        debug: on a determinism error, show the operators of both runs (non-reentrant only).
        early_stop: stop the recomputation once every needed tensor is recomputed.
        preserve_rng_state: restore the RNG state for the recomputation (same dropout masks);
            bernoulli draws (dropout masks) are then kept as bits in forward and replayed
            rather than drawn again (see ``set_checkpoint_replay_draws``).
        **kwargs: keyword arguments for ``function`` (non-reentrant only).

    Returns:
        ``function``'s output. Under ``no_grad`` the non-reentrant form is a plain call.

    Raises:
        ValueError: kwargs, ``context_fn`` or ``debug`` with ``use_reentrant=True``; an unknown
            ``determinism_check``.
        CheckpointError: in backward, when the recomputation saved different tensors.

    Example:
        >>> import ember
        >>> from ember.utils.checkpoint import checkpoint
        >>> x = ember.ones(3, requires_grad=True)
        >>> checkpoint(lambda t: (t.sin() * 2).sum(), x, use_reentrant=False).backward()
        >>> x.grad
        tensor([1.0806, 1.0806, 1.0806])
    """
    if use_reentrant is None:
        warnings.warn(
            "ember.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "use_reentrant=False is recommended, but if you need to preserve the current "
            "default behavior, you can pass use_reentrant=True. Refer to docs for more details "
            "on the differences between the two variants.", UserWarning, stacklevel=2)
        use_reentrant = True
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        return _ReentrantCheckpoint.apply(function, preserve_rng_state, *args)
    return _checkpoint_non_reentrant(function, args, kwargs, context_fn, determinism_check,
                                     debug, early_stop, preserve_rng_state)


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None,
                          **kwargs):
    """Run ``functions`` in order, checkpointing all but the last of ``segments`` chunks.

    Mirrors ``torch.utils.checkpoint.checkpoint_sequential``: chunks of
    ``len(functions) // segments`` modules; the last chunk (with any remainder) runs normally,
    since its activations are needed first in backward anyway.

    Args:
        functions: a list of callables or a module with ``children()`` (``nn.Sequential``).
        segments: number of chunks.
        input: the single input of the first function.
        use_reentrant: as in ``checkpoint`` (warning when not passed).
        preserve_rng_state: keyword only, as in ``checkpoint``.

    Example:
        >>> import ember
        >>> from ember.utils.checkpoint import checkpoint_sequential
        >>> fs = [lambda t: t * 2, lambda t: t.exp(), lambda t: t + 1, lambda t: t.sin()]
        >>> checkpoint_sequential(fs, 2, ember.zeros(2), use_reentrant=False)
        tensor([0.9093, 0.9093])
    """
    if use_reentrant is None:
        warnings.warn(
            "ember.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should "
            "be passed explicitly. use_reentrant=False is recommended, but if you need to "
            "preserve the current default behavior, you can pass use_reentrant=True. Refer to "
            "docs for more details on the differences between the two variants.",
            UserWarning, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if not isinstance(functions, (list, tuple)) and hasattr(functions, "children"):
        functions = list(functions.children())
    functions = list(functions)
    if not isinstance(segments, int) or not 1 <= segments <= len(functions):
        raise ValueError(f"checkpoint_sequential: segments must be between 1 and the number of "
                         f"functions ({len(functions)}); got {segments!r}")
    size = len(functions) // segments
    end = 0
    for start in range(0, size * (segments - 1), size):
        end = start + size
        input = checkpoint(_run_range(functions, start, end), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return _run_range(functions, end, len(functions))(input)


def _run_range(functions: list, start: int, end: int) -> Callable:
    def run(x):
        for f in functions[start:end]:
            x = f(x)
        return x
    return run


# -- reentrant ------------------------------------------------------------------------------------
class _ReentrantCheckpoint(Function):
    """Forward under ``no_grad``; backward re-runs the segment and calls backward inside."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                          UserWarning, stacklevel=4)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        ctx.rng_state = get_rng_state() if preserve_rng_state else None
        ctx.autocast = _autocast_now()
        ctx.tape = _tape(preserve_rng_state)
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*(a for a in args if isinstance(a, Tensor)))
        with _taping(ctx.tape, replay=False):
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        if not is_checkpoint_valid():
            raise RuntimeError(_REENTRANT_GRAD_ERROR)
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        with fork_rng(enabled=ctx.preserve_rng_state):
            if ctx.preserve_rng_state:
                set_rng_state(ctx.rng_state)
            detached = [_detach_keep_flag(a) for a in inputs]
            with enable_grad(), ctx.autocast, _taping(ctx.tape, replay=True):
                outputs = ctx.run_function(*detached)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if isinstance(o, Tensor) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not "
                               "necessary")
        _backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None, *(a.grad if isinstance(a, Tensor) else None for a in detached))


def _detach_keep_flag(a):
    if not isinstance(a, Tensor):
        return a
    d = a.detach()
    d.requires_grad_(a.requires_grad)
    return d


# -- non-reentrant --------------------------------------------------------------------------------
class _StopRecomputation(Exception):
    """Raised by a recomputation pack hook once every holder is filled (early stop)."""


class _Holder:
    """What autograd keeps for a checkpointed saved tensor: its index, then its recomputation.

    The recomputed tensor lives on the holder, so it is freed with the node that saved it.
    """

    __slots__ = ("index", "value", "__weakref__")

    def __init__(self, index: int):
        self.index = index
        self.value = None


def _default_metadata(t: Tensor) -> dict:
    return {"shape": t.shape, "dtype": t.dtype, "device": t.device}


_METADATA_FNS = {"default": _default_metadata, "none": None}


class _Recomputation:
    """One backward pass's recomputation of a frame: how many tensors it saved, and which."""

    __slots__ = ("count", "filled")

    def __init__(self):
        self.count = 0
        self.filled: list[int] = []  # holder indices (holders are only weakly referenced)


class _Frame:
    """One non-reentrant checkpoint call: its inputs, holders, and the current recomputation."""

    def __init__(self, recompute_fn: Callable, early_stop: bool, metadata_fn, on_error):
        self.recompute_fn = recompute_fn
        self.early_stop = early_stop
        self.metadata_fn = metadata_fn
        self.on_error = on_error
        self.holders: list[weakref.ref] = []
        self.metadata: list = []
        self.current: _Recomputation | None = None
        self.forward_done = False

    # forward: pack -> holder
    def pack(self, t: Tensor) -> _Holder:
        holder = _Holder(len(self.holders))
        self.holders.append(weakref.ref(holder))
        if self.metadata_fn is not None:
            self.metadata.append(self.metadata_fn(t))
        return holder

    # backward: holder -> recomputed tensor
    def unpack(self, holder: _Holder) -> Tensor:
        rec = self.current
        if rec is None:
            rec = self._recompute()
            try:
                queue_callback(self._forget)
            except RuntimeError:  # outside backward: the recomputation serves this unpack only
                t = holder.value
                self._clear(rec)
                return t
            self.current = rec
        return holder.value

    def _recompute(self) -> _Recomputation:
        rec = _Recomputation()
        try:
            try:
                with saved_tensors_hooks(functools.partial(self._repack, rec), _identity), \
                        enable_grad():
                    self.recompute_fn()
            except _StopRecomputation:
                pass
            self._check(rec)
        except BaseException as e:
            self._clear(rec)
            if isinstance(e, CheckpointError) and self.on_error is not None:
                raise self.on_error(e) from e
            raise
        return rec

    def _forget(self) -> None:
        """End of a backward pass: drop what is left of its recomputation."""
        rec, self.current = self.current, None
        if rec is not None:
            self._clear(rec)

    def _clear(self, rec: _Recomputation) -> None:
        for i in rec.filled:
            h = self.holders[i]()
            if h is not None:
                h.value = None

    def _repack(self, rec: _Recomputation, t: Tensor) -> Tensor:
        if t.requires_grad:
            t = t.detach()
        i = rec.count
        rec.count += 1
        if i >= len(self.holders):
            raise CheckpointError("ember.utils.checkpoint: trying to save more tensors during "
                                  "recomputation than during the original forward pass.\n"
                                  + _TIP)
        holder = self.holders[i]()
        if holder is not None:
            holder.value = t
            rec.filled.append(i)
        if self.early_stop and rec.count == len(self.holders):
            raise _StopRecomputation
        return t

    def _check(self, rec: _Recomputation) -> None:
        if self.metadata_fn is None:
            return
        if rec.count != len(self.holders):
            raise CheckpointError(
                "ember.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\n"
                f"Number of tensors saved during forward: {len(self.holders)}\n"
                f"Number of tensors saved during recomputation: {rec.count}.\n" + _TIP)
        lines = []
        for i in rec.filled:
            h = self.holders[i]()
            if h is None:
                continue
            now, then = self.metadata_fn(h.value), self.metadata[i]
            if now != then:
                lines.append(f"tensor at position {i}:\nsaved metadata: {then}\n"
                             f"recomputed metadata: {now}\n")
        if lines:
            raise CheckpointError(
                "ember.utils.checkpoint: Recomputed values for the following tensors have "
                "different metadata than during the forward pass.\n" + "".join(lines) + ".\n"
                + _TIP)


def _identity(t):
    return t


def _check_versions(versions: list) -> None:
    """The segment's tensor inputs must be as they were in forward (like saved tensors)."""
    for t, version in versions:
        if t._version != version:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [ember.{t.dtype.scalar_name}Tensor {list(t.shape)}], "
                f"which is an input of a checkpointed function, is at version {t._version}; "
                f"expected version {version} instead.")


def _checkpoint_non_reentrant(function, args, kwargs, context_fn, determinism_check, debug,
                              early_stop, preserve_rng_state):
    if determinism_check not in _METADATA_FNS:
        raise ValueError(f"determinism_check should be one of {list(_METADATA_FNS)}, but got "
                         f"{determinism_check}")
    on_error = None
    if _debug_override if _debug_override is not None else debug:
        if context_fn is not noop_context_fn:
            raise ValueError("debug=True is incompatible with non-default context_fn")
        context_fn, on_error = _debug_context()
    forward_ctx, recompute_ctx = context_fn()
    if not is_grad_enabled():
        return function(*args, **kwargs)
    rng_state = get_rng_state() if preserve_rng_state else None
    forward_autocast = _autocast_now()
    tape = _tape(preserve_rng_state)
    versions = [(t, t._version) for t in (*args, *kwargs.values()) if isinstance(t, Tensor)]

    def recompute():
        _check_versions(versions)
        with fork_rng(enabled=preserve_rng_state):
            if preserve_rng_state:
                set_rng_state(rng_state)
            with recompute_ctx, forward_autocast, _taping(tape, replay=True):
                function(*args, **kwargs)

    stop = _early_stop_override if _early_stop_override is not None else early_stop
    frame = _Frame(recompute, stop, _METADATA_FNS[determinism_check], on_error)
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_ctx, _taping(tape, replay=False):
        out = function(*args, **kwargs)
    frame.forward_done = True
    return out


# -- debug: operator logs of both runs ------------------------------------------------------------
_IGNORED_OPS = frozenset({"detach"})


class _OpLog(DispatchMode):
    """Records each operator (and the user's source line that called it)."""

    def __init__(self):
        self.entries: list[str] = []

    def __enter__(self):
        self.entries.clear()
        return super().__enter__()

    def __ember_dispatch__(self, func, types, args=(), kwargs=None):
        if func.name not in _IGNORED_OPS:
            shapes = ", ".join(f"{list(a.shape)}" for a in args if isinstance(a, Tensor))
            self.entries.append(f"{func.short_name}({shapes})   at {_caller()}")
        return func(*args, **(kwargs or {}))


def _caller() -> str:
    f = sys._getframe(2)
    while f is not None and f.f_globals.get("__name__", "").startswith("ember."):
        f = f.f_back
    return "<unknown>" if f is None else f"{f.f_code.co_filename}:{f.f_lineno}:{f.f_code.co_name}"


_DEBUG_TEMPLATE = """
ERROR: Detected non-determinism while running activation checkpointing

You are seeing this error because you passed `debug=True` to checkpoint and the tensors saved
during the original forward differ from those saved during recomputation. This can happen if
different operators ran in the original forward and in the recomputation (compare the two
logs below; each operator is followed by the source line that called it).

Operations executed during the original forward:

{forward}

Operations executed during recomputation:

{recompute}

Error message:
{error}"""


def _debug_context():
    fwd, rec = _OpLog(), _OpLog()

    def context_fn():
        return fwd, rec

    def on_error(e: CheckpointError) -> CheckpointError:
        return CheckpointError(_DEBUG_TEMPLATE.format(
            forward="\n".join(fwd.entries), recompute="\n".join(rec.entries), error=e))

    return context_fn, on_error


# -- selective checkpointing ----------------------------------------------------------------------
class CheckpointPolicy(enum.Enum):
    """Per-operator decision of selective checkpointing (``torch.utils.checkpoint``'s).

    ``*_SAVE``: the op's output is kept from forward and replayed in the recomputation;
    ``*_RECOMPUTE``: the op runs again. ``MUST_*`` is not to be overridden by other tools.

    Example:
        >>> from ember.utils.checkpoint import CheckpointPolicy
        >>> [p.name for p in CheckpointPolicy]
        ['MUST_SAVE', 'PREFER_SAVE', 'MUST_RECOMPUTE', 'PREFER_RECOMPUTE']
    """

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3


_SAVE = (CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE)


class SelectiveCheckpointContext:
    """What a policy function learns besides the op: ``is_recompute`` and the op's output.

    Example:
        >>> import functools
        >>> from ember.utils import checkpoint as cp
        >>> seen = []
        >>> def policy(ctx, op, *args, **kwargs):
        ...     seen.append((op.__name__, ctx.is_recompute))
        ...     return cp.CheckpointPolicy.PREFER_RECOMPUTE
        >>> context_fn = functools.partial(cp.create_selective_checkpoint_contexts, policy)
        >>> x = ember.ones(2, requires_grad=True)
        >>> cp.checkpoint(lambda t: t.sin().exp().sum(), x, use_reentrant=False,
        ...               context_fn=context_fn).backward()
        >>> seen  # asked once per op of the forward
        [('sin', False), ('exp', False), ('sum', False)]
    """

    def __init__(self, *, is_recompute: bool, op_output=None):
        self.is_recompute = is_recompute
        self.op_output = op_output


class _Cached:
    """A saved op output (a detached alias) and the version it had, to detect mutation."""

    __slots__ = ("value", "version")

    def __init__(self, out):
        self.value = out.detach() if isinstance(out, Tensor) else out
        self.version = out._version if isinstance(out, Tensor) else None


_RECOMPUTE = object()
_CONSUMED = object()
_SAC_MISMATCH = ("This can happen if the operations in the checkpointed region are "
                 "nondeterministic or depend on global state that changed between forward and "
                 "backward.")


class _CachingMode(DispatchMode):
    """Forward: run each op, ask the policy, keep the outputs of ops to save."""

    def __init__(self, policy_fn: Callable, storage: dict):
        self.policy_fn = policy_fn
        self.storage = storage
        self.counter: dict = defaultdict(int)

    def __ember_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func.name in _IGNORED_OPS:
            return out
        idx = self.counter[func]
        self.counter[func] += 1
        policy = self.policy_fn(SelectiveCheckpointContext(is_recompute=False, op_output=out),
                                func, *args, **kwargs)
        if isinstance(policy, bool):
            policy = CheckpointPolicy.MUST_SAVE if policy else CheckpointPolicy.PREFER_RECOMPUTE
        if policy in _SAVE:
            cached = tuple(_Cached(o) for o in out) if isinstance(out, tuple) else _Cached(out)
            self.storage[func][idx] = cached
        else:
            self.storage[func][idx] = _RECOMPUTE
        return out


class _CachedMode(DispatchMode):
    """Recomputation: replay the saved outputs, run everything else."""

    def __init__(self, storage: dict, allow_cache_entry_mutation: bool):
        self.storage = storage
        self.allow_mutation = allow_cache_entry_mutation
        self.counter: dict = defaultdict(int)

    def __enter__(self):
        self.counter.clear()
        return super().__enter__()

    def __ember_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.name in _IGNORED_OPS:
            return func(*args, **kwargs)
        idx = self.counter[func]
        self.counter[func] += 1
        entries = self.storage.get(func)
        if entries is None or idx not in entries:
            where = "" if entries is None else f" invocation index {idx}"
            raise RuntimeError(f"{func.short_name}{where} encountered during backward but not "
                               f"found in storage. {_SAC_MISMATCH}")
        entry = entries[idx]
        if entry is _CONSUMED:
            raise RuntimeError("Trying to backward an extra time. You are only allowed to "
                               "backward once on any region computed under selective "
                               "activation checkpoint.")
        if entry is _RECOMPUTE:
            return func(*args, **kwargs)
        entries[idx] = _CONSUMED
        if isinstance(entry, tuple):
            return tuple(self._value(e) for e in entry)
        return self._value(entry)

    def _value(self, cached: _Cached):
        v = cached.value
        if not isinstance(v, Tensor):
            return v
        if not self.allow_mutation and v._version != cached.version:
            raise RuntimeError("Tensor cached during selective activation checkpoint has been "
                               "mutated")
        return v.detach()


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation=False):
    """The ``context_fn`` pair for selective checkpointing: which op outputs to keep.

    Args:
        policy_fn_or_list: a list of operators (e.g. ``[ember.mm, ember.addmm]``) whose outputs
            are saved while everything else is recomputed, or ``policy(ctx, op, *args,
            **kwargs) -> CheckpointPolicy | bool`` (True means MUST_SAVE).
        allow_cache_entry_mutation: allow in-place changes to saved outputs (default: raise).

    Returns:
        Two dispatch modes: one caches the saved ops' outputs in forward, the other replays
        them during recomputation. Pass via ``context_fn=functools.partial(
        create_selective_checkpoint_contexts, policy)`` to ``checkpoint(use_reentrant=False)``.

    Example:
        >>> import functools, ember
        >>> from ember.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts
        >>> ctx = functools.partial(create_selective_checkpoint_contexts, [ember.mm])
        >>> x = ember.ones(2, 2, requires_grad=True)
        >>> checkpoint(lambda t: ember.mm(t, t).relu().sum(), x, use_reentrant=False,
        ...            context_fn=ctx).backward()
        >>> x.grad
        tensor([[4., 4.],
                [4., 4.]])
    """
    if isinstance(policy_fn_or_list, list):
        ops = policy_fn_or_list
        for op in ops:
            if not isinstance(op, Operator):
                raise ValueError(f"Expected op in `op_list` to be an Operator but got: {op} of "
                                 f"type {type(op)}.")

        def policy_fn(ctx, op, *args, **kwargs):
            return CheckpointPolicy.MUST_SAVE if op in ops else CheckpointPolicy.PREFER_RECOMPUTE
    elif callable(policy_fn_or_list):
        policy_fn = policy_fn_or_list
    else:
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    storage: dict = defaultdict(dict)
    return (_CachingMode(policy_fn, storage),
            _CachedMode(storage, allow_cache_entry_mutation))


# -- the memory planner ---------------------------------------------------------------------------
# NOTE [Checkpoint planner]
# ``plan`` runs one instrumented training step of the chain of blocks with no block
# checkpointed and one with every block checkpointed (loss = sum of the last output; parameter
# gradients start as None, as after ``zero_grad()``). In forward it reads, per block, the
# allocator's bytes at its start and end and its peak; in backward, a gradient hook on each
# block's output marks where that block's backward begins, so each block's backward peak is
# read in its real surroundings. Expressed relative to what the earlier blocks retain, these
# numbers compose: for any choice of checkpointed blocks the peak of the step is
#   max over i of  sum_{j<i} retained_j(choice_j) + peak_i(choice_i)
# for the forward and the backward phases alike, plus the loss head's window. Both uniform
# choices are thus predicted exactly, mixed ones up to effects at block boundaries. The chooser
# starts from all blocks checkpointed and un-checkpoints, greedily, the block that saves the
# most recomputation time per byte of extra peak while the budget still holds.


@dataclass(frozen=True)
class BlockProfile:
    """One block of a planned chain, measured; pairs are (plain, checkpointed), in bytes.

    ``retained``: kept from the block's forward until its backward (its output included).
    ``forward_peak``: peak during its forward above the memory at its start.
    ``backward_peak``: peak during its backward above what the earlier blocks retain.

    Example:
        >>> from ember.utils.checkpoint import plan
        >>> blocks = [ember.nn.Linear(8, 8) for _ in range(2)]
        >>> p = plan(blocks, ember.randn(4, 8), 1 << 30)
        >>> len(p.profiles), type(p.profiles[0]).__name__
        (2, 'BlockProfile')
    """

    forward_seconds: float
    retained: tuple[int, int]
    forward_peak: tuple[int, int]
    backward_peak: tuple[int, int]


@dataclass(frozen=True)
class CheckpointPlan:
    """Which blocks to checkpoint and the memory peak (above the step's start) to expect.

    Example:
        >>> from ember.utils.checkpoint import plan
        >>> blocks = [ember.nn.Linear(8, 8) for _ in range(3)]
        >>> p = plan(blocks, ember.randn(4, 8), 1 << 30)  # a budget every choice fits
        >>> p.checkpointed, p.memory_budget, p.peak_for([]) == p.plain_peak
        ((), 1073741824, True)
    """

    checkpointed: tuple[int, ...]
    predicted_peak: int
    plain_peak: int
    memory_budget: int
    recompute_seconds: float
    profiles: tuple[BlockProfile, ...] = field(repr=False)
    head_peak: int = field(default=0, repr=False)
    blocks: tuple = field(default=(), repr=False, compare=False)

    def peak_for(self, checkpointed) -> int:
        """Predicted step peak (bytes above the start) for another set of checkpointed blocks."""
        chosen = set(checkpointed)
        return _predict(self.profiles, self.head_peak,
                        [int(i in chosen) for i in range(len(self.profiles))])


def plan(blocks, sample_input: Tensor, memory_budget_bytes: int) -> CheckpointPlan:
    """Choose the blocks to checkpoint so a training step's activation peak fits a budget.

    Measures a chain of blocks (each called on the previous one's output) with ember's
    allocator (see NOTE [Checkpoint planner]) and picks the set of checkpointed blocks with
    little recomputation time whose predicted peak, in bytes above the memory at the start of
    the step (parameters, inputs), stays within ``memory_budget_bytes``. Leaves the blocks'
    buffers, gradients and the RNG state as they were.

    Args:
        blocks: modules (or a module with ``children()``) applied in order.
        sample_input: an input of the first block, shaped as in training.
        memory_budget_bytes: the allowed peak of activation (and gradient) memory.

    Returns:
        A ``CheckpointPlan``: ``checkpointed`` indices, ``predicted_peak``, ``plain_peak``,
        ``recompute_seconds`` and the per-block ``profiles``; apply it with ``apply_plan``.

    Raises:
        ValueError: the budget is below the peak with every block checkpointed.

    Example:
        >>> import ember
        >>> from ember.utils.checkpoint import plan
        >>> blocks = [ember.nn.Sequential(ember.nn.Linear(64, 64), ember.nn.Tanh())
        ...           for _ in range(4)]
        >>> p = plan(blocks, ember.randn(256, 64), 1 << 30)
        >>> p.checkpointed, p.predicted_peak == p.plain_peak
        ((), True)
    """
    if not isinstance(blocks, (list, tuple)) and hasattr(blocks, "children"):
        blocks = list(blocks.children())
    blocks = tuple(blocks)
    if not blocks:
        raise ValueError("plan: expected at least one block; got none")
    plain, ckpt, head = _profile(blocks, sample_input)
    profiles = tuple(BlockProfile(p[3], (p[1], c[1]), (p[0], c[0]), (p[2], c[2]))
                     for p, c in zip(plain, ckpt))
    choice = _choose(profiles, head, memory_budget_bytes)
    chosen = tuple(i for i, c in enumerate(choice) if c)
    return CheckpointPlan(chosen, _predict(profiles, head, choice),
                          _predict(profiles, head, [0] * len(blocks)), memory_budget_bytes,
                          sum(profiles[i].forward_seconds for i in chosen), profiles, head,
                          blocks)


def _profile(blocks: tuple, x: Tensor):
    """Per block (fwd peak, retained, bwd peak, seconds) plain and checkpointed, head peak."""
    params = [p for b in blocks if hasattr(b, "parameters") for p in b.parameters()]
    buffers = [t for b in blocks if hasattr(b, "buffers") for t in b.buffers()]
    grads = [p.grad for p in params]
    saved = [t.clone() for t in buffers]
    try:
        with fork_rng():
            _measure(blocks, x, params, False)          # warm-up: caches, lazy state
            plain, head = _measure(blocks, x, params, False)
            ckpt, _ = _measure(blocks, x, params, True)
    finally:
        with no_grad():
            for t, s in zip(buffers, saved):
                t.copy_(s)
        for p, g in zip(params, grads):
            p.grad = g
    return plain, ckpt, head


def _measure(blocks: tuple, x: Tensor, params: list, ckpt: bool):
    for p in params:
        p.grad = None
    base = memory.memory_allocated()
    rows, h, handles, marks = [], x, [], []

    def mark(_grad):
        marks.append(memory.max_memory_allocated())
        memory.reset_peak_memory_stats()

    for b in blocks:
        start = memory.memory_allocated()
        memory.reset_peak_memory_stats()
        t0 = time.perf_counter()
        h = checkpoint(b, h, use_reentrant=False) if ckpt else b(h)
        seconds = time.perf_counter() - t0
        end = memory.memory_allocated()
        rows.append([memory.max_memory_allocated() - start, end - start, 0, seconds])
        if isinstance(h, Tensor) and h.requires_grad:
            handles.append(h.register_hook(mark))
    memory.reset_peak_memory_stats()
    loss = h.sum()
    del h
    if loss.requires_grad:
        loss.backward()
    marks.append(memory.max_memory_allocated())
    for handle in handles:
        handle.remove()
    return _windows(rows, marks, base)


def _windows(rows: list, marks: list, base: int):
    """Turn absolute backward peaks (loss head first, block 0 last) into per-block numbers."""
    before = list(_prefix_sums(r[1] for r in rows))
    if len(marks) == len(rows) + 1:
        for i, row in enumerate(rows):
            row[2] = marks[len(rows) - i] - base - before[i]
        head = marks[0] - base - before[-1] - rows[-1][1]
    else:  # nothing required grad: no backward
        head = 0
    return [tuple(r) for r in rows], head


def _prefix_sums(values) -> list:
    """Prefix sums that start at 0: element i is the sum of the first i values."""
    out, total = [], 0
    for v in values:
        out.append(total)
        total += v
    return out


def _predict(profiles: Sequence[BlockProfile], head: int, choice: Sequence[int]) -> int:
    peak, kept = 0, 0
    for p, c in zip(profiles, choice):
        peak = max(peak, kept + p.forward_peak[c], kept + p.backward_peak[c])
        kept += p.retained[c]
    return max(peak, kept + head)


def _choose(profiles: tuple, head: int, budget: int) -> list[int]:
    n = len(profiles)
    choice = [0] * n
    if _predict(profiles, head, choice) <= budget:
        return choice
    choice = [1] * n
    lowest = _predict(profiles, head, choice)
    if lowest > budget:
        raise ValueError(f"plan: the memory budget ({budget} bytes) is below the smallest "
                         f"achievable peak ({lowest} bytes, every block checkpointed); expected "
                         f"a budget of at least {lowest} bytes")
    while True:
        current = _predict(profiles, head, choice)
        best, best_score = None, -1.0
        for i in reversed(range(n)):
            if not choice[i]:
                continue
            choice[i] = 0
            peak = _predict(profiles, head, choice)
            choice[i] = 1
            if peak <= budget:
                score = profiles[i].forward_seconds / (max(peak - current, 0) + 1)
                if score > best_score:
                    best, best_score = i, score
        if best is None:
            return choice
        choice[best] = 0


class _CheckpointedForward:
    """A block's ``forward`` replaced by a checkpointed call of the original."""

    def __init__(self, forward: Callable, use_reentrant: bool):
        self.forward = forward
        self.use_reentrant = use_reentrant

    def __call__(self, *args, **kwargs):
        if self.use_reentrant:
            return checkpoint(self.forward, *args, use_reentrant=True)
        return checkpoint(self.forward, *args, use_reentrant=False, **kwargs)


def checkpoint_modules(modules, use_reentrant: bool = False) -> None:
    """Make each module run checkpointed by wrapping its ``forward`` in place.

    Parameter names, ``state_dict`` keys and hooks stay as they were (unlike a wrapper module);
    under ``no_grad`` (evaluation, generation) the modules run plainly. ``remove_plan`` undoes it.

    Raises:
        TypeError: an entry has no ``forward`` to wrap (a plain function).

    Example:
        >>> from ember.utils.checkpoint import checkpoint_modules, remove_plan
        >>> model = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.Tanh())
        >>> checkpoint_modules([model[0]])
        >>> model(ember.ones(1, 2)).sum().backward()  # model[0] is recomputed in backward
        >>> "forward" in vars(model[0]), "forward" in vars(remove_plan(model)[0])
        (True, False)
    """
    for i, m in enumerate(modules):
        if not hasattr(m, "forward") or not hasattr(m, "__dict__"):
            raise TypeError(f"checkpoint_modules: entry {i} is a {type(m).__name__}; expected a "
                            "module with a forward method")
        if not isinstance(m.__dict__.get("forward"), _CheckpointedForward):
            m.forward = _CheckpointedForward(m.forward, use_reentrant)


def apply_plan(model, plan: CheckpointPlan, use_reentrant: bool = False):
    """Make the planned blocks of ``model`` run checkpointed (``checkpoint_modules``).

    Returns:
        ``model``; ``remove_plan(model)`` undoes it.

    Raises:
        ValueError: a planned block is not part of ``model``.
        TypeError: a planned block has no ``forward`` to wrap (a plain function).

    Example:
        >>> import dataclasses
        >>> from ember.utils.checkpoint import apply_plan, plan
        >>> nn = ember.nn
        >>> model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 4))
        >>> p = dataclasses.replace(plan(model, ember.randn(2, 4), 1 << 30), checkpointed=(2,))
        >>> apply_plan(model, p) is model, "forward" in vars(model[2])
        (True, True)
    """
    members = list(model.modules()) if hasattr(model, "modules") else list(model)
    ids = {id(m) for m in members}
    for i in plan.checkpointed:
        if id(plan.blocks[i]) not in ids:
            raise ValueError(f"apply_plan: block {i} of the plan is not part of the model")
    checkpoint_modules([plan.blocks[i] for i in plan.checkpointed], use_reentrant)
    return model


def remove_plan(model):
    """Undo ``apply_plan`` / ``checkpoint_modules``: every module of ``model`` (a module or a
    list of modules) runs its own ``forward`` again; returns ``model``.

    Example:
        >>> from ember.utils.checkpoint import checkpoint_modules, remove_plan
        >>> layer = ember.nn.Linear(2, 2)
        >>> checkpoint_modules([layer])
        >>> remove_plan([layer])[0] is layer, "forward" in vars(layer)
        (True, False)
    """
    members = list(model.modules()) if hasattr(model, "modules") else list(model)
    for m in members:
        if isinstance(getattr(m, "__dict__", {}).get("forward"), _CheckpointedForward):
            del m.forward
    return model
