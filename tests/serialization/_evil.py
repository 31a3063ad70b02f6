"""Classes whose construction, state or reduction has a side effect: touching a sentinel file.

Used by the malicious-pickle corpus; a payload that reaches any of these has run code."""

from __future__ import annotations

import os
import pathlib


class EvilNew:
    """``__new__`` touches the file (reached by NEWOBJ / NEWOBJ_EX / OBJ / INST)."""

    def __new__(cls, path, *args, **kwargs):
        pathlib.Path(path).touch()
        return object.__new__(cls)


class EvilSetstate:
    """``__setstate__`` touches the file (reached by BUILD)."""

    def __setstate__(self, state):
        pathlib.Path(state["path"]).touch()


class EvilReduce:
    """Pickles as a call to ``os.system`` (the classic ``__reduce__`` payload)."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch '{self.path}'",))
