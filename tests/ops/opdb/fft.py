"""Op-table entries: ``ember.fft`` against ``torch.fft``.

Transforms: every one-dimensional and n-dimensional transform over real and complex inputs
in hostile layouts, odd and even sizes, ``n``/``s`` that trim and pad, every ``norm``, with
torch's errors. Complex inputs are built inside the entry from a real ``(..., 2)`` tensor
(``view_as_complex``, then a view that makes them non-contiguous) and complex results are
compared as ``view_as_real``, so the generic gradient tests and gradcheck see real tensors
on both ends and check the complex gradients in between. Tolerances: a DFT's rounding
error is at most ``eps * (points transformed) * max |input|``.
Frequencies (``fftfreq``/``rfftfreq``: lengths 0, 1, even and odd, spacings of either sign
and zero, every floating dtype) and shifts (``fftshift``/``ifftshift`` over hostile layouts,
every dim, one dim, several, negative and repeated dims), with torch's errors.
"""

from __future__ import annotations

import itertools

import ember
from tests.opinfo import ALL, ErrorInput, OpInfo, SampleInput, hostile, make

MAX_POINTS, MAX_ABS = 64, 3.0  # the largest transform in the samples; inputs lie in [-3, 3]
EPS = {"float32": 2.0 ** -23, "float64": 2.0 ** -52}
TOL = {d: (4 * e * MAX_POINTS, 4 * e * MAX_POINTS * MAX_ABS) for d, e in EPS.items()}
NORMS = (None, "backward", "ortho", "forward")
# views applied to a freshly built complex tensor so that the transform reads strided memory
VIEWS = {"contiguous": lambda z: z, "transposed": lambda z: z.transpose(0, -1),
         "stepped": lambda z: z[::2], "offset": lambda z: z[1:]}


def _complex_input(lib, x, view):
    """A complex tensor from a real ``(..., 2)`` one, then seen through ``VIEWS[view]``."""
    return VIEWS[view](lib.view_as_complex(x))


def _real_result(lib, t):
    return lib.view_as_real(t.resolve_conj()) if t.is_complex() else t


def _source_shape(shape, view):
    """The shape to build so that ``VIEWS[view]`` of it has ``shape``."""
    if view == "transposed":
        return shape[-1:] + shape[1:-1] + shape[:1] if len(shape) > 1 else shape
    if view == "stepped":
        return (2 * shape[0],) + shape[1:]
    if view == "offset":
        return (shape[0] + 1,) + shape[1:]
    return shape


def _transform(name, complex_input):
    def fn(lib, x, *args, view="contiguous", **kw):
        z = _complex_input(lib, x, view) if complex_input else x
        return _real_result(lib, getattr(lib.fft, name)(z, *args, **kw))
    return fn


# (shape, dim, lengths n to try) of the one-dimensional transforms
ONE_D = [((5,), -1, (None, 3, 8)), ((8,), 0, (None, 5)), ((3, 6), -1, (None, 4, 7)),
         ((4, 7), 0, (None, 6)), ((2, 3, 4), 1, (None, 2, 5))]


def _one_d_samples(complex_input, hermitian=False):
    def gen(dtype):
        norms = itertools.cycle(NORMS)
        for shape, dim, ns in ONE_D:
            for n in ns:
                if hermitian and n is None and shape[dim] < 2:
                    continue
                for lay in VIEWS if complex_input else ("contiguous", "permuted", "strided",
                                                        "offset", "expanded"):
                    kw = {"dim": dim, "n": n, "norm": next(norms)}
                    if complex_input:
                        src = _source_shape(shape, lay) + (2,)
                        x = make(src, dtype)
                        kw["view"] = lay
                    else:
                        if lay == "permuted" and len(shape) < 2:
                            continue
                        x = make(shape, dtype, layout=lay)
                    yield SampleInput((x,), kw, f"{lay}{list(shape)}-dim{dim}-n{n}")
        for norm in NORMS:  # every norm on one odd and one even size
            for size in (6, 7):
                x = make((size, 2) if complex_input else (size,), dtype)
                yield SampleInput((x,), {"norm": norm}, f"norm{norm}-size{size}")
        if not complex_input and dtype == "float32":  # integers become the default dtype
            yield SampleInput((make((4,), "int64"),), {}, "int64-input")
    return gen


