"""L8: utilities over the lower layers; ``ember.utils.dispatch`` looks inside the dispatcher."""

from ember.utils import dispatch

__all__ = ["dispatch"]
