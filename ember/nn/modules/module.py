"""``Module``: the base class of every layer, with PyTorch's registration, state and hook rules.

NOTE [Module registration and the structural version]
Assigning a ``Parameter`` to a module attribute registers it in ``_parameters``, a ``Module``
in ``_modules``; a tensor assigned to a registered buffer name replaces the buffer. Those three
dicts are the module's structure: every addition, removal or replacement in them bumps
``_structure_version`` (an int per module, never reset), so a compiler can guard on
``(id(module), module._structure_version)`` instead of re-walking the tree. Updating a
parameter or buffer *in place* (optimizer steps, BatchNorm running statistics) changes the
tensor's own version counter, not the module's structure.

NOTE [Module.__call__]
``__call__`` is deliberately flat: with no hooks it is ``self.forward(*args, **kwargs)``; with
hooks it runs forward pre-hooks (global first, then the module's), wires full backward hooks
around the tensors, calls ``forward``, then runs forward hooks in the same order. That keeps it
traceable by a bytecode compiler.

This file is over 800 lines' worth of torch API surface in one class; each method is short.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator, Mapping

from ember.autograd.function import Function
from ember.autograd.grad_mode import no_grad
from ember.autograd.graph import RemovableHandle
from ember.core import dtype as dt
from ember.core.device import Device
from ember.nn.parameter import Buffer, is_lazy
from ember.tensor import Tensor
from ember.tensor.parameter import Parameter

__all__ = ["Module", "register_module_forward_pre_hook", "register_module_forward_hook"]


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the keys it could not match."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class _Hooks(OrderedDict):
    """Ordered handle-id -> hook mapping that ``RemovableHandle`` can reference weakly."""


def _add_hook(hooks: _Hooks, hook: Callable, prepend: bool = False) -> RemovableHandle:
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


_global_forward_pre_hooks = _Hooks()
_global_forward_hooks = _Hooks()


def register_module_forward_pre_hook(hook: Callable) -> RemovableHandle:
    """A forward pre-hook run for every module, before the module's own pre-hooks."""
    return _add_hook(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook: Callable) -> RemovableHandle:
    """A forward hook run for every module, before the module's own forward hooks."""
    return _add_hook(_global_forward_hooks, hook)


# NOTE [Whole-module pickles]
# A module pickles as its instance dict, the way torch's does: hook tables become plain
# ``OrderedDict``s (never ember's internal ``_Hooks``), so a whole model saved by ember loads
# under ``weights_only=True`` once the user's own classes are allowlisted. ``__setstate__``
# accepts torch's pickles too (``ember.serialization`` maps ``torch.nn.modules.*`` classes to
# ember's): it drops attributes only torch's modules carry, turns hook tables back into
# ``_Hooks`` and fills what ember's modules have and torch's lack (``_structure_version``,
# plus a class's own ``_pickle_defaults``).
_HOOK_TABLES = ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks",
                "_backward_pre_hooks", "_state_dict_hooks", "_state_dict_pre_hooks",
                "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks")
_TORCH_ONLY_STATE = ("_is_full_backward_hook", "_flat_weights", "_flat_weight_refs")
_STATE_DEFAULTS = {"training": lambda: True, "_parameters": dict, "_buffers": dict,
                   "_modules": dict, "_non_persistent_buffers_set": set,
                   "_structure_version": lambda: 0, "_forward_pre_hooks_with_kwargs": dict,
                   "_forward_hooks_with_kwargs": dict, "_forward_hooks_always_called": dict}


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    pad = " " * spaces
    return lines[0] + "\n" + "\n".join(pad + line for line in lines[1:])


def _set_data(t: Tensor, new: Tensor) -> None:
    """``t.data = new``: ``t`` keeps its identity, version counter and autograd flags over
    ``new``'s memory (torch's ``set_data``)."""
    t._storage, t._dtype, t._device = new._storage, new._dtype, new._device
    t._ver.keys = new._ver.keys
    t._set_meta(new._shape, new._stride, new._offset)
    if t._requires_grad:
        t.requires_grad_(True)


def _type_name(value) -> str:
    if isinstance(value, Tensor):
        return f"ember.{type(value).__name__}"
    return type(value).__name__


def _check_name(kind: str, name, owner: Module) -> None:
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain "."')
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')


