"""BatchedTensor and the Batched dispatch key: how ``vmap`` runs a per-example function.

NOTE [Batched sits above autograd]
A ``BatchedTensor`` shows one example (its *logical* shape) and holds the whole batch (its
``_value``, with the batch at ``_bdim``). Its key set is the ``Batched`` key alone, and inside
``vmap`` the key is also in the thread's included set, so every operator call reaches the
Batched kernel first. The kernel takes the wrappers of the innermost level (``vmap`` inside
``vmap`` nests wrappers: the outermost wrapper is the innermost ``vmap``), moves their batch
dimension to the front and applies the operator's *batching rule* to the values, which
dispatch again (a lower level's wrappers, or plain tensors down to autograd and the kernels).
So the key sits above autograd, unlike torch's: autograd only ever records plain tensors, and
``grad`` inside ``vmap`` differentiates the batch's values directly (NOTE [Transforms over
levels] in ``_transforms.py``). With no wrapper among its arguments a call goes straight to
the keys below (random operators are checked against ``randomness`` first).
"""

from __future__ import annotations

import threading

from ember.dispatch.dispatcher import Tag, redispatch
from ember.dispatch.keys import DispatchKey
from ember.tensor import Tensor
from ember.tensor.tensor import VersionCounter

__all__ = ["BatchedTensor", "BATCHED_BIT", "wrap", "is_batched_at", "current_levels"]

BATCHED_BIT = 1 << DispatchKey.Batched


class _Level:
    """One active ``vmap``: its level number, batch size and randomness mode."""

    __slots__ = ("level", "size", "randomness")

    def __init__(self, level: int, size: int, randomness: str):
        self.level = level
        self.size = size
        self.randomness = randomness


class _State(threading.local):
    def __init__(self):
        self.levels: list[_Level] = []
        self.physical = 0  # > 0 while a batching rule runs on values (not user code)


_state = _State()


def current_levels() -> list[_Level]:
    """The active ``vmap`` levels of this thread, outermost first."""
    return _state.levels


_DATA_DEPENDENT = ("vmap: It looks like you're attempting to use a Tensor in some "
                   "data-dependent control flow. We don't support that yet, please rewrite the "
                   "branch with ember.where or move it out of vmap.")
_ITEM = ("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over "
         "calling .item() on a Tensor, please try to rewrite what you're doing with other "
         "operations.")


class BatchedTensor(Tensor):
    """One example of a batch inside ``vmap``: logical shape outside, the batch inside.

    Created by ``vmap`` only. Metadata (``shape``, ``dim()``, ``dtype``) is the example's;
    reading its values (``item()``, ``bool()``, ``tolist()``) raises, as in torch.
    """

    __slots__ = ()

    def item(self):
        raise RuntimeError(_ITEM)

    def __bool__(self) -> bool:
        raise RuntimeError(_DATA_DEPENDENT)

    def __float__(self) -> float:
        raise RuntimeError(_ITEM)

    def __int__(self) -> int:
        raise RuntimeError(_ITEM)

    def __index__(self) -> int:
        raise RuntimeError(_ITEM)

    def tolist(self):
        raise RuntimeError(_ITEM)

    def numpy(self, *, force: bool = False):
        raise RuntimeError("vmap: cannot convert a batched tensor to NumPy inside vmap")

    def __array__(self, dtype=None, copy=None):
        raise RuntimeError("vmap: cannot convert a batched tensor to NumPy inside vmap")

    def __repr__(self, *, tensor_contents=None) -> str:
        return (f"BatchedTensor(lvl={self._level}, bdim={self._bdim}, value=\n"
                f"{self._value!r}\n)")

    def __format__(self, spec: str) -> str:
        return object.__format__(self, spec)


def wrap(value: Tensor, bdim: int, level: int) -> BatchedTensor:
    """A BatchedTensor at ``level`` over ``value`` whose dimension ``bdim`` is the batch."""
    t = object.__new__(BatchedTensor)
    shape, stride = value._shape, value._stride
    t._storage = value._storage
    t._shape = shape[:bdim] + shape[bdim + 1:]
    t._stride = stride[:bdim] + stride[bdim + 1:]
    t._offset = value._offset
    t._dtype = value._dtype
    t._device = value._device
    t._ver = VersionCounter(0, BATCHED_BIT)
    t._base = None
    t._requires_grad = False
    t._grad = None
    t.grad_fn = None
    t._output_nr = 0
    t._arr = None
    t._mkey = None
    t._is_inference = False
    t._value = value
    t._bdim = bdim
    t._level = level
    return t


def is_batched_at(x, level: int) -> bool:
    """Whether ``x`` is a BatchedTensor of ``level``."""
    return x.__class__ is BatchedTensor and x._level == level


def front(x: BatchedTensor) -> Tensor:
    """The value of a wrapper with its batch dimension first."""
    v = x._value
    return v if x._bdim == 0 else v.movedim(x._bdim, 0)


def _max_level(args, kwargs) -> int:
    level = 0
    for a in (*args, *kwargs.values()):
        if a.__class__ is BatchedTensor:
            level = max(level, a._level)
        elif a.__class__ is list or a.__class__ is tuple:
            for t in a:
                if t.__class__ is BatchedTensor:
                    level = max(level, t._level)
    return level


def _level_info(level: int) -> _Level:
    for lv in _state.levels:
        if lv.level == level:
            return lv
    raise RuntimeError(f"vmap: a BatchedTensor of level {level} escaped its vmap; return it "
                       f"from the vmapped function instead of storing it")


_RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either "
                 "use the 'same' or 'different' randomness flags on vmap or perform the "
                 "randomness operation out of vmap")


def batched_kernel(op, ks_below: int, *args, **kwargs):
    """The ``Batched`` key's fallback: a batching rule, a decomposition, or a loop."""
    level = _max_level(args, kwargs)
    if level == 0:
        if Tag.random in op.tags and _state.levels:
            return _random_unbatched(op, ks_below, args, kwargs)
        return redispatch(op, ks_below, *args, **kwargs)
    info = _level_info(level)
    if Tag.random in op.tags and info.randomness == "error":
        raise RuntimeError(_RANDOM_ERROR)
    _state.physical += 1
    try:
        if Tag.random in op.tags and info.randomness == "same":
            return _rules.loop(op, info, args, kwargs, same_randomness=True)
        return _rules.apply(op, info, args, kwargs)
    finally:
        _state.physical -= 1


def _random_unbatched(op, ks_below: int, args, kwargs):
    """A random operator without batched inputs: an error, one draw, or one per example."""
    info = _state.levels[-1]
    if _state.physical:  # a rule's own draws: already one per example
        return redispatch(op, ks_below, *args, **kwargs)
    if info.randomness == "error":
        raise RuntimeError(_RANDOM_ERROR)
    if info.randomness == "same" or not op._is_factory:
        return redispatch(op, ks_below, *args, **kwargs)
    draws = [redispatch(op, ks_below, *args, **kwargs) for _ in range(info.size)]
    return wrap(_rules.stack_plain(draws), 0, info.level)


from ember.func import _rules  # noqa: E402  (the rules module imports this one)
