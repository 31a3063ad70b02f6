"""Public test helpers, like ``torch.testing``: ``assert_close`` and ``make_tensor``."""

from ember.testing._comparison import assert_close, default_tolerances
from ember.testing._creation import make_tensor

__all__ = ["assert_close", "default_tolerances", "make_tensor"]
