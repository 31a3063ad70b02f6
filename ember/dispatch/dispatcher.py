"""The dispatcher: every operator call picks its kernel by dispatch keys.

NOTE [The hot path]
``Operator.__call__`` ORs the key sets of its tensor arguments, adds the thread-local
included keys, masks out the excluded ones, looks the result up in the operator's table
(a dict keyed by key set, filled lazily) and calls what it finds. Kernels that continue below
themselves were bound at table-fill time to ``(op, keys_below)``, so ``redispatch`` needs no
recomputation. Nothing on this path parses a schema or builds a string.

Kernel resolution for one runtime key (PyTorch's ``computeDispatchTableEntry``): a kernel
registered to that key; else ``CompositeExplicitAutograd`` (backend keys); else
``CompositeImplicitAutograd`` (backend keys, and autograd keys when the op has no backend
kernel of its own); else the ``Autograd`` alias (autograd keys); else the dispatcher-wide
fallback of that key; else the key is missing. A fallthrough removes the key from the call's
set and dispatch continues with the next lower key.

NOTE [Tensor methods are functions]
``Tensor.add``, ``Tensor.__add__`` and every other method bound from an operator are plain
functions (``Operator.method``, with ``__wrapped__`` the operator) that run the same hot path
as ``Operator.__call__``. CPython calls a function found on a type without building a bound
method, where an ``Operator`` instance would cost a Python-level ``__get__``, a bound method
and a call through ``__call__``'s slot (about 0.2 us of a 3 us tiny op).

NOTE [Numbers passed as 0-d tensors]
torch's argument parser accepts a 0-d tensor wherever a number is expected: an integer tensor
for ``int``/``SymInt`` and an ``int[]`` given one int, any tensor that does not require grad for
``float``/``Scalar``, and hands the kernel a number. Here the operators whose schemas take such
arguments note their positions (``_number_at``) and keyword names (``_number_names``); the key
loop checks a tensor's position only when it finds a tensor, so a call without tensors in
those places pays one index count per argument, and ``_call_with_numbers`` converts the
tensors (``.item()``) before dispatching, so no kernel, autograd rule or mode ever sees them.
Tensors that do not qualify (1-d, requiring grad, a float for an int, meta) are left for
the kernel, as before.

NOTE [Per-operator fallbacks]
A dispatcher-wide fallback may depend on the operator: a ``PerOpFallback`` is asked, when an
operator's table is filled, for that operator's kernel (or None: missing, or FALLTHROUGH).
The Meta fallback builds an operator's Meta kernel from its shape rule, and the
ADInplaceOrView fallback serves in-place operators only, so an operator declared at any time,
in any module, has both the moment it exists: no pass over ``all_ops()`` is ever needed.

A backend key whose kernel is missing first asks the device registry to import the backend's
kernel modules (NOTE [Kernels are found by the registry] in ember/memory/devices.py); a device
that borrows another backend's kernels gets them wrapped in its device guard.
"""

from __future__ import annotations

import importlib
import threading
import types
from collections.abc import Callable
from enum import Enum
from functools import partial

from ember.core.dtype import INTEGRAL
from ember.dispatch.keys import (
    ABOVE_PYTHON_MASK,
    ALIAS_EXPANSION,
    ALL_KEYS_MASK,
    AUTOCAST_MASK,
    AUTOGRAD_KEYS,
    BACKEND_KEYS,
    AliasKey,
    DispatchKey,
    keyset,
    parse_key,
)
from ember.dispatch.schema import OpSchema, parse_schema
from ember.errors import DispatchError
from ember.memory import devices as _devices

__all__ = [
    "Operator", "Tag", "Kernel", "FALLTHROUGH", "define", "get_op", "all_ops", "redispatch",
    "register_fallback", "dispatch_state", "set_tensor_type", "included_keys", "excluded_keys",
    "ExcludeKeys", "IncludeKeys", "PerOpFallback",
]

