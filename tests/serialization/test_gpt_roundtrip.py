"""Issue #6: a whole training run moves between torch and ember through checkpoint files.

The char-GPT of ``ember.examples.gpt`` (tiny: 2 layers, d_model 32, context 16) and a torch
mirror of it with the same module names, registration order (so optimizer parameter indices
agree) and math. One library trains a few AdamW steps, its model and optimizer state_dicts go
through a file (``torch.save`` -> ``ember.load``, or ``ember.save`` ->
``torch.load(weights_only=True)``), the other library loads them with ``load_state_dict`` and
continues on the same batches: its losses match those of the original run continued. Also
``Module.load_state_dict`` straight from a safetensors file and from a torch zip checkpoint,
with the tied ``lm_head``/``wte`` weight.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import safetensors.torch as safetensors_torch
import torch
import torch.nn.functional as TF

import ember
from ember.examples.gpt import GPT, GPTConfig
from ember.serialization import safetensors as est
from ember.tensor.parameter import Parameter

CFG = GPTConfig(vocab_size=11, block_size=16, n_layer=2, n_head=2, n_embd=32)
BATCH = 4
LR, WD = 3e-3, 0.1
RTOL = 1e-4


# -- the torch mirror ---------------------------------------------------------------------------
class _TorchAttention(torch.nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.n_head = cfg.n_head
        self.c_attn = torch.nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.c_proj = torch.nn.Linear(cfg.n_embd, cfg.n_embd)

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.n_head
        q, k, v = self.c_attn(x).split(C, dim=2)  # (B, T, 3C) -> 3 x (B, T, C)
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, T, C) -> (B, nh, T, hs)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)
        y = TF.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))  # (B, nh, T, hs) -> (B, T, C)


class _TorchMLP(torch.nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.c_fc = torch.nn.Linear(cfg.n_embd, 4 * cfg.n_embd)
        self.c_proj = torch.nn.Linear(4 * cfg.n_embd, cfg.n_embd)

    def forward(self, x):
        return self.c_proj(TF.gelu(self.c_fc(x), approximate=CFG.gelu))


class _TorchBlock(torch.nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = torch.nn.LayerNorm(cfg.n_embd)
        self.attn = _TorchAttention(cfg)
        self.ln_2 = torch.nn.LayerNorm(cfg.n_embd)
        self.mlp = _TorchMLP(cfg)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class TorchGPT(torch.nn.Module):
    """torch mirror of ``ember.examples.gpt.GPT``: same state_dict keys, same parameter order."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.wte = torch.nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = torch.nn.Embedding(cfg.block_size, cfg.n_embd)
        self.blocks = torch.nn.ModuleList([_TorchBlock(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = torch.nn.LayerNorm(cfg.n_embd)
        self.lm_head = torch.nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight
        for name, p in self.named_parameters():  # GPT's init scheme, drawn from torch's RNG
            if name.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, std=0.02 / math.sqrt(2 * cfg.n_layer))
            elif name.endswith("bias"):
                torch.nn.init.zeros_(p)
            elif "ln_" not in name:  # LayerNorms keep ones and zeros
                torch.nn.init.normal_(p, std=0.02)

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(T))  # (B, T, C) + (T, C)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))  # (B, T, C) -> (B, T, V)
        return logits, TF.cross_entropy(logits.view(B * T, -1), targets.reshape(B * T))


# -- helpers ------------------------------------------------------------------------------------
def _batches(n: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, CFG.vocab_size, (BATCH, CFG.block_size + 1)) for _ in range(n)]


def _to_torch(t: ember.Tensor) -> torch.Tensor:
    return torch.from_numpy(t.detach().numpy().copy())


def _ember_pair() -> tuple[GPT, TorchGPT]:
    """An ember GPT (ember's init) and a torch mirror holding copies of its weights."""
    ember.manual_seed(0)
    e = GPT(CFG)
    t = TorchGPT(CFG)
    t.load_state_dict({k: _to_torch(v) for k, v in e.state_dict().items()})
    return e, t


def _step(lib, model, opt, batch: np.ndarray) -> float:
    x, y = lib.tensor(batch[:, :-1]), lib.tensor(batch[:, 1:])
    loss = model(x, y)[1]
    loss.backward()
    opt.step()
    opt.zero_grad()
    return float(loss.item())


