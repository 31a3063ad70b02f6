"""Distribution samplers: ``_standard_gamma`` (with its implicit reparameterization gradient
``_standard_gamma_grad``), ``_sample_dirichlet`` and ``_dirichlet_grad``, ``poisson`` and
``binomial``, as torch's operators of the same names.

Samplers take ``generator`` (the default generator when None) and draw from its Philox stream
(NOTE [Philox streams] in ember/tensor/random.py); Meta rules validate and never draw. CPU
kernels and the gradient mathematics live in ember/backends/cpu/random_dists.py.
"""

from __future__ import annotations

from ember.core import dtype as dt
from ember.core.layout import broadcast_shapes
from ember.ops._define import Spec, Tag, derivative, operator
from ember.ops.creation import zeros_like
from ember.ops.pointwise import _TN

__all__ = ["poisson", "binomial", "_standard_gamma", "_standard_gamma_grad",
           "_sample_dirichlet", "_dirichlet_grad"]

_R = (Tag.random,)
_SINGLE_DOUBLE = (dt.float32, dt.float64)


def _require(kernel: str, dtype: dt.DType, allowed=_SINGLE_DOUBLE) -> None:
    """torch's dispatch-macro error for a dtype its CPU kernel lacks (empty inputs too)."""
    if dtype not in allowed:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_TN[dtype.name]}\'')


def _same_dtype(*tensors) -> dt.DType:
    first = tensors[0]._dtype
    for t in tensors[1:]:
        if t._dtype is not first:
            raise RuntimeError(f"Found dtype {_TN[t._dtype.name]} but expected "
                               f"{_TN[first.name]}")
    return first


@operator("_standard_gamma(Tensor self, Generator? generator=None) -> Tensor", _R,
          method=False)
def _standard_gamma(input, generator=None):
    """Gamma(``input``, 1) samples, one per element (float32/float64), as
    ``torch._standard_gamma``: Marsaglia-Tsang, ``alpha < 1`` boosted by ``U ** (1/alpha)``;
    samples are at least the dtype's smallest normal number. Differentiable in ``input`` by
    implicit reparameterization (``_standard_gamma_grad``).

    Example:
        >>> import ember
        >>> x = ember._standard_gamma(ember.full((1000,), 3.0, dtype=ember.float64))
        >>> x.shape, bool((x > 0).all())
        (ember.Size([1000]), True)
    """
    _require("gamma_cpu", input._dtype)
    return Spec(input._shape, input._dtype)


@operator("_standard_gamma_grad(Tensor self, Tensor output) -> Tensor", method=False)
def _standard_gamma_grad(input, output):
    """``d output / d input`` of standard gamma samples ``output`` of concentrations ``input``
    at a fixed quantile (broadcast), as ``torch._standard_gamma_grad``.

    Example:
        >>> import ember
        >>> a = ember.tensor([1.0], dtype=ember.float64)   # Exponential: x = -log(1 - u)
        >>> x = ember.tensor([0.5], dtype=ember.float64)
        >>> round(ember._standard_gamma_grad(a, x).item(), 4)
        0.807
    """
    dtype = _same_dtype(input, output)
    shape = broadcast_shapes(input._shape, output._shape)
    _require("_standard_gamma_grad_cpu", dtype)
    return Spec(shape, dtype)


@derivative(_standard_gamma, save=("input", "result"))
def _standard_gamma_backward(ctx, grad):
    return (grad * _standard_gamma_grad(ctx.input, ctx.result),)


@operator("_sample_dirichlet(Tensor self, Generator? generator=None) -> Tensor", _R,
          method=False)
def _sample_dirichlet(input, generator=None):
    """Dirichlet samples over the last dimension of ``input`` (concentrations), as
    ``torch._sample_dirichlet``: normalised gamma draws, clamped into
    ``[tiny, nextafter(1, 0)]``. Not differentiable (``Dirichlet.rsample`` adds the gradient).

    Example:
        >>> import ember
        >>> x = ember._sample_dirichlet(ember.ones(4, 3, dtype=ember.float64))
        >>> x.shape, bool(((x.sum(-1) - 1).abs() < 1e-12).all())
        (ember.Size([4, 3]), True)
    """
    _require("dirichlet", input._dtype)
    return Spec(input._shape, input._dtype)


@operator("_dirichlet_grad(Tensor x, Tensor alpha, Tensor total) -> Tensor", method=False)
def _dirichlet_grad(x, alpha, total):
    """``(d x / d alpha) / (1 - x)`` of Beta(``alpha``, ``total - alpha``) samples ``x`` at a
    fixed quantile and fixed ``total - alpha`` (broadcast), as ``torch._dirichlet_grad``: the
    Dirichlet's implicit reparameterization gradient through each coordinate's beta marginal
    (the other coordinates shrink in proportion, hence the ``1 - x``).

    Example:
        >>> import ember
        >>> one = ember.ones(1, dtype=ember.float64)    # Beta(1, 1): uniform, x = u
        >>> round(ember._dirichlet_grad(one / 2, one, 2 * one).item(), 4)  # log 2
        0.6931
    """
    dtype = _same_dtype(x, alpha, total)
    shape = broadcast_shapes(x._shape, alpha._shape, total._shape)
    _require("_dirichlet_grad_cpu", dtype)
    return Spec(shape, dtype)


@operator("poisson(Tensor self, Generator? generator=None) -> Tensor", _R, method=False)
def poisson(input, generator=None):
    """Poisson counts with rates ``input`` (floating; the result has its dtype), as
    ``torch.poisson``. The gradient with respect to the rates is zero, as torch's.

    Raises:
        RuntimeError: a negative rate (CPU).
        NotImplementedError: an integer ``input``.

    Example:
        >>> import ember
        >>> ember.poisson(ember.tensor([0.0, 0.0])).tolist()
        [0.0, 0.0]
    """
    _require("poisson_cpu", input._dtype,
             (dt.float32, dt.float64, dt.float16, dt.bfloat16))
    return Spec(input._shape, input._dtype)


@derivative(poisson)
def _poisson_backward(ctx, grad):
    return (zeros_like(grad),)


@operator("binomial(Tensor count, Tensor prob, Generator? generator=None) -> Tensor", _R,
          method=False)
def binomial(count, prob, generator=None):
    """Binomial counts of ``count`` trials with success probability ``prob`` (broadcast,
    float32/float64), as ``torch.binomial``; like torch it does not validate the values
    (``count < 1`` or ``prob <= 0`` give 0, ``prob >= 1`` gives ``count``). Not
    differentiable.

    Raises:
        ValueError: an integer ``count`` or ``prob``.

    Example:
        >>> import ember
        >>> ember.binomial(ember.tensor([5.0, 5.0]), ember.tensor([0.0, 1.0])).tolist()
        [0.0, 5.0]
    """
    for name, t in (("count", count), ("prob", prob)):
        if not t._dtype.is_floating_point:
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: "
                             f"{_TN[t._dtype.name]}")
    dtype = _same_dtype(count, prob)
    shape = broadcast_shapes(count._shape, prob._shape)
    _require("binomial_cpu", dtype)
    return Spec(shape, dtype)
