"""CPU kernels of the fused optimizer steps (NOTE [Fused optimizer steps] in
ember/ops/optimizer_steps.py).

A contiguous float32/float64 parameter whose gradient and state tensors are contiguous too is
updated by generated C: one loop over its elements that reads each array once and writes each
result once (built with ``ember._internal.cc``, cached on disk). Everything else (strided or
half-precision tensors, or no C compiler) runs the same arithmetic as in-place NumPy ufuncs in
the C loop's order of operations and rounding (float32 scalars for float32 data, no fused
multiply-add), so both forms give identical bits.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np

from ember._internal import cc
from ember.backends.cpu._util import arr
from ember.ops import optimizer_steps as ops

__all__ = []

_C_DTYPES = {np.dtype(np.float32): ("float", "f32"), np.dtype(np.float64): ("double", "f64")}

# flags of the C kernels
_AMSGRAD, _MAXIMIZE, _ADAMW, _SCALED, _NESTEROV, _FIRST = 1, 2, 4, 8, 16, 32

_ADAM_C = """
void adam_{sfx}(int64_t n, {t}* restrict p, {t}* restrict g, {t}* restrict m, {t}* restrict v,
                {t}* restrict vmax, double lr_d, double b1w_d, double b2_d, double b2w_d,
                double wd_d, double decay_d, double eps_d, double step_size_d, double bc2_d,
                double inv_scale_d, int flags) {{
    const {t} b1w = ({t})b1w_d, b2 = ({t})b2_d, b2w = ({t})b2w_d, wd = ({t})wd_d;
    const {t} decay = ({t})decay_d, eps = ({t})eps_d, neg_step = ({t})(-step_size_d);
    const {t} bc2 = ({t})bc2_d, inv_scale = ({t})inv_scale_d;
    const int amsgrad = flags & {AMSGRAD}, maximize = flags & {MAXIMIZE};
    const int adamw = flags & {ADAMW}, scaled = flags & {SCALED};
    const int low = b1w < ({t})0.5;
    const {t} b1w_c = ({t})1 - b1w;
    (void)lr_d;
    for (int64_t i = 0; i < n; i++) {{
        {t} gi = g[i];
        if (scaled) {{ gi = gi * inv_scale; g[i] = gi; }}
        if (maximize) gi = -gi;
        {t} pi = p[i];
        if (wd != 0) {{
            if (adamw) pi = pi * decay;
            else gi = gi + wd * pi;
        }}
        const {t} mi = m[i], d = gi - mi;
        const {t} mn = low ? mi + b1w * d : gi - d * b1w_c;
        m[i] = mn;
        {t} vn = v[i] * b2;
        vn = vn + b2w * gi * gi;
        v[i] = vn;
        if (amsgrad) {{ if (vmax[i] > vn || vmax[i] != vmax[i]) vn = vmax[i]; vmax[i] = vn; }}
        const {t} denom = sqrt{fn}(vn) / bc2 + eps;
        p[i] = pi + neg_step * (mn / denom);
    }}
}}

