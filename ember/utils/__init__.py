"""L8: utilities over the lower layers: ``dispatch`` looks inside the dispatcher, ``data`` loads
datasets in batches, ``checkpoint`` trades compute for activation memory."""

from ember.utils import checkpoint, data, dispatch

__all__ = ["checkpoint", "data", "dispatch"]
