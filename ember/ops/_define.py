"""How an operator is declared: schema, Meta rule and docstring in one block.

NOTE [Declaring an operator]
``@operator(schema, tags)`` decorates the operator's *Meta rule*: a function with the
operator's Python signature that validates its arguments and returns the output's
``Spec(shape, dtype)`` (a tuple of Specs for several outputs). Its docstring becomes the
operator's docstring. The decorator returns the ``Operator``; that object *is* the public
function (``ember.add``) and, bound with ``tensor_method``, the ``Tensor`` method.
Backends register kernels against it: the Meta fallback turns Specs into data-less tensors, the
CPU backend allocates outputs from the same Specs and fills them with NumPy. View operators
have no Meta rule: one composite kernel computes the view geometry for every backend.

NOTE [A declared operator is complete]
The declaration is the whole registration: its Meta kernel comes from the dispatcher-wide
Meta fallback reading ``op.meta_rule`` (ember/ops/_meta.py), autograd from the Autograd and
ADInplaceOrView fallbacks (installed when this module is imported), its CPU kernel from the
CPU backend, which the device registry imports on the first CPU dispatch, and its ``Tensor``
method is bound the moment it is put into ``TENSOR_METHODS``. No package has to run a pass
over ``all_ops()`` afterwards, so an operator declared in any module, at any time, is at once
callable, differentiable (given a ``@derivative``) and visible to dispatch modes.
"""

from __future__ import annotations

from collections.abc import Callable

from ember.autograd.kernel import install_autograd_fallback, register_derivative
from ember.dispatch import AliasKey, Operator, Tag, define
from ember.ops._meta import Spec
from ember.tensor import Tensor

__all__ = ["Spec", "operator", "composite", "derivative", "tensor_method", "TENSOR_METHODS",
           "Tag", "DUNDERS", "PROPERTIES"]

install_autograd_fallback()

# Python protocol -> method name (bound only when that method exists)
DUNDERS = {
    "__add__": "add", "__sub__": "sub", "__mul__": "mul", "__truediv__": "div",
    "__floordiv__": "floor_divide", "__mod__": "remainder", "__pow__": "pow",
    "__matmul__": "matmul", "__and__": "bitwise_and", "__or__": "bitwise_or",
    "__xor__": "bitwise_xor", "__lshift__": "bitwise_left_shift",
    "__rshift__": "bitwise_right_shift", "__neg__": "neg", "__abs__": "abs",
    "__invert__": "_invert", "__pos__": "positive",
    "__eq__": "_eq", "__ne__": "_ne", "__lt__": "lt", "__le__": "le", "__gt__": "gt",
    "__ge__": "ge",
    "__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_", "__itruediv__": "div_",
    "__ifloordiv__": "floor_divide_", "__imod__": "remainder_", "__ipow__": "pow_",
    "__iand__": "bitwise_and_", "__ior__": "bitwise_or_", "__ixor__": "bitwise_xor_",
    "__ilshift__": "bitwise_left_shift_", "__irshift__": "bitwise_right_shift_",
    "__radd__": "_radd", "__rmul__": "_rmul", "__rsub__": "rsub", "__rtruediv__": "_rdiv",
    "__rfloordiv__": "_rfloordiv", "__rmod__": "_rremainder", "__rpow__": "_rpow",
    "__rmatmul__": "_rmatmul", "__rand__": "_rand", "__ror__": "_ror", "__rxor__": "_rxor",
    "__rlshift__": "_rlshift", "__rrshift__": "_rrshift",
}

# attribute -> method computing it (exposed as read-only properties)
PROPERTIES = {"T": "T", "mT": "mT", "H": "T", "mH": "mT", "real": "_real"}
_PROPERTY_ONLY = ("T", "mT")  # never bound as methods


def _inverse(table: dict) -> dict:
    out: dict = {}
    for attr, name in table.items():
        out.setdefault(name, []).append(attr)
    return out


