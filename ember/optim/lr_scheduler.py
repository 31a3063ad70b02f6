"""Learning-rate schedulers (``torch.optim.lr_scheduler``).

A scheduler writes ``lr`` (and, for the cyclic ones, ``momentum`` or ``betas[0]``) into its
optimizer's parameter groups. Construction performs an initial step (``last_epoch`` -1 -> 0),
and ``state_dict`` is the scheduler's ``__dict__`` without the optimizer, as in torch.

NOTE [Chainable and closed forms]
``step()`` uses each scheduler's *chainable* (recursive) form: the new rate is computed from
the rate currently in the group, so several schedulers can act on one optimizer
(ChainedScheduler, or simply stepping two). ``step(epoch)`` (deprecated in torch, warns) uses
the *closed form* from ``base_lrs`` where a scheduler has one. The formulas and their order of
floating-point operations are torch's, so the rates match torch's bit for bit.
"""

from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ember.optim.optimizer import Optimizer
from ember.tensor import Tensor

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR",
           "LinearLR", "ExponentialLR", "SequentialLR", "CosineAnnealingLR", "ChainedScheduler",
           "ReduceLROnPlateau", "CyclicLR", "CosineAnnealingWarmRestarts", "OneCycleLR",
           "PolynomialLR"]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where "
    "possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if "
    "epoch is different from None, the closed form is used instead of the new chainable form, "
    "where available.")


def _values(optimizer: Optimizer, key: str) -> list:
    """``group[key]`` of every group (tensors cloned so later updates do not alias)."""
    return [g[key].clone() if isinstance(g[key], Tensor) else g[key]
            for g in optimizer.param_groups]


def _set(group: dict[str, Any], key: str, value: Any) -> None:
    """Write a value into a group, in place when the group holds a tensor (tensor lr)."""
    if isinstance(group[key], Tensor):
        group[key].fill_(float(value))
    else:
        group[key] = value


def _per_group(name: str, optimizer: Optimizer, value: Any) -> list:
    """One value per parameter group: a list/tuple checked for length, or a broadcast scalar."""
    n = len(optimizer.param_groups)
    if isinstance(value, list | tuple):
        if len(value) != n:
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. "
                             f"{name} has {len(value)} values, param_groups has {n}.")
        return [v.clone() if isinstance(v, Tensor) else v for v in value]
    return [value] * n


def _check_optimizer(optimizer: Any) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


