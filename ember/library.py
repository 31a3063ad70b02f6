"""``ember.library``: define your own operators and register kernels per dispatch key.

Mirrors ``torch.library``. An operator defined here is an ordinary dispatcher operator: it is
callable as ``ember.ops.<namespace>.<name>``, goes through dispatch modes, and shows up in
``ember.utils.dispatch.dispatch_table``. A ``Library`` remembers what it registered, and
``lib._destroy()`` takes it all back (tests rely on this).

NOTE [Registration stacks]
Several libraries may register a kernel for the same (operator, key). Each pair keeps a stack
whose bottom is whatever was there before any library touched it; the top is what the
operator uses. Destroying a library removes its own entries wherever they sit in the stack
and reinstalls the top, so libraries may be destroyed in any order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ember.dispatch import FALLTHROUGH, AliasKey, DispatchKey, Kernel, Operator, Tag, dispatcher
from ember.dispatch.keys import ALIAS_EXPANSION, parse_key
from ember.dispatch.schema import parse_schema
from ember.tensor import Tensor

__all__ = ["Library", "define", "impl", "register_fake", "fallthrough_kernel"]

_KINDS = ("DEF", "IMPL", "FRAGMENT")
_DEF_NAMESPACES: set[str] = {"aten"}  # the built-in operators own "aten"
_FRAGMENTS: dict[str, Library] = {}  # libraries behind the module-level helpers
_STACKS: dict[tuple, list] = {}  # (op or None, key) -> [previous, kernel, kernel, ...]
_DEVICE_KEYS = {"cpu": DispatchKey.CPU, "cuda": DispatchKey.CUDA, "meta": DispatchKey.Meta,
                "default": AliasKey.CompositeExplicitAutograd}


def fallthrough_kernel(*args, **kwargs):
    """A marker kernel: registered at a key, it makes dispatch skip that key for the op."""
    raise NotImplementedError("fallthrough_kernel() should never be called")


def _parse_dispatch_key(name) -> DispatchKey | AliasKey:
    if name == "":
        return AliasKey.CompositeImplicitAutograd
    if isinstance(name, str) and name in _DEVICE_KEYS:
        return _DEVICE_KEYS[name]
    return parse_key(name)


# -- registration stacks (NOTE [Registration stacks]) -----------------------------------------
def _table(op: Operator | None, key) -> dict:
    if op is None:
        return dispatcher._FALLBACKS
    return op._alias if isinstance(key, AliasKey) else op._direct


def _install(op: Operator | None, key, kernel: Kernel | None) -> None:
    if kernel is not None:
        if op is None:
            dispatcher.register_fallback(key, kernel)
        else:
            op.register(key, kernel)
        return
    _table(op, key).pop(key, None)
    for o in [op] if op is not None else dispatcher.all_ops():
        o._cache.clear()


def _push(op: Operator | None, key, kernel: Kernel) -> None:
    stack = _STACKS.setdefault((op, key), [_table(op, key).get(key)])
    stack.append(kernel)
    _install(op, key, kernel)


def _pop(op: Operator | None, key, kernel: Kernel) -> None:
    stack = _STACKS.get((op, key))
    if stack is None:
        return
    for i in range(len(stack) - 1, 0, -1):
        if stack[i] is kernel:
            del stack[i]
            break
    _install(op, key, stack[-1])
    if len(stack) == 1:
        del _STACKS[(op, key)]


def _undefine(op: Operator) -> None:
    dispatcher._OPS.pop(op.qualname, None)
    for pair in [p for p in _STACKS if p[0] is op]:
        del _STACKS[pair]


# -- Library --------------------------------------------------------------------------------
class Library:
    """A set of operator definitions and kernel registrations in one namespace.

    Args:
        ns: the namespace (``"myns"`` gives ``myns::op`` and ``ember.ops.myns.op``).
        kind: ``"DEF"`` (owns the namespace; one per namespace), ``"FRAGMENT"`` (may define,
            any number of them) or ``"IMPL"`` (only registers kernels).
        dispatch_key: default key for :meth:`impl` (``""``: CompositeImplicitAutograd).

    Raises:
        ValueError: unknown ``kind``. RuntimeError: a second ``"DEF"`` library for ``ns``.

    Example:
        >>> import ember
        >>> lib = Library("demo_ns", "DEF")
        >>> lib.define("twice(Tensor x) -> Tensor")
        'twice'
        >>> lib.impl("twice", lambda x: x * 2, "CPU")
        >>> ember.ops.demo_ns.twice(ember.ones(2))
        tensor([2., 2.])
        >>> lib._destroy()
    """

    def __init__(self, ns: str, kind: str, dispatch_key: str = ""):
        if kind not in _KINDS:
            raise ValueError(f"Unsupported kind: {kind}")
        if not ns.isidentifier():
            raise ValueError(f"Library: namespace must be an identifier; got {ns!r}")
        if kind == "DEF":
            if ns in _DEF_NAMESPACES:
                raise RuntimeError(
                    f"Only a single 'DEF' Library can be used to register the namespace {ns}; "
                    f"please put all of your definitions in a single Library block.\n"
                    f"hint: use Library({ns!r}, 'FRAGMENT') to define more operators, or "
                    f"'IMPL' to only register kernels")
            _DEF_NAMESPACES.add(ns)
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._ops: list[Operator] = []
        self._kernels: list[tuple] = []  # (op or None, key, Kernel), in registration order
        self._destroyed = False

    def __repr__(self) -> str:
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})"

    def define(self, schema: str, alias_analysis: str = "", *, tags=()) -> str:
        """Define an operator from its schema (``"name.overload(args) -> returns"``).

        Returns the operator's name. Raises RuntimeError in an IMPL library, for another
        namespace, or when the name and overload are already defined.
        """
        self._check_alive()
        parsed = parse_schema(schema, default_namespace=self.ns)
        if self.kind == "IMPL":
            raise RuntimeError(f'def("{parsed.name}"): Cannot define an operator inside of an '
                               f"IMPL library. All definitions belong in the 'DEF' or "
                               f"'FRAGMENT' library of namespace {self.ns}")
        if parsed.namespace != self.ns:
            raise RuntimeError(f"define: schema {schema!r} names namespace {parsed.namespace}, "
                               f"but this library's namespace is {self.ns}")
        overload = parsed.overload or "default"
        if any(op.overload == overload for op in dispatcher.overloads(self.ns, parsed.name)):
            raise RuntimeError(f"Tried to register an operator ({schema}) with the same name and "
                               f"overload name multiple times.")
        op = dispatcher.define(parsed, tuple(t if isinstance(t, Tag) else Tag(t) for t in tags))
        self._ops.append(op)
        return parsed.name

    def impl(self, op_name: str | Operator, fn: Callable, dispatch_key: str = "", *,
             with_keyset: bool = False, allow_override: bool = True) -> None:
        """Register ``fn`` as ``op_name``'s kernel for ``dispatch_key``.

        ``dispatch_key`` is a key name (``"CPU"``, ``"Meta"``, ``"AutogradCPU"``, ``"Autograd"``,
        ``"CompositeExplicitAutograd"``, ...); empty means the library's key, else
        CompositeImplicitAutograd. ``fn = fallthrough_kernel`` makes the op skip the key.
        With ``with_keyset=True`` the kernel receives ``(op, keys_below)`` first and may
        ``redispatch``.
        """
        self._check_alive()
        op = self._operator(op_name)
        key = _parse_dispatch_key(dispatch_key or self.dispatch_key)
        if not allow_override and _table(op, key).get(key) is not None:
            raise RuntimeError(f"impl: {op.qualname} already has a kernel for {key.name}")
        kernel = FALLTHROUGH if fn is fallthrough_kernel else Kernel(fn, with_keyset)
        _push(op, key, kernel)
        self._kernels.append((op, key, kernel))

    def fallback(self, fn: Callable, dispatch_key: str = "", *, with_keyset: bool = False):
        """Register ``fn`` as the dispatcher-wide fallback of ``dispatch_key`` for every op."""
        self._check_alive()
        if not dispatch_key:
            raise ValueError("fallback: a dispatch_key is required")
        key = parse_key(dispatch_key)
        kernel = FALLTHROUGH if fn is fallthrough_kernel else Kernel(fn, with_keyset)
        for k in ALIAS_EXPANSION[key] if isinstance(key, AliasKey) else (key,):
            _push(None, k, kernel)
            self._kernels.append((None, k, kernel))

    def _destroy(self) -> None:
        """Take back every registration and definition this library made."""
        if self._destroyed:
            return
        for op, key, kernel in reversed(self._kernels):
            _pop(op, key, kernel)
        for op in self._ops:
            _undefine(op)
        if self.kind == "DEF":
            _DEF_NAMESPACES.discard(self.ns)
        self._kernels.clear()
        self._ops.clear()
        self._destroyed = True

    def _check_alive(self) -> None:
        if self._destroyed:
            raise RuntimeError(f"{self!r} was destroyed")

    def _operator(self, op_name: str | Operator) -> Operator:
        if isinstance(op_name, Operator):
            return op_name
        ns, _, rest = op_name.rpartition("::")
        if ns and ns != self.ns:
            raise RuntimeError(f"impl: {op_name!r} is not in this library's namespace {self.ns}")
        return _lookup(self.ns, rest)


def _lookup(ns: str, name_overload: str) -> Operator:
    name, _, overload = name_overload.partition(".")
    ops = dispatcher.overloads(ns, name)
    for op in ops:
        if op.overload == (overload or "default"):
            return op
    if not ops:
        raise RuntimeError(f"operator {ns}::{name} is not defined; define it first")
    raise RuntimeError(f"operator {ns}::{name} has no overload {overload or 'default'!r}; "
                       f"overloads: {[op.overload for op in ops]}")


def _split_qualname(qualname: str) -> tuple[str, str]:
    ns, sep, rest = qualname.partition("::")
    if not sep or not ns:
        raise ValueError(f"expected a qualified name 'namespace::name'; got {qualname!r}")
    return ns, rest


def _fragment(ns: str, lib: Library | None) -> Library:
    if lib is not None:
        return lib
    if ns not in _FRAGMENTS:
        _FRAGMENTS[ns] = Library(ns, "FRAGMENT")
    return _FRAGMENTS[ns]


def _resolve(op: str | Operator) -> Operator:
    return op if isinstance(op, Operator) else _lookup(*_split_qualname(op))


# -- module-level helpers -------------------------------------------------------------------
def define(qualname: str, schema: str | None = None, *, lib: Library | None = None,
           tags=()) -> Operator:
    """Define an operator: ``define("ns::op", "(Tensor x) -> Tensor")`` or in one string,
    ``define("ns::op(Tensor x) -> Tensor")``. Returns the new ``Operator``.

    Example:
        >>> import ember
        >>> lib = Library("demo_def", "FRAGMENT")
        >>> op = define("demo_def::neg2(Tensor x) -> Tensor", lib=lib)
        >>> op.qualname
        'demo_def::neg2'
        >>> lib._destroy()
    """
    ns, rest = _split_qualname(qualname if schema is None else qualname + schema)
    name = _fragment(ns, lib).define(rest, tags=tags)
    overload = parse_schema(rest).overload or "default"
    return _lookup(ns, f"{name}.{overload}")


def impl(qualname: str | Operator, types: str | Sequence[str], func: Callable | None = None, *,
         lib: Library | None = None):
    """Register a kernel for one or more device types / keys; a decorator when ``func`` is None.

    ``types``: ``"cpu"``, ``"meta"``, ``"cuda"``, ``"default"`` (CompositeExplicitAutograd) or
    key names (``"CPU"``, ``"AutogradCPU"``, ``"CompositeImplicitAutograd"``, ...).

    Example:
        >>> import ember
        >>> lib = Library("demo_impl", "DEF")
        >>> _ = lib.define("sq(Tensor x) -> Tensor")
        >>> @impl("demo_impl::sq", "cpu", lib=lib)
        ... def _(x):
        ...     return x * x
        >>> ember.ops.demo_impl.sq(ember.full((2,), 3.0))
        tensor([9., 9.])
        >>> lib._destroy()
    """
    op = _resolve(qualname)

    def register(fn: Callable) -> Callable:
        target = _fragment(op.namespace, lib)
        for t in [types] if isinstance(types, str) else types:
            target.impl(op, fn, _parse_dispatch_key(t).name)
        return fn

    return register if func is None else register(func)


def register_fake(op: str | Operator, func: Callable | None = None, /, *,
                  lib: Library | None = None, allow_override: bool = True):
    """Register ``op``'s Meta kernel (a decorator when ``func`` is None).

    The kernel receives meta tensors (shapes, dtypes, no data) and must return meta tensors,
    e.g. ``x.new_empty(shape)``; returning data raises RuntimeError.

    Example:
        >>> import ember
        >>> lib = Library("demo_fake", "DEF")
        >>> _ = lib.define("rowsum(Tensor x) -> Tensor")
        >>> @register_fake("demo_fake::rowsum", lib=lib)
        ... def _(x):
        ...     return x.new_empty((x.shape[0],))
        >>> ember.ops.demo_fake.rowsum(ember.empty(3, 4, device="meta")).shape
        ember.Size([3])
        >>> lib._destroy()
    """
    operator = _resolve(op)

    def register(fn: Callable) -> Callable:
        _fragment(operator.namespace, lib).impl(
            operator, _checked_fake(operator, fn), "Meta", allow_override=allow_override)
        return fn

    return register if func is None else register(func)


def _checked_fake(op: Operator, fn: Callable) -> Callable:
    def fake_kernel(*args, **kwargs):
        out = fn(*args, **kwargs)
        for t in out if isinstance(out, tuple | list) else (out,):
            if isinstance(t, Tensor) and t._device.type != "meta":
                raise RuntimeError(
                    f"{op.qualname}: its fake (Meta) kernel returned a tensor on "
                    f"{t._device}; expected meta tensors\n"
                    f"hint: build outputs with x.new_empty(shape) or "
                    f"ember.empty(shape, device='meta')")
        return out

    fake_kernel.__qualname__ = getattr(fn, "__qualname__", "fake_kernel")
    return fake_kernel