K = DispatchKey
_PYTHON_BIT = 1 << K.Python


class Tag(Enum):
    """Operator tags: facts about an operator that tools (compiler, modes, tests) rely on."""

    pointwise = "pointwise"
    reduction = "reduction"
    view = "view"
    inplace = "inplace"
    random = "random"
    nondeterministic = "nondeterministic"
    data_dependent_output = "data_dependent_output"
    extern = "extern"
    factory = "factory"


class Kernel:
    """A registered kernel: a function, whether it takes ``(op, keys_below)`` first, its origin."""

    __slots__ = ("fn", "with_keyset", "source")

    def __init__(self, fn: Callable, with_keyset: bool = False, source: str = ""):
        self.fn = fn
        self.with_keyset = with_keyset
        self.source = source or getattr(fn, "__qualname__", repr(fn))

    def __repr__(self) -> str:
        return f"Kernel({self.source})"


FALLTHROUGH = Kernel(lambda *a, **k: None, source="fallthrough")


class PerOpFallback(Kernel):
    """A dispatcher-wide fallback whose kernel depends on the operator (NOTE [Per-operator
    fallbacks]): ``factory(op)`` returns the op's Kernel, FALLTHROUGH, or None (missing).

    ``why`` is what ``Operator.resolve`` reports for the kernels it makes.
    """

    __slots__ = ("factory", "why")

    def __init__(self, factory: Callable[[Operator], Kernel | None], why: str, source: str = ""):
        super().__init__(factory, False, source or why)
        self.factory = factory
        self.why = why


class _DispatchState(threading.local):
    def __init__(self):
        self.included = keyset(K.BackendSelect, K.ADInplaceOrView)
        self.keep = ALL_KEYS_MASK & ~AUTOCAST_MASK  # complement of the excluded set
        self.modes: list = []
        self.inference = False  # inside inference_mode: new tensors are inference tensors


_state = _DispatchState()
_Tensor: type = type("NoTensorYet", (), {})
_OPS: dict[str, Operator] = {}
_MethodType = types.MethodType  # read on every method call (``Operator.__get__``)
_FALLBACKS: dict[DispatchKey, Kernel] = {}
_BACKEND_SET = frozenset(BACKEND_KEYS)
_kernels_loaded = 0  # bits of backend keys whose kernel modules were imported
_REGISTERED_BACKENDS = 0  # bits of backend keys that have a registered device backend


def dispatch_state() -> _DispatchState:
    """The calling thread's dispatch state (included keys, kept keys, mode stack)."""
    return _state


def set_tensor_type(cls: type) -> None:
    """Tell the dispatcher which class is a tensor (called once by ``ember.tensor``)."""
    global _Tensor
    _Tensor = cls


def included_keys() -> int:
    """Thread-local included key set."""
    return _state.included


def excluded_keys() -> int:
    """Thread-local excluded key set."""
    return ALL_KEYS_MASK & ~_state.keep


class IncludeKeys:
    """Context manager adding keys to the thread-local included set."""

    def __init__(self, ks: int):
        self.ks = ks

    def __enter__(self):
        self.saved = _state.included
        _state.included |= self.ks

    def __exit__(self, *exc):
        _state.included = self.saved


class ExcludeKeys:
    """Context manager adding keys to the thread-local excluded set (an exclude guard)."""

    def __init__(self, ks: int):
        self.ks = ks

    def __enter__(self):
        self.saved = _state.keep
        _state.keep &= ~self.ks

    def __exit__(self, *exc):
        _state.keep = self.saved


