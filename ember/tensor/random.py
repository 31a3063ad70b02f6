"""The random number generator: counter-based Philox4x32-10 whose whole state is (seed, offset).

Owns ``Generator``, the default generator and the conversions from 32-bit words to uniform,
normal and integer values. Knows no operators: the random ops' kernels ask a generator for
arrays of values and write them into tensors.

NOTE [Philox streams]
A draw of ``n`` 32-bit words from a generator at ``(seed, offset)`` is word ``k`` (``0 <= k < n``)
of the sequence ``W(i) = philox4x32_10(counter=(i mod 2**32, i >> 32, 0, 0),
key=(seed mod 2**32, seed >> 32))[i % 4 ...]``, i.e. block ``offset // 4 + k // 4``, lane
``k % 4``. Afterwards ``offset`` grows by ``n`` rounded up to a multiple of 4, so every draw
starts on a fresh block. Nothing else is hidden state, so a compiler that knows a call's
``(seed, offset)`` and how many words it takes reproduces eager results bit for bit.
The conversions, per output element ``j`` in row-major logical order:
- uniform float64: ``(u64(j) >> 11) * 2**-53`` with ``u64(j) = w[2j] | w[2j+1] << 32``;
  float32 / float16 / bfloat16: ``(w[j] >> (32 - b)) * 2**-b`` with b = 24 / 11 / 8 (the
  significand width, so values stay below 1 after rounding).
- normal (Box-Muller): pair ``p`` uses uniforms ``u[2p]``, ``u[2p+1]`` (53-bit for float64,
  24-bit otherwise): ``r = sqrt(-2 log(1 - u[2p]))``, element ``2p`` is ``r cos(2 pi u[2p+1])``,
  element ``2p+1`` is ``r sin(2 pi u[2p+1])``.
- integers in ``[low, high)``: ``low + u64(j) mod (high - low)`` (bias at most range / 2**64).
"""

from __future__ import annotations

import contextlib
import math
import os
import threading

import numpy as np

from ember.core import dtype as dt
from ember.core.device import as_device
from ember.memory.storage import new_cpu_array

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state", "fork_rng", "philox4x32", "DrawTape",
           "DEFAULT_SEED", "STATE_BYTES"]

DEFAULT_SEED = 67280421310721  # torch's default CPU seed, so initial_seed() reads the same
STATE_BYTES = 16  # seed (uint64, little endian) then offset (uint64, little endian)

_MASK32 = 0xFFFFFFFF
_MASK64 = (1 << 64) - 1
_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_SHIFT32 = np.uint64(32)
_LOW32 = np.uint64(_MASK32)
_U32 = np.uint32


def _round_keys(key: tuple[int, int], rounds: int) -> list[tuple[int, int]]:
    k0, k1 = key[0] & _MASK32, key[1] & _MASK32
    keys = []
    for _ in range(rounds):
        keys.append((k0, k1))
        k0, k1 = (k0 + _W0) & _MASK32, (k1 + _W1) & _MASK32
    return keys


def philox4x32(counters: np.ndarray, key: tuple[int, int], rounds: int = 10) -> np.ndarray:
    """The Philox4x32 block function (Salmon et al., SC'11) over many counters at once.

    Args:
        counters: ``(n, 4)`` array of 32-bit counter words.
        key: two 32-bit key words.
        rounds: number of rounds (10 is the standard Philox4x32-10).

    Returns:
        ``(n, 4)`` uint32 array of output words.
    """
    c = np.asarray(counters, dtype=np.uint64)
    if c.shape[0] <= _SCALAR_BLOCKS:
        return _philox_scalar(c.tolist(), _round_keys(key, rounds))
    keys = _key_rows(key, rounds)
    out = np.empty((c.shape[0], 4), np.uint32)
    rounds_ = _Rounds(min(c.shape[0], _CHUNK))
    for start in range(0, c.shape[0], _CHUNK):
        part = c[start:start + _CHUNK]
        rounds_.run(part[:, 0], part[:, 1], part[:, 2], part[:, 3], keys,
                    out[start:start + _CHUNK])
    return out


