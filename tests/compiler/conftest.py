"""Shared fixtures of the compiler tests."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="module")
def isolated_kernel_cache(tmp_path_factory):
    """``EMBER_CACHE_DIR`` pointed at a fresh directory for one test module (restored after),
    so the C backend's disk cache starts cold and leaves nothing behind."""
    old = os.environ.get("EMBER_CACHE_DIR")
    os.environ["EMBER_CACHE_DIR"] = str(tmp_path_factory.mktemp("ember_cache"))
    yield
    if old is None:
        os.environ.pop("EMBER_CACHE_DIR", None)
    else:
        os.environ["EMBER_CACHE_DIR"] = old


@pytest.fixture
def block_pair():
    """``make(cfg, batch) -> (eager, eager_x, other, x, go)``: a GPT ``Block`` that has run
    forward and backward eagerly on the leaf ``eager_x`` with incoming gradient ``go`` (its
    parameters and ``eager_x`` hold the gradients), and an identical block ``other`` for the
    caller to run on the leaf ``x``, equal to ``eager_x``."""
    import ember
    from ember.examples.gpt import Block

    def make(cfg, batch):
        ember.manual_seed(0)
        eager, other = Block(cfg), Block(cfg)
        other.load_state_dict(eager.state_dict())
        shape = (batch, cfg.block_size, cfg.n_embd)
        x, go = ember.randn(*shape), ember.randn(*shape)
        eager_x = x.clone().requires_grad_()
        (eager(eager_x) * go).sum().backward()
        return eager, eager_x, other, x.clone().requires_grad_(), go

    return make
