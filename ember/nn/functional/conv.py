"""Convolutions, padding, unfold/fold and interpolation (``torch.nn.functional``).

Thin wrappers over the operators of ``ember.ops.conv``: argument handling in torch's style
lives here; shapes, validation, kernels and gradients live with the operators.
"""

from __future__ import annotations

import math

import ember.ops.conv as _ops
from ember.nn.functional import _interpolate as _interp
from ember.tensor import Tensor

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "pad", "unfold", "fold", "interpolate", "upsample",
           "upsample_nearest", "upsample_bilinear"]


conv1d = _ops.conv1d
conv2d = _ops.conv2d
conv3d = _ops.conv3d
conv_transpose1d = _ops.conv_transpose1d
conv_transpose2d = _ops.conv_transpose2d
conv_transpose3d = _ops.conv_transpose3d


def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad ``input`` (``torch.nn.functional.pad``).

    Args:
        input: any tensor (constant mode) or a 2-5-d tensor (other modes).
        pad: ``(left, right)`` pairs from the last dim backwards; negative values crop.
        mode: ``'constant'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.
        value: fill value of constant padding (default 0).

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.pad(ember.ones(1, 2), (1, 1)).tolist()
        [[0.0, 1.0, 1.0, 0.0]]
    """
    pad = list(pad)
    for i, p in enumerate(pad):
        if not isinstance(p, int) and not hasattr(p, "__index__"):
            raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but "
                            f"found element of type {type(p).__name__} at pos {i}")
    return _ops.pad(input, [int(p) for p in pad], mode, value)


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Extract sliding local blocks (im2col): ``(N, C, H, W) -> (N, C * kH * kW, L)``.

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.unfold(ember.ones(1, 2, 4, 4), 2).shape
        ember.Size([1, 8, 9])
    """
    if input.ndim not in (3, 4):
        raise NotImplementedError(f"Input Error: Only 3D or 4D input Tensors are supported "
                                  f"(got {input.ndim}D)")
    return _ops.im2col(input, _pair(kernel_size), _pair(dilation), _pair(padding),
                       _pair(stride))


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Combine sliding local blocks into an image, summing overlaps (col2im).

    Shape: ``(N, C * kH * kW, L) -> (N, C, *output_size)``.

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.fold(ember.ones(1, 4, 9), (4, 4), 2)[0, 0, 1].tolist()
        [2.0, 4.0, 4.0, 2.0]
    """
    if input.ndim not in (2, 3):
        raise NotImplementedError(f"Input Error: Only unbatched (2D) or batched (3D) input "
                                  f"Tensors are supported (got {input.ndim}D)")
    return _ops.col2im(input, _pair(output_size), _pair(kernel_size), _pair(dilation),
                       _pair(padding), _pair(stride))


def _pair(v) -> list:
    return [v, v] if isinstance(v, int) else list(v)


_INTERP = ("linear", "bilinear", "bicubic", "trilinear")


def _output_size(input: Tensor, size, scale_factor, recompute: bool | None):
    dim = input.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        out = list(size) if isinstance(size, list | tuple) else [size] * dim
        if len(out) != dim:
            raise ValueError(f"Input and output must have the same number of spatial dimensions,"
                             f" but got input with spatial dimensions of {list(input.shape[2:])}"
                             f" and output size of {out}. Please provide input tensor in (N, C, "
                             "d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
        return [int(o) for o in out], [None] * dim
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    scales = list(scale_factor) if isinstance(scale_factor, list | tuple) else \
        [scale_factor] * dim
    if len(scales) != dim:
        raise ValueError(f"Input and scale_factor must have the same number of spatial "
                         f"dimensions, but got input with spatial dimensions of "
                         f"{list(input.shape[2:])} and scale_factor of shape {scales}. Please "
                         "provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor "
                         "in (s1, s2, ...,sK) format.")
    out = [math.floor(float(input.shape[i + 2]) * float(s)) for i, s in enumerate(scales)]
    return out, ([None] * dim if recompute else [float(s) for s in scales])


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize ``(N, C, *spatial)`` with 1-3 spatial dims (``torch.nn.functional.interpolate``).

    Modes: ``'nearest'``, ``'nearest-exact'`` and ``'area'`` (3-5-d), ``'linear'`` (3-d),
    ``'bilinear'`` and ``'bicubic'`` (4-d), ``'trilinear'`` (5-d), with PyTorch's
    source-index rules, ``align_corners``, ``scale_factor`` and ``recompute_scale_factor``
    handling; ``antialias=True`` (bilinear and bicubic) widens the filter when downsampling,
    as torch.

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.interpolate(ember.ones(1, 1, 2, 2), scale_factor=2).shape
        ember.Size([1, 1, 4, 4])
    """
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    out, scales = _output_size(input, size, scale_factor, recompute_scale_factor)
    if input.dtype.is_complex and mode != "area":  # torch's index/weight kernels: real only
        kind = "compute_index_ranges_weights" if antialias else "compute_indices_weights_" + (
            "nearest" if mode.startswith("nearest") else "cubic" if mode == "bicubic" else
            "linear")
        raise NotImplementedError(f"\"{kind}\" not implemented for "
                                  f"'{input.dtype.scalar_name}'")
    if antialias:
        return _interp.antialiased(input, out, scales, mode, align_corners)
    key = (input.ndim, mode)
    if mode != "area" and input.ndim in (3, 4, 5) and any(s == 0 for s in input.shape[1:]):
        raise RuntimeError(f"Non-empty {input.ndim}D data tensor expected but got a tensor "
                           f"with sizes {list(input.shape)}")
    if _SEPARABLE.get(mode) is not None and input.ndim in _SEPARABLE[mode] and \
            key not in ((4, "nearest"), (3, "nearest"), (4, "bilinear"), (3, "linear")):
        return _interp.resample(input, out, scales, mode, align_corners)
    if key == (4, "nearest"):
        return _ops.upsample_nearest2d(input, out, *scales)
    if key == (3, "nearest"):
        x = input.unsqueeze(-2)
        return _ops.upsample_nearest2d(x, [1, out[0]], None, scales[0]).squeeze(-2)
    if key == (4, "bilinear"):
        return _ops.upsample_bilinear2d(input, out, align_corners, *scales)
    if key == (3, "linear"):
        x = input.unsqueeze(-2)
        return _ops.upsample_bilinear2d(x, [1, out[0]], align_corners, None,
                                        scales[0]).squeeze(-2)
    need = {"linear": 3, "bilinear": 4, "trilinear": 5, "bicubic": 4}.get(mode)
    if need is not None and input.ndim in (3, 4, 5):
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {need}D "
                                  f"input")
    raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                              f"{input.ndim}D) for the modes: nearest | linear | bilinear | "
                              f"bicubic | trilinear | area | nearest-exact (got {mode})")


