"""ember.compile against eager ember, torch eager and torch.compile, in one process.

1. A 10-op pointwise chain on (64, 64) float32.
2. The char-GPT forward of ``make demo`` (ember/examples/gpt.py) in eval mode, batch 16,
   T 64 (no_grad), with its compile time (first call) for ember and torch.
3. The cache-hit cost of a compiled ``x + y`` on two (4,) tensors, minus eager ``x + y``.

Every variant runs single-threaded; repetitions are interleaved (ember eager, ember compiled,
torch eager, torch.compile, again ...) and each figure is the median of the repetitions of
the best-of-N timing loop. torch.compile needs a C++ compiler; where it fails the row says so.

    python bench/compile.py [--repeat 5] [--no-torch-compile]
    python bench/compile.py --c-gelu [--repeat 7]    # C backend: GELU-tanh chain, 4M float32
    python bench/compile.py --train mlp|gpt [--repeat 5] [--no-torch-compile]

``--train`` times training steps (forward, backward, optimizer step, zero_grad): the MLP
784-512-512-10 batch 128 with SGD, or the char-GPT (4 layers, d 128, T 64, batch 16, dropout
0 as ``make demo``) with AdamW; ember eager, ember compiled (forward + backward compiled as
one training region, NumPy and C backends; the optimizer runs eagerly), the C backend with
``fused=True`` (one fused optimizer operator per step), torch eager with its default
optimizer and with ``fused=True``, and torch.compile of the model. Then ember's compile time of the step: a fresh process with an
empty ``EMBER_CACHE_DIR`` (cold), and a second fresh process with the same directory (the C
kernels come from the disk cache).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import ember  # noqa: E402


def chain(lib):
    def f(x, y):
        z = x + y
        z = z * 2.0
        z = z.exp()
        z = z - 1.5
        z = z.tanh()
        z = z * y
        z = z.sigmoid()
        z = z + 0.5
        z = z.relu()
        return z / 3.0
    return f


def per_call(fn, args, number: int, clock=time.perf_counter) -> float:
    """Best of 3 loops of ``number`` calls, in microseconds per call (``clock``: wall time, or
    ``time.process_time`` for the CPU time of this process on a shared machine)."""
    best = float("inf")
    for _ in range(3):
        t = clock()
        for _ in range(number):
            fn(*args)
        best = min(best, (clock() - t) / number)
    return best * 1e6


def timed_first_call(fn, args) -> tuple[float, object]:
    t = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t, out


def run(repeat: int, use_torch_compile: bool) -> None:
    import torch

    torch.set_num_threads(1)
    rows: dict[str, dict[str, list[float]]] = {}

    def add(row, col, value):
        rows.setdefault(row, {}).setdefault(col, []).append(value)

    # -- 1. pointwise chain --------------------------------------------------------------
    ex, ey = ember.randn(64, 64), ember.randn(64, 64)
    tx, ty = torch.from_numpy(ex.numpy().copy()), torch.from_numpy(ey.numpy().copy())
    e_chain = chain(ember)
    c_chain = ember.compile(chain(ember))
    t_chain = chain(torch)
    tc_chain = None
    notes = []
    compile_s = {}
    compile_s["ember chain"], out = timed_first_call(c_chain, (ex, ey))
    assert (out - e_chain(ex, ey)).abs().max().item() < 1e-5
    if use_torch_compile:
        try:
            tc_chain = torch.compile(chain(torch))
            compile_s["torch chain"], _ = timed_first_call(tc_chain, (tx, ty))
        except Exception as e:  # noqa: BLE001 - reported
            notes.append(f"torch.compile failed: {type(e).__name__}: {str(e)[:80]}")
            tc_chain = None

    # -- 2. GPT forward ------------------------------------------------------------------
    from ember.examples.gpt import GPT, GPTConfig

    ember.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=65)).eval()
    idx = ember.randint(0, 65, (16, 64))
    cmodel = ember.compile(model)
    with ember.no_grad():
        compile_s["ember gpt"], out = timed_first_call(cmodel, (idx,))
        err = (out[0] - model(idx)[0]).abs().max().item()
    assert err < 1e-4, err
    tgpt = tcgpt = None
    try:
        tgpt = _torch_gpt(model, torch)
        tidx = torch.from_numpy(idx.numpy().copy())
        if use_torch_compile:
            tcgpt = torch.compile(tgpt)
            with torch.no_grad():
                compile_s["torch gpt"], _ = timed_first_call(tcgpt, (tidx,))
    except Exception as e:  # noqa: BLE001 - reported
        notes.append(f"torch GPT: {type(e).__name__}: {str(e)[:80]}")
        tcgpt = None

    # -- 3. cache hit ----------------------------------------------------------------------
    sx, sy = ember.randn(4), ember.randn(4)
    c_add = ember.compile(lambda x, y: x + y)
    c_add(sx, sy)
    from ember.compiler.backends import compile_graph
    from ember.compiler.tracing import make_fx

    g_add = compile_graph(make_fx(lambda x, y: x + y)(sx, sy).graph, [sx, sy], "numpy")

    for _ in range(repeat):
        add("chain (64,64) µs", "ember eager", per_call(e_chain, (ex, ey), 300))
        add("chain (64,64) µs", "ember compiled", per_call(c_chain, (ex, ey), 300))
        add("chain (64,64) µs", "torch eager", per_call(t_chain, (tx, ty), 300))
        if tc_chain is not None:
            add("chain (64,64) µs", "torch.compile", per_call(tc_chain, (tx, ty), 300))
        with ember.no_grad():
            add("GPT fwd ms", "ember eager", per_call(model, (idx,), 2) / 1e3)
            add("GPT fwd ms", "ember compiled", per_call(cmodel, (idx,), 2) / 1e3)
        if tgpt is not None:
            with torch.no_grad():
                add("GPT fwd ms", "torch eager", per_call(tgpt, (tidx,), 2) / 1e3)
                if tcgpt is not None:
                    add("GPT fwd ms", "torch.compile", per_call(tcgpt, (tidx,), 2) / 1e3)
        add("x + y (4,) µs", "ember eager", per_call(lambda a, b: a + b, (sx, sy), 3000))
        add("x + y (4,) µs", "ember compiled", per_call(c_add, (sx, sy), 3000))
        add("x + y (4,) µs", "graph fn only", per_call(g_add, (sx, sy), 3000))

    cols = ["ember eager", "ember compiled", "graph fn only", "torch eager", "torch.compile"]
    print(f"CPU: {_cpu()}; Python {platform.python_version()}; torch {torch.__version__}")
    print("| benchmark | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for row, vals in rows.items():
        cells = [f"{statistics.median(vals[c]):.2f}" if c in vals else "-" for c in cols]
        print(f"| {row} | " + " | ".join(cells) + " |")
    chain_rows = rows["chain (64,64) µs"]
    print(f"chain speed-up compiled vs eager: "
          f"{statistics.median(chain_rows['ember eager']) / statistics.median(chain_rows['ember compiled']):.2f}x")
    gpt = rows["GPT fwd ms"]
    print(f"GPT speed-up compiled vs eager: "
          f"{statistics.median(gpt['ember eager']) / statistics.median(gpt['ember compiled']):.2f}x")
    hit = rows["x + y (4,) µs"]
    print(f"cache-hit overhead (compiled - graph fn only): "
          f"{statistics.median(hit['ember compiled']) - statistics.median(hit['graph fn only']):.2f} µs; "
          f"compiled - eager: "
          f"{statistics.median(hit['ember compiled']) - statistics.median(hit['ember eager']):.2f} µs")
    print("first-call compile times (s): " +
          ", ".join(f"{k} {v:.3f}" for k, v in compile_s.items()))
    for n in notes:
        print("note:", n)


def _torch_gpt(model, torch):
    """The same GPT in torch with ember's weights (torch.nn modules, same math)."""
    import math

    import torch.nn as tnn
    import torch.nn.functional as tf

    cfg = model.cfg

    class Block(tnn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = tnn.LayerNorm(cfg.n_embd), tnn.LayerNorm(cfg.n_embd)
            self.c_attn = tnn.Linear(cfg.n_embd, 3 * cfg.n_embd)
            self.attn_proj = tnn.Linear(cfg.n_embd, cfg.n_embd)
            self.c_fc = tnn.Linear(cfg.n_embd, 4 * cfg.n_embd)
            self.mlp_proj = tnn.Linear(4 * cfg.n_embd, cfg.n_embd)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, cfg.n_head, C // cfg.n_head).transpose(1, 2)
                       for t in (q, k, v))
            y = tf.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.attn_proj(y.transpose(1, 2).reshape(B, T, C))
            h = tf.gelu(self.c_fc(self.ln_2(x)), approximate=cfg.gelu)
            return x + self.mlp_proj(h)

    class TGPT(tnn.Module):
        def __init__(self):
            super().__init__()
            self.wte = tnn.Embedding(cfg.vocab_size, cfg.n_embd)
            self.wpe = tnn.Embedding(cfg.block_size, cfg.n_embd)
            self.blocks = tnn.ModuleList([Block() for _ in range(cfg.n_layer)])
            self.ln_f = tnn.LayerNorm(cfg.n_embd)

        def forward(self, idx):
            pos = torch.arange(idx.shape[1])
            x = self.wte(idx) + self.wpe(pos)
            for b in self.blocks:
                x = b(x)
            return self.ln_f(x) @ self.wte.weight.t()

    t = TGPT().eval()
    sd = {k: torch.from_numpy(v.detach().numpy().copy()) for k, v in model.state_dict().items()}
    with torch.no_grad():
        t.wte.weight.copy_(sd["wte.weight"])
        t.wpe.weight.copy_(sd["wpe.weight"])
        t.ln_f.weight.copy_(sd["ln_f.weight"])
        t.ln_f.bias.copy_(sd["ln_f.bias"])
        for i, b in enumerate(t.blocks):
            p = f"blocks.{i}."
            for mine, theirs in (("ln_1", "ln_1"), ("ln_2", "ln_2"), ("c_attn", "attn.c_attn"),
                                 ("attn_proj", "attn.c_proj"), ("c_fc", "mlp.c_fc"),
                                 ("mlp_proj", "mlp.c_proj")):
                getattr(b, mine).weight.copy_(sd[p + theirs + ".weight"])
                getattr(b, mine).bias.copy_(sd[p + theirs + ".bias"])
    _ = math
    return t


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip() + f", {os.cpu_count()} cores"
    except OSError:
        pass
    return platform.processor() or "unknown"


