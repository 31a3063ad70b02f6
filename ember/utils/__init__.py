"""L8: utilities over the lower layers: ``dispatch`` looks inside the dispatcher, ``data`` loads
datasets in batches."""

from ember.utils import data, dispatch

__all__ = ["data", "dispatch"]
