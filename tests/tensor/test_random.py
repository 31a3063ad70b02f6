"""The Philox generator and the random ops: known answers, determinism, state, statistics.

Every statistical check uses a fixed seed, so it is deterministic: its bound either always
holds or never does (no flakes). The bounds are loose (many standard errors) so that a
correct sampler passes for any seed, and a broken one (wrong range, wrong moments) fails.
"""

import hashlib
import math

import numpy as np
import pytest

import ember
from ember.tensor.random import STATE_BYTES, DrawTape, Generator, philox4x32


def gen(seed=0):
    return Generator().manual_seed(seed)


# -- Philox4x32-10 known-answer tests (Random123's kat_vectors) ---------------------------------
@pytest.mark.parametrize("counter,key,expected", [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
])
def test_philox_known_answers(counter, key, expected):
    out = philox4x32(np.array([counter], dtype=np.uint64), key)
    assert tuple(int(v) for v in out[0]) == expected


def test_philox_vectorised_matches_one_at_a_time():
    ctrs = np.array([[i, i * 7, 3, 0] for i in range(5)], dtype=np.uint64)
    many = philox4x32(ctrs, (1, 2))
    for i in range(5):
        assert (philox4x32(ctrs[i:i + 1], (1, 2))[0] == many[i]).all()


def test_stream_is_philox_of_seed_and_offset():
    # NOTE [Philox streams]: word k of a draw at offset o is block o//4 + k//4, lane k%4.
    seed = 0x1234_5678_9ABC_DEF0
    g = gen(seed)
    g.words(3)  # one block used; the offset rounds up to 4
    assert g.get_offset() == 4
    words = g.words(6)
    blocks = philox4x32(np.array([[1, 0, 0, 0], [2, 0, 0, 0]], dtype=np.uint64),
                        (seed & 0xFFFFFFFF, seed >> 32)).reshape(-1)
    assert (words == blocks[:6]).all()
    assert g.get_offset() == 12


# -- determinism and state ------------------------------------------------------------------
DRAWS = {
    "rand": lambda g: ember.rand(5, 3, generator=g),
    "randn": lambda g: ember.randn(7, dtype=ember.float64, generator=g),
    "randint": lambda g: ember.randint(-5, 5, (9,), generator=g),
    "randperm": lambda g: ember.randperm(10, generator=g),
    "normal": lambda g: ember.normal(ember.zeros(4), ember.ones(4), generator=g),
    "bernoulli": lambda g: ember.bernoulli(ember.full((6,), 0.5), generator=g),
    "multinomial": lambda g: ember.multinomial(ember.tensor([1.0, 2, 3]), 20, True, generator=g),
    "uniform_": lambda g: ember.empty(5).uniform_(-1, 1, generator=g),
    "random_": lambda g: ember.empty(5, dtype=ember.int32).random_(generator=g),
    "exponential_": lambda g: ember.empty(5).exponential_(generator=g),
}


def _same(a, b) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and \
        np.array_equal(a.numpy(), b.numpy(), equal_nan=True)


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_same_seed_same_values(name):
    assert _same(DRAWS[name](gen(42)), DRAWS[name](gen(42)))


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_successive_draws_differ(name):
    g = gen(42)
    first, second = DRAWS[name](g), DRAWS[name](g)
    assert not _same(first, second)


def test_different_seeds_differ():
    assert not _same(ember.rand(10, generator=gen(1)), ember.rand(10, generator=gen(2)))


def test_default_generator_and_manual_seed():
    ember.manual_seed(123)
    a = ember.rand(8)
    assert ember.initial_seed() == 123
    ember.manual_seed(123)
    assert _same(a, ember.rand(8))
    assert ember.manual_seed(5) is ember.default_generator


def test_state_round_trip():
    g = gen(7)
    ember.rand(3, generator=g)
    state = g.get_state()
    assert state.dtype == ember.uint8 and state.shape == (STATE_BYTES,)
    a = ember.randn(5, generator=g)
    g.set_state(state)
    assert _same(a, ember.randn(5, generator=g))
    other = Generator().set_state(state)
    assert other.initial_seed() == 7 and other.get_offset() == g.get_offset() - 8