void sgd_{sfx}(int64_t n, {t}* restrict p, {t}* restrict g, {t}* restrict b, double lr_d,
               double wd_d, double momentum_d, double damp_w_d, double inv_scale_d, int flags) {{
    const {t} neg_lr = ({t})(-lr_d), wd = ({t})wd_d, mom = ({t})momentum_d;
    const {t} damp_w = ({t})damp_w_d, inv_scale = ({t})inv_scale_d;
    const int maximize = flags & {MAXIMIZE}, scaled = flags & {SCALED};
    const int nesterov = flags & {NESTEROV}, first = flags & {FIRST};
    for (int64_t i = 0; i < n; i++) {{
        {t} gi = g[i];
        if (scaled) {{ gi = gi * inv_scale; g[i] = gi; }}
        if (maximize) gi = -gi;
        const {t} pi = p[i];
        if (wd != 0) gi = gi + wd * pi;
        if (mom != 0) {{
            const {t} bi = first ? gi : b[i] * mom + damp_w * gi;
            b[i] = bi;
            gi = nesterov ? gi + mom * bi : bi;
        }}
        p[i] = pi + neg_lr * gi;
    }}
}}
"""


@functools.lru_cache(maxsize=1)
def _library():
    """The built C kernels, or None (no C compiler: the NumPy form runs)."""
    flags = dict(AMSGRAD=_AMSGRAD, MAXIMIZE=_MAXIMIZE, ADAMW=_ADAMW, SCALED=_SCALED,
                 NESTEROV=_NESTEROV, FIRST=_FIRST)
    source = "#include <stdint.h>\n#include <math.h>\n" + "".join(
        _ADAM_C.format(t=t, sfx=sfx, fn="f" if t == "float" else "", **flags)
        for t, sfx in _C_DTYPES.values())
    symbols = [f"{k}_{sfx}" for _, sfx in _C_DTYPES.values() for k in ("adam", "sgd")]
    lib = cc.build(source, symbols, who="ember.optim (fused=True)",
                   fallback="the NumPy form of the fused step")
    if lib is None:
        return None
    d, i64, ptr = ctypes.c_double, ctypes.c_int64, ctypes.c_void_p
    for _, sfx in _C_DTYPES.values():
        getattr(lib, f"adam_{sfx}").argtypes = [i64, ptr, ptr, ptr, ptr, ptr] + [d] * 10 + [
            ctypes.c_int]
        getattr(lib, f"sgd_{sfx}").argtypes = [i64, ptr, ptr, ptr] + [d] * 5 + [ctypes.c_int]
        getattr(lib, f"adam_{sfx}").restype = None
        getattr(lib, f"sgd_{sfx}").restype = None
    return lib


def _c_kernel(name: str, arrays):
    """The C function for these arrays, or None when they need the NumPy form."""
    a0 = arrays[0]
    spec = _C_DTYPES.get(a0.dtype)
    if spec is None or not all(a.flags.c_contiguous and a.dtype == a0.dtype for a in arrays):
        return None
    lib = _library()
    return None if lib is None else getattr(lib, f"{name}_{spec[1]}")


def _ptr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _skip(found_inf) -> bool:
    return found_inf is not None and float(arr(found_inf).reshape(-1)[0]) != 0.0


def _inv_scale(grad_scale):
    return None if grad_scale is None else 1.0 / float(arr(grad_scale).reshape(-1)[0])


def _compute(a: np.ndarray) -> np.ndarray:
    """``a`` itself for float32/float64, a float32 working copy for half types."""
    return a if a.dtype in _C_DTYPES else a.astype(np.float32)


def _scalar_type(a: np.ndarray):
    return a.dtype.type if a.dtype in _C_DTYPES else np.float32


def _adam_numpy(p, g, m, v, vmax, c, adamw, maximize, inv_scale):
    """The C loop's arithmetic as NumPy ufuncs (same order, same scalar rounding)."""
    f = _scalar_type(p)
    pw, gw, mw, vw = _compute(p), _compute(g), _compute(m), _compute(v)
    s = {k: f(x) for k, x in c.items()}
    if inv_scale is not None:
        np.multiply(gw, s["inv_scale"], out=gw)
        if gw is not g:
            np.copyto(g, gw, casting="unsafe")
    gi = -gw if maximize else gw.copy()
    if c["wd"] != 0:
        if adamw:
            np.multiply(pw, s["decay"], out=pw)
        else:
            gi += s["wd"] * pw
    d = gi - mw
    if c["b1w"] < 0.5:
        mw += s["b1w"] * d
    else:
        np.subtract(gi, d * f(1 - s["b1w"]), out=mw)
    vw *= s["b2"]
    vw += s["b2w"] * gi * gi
    vn = vw
    if vmax is not None:
        vx = _compute(vmax)
        np.maximum(vx, vw, out=vx)
        vn = vx
        if vx is not vmax:
            np.copyto(vmax, vx, casting="unsafe")
    denom = np.sqrt(vn) / s["bc2"] + s["eps"]
    pw += f(-c["step_size"]) * (mw / denom)
    for work, dst in ((pw, p), (mw, m), (vw, v)):
        if work is not dst:
            np.copyto(dst, work, casting="unsafe")


