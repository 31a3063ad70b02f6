"""The cyclic schedulers of ``torch.optim.lr_scheduler``: CyclicLR, OneCycleLR (both can cycle
momentum, or Adam's beta1, inversely to the learning rate) and CosineAnnealingWarmRestarts.

Re-exported by ember/optim/lr_scheduler.py; see NOTE [Chainable and closed forms] there.
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable
from typing import Any

from ember.optim._lr_base import (
    LRScheduler,
    check_optimizer,
    per_group,
    set_group_momentum,
    set_momentum,
    set_value,
    values_of,
)
from ember.optim.optimizer import Optimizer

__all__ = ["CyclicLR", "OneCycleLR", "CosineAnnealingWarmRestarts"]


def _init_cycle_momentum(sched: Any, optimizer: Optimizer, base: Any, top: Any,
                         fresh: bool) -> tuple[list, list]:
    """Validate momentum cycling; on a fresh start set each group's momentum to its maximum."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` "
                         "option enabled")
    sched.use_beta1 = "betas" in optimizer.defaults
    bases = per_group("base_momentum", optimizer, base)
    tops = per_group("max_momentum", optimizer, top)
    if fresh:
        set_momentum(optimizer, sched.use_beta1, tops)
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

    Example:
        >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=1.0, momentum=0.9)
        >>> s = ember.optim.lr_scheduler.CyclicLR(opt, base_lr=0.25, max_lr=1.0, step_size_up=2)
        >>> lrs = [s.get_last_lr()[0]]
        >>> for _ in range(4): opt.step(); s.step(); lrs.append(s.get_last_lr()[0])
        >>> lrs
        [0.25, 0.625, 1.0, 0.625, 0.25]
    """

    def __init__(self, optimizer: Optimizer, base_lr: float | list[float],
                 max_lr: float | list[float], step_size_up: int = 2000,
                 step_size_down: int | None = None, mode: str = "triangular",
                 gamma: float = 1.0, scale_fn: Callable[[float], float] | None = None,
                 scale_mode: str = "cycle", cycle_momentum: bool = True,
                 base_momentum: float = 0.8, max_momentum: float = 0.9,
                 last_epoch: int = -1) -> None:
        check_optimizer(optimizer)
        self.optimizer = optimizer
        base_lrs = per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups, strict=True):
                set_value(group, "lr", lr)
        self.max_lrs = per_group("max_lr", optimizer, max_lr)
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
            set_momentum(self.optimizer, self.use_beta1, moms)
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

    Example:
        >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=1.0)
        >>> s = ember.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2)
        >>> lrs = [s.get_last_lr()[0]]
        >>> for _ in range(4): opt.step(); s.step(); lrs.append(round(s.get_last_lr()[0], 4))
        >>> lrs
        [1.0, 0.5, 1.0, 0.5, 1.0]
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
            set_value(group, "lr", lr)
        self._last_lr = values_of(self.optimizer, "lr")

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

    Example:
        >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=1.0, momentum=0.9)
        >>> s = ember.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=4)
        >>> lrs = [round(s.get_last_lr()[0], 4)]
        >>> for _ in range(3): opt.step(); s.step(); lrs.append(round(s.get_last_lr()[0], 4))
        >>> lrs
        [0.04, 0.8117, 0.2831, 0.0]
    """

    def __init__(self, optimizer: Optimizer, max_lr: float | list[float],
                 total_steps: int | None = None, epochs: int | None = None,
                 steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum: float | list[float] = 0.85,
                 max_momentum: float | list[float] = 0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1) -> None:
        check_optimizer(optimizer)
        self.optimizer = optimizer
        self.total_steps = self._total(total_steps, epochs, steps_per_epoch)
        self._schedule_phases = self._phases(pct_start, three_phase)
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        max_lrs = per_group("max_lr", optimizer, max_lr)
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
                        set_group_momentum(group, self.use_beta1, m)
                    break
                start = end
        return lrs