def test_global_rng_state_round_trip():
    ember.manual_seed(0)
    state = ember.get_rng_state()
    a = ember.rand(4)
    ember.set_rng_state(state)
    assert _same(a, ember.rand(4))


def test_fork_rng_restores_default_state():
    ember.manual_seed(3)
    state = ember.get_rng_state()
    with ember.fork_rng():
        ember.rand(100)
    assert np.array_equal(ember.get_rng_state().numpy(), state.numpy())


def test_seed_and_clone_state():
    g = Generator()
    s = g.seed()
    assert g.initial_seed() == s and 0 <= s < 2 ** 64
    c = g.clone_state()
    assert _same(ember.rand(3, generator=g), ember.rand(3, generator=c))


def test_negative_seed_wraps_like_torch():
    assert gen(-1).initial_seed() == 2 ** 64 - 1


@pytest.mark.parametrize("state,error,match", [
    (ember.zeros(16), TypeError, "uint8"),
    ([1, 2], TypeError, "uint8"),
    (ember.zeros(3, dtype=ember.uint8), RuntimeError, "16 bytes"),
])
def test_set_state_validates(state, error, match):
    with pytest.raises(error, match=match):
        Generator().set_state(state)


@pytest.mark.parametrize("seed,error", [(2 ** 64, ValueError), (-(2 ** 63) - 1, ValueError),
                                        (1.5, RuntimeError)])
def test_manual_seed_validates(seed, error):
    with pytest.raises(error):
        Generator().manual_seed(seed)


def test_generator_device():
    assert Generator().device == ember.device("cpu")
    with pytest.raises(RuntimeError, match="meta"):
        Generator(device="meta")


# -- meta never draws; errors never draw ------------------------------------------------------
def test_meta_device_does_not_advance_generator():
    g = gen(1)
    x = ember.rand(3, 4, device="meta", generator=g)
    y = ember.empty(5, device="meta").normal_(generator=g)
    z = ember.multinomial(ember.empty(2, 3, device="meta"), 2, generator=g)
    assert (x.device.type, y.device.type, z.shape) == ("meta", "meta", (2, 2))
    assert g.get_offset() == 0


def test_rejected_call_does_not_advance_generator():
    g = gen(1)
    with pytest.raises(RuntimeError):
        ember.randint(5, 5, (3,), generator=g)
    with pytest.raises(RuntimeError):
        ember.multinomial(ember.tensor([-1.0, 2.0]), 1, generator=g)
    assert g.get_offset() == 0


def test_inplace_bumps_version_once_and_writes_views():
    base = ember.zeros(4, 6)
    view = base[:, ::2]
    v = base._version
    view.uniform_(1, 2, generator=gen(0))
    assert base._version == v + 1
    b = base.numpy()
    assert ((b[:, ::2] >= 1) & (b[:, ::2] < 2)).all() and (b[:, 1::2] == 0).all()


def test_noncontiguous_fill_follows_logical_order():
    # The same draw lands on the same logical element whatever the memory layout.
    a = ember.empty(3, 4).normal_(generator=gen(9))
    t = ember.empty(4, 3).t().normal_(generator=gen(9))
    assert np.array_equal(a.numpy(), t.numpy())


def test_generator_device_mismatch_and_type():
    with pytest.raises(TypeError, match="Generator"):
        ember.rand(2, generator=object())


# -- distributions (fixed seeds: deterministic) -------------------------------------------------
N = 100_000


def test_uniform_moments_and_range():
    for dtype in (ember.float32, ember.float64, ember.float16, ember.bfloat16):
        x = ember.rand(N, generator=gen(11), dtype=dtype).float().numpy()
        assert x.min() >= 0.0 and x.max() < 1.0
        assert abs(x.mean() - 0.5) < 0.01 and abs(x.var() - 1 / 12) < 0.005


def test_uniform_bounds():
    x = ember.empty(N, dtype=ember.float64).uniform_(-3, 5, generator=gen(2)).numpy()
    assert x.min() >= -3 and x.max() < 5 and abs(x.mean() - 1.0) < 0.05


