"""ember.amp.GradScaler against torch.amp.GradScaler("cpu"): the same losses, parameters and
optimizers give the same scales, growth trackers, skipped steps, gradients and parameters step by
step; state dicts load across the libraries; a disabled scaler passes everything through; misuse
raises the same exception types with the same messages."""

from __future__ import annotations

import doctest
import pickle
import re
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.amp.grad_scaler
from tests.optim.helpers import SPECS, TOL, make_params, np_of

INF, NAN = float("inf"), float("nan")


def make_coeffs(steps: int, bad: dict[int, float], seed: int = 1):
    """Per step, one array per parameter; the loss is ``sum((p * c).sum())`` so that a
    parameter's gradient is ``scale * c``. Step ``i`` in ``bad`` gets ``bad[i]`` (inf or nan)
    in its first array."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(steps):
        arrays = [rng.standard_normal(shape).astype(np.float32) for shape, _ in SPECS]
        if i in bad:
            arrays[0].flat[3] = bad[i]
        out.append(arrays)
    return out


class Run:
    """One library's side of a training loop: parameters, an optimizer and a scaler."""

    def __init__(self, lib, params, opt_name="SGD", opt_kw=None, **scaler_kw):
        self.lib, self.params = lib, params
        self.opt = getattr(lib.optim, opt_name)(params, **(opt_kw or dict(lr=0.1)))
        self.scaler = lib.amp.GradScaler("cpu", **scaler_kw)

    def backward(self, coeffs, params=None) -> None:
        params = self.params if params is None else params
        loss = sum((p * self.lib.from_numpy(c.copy())).sum() for p, c in zip(params, coeffs))
        self.scaler.scale(loss).backward()

    def iteration(self, coeffs, clip=None):
        """zero_grad, scaled backward, optional unscale_ + clipping, step, update; returns the
        step's return value and the clipped norm (or None)."""
        self.opt.zero_grad()
        self.backward(coeffs)
        norm = None
        if clip is not None:
            self.scaler.unscale_(self.opt)
            norm = float(self.lib.nn.utils.clip_grad_norm_(self.params, clip))
        out = self.scaler.step(self.opt)
        self.scaler.update()
        return out, norm


def twins(opt_name="SGD", opt_kw=None, **scaler_kw):
    ours, theirs = make_params()
    return (Run(ember, ours, opt_name, opt_kw, **scaler_kw),
            Run(torch, theirs, opt_name, opt_kw, **scaler_kw))


def assert_same(a: Run, b: Run, where="") -> None:
    assert a.scaler.state_dict() == b.scaler.state_dict(), where
    assert a.scaler.get_scale() == b.scaler.get_scale(), where
    for p, q in zip(a.params, b.params):
        if q.grad is not None:  # unscaled gradients are exact; the optimizers agree to rounding
            np.testing.assert_array_equal(np_of(p.grad), np_of(q.grad), err_msg=f"grad {where}")
        np.testing.assert_allclose(np_of(p), np_of(q), **TOL[np.float32], err_msg=where)


# -- step by step against torch ------------------------------------------------------------------
@pytest.mark.parametrize("opt_name,opt_kw", [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9, weight_decay=0.01)),
    ("Adam", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, amsgrad=True)),
])
def test_scale_sequence_with_skipped_and_grown_steps(opt_name, opt_kw):
    bad = {0: INF, 1: NAN, 5: INF, 9: -INF, 10: NAN}
    coeffs = make_coeffs(16, bad)
    a, b = twins(opt_name, opt_kw, init_scale=2.0**10, growth_interval=3)
    scales = []
    for i, c in enumerate(coeffs):
        before = [np_of(p).copy() for p in a.params]
        out_a, _ = a.iteration(c)
        out_b, _ = b.iteration(c)
        assert out_a is None and out_b is None
        assert_same(a, b, f"step {i}")
        if i in bad:  # skipped: parameters unchanged, and the step recorded no optimizer state
            for p, old in zip(a.params, before):
                np.testing.assert_array_equal(np_of(p), old)
        scales.append(a.scaler.get_scale())
    # backoff on each bad step, growth after 3 clean ones
    assert scales == [512.0, 256.0, 256.0, 256.0, 512.0, 256.0, 256.0, 256.0, 512.0, 256.0,
                      128.0, 128.0, 128.0, 256.0, 256.0, 256.0]
    assert a.opt.state_dict()["state"].keys() == b.opt.state_dict()["state"].keys()


