"""Lazy layers: shapes inferred from the first input (LazyLinear, LazyConv*, LazyBatchNorm*, ...).

NOTE [Lazy modules]
As in torch, a lazy module is its regular class with ``UninitializedParameter`` /
``UninitializedBuffer`` placeholders and a size of 0 for the inferred dimension. A forward
pre-hook runs ``initialize_parameters(input)`` on the first call: it reads ``in_features`` /
``in_channels`` / ``num_features`` from the input, materialises every placeholder, initialises
it as the regular class's ``reset_parameters`` does, removes the hooks and turns the module into
``cls_to_become`` (``type(m) is nn.Linear`` afterwards). A load_state_dict pre-hook
materialises placeholders from the shapes being loaded, so a checkpoint loads into a lazy
module before any forward.
"""

from __future__ import annotations

import itertools

from ember.autograd.grad_mode import no_grad
from ember.core import dtype as dt
from ember.nn.modules.batchnorm import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
)
from ember.nn.modules.conv import (
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
)
from ember.nn.modules.linear import Linear
from ember.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from ember.ops.creation import tensor
from ember.tensor import Tensor

__all__ = ["LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d",
           "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
           "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class LazyModuleMixin:
    """Mixin for modules whose parameter shapes come from the first input
    (``torch.nn.modules.lazy.LazyModuleMixin``; NOTE [Lazy modules]).

    Subclasses implement ``initialize_parameters(*args, **kwargs)`` and set ``cls_to_become``.
    """

    cls_to_become: type | None = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._load_hook = self.register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters,
                                                               with_kwargs=True)

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if (is_lazy(p) or keep_vars) else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if (is_lazy(b) or keep_vars) else b.detach()

    def _lazy_load_hook(self, module, state_dict, prefix, local_metadata, strict, missing_keys,
                        unexpected_keys, error_msgs) -> None:
        """Materialise each placeholder whose entry in ``state_dict`` has a known shape."""
        for name, value in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and value is not None and is_lazy(value):
                loaded = state_dict[key]
                if isinstance(loaded, Tensor) and not is_lazy(loaded):
                    with no_grad():
                        value.materialize(loaded.shape)

    def initialize_parameters(self, *args, **kwargs) -> None:
        """Infer the shapes from the first input and initialise the parameters."""
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{type(self).__name__}")

    def has_uninitialized_params(self) -> bool:
        """Whether any parameter or buffer is still an uninitialized placeholder."""
        return any(is_lazy(v) for v in itertools.chain(self._parameters.values(),
                                                       self._buffers.values()))

    def _infer_parameters(self, module, args, kwargs=None) -> None:
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        del module._initialize_hook
        del module._load_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with "
                           "`DataParallel`. Run a dummy forward pass to correctly initialize "
                           "the modules")


def _factory(device, dtype) -> dict:
    return {"device": device, "dtype": dtype}


class LazyLinear(LazyModuleMixin, Linear):
    """``Linear`` whose ``in_features`` is inferred from ``input.shape[-1]`` on the first call
    (``torch.nn.LazyLinear``); it then becomes a ``Linear``.

    Example:
        >>> import ember
        >>> m = ember.nn.LazyLinear(2)
        >>> m(ember.ones(4, 3)).shape, type(m).__name__, tuple(m.weight.shape)
        (ember.Size([4, 2]), 'Linear', (2, 3))
    """

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(**_factory(device, dtype))
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(**_factory(device, dtype))

    def reset_parameters(self) -> None:
        """Linear's initialisation, once the parameters have shapes."""
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        """``in_features = input.shape[-1]``; materialise and initialise weight and bias."""
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