def gelu_chain(lib):
    import math

    def f(x):
        return 0.5 * x * (1.0 + (math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)).tanh())
    return f


def run_c_gelu(repeat: int, use_torch_compile: bool) -> None:
    """GELU-tanh chain on 4M float32: ember C backend vs ember eager vs torch eager vs
    torch.compile, one thread each, interleaved; medians of per-repetition best-of-3."""
    import torch

    torch.set_num_threads(1)
    ex = ember.randn(4 * 1024 * 1024)
    tx = torch.from_numpy(ex.numpy().copy())
    variants = {"ember eager": (gelu_chain(ember), ex),
                "ember C backend": (ember.compile(gelu_chain(ember), backend="c"), ex),
                "torch eager": (gelu_chain(torch), tx)}
    if use_torch_compile:
        variants["torch.compile"] = (torch.compile(gelu_chain(torch)), tx)
    first = {}
    for name, (fn, x) in variants.items():
        first[name], _ = timed_first_call(fn, (x,))
    got = variants["ember C backend"][0](ex)
    assert (got - gelu_chain(ember)(ex)).abs().max().item() < 1e-5
    times: dict[str, list[float]] = {}
    for _ in range(repeat):
        for name, (fn, x) in variants.items():
            times.setdefault(name, []).append(per_call(fn, (x,), 5) / 1e3)
    print(f"CPU: {_cpu()}; Python {platform.python_version()}; torch {torch.__version__}")
    print("| GELU-tanh chain, 4M float32, ms | " + " | ".join(times) + " |")
    print("|---|" + "---:|" * len(times))
    print("| median | " + " | ".join(f"{statistics.median(v):.2f}" for v in times.values()) + " |")
    print("first calls (s): " + ", ".join(f"{k} {v:.3f}" for k, v in first.items()))


