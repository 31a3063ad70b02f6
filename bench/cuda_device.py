"""The ``cuda`` device: ember on CuPy vs torch eager, same process, same GPU.

- allocator round trip: ``empty`` + free of a 4 KiB tensor (and the raw ``malloc``/``free``
  of ember's caching allocator), µs each, against ``torch.empty`` on cuda;
- the char-GPT training step of ``bench/train.py`` (4 layers, d 128, context 64, vocabulary
  103, batch 16, AdamW) on the GPU;
- a larger GPT: 12 layers, 12 heads, d 768, context 1024, batch 8, vocabulary 50304 (GPT-2
  small's shape), float32, AdamW (``--large-batch``/``--large-t`` shrink it).

torch runs a mirror of ``ember.examples.gpt.GPT`` holding the same weights; the first losses
are printed side by side as a check that both run the same model. Steps are timed between
device synchronizations, ember and torch interleaved; each figure is the median of the
repetitions' mean step times. ``--profile`` prints the top functions of one ember step.

    python bench/cuda_device.py [--repeat 3] [--steps 5] [--only small|large|alloc]
                                [--json results.json] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ember  # noqa: E402
from ember.examples.gpt import GPT, GPTConfig  # noqa: E402


# -- torch mirror of ember.examples.gpt.GPT ---------------------------------------------------
class TorchBlock(torch.nn.Module):
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
        k = k.view(B, T, self.nh, C // self.nh).transpose(1, 2)
        v = v.view(B, T, self.nh, C // self.nh).transpose(1, 2)
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attn.c_proj(y.transpose(1, 2).reshape(B, T, C))
        h = torch.nn.functional.gelu(self.mlp.c_fc(self.ln_2(x)), approximate="tanh")
        return x + self.mlp.c_proj(h)


class TorchGPT(torch.nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        nn = torch.nn
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.blocks = nn.ModuleList([TorchBlock(cfg.n_embd, cfg.n_head)
                                     for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = torch.nn.functional.cross_entropy(logits.view(B * T, -1), targets.reshape(-1))
        return logits, loss


def pair(cfg: GPTConfig):
    """The ember GPT on cuda and a torch mirror on cuda with the same weights."""
    ember.manual_seed(0)
    e = GPT(cfg)
    t = TorchGPT(cfg)
    t.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in e.state_dict().items()})
    return e.to("cuda"), t.to("cuda")


def sync_all():
    ember.cuda.synchronize()
    torch.cuda.synchronize()


def gpt_steps(cfg: GPTConfig, batch: int):
    em, tm = pair(cfg)
    rng = np.random.default_rng(0)
    idx = rng.integers(0, cfg.vocab_size, (batch, cfg.block_size + 1))
    ex, ey = ember.tensor(idx[:, :-1]).cuda(), ember.tensor(idx[:, 1:]).cuda()
    tx, ty = torch.tensor(idx[:, :-1]).cuda(), torch.tensor(idx[:, 1:]).cuda()
    eo = ember.optim.AdamW(em.parameters(), lr=1e-4)
    to = torch.optim.AdamW(tm.parameters(), lr=1e-4)

    def e_step():
        loss = em(ex, ey)[1]
        loss.backward()
        eo.step()
        eo.zero_grad()
        return loss

    def t_step():
        loss = tm(tx, ty)[1]
        loss.backward()
        to.step()
        to.zero_grad()
        return loss
    return e_step, t_step


def time_steps(step, n: int) -> float:
    sync_all()
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    sync_all()
    return (time.perf_counter() - t0) / n


def compare(name: str, cfg: GPTConfig, batch: int, repeat: int, steps: int, warmup: int,
            profile: bool) -> dict:
    e_step, t_step = gpt_steps(cfg, batch)
    el, tl = [], []
    for _ in range(warmup):
        el.append(float(e_step().item()))
        tl.append(float(t_step().item()))
    print(f"[{name}] first losses ember {el} torch {tl}", flush=True)
    et, tt = [], []
    for _ in range(repeat):
        et.append(time_steps(e_step, steps))
        tt.append(time_steps(t_step, steps))
    e, t = float(np.median(et)), float(np.median(tt))
    out = {"ember_ms": e * 1e3, "torch_ms": t * 1e3, "ratio": e / t,
           "ember_runs_ms": [v * 1e3 for v in et], "torch_runs_ms": [v * 1e3 for v in tt],
           "first_losses_ember": el, "first_losses_torch": tl, "batch": batch,
           "config": cfg.__dict__ if hasattr(cfg, "__dict__") else str(cfg)}
    print(f"[{name}] ember {e * 1e3:.2f} ms  torch {t * 1e3:.2f} ms  ratio {e / t:.2f}x "
          f"(runs ember {[round(v * 1e3, 1) for v in et]}, torch "
          f"{[round(v * 1e3, 1) for v in tt]})", flush=True)
    if profile:
        prof = cProfile.Profile()
        sync_all()
        prof.enable()
        e_step()
        sync_all()
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(18)
    return out


def alloc_roundtrip(n: int = 20000) -> dict:
    from ember.memory.allocator import allocator_for
    alloc = allocator_for("cuda")
    for _ in range(100):
        alloc.free(alloc.malloc(4096))
    t0 = time.perf_counter()
    for _ in range(n):
        alloc.free(alloc.malloc(4096))
    raw = (time.perf_counter() - t0) / n
    for _ in range(100):
        ember.empty(1024, device="cuda")
    t0 = time.perf_counter()
    for _ in range(n):
        ember.empty(1024, device="cuda")
    emb = (time.perf_counter() - t0) / n
    for _ in range(100):
        torch.empty(1024, device="cuda")
    t0 = time.perf_counter()
    for _ in range(n):
        torch.empty(1024, device="cuda")
    tor = (time.perf_counter() - t0) / n
    out = {"allocator_malloc_free_us": raw * 1e6, "ember_empty_us": emb * 1e6,
           "torch_empty_us": tor * 1e6}
    print(f"[alloc] ember allocator malloc+free {raw * 1e6:.2f} us; ember.empty(1024) "
          f"{emb * 1e6:.2f} us; torch.empty(1024) {tor * 1e6:.2f} us", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--only", choices=["small", "large", "alloc"], default=None)
    ap.add_argument("--large-batch", type=int, default=8)
    ap.add_argument("--large-t", type=int, default=1024)
    ap.add_argument("--json", default=None)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        smi = "?"
    import cupy
    results = {"device": smi, "ember_device_name": ember.cuda.get_device_name(),
               "torch": torch.__version__, "cupy": cupy.__version__,
               "numpy": np.__version__, "python": sys.version.split()[0]}
    print(f"[device] {results}", flush=True)
    if args.only in (None, "alloc"):
        results["alloc"] = alloc_roundtrip()
    if args.only in (None, "small"):
        cfg = GPTConfig(vocab_size=103, block_size=64, n_layer=4, n_head=4, n_embd=128)
        results["char_gpt"] = compare("char-gpt", cfg, 16, args.repeat, args.steps, 2,
                                      args.profile)
    if args.only in (None, "large"):
        cfg = GPTConfig(vocab_size=50304, block_size=args.large_t, n_layer=12, n_head=12,
                        n_embd=768)
        results["gpt_large"] = compare("gpt-12x768", cfg, args.large_batch, args.repeat,
                                       max(2, args.steps // 2), 1, args.profile)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
