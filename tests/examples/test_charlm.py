"""The char-level GPT example with tiny settings: it learns, its checkpoint round-trips exactly,
``--resume`` / ``--eval-only`` reproduce the saved model, and gradient accumulation over N
micro-batches equals one step on the whole batch."""

from __future__ import annotations

import math
import os
import re

import numpy as np
import pytest

import ember
from ember.examples import charlm
from ember.examples.gpt import GPT, GPTConfig

TINY = ["--batch-size", "4", "--block-size", "16", "--layers", "1", "--heads", "2",
        "--d-model", "32", "--eval-iters", "2", "--sample-chars", "12", "--quiet",
        "--warmup", "1", "--lr", "1e-2"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("charlm") / "ckpt.pt"
    return charlm.main(TINY + ["--steps", "8", "--out", str(out)])


def test_loss_decreases_below_uniform(run):
    first, last = run["val"][0][1], run["val"][-1][1]
    assert last < first
    assert run["final_val"] < math.log(103) - 0.5
    assert np.mean(run["train"][-3:]) < np.mean(run["train"][:3])
    assert len(run["train"]) == 8 and [s for s, _ in run["val"]][-1] == 8


def test_sample_is_text_from_the_vocabulary(run):
    text = run["sample"]
    assert text.startswith("The ") and len(text) == 4 + 12


def test_checkpoint_round_trip_gives_identical_outputs(run):
    model, fresh = run["model"], run["reloaded"]
    assert run["reloaded_val"] == run["final_val"]
    x = ember.randint(0, 103, (2, 16), generator=ember.Generator().manual_seed(0))
    model.eval(), fresh.eval()
    with ember.no_grad():
        a, b = model(x)[0], fresh(x)[0]
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    sd_a, sd_b = model.state_dict(), fresh.state_dict()
    assert list(sd_a) == list(sd_b)
    for k in sd_a:
        np.testing.assert_array_equal(sd_a[k].numpy(), sd_b[k].numpy())
    # weight tying survives the reload: one Parameter behind both names
    assert fresh.lm_head.weight is fresh.wte.weight


def test_eval_only_resume_reproduces_the_checkpoint(run, tmp_path):
    again = charlm.main(TINY + ["--eval-only", "--resume", run["checkpoint"],
                                "--out", str(tmp_path / "again.pt")])
    assert again["train"] == [] and again["final_val"] == run["final_val"]
    assert again["sample"] == run["sample"]


def test_resume_continues_from_the_saved_step(run, tmp_path):
    more = charlm.main(TINY + ["--resume", run["checkpoint"], "--steps", "2",
                               "--out", str(tmp_path / "more.pt")])
    assert [s for s, _ in more["val"]][-1] == 10
    assert ember.load(str(tmp_path / "more.pt"))["step"] == 10


def test_get_batch_targets_are_inputs_shifted_by_one():
    data = ember.arange(100)
    x, y = charlm.get_batch(data, 3, 5, ember.Generator().manual_seed(0))
    assert tuple(x.shape) == tuple(y.shape) == (3, 5)
    np.testing.assert_array_equal(y[:, :-1].numpy(), x[:, 1:].numpy())
    np.testing.assert_array_equal(y.numpy() - x.numpy(), np.ones((3, 5)))


def test_lr_schedule_warms_up_then_decays_to_a_tenth():
    lrs = [charlm.lr_at(s, 100, 1.0, 10) for s in range(100)]
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(lrs[9:], lrs[10:]))
    assert charlm.lr_at(100, 100, 1.0, 10) == pytest.approx(0.1)


def _twin_models():
    cfg = GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16)
    ember.manual_seed(3)
    a = GPT(cfg).double()
    b = GPT(cfg).double()
    b.load_state_dict(a.state_dict())
    return a, b


class GradRecorder:
    """Wraps an optimizer and keeps a copy of every gradient seen at ``step()``."""

    def __init__(self, opt) -> None:
        self.opt, self.grads = opt, None

    def step(self) -> None:
        self.grads = [p.grad.numpy().copy() for g in self.opt.param_groups for p in g["params"]]
        self.opt.step()

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.opt.zero_grad(set_to_none=set_to_none)


@pytest.mark.parametrize("n", [2, 4])
def test_grad_accumulation_equals_one_big_batch_step(n):
    big, acc = _twin_models()
    gen = ember.Generator().manual_seed(7)
    x = ember.randint(0, 11, (8, 8), generator=gen)
    y = ember.randint(0, 11, (8, 8), generator=gen)
    opt_big = GradRecorder(charlm.make_optimizer(big, 1e-2))
    opt_acc = GradRecorder(charlm.make_optimizer(acc, 1e-2))
    charlm.train_step(big, opt_big, iter([(x, y)]).__next__, 1)
    micro = iter(list(zip(x.chunk(n), y.chunk(n))))
    charlm.train_step(acc, opt_acc, micro.__next__, n)
    assert len(opt_big.grads) == len(opt_acc.grads) > 0
    for g_big, g_acc in zip(opt_big.grads, opt_acc.grads):
        np.testing.assert_allclose(g_acc, g_big, rtol=1e-10, atol=1e-14)
    assert all(p.grad is None for p in acc.parameters())  # zero_grad(set_to_none=True)
    moved = 0.0
    ref = dict(_twin_models()[0].named_parameters())
    for (name, p), q in zip(big.named_parameters(), acc.parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-10,
                                   atol=1e-12, err_msg=name)
        moved = max(moved, (p - ref[name]).abs().max().item())
    assert moved > 1e-3  # the step did change the parameters


