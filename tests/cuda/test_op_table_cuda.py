"""The op table on the ``cuda`` device against ember's CPU results (needs a GPU).

Every entry's float32 and float64 samples run on the CPU and, copied in the same geometry
(strides, offsets, shared storages), on cuda; results must agree within a tolerance for
reordered floating-point sums (GPU reductions and cuBLAS sum in another order than NumPy):
a few units in the last place of the result's magnitude. Entries that refuse on the CPU must
refuse on cuda with the same exception type. Float64 samples also compare gradients (the same
random cotangent through ``autograd.grad``). Samples holding bfloat16 tensors are left out:
CuPy has no bfloat16 dtype, so the cuda device has none.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.cuda._gpu import AVAILABLE, requires_cuda, to_cpu, to_cuda
from tests.ops.test_ops import OP_DB

pytestmark = requires_cuda

# entries whose values are implementation defined (empty, random) compare shape/dtype only;
# entries that read host values with .numpy() on purpose are not device ops
_SKIP = {"median_dim", "nanmedian_dim", "mode"}
_TOL = {"float32": (2e-5, 1e-6), "float64": (1e-12, 1e-14)}

CASES = [pytest.param(info, d, id=f"{info.name}-{d}") for info in OP_DB
         for d in info.dtypes if d in ("float32", "float64") and info.name not in _SKIP] \
    if AVAILABLE else [pytest.param(None, None, id="no-cuda")]


def _tensors(x):
    if isinstance(x, ember.Tensor):
        return [x]
    if isinstance(x, tuple | list):
        return [t for v in x for t in _tensors(v)]
    return []


def _close(got, ref, dtype: str, where: str) -> None:
    rtol, atol = _TOL[dtype]
    g, r = _tensors(got), _tensors(ref)
    assert len(g) == len(r), f"{where}: {len(g)} outputs, CPU gave {len(r)}"
    for i, (a, b) in enumerate(zip(g, r)):
        assert a.device.type == "cuda", f"{where}: output {i} on {a.device}"
        assert tuple(a.shape) == tuple(b.shape) and a.dtype == b.dtype, \
            f"{where}: output {i} is {a.dtype}{tuple(a.shape)}, CPU {b.dtype}{tuple(b.shape)}"
        x, y = to_cpu(a).numpy(), b.detach().numpy()
        if x.dtype.kind in "fc":
            scale = float(np.nanmax(np.abs(y[np.isfinite(y)]), initial=1.0))
            np.testing.assert_allclose(x, y, rtol=rtol * 8, atol=atol + rtol * 8 * scale,
                                       equal_nan=True, err_msg=f"{where}: output {i}")
        else:
            np.testing.assert_array_equal(x, y, err_msg=f"{where}: output {i}")


@pytest.mark.parametrize("info,dtype", CASES)
def test_op_table_on_cuda(info, dtype):
    for sample in info.samples(dtype):
        if any(t.dtype == ember.bfloat16 for t in
               _tensors([*sample.args, *sample.kwargs.values()])):
            continue  # CuPy has no bfloat16 (mixed-dtype samples)
        args, kwargs = to_cuda((sample.args, sample.kwargs))
        try:
            ref = info.fn(ember, *sample.args, **sample.kwargs)
        except Exception as exc:  # the CPU refuses: cuda refuses the same way
            with pytest.raises(type(exc)):
                info.fn(ember, *args, **kwargs)
            continue
        got = info.fn(ember, *args, **kwargs)
        if info.compare_values:
            _close(got, ref, dtype, f"{info.name} {sample!r}")
        if dtype == "float64" and getattr(info, "grad", True):
            _compare_grads(info, sample, f"{info.name} {sample!r}")


def _leaves(args):
    out, leaves = [], []
    for a in args:
        if isinstance(a, ember.Tensor) and a.dtype.is_floating_point:
            a = a.detach().requires_grad_(True)
            leaves.append(a)
        out.append(a)
    return tuple(out), leaves


def _compare_grads(info, sample, where: str) -> None:
    args, leaves = _leaves(sample.args)
    if not leaves:
        return
    try:
        out = info.fn(ember, *args, **sample.kwargs)
        outs = [o for o in _tensors(out) if o.requires_grad]
        if not outs:
            return
        rng = np.random.default_rng(0)
        cot = [ember.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype) for o in outs]
        ref = ember.autograd.grad(outs, leaves, cot, allow_unused=True)
    except Exception:  # noqa: BLE001  (no CPU gradient: nothing to compare)
        return
    d_args, d_leaves = _leaves(to_cuda(sample.args))
    d_out = info.fn(ember, *d_args, **to_cuda(sample.kwargs))
    d_outs = [o for o in _tensors(d_out) if o.requires_grad]
    got = ember.autograd.grad(d_outs, d_leaves, to_cuda(cot), allow_unused=True)
    for i, (g, r) in enumerate(zip(got, ref)):
        if g is None or r is None:
            assert (g is None) == (r is None), f"{where}: grad {i} None on one side"
            continue
        _close(g, r.detach(), "float64", f"{where} grad {i}")
