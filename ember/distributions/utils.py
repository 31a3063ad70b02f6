"""Helpers shared by the distributions: broadcasting parameters, logits <-> probabilities,
clamping probabilities away from 0 and 1, and ``lazy_property``."""

from __future__ import annotations

import numbers
from functools import update_wrapper

import ember
from ember.nn.functional import binary_cross_entropy_with_logits as _bce_with_logits

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs",
           "probs_to_logits", "tril_matrix_to_vec", "vec_to_tril_matrix"]

euler_constant = 0.57721566490153286060


def broadcast_all(*values):
    """Broadcasts numbers and tensors to one shape (numbers become tensors of the default
    dtype, or of the tensors' dtype and device when there are tensors), as torch's.

    >>> from ember.distributions.utils import broadcast_all
    >>> a, b = broadcast_all(ember.zeros(2, 1), 1.0)
    >>> a.shape, b.shape
    (ember.Size([2, 1]), ember.Size([2, 1]))
    """
    if not all(isinstance(v, (ember.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "ember.Tensor or objects implementing __torch_function__.")
    if not all(isinstance(v, ember.Tensor) for v in values):
        options = {"dtype": ember.get_default_dtype()}
        for value in values:
            if isinstance(value, ember.Tensor):
                options = {"dtype": value.dtype, "device": value.device}
                break
        values = [v if isinstance(v, ember.Tensor) else ember.tensor(v, **options)
                  for v in values]
    return ember.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    return ember.randn(shape, dtype=dtype, device=device)


def _sum_rightmost(value, dim: int):
    """Sums the ``dim`` rightmost dimensions of ``value``."""
    if dim == 0:
        return value
    required_shape = value.shape[:value.dim() - dim] + (-1,)
    return value.reshape(required_shape).sum(-1)


def logits_to_probs(logits, is_binary: bool = False):
    """Probabilities from logits: a sigmoid when ``is_binary``, else a softmax over the last
    dimension.

    >>> from ember.distributions.utils import logits_to_probs
    >>> logits_to_probs(ember.tensor([0.0, 0.0]))
    tensor([0.5000, 0.5000])
    """
    if is_binary:
        return ember.sigmoid(logits)
    return ember.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Clamps probabilities into ``[eps, 1 - eps]`` of their dtype.

    >>> from ember.distributions.utils import clamp_probs
    >>> clamp_probs(ember.tensor([0.0, 1.0])) == ember.tensor([0.0, 1.0])
    tensor([False, False])
    """
    eps = ember.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary: bool = False):
    """Logits from probabilities (clamped first): ``log p - log1p(-p)`` when ``is_binary``,
    else ``log p``.

    >>> from ember.distributions.utils import probs_to_logits
    >>> probs_to_logits(ember.tensor([0.5]), is_binary=True)
    tensor([0.])
    """
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return ember.log(ps_clamped) - ember.log1p(-ps_clamped)
    return ember.log(ps_clamped)


def binary_logits_log_prob(logits, value):
    """``log p(value)`` of a Bernoulli with ``logits`` (a negated BCE, stable for large
    logits)."""
    return -_bce_with_logits(logits, value, reduction="none")


class lazy_property:  # noqa: N801  (torch's name)
    """A property computed once per instance on first access and then stored as an attribute.

    Accessing it on the class returns a ``_lazy_property_and_property`` so that
    ``Distribution.__init__`` can tell lazy parameters (``probs``/``logits``) apart.

    >>> from ember.distributions.utils import lazy_property
    >>> class A:
    ...     @lazy_property
    ...     def x(self):
    ...         return 3
    >>> A().x
    3
    """

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with ember.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):  # noqa: N801
    """A lazy_property seen from the class: also a property, so that introspection works."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def tril_matrix_to_vec(mat, diag: int = 0):
    """The lower-triangular entries (from diagonal ``diag``) of the last two dims, row-major.

    >>> from ember.distributions.utils import tril_matrix_to_vec
    >>> tril_matrix_to_vec(ember.tensor([[1.0, 0.0], [2.0, 3.0]]))
    tensor([1., 2., 3.])
    """
    n = mat.shape[-1]
    if mat.shape[-2] != n:
        raise ValueError("tril_matrix_to_vec: the last two dimensions must be square; "
                         f"got {tuple(mat.shape)}")
    if not -n <= diag < n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    arange = ember.arange(n, device=mat.device)
    tril_mask = arange < arange.view(-1, 1) + (diag + 1)
    return mat[..., tril_mask]


def vec_to_tril_matrix(vec, diag: int = 0):
    """The inverse of ``tril_matrix_to_vec``: a lower-triangular matrix from its entries.

    >>> from ember.distributions.utils import vec_to_tril_matrix
    >>> vec_to_tril_matrix(ember.tensor([1.0, 2.0, 3.0]))
    tensor([[1., 0.],
            [2., 3.]])
    """
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag)
                            * (diag + 1)) ** 0.5) / 2
    eps = ember.finfo(vec.dtype).eps
    if not round(n) - n < eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be "
                         "expressed as the lower triangular part of a square D x D matrix.")
    n = round(n.item()) if isinstance(n, ember.Tensor) else round(n)
    mat = vec.new_zeros(vec.shape[:-1] + ember.Size((n, n)))
    arange = ember.arange(n, device=vec.device)
    tril_mask = arange < arange.view(-1, 1) + (diag + 1)
    mat[..., tril_mask] = vec
    return mat