def test_normal_moments():
    x = ember.randn(N, generator=gen(12), dtype=ember.float64).numpy()
    assert abs(x.mean()) < 0.02 and abs(x.std() - 1) < 0.02
    assert abs(np.mean(np.abs(x) < 1) - 0.6827) < 0.01
    y = ember.normal(2.0, 3.0, (N,), generator=gen(13)).numpy()
    assert abs(y.mean() - 2) < 0.05 and abs(y.std() - 3) < 0.05
    z = ember.empty(N).normal_(-1, 0.5, generator=gen(14)).numpy()
    assert abs(z.mean() + 1) < 0.02 and abs(z.std() - 0.5) < 0.02


def test_normal_tensor_overloads_broadcast():
    mean = ember.tensor([[0.0], [100.0]])
    std = ember.tensor([1.0, 0.0, 2.0])
    x = ember.normal(mean, std, generator=gen(3))
    assert x.shape == (2, 3)
    assert x[1, 1].item() == 100.0 and x[0, 1].item() == 0.0
    assert ember.normal(5.0, ember.zeros(4), generator=gen(3)).tolist() == [5.0] * 4
    assert ember.normal(ember.full((2,), 7.0), 0.0, generator=gen(3)).tolist() == [7.0] * 2


def test_randint_range_and_uniformity():
    x = ember.randint(-3, 4, (N,), generator=gen(15)).numpy()
    assert x.min() == -3 and x.max() == 3
    counts = np.bincount(x + 3)
    assert (np.abs(counts / N - 1 / 7) < 0.01).all()
    assert ember.randint(10, (5,)).dtype == ember.int64


def test_randint_full_int64_range():
    x = ember.empty(1000, dtype=ember.int64).random_(-(2 ** 63), None, generator=gen(4))
    a = x.numpy()
    assert (a < 0).any() and (a > 0).any()


def test_random_defaults_follow_torch():
    f = ember.empty(N).random_(generator=gen(5)).numpy()
    assert f.min() >= 0 and f.max() <= 2 ** 24 and (f == np.round(f)).all()
    h = ember.empty(N, dtype=ember.float16).random_(generator=gen(5)).float().numpy()
    assert h.max() <= 2 ** 11
    i8 = ember.empty(N, dtype=ember.int8).random_(generator=gen(5)).numpy()
    assert i8.min() == 0 and i8.max() == 127
    b = ember.empty(1000, dtype=ember.bool).random_(generator=gen(5)).numpy()
    assert 0.4 < b.mean() < 0.6
    r = ember.empty(N).random_(3, generator=gen(5)).numpy()
    assert set(np.unique(r)) == {0.0, 1.0, 2.0}


def test_randperm_is_permutation():
    for n in (0, 1, 2, 17, 1000):
        p = ember.randperm(n, generator=gen(n)).numpy()
        assert sorted(p.tolist()) == list(range(n))
    assert ember.randperm(1000, generator=gen(6)).tolist() != list(range(1000))
    assert ember.randperm(5, dtype=ember.float32).dtype == ember.float32


def test_bernoulli_values_and_rate():
    x = ember.bernoulli(ember.full((N,), 0.3), generator=gen(16)).numpy()
    assert set(np.unique(x)) <= {0.0, 1.0} and abs(x.mean() - 0.3) < 0.01
    edge = ember.bernoulli(ember.tensor([0.0, 1.0] * 50), generator=gen(16)).numpy()
    assert (edge == np.array([0.0, 1.0] * 50)).all()
    y = ember.zeros(N, dtype=ember.int64).bernoulli_(0.75, generator=gen(17)).numpy()
    assert set(np.unique(y)) == {0, 1} and abs(y.mean() - 0.75) < 0.01
    z = ember.bernoulli(ember.zeros(N), 0.5, generator=gen(18)).numpy()
    assert abs(z.mean() - 0.5) < 0.01


def test_bernoulli_tensor_p_broadcasts():
    x = ember.zeros(1000, 3).bernoulli_(ember.tensor([0.0, 1.0, 0.5]), generator=gen(1))
    a = x.numpy()
    assert (a[:, 0] == 0).all() and (a[:, 1] == 1).all() and 0.4 < a[:, 2].mean() < 0.6


