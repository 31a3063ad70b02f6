"""``functional_call``: run a module with some of its parameters and buffers replaced by given
tensors, restoring them afterwards (``torch.func.functional_call``).

NOTE [Swapping tensors for a functional call]
Each dotted name is resolved to its owning submodule; a name in ``_parameters``/``_buffers`` is
swapped by writing the dict entry directly (so a plain tensor may stand in for a Parameter, and
gradients flow to the given tensors), any other name by ``setattr`` (a parametrized name thus goes
through its ``right_inverse``, as in torch; give ``...parametrizations.<name>.original`` to
substitute the unconstrained tensor instead). Every swap bumps the owner's structural version.
When the call ends, whatever the module then holds under each name is written back into the
caller's dict (a module that reassigns a buffer in forward updates the dict), then the originals
are put back, even if the call raised.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ember.nn.modules.module import Module
from ember.tensor import Tensor

__all__ = ["functional_call"]

_MISSING = object()


def _owner(module: Module, path: str, memo: dict) -> Module:
    if not path:
        return module
    if path in memo:
        return memo[path]
    head, dot, attr = path.rpartition(".")
    parent = _owner(module, head, memo) if dot else module
    try:
        sub = getattr(parent, attr)
    except AttributeError as ex:
        raise AttributeError(f"{parent._get_name()} has no attribute `{attr}`") from ex
    if not isinstance(sub, Module):
        raise TypeError(f"submodule `{path}`: {sub} is not an instance of ember.nn.Module")
    memo[path] = sub
    return sub


def _swap(module: Module, name: str, value) -> Any:
    """Put ``value`` (``_MISSING``: nothing) under ``name``; return what was there."""
    if value is not _MISSING and value is not None and not isinstance(value, Tensor):
        raise TypeError(f"{value} is not an instance of ember.Tensor")
    for store in (module._parameters, module._buffers):
        if name in store:
            old = store[name]
            if value is _MISSING:
                del store[name]
            else:
                store[name] = value
            module._bump()
            return old
    old = getattr(module, name) if hasattr(module, name) else _MISSING
    if old is not _MISSING and old is not None and not isinstance(old, Tensor):
        raise TypeError(f"attribute `{name}`: {old} is not an instance of ember.Tensor")
    if value is not _MISSING:
        setattr(module, name, value)
    elif hasattr(module, name):
        delattr(module, name)
    return old


def _swap_all(module: Module, tensors: Mapping[str, Any]) -> dict[str, Any]:
    """NOTE [Swapping tensors for a functional call]; undoes its own swaps if one fails."""
    memo: dict[str, Module] = {}
    done: dict[str, Any] = {}
    try:
        for name, value in tensors.items():
            path, _, attr = name.rpartition(".")
            done[name] = _swap(_owner(module, path, memo), attr, value)
    except Exception:
        for name, old in done.items():
            path, _, attr = name.rpartition(".")
            _swap(_owner(module, path, memo), attr, old)
        raise
    return done


def _untie(module: Module, given: dict[str, Tensor]) -> dict[str, Tensor]:
    """``given`` extended to every name that shares a tensor with a given name."""
    by_tensor: dict[int, list[str]] = {}
    named = [*module.named_parameters(remove_duplicate=False),
             *module.named_buffers(remove_duplicate=False)]
    for name, t in named:
        by_tensor.setdefault(id(t), []).append(name)
    untied = dict(given)
    for names in by_tensor.values():
        if len(names) < 2:
            continue
        supplied = [n for n in names if n in given]
        if len({id(given[n]) for n in supplied}) > 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, "
                             "which are tied. Consider using tie_weights=False")
        for n in names if supplied else ():
            untied[n] = given[supplied[0]]
    return untied


def _check_strict(module: Module, keys) -> None:
    valid = {n for n, _ in module.named_parameters(remove_duplicate=False)}
    valid |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
    keys = set(keys)
    errors = []
    if keys - valid:
        errors.append(f"Unexpected key(s): {', '.join(map(repr, sorted(keys - valid)))}.")
    if valid - keys:
        errors.append(f"Missing key(s): {', '.join(map(repr, sorted(valid - keys)))}.")
    if errors:
        raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n\t"
                           + "\n\t".join(errors))


@contextmanager
def _reparametrize_module(module: Module, tensors: dict[str, Tensor], tie_weights: bool = False,
                          strict: bool = False):
    """Within the context, ``module`` holds ``tensors`` under their dotted names."""
    swapped = _untie(module, tensors) if tie_weights else tensors
    if strict:
        _check_strict(module, swapped)
    originals: dict[str, Any] = {}
    try:
        originals = _swap_all(module, swapped)
        yield
    finally:
        current = _swap_all(module, originals)
        tensors.update({k: current[k] for k in tensors if k in current})


def _merge(parameter_and_buffer_dicts) -> dict[str, Tensor]:
    if isinstance(parameter_and_buffer_dicts, dict):
        return parameter_and_buffer_dicts
    if not isinstance(parameter_and_buffer_dicts, Sequence):
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                         f"dicts, but got {type(parameter_and_buffer_dicts)}")
    if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
        raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
    counts: dict[str, int] = {}
    for d in parameter_and_buffer_dicts:
        for k in d:
            counts[k] = counts.get(k, 0) + 1
    repeated = [k for k, n in counts.items() if n > 1]
    if repeated:
        raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional "
                         "call is ambiguous")
    return {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}


def functional_call(module: Module, parameter_and_buffer_dicts, args: Any = None,
                    kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """Call ``module(*args, **kwargs)`` with the given tensors in place of its parameters and
    buffers (NOTE [Swapping tensors for a functional call]); the module is unchanged afterwards.

    Args:
        module: the module to call.
        parameter_and_buffer_dicts: ``{dotted name: tensor}``, or a sequence of such dicts with
            disjoint keys. Names not given keep the module's own tensors.
        args: the positional argument(s); anything but a tuple is one argument.
        kwargs: keyword arguments for the call.
        tie_weights: a tensor the module holds under several names (tied weights) is replaced
            under all of them; giving different values for tied names is an error.
        strict: the names must be exactly the module's parameters and buffers.

    Returns:
        What ``module`` returns.

    Raises:
        ValueError: malformed dicts, or different values for tied names.
        RuntimeError: ``strict`` and the names do not match.

    Example:
        >>> import ember
        >>> lin = ember.nn.Linear(2, 1)
        >>> params = {"weight": ember.ones(1, 2), "bias": ember.zeros(1)}
        >>> ember.nn.utils.stateless.functional_call(lin, params, ember.ones(1, 2)).tolist()
        [[2.0]]
    """
    tensors = _merge(parameter_and_buffer_dicts)
    kwargs = {} if kwargs is None else kwargs
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _reparametrize_module(module, tensors, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)
