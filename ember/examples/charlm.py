"""Train a character-level GPT on Python's own documentation: ``python -m ember.examples.charlm``.

The corpus is the text of the standard library's ``pydoc_data.topics`` (it ships with every
Python), split 90/10 into training and held-out text over a character vocabulary. By default
the run lasts about two minutes on the CPU: the number of steps is fixed after a few timed
steps so that the warmup + cosine learning-rate schedule fits the time budget. It shows a tqdm
progress bar (loss, tokens/s), held-out loss at intervals, a generated sample, a checkpoint
saved with ``ember.save`` and reloaded with ``ember.load`` (the reloaded model must give the
same held-out loss) and ``ember.memory.memory_summary()``.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass

import ember
import ember.nn.utils
from ember.examples._common import limit_blas_threads
from ember.examples.gpt import GPT, GPTConfig

UNIGRAM_NOTE = "a model that ignores context (unigram frequencies) scores {:.3f}"


# -- data -------------------------------------------------------------------------------------
def load_text() -> str:
    """The documentation topics of ``pydoc_data`` joined in key order (about 0.5M characters)."""
    from pydoc_data.topics import topics
    return "\n".join(topics[k] for k in sorted(topics))


@dataclass(frozen=True)
class CharCorpus:
    """A character vocabulary and the text encoded as int64 tensors, split train/held-out."""

    chars: str
    train: ember.Tensor
    val: ember.Tensor

    @classmethod
    def from_text(cls, text: str, val_fraction: float = 0.1,
                  chars: str | None = None) -> CharCorpus:
        chars = chars if chars is not None else "".join(sorted(set(text)))
        stoi = {c: i for i, c in enumerate(chars)}
        data = ember.tensor([stoi[c] for c in text], dtype=ember.int64)
        n = int(len(text) * (1.0 - val_fraction))
        return cls(chars, data[:n], data[n:])

    def decode(self, ids: list[int]) -> str:
        return "".join(self.chars[i] for i in ids)

    def encode(self, s: str) -> ember.Tensor:
        return ember.tensor([self.chars.index(c) for c in s if c in self.chars],
                            dtype=ember.int64)

    def unigram_loss(self) -> float:
        """Cross-entropy of the held-out text under the training text's character frequencies."""
        counts = ember.bincount(self.train, minlength=len(self.chars)).double() + 1.0
        logp = (counts / counts.sum()).log()
        return -logp[self.val].mean().item()


def get_batch(data: ember.Tensor, batch_size: int, block_size: int,
              generator: ember.Generator | None = None) -> tuple[ember.Tensor, ember.Tensor]:
    """Random windows of the text: inputs ``(B, T)`` and the next characters ``(B, T)``."""
    starts = ember.randint(0, len(data) - block_size, (batch_size,), generator=generator)
    idx = starts[:, None] + ember.arange(block_size + 1)  # (B, 1) + (T+1,) -> (B, T+1)
    chunk = data[idx]
    return chunk[:, :-1], chunk[:, 1:]  # (B, T+1) -> (B, T), (B, T)


@ember.no_grad()
def evaluate(model: GPT, data: ember.Tensor, batch_size: int, iters: int,
             seed: int = 1234) -> float:
    """Mean loss over ``iters`` held-out batches, always the same ones (a fixed generator)."""
    was_training = model.training
    model.eval()
    gen = ember.Generator().manual_seed(seed)
    total = 0.0
    for _ in range(iters):
        x, y = get_batch(data, batch_size, model.cfg.block_size, gen)
        total += model(x, y)[1].item()
    model.train(was_training)
    return total / iters


# -- training ---------------------------------------------------------------------------------
def lr_at(step: int, total: int, base: float, warmup: int) -> float:
    """Linear warmup to ``base``, then cosine decay to ``base / 10`` at ``total``."""
    if step < warmup:
        return base * (step + 1) / warmup
    frac = min(1.0, (step - warmup) / max(1, total - warmup))
    return base * (0.1 + 0.45 * (1.0 + math.cos(math.pi * frac)))


