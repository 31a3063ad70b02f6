"""``Distribution``: the base every family derives from (torch.distributions' contract).

A distribution has a ``batch_shape`` (independent, differently parameterised copies) and an
``event_shape`` (one draw); ``sample(sample_shape)`` returns
``sample_shape + batch_shape + event_shape``. With argument validation on (the default, as
torch's ``__debug__``) parameters are checked against ``arg_constraints`` at construction
and values against ``support`` in ``log_prob``/``cdf``, with torch's messages.
"""

from __future__ import annotations

import warnings

import ember
from ember.distributions import constraints
from ember.distributions.utils import lazy_property

__all__ = ["Distribution"]


def _format_value(value) -> str:
    # torch formats 0-d tensors through .item() in its messages and reprs
    if isinstance(value, ember.Tensor) and value.dim() == 0:
        return str(value.item())
    return str(value)


class Distribution:
    """The abstract base class of probability distributions.

    Args:
        batch_shape: the shape over which parameters are batched.
        event_shape: the shape of one sample (without batching).
        validate_args: check parameters and sample values; ``None`` takes the default
            (``Distribution.set_default_validate_args``).

    >>> from ember.distributions import Normal
    >>> d = Normal(ember.zeros(3), 1.0)
    >>> d.batch_shape, d.event_shape
    (ember.Size([3]), ember.Size([]))
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Sets whether validation is on by default (torch's default is ``__debug__``).

        >>> from ember.distributions import Distribution
        >>> Distribution.set_default_validate_args(True)
        """
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(),
                 validate_args: bool | None = None):
        self._batch_shape = ember.Size(batch_shape)
        self._event_shape = ember.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_parameters()
        super().__init__()

    def _check_parameters(self) -> None:
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            arg_constraints = {}
            warnings.warn(f"{type(self)} does not define `arg_constraints`. Please set "
                          "`arg_constraints = {}` or initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=3)
        for param, constraint in arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue
            if param not in self.__dict__ and isinstance(getattr(type(self), param),
                                                         lazy_property):
                continue  # skip checking lazily-constructed args
            value = getattr(self, param)
            valid = constraint.check(value)
            if not bool(valid.all()):
                raise ValueError(
                    f"Expected parameter {param} ({type(value).__name__} of shape "
                    f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                    f"constraint {constraint!r}, but found invalid values:\n"
                    f"{_format_value(value)}")

    def expand(self, batch_shape, _instance=None):
        """A new distribution with ``batch_shape`` (parameters expanded, no copies).

        >>> from ember.distributions import Normal
        >>> Normal(0.0, 1.0).expand([2, 3]).batch_shape
        ember.Size([2, 3])
        """
        raise NotImplementedError

    @property
    def batch_shape(self):
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self):
        """The shape of a single sample (without batching)."""
        return self._event_shape

    @property
    def arg_constraints(self) -> dict:
        """Parameter name -> the constraint it must satisfy."""
        raise NotImplementedError

    @property
    def support(self):
        """The constraint on this distribution's values."""
        raise NotImplementedError

    @property
    def mean(self):
        """The mean of the distribution."""
        raise NotImplementedError

    @property
    def mode(self):
        """The mode of the distribution."""
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        """The variance of the distribution."""
        raise NotImplementedError

    @property
    def stddev(self):
        """The standard deviation: ``variance.sqrt()``."""
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        """Draws ``sample_shape`` samples (without gradients): shape
        ``sample_shape + batch_shape + event_shape``."""
        with ember.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        """Draws reparameterized samples, differentiable in the parameters."""
        raise NotImplementedError

    def sample_n(self, n: int):
        """``sample((n,))`` (deprecated in torch)."""
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning,
                      stacklevel=2)
        return self.sample(ember.Size((n,)))

    def log_prob(self, value):
        """The log of the density/mass at ``value``."""
        raise NotImplementedError

    def cdf(self, value):
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError

    def icdf(self, value):
        """The inverse cumulative distribution function at ``value``."""
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True):
        """All values of a discrete distribution's support, along a new leading dimension."""
        raise NotImplementedError

    def entropy(self):
        """The entropy, batched over ``batch_shape``."""
        raise NotImplementedError

    def perplexity(self):
        """``exp(entropy)``."""
        return ember.exp(self.entropy())

    def _extended_shape(self, sample_shape=()):
        """``sample_shape + batch_shape + event_shape``."""
        if not isinstance(sample_shape, ember.Size):
            sample_shape = ember.Size(sample_shape)
        return ember.Size(sample_shape + self._batch_shape + self._event_shape)

    def _validate_sample(self, value) -> None:
        """Checks ``value``'s type, broadcastability and support, with torch's messages."""
        if not isinstance(value, ember.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.size()) - len(self._event_shape)
        if value.size()[event_dim_start:] != self._event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{value.size()} vs {self._event_shape}.")
        actual_shape = value.size()
        expected_shape = self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{actual_shape} vs {expected_shape}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{type(self)} does not define `support` to enable sample "
                          "validation. Please initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=3)
            return
        assert support is not None
        valid = support.check(value)
        if not bool(valid.all()):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape "
                f"{tuple(value.shape)}) to be within the support ({support!r}) of the "
                f"distribution {self!r}, but found invalid values:\n{_format_value(value)}")

    def _get_checked_instance(self, cls, _instance=None):
        """A bare instance for ``expand``: ``_instance`` or a new ``cls`` (a subclass that
        overrides ``__init__`` must pass ``_instance`` itself)."""
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self) -> str:
        param_names = [k for k in self.arg_constraints if k in self.__dict__]
        args_string = ", ".join(
            f"{p}: "
            f"{_format_value(self.__dict__[p]) if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"  # noqa: E501
            for p in param_names)
        return f"{self.__class__.__name__}({args_string})"
