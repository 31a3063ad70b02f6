"""``skip_init``: build a module without running its parameter initialisation
(``torch.nn.utils.skip_init``)."""

from __future__ import annotations

import inspect

from ember.nn.modules.module import Module
from ember.ops.creation import empty_like

__all__ = ["skip_init"]


def skip_init(module_cls: type, *args, **kwargs) -> Module:
    """``module_cls(*args, **kwargs)`` with uninitialised (empty) parameters and buffers.

    The module is built on the ``meta`` device, where initialisers cost nothing, then every
    parameter and buffer is replaced (in place, so parameters keep their identity) by an empty
    tensor on ``device`` (``kwargs['device']``, default ``'cpu'``).

    Raises:
        RuntimeError: ``module_cls`` is no Module class or takes no ``device`` argument.

    Example:
        >>> import ember
        >>> m = ember.nn.utils.skip_init(ember.nn.Linear, 6, 1)
        >>> m.weight.shape, m.weight.device.type
        (ember.Size([1, 6]), 'cpu')
    """
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    module = module_cls(*args, **kwargs)
    return module._apply(lambda t: empty_like(t, device=final_device))
