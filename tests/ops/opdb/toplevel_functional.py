"""Op-table entries: the functional ops of torch's top level with ATen's signatures
(``torch.dropout(input, p, train)``, ``torch.batch_norm(input, weight, bias, ...)``,
``torch.embedding(weight, indices)``, int ``reduction``, ...), ember.nn.functional._toplevel."""

from __future__ import annotations

import ember
from tests.opinfo import COMPLEX, FLOATS, ErrorInput, OpInfo, SampleInput, make

LOOSE = {"float32": (5e-5, 5e-5), "float16": (5e-3, 5e-3), "bfloat16": (3e-2, 3e-2)}
F2 = FLOATS[:2]  # float32, float64


def _fn(name):
    return lambda lib, *a, **k: getattr(lib, name)(*a, **k)


def _x(shape, d, lay="contiguous", **kw):
    return make(shape, d, layout=lay, **kw)


def _dropout_samples(d):
    for lay in ("contiguous", "permuted", "strided"):
        x = _x((2, 3, 4), d, lay)
        for p, train in ((0.5, False), (0.0, True), (1.0, True), (0.3, False)):
            yield SampleInput((x, p, train), {}, f"{lay}-p{p}-{train}")


def _feature_dropout_samples(d):
    yield from _dropout_samples(d)
    yield SampleInput((_x((), d), 0.5, False), {}, "0-d-eval")  # training needs >= 2 dims


def _feature_dropout_errors():
    for shape in ((), (3,)):
        yield ErrorInput(SampleInput((_x(shape, "float32"), 0.5, True)), RuntimeError,
                         "Feature dropout requires at least 2 dimensions in the input")


def _inplace_dropout(name):
    return lambda lib, x, *a: getattr(lib, name)(x.clone(), *a)


def _norm_samples(d):
    for lay in ("contiguous", "permuted", "strided"):
        x = _x((2, 3, 4), d, lay)
        yield SampleInput((x, (4,), _x((4,), d), _x((4,), d), 1e-5, True), {}, f"{lay}-affine")
        yield SampleInput((x, [3, 4]), {}, f"{lay}-plain")
    # normalized_shape covering every dim (no batch dims), weight/bias of the full shape
    yield SampleInput((_x((1, 2, 3), d, "permuted"), [1, 2, 3], _x((1, 2, 3), d),
                       _x((1, 2, 3), d), 0.5), {}, "all-dims")
    yield SampleInput((_x((2, 0, 3), d), [3], _x((3,), d), _x((3,), d)), {}, "empty-batch")


def _native_layer_norm_samples(d):
    for x, shape, wb in (((1, 2, 3), [1, 2, 3], (1, 2, 3)), ((2, 3, 4), [4], (4,)),
                         ((2, 3, 4), [3, 4], None)):
        w, b = (_x(wb, d), _x(wb, d)) if wb else (None, None)
        yield SampleInput((_x(x, d, "permuted"), shape, w, b, 0.5), {}, f"{list(x)}{shape}")


def _group_norm_samples(d):
    x = _x((2, 4, 5), d, "permuted")
    yield SampleInput((x, 2, _x((4,), d), _x((4,), d), 1e-5, True), {}, "affine")
    yield SampleInput((x, 4), {}, "plain")
    yield SampleInput((_x((0, 4, 5), d), 2, _x((4,), d), _x((4,), d)), {}, "empty-batch")
    yield SampleInput((_x((0, 4), d), 4), {}, "empty-batch-2d")


def _batch_norm_samples(d):
    for training in (True, False):
        x = _x((4, 3, 5), d, "strided")
        w, b = _x((3,), d), _x((3,), d)
        rm, rv = _x((3,), d), _x((3,), d, low=0.5, high=2)
        yield SampleInput((x, w, b, rm.clone(), rv.clone(), training, 0.1, 1e-5, True), {},
                          f"train={training}")
        yield SampleInput((x, None, None, None, None, True, 0.1, 1e-5, False), {},
                          f"no-stats-{training}")
        # empty inputs: torch returns a clone (then channel 0's affine), statistics untouched
        yield SampleInput((_x((0,), d), None, None, _x((0,), d), _x((0,), d), training, 0.1,
                           1e-5, False), {}, f"empty-1d-{training}")
        yield SampleInput((_x((0, 3), d), w, b, rm.clone(), rv.clone(), training, 0.1, 1e-5,
                           False), {}, f"empty-batch-{training}")