class _LazyConvMixin(LazyModuleMixin):
    _nd = 1

    def _lazy_init(self, out_channels: int, bias: bool, device, dtype) -> None:
        self.weight = UninitializedParameter(**_factory(device, dtype))
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(**_factory(device, dtype))

    def reset_parameters(self) -> None:
        """The convolution's initialisation, once the parameters have shapes."""
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _get_in_channels(self, input: Tensor) -> int:
        no_batch = self._nd + 1
        if input.dim() not in (no_batch, no_batch + 1):
            raise RuntimeError(f"Expected {no_batch}D (unbatched) or {no_batch + 1}D (batched) "
                               f"input to {type(self).__name__}, but got input of size: "
                               f"{input.shape}")
        return input.shape[1] if input.dim() == no_batch + 1 else input.shape[0]

    def initialize_parameters(self, input: Tensor, *args, **kwargs) -> None:
        """``in_channels`` from the input's channel dim; materialise and initialise."""
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            g = self.groups
            shape = (self.in_channels, self.out_channels // g) if self.transposed else \
                (self.out_channels, self.in_channels // g)
            with no_grad():
                self.weight.materialize((*shape, *self.kernel_size))
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()


class LazyConv1d(_LazyConvMixin, Conv1d):
    """``Conv1d`` whose ``in_channels`` is inferred from the first input
    (``torch.nn.LazyConv1d``); it then becomes a ``Conv1d``.

    Example:
        >>> m = ember.nn.LazyConv1d(4, kernel_size=3)
        >>> m(ember.randn(2, 5, 10)).shape, type(m).__name__, tuple(m.weight.shape)
        (ember.Size([2, 4, 8]), 'Conv1d', (4, 5, 3))
    """

    cls_to_become = Conv1d
    _nd = 1

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                         padding_mode, **_factory(device, dtype))
        self._lazy_init(out_channels, bias, device, dtype)


class LazyConv2d(_LazyConvMixin, Conv2d):
    """``Conv2d`` whose ``in_channels`` is inferred from the first input
    (``torch.nn.LazyConv2d``); it then becomes a ``Conv2d``.

    Example:
        >>> m = ember.nn.LazyConv2d(4, kernel_size=3)
        >>> m(ember.randn(2, 5, 8, 8)).shape, type(m).__name__, tuple(m.weight.shape)
        (ember.Size([2, 4, 6, 6]), 'Conv2d', (4, 5, 3, 3))
    """

    cls_to_become = Conv2d
    _nd = 2

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                         padding_mode, **_factory(device, dtype))
        self._lazy_init(out_channels, bias, device, dtype)


class LazyConv3d(_LazyConvMixin, Conv3d):
    """``Conv3d`` whose ``in_channels`` is inferred from the first input
    (``torch.nn.LazyConv3d``); it then becomes a ``Conv3d``.

    Example:
        >>> m = ember.nn.LazyConv3d(4, kernel_size=2)
        >>> m(ember.randn(1, 5, 3, 3, 3)).shape, type(m).__name__, tuple(m.weight.shape)
        (ember.Size([1, 4, 2, 2, 2]), 'Conv3d', (4, 5, 2, 2, 2))
    """

    cls_to_become = Conv3d
    _nd = 3

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                         padding_mode, **_factory(device, dtype))
        self._lazy_init(out_channels, bias, device, dtype)


class LazyConvTranspose1d(_LazyConvMixin, ConvTranspose1d):
    """``ConvTranspose1d`` whose ``in_channels`` is inferred from the first input
    (``torch.nn.LazyConvTranspose1d``); it then becomes a ``ConvTranspose1d``.

    Example:
        >>> m = ember.nn.LazyConvTranspose1d(4, kernel_size=3)
        >>> m(ember.randn(2, 5, 10)).shape, type(m).__name__, tuple(m.weight.shape)
        (ember.Size([2, 4, 12]), 'ConvTranspose1d', (5, 4, 3))
    """

    cls_to_become = ConvTranspose1d
    _nd = 1

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False,
                         dilation, padding_mode, **_factory(device, dtype))
        self._lazy_init(out_channels, bias, device, dtype)


