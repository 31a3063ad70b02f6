"""Helpers to run an ember module and a torch module side by side and compare everything."""

from __future__ import annotations

import numpy as np
import torch

import ember


def to_ember(t: torch.Tensor, requires_grad: bool = False) -> ember.Tensor:
    out = ember.tensor(t.detach().numpy())
    if requires_grad:
        out.requires_grad_(True)
    return out


def to_np(t) -> np.ndarray:
    """A NumPy array of a torch or ember tensor (arrays and numbers pass through)."""
    if isinstance(t, torch.Tensor | ember.Tensor):
        return t.detach().numpy()
    return np.asarray(t)


def close(a, b, atol=1e-5, rtol=1e-5, msg="") -> None:
    a, b = to_np(a), to_np(b)
    assert a.shape == b.shape, f"{msg}: shape {a.shape} vs {b.shape}"
    np.testing.assert_allclose(a, b, atol=atol, rtol=rtol, err_msg=msg)


def copy_state(tm: torch.nn.Module, em: ember.nn.Module) -> None:
    sd = {k: to_ember(v) for k, v in tm.state_dict().items()}
    em.load_state_dict(sd)


def run_pair(tm, em, inputs, *, tol=1e-5, seed=0, copy=True, grad=True):
    """Forward both with the same inputs, backward a random cotangent, compare all."""
    if copy:
        copy_state(tm, em)
    t_in = [x.detach().clone().requires_grad_(x.is_floating_point() and grad)
            if isinstance(x, torch.Tensor) else x for x in inputs]
    e_in = [to_ember(x, x.is_floating_point() and grad) if isinstance(x, torch.Tensor) else x
            for x in inputs]
    t_out = tm(*t_in)
    e_out = em(*e_in)
    close(e_out, t_out, tol, tol, "output")
    if grad and t_out.requires_grad:
        g = torch.randn(t_out.shape, generator=torch.Generator().manual_seed(seed),
                        dtype=t_out.dtype)
        (t_out * g).sum().backward()
        (e_out * to_ember(g)).sum().backward()
        for i, (a, b) in enumerate(zip(e_in, t_in)):
            if isinstance(b, torch.Tensor) and b.requires_grad:
                close(a.grad, b.grad, tol, tol, f"input {i} grad")
        tp = dict(tm.named_parameters())
        for name, p in em.named_parameters():
            if tp[name].grad is None:
                assert p.grad is None, name
            else:
                close(p.grad, tp[name].grad, tol, tol, f"grad of {name}")
    tb = dict(tm.named_buffers())
    eb = dict(em.named_buffers())
    assert set(tb) == set(eb)
    for name, b in eb.items():
        close(b, tb[name], tol, tol, f"buffer {name}")
    return e_out, t_out