def _batch_norm_stats(lib, x, w, b, rm, rv, training, momentum, eps, cudnn):
    out = lib.batch_norm(x, w, b, rm, rv, training, momentum, eps, cudnn)
    return out, rm, rv  # the running statistics are updated in place when training


def _instance_norm_samples(d):
    x = _x((2, 3, 5), d, "permuted")
    yield SampleInput((x, _x((3,), d), _x((3,), d), None, None, True, 0.1, 1e-5, True), {},
                      "affine")
    yield SampleInput((x, None, None, _x((3,), d), _x((3,), d, low=0.5, high=2), False, 0.1,
                       1e-5, False), {}, "running")
    # no channels or no samples: an empty result (with running statistics of no channels)
    yield SampleInput((_x((2, 0, 5), d), None, None, None, None, True, 0.1, 1e-5, False), {},
                      "zero-channels")
    yield SampleInput((_x((2, 0, 5), d), None, None, _x((0,), d), _x((0,), d), True, 0.1, 1e-5,
                       False), {}, "zero-channels-running")
    yield SampleInput((_x((0, 3, 5), d), None, None, None, None, True, 0.1, 1e-5, False), {},
                      "empty-batch")


def _instance_norm_errors():
    # torch applies the affine of an empty (N * C == 0) input through a batch norm that fails
    for shape, c in (((2, 0, 5), 0), ((0, 3, 5), 3)):
        yield ErrorInput(SampleInput((_x(shape, "float32"), _x((c,), "float32"), None, None,
                                      None, True, 0.1, 1e-5, False)), IndexError,
                         r"index 0 out of range for tensor of size \[0\]")


def _embedding_samples(d):
    w = _x((6, 3), d, "strided")
    idx = ember.tensor([[0, 2, 5], [5, 5, 1]])
    yield SampleInput((w, idx), {}, "plain")
    yield SampleInput((w, idx, 5), {}, "padding")
    yield SampleInput((w, idx, -1, True), {}, "scale_grad_by_freq")


def _pair_samples(d):
    for lay in ("contiguous", "permuted", "strided"):
        yield SampleInput((_x((4, 5), d, lay), _x((4, 5), d)), {}, lay)


def _cosine_samples(d):
    yield from _pair_samples(d)
    yield SampleInput((_x((3, 4), d), _x((3, 4), d), 0, 1e-6), {}, "dim0")


def _with_reduction(args: tuple, red) -> tuple:
    """``args`` ending in ``red``, or without it (``red`` None: the default reduction, which for
    torch's top-level losses is 0, no reduction, unlike ``nn.functional``'s mean)."""
    return args if red is None else args + (red,)


REDUCTIONS = (0, 1, 2, None)


def _kl_samples(d):
    for red in REDUCTIONS:
        x = _x((3, 4), d, low=-3, high=-0.1)
        t = _x((3, 4), d, "strided", low=0.05, high=1)
        yield SampleInput(_with_reduction((x, t), red), {}, f"red{red}")
        yield SampleInput(_with_reduction((x, t.log()), red), {"log_target": True},
                          f"logt-red{red}")


def _pixel_samples(d):
    yield SampleInput((_x((2, 8, 3, 3), d, "permuted"), 2), {}, "shuffle")


def _unshuffle_samples(d):
    yield SampleInput((_x((2, 2, 4, 6), d, "strided"), 2), {}, "unshuffle")


def _unshuffle_empty_samples(d):
    """Empty inputs: torch returns a copy of the input's own shape (and strides)."""
    for shape in ((0, 1, 4, 4), (2, 0, 4, 6), (2, 1, 0, 4), (1, 2, 0, 4, 4)):
        yield SampleInput((_x(shape, d), 2), {}, f"empty{list(shape)}")
    yield SampleInput((_x((0, 1, 4, 4), d).transpose(2, 3), 2), {}, "empty-transposed")


def _unshuffle_errors():
    yield ErrorInput(SampleInput((_x((0, 1, 3, 4), "float32"), 2)), RuntimeError,
                     "pixel_unshuffle expects height to be divisible by downscale_factor")


def _channel_shuffle_samples(d):
    yield SampleInput((_x((2, 6, 3, 3), d, "permuted"), 3), {}, "groups3")


def _activation_samples(*extra):
    def gen(d):
        for lay in ("contiguous", "permuted", "strided"):
            for args in extra:
                yield SampleInput((_x((3, 4), d, lay), *args), {}, f"{lay}{args}")
    return gen


def _inplace_act(name):
    return lambda lib, x, *a: getattr(lib, name)(x.clone(), *a)


