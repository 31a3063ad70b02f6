"""Op-table entries: Tensor.type, storage(), in-place views, resize_, set_, ravel and the
``numel``/``is_*`` predicates (ember.ops.tensor_api)."""

from __future__ import annotations

import ember
from tests.opinfo import ALL, FLOATS, SHAPES, ErrorInput, OpInfo, SampleInput, hostile, make


def _layouts(shape, *arg_sets, writable=False):
    def gen(d):
        for lay, t in hostile(shape, d, writable=writable):
            for args in arg_sets:
                yield SampleInput((t, *args), {}, f"{lay}{args}")
    return gen


def _all_shapes(d):
    for shape in SHAPES:
        for lay, t in hostile(shape, d):
            yield SampleInput((t,), {}, f"{lay}{list(shape)}")


def _type_samples(d):
    for target in (ember.int64, ember.float32, ember.float64, ember.bool, ember.float16,
                   "torch.LongTensor", "torch.DoubleTensor", "torch.BFloat16Tensor",
                   "torch.ByteTensor", "torch.FloatTensor"):
        yield SampleInput((make((3, 4), d, layout="strided"), target), {}, str(target))


def _type_errors():
    x = make((2,), "float32")
    yield ErrorInput(SampleInput((x, "torch.NoSuchTensor")), ValueError, "invalid type")
    yield ErrorInput(SampleInput((x, "FloatTensor")), ValueError, "invalid type")


def _storage_fn(lib, x):
    s = x.storage()
    return s.size(), len(s), s.element_size(), s.nbytes(), s.type(), s.tolist(), \
        s[0] if len(s) else None


def _resize_samples(d):
    for lay, t in hostile((3, 4), d):
        for shape in ((12,), (2, 3), (3, 4), (0,), (1, 1, 2)):
            yield SampleInput((t, shape), {}, f"{lay}->{shape}")


def _resize_fn(lib, x, shape):
    y = x.clone()  # resize_ never shrinks the storage: the kept elements are the first ones
    out = y.resize_(*shape)
    return out, out.stride(), out is y


def _set_samples(d):
    for lay, src in hostile((3, 4), d):
        yield SampleInput((make((2,), d), src), {}, lay)


def _set_fn(lib, x, src):
    out = x.set_(src)
    return out, out.stride(), out.storage_offset(), out.data_ptr() == src.data_ptr()


def _set_storage_fn(lib, x, src):
    out = x.set_(src.untyped_storage(), 1, (2, 2), (1, 2))
    return out, out.stride(), out.storage_offset()


def _set_errors():
    yield ErrorInput(SampleInput((make((2,), "float32"), make((3,), "int64"))), RuntimeError,
                     "Could not set tensor of type Long")


def _predicates(lib, x):
    return (lib.numel(x), lib.is_tensor(x), lib.is_tensor(x.tolist()), lib.is_floating_point(x),
            lib.is_same_size(x, x), x.is_same_size(x.unsqueeze(0)))


def _nonzero_samples(d):
    for shape in ((), (1,), (1, 1), (0,), (2,)):
        yield SampleInput((make(shape, d),), {}, str(shape))
    yield SampleInput((ember.zeros((), dtype=getattr(ember, d)),), {}, "zero")


def _inplace_view(name):
    return lambda lib, x, *a: getattr(x, name)(*a)


def _inplace_view_of_result(name):
    """The in-place view applied to a non-leaf (``x * 1``): gradients flow through it."""
    return lambda lib, x, *a: getattr(x * 1, name)(*a)


_VIEW_CASES = {
    "squeeze_": ((2, 1, 3, 1), ((), (1,), (0,), ((1, 3),))),
    "unsqueeze_": ((2, 3), ((0,), (2,), (-1,))),
    "t_": ((3, 4), ((),)),
    "transpose_": ((2, 3, 4), ((0, 2), (1, -1))),
    "swapdims_": ((2, 3, 4), ((0, 2), (1, 1))),
    "swapaxes_": ((2, 3, 4), ((2, 0),)),
}

OPS = [
    OpInfo("Tensor.type", lambda lib, x, target: x.type(target), _type_samples, dtypes=ALL,
           errors=_type_errors),
    OpInfo("Tensor.type_float", lambda lib, x, target: x.type(target),
           lambda d: [SampleInput((make((3, 4), d, layout="strided"), t), {}, str(t))
                      for t in (ember.float64, "torch.FloatTensor", "torch.DoubleTensor")],
           dtypes=FLOATS),
    OpInfo("Tensor.type_name", lambda lib, x: x.type(), _all_shapes, dtypes=ALL, meta=False),
    # the op table builds torch's empty tensors without their storage: non-empty shapes only
    OpInfo("Tensor.storage", _storage_fn,
           lambda d: [s for s in _all_shapes(d) if s.args[0].numel()], dtypes=ALL, meta=False),
    OpInfo("ravel", lambda lib, x: lib.ravel(x), _all_shapes, dtypes=ALL, check_stride=True),
    OpInfo("ravel_method", lambda lib, x: x.ravel(), _all_shapes, dtypes=("float32",)),
    OpInfo("resize_", _resize_fn, _resize_samples, dtypes=ALL),
    OpInfo("resize_as_", lambda lib, x, y: x.clone().resize_as_(y),
           lambda d: [SampleInput((make((4, 3), d), make(s, d)), {}, str(s))
                      for s in ((12,), (2, 2), (0, 3))], dtypes=ALL, meta=False),
    OpInfo("set_", _set_fn, _set_samples, dtypes=ALL, errors=_set_errors, meta=False),
    OpInfo("set_storage", _set_storage_fn, _set_samples, dtypes=ALL, meta=False),
    OpInfo("set_empty", lambda lib, x: x.set_(), _all_shapes, dtypes=("float32",), meta=False),
    OpInfo("predicates", _predicates, _all_shapes, dtypes=ALL, meta=False),
    OpInfo("is_nonzero", lambda lib, x: lib.is_nonzero(x), _nonzero_samples, dtypes=ALL,
           meta=False),
]
for _name, (_shape, _args) in _VIEW_CASES.items():
    # meta=False: the CPU run changes the sample's geometry (the _grad twin checks Meta)
    OPS.append(OpInfo(_name, _inplace_view(_name), _layouts(_shape, *_args), dtypes=ALL,
                      is_view=True, meta=False))
    OPS.append(OpInfo(_name + "_grad", _inplace_view_of_result(_name),
                      _layouts(_shape, *_args), dtypes=FLOATS))
OPS.append(OpInfo("t__errors", _inplace_view("t_"), _layouts((2, 3, 4), ()), dtypes=("float32",),
                  errors=lambda: [ErrorInput(SampleInput((make((2, 3, 4), "float32"),)),
                                             RuntimeError, "expects a tensor with <= 2")]))

_BY_NAME = {info.name: info for info in OPS}
# Gradients of conversions to integer types are checked by the conversion op itself; the
# float targets' gradients are compared in Tensor.type_float (no gradcheck: finite differences
# through a rounding to float32 or float16 are not the derivative).
_BY_NAME["Tensor.type"].grad = False
_BY_NAME["Tensor.type_float"].gradcheck = False