# (shape, s, dim) of the n-dimensional transforms
N_D = [((4, 5), None, None), ((2, 3, 4), None, None), ((3, 4, 6), (3, 6), None),
       ((3, 4, 6), None, (0, 2)), ((3, 4, 5), (-1, 5), (2, 0)), ((3, 4, 5), None, 1),
       ((4, 6), (5,), None), ((3, 4, 6), (2, 4, 3), (1, 2, 0))]


def _n_d_samples(complex_input, two_d=False):
    def gen(dtype):
        norms = itertools.cycle(NORMS)
        for (shape, s, dim), lay in itertools.product(N_D, ("contiguous", "transposed",
                                                            "stepped")):
            if two_d and dim is None and s is not None and len(s) != 2:
                continue
            kw = {"norm": next(norms)}
            kw.update({} if s is None else {"s": s})
            kw.update({} if dim is None else {"dim": dim})
            if complex_input:
                x = make(_source_shape(shape, lay) + (2,), dtype)
                kw["view"] = lay
            else:
                x = make(shape, dtype, layout={"transposed": "permuted",
                                               "stepped": "strided"}.get(lay, lay))
            yield SampleInput((x,), kw, f"{lay}{list(shape)}-s{s}-dim{dim}")
    return gen


def _transform_errors():
    def e(name, x, kw, match, error=RuntimeError):
        return ErrorInput(SampleInput((name, x), kw), error, match)
    real, cplx = make((3, 4), "float32"), make((3, 4), "float32").to(ember.complex64)
    yield e("fft", ember.ones(3, dtype=ember.float16), {}, "Unsupported dtype Half")
    yield e("rfft", make((3,), "bfloat16"), {}, "Unsupported dtype BFloat16")
    yield e("fft", ember.tensor(3.0), {}, "tensor has no dimensions", IndexError)
    yield e("rfft", cplx, {}, "rfft expects a real input tensor, but got ComplexFloat")
    yield e("ihfft", cplx, {}, "ihfft expects a real input tensor")
    yield e("rfftn", cplx, {}, "rfftn expects a real-valued input tensor")
    yield e("fftn", real, {"s": (2, 2, 2)}, "Got shape with 3 values but input tensor only "
                                           "has 2 dimensions")
    yield e("fftn", real, {"s": (2, 2), "dim": (0,)}, "must have the same length")
    yield e("fftn", real, {"dim": (0, -2)}, "FFT dims must be unique")
    yield e("irfft", make((1,), "float32"), {}, r"Invalid number of data points \(0\)")
    yield e("fft", real, {"n": 0}, r"Invalid number of data points \(0\)")
    yield e("fftn", real, {"s": (-2, 3)}, r"Invalid number of data points \(-2\)")
    yield e("rfftn", ember.tensor(2.0), {}, "rfftn must transform at least one axis")
    yield e("irfftn", ember.tensor(2.0), {}, "irfftn must transform at least one axis")
    yield e("hfftn", ember.tensor(2.0), {}, "hfftn must transform at least one axis")
    yield e("ihfftn", ember.tensor(2.0), {}, "ihfftn must transform at least one axis")
    yield e("ihfftn", cplx, {}, "Only supports floating-point dtypes, but found: ComplexFloat")
    yield e("ihfftn", real, {"out": ember.empty(0)}, "ihfftn expects a complex output tensor")
    yield e("hfftn", cplx, {"out": ember.empty(0, dtype=ember.complex64)},
            "hfftn expects a floating point output tensor")
    yield e("fft", real, {"norm": "bad"}, 'Invalid normalization mode: "bad"')
    yield e("fft", real, {"norm": 3}, "argument 'norm' must be str", TypeError)
    yield e("fft", real, {"n": 2.5}, "argument 'n' must be int", TypeError)
    yield e("fftn", real, {"s": (2.5, 3)}, "argument 's' must be tuple of ints", TypeError)
    yield e("fft", real, {"dim": (0,)}, "argument 'dim' must be int", TypeError)
    yield e("fft", real, {"dim": 2}, "Dimension out of range", IndexError)
    yield e("fftn", real, {"dim": 5}, "Dimension out of range", IndexError)
    yield e("fft", cplx, {"out": ember.empty(2)}, "fft expects a complex output tensor")
    yield e("irfft", cplx, {"out": ember.empty(2, dtype=ember.complex64)},
            "irfft expects a real output tensor")

