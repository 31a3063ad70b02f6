"""LRScheduler, the base of ember's learning-rate schedulers, and helpers they share.

See NOTE [Chainable and closed forms] in ember/optim/lr_scheduler.py (the public module, which
re-exports everything here).
"""

from __future__ import annotations

import warnings
from typing import Any

from ember.optim.optimizer import Optimizer
from ember.tensor import Tensor

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where "
    "possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if "
    "epoch is different from None, the closed form is used instead of the new chainable form, "
    "where available.")


def values_of(optimizer: Optimizer, key: str) -> list:
    """``group[key]`` of every group (tensors cloned so later updates do not alias)."""
    return [g[key].clone() if isinstance(g[key], Tensor) else g[key]
            for g in optimizer.param_groups]


def set_value(group: dict[str, Any], key: str, value: Any) -> None:
    """Write a value into a group, in place when the group holds a tensor (tensor lr)."""
    if isinstance(group[key], Tensor):
        group[key].fill_(float(value))
    else:
        group[key] = value


def per_group(name: str, optimizer: Optimizer, value: Any) -> list:
    """One value per parameter group: a list/tuple checked for length, or a broadcast scalar."""
    n = len(optimizer.param_groups)
    if isinstance(value, list | tuple):
        if len(value) != n:
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. "
                             f"{name} has {len(value)} values, param_groups has {n}.")
        return [v.clone() if isinstance(v, Tensor) else v for v in value]
    return [value] * n


def check_optimizer(optimizer: Any) -> None:
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

    Example:
        >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=1.0)
        >>> s = ember.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        >>> isinstance(s, ember.optim.lr_scheduler.LRScheduler), s.get_last_lr(), s.last_epoch
        (True, [1.0], 0)
        >>> opt.step(); s.step()
        >>> s.state_dict()["last_epoch"], opt.param_groups[0]["lr"]
        (1, 0.5)
    """

    _get_lr_called_within_step: bool = False
    _is_initial: bool = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        check_optimizer(optimizer)
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
        self.base_lrs: list = values_of(optimizer, "initial_lr")
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
            set_value(group, "lr", lr)
        self._last_lr = values_of(self.optimizer, "lr")

    def _warn_outside_step(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=3)

    def _current(self) -> list:
        return values_of(self.optimizer, "lr")

    def _scaled(self, factor: float) -> list:
        return [g["lr"] * factor for g in self.optimizer.param_groups]



def set_momentum(optimizer: Optimizer, use_beta1: bool, values: list) -> None:
    """Write each group's momentum, or Adam-style ``betas[0]``."""
    for group, m in zip(optimizer.param_groups, values, strict=True):
        set_group_momentum(group, use_beta1, m)


def set_group_momentum(group: dict[str, Any], use_beta1: bool, m: float) -> None:
    """Write one group's momentum, or Adam-style ``betas[0]``."""
    if use_beta1:
        group["betas"] = (m, *group["betas"][1:])
    else:
        group["momentum"] = m