class LRScheduler:
    """Base class of the learning-rate schedulers (``torch.optim.lr_scheduler.LRScheduler``).

    Subclasses implement ``get_lr()`` (the chainable form; see NOTE [Chainable and closed
    forms]) and optionally ``_get_closed_form_lr()``.

    Args:
        optimizer: the optimizer whose groups' ``lr`` is scheduled.
        last_epoch: the index of the last epoch; -1 starts fresh (records ``initial_lr`` in
            each group), otherwise every group must already hold ``initial_lr``.

    Raises:
        TypeError: ``optimizer`` is not an Optimizer.
        KeyError: resuming (``last_epoch >= 0``) without ``initial_lr`` in a group.
    """

    _get_lr_called_within_step: bool = False
    _is_initial: bool = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                lr = group["lr"]
                group.setdefault("initial_lr", lr.clone() if isinstance(lr, Tensor) else lr)
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] "
                                   "when resuming scheduler with last_epoch >= 0.")
        self.base_lrs: list = _values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's attributes except the optimizer (torch's format)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes saved by :meth:`state_dict`."""
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list:
        """The learning rates of the groups after the last ``step``."""
        return self._last_lr

    def get_lr(self) -> list:
        """The chainable form of the schedule (called by ``step``)."""
        raise NotImplementedError

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or jump to ``epoch``, deprecated) and update the groups' lr."""
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn(
                "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch "
                "1.1.0 and later, you should call them in the opposite order: "
                "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this will "
                "result in PyTorch skipping the first value of the learning rate schedule.",
                UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed = getattr(self, "_get_closed_form_lr", None)
                values = closed() if closed is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            _set(group, "lr", lr)
        self._last_lr = _values(self.optimizer, "lr")

    def _warn_outside_step(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=3)

    def _current(self) -> list:
        return _values(self.optimizer, "lr")

    def _scaled(self, factor: float) -> list:
        return [g["lr"] * factor for g in self.optimizer.param_groups]


_LRScheduler = LRScheduler


class _LambdaBase(LRScheduler):
    """Shared by LambdaLR and MultiplicativeLR: one callable per group; state dicts keep the
    ``__dict__`` of callable objects (plain functions and lambdas are not saved)."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Any, last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        n = len(optimizer.param_groups)
        if isinstance(lr_lambda, list | tuple):
            if len(lr_lambda) != n:
                raise ValueError(f"Expected {n} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * n
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        """Attributes, with ``lr_lambdas`` as each callable object's ``__dict__`` (or None)."""
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        sd["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                            for fn in self.lr_lambdas]
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes and the saved ``__dict__`` of callable objects."""
        state_dict = dict(state_dict)
        lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        for fn, saved in zip(self.lr_lambdas, lambdas, strict=False):
            if saved is not None:
                fn.__dict__.update(saved)


class LambdaLR(_LambdaBase):
    """lr = initial_lr * lr_lambda(epoch) (``torch.optim.lr_scheduler.LambdaLR``).

    Args:
        optimizer: the optimizer.
        lr_lambda: a function of the epoch, or one per group.
        last_epoch: index of the last epoch (default -1).

    Example:
        >>> import ember
        >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=1.0)
        >>> s = ember.optim.lr_scheduler.LambdaLR(opt, lambda e: 0.5 ** e)
        >>> opt.step(); s.step(); s.get_last_lr()
        [0.5]
    """

    def get_lr(self) -> list:
        """``base_lr * lr_lambda(last_epoch)`` per group."""
        self._warn_outside_step()
        return [b * fn(self.last_epoch) for fn, b in zip(self.lr_lambdas, self.base_lrs,
                                                          strict=True)]


class MultiplicativeLR(_LambdaBase):
    """lr *= lr_lambda(epoch) each step (``torch.optim.lr_scheduler.MultiplicativeLR``).

    Args:
        optimizer: the optimizer.
        lr_lambda: a function of the epoch giving the factor, or one per group.
        last_epoch: index of the last epoch (default -1).

    Raises:
        TypeError: an ``lr_lambda`` is not callable.
    """

    def __init__(self, optimizer: Optimizer, lr_lambda: Any, last_epoch: int = -1) -> None:
        for fn in lr_lambda if isinstance(lr_lambda, list | tuple) else [lr_lambda]:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, lr_lambda, last_epoch)

    def get_lr(self) -> list:
        """``lr * lr_lambda(last_epoch)`` per group (unchanged on the initial step)."""
        self._warn_outside_step()
        if self._is_initial:
            return self._current()
        return [g["lr"] * fn(self.last_epoch)
                for fn, g in zip(self.lr_lambdas, self.optimizer.param_groups, strict=True)]


class StepLR(LRScheduler):
    """Multiply lr by ``gamma`` every ``step_size`` epochs (``torch...StepLR``).

    Example:
        >>> import ember
        >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=1.0)
        >>> s = ember.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        >>> for _ in range(2): opt.step(); s.step()
        >>> s.get_last_lr()
        [0.5]
    """

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """Decay by gamma when ``last_epoch`` is a positive multiple of ``step_size``."""
        self._warn_outside_step()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current()
        return self._scaled(self.gamma)

    def _get_closed_form_lr(self) -> list:
        return [b * self.gamma ** (self.last_epoch // self.step_size) for b in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply lr by ``gamma`` at each milestone (repeated milestones multiply again)."""

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """Decay by ``gamma ** count`` when ``last_epoch`` is a milestone."""
        self._warn_outside_step()
        if self.last_epoch not in self.milestones:
            return self._current()
        return self._scaled(self.gamma ** self.milestones[self.last_epoch])

    def _get_closed_form_lr(self) -> list:
        milestones = sorted(self.milestones.elements())
        k = bisect_right(milestones, self.last_epoch)
        return [b * self.gamma**k for b in self.base_lrs]


class ConstantLR(LRScheduler):
    """lr = initial_lr * factor until ``total_iters``, then initial_lr.

    Raises:
        ValueError: ``factor`` outside [0, 1].
    """

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """Scale by ``factor`` at epoch 0 and back by ``1 / factor`` at ``total_iters``."""
        self._warn_outside_step()
        if self.last_epoch == 0:
            return self._scaled(self.factor)
        if self.last_epoch != self.total_iters:
            return self._current()
        return self._scaled(1.0 / self.factor)

    def _get_closed_form_lr(self) -> list:
        on = self.last_epoch >= self.total_iters
        return [b * (self.factor + on * (1 - self.factor)) for b in self.base_lrs]


