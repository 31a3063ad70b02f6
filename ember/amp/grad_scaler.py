"""Dynamic loss scaling for mixed-precision training: ``GradScaler`` (``torch.amp.GradScaler``).

Owns the scale (a float32 0-d tensor), the growth tracker (int32 0-d) and, per optimizer, how far
the current iteration got (``OptState``) and whether its gradients held an inf or NaN. Optimizers
are duck-typed (``param_groups`` and ``step``): this module never imports ``ember.optim``.

NOTE [Scale arithmetic]
Unscaling multiplies every gradient by ``float32(1 / float64(scale))`` and marks ``found_inf``
when a gradient holds a non-finite value (the gradient is still multiplied). ``update`` computes
``scale * backoff_factor`` and ``scale * growth_factor`` in float64 and rounds once to float32,
keeping the old scale when growth would overflow float32. Both are ember ops on the 0-d state
tensors with no branch on their values, so the results equal torch's CPU kernels bit for bit;
only ``step`` reads ``found_inf`` on the host, to decide whether to call the optimizer.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Iterable
from enum import Enum
from typing import Any

from ember.autograd.grad_mode import no_grad
from ember.backends.cuda import is_built as _cuda_is_built
from ember.core import dtype as dt
from ember.ops.creation import full
from ember.ops.pointwise import where
from ember.tensor import Tensor

__all__ = ["GradScaler", "OptState"]

_NO_SCALE_HINT = ("This may indicate your script did not use scaler.scale(loss or outputs) "
                  "earlier in the iteration.")


class OptState(Enum):
    """How far an optimizer got in the current iteration."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_optimizer_state() -> dict[str, Any]:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    """Scale losses so small float16 gradients do not underflow, then unscale before stepping.

    ``scale(loss)`` multiplies by the current scale; ``step(optimizer)`` unscales the
    optimizer's gradients (unless ``unscale_`` already did) and calls ``optimizer.step()`` only
    if they are all finite; ``update()`` multiplies the scale by ``backoff_factor`` after a
    skipped step, or by ``growth_factor`` after ``growth_interval`` consecutive good steps.

    Args:
        device: device type of the scale (``"cpu"``). ``"cuda"`` (the default, as torch's)
            needs a registered CUDA backend; without one such a scaler warns and disables
            itself, as torch's does on a machine without CUDA.
        init_scale: the first scale.
        growth_factor: multiplies the scale after ``growth_interval`` steps without inf/NaN.
        backoff_factor: multiplies the scale after a step with inf/NaN gradients.
        growth_interval: consecutive good steps before the scale grows.
        enabled: if False, ``scale`` returns its input, ``step`` just calls
            ``optimizer.step``, and the other methods do nothing.

    Raises:
        AssertionError: ``growth_factor <= 1`` or ``backoff_factor >= 1`` (as torch).

    Example:
        >>> import ember
        >>> w = ember.ones(2, requires_grad=True)
        >>> opt = ember.optim.SGD([w], lr=0.5)
        >>> scaler = ember.amp.GradScaler("cpu", init_scale=1024.0)
        >>> scaler.scale((w * w).sum()).backward(); scaler.step(opt); scaler.update()
        >>> w, scaler.get_scale()
        (tensor([0., 0.], requires_grad=True), 1024.0)
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled and not _cuda_is_built():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.", stacklevel=2)
            self._enabled = False
        if not self._enabled:
            return
        if growth_factor <= 1.0:
            raise AssertionError("The growth factor must be > 1.0.")
        if backoff_factor >= 1.0:
            raise AssertionError("The backoff factor must be < 1.0.")
        self._init_scale = init_scale
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._init_growth_tracker = 0
        self._scale: Tensor | None = None
        self._growth_tracker: Tensor | None = None
        self._per_optimizer_states: defaultdict = defaultdict(_fresh_optimizer_state)

    # -- scaling ------------------------------------------------------------------------------
    def _checked_state(self, funcname: str) -> tuple[Tensor, Tensor]:
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + _NO_SCALE_HINT)
        if self._growth_tracker is None:
            raise AssertionError(
                f"Attempted {funcname} but _growth_tracker is None.  " + _NO_SCALE_HINT)
        return self._scale, self._growth_tracker

    def _scale_on(self, device) -> Tensor:
        if self._scale is None:
            self._scale = full((), self._init_scale, dtype=dt.float32, device=device)
            self._growth_tracker = full((), self._init_growth_tracker, dtype=dt.int32,
                                        device=device)
        return self._scale.to(device)

    def scale(self, outputs):
        """Multiply a tensor, or every tensor in nested lists/tuples/iterables, by the scale.

        Lists and tuples come back as the same type; other iterables as a lazy ``map``.

        Raises:
            ValueError: an element is neither a tensor nor an iterable.
        """
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * self._scale_on(outputs.device)
        if isinstance(outputs, Iterable):
            scaled = map(self.scale, outputs)
            return type(outputs)(scaled) if isinstance(outputs, list | tuple) else scaled
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    # -- unscaling and stepping ---------------------------------------------------------------
    def _unscale_grads_(self, optimizer, inv_scale: Tensor) -> dict:
        """Multiply the optimizer's gradients by ``inv_scale`` in place; return, per device,
        a float32 0-d tensor that is 1 where some gradient there was not finite."""
        found_inf: dict = {}
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if not isinstance(param, Tensor):
                        raise AssertionError(
                            f"expected param to be Tensor, got {type(param).__name__}")
                    grad = param.grad
                    if grad is None:
                        continue
                    if grad.dtype == dt.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    flag = found_inf.get(grad.device)
                    if flag is None:
                        flag = found_inf[grad.device] = full((), 0.0, dtype=dt.float32,
                                                             device=grad.device)
                    flag.masked_fill_(grad.isfinite().all().logical_not(), 1.0)
                    grad.mul_(inv_scale.to(grad.device))
        return found_inf

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale in place, once per iteration (for
        clipping or inspecting them before ``step``); ``step`` then does not unscale again.

        Raises:
            AssertionError: ``scale`` was never called.
            RuntimeError: called twice for ``optimizer``, or after ``step``, since ``update``.
            ValueError: a gradient is float16.
        """
        if not self._enabled:
            return
        scale, _ = self._checked_state("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        with no_grad():
            inv_scale = scale.double().reciprocal().float()
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscale ``optimizer``'s gradients (unless ``unscale_`` did) and call
        ``optimizer.step(*args, **kwargs)`` unless some gradient is inf or NaN.

        Returns:
            what ``optimizer.step`` returned, or None when the step was skipped.

        Raises:
            RuntimeError: a ``closure`` keyword, or ``step`` already called since ``update``.
            AssertionError: ``scale`` was never called, or no parameter has a gradient.
        """
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._checked_state("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if not state["found_inf_per_device"]:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        result = None
        if not sum(flag.item() for flag in state["found_inf_per_device"].values()):
            result = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return result

    # -- updating the scale -------------------------------------------------------------------
    def update(self, new_scale: float | Tensor | None = None) -> None:
        """End the iteration: set the scale to ``new_scale`` if given, otherwise back off if any
        optimizer saw an inf/NaN and grow after ``growth_interval`` clean steps.

        Raises:
            AssertionError: ``scale`` was never called; no ``step``/``unscale_`` since the last
                update (and no ``new_scale``); ``new_scale`` is neither a float nor a one-element
                tensor on the scaler's device that does not require grad.
        """
        if not self._enabled:
            return
        scale, tracker = self._checked_state("update")
        with no_grad():
            if new_scale is None:
                self._grow_or_back_off(scale, tracker)
            elif isinstance(new_scale, float):
                scale.fill_(new_scale)
            else:
                scale.copy_(self._checked_new_scale(new_scale))
        self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    def _checked_new_scale(self, new_scale) -> Tensor:
        reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                  "torch.FloatTensor with requires_grad=False.")
        if (not isinstance(new_scale, Tensor) or new_scale.device.type != self._device
                or new_scale.numel() != 1 or new_scale.requires_grad):
            raise AssertionError(reason)
        return new_scale

    def _grow_or_back_off(self, scale: Tensor, tracker: Tensor) -> None:
        # See NOTE [Scale arithmetic].
        flags = [flag.to(scale.device) for state in self._per_optimizer_states.values()
                 for flag in state["found_inf_per_device"].values()]
        if not flags:
            raise AssertionError("No inf checks were recorded prior to update.")
        found = sum(flags[1:], flags[0]) > 0
        good_steps = where(found, 0, tracker + 1)
        wide = scale.double()
        grown = (wide * self._growth_factor).float()
        grow = (good_steps == self._growth_interval) & grown.isfinite()
        scale.copy_(where(found, wide * self._backoff_factor, where(grow, grown, scale)))
        tracker.copy_(where(good_steps == self._growth_interval, 0, good_steps))

    # -- options and state --------------------------------------------------------------------
    def get_scale(self) -> float:
        """The current scale as a Python float (``init_scale`` before the first ``scale``;
        1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale.item()

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        if self._growth_tracker is None:
            return self._init_growth_tracker
        return self._growth_tracker.item()

    def get_growth_factor(self) -> float:
        """The factor the scale grows by."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Set the factor the scale grows by."""
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        """The factor the scale backs off by."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Set the factor the scale backs off by."""
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        """How many consecutive good steps make the scale grow."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Set how many consecutive good steps make the scale grow."""
        self._growth_interval = new_interval

    def is_enabled(self) -> bool:
        """Whether this scaler scales at all."""
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval`` and
        ``_growth_tracker`` as Python numbers (torch's keys); empty when disabled."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a ``state_dict`` (from ember's or torch's scaler); nothing when disabled.

        Raises:
            RuntimeError: ``state_dict`` is empty (saved from a disabled scaler).
        """
        if not self._enabled:
            return
        if not state_dict:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        with no_grad():
            if self._scale is not None:
                self._scale.fill_(state_dict["scale"])
            if self._growth_tracker is not None:
                self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        if self._enabled:
            if self._per_optimizer_states:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning "
                                     "of an iteration, or at the end after scaler.update().")
            state.update(_init_scale=self.get_scale(),
                         _init_growth_tracker=self._get_growth_tracker(),
                         _scale=None, _growth_tracker=None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