_DUNDERS_OF, _PROPERTIES_OF = _inverse(DUNDERS), _inverse(PROPERTIES)


def bind_method(name: str, fn: Callable) -> None:
    """Attach ``fn`` to ``Tensor`` as method ``name``, its protocols and properties."""
    if isinstance(fn, Operator):
        fn = fn.method  # NOTE [Tensor methods are functions] in ember/dispatch/dispatcher.py
    if name not in _PROPERTY_ONLY:
        setattr(Tensor, name, fn)
    for dunder in _DUNDERS_OF.get(name, ()):
        setattr(Tensor, dunder, fn)
    for attr in _PROPERTIES_OF.get(name, ()):
        setattr(Tensor, attr, property(fn))
    Tensor.__hash__ = Tensor.__hash__  # keep identity hashing once __eq__ is bound


class _MethodTable(dict):
    """``name -> callable``: every entry is bound onto ``Tensor`` as it is written."""

    def __setitem__(self, name: str, fn: Callable) -> None:
        dict.__setitem__(self, name, fn)
        bind_method(name, fn)

    def update(self, *args, **kwargs) -> None:
        for name, fn in dict(*args, **kwargs).items():
            self[name] = fn

    def setdefault(self, name: str, fn: Callable = None):
        if name not in self:
            self[name] = fn
        return self[name]


# name -> callable; writing an entry binds it (NOTE [A declared operator is complete]).
TENSOR_METHODS: dict[str, Callable] = _MethodTable()


def operator(schema: str, tags=(), *, method: str | bool | None = True) -> Callable:
    """Declare an operator whose Meta rule is the decorated function.

    Args:
        schema: PyTorch-style schema, e.g. ``"exp(Tensor self) -> Tensor"``.
        tags: ``Tag`` values (pointwise, reduction, view, inplace, random, ...).
        method: name of the ``Tensor`` method to bind (``True``: the op's name; ``None``/False:
            none).
    """

    def deco(meta_rule: Callable) -> Operator:
        op = define(schema, tags, meta_rule.__doc__)
        op.meta_rule = meta_rule
        op.__module__ = meta_rule.__module__
        if method:
            TENSOR_METHODS[op.name if method is True else method] = op
        return op

    return deco


def composite(schema: str, *, method: str | bool = True, tags=()) -> Callable:
    """Declare an op implemented by calling other ops (``CompositeImplicitAutograd``).

    Autograd needs no formula for it: the ops it calls record their own.
    """

    def deco(fn: Callable) -> Operator:
        op = define(schema, tags, fn.__doc__)
        op.register(AliasKey.CompositeImplicitAutograd, fn)
        op.__module__ = fn.__module__
        if method:
            TENSOR_METHODS[op.name if method is True else method] = op
        return op

    return deco


def derivative(op: Operator, *, save=(), signature: Callable | None = None,
               nondifferentiable_outputs=(), strides=()):
    """Declare ``op``'s derivative rule (see NOTE [Recording an op] in ember/autograd/kernel.py).

    The decorated ``rule(ctx, *grads)`` returns one gradient per tensor input; ``save`` names
    the tensor arguments (or ``"result"``) it reads, a dict saving some only when others need a
    gradient (NOTE [Conditional saves]); ``nondifferentiable_outputs`` lists output indices
    that never require grad; ``strides`` names arguments whose strides the rule reads.
    """

    def deco(rule: Callable) -> Callable:
        register_derivative(op, rule, save=save, signature=signature,
                            nondifferentiable_outputs=nondifferentiable_outputs,
                            strides=strides)
        return rule

    return deco


def tensor_method(name: str | None = None):
    """Register a plain function (or Operator) as a ``Tensor`` method named ``name``."""

    def deco(fn):
        TENSOR_METHODS[name or fn.__name__] = fn
        return fn

    return deco


def is_tensor(x) -> bool:
    return isinstance(x, Tensor)
