"""The digits CNN example with tiny settings: it learns, and eval() changes the outputs while
no_grad() does not."""

from __future__ import annotations

import pytest

import ember
from ember.examples import digits


@pytest.fixture(scope="module")
def run():
    return digits.main(["--epochs", "3", "--channels", "4", "--quiet"])


def test_loss_decreases_and_beats_chance(run):
    losses = run["losses"]
    assert len(losses) == 3 and losses[-1] < losses[0]
    assert run["test_acc"] > 0.5 and run["train_acc"] > 0.5


def test_eval_changes_outputs_no_grad_does_not(run):
    assert run["train_vs_eval"] > 1e-3
    assert run["eval_vs_eval_nograd"] == 0.0
    assert run["train_vs_train_nograd"] == 0.0
    assert run["eval_requires_grad"] is True and run["nograd_requires_grad"] is False


def test_data_split_shapes():
    (xtr, ytr), (xte, yte) = digits.load_digits()
    assert tuple(xtr.shape[1:]) == (1, 8, 8) and xtr.dtype == ember.float32
    assert len(ytr) + len(yte) == 1797 and len(yte) == 449
    assert 0.0 <= xtr.min().item() and xtr.max().item() <= 1.0


def test_model_shapes_and_modes():
    m = digits.DigitsCNN(4)
    out = m(ember.zeros(3, 1, 8, 8))
    assert tuple(out.shape) == (3, 10)
    bn = m.features[1]
    before = bn.num_batches_tracked.item()
    with ember.no_grad():  # no_grad does not stop BatchNorm's running statistics in train mode
        m(ember.randn(5, 1, 8, 8))
    assert bn.num_batches_tracked.item() == before + 1
    m.eval()
    assert not any(mod.training for mod in m.modules())