def train_step(model: GPT, opt: ember.optim.Optimizer, next_batch, grad_accum: int) -> float:
    """One optimizer step over ``grad_accum`` micro-batches (loss / N, N backward calls).

    ``next_batch()`` returns ``(x, y)``. The gradients of the N scaled losses add up in
    ``.grad`` to the gradient of the mean loss over all N micro-batches, so (for a model
    without batch-dependent layers) this equals one step on the concatenated batch.
    """
    total = 0.0
    for _ in range(grad_accum):
        x, y = next_batch()
        loss = model(x, y)[1] / grad_accum
        loss.backward()
        total += loss.item()
    ember.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return total


def make_optimizer(model: GPT, lr: float, weight_decay: float = 0.1) -> ember.optim.AdamW:
    """AdamW with weight decay on matrices only (not on biases, norms or positions)."""
    seen, decay, no_decay = set(), [], []
    for name, p in model.named_parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        (decay if p.dim() >= 2 and "wpe" not in name else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    return ember.optim.AdamW(groups, lr=lr, betas=(0.9, 0.99))


class Schedule:
    """How many steps to run: fixed (``--steps``), or sized to fit a time budget.

    With a time budget the first ``probe`` steps are timed, then after every step the total is
    re-estimated from the average wall time per step so far (evaluations included), so the
    learning-rate schedule and the progress bar know their length and the run ends near the
    budget even when the machine's load changes.
    """

    def __init__(self, steps: int | None, seconds: float, start: int, probe: int = 4) -> None:
        self.fixed = steps is not None
        self.total = steps
        self.seconds, self.start, self.probe = seconds, start, probe
        self.t0 = time.perf_counter()

    def observe(self, step: int) -> bool:
        """Call after each step; True when the total changed."""
        done = step + 1 - self.start
        if self.fixed or done < self.probe:
            return False
        elapsed = time.perf_counter() - self.t0
        left = max(0, int((self.seconds - elapsed) / (elapsed / done)))
        total, self.total = self.total, step + 1 + left
        return total != self.total


# -- the run ----------------------------------------------------------------------------------
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m ember.examples.charlm", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=None,
                   help="optimizer steps (default: as many as fit in --time seconds)")
    p.add_argument("--time", type=float, default=120.0, help="time budget without --steps")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--block-size", type=int, default=64, help="context length")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--grad-accum", type=int, default=1, help="micro-batches per step")
    p.add_argument("--eval-interval", type=int, default=None,
                   help="steps between held-out evaluations (default: --steps / 5, or 50)")
    p.add_argument("--eval-iters", type=int, default=8, help="held-out batches per evaluation")
    p.add_argument("--eval-only", action="store_true",
                   help="evaluate and sample only (usually with --resume)")
    p.add_argument("--resume", metavar="PATH", default=None, help="checkpoint to start from")
    p.add_argument("--out", metavar="PATH",
                   default=os.path.join(tempfile.gettempdir(), "ember-charlm.pt"),
                   help="where the checkpoint is written")
    p.add_argument("--sample-chars", type=int, default=300)
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--device", default="cpu", choices=["cpu"], help="cpu only for now")
    p.add_argument("--threads", type=int, default=1,
                   help="BLAS threads (these matrices are small: extra threads mostly spin)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--checkpoint-activations", action="store_true",
                   help="recompute every block's activations in backward instead of keeping them")
    p.add_argument("--memory-budget", type=float, default=None, metavar="MB",
                   help="checkpoint just the blocks needed for their activations to fit in MB")
    return p.parse_args(argv)