def test_float16_loss_overflow_calibrates_the_scale():
    # The float16 gradients (scale * x, x up to 6) overflow for scales >= 2**14: the scale backs
    # off from 2**16 until they are finite, grows after 2 clean steps and backs off again.
    x = np.linspace(2.0, 6.0, 8).astype(np.float32)
    runs = []
    for lib in (ember, torch):
        w = lib.from_numpy(np.full(8, 1.25, np.float32)).requires_grad_(True)
        opt = lib.optim.SGD([w], lr=0.01)
        scaler = lib.amp.GradScaler("cpu", growth_interval=2)
        history = []
        for _ in range(10):
            opt.zero_grad()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # float16 overflow on purpose
                loss = (w.half() * lib.from_numpy(x).half()).sum()
                scaler.scale(loss).backward()
            assert w.grad.dtype == lib.float32
            scaler.step(opt)
            scaler.update()
            history.append((scaler.get_scale(), np_of(w).copy()))
        runs.append(history)
    for (s, w), (t, v) in zip(*runs):
        assert s == t
        np.testing.assert_array_equal(w, v)
    assert [s for s, _ in runs[0]][:7] == [2.0**15, 2.0**14, 2.0**13, 2.0**13, 2.0**14,
                                           2.0**13, 2.0**13]


@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_unscale_then_clip_grad_norm(max_norm):
    coeffs = make_coeffs(6, {2: INF})
    a, b = twins("Adam", dict(lr=0.01), init_scale=2.0**12, growth_interval=2)
    for i, c in enumerate(coeffs):
        (_, norm_a), (_, norm_b) = a.iteration(c, clip=max_norm), b.iteration(c, clip=max_norm)
        if i == 2:
            assert norm_a == norm_b == INF
        else:
            np.testing.assert_allclose(norm_a, norm_b, rtol=1e-6)
            for p, q in zip(a.params, b.params):
                np.testing.assert_allclose(np_of(p.grad), np_of(q.grad), rtol=1e-6, atol=1e-8)
                np.testing.assert_allclose(np_of(p), np_of(q), rtol=1e-6, atol=1e-7)
        assert a.scaler.state_dict() == b.scaler.state_dict()


def test_unscale_divides_gradients_in_place():
    for lib in (ember, torch):
        w = lib.zeros(3, requires_grad=True)
        opt = lib.optim.SGD([w], lr=1.0)
        scaler = lib.amp.GradScaler("cpu", init_scale=3.0)
        scaler.scale((w * lib.tensor([1.0, 2.0, 3.0])).sum()).backward()
        grad = w.grad
        np.testing.assert_array_equal(np_of(grad), [3.0, 6.0, 9.0])
        scaler.unscale_(opt)
        assert w.grad is grad
        expected = np.float32([3.0, 6.0, 9.0]) * np.float32(1 / np.float64(np.float32(3.0)))
        np.testing.assert_array_equal(np_of(grad), expected)


def test_multiple_optimizers_skip_independently_and_back_off_together():
    coeffs = make_coeffs(6, {1: INF, 3: NAN})
    runs = []
    for lib, params in zip((ember, torch), make_params()):
        opt1 = lib.optim.SGD(params[:1], lr=0.1)
        opt2 = lib.optim.Adam(params[1:], lr=0.01)
        scaler = lib.amp.GradScaler("cpu", init_scale=256.0, growth_interval=2)
        history = []
        for c in coeffs:
            opt1.zero_grad()
            opt2.zero_grad()
            loss = sum((p * lib.from_numpy(k.copy())).sum() for p, k in zip(params, c))
            scaler.scale(loss).backward()
            scaler.unscale_(opt2)
            scaler.step(opt1)
            scaler.step(opt2)
            scaler.update()
            history.append((scaler.state_dict(), [np_of(p).copy() for p in params]))
        runs.append(history)
    for i, ((sd_a, pa), (sd_b, pb)) in enumerate(zip(*runs)):
        assert sd_a == sd_b, i
        for x, y in zip(pa, pb):
            np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-7, err_msg=str(i))
    # the inf sits in opt1's parameter: opt1 skips its step, opt2 still steps
    (_, before), (_, after) = runs[0][0], runs[0][1]
    np.testing.assert_array_equal(before[0], after[0])
    assert not np.array_equal(before[1], after[1])
    assert [sd["scale"] for sd, _ in runs[0]] == [256.0, 128.0, 128.0, 64.0, 64.0, 128.0]