class Operator:
    """One operator overload: its schema, tags, kernels per key, and a cached dispatch table.

    Calling it dispatches: ``op(*args, **kwargs)``. As a class attribute it binds like a
    method, so ``Tensor.add = add_op`` makes ``x.add(y)`` call ``add_op(x, y)``.
    """

    def __init__(self, schema: OpSchema, tags=(), doc: str | None = None):
        self.schema = schema
        self.namespace = schema.namespace
        self.name = schema.name
        self.overload = schema.overload or "default"
        self.qualname = schema.qualname
        self.short_name = f"{schema.name}.{self.overload}"
        self.__name__ = schema.name
        self.__qualname__ = schema.name
        self.__doc__ = doc
        self.tags = frozenset(tags)
        # Tag membership hashes an Enum in Python: the hot paths read these flags instead.
        self._is_view = Tag.view in self.tags
        self._is_inplace = Tag.inplace in self.tags
        self._is_factory = Tag.factory in self.tags
        self._scan_lists = any(a.is_tensor_list for a in schema.arguments)
        # NOTE [Numbers passed as 0-d tensors]
        self._number_at = frozenset(i for i, a in enumerate(schema.arguments)
                                    if not a.kwarg_only and _number_kind(a.type))
        self._number_names = frozenset(a.name for a in schema.arguments
                                       if _number_kind(a.type))
        if self._scan_lists:
            self.__class__ = _ListOperator
        elif self._number_at:
            self.__class__ = _NumberOperator
        self._method = None
        self._direct: dict[DispatchKey, Kernel] = {}
        self._alias: dict[AliasKey, Kernel] = {}
        self._cache: dict[int, Callable] = {}

    # -- the hot path -------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        ks = 0
        T = _Tensor
        for a in args:
            if isinstance(a, T):
                ks |= a._ver.keys
        if kwargs:
            for a in kwargs.values():
                if isinstance(a, T):
                    if self._number_names and _number_kwarg_is_tensor(self, kwargs):
                        return _call_with_numbers(self, args, kwargs)
                    ks |= a._ver.keys
        st = _state
        ks = (ks | st.included) & st.keep
        fn = self._cache.get(ks)
        if fn is None:
            fn = self._compute(ks)
        return fn(*args, **kwargs)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return _MethodType(self, obj)

    @property
    def method(self) -> Callable:
        """This operator as a plain function to bind on ``Tensor`` (NOTE [Tensor methods are
        functions]); made once.

        Example:
            >>> ember.Tensor.add.__wrapped__ is ember.add, ember.Tensor.add(ember.ones(1), 1)
            (True, tensor([2.]))
        """
        fn = self._method
        if fn is None:
            fn = self._method = _method_function(self)
        return fn

    def lookup(self, ks: int) -> Callable:
        """The callable that serves key set ``ks`` (filling the table on a miss)."""
        fn = self._cache.get(ks)
        return fn if fn is not None else self._compute(ks)

    # -- registration --------------------------------------------------------------------------
    def register(self, key, fn: Callable | Kernel, *, with_keyset: bool = False) -> None:
        """Register ``fn`` for a runtime or alias key; replaces an earlier registration."""
        key = parse_key(key)
        kernel = fn if isinstance(fn, Kernel) else Kernel(fn, with_keyset)
        (self._alias if isinstance(key, AliasKey) else self._direct)[key] = kernel
        self._cache.clear()

    def impl(self, key, *, with_keyset: bool = False):
        """Decorator form of :meth:`register`."""
        def deco(fn):
            self.register(key, fn, with_keyset=with_keyset)
            return fn
        return deco

    def has_kernel(self, key: DispatchKey) -> bool:
        """Whether a key has a kernel of this operator's own (not a fallback or fallthrough)."""
        kernel, why = self.resolve(key)
        return kernel is not None and kernel is not FALLTHROUGH and why != "backend fallback"

    # -- table computation ---------------------------------------------------------------------
    def resolve(self, key: DispatchKey) -> tuple[Kernel | None, str]:
        """The kernel serving ``key`` and why (PyTorch's table-entry precedence)."""
        kernel = self._direct.get(key)
        if kernel is None and key in _BACKEND_SET:
            kernel = self._backend_kernel(key)
            if kernel is not None and kernel is not FALLTHROUGH and \
                    key not in self._direct:
                return kernel, "borrowed kernel"
        if kernel is not None:
            return kernel, "fallthrough" if kernel is FALLTHROUGH else "kernel"
        alias = self._alias
        if key == K.ADInplaceOrView and AliasKey.CompositeImplicitAutograd in alias and \
                not self._has_backend_kernel():
            # Decompose before the Python key, as torch does for tensors with autograd keys,
            # so that dispatch modes see the ops a composite is made of.
            return alias[AliasKey.CompositeImplicitAutograd], "math kernel"
        if key in BACKEND_KEYS:
            if AliasKey.CompositeExplicitAutograd in alias:
                return alias[AliasKey.CompositeExplicitAutograd], "default backend kernel"
            if AliasKey.CompositeImplicitAutograd in alias:
                return alias[AliasKey.CompositeImplicitAutograd], "math kernel"
        if key in AUTOGRAD_KEYS:
            if AliasKey.CompositeImplicitAutograd in alias and not self._has_backend_kernel():
                return alias[AliasKey.CompositeImplicitAutograd], "math kernel"
            if AliasKey.Autograd in alias:
                return alias[AliasKey.Autograd], "autograd kernel"
        fallback = _FALLBACKS.get(key)
        if fallback is not None:
            if fallback.__class__ is PerOpFallback:
                why = fallback.why
                fallback = fallback.factory(self)
                if fallback is None:
                    return None, "missing"
                return fallback, "fallthrough" if fallback is FALLTHROUGH else why
            return fallback, "fallthrough" if fallback is FALLTHROUGH else "backend fallback"
        return None, "missing"

    def _backend_kernel(self, key: DispatchKey) -> Kernel | None:
        """A backend key's kernel once its backend's modules are imported, or a borrowed one."""
        if not _kernels_loaded >> key & 1:
            _load_kernels(key)
            kernel = self._direct.get(key)
            if kernel is not None:
                return kernel
        backend = _KEY_BACKEND.get(key)
        if backend is None or backend.kernels_from is None:
            return None
        src = _devices.get_backend(backend.kernels_from)
        kernel = self._direct.get(DispatchKey[src.dispatch_key])
        if kernel is None or kernel is FALLTHROUGH:
            return None
        fn = _borrowed(backend.name, kernel.fn, self.name not in _CROSS_DEVICE_OPS)
        return Kernel(fn, kernel.with_keyset, f"{kernel.source} on {backend.name}")

    def _has_backend_kernel(self) -> bool:
        if _kernels_loaded & _REGISTERED_BACKENDS != _REGISTERED_BACKENDS:
            for key in BACKEND_KEYS:
                if _REGISTERED_BACKENDS >> key & 1 and not _kernels_loaded >> key & 1:
                    _load_kernels(key)
        return any(k in self._direct for k in BACKEND_KEYS) or (
            AliasKey.CompositeExplicitAutograd in self._alias)

    def _compute(self, ks: int) -> Callable:
        k = ks
        while k:
            key = DispatchKey(k.bit_length() - 1)
            kernel, _ = self.resolve(key)
            if kernel is FALLTHROUGH:
                k &= ~(1 << key)
                continue
            if kernel is None:
                raise self._missing(key)
            fn = partial(kernel.fn, self, ks & ((1 << key) - 1)) if kernel.with_keyset \
                else kernel.fn
            self._cache[ks] = fn
            return fn
        raise DispatchError(
            f"There were no tensor arguments to this function (e.g., you passed an empty list "
            f"of Tensors), but no fallback function is registered for schema {self.qualname}."
        )

    def _missing(self, key: DispatchKey) -> DispatchError:
        available = [k.name for k in BACKEND_KEYS if self.resolve(k)[0] is not None]
        return DispatchError(
            f"Could not run '{self.qualname}' with arguments from the '{key.name}' backend. "
            f"This could be because the operator doesn't exist for this backend. "
            f"'{self.qualname}' is only available for these backends: {available}."
        )

    def __repr__(self) -> str:
        return f"{self.namespace}.{self.short_name}"


