"""How an operator is declared: schema, Meta rule and docstring in one block.

NOTE [Declaring an operator]
``@operator(schema, tags)`` decorates the operator's *Meta rule*: a function with the
operator's Python signature that validates its arguments and returns the output's
``Spec(shape, dtype)`` (a tuple of Specs for several outputs). Its docstring becomes the
operator's docstring. The decorator returns the ``Operator``; that object *is* the public
function (``ember.add``) and, bound with ``tensor_method``, the ``Tensor`` method.
Backends register kernels against it: the Meta backend turns Specs into data-less tensors, the
CPU backend allocates outputs from the same Specs and fills them with NumPy. View operators
have no Meta rule: one composite kernel computes the view geometry for every backend.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ember.autograd.kernel import register_derivative
from ember.core import dtype as dt
from ember.dispatch import AliasKey, Operator, Tag, define
from ember.tensor import Tensor

__all__ = ["Spec", "operator", "composite", "derivative", "tensor_method", "TENSOR_METHODS",
           "Tag"]


class Spec(NamedTuple):
    """What a Meta rule predicts for one output: its shape, dtype and (optional) strides."""

    shape: tuple
    dtype: dt.DType
    stride: tuple | None = None


# name -> callable, bound onto Tensor by ember.ops.methods once every family is imported.
TENSOR_METHODS: dict[str, Callable] = {}


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
