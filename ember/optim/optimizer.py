"""Optimizer: the base class of ``ember.optim`` (``torch.optim.Optimizer``).

It owns parameter groups (per-group options filled from ``defaults``), per-parameter ``state``
keyed by the parameter tensor, ``state_dict``/``load_state_dict`` in torch's format (parameters
packed as integer ids, so a dict saved by either library loads into the other once its tensors
are converted), ``zero_grad`` and step hooks. Parameters are any leaf tensors; this module never
imports ``ember.nn``.

NOTE [Optimizer updates]
The built-in algorithms update parameters and state in place with ember ops under ``no_grad``
(one op per array-wide step, never a per-element Python loop), in the same order of operations as
torch's single-tensor ("foreach=False") code, so float32 results agree with torch's CPU results
to rounding. Scalars (bias corrections, step sizes) are Python floats computed from the float32
``step`` tensor, as torch does.
"""

from __future__ import annotations

import copy
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from functools import wraps
from typing import Any

from ember.autograd.grad_mode import enable_grad, no_grad
from ember.autograd.graph import RemovableHandle
from ember.core import dtype as dt
from ember.ops.creation import tensor as _new_tensor
from ember.tensor import Tensor

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]


class _RequiredParameter:
    """Marks an option that every parameter group must give (``torch.optim.optimizer.required``)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

_GLOBAL_PRE_HOOKS: OrderedDict = OrderedDict()
_GLOBAL_POST_HOOKS: OrderedDict = OrderedDict()


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Register ``hook(optimizer, args, kwargs)`` to run before every optimizer's ``step``."""
    handle = RemovableHandle(_GLOBAL_PRE_HOOKS)
    _GLOBAL_PRE_HOOKS[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Register ``hook(optimizer, args, kwargs)`` to run after every optimizer's ``step``."""
    handle = RemovableHandle(_GLOBAL_POST_HOOKS)
    _GLOBAL_POST_HOOKS[handle.id] = hook
    return handle


def _typename(obj: Any) -> str:
    cls = type(obj)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def _hooked_step(step: Callable) -> Callable:
    """Wrap a class's ``step`` so that the global and per-instance step hooks run around it."""

    @wraps(step)
    def wrapper(self, *args, **kwargs):
        for pre in (*_GLOBAL_PRE_HOOKS.values(), *self._optimizer_step_pre_hooks.values()):
            result = pre(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(
                        f"{pre} must return None or a tuple of (new_args, new_kwargs), "
                        f"but got {result}.")
                args, kwargs = result
        out = step(self, *args, **kwargs)
        self._opt_called = True
        for post in (*self._optimizer_step_post_hooks.values(), *_GLOBAL_POST_HOOKS.values()):
            post(self, args, kwargs)
        return out

    wrapper.hooked = True
    return wrapper


def _step_as_tensor(value: Any) -> Tensor:
    """Old checkpoints store ``step`` as a number; torch upgrades it to a float32 0-d tensor."""
    return value if isinstance(value, Tensor) else _new_tensor(float(value), dtype=dt.float32)


class Optimizer:
    """Base class of all optimizers (``torch.optim.Optimizer``).

    Args:
        params: an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts (parameter
            groups: ``{"params": [...], **options}``). The order must be deterministic.
        defaults: default values of the optimization options, used where a group gives none.

    Raises:
        TypeError: ``params`` is a single tensor, or a group's params are a set or non-tensors.
        ValueError: no parameters, a non-leaf tensor, a parameter in two groups.

    Example:
        >>> import ember
        >>> w = ember.zeros(2, requires_grad=True)
        >>> opt = ember.optim.SGD([w], lr=0.5)
        >>> w.grad = ember.ones(2); opt.step(); w
        tensor([-0.5000, -0.5000], requires_grad=True)
    """

    def __init__(self, params: Iterable, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict = OrderedDict()
        self._patch_step_function()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def _patch_step_function(self) -> None:
        cls = type(self)
        if not getattr(cls.step, "hooked", False):
            cls.step = _hooked_step(cls.step)

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self._patch_step_function()
        self._upgrade_state()

    def _upgrade_state(self) -> None:
        """Fill options added since a checkpoint was written; make numeric steps tensors."""
        for group in self.param_groups:
            for key, value in self.defaults.items():
                group.setdefault(key, value)
            for p in group["params"]:
                st = self.state.get(p)
                if st:
                    for key in ("step", "mu_product"):
                        if key in st:
                            st[key] = _step_as_tensor(st[key])

    def __repr__(self) -> str:
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            text += "".join(f"    {k}: {group[k]}\n" for k in sorted(group) if k != "params")
        return text + ")"

    # -- parameter groups ----------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own options (missing options take the defaults).

        Raises:
            TypeError: not a dict, params given as a set, or a parameter that is not a tensor.
            ValueError: a non-leaf tensor, a required option missing, names on only some
                parameters or groups, or a parameter already in another group.

        Example:
            >>> w, head = ember.zeros(2, requires_grad=True), ember.zeros(1, requires_grad=True)
            >>> opt = ember.optim.SGD([w], lr=0.1)
            >>> opt.add_param_group({"params": [head], "lr": 0.01})
            >>> [g["lr"] for g in opt.param_groups]
            [0.1, 0.01]
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        param_group["params"] = params
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. "
                                 "Some param names are missing")
            param_group["param_names"] = names
        self._check_params(params)
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        self._check_disjoint(param_group)
        self.param_groups.append(param_group)

    def _check_params(self, params: list) -> None:
        differentiable = self.defaults.get("differentiable", False)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(p))
            if not differentiable and not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        if len({id(p) for p in params}) != len(params):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; "
                          "in future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=4)

    def _check_disjoint(self, param_group: dict[str, Any]) -> None:
        seen: set[int] = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if any(id(p) in seen for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")

    # -- gradients and steps -------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every optimized tensor.

        Args:
            set_to_none: set ``.grad`` to None (default); otherwise detach the existing gradient
                (``detach_`` if it has a ``grad_fn``, else ``requires_grad_(False)``) and fill it
                with zeros in place, keeping the same tensor object.

        Example:
            >>> w = ember.ones(2, requires_grad=True)
            >>> opt = ember.optim.SGD([w], lr=0.1)
            >>> (w * w).sum().backward()
            >>> opt.zero_grad()
            >>> w.grad is None
            True
        """
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                    continue
                if g.grad_fn is not None:
                    g.detach_()
                else:
                    g.requires_grad_(False)
                g.zero_()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step; return what ``closure`` (re-evaluating the loss)
        returns, or None without a closure.

        Example:
            >>> w = ember.ones(2, requires_grad=True)
            >>> opt = ember.optim.SGD([w], lr=0.5)
            >>> def closure():
            ...     opt.zero_grad()
            ...     loss = (w * w).sum()
            ...     loss.backward()
            ...     return loss
            >>> loss = opt.step(closure)  # w -= 0.5 * 2 * w
            >>> loss.item(), w.tolist()
            (2.0, [0.0, 0.0])
        """
        raise NotImplementedError

    # -- hooks ---------------------------------------------------------------------------------
    @staticmethod
    def _register(hooks: OrderedDict, hook: Callable, prepend: bool = False) -> RemovableHandle:
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Run ``hook(optimizer, args, kwargs)`` before each ``step``; it may return
        ``(new_args, new_kwargs)``.

        Example:
            >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
            >>> steps = []
            >>> handle = opt.register_step_pre_hook(lambda optimizer, args, kw: steps.append("pre"))
            >>> opt.step(); steps
            ['pre']
        """
        return self._register(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """Run ``hook(optimizer, args, kwargs)`` after each ``step``.

        Example:
            >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
            >>> steps = []
            >>> handle = opt.register_step_post_hook(lambda opt, args, kw: steps.append("post"))
            >>> opt.step(); handle.remove(); opt.step(); steps
            ['post']
        """
        return self._register(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False):
        """Run ``hook(optimizer)`` before ``state_dict`` builds its result.

        Example:
            >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
            >>> calls = []
            >>> _ = opt.register_state_dict_pre_hook(lambda optimizer: calls.append("saving"))
            >>> _ = opt.state_dict(); calls
            ['saving']
        """
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False):
        """Run ``hook(optimizer, state_dict)`` on the result; a returned dict replaces it.

        Example:
            >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
            >>> def tag(optimizer, state_dict):
            ...     state_dict["note"] = "run 7"
            ...     return state_dict
            >>> _ = opt.register_state_dict_post_hook(tag)
            >>> opt.state_dict()["note"]
            'run 7'
        """
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False):
        """Run ``hook(optimizer, state_dict)`` before loading; a returned dict is loaded.

        Example:
            >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
            >>> saved = opt.state_dict()
            >>> def halve_lr(optimizer, state_dict):
            ...     state_dict["param_groups"][0]["lr"] /= 2
            ...     return state_dict
            >>> _ = opt.register_load_state_dict_pre_hook(halve_lr)
            >>> opt.load_state_dict(saved); opt.param_groups[0]["lr"]
            0.05
        """
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False):
        """Run ``hook(optimizer)`` after loading.

        Example:
            >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
            >>> calls = []
            >>> _ = opt.register_load_state_dict_post_hook(lambda optimizer: calls.append("loaded"))
            >>> opt.load_state_dict(opt.state_dict()); calls
            ['loaded']
        """
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # -- state dicts ---------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state in torch's format.

        Returns:
            ``{"state": {index: {name: value}}, "param_groups": [{**options, "params":
            [index, ...]}]}``: parameters are numbered in group order; state tensors are
            returned by reference, not copied.

        Example:
            >>> w = ember.ones(2, requires_grad=True)
            >>> opt = ember.optim.SGD([w], lr=0.1, momentum=0.9)
            >>> (w * w).sum().backward(); opt.step()
            >>> sd = opt.state_dict()
            >>> sorted(sd), sd["param_groups"][0]["params"], sorted(sd["state"][0])
            (['param_groups', 'state'], [0], ['momentum_buffer'])
        """
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {(index[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        result = {"state": state, "param_groups": groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            out = hook(self, result)
            if out is not None:
                result = out
        return result

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state from :meth:`state_dict` (ember's or torch's, tensors converted).

        Groups are matched by position and parameters by order within them; floating state
        tensors are cast to their parameter's dtype and device, ``step`` is kept as is.

        Raises:
            ValueError: the number of groups, or the size of a group, differs.

        Example:
            >>> w = ember.ones(2, requires_grad=True)
            >>> opt = ember.optim.Adam([w], lr=0.1)
            >>> (w * w).sum().backward(); opt.step()
            >>> restored = ember.optim.Adam([w], lr=0.5)
            >>> restored.load_state_dict(opt.state_dict())
            >>> restored.param_groups[0]["lr"], int(restored.state[w]["step"])
            (0.1, 1)
        """
        state_dict = state_dict.copy()
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            out = hook(self, state_dict)
            if out is not None:
                state_dict = out
        groups = self.param_groups
        saved = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved, strict=True)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = {i: p for s, g in zip(saved, groups, strict=True)
                  for i, p in zip(s["params"], g["params"], strict=True)}
        state: defaultdict = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_map:
                state[id_map[key]] = _cast_state(id_map[key], value)
            else:
                state[key] = value
        for g, s in zip(groups, saved, strict=True):
            s["params"] = g["params"]
            if "param_names" in g and "param_names" not in s:
                s["param_names"] = g["param_names"]
        self.__setstate__({"state": state, "param_groups": saved})
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)


def _cast_state(param: Tensor, value: Any, key: Any = None) -> Any:
    """A loaded state value moved to ``param``'s device (and dtype, when floating)."""
    if isinstance(value, Tensor):
        if key == "step":
            return value
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)
    if isinstance(value, dict):
        return {k: _cast_state(param, v, k) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_cast_state(param, v) for v in value)
    return value


class _Algorithm(Optimizer):
    """A built-in optimizer: ``step`` runs the closure, then ``_update_group`` per group.

    ``foreach`` is accepted for torch compatibility (the single-tensor algorithm runs either
    way). ``fused=True`` runs the algorithms that set ``_supports_fused`` as one fused operator
    per group (NOTE [Fused optimizer steps] in ember/ops/optimizer_steps.py); ``capturable`` and
    ``differentiable`` are not supported.
    """

    _supports_fused = False

    def __init__(self, params: Iterable, defaults: dict[str, Any]) -> None:
        if defaults.get("fused"):
            if defaults.get("differentiable"):
                raise RuntimeError("`fused` does not support `differentiable`")
            if defaults.get("foreach"):
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        for flag in ("fused", "capturable", "differentiable"):
            if defaults.get(flag) and not (flag == "fused" and self._supports_fused):
                raise NotImplementedError(
                    f"{type(self).__name__}: {flag}=True is not supported by ember.optim")
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step; return the closure's loss (None without one).

        The closure runs with gradients enabled; the update itself runs under ``no_grad``.
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                params = [p for p in group["params"] if p.grad is not None]
                if params:
                    self._update_group(group, params)
        return loss

    def _update_group(self, group: dict[str, Any], params: list[Tensor]) -> None:
        raise NotImplementedError

    def _lazy_state(self, p: Tensor, **init: Callable[[Tensor], Tensor]) -> dict[str, Any]:
        """``p``'s state, created on first use: ``step`` (float32 0), then ``key = init(p)`` in
        the order given (torch's key order, which its state dicts keep)."""
        state = self.state[p]
        if not state:
            state["step"] = new_step()
            for key, make in init.items():
                state[key] = make(p)
        return state


_FUSED_DEVICES = ['mps', 'cuda', 'xpu', 'hpu', 'cpu', 'mtia', 'privateuseone']


def check_fused_params(params: list[Tensor]) -> None:
    """torch's check that a ``fused=True`` optimizer's parameters are floating point."""
    for p in params:
        if not p.is_floating_point():
            raise RuntimeError(
                f"`fused=True` requires all the params to be floating point Tensors of "
                f"supported devices: {_FUSED_DEVICES} but {p.dtype} and {p.device.type}")


def descent_grad(p: Tensor, maximize: bool) -> Tensor:
    """The gradient to descend along: ``-p.grad`` when maximizing."""
    return -p.grad if maximize else p.grad


def apply_weight_decay(p: Tensor, g: Tensor, lr: float, wd: float,
                       decoupled: bool = False) -> Tensor:
    """Weight decay ``wd``: decoupled (``p *= 1 - lr * wd``, AdamW-style) or folded into the
    gradient as an L2 penalty (``g + wd * p``); returns the gradient to use."""
    if wd != 0:
        if decoupled:
            p.mul_(1 - lr * wd)
        else:
            g = g.add(p, alpha=wd)
    return g


def adam_moments(m: Tensor, v: Tensor, g: Tensor, beta1: float, beta2: float) -> None:
    """Adam's running moments in place: ``m = lerp(m, g, 1 - beta1)``, ``v = beta2 v + (1 -
    beta2) g^2`` (torch's order of operations)."""
    m.lerp_(g, 1 - beta1)
    v.mul_(beta2).addcmul_(g, g, value=1 - beta2)


def scalar(x: Any) -> Any:
    """A hyper-parameter as a Python number (a one-element tensor gives its value)."""
    return x.item() if isinstance(x, Tensor) else x


def new_step() -> Tensor:
    """The initial ``step`` state: a float32 0-d tensor holding 0, like torch's."""
    return _new_tensor(0.0, dtype=dt.float32)


def check_lr(lr: Any) -> None:
    """torch's checks of a learning rate (a number or a one-element tensor)."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def check_nonneg(what: str, value: Any) -> None:
    """Raise torch's ``Invalid <what> value: <value>`` for a negative option."""
    if not 0.0 <= value:
        raise ValueError(f"Invalid {what}: {value}")


def check_betas(betas: tuple) -> None:
    """torch's checks of ``betas``: each in [0, 1)."""
    for i, b in enumerate(betas):
        if not 0.0 <= b < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {b}")