class _NumberOperator(Operator):
    """An operator with positional number arguments (NOTE [Numbers passed as 0-d tensors])."""

    def __call__(self, *args, **kwargs):
        ks = i = 0
        T = _Tensor
        for a in args:
            if isinstance(a, T):
                if i in self._number_at:
                    return _call_with_numbers(self, args, kwargs)
                ks |= a._ver.keys
            i += 1
        if kwargs:
            for a in kwargs.values():
                if isinstance(a, T):
                    if _number_kwarg_is_tensor(self, kwargs):
                        return _call_with_numbers(self, args, kwargs)
                    ks |= a._ver.keys
        st = _state
        ks = (ks | st.included) & st.keep
        fn = self._cache.get(ks)
        if fn is None:
            fn = self._compute(ks)
        return fn(*args, **kwargs)


class _ListOperator(Operator):
    """An operator with a tensor-list argument: its key set also scans lists and tuples."""

    def __call__(self, *args, **kwargs):
        ks = i = 0
        T = _Tensor
        for a in args:
            if isinstance(a, T):
                if i in self._number_at:
                    return _call_with_numbers(self, args, kwargs)
                ks |= a._ver.keys
            elif a.__class__ is list or a.__class__ is tuple:
                for t in a:
                    if isinstance(t, T):
                        ks |= t._ver.keys
            i += 1
        if kwargs:
            for a in kwargs.values():
                if isinstance(a, T):
                    if self._number_names and _number_kwarg_is_tensor(self, kwargs):
                        return _call_with_numbers(self, args, kwargs)
                    ks |= a._ver.keys
        st = _state
        ks = (ks | st.included) & st.keep
        fn = self._cache.get(ks)
        if fn is None:
            fn = self._compute(ks)
        return fn(*args, **kwargs)