# complex dtypes: torch refuses them in its arange (as ember does)
FREQ_DTYPES = ("float32", "float64", "float16", "bfloat16", "complex64", "complex128")


def _freq(name):
    return lambda lib, *a, **kw: getattr(lib.fft, name)(*a, **kw)


def _freq_samples(dtype):
    d = getattr(ember, dtype)
    for n in (0, 1, 4, 5, 8, -1, -3):
        for spacing in (1.0, 0.5, 3, -0.25):
            yield SampleInput((n, spacing), {"dtype": d}, f"n{n}-d{spacing}")
    yield SampleInput((4,), {"dtype": d}, "default-spacing")
    yield SampleInput((4, 0.0), {"dtype": d}, "zero-spacing")
    yield SampleInput((3,), {"dtype": d, "requires_grad": True}, "requires_grad")


SHIFT_SHAPES = [((5,), (None, 0, -1)), ((4, 3), (None, 1, (0, 1), (-1, 0), (0, 0))),
                ((2, 5, 3), (None, (2,), (0, 2), -2)), ((0, 3), (None, 1)), ((1, 1), (None,))]


def _shift_samples(dtype):
    for shape, dims in SHIFT_SHAPES:
        for lay, t in hostile(shape, dtype):
            for dim in dims:
                kw = {} if dim is None else {"dim": dim}
                yield SampleInput((t,), kw, f"{lay}{list(shape)}-dim{dim}")


def _shift(name):
    return lambda lib, x, **kw: getattr(lib.fft, name)(x, **kw)


def _freq_errors():
    for name in ("fftfreq", "rfftfreq"):
        yield ErrorInput(SampleInput((name, 4), {"dtype": ember.int64}), RuntimeError,
                         "requires a floating point or complex dtype")
        yield ErrorInput(SampleInput((name, -5), {}), RuntimeError, "negative dimension")


def _shift_errors():
    for name in ("fftshift", "ifftshift"):
        yield ErrorInput(SampleInput((name, ember.tensor(3.0)), {}), RuntimeError,
                         "`shifts` required")
        yield ErrorInput(SampleInput((name, ember.arange(4.0)), {"dim": 2}), IndexError,
                         "Dimension out of range")


# -- stft / istft -------------------------------------------------------------------------------
STFT_ARGS = [dict(n_fft=8), dict(n_fft=8, hop_length=3, win_length=5, center=False),
             dict(n_fft=8, hop_length=3, win_length=4, center=False, align_to_window=True),
             dict(n_fft=7, normalized=True, pad_mode="constant"),
             dict(n_fft=8, onesided=False), dict(n_fft=6, hop_length=1, pad_mode="replicate"),
             dict(n_fft=5, hop_length=2, win_length=3, pad_mode="circular")]


def _window(dtype, kw, kind):
    length = kw.get("win_length", kw["n_fft"])
    return None if kind is None else ember.hann_window(length, dtype=getattr(ember, dtype)) \
        if kind == "hann" else make((length,), dtype, low=0.5, high=1.5)


def _stft(lib, x, window=None, **kw):
    return _real_result(lib, lib.stft(x, window=window, return_complex=True, **kw))


