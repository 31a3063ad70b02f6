"""``ember.ops.<namespace>.<name>``: operator packets looked up in the dispatcher's registry."""

from __future__ import annotations

from ember.dispatch import dispatcher

__all__ = ["OpNamespace", "OpPacket", "namespace_getattr"]


class OpPacket:
    """All overloads of one operator name; calling it calls the first overload."""

    def __init__(self, namespace: str, name: str):
        self._namespace, self._name = namespace, name

    def _overloads(self):
        ops = dispatcher.overloads(self._namespace, self._name)
        if not ops:
            raise AttributeError(f"'_OpNamespace' '{self._namespace}' object has no attribute "
                                 f"'{self._name}'")
        return ops

    def __getattr__(self, overload: str):
        for op in self._overloads():
            if op.overload == overload:
                return op
        raise AttributeError(f"operator {self._namespace}::{self._name} has no overload "
                             f"{overload!r}")

    def overloads(self) -> list[str]:
        return [op.overload for op in self._overloads()]

    def __call__(self, *args, **kwargs):
        return self._overloads()[0](*args, **kwargs)

    def __repr__(self) -> str:
        return f"<OpPacket {self._namespace}.{self._name}>"


class OpNamespace:
    """``ember.ops.<namespace>``: attribute access yields operator packets."""

    def __init__(self, namespace: str):
        self._namespace = namespace

    def __getattr__(self, name: str) -> OpPacket:
        if name.startswith("__"):
            raise AttributeError(name)
        packet = OpPacket(self._namespace, name)
        packet._overloads()
        return packet


def namespace_getattr(name: str) -> OpNamespace:
    if name.startswith("__"):
        raise AttributeError(name)
    return OpNamespace(name)
