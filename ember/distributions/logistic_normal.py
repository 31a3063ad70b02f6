"""``LogisticNormal``: a normal vector pushed onto the simplex by stick breaking."""

from __future__ import annotations

from ember.distributions import constraints
from ember.distributions.normal import Normal
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.transforms import StickBreakingTransform

__all__ = ["LogisticNormal"]


class LogisticNormal(TransformedDistribution):
    """``StickBreakingTransform()(X)`` with ``X ~ Normal(loc, scale)`` over the last dim: a
    K-vector of parameters gives points of the (K+1)-simplex.

    >>> from ember.distributions import LogisticNormal
    >>> LogisticNormal(ember.zeros(3), ember.ones(3)).event_shape
    ember.Size([4])
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:
            base_dist = base_dist.expand([1])
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogisticNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self):
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.base_dist.scale


