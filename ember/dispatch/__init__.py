"""L3: dispatch keys, schemas, the dispatcher, Python dispatch modes and the library API."""

from ember.dispatch.dispatcher import (
    FALLTHROUGH,
    ExcludeKeys,
    IncludeKeys,
    Kernel,
    Operator,
    Tag,
    all_ops,
    define,
    get_op,
    redispatch,
    register_fallback,
)
from ember.dispatch.keys import AliasKey, DispatchKey
from ember.dispatch.modes import DispatchMode
from ember.dispatch.schema import OpSchema, parse_schema

__all__ = [
    "FALLTHROUGH", "AliasKey", "DispatchKey", "DispatchMode", "ExcludeKeys", "IncludeKeys",
    "Kernel", "OpSchema", "Operator", "Tag", "all_ops", "define", "get_op", "parse_schema",
    "redispatch", "register_fallback",
]
