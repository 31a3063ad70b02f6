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
import os

import numpy as np

from ember.core import dtype as dt
from ember.core.device import as_device

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state", "fork_rng", "philox4x32", "DEFAULT_SEED",
           "STATE_BYTES"]

DEFAULT_SEED = 67280421310721  # torch's default CPU seed, so initial_seed() reads the same
STATE_BYTES = 16  # seed (uint64, little endian) then offset (uint64, little endian)

_MASK32 = 0xFFFFFFFF
_MASK64 = (1 << 64) - 1
_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_SHIFT32 = np.uint64(32)
_LOW32 = np.uint64(_MASK32)


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
    c0, c1, c2, c3 = (np.ascontiguousarray(c[:, i]) for i in range(4))
    p0, p1, t = np.empty_like(c0), np.empty_like(c0), np.empty_like(c0)
    for k0, k1 in _round_keys(key, rounds):
        np.multiply(c0, _M0, out=p0)  # 32x32 -> 64 bit products are exact in uint64
        np.multiply(c2, _M1, out=p1)
        # new (c0, c1, c2, c3) = (hi(p1) ^ c1 ^ k0, lo(p1), hi(p0) ^ c3 ^ k1, lo(p0))
        np.right_shift(p1, _SHIFT32, out=t)
        np.bitwise_xor(t, c1, out=c0)
        np.bitwise_xor(c0, np.uint64(k0), out=c0)
        np.bitwise_and(p1, _LOW32, out=c1)
        np.right_shift(p0, _SHIFT32, out=t)
        np.bitwise_xor(t, c3, out=c2)
        np.bitwise_xor(c2, np.uint64(k1), out=c2)
        np.bitwise_and(p0, _LOW32, out=c3)
    out = np.empty((c.shape[0], 4), np.uint32)
    for i, col in enumerate((c0, c1, c2, c3)):
        out[:, i] = col
    return out


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
    def words(self, n: int) -> np.ndarray:
        """The next ``n`` 32-bit words (uint32) of the stream; advances the offset."""
        blocks = (n + 3) // 4
        first = self._offset // 4
        if first + blocks > _MASK64:
            raise RuntimeError("Generator: the Philox counter space is exhausted; reseed")
        self._offset += 4 * blocks
        if n == 0:
            return np.empty(0, np.uint32)
        ctr = np.uint64(first) + np.arange(blocks, dtype=np.uint64)
        counters = np.zeros((blocks, 4), np.uint64)
        counters[:, 0] = ctr & _LOW32
        counters[:, 1] = ctr >> _SHIFT32
        return philox4x32(counters, (self._seed & _MASK32, self._seed >> 32)).reshape(-1)[:n]

    def uint64(self, n: int) -> np.ndarray:
        """``n`` 64-bit words (2 stream words each, low word first)."""
        w = self.words(2 * n).astype(np.uint64)
        return w[0::2] | (w[1::2] << _SHIFT32)

    def uniform(self, n: int, dtype: dt.DType = dt.float32) -> np.ndarray:
        """``n`` uniforms in [0, 1): float64 for float64 (53 bits), else float32."""
        if dtype is dt.float64:
            return (self.uint64(n) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
        bits = _UNIFORM_BITS.get(dtype, 24)
        w = self.words(n) >> np.uint32(32 - bits)
        return w.astype(np.float32) * np.float32(2.0 ** -bits)

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


_UNIFORM_BITS = {dt.float32: 24, dt.float16: 11, dt.bfloat16: 8}

default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (``torch.manual_seed``); returns it."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seed the default generator non-deterministically; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The default generator's initial seed."""
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state as a uint8 tensor (``torch.get_rng_state``)."""
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    """Restore the default generator's state (``torch.set_rng_state``)."""
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(enabled: bool = True):
    """Run a block and restore the default generator's state afterwards (``fork_rng``)."""
    if not enabled:
        yield
        return
    saved = default_generator.get_state()
    try:
        yield
    finally:
        default_generator.set_state(saved)
