"""ember.optim against torch.optim: identical parameters and gradients give the same parameters,
state and options after 20 steps; state dicts load across the libraries; zero_grad, closures,
hooks and errors behave as torch's."""

from __future__ import annotations

import copy
import re
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.optim as optim
from tests.optim.helpers import (
    assert_params_close,
    assert_state_close,
    make_grads,
    make_params,
    np_of,
    set_grads,
    to_ember,
    to_torch,
)

CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.05, momentum=0.5, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9, weight_decay=0.01, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.05, maximize=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
    ("AdamW", dict(lr=0.01, maximize=True)),
    ("RMSprop", dict()),
    ("RMSprop", dict(centered=True)),
    ("RMSprop", dict(momentum=0.9)),
    ("RMSprop", dict(centered=True, momentum=0.5, weight_decay=0.1, alpha=0.9)),
    ("RMSprop", dict(maximize=True, eps=1e-6)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01)),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.1, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, maximize=True, eps=1e-6)),
    ("Adamax", dict()),
    ("Adamax", dict(weight_decay=0.1)),
    ("Adamax", dict(lr=0.01, maximize=True, betas=(0.8, 0.9))),
    ("NAdam", dict()),
    ("NAdam", dict(momentum_decay=0.01)),
    ("NAdam", dict(weight_decay=0.1)),
    ("NAdam", dict(weight_decay=0.1, decoupled_weight_decay=True)),
    ("NAdam", dict(maximize=True, betas=(0.8, 0.99))),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8)),
    ("Adadelta", dict(weight_decay=0.1, eps=1e-4)),
    ("Adadelta", dict(maximize=True)),
    ("Adadelta", dict(lr=0.1, weight_decay=0.05, maximize=True, rho=1.0)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5))),
    ("Rprop", dict(step_sizes=(1e-3, 0.02))),
    ("Rprop", dict(lr=0.1, maximize=True, etas=(0.6, 1.1))),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, t0=5)),
    ("ASGD", dict(lambd=0.01, alpha=0.5, t0=2)),
    ("ASGD", dict(weight_decay=0.1, t0=10)),
    ("ASGD", dict(lr=0.02, maximize=True, weight_decay=0.05, t0=0)),
    ("Adafactor", dict()),
    ("Adafactor", dict(lr=0.05, beta2_decay=-0.5)),
    ("Adafactor", dict(eps=(1e-6, 1e-2), d=2.0)),
    ("Adafactor", dict(lr=1.0, weight_decay=0.1)),
    ("Adafactor", dict(maximize=True, weight_decay=0.01, eps=(1e-3, 0.0))),
]
IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'default'}"
       for name, kw in CASES]
NAMES = sorted({name for name, _ in CASES})


# Adafactor's normalised updates move every element by about lr * rms(p) per step, so the
# last-bit differences between the libraries' float32 reductions (the norms it takes) add up
# over 20 steps beyond the default float32 tolerance.
LOOSER = {("Adafactor", np.float32): dict(rtol=1e-5, atol=1e-6)}


def _pair(name, ours, theirs, **kw):
    return getattr(optim, name)(ours, **kw), getattr(torch.optim, name)(theirs, **kw)