def test_step_forwards_arguments_and_return_value_of_a_duck_typed_optimizer():
    class Counting:
        def __init__(self, params):
            self.param_groups = [{"params": params}]
            self.calls = []

        def step(self, *args, **kwargs):
            self.calls.append((args, kwargs))
            return 7

    for lib in (ember, torch):
        w = lib.ones(2, requires_grad=True)
        opt, scaler = Counting([w]), lib.amp.GradScaler("cpu")
        scaler.scale(w.sum()).backward()
        assert scaler.step(opt, 1, flag=True) == 7
        assert opt.calls == [((1,), {"flag": True})]
        scaler.update()
        w.grad.fill_(NAN)
        assert scaler.step(opt) is None
        assert len(opt.calls) == 1


# -- scale(), update() and the scale arithmetic ---------------------------------------------------
def test_scale_nested_outputs():
    for lib in (ember, torch):
        scaler = lib.amp.GradScaler("cpu", init_scale=4.0)
        a, b, c = lib.tensor(1.0), lib.tensor([2.0, 3.0]), lib.tensor([0.5], dtype=lib.float16)
        out = scaler.scale([a, (b, [c]), ()])
        assert isinstance(out, list) and isinstance(out[1], tuple) and isinstance(out[1][1], list)
        assert out[2] == ()
        np.testing.assert_array_equal(np_of(out[1][0]), [8.0, 12.0])
        assert out[1][1][0].dtype == lib.float16 and out[1][1][0].item() == 2.0  # no promotion
        lazy = scaler.scale(t for t in (a, b))
        assert not isinstance(lazy, list | tuple)
        assert [np_of(t).tolist() for t in lazy] == [4.0, [8.0, 12.0]]


def test_scale_is_differentiable():
    for lib in (ember, torch):
        w = lib.tensor([1.0, -2.0], requires_grad=True)
        scaled = lib.amp.GradScaler("cpu", init_scale=8.0).scale((w * w).sum())
        assert scaled.requires_grad and scaled.item() == 40.0
        scaled.backward()
        np.testing.assert_array_equal(np_of(w.grad), [16.0, -32.0])


def test_update_rounds_once_and_never_grows_to_inf():
    # growth 1.1 and backoff 0.3 are not float32 numbers: the products are rounded once
    cases = [dict(init_scale=3.0, growth_factor=1.1, backoff_factor=0.3, growth_interval=1),
             dict(init_scale=3.0e38, growth_interval=1),
             dict(init_scale=1.7, growth_factor=1.37, backoff_factor=0.77, growth_interval=2)]
    pattern = [False, False, True, False, False, False, True, False]
    for kw in cases:
        got = []
        for lib in (ember, torch):
            w = lib.zeros(2, requires_grad=True)
            opt, scaler = lib.optim.SGD([w], lr=0.0), lib.amp.GradScaler("cpu", **kw)
            seq = []
            for bad in pattern:
                opt.zero_grad()
                scaler.scale(w.sum()).backward()
                if bad:
                    w.grad.fill_(INF)
                scaler.step(opt)
                scaler.update()
                seq.append(scaler.state_dict())
            got.append(seq)
        assert got[0] == got[1], kw
        if kw["init_scale"] == 3.0e38:  # growing would overflow: the scale stays, tracker resets
            assert got[0][0]["scale"] == float(np.float32(3.0e38))
            assert got[0][0]["_growth_tracker"] == 0


@pytest.mark.parametrize("new_scale", [1234.5, "tensor"])
def test_update_with_new_scale(new_scale):
    results = []
    for lib in (ember, torch):
        w = lib.zeros(2, requires_grad=True)
        opt, scaler = lib.optim.SGD([w], lr=0.1), lib.amp.GradScaler("cpu", growth_interval=1)
        scaler.scale(w.sum()).backward()
        scaler.step(opt)
        value = lib.tensor(77.25) if new_scale == "tensor" else new_scale
        scaler.update(value)
        if isinstance(value, lib.Tensor):
            value.fill_(5.0)  # later changes to the argument do not reach the scaler
        results.append(scaler.state_dict())
        scaler.scale(w.sum()).backward()  # a new iteration may start
    assert results[0] == results[1]
    assert results[0]["_growth_tracker"] == 0


