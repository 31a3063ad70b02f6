"""``functional_call`` and ``stack_module_state``: modules as functions of their tensors."""

from __future__ import annotations

from ember.dispatch.dispatcher import get_op

__all__ = ["functional_call", "stack_module_state"]


def _owner(module, name: str):
    *path, attr = name.split(".")
    for p in path:
        module = getattr(module, p)
    return module, attr


def _swap(module, name: str, value):
    """Put ``value`` where ``name`` lives (a parameter, buffer or attribute); returns an undo."""
    owner, attr = _owner(module, name)
    for store in ("_parameters", "_buffers"):
        table = owner.__dict__.get(store)
        if table is not None and attr in table:
            old = table[attr]
            table[attr] = value
            return lambda: table.__setitem__(attr, old)
    missing = object()
    old = owner.__dict__.get(attr, missing)
    object.__setattr__(owner, attr, value)
    if old is missing:
        return lambda: object.__delattr__(owner, attr)
    return lambda: object.__setattr__(owner, attr, old)


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """Call ``module`` with the given tensors in place of its parameters and buffers
    (``torch.func.functional_call``); the module is restored afterwards.

    Args:
        module: the module to call.
        parameter_and_buffer_dicts: a dict from dotted names to tensors, or a tuple of dicts.
        args: positional arguments (a single non-tuple value is one argument).
        kwargs: keyword arguments.
        strict: every parameter and buffer must be given, and nothing else.

    Raises:
        ValueError: a name given by more than one dict.
        RuntimeError: with ``strict``, missing or unexpected names.

    Example:
        >>> lin = ember.nn.Linear(2, 1, bias=False)
        >>> functional_call(lin, {"weight": ember.ones(1, 2)}, (ember.tensor([1.0, 2.0]),))
        tensor([3.])
    """
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, dict):
        dicts = (dicts,)
    merged: dict = {}
    for d in dicts:
        for k, v in d.items():
            if k in merged:
                raise ValueError(f"{k} appeared in multiple dictionaries; behavior of "
                                 f"functional call is ambiguous")
            merged[k] = v
    if strict:
        expected = {n for n, _ in module.named_parameters()} | \
            {n for n, _ in module.named_buffers()}
        missing = sorted(expected - set(merged))
        unexpected = sorted(set(merged) - expected)
        if missing or unexpected:
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}: "
                               f"missing keys {missing}, unexpected keys {unexpected}")
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    undo = [_swap(module, name, value) for name, value in merged.items()]
    try:
        return module(*args, **(kwargs or {}))
    finally:
        for u in reversed(undo):
            u()


def stack_module_state(models) -> tuple[dict, dict]:
    """The parameters and buffers of identical ``models`` stacked along a new dim 0
    (``torch.func.stack_module_state``), for ``vmap`` over an ensemble.

    Parameters come back as new leaves (detached, ``requires_grad`` as the originals).

    Raises:
        RuntimeError: no models, or models in different training modes.

    Example:
        >>> params, buffers = stack_module_state([ember.nn.Linear(3, 2) for _ in range(4)])
        >>> params["weight"].shape
        ember.Size([4, 2, 3])
    """
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/"
                           "eval mode.")
    stack = get_op("aten::stack")
    params = {}
    for name, p in models[0].named_parameters():
        each = [dict(m.named_parameters())[name] for m in models]
        stacked = stack([t.detach() for t in each], 0)
        params[name] = stacked.requires_grad_() if p.requires_grad else stacked
    buffers = {name: stack([dict(m.named_buffers())[name] for m in models], 0)
               for name, _ in models[0].named_buffers()}
    return params, buffers