class LazyConvTranspose2d(_LazyConvMixin, ConvTranspose2d):
    """``ConvTranspose2d`` whose ``in_channels`` is inferred from the first input
    (``torch.nn.LazyConvTranspose2d``); it then becomes a ``ConvTranspose2d``.

    Example:
        >>> m = ember.nn.LazyConvTranspose2d(4, kernel_size=3)
        >>> m(ember.randn(2, 5, 8, 8)).shape, type(m).__name__, tuple(m.weight.shape)
        (ember.Size([2, 4, 10, 10]), 'ConvTranspose2d', (5, 4, 3, 3))
    """

    cls_to_become = ConvTranspose2d
    _nd = 2

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False,
                         dilation, padding_mode, **_factory(device, dtype))
        self._lazy_init(out_channels, bias, device, dtype)


class LazyConvTranspose3d(_LazyConvMixin, ConvTranspose3d):
    """``ConvTranspose3d`` whose ``in_channels`` is inferred from the first input
    (``torch.nn.LazyConvTranspose3d``); it then becomes a ``ConvTranspose3d``.

    Example:
        >>> m = ember.nn.LazyConvTranspose3d(4, kernel_size=2)
        >>> m(ember.randn(1, 5, 3, 3, 3)).shape, type(m).__name__, tuple(m.weight.shape)
        (ember.Size([1, 4, 4, 4, 4]), 'ConvTranspose3d', (5, 4, 2, 2, 2))
    """

    cls_to_become = ConvTranspose3d
    _nd = 3

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False,
                         dilation, padding_mode, **_factory(device, dtype))
        self._lazy_init(out_channels, bias, device, dtype)


class _LazyNormBase(LazyModuleMixin):
    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *,
                 bias: bool = True) -> None:
        kw = _factory(device, dtype)
        super().__init__(0, eps, momentum, False, False, **kw, bias=bias)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(**kw)
            if bias:
                self.bias = UninitializedParameter(**kw)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(**kw)
            self.running_var = UninitializedBuffer(**kw)
            self.num_batches_tracked = tensor(0, dtype=dt.int64, device=device)

    def reset_parameters(self) -> None:
        """The norm layer's initialisation, once the parameters have shapes."""
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        """``num_features = input.shape[1]`` (as torch, also for unbatched instance norm
        input); materialise and initialise."""
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            with no_grad():
                for name in ("weight", "bias", "running_mean", "running_var"):
                    value = getattr(self, name)
                    if value is not None and is_lazy(value):
                        value.materialize((self.num_features,))
                self.reset_parameters()


def _lazy_norm(base: type, doc: str) -> type:
    return type(f"Lazy{base.__name__}", (_LazyNormBase, base),
                {"cls_to_become": base, "__doc__": doc, "__module__": __name__})


_NORM_DOC = ("``{0}`` whose ``num_features`` is inferred from ``input.shape[1]`` on the first "
             "call (``torch.nn.Lazy{0}``); it then becomes a ``{0}``. Defaults as torch's lazy "
             "class: ``affine=True, track_running_stats=True``.\n\n"
             "Example:\n"
             "    >>> m = ember.nn.Lazy{0}()\n"
             "    >>> m(ember.randn({1})).shape, type(m).__name__, m.num_features\n"
             "    (ember.Size([{1}]), '{0}', 3)\n")
LazyBatchNorm1d = _lazy_norm(BatchNorm1d, _NORM_DOC.format("BatchNorm1d", "2, 3, 4"))
LazyBatchNorm2d = _lazy_norm(BatchNorm2d, _NORM_DOC.format("BatchNorm2d", "2, 3, 4, 4"))
LazyBatchNorm3d = _lazy_norm(BatchNorm3d, _NORM_DOC.format("BatchNorm3d", "2, 3, 2, 2, 2"))
LazyInstanceNorm1d = _lazy_norm(InstanceNorm1d, _NORM_DOC.format("InstanceNorm1d", "2, 3, 4"))
LazyInstanceNorm2d = _lazy_norm(InstanceNorm2d, _NORM_DOC.format("InstanceNorm2d",
                                                                  "2, 3, 4, 4"))
LazyInstanceNorm3d = _lazy_norm(InstanceNorm3d, _NORM_DOC.format("InstanceNorm3d",
                                                                  "2, 3, 2, 2, 2"))