# mode -> input ranks served by the separable resampler (ember/nn/functional/_interpolate.py)
_SEPARABLE = {"nearest": (3, 4, 5), "nearest-exact": (3, 4, 5), "area": (3, 4, 5),
              "linear": (3,), "bilinear": (4,), "trilinear": (5,), "bicubic": (4,)}


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """Deprecated alias of :func:`interpolate` (``torch.nn.functional.upsample``).

    Example:
        >>> import ember.nn.functional as F
        >>> F.upsample(ember.tensor([[[1.0, 2.0]]]), scale_factor=2)
        tensor([[[1., 1., 2., 2.]]])
    """
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Nearest upsampling (deprecated in torch; :func:`interpolate` with ``'nearest'``).

    Example:
        >>> import ember.nn.functional as F
        >>> F.upsample_nearest(ember.tensor([[[[1.0, 2.0]]]]), scale_factor=2)
        tensor([[[[1., 1., 2., 2.],
                  [1., 1., 2., 2.]]]])
    """
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Bilinear upsampling with ``align_corners=True`` (deprecated in torch).

    Example:
        >>> import ember.nn.functional as F
        >>> F.upsample_bilinear(ember.tensor([[[[0.0, 1.0]]]]), size=(1, 3))
        tensor([[[[0.0000, 0.5000, 1.0000]]]])
    """
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
