"""Op-table entries: the ``*_scatter`` ops and the ``*_copy`` forms of the views
(ember.ops.view_copies). Copies must be contiguous (strides compared with torch's)."""

from __future__ import annotations

from tests.opinfo import ALL, COMPLEX, FLOATS, ErrorInput, OpInfo, SampleInput, hostile, make


def _fn(name):
    return lambda lib, *a, **k: getattr(lib, name)(*a, **k)


def _copy_samples(shape, *arg_sets, layouts=("contiguous", "permuted", "strided", "offset")):
    def gen(d):
        for lay, t in hostile(shape, d, layouts=layouts):
            for args in arg_sets:
                yield SampleInput((t, *args), {}, f"{lay}{args}")
    return gen


_COPIES = {
    "view_copy": ((2, 3, 4), [((6, 4),), ((-1,),)], ("contiguous", "offset")),
    "permute_copy": ((2, 3, 4), [((2, 0, 1),), ((0, 1, 2),)], None),
    "transpose_copy": ((2, 3, 4), [(0, 2), (1, -1)], None),
    "t_copy": ((3, 4), [()], None),
    "expand_copy": ((3, 1), [((3, 4),), ((2, 3, 5),)], None),
    "narrow_copy": ((4, 5), [(0, 1, 2), (1, -3, 2)], None),
    "select_copy": ((4, 5), [(0, 1), (1, -1)], None),
    "slice_copy": ((4, 5), [(0, 1, 3), (1, None, None, 2)], None),
    "diagonal_copy": ((3, 4, 5), [(0, 0, 1), (1, 1, 2)], None),
    "squeeze_copy": ((2, 1, 3, 1), [(), (1,)], None),
    "unsqueeze_copy": ((2, 3), [(0,), (-1,)], None),
    "unfold_copy": ((2, 7), [(1, 3, 2)], None),
    "as_strided_copy": ((4, 5), [((2, 2), (1, 2)), ((3,), (3,), 1)], ("contiguous",)),
    "detach_copy": ((3, 4), [()], None),
    "alias_copy": ((3, 4), [()], None),
    "split_copy": ((5, 6), [(2, 0), (4, 1)], None),
    "split_with_sizes_copy": ((5, 6), [([1, 4], 0), ([3, 3], 1)], None),
    "unbind_copy": ((3, 4), [(0,), (1,)], None),
}


def _scatter_samples(d):
    for lay, x in hostile((3, 4), d, writable=True):
        yield SampleInput((x, make((3,), d), 0, 0, 1), {}, f"diag-{lay}")


def _select_scatter_samples(d):
    for lay, x in hostile((3, 4), d):
        yield SampleInput((x, make((4,), d), 0, 1), {}, f"dim0-{lay}")
        yield SampleInput((x, make((3,), d, layout="strided"), 1, -1), {}, f"dim1-{lay}")


def _slice_scatter_samples(d):
    for lay, x in hostile((6, 4), d):
        yield SampleInput((x, make((2, 4), d), 0, 1, 3), {}, f"rows-{lay}")
        yield SampleInput((x, make((6, 2), d), 1, None, None, 2), {}, f"step-{lay}")
        yield SampleInput((x, make((6, 4), d)), {}, f"all-{lay}")


def _diagonal_scatter_samples(d):
    for lay, x in hostile((3, 4), d):
        yield SampleInput((x, make((3,), d)), {}, f"main-{lay}")
        yield SampleInput((x, make((2,), d), 2), {}, f"offset2-{lay}")
    x = make((2, 3, 4), d, layout="permuted")
    yield SampleInput((x, make((2, 3), d), -1, 1, 2), {}, "3d")


def _as_strided_scatter_samples(d):
    x = make((4, 5), d)
    yield SampleInput((x, make((2, 2), d), (2, 2), (1, 2)), {}, "2x2")
    yield SampleInput((x, make((3,), d), (3,), (3,), 1), {}, "offset")


def _scatter_errors():
    x = make((3, 3), "float32")
    yield ErrorInput(SampleInput((x, make((2,), "float32"))), RuntimeError,
                     "expected src to have a size equal to the slice of self")


OPS = []
for _name, (_shape, _args, _lays) in _COPIES.items():
    _gen = _copy_samples(_shape, *_args, **({"layouts": _lays} if _lays else {}))
    OPS.append(OpInfo(_name, _fn(_name), _gen, dtypes=ALL + COMPLEX, check_stride=True))


def _complex_pairs(d):
    """(..., 2) float tensors whose strides view_as_complex accepts."""
    yield SampleInput((make((3, 4, 2), d),), {}, "contiguous")
    yield SampleInput((make((4, 3, 2), d).transpose(0, 1),), {}, "transposed")


OPS += [
    OpInfo("view_as_real_copy", _fn("view_as_real_copy"),
           _copy_samples((3, 4), (), layouts=("contiguous", "permuted", "strided")),
           dtypes=COMPLEX, check_stride=True),
    OpInfo("view_as_real_copy_conj", lambda lib, x: lib.view_as_real_copy(x.conj()),
           _copy_samples((3, 4), (), layouts=("contiguous", "strided")), dtypes=COMPLEX,
           check_stride=True),
    OpInfo("view_as_complex_copy", _fn("view_as_complex_copy"), _complex_pairs,
           dtypes=FLOATS[:2], check_stride=True),
    OpInfo("diagonal_scatter_complex", _fn("diagonal_scatter"), _diagonal_scatter_samples,
           dtypes=COMPLEX),
    OpInfo("diagonal_scatter", _fn("diagonal_scatter"), _diagonal_scatter_samples, dtypes=ALL,
           errors=_scatter_errors),
    OpInfo("select_scatter", _fn("select_scatter"), _select_scatter_samples, dtypes=ALL),
    OpInfo("slice_scatter", _fn("slice_scatter"), _slice_scatter_samples, dtypes=ALL),
    OpInfo("as_strided_scatter", _fn("as_strided_scatter"), _as_strided_scatter_samples,
           dtypes=ALL),
    OpInfo("view_copy_grad_chain", lambda lib, x: lib.view_copy(x * 2, (-1,)) * 3,
           _copy_samples((2, 3), ()), dtypes=FLOATS),
]

_BY_NAME = {info.name: info for info in OPS}
# torch's detach_copy requires grad and refuses backward; ember's is outside autograd
_BY_NAME["detach_copy"].grad = False
# torch 2.13's as_strided_scatter backward keeps the written region of the input's gradient
# and zeroes the rest (the reverse of the derivative); ember's is checked by gradcheck in
# tests/tensor/test_tensor_api.py
_BY_NAME["as_strided_scatter"].grad = False
