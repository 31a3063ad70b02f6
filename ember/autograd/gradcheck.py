"""Finite-difference checks of gradients: ``gradcheck`` and ``gradgradcheck``.

The numerical Jacobian is a central difference ``(f(x + eps e_i) - f(x - eps e_i)) / 2 eps``
per input element; the analytical one is one vector-Jacobian product per output element.
They must agree within ``atol + rtol * |numerical|`` (PyTorch's defaults: eps 1e-6,
atol 1e-5, rtol 1e-3; inputs should be float64 or complex128).

NOTE [Complex gradcheck]
A complex input counts as two real inputs (its real and imaginary parts, each perturbed by
``eps`` and ``1j * eps``) and a complex output as two real outputs. In torch's convention the
gradient that backward returns for a grad_output of ``1`` (``1j``) at an output is
``dL/dx + 1j dL/dy`` of ``L`` = its real (imaginary) part: so the analytical Jacobian's
columns come from backward with ``1`` and ``1j``, and its rows from the real and imaginary
parts of each input gradient. Both Jacobians are real and are compared entry by entry.
"""

from __future__ import annotations

import warnings

import numpy as np

from ember.autograd._ops import op as aten
from ember.autograd.engine import grad as autograd_grad
from ember.autograd.grad_mode import enable_grad, no_grad
from ember.tensor import Tensor

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` when analytical and numerical gradients disagree.

    Example:
        >>> x = ember.ones(2, dtype=ember.float64, requires_grad=True)
        >>> try:
        ...     ember.autograd.gradcheck(lambda t: t + t.detach(), (x,))  # a gradient hidden
        ... except ember.autograd.GradcheckError:
        ...     print("analytical and numerical gradients differ")
        analytical and numerical gradients differ
    """


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _outputs(func, inputs):
    return tuple(o for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor))


def _parts(t: Tensor) -> tuple:
    """The directions of one element: ``(1,)`` for a real tensor, ``(1, 1j)`` for complex."""
    return (1, 1j) if t.dtype.is_complex else (1,)


def _real_components(t: Tensor) -> np.ndarray:
    """``t``'s values as float64, each complex element as its (real, imag) pair."""
    a = np.asarray(t.detach().resolve_conj().resolve_neg().numpy()).reshape(-1)
    if np.iscomplexobj(a):
        return np.stack([a.real, a.imag], -1).reshape(-1).astype(np.float64)
    return a.astype(np.float64)


def _numerical_jacobian(func, inputs, out_index, in_index, eps):
    x = inputs[in_index]
    out = _outputs(func, inputs)[out_index]
    parts = _parts(x)
    jac = np.zeros((x.numel() * len(parts), out.numel() * len(_parts(out))))
    target = x.detach()  # shares x's memory: writes perturb the real input
    shape = tuple(x.shape)
    with no_grad():
        for i in range(x.numel()):
            idx = tuple(int(k) for k in np.unravel_index(i, shape)) if shape else ()
            orig = target[idx].item()
            for k, part in enumerate(parts):
                target[idx] = orig + part * eps
                plus = _real_components(_outputs(func, inputs)[out_index])
                target[idx] = orig - part * eps
                minus = _real_components(_outputs(func, inputs)[out_index])
                target[idx] = orig
                jac[i * len(parts) + k] = (plus - minus) / (2 * eps)
    return jac


def _analytical_jacobian(func, inputs, out_index, in_index):
    x = inputs[in_index]
    out = _outputs(func, inputs)[out_index]
    parts = _parts(out)
    jac = np.zeros((x.numel() * len(_parts(x)), out.numel() * len(parts)))
    for j in range(out.numel()):
        for k, part in enumerate(parts):
            g = aten("zeros_like")(out)
            g.view(-1)[j] = part
            (gi,) = autograd_grad(out, (x,), g, retain_graph=True, allow_unused=True)
            if gi is not None:
                jac[:, j * len(parts) + k] = _real_components(gi)
    return jac


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
              check_batched_grad: bool = False, check_backward_ad: bool = True,
              fast_mode: bool = False, masked=None, **unused) -> bool:
    """Compare analytical gradients of ``func`` at ``inputs`` with finite differences.

    Returns:
        True when every (output, input) Jacobian pair agrees; otherwise raises
        ``GradcheckError`` (or returns False with ``raise_exception=False``).

    Complex inputs and outputs are checked as pairs of real ones, by torch's convention
    (NOTE [Complex gradcheck]).

    Example:
        >>> x = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
        >>> ember.autograd.gradcheck(lambda t: (t * t).sin(), (x,))
        True
        >>> z = ember.tensor([1 + 2j, -0.5j], dtype=ember.complex128, requires_grad=True)
        >>> ember.autograd.gradcheck(lambda t: (t * t.conj() + t).exp(), (z,))
        True
    """
    inputs = _as_tuple(inputs)
    diff = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of the them have requires_grad=True.")
    for i in diff:
        if inputs[i].dtype.name not in ("float64", "complex128"):
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          "point or complex. This check will likely fail if all the inputs are "
                          "not of double precision floating point or complex. ", stacklevel=2)
    outputs = _outputs(func, inputs)
    for o_idx, out in enumerate(outputs):
        if not out.requires_grad:
            continue
        for i_idx in diff:
            num = _numerical_jacobian(func, inputs, o_idx, i_idx, eps)
            ana = _analytical_jacobian(func, inputs, o_idx, i_idx)
            if not np.allclose(ana, num, rtol=rtol, atol=atol):
                msg = (f"Jacobian mismatch for output {o_idx} with respect to input {i_idx},\n"
                       f"numerical:{num}\nanalytical:{ana}\n")
                if raise_exception:
                    raise GradcheckError(msg)
                return False
            again = _analytical_jacobian(func, inputs, o_idx, i_idx)
            if not np.allclose(again, ana, rtol=0, atol=nondet_tol):
                msg = ("Backward is not reentrant, i.e., running backward with same input and "
                       "grad_output multiple times gives different values, although analytical "
                       "gradient matches numerical gradient.")
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, gen_non_contig_grad_outputs: bool = False,
                  raise_exception: bool = True, nondet_tol: float = 0.0, **unused) -> bool:
    """``gradcheck`` of the first derivative: checks second-order gradients.

    Example:
        >>> x = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
        >>> ember.autograd.gradgradcheck(lambda t: t ** 3, (x,))
        True
    """
    inputs = _as_tuple(inputs)
    outputs = _outputs(func, inputs)
    if grad_outputs is None:
        grad_outputs = tuple(aten("randn_like")(o, dtype=o.dtype).requires_grad_() for o in outputs)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    diff = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]

    def first_derivative(*args):
        # runs under gradcheck's no_grad while it perturbs inputs: the graph is needed anyway
        with enable_grad():
            ins, gos = args[:n_in], args[n_in:]
            outs = _outputs(func, ins)
            diff_ins = tuple(ins[i] for i in diff)
            grads = autograd_grad(outs, diff_ins, gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivative, inputs + tuple(grad_outputs), eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception, nondet_tol=nondet_tol)