def test_multinomial_without_replacement_distinct():
    probs = ember.rand(50, 20, generator=gen(19)) + 0.01
    idx = ember.multinomial(probs, 20, generator=gen(20)).numpy()
    assert idx.shape == (50, 20)
    assert all(sorted(row.tolist()) == list(range(20)) for row in idx)
    few = ember.multinomial(ember.tensor([0.0, 5.0, 0.0, 1.0]), 2, generator=gen(1)).numpy()
    assert sorted(few.tolist()) == [1, 3]


def test_multinomial_frequencies():
    p = np.array([0.1, 0.0, 0.6, 0.3])
    draws = ember.multinomial(ember.tensor(p * 7), N, True, generator=gen(21)).numpy()
    freq = np.bincount(draws, minlength=4) / N
    assert freq[1] == 0 and (np.abs(freq - p) < 0.01).all()
    first = ember.multinomial(ember.tensor(p).expand(20000, 4), 1, generator=gen(22)).numpy()
    assert (np.abs(np.bincount(first[:, 0], minlength=4) / 20000 - p) < 0.015).all()


def test_exponential_geometric_cauchy_log_normal():
    e = ember.empty(N, dtype=ember.float64).exponential_(2.0, generator=gen(23)).numpy()
    assert e.min() >= 0 and abs(e.mean() - 0.5) < 0.01
    g = ember.empty(N).geometric_(0.25, generator=gen(24)).numpy()
    assert g.min() >= 1 and (g == np.round(g)).all() and abs(g.mean() - 4) < 0.1
    c = ember.empty(N).cauchy_(1.0, 2.0, generator=gen(25)).numpy()
    assert abs(np.median(c) - 1.0) < 0.05
    ln = ember.empty(N, dtype=ember.float64).log_normal_(0.0, 0.25, generator=gen(26)).numpy()
    assert ln.min() > 0 and abs(np.log(ln).mean()) < 0.01 and abs(np.log(ln).std() - 0.25) < 0.01


def test_like_factories():
    x = ember.zeros(3, 2, dtype=ember.float64)
    assert ember.rand_like(x).dtype == ember.float64 and ember.randn_like(x).shape == (3, 2)
    r = ember.randint_like(x, 3, 6, generator=gen(1)).numpy()
    assert r.dtype == np.float64 and r.min() >= 3 and r.max() < 6
    assert ember.randint_like(ember.zeros(4, dtype=ember.int32), 2).dtype == ember.int32


def test_factory_out_and_requires_grad():
    out = ember.empty(2, 2, dtype=ember.float64)
    assert ember.rand(2, 2, out=out) is out and out.dtype == ember.float64
    assert ember.randn(3, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="floating point"):
        ember.randint(0, 3, (2,), requires_grad=True)


# -- errors like torch ------------------------------------------------------------------------
@pytest.mark.parametrize("call,error,match", [
    (lambda: ember.randint(5, 5, (3,)), RuntimeError, "random_ expects 'from' to be less"),
    (lambda: ember.randint(6, 2, (3,)), RuntimeError, "from=6 >= to=2"),
    (lambda: ember.randperm(-1), RuntimeError, "negative dimension"),
    (lambda: ember.multinomial(ember.tensor([0.5, -0.1]), 1), RuntimeError,
     "probability tensor contains"),
    (lambda: ember.multinomial(ember.tensor([1.0, 1.0]), 3), RuntimeError,
     "without replacement"),
    (lambda: ember.multinomial(ember.zeros(2), 1), RuntimeError, r"sum of probabilities <= 0"),
    (lambda: ember.rand(3, dtype=ember.int64), NotImplementedError, "Long"),
    (lambda: ember.normal(0.0, 1.0), TypeError, "size"),
    (lambda: ember.zeros(3).uniform_(1, 0), RuntimeError, r"\[from, to\)"),
    (lambda: ember.zeros(3).expand(2, 3).normal_(), RuntimeError, "single memory location"),
    (lambda: ember.zeros(3, dtype=ember.uint8).random_(-1, 3), RuntimeError,
     "from is out of bounds"),
    (lambda: ember.bernoulli(ember.tensor([1.5])), RuntimeError, "p_in"),
])
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


# -- as_tensor shares NumPy memory -------------------------------------------------------------
def test_as_tensor_shares_numpy_memory():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = ember.as_tensor(a)
    a[0, 0] = 42
    assert t[0, 0].item() == 42
    t2 = ember.as_tensor(a, dtype=ember.float64)  # a dtype change copies
    a[0, 1] = -1
    assert t2[0, 1].item() == 1.0
    assert ember.as_tensor([1, 2]).dtype == ember.int64


