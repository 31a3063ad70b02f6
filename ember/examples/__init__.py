"""Runnable training examples: ``python -m ember.examples.charlm`` and ``ember.examples.digits``."""