def test_get_and_set_options():
    for lib in (ember, torch):
        scaler = lib.amp.GradScaler("cpu", init_scale=8.0, growth_factor=3.0,
                                    backoff_factor=0.25, growth_interval=5)
        assert scaler.is_enabled() and scaler.get_scale() == 8.0
        assert (scaler.get_growth_factor(), scaler.get_backoff_factor(),
                scaler.get_growth_interval()) == (3.0, 0.25, 5)
        scaler.set_growth_factor(4.0)
        scaler.set_backoff_factor(0.125)
        scaler.set_growth_interval(1)
        w = lib.zeros(1, requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1)
        scaler.scale(w.sum()).backward()
        scaler.step(opt)
        scaler.update()
        assert scaler.get_scale() == 32.0
        opt.zero_grad()
        scaler.scale(w.sum() * INF).backward()
        scaler.step(opt)
        scaler.update()
        assert scaler.get_scale() == 4.0


# -- state dicts ----------------------------------------------------------------------------------
def test_state_dict_keys_and_values_match_torch():
    for kw in (dict(), dict(init_scale=3.3, growth_factor=1.5, backoff_factor=0.4,
                            growth_interval=7), dict(init_scale=5)):
        ours, theirs = ember.amp.GradScaler("cpu", **kw), torch.amp.GradScaler("cpu", **kw)
        assert ours.state_dict() == theirs.state_dict()
        for lib, scaler in ((ember, ours), (torch, theirs)):
            scaler.scale(lib.ones(1))
        sd = ours.state_dict()
        assert sd == theirs.state_dict()
        assert list(sd) == ["scale", "growth_factor", "backoff_factor", "growth_interval",
                            "_growth_tracker"]
        assert type(sd["scale"]) is float and type(sd["_growth_tracker"]) is int


@pytest.mark.parametrize("started", [False, True])
@pytest.mark.parametrize("direction", ["ember->torch", "torch->ember"])
def test_state_dict_round_trips_across_libraries(direction, started):
    coeffs = make_coeffs(12, {1: INF, 7: NAN})
    a, b = twins("Adam", dict(lr=0.01), init_scale=2.0**9, growth_interval=2)
    src, dst = (a, b) if direction == "ember->torch" else (b, a)
    for c in coeffs[:3]:  # clean, skipped, clean: the tracker stands at 1
        src.iteration(c)
    # a fresh scaler on the other side takes over the source's scale and tracker
    dst.scaler = dst.lib.amp.GradScaler("cpu")
    if started:
        dst.scaler.scale(dst.lib.ones(1))
    dst.scaler.load_state_dict(src.scaler.state_dict())
    assert dst.scaler.state_dict() == src.scaler.state_dict()
    assert dst.scaler.state_dict()["_growth_tracker"] == 1
    src.scaler = src.lib.amp.GradScaler("cpu")
    src.scaler.load_state_dict(dst.scaler.state_dict())
    for i, c in enumerate(coeffs[3:]):
        a.iteration(c)
        b.iteration(c)
        assert a.scaler.state_dict() == b.scaler.state_dict(), i


def test_pickling_keeps_the_scale_and_is_refused_mid_iteration():
    for lib in (ember, torch):
        w = lib.zeros(2, requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1)
        scaler = lib.amp.GradScaler("cpu", init_scale=64.0, growth_interval=1)
        scaler.scale(w.sum()).backward()
        scaler.step(opt)
        with pytest.raises(AssertionError, match="may only be pickled"):
            pickle.dumps(scaler)
        scaler.update()
        copy = pickle.loads(pickle.dumps(scaler))
        assert copy.state_dict() == scaler.state_dict() == {
            "scale": 128.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 1,
            "_growth_tracker": 0}


# -- disabled -------------------------------------------------------------------------------------
def test_disabled_scaler_passes_everything_through():
    for lib in (ember, torch):
        w = lib.ones(2, requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.5)
        scaler = lib.amp.GradScaler("cpu", growth_factor=0.5, enabled=False)  # not checked
        loss = (w * w).sum()
        outputs = [loss, (loss,)]
        assert scaler.scale(loss) is loss and scaler.scale(outputs) is outputs
        loss.backward()
        scaler.unscale_(opt)
        scaler.unscale_(opt)
        np.testing.assert_array_equal(np_of(w.grad), [2.0, 2.0])
        assert scaler.step(opt) is None
        np.testing.assert_array_equal(np_of(w), [0.0, 0.0])
        scaler.update()
        scaler.update(3.0)
        scaler.load_state_dict({})
        assert not scaler.is_enabled()
        assert scaler.get_scale() == 1.0 and scaler.state_dict() == {}


def test_cuda_scaler_warns_and_disables_itself():
    for lib in (ember, torch):
        with pytest.warns(UserWarning, match="CUDA is not available.  Disabling."):
            scaler = lib.amp.GradScaler()
        assert not scaler.is_enabled()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert not lib.amp.GradScaler(enabled=False).is_enabled()