# -- training steps ---------------------------------------------------------------------------
MLP_SIZES = (784, 512, 512, 10)
GPT_SIZES = dict(vocab_size=65, block_size=64, n_layer=4, n_head=4, n_embd=128, dropout=0.0)


def _ember_task(which: str):
    """(model, optimizer factory, loss function, batch) for ember."""
    import ember.nn as nn
    import ember.nn.functional as F

    ember.manual_seed(0)
    if which == "mlp":
        a, b, c, d = MLP_SIZES
        model = nn.Sequential(nn.Linear(a, b), nn.ReLU(), nn.Linear(b, c), nn.ReLU(),
                              nn.Linear(c, d))
        batch = (ember.randn(128, a), ember.randint(0, d, (128,)))

        def loss_fn(x, y):
            return F.cross_entropy(model(x), y)

        def opt(params, **kw):
            return ember.optim.SGD(params, lr=0.01, **kw)
    else:
        from ember.examples.gpt import GPT, GPTConfig

        model = GPT(GPTConfig(**GPT_SIZES))
        v, t = GPT_SIZES["vocab_size"], GPT_SIZES["block_size"]
        batch = (ember.randint(0, v, (16, t)), ember.randint(0, v, (16, t)))

        def loss_fn(x, y):
            return model(x, y)[1]

        def opt(params, **kw):
            return ember.optim.AdamW(params, lr=1e-3, **kw)
    model.train()
    return model, opt, loss_fn, batch