def build(args: argparse.Namespace, corpus: CharCorpus, ckpt: dict | None):
    """Model and optimizer: fresh from ``args``, or from a checkpoint's config and states."""
    if ckpt is not None:
        cfg = GPTConfig(**ckpt["config"])
    else:
        cfg = GPTConfig(vocab_size=len(corpus.chars), block_size=args.block_size,
                        n_layer=args.layers, n_head=args.heads, n_embd=args.d_model,
                        dropout=args.dropout)
    model = GPT(cfg)
    opt = make_optimizer(model, args.lr)
    if ckpt is not None:
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
    return model, opt


def configure_checkpointing(args: argparse.Namespace, model: GPT, corpus: CharCorpus) -> None:
    """``--checkpoint-activations``: every block; ``--memory-budget MB``: the planner's blocks."""
    from ember.utils.checkpoint import apply_plan, checkpoint_modules, plan
    blocks = list(model.blocks)
    if args.memory_budget is not None:
        gen = ember.Generator().manual_seed(args.seed)
        x, _ = get_batch(corpus.train, args.batch_size, model.cfg.block_size, gen)
        # the blocks' input, (B, T) -> (B, T, C); its dropout draw must not shift training's
        with ember.no_grad(), ember.random.fork_rng():
            h = model.drop(model.wte(x) + model.wpe(ember.arange(x.shape[1])))
        p = plan(blocks, h, int(args.memory_budget * 2**20))
        apply_plan(model, p)
        print(f"activation checkpointing: blocks {list(p.checkpointed)} of {len(blocks)}, "
              f"predicted peak {p.predicted_peak / 2**20:.1f} MiB (budget "
              f"{args.memory_budget:.1f} MiB, none checkpointed {p.plain_peak / 2**20:.1f} MiB)")
    elif args.checkpoint_activations:
        checkpoint_modules(blocks)
        print(f"activation checkpointing: all {len(blocks)} blocks")


def save_checkpoint(path: str, model: GPT, opt, corpus: CharCorpus, step: int) -> None:
    ember.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                "config": dataclasses.asdict(model.cfg), "chars": corpus.chars, "step": step},
               path)


def sample(model: GPT, corpus: CharCorpus, n: int, temperature: float, seed: int) -> str:
    """``n`` characters generated after the prompt ``"The "``."""
    prompt = corpus.encode("The ")[None, :]  # (T,) -> (1, T)
    gen = ember.Generator().manual_seed(seed)
    model.eval()
    out = model.generate(prompt, n, temperature=temperature, generator=gen)
    model.train()
    return corpus.decode(out[0].tolist())


def progress(total: int | None, quiet: bool):
    """A tqdm bar (the ``examples`` extra), or a silent stand-in."""
    if quiet:
        return _NoBar()
    from tqdm import tqdm
    return tqdm(total=total, unit="step", dynamic_ncols=True, file=sys.stdout)


class _NoBar:
    total = None

    def update(self, n: int = 1) -> None:
        pass

    def set_postfix(self, **kw) -> None:
        pass

    def refresh(self) -> None:
        pass

    def write(self, s: str) -> None:
        print(s)

    def close(self) -> None:
        pass