def test_grad_accumulation_without_scaling_differs():
    """The loss / N matters: N unscaled backward calls give N times the gradient."""
    a, b = _twin_models()
    x = ember.randint(0, 11, (4, 8), generator=ember.Generator().manual_seed(1))
    a(x, x)[1].backward()
    for xb in x.chunk(2):
        b(xb, xb)[1].backward()
    ga, gb = a.wte.weight.grad.numpy(), b.wte.weight.grad.numpy()
    np.testing.assert_allclose(gb, 2 * ga, rtol=1e-10, atol=1e-14)


CKPT = TINY + ["--layers", "3", "--dropout", "0.1", "--steps", "3", "--eval-iters", "1",
               "--sample-chars", "4"]


def _block_budget_mib(checkpointed_fraction: float) -> float:
    """A ``--memory-budget`` between the planner's all-checkpointed and plain peaks."""
    from ember.utils.checkpoint import plan
    cfg = GPTConfig(vocab_size=103, block_size=16, n_layer=3, n_head=2, n_embd=32, dropout=0.1)
    model = GPT(cfg)
    p = plan(list(model.blocks), ember.randn(4, 16, 32), 1 << 40)
    lowest = p.peak_for(range(3))
    return (lowest + checkpointed_fraction * (p.plain_peak - lowest)) / charlm.MB


@pytest.mark.parametrize("flags", [["--checkpoint-activations"],
                                   ["--memory-budget", "mid"]], ids=["every-block", "planner"])
def test_activation_checkpointing_trains_exactly_as_without(flags, tmp_path):
    """Dropout on: the recomputation replays the masks, so losses and weights are identical."""
    if flags[-1] == "mid":
        flags = ["--memory-budget", repr(_block_budget_mib(0.5))]
    plain = charlm.main(CKPT + ["--out", str(tmp_path / "plain.pt")])
    ckpt = charlm.main(CKPT + flags + ["--out", str(tmp_path / "ckpt.pt")])
    assert ckpt["train"] == plain["train"] and ckpt["final_val"] == plain["final_val"]
    wrapped = [type(b.__dict__.get("forward")).__name__ for b in ckpt["model"].blocks]
    assert "_CheckpointedForward" in wrapped
    if flags[0] == "--memory-budget":
        assert wrapped.count("_CheckpointedForward") < 3
    for k, v in plain["model"].state_dict().items():
        np.testing.assert_array_equal(ckpt["model"].state_dict()[k].numpy(), v.numpy())


def test_memory_budget_below_the_smallest_peak_is_refused_in_megabytes(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        charlm.main(CKPT + ["--memory-budget", "0.001", "--out", str(tmp_path / "x.pt")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "--memory-budget: 0.001 MB is below the smallest achievable peak" in err
    assert err.endswith(" MB with every block checkpointed")
    assert not (tmp_path / "x.pt").exists()


def test_memory_budget_is_reported_in_megabytes(tmp_path, capsys):
    charlm.main(CKPT + ["--memory-budget", "250", "--out", str(tmp_path / "x.pt")])
    out = capsys.readouterr().out
    assert re.search(r"^activation checkpointing: blocks \[\] of 3, predicted peak [\d.]+ MB "
                     r"\(budget 250 MB; [\d.]+ MB with none checkpointed\)$", out, re.M)
    assert "MiB" not in out and "bytes" not in out


def test_checkpoint_is_saved_every_n_steps_and_at_the_end(tmp_path, monkeypatch):
    saved, real = [], charlm.save_checkpoint

    def spy(path, model, opt, corpus, args, st):
        real(path, model, opt, corpus, args, st)
        saved.append((ember.load(path)["step"], sorted(os.listdir(tmp_path))))

    monkeypatch.setattr(charlm, "save_checkpoint", spy)
    charlm.main(TINY + ["--steps", "7", "--save-every", "3", "--out", str(tmp_path / "c.pt")])
    # written in place, atomically: no temporary file is left next to it
    assert saved == [(3, ["c.pt"]), (6, ["c.pt"]), (7, ["c.pt"])]


def test_time_budget_sizes_the_run_and_reports_it(tmp_path, capsys):
    out = charlm.main(TINY + ["--time-budget", "0.5", "--out", str(tmp_path / "t.pt")])
    text = capsys.readouterr().out
    assert re.search(r"^time budget 0.5 s: about \d+ steps at \d+\.\d\d s a step$", text, re.M)
    assert len(out["train"]) == out["step"] >= 5 and out["val"][-1][0] == out["step"]
    ckpt = ember.load(str(tmp_path / "t.pt"))
    assert ckpt["step"] == ckpt["total"] == out["step"]


@pytest.mark.parametrize("report", [False, True])
def test_memory_table_only_with_memory_report_and_the_run_ends_with_the_sample(
        report, tmp_path, capsys):
    out = charlm.main(TINY + ["--steps", "2", "--out", str(tmp_path / "m.pt")]
                      + ["--memory-report"] * report)
    text = capsys.readouterr().out
    assert ("memory summary" in text) is report
    rule = "-" * 60
    end = f"sample (temperature 0.8):\n{rule}\n{out['sample']}\n{rule}\n"
    assert text.endswith(end)
    assert text[:-len(end)].splitlines()[-1].startswith("held-out loss: ")