def _prelu_samples(d):
    yield SampleInput((_x((2, 3, 4), d, "strided"), _x((3,), d)), {}, "channels")
    yield SampleInput((_x((2, 3), d), _x((1,), d)), {}, "single")
    yield SampleInput((_x((), d), _x((1,), d)), {}, "0-d")
    yield SampleInput((_x((4,), d, "strided"), _x((1,), d)), {}, "1-d")
    yield SampleInput((_x((2, 3), d), _x((), d)), {}, "0-d-weight")
    yield SampleInput((_x((0, 3, 2), d), _x((3,), d)), {}, "empty")


def _bilinear_samples(d):
    yield SampleInput((_x((4, 3), d), _x((4, 5), d, "strided"), _x((2, 3, 5), d), _x((2,), d)),
                      {}, "bias")


def _loss_samples(kind):
    def gen(d):
        for red in REDUCTIONS:
            tag = f"red{red}"
            if kind == "bce":
                yield SampleInput(_with_reduction((_x((3, 4), d), _x((3, 4), d, low=0, high=1),
                                                   _x((4,), d), _x((4,), d, low=0.5, high=2)),
                                                  red), {}, tag)
            elif kind == "cosine":
                target = ember.tensor([1, -1, 1])
                yield SampleInput(_with_reduction((_x((3, 5), d), _x((3, 5), d), target, 0.2),
                                                  red), {}, tag)
            elif kind == "hinge":
                target = ember.tensor([[1.0, -1.0, 1.0, -1.0]] * 3, dtype=getattr(ember, d))
                yield SampleInput(_with_reduction((_x((3, 4), d), target, 0.5), red), {}, tag)
            elif kind == "ranking":
                target = ember.tensor([1.0, -1.0, 1.0], dtype=getattr(ember, d))
                yield SampleInput(_with_reduction((_x((3,), d), _x((3,), d), target, 0.1), red),
                                  {}, tag)
                yield SampleInput(_with_reduction((_x((), d), _x((), d), target[1], 0.1), red),
                                  {}, f"0-d-{tag}")
            elif kind == "poisson" and red is not None:  # torch requires every argument
                yield SampleInput((_x((3, 4), d), _x((3, 4), d, low=0, high=4), True, False,
                                   1e-8, red), {}, f"log-{tag}")
                yield SampleInput((_x((3, 4), d, low=0.1, high=3), _x((3, 4), d, low=0, high=4),
                                   False, True, 1e-8, red), {}, f"full-{tag}")
            elif kind == "triplet":
                yield SampleInput(_with_reduction((_x((3, 5), d), _x((3, 5), d), _x((3, 5), d),
                                                   1.0, 2.0, 1e-6, True), red), {}, tag)
    return gen


def _ctc_samples(d):
    log_probs = _x((6, 2, 4), d).log_softmax(-1)
    targets = ember.tensor([[1, 2, 1], [3, 3, 0]])
    for red in (0, 1, 2):
        yield SampleInput((log_probs, targets, [6, 5], [3, 2], 0, red, False), {}, f"red{red}")
    yield SampleInput((log_probs, targets, [6, 5], [3, 2]), {}, "default-reduction")


def _rms_samples(d):
    x = _x((2, 3, 4), d, "permuted")
    yield SampleInput((x, (4,), _x((4,), d), 1e-6), {}, "weight")
    yield SampleInput((x, [3, 4]), {}, "plain")