def _method_function(op: Operator) -> Callable:
    """``op`` as a plain function (NOTE [Tensor methods are functions]): ``Operator.__call__``
    of its class, with the operator's table and the dispatch state held in the closure."""
    cache, compute, st = op._cache, op._compute, _state
    number_at, number_names = op._number_at, op._number_names
    if op._scan_lists:
        def call(*args, **kwargs):
            return op(*args, **kwargs)
    elif number_at:
        def call(*args, **kwargs):
            ks = i = 0
            T = _Tensor
            for a in args:
                if isinstance(a, T):
                    if i in number_at:
                        return _call_with_numbers(op, args, kwargs)
                    ks |= a._ver.keys
                i += 1
            if kwargs:
                for a in kwargs.values():
                    if isinstance(a, T):
                        if _number_kwarg_is_tensor(op, kwargs):
                            return _call_with_numbers(op, args, kwargs)
                        ks |= a._ver.keys
            ks = (ks | st.included) & st.keep
            fn = cache.get(ks)
            if fn is None:
                fn = compute(ks)
            return fn(*args, **kwargs)
    else:
        def call(*args, **kwargs):
            ks = 0
            T = _Tensor
            for a in args:
                if isinstance(a, T):
                    ks |= a._ver.keys
            if kwargs:
                for a in kwargs.values():
                    if isinstance(a, T):
                        if number_names and _number_kwarg_is_tensor(op, kwargs):
                            return _call_with_numbers(op, args, kwargs)
                        ks |= a._ver.keys
            ks = (ks | st.included) & st.keep
            fn = cache.get(ks)
            if fn is None:
                fn = compute(ks)
            return fn(*args, **kwargs)
    call.__name__ = op.__name__
    call.__qualname__ = f"Tensor.{op.__name__}"
    call.__doc__ = op.__doc__
    call.__module__ = getattr(op, "__module__", __name__)
    call.__wrapped__ = op
    return call


def _number_kind(type_text: str) -> str | None:
    """``"int"`` or ``"number"`` for schema types that take a number, else None."""
    base = type_text.rstrip("?")
    if base in ("int", "SymInt") or base.startswith(("int[", "SymInt[")):
        return "int"  # a list takes one int too (``x.view(n)``, ``int[1]``)
    if base in ("float", "Scalar"):
        return "number"
    return None


