"""BatchNorm1d/2d/3d and InstanceNorm1d/2d/3d: per-channel normalisation with running stats.

NOTE [BatchNorm running statistics]
In training with ``track_running_stats`` each forward bumps ``num_batches_tracked`` and updates
``running_mean``/``running_var`` in place with factor ``momentum`` (or ``1/num_batches_tracked``
when ``momentum`` is None: a cumulative average), using the unbiased batch variance. The
updates happen whatever the grad mode; ``eval()`` switches to the running statistics. Without
``track_running_stats`` there are no buffers and batch statistics are used in both modes.
"""

from __future__ import annotations

import warnings

from ember.core import dtype as dt
from ember.nn import init
from ember.nn.functional import _core as F
from ember.nn.modules.module import Module
from ember.ops.creation import empty, ones, tensor, zeros
from ember.tensor import Tensor
from ember.tensor.parameter import Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d",
           "InstanceNorm3d"]


class _NormBase(Module):
    _version = 2
    _pickle_defaults = {"_bias_flag": lambda m: m._parameters.get("bias") is not None}

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        self._bias_flag = bias
        kw = {"device": device, "dtype": dtype}
        if affine:
            self.weight = Parameter(empty(num_features, **kw))
            if bias:
                self.bias = Parameter(empty(num_features, **kw))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, **kw))
            self.register_buffer("running_var", ones(num_features, **kw))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=dt.int64,
                                                               device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input: Tensor) -> None:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self._bias_flag and self.affine}, "
                f"track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs) -> None:
        version = local_metadata.get("version")
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and \
                key not in state_dict:
            state_dict[key] = tensor(0, dtype=dt.int64)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)


class _BatchNorm(_NormBase):
    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if track else None,
                            self.running_var if track else None, self.weight, self.bias,
                            use_batch, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over ``(N, C)`` or ``(N, C, L)`` input (NOTE [BatchNorm running
    statistics]).

    Example:
        >>> import ember
        >>> bn = ember.nn.BatchNorm1d(3)
        >>> _ = bn(ember.randn(8, 3))
        >>> int(bn.num_batches_tracked)
        1
    """

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over ``(N, C, H, W)`` input.

    Example:
        >>> bn = ember.nn.BatchNorm2d(3)
        >>> y = bn(ember.randn(4, 3, 5, 5))
        >>> y.shape, bn.running_mean.shape, int(bn.num_batches_tracked)
        (ember.Size([4, 3, 5, 5]), ember.Size([3]), 1)
    """

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch normalisation over ``(N, C, D, H, W)`` input.

    Example:
        >>> bn = ember.nn.BatchNorm3d(2, affine=False)
        >>> bn(ember.randn(2, 2, 3, 3, 3)).shape, bn.weight is None
        (ember.Size([2, 2, 3, 3, 3]), True)
    """

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class _InstanceNorm(_NormBase):
    _ndim = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def forward(self, input: Tensor) -> Tensor:
        batched = self._ndim + 2
        if input.dim() not in (batched - 1, batched):
            raise ValueError(f"expected {batched - 1}D or {batched}D input (got {input.dim()}D "
                             "input)")
        feature_dim = input.dim() - self._ndim - 1
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match "
                                 f"num_features ({self.num_features}), but got: "
                                 f"{input.shape[feature_dim]}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You "
                          "can silence this warning by not passing in num_features, which is "
                          "not used because affine=False", stacklevel=2)
        if input.dim() == batched - 1:
            return self._norm(input.unsqueeze(0)).squeeze(0)
        return self._norm(input)

    def _norm(self, input: Tensor) -> Tensor:
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight,
                               self.bias, self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation over ``(N, C, L)`` or ``(C, L)`` input.

    Example:
        >>> m = ember.nn.InstanceNorm1d(2)
        >>> m(ember.tensor([[[1.0, 3.0], [5.0, 9.0]]])).round(decimals=3)
        tensor([[[-1.,  1.],
                 [-1.,  1.]]])
    """

    _ndim = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation over ``(N, C, H, W)`` or ``(C, H, W)`` input.

    Example:
        >>> import ember
        >>> ember.nn.InstanceNorm2d(3)(ember.randn(2, 3, 4, 4)).shape
        ember.Size([2, 3, 4, 4])
    """

    _ndim = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation over ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input.

    Example:
        >>> m = ember.nn.InstanceNorm3d(2, affine=True)
        >>> m(ember.randn(1, 2, 2, 2, 2)).shape, m.weight.shape
        (ember.Size([1, 2, 2, 2, 2]), ember.Size([2]))
    """

    _ndim = 3