def _run(opt_e, opt_t, ours, theirs, grads, dtype=np.float32, check_every_step=True,
         tol=None):
    for g in grads:
        set_grads(ours, theirs, g)
        opt_e.step()
        opt_t.step()
        if check_every_step:
            assert_params_close(ours, theirs, dtype, tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_twenty_steps_match_torch(name, kw, dtype):
    ours, theirs = make_params(dtype)
    opt_e, opt_t = _pair(name, ours, theirs, **kw)
    tol = LOOSER.get((name, dtype))
    _run(opt_e, opt_t, ours, theirs, make_grads(20, dtype), dtype, tol=tol)
    assert_state_close(opt_e, opt_t, dtype, tol)
    for p in ours:
        step = opt_e.state[p]["step"] if "step" in opt_e.state[p] else None
        if step is not None:
            assert step.dtype == ember.float32 and step.dim() == 0 and step.item() == 20.0


# Per-group overrides: the second group (a vector and the transposed matrix) differs.
GROUP_OPTIONS = {
    "SGD": ({"lr": 0.1}, {"lr": 0.02, "momentum": 0.9, "nesterov": True}),
    "Adam": ({"lr": 0.01}, {"lr": 0.002, "amsgrad": True, "weight_decay": 0.1}),
    "AdamW": ({"lr": 0.01}, {"betas": (0.5, 0.9), "weight_decay": 0.3}),
    "RMSprop": ({"lr": 0.01}, {"centered": True, "momentum": 0.3}),
    "Adagrad": ({"lr": 0.1}, {"lr": 0.05, "lr_decay": 0.1, "weight_decay": 0.2}),
    "Adamax": ({"lr": 0.01}, {"lr": 0.001, "betas": (0.5, 0.6)}),
    "NAdam": ({"lr": 0.01}, {"momentum_decay": 0.02, "weight_decay": 0.1,
                             "decoupled_weight_decay": True}),
    "RAdam": ({"lr": 0.01}, {"lr": 0.1, "maximize": True}),
    "Adadelta": ({"lr": 0.5}, {"rho": 0.5, "weight_decay": 0.1}),
    "Rprop": ({"lr": 0.05}, {"etas": (0.4, 1.3), "step_sizes": (1e-4, 1.0)}),
    "ASGD": ({"lr": 0.05, "t0": 3}, {"lambd": 0.1, "maximize": True}),
    "Adafactor": ({"lr": 0.05}, {"beta2_decay": -0.6, "d": 1.5, "weight_decay": 0.1}),
}


def _grouped(name, ours, theirs, defaults=None):
    first, second = GROUP_OPTIONS[name]
    defaults = defaults or {}
    opt_e = getattr(optim, name)([{"params": ours[:1], **first},
                                  {"params": ours[1:], **second}], **defaults)
    opt_t = getattr(torch.optim, name)([{"params": theirs[:1], **first},
                                        {"params": theirs[1:], **second}], **defaults)
    return opt_e, opt_t


@pytest.mark.parametrize("name", NAMES)
def test_two_groups_with_different_options_and_a_noncontiguous_parameter(name):
    ours, theirs = make_params()
    assert not ours[2].is_contiguous()
    opt_e, opt_t = _grouped(name, ours, theirs)
    assert [g["lr"] for g in opt_e.param_groups] == [g["lr"] for g in opt_t.param_groups]
    _run(opt_e, opt_t, ours, theirs, make_grads(20))
    assert_state_close(opt_e, opt_t)
    assert not ours[2].is_contiguous()  # updated in place, strides kept


@pytest.mark.parametrize("name", NAMES)
def test_parameters_without_grad_are_skipped(name):
    ours, theirs = make_params()
    opt_e, opt_t = _grouped(name, ours, theirs)
    for g in make_grads(3):
        set_grads(ours, theirs, g)
        ours[1].grad = None
        theirs[1].grad = None
        opt_e.step()
        opt_t.step()
    assert_params_close(ours, theirs)
    assert_state_close(opt_e, opt_t)


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_from_ember_loads_into_torch_and_back(name):
    grads = make_grads(20)
    ours, theirs = make_params()
    opt_e, opt_t = _grouped(name, ours, theirs)
    _run(opt_e, opt_t, ours, theirs, grads[:10])
    # ember -> torch: a fresh torch optimizer on fresh parameters continues like ember.
    sd = opt_e.state_dict()
    assert sorted(sd) == ["param_groups", "state"]
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1, 2]]
    assert all(isinstance(k, int) for k in sd["state"])
    theirs2 = [torch.from_numpy(np_of(p).copy()).requires_grad_() for p in ours]
    opt_t2 = _grouped(name, ours, theirs2)[1]
    opt_t2.load_state_dict(to_torch(sd))
    # torch -> ember: a fresh ember optimizer loads torch's state dict.
    ours2 = [ember.from_numpy(np_of(q).copy()).requires_grad_() for q in theirs]
    opt_e2 = _grouped(name, ours2, theirs)[0]
    opt_e2.load_state_dict(to_ember(opt_t.state_dict()))
    assert_state_close(opt_e2, opt_t)
    for g in grads[10:]:
        set_grads(ours, theirs2, g)
        set_grads(ours2, theirs, g)
        for o in (opt_e, opt_t2, opt_e2, opt_t):
            o.step()
    assert_params_close(ours, theirs2)
    assert_params_close(ours2, theirs)
    assert_params_close(ours, ours2)
    assert_state_close(opt_e, opt_t2)
    assert_state_close(opt_e2, opt_t)


