"""``Chi2``: the sum of ``df`` squared standard normals, a ``Gamma(df / 2, 1 / 2)``."""

from __future__ import annotations

import ember
from ember.distributions import constraints
from ember.distributions.gamma import Gamma

__all__ = ["Chi2"]


class Chi2(Gamma):
    """The chi-squared distribution with ``df`` degrees of freedom, as
    ``torch.distributions.Chi2``.

    >>> from ember.distributions import Chi2
    >>> Chi2(ember.tensor([3.0])).mean
    tensor([3.])
    """

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(ember.Size(batch_shape), new)

    @property
    def df(self):
        return self.concentration * 2