def test_linspace_endpoints_exact():
    for steps in (2, 3, 10, 1001):
        x = ember.linspace(-1.7, 3.3, steps).numpy()
        assert x[0] == np.float32(-1.7) and x[-1] == np.float32(3.3)
    assert math.isclose(ember.logspace(0, 3, 4, base=2.0)[-1].item(), 8.0)


# -- pinned streams: optimisations of the generator must not change a single bit -------------------
def _digest(a) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]


def _pinned_draws():
    g = gen(0x0123_4567_89AB_CDEF)
    yield "words", g.words(1_000_003)
    g.set_offset(4 * ((1 << 32) - 5000))  # crosses the 2**32-block boundary (counter word 1)
    yield "words_wrap", g.words(40_001)
    g = gen(7)
    for name in ("float32", "float16", "bfloat16", "float64"):
        yield "uniform_" + name, g.uniform(250_001, getattr(ember, name))
    # normals go through libm's log / cos / sin, whose last bits vary with the CPU's SIMD
    # level: test_normal_is_box_muller_of_the_stream checks them against the pinned uniforms
    g.normal(100_001, ember.float32)
    g.normal(100_001, ember.float64)
    yield "integers", g.integers(100_001, -3, 1000)
    g = gen(11)
    for p in (0.0, 1.0, 0.1, 0.9, 0.5, 2.0 ** -24, 3 * 2.0 ** -25, 1 - 2.0 ** -25,
              0.1 + 2.0 ** -40, 1 / 3):
        for dtype in (ember.float32, ember.float64, ember.float16, ember.int64):
            t = ember.zeros(100_003, dtype=dtype).bernoulli_(p, generator=g)
            yield f"bernoulli_{p!r}_{dtype}", t.numpy()
    probs = ember.tensor(np.linspace(0, 1, 30_001), dtype=ember.float32)
    yield "bernoulli_tensor", ember.bernoulli(probs, generator=g).numpy()
    yield "rand_offset", np.array([g.get_offset()])