# NOTE [Philox in NumPy]
# A round maps lanes (c0, c1, c2, c3) to (hi(p1) ^ c1 ^ k0, lo(p1), hi(p0) ^ c3 ^ k1, lo(p0))
# with p0 = c0 * M0 and p1 = c2 * M1 exact in uint64. The kernel keeps X = (c0, c2) as the rows
# of a (2, m) uint64 array and never materialises c1 / c3: they are the lo halves of the
# previous round's products. Seen as uint32 (little endian: lo, hi, lo, hi, ...), a product
# row shifted by one word lines each hi(p) up with the previous lo(p) of the same lane, so
# ``Z[1:] = P32[1:] ^ Pprev32[:-1]`` (one contiguous uint32 xor over both rows) puts
# hi(p) ^ c_odd in the high half of every uint64 of Z (the low halves are junk). Then
# ``X = Z[::-1] >> 32`` (row swap: p1 feeds the new c0, p0 the new c2) and ``X ^= (k0, k1)``.
# That is four NumPy calls per round for all lanes (multiply, xor, shift, xor), no
# allocation; two product buffers alternate so the previous lo halves stay readable. Blocks go
# through in chunks of _CHUNK so the buffers stay in cache. Every value is the exact integer
# the scalar definition gives, so the stream is bit-for-bit the one in NOTE [Philox streams].
_CHUNK = 8192  # blocks per pass: each (2, m) uint64 buffer is 128 KiB
_M_ROWS = np.array([[0xD2511F53], [0xCD9E8D57]], np.uint64)  # (M0, M1) for rows (c0, c2)


def _key_rows(key: tuple[int, int], rounds: int) -> list[np.ndarray]:
    """Round keys as (2, 1) uint64 columns ``[[k0], [k1]]``, one per round."""
    return list(np.array(_round_keys(key, rounds), np.uint64).reshape(rounds, 2, 1))


class _Rounds:
    """Preallocated buffers for Philox rounds over up to ``m`` blocks (NOTE [Philox in NumPy])."""

    __slots__ = ("x", "p", "z", "m", "xor_args", "z_swapped")

    def __init__(self, m: int):
        self.x = np.empty((2, m), np.uint64)
        self.p = (np.empty((2, m), np.uint64), np.empty((2, m), np.uint64))
        self.z = np.empty((2, m), np.uint64)
        self.m = np.empty((2, m), np.uint64)
        self.m[...] = _M_ROWS
        p32 = [p.view(np.uint32) for p in self.p]
        z32 = self.z.view(np.uint32)
        # The round that writes p[i] reads the lo halves of p[1 - i].
        self.xor_args = [(p32[i][:, 1:], p32[1 - i][:, :-1], z32[:, 1:]) for i in (0, 1)]
        self.z_swapped = self.z[::-1]

    def run(self, c0, c1, c2, c3, keys: list[np.ndarray], out: np.ndarray) -> None:
        """Philox rounds ``keys`` over counter lanes ``c0..c3`` (length ``n <= m`` arrays or
        scalars, values below 2**32); writes the ``(n, 4)`` uint32 result into ``out``."""
        n = out.shape[0]
        if n != self.x.shape[1]:
            _Rounds(n).run(c0, c1, c2, c3, keys, out)
            return
        x, z_swapped, mul = self.x, self.z_swapped, self.m
        prev = self.p[1]
        x[0], x[1] = c0, c2
        prev[0], prev[1] = c3, c1  # only the lo halves are read: (c3, c1) as "lo(p0), lo(p1)"
        i = 0
        for k in keys:
            np.multiply(x, mul, self.p[i])
            np.bitwise_xor(*self.xor_args[i])
            np.right_shift(z_swapped, _SHIFT32, x)
            np.bitwise_xor(x, k, x)
            i ^= 1
        lo = self.p[i ^ 1].view(np.uint32)[::-1, 0::2]  # (lo(p1), lo(p0)) = (c1, c3)
        np.copyto(out[:, 0::2].T, x, casting="unsafe")
        np.copyto(out[:, 1::2].T, lo)


_SCALAR_BLOCKS = 4  # below this many blocks plain Python ints beat NumPy's per-call overhead


