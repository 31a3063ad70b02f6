"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict (torch's API).

List-like containers register their items under the names ``"0"``, ``"1"``, ...; deleting an
item renumbers the rest so names stay contiguous, as torch does.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping

from ember.nn.modules.module import Module, _addindent
from ember.tensor import Tensor
from ember.tensor.parameter import Parameter

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _index(idx, n: int, kind: str) -> int:
    i = operator.index(idx)
    if not -n <= i < n:
        raise IndexError(f"index {i} is out of range")
    return i % n if n else i


class _ListMixin:
    """Shared positional access over ``_modules`` (Sequential, ModuleList)."""

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def _renumber(self, items: list) -> None:
        self._modules.clear()
        for i, m in enumerate(items):
            self._modules[str(i)] = m
        self._bump()

    def __delitem__(self, idx) -> None:
        items = list(self._modules.values())
        if isinstance(idx, slice):
            del items[idx]
        else:
            del items[_index(idx, len(items), "module")]
        self._renumber(items)

    def __setitem__(self, idx, module: Module) -> None:
        key = list(self._modules)[_index(idx, len(self), "module")]
        self.add_module(key, module)

    def append(self, module: Module):
        """Add ``module`` at the end; returns ``self``."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]):
        """Append every module of ``modules``; returns ``self``."""
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Insert ``module`` before position ``index``."""
        items = list(self._modules.values())
        items.insert(index, module)
        for m in items:
            if not isinstance(m, Module):
                raise TypeError(f"{type(m).__name__} is not a Module subclass")
        self._renumber(items)

    def pop(self, key=-1) -> Module:
        """Remove and return the module at ``key``."""
        m = self[key]
        del self[key]
        return m


class Sequential(_ListMixin, Module):
    """Modules called in order, each on the previous one's output.

    Args:
        *args: modules, or a single ``OrderedDict`` of named modules.

    Example:
        >>> import ember
        >>> net = ember.nn.Sequential(ember.nn.Linear(3, 2), ember.nn.ReLU())
        >>> net(ember.zeros(4, 3)).shape
        ember.Size([4, 2])
    """

    def __init__(self, *args) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_index(idx, len(self), "module")]

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        return Sequential(*self, *other)

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input


class ModuleList(_ListMixin, Module):
    """A list of submodules, registered and visible to ``parameters()``.

    Example:
        >>> import ember
        >>> layers = ember.nn.ModuleList([ember.nn.Linear(2, 2) for _ in range(3)])
        >>> len(list(layers.parameters()))
        6
    """

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return list(self._modules.values())[_index(idx, len(self), "module")]

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList([*self, *other])

    def __repr__(self) -> str:
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        runs = []  # [start, end, text] of runs of identical reprs
        for i, r in enumerate(reprs):
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        lines = []
        for start, end, text in runs:
            head = f"({start})" if start == end else f"({start}-{end}): {end - start + 1} x"
            lines.append(_addindent(f"{head}: {text}" if start == end else f"{head} {text}", 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of submodules.

    Example:
        >>> import ember
        >>> d = ember.nn.ModuleDict({"a": ember.nn.Identity()})
        >>> list(d.keys())
        ['a']
    """

    def __init__(self, modules: Mapping | Iterable | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]
        self._bump()

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()
        self._bump()

    def pop(self, key: str) -> Module:
        """Remove ``key`` and return its module."""
        m = self[key]
        del self[key]
        return m

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules: Mapping | Iterable) -> None:
        """Add ``(name, module)`` pairs from a mapping or an iterable of pairs."""
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for j, pair in enumerate(pairs):
            if not isinstance(modules, Mapping) and len(pair) != 2:
                raise ValueError(f"ModuleDict update sequence element #{j} has length "
                                 f"{len(pair)}; 2 is required")
            self[pair[0]] = pair[1]


def _as_parameter(value):
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _param_line(key, p) -> str:
    if isinstance(p, Tensor):
        kind = "Parameter containing" if isinstance(p, Parameter) else "Tensor"
        size = "x".join(str(s) for s in p.shape)
        return f"({key}): {kind}: [ember.{p.dtype.name} of size {size}]"
    return f"({key}): Object of type: {type(p).__name__}"


class ParameterList(Module):
    """A list of parameters (plain tensors are wrapped as Parameters).

    Example:
        >>> import ember
        >>> pl = ember.nn.ParameterList([ember.nn.Parameter(ember.ones(2))])
        >>> len(pl)
        1
    """

    def __init__(self, values: Iterable | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList([self[i] for i in range(self._size)[idx]])
        return getattr(self, str(_index(idx, self._size, "parameter")))

    def __setitem__(self, idx, value) -> None:
        setattr(self, str(_index(idx, self._size, "parameter")), _as_parameter(value))

    def __iter__(self):
        return (self[i] for i in range(self._size))

    def __iadd__(self, values: Iterable) -> ParameterList:
        return self.extend(values)

    def append(self, value) -> ParameterList:
        """Add ``value`` at the end (a tensor becomes a Parameter); returns ``self``."""
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values: Iterable) -> ParameterList:
        """Append each value; returns ``self``."""
        for v in values:
            self.append(v)
        return self

    def extra_repr(self) -> str:
        return "\n".join(_param_line(i, p) for i, p in enumerate(self))


class ParameterDict(Module):
    """An ordered dict of parameters (plain tensors are wrapped as Parameters).

    Example:
        >>> import ember
        >>> pd = ember.nn.ParameterDict({"w": ember.nn.Parameter(ember.ones(2))})
        >>> list(pd.keys())
        ['w']
    """

    def __init__(self, parameters: Mapping | Iterable | None = None) -> None:
        super().__init__()
        self._keys: dict = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str):
        return getattr(self, key)

    def __setitem__(self, key: str, value) -> None:
        self._keys[key] = None
        setattr(self, key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def pop(self, key: str):
        """Remove ``key`` and return its parameter."""
        v = self[key]
        del self[key]
        return v

    def get(self, key: str, default=None):
        return self[key] if key in self._keys else default

    def clear(self) -> None:
        """Remove every parameter."""
        for k in list(self._keys):
            del self[k]

    def update(self, values: Mapping | Iterable) -> None:
        """Add ``(key, parameter)`` pairs from a mapping or an iterable of pairs."""
        pairs = values.items() if isinstance(values, Mapping) else values
        for k, v in pairs:
            self[k] = v

    def extra_repr(self) -> str:
        return "\n".join(_param_line(k, p) for k, p in self.items())
