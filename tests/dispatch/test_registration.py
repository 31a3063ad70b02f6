"""Operators are complete the moment they are declared (NOTE [A declared operator is complete]).

No pass over ``all_ops()`` runs anywhere: Meta kernels come from the Meta fallback, autograd
from the Autograd and ADInplaceOrView fallbacks, CPU kernels from the CPU backend that the
device registry imports on the first CPU dispatch, Tensor methods as they are declared.
"""

from __future__ import annotations

import pkgutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
import ember.backends.cpu
import ember.ops
from ember.backends.cpu._util import new_output
from ember.dispatch import DispatchKey, DispatchMode
from ember.ops._define import Spec, Tag, derivative, operator
from ember.tensor import numpy_view


def _run_fresh(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_import_ember_ops_alone_gives_every_op_cpu_and_meta():
    out = _run_fresh("""
        import sys
        import ember.ops
        from ember.dispatch import all_ops, DispatchKey as K
        from ember.tensor import Tensor
        assert "ember.backends.cpu" not in sys.modules  # imported on the first CPU dispatch
        ops = all_ops()
        no_cpu = [op.qualname for op in ops if op.resolve(K.CPU)[0] is None]
        no_meta = [op.qualname for op in ops if op.resolve(K.Meta)[0] is None]
        assert "ember.backends.cpu" in sys.modules
        assert not no_cpu and not no_meta, (no_cpu, no_meta)
        add = ember.ops.pointwise.add  # bound as a plain function over the operator
        assert Tensor.add is add.method and Tensor.__add__ is Tensor.add
        assert Tensor.add.__wrapped__ is add
        x = ember.ops.creation.ones(2, 3)
        y = (x * 2).sum(1)
        assert y.tolist() == [6.0, 6.0]
        m = ember.ops.creation.ones(2, 3, device="meta")
        assert ember.ops.pooling.max_pool2d(m.reshape(1, 1, 2, 3), 2).shape == (1, 1, 1, 1)
        print(len(ops))
    """)
    assert int(out) > 300


def test_resolution_does_not_depend_on_import_order():
    code = """
        import {first}
        import ember
        from ember.dispatch import all_ops, DispatchKey as K
        rows = sorted((op.qualname, op.resolve(K.CPU)[1], op.resolve(K.Meta)[1],
                       op.resolve(K.ADInplaceOrView)[1], op.resolve(K.AutogradCPU)[1])
                      for op in all_ops())
        print(repr(rows))
    """
    a = _run_fresh(code.format(first="ember.backends.cpu"))
    b = _run_fresh(code.format(first="ember.ops"))
    assert a == b


def test_every_family_listed_once():
    ops_modules = {m.name for m in pkgutil.iter_modules(ember.ops.__path__)
                   if not m.name.startswith("_")} - {"methods", "namespaces"}
    cpu_modules = {m.name for m in pkgutil.iter_modules(ember.backends.cpu.__path__)
                   if not m.name.startswith("_")}
    assert len(set(ember.ops.FAMILIES)) == len(ember.ops.FAMILIES)
    assert ops_modules == set(ember.ops.FAMILIES)
    assert cpu_modules <= set(ember.ops.FAMILIES), cpu_modules - set(ember.ops.FAMILIES)
    for family in cpu_modules:
        assert f"ember.backends.cpu.{family}" in sys.modules


# -- an operator declared here, with the declaration API of ember/ops/*.py ----------------------
@operator("_registration_test_cube(Tensor self, float scale=1.0) -> Tensor", (Tag.pointwise,))
def cube(self, scale: float = 1.0):
    """``scale * self ** 3`` (an operator declared by a test module)."""
    return Spec(self._shape, self._dtype)


@operator("_registration_test_cube_(Tensor(a!) self, float scale=1.0) -> Tensor(a!)",
          (Tag.pointwise, Tag.inplace))
def cube_(self, scale: float = 1.0):
    """In-place ``cube``."""
    return Spec(self._shape, self._dtype)


@cube.impl("CPU")
def _cube_cpu(self, scale=1.0):
    out = new_output(self._shape, self._dtype)
    np.multiply(numpy_view(self) ** 3, scale, out=numpy_view(out), casting="unsafe")
    return out


@cube_.impl("CPU")
def _cube_cpu_(self, scale=1.0):
    a = numpy_view(self)
    np.multiply(a ** 3, scale, out=a, casting="unsafe")
    self._ver.value += 1
    return self


@derivative(cube, save=("self",))
def _cube_backward(ctx, grad):
    return grad * ctx.self * ctx.self * (3.0 * ctx.scale)


def test_declared_op_is_callable_as_function_and_method():
    x = ember.tensor([1.0, 2.0, -1.0])
    assert cube(x, 2.0).tolist() == [2.0, 16.0, -2.0]
    assert x._registration_test_cube().tolist() == [1.0, 8.0, -1.0]
    assert ember.ops.aten._registration_test_cube(x).tolist() == [1.0, 8.0, -1.0]


def test_declared_op_has_meta():
    m = ember.empty(4, 5, device="meta")
    out = cube(m)
    assert out.device.type == "meta" and out.shape == (4, 5)
    assert cube.resolve(DispatchKey.Meta)[1] == "meta rule"


def test_declared_op_is_differentiable():
    x = ember.tensor([1.0, 2.0, -3.0], dtype=ember.float64, requires_grad=True)
    y = cube(x, 0.5)
    assert y.grad_fn is not None
    y.backward(ember.tensor([1.0, 1.0, 2.0], dtype=ember.float64))
    assert x.grad.tolist() == [1.5, 6.0, 27.0]
    assert ember.autograd.gradcheck(lambda t: cube(t, 0.5), (x.detach().requires_grad_(),))


def test_declared_op_is_traced_by_dispatch_modes():
    seen = []

    class Spy(DispatchMode):
        def __ember_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func.short_name)
            return func(*args, **(kwargs or {}))

    x = ember.ones(2, requires_grad=True)
    with Spy():
        cube(x).sum()
    assert seen[0] == "_registration_test_cube.default" and seen[1].startswith("sum.")


def test_declared_inplace_op_gets_the_inplace_fallback():
    x = ember.tensor([2.0])
    assert cube_(x) is x and x.tolist() == [8.0] and x._version == 1
    assert cube_.resolve(DispatchKey.ADInplaceOrView)[0].source.startswith("ADInplaceOrView")
    assert cube.resolve(DispatchKey.ADInplaceOrView)[1] == "fallthrough"
    with ember.inference_mode():
        t = ember.ones(1)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor"):
        cube_(t)
    leaf = ember.ones(1, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        cube_(leaf)
