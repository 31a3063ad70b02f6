"""Flatten parameters into one vector and back (torch.nn.utils.parameters_to_vector)."""

from __future__ import annotations

from collections.abc import Iterable

from ember.nn.modules.module import _set_data
from ember.ops.shape import cat
from ember.tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_device(param: Tensor, device):
    if device is None:
        return param.device
    if param.device != device:
        raise TypeError("Found two parameters on different devices, this is currently not "
                        "supported.")
    return device


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """One 1-D tensor holding every parameter, flattened, in order.

    Example:
        >>> import ember
        >>> ember.nn.utils.parameters_to_vector(ember.nn.Linear(2, 3).parameters()).shape
        ember.Size([9])
    """
    device = None
    flat = []
    for p in parameters:
        device = _check_device(p, device)
        flat.append(p.reshape(-1))
    return cat(flat)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Make each parameter a view of its slice of ``vec`` (``param.data = slice``, as torch).

    Example:
        >>> from ember.nn.utils import parameters_to_vector, vector_to_parameters
        >>> model = ember.nn.Linear(2, 1)
        >>> vector_to_parameters(ember.tensor([1.0, 2.0, 3.0]), model.parameters())
        >>> model.weight.tolist(), model.bias.tolist()
        ([[1.0, 2.0]], [3.0])
        >>> parameters_to_vector(model.parameters()).tolist()
        [1.0, 2.0, 3.0]
    """
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    device = None
    pointer = 0
    for p in parameters:
        device = _check_device(p, device)
        n = p.numel()
        _set_data(p, vec[pointer:pointer + n].view_as(p).detach())
        pointer += n