def test_state_dict_round_trip_within_ember_and_casts_to_parameter_dtype():
    ours, _ = make_params(np.float64)
    opt = optim.Adam(ours, lr=0.01, amsgrad=True)
    for g in make_grads(3, np.float64):
        for p, a in zip(ours, g):
            p.grad = ember.from_numpy(a.copy())
        opt.step()
    sd = copy.deepcopy(opt.state_dict())
    for st in sd["state"].values():  # saved as float32: loading casts back to float64
        for k in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
            st[k] = st[k].to(ember.float32)
    fresh = [ember.from_numpy(np_of(p).copy()).requires_grad_() for p in ours]
    opt2 = optim.Adam(fresh, lr=0.5)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.01
    assert opt2.param_groups[0]["params"][0] is fresh[0]
    for p, q in zip(ours, fresh):
        assert opt2.state[q]["exp_avg"].dtype == ember.float64
        assert opt2.state[q]["step"].dtype == ember.float32  # step is never cast
        np.testing.assert_allclose(np_of(opt2.state[q]["exp_avg"]),
                                   np_of(opt.state[p]["exp_avg"]), rtol=1e-6)


def test_old_checkpoint_with_numeric_step_is_upgraded():
    ours, _ = make_params()
    opt = optim.Adam(ours)
    sd = {"state": {0: {"step": 3, "exp_avg": ember.zeros(3, 4),
                        "exp_avg_sq": ember.zeros(3, 4)}},
          "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "eps": 1e-8,
                            "weight_decay": 0, "amsgrad": False, "params": [0, 1, 2]}]}
    opt.load_state_dict(sd)
    step = opt.state[ours[0]]["step"]
    assert isinstance(step, ember.Tensor) and step.dtype == ember.float32 and step.item() == 3
    assert opt.param_groups[0]["maximize"] is False  # options added later get their defaults


def test_load_state_dict_validates_groups_like_torch():
    ours, theirs = make_params()
    for lib, params in ((optim, ours), (torch.optim, theirs)):
        two = lib.SGD([{"params": params[:1]}, {"params": params[1:]}], lr=0.1)
        one = lib.SGD(params, lr=0.1)
        with pytest.raises(ValueError, match="different number of parameter groups"):
            one.load_state_dict(two.state_dict())
        other = lib.SGD([{"params": params[:2]}, {"params": params[2:]}], lr=0.1)
        with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
            other.load_state_dict(two.state_dict())


def test_state_dict_numbers_shared_parameters_once_and_hooks_run():
    ours, _ = make_params()
    opt = optim.SGD([{"params": ours[:2]}, {"params": ours[2:]}], lr=0.1, momentum=0.9)
    calls = []
    opt.register_state_dict_pre_hook(lambda o: calls.append("pre"))
    opt.register_state_dict_post_hook(lambda o, sd: sd | {"extra": 1})
    opt.register_load_state_dict_pre_hook(lambda o, sd: calls.append("load-pre"))
    opt.register_load_state_dict_post_hook(lambda o: calls.append("load-post"))
    sd = opt.state_dict()
    assert sd["extra"] == 1 and calls == ["pre"]
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    opt.load_state_dict(sd)
    assert calls == ["pre", "load-pre", "load-post"]


# -- zero_grad ---------------------------------------------------------------------------------
def test_zero_grad_sets_none_by_default():
    p = ember.ones(3, requires_grad=True)
    (p * 2).sum().backward()
    opt = optim.SGD([p], lr=0.1)
    opt.zero_grad()
    assert p.grad is None


def test_zero_grad_false_zeroes_in_place_and_detaches():
    p = ember.ones(3, requires_grad=True)
    q = ember.ones(2, requires_grad=True)
    (p * p).sum().backward(create_graph=True)  # p.grad has history
    q.grad = ember.ones(2).requires_grad_()  # a grad that requires grad, no history
    assert p.grad.grad_fn is not None
    gp, gq = p.grad, q.grad
    optim.SGD([p, q], lr=0.1).zero_grad(set_to_none=False)
    assert p.grad is gp and q.grad is gq
    assert gp.grad_fn is None and not gp.requires_grad and not gq.requires_grad
    np.testing.assert_array_equal(np_of(gp), 0.0)
    np.testing.assert_array_equal(np_of(gq), 0.0)


def test_skipping_zero_grad_accumulates():
    p = ember.ones(2, requires_grad=True)
    opt = optim.SGD([p], lr=0.0)
    for _ in range(3):
        (p * 2).sum().backward()
    np.testing.assert_array_equal(np_of(p.grad), 6.0)
    opt.zero_grad()
    (p * 2).sum().backward()
    np.testing.assert_array_equal(np_of(p.grad), 2.0)


