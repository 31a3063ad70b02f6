"""L8: checkpoints in PyTorch's file format, safe to load by default.

Owns ``save``/``load`` (PyTorch's zip checkpoint both ways, its legacy format read-only), the
weights-only unpickler and its allowlist API, ``scan`` (a pickle security scanner, also
``python -m ember.serialization.scan``) and ``ember.serialization.safetensors``. It never
imports torch: see NOTE [Torch names without torch] in _common.py. It must not know
``ember.nn``/``ember.optim``: state_dicts are plain dicts of tensors here.

Whole models pickled by torch (``torch.save(model)``) load with ``weights_only=False``: each
torch class or function is read as ember's of the same path or name, e.g.
``torch.nn.modules.linear.Linear`` -> ``ember.nn.Linear``, ``torch.nn.modules.activation.
MultiheadAttention`` -> ``ember.nn.MultiheadAttention``, ``torch.nn.functional.relu`` ->
``ember.nn.functional.relu`` (the rules and the list: NOTE [Torch modules in whole-model
pickles] in _torch_modules.py). With ``weights_only=True`` a torch class loads once its ember
class is allowlisted (``safe_globals([ember.nn.Linear])``).
"""

from __future__ import annotations

import os

from ember.serialization import safetensors as safetensors
from ember.serialization._common import (
    CheckpointError,
    UnpicklingError,
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    safe_globals,
)
from ember.serialization._load import load_file as _load_file
from ember.serialization._save import save_file as _save_file
from ember.serialization._scanner import GlobalRef, PickleScan, ScanResult, scan

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals", "get_unsafe_globals_in_checkpoint", "scan", "ScanResult",
           "PickleScan", "GlobalRef", "CheckpointError", "UnpicklingError", "safetensors"]


def save(obj, f) -> None:
    """Save ``obj`` in PyTorch's zip checkpoint format (``torch.save``).

    Tensors keep dtype, shape, strides, storage offset and storage sharing; Parameters stay
    Parameters; dicts, OrderedDicts, lists, tuples, sets and Python scalars are pickled
    (protocol 2) as torch does, so ``torch.load(f, weights_only=True)`` reads the file. Saving
    a small view saves its whole storage. Python attributes set on tensors and backward hooks
    are not saved. When ``f`` is a path the write is atomic (a temporary file in the same
    directory, then a rename; NOTE [Atomic save] in _save.py).

    Args:
        obj: what to save.
        f: a path (str or os.PathLike) or a writable binary file object.

    Raises:
        RuntimeError: two tensors view one storage with different dtypes, or a meta storage.
        pickle.PicklingError: ``obj`` holds something that cannot be pickled.

    Example:
        >>> import ember, io, ember.serialization as es
        >>> buf = io.BytesIO(); es.save({"w": ember.ones(2)}, buf); _ = buf.seek(0)
        >>> es.load(buf)["w"]
        tensor([1., 1.])
    """
    _save_file(obj, f)


def load(f, map_location=None, weights_only: bool = True, mmap: bool = False):
    """Load a checkpoint written by ``ember.save`` or ``torch.save`` (zip or legacy format).

    With ``weights_only=True`` (the default) only tensors, Parameters, plain containers,
    Python scalars and allowlisted globals (``add_safe_globals``) can be rebuilt; anything
    else raises ``UnpicklingError`` before any object is constructed. ``weights_only=False``
    runs the stdlib unpickler: **unsafe**, it can execute arbitrary code from the file; use it
    only for checkpoints from a source you trust. A whole model saved by torch loads as
    ember's modules either way: torch's ``nn`` classes and functions are read as ember's
    (NOTE [Torch modules in whole-model pickles] in _torch_modules.py; under
    ``weights_only=True`` the ember classes must be allowlisted, e.g. ``safe_globals(
    [ember.nn.Linear])``).

    Args:
        f: a path or a readable binary file object.
        map_location: None (the saved location), a device or string ("cpu", "meta"), a dict
            mapping saved locations to new ones, or a callable ``(storage, location) ->
            storage | None``, as in ``torch.load``.
        weights_only: restrict unpickling to weights (default True).
        mmap: map a zip checkpoint's file (given as a path) instead of reading it; tensors
            are copy-on-write views of the file.

    Returns:
        The saved object, with ember tensors.

    Raises:
        UnpicklingError: a refused global/opcode or a malformed pickle.
        CheckpointError: a truncated, corrupted or inconsistent archive, or a dtype ember lacks.
        RuntimeError: ``mmap=True`` on a legacy-format file; a CUDA location without mapping.

    Example:
        >>> import ember, io, ember.serialization as es
        >>> buf = io.BytesIO(); es.save([ember.arange(3)], buf); _ = buf.seek(0)
        >>> es.load(buf, map_location="cpu")
        [tensor([0, 1, 2])]
    """
    if not isinstance(weights_only, bool):
        raise TypeError(f"load: weights_only must be a bool; got {weights_only!r}")
    return _load_file(f, map_location, weights_only, mmap)


def get_unsafe_globals_in_checkpoint(f: str | os.PathLike) -> list[str]:
    """The globals in checkpoint ``f`` that a weights-only load would refuse (nothing runs).

    Example:
        >>> import argparse, os, tempfile, ember.serialization as es
        >>> with tempfile.TemporaryDirectory() as d:
        ...     path = os.path.join(d, "ckpt.pt")
        ...     es.save({"args": argparse.Namespace(lr=0.5), "w": ember.ones(2)}, path)
        ...     print(es.get_unsafe_globals_in_checkpoint(path))
        ['argparse.Namespace']
    """
    return scan(f).unsafe_globals
