"""``ember.nn.Parameter``: re-exported from ember.tensor.parameter (checkpoints need it below
``ember.nn``)."""

from ember.tensor.parameter import Parameter

__all__ = ["Parameter"]
