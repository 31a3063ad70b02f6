"""Activation checkpointing on the char-GPT: peak activation memory against step time.

For the GPT of ``ember.examples.gpt`` (d_model 128, 4 heads, context 64, batch 16, dropout 0.1)
at depths 4, 8 and 16, one training step (forward, cross-entropy, backward; no optimizer) is
run with
- no checkpointing,
- every block checkpointed (non-reentrant),
- ``checkpoint_sequential`` over the blocks with round(sqrt(N)) segments (the last segment
  runs plainly, as in torch),
- the planner (``ember.utils.checkpoint.plan``) at half the blocks' plain peak,
and the table gives the peak of ``memory_allocated()`` above the step's start (parameters and
the batch; gradients start as None, as after ``zero_grad()``), read from ember's caching
allocator, and the step time (CPU time of this process, best of ``--repeat``). For the planner
the table also gives its budget, its predicted peak of the blocks alone, and the measured peak
of the blocks alone (the chain of blocks with a sum loss, which is what it plans for).

    python bench/checkpoint.py [--depths 4 8 16] [--repeat 3]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import gc  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402

import ember  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember import memory  # noqa: E402
from ember.examples.gpt import GPT, GPTConfig  # noqa: E402
from ember.utils.checkpoint import (  # noqa: E402
    apply_plan,
    checkpoint,
    checkpoint_sequential,
    plan,
    remove_plan,
)

MiB = 1 << 20
BATCH, CONTEXT, VOCAB = 16, 64, 96


def run_blocks(model: GPT, x, mode: str):
    """The blocks of ``model`` on ``x`` under a checkpointing mode."""
    blocks = list(model.blocks)
    if mode == "every block":
        for b in blocks:
            x = checkpoint(b, x, use_reentrant=False)
        return x
    if mode == "sqrt(N) segments":
        return checkpoint_sequential(blocks, round(math.sqrt(len(blocks))), x,
                                     use_reentrant=False)
    for b in blocks:  # "none", and "planner" (the plan is applied to the blocks themselves)
        x = b(x)
    return x


def loss_of(model: GPT, idx, targets, mode: str):
    """GPT.forward with the block loop replaced by ``run_blocks``."""
    B, T = idx.shape
    x = model.drop(model.wte(idx) + model.wpe(ember.arange(T)))  # (B, T, C)
    x = run_blocks(model, x, mode)
    logits = model.lm_head(model.ln_f(x))  # (B, T, C) -> (B, T, V)
    return F.cross_entropy(logits.view(B * T, -1), targets.reshape(B * T))


def step(model: GPT, idx, targets, mode: str) -> tuple[int, float]:
    """(peak bytes above the start, CPU seconds) of one forward + backward."""
    model.zero_grad()
    gc.collect()
    base = memory.memory_allocated()
    memory.reset_peak_memory_stats()
    t0 = time.process_time()
    loss_of(model, idx, targets, mode).backward()
    return memory.max_memory_allocated() - base, time.process_time() - t0


def chain_peak(model: GPT, x) -> int:
    """Peak above the start of the blocks alone with a sum loss: what ``plan`` predicts."""
    model.zero_grad()
    gc.collect()
    base = memory.memory_allocated()
    memory.reset_peak_memory_stats()
    run_blocks(model, x, "none").sum().backward()
    return memory.max_memory_allocated() - base


def bench_depth(depth: int, repeat: int) -> list[dict]:
    ember.manual_seed(0)
    cfg = GPTConfig(vocab_size=VOCAB, block_size=CONTEXT, n_layer=depth, n_head=4, n_embd=128,
                    dropout=0.1)
    model = GPT(cfg)
    idx = ember.randint(0, VOCAB, (BATCH, CONTEXT))
    targets = ember.randint(0, VOCAB, (BATCH, CONTEXT))
    with ember.no_grad():
        sample = model.drop(model.wte(idx) + model.wpe(ember.arange(CONTEXT)))
    rows = []
    plain_chain = None
    for mode in ("none", "every block", "sqrt(N) segments", "planner"):
        extra = {}
        if mode == "planner":
            p = plan(list(model.blocks), sample, plain_chain // 2)
            apply_plan(model, p)
            extra = {"budget": p.memory_budget, "predicted": p.predicted_peak,
                     "chain": chain_peak(model, sample), "chosen": len(p.checkpointed)}
        elif mode == "none":
            plain_chain = chain_peak(model, sample)
        step(model, idx, targets, mode)  # warm-up
        runs = [step(model, idx, targets, mode) for _ in range(repeat)]
        if mode == "planner":
            remove_plan(model)
        rows.append({"depth": depth, "mode": mode, "peak": max(r[0] for r in runs),
                     "seconds": min(r[1] for r in runs), **extra})
    return rows


def table(rows: list[dict]) -> str:
    out = ["| depth | checkpointing | peak MiB | vs none | step ms | vs none | planner "
           "(budget / predicted / measured blocks-only MiB) |",
           "|---:|---|---:|---:|---:|---:|---|"]
    plain = {}
    for r in rows:
        if r["mode"] == "none":
            plain[r["depth"]] = r
        base = plain[r["depth"]]
        note = ""
        if "budget" in r:
            ok = "meets" if r["chain"] <= r["budget"] else "MISSES"
            note = (f"{r['budget'] / MiB:.1f} / {r['predicted'] / MiB:.1f} / "
                    f"{r['chain'] / MiB:.1f} ({r['chosen']} of {r['depth']} blocks; {ok} "
                    "budget)")
        out.append(f"| {r['depth']} | {r['mode']} | {r['peak'] / MiB:.1f} | "
                   f"{r['peak'] / base['peak']:.2f}x | {r['seconds'] * 1e3:.0f} | "
                   f"{r['seconds'] / base['seconds']:.2f}x | {note} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--depths", type=int, nargs="+", default=[4, 8, 16])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()},"
          f" batch {BATCH}, context {CONTEXT}, d_model 128, 4 heads, dropout 0.1")
    rows = []
    for d in args.depths:
        rows += bench_depth(d, args.repeat)
    print(table(rows))


if __name__ == "__main__":
    main()
