"""Legacy weight normalisation by forward pre-hook (``torch.nn.utils.weight_norm``, deprecated).

The weight is replaced by parameters ``<name>_g`` (magnitude) and ``<name>_v`` (direction); a
forward pre-hook recomputes ``<name> = g * v / ||v||`` as a plain attribute before every call.
``parametrizations.weight_norm`` is the maintained form; both share the two helpers below.
"""

from __future__ import annotations

import warnings

from ember.nn.modules.module import Module
from ember.nn.parameter import is_lazy
from ember.ops.reduction import linalg_vector_norm
from ember.tensor import Tensor
from ember.tensor.parameter import Parameter

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of ``v`` over every dim except ``dim``, dims kept (``torch.norm_except_dim``);
    ``dim == -1`` means one norm of the whole tensor (0-d)."""
    if dim == -1:
        return linalg_vector_norm(v, 2)
    dim = dim % v.ndim
    others = tuple(d for d in range(v.ndim) if d != dim)
    if not others:  # a vector: each element is its own slice
        return v.abs()
    return linalg_vector_norm(v, 2, others, keepdim=True)


def _weight_norm(v: Tensor, g: Tensor, dim: int) -> Tensor:
    """``v * (g / ||v||)`` with :func:`_norm_except_dim` (``torch._weight_norm``)."""
    return v * (g / _norm_except_dim(v, dim))


class WeightNorm:
    """The forward pre-hook that recomputes ``module.<name>`` from ``<name>_g``, ``<name>_v``."""

    def __init__(self, name: str, dim: int | None) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Tensor:
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> WeightNorm:
        """Split ``module.<name>`` into ``_g``/``_v`` parameters and install the hook."""
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning,
                      stacklevel=3)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError("Cannot register two weight_norm hooks on the same "
                                   f"parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if is_lazy(weight):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized "
                             "parameters. Make sure to run the dummy forward before applying "
                             "weight normalization")
        delattr(module, name)
        module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, fn.dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        """Fold ``_g``/``_v`` back into one Parameter ``<name>``."""
        weight = self.compute_weight(module)
        delattr(module, self.name)
        delattr(module, self.name + "_g")
        delattr(module, self.name + "_v")
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Legacy weight normalisation: ``<name> = <name>_g * <name>_v / ||<name>_v||``, recomputed
    by a forward pre-hook (deprecated in favour of ``parametrizations.weight_norm``).

    Args:
        module: the module owning the parameter.
        name: the parameter to reparametrize.
        dim: the dim kept by the norm (``None``: one norm over the whole tensor).

    Returns:
        ``module``.

    Raises:
        RuntimeError: ``name`` already has a weight_norm hook.

    Example:
        >>> import ember, warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     m = ember.nn.utils.weight_norm(ember.nn.Linear(3, 2))
        >>> [n for n, _ in m.named_parameters()]
        ['bias', 'weight_g', 'weight_v']
    """
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo :func:`weight_norm`: ``<name>`` becomes one Parameter again.

    Raises:
        ValueError: ``module`` has no weight_norm hook on ``name``.

    Example:
        >>> from ember.nn.utils import remove_weight_norm, weight_norm
        >>> m = weight_norm(ember.nn.Linear(3, 2))
        >>> sorted(n for n, _ in m.named_parameters())
        ['bias', 'weight_g', 'weight_v']
        >>> sorted(n for n, _ in remove_weight_norm(m).named_parameters())
        ['bias', 'weight']
    """
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
