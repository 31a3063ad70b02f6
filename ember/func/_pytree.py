"""Nested tuples, lists and dicts of leaves: flatten to a list and rebuild (a small pytree)."""

from __future__ import annotations

__all__ = ["tree_flatten", "tree_unflatten", "tree_map", "TreeSpec"]


class TreeSpec:
    """The structure of a flattened tree: a container kind with child specs, or a leaf."""

    __slots__ = ("kind", "context", "children")

    def __init__(self, kind, context=None, children=()):
        self.kind = kind
        self.context = context
        self.children = tuple(children)

    @property
    def num_leaves(self) -> int:
        """How many leaves the tree has."""
        return 1 if self.kind is None else sum(c.num_leaves for c in self.children)

    def __eq__(self, other) -> bool:
        return isinstance(other, TreeSpec) and (self.kind, self.context, self.children) == (
            other.kind, other.context, other.children)

    def __repr__(self) -> str:
        if self.kind is None:
            return "*"
        inner = ", ".join(map(repr, self.children))
        if self.kind is dict:
            return "{" + ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.context, self.children)) \
                + "}"
        return f"({inner},)" if self.kind is tuple else f"[{inner}]"


_LEAF = TreeSpec(None)


def tree_flatten(tree) -> tuple[list, TreeSpec]:
    """The leaves of ``tree`` in order, and its structure."""
    if isinstance(tree, tuple | list):
        kind = type(tree)
        leaves, specs = [], []
        for child in tree:
            sub, spec = tree_flatten(child)
            leaves += sub
            specs.append(spec)
        ctx = kind if hasattr(kind, "_fields") else None  # namedtuples keep their class
        return leaves, TreeSpec(tuple if kind is not list else list, ctx, specs)
    if isinstance(tree, dict):
        keys = list(tree)
        leaves, specs = [], []
        for k in keys:
            sub, spec = tree_flatten(tree[k])
            leaves += sub
            specs.append(spec)
        return leaves, TreeSpec(dict, tuple(keys), specs)
    return [tree], _LEAF


def tree_unflatten(leaves: list, spec: TreeSpec):
    """The tree of ``spec``'s structure holding ``leaves``."""
    it = iter(leaves)

    def build(s: TreeSpec):
        if s.kind is None:
            return next(it)
        items = [build(c) for c in s.children]
        if s.kind is dict:
            return dict(zip(s.context, items))
        if s.context is not None:
            return s.context(*items)
        return s.kind(items)

    return build(spec)


def tree_map(fn, tree):
    """``tree`` with ``fn`` applied to every leaf."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)