def _philox_scalar(counters: list, keys: list) -> np.ndarray:
    rows = []
    for c0, c1, c2, c3 in counters:
        for k0, k1 in keys:
            p0, p1 = c0 * 0xD2511F53, c2 * 0xCD9E8D57
            c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & _MASK32, (p0 >> 32) ^ c3 ^ k1, \
                p0 & _MASK32
        rows.append((c0, c1, c2, c3))
    return np.array(rows, dtype=np.uint32).reshape(-1, 4)


# NOTE [Bernoulli thresholds]
# For dtypes other than float64, bernoulli compares a float32 uniform u = (w >> 8) * 2**-24 (w a
# stream word) against p with NumPy's promotion: a Python float or int (and a np.float32) is
# cast to float32, a np.float64 keeps float64. Call the cast value q; it is exact in float64.
# u < q in that comparison dtype is the real inequality m * 2**-24 < q with m = w >> 8, because
# both sides are exact (u has at most 24 significant bits). Scaling by 2**24 is exact:
# m < q * 2**24. For an integer m and a real x, m < x  <=>  m < ceil(x) (x <= ceil(x) gives
# "=>", m <= ceil(x) - 1 < x gives "<="). With T = ceil(q * 2**24), an integer in [0, 2**24]
# because 0 <= q <= 1, and w = 256 m + r (0 <= r < 256): m < T  <=>  w < 256 T. So the keep
# mask is one integer comparison of the raw words against 256 T <= 2**32, bit for bit the
# float comparison (tests/tensor/test_random.py checks words on both sides of each threshold).
_F32_PROBE = np.empty(0, np.float32)


def uniform_threshold(p) -> int | None:
    """``t`` such that ``word < t`` iff the float32 uniform of ``word`` compares ``< p``.

    Returns None where NumPy would compare in a dtype other than float32 / float64 (so the
    caller keeps the float comparison). ``p`` must lie in [0, 1]; see NOTE [Bernoulli
    thresholds].
    """
    if type(p) not in (float, int, np.float32, np.float64):
        return None
    ct = np.result_type(_F32_PROBE, p)
    if ct != np.float32 and ct != np.float64:
        return None
    return math.ceil(float(ct.type(p)) * 16777216.0) << 8  # 2**24; exact for q in [0, 1]


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
    seed = int(seed)
    if not -(1 << 63) <= seed <= _MASK64:
        raise ValueError(f"manual_seed: seed {seed} does not fit in 64 bits; expected "
                         f"-2**63 <= seed < 2**64")
    return seed & _MASK64