def _train(lib, model, opt, batches) -> list[float]:
    return [_step(lib, model, opt, b) for b in batches]


def _assert_losses(got: list[float], want: list[float]) -> None:
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert math.isfinite(g) and math.isclose(g, w, rel_tol=RTOL), (i, got, want)


def _split_key_bias(name: str, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(well-conditioned part, noise part)`` of a parameter or its optimizer state.

    The key projection's bias adds ``q . b_k`` to every score of a query, which softmax
    ignores: its true gradient is 0, so each library's computed gradient is rounding noise,
    and Adam rescales that noise into steps of up to ``lr``. Those entries can only be
    compared to within the optimizer's step size; everything else is compared tightly.
    """
    if not name.endswith("attn.c_attn.bias"):
        return a, a[:0]
    C = CFG.n_embd
    return np.concatenate([a[:C], a[2 * C:]]), a[C:2 * C]


def _assert_params_close(e: GPT, t: TorchGPT, atol: float = 1e-5, steps: int = 3) -> None:
    tsd = t.state_dict()
    esd = e.state_dict()
    assert list(esd) == list(tsd)
    for k, v in esd.items():
        (ge, ne), (gt, nt) = _split_key_bias(k, v.numpy()), _split_key_bias(k, tsd[k].numpy())
        np.testing.assert_allclose(ge, gt, rtol=1e-4, atol=atol, err_msg=k)
        np.testing.assert_allclose(ne, nt, rtol=0, atol=max(atol, 2 * steps * LR), err_msg=k)


def _assert_tied(e: GPT) -> None:
    assert e.lm_head.weight is e.wte.weight
    assert len(list(e.parameters())) == len(e.state_dict()) - 1  # the tie is counted once


# -- the mirror really is the same model ---------------------------------------------------------
def test_torch_mirror_matches_ember_gpt():
    e, t = _ember_pair()
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    b = _batches(1)[0]
    le = e(ember.tensor(b[:, :-1]), ember.tensor(b[:, 1:]))[1].item()
    lt = t(torch.tensor(b[:, :-1]), torch.tensor(b[:, 1:]))[1].item()
    assert math.isclose(le, lt, rel_tol=1e-5)


# -- train in torch, continue in ember -----------------------------------------------------------
def test_torch_trains_ember_continues(tmp_path):
    batches = _batches(6)
    torch.manual_seed(0)
    t = TorchGPT(CFG)
    topt = torch.optim.AdamW(t.parameters(), lr=LR, weight_decay=WD)
    first = _train(torch, t, topt, batches[:3])
    assert first[-1] < first[0]
    path = tmp_path / "torch_ckpt.pt"
    torch.save({"model": t.state_dict(), "optim": topt.state_dict(), "step": 3}, path)

    ckpt = ember.load(path)  # weights_only=True by default
    assert ckpt["step"] == 3
    sd, osd = ckpt["model"], ckpt["optim"]
    assert set(osd["state"]) == set(range(len(list(t.parameters()))))
    assert isinstance(osd["state"][0]["exp_avg"], ember.Tensor)
    # torch's state_dict keeps the tie as two views of one storage; ember.load keeps that
    assert sd["lm_head.weight"].untyped_storage() is sd["wte.weight"].untyped_storage()

    ember.manual_seed(1)  # a different init, overwritten by the checkpoint
    e = GPT(CFG)
    eopt = ember.optim.AdamW(e.parameters(), lr=0.5, weight_decay=0.0)  # overwritten too
    e.load_state_dict(sd)
    eopt.load_state_dict(osd)
    _assert_tied(e)
    _assert_params_close(e, t, atol=0)
    g = eopt.param_groups[0]
    assert (g["lr"], g["weight_decay"], g["decoupled_weight_decay"]) == (LR, WD, True)

    want = _train(torch, t, topt, batches[3:])
    got = _train(ember, e, eopt, batches[3:])
    _assert_losses(got, want)
    _assert_params_close(e, t)
    _assert_tied(e)
    tstate = topt.state_dict()["state"]
    names = [n for n, _ in e.named_parameters()]
    for i, s in eopt.state_dict()["state"].items():
        assert float(s["step"]) == float(tstate[i]["step"]) == 6.0
        name = names[i]
        for key in ("exp_avg", "exp_avg_sq"):
            good, _ = _split_key_bias(name, s[key].numpy())
            want_good, _ = _split_key_bias(name, tstate[i][key].numpy())
            np.testing.assert_allclose(good, want_good, rtol=1e-3,
                                       atol=1e-4 * np.abs(want_good).max(),
                                       err_msg=f"{name} {key}")


# -- train in ember, continue in torch -----------------------------------------------------------
def test_ember_trains_torch_continues(tmp_path):
    batches = _batches(6, seed=1)
    ember.manual_seed(2)
    e = GPT(CFG)
    eopt = ember.optim.AdamW(e.parameters(), lr=LR, weight_decay=WD)
    first = _train(ember, e, eopt, batches[:3])
    assert first[-1] < first[0]
    path = tmp_path / "ember_ckpt.pt"
    ember.save({"model": e.state_dict(), "optim": eopt.state_dict(), "step": 3}, path)

    ckpt = torch.load(path, weights_only=True)
    assert ckpt["step"] == 3
    sd, osd = ckpt["model"], ckpt["optim"]
    assert sd["lm_head.weight"].untyped_storage().data_ptr() == \
        sd["wte.weight"].untyped_storage().data_ptr()
    assert isinstance(osd["state"][0]["exp_avg"], torch.Tensor)

    torch.manual_seed(3)
    t = TorchGPT(CFG)
    topt = torch.optim.AdamW(t.parameters(), lr=0.5, weight_decay=0.0)
    t.load_state_dict(sd)
    topt.load_state_dict(osd)
    assert t.lm_head.weight is t.wte.weight
    _assert_params_close(e, t, atol=0)
    g = topt.param_groups[0]
    assert (g["lr"], g["weight_decay"]) == (LR, WD)

    want = _train(ember, e, eopt, batches[3:])
    got = _train(torch, t, topt, batches[3:])
    _assert_losses(got, want)
    _assert_params_close(e, t)
    assert [float(s["step"]) for s in topt.state_dict()["state"].values()] == \
        [6.0] * len(list(t.parameters()))


def test_round_trip_both_ways_matches_uninterrupted_run(tmp_path):
    """ember -> torch -> ember through two files equals one uninterrupted ember run."""
    batches = _batches(6, seed=2)
    ember.manual_seed(4)
    ref = GPT(CFG)
    ember.manual_seed(4)
    e = GPT(CFG)
    ref_opt = ember.optim.AdamW(ref.parameters(), lr=LR, weight_decay=WD)
    want = _train(ember, ref, ref_opt, batches)

    eopt = ember.optim.AdamW(e.parameters(), lr=LR, weight_decay=WD)
    got = _train(ember, e, eopt, batches[:2])
    ember.save({"model": e.state_dict(), "optim": eopt.state_dict()}, tmp_path / "a.pt")
    ck = torch.load(tmp_path / "a.pt", weights_only=True)
    t = TorchGPT(CFG)
    topt = torch.optim.AdamW(t.parameters())
    t.load_state_dict(ck["model"])
    topt.load_state_dict(ck["optim"])
    got += _train(torch, t, topt, batches[2:4])
    torch.save({"model": t.state_dict(), "optim": topt.state_dict()}, tmp_path / "b.pt")
    ck = ember.load(tmp_path / "b.pt")
    e2 = GPT(CFG)
    eopt2 = ember.optim.AdamW(e2.parameters())
    e2.load_state_dict(ck["model"])
    eopt2.load_state_dict(ck["optim"])
    got += _train(ember, e2, eopt2, batches[4:])
    _assert_losses(got, want)


# -- load_state_dict straight from files ---------------------------------------------------------
def _eval_loss(lib, model, batch) -> float:
    with lib.no_grad():
        return float(model(lib.tensor(batch[:, :-1]), lib.tensor(batch[:, 1:]))[1].item())


def _trained_torch(seed: int) -> TorchGPT:
    torch.manual_seed(seed)
    t = TorchGPT(CFG)
    opt = torch.optim.AdamW(t.parameters(), lr=LR)
    _train(torch, t, opt, _batches(2, seed=seed))
    return t


def test_load_state_dict_from_torch_zip_checkpoint(tmp_path):
    t = _trained_torch(5)
    path = tmp_path / "model.pt"
    torch.save(t.state_dict(), path)
    ember.manual_seed(9)
    e = GPT(CFG)
    res = e.load_state_dict(ember.load(path))
    assert (res.missing_keys, res.unexpected_keys) == ([], [])
    _assert_tied(e)
    assert isinstance(e.wte.weight, Parameter)
    _assert_params_close(e, t, atol=0)
    b = _batches(1, seed=99)[0]
    assert math.isclose(_eval_loss(ember, e, b), _eval_loss(torch, t, b), rel_tol=1e-5)
    # a later write through the tie reaches both names, as in torch
    with ember.no_grad():
        e.wte.weight[0, 0] = 7.0
    assert e.state_dict()["lm_head.weight"][0, 0].item() == 7.0


def test_load_state_dict_from_torch_zip_checkpoint_with_mmap(tmp_path):
    t = _trained_torch(6)
    path = tmp_path / "model.pt"
    torch.save(t.state_dict(), path)
    e = GPT(CFG)
    e.load_state_dict(ember.load(path, mmap=True))
    _assert_tied(e)
    _assert_params_close(e, t, atol=0)


def test_load_state_dict_from_safetensors_written_by_the_package(tmp_path):
    t = _trained_torch(7)
    path = tmp_path / "model.safetensors"
    safetensors_torch.save_model(t, str(path))  # drops one name of the tied pair
    sd = est.load_file(path)
    (dropped,) = {"wte.weight", "lm_head.weight"} - set(sd)
    e = GPT(CFG)
    res = e.load_state_dict(sd, strict=False)
    assert (res.missing_keys, res.unexpected_keys) == ([dropped], [])
    _assert_tied(e)
    _assert_params_close(e, t, atol=0)
    # and the strict load names exactly that key
    with pytest.raises(RuntimeError, match=f'Missing key\\(s\\) in state_dict: "{dropped}"'):
        GPT(CFG).load_state_dict(sd)


def test_load_state_dict_from_safetensors_written_by_ember(tmp_path):
    ember.manual_seed(8)
    src = GPT(CFG)
    opt = ember.optim.AdamW(src.parameters(), lr=LR)
    _train(ember, src, opt, _batches(2, seed=8))
    sd = src.state_dict()
    # like the safetensors package, tied (shared-memory) tensors are refused...
    with pytest.raises(RuntimeError, match="share memory"):
        est.save_file(sd, tmp_path / "refused.safetensors")
    assert not list(tmp_path.iterdir())  # ...and nothing is left behind
    # ...so the tie is saved once and restored by the model
    del sd["lm_head.weight"]
    path = tmp_path / "model.safetensors"
    est.save_file(sd, path, metadata={"format": "pt"})
    loaded = est.load_file(path)
    e = GPT(CFG)
    res = e.load_state_dict(loaded, strict=False)
    assert (res.missing_keys, res.unexpected_keys) == (["lm_head.weight"], [])
    _assert_tied(e)
    for k, v in src.state_dict().items():
        np.testing.assert_array_equal(e.state_dict()[k].numpy(), v.numpy(), err_msg=k)
    # torch reads the same file into its mirror: same eval loss
    t = TorchGPT(CFG)
    missing, unexpected = safetensors_torch.load_model(t, str(path), strict=False)
    assert list(unexpected) == []
    b = _batches(1, seed=98)[0]
    assert math.isclose(_eval_loss(ember, e, b), _eval_loss(torch, t, b), rel_tol=1e-5)


def test_load_state_dict_from_safe_open_lazy(tmp_path):
    t = _trained_torch(10)
    path = tmp_path / "model.safetensors"
    sd = {k: v for k, v in t.state_dict().items() if k != "lm_head.weight"}
    safetensors_torch.save_file(sd, str(path))
    with est.safe_open(path, framework="pt") as f:
        lazy = {k: f.get_tensor(k) for k in f.keys()}
    e = GPT(CFG)
    e.load_state_dict(lazy, strict=False)
    _assert_tied(e)
    _assert_params_close(e, t, atol=0)