# Computed with the original (pre-optimisation) generator, commit 7d25013.
PINNED = {
    'words': '2c56401f5cb34596',
    'words_wrap': '6117c5bfecff05d9',
    'uniform_float32': '184ff9faeadc9b59',
    'uniform_float16': '8f48204255b1c42a',
    'uniform_bfloat16': '8148293ca6ff4cb0',
    'uniform_float64': '421cbc39e0b66937',
    'integers': 'e13a82552cb43156',
    'bernoulli_0.0_ember.float32': '08cd1631e83e5086',
    'bernoulli_0.0_ember.float64': '4a7b5bc9c7b43e51',
    'bernoulli_0.0_ember.float16': '7bc257f75a41c35a',
    'bernoulli_0.0_ember.int64': '4a7b5bc9c7b43e51',
    'bernoulli_1.0_ember.float32': '2719bea47bcadb87',
    'bernoulli_1.0_ember.float64': 'd6c938b005a6ce43',
    'bernoulli_1.0_ember.float16': 'a383c9d406b1793b',
    'bernoulli_1.0_ember.int64': 'e3e245dab480a606',
    'bernoulli_0.1_ember.float32': '0e69ef0d22328417',
    'bernoulli_0.1_ember.float64': '21d1a4d045473f6b',
    'bernoulli_0.1_ember.float16': 'b113f943f164fadd',
    'bernoulli_0.1_ember.int64': '08cd26508db279ac',
    'bernoulli_0.9_ember.float32': '20f056cbdca4221a',
    'bernoulli_0.9_ember.float64': 'd9ac28225be0ff3f',
    'bernoulli_0.9_ember.float16': 'e83a808926c88cef',
    'bernoulli_0.9_ember.int64': '8d96a7bcc1e8f7ae',
    'bernoulli_0.5_ember.float32': '5c53e0f7a95b555d',
    'bernoulli_0.5_ember.float64': '66e4d2968c31ce51',
    'bernoulli_0.5_ember.float16': 'efa9842e291b9cfa',
    'bernoulli_0.5_ember.int64': 'e01cbc7f7595d071',
    'bernoulli_5.960464477539063e-08_ember.float32': '08cd1631e83e5086',
    'bernoulli_5.960464477539063e-08_ember.float64': '4a7b5bc9c7b43e51',
    'bernoulli_5.960464477539063e-08_ember.float16': '7bc257f75a41c35a',
    'bernoulli_5.960464477539063e-08_ember.int64': '4a7b5bc9c7b43e51',
    'bernoulli_8.940696716308594e-08_ember.float32': '08cd1631e83e5086',
    'bernoulli_8.940696716308594e-08_ember.float64': '4a7b5bc9c7b43e51',
    'bernoulli_8.940696716308594e-08_ember.float16': '7bc257f75a41c35a',
    'bernoulli_8.940696716308594e-08_ember.int64': '4a7b5bc9c7b43e51',
    'bernoulli_0.9999999701976776_ember.float32': '2719bea47bcadb87',
    'bernoulli_0.9999999701976776_ember.float64': 'd6c938b005a6ce43',
    'bernoulli_0.9999999701976776_ember.float16': 'a383c9d406b1793b',
    'bernoulli_0.9999999701976776_ember.int64': 'e3e245dab480a606',
    'bernoulli_0.1000000000009095_ember.float32': 'b02ec0c6c69d3dd4',
    'bernoulli_0.1000000000009095_ember.float64': 'd8e104a795d9b91f',
    'bernoulli_0.1000000000009095_ember.float16': 'e1c1849e27a13db3',
    'bernoulli_0.1000000000009095_ember.int64': 'd042d49301e9b287',
    'bernoulli_0.3333333333333333_ember.float32': 'fb6e68e3d986c234',
    'bernoulli_0.3333333333333333_ember.float64': 'af1d0d0eff487219',
    'bernoulli_0.3333333333333333_ember.float16': '7e650412b1f6bdf0',
    'bernoulli_0.3333333333333333_ember.int64': 'fd1b85b146e55d32',
    'bernoulli_tensor': 'dfb9549f3aa3f3a0',
    'rand_offset': 'dfdc7c9c8197ec3f',
}


