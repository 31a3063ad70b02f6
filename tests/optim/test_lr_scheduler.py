"""ember.optim.lr_scheduler against torch.optim.lr_scheduler: the same learning rates (and
cycled momenta) at every step, two parameter groups, chaining, closed forms, state dicts."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.optim as optim
from ember.optim import lr_scheduler as ours_lrs
from tests.optim.helpers import assert_params_close, make_grads, make_params, set_grads

theirs_lrs = torch.optim.lr_scheduler


def _optimizers(kind="SGD"):
    ours, theirs = make_params()
    if kind == "SGD":
        kw = [dict(lr=0.1, momentum=0.9), dict(lr=0.05, momentum=0.5)]
        make = lambda lib, ps: lib.SGD([{"params": ps[:1], **kw[0]},  # noqa: E731
                                        {"params": ps[1:], **kw[1]}])
    else:
        make = lambda lib, ps: lib.Adam([{"params": ps[:1], "lr": 0.01},  # noqa: E731
                                         {"params": ps[1:], "lr": 0.002}])
    return make(optim, ours), make(torch.optim, theirs), ours, theirs


def _groups_equal(opt_e, opt_t):
    for g, h in zip(opt_e.param_groups, opt_t.param_groups):
        assert g.keys() == h.keys()
        for key in ("lr", "momentum", "betas", "initial_lr", "max_lr", "min_lr",
                    "max_momentum", "base_momentum"):
            if key in h:
                assert g[key] == h[key], key


# Each entry builds a scheduler from (module, optimizer); all are run for 20 steps.
SCHEDULERS = {
    "StepLR": lambda m, o: m.StepLR(o, step_size=3, gamma=0.5),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
    "CosineAnnealingWarmRestarts": lambda m, o: m.CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2, eta_min=0.01),
    "CosineAnnealingWarmRestarts-mult1": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=4),
    "LambdaLR": lambda m, o: m.LambdaLR(o, lambda e: 0.95**e),
    "LambdaLR-per-group": lambda m, o: m.LambdaLR(o, [lambda e: 1 / (e + 1), lambda e: 0.9**e]),
    "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, lambda e: 0.9 if e % 2 else 0.99),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=6),
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=4),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=8, power=2.0),
    "OneCycleLR-cos": lambda m, o: m.OneCycleLR(o, max_lr=[0.1, 0.2], total_steps=20),
    "OneCycleLR-linear": lambda m, o: m.OneCycleLR(o, max_lr=0.1, epochs=4, steps_per_epoch=6,
                                                   anneal_strategy="linear", pct_start=0.25),
    "OneCycleLR-three-phase": lambda m, o: m.OneCycleLR(o, max_lr=0.3, total_steps=21,
                                                        three_phase=True, div_factor=10.0),
    "OneCycleLR-no-momentum": lambda m, o: m.OneCycleLR(o, max_lr=0.3, total_steps=20,
                                                        cycle_momentum=False),
    "CyclicLR-triangular": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1,
                                                   step_size_up=4),
    "CyclicLR-triangular2": lambda m, o: m.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=0.1,
                                                    step_size_up=3, step_size_down=2,
                                                    mode="triangular2"),
    "CyclicLR-exp_range": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3,
                                                  mode="exp_range", gamma=0.9,
                                                  base_momentum=0.7, max_momentum=0.95),
    "CyclicLR-scale_fn": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2,
                                                 scale_fn=lambda x: 1 / (x + 1),
                                                 scale_mode="iterations",
                                                 cycle_momentum=False),
    "SequentialLR": lambda m, o: m.SequentialLR(o, [m.LinearLR(o, start_factor=0.5,
                                                               total_iters=4),
                                                    m.ExponentialLR(o, gamma=0.8)],
                                                milestones=[5]),
    "SequentialLR-three": lambda m, o: m.SequentialLR(
        o, [m.ConstantLR(o, factor=0.1, total_iters=2), m.CosineAnnealingLR(o, T_max=5),
            m.StepLR(o, step_size=2)], milestones=[3, 10]),
    "ChainedScheduler": lambda m, o: m.ChainedScheduler([m.ConstantLR(o, factor=0.5,
                                                                      total_iters=3),
                                                         m.ExponentialLR(o, gamma=0.9)]),
}
ADAM_ONLY = {"OneCycleLR-cos", "CyclicLR-exp_range"}  # also run with Adam (beta1 cycled)


def _lockstep(name, kind, steps=20):
    opt_e, opt_t, ours, theirs = _optimizers(kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch may warn about step order on construction
        se, st = SCHEDULERS[name](ours_lrs, opt_e), SCHEDULERS[name](theirs_lrs, opt_t)
    assert se.get_last_lr() == st.get_last_lr()
    _groups_equal(opt_e, opt_t)
    for g in make_grads(steps):
        set_grads(ours, theirs, g)
        opt_e.step()
        opt_t.step()
        se.step()
        st.step()
        assert se.get_last_lr() == st.get_last_lr()
        _groups_equal(opt_e, opt_t)
    assert_params_close(ours, theirs)
    return se, st


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_twenty_steps_match_torch(name):
    _lockstep(name, "SGD")


@pytest.mark.parametrize("name", sorted(ADAM_ONLY))
def test_momentum_cycling_moves_adams_beta1(name):
    se, _ = _lockstep(name, "Adam")
    assert se.use_beta1


def test_two_schedulers_chain_on_one_optimizer():
    opt_e, opt_t, _, _ = _optimizers()
    pairs = [(m.ExponentialLR(o, gamma=0.9), m.StepLR(o, step_size=3, gamma=0.5))
             for m, o in ((ours_lrs, opt_e), (theirs_lrs, opt_t))]
    for _ in range(12):
        opt_e.step()
        opt_t.step()
        for s in (*pairs[0], *pairs[1]):
            s.step()
        assert [g["lr"] for g in opt_e.param_groups] == [g["lr"] for g in opt_t.param_groups]
    assert pairs[0][1].get_last_lr() == pairs[1][1].get_last_lr()


CLOSED = {
    "StepLR": lambda m, o: m.StepLR(o, step_size=3, gamma=0.5),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[2, 5, 5], gamma=0.3),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.2, total_iters=6),
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=4),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=8, power=2.0),
    "CosineAnnealingWarmRestarts": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3,
                                                                              T_mult=2),
    "LambdaLR": lambda m, o: m.LambdaLR(o, lambda e: 0.5**e),
}


@pytest.mark.parametrize("name", sorted(CLOSED))
def test_step_with_epoch_uses_the_closed_form_and_warns(name):
    opt_e, opt_t, _, _ = _optimizers()
    se, st = CLOSED[name](ours_lrs, opt_e), CLOSED[name](theirs_lrs, opt_t)
    for epoch in (3, 7, 2, 11, 0, 5.5 if name == "CosineAnnealingWarmRestarts" else 9):
        opt_e.step()
        with pytest.warns(UserWarning, match="epoch parameter in `scheduler.step\\(\\)`") \
                if name != "CosineAnnealingWarmRestarts" else warnings.catch_warnings():
            se.step(epoch)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            st.step(epoch)
        assert se.get_last_lr() == st.get_last_lr(), epoch
        assert se.last_epoch == st.last_epoch


@pytest.mark.parametrize("mode,threshold_mode", [("min", "rel"), ("min", "abs"), ("max", "rel"),
                                                 ("max", "abs")])
def test_reduce_lr_on_plateau_matches_torch(mode, threshold_mode):
    opt_e, opt_t, _, _ = _optimizers()
    kw = dict(mode=mode, threshold_mode=threshold_mode, factor=0.5, patience=2, cooldown=1,
              threshold=0.05, min_lr=[0.01, 0.02], eps=1e-3)
    se, st = ours_lrs.ReduceLROnPlateau(opt_e, **kw), theirs_lrs.ReduceLROnPlateau(opt_t, **kw)
    metrics = [1.0, 0.99, 0.98, 0.97, 0.9, 0.5, 0.52, 0.51, 0.5, 0.6, 0.49, 0.48, 0.48, 0.48,
               0.47, 0.2, 0.21, 0.22, 0.23, 0.24, 0.25, 0.26, 0.27, 0.28, 0.3]
    if mode == "max":
        metrics = [2 - m for m in metrics]
    for m in metrics:
        se.step(m)
        st.step(torch.tensor(m, dtype=torch.float64))
        assert se.get_last_lr() == st.get_last_lr()
        assert (se.best, se.num_bad_epochs, se.cooldown_counter) == \
            (st.best, st.num_bad_epochs, st.cooldown_counter)
    assert se.get_last_lr() != [0.1, 0.05]  # it did reduce
    sd = se.state_dict()
    fresh = ours_lrs.ReduceLROnPlateau(opt_e)
    fresh.load_state_dict(sd)
    assert (fresh.mode, fresh.best, fresh.min_lrs) == (mode, se.best, [0.01, 0.02])


def test_reduce_lr_on_plateau_follows_new_groups_with_scalar_min_lr():
    opt_e, _, ours, _ = _optimizers()
    s = ours_lrs.ReduceLROnPlateau(opt_e, patience=0, min_lr=0.001)
    opt_e.add_param_group({"params": [ember.zeros(1, requires_grad=True)], "lr": 1.0})
    s.step(1.0)
    s.step(2.0)
    assert s.get_last_lr()[-1] == pytest.approx(0.1)
    fixed = ours_lrs.ReduceLROnPlateau(opt_e, patience=0, min_lr=[0, 0, 0])
    opt_e.add_param_group({"params": [ember.zeros(1, requires_grad=True)]})
    fixed.step(1.0)
    with pytest.raises(RuntimeError, match="number of param groups"):
        fixed.step(2.0)


STATEFUL = ["StepLR", "MultiStepLR", "CosineAnnealingLR", "OneCycleLR-cos", "CyclicLR-triangular2",
            "CosineAnnealingWarmRestarts", "LinearLR", "SequentialLR", "ChainedScheduler",
            "LambdaLR"]


@pytest.mark.parametrize("name", STATEFUL)
def test_state_dict_round_trip_and_exchange_with_torch(name):
    """Save after 7 steps; a fresh scheduler of either library loads it and continues alike."""
    opt_e, opt_t, _, _ = _optimizers()
    se, st = SCHEDULERS[name](ours_lrs, opt_e), SCHEDULERS[name](theirs_lrs, opt_t)
    for _ in range(7):
        opt_e.step()
        opt_t.step()
        se.step()
        st.step()
    sd_e, sd_t = se.state_dict(), st.state_dict()
    assert "optimizer" not in sd_e and sd_e.get("last_epoch") == sd_t.get("last_epoch")
    # Fresh optimizers that already hold the saved groups' options (as after loading them).
    opt_e2, opt_t2, _, _ = _optimizers()
    for o2, o in ((opt_e2, opt_e), (opt_t2, opt_t)):
        for g2, g in zip(o2.param_groups, o.param_groups):
            g2.update({k: v for k, v in g.items() if k != "params"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        se2 = SCHEDULERS[name](ours_lrs, opt_e2)
        st2 = SCHEDULERS[name](theirs_lrs, opt_t2)
    for o2, o in ((opt_e2, opt_e), (opt_t2, opt_t)):  # construction reset some options
        for g2, g in zip(o2.param_groups, o.param_groups):
            g2.update({k: v for k, v in g.items() if k != "params"})
    se2.load_state_dict(sd_t)  # torch's state into ember
    st2.load_state_dict(sd_e)  # ember's state into torch
    for _ in range(8):
        for o in (opt_e, opt_t, opt_e2, opt_t2):
            o.step()
        for s in (se, st, se2, st2):
            s.step()
        assert se.get_last_lr() == st.get_last_lr() == se2.get_last_lr() == st2.get_last_lr()


def test_lambda_state_dict_keeps_callable_objects_state():
    class Decay:
        def __init__(self):
            self.rate = 0.5

        def __call__(self, epoch):
            return self.rate**epoch

    opt_e, _, _, _ = _optimizers()
    fn = Decay()
    s = ours_lrs.LambdaLR(opt_e, [fn, lambda e: 1.0])
    fn.rate = 0.25
    sd = s.state_dict()
    assert sd["lr_lambdas"] == [{"rate": 0.25}, None]
    other = Decay()
    s2 = ours_lrs.LambdaLR(_optimizers()[0], [other, lambda e: 1.0])
    s2.load_state_dict(sd)
    assert other.rate == 0.25


def test_initial_step_sets_initial_lr_and_last_epoch():
    opt_e, _, _, _ = _optimizers()
    s = ours_lrs.StepLR(opt_e, step_size=2)
    assert s.last_epoch == 0 and s._step_count == 1
    assert s.base_lrs == [0.1, 0.05] == [g["initial_lr"] for g in opt_e.param_groups]
    with pytest.raises(KeyError, match="initial_lr"):
        ours_lrs.StepLR(_optimizers()[0], step_size=2, last_epoch=3)
    resumed = ours_lrs.StepLR(opt_e, step_size=2, last_epoch=3)
    assert resumed.last_epoch == 4


def test_warnings_like_torch():
    opt_e, _, _, _ = _optimizers()
    s = ours_lrs.ExponentialLR(opt_e, gamma=0.5)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        s.step()
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        s.get_lr()
    opt2 = _optimizers()[0]
    s2 = ours_lrs.ExponentialLR(opt2, gamma=0.5)
    opt2.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s2.step()


def test_one_cycle_refuses_to_step_past_the_end():
    opt_e, opt_t, _, _ = _optimizers()
    se = ours_lrs.OneCycleLR(opt_e, max_lr=0.1, total_steps=3)
    for _ in range(3):
        opt_e.step()
        se.step()
    with pytest.raises(ValueError, match="Tried to step 4 times. The specified number of total "
                                         "steps is 3"):
        se.step()


def _err(build_e, build_t, exc):
    with pytest.raises(exc) as theirs:
        build_t()
    with pytest.raises(exc) as ours:
        build_e()
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("build", [
    lambda m, o: m.ConstantLR(o, factor=1.5),
    lambda m, o: m.LinearLR(o, start_factor=0),
    lambda m, o: m.LinearLR(o, end_factor=2.0),
    lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=0),
    lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0),
    lambda m, o: m.OneCycleLR(o, max_lr=0.1),
    lambda m, o: m.OneCycleLR(o, max_lr=0.1, total_steps=0),
    lambda m, o: m.OneCycleLR(o, max_lr=0.1, total_steps=10, pct_start=1.5),
    lambda m, o: m.OneCycleLR(o, max_lr=0.1, total_steps=10, anneal_strategy="x"),
    lambda m, o: m.OneCycleLR(o, max_lr=[0.1], total_steps=10),
    lambda m, o: m.CyclicLR(o, base_lr=0.1, max_lr=1.0, mode="nope"),
    lambda m, o: m.ReduceLROnPlateau(o, factor=1.0),
    lambda m, o: m.ReduceLROnPlateau(o, mode="up"),
    lambda m, o: m.ReduceLROnPlateau(o, threshold_mode="x"),
    lambda m, o: m.ReduceLROnPlateau(o, min_lr=[0.1]),
    lambda m, o: m.LambdaLR(o, [lambda e: 1.0]),
    lambda m, o: m.SequentialLR(o, [], milestones=[]),
    lambda m, o: m.SequentialLR(o, [m.StepLR(o, 2), m.StepLR(o, 3)], milestones=[]),
    lambda m, o: m.SequentialLR(o, [m.ReduceLROnPlateau(o)], milestones=[]),
    lambda m, o: m.ChainedScheduler([]),
])
def test_value_errors_match_torch(build):
    opt_e, opt_t, _, _ = _optimizers()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _err(lambda: build(ours_lrs, opt_e), lambda: build(theirs_lrs, opt_t), ValueError)


def test_type_errors_match_torch():
    opt_e, opt_t, _, _ = _optimizers()
    _err(lambda: ours_lrs.StepLR(object(), 2), lambda: theirs_lrs.StepLR(object(), 2), TypeError)
    _err(lambda: ours_lrs.MultiplicativeLR(opt_e, 0.9),
         lambda: theirs_lrs.MultiplicativeLR(opt_t, 0.9), TypeError)
    with pytest.raises(ValueError, match="optimizer must support momentum"):
        ours_lrs.OneCycleLR(optim.Adagrad([ember.zeros(1, requires_grad=True)]), max_lr=0.1,
                            total_steps=5)


def test_cosine_warm_restarts_rejects_negative_epoch():
    s = ours_lrs.CosineAnnealingWarmRestarts(_optimizers()[0], T_0=2)
    with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
        s.step(-1)
    s.step(2.5)
    assert s.T_cur == pytest.approx(0.5) and s.last_epoch == 2
    assert s.get_last_lr()[0] == pytest.approx(0.1 * (1 + math.cos(math.pi * 0.25)) / 2)


def test_schedulers_drive_a_training_run_like_torch():
    """Adam + OneCycleLR on real gradients from 20 precomputed steps: same parameters."""
    opt_e, opt_t, ours, theirs = _optimizers("Adam")
    se = ours_lrs.OneCycleLR(opt_e, max_lr=0.05, total_steps=20, anneal_strategy="linear")
    st = theirs_lrs.OneCycleLR(opt_t, max_lr=0.05, total_steps=20, anneal_strategy="linear")
    for g in make_grads(20):
        set_grads(ours, theirs, g)
        opt_e.step()
        opt_t.step()
        se.step()
        st.step()
    assert_params_close(ours, theirs)
    np.testing.assert_allclose(
        opt_e.state[ours[0]]["exp_avg"].numpy(), opt_t.state[theirs[0]]["exp_avg"].numpy(),
        rtol=1e-6, atol=1e-7)


def test_tensor_lr_is_updated_in_place():
    ours, theirs = make_params()
    lr_e, lr_t = ember.tensor(0.1), torch.tensor(0.1)
    opt_e, opt_t = optim.SGD(ours, lr=lr_e), torch.optim.SGD(theirs, lr=lr_t)
    se, st = ours_lrs.StepLR(opt_e, step_size=2), theirs_lrs.StepLR(opt_t, step_size=2)
    for _ in range(5):
        opt_e.step()
        opt_t.step()
        se.step()
        st.step()
    assert opt_e.param_groups[0]["lr"] is lr_e
    assert lr_e.item() == pytest.approx(lr_t.item(), rel=1e-7)
    assert se.get_last_lr()[0].item() == pytest.approx(st.get_last_lr()[0].item(), rel=1e-7)
