"""Tensor programs for differential tests: each compiled result must equal eager ember.

``CASES`` lists ``(function, make_args)``; ``make_args()`` builds fresh inputs each time (so
in-place programs start from the same state). ``BREAKS`` names the cases expected to break.
"""

from __future__ import annotations

import math

import numpy as np

import ember
import ember.nn.functional as F

CASES: list[tuple] = []
BREAKS: set[str] = set()


def _t(*shape, seed=0):
    return ember.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def case(make_args, breaks=False):
    def deco(f):
        CASES.append((f, make_args))
        if breaks:
            BREAKS.add(f.__name__)
        return f
    return deco


@case(lambda: (_t(4, 5),))
def t_reductions(x):
    return x.sum(), x.mean(dim=0), x.amax(dim=-1, keepdim=True), x.std(dim=1), x.argmax(dim=1)


@case(lambda: (_t(4, 5),))
def t_indexing(x):
    return x[1], x[:, 2], x[1:3, ::2], x[..., -1], x[None, 0], x[[0, 2]]


@case(lambda: (_t(2, 3, 4),))
def t_views(x):
    return x.view(6, 4), x.permute(2, 0, 1).contiguous(), x.transpose(0, 1), x.reshape(-1), \
        x.unsqueeze(1).shape, x.flatten(1)


@case(lambda: (_t(3, 4), _t(4, 2, seed=1)))
def t_matmul_chain(a, b):
    c = a @ b
    return F.softmax(c, dim=-1), F.relu(c).sum(dim=0), ember.tanh(c) * 0.5


@case(lambda: (_t(5),))
def t_inplace_intermediate(x):
    y = x.clone()
    y.mul_(2)
    y.add_(1).clamp_(min=0)
    return y


@case(lambda: (_t(3, 3),))
def t_python_math(x):
    n = x.shape[0]
    scale = 1.0 / math.sqrt(n)
    return x * scale + (n - 1) ** 2


@case(lambda: ([_t(3), _t(3, seed=1), _t(3, seed=2)],))
def t_list_of_tensors(xs):
    total = xs[0]
    for t in xs[1:]:
        total = total + t
    return total, ember.stack(xs), ember.cat([t * i for i, t in enumerate(xs)])


@case(lambda: ({"w": _t(3, 3), "b": _t(3, seed=1)}, _t(2, 3, seed=2)))
def t_dict_params(p, x):
    return F.linear(x, p["w"], p["b"]), {k: v.sum() for k, v in p.items()}


@case(lambda: (_t(2, 8),))
def t_chunk_unpack(x):
    a, b = x.chunk(2, dim=1)
    q, k, v = x.split([2, 3, 3], dim=1)
    return a * b, q.sum() + k.sum() + v.sum()


@case(lambda: (_t(4, 4),))
def t_where_and_masks(x):
    m = x > 0
    return ember.where(m, x, ember.zeros_like(x)), m.float().mean(), (~m).sum()


@case(lambda: (_t(3, 4), 2))
def t_int_arg(x, k):
    return x.topk(k, dim=1).values, x.repeat(k, 1)


@case(lambda: (_t(6),))
def t_tensor_iteration(x):
    out = []
    for row in x.view(3, 2):
        out.append(row.sum())
    return ember.stack(out)


@case(lambda: (_t(4),))
def t_item_break(x):
    m = x.max().item()
    return x / m


@case(lambda: (_t(4),), breaks=True)
def t_data_dependent_branch(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


@case(lambda: (_t(4, 3),))
def t_closure_and_lambda(x):
    act = lambda t: F.gelu(t)  # noqa: E731
    def block(t, w):
        return act(t) * w
    return block(x, 2.0) + block(x, 3.0)


@case(lambda: (_t(2, 3),))
def t_dtype_ops(x):
    y = x.to(ember.float64)
    z = (x * 10).to(ember.int64)
    return y.dtype, y * 2, z // 3, z % 4, x.double().sum()


@case(lambda: (_t(2, 3),))
def t_factory(x):
    return ember.ones(2, 3) + x, ember.arange(3) * 2, ember.full_like(x, 7.0), \
        ember.eye(3)[0]


@case(lambda: (_t(1, 2, 6, 6),))
def t_conv_pool(x):
    w = ember.ones(3, 2, 3, 3) / 18
    y = F.conv2d(x, w, padding=1)
    return F.max_pool2d(y, 2), F.avg_pool2d(y, 3).shape


@case(lambda: (_t(4, 6),))
def t_norms(x):
    return F.layer_norm(x, (6,)), F.normalize(x, dim=-1), x.norm(dim=1)


@case(lambda: (_t(3),))
def t_fstring_and_isinstance(x):
    name = f"{type(x).__name__}:{x.dim()}:{tuple(x.shape)}"
    if isinstance(x, ember.Tensor) and name.startswith("Tensor"):
        return x + len(name)
    return x


@case(lambda: (_t(5),))
def t_setitem(x):
    y = x.clone()
    y[1:3] = 0.0
    y[-1] += 5
    return y


@case(lambda: (_t(3, 4),))
def t_tuple_return_structure(x):
    return (x, (x.sum(), [x.t(), {"a": x.abs()}]), None, 3)


@case(lambda: (_t(2, 2), _t(2, 2, seed=1)))
def t_kwargs_and_defaults(a, b):
    def f(x, y=None, *, alpha=1.0):
        return x + alpha * (y if y is not None else x)
    return f(a), f(a, b), f(a, y=b, alpha=0.5)


@case(lambda: (_t(8),))
def t_grad_mode_blocks(x):
    with ember.no_grad():
        a = x * 2
    with ember.enable_grad():
        b = x + 1
    return a, b
