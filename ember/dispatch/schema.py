"""Operator schemas: ``name.overload(Type arg, ..., *, kwarg=default) -> Returns``.

The syntax is PyTorch's native-function schema. Alias annotations say which outputs alias
which inputs: ``Tensor(a)`` is a view of input ``a``; ``Tensor(a!)`` is written in place.
Schemas are parsed once, when an operator is defined; nothing on the call path parses.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from ember.errors import SchemaError

__all__ = ["Argument", "Return", "OpSchema", "parse_schema"]

_ARG = re.compile(r"^(?P<type>[A-Za-z_][\w]*(\([a-z]!?\))?\??(\[\d*\])?\??)\s+(?P<name>\w+)"
                  r"(\s*=\s*(?P<default>.+))?$")
_ALIAS = re.compile(r"\((?P<set>[a-z])(?P<write>!?)\)")
_KNOWN_TYPES = {"Tensor", "int", "float", "bool", "str", "Scalar", "ScalarType", "Device",
                "Generator", "Layout", "MemoryFormat", "SymInt", "Any", "Dimname"}


@dataclass(frozen=True)
class Argument:
    """One schema argument: its type, name, default, and alias annotation."""

    name: str
    type: str
    default: object = None
    has_default: bool = False
    kwarg_only: bool = False
    alias_set: str | None = None
    is_write: bool = False

    @property
    def is_tensor(self) -> bool:
        return self.type.startswith("Tensor") and "[" not in self.type

    @property
    def is_tensor_list(self) -> bool:
        return self.type.startswith("Tensor") and "[" in self.type


@dataclass(frozen=True)
class Return:
    """One schema return: its type, optional name and alias annotation."""

    type: str
    name: str | None = None
    alias_set: str | None = None
    is_write: bool = False


@dataclass(frozen=True)
class OpSchema:
    """A parsed schema. ``qualname`` is ``ns::name.overload`` (overload may be empty)."""

    namespace: str
    name: str
    overload: str
    arguments: tuple[Argument, ...]
    returns: tuple[Return, ...]
    text: str

    @property
    def qualname(self) -> str:
        base = f"{self.namespace}::{self.name}"
        return f"{base}.{self.overload}" if self.overload else base

    @property
    def is_inplace(self) -> bool:
        return any(a.is_write and not a.kwarg_only for a in self.arguments)

    @property
    def is_view(self) -> bool:
        return any(r.alias_set and not r.is_write for r in self.returns)

    @property
    def is_mutable(self) -> bool:
        return any(a.is_write for a in self.arguments)

    def bind(self, args: tuple, kwargs: dict) -> dict:
        """Every argument by name for a call ``op(*args, **kwargs)``, defaults filled in.

        Example:
            >>> ember.ops.aten.add.Tensor.schema.bind((1, 2), {})["alpha"]
            1
        """
        bound = {}
        for i, a in enumerate(self.arguments):
            if i < len(args) and not a.kwarg_only:
                bound[a.name] = args[i]
            elif a.name in kwargs:
                bound[a.name] = kwargs[a.name]
            else:
                bound[a.name] = a.default
        return bound

    def __str__(self) -> str:
        return self.text


def _split_top(text: str, sep: str = ",") -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def _parse_default(text: str):
    text = text.strip()
    if text == "None":
        return None
    if text in ("True", "False"):
        return text == "True"
    if text.startswith("[") and text.endswith("]"):
        return tuple(_parse_default(t) for t in _split_top(text[1:-1]))
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text  # symbolic defaults such as ``contiguous_format``


def _alias(type_text: str) -> tuple[str, str | None, bool]:
    m = _ALIAS.search(type_text)
    if not m:
        return type_text, None, False
    return _ALIAS.sub("", type_text), m.group("set"), bool(m.group("write"))


def _parse_argument(text: str, kwarg_only: bool, schema: str) -> Argument:
    m = _ARG.match(text)
    if not m:
        raise SchemaError(f"parse_schema: cannot parse argument {text!r} in {schema!r}")
    type_text, alias_set, is_write = _alias(m.group("type"))
    base = type_text.split("[")[0].rstrip("?")
    if base not in _KNOWN_TYPES:
        raise SchemaError(f"parse_schema: unknown type {base!r} in {schema!r}")
    default_text = m.group("default")
    return Argument(
        name=m.group("name"), type=type_text,
        default=_parse_default(default_text) if default_text is not None else None,
        has_default=default_text is not None, kwarg_only=kwarg_only,
        alias_set=alias_set, is_write=is_write,
    )


def _parse_returns(text: str, schema: str) -> tuple[Return, ...]:
    text = text.strip()
    if text.startswith("(") and text.endswith(")"):
        items = _split_top(text[1:-1])
    else:
        items = [text]
    out = []
    for item in items:
        if not item:
            continue
        pieces = item.split()
        type_text, alias_set, is_write = _alias(pieces[0])
        if type_text.rstrip("?").split("[")[0] not in _KNOWN_TYPES:
            raise SchemaError(f"parse_schema: unknown return type {pieces[0]!r} in {schema!r}")
        out.append(Return(type_text, pieces[1] if len(pieces) > 1 else None, alias_set, is_write))
    return tuple(out)


def parse_schema(text: str, default_namespace: str = "aten") -> OpSchema:
    """Parse ``"ns::name.overload(args) -> returns"``; SchemaError on malformed text.

    Example:
        >>> s = parse_schema("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
        >>> s.qualname, [a.name for a in s.arguments]
        ('aten::add.Tensor', ['self', 'other', 'alpha'])
    """
    head, arrow, rets = text.partition("->")
    if not arrow or "(" not in head or not head.rstrip().endswith(")"):
        raise SchemaError(f"parse_schema: expected 'name(args) -> returns'; got {text!r}")
    fullname, _, args_text = head.strip()[:-1].partition("(")
    namespace, _, name = fullname.strip().rpartition("::")
    name, _, overload = name.partition(".")
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise SchemaError(f"parse_schema: invalid operator name {name!r} in {text!r}")
    args, kwarg_only = [], False
    for piece in _split_top(args_text):
        if piece == "*":
            kwarg_only = True
            continue
        args.append(_parse_argument(piece, kwarg_only, text))
    return OpSchema(namespace or default_namespace, name, overload, tuple(args),
                    _parse_returns(rets, text), text.strip())
