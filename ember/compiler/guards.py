"""Guards: the conditions under which a compiled entry may be reused, as generated Python.

The capture adds one check per fact it relied on (``GuardBuilder.add_*``, named like Dynamo's
guard kinds: TENSOR_MATCH, EQUALS, ID_MATCH, TYPE_MATCH, LEN, DICT_KEYS, MODULE_MATCH,
GLOBAL_STATE, NO_ALIAS). ``build()`` orders them cheap-first, reads each source expression
once, and compiles one function ``guard(L, G)`` returning 0 when every check holds, else the
1-based number of the first failing check (no exceptions on the hot path). Failure messages
are built only on a miss, by :meth:`GuardSet.reason`.

NOTE [Guard sources]
A source is an opaque Python expression over ``L`` (the frame's values, as the driver keeps
them) and ``G`` (the frame's globals): ``L[0]``, ``L[0].layers[3].weight``, ``G['SCALE']``.
Guards never know how the driver lays out ``L``; they only evaluate the expression.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

from ember.autograd.grad_mode import grad_state
from ember.compiler.graph import compile_source
from ember.compiler.meta import lazy_bits
from ember.core import dtype as dt
from ember.tensor import Tensor

__all__ = ["GuardBuilder", "GuardSet", "Check"]

# evaluation order: cheap and likely-to-fail first
_RANK = {"ID_MATCH": 0, "TYPE_MATCH": 1, "EQUALS": 2, "LEN": 3, "DICT_KEYS": 4,
         "MODULE_MATCH": 5, "TENSOR_MATCH": 6, "SHAPE_ENV": 7, "NO_ALIAS": 8, "GLOBAL_STATE": 9}


_HAS_NEG_BIT = hasattr(Tensor, "_is_neg")  # NOTE [The negative bit] in ember/tensor/tensor.py


def _grad_enabled() -> bool:
    return grad_state().enabled


class Check:
    """One guard: its kind, source expression, generated condition and failure explainer.

    ``cond`` is a Python expression over ``v`` (the source's value) and names in ``env``
    that is True when the guard holds.
    """

    def __init__(self, kind: str, expr: str, cond: str, env: dict, explain: Callable,
                 describe: str):
        self.kind, self.expr, self.cond, self.env = kind, expr, cond, env
        self.explain = explain
        self.describe = describe

    def __repr__(self) -> str:
        return f"{self.kind}({self.expr}): {self.describe}"


def _tensor_explain(expected: Tensor, expr: str, dynamic_dims=()):
    rg = expected.requires_grad

    def explain(v) -> str:
        if not isinstance(v, Tensor):
            return f"expected a Tensor, got {type(v).__name__}"
        if type(v) is not type(expected):
            return f"type mismatch: expected {type(expected).__name__}, actual {type(v).__name__}"
        if v.dtype is not expected.dtype:
            return f"dtype mismatch: expected {expected.dtype}, actual {v.dtype}"
        if v.device != expected.device:
            return f"device mismatch: expected {expected.device}, actual {v.device}"
        if v.ndim != expected.ndim:
            return f"rank mismatch: expected {expected.ndim}, actual {v.ndim}"
        for i, (a, b) in enumerate(zip(expected.shape, v.shape)):
            if a != b and i not in dynamic_dims:
                return f"size mismatch at index {i}: expected {a}, actual {b}"
        if not dynamic_dims and v.stride() != expected.stride():
            return f"stride mismatch: expected {expected.stride()}, actual {v.stride()}"
        if v.requires_grad != rg:
            return f"requires_grad mismatch: expected {rg}, actual {v.requires_grad}"
        want, got = lazy_bits(expected), lazy_bits(v)
        for name, a, b in zip(("is_conj", "is_neg"), want, got):
            if a is not b:
                kind = "conjugation" if name == "is_conj" else "negative"
                return f"{kind} bit mismatch: expected {name}()={a}, actual {b}"
        return "metadata changed"

    return explain


def _value_text(v) -> str:
    text = repr(v)
    return (text[:60] + "...") if len(text) > 63 else text


class GuardBuilder:
    """Collects checks for one compiled entry; ``build()`` compiles them.

    Example:
        >>> import ember
        >>> gb = GuardBuilder()
        >>> gb.add_tensor_match("L[0]", ember.ones(3))
        >>> gs = gb.build()
        >>> gs([ember.ones(3)], {}), gs([ember.ones(4)], {})
        (0, 1)
        >>> gs.reason([ember.ones(4)], {})
        'TENSOR_MATCH L[0]: size mismatch at index 0: expected 3, actual 4'
    """

    def __init__(self):
        self.checks: list[Check] = []
        self._seen: set[tuple] = set()
        self._refs: list[weakref.ref] = []
        self._n = 0

    def _name(self, prefix: str) -> str:
        self._n += 1
        return f"_{prefix}{self._n}"

    def _add(self, key: tuple, check: Check) -> None:
        if key in self._seen:
            return
        self._seen.add(key)
        self.checks.append(check)

    # -- guard kinds ---------------------------------------------------------------------------
    def add_tensor_match(self, expr: str, tensor: Tensor, dynamic_dims=()) -> None:
        """TENSOR_MATCH: same type, dtype, device, shape, strides, requires_grad and lazy bits
        (conjugation, negative: capture traces composites such as ``real`` and ``imag`` down
        the branch the bits select; ``ember.compiler.meta.lazy_bits``).

        ``dynamic_dims``: dimensions whose size may vary (then strides are not compared).
        """
        cls = self._name("T")
        env = {cls: type(tensor)}
        rg = "True" if tensor.requires_grad else "False"
        # lazy bits: real tensors never carry the conjugation bit, so only complex ones pay for
        # that check; the negative bit (when ember has it) may sit on any dtype
        is_conj, is_neg = lazy_bits(tensor)
        conj = f" and v._is_conj is {is_conj}" if tensor.dtype.is_complex else ""
        conj_desc = f" is_conj={is_conj}" if tensor.dtype.is_complex else ""
        if _HAS_NEG_BIT:
            conj += f" and v._is_neg is {is_neg}"
            conj_desc += " is_neg=True" if is_neg else ""
        if not dynamic_dims:
            key = self._name("K")
            env[key] = tensor._meta_key
            cond = f"type(v) is {cls} and v._meta_key == {key} and v.requires_grad is {rg}{conj}"
            desc = (f"{type(tensor).__name__} {str(tensor.dtype).removeprefix('ember.')}"
                    f"{list(tensor.shape)} stride={tensor.stride()} requires_grad={rg}"
                    f"{conj_desc}")
        else:
            d = self._name("D")
            env[d] = tensor.dtype
            parts = [f"type(v) is {cls}", f"v._dtype is {d}", f"len(v._shape) == {tensor.ndim}",
                     f"v.requires_grad is {rg}", f"v._device.type == {tensor.device.type!r}"]
            parts += [f"v._shape[{i}] == {s}" for i, s in enumerate(tensor.shape)
                      if i not in dynamic_dims]
            if tensor.is_contiguous():
                parts.append("v.is_contiguous()")
            else:
                parts.append(f"v._stride == {tuple(tensor.stride())!r}")
            cond = " and ".join(parts) + conj
            shape = ["*" if i in dynamic_dims else s for i, s in enumerate(tensor.shape)]
            desc = f"{type(tensor).__name__} {tensor.dtype} {shape} requires_grad={rg}{conj_desc}"
        self._add(("TENSOR_MATCH", expr), Check("TENSOR_MATCH", expr, cond, env,
                                                _tensor_explain(tensor, expr, dynamic_dims),
                                                desc))

    def add_shape_guard(self, cond: str, describe: str) -> None:
        """SHAPE_ENV: a relation between input sizes (dynamic shapes), ``cond`` a Python
        expression over ``L``/``G`` such as ``L[0]._shape[0] >= 2``."""
        def explain(_v) -> str:
            return f"expected {describe}"

        self._add(("SHAPE_ENV", cond), Check("SHAPE_ENV", "", cond, {}, explain, describe))

    def add_constant_match(self, expr: str, value) -> None:
        """EQUALS: same type and value (``1``, ``1.0`` and ``True`` are different)."""
        name = self._name("V")
        typ = self._name("C")
        env = {name: value, typ: type(value)}
        if value is None or isinstance(value, bool):
            cond = f"v is {name}"
        elif isinstance(value, float) and value != value:
            cond = f"type(v) is {typ} and v != v"
        else:
            cond = f"type(v) is {typ} and v == {name}"

        def explain(v, value=value) -> str:
            return (f"expected {_value_text(value)} ({type(value).__name__}), actual "
                    f"{_value_text(v)} ({type(v).__name__})")

        self._add(("EQUALS", expr), Check("EQUALS", expr, cond, env, explain,
                                          f"== {_value_text(value)}"))

    def add_id_match(self, expr: str, obj) -> None:
        """ID_MATCH: the very same object (held by weak reference where the type allows)."""
        name = self._name("R")
        try:
            ref = weakref.ref(obj, self._on_dead)
            self._refs.append(ref)
            env, cond = {name: ref}, f"v is {name}()"
        except TypeError:
            env, cond = {name: obj}, f"v is {name}"

        what = f"{type(obj).__name__} at {id(obj):#x}"

        def explain(v) -> str:
            return f"expected the object {what}, actual {type(v).__name__} at {id(v):#x}"

        self._add(("ID_MATCH", expr), Check("ID_MATCH", expr, cond, env, explain,
                                            f"is {type(obj).__name__} at {id(obj):#x}"))

    def add_type_match(self, expr: str, obj) -> None:
        """TYPE_MATCH: ``type(v) is type(obj)``."""
        name = self._name("C")
        typ = type(obj)

        def explain(v) -> str:
            return f"expected type {typ.__qualname__}, actual {type(v).__qualname__}"

        self._add(("TYPE_MATCH", expr), Check("TYPE_MATCH", expr, f"type(v) is {name}",
                                              {name: typ}, explain, f"type {typ.__qualname__}"))

    def add_len_match(self, expr: str, seq) -> None:
        """LEN: same container type and length."""
        name = self._name("C")
        n = len(seq)

        def explain(v) -> str:
            if type(v) is not type(seq):
                return f"expected a {type(seq).__name__}, actual {type(v).__name__}"
            return f"length mismatch: expected {n}, actual {len(v)}"

        self._add(("LEN", expr), Check("LEN", expr, f"type(v) is {name} and len(v) == {n}",
                                       {name: type(seq)}, explain, f"len == {n}"))

    def add_dict_keys_match(self, expr: str, d: dict) -> None:
        """DICT_KEYS: a dict with the same keys in the same order."""
        name = self._name("K")
        keys = tuple(d)

        def explain(v) -> str:
            if not isinstance(v, dict):
                return f"expected a dict, actual {type(v).__name__}"
            return f"keys mismatch: expected {list(keys)}, actual {list(v)}"

        self._add(("DICT_KEYS", expr),
                  Check("DICT_KEYS", expr, f"type(v) is {type(d).__name__} and tuple(v) == {name}",
                        {name: keys, type(d).__name__: type(d)}, explain, f"keys {list(keys)}"))

    def add_module_match(self, expr: str, module) -> None:
        """MODULE_MATCH: the same module object, structure version and training flag.

        The structure version counts parameter, buffer and submodule registrations and
        replacements (NOTE [Module registration and the structural version]); in-place
        updates of parameters do not change it.
        """
        name = self._name("M")
        ref = weakref.ref(module, self._on_dead)
        self._refs.append(ref)
        version = module._structure_version
        training = bool(module.training)
        cond = (f"v is {name}() and v._structure_version == {version} and "
                f"v.training is {training}")

        def explain(v) -> str:
            if v is not ref():
                return f"expected the module at {id(module):#x}, actual {type(v).__name__} " \
                       f"at {id(v):#x}"
            if v.training is not training:
                return f"training mode changed: expected {training}, actual {v.training}"
            return (f"module structure changed (parameter, buffer or submodule replaced): "
                    f"version expected {version}, actual {v._structure_version}")

        self._add(("MODULE_MATCH", expr), Check(
            "MODULE_MATCH", expr, cond, {name: ref}, explain,
            f"{type(module).__name__} version={version} training={training}"))

    def add_global_state(self) -> None:
        """GLOBAL_STATE: grad mode and the default dtype, as they are now."""
        enabled = grad_state().enabled
        default = dt.get_default_dtype()
        env = {"_grad": grad_state(), "_default_dtype": dt.get_default_dtype, "_DD": default}
        cond = f"_grad.enabled is {enabled} and _default_dtype() is _DD"

        def explain(_v) -> str:
            if grad_state().enabled is not enabled:
                return f"grad mode changed: expected {enabled}, actual {grad_state().enabled}"
            return f"default dtype changed: expected {default}, actual {dt.get_default_dtype()}"

        self._add(("GLOBAL_STATE",), Check("GLOBAL_STATE", "", cond, env, explain,
                                           f"grad_enabled={enabled} default_dtype={default}"))

    def add_no_alias(self, exprs) -> None:
        """NO_ALIAS: the tensors at ``exprs`` use pairwise different storages."""
        exprs = list(exprs)
        if len(exprs) < 2:
            return
        joined = ", ".join(f"id(({e})._storage)" for e in exprs)
        cond = f"len({{{joined}}}) == {len(exprs)}"

        def explain(_v) -> str:
            return f"inputs {exprs} now share memory"

        self._add(("NO_ALIAS", *exprs), Check("NO_ALIAS", "", cond, {}, explain,
                                              f"no two of {exprs} share storage"))

    # -- build ---------------------------------------------------------------------------------
    def _on_dead(self, _ref) -> None:
        gs = getattr(self, "built", None)
        if gs is not None:
            gs._died()

    def build(self) -> GuardSet:
        """Compile the checks into one function; returns the ``GuardSet``."""
        checks = sorted(self.checks, key=lambda c: _RANK[c.kind])
        env: dict = {}
        lines = ["def guard(L, G):"]
        hoisted: dict[str, str] = {}
        for i, c in enumerate(checks, 1):
            env.update(c.env)
            cond = c.cond
            if c.expr:
                cond = _subst_v(cond, _hoist(c.expr, hoisted, lines))
            lines.append(f"    if not ({cond}):  # {c.kind} {c.expr}".rstrip())
            lines.append(f"        return {i}")
        lines.append("    return 0")
        source = "\n".join(lines) + "\n"
        safe = _SAFE.format(body=source)
        fn = compile_source(safe, env, "guard_safe", "guards")
        gs = GuardSet(checks, source, fn, self._refs)
        self.built = gs
        return gs


# A failing source expression (an attribute that vanished, an index out of range) is a miss.
_SAFE = """{body}
def guard_safe(L, G):
    try:
        return guard(L, G)
    except Exception:
        return -1
"""


def _steps(expr: str) -> list[str] | None:
    """``L[0].blocks[2].w`` -> ``["L", "[0]", ".blocks", "[2]", ".w"]``; None when the
    expression is not a plain chain of attributes and constant subscripts."""
    import ast

    try:
        node = ast.parse(expr, mode="eval").body
    except SyntaxError:
        return None
    out: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            out.append("." + node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            out.append(f"[{node.slice.value!r}]")
            node = node.value
        elif isinstance(node, ast.Name):
            out.append(node.id)
            return out[::-1]
        elif _is_import(node):
            out.append(ast.unparse(node))
            return out[::-1]
        else:
            return None


def _is_import(node) -> bool:
    """``__import__('name')``: a module lookup, the root of a chain like a name."""
    import ast

    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
        node.func.id == "__import__" and len(node.args) == 1 and not node.keywords and \
        isinstance(node.args[0], ast.Constant)


def _hoist(expr: str, hoisted: dict[str, str], lines: list[str]) -> str:
    """The variable holding ``expr``, emitting assignments for prefixes not read yet, so
    ``L[0].blocks[2].a.w`` and ``L[0].blocks[2].a.b`` walk ``L[0].blocks[2].a`` once."""
    var = hoisted.get(expr)
    if var is not None:
        return var
    steps = _steps(expr)
    if steps is None or len(steps) < 2:
        var = hoisted[expr] = f"v{len(hoisted)}"
        lines.append(f"    {var} = {_hoist_chains(expr, hoisted, lines)}")
        return var
    prefix, parent = steps[0], steps[0]
    for step in steps[1:]:
        prefix += step
        var = hoisted.get(prefix)
        if var is None:
            var = hoisted[prefix] = f"v{len(hoisted)}"
            lines.append(f"    {var} = {parent}{step}")
        parent = var
    hoisted[expr] = parent
    return parent


def _hoist_chains(expr: str, hoisted: dict[str, str], lines: list[str]) -> str:
    """``expr`` with each attribute/subscript chain inside it read through :func:`_hoist`
    (a tuple of a module's hook-table lengths walks to the module once)."""
    import ast

    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        return expr

    class Chains(ast.NodeTransformer):
        def generic_visit(self, node):
            if isinstance(node, ast.Attribute | ast.Subscript):
                steps = _steps(ast.unparse(node))
                if steps is not None and len(steps) >= 2:
                    return ast.Name(_hoist(ast.unparse(node), hoisted, lines), ast.Load())
            return super().generic_visit(node)

    return ast.unparse(Chains().visit(tree))


def _subst_v(cond: str, var: str) -> str:
    import re

    return re.sub(r"\bv\b", var, cond)


class GuardSet:
    """Compiled guards of one entry. ``gs(L, G)`` -> 0 (hit), k > 0 (check k failed) or -1
    (a source could not be evaluated). ``source`` is the generated code."""

    def __init__(self, checks: list[Check], source: str, fn: Callable, refs):
        self.checks = checks
        self.source = source
        self.check = fn
        self._refs = refs
        self._dead = False
        self._dead_callbacks: list[Callable] = []

    def __call__(self, L, G) -> int:
        return self.check(L, G)

    def alive(self) -> bool:
        """False once an object held by an ID_MATCH/MODULE_MATCH guard died."""
        return not self._dead and all(r() is not None for r in self._refs)

    def on_dead(self, callback: Callable) -> None:
        """Call ``callback()`` when a guarded object dies (the cache drops the entry)."""
        self._dead_callbacks.append(callback)

    def _died(self) -> None:
        self._dead = True
        for cb in self._dead_callbacks:
            cb()

    def reason(self, L, G) -> str | None:
        """Why the guards fail for ``(L, G)`` (``KIND expr: message``), or None if they hold."""
        for c in self.checks:
            try:
                v = eval(c.expr, {"L": L, "G": G}) if c.expr else None  # noqa: S307 - ours
            except Exception as exc:  # noqa: BLE001
                return f"{c.kind} {c.expr}: could not be read ({type(exc).__name__}: {exc})"
            try:
                ok = eval(c.cond, {**c.env, "v": v, "_grad": grad_state(), "L": L, "G": G})  # noqa: S307
            except Exception:  # noqa: BLE001
                ok = False
            if not ok:
                where = f" {c.expr}" if c.expr else ""
                return f"{c.kind}{where}: {c.explain(v)}"
        return None

    def describe(self) -> list[str]:
        """One line per check: ``KIND expr: what it requires``."""
        return [f"{c.kind}{' ' + c.expr if c.expr else ''}: {c.describe}" for c in self.checks]

    def __str__(self) -> str:
        return "\n".join(self.describe())

    def __len__(self) -> int:
        return len(self.checks)
