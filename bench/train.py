"""Training steps, ember vs torch eager, same models, same data, one process.

Three models, one full training step each (forward, loss, backward, optimizer step, zero_grad):

- MLP 784-512-512-10 with ReLU, batch 128, SGD (momentum 0.9);
- a 2-conv CNN on 28x28 (conv 3x3 1->32, ReLU, max-pool 2, conv 3x3 32->64, ReLU, max-pool 2,
  linear 3136->10), batch 64, SGD (momentum 0.9);
- the char-GPT of ``ember.examples.gpt`` (4 layers, 4 heads, d_model 128, context 64,
  vocabulary 103, tanh-GELU, tied head), batch 16, AdamW; torch runs a mirror of it loaded
  with the same weights (the first losses are compared as a check that both run the same
  model).

Both libraries run single-threaded (``torch.set_num_threads(1)``; NumPy's BLAS through the
environment variables set below, before NumPy is imported). Repetitions are interleaved
(ember, torch, ember, torch, ...) and each figure is the median over repetitions of the mean
step time in one repetition; wall time and this process's CPU time are both reported (on a
shared, loaded machine the CPU time is the steadier figure).

    python bench/train.py [--repeat 5] [--steps 5] [--only gpt] [--profile gpt]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import cProfile  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import pstats  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import ember  # noqa: E402
from ember.examples.gpt import GPT, GPTConfig  # noqa: E402

torch.set_num_threads(1)
VOCAB = 103


# -- models, built the same way for both libraries -----------------------------------------
def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def cnn(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(64 * 7 * 7, 10))


class TorchBlock(torch.nn.Module):
    """torch mirror of ``ember.examples.gpt.Block`` (same parameter names)."""

    def __init__(self, c: int, nh: int) -> None:
        super().__init__()
        nn = torch.nn
        self.nh = nh
        self.ln_1, self.ln_2 = nn.LayerNorm(c), nn.LayerNorm(c)
        self.attn = nn.Module()
        self.attn.c_attn, self.attn.c_proj = nn.Linear(c, 3 * c), nn.Linear(c, c)
        self.mlp = nn.Module()
        self.mlp.c_fc, self.mlp.c_proj = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.attn.c_attn(self.ln_1(x)).split(C, dim=2)
        q = q.view(B, T, self.nh, C // self.nh).transpose(1, 2)  # (B, T, C) -> (B, nh, T, hs)
        k = k.view(B, T, self.nh, C // self.nh).transpose(1, 2)  # (B, T, C) -> (B, nh, T, hs)
        v = v.view(B, T, self.nh, C // self.nh).transpose(1, 2)  # (B, T, C) -> (B, nh, T, hs)
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attn.c_proj(y.transpose(1, 2).reshape(B, T, C))  # (B,nh,T,hs)->(B,T,C)
        h = torch.nn.functional.gelu(self.mlp.c_fc(self.ln_2(x)), approximate="tanh")
        return x + self.mlp.c_proj(h)


class TorchGPT(torch.nn.Module):
    """torch mirror of ``ember.examples.gpt.GPT`` (loads its state_dict)."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        nn = torch.nn
        self.wte, self.wpe = nn.Embedding(cfg.vocab_size, cfg.n_embd), nn.Embedding(
            cfg.block_size, cfg.n_embd)
        self.blocks = nn.ModuleList([TorchBlock(cfg.n_embd, cfg.n_head)
                                     for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = torch.nn.functional.cross_entropy(logits.view(B * T, -1), targets.reshape(-1))
        return logits, loss


GPT_CFG = GPTConfig(vocab_size=VOCAB, block_size=64, n_layer=4, n_head=4, n_embd=128)


def gpt_pair():
    """The ember GPT and a torch mirror holding the same weights."""
    ember.manual_seed(0)
    e = GPT(GPT_CFG)
    t = TorchGPT(GPT_CFG)
    sd = {k: torch.from_numpy(v.numpy().copy()) for k, v in e.state_dict().items()}
    t.load_state_dict(sd)
    return e, t


# -- one training step per library -----------------------------------------------------------
def classifier_step(lib, model, x, y, opt):
    loss_fn = lib.nn.CrossEntropyLoss()

    def step():
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    return step


def gpt_step(model, x, y, opt):
    def step():
        loss = model(x, y)[1]
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    return step


def data(shape_x, n_classes, batch, rng):
    x = rng.standard_normal((batch, *shape_x)).astype(np.float32)
    y = rng.integers(0, n_classes, batch)
    return x, y


def steps_for(name: str) -> dict:
    """``{"ember": step_fn, "torch": step_fn}`` for one benchmark model."""
    rng = np.random.default_rng(0)
    if name == "gpt":
        em, tm = gpt_pair()
        idx = rng.integers(0, VOCAB, (16, 65))
        ex, ey = ember.tensor(idx[:, :-1]), ember.tensor(idx[:, 1:])
        tx, ty = torch.tensor(idx[:, :-1]), torch.tensor(idx[:, 1:])
        return {"ember": gpt_step(em, ex, ey, ember.optim.AdamW(em.parameters(), lr=3e-4)),
                "torch": gpt_step(tm, tx, ty, torch.optim.AdamW(tm.parameters(), lr=3e-4))}
    build, shape, batch = {"mlp": (mlp, (784,), 128), "cnn": (cnn, (1, 28, 28), 64)}[name]
    x, y = data(shape, 10, batch, rng)
    out = {}
    for lib, tensor in ((ember, ember.tensor), (torch, torch.tensor)):
        lib.manual_seed(0)
        model = build(lib)
        opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        out[lib.__name__] = classifier_step(lib, model, tensor(x), tensor(y), opt)
    return out


def timed(step, n: int) -> tuple[float, float]:
    """Mean (wall, CPU) seconds per step over ``n`` steps."""
    w0, c0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        step()
    return (time.perf_counter() - w0) / n, (time.process_time() - c0) / n


def bench(name: str, repeat: int, n: int) -> dict:
    fns = steps_for(name)
    first = {lib: fn().item() for lib, fn in fns.items()}  # also the warm-up
    for fn in fns.values():
        fn()
    samples = {lib: [] for lib in fns}
    for _ in range(repeat):
        for lib, fn in fns.items():
            samples[lib].append(timed(fn, n))
    med = {lib: tuple(statistics.median(s[i] for s in v) * 1e3 for i in (0, 1))
           for lib, v in samples.items()}
    return {"first_loss": first, "ms": med}


def profile(name: str, n: int, top: int) -> None:
    """cProfile ``n`` ember steps of one model, timed in CPU time (steadier under load)."""
    step = steps_for(name)["ember"]
    step()
    prof = cProfile.Profile(time.process_time)
    prof.enable()
    for _ in range(n):
        step()
    prof.disable()
    print(f"\ncProfile of {n} ember {name} steps (CPU time; by own time, top {top}):")
    pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(top)
    sys.stdout.flush()


LABELS = {"mlp": "MLP 784-512-512-10, batch 128, SGD",
          "cnn": "CNN 2x conv 3x3 (32, 64) + pool, 28x28, batch 64, SGD",
          "gpt": "char-GPT 4L/4H/128d, ctx 64, batch 16, AdamW"}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--steps", type=int, default=5, help="steps per timed repetition")
    p.add_argument("--only", choices=sorted(LABELS), action="append")
    p.add_argument("--profile", choices=sorted(LABELS), action="append", default=[],
                   help="also cProfile this model's ember step")
    args = p.parse_args()
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}; Python {platform.python_version()}, "
          f"NumPy {np.__version__}, torch {torch.__version__}; 1 thread each; "
          f"{args.repeat} interleaved repetitions x {args.steps} steps, medians")
    print("| model | ember ms/step | torch ms/step | ember/torch | ember CPU ms | "
          "torch CPU ms | CPU ratio | first loss ember / torch (same weights) |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for name in args.only or ["mlp", "cnn", "gpt"]:
        r = bench(name, args.repeat, args.steps)
        (ew, ec), (tw, tc) = r["ms"]["ember"], r["ms"]["torch"]
        fe, ft = r["first_loss"]["ember"], r["first_loss"]["torch"]
        same = "—"  # MLP/CNN: each library's own random init, so no loss comparison
        if name == "gpt":
            same = f"{fe:.4f} / {ft:.4f}" + ("" if math.isclose(fe, ft, rel_tol=1e-4)
                                             else " MISMATCH")
        print(f"| {LABELS[name]} | {ew:.1f} | {tw:.1f} | {ew / tw:.2f}x | {ec:.1f} | "
              f"{tc:.1f} | {ec / tc:.2f}x | {same} |", flush=True)
    for name in args.profile:
        profile(name, args.steps, 25)


if __name__ == "__main__":
    main()