# -- closure and hooks ---------------------------------------------------------------------------
def test_step_with_closure_returns_loss_and_matches_torch():
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    w0 = np.array([0.5, -0.25, 1.0], dtype=np.float32)
    pe = ember.from_numpy(w0.copy()).requires_grad_()
    pt = torch.from_numpy(w0.copy()).requires_grad_()
    opt_e, opt_t = optim.SGD([pe], lr=0.1, momentum=0.9), torch.optim.SGD([pt], lr=0.1,
                                                                           momentum=0.9)

    def closure(lib, p, opt, calls):
        def run():
            calls.append(1)
            opt.zero_grad()
            loss = ((lib.from_numpy(x.copy()) * p).sum(1) ** 2).mean()
            loss.backward()
            return loss
        return run

    calls = []
    with ember.no_grad():  # the closure still runs with gradients enabled
        for _ in range(5):
            le = opt_e.step(closure(ember, pe, opt_e, calls))
            lt = opt_t.step(closure(torch, pt, opt_t, []))
            assert abs(le.item() - lt.item()) <= 1e-6 * abs(lt.item())
    assert len(calls) == 5
    np.testing.assert_allclose(np_of(pe), np_of(pt), rtol=1e-6, atol=1e-7)
    assert opt_e.step() is None


def test_step_hooks_run_in_order_and_can_be_removed():
    p = ember.ones(2, requires_grad=True)
    p.grad = ember.ones(2)
    opt = optim.SGD([p], lr=0.1)
    order = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: order.append("pre"))
    h2 = opt.register_step_post_hook(lambda o, a, k: order.append("post"))
    g = optim.optimizer.register_optimizer_step_pre_hook(lambda o, a, k: order.append("global"))
    try:
        opt.step()
    finally:
        g.remove()
    assert order == ["global", "pre", "post"]
    h1.remove()
    h2.remove()
    opt.step()
    assert order == ["global", "pre", "post"]
    np.testing.assert_allclose(np_of(p), 0.8)


def test_pre_hook_may_replace_the_arguments():
    p = ember.ones(1, requires_grad=True)
    p.grad = ember.ones(1)
    opt = optim.SGD([p], lr=0.1)
    opt.register_step_pre_hook(lambda o, a, k: ((), {"closure": lambda: 42.0}))
    assert opt.step() == 42.0


def test_custom_optimizer_subclass():
    class Sign(optim.Optimizer):
        def __init__(self, params, lr=optim.optimizer.required):
            super().__init__(params, {"lr": lr})

        @ember.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    self.state[p]["n"] = self.state[p].get("n", 0) + 1
                    p.add_(p.grad.sign(), alpha=-group["lr"])

    p = ember.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="didn't specify a value of required optimization "
                                         "parameter lr"):
        Sign([p])
    opt = Sign([p], lr=0.5)
    seen = []
    opt.register_step_post_hook(lambda o, a, k: seen.append(1))
    p.grad = ember.tensor([2.0, -3.0])
    opt.step()
    assert seen == [1] and opt.state[p]["n"] == 1
    np.testing.assert_allclose(np_of(p), [-0.5, 0.5])
    with pytest.raises(NotImplementedError):
        optim.Optimizer([p], {}).step()


def test_repr_lists_group_options_like_torch():
    ours, theirs = make_params()
    opt_e, opt_t = _grouped("SGD", ours, theirs)
    assert repr(opt_e) == repr(opt_t)


def test_add_param_group_fills_defaults():
    ours, theirs = make_params()
    for lib, ps in ((optim, ours), (torch.optim, theirs)):
        opt = lib.Adam(ps[:1], lr=0.1)
        opt.add_param_group({"params": ps[1], "lr": 0.5})
        assert opt.param_groups[1]["params"] == [ps[1]]
        assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["eps"] == 1e-8


def test_named_parameters_are_recorded():
    ours, theirs = make_params()
    opt_e = optim.SGD(list(zip(["a", "b", "c"], ours)), lr=0.1)
    opt_t = torch.optim.SGD(list(zip(["a", "b", "c"], theirs)), lr=0.1)
    assert opt_e.param_groups[0]["param_names"] == ["a", "b", "c"]
    assert opt_e.state_dict()["param_groups"] == opt_t.state_dict()["param_groups"]


# -- errors --------------------------------------------------------------------------------------
def _both_raise(fn_e, fn_t, exc):
    with pytest.raises(exc) as err_t:
        fn_t()
    with pytest.raises(exc, match=re.escape(str(err_t.value))):
        fn_e()


