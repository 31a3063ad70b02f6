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
_MAXIMIZE, _ADAMW, _NESTEROV, _FIRST = 1, 2, 4, 8

# One C function per dtype and per (amsgrad, scaled) or (momentum, scaled) pair: the branches
# that store conditionally are decided when the code is generated, so every loop vectorizes.
_ADAM_C = """
void adam_{sfx}_{ams}{scaled}(int64_t n, {t}* restrict p, {t}* restrict g, {t}* restrict m,
                {t}* restrict v, {t}* restrict vmax, double b1w_d, double b2_d, double b2w_d,
                double wd_d, double decay_d, double eps_d, double step_size_d, double bc2_d,
                double inv_scale_d, int flags) {{
    const {t} b1w = ({t})b1w_d, b2 = ({t})b2_d, b2w = ({t})b2w_d, wd = ({t})wd_d;
    const {t} decay = ({t})decay_d, eps = ({t})eps_d, neg_step = ({t})(-step_size_d);
    const {t} bc2 = ({t})bc2_d, inv_scale = ({t})inv_scale_d;
    const int maximize = flags & {MAXIMIZE}, adamw = flags & {ADAMW}, decays = wd != 0;
    const int low = b1w < ({t})0.5;
    const {t} b1w_c = ({t})1 - b1w;
    (void)vmax; (void)inv_scale;
    for (int64_t i = 0; i < n; i++) {{
        {t} gi = g[i];
        if ({scaled}) {{ gi = gi * inv_scale; g[i] = gi; }}
        gi = maximize ? -gi : gi;
        const {t} p0 = p[i];
        const {t} pi = (decays && adamw) ? p0 * decay : p0;
        gi = (decays && !adamw) ? gi + wd * p0 : gi;
        const {t} mi = m[i], d = gi - mi;
        const {t} mn = low ? mi + b1w * d : gi - d * b1w_c;
        m[i] = mn;
        {t} vn = v[i] * b2;
        vn = vn + b2w * gi * gi;
        v[i] = vn;
        if ({ams}) {{ const {t} x = vmax[i]; vn = (x > vn || x != x) ? x : vn; vmax[i] = vn; }}
        const {t} denom = sqrt{fn}(vn) / bc2 + eps;
        p[i] = pi + neg_step * (mn / denom);
    }}
}}
"""

_SGD_C = """
void sgd_{sfx}_{mom}{scaled}(int64_t n, {t}* restrict p, {t}* restrict g, {t}* restrict b,
               double lr_d, double wd_d, double momentum_d, double damp_w_d, double inv_scale_d,
               int flags) {{
    const {t} neg_lr = ({t})(-lr_d), wd = ({t})wd_d, mom = ({t})momentum_d;
    const {t} damp_w = ({t})damp_w_d, inv_scale = ({t})inv_scale_d;
    const int maximize = flags & {MAXIMIZE}, nesterov = flags & {NESTEROV};
    const int first = flags & {FIRST}, decays = wd != 0;
    (void)b; (void)mom; (void)damp_w; (void)nesterov; (void)first; (void)inv_scale;
    for (int64_t i = 0; i < n; i++) {{
        {t} gi = g[i];
        if ({scaled}) {{ gi = gi * inv_scale; g[i] = gi; }}
        gi = maximize ? -gi : gi;
        const {t} pi = p[i];
        gi = decays ? gi + wd * pi : gi;
        if ({mom}) {{
            const {t} bi = first ? gi : b[i] * mom + damp_w * gi;
            b[i] = bi;
            gi = nesterov ? gi + mom * bi : bi;
        }}
        p[i] = pi + neg_lr * gi;
    }}
}}
"""

_VARIANTS = ((0, 0), (0, 1), (1, 0), (1, 1))