def _torch_task(which: str, model, torch):
    import torch.nn.functional as tf

    if which == "mlp":
        tm = torch.nn.Sequential(*[torch.nn.Linear(a, b) for a, b in
                                   zip(MLP_SIZES, MLP_SIZES[1:])])
        layers = [m for m in tm]
        tm = torch.nn.Sequential(layers[0], torch.nn.ReLU(), layers[1], torch.nn.ReLU(),
                                 layers[2])
        with torch.no_grad():
            for p, q in zip(tm.parameters(), model.parameters()):
                p.copy_(torch.from_numpy(q.detach().numpy().copy()))

        def loss_fn(m, x, y):
            return tf.cross_entropy(m(x), y)

        def opt(params, **kw):
            return torch.optim.SGD(params, lr=0.01, **kw)
    else:
        tm = _torch_gpt(model, torch)

        def loss_fn(m, x, y):
            logits = m(x)
            return tf.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1))

        def opt(params, **kw):
            return torch.optim.AdamW(params, lr=1e-3, **kw)
    tm.train()
    return tm, opt, loss_fn


def _step_fn(loss_fn, opt, batch):
    def step():
        loss = loss_fn(*batch)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss
    return step


def run_train(which: str, repeat: int, use_torch_compile: bool) -> None:
    """Training steps, one thread each side, interleaved; medians of best-of-3 per repetition,
    in CPU time (this machine is shared: wall time measures the other processes too)."""
    import torch

    torch.set_num_threads(1)
    variants = {}
    model, opt, loss_fn, batch = _ember_task(which)
    variants["ember eager"] = _step_fn(loss_fn, opt(model.parameters()), batch)
    for backend in ("numpy", "c"):
        m, o, lf, b = _ember_task(which)
        variants[f"ember compiled ({backend})"] = _step_fn(
            ember.compile(lf, backend=backend), o(m.parameters()), b)
    m, o, lf, b = _ember_task(which)
    variants["ember compiled (c) + fused opt"] = _step_fn(
        ember.compile(lf, backend="c"), o(m.parameters(), fused=True), b)
    tbatch = tuple(torch.from_numpy(t.numpy().copy()) for t in batch)
    tm, topt, tloss = _torch_task(which, model, torch)
    variants["torch eager"] = _step_fn(lambda x, y: tloss(tm, x, y), topt(tm.parameters()),
                                       tbatch)
    tm3, topt3, tloss3 = _torch_task(which, model, torch)
    variants["torch eager + fused opt"] = _step_fn(lambda x, y: tloss3(tm3, x, y),
                                                   topt3(tm3.parameters(), fused=True), tbatch)
    if use_torch_compile:
        tm2, topt2, tloss2 = _torch_task(which, model, torch)
        ctm = torch.compile(tm2)
        variants["torch.compile"] = _step_fn(lambda x, y: tloss2(ctm, x, y),
                                             topt2(tm2.parameters()), tbatch)
    first = {}
    for name, fn in variants.items():
        t0 = time.perf_counter()
        fn()
        fn()
        first[name] = time.perf_counter() - t0
    number = 5 if which == "mlp" else 2
    times: dict[str, list[float]] = {}
    for _ in range(repeat):
        for name, fn in variants.items():
            times.setdefault(name, []).append(per_call(fn, (), number, time.process_time) / 1e3)
    print(f"CPU: {_cpu()}; Python {platform.python_version()}; torch {torch.__version__}; "
          f"load average {os.getloadavg()[0]:.1f}; figures are CPU time of this process")
    title = ("MLP 784-512-512-10 b128 SGD step" if which == "mlp" else
             "char-GPT 4 layers d128 T64 b16 AdamW step")
    print(f"| {title}, ms | " + " | ".join(times) + " |")
    print("|---|" + "---:|" * len(times))
    print("| median | " + " | ".join(f"{statistics.median(v):.2f}" for v in times.values()) +
          " |")
    print("| best | " + " | ".join(f"{min(v):.2f}" for v in times.values()) + " |")
    print("first two steps (s): " + ", ".join(f"{k} {v:.2f}" for k, v in first.items()))
    _compile_times(which)