@pytest.mark.parametrize("name,kw", [
    ("SGD", dict(lr=-1.0)), ("SGD", dict(momentum=-0.5)), ("SGD", dict(weight_decay=-1)),
    ("SGD", dict(nesterov=True)), ("SGD", dict(momentum=0.9, dampening=0.1, nesterov=True)),
    ("Adam", dict(eps=-1.0)), ("Adam", dict(betas=(1.0, 0.9))), ("Adam", dict(betas=(0.9, -1.0))),
    ("Adam", dict(weight_decay=-0.1)), ("AdamW", dict(lr=-0.1)),
    ("RMSprop", dict(alpha=-1.0)), ("RMSprop", dict(momentum=-1.0)),
    ("Adagrad", dict(lr_decay=-1.0)), ("Adagrad", dict(initial_accumulator_value=-1.0)),
    ("Adamax", dict(betas=(0.9, 1.5))), ("NAdam", dict(momentum_decay=-1.0)),
    ("RAdam", dict(eps=-1e-8)),
    ("Adadelta", dict(lr=-1.0)), ("Adadelta", dict(rho=1.5)), ("Adadelta", dict(rho=-0.1)),
    ("Adadelta", dict(eps=-1.0)), ("Adadelta", dict(weight_decay=-1.0)),
    ("Rprop", dict(lr=-0.1)), ("Rprop", dict(etas=(1.2, 0.5))), ("Rprop", dict(etas=(0.0, 1.2))),
    ("Rprop", dict(etas=(0.5, 1.0))),
    ("ASGD", dict(lr=-0.1)), ("ASGD", dict(weight_decay=-0.1)),
    ("Adafactor", dict(lr=-1.0)), ("Adafactor", dict(beta2_decay=0.5)),
    ("Adafactor", dict(eps=(-1.0, 1e-3))), ("Adafactor", dict(eps=(None, -1.0))),
    ("Adafactor", dict(d=0.5)), ("Adafactor", dict(weight_decay=-0.1)),
])
def test_invalid_options_raise_torchs_errors(name, kw):
    ours, theirs = make_params()
    _both_raise(lambda: getattr(optim, name)(ours, **kw),
                lambda: getattr(torch.optim, name)(theirs, **kw), ValueError)


