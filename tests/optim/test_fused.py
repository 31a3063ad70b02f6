"""``fused=True`` Adam, AdamW and SGD against torch's fused optimizers, the C and NumPy forms of
the fused kernels against each other (identical bits), the fused operators themselves, and
torch's errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
import ember.optim as optim
from ember.backends.cpu import optimizer_steps as kernels
from tests.optim.helpers import SPECS, _leaf, make_grads, make_params, np_of, set_grads

CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, betas=(0.3, 0.99), eps=1e-6, maximize=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, amsgrad=True, weight_decay=0.1, maximize=True)),
]
IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'default'}"
       for name, kw in CASES]
STEPS = 10


def _set_ember_grads(params, grads) -> None:
    for p, g, (_, transposed) in zip(params, grads, SPECS):
        p.grad = _leaf(ember, g, transposed).detach()


def _tolerance(dtype, lr):
    """Each step rounds a handful of times per element in each library (torch's fused kernel
    and ember's order of operations differ), so after ``STEPS`` steps the parameters may differ
    by a few ulp per step: relative to the parameter, plus the same relative to the update."""
    eps = np.finfo(dtype).eps
    return dict(rtol=8 * STEPS * eps, atol=8 * STEPS * eps * lr)


def _run(name, kw, dtype, fused_torch=True):
    ours, theirs = make_params(dtype)
    opt_e = getattr(optim, name)(ours, fused=True, **kw)
    opt_t = getattr(torch.optim, name)(theirs, fused=fused_torch, **kw)
    for g in make_grads(STEPS, dtype):
        set_grads(ours, theirs, g)
        opt_e.step()
        opt_t.step()
    return ours, theirs, opt_e, opt_t


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_fused_matches_torch_fused(name, kw, dtype):
    ours, theirs, opt_e, opt_t = _run(name, kw, dtype)
    tol = _tolerance(dtype, kw["lr"])
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(np_of(p), np_of(q), **tol)
    se, st = opt_e.state_dict()["state"], opt_t.state_dict()["state"]
    assert se.keys() == st.keys()
    for k in st:
        assert se[k].keys() == st[k].keys()
        for key, v in st[k].items():
            mine = se[k][key]
            assert str(mine.dtype).split(".")[-1] == str(v.dtype).split(".")[-1]
            if key == "step":
                assert mine.item() == v.item() == STEPS
            else:
                scale = max(1.0, float(np.abs(np_of(v)).max()))
                np.testing.assert_allclose(np_of(mine), np_of(v), rtol=tol["rtol"],
                                           atol=tol["rtol"] * scale)


@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_fused_matches_the_single_tensor_algorithm(name, kw):
    dtype = np.float64
    ours, _ = make_params(dtype)
    plain, _ = make_params(dtype)
    opt_f = getattr(optim, name)(ours, fused=True, **kw)
    opt_p = getattr(optim, name)(plain, **kw)
    for g in make_grads(STEPS, dtype):
        _set_ember_grads(ours, g)
        _set_ember_grads(plain, g)
        opt_f.step()
        opt_p.step()
    for p, q in zip(ours, plain):
        np.testing.assert_allclose(np_of(p), np_of(q), **_tolerance(dtype, kw["lr"]))


def _fresh_library_state(monkeypatch, use_c: bool):
    kernels._library.cache_clear()
    if not use_c:
        monkeypatch.setattr(kernels, "_library", lambda: None)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_c_and_numpy_forms_give_identical_bits(name, kw, dtype, monkeypatch):
    if kernels._library() is None:
        pytest.skip("no C compiler: only the NumPy form exists here")
    results = []
    for use_c in (True, False):
        with monkeypatch.context() as m:
            _fresh_library_state(m, use_c)
            ours, _ = make_params(dtype)
            opt = getattr(optim, name)(ours, fused=True, **kw)
            for g in make_grads(STEPS, dtype):
                _set_ember_grads(ours, g)
                opt.step()
            results.append([np_of(p).copy() for p in ours])
    kernels._library.cache_clear()
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_parameters_compute_in_float32_as_torch(dtype):
    rng = np.random.default_rng(3)
    start = rng.standard_normal(6).astype(np.float32)
    grads = [rng.standard_normal(6).astype(np.float32) for _ in range(3)]
    p = ember.tensor(start).to(getattr(ember, dtype)).requires_grad_()
    q = torch.tensor(start).to(getattr(torch, dtype)).requires_grad_()
    opt_e = optim.AdamW([p], lr=0.1, fused=True)
    opt_t = torch.optim.AdamW([q], lr=0.1, fused=True)
    for g in grads:
        p.grad = ember.tensor(g).to(p.dtype)
        q.grad = torch.tensor(g).to(q.dtype)
        opt_e.step()
        opt_t.step()
    # one rounding to the half type per step on each side
    ulp = float(np.finfo(np.float16).eps if dtype == "float16" else 2.0 ** -7)
    np.testing.assert_allclose(p.detach().float().numpy(), q.detach().float().numpy(),
                               rtol=4 * ulp, atol=4 * ulp * 0.1)


def test_found_inf_skips_the_step_and_grad_scale_unscales():
    p = ember.ones(3, requires_grad=True)
    opt = optim.Adam([p], lr=0.1, fused=True)
    p.grad = ember.full((3,), 4.0)
    opt.found_inf = ember.tensor(1.0)
    opt.step()
    assert p.tolist() == [1.0, 1.0, 1.0] and opt.state[p]["step"].item() == 0
    opt.found_inf = ember.tensor(0.0)
    opt.grad_scale = ember.tensor(4.0)
    opt.step()
    assert p.grad.tolist() == [1.0, 1.0, 1.0]          # unscaled in place, as torch's kernel
    q = torch.ones(3, requires_grad=True)
    ref = torch.optim.Adam([q], lr=0.1, fused=True)
    q.grad = torch.ones(3)
    ref.step()
    np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-6)
    assert opt.state[p]["step"].item() == 1


def test_fused_operators_run_on_meta_and_bump_versions():
    p, g = ember.zeros(4), ember.ones(4)
    m, v, s = ember.zeros(4), ember.zeros(4), ember.tensor(1.0)
    before = [t._version for t in (p, m, v)]
    ember._fused_adamw_([p], [g], [m], [v], [], [s], lr=0.1, beta1=0.9, beta2=0.999,
                        weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)
    assert all(t._version > b for t, b in zip((p, m, v), before))
    meta = ember.zeros(4, device="meta")
    assert ember._fused_sgd_([meta], [meta], [], weight_decay=0.0, momentum=0.0, lr=0.1,
                             dampening=0.0, nesterov=False, maximize=False,
                             is_first_step=False) is None


def test_fused_operator_checks_its_lists():
    p, g = ember.zeros(2), ember.ones(2)
    with pytest.raises(RuntimeError, match="state_steps.size"):
        ember._fused_adam_([p], [g], [ember.zeros(2)], [ember.zeros(2)], [], [], lr=0.1,
                           beta1=0.9, beta2=0.99, weight_decay=0.0, eps=1e-8, amsgrad=False,
                           maximize=False)
    with pytest.raises(RuntimeError, match="exp_avgs\\[0\\] must have the parameter's shape"):
        ember._fused_adam_([p], [g], [ember.zeros(3)], [ember.zeros(2)], [],
                           [ember.tensor(1.0)], lr=0.1, beta1=0.9, beta2=0.99,
                           weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)


@pytest.mark.parametrize("kw,message", [
    (dict(fused=True, foreach=True), "`fused` and `foreach` cannot be `True` together."),
    (dict(fused=True, differentiable=True), "`fused` does not support `differentiable`"),
])
@pytest.mark.parametrize("name", ["Adam", "AdamW", "SGD"])
def test_option_errors_match_torch(name, kw, message):
    for lib in (optim, torch.optim):
        params = [(ember if lib is optim else torch).zeros(2, requires_grad=True)]
        with pytest.raises(RuntimeError, match=message.replace("`", ".")):
            getattr(lib, name)(params, lr=0.1, **kw)


def test_complex_parameters_are_refused_at_the_step_as_torch():
    messages = []
    for lib, mod in ((ember, optim), (torch, torch.optim)):
        z = lib.zeros(2, dtype=lib.complex64, requires_grad=True)
        opt = mod.AdamW([z], fused=True)
        z.grad = lib.ones(2, dtype=lib.complex64)
        with pytest.raises(RuntimeError) as info:
            opt.step()
        messages.append(str(info.value).replace("torch.", "ember.", 1))
    assert messages[0] == messages[1].replace("torch.", "ember.")


def test_fused_training_reaches_the_same_loss_as_torch():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((32, 8)).astype(np.float32), rng.integers(0, 3, 32)
    w1, w2 = (rng.standard_normal(s).astype(np.float32) * 0.3 for s in ((8, 16), (16, 3)))
    losses = []
    for lib, mod in ((ember, optim), (torch, torch.optim)):
        a = lib.tensor(w1.copy(), requires_grad=True)
        b = lib.tensor(w2.copy(), requires_grad=True)
        opt = mod.AdamW([a, b], lr=0.05, fused=True)
        xs, ys = lib.tensor(x), lib.tensor(y)
        run = []
        for _ in range(15):
            loss = lib.nn.functional.cross_entropy((xs @ a).relu() @ b, ys)
            opt.zero_grad()
            loss.backward()
            opt.step()
            run.append(loss.item())
        losses.append(run)
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-4)
    assert losses[0][-1] < 0.5 * losses[0][0]


def test_foreach_add_matches_torch():
    ours = [ember.tensor(0.0), ember.arange(3.0).t(), ember.zeros(2, dtype=ember.int64)]
    theirs = [torch.tensor(0.0), torch.arange(3.0).t(), torch.zeros(2, dtype=torch.int64)]
    assert ember._foreach_add_(ours, 2) is ours
    torch._foreach_add_(theirs, 2)
    for a, b in zip(ours, theirs):
        assert a.tolist() == b.tolist() and str(a.dtype)[6:] == str(b.dtype)[6:]
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                               "output type Long"):
            lib._foreach_add_([lib.zeros(2, dtype=lib.int64)], 1.5)
    meta = [ember.zeros(2, device="meta")]
    assert ember._foreach_add_(meta, 1) is meta