@functools.lru_cache(maxsize=1)
def _library():
    """The built C kernels, or None (no C compiler: the NumPy form runs)."""
    flags = dict(MAXIMIZE=_MAXIMIZE, NESTEROV=_NESTEROV, FIRST=_FIRST)
    parts, symbols = ["#include <stdint.h>\n#include <math.h>\n"], []
    for t, sfx in _C_DTYPES.values():
        for a, b in _VARIANTS:
            parts.append(_ADAM_C.format(t=t, sfx=sfx, fn="f" if t == "float" else "", ams=a,
                                        scaled=b, ADAMW=_ADAMW, **flags))
            parts.append(_SGD_C.format(t=t, sfx=sfx, mom=a, scaled=b, **flags))
            symbols += [f"adam_{sfx}_{a}{b}", f"sgd_{sfx}_{a}{b}"]
    lib = cc.build("".join(parts), symbols, who="ember.optim (fused=True)",
                   fallback="the NumPy form of the fused step")
    if lib is None:
        return None
    d, i64, ptr = ctypes.c_double, ctypes.c_int64, ctypes.c_void_p
    for name in symbols:
        fn = getattr(lib, name)
        fn.restype = None
        fn.argtypes = ([i64, ptr, ptr, ptr, ptr, ptr] + [d] * 9 if name.startswith("adam")
                       else [i64, ptr, ptr, ptr] + [d] * 5) + [ctypes.c_int]
    return lib


_SUFFIX = {"float32": "f32", "float64": "f64"}


def _c_kernel(name: str, tensors, variant: str):
    """The C function for these tensors, or None when they need the NumPy form."""
    dtype = tensors[0]._dtype
    sfx = _SUFFIX.get(dtype.name)
    if sfx is None or not all(t._dtype is dtype and t.is_contiguous() for t in tensors):
        return None
    lib = _library()
    return None if lib is None else getattr(lib, f"{name}_{sfx}_{variant}")


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
        flags = (_MAXIMIZE if maximize else 0) | (_ADAMW if adamw else 0)
        variant = f"{int(bool(amsgrad))}{int(inv_scale is not None)}"
        for k, p in enumerate(self):
            if not p.numel():
                continue
            step = float(arr(state_steps[k]))
            c = {"b1w": 1 - beta1, "b2": beta2, "b2w": 1 - beta2, "wd": weight_decay,
                 "decay": 1 - lr * weight_decay, "eps": eps,
                 "step_size": lr / (1 - beta1 ** step), "bc2": (1 - beta2 ** step) ** 0.5,
                 "inv_scale": 1.0 if inv_scale is None else inv_scale}
            tensors = [p, grads[k], exp_avgs[k], exp_avg_sqs[k]]
            if amsgrad:
                tensors.append(max_exp_avg_sqs[k])
            for t in tensors[:1] + tensors[2:]:
                t._ver.value += 1
            if inv_scale is not None:
                grads[k]._ver.value += 1
            fn = _c_kernel("adam", tensors, variant)
            if fn is not None:
                vmax = tensors[4].data_ptr() if amsgrad else None
                fn(p.numel(), *(t.data_ptr() for t in tensors[:4]), vmax, c["b1w"], c["b2"],
                   c["b2w"], c["wd"], c["decay"], c["eps"], c["step_size"], c["bc2"],
                   c["inv_scale"], flags)
            else:
                arrays = [arr(t) for t in tensors]
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
    flags = ((_MAXIMIZE if maximize else 0) | (_NESTEROV if nesterov else 0)
             | (_FIRST if is_first_step else 0))
    variant = f"{int(momentum != 0)}{int(inv_scale is not None)}"
    c = {"lr": lr, "wd": weight_decay, "momentum": momentum, "damp_w": 1 - dampening,
         "inv_scale": 1.0 if inv_scale is None else inv_scale}
    for k, p in enumerate(self):
        if not p.numel():
            continue
        tensors = [p, grads[k]]
        if momentum != 0:
            tensors.append(momentum_buffer_list[k])
        for t in tensors:
            if t is not grads[k] or inv_scale is not None:
                t._ver.value += 1
        fn = _c_kernel("sgd", tensors, variant)
        if fn is not None:
            buf = tensors[2].data_ptr() if momentum != 0 else None
            fn(p.numel(), p.data_ptr(), grads[k].data_ptr(), buf, lr, weight_decay, momentum,
               c["damp_w"], c["inv_scale"], flags)
        else:
            arrays = [arr(t) for t in tensors]
            _sgd_numpy(arrays[0], arrays[1], arrays[2] if momentum != 0 else None, c, maximize,
                       nesterov, is_first_step, inv_scale)
    return None


@ops._foreach_add_.impl("CPU")
def _foreach_add(self, scalar):
    ops._foreach_add_.meta_rule(self, scalar)
    for t in self:
        t._ver.value += 1
        if t.numel():
            a = arr(t)
            np.add(a, scalar, out=a, casting="unsafe")
    return self