class LinearLR(LRScheduler):
    """lr factor moves linearly from ``start_factor`` to ``end_factor`` over ``total_iters``.

    Raises:
        ValueError: ``start_factor`` not in (0, 1] or ``end_factor`` not in [0, 1].
    """

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5, last_epoch: int = -1) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and "
                             "less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """The ratio of consecutive factors applied to the current lr."""
        self._warn_outside_step()
        if self.last_epoch == 0:
            return self._scaled(self.start_factor)
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current()
        delta = self.end_factor - self.start_factor
        ratio = 1.0 + delta / (self.total_iters * self.start_factor
                               + (self.last_epoch - 1) * delta)
        return self._scaled(ratio)

    def _get_closed_form_lr(self) -> list:
        t = min(self.total_iters, self.last_epoch)
        return [b * (self.start_factor + (self.end_factor - self.start_factor) * t
                     / self.total_iters) for b in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply lr by ``gamma`` every epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """``lr * gamma`` (unchanged on the initial step)."""
        self._warn_outside_step()
        if self._is_initial:
            return self._current()
        return self._scaled(self.gamma)

    def _get_closed_form_lr(self) -> list:
        return [b * self.gamma**self.last_epoch for b in self.base_lrs]


class PolynomialLR(LRScheduler):
    """lr decays as ``(1 - t / total_iters) ** power`` until ``total_iters``."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """The ratio of consecutive decay factors applied to the current lr."""
        self._warn_outside_step()
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current()
        t, n = self.last_epoch, self.total_iters
        return self._scaled(((1.0 - t / n) / (1.0 - (t - 1) / n)) ** self.power)

    def _get_closed_form_lr(self) -> list:
        t = min(self.total_iters, self.last_epoch)
        return [b * (1.0 - t / self.total_iters) ** self.power for b in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from initial_lr to ``eta_min`` over ``T_max`` epochs (then back up)."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,  # noqa: N803
                 last_epoch: int = -1) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """torch's recursive cosine update of the current lr."""
        self._warn_outside_step()
        t, T, lo = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return self._current()
        if self._step_count == 1 and t > 0:
            return [lo + (b - lo) * (1 + math.cos(t * math.pi / T)) / 2 for b in self.base_lrs]
        if (t - 1 - T) % (2 * T) == 0:
            return [g["lr"] + (b - lo) * (1 - math.cos(math.pi / T)) / 2
                    for b, g in zip(self.base_lrs, self.optimizer.param_groups, strict=True)]
        ratio_num = 1 + math.cos(math.pi * t / T)
        ratio_den = 1 + math.cos(math.pi * (t - 1) / T)
        return [ratio_num / ratio_den * (g["lr"] - lo) + lo for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        lo = self.eta_min
        c = 1 + math.cos(math.pi * self.last_epoch / self.T_max)
        return [lo + (b - lo) * c / 2 for b in self.base_lrs]


class _Composite(LRScheduler):
    """Shared by SequentialLR and ChainedScheduler: validation and nested state dicts."""

    @classmethod
    def _check(cls, optimizer: Any, schedulers: Sequence) -> None:
        name = cls.__name__
        for i, s in enumerate(schedulers):
            if not hasattr(s, "optimizer"):
                raise TypeError(f"{name} at index {i} should have `optimizer` as its attribute.")
            if isinstance(s, ReduceLROnPlateau):
                raise ValueError(f"{name} does not support `ReduceLROnPlateau` scheduler as it "
                                 "requires additional kwargs to be specified when calling "
                                 f"`step`, but got one at index {i} in the given schedulers "
                                 "sequence.")
            if optimizer is not s.optimizer:
                raise ValueError(f"{name} expects all schedulers to belong to the same "
                                 f"optimizer, but got scheduler {type(s).__name__} at index "
                                 f"{i} has {s.optimizer}, which is different from "
                                 f"{type(optimizer).__name__}.")

    def state_dict(self) -> dict[str, Any]:
        """Attributes, with each inner scheduler's own state dict under ``_schedulers``."""
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        sd["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes and every inner scheduler's state."""
        state_dict = dict(state_dict)
        inner = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for s, sd in zip(self._schedulers, inner, strict=True):
            s.load_state_dict(sd)


class SequentialLR(_Composite):
    """Run ``schedulers[i]`` between ``milestones[i-1]`` and ``milestones[i]``.

    Raises:
        ValueError: no schedulers, a ReduceLROnPlateau, another optimizer, or
            ``len(milestones) != len(schedulers) - 1``.
    """

    def __init__(self, optimizer: Optimizer, schedulers: list[LRScheduler],
                 milestones: list[int], last_epoch: int = -1) -> None:
        if len(schedulers) < 1:
            raise ValueError(f"{type(self).__name__} expects at least one scheduler, but got "
                             "no scheduler.")
        self._check(optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be "
                             "one more than the number of milestone points, but got number of "
                             f"schedulers {len(schedulers)} and the number of milestones to be "
                             f"equal to {len(milestones)}")
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            _set(group, "lr", group["initial_lr"])
        self._undo(self)
        idx = bisect_right(milestones, 0)
        schedulers[idx]._initial_step()
        self._last_lr = schedulers[idx].get_last_lr()

    def _undo(self, sched: Any) -> None:
        """Rewind every (nested) scheduler's ``last_epoch`` by one, as torch does."""
        if sched is not self and not hasattr(sched, "_schedulers"):
            sched.last_epoch -= 1
            return
        for s in sched._schedulers:
            self._undo(s)

    def recursive_undo(self, sched: Any = None) -> None:
        """torch's name for the rewind done at construction."""
        self._undo(self if sched is None else sched)

    def step(self) -> None:
        """Step the active scheduler; at a milestone, restart the next one at epoch 0."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        sched = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            sched._update_lr(0)
        else:
            sched.step()
        self._last_lr = sched.get_last_lr()


class ChainedScheduler(_Composite):
    """Step several schedulers of one optimizer together, each acting on the current lr."""

    def __init__(self, schedulers: Sequence[LRScheduler],
                 optimizer: Optimizer | None = None) -> None:
        if len(schedulers) < 1:
            raise ValueError(f"{type(self).__name__} expects at least one scheduler to be "
                             "chained, but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        self._check(optimizer, schedulers)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _values(schedulers[-1].optimizer, "lr")

    def step(self) -> None:
        """Step every scheduler in order."""
        for s in self._schedulers:
            s.step()
        self._last_lr = _values(self._schedulers[-1].optimizer, "lr")


class ReduceLROnPlateau(LRScheduler):
    """Reduce lr by ``factor`` when a metric stopped improving for ``patience`` epochs.

    Args:
        optimizer: the optimizer.
        mode: "min" (metric should decrease) or "max".
        factor: multiplier of the lr (< 1).
        patience: epochs without improvement tolerated.
        threshold: improvement threshold; threshold_mode "rel" (relative) or "abs".
        cooldown: epochs to wait after a reduction before counting again.
        min_lr: lower bound (one per group, or a scalar).
        eps: reductions smaller than this are skipped.

    Raises:
        ValueError: ``factor >= 1``, an unknown mode, or a wrong number of ``min_lr``.
    """

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1,
                 patience: int = 10, threshold: float = 1e-4, threshold_mode: str = "rel",
                 cooldown: int = 0, min_lr: list[float] | float = 0, eps: float = 1e-8) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        self.factor = factor
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        n = len(optimizer.param_groups)
        if isinstance(min_lr, list | tuple):
            if len(min_lr) != n:
                raise ValueError(f"expected {n} min_lrs, got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * n
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = _values(optimizer, "lr")
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self) -> bool:
        """Whether a reduction happened less than ``cooldown`` epochs ago."""
        return self.cooldown_counter > 0

    def step(self, metrics: Any, epoch: int | None = None) -> None:  # type: ignore[override]
        """Record ``metrics`` for one epoch and reduce the lr when it has plateaued."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = _values(self.optimizer, "lr")

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"The number of param groups in the `optimizer` ({len(groups)}) differs "
                    f"from when `ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), "
                    "usually due to a new param group being added to the optimizer. Please "
                    "modify the `min_lrs` field to match the length of the `optimizer` param "
                    "groups.")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs, strict=True):
            old = float(group["lr"])
            new = max(old * self.factor, min_lr)
            if old - new > self.eps:
                _set(group, "lr", new)

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min":
            if self.threshold_mode == "rel":
                return a < best * (1.0 - self.threshold)
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in {"min", "max"}:
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in {"rel", "abs"}:
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes (and the comparison they configure)."""
        self.__dict__.update(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)


def _set_momentum(optimizer: Optimizer, use_beta1: bool, values: list) -> None:
    for group, m in zip(optimizer.param_groups, values, strict=True):
        if use_beta1:
            group["betas"] = (m, *group["betas"][1:])
        else:
            group["momentum"] = m


def _init_cycle_momentum(sched: Any, optimizer: Optimizer, base: Any, top: Any,
                         fresh: bool) -> tuple[list, list]:
    """Validate momentum cycling; on a fresh start set each group's momentum to its maximum."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` "
                         "option enabled")
    sched.use_beta1 = "betas" in optimizer.defaults
    bases = _per_group("base_momentum", optimizer, base)
    tops = _per_group("max_momentum", optimizer, top)
    if fresh:
        _set_momentum(optimizer, sched.use_beta1, tops)
        for group, b, t in zip(optimizer.param_groups, bases, tops, strict=True):
            group["max_momentum"] = t
            group["base_momentum"] = b
    return bases, tops