def _number_kwarg_is_tensor(op: Operator, kwargs: dict) -> bool:
    T = _Tensor
    return any(isinstance(v, T) for k, v in kwargs.items() if k in op._number_names)


def _as_number(value, kind: str):
    """The number a 0-d tensor stands for at a ``kind`` argument, or ``value`` unchanged
    when torch would not take it as one (NOTE [Numbers passed as 0-d tensors])."""
    if not isinstance(value, _Tensor) or value._shape != () or value._device.type == "meta":
        return value  # a meta tensor holds no number: the kernel decides, as before
    if kind == "int":
        return value.item() if value._dtype.category == INTEGRAL else value
    return value if value.requires_grad else value.item()


def _call_with_numbers(op: Operator, args: tuple, kwargs: dict):
    """Call ``op`` with the 0-d tensors at its number arguments converted to numbers."""
    params = op.schema.arguments
    args = tuple(_as_number(a, _number_kind(params[i].type)) if i in op._number_at else a
                 for i, a in enumerate(args))
    if kwargs:
        kinds = {p.name: _number_kind(p.type) for p in params if p.name in op._number_names}
        kwargs = {k: _as_number(v, kinds[k]) if k in kinds else v for k, v in kwargs.items()}
    ks = 0
    T = _Tensor
    for a in (*args, *kwargs.values()):
        if isinstance(a, T):
            ks |= a._ver.keys
        elif op._scan_lists and (a.__class__ is list or a.__class__ is tuple):
            for t in a:
                if isinstance(t, T):
                    ks |= t._ver.keys
    return op.lookup((ks | _state.included) & _state.keep)(*args, **kwargs)


def redispatch(op: Operator, ks: int, *args, **kwargs):
    """Call ``op`` with key set ``ks`` (already masked below the caller's key)."""
    return op.lookup(ks)(*args, **kwargs)


def define(schema: str | OpSchema, tags=(), doc: str | None = None) -> Operator:
    """Create and register an operator from its schema; RuntimeError if the name is taken."""
    parsed = parse_schema(schema) if isinstance(schema, str) else schema
    if parsed.qualname in _OPS:
        raise RuntimeError(f"define: operator {parsed.qualname} was already defined")
    op = Operator(parsed, tags, doc)
    _OPS[parsed.qualname] = op
    return op


def get_op(qualname: str) -> Operator:
    """The operator registered as ``ns::name.overload`` (``aten::`` and ``.default`` implied)."""
    if "::" not in qualname:
        qualname = "aten::" + qualname
    op = _OPS.get(qualname) or _OPS.get(qualname.removesuffix(".default"))
    if op is None:
        candidates = [q for q in _OPS if q.split(".")[0] == qualname.split(".")[0]]
        if len(candidates) >= 1:
            return _OPS[candidates[0]]
        raise KeyError(f"no operator named {qualname!r}")
    return op


def all_ops() -> list[Operator]:
    """Every registered operator, in definition order."""
    return list(_OPS.values())


def overloads(namespace: str, name: str) -> list[Operator]:
    """Every overload of ``namespace::name``, in definition order."""
    return [op for op in _OPS.values() if op.namespace == namespace and op.name == name]


def register_fallback(key, fn: Callable | Kernel, *, with_keyset: bool = False) -> None:
    """Register a dispatcher-wide fallback for ``key`` (``FALLTHROUGH`` to skip the key)."""
    key = parse_key(key)
    keys = ALIAS_EXPANSION[key] if isinstance(key, AliasKey) else (key,)
    for k in keys:
        _FALLBACKS[k] = fn if isinstance(fn, Kernel) else Kernel(fn, with_keyset)
    for op in _OPS.values():
        op._cache.clear()


_KEY_BACKEND: dict[DispatchKey, object] = {}