def _compile_times(which: str) -> None:
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        env = {**os.environ, "EMBER_CACHE_DIR": d}
        for label in ("cold", "disk cache"):
            res = subprocess.run([sys.executable, __file__, "--first-step", which], env=env,
                                 capture_output=True, text=True)
            out = res.stdout.strip() if res.returncode == 0 else \
                f"failed: {res.stderr.strip().splitlines()[-1:]}"
            print(f"ember compile time of the {which} step (C backend, {label}): {out}")


def first_step(which: str) -> None:
    """Print the compile overhead of the first compiled step: its time minus a later step's."""
    from ember.compiler import cc

    model, opt, loss_fn, batch = _ember_task(which)
    step = _step_fn(ember.compile(loss_fn, backend="c"), opt(model.parameters()), batch)
    t0 = time.perf_counter()
    step()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    step()
    later = time.perf_counter() - t0
    print(f"{first - later:.2f} s (first step {first:.2f} s, next {later:.3f} s; gcc runs "
          f"{cc.stats['compiles']}, disk hits {cc.stats['disk_hits']})")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-torch-compile", action="store_true")
    ap.add_argument("--c-gelu", action="store_true", help="only the C backend GELU benchmark")
    ap.add_argument("--train", choices=("mlp", "gpt"), help="a training-step benchmark")
    ap.add_argument("--first-step", choices=("mlp", "gpt"), help=argparse.SUPPRESS)
    ns = ap.parse_args()
    if ns.first_step:
        first_step(ns.first_step)
    elif ns.train:
        run_train(ns.train, ns.repeat, not ns.no_torch_compile)
    elif ns.c_gelu:
        run_c_gelu(ns.repeat, not ns.no_torch_compile)
    else:
        run(ns.repeat, not ns.no_torch_compile)