def _stft_samples(dtype):
    for shape in ((20,), (2, 21)):
        for i, kw in enumerate(STFT_ARGS):
            if len(shape) == 2 and kw.get("align_to_window"):
                continue  # torch reads past the end of a batch row there
            lay = ("contiguous", "strided", "offset", "permuted")[i % (4 if len(shape) > 1
                                                                       else 3)]
            for kind in (None, "hann", "random"):
                yield SampleInput((make(shape, dtype, layout=lay), _window(dtype, kw, kind)),
                                  dict(kw), f"{lay}{list(shape)}-{kw}-window{kind}")


def _stft_complex(lib, x, window=None, view="contiguous", **kw):
    return _real_result(lib, lib.stft(_complex_input(lib, x, view), window=window, **kw))


def _stft_complex_samples(dtype):
    for shape, views in (((20,), ("contiguous", "stepped", "offset")),
                         ((2, 21), ("contiguous", "stepped"))):
        for kw, view in zip(STFT_ARGS[:2] + STFT_ARGS[3:5], itertools.cycle(views)):
            for kind in (None, "hann"):
                x = make(_source_shape(shape, view) + (2,), dtype)
                yield SampleInput((x, _window(dtype, kw, kind)), dict(kw, view=view),
                                  f"{view}{list(shape)}-{kw}-window{kind}")


def _istft(lib, x, window=None, view="contiguous", **kw):
    spec = _complex_input(lib, x, view).transpose(-1, -2)
    return _real_result(lib, lib.istft(spec, window=window, **kw))


def _istft_samples(dtype):
    """Spectra as (..., frames, freq) so that the "stepped" view steps over frames."""
    for kw in STFT_ARGS:
        kw = {k: v for k, v in kw.items() if k not in ("pad_mode", "align_to_window")}
        freq = kw["n_fft"] if kw.get("onesided") is False else kw["n_fft"] // 2 + 1
        for batch, view, kind in (((), "contiguous", "hann"), ((2,), "stepped", "random"),
                                  ((), "offset", None)):
            frames = 7
            src = _source_shape((frames, freq), view)
            x = make(batch + src + (2,), dtype) if view != "stepped" or not batch else \
                make(batch + (frames, freq, 2), dtype)
            if batch and view == "stepped":
                view = "contiguous"
            yield SampleInput((x, _window(dtype, kw, kind)), dict(kw, view=view),
                              f"{view}{batch}-{kw}-window{kind}")
            yield SampleInput((x, _window(dtype, kw, kind)), dict(kw, view=view, length=9),
                              f"{view}{batch}-{kw}-window{kind}-length9")
            if kw.get("onesided") is False:
                yield SampleInput((x, _window(dtype, kw, kind)),
                                  dict(kw, view=view, return_complex=True),
                                  f"{view}{batch}-{kw}-window{kind}-complex")


def _stft_errors():
    def e(name, args, kw, match, error=RuntimeError):
        return ErrorInput(SampleInput((name, *args), kw), error, match)
    x, rc = make((20,), "float32"), {"return_complex": True}
    yield e("stft", (x, 8), {}, "requires the return_complex parameter be given")
    yield e("stft", (x, 30), dict(rc, center=False), "expected 0 < n_fft < 20")
    yield e("stft", (x, 8), dict(rc, hop_length=0), "expected hop_length > 0")
    yield e("stft", (x, 8), dict(rc, win_length=9), "expected 0 < win_length <= n_fft")
    yield e("stft", (x, 8), dict(rc, window=ember.ones(5)), "expected a 1D window tensor")
    yield e("stft", (ember.arange(20), 8), rc, "expected a tensor of floating point")
    yield e("stft", (make((1, 1, 20), "float32"), 8), rc, "expected a 1D or 2D tensor")
    yield e("stft", (x, 8), dict(rc, align_to_window=True), "align_to_window should only be")
    yield e("stft", (x.to(ember.complex64), 8), dict(rc, onesided=True),
            "Cannot have onesided output")
    yield e("stft", (x, 8), dict(rc, pad_mode="bad"), "Unrecognised padding mode bad",
            NotImplementedError)
    yield e("stft", (make((3,), "float32"), 8), rc, "Padding size should be less than")
    spec = ember.stft(make((20,), "float32"), 8, window=ember.hann_window(8),
                      return_complex=True)
    w = ember.hann_window(8)
    yield e("istft", (spec, 8), {"window": ember.zeros(8)}, "window overlap add min")
    yield e("istft", (spec, 8), {"window": w, "center": False}, "window overlap add min")
    yield e("istft", (ember.view_as_real(spec), 8), {"window": w},
            "istft requires a complex-valued input tensor")
    yield e("istft", (spec, 10), {"window": w}, "to match n_fft / 2 \\+ 1 when onesided=True")
    yield e("istft", (spec, 8), {"window": w, "onesided": False},
            "to match n_fft when onesided=False")
    yield e("istft", (spec, 8), {"window": w, "hop_length": 9}, "expected 0 < hop_length <= "
                                                                "win_length")
    yield e("istft", (spec, 8), {"window": ember.ones(7)}, "Invalid window shape")
    yield e("istft", (spec[:, :0], 8), {"window": w}, "input tensor cannot be empty")
    yield e("istft", (spec, 8), {"window": w, "return_complex": True},
            "Cannot have onesided output")
    yield e("istft", (spec[None, None], 8), {"window": w}, "expected a tensor with 3 or 4 "
                                                           "dimensions")