def _key_backend(backend) -> None:
    _KEY_BACKEND[DispatchKey[backend.dispatch_key]] = backend
    global _kernels_loaded, _REGISTERED_BACKENDS
    _REGISTERED_BACKENDS |= 1 << DispatchKey[backend.dispatch_key]
    _kernels_loaded &= ~(1 << DispatchKey[backend.dispatch_key])
    for op in _OPS.values():
        op._cache.clear()


_devices.on_register(_key_backend)


# Operators whose tensors may live on different devices (torch allows these too).
_CROSS_DEVICE_OPS = frozenset({"copy_", "_to_copy", "to", "index", "index_put", "index_put_",
                               "_index_put_impl_"})


def _device_of_call(name: str, args, kwargs, check: bool):
    """The ``name``-type device of a call's tensors (or its ``device=``), checking that every
    other tensor is on it too (CPU 0-d tensors are scalars and may join), as torch does."""
    T = _Tensor
    found = None
    for a in (*args, *kwargs.values()):
        for t in a if a.__class__ is list or a.__class__ is tuple else (a,):
            if not isinstance(t, T):
                continue
            d = t._device
            if found is None and d.type == name:
                found = d
            elif d is not found and check and (t._shape or d.type != "cpu") and not (
                    found is not None and d.type == found.type and not d.index and
                    not found.index):  # "cuda" and "cuda:0" are one device
                other = found if found is not None else _devices.Device(name)
                raise RuntimeError(f"Expected all tensors to be on the same device, but found "
                                   f"at least two devices, {other} and {d}!")
    if found is None:
        d = kwargs.get("device")
        d = _devices.Device(d) if isinstance(d, str) else d
        found = d if isinstance(d, _devices.Device) and d.type == name else \
            _devices.Device(name)
    return found


def _borrowed(name: str, fn: Callable, check: bool) -> Callable:
    """Another backend's kernel run for device type ``name``: it allocates on the call's device
    (its guard) after torch's same-device check (skipped for ops that copy across devices)."""
    g = _devices.guard_state

    def call(*args, **kwargs):
        saved = g.device
        g.device = _device_of_call(name, args, kwargs, check)
        try:
            return fn(*args, **kwargs)
        finally:
            g.device = saved

    call.__wrapped__ = fn
    return call


_load_lock = threading.RLock()  # another thread's first dispatch waits for the import


def _load_kernels(key: DispatchKey) -> None:
    """Import the kernel modules of ``key``'s backend (once; NOTE [Kernels are found by ...])."""
    global _kernels_loaded
    with _load_lock:
        if _kernels_loaded >> key & 1:
            return
        for module in _devices.kernel_modules(key.name):
            importlib.import_module(module)
        _kernels_loaded |= 1 << key


def _python_key_fallback(op: Operator, ks_below: int, *args, **kwargs):
    # NOTE [Python dispatch modes]
    # The innermost mode handles the op with itself popped, so calling ``func`` again reaches
    # the next mode out and finally the kernels. While a mode runs, every key above Python
    # stays excluded: the mode sits below autograd, exactly as it was reached.
    st = _state
    mode = st.modes.pop()
    saved_included, saved_keep = st.included, st.keep
    if not st.modes:
        st.included &= ~_PYTHON_BIT
    st.keep &= ~ABOVE_PYTHON_MASK
    try:
        tensor_types = tuple({type(a) for a in args if isinstance(a, _Tensor)})
        return mode.__ember_dispatch__(op, tensor_types, args, kwargs)
    finally:
        st.modes.append(mode)
        st.included, st.keep = saved_included, saved_keep


for _key in (K.BackendSelect, K.ADInplaceOrView, *AUTOGRAD_KEYS, K.AutocastCPU, K.AutocastCUDA):
    _FALLBACKS[_key] = FALLTHROUGH
_FALLBACKS[K.Python] = Kernel(_python_key_fallback, True, "python dispatch mode")
