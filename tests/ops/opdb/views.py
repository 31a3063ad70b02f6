"""Op-table entries: view operators (results must share storage, strides as torch's)."""

from tests.opinfo import ALL, COMPLEX, ErrorInput, OpInfo, SampleInput, hostile, make


def _samples(shape, *args_list, layouts=("contiguous", "permuted", "strided", "offset")):
    def gen(dtype):
        for lay, t in hostile(shape, dtype, layouts=layouts):
            for args in args_list:
                yield SampleInput((t, *args), {}, f"{lay}{args}")
    return gen


def _narrow_tensor_start(dtype):
    """``start`` as a 0-d int64 tensor (torch's narrow.Tensor overload), negative too."""
    import ember

    for lay, t in hostile((4, 5), dtype, layouts=("contiguous", "permuted", "strided")):
        for dim, start, length in ((1, 1, 2), (0, -3, 2), (-1, 0, 0)):
            yield SampleInput((t, dim, ember.tensor(start), length), {}, f"{lay}-{start}")


def _zero_d(*args_list):
    """0-d inputs (and 1-d ones) with dims 0 / -1, which name the tensor's only dim."""
    def gen(dtype):
        for shape in ((), (3,), (0,)):
            for lay, t in hostile(shape, dtype, layouts=("contiguous", "offset")):
                for args in args_list:
                    yield SampleInput((t, *args), {}, f"{lay}{list(shape)}{args}")
    return gen


def _shape_classes(*args_list):
    """0-d inputs (torch refuses them) and empty dims in each position."""
    def gen(dtype):
        for shape in ((), (0, 4), (3, 0), (0,)):
            for lay, t in hostile(shape, dtype, layouts=("contiguous", "strided")):
                for args in args_list:
                    yield SampleInput((t, *args), {}, f"{lay}{list(shape)}{args}")
    return gen


OPS = [
    OpInfo("narrow_tensor_start", lambda lib, x, *a: lib.narrow(x, *a), _narrow_tensor_start,
           dtypes=ALL, is_view=True, meta=False),  # a meta ``start`` has no value to read
    OpInfo("flatten_0d", lambda lib, x, *a: x.flatten(*a),
           _zero_d((), (0,), (-1,), (0, -1), (1,), (0, 1)), dtypes=ALL),
    OpInfo("transpose_0d", lambda lib, x, a, b: lib.transpose(x, a, b),
           _zero_d((0, 0), (-1, 0), (0, -1)), dtypes=ALL, is_view=True),
    OpInfo("view", lambda lib, x, *s: x.view(*s),
           _samples((2, 3, 4), ((6, 4),), ((-1,),), ((2, 12),), ((4, 1, 6),),
                    layouts=("contiguous", "offset")), dtypes=ALL, is_view=True),
    OpInfo("transpose", lambda lib, x, a, b: x.transpose(a, b),
           _samples((2, 3, 4), (0, 2), (1, -1)), dtypes=ALL, is_view=True),
    OpInfo("t", lambda lib, x: x.t(), _samples((3, 4), ()), dtypes=ALL, is_view=True),
    OpInfo("permute", lambda lib, x, *d: x.permute(*d),
           _samples((2, 3, 4), (2, 0, 1), (0, 1, 2)), dtypes=ALL, is_view=True),
    OpInfo("narrow", lambda lib, x, *a: x.narrow(*a),
           _samples((4, 5), (0, 1, 2), (1, -3, 2)), dtypes=ALL, is_view=True),
    OpInfo("select", lambda lib, x, *a: x.select(*a),
           _samples((4, 5), (0, 1), (1, -1)), dtypes=ALL, is_view=True),
    OpInfo("diagonal", lambda lib, x, *a: x.diagonal(*a),
           _samples((3, 4, 5), (0, 0, 1), (1, 1, 2), (-1, 2, 0)), dtypes=ALL, is_view=True),
    OpInfo("unfold", lambda lib, x, *a: x.unfold(*a),
           _samples((2, 7), (1, 2, 1), (1, 3, 2), (0, 2, 2)), dtypes=ALL, is_view=True),
    OpInfo("expand", lambda lib, x, *s: x.expand(*s),
           _samples((3, 1), (3, 4), (2, 3, 5), (-1, 2)), dtypes=ALL, is_view=True),
    OpInfo("squeeze", lambda lib, x, *d: x.squeeze(*d),
           _samples((2, 1, 3, 1), (), (1,), (0,), ((1, 3),)), dtypes=ALL, is_view=True),
    OpInfo("unsqueeze", lambda lib, x, d: x.unsqueeze(d),
           _samples((2, 3), (0,), (2,), (-1,)), dtypes=ALL, is_view=True),
    OpInfo("getitem_basic", lambda lib, x, i: x[i],
           _samples((4, 5, 6), ((slice(1, None), slice(None, None, 2)),), (1,), ((Ellipsis, 2),),
                    ((None, 1, slice(None, -1)),), ((slice(-2, None), None, Ellipsis),)),
           dtypes=ALL, is_view=True),
    OpInfo("split", lambda lib, x, s, d: x.split(s, d),
           _samples((5, 6), (2, 0), (4, 1), ([1, 5], 1)), dtypes=ALL, is_view=True),
    OpInfo("chunk", lambda lib, x, c, d: x.chunk(c, d),
           _samples((5, 6), (2, 0), (4, 1)), dtypes=ALL, is_view=True),
    OpInfo("split_0d_empty", lambda lib, x, s, d: x.split(s, d), _shape_classes((1, 0), (2, -1)),
           dtypes=ALL, is_view=True),
    OpInfo("chunk_0d_empty", lambda lib, x, c, d: x.chunk(c, d), _shape_classes((1, 0), (2, -1)),
           dtypes=ALL, is_view=True),
    OpInfo("tensor_split_0d_empty", lambda lib, x, s, d: x.tensor_split(s, d),
           _shape_classes((1, 0), (2, -1), ([1], 0)), dtypes=ALL, is_view=True),
    OpInfo("unbind", lambda lib, x, d: x.unbind(d), _samples((3, 4), (0,), (1,)),
           dtypes=ALL, is_view=True),
    OpInfo("tensor_split", lambda lib, x, s, d: x.tensor_split(s, d),
           _samples((7, 4), (3, 0), ([1, 4], 0), ((2, 9), 1)), dtypes=ALL, is_view=True),
    OpInfo("as_strided", lambda lib, x, *a: x.as_strided(*a),
           _samples((4, 5), ((2, 2), (1, 2)), ((3,), (3,), 1), layouts=("contiguous",)),
           dtypes=ALL, is_view=True),
    OpInfo("movedim", lambda lib, x, s, d: x.movedim(s, d),
           _samples((2, 3, 4), (0, 2), ((0, 1), (2, 0))), dtypes=ALL, is_view=True),
    OpInfo("flatten_view", lambda lib, x, *a: x.flatten(*a),
           _samples((2, 3, 4), (), (1,), (0, 1), layouts=("contiguous", "offset")),
           dtypes=ALL, is_view=True),
    OpInfo("reshape_copy", lambda lib, x, *s: x.reshape(*s),
           _samples((2, 3, 4), ((-1,),), ((4, 6),), layouts=("permuted", "strided")),
           dtypes=ALL),
    OpInfo("mT", lambda lib, x: x.mT, _samples((2, 3, 4), ()), dtypes=ALL, is_view=True),
    OpInfo("T", lambda lib, x: x.T, _samples((2, 3, 4), ()), dtypes=ALL, is_view=True),
    OpInfo("view_dtype", lambda lib, x, d: x.view(d),
           lambda dt: (SampleInput((make((4, 6), "float32"), lib_dtype), {}, str(lib_dtype))
                       for lib_dtype in ("int32", "float16", "uint8", "float64")),
           dtypes=("float32",), is_view=True, meta=False),
]