def _call(lib, name, *args, **kwargs):
    return getattr(lib, name)(*args, **kwargs)


def _by_name(lib, name, *args, **kwargs):
    return getattr(lib.fft, name)(*args, **kwargs)


FLOAT_DTYPES = ("float32", "float64")
ONE_D_OPS = {"fft": (True, False), "ifft": (True, False), "rfft": (False,),
             "irfft": (True, False), "hfft": (True, False), "ihfft": (False,)}
N_D_OPS = {"fftn": (True, False), "ifftn": (True, False), "rfftn": (False,),
           "irfftn": (True, False), "hfftn": (True, False), "ihfftn": (False,)}

OPS = [
    *(OpInfo(f"fft.{name}-{'complex' if c else 'real'}", _transform(name, c),
             _one_d_samples(c, hermitian=name in ("irfft", "hfft")), dtypes=FLOAT_DTYPES,
             tol=TOL, check_stride=True)
      for name, kinds in ONE_D_OPS.items() for c in kinds),
    *(OpInfo(f"fft.{name}-{'complex' if c else 'real'}", _transform(name, c),
             _n_d_samples(c), dtypes=FLOAT_DTYPES, tol=TOL, check_stride=True)
      for name, kinds in N_D_OPS.items() for c in kinds),
    *(OpInfo(f"fft.{name[:-1]}2-{'complex' if c else 'real'}", _transform(f"{name[:-1]}2", c),
             _n_d_samples(c, two_d=True), dtypes=FLOAT_DTYPES, tol=TOL,
             check_stride=True)
      for name, kinds in N_D_OPS.items() for c in kinds),
    OpInfo("stft", _stft, _stft_samples, dtypes=FLOAT_DTYPES, tol=TOL, check_stride=True),
    OpInfo("stft-complex", _stft_complex, _stft_complex_samples, dtypes=FLOAT_DTYPES,
           tol=TOL),
    OpInfo("istft", _istft, _istft_samples, dtypes=FLOAT_DTYPES, tol=TOL, meta=False,
           check_stride=True),
    OpInfo("stft_errors", _call, lambda d: [], dtypes=(), errors=_stft_errors),
    OpInfo("fft.transform_errors", _by_name, lambda d: [], dtypes=(), errors=_transform_errors),
    *(OpInfo(f"fft.{name}", _freq(name), _freq_samples, dtypes=FREQ_DTYPES, meta=False)
      for name in ("fftfreq", "rfftfreq")),
    *(OpInfo(f"fft.{name}", _shift(name), _shift_samples, dtypes=ALL)
      for name in ("fftshift", "ifftshift")),
    OpInfo("fft.freq_errors", _by_name, lambda d: [], dtypes=(), errors=_freq_errors),
    OpInfo("fft.shift_errors", _by_name, lambda d: [], dtypes=(), errors=_shift_errors),
]