OPS = [
    OpInfo("top.dropout", _fn("dropout"), _dropout_samples, dtypes=FLOATS),
    OpInfo("top.dropout_", _inplace_dropout("dropout_"), _dropout_samples, dtypes=F2),
    OpInfo("top.alpha_dropout", _fn("alpha_dropout"), _dropout_samples, dtypes=F2),
    OpInfo("top.alpha_dropout_", _inplace_dropout("alpha_dropout_"), _dropout_samples,
           dtypes=F2),
    OpInfo("top.feature_dropout", _fn("feature_dropout"), _feature_dropout_samples, dtypes=F2,
           errors=_feature_dropout_errors),
    OpInfo("top.feature_dropout_", _inplace_dropout("feature_dropout_"),
           _feature_dropout_samples, dtypes=F2),
    OpInfo("top.feature_alpha_dropout", _fn("feature_alpha_dropout"), _feature_dropout_samples,
           dtypes=F2, errors=_feature_dropout_errors),
    OpInfo("top.feature_alpha_dropout_", _inplace_dropout("feature_alpha_dropout_"),
           _feature_dropout_samples, dtypes=F2),
    OpInfo("top.layer_norm", _fn("layer_norm"), _norm_samples, dtypes=FLOATS, tol=LOOSE),
    OpInfo("native_layer_norm", _fn("native_layer_norm"), _native_layer_norm_samples, dtypes=F2,
           tol=LOOSE),
    OpInfo("top.rms_norm", _fn("rms_norm"), _rms_samples, dtypes=FLOATS, tol=LOOSE),
    OpInfo("top.group_norm", _fn("group_norm"), _group_norm_samples,
           dtypes=FLOATS + COMPLEX, tol=LOOSE),
    OpInfo("top.batch_norm", _batch_norm_stats, _batch_norm_samples,
           dtypes=F2 + COMPLEX, tol=LOOSE),
    OpInfo("top.instance_norm", _fn("instance_norm"), _instance_norm_samples, dtypes=F2 + COMPLEX,
           tol=LOOSE, errors=_instance_norm_errors),
    OpInfo("top.embedding", _fn("embedding"), _embedding_samples, dtypes=FLOATS),
    OpInfo("top.cosine_similarity", _fn("cosine_similarity"), _cosine_samples, dtypes=F2 + COMPLEX,
           tol=LOOSE),
    OpInfo("top.pairwise_distance", _fn("pairwise_distance"), _pair_samples, dtypes=F2,
           tol=LOOSE),
    OpInfo("top.pdist", _fn("pdist"), lambda d: [SampleInput((_x((4, 3), d, "strided"),), {}),
                                                 SampleInput((_x((4, 3), d), 1.0), {})],
           dtypes=F2, tol=LOOSE),
    OpInfo("top.kl_div", _fn("kl_div"), _kl_samples, dtypes=F2 + COMPLEX, tol=LOOSE),
    OpInfo("top.pixel_shuffle", _fn("pixel_shuffle"), _pixel_samples, dtypes=FLOATS),
    OpInfo("top.pixel_unshuffle", _fn("pixel_unshuffle"), _unshuffle_samples, dtypes=FLOATS,
           errors=_unshuffle_errors),
    OpInfo("top.pixel_unshuffle_empty", _fn("pixel_unshuffle"), _unshuffle_empty_samples,
           dtypes=FLOATS, check_stride=True),
    OpInfo("top.channel_shuffle", _fn("channel_shuffle"), _channel_shuffle_samples,
           dtypes=FLOATS),
    OpInfo("top.native_channel_shuffle", _fn("native_channel_shuffle"),
           _channel_shuffle_samples, dtypes=F2),
    OpInfo("top.celu_", _inplace_act("celu_"), _activation_samples((), (0.5,)), dtypes=F2 + COMPLEX,
           tol=LOOSE),
    OpInfo("top.selu_", _inplace_act("selu_"), _activation_samples(()),
           dtypes=F2 + COMPLEX, tol=LOOSE),
    OpInfo("top.rrelu_eval", _fn("rrelu"), _activation_samples((), (0.1, 0.3)),
           dtypes=F2 + COMPLEX),
    OpInfo("top.rrelu__eval", _inplace_act("rrelu_"), _activation_samples((), (0.1, 0.3)),
           dtypes=F2),
    OpInfo("top.threshold", _fn("threshold"), _activation_samples((0.1, 20.0)), dtypes=FLOATS),
    OpInfo("top.threshold_", _inplace_act("threshold_"), _activation_samples((0.1, 20.0)),
           dtypes=F2),
    OpInfo("top.prelu", _fn("prelu"), _prelu_samples, dtypes=FLOATS),
    OpInfo("top.hardshrink", _fn("hardshrink"), _activation_samples((), (1.0,)), dtypes=FLOATS),
    OpInfo("top.bilinear", _fn("bilinear"), _bilinear_samples, dtypes=F2, tol=LOOSE),
    OpInfo("top.binary_cross_entropy_with_logits", _fn("binary_cross_entropy_with_logits"),
           _loss_samples("bce"), dtypes=F2 + COMPLEX, tol=LOOSE),
    OpInfo("top.cosine_embedding_loss", _fn("cosine_embedding_loss"), _loss_samples("cosine"),
           dtypes=F2, tol=LOOSE),
    OpInfo("top.hinge_embedding_loss", _fn("hinge_embedding_loss"), _loss_samples("hinge"),
           dtypes=F2, tol=LOOSE),
    OpInfo("top.margin_ranking_loss", _fn("margin_ranking_loss"), _loss_samples("ranking"),
           dtypes=F2, tol=LOOSE),
    OpInfo("top.poisson_nll_loss", _fn("poisson_nll_loss"), _loss_samples("poisson"),
           dtypes=F2, tol=LOOSE),
    OpInfo("top.triplet_margin_loss", _fn("triplet_margin_loss"), _loss_samples("triplet"),
           dtypes=F2, tol=LOOSE),
    OpInfo("top.ctc_loss", _fn("ctc_loss"), _ctc_samples, dtypes=F2, tol=LOOSE),
]