def _fix_view_dtype(entry):
    # the dtype argument must be each library's own dtype object
    def fn(lib, x, d):
        return x.view(getattr(lib, d))
    entry.fn = fn
    return entry


OPS[-1] = _fix_view_dtype(OPS[-1])


def _view_errors():
    x = make((2, 3, 4))
    yield ErrorInput(SampleInput((x.transpose(0, 1), (-1,))), RuntimeError,
                     "view size is not compatible.*Use .reshape")
    yield ErrorInput(SampleInput((x, (5, 5))), RuntimeError, r"shape '\[5, 5\]' is invalid")
    yield ErrorInput(SampleInput((x, (-1, -1))), RuntimeError, "only one dimension can be")


OPS.append(OpInfo("view_errors", lambda lib, x, s: x.view(*s), lambda d: [], dtypes=(),
                  errors=_view_errors))


# -- complex views ----------------------------------------------------------------------------
def _complex_samples(shape):
    """Complex tensors in several layouts, and lazily conjugated views of them."""
    def gen(dtype):
        for lay, t in hostile(shape, dtype, layouts=("contiguous", "permuted", "strided",
                                                     "offset")):
            yield SampleInput((t,), {}, lay)
            if dtype in COMPLEX:
                yield SampleInput((t.conj(),), {}, f"{lay}-conj")
    return gen


def _pairs_samples(dtype):
    """Real tensors whose last dim (size 2, stride 1) holds (real, imag) pairs."""
    for shape in ((3, 2), (2, 4, 2), (2,)):
        for lay in ("contiguous", "offset"):
            t = make(shape, dtype, layout=lay)
            if t.storage_offset() % 2 == 0:
                yield SampleInput((t,), {}, f"{lay}{list(shape)}")
    base = make((3, 4, 2), dtype)
    yield SampleInput((base[:, ::2],), {}, "stepped")
    yield SampleInput((base.transpose(0, 1),), {}, "transposed")
    yield SampleInput((make((3, 3), dtype),), {}, "last3")  # both refuse: last dim not 2


ALL_C = ALL + COMPLEX
OPS += [
    OpInfo("view_as_real", lambda lib, x: lib.view_as_real(x), _complex_samples((3, 4)),
           dtypes=ALL_C, is_view=True),
    # float16 pairs are torch's complex32, which ember does not have
    OpInfo("view_as_complex", lambda lib, x: lib.view_as_complex(x), _pairs_samples,
           dtypes=tuple(d for d in ALL if d != "float16"), is_view=True),
    OpInfo("real", lambda lib, x: lib.real(x), _complex_samples((3, 4)), dtypes=ALL_C),
    OpInfo("imag", lambda lib, x: lib.imag(x), _complex_samples((3, 4)), dtypes=ALL_C),
    OpInfo("conj", lambda lib, x: lib.conj(x), _complex_samples((3, 4)), dtypes=ALL_C,
           is_view=True),
    OpInfo("resolve_conj", lambda lib, x: lib.resolve_conj(x), _complex_samples((3, 4)),
           dtypes=ALL_C),
    OpInfo("conj_physical", lambda lib, x: lib.conj_physical(x), _complex_samples((3, 4)),
           dtypes=ALL_C),
    OpInfo("adjoint", lambda lib, x: lib.adjoint(x), _complex_samples((3, 4)), dtypes=ALL_C,
           is_view=True),
    OpInfo("angle", lambda lib, x: lib.angle(x), _complex_samples((3, 4)), dtypes=ALL_C),
]