def test_pinned_stream_hashes():
    got = {name: _digest(a) for name, a in _pinned_draws()}
    assert got == PINNED


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=str)
def test_normal_is_box_muller_of_the_stream(dtype):
    """NOTE [Philox streams]: normal pair p is Box-Muller of uniforms 2p and 2p + 1 (the
    uniforms are pinned bit for bit above); checked against scalar libm, odd count included."""
    n = 2_001
    g = gen(7)
    u = g.uniform(n + 1, dtype).astype(np.float64)
    after = g.get_offset()
    z = gen(7).normal(n, dtype)
    ref = []
    for p in range((n + 1) // 2):
        r, theta = math.sqrt(-2.0 * math.log1p(-u[2 * p])), 2.0 * math.pi * u[2 * p + 1]
        ref += [r * math.cos(theta), r * math.sin(theta)]
    np.testing.assert_allclose(z, ref[:n], rtol=1e-13, atol=1e-13)
    g2 = gen(7)
    g2.normal(n, dtype)
    assert g2.get_offset() == after


# NOTE [Bernoulli thresholds]: the integer keep-mask must equal the float comparison bit for bit.
_EDGE_P = [0.0, 1.0, 0.5, 0.1, 0.9, 1 / 3, 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -25, 1 - 2.0 ** -24,
           1 - 2.0 ** -25, 1 - 3 * 2.0 ** -26, 0.1 + 2.0 ** -40, 5e-324, 0, 1,
           0.75 + 2.0 ** -30, 0.5 + 2.0 ** -30, np.float64(0.75 + 2.0 ** -30),
           np.float32(0.1), np.float64(0.1), np.float64(2.0 ** -24 + 2.0 ** -60),
           np.float64(1 - 2.0 ** -53), np.float32(1 - 2.0 ** -24)]


@pytest.mark.parametrize("p", _EDGE_P, ids=repr)
def test_bernoulli_threshold_matches_float_comparison(p):
    from ember.tensor.random import uniform_threshold
    t = uniform_threshold(p)
    assert t is not None and 0 <= t <= 1 << 32
    near = np.array([base + d for d in (-257, -256, -255, -1, 0, 1, 255, 256)
                     for base in (t, 1 << 31, 0x1999_9900)], dtype=np.int64)
    words = np.concatenate([near[(near >= 0) & (near < 1 << 32)].astype(np.uint32),
                            gen(3).words(20_000), np.array([0, 255, 256, 0xFFFFFFFF], np.uint32)])
    reference = ((words >> np.uint32(8)).astype(np.float32) * np.float32(2.0 ** -24)) < p
    assert ((words.astype(np.uint64) < t) == reference).all()
    g1, g2 = gen(9), gen(9)
    assert (g1.bernoulli_words(1001, t) == (g2.uniform(1001) < p)).all()


def test_bernoulli_threshold_declines_other_types():
    from ember.tensor.random import uniform_threshold
    assert uniform_threshold(np.longdouble(0.5)) is None or np.longdouble is np.float64
    assert uniform_threshold(np.array([0.5])) is None


# -- NOTE [Replayed draws] --------------------------------------------------------------------------
def _mask(g, n=1_000, p=0.3):
    return ember.empty(n).bernoulli_(p, generator=g)


def test_draw_tape_replays_a_draw_at_its_address():
    tape = DrawTape()
    g = gen(5)
    g.set_offset(40)
    before = ember.memory.memory_allocated()
    with tape.recording():
        a = _mask(g)
    assert len(tape) == 1 and tape.nbytes == 125  # 1_000 bits
    assert ember.memory.memory_allocated() - before >= 125 + a.numel() * 4  # allocator bytes
    after = g.get_offset()
    g.set_offset(40)
    with tape.replaying():
        b = _mask(g)
    assert tape.hits == 1 and same_array(a, b) and g.get_offset() == after
    # the replayed values are what the draw computes: compare with an untaped draw
    assert same_array(_mask(gen(5).set_offset(40)), a)


def test_draw_tape_other_addresses_draw_normally():
    tape = DrawTape()
    with tape.recording():
        _mask(gen(5))
    for g in (gen(6), gen(5).set_offset(4)):  # another seed, another offset
        with tape.replaying():
            c = _mask(g)
        assert tape.hits == 0
        assert same_array(c, _mask(g.clone_state().set_offset(g.get_offset() - 1_000)))
    with tape.replaying():  # another threshold at the same address
        d = _mask(gen(5), p=0.5)
    assert tape.hits == 0 and same_array(d, _mask(gen(5), p=0.5))
    with tape.recording():  # p = 1 draws nothing and keeps nothing
        assert bool(_mask(gen(5), p=1.0).all())
    assert len(tape) == 1


def test_draw_tapes_stack():
    outer, inner = DrawTape(), DrawTape()
    with outer.recording(), inner.recording():
        a = _mask(gen(3))
    assert len(outer) == len(inner) == 1
    late = DrawTape()
    with outer.replaying(), late.recording():  # a replayed draw is kept by recording tapes
        b = _mask(gen(3))
    assert outer.hits == 1 and len(late) == 1 and same_array(a, b)
    with late.replaying():
        assert same_array(_mask(gen(3)), a) and late.hits == 1
    with pytest.raises(ValueError):
        with outer.recording():
            raise ValueError("the tape leaves the stack on errors")
    with outer.replaying():  # nothing is left recording
        _mask(gen(9))
    assert len(outer) == 1


def same_array(a, b) -> bool:
    return a.shape == b.shape and bool((a == b).all())


def test_random_namespace_mirrors_torch_random():
    """``ember.random`` holds what ``torch.random`` does, sharing the default generator."""
    import torch

    for name in ("fork_rng", "get_rng_state", "set_rng_state", "manual_seed", "seed",
                 "initial_seed", "default_generator"):
        assert hasattr(torch.random, name) and hasattr(ember.random, name), name
    assert ember.random.manual_seed(7) is ember.random.default_generator
    assert ember.random.initial_seed() == 7
    before = ember.rand(3)
    ember.random.manual_seed(7)
    with ember.random.fork_rng():
        ember.rand(100)
    np.testing.assert_array_equal(ember.rand(3).numpy(), before.numpy())