_BY_NAME = {info.name: info for info in OPS}
# torch's native_channel_shuffle has no derivative; ember's (a view chain) has one
_BY_NAME["top.native_channel_shuffle"].grad = False
# torch's backward of an empty pixel_unshuffle (a copy) refuses its own empty gradient; ember's
# passes the empty gradient back
_BY_NAME["top.pixel_unshuffle_empty"].grad = False
# scale_grad_by_freq and CTC's gradient (which assumes normalised log-probabilities) are by
# design not the finite-difference derivative; both are compared with torch's gradients
_BY_NAME["top.embedding"].gradcheck = False
_BY_NAME["top.ctc_loss"].gradcheck = False
# CTC's alignment uses boolean-mask indexing, whose shape Meta cannot predict
_BY_NAME["top.ctc_loss"].meta = False


def _grid_samples(d):
    x = _x((1, 2, 4, 5), d, "permuted")
    grid = _x((1, 3, 3, 2), d, low=-1.1, high=1.1)
    for interp in (0, 1, 2):
        for pad in (0, 1, 2):
            for align in (False, True):
                yield SampleInput((x, grid, interp, pad, align), {}, f"{interp}-{pad}-{align}")


OPS += [
    OpInfo("Tensor.hardshrink", lambda lib, x, *a: x.hardshrink(*a),
           _activation_samples((), (1.0,)), dtypes=FLOATS),
    OpInfo("Tensor.prelu", lambda lib, x, w: x.prelu(w), _prelu_samples, dtypes=FLOATS),
    OpInfo("top.grid_sampler", _fn("grid_sampler"), _grid_samples, dtypes=F2, tol=LOOSE),
    OpInfo("top.affine_grid_generator", _fn("affine_grid_generator"),
           lambda d: [SampleInput((_x((2, 2, 3), d), (2, 1, 4, 5), a), {}) for a in (False,
                                                                                      True)],
           dtypes=F2, tol=LOOSE),
]


def _number_tensor_samples(d):
    """``(name, args)`` with the float, Scalar and int arguments given as 0-d tensors, which
    torch takes as the numbers they hold (meta=False: a meta tensor holds no number)."""
    x, T = _x((3, 4), d, "permuted"), ember.tensor
    yield SampleInput(("threshold", x, T(0.1), T(20.0)), {}, "threshold")
    yield SampleInput(("hardshrink", x, T(1.0)), {}, "hardshrink")
    yield SampleInput(("celu", x, T(0.5)), {}, "celu")
    yield SampleInput(("dropout", x, T(0.0), True), {}, "dropout")
    yield SampleInput(("pdist", x, T(1.0)), {}, "pdist")
    yield SampleInput(("cosine_similarity", x, x * 2, T(0), T(1e-6)), {}, "cosine_similarity")
    yield SampleInput(("pixel_shuffle", _x((1, 8, 2, 3), d), T(2)), {}, "pixel_shuffle")
    yield SampleInput(("pixel_unshuffle", _x((1, 2, 4, 6), d), T(2)), {}, "pixel_unshuffle")
    yield SampleInput(("channel_shuffle", _x((1, 6, 2, 2), d), T(3)), {}, "channel_shuffle")


OPS.append(OpInfo("top.number_tensors", lambda lib, name, *a: getattr(lib, name)(*a),
                  _number_tensor_samples, dtypes=F2, tol=LOOSE, meta=False))


def _renorm_samples(d):
    for max_norm, p in ((1.0, 2.0), (0.5, 1.0), (10.0, 2.0)):
        yield SampleInput((_x((5, 3), d), ember.tensor([[0, 2], [2, 4]]), max_norm, p), {},
                          f"{max_norm}-{p}")


# meta=False: the rows to renormalise depend on the indices' values; grad: torch has no
# derivative (its backward raises) and ember's renorm runs outside autograd
OPS.append(OpInfo("top.embedding_renorm_",
                  lambda lib, w, i, m, p: lib.embedding_renorm_(w.clone(), i, m, p),
                  _renorm_samples, dtypes=F2, tol=LOOSE, meta=False))
OPS[-1].grad = False