class Module:
    """Base class for all neural-network modules (``torch.nn.Module``).

    Subclasses define ``forward`` and assign parameters, buffers and submodules as attributes
    in ``__init__`` after calling ``super().__init__()``.

    Example:
        >>> import ember
        >>> class Net(ember.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = ember.nn.Linear(2, 1)
        ...     def forward(self, x):
        ...         return self.fc(x)
        >>> [n for n, _ in Net().named_parameters()]
        ['fc.weight', 'fc.bias']
    """

    _version: int = 1  # state-dict format version (torch's ``_metadata``), not the structure
    training: bool
    dump_patches: bool = False
    call_super_init: bool = False

    def __init__(self, *args, **kwargs) -> None:
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected argument; "
                            f"got args={args} kwargs={sorted(kwargs)}")
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", {})
        setattr_(self, "_buffers", {})
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_modules", {})
        setattr_(self, "_structure_version", 0)
        for name in _HOOK_TABLES:
            setattr_(self, name, _Hooks())
        setattr_(self, "_forward_pre_hooks_with_kwargs", {})
        setattr_(self, "_forward_hooks_with_kwargs", {})
        setattr_(self, "_forward_hooks_always_called", {})

    forward: Callable

    # -- pickling (NOTE [Whole-module pickles]) -------------------------------------------------
    # Attributes a subclass has that torch's pickle of the same class lacks: name -> default,
    # or a callable computing it from the restored module.
    _pickle_defaults: dict = {}

    def __getstate__(self) -> dict:
        """The instance dict with hook tables as plain ``OrderedDict``s, as torch pickles it."""
        state = self.__dict__.copy()
        for name in _HOOK_TABLES:
            if name in state:
                state[name] = OrderedDict(state[name])
        return state

    def __setstate__(self, state: dict) -> None:
        """Restore a pickled module, ember's or torch's (NOTE [Whole-module pickles])."""
        self.__dict__.update(state)
        d = self.__dict__
        for name in _TORCH_ONLY_STATE:
            d.pop(name, None)
        for name in _HOOK_TABLES:
            d[name] = _Hooks(d.get(name) or ())
        for name, make in _STATE_DEFAULTS.items():
            if name not in d:
                d[name] = make()
        for klass in type(self).__mro__:
            for name, default in klass.__dict__.get("_pickle_defaults", {}).items():
                if name not in d:
                    d[name] = default(self) if callable(default) else default

    def _bump(self) -> None:
        object.__setattr__(self, "_structure_version", self._structure_version + 1)

    # -- registration ---------------------------------------------------------------------------
    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer (state that is not a parameter, e.g. BatchNorm's running mean).

        Non-persistent buffers are left out of ``state_dict``.

        Example:
            >>> m = ember.nn.Module()
            >>> m.register_buffer("steps", ember.zeros(1))
            >>> m.register_buffer("cache", ember.zeros(2), persistent=False)  # not in state_dict
            >>> list(m.state_dict()), [n for n, _ in m.named_buffers()]
            (['steps'], ['steps', 'cache'])
        """
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name("buffer", name, self)
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_type_name(tensor)}' object to buffer '{name}' "
                            "(ember Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)
        self._bump()

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (``None`` registers the name with no tensor, like a bias-less layer).

        Example:
            >>> m = ember.nn.Module()
            >>> m.register_parameter("scale", ember.nn.Parameter(ember.ones(3)))
            >>> [(n, tuple(p.shape)) for n, p in m.named_parameters()]
            [('scale', (3,))]
        """
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name("parameter", name, self)
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None:
            if not isinstance(param, Parameter):
                raise TypeError(f"cannot assign '{_type_name(param)}' object to parameter "
                                f"'{name}' (ember.nn.Parameter or None required)")
            if param.grad_fn is not None:
                raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                                 f"parameters must be created explicitly. To express '{name}' "
                                 "as a function of another Tensor, compute the value in the "
                                 "forward() method.")
        self._parameters[name] = param
        self._bump()

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module, reachable as the attribute ``name``.

        Example:
            >>> m = ember.nn.Module()
            >>> m.add_module("fc", ember.nn.Linear(2, 2))
            >>> m.fc
            Linear(in_features=2, out_features=2, bias=True)
        """
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_type_name(module)} is not a Module subclass")
        _check_name("module", name, self)
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module
        self._bump()

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path ``target`` (``""`` is ``self``).

        Example:
            >>> nn = ember.nn
            >>> model = nn.Sequential(nn.Linear(2, 4), nn.Sequential(nn.ReLU()))
            >>> model.get_submodule("1.0")
            ReLU()
        """
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def _owner_and_leaf(self, target: str) -> tuple[Module, str]:
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        return mod, name

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path ``target``.

        Example:
            >>> model = ember.nn.Sequential(ember.nn.Linear(2, 4))
            >>> model.get_parameter("0.bias").shape
            ember.Size([4])
        """
        mod, name = self._owner_and_leaf(target)
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path ``target``.

        Example:
            >>> model = ember.nn.Sequential(ember.nn.BatchNorm1d(3))
            >>> model.get_buffer("0.running_var")
            tensor([1., 1., 1.])
        """
        mod, name = self._owner_and_leaf(target)
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return getattr(mod, name)

    def __getattr__(self, name: str):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            table = d.get(store)
            if table is not None and name in table:
                return table[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, keep="_parameters")
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as parameter '{name}' "
                                "(ember.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if d.get("_modules") is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, keep="_modules")
            self._modules[name] = value
            self._bump()
        elif d.get("_modules") is not None and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as child module '{name}' "
                                "(ember.nn.Module or None expected)")
            self._modules[name] = None
            self._bump()
        elif isinstance(value, Buffer):  # ``nn.Buffer`` registers a buffer, with its persistence
            if d.get("_buffers") is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            self.register_buffer(name, value, getattr(value, "persistent", True))
        elif d.get("_buffers") is not None and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_type_name(value)}' as buffer '{name}' "
                                "(ember.Tensor or None expected)")
            if value is not self._buffers[name]:
                self._buffers[name] = value
                self._bump()
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str, keep: str) -> None:
        """Drop ``name`` from every store except ``keep`` (an attribute changing kind)."""
        self.__dict__.pop(name, None)
        for store in ("_parameters", "_buffers", "_modules"):
            if store != keep and name in self.__dict__[store]:
                del self.__dict__[store][name]
                self._non_persistent_buffers_set.discard(name)
                self._bump()

    def __delattr__(self, name: str) -> None:
        for store in ("_parameters", "_buffers", "_modules"):
            table = self.__dict__.get(store)
            if table is not None and name in table:
                del table[name]
                self._non_persistent_buffers_set.discard(name)
                self._bump()
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = list(super().__dir__()) + list(self._parameters) + list(self._modules) + \
            list(self._buffers)
        return sorted(k for k in set(keys) if not k[:1].isdigit())

    # -- iteration --------------------------------------------------------------------------------
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """``(dotted name, module)`` for ``self`` and every descendant, each once by default.

        Example:
            >>> model = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.ReLU())
            >>> [name for name, _ in model.named_modules()]
            ['', '0', '1']
        """
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = f"{prefix}.{name}" if prefix else name
            yield from module.named_modules(memo, sub, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        """``self`` and every descendant module (each once).

        Example:
            >>> model = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.ReLU())
            >>> [type(m).__name__ for m in model.modules()]
            ['Sequential', 'Linear', 'ReLU']
        """
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """Immediate children as ``(name, module)``, each once.

        Example:
            >>> nn = ember.nn
            >>> model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU()))
            >>> [(name, type(m).__name__) for name, m in model.named_children()]
            [('0', 'Linear'), ('1', 'Sequential')]
        """
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        """Immediate child modules (each once).

        Example:
            >>> nn = ember.nn
            >>> model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU()))
            >>> len(list(model.children())), len(list(model.modules()))
            (2, 4)
        """
        for _, m in self.named_children():
            yield m

    def _named_members(self, store: str, prefix: str, recurse: bool, remove_duplicate: bool):
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        seen = set()
        for mod_prefix, mod in mods:
            for name, value in getattr(mod, store).items():
                if value is None or id(value) in seen:
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield (f"{mod_prefix}.{name}" if mod_prefix else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """``(dotted name, parameter)`` pairs; a parameter shared by several modules once.

        Example:
            >>> model = ember.nn.Sequential(ember.nn.Linear(2, 3))
            >>> [(name, tuple(p.shape)) for name, p in model.named_parameters()]
            [('0.weight', (3, 2)), ('0.bias', (3,))]
        """
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Every parameter (shared ones once), in registration order.

        Example:
            >>> model = ember.nn.Sequential(ember.nn.Linear(2, 3), ember.nn.Linear(3, 1))
            >>> sum(p.numel() for p in model.parameters())
            13
        """
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """``(dotted name, buffer)`` pairs, each buffer once.

        Example:
            >>> [name for name, _ in ember.nn.BatchNorm1d(3).named_buffers()]
            ['running_mean', 'running_var', 'num_batches_tracked']
        """
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Every buffer, each once.

        Example:
            >>> [tuple(b.shape) for b in ember.nn.BatchNorm1d(3).buffers()]
            [(3,), (3,), ()]
        """
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # -- modes and gradients ----------------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode on ``self`` and every descendant; returns ``self``.

        Example:
            >>> model = ember.nn.Sequential(ember.nn.Dropout(0.5))
            >>> model.train(False).training, model[0].training
            (False, False)
            >>> model.train().training
            True
        """
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        """``train(False)``: layers such as Dropout and BatchNorm switch to inference.

        Example:
            >>> model = ember.nn.Dropout(0.5).eval()
            >>> model.training, model(ember.ones(3))
            (False, tensor([1., 1., 1.]))
        """
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set ``requires_grad`` on every parameter; returns ``self``.

        Example:
            >>> layer = ember.nn.Linear(2, 2).requires_grad_(False)  # freeze
            >>> [p.requires_grad for p in layer.parameters()]
            [False, False]
        """
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset parameter gradients: to None (default) or zeroed in place.

        Example:
            >>> layer = ember.nn.Linear(2, 1)
            >>> layer(ember.ones(1, 2)).sum().backward()
            >>> layer.zero_grad()
            >>> layer.weight.grad is None
            True
        """
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                if p.grad.grad_fn is not None:
                    p.grad.detach_()
                else:
                    p.grad.requires_grad_(False)
                p.grad.zero_()

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call ``fn`` on every descendant (children first) and then on ``self``.

        Example:
            >>> model = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.Linear(2, 2))
            >>> def init(m):
            ...     if isinstance(m, ember.nn.Linear):
            ...         ember.nn.init.zeros_(m.bias)
            >>> _ = model.apply(init)
            >>> model[1].bias
            Parameter containing:
            tensor([0., 0.], requires_grad=True)
        """
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # -- conversion -------------------------------------------------------------------------------
    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Module:
        """Apply ``fn`` to every parameter (in place: same Parameter objects), grad and buffer."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        with no_grad():
            for p in self._parameters.values():
                if p is None:
                    continue
                new = fn(p)
                if new is not p:
                    _set_data(p, new)
                if p.grad is not None:
                    g = fn(p.grad)
                    if g is not p.grad:
                        _set_data(p.grad, g)
            for name, b in self._buffers.items():
                if b is not None:
                    new = fn(b)
                    if new is not b:
                        self._buffers[name] = new
                        self._bump()
        return self

    def to(self, *args, **kwargs) -> Module:
        """Move and/or cast parameters and buffers: ``to(device)``, ``to(dtype)``,
        ``to(device, dtype)``, ``to(tensor)``. Only floating tensors change dtype.

        Example:
            >>> layer = ember.nn.Linear(2, 2).to(ember.float64)
            >>> layer.weight.dtype, layer.to(device="meta").weight.device
            (ember.float64, device(type='meta'))
        """
        device, dtype = _parse_module_to(args, kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but got "
                            f"desired dtype={dtype}")

        def convert(t: Tensor) -> Tensor:
            return t.to(device or t._device, dtype if t._dtype.is_floating_point else None)

        return self._apply(convert)

    def _cast(self, d: dt.DType) -> Module:
        return self._apply(lambda t: t.to(d) if t._dtype.is_floating_point else t)

    def float(self) -> Module:
        """Cast floating parameters and buffers to float32.

        Example:
            >>> ember.nn.Linear(2, 2).double().float().weight.dtype
            ember.float32
        """
        return self._cast(dt.float32)

    def double(self) -> Module:
        """Cast floating parameters and buffers to float64.

        Example:
            >>> ember.nn.Linear(2, 2).double().weight.dtype
            ember.float64
        """
        return self._cast(dt.float64)

    def half(self) -> Module:
        """Cast floating parameters and buffers to float16.

        Example:
            >>> ember.nn.Linear(2, 2).half().weight.dtype
            ember.float16
        """
        return self._cast(dt.float16)

    def bfloat16(self) -> Module:
        """Cast floating parameters and buffers to bfloat16.

        Example:
            >>> ember.nn.Linear(2, 2).bfloat16().bias.dtype
            ember.bfloat16
        """
        return self._cast(dt.bfloat16)

    def type(self, dst_type) -> Module:
        """Cast every parameter and buffer to ``dst_type``.

        Example:
            >>> ember.nn.Linear(2, 2).type(ember.float64).weight.dtype
            ember.float64
        """
        return self._apply(lambda t: t.to(dst_type))

    def cpu(self) -> Module:
        """Move parameters and buffers to the CPU.

        Example:
            >>> ember.nn.Linear(2, 2).cpu().weight.device
            device(type='cpu')
        """
        return self._apply(lambda t: t.to("cpu"))

    def cuda(self, device=None) -> Module:
        """Move parameters and buffers to a CUDA device (``Tensor.cuda`` on each; without a
        CUDA backend, torch's ``AssertionError``)."""
        return self._apply(lambda t: t.cuda(device))

    # -- calling ----------------------------------------------------------------------------------
    _compile_hook = None  # set by the top-level package: ember.compiler lies above nn

    def compile(self, *args, **kwargs) -> None:
        """Compile this module's ``forward`` in place (``torch.nn.Module.compile``).

        Later calls run through ``ember.compile(..., *args, **kwargs)``; hooks still run
        eagerly around the compiled forward.
        """
        if Module._compile_hook is None:
            raise RuntimeError("Module.compile: the compiler is not available (import ember)")
        Module._compile_hook(self, *args, **kwargs)

    def __call__(self, *args, **kwargs):
        if not (self._forward_hooks or self._forward_pre_hooks or self._backward_hooks
                or self._backward_pre_hooks or _global_forward_hooks
                or _global_forward_pre_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args: tuple, kwargs: dict):
        args, kwargs = self._run_pre_hooks(args, kwargs)
        bw = None
        if self._backward_hooks or self._backward_pre_hooks:
            bw = _BackwardHooks(self)
            args = bw.wrap_inputs(args)
        try:
            result = self.forward(*args, **kwargs)
        except BaseException:
            self._run_always_called(args, kwargs)
            raise
        result = self._run_forward_hooks(args, kwargs, result)
        if bw is not None:
            result = bw.wrap_outputs(result)
        return result

    def _run_pre_hooks(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        for hid, hook in itertools.chain(_global_forward_pre_hooks.items(),
                                         self._forward_pre_hooks.items()):
            if hid in self._forward_pre_hooks_with_kwargs:
                res = hook(self, args, kwargs)
                if res is not None:
                    if not (isinstance(res, tuple) and len(res) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {res}.")
                    args, kwargs = res
            else:
                res = hook(self, args)
                if res is not None:
                    args = res if isinstance(res, tuple) else (res,)
        return args, kwargs

    def _run_forward_hooks(self, args: tuple, kwargs: dict, result, only_always: bool = False):
        for hid, hook in itertools.chain(_global_forward_hooks.items(),
                                         self._forward_hooks.items()):
            if only_always and hid not in self._forward_hooks_always_called:
                continue
            if hid in self._forward_hooks_with_kwargs:
                res = hook(self, args, kwargs, result)
            else:
                res = hook(self, args, result)
            if res is not None:
                result = res
        return result

    def _run_always_called(self, args: tuple, kwargs: dict) -> None:
        if self._forward_hooks_always_called:
            self._run_forward_hooks(args, kwargs, None, only_always=True)

    # -- hook registration ------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args)`` (or ``(module, args, kwargs)``) runs before ``forward``; a
        returned value replaces the arguments.

        Example:
            >>> layer = ember.nn.Linear(2, 2)
            >>> handle = layer.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
            >>> ember.equal(layer(ember.ones(1, 2)), layer.bias.detach().unsqueeze(0))
            True
            >>> handle.remove()
        """
        handle = _add_hook(self._forward_pre_hooks, hook, prepend)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        return handle

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False,
                              with_kwargs: bool = False, always_call: bool = False
                              ) -> RemovableHandle:
        """``hook(module, args, output)`` runs after ``forward``; a returned value replaces
        the output. ``always_call`` runs it even when ``forward`` raises.

        Example:
            >>> shapes = []
            >>> layer = ember.nn.Linear(2, 3)
            >>> hook = lambda module, args, output: shapes.append(tuple(output.shape))
            >>> handle = layer.register_forward_hook(hook)
            >>> _ = layer(ember.ones(4, 2)); shapes
            [(4, 3)]
            >>> handle.remove()
        """
        handle = _add_hook(self._forward_hooks, hook, prepend)
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        return handle

    def register_full_backward_pre_hook(self, hook: Callable, prepend: bool = False
                                        ) -> RemovableHandle:
        """``hook(module, grad_output)`` runs when the outputs' gradients are known; a returned
        tuple replaces ``grad_output``.

        Example:
            >>> layer = ember.nn.Linear(2, 1)
            >>> _ = layer.register_full_backward_pre_hook(lambda m, grad_out: (grad_out[0] * 0,))
            >>> layer(ember.ones(1, 2)).sum().backward()
            >>> layer.weight.grad
            tensor([[0., 0.]])
        """
        return _add_hook(self._backward_pre_hooks, hook, prepend)

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False
                                    ) -> RemovableHandle:
        """``hook(module, grad_input, grad_output)`` runs when the gradients of the module's
        tensor inputs are computed; a returned tuple replaces ``grad_input``.

        Example:
            >>> seen = []
            >>> layer = ember.nn.Linear(2, 1)
            >>> hook = lambda m, grad_in, grad_out: seen.append(tuple(grad_out[0].shape))
            >>> _ = layer.register_full_backward_hook(hook)
            >>> layer(ember.ones(3, 2, requires_grad=True)).sum().backward()
            >>> seen
            [(3, 1)]
        """
        return _add_hook(self._backward_hooks, hook, prepend)

    def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, prefix, keep_vars)`` runs before ``state_dict`` saves this module.

        Example:
            >>> calls = []
            >>> layer = ember.nn.Linear(2, 2)
            >>> hook = lambda module, prefix, keep_vars: calls.append(prefix)
            >>> _ = layer.register_state_dict_pre_hook(hook)
            >>> _ = ember.nn.Sequential(layer).state_dict()
            >>> calls
            ['0.']
        """
        return _add_hook(self._state_dict_pre_hooks, hook)

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata)`` runs after this module saved.

        Example:
            >>> layer = ember.nn.Linear(2, 2)
            >>> def drop_bias(module, state_dict, prefix, local_metadata):
            ...     del state_dict[prefix + "bias"]
            >>> _ = layer.register_state_dict_post_hook(drop_bias)
            >>> list(layer.state_dict())
            ['weight']
        """
        return _add_hook(self._state_dict_hooks, hook)

    _register_state_dict_hook = register_state_dict_post_hook

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` runs before this module loads its entries.

        Example:
            >>> layer = ember.nn.Linear(2, 2)
            >>> def rename(module, state_dict, prefix, *args):
            ...     if prefix + "w" in state_dict:  # accept checkpoints that call the weight "w"
            ...         state_dict[prefix + "weight"] = state_dict.pop(prefix + "w")
            >>> _ = layer.register_load_state_dict_pre_hook(rename)
            >>> layer.load_state_dict({"w": ember.zeros(2, 2), "bias": ember.zeros(2)})
            <All keys matched successfully>
        """
        return _add_hook(self._load_state_dict_pre_hooks, hook)

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, incompatible_keys)`` runs after this module and its children loaded;
        it may edit the key lists in place.

        Example:
            >>> layer = ember.nn.Linear(2, 2)
            >>> def ignore_bias(module, incompatible_keys):
            ...     if "bias" in incompatible_keys.missing_keys:
            ...         incompatible_keys.missing_keys.remove("bias")
            >>> _ = layer.register_load_state_dict_post_hook(ignore_bias)
            >>> layer.load_state_dict({"weight": ember.zeros(2, 2)})  # strict, yet no error
            <All keys matched successfully>
        """
        return _add_hook(self._load_state_dict_post_hooks, hook)

    # -- state dict -------------------------------------------------------------------------------
    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + "_extra_state"] = self.get_extra_state()

    def state_dict(self, *, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> dict:
        """An ordered mapping ``dotted name -> tensor`` of parameters and persistent buffers.

        Tensors are detached (sharing memory) unless ``keep_vars``.

        Example:
            >>> nn = ember.nn
            >>> model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
            >>> list(model.state_dict())
            ['0.weight', '0.bias', '2.weight', '2.bias']
        """
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=f"{prefix}{name}.",
                                  keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            res = hook(self, destination, prefix, local_metadata)
            if res is not None:
                destination = res
        return destination

    def get_extra_state(self):
        """Extra picklable state saved under ``_extra_state`` (override with set_extra_state).

        Example:
            >>> class Counter(ember.nn.Module):
            ...     def __init__(self):
            ...         super().__init__()
            ...         self.calls = 3
            ...     def get_extra_state(self):
            ...         return {"calls": self.calls}
            ...     def set_extra_state(self, state):
            ...         self.calls = state["calls"]
            >>> sd = Counter().state_dict()
            >>> list(sd), sd["_extra_state"]
            (['_extra_state'], {'calls': 3})
        """
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never "
                           "be called.")

    def set_extra_state(self, state) -> None:
        """Restore what :meth:`get_extra_state` returned.

        Example:
            >>> class Counter(ember.nn.Module):
            ...     def __init__(self, calls=0):
            ...         super().__init__()
            ...         self.calls = calls
            ...     def get_extra_state(self):
            ...         return self.calls
            ...     def set_extra_state(self, state):
            ...         self.calls = state
            >>> restored = Counter()
            >>> _ = restored.load_state_dict(Counter(calls=7).state_dict())
            >>> restored.calls
            7
        """
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never "
                           "be called.")

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        """Load this module's own entries (not its children's) from ``state_dict``."""
        for hook in self._load_state_dict_pre_hooks.values():
            hook(self, state_dict, prefix, local_metadata, strict, missing_keys,
                 unexpected_keys, error_msgs)
        local = {k: v for k, v in self._parameters.items() if v is not None}
        local.update((k, v) for k, v in self._buffers.items()
                     if v is not None and k not in self._non_persistent_buffers_set)
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            self._load_one(name, key, param, state_dict[key], assign, error_msgs)
        extra_key = prefix + "_extra_state"
        has_extra = type(self).set_extra_state is not Module.set_extra_state
        if has_extra:
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if not key.startswith(prefix) or (has_extra and key == extra_key):
                    continue
                head = key[len(prefix):].split(".", 1)
                known = self._modules if len(head) > 1 else local
                if head[0] not in known:
                    unexpected_keys.append(key)

    def _load_one(self, name: str, key: str, param: Tensor, value, assign: bool,
                  error_msgs: list) -> None:
        if not isinstance(value, Tensor):
            error_msgs.append(f'While copying the parameter named "{key}", expected ember.Tensor '
                              f"or Tensor-like object from checkpoint but received "
                              f"{type(value)}")
            return
        if is_lazy(param):  # both uninitialized (a lazy hook materialised the other cases)
            return
        if value.shape != param.shape:
            error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                              f"{value.shape} from checkpoint, the shape in current model is "
                              f"{param.shape}.")
            return
        try:
            if assign:
                if isinstance(param, Parameter):
                    value = value if isinstance(value, Parameter) else \
                        Parameter(value, requires_grad=param.requires_grad)
                    value.requires_grad_(param.requires_grad)
                setattr(self, name, value)
            else:
                with no_grad():
                    param.copy_(value)
        except Exception as ex:  # noqa: BLE001 - torch reports every failure in one error
            error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in '
                              f"the model are {param.shape} and whose dimensions in the "
                              f"checkpoint are {value.shape}, an exception occurred : "
                              f"{ex.args}.")

    def load_state_dict(self, state_dict: Mapping, strict: bool = True, assign: bool = False):
        """Copy parameters and buffers from ``state_dict`` into this module and its children.

        With ``strict``, every missing and unexpected key, and every shape mismatch, is
        reported together in one RuntimeError; shape mismatches are errors even when not strict.
        ``assign=True`` makes the module hold the given tensors instead of copying into its own.

        Returns:
            ``(missing_keys, unexpected_keys)`` as a named tuple.

        Example:
            >>> a, b = ember.nn.Linear(2, 2), ember.nn.Linear(2, 2)
            >>> b.load_state_dict(a.state_dict())
            <All keys matched successfully>
            >>> ember.equal(a.weight, b.weight)
            True
            >>> result = b.load_state_dict({"weight": ember.zeros(2, 2)}, strict=False)
            >>> result.missing_keys, result.unexpected_keys
            (['bias'], [])
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state = OrderedDict(state_dict)
        if metadata is not None:
            state._metadata = metadata
        self._load_tree(state, "", metadata, assign, missing, unexpected, errors)
        if strict:
            if unexpected:
                keys = ", ".join(f'"{k}"' for k in unexpected)
                errors.insert(0, f"Unexpected key(s) in state_dict: {keys}. ")
            if missing:
                keys = ", ".join(f'"{k}"' for k in missing)
                errors.insert(0, f"Missing key(s) in state_dict: {keys}. ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    def _load_tree(self, state: dict, prefix: str, metadata, assign: bool, missing: list,
                   unexpected: list, errors: list) -> None:
        local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
        if assign:
            local_metadata["assign_to_params_buffers"] = True
        self._load_from_state_dict(state, prefix, local_metadata, True, missing, unexpected,
                                   errors)
        for name, child in self._modules.items():
            if child is not None:
                sub = f"{prefix}{name}."
                child_state = {k: v for k, v in state.items() if k.startswith(sub)}
                child._load_tree(child_state, sub, metadata, assign, missing, unexpected,
                                 errors)
        keys = _IncompatibleKeys(missing, unexpected)
        for hook in self._load_state_dict_post_hooks.values():
            if hook(self, keys) is not None:
                raise RuntimeError("load_state_dict post hooks must return None; edit the "
                                   "incompatible keys in place instead")

    # -- printing ---------------------------------------------------------------------------------
    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The module-specific part of ``repr`` (override in subclasses).

        Example:
            >>> ember.nn.Linear(2, 3).extra_repr()
            'in_features=2, out_features=3, bias=True'
            >>> ember.nn.Linear(2, 3)
            Linear(in_features=2, out_features=3, bias=True)
        """
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): {_addindent(repr(m), 2)}" for name, m in self._modules.items()]
        lines = extra_lines + child_lines
        body = ""
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                body = extra_lines[0]
            else:
                body = "\n  " + "\n  ".join(lines) + "\n"
        return f"{self._get_name()}({body})"


def _parse_module_to(args: tuple, kwargs: dict):
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() received an invalid combination of arguments; got "
                        f"{sorted(kwargs)}")
    for a in args:
        if isinstance(a, dt.DType):
            dtype = a
        elif isinstance(a, Tensor):
            device, dtype = a._device, a._dtype
        elif isinstance(a, str | Device):
            device = a
        elif isinstance(a, bool) or a is None:
            continue
        else:
            raise TypeError(f"to() received an invalid argument: {type(a).__name__}")
    return device, dtype


# -- full backward hooks ----------------------------------------------------------------------
# NOTE [Full backward hooks]
# Like torch, the module's tensor inputs and outputs each pass through an identity Function.
# The outputs' node runs first in backward: it calls the backward pre-hooks (which may replace
# grad_output) and records grad_output. The inputs' node then holds every grad_input at once and
# calls the full backward hooks with both. When no input requires grad, the outputs' node calls
# the hooks itself with grad_input all None.
class _Identity(Function):
    @staticmethod
    def forward(ctx, on_backward, *tensors):
        ctx.on_backward = on_backward
        return tuple(t.view_as(t) for t in tensors)

    @staticmethod
    def backward(ctx, *grads):
        return (None, *ctx.on_backward(grads))


class _BackwardHooks:
    """One module call's backward-hook wiring (NOTE [Full backward hooks])."""

    def __init__(self, module: Module):
        self.module = module
        self.grad_outputs = None
        self.n_inputs = 0
        self.input_slots: list[int] = []
        self.inputs_wired = False

    def _wrap(self, values, on_backward, only_requiring: bool):
        flat = values if isinstance(values, tuple) else (values,)
        idx = [i for i, v in enumerate(flat) if isinstance(v, Tensor)
               and (v.requires_grad or not only_requiring)]
        if not any(flat[i].requires_grad for i in idx):
            return values, idx, False
        outs = _Identity.apply(on_backward, *(flat[i] for i in idx))
        outs = outs if isinstance(outs, tuple) else (outs,)
        new = list(flat)
        for i, o in zip(idx, outs):
            new[i] = o
        return (tuple(new) if isinstance(values, tuple) else new[0]), idx, True

    def wrap_inputs(self, args: tuple) -> tuple:
        tensor_pos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        self.n_inputs = len(tensor_pos)
        args, idx, self.inputs_wired = self._wrap(args, self._on_input_grads, True)
        self.input_slots = [tensor_pos.index(i) for i in idx]
        return args

    def wrap_outputs(self, result):
        return self._wrap(result, self._on_output_grads, False)[0]

    def _on_output_grads(self, grads: tuple) -> tuple:
        for hook in self.module._backward_pre_hooks.values():
            res = hook(self.module, grads)
            if res is not None:
                res = res if isinstance(res, tuple) else (res,)
                if len(res) != len(grads):
                    raise RuntimeError(f"Backward pre hook returned an invalid number of grad "
                                       f"output, got {len(res)}, but expected {len(grads)}")
                grads = res
        self.grad_outputs = grads
        if not self.inputs_wired:
            for hook in self.module._backward_hooks.values():
                res = hook(self.module, (None,) * self.n_inputs, grads)
                if res is not None and not all(r is None for r in res):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all "
                                       "gradients.")
        return grads

    def _on_input_grads(self, grads: tuple) -> tuple:
        full = [None] * self.n_inputs
        for slot, g in zip(self.input_slots, grads):
            full[slot] = g
        full = tuple(full)
        for hook in self.module._backward_hooks.values():
            res = hook(self.module, full, self.grad_outputs)
            if res is not None:
                res = res if isinstance(res, tuple) else (res,)
                if len(res) != len(full):
                    raise RuntimeError(f"Backward hook returned an invalid number of grad_input, "
                                       f"got {len(res)}, but expected {len(full)}")
                full = res
        return tuple(full[slot] for slot in self.input_slots)