class Generator:
    """A counter-based random number generator (``torch.Generator``): Philox4x32-10.

    Its whole state is ``(seed, offset)``; see NOTE [Philox streams] in this module.

    Args:
        device: the device whose random ops use it (``'cpu'``; ``'cuda'`` reserved).

    Example:
        >>> import ember
        >>> g = ember.Generator().manual_seed(0)
        >>> ember.rand(2, generator=g).shape
        ember.Size([2])
    """

    __slots__ = ("device", "_seed", "_offset")

    def __init__(self, device="cpu"):
        dev = as_device(device)
        if dev.type == "meta":
            raise RuntimeError("Generator: the meta device has no random numbers; expected a "
                               "'cpu' or 'cuda' device")
        self.device = dev
        self._seed = DEFAULT_SEED
        self._offset = 0

    # -- torch.Generator API ---------------------------------------------------------------
    def manual_seed(self, seed: int) -> Generator:
        """Set the seed (negative seeds wrap to 64 bits) and rewind the stream; returns self."""
        self._seed = _check_seed(seed)
        self._offset = 0
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy; returns the new seed."""
        new = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(new)
        return new

    def initial_seed(self) -> int:
        """The seed the current stream started from."""
        return self._seed

    def get_offset(self) -> int:
        """How many 32-bit words this generator has used since it was seeded."""
        return self._offset

    def set_offset(self, offset: int) -> Generator:
        """Move the stream to ``offset`` (a multiple of 4 words)."""
        if offset < 0 or offset % 4:
            raise RuntimeError(f"set_offset: offset must be a non-negative multiple of 4; "
                               f"got {offset}")
        self._offset = int(offset)
        return self

    def get_state(self):
        """The state as a uint8 tensor of 16 bytes: seed then offset, little-endian uint64."""
        from ember.tensor.tensor import from_numpy
        raw = np.array([self._seed, self._offset], dtype="<u8").view(np.uint8)
        return from_numpy(raw.copy())

    def set_state(self, new_state) -> Generator:
        """Restore a state returned by :meth:`get_state`.

        Raises:
            TypeError: ``new_state`` is not a uint8 tensor.
            RuntimeError: it does not hold exactly 16 bytes or lives off the CPU.
        """
        from ember.tensor.tensor import Tensor, numpy_view
        if not isinstance(new_state, Tensor) or new_state.dtype is not dt.uint8:
            got = new_state.dtype if isinstance(new_state, Tensor) else type(new_state).__name__
            raise TypeError(f"set_state: RNG state must be a uint8 (Byte) tensor; got {got}")
        if new_state.device.type != "cpu" or new_state.numel() != STATE_BYTES:
            raise RuntimeError(f"set_state: expected a CPU uint8 tensor of {STATE_BYTES} bytes "
                               f"(seed, offset); got {new_state.numel()} bytes on "
                               f"{new_state.device}")
        words = np.ascontiguousarray(numpy_view(new_state).reshape(-1)).view("<u8")
        seed, offset = int(words[0]), int(words[1])
        if offset % 4:
            raise RuntimeError(f"set_state: the offset must be a multiple of 4; got {offset}")
        self._seed, self._offset = seed, offset
        return self

    def clone_state(self) -> Generator:
        """A new generator with the same device and state."""
        g = Generator(self.device)
        g._seed, g._offset = self._seed, self._offset
        return g

    def __repr__(self) -> str:
        return f"<ember.Generator device={self.device} seed={self._seed} offset={self._offset}>"

    # -- drawing ---------------------------------------------------------------------------
    def _take(self, n: int) -> tuple[int, int]:
        """Reserve the blocks of an ``n``-word draw: (first block, number of blocks)."""
        blocks = (n + 3) // 4
        first = self._offset // 4
        if first + blocks > _MASK64:
            raise RuntimeError("Generator: the Philox counter space is exhausted; reseed")
        self._offset += 4 * blocks
        return first, blocks

    def _chunks(self, n: int):
        """Yield ``(start, words)`` over an ``n``-word draw: ``words`` (uint32, reused between
        chunks, so consume it before the next) are stream words ``start ..`` of the draw."""
        first, blocks = self._take(n)
        if blocks <= _SCALAR_BLOCKS:
            if n:
                ctr = [[(first + i) & _MASK32, (first + i) >> 32, 0, 0] for i in range(blocks)]
                keys = _round_keys((self._seed & _MASK32, self._seed >> 32), 10)
                yield 0, _philox_scalar(ctr, keys).reshape(-1)[:n]
            return
        keys = _key_rows((self._seed & _MASK32, self._seed >> 32), 10)
        rounds = _Rounds(min(blocks, _CHUNK))
        buf = np.empty((min(blocks, _CHUNK), 4), np.uint32)
        for start in range(0, blocks, _CHUNK):
            m = min(_CHUNK, blocks - start)
            ctr = np.arange(first + start, first + start + m, dtype=np.uint64)
            lo = ctr & _LOW32
            np.right_shift(ctr, _SHIFT32, ctr)
            out = buf[:m]
            rounds.run(lo, ctr, 0, 0, keys, out)
            yield 4 * start, out.reshape(-1)[:n - 4 * start]

    def words(self, n: int) -> np.ndarray:
        """The next ``n`` 32-bit words (uint32) of the stream; advances the offset."""
        out = np.empty(n, np.uint32)
        for start, w in self._chunks(n):
            out[start:start + w.shape[0]] = w
        return out

    def bernoulli_words(self, n: int, threshold: int) -> np.ndarray:
        """``n`` booleans ``word < threshold`` (``0 <= threshold <= 2**32``) over the next words.

        Inside ``DrawTape.recording()`` / ``replaying()`` the draw is kept or served by its
        address (NOTE [Replayed draws]); the values are the same either way.
        """
        if threshold > _MASK32:
            self._take(n)
            return np.ones(n, np.bool_)
        tapes = _taping.tapes
        if tapes:
            return _taped_bernoulli(self, n, threshold, tapes)
        return self._bernoulli_words(n, threshold)

    def _bernoulli_words(self, n: int, threshold: int) -> np.ndarray:
        out = np.empty(n, np.bool_)
        thr = _U32(threshold)
        for start, w in self._chunks(n):
            np.less(w, thr, out=out[start:start + w.shape[0]])
        return out

    def uint64(self, n: int) -> np.ndarray:
        """``n`` 64-bit words (2 stream words each, low word first)."""
        w = self.words(2 * n).astype(np.uint64)
        return w[0::2] | (w[1::2] << _SHIFT32)

    def uniform(self, n: int, dtype: dt.DType = dt.float32) -> np.ndarray:
        """``n`` uniforms in [0, 1): float64 for float64 (53 bits), else float32."""
        if dtype is dt.float64:
            return (self.uint64(n) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
        bits = _UNIFORM_BITS.get(dtype, 24)
        out = np.empty(n, np.float32)
        shift, scale = _U32(32 - bits), np.float32(2.0 ** -bits)
        for start, w in self._chunks(n):
            # (w >> (32 - bits)) < 2**24 converts to float32 exactly; the power-of-2 scale is
            # exact too, so this equals the reference (w >> s).astype(float32) * 2**-bits.
            np.right_shift(w, shift, out=w)
            dst = out[start:start + w.shape[0]]
            np.copyto(dst, w, casting="unsafe")
            np.multiply(dst, scale, out=dst)
        return out

    def normal(self, n: int, dtype: dt.DType = dt.float32) -> np.ndarray:
        """``n`` standard normals (float64 array) by Box-Muller over pairs of uniforms."""
        pairs = (n + 1) // 2
        u = self.uniform(2 * pairs, dt.float64 if dtype is dt.float64 else dt.float32)
        u = u.astype(np.float64)
        r = np.sqrt(-2.0 * np.log1p(-u[0::2]))  # 1 - u lies in (0, 1]: log never sees 0
        theta = (2.0 * np.pi) * u[1::2]
        out = np.empty(2 * pairs, np.float64)
        out[0::2] = r * np.cos(theta)
        out[1::2] = r * np.sin(theta)
        return out[:n]

    def integers(self, n: int, low: int, high: int) -> np.ndarray:
        """``n`` int64 values uniform in ``[low, high)`` (``high - low`` at most ``2**64``)."""
        span = high - low
        if not 0 < span <= 1 << 64:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                               f"from={low} >= to={high}")
        r = self.uint64(n)
        if span != 1 << 64:
            r = r % np.uint64(span)
        return (r + np.uint64(low & _MASK64)).view(np.int64)


# NOTE [Replayed draws]
# A draw's values are a function of its address: the generator's (seed, offset), the number of
# words, and what is computed from them (here the bernoulli threshold). Activation
# checkpointing re-runs a segment with the generator state restored, so each draw of the
# recomputation repeats a draw of the forward pass at the same address. A ``DrawTape`` that
# records the segment's bernoulli draws keeps them as bits (n / 8 bytes, from the caching
# allocator: 1/32 of a float32 mask); while it replays, a draw at a recorded address returns
# those bits and advances the offset as the draw would, without running Philox. The values
# are the ones the draw computes, so replay changes only time and the tape's bytes; a draw at
# any other address (another seed or offset, e.g. without the state restored) runs normally.
# Tapes stack per thread: every recording tape keeps each bernoulli draw made while it is
# active (replayed or not), and replaying tapes are searched innermost first.
class _Taping(threading.local):
    def __init__(self):
        self.tapes: list[tuple[DrawTape, bool]] = []  # (tape, replaying)


_taping = _Taping()


class DrawTape:
    """Bernoulli draws kept by address for replay (NOTE [Replayed draws]).

    Example:
        >>> import ember
        >>> tape, g = DrawTape(), ember.Generator().manual_seed(1)
        >>> with tape.recording():
        ...     a = ember.empty(64).bernoulli_(0.3, generator=g)
        >>> g.manual_seed(1)
        <ember.Generator device=cpu seed=1 offset=0>
        >>> with tape.replaying():
        ...     b = ember.empty(64).bernoulli_(0.3, generator=g)
        >>> bool((a == b).all()), tape.hits
        (True, 1)
    """

    __slots__ = ("_draws", "nbytes", "hits")

    def __init__(self):
        self._draws: dict[tuple, tuple] = {}  # address -> (storage, packed bits)
        self.nbytes = 0
        self.hits = 0

    def __len__(self) -> int:
        return len(self._draws)

    @contextlib.contextmanager
    def recording(self):
        """Within the block, this thread's bernoulli draws are kept on the tape."""
        with self._active(False):
            yield self

    @contextlib.contextmanager
    def replaying(self):
        """Within the block, draws at addresses on the tape return the kept values."""
        with self._active(True):
            yield self

    @contextlib.contextmanager
    def _active(self, replaying: bool):
        tapes = _taping.tapes
        entry = (self, replaying)
        tapes.append(entry)
        try:
            yield
        finally:
            if tapes[-1] is entry:
                tapes.pop()
            else:  # exited out of order
                tapes.remove(entry)

    def _keep(self, address: tuple, packed: tuple) -> None:
        if address not in self._draws:
            self._draws[address] = packed
            self.nbytes += packed[1].nbytes