# -- errors ---------------------------------------------------------------------------------------
def _ready(lib, dtype=None):
    w = lib.zeros(3, dtype=dtype, requires_grad=True)
    opt = lib.optim.SGD([w], lr=0.1)
    scaler = lib.amp.GradScaler("cpu")
    scaler.scale(w.sum()).backward()
    return w, opt, scaler


def _twice_unscale(lib):
    _, opt, s = _ready(lib)
    s.unscale_(opt)
    s.unscale_(opt)


def _unscale_after_step(lib):
    _, opt, s = _ready(lib)
    s.step(opt)
    s.unscale_(opt)


def _twice_step(lib):
    _, opt, s = _ready(lib)
    s.step(opt)
    s.step(opt)


def _update_twice(lib):
    _, opt, s = _ready(lib)
    s.step(opt)
    s.update()
    s.update()


def _no_grads(lib):
    w, opt, s = _ready(lib)
    w.grad = None
    s.step(opt)


def _new_scale(value):
    def run(lib):
        w, opt, s = _ready(lib)
        s.step(opt)
        s.update(value(lib))
    return run


ERRORS = [
    ("unscale_ twice", _twice_unscale, RuntimeError),
    ("unscale_ after step", _unscale_after_step, RuntimeError),
    ("step twice", _twice_step, RuntimeError),
    ("step without scale", lambda lib: lib.amp.GradScaler("cpu").step(_ready(lib)[1]),
     AssertionError),
    ("unscale_ without scale", lambda lib: lib.amp.GradScaler("cpu").unscale_(_ready(lib)[1]),
     AssertionError),
    ("update without scale", lambda lib: lib.amp.GradScaler("cpu").update(), AssertionError),
    ("update without step", lambda lib: _ready(lib)[2].update(), AssertionError),
    ("update twice", _update_twice, AssertionError),
    ("step with no gradients", _no_grads, AssertionError),
    ("closure", lambda lib: _ready(lib)[2].step(_ready(lib)[1], closure=lambda: 0.0),
     RuntimeError),
    ("float16 gradients", lambda lib: (lambda w, o, s: s.step(o))(*_ready(lib, lib.float16)),
     ValueError),
    ("growth factor", lambda lib: lib.amp.GradScaler("cpu", growth_factor=1.0), AssertionError),
    ("backoff factor", lambda lib: lib.amp.GradScaler("cpu", backoff_factor=1.0),
     AssertionError),
    ("empty state dict", lambda lib: lib.amp.GradScaler("cpu").load_state_dict({}),
     RuntimeError),
    ("scale a number", lambda lib: lib.amp.GradScaler("cpu").scale(3.0), ValueError),
    ("scale a list of numbers", lambda lib: lib.amp.GradScaler("cpu").scale([lib.ones(1), 2]),
     ValueError),
    ("new_scale needs no grad", _new_scale(lambda lib: lib.ones((), requires_grad=True)),
     AssertionError),
    ("new_scale one element", _new_scale(lambda lib: lib.ones(2)), AssertionError),
    ("new_scale of shape (1,)", _new_scale(lambda lib: lib.ones(1)), RuntimeError),  # copy_'s
]
TYPE_ONLY = {"new_scale of shape (1,)"}  # the copy_ messages differ


@pytest.mark.parametrize("name,fn,exc", ERRORS, ids=[e[0] for e in ERRORS])
def test_misuse_raises_like_torch(name, fn, exc):
    with pytest.raises(exc) as theirs:
        fn(torch)
    match = None if name in TYPE_ONLY else "^" + re.escape(str(theirs.value)) + "$"
    with pytest.raises(exc, match=match):
        fn(ember)


def test_error_messages():
    with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called on this "
                                           r"optimizer since the last update\(\)\."):
        _twice_unscale(ember)
    with pytest.raises(RuntimeError, match=r"step\(\) has already been called since the last "
                                           r"update\(\)\."):
        _twice_step(ember)
    with pytest.raises(AssertionError, match=r"Attempted step but _scale is None.*scaler\.scale"):
        ember.amp.GradScaler("cpu").step(_ready(ember)[1])


def test_failed_step_leaves_the_state_unchanged():
    # a misuse error does not advance the optimizer's stage: the iteration can still finish
    w, opt, scaler = _ready(ember)
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError):
        scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(np_of(w), [-0.1, -0.1, -0.1])


def test_docstring_example():
    result = doctest.testmod(ember.amp.grad_scaler, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
