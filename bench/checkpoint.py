"""Activation checkpointing on the char-GPT: peak activation memory against step time.

For the GPT of ``ember.examples.gpt`` (d_model 128, 4 heads, context 64, batch 16, dropout 0.1)
at depths 4, 8 and 16, one training step (forward, cross-entropy, backward; no optimizer) is
run with
- no checkpointing,
- every block checkpointed (non-reentrant),
- ``checkpoint_sequential`` over the blocks with round(sqrt(N)) segments (the last segment
  runs plainly, as in torch), with dropout masks replayed from bits (ember's default) and
  drawn again (torch's way; ``set_checkpoint_replay_draws(False)``),
- the planner (``ember.utils.checkpoint.plan``) at half the blocks' plain peak,
and the table gives the peak of ``memory_allocated()`` above the step's start (parameters and
the batch; gradients start as None, as after ``zero_grad()``), read from ember's caching
allocator, and the step time (CPU time of this process, median of ``--repeat``; the modes run
interleaved, one step each per round, after a warm-up round). For the planner
the table also gives its budget, its predicted peak of the blocks alone, and the measured peak
of the blocks alone (the chain of blocks with a sum loss, which is what it plans for).

With ``--torch``, a torch copy of the GPT runs plain and under torch's own
``checkpoint_sequential`` (one thread, interleaved, medians) for the same comparison.

    python bench/checkpoint.py [--depths 4 8 16] [--repeat 5] [--torch]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import gc  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
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
    set_checkpoint_replay_draws,
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
    if mode == "sqrt(N), masks redrawn":  # torch's way: dropout draws again in recomputation
        with set_checkpoint_replay_draws(False):
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


MODES = ("none", "every block", "sqrt(N) segments", "sqrt(N), masks redrawn", "planner")


def bench_depth(depth: int, repeat: int) -> list[dict]:
    """The four modes at one depth, interleaved: each repetition runs every mode once, so
    drift in the machine's speed hits all modes alike; times are medians."""
    ember.manual_seed(0)
    cfg = GPTConfig(vocab_size=VOCAB, block_size=CONTEXT, n_layer=depth, n_head=4, n_embd=128,
                    dropout=0.1)
    model = GPT(cfg)
    idx = ember.randint(0, VOCAB, (BATCH, CONTEXT))
    targets = ember.randint(0, VOCAB, (BATCH, CONTEXT))
    with ember.no_grad():
        sample = model.drop(model.wte(idx) + model.wpe(ember.arange(CONTEXT)))
    plain_chain = chain_peak(model, sample)
    p = plan(list(model.blocks), sample, plain_chain // 2)
    apply_plan(model, p)
    planner = {"budget": p.memory_budget, "predicted": p.predicted_peak,
               "chain": chain_peak(model, sample), "chosen": len(p.checkpointed)}
    remove_plan(model)
    runs: dict[str, list] = {m: [] for m in MODES}
    for r in range(repeat + 1):  # the first round warms up
        for mode in MODES:
            if mode == "planner":
                apply_plan(model, p)
            result = step(model, idx, targets, mode)
            if mode == "planner":
                remove_plan(model)
            if r:
                runs[mode].append(result)
    return [{"depth": depth, "mode": mode, "peak": max(r[0] for r in runs[mode]),
             "seconds": statistics.median(r[1] for r in runs[mode]),
             **(planner if mode == "planner" else {})} for mode in MODES]


def torch_reference(depth: int, repeat: int) -> tuple[float, float]:
    """Median CPU seconds of torch's own step, plain and with ``checkpoint_sequential`` over
    round(sqrt(N)) segments, for a torch copy of the same GPT (one thread, interleaved)."""
    import torch
    import torch.utils.checkpoint as tcp

    torch.set_num_threads(1)
    torch.manual_seed(0)
    nn, c = torch.nn, 128

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(c), nn.LayerNorm(c)
            self.c_attn, self.a_proj = nn.Linear(c, 3 * c), nn.Linear(c, c)
            self.c_fc, self.m_proj = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
            self.drop = nn.Dropout(0.1)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = (t.view(B, T, 4, C // 4).transpose(1, 2)  # (B, T, C) -> (B, nh, T, hs)
                       for t in self.c_attn(self.ln_1(x)).split(C, dim=2))
            y = torch.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=0.1,
                                                                 is_causal=True)
            x = x + self.drop(self.a_proj(y.transpose(1, 2).reshape(B, T, C)))
            h = torch.nn.functional.gelu(self.c_fc(self.ln_2(x)), approximate="tanh")
            return x + self.drop(self.m_proj(h))

    wte, wpe, drop = nn.Embedding(VOCAB, c), nn.Embedding(CONTEXT, c), nn.Dropout(0.1)
    blocks, ln_f, head = [Block() for _ in range(depth)], nn.LayerNorm(c), nn.Linear(c, VOCAB)
    idx = torch.randint(0, VOCAB, (BATCH, CONTEXT))
    targets = torch.randint(0, VOCAB, (BATCH, CONTEXT))

    def one(segments: int) -> float:
        t0 = time.process_time()
        x = drop(wte(idx) + wpe(torch.arange(CONTEXT)))
        if segments:
            x = tcp.checkpoint_sequential(blocks, segments, x, use_reentrant=False)
        else:
            for b in blocks:
                x = b(x)
        torch.nn.functional.cross_entropy(head(ln_f(x)).view(-1, VOCAB),
                                          targets.view(-1)).backward()
        return time.process_time() - t0

    times: dict[int, list] = {0: [], round(math.sqrt(depth)): []}
    for r in range(repeat + 1):
        for segments in times:
            t = one(segments)
            if r:
                times[segments].append(t)
    plain, ckpt = (statistics.median(v) for v in times.values())
    return plain, ckpt


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
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--torch", action="store_true",
                    help="also time torch's checkpoint_sequential on a torch copy of the GPT")
    args = ap.parse_args()
    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()},"
          f" batch {BATCH}, context {CONTEXT}, d_model 128, 4 heads, dropout 0.1")
    rows = []
    for d in args.depths:
        rows += bench_depth(d, args.repeat)
    print(table(rows))
    if args.torch:
        print("\n| depth | torch step ms | torch sqrt(N) segments ms | vs none |\n|---:|---:|---:|---:|")
        for d in args.depths:
            plain, ckpt = torch_reference(d, args.repeat)
            print(f"| {d} | {plain * 1e3:.0f} | {ckpt * 1e3:.0f} | {ckpt / plain:.2f}x |")


if __name__ == "__main__":
    main()