def _pack(bits: np.ndarray) -> tuple:
    """``bits`` as (storage, uint8 array) of packed bits in allocator memory."""
    raw = np.packbits(bits)
    st, buf = new_cpu_array(raw.nbytes, raw.shape, raw.dtype)
    buf[...] = raw
    return st, buf


def _taped_bernoulli(g: Generator, n: int, threshold: int, tapes: list) -> np.ndarray:
    address = (g._seed, g._offset, n, threshold)
    for tape, replaying in reversed(tapes):
        if replaying:
            packed = tape._draws.get(address)
            if packed is not None:
                g._take(n)
                tape.hits += 1
                out = np.unpackbits(packed[1], count=n).view(np.bool_)
                break
    else:
        out, packed = g._bernoulli_words(n, threshold), None
    for tape, replaying in tapes:
        if not replaying:
            if packed is None:
                packed = _pack(out)
            tape._keep(address, packed)
    return out


_UNIFORM_BITS = {dt.float32: 24, dt.float16: 11, dt.bfloat16: 8}

default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (``torch.manual_seed``); returns it.

    Example:
        >>> _ = ember.manual_seed(0)
        >>> a = ember.rand(3)
        >>> _ = ember.manual_seed(0)
        >>> ember.equal(a, ember.rand(3))
        True
    """
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seed the default generator non-deterministically; returns the seed.

    Example:
        >>> s = ember.seed()
        >>> s == ember.initial_seed()
        True
    """
    return default_generator.seed()


def initial_seed() -> int:
    """The default generator's initial seed.

    Example:
        >>> _ = ember.manual_seed(7)
        >>> ember.initial_seed()
        7
    """
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state as a uint8 tensor (``torch.get_rng_state``).

    Example:
        >>> state = ember.get_rng_state()
        >>> a = ember.randn(2)
        >>> ember.set_rng_state(state)
        >>> ember.equal(a, ember.randn(2))
        True
    """
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    """Restore the default generator's state (``torch.set_rng_state``).

    Example:
        >>> state = ember.get_rng_state()
        >>> a = ember.rand(2)
        >>> ember.set_rng_state(state)
        >>> ember.equal(a, ember.rand(2))
        True
    """
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(enabled: bool = True):
    """Run a block and restore the default generator's state afterwards (``fork_rng``).

    Example:
        >>> with ember.random.fork_rng():
        ...     a = ember.rand(2)
        >>> ember.equal(a, ember.rand(2))  # the draws inside did not advance the generator
        True
    """
    if not enabled:
        yield
        return
    saved = default_generator.get_state()
    try:
        yield
    finally:
        default_generator.set_state(saved)