class CyclicLR(LRScheduler):
    """Cyclical learning rate (and inverse momentum) between ``base_lr`` and ``max_lr``.

    Args:
        optimizer: the optimizer.
        base_lr, max_lr: cycle bounds (one per group or a scalar).
        step_size_up, step_size_down: iterations in the rising and falling half-cycles.
        mode: "triangular", "triangular2" (amplitude halves each cycle) or "exp_range"
            (amplitude ``gamma ** iteration``); ``scale_fn``/``scale_mode`` override it.
        cycle_momentum: cycle momentum (or Adam's beta1) inversely between
            ``base_momentum`` and ``max_momentum``.

    Raises:
        ValueError: an unknown mode without ``scale_fn``; cycle_momentum with an optimizer
            without momentum or betas.
    """

    def __init__(self, optimizer: Optimizer, base_lr: float | list[float],
                 max_lr: float | list[float], step_size_up: int = 2000,
                 step_size_down: int | None = None, mode: str = "triangular",
                 gamma: float = 1.0, scale_fn: Callable[[float], float] | None = None,
                 scale_mode: str = "cycle", cycle_momentum: bool = True,
                 base_momentum: float = 0.8, max_momentum: float = 0.9,
                 last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups, strict=True):
                _set(group, "lr", lr)
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.base_momentums, self.max_momentums = _init_cycle_momentum(
                self, optimizer, base_momentum, max_momentum, last_epoch == -1)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        if self._scale_fn_custom is None:
            self.scale_mode = "iterations" if self.mode == "exp_range" else "cycle"

    def scale_fn(self, x: float) -> float:
        """The amplitude scale at cycle (or iteration) ``x``."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        if self.mode == "exp_range":
            return self.gamma**x
        return 1.0

    def get_lr(self) -> list:
        """The lr on the triangle wave (and the matching momentum written into the groups)."""
        self._warn_outside_step()
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [b + (m - b) * scale_factor * scale
               for b, m in zip(self.base_lrs, self.max_lrs, strict=True)]
        if self.cycle_momentum:
            moms = [m - (m - b) * scale_factor * scale
                    for b, m in zip(self.base_momentums, self.max_momentums, strict=True)]
            _set_momentum(self.optimizer, self.use_beta1, moms)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        """Attributes; a custom ``scale_fn`` object is saved as its ``__dict__``."""
        sd = super().state_dict()
        fn = sd.pop("_scale_fn_custom")
        sd["_scale_fn_custom"] = (None if fn is None or isinstance(fn, types.FunctionType)
                                  else fn.__dict__.copy())
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes (a saved custom ``scale_fn`` state updates the current one)."""
        state_dict = dict(state_dict)
        fn = state_dict.pop("_scale_fn_custom")
        state_dict.pop("_scale_fn_ref", None)
        super().load_state_dict(state_dict)
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing restarted every ``T_i`` epochs, ``T_i`` growing by ``T_mult``.

    Raises:
        ValueError: ``T_0`` not a positive integer, ``T_mult`` not an integer >= 1, a
            non-numeric ``eta_min``, or a negative ``epoch`` given to ``step``.
    """

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1,  # noqa: N803
                 eta_min: float = 0.0, last_epoch: int = -1) -> None:
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, float | int):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type "
                             f"{type(eta_min)}")
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """The cosine of the position ``T_cur / T_i`` in the current period."""
        self._warn_outside_step()
        c = 1 + math.cos(math.pi * self.T_cur / self.T_i)
        return [self.eta_min + (b - self.eta_min) * c / 2 for b in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        """Advance one epoch, or jump to a (possibly fractional) ``epoch``."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            self._jump(epoch)
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            _set(group, "lr", lr)
        self._last_lr = _values(self.optimizer, "lr")

    def _jump(self, epoch: float) -> None:
        if epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        if epoch < self.T_0:
            self.T_i, self.T_cur = self.T_0, epoch
        elif self.T_mult == 1:
            self.T_cur = epoch % self.T_0
        else:
            n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
            self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
            self.T_i = self.T_0 * self.T_mult**n


