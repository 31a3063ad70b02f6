"""Parametrizations: a module's tensor computed from other tensors (``torch.nn.utils.parametrize``).

NOTE [Parametrized classes]
Registering the first parametrization on a module gives the module a class of its own: a fresh
subclass ``Parametrized<Name>`` of its class (``isinstance`` still holds and
``type_before_parametrizations`` returns the base). Each parametrized name becomes a property of
that subclass: reading it evaluates ``module.parametrizations[name]`` (a ``ParametrizationList``),
assigning it runs the list's ``right_inverse``. The unconstrained tensors live in the list as
``original`` (or ``original0``, ``original1``, ... when ``right_inverse`` returns a sequence), so
the state_dict keys are torch's: ``parametrizations.weight.original``. Removing the last
parametrization puts the base class back. A deep copy gets a subclass of its own too, so removing
a parametrization from the copy leaves the original's class untouched.

NOTE [Keeping the original's identity]
When ``right_inverse`` returns one tensor, the original Parameter object is kept and only its
data is replaced (``.data = ...``), so an optimizer built before registration still updates it.
Removal with ``leave_parametrized=True`` does the same with the parametrized value.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from ember.autograd.grad_mode import no_grad
from ember.nn.modules.container import ModuleDict, ModuleList
from ember.nn.modules.module import Module, _set_data
from ember.tensor import Tensor
from ember.tensor.parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache: dict[tuple[int, str], Tensor] = {}


@contextmanager
def cached() -> Iterator[None]:
    """Within this context each parametrized tensor is computed once, on first access, and reused.

    Useful when a parametrized weight is read several times in one forward (an RNN's recurrent
    weight). Contexts nest; the cache is cleared when the outermost one exits.

    Example:
        >>> import ember
        >>> from ember.nn.utils import parametrize
        >>> class Double(ember.nn.Module):
        ...     def forward(self, x):
        ...         return 2 * x
        >>> m = parametrize.register_parametrization(ember.nn.Linear(2, 2), "weight", Double())
        >>> with parametrize.cached():
        ...     m.weight is m.weight
        True
    """
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register_parameter_or_buffer(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _replace_data(dest: Tensor, src: Tensor) -> None:
    """NOTE [Keeping the original's identity]."""
    if src is not dest:
        _set_data(dest, src.detach())


def _right_inverse_chain(modules, value, skip_missing: bool):
    """``value`` mapped back through each parametrization's ``right_inverse``, last first.

    ``skip_missing`` (registration) treats a missing or NotImplemented right_inverse as the
    identity; otherwise (assignment) a missing one is an error.
    """
    for module in reversed(list(modules)):
        if not hasattr(module, "right_inverse"):
            if skip_missing:
                continue
            raise RuntimeError(f"parametrization {type(module).__name__} does not implement "
                               "right_inverse.")
        try:
            value = module.right_inverse(value)
        except NotImplementedError:
            if not skip_missing:
                raise
    return value


def _check_same(what: str, value, expected: Tensor, lines: tuple[str, str, str]) -> None:
    """Raise torch's ValueError when ``value`` (a parametrization's result) is no tensor or
    changes ``expected``'s dtype or shape. ``lines`` are the message's three line templates
    (intro, expected, value), each formatted with ``attr``."""
    if not isinstance(value, Tensor):
        raise ValueError(f"{what} must return a tensor. Got {type(value).__name__}.")
    for attr in ("dtype", "shape"):
        want, got = getattr(expected, attr), getattr(value, attr)
        if got != want:
            intro, e_line, v_line = (line.format(attr=attr) for line in lines)
            raise ValueError(f"{intro}\n{e_line}: {want}\n{v_line}: {got}")


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor and the original tensor(s) they are applied to.

    ``module.parametrizations[name]`` is one of these: ``self[0]`` receives the original(s),
    each later parametrization the previous one's output. Not meant to be built directly; use
    :func:`register_parametrization`.

    Args:
        modules: the parametrizations (at least one).
        original: the tensor being parametrized; it becomes ``original`` (its identity kept)
            or, when ``right_inverse`` returns a sequence, ``original0``, ``original1``, ...
        unsafe: skip the dtype/shape consistency checks.

    Example:
        >>> import ember.nn.utils.parametrize as P
        >>> class Symmetric(ember.nn.Module):
        ...     def forward(self, X):
        ...         return X.triu() + X.triu(1).mT
        >>> m = P.register_parametrization(ember.nn.Linear(3, 3), "weight", Symmetric())
        >>> type(m.parametrizations.weight).__name__, ember.equal(m.weight, m.weight.mT)
        ('ParametrizationList', True)
    """

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        with no_grad():
            new = _right_inverse_chain(self, original, skip_missing=True)
        if not isinstance(new, Tensor | Sequence):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            self._register_single(original, new)
        else:
            self._register_sequence(original, new)
        if not unsafe:
            _check_same("A parametrization", self(), original, (
                "Registering a parametrization may not change the {attr} of the tensor, "
                "unless `unsafe` flag is enabled.", "unparametrized {attr}", "parametrized {attr}"))

    def _register_single(self, original: Tensor, new: Tensor) -> None:
        if original.dtype != new.dtype:
            raise ValueError("When `right_inverse` outputs one tensor, it may not change the "
                             f"dtype.\noriginal.dtype: {original.dtype}\n"
                             f"right_inverse(original).dtype: {new.dtype}")
        with no_grad():
            _replace_data(original, new)
        _register_parameter_or_buffer(self, "original", original)

    def _register_sequence(self, original: Tensor, new: Sequence) -> None:
        for i, value in enumerate(new):
            if not isinstance(value, Tensor):
                raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                                 "(list, tuple...). Got element "
                                 f"{i} of the sequence with type {type(value).__name__}.")
            if isinstance(original, Parameter):
                value = Parameter(value, original.requires_grad)
            value.requires_grad_(original.requires_grad)
            _register_parameter_or_buffer(self, f"original{i}", value)

    def originals(self) -> tuple[Tensor, ...]:
        """The unconstrained tensor(s), in the order the first parametrization takes them."""
        if self.is_tensor:
            return (self.original,)
        return tuple(getattr(self, f"original{i}") for i in range(self.ntensors))

    def right_inverse(self, value: Tensor) -> None:
        """Set the original(s) so that the parametrized tensor becomes ``value``.

        Runs each parametrization's ``right_inverse``, last first, without recording gradients.

        Raises:
            RuntimeError: a parametrization has no ``right_inverse``.
            ValueError: the results do not fit the originals (type, count or dtype).
        """
        with no_grad():
            value = _right_inverse_chain(self, value, skip_missing=False)
            if self.is_tensor:
                self._set_single(value)
            else:
                self._set_sequence(value)

    def _set_single(self, value) -> None:
        if not isinstance(value, Tensor):
            raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
        if value.dtype != self.original.dtype:
            raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} "
                             f"while `original` has dtype {self.original.dtype}")
        _replace_data(self.original, value)

    def _set_sequence(self, value) -> None:
        if not isinstance(value, Sequence):
            raise ValueError("'right_inverse' must return a sequence of tensors. "
                             f"Got {type(value).__name__}.")
        if len(value) != self.ntensors:
            raise ValueError("'right_inverse' must return a sequence of tensors of length "
                             f"{self.ntensors}. Got a sequence of length {len(value)}.")
        for i, tensor in enumerate(value):
            original = getattr(self, f"original{i}")
            if not isinstance(tensor, Tensor):
                raise ValueError("`right_inverse` must return a sequence of tensors. "
                                 f"Got element {i} of type {type(tensor).__name__}")
            if original.dtype != tensor.dtype:
                raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype "
                                 f"{tensor.dtype} while `original{i}` has dtype "
                                 f"{original.dtype}")
            _replace_data(original, tensor)

    def forward(self) -> Tensor:
        items = list(self._modules.values())
        x = items[0](*self.originals())
        for module in items[1:]:
            x = module(x)
        return x


# -- the generated class and its properties ------------------------------------------------------
def _parametrized_value(module: Module, name: str) -> Tensor:
    plist = module.parametrizations[name]
    if not _cache_enabled:
        return plist()
    key = (id(module), name)
    value = _cache.get(key)
    if value is None:
        value = _cache[key] = plist()
    return value


def _make_property(name: str) -> property:
    def get(self) -> Tensor:
        return _parametrized_value(self, name)

    def set(self, value: Tensor) -> None:  # noqa: A001 - the property's setter
        self.parametrizations[name].right_inverse(value)

    return property(get, set, doc=f"``{name}``, computed by its parametrizations.")


def _refuse_pickle(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through "
                       "state_dict(). See:\nhttps://pytorch.org/tutorials/beginner/"
                       "saving_loading_models.html#saving-loading-a-general-checkpoint-for-"
                       "inference-and-or-resuming-training")


def _deepcopy_parametrized(self, memo: dict):
    """A deep copy with a generated class of its own (NOTE [Parametrized classes])."""
    if id(self) in memo:
        return memo[id(self)]
    cls = _new_class(type(self).__bases__[0])
    for name in self.parametrizations:
        setattr(cls, name, _make_property(name))
    replica = object.__new__(cls)
    memo[id(self)] = replica
    for key, value in self.__dict__.items():
        object.__setattr__(replica, key, copy.deepcopy(value, memo))
    return replica


def _new_class(base: type) -> type:
    body = {"__getstate__": _refuse_pickle}
    if not hasattr(base, "__deepcopy__"):
        body["__deepcopy__"] = _deepcopy_parametrized
    return type(f"Parametrized{base.__name__}", (base,), body)


# -- public API --------------------------------------------------------------------------------
def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` the output of ``parametrization`` (``torch.nn.utils.
    parametrize.register_parametrization``).

    The first registration on a name moves the parameter or buffer to
    ``module.parametrizations[tensor_name].original`` (after mapping it through
    ``parametrization.right_inverse`` when that exists) and turns ``tensor_name`` into a property
    (NOTE [Parametrized classes]). Registering again on the same name chains: the new
    parametrization is applied to the previous ones' output. When ``right_inverse`` returns a
    sequence, the originals are ``original0``, ``original1``, ... and the parametrization's
    ``forward`` takes them as separate arguments.

    Args:
        module: the module owning the tensor.
        tensor_name: a parameter, a buffer, or an already parametrized name.
        parametrization: a module whose ``forward`` maps the original(s) to the tensor;
            optionally with ``right_inverse``.
        unsafe: allow a parametrization that changes the tensor's dtype or shape.

    Returns:
        ``module``.

    Raises:
        ValueError: ``tensor_name`` is not a parameter, buffer or parametrized tensor, or (without
            ``unsafe``) the parametrization changes dtype or shape.

    Example:
        >>> import ember
        >>> from ember.nn.utils import parametrize
        >>> class Symmetric(ember.nn.Module):
        ...     def forward(self, X):
        ...         return X.triu() + X.triu(1).mT
        >>> m = parametrize.register_parametrization(ember.nn.Linear(3, 3), "weight", Symmetric())
        >>> type(m).__name__, bool((m.weight == m.weight.mT).all())
        ('ParametrizedLinear', True)
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_chained(module, tensor_name, parametrization)
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe |= unsafe
        return module
    if tensor_name not in module._buffers and tensor_name not in module._parameters:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    original = getattr(module, tensor_name)
    plist = ParametrizationList([parametrization], original, unsafe=unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        module.__class__ = _new_class(module.__class__)
        module.parametrizations = ModuleDict()
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")
    setattr(module.__class__, tensor_name, _make_property(tensor_name))
    module.parametrizations[tensor_name] = plist
    return module


def _check_chained(module: Module, name: str, parametrization: Module) -> None:
    """A parametrization added to a chain must map the current tensor's space to itself."""
    Y = getattr(module, name)
    X = parametrization(Y)
    _check_same("A parametrization", X, Y, (
        "Registering a parametrization may not change the {attr} of the tensor, unless the "
        "`unsafe` flag is enabled.", f"module.{name}.{{attr}}",
        f"parametrization(module.{name}).{{attr}}"))
    if not hasattr(parametrization, "right_inverse"):
        return
    try:
        Z = parametrization.right_inverse(X)
    except NotImplementedError:
        return
    if not isinstance(Z, Tensor):
        raise ValueError("parametrization.right_inverse must return a tensor. Got: "
                         f"{type(Z).__name__}")
    _check_same("parametrization.right_inverse", Z, Y, (
        "The tensor returned by parametrization.right_inverse must have the same {attr} as "
        f"module.{name}, unless the `unsafe` flag is enabled.", f"module.{name}.{{attr}}",
        "returned {attr}"))


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization on ``tensor_name`` (any, when None).

    Example:
        >>> import ember
        >>> from ember.nn.utils import parametrize
        >>> parametrize.is_parametrized(ember.nn.Linear(2, 2))
        False
    """
    plists = module._modules.get("parametrizations") if "_modules" in module.__dict__ else None
    if not isinstance(plists, ModuleDict):
        return False
    return len(plists) > 0 if tensor_name is None else tensor_name in plists


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Undo :func:`register_parametrization` for ``tensor_name``.

    With ``leave_parametrized`` the tensor keeps its current (parametrized) value, in the same
    Parameter object as the original when there was one original; otherwise it gets the
    original back. The class is restored once no parametrization is left.

    Returns:
        ``module``.

    Raises:
        ValueError: ``tensor_name`` is not parametrized, or ``leave_parametrized=False`` for a
            tensor parametrized by a sequence of originals.

    Example:
        >>> import ember.nn.utils.parametrize as P
        >>> class Double(ember.nn.Module):
        ...     def forward(self, X):
        ...         return X * 2
        >>> m = P.register_parametrization(ember.nn.Linear(2, 2), "bias", Double())
        >>> P.is_parametrized(m), P.is_parametrized(P.remove_parametrizations(m, "bias"))
        (True, False)
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                _replace_data(original, getattr(module, tensor_name))
    elif leave_parametrized:
        t = getattr(module, tensor_name)  # with grad: does any original require it?
        original = Parameter(t.detach(), t.requires_grad) if t.requires_grad else t.detach()
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                         "that is parametrized in terms of a sequence of tensors.")
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class as it was before any parametrization was registered.

    Example:
        >>> import ember.nn.utils.parametrize as P
        >>> class Double(ember.nn.Module):
        ...     def forward(self, X):
        ...         return X * 2
        >>> m = P.register_parametrization(ember.nn.Linear(2, 2), "weight", Double())
        >>> type(m).__name__, P.type_before_parametrizations(m).__name__
        ('ParametrizedLinear', 'Linear')
    """
    if is_parametrized(module):
        return type(module).__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Register ``from_module``'s parametrizations (all, or those of ``tensor_name``) on
    ``to_module`` and make its originals the same tensors as ``from_module``'s.

    A name ``to_module`` lacks is first created as a Parameter holding ``from_module``'s
    parametrized value.

    Returns:
        ``to_module``.

    Example:
        >>> import ember.nn.utils.parametrize as P
        >>> class Double(ember.nn.Module):
        ...     def forward(self, X):
        ...         return X * 2
        >>> src = P.register_parametrization(ember.nn.Linear(2, 2), "weight", Double())
        >>> dst = P.transfer_parametrizations_and_params(src, ember.nn.Linear(2, 2))
        >>> P.is_parametrized(dst, "weight"), ember.equal(dst.weight, src.weight)
        (True, True)
    """
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        source = from_module.parametrizations[name]
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        if hasattr(source, "original"):
            target.original = source.original
        else:
            i = 0
            while hasattr(source, f"original{i}"):
                setattr(target, f"original{i}", getattr(source, f"original{i}"))
                i += 1
    return to_module
