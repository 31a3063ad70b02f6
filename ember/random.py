"""``ember.random``: the ``torch.random`` namespace (re-exports of the default generator's
seeding and state functions, which live in ``ember.tensor.random``)."""

from __future__ import annotations

from ember.tensor.random import (
    default_generator,
    fork_rng,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)

__all__ = ["default_generator", "fork_rng", "get_rng_state", "initial_seed", "manual_seed",
           "seed", "set_rng_state"]