def _adam(adamw: bool):
    def kernel(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *, lr, beta1,
               beta2, weight_decay, eps, amsgrad, maximize, grad_scale=None, found_inf=None):
        rule = ops._fused_adamw_ if adamw else ops._fused_adam_
        rule.meta_rule(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr=lr,
                       beta1=beta1, beta2=beta2, weight_decay=weight_decay, eps=eps,
                       amsgrad=amsgrad, maximize=maximize, grad_scale=grad_scale,
                       found_inf=found_inf)
        if _skip(found_inf):
            return None
        inv_scale = _inv_scale(grad_scale)
        flags = ((_AMSGRAD if amsgrad else 0) | (_MAXIMIZE if maximize else 0)
                 | (_ADAMW if adamw else 0) | (_SCALED if inv_scale is not None else 0))
        for k, p in enumerate(self):
            if not p.numel():
                continue
            step = float(arr(state_steps[k]).reshape(-1)[0])
            c = {"b1w": 1 - beta1, "b2": beta2, "b2w": 1 - beta2, "wd": weight_decay,
                 "decay": 1 - lr * weight_decay, "eps": eps,
                 "step_size": lr / (1 - beta1 ** step), "bc2": (1 - beta2 ** step) ** 0.5,
                 "inv_scale": 1.0 if inv_scale is None else inv_scale}
            arrays = [arr(p), arr(grads[k]), arr(exp_avgs[k]), arr(exp_avg_sqs[k])]
            if amsgrad:
                arrays.append(arr(max_exp_avg_sqs[k]))
            for t in (p, grads[k], exp_avgs[k], exp_avg_sqs[k]):
                t._ver.value += 1
            if amsgrad:
                max_exp_avg_sqs[k]._ver.value += 1
            fn = _c_kernel("adam", arrays)
            if fn is not None:
                vmax = _ptr(arrays[4]) if amsgrad else None
                fn(p.numel(), *(_ptr(a) for a in arrays[:4]), vmax, lr, c["b1w"], c["b2"],
                   c["b2w"], c["wd"], c["decay"], c["eps"], c["step_size"], c["bc2"],
                   c["inv_scale"], flags)
            else:
                _adam_numpy(*arrays[:4], arrays[4] if amsgrad else None, c, adamw, maximize,
                            inv_scale)
        return None
    return kernel


ops._fused_adam_.impl("CPU")(_adam(False))
ops._fused_adamw_.impl("CPU")(_adam(True))


def _sgd_numpy(p, g, b, c, maximize, nesterov, first, inv_scale):
    """The C loop's arithmetic as NumPy ufuncs (same order, same scalar rounding)."""
    f = _scalar_type(p)
    pw, gw = _compute(p), _compute(g)
    if inv_scale is not None:
        np.multiply(gw, f(c["inv_scale"]), out=gw)
        if gw is not g:
            np.copyto(g, gw, casting="unsafe")
    gi = -gw if maximize else gw.copy()
    if c["wd"] != 0:
        gi += f(c["wd"]) * pw
    if c["momentum"] != 0:
        bw = _compute(b)
        if first:
            np.copyto(bw, gi)
        else:
            np.multiply(bw, f(c["momentum"]), out=bw)
            bw += f(c["damp_w"]) * gi
        if bw is not b:
            np.copyto(b, bw, casting="unsafe")
        gi = gi + f(c["momentum"]) * bw if nesterov else bw
    pw += f(-c["lr"]) * gi
    if pw is not p:
        np.copyto(p, pw, casting="unsafe")


@ops._fused_sgd_.impl("CPU")
def _fused_sgd(self, grads, momentum_buffer_list, *, weight_decay, momentum, lr, dampening,
               nesterov, maximize, is_first_step, grad_scale=None, found_inf=None):
    ops._fused_sgd_.meta_rule(self, grads, momentum_buffer_list, weight_decay=weight_decay,
                              momentum=momentum, lr=lr, dampening=dampening, nesterov=nesterov,
                              maximize=maximize, is_first_step=is_first_step,
                              grad_scale=grad_scale, found_inf=found_inf)
    if _skip(found_inf):
        return None
    inv_scale = _inv_scale(grad_scale)
    flags = ((_MAXIMIZE if maximize else 0) | (_SCALED if inv_scale is not None else 0)
             | (_NESTEROV if nesterov else 0) | (_FIRST if is_first_step else 0))
    c = {"lr": lr, "wd": weight_decay, "momentum": momentum, "damp_w": 1 - dampening,
         "inv_scale": 1.0 if inv_scale is None else inv_scale}
    for k, p in enumerate(self):
        if not p.numel():
            continue
        arrays = [arr(p), arr(grads[k])]
        touched = [p, grads[k]] if inv_scale is not None else [p]
        if momentum != 0:
            arrays.append(arr(momentum_buffer_list[k]))
            touched.append(momentum_buffer_list[k])
        for t in touched:
            t._ver.value += 1
        fn = _c_kernel("sgd", arrays)
        if fn is not None:
            buf = _ptr(arrays[2]) if momentum != 0 else None
            fn(p.numel(), _ptr(arrays[0]), _ptr(arrays[1]), buf, lr, weight_decay, momentum,
               c["damp_w"], c["inv_scale"], flags)
        else:
            _sgd_numpy(arrays[0], arrays[1], arrays[2] if momentum != 0 else None, c, maximize,
                       nesterov, is_first_step, inv_scale)
    return None