class OneCycleLR(LRScheduler):
    """The 1cycle policy: lr rises from ``max_lr / div_factor`` to ``max_lr`` then anneals to
    ``initial_lr / final_div_factor`` (momentum does the opposite).

    Args:
        optimizer: the optimizer.
        max_lr: peak lr (one per group or a scalar).
        total_steps: length of the cycle, or give ``epochs`` and ``steps_per_epoch``.
        pct_start: fraction of the cycle spent rising.
        anneal_strategy: "cos" or "linear".
        cycle_momentum, base_momentum, max_momentum: momentum (or Adam's beta1) cycling.
        div_factor, final_div_factor: initial and final lr divisors.
        three_phase: a third phase anneals to the minimum after a symmetric rise and fall.

    Raises:
        ValueError: invalid totals, ``pct_start``, ``anneal_strategy``; stepping past the end.
    """

    def __init__(self, optimizer: Optimizer, max_lr: float | list[float],
                 total_steps: int | None = None, epochs: int | None = None,
                 steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum: float | list[float] = 0.85,
                 max_momentum: float | list[float] = 0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        self.total_steps = self._total(total_steps, epochs, steps_per_epoch)
        self._schedule_phases = self._phases(pct_start, three_phase)
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for group, top in zip(optimizer.param_groups, max_lrs, strict=True):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            _init_cycle_momentum(self, optimizer, base_momentum, max_momentum,
                                 last_epoch == -1)
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _total(total_steps: int | None, epochs: int | None, steps_per_epoch: int | None) -> int:
        if total_steps is not None:
            if total_steps <= 0 or not isinstance(total_steps, int):
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            return total_steps
        if epochs is None or steps_per_epoch is None:
            raise ValueError("You must define either total_steps OR (epochs AND "
                             "steps_per_epoch)")
        if not isinstance(epochs, int) or epochs <= 0:
            raise ValueError(f"Expected positive integer epochs, but got {epochs}")
        if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
            raise ValueError(f"Expected positive integer steps_per_epoch, but got "
                             f"{steps_per_epoch}")
        return epochs * steps_per_epoch

    def _phases(self, pct_start: float, three_phase: bool) -> list[dict[str, Any]]:
        def phase(end, lr0, lr1, m0, m1):
            return {"end_step": end, "start_lr": lr0, "end_lr": lr1, "start_momentum": m0,
                    "end_momentum": m1}

        n = self.total_steps
        rise = phase(float(pct_start * n) - 1, "initial_lr", "max_lr", "max_momentum",
                     "base_momentum")
        if three_phase:
            return [rise,
                    phase(float(2 * pct_start * n) - 2, "max_lr", "initial_lr",
                          "base_momentum", "max_momentum"),
                    phase(n - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
        return [rise, phase(n - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")]

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list:
        """The lr of each group at ``last_epoch`` (and its momentum, written into the group)."""
        self._warn_outside_step()
        t = self.last_epoch
        if t > self.total_steps:
            raise ValueError(f"Tried to step {t} times. The specified number of total steps is "
                             f"{self.total_steps}")
        lrs = []
        last = len(self._schedule_phases) - 1
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, ph in enumerate(self._schedule_phases):
                end = ph["end_step"]
                if t <= end or i == last:
                    pct = (t - start) / (end - start)
                    lrs.append(self._anneal(group[ph["start_lr"]], group[ph["end_lr"]], pct))
                    if self.cycle_momentum:
                        m = self._anneal(group[ph["start_momentum"]], group[ph["end_momentum"]],
                                         pct)
                        _set_momentum_group(group, self.use_beta1, m)
                    break
                start = end
        return lrs


def _set_momentum_group(group: dict[str, Any], use_beta1: bool, m: float) -> None:
    if use_beta1:
        group["betas"] = (m, *group["betas"][1:])
    else:
        group["momentum"] = m