def test_parameter_list_errors_match_torch():
    ours, theirs = make_params()
    e, t = ours[0], theirs[0]
    _both_raise(lambda: optim.SGD([], lr=0.1), lambda: torch.optim.SGD([], lr=0.1), ValueError)
    _both_raise(lambda: optim.SGD([e * 2], lr=0.1), lambda: torch.optim.SGD([t * 2], lr=0.1),
                ValueError)
    _both_raise(lambda: optim.SGD([{"params": [e]}, {"params": [e]}], lr=0.1),
                lambda: torch.optim.SGD([{"params": [t]}, {"params": [t]}], lr=0.1),
                ValueError)
    _both_raise(lambda: optim.SGD({"params": {e}}, lr=0.1),
                lambda: torch.optim.SGD({"params": {t}}, lr=0.1), TypeError)
    _both_raise(lambda: optim.SGD([{"params": {e}}], lr=0.1),
                lambda: torch.optim.SGD([{"params": {t}}], lr=0.1), TypeError)
    _both_raise(lambda: optim.SGD([("a", e), ours[1]], lr=0.1),
                lambda: torch.optim.SGD([("a", t), theirs[1]], lr=0.1), ValueError)
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts"):
        optim.SGD(e, lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors"):
        optim.SGD([e, 3.0], lr=0.1)
    opt = optim.SGD([e], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one"):
        opt.add_param_group({"params": [e]})
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([ours[1]])


def test_duplicate_parameters_in_a_group_warn():
    ours, _ = make_params()
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([ours[0], ours[0]], lr=0.1)


def test_retained_non_leaf_can_be_optimized():
    x = ember.ones(2, requires_grad=True) * 2
    x.retain_grad()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        optim.SGD([x], lr=0.1)


def test_unsupported_flags_are_refused():
    ours, _ = make_params()
    with pytest.raises(NotImplementedError, match="fused=True"):
        optim.Adagrad(ours, fused=True)
    with pytest.raises(NotImplementedError, match="capturable=True"):
        optim.Adam(ours, capturable=True)
    optim.Adam(ours, foreach=True)  # accepted; the single-tensor algorithm runs


def test_tensor_learning_rate_is_read_at_each_step():
    ours, theirs = make_params()
    lr_e, lr_t = ember.tensor(0.05), torch.tensor(0.05)
    opt_e, opt_t = optim.Adam(ours, lr=lr_e), torch.optim.Adam(theirs, lr=lr_t)
    grads = make_grads(4)
    for i, g in enumerate(grads):
        set_grads(ours, theirs, g)
        opt_e.step()
        opt_t.step()
        lr_e.fill_(0.01 * (i + 1))
        lr_t.fill_(0.01 * (i + 1))
    assert_params_close(ours, theirs)
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        optim.SGD(ours, lr=ember.ones(2))


NEW = ["Adadelta", "Rprop", "ASGD", "Adafactor"]


@pytest.mark.parametrize("name", NEW)
def test_repr_and_defaults_of_newer_optimizers_match_torch(name):
    ours, theirs = make_params()
    opt_e, opt_t = _grouped(name, ours, theirs)
    assert repr(opt_e) == repr(opt_t)
    assert opt_e.defaults == opt_t.defaults


@pytest.mark.parametrize("name", [*NEW, "LBFGS"])
def test_tensor_lr_must_have_one_element(name):
    ours, theirs = make_params()
    _both_raise(lambda: getattr(optim, name)(ours, lr=ember.ones(2)),
                lambda: getattr(torch.optim, name)(theirs, lr=torch.ones(2)), ValueError)


@pytest.mark.parametrize("name,flag", [("Adadelta", "capturable"), ("Rprop", "differentiable"),
                                       ("ASGD", "capturable")])
def test_newer_optimizers_refuse_unsupported_flags(name, flag):
    ours, _ = make_params()
    with pytest.raises(NotImplementedError, match=f"{flag}=True"):
        getattr(optim, name)(ours, **{flag: True})
    getattr(optim, name)(ours, foreach=True)


def test_adafactor_factors_the_last_two_dimensions_of_nd_parameters():
    """A 3-D parameter, a permuted (non-contiguous) 3-D one and a 0-d one, for 10 steps."""
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((2, 3, 4), (4, 2, 3), ())]
    ours = [ember.from_numpy(a.copy()).requires_grad_() for a in arrays]
    theirs = [torch.from_numpy(a.copy()).requires_grad_() for a in arrays]
    ours[1] = ours[1].detach().permute(1, 2, 0).requires_grad_()  # (2, 3, 4), non-contiguous
    theirs[1] = theirs[1].detach().permute(1, 2, 0).requires_grad_()
    assert not ours[1].is_contiguous()
    opt_e = optim.Adafactor(ours, lr=0.05, weight_decay=0.1)
    opt_t = torch.optim.Adafactor(theirs, lr=0.05, weight_decay=0.1)
    for _ in range(10):
        for p, q in zip(ours, theirs):
            g = rng.standard_normal(tuple(p.shape)).astype(np.float32)
            p.grad, q.grad = ember.from_numpy(g.copy()), torch.from_numpy(g.copy())
        opt_e.step()
        opt_t.step()
    assert_params_close(ours, theirs)
    assert_state_close(opt_e, opt_t)
    state = opt_e.state[ours[0]]
    assert tuple(state["row_var"].shape) == (2, 3, 1)
    assert tuple(state["col_var"].shape) == (2, 1, 4)
    assert sorted(opt_e.state[ours[2]]) == ["step", "variance"]


def test_asgd_keeps_eta_and_mu_as_float32_tensors_and_upgrades_numbers():
    ours, _ = make_params()
    opt = optim.ASGD(ours, lr=0.05, t0=1)
    for g in make_grads(3):
        for p, a in zip(ours, g):
            p.grad = ember.from_numpy(a.copy())
        opt.step()
    st = opt.state[ours[0]]
    for key in ("step", "eta", "mu"):
        assert st[key].dtype == ember.float32 and st[key].dim() == 0, key
    assert st["mu"].item() == 0.5
    sd = opt.state_dict()
    sd["state"] = {i: {**s, "step": s["step"].item(), "eta": s["eta"].item(),
                       "mu": s["mu"].item()} for i, s in sd["state"].items()}
    fresh = optim.ASGD([ember.from_numpy(np_of(p).copy()).requires_grad_() for p in ours])
    fresh.load_state_dict(sd)
    for st2 in fresh.state.values():
        assert all(isinstance(st2[k], ember.Tensor) and st2[k].dtype == ember.float32
                   for k in ("step", "eta", "mu"))
    assert fresh.state[fresh.param_groups[0]["params"][0]]["eta"].item() == st["eta"].item()