def train(args, model: GPT, opt, corpus: CharCorpus, start: int) -> dict:
    """The training loop; returns the training losses and held-out evaluations."""
    sched = Schedule(args.steps if args.steps is None else start + args.steps, args.time, start)
    gen = ember.Generator().manual_seed(args.seed + start)
    tokens = args.batch_size * model.cfg.block_size * args.grad_accum
    bar = progress(None if sched.total is None else sched.total - start, args.quiet)
    history = {"train": [], "val": []}
    interval = args.eval_interval or (max(1, args.steps // 5) if args.steps else 50)
    step, t_last, rate = start, time.perf_counter(), None

    def next_batch():
        return get_batch(corpus.train, args.batch_size, model.cfg.block_size, gen)

    while sched.total is None or step < sched.total:
        for g in opt.param_groups:
            g["lr"] = lr_at(step, sched.total or 10**9, args.lr, args.warmup)
        loss = train_step(model, opt, next_batch, args.grad_accum)
        history["train"].append(loss)
        now = time.perf_counter()
        rate = tokens / (now - t_last) if rate is None else 0.8 * rate + 0.2 * tokens / (
            now - t_last)
        bar.set_postfix(loss=f"{loss:.3f}", tok_s=f"{rate:.0f}")
        t_last = now
        bar.update(1)
        if sched.observe(step):
            bar.total = sched.total - start
            bar.refresh()
        step += 1
        if (step - start) % interval == 0 or step == sched.total:
            val = evaluate(model, corpus.val, args.batch_size, args.eval_iters)
            history["val"].append((step, val))
            bar.write(f"step {step:5d}: train loss {loss:.3f}, held-out loss {val:.3f}")
    bar.close()
    history["step"] = step
    return history


def main(argv: list[str] | None = None) -> dict:
    """Run the example; returns a summary (losses, sample, checkpoint path) for tests."""
    args = parse_args(argv)
    with limit_blas_threads(args.threads):
        return run(args)


def run(args: argparse.Namespace) -> dict:
    """Train (unless ``--eval-only``), evaluate, sample, round-trip a checkpoint."""
    ember.manual_seed(args.seed)
    ckpt = ember.load(args.resume) if args.resume else None
    corpus = CharCorpus.from_text(load_text(), chars=ckpt["chars"] if ckpt else None)
    model, opt = build(args, corpus, ckpt)
    configure_checkpointing(args, model, corpus)
    start = ckpt["step"] if ckpt else 0
    n_params = sum(p.numel() for p in model.parameters())
    print(f"corpus: {len(corpus.train) + len(corpus.val):,} characters of pydoc_data.topics, "
          f"vocabulary {len(corpus.chars)}; model: {model.cfg.n_layer} layers, "
          f"{model.cfg.n_head} heads, d_model {model.cfg.n_embd}, context "
          f"{model.cfg.block_size}, {n_params:,} parameters")
    print(UNIGRAM_NOTE.format(corpus.unigram_loss()) + f"; uniform guessing scores "
          f"{math.log(len(corpus.chars)):.3f}")
    summary = {"unigram": corpus.unigram_loss(), "train": [], "val": []}
    if not args.eval_only:
        summary.update(train(args, model, opt, corpus, start))
        start = summary["step"]
    last = summary["val"][-1] if summary["val"] else (None, None)
    val = last[1] if last[0] == start else evaluate(model, corpus.val, args.batch_size,
                                                    args.eval_iters)
    summary["final_val"] = val
    print(f"held-out loss: {val:.3f}")
    text = sample(model, corpus, args.sample_chars, args.temperature, args.seed)
    summary["sample"] = text
    print("sample (temperature {}):\n{}\n{}\n{}".format(args.temperature, "-" * 60, text,
                                                        "-" * 60))
    summary.update(checkpoint_round_trip(args, model, opt, corpus, start, val))
    print(ember.memory.memory_summary())
    return summary


def checkpoint_round_trip(args, model: GPT, opt, corpus: CharCorpus, step: int,
                          val: float) -> dict:
    """Save, load into a fresh model and check that the held-out loss is unchanged."""
    save_checkpoint(args.out, model, opt, corpus, step)
    ckpt = ember.load(args.out)
    fresh, _ = build(args, corpus, ckpt)
    again = evaluate(fresh, corpus.val, args.batch_size, args.eval_iters)
    same = again == val
    print(f"checkpoint: saved to {args.out} ({os.path.getsize(args.out):,} bytes), reloaded: "
          f"held-out loss {again:.6f} ({'identical' if same else 'DIFFERS from ' + str(val)})")
    if not same:
        raise RuntimeError(f"charlm: reloaded checkpoint gives held-out loss {again}, "
                           f"expected {val}")
    return {"checkpoint": args.out, "reloaded_val": again, "model": model, "reloaded": fresh}


if __name__ == "__main__":
    main()
