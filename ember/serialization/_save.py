"""``save``: PyTorch's zip checkpoint, written atomically when given a path.

Record order and contents follow ``torch.save`` (B8.1): ``data.pkl``, ``.format_version``,
``.storage_alignment``, ``byteorder``, ``data/<key>`` per storage, ``version``,
``.data/serialization_id``, all under ``<basename>/`` (``archive/`` for file objects).

NOTE [Atomic save]
Saving to a path writes a temporary file in the same directory, flushes and fsyncs it, then
``os.replace``s it over the target: readers see either the old checkpoint or the new one,
never a truncated mix. Any exception removes the temporary file.
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import tempfile

from ember.core.device import META
from ember.serialization._pickler import CheckpointPickler
from ember.serialization._zip import ZipWriter

__all__ = ["save_file"]


def _host_bytes(storage):
    """A storage's bytes in host memory (a device storage is copied to the CPU)."""
    if storage.device.type == "cpu" or not storage.nbytes():
        return storage.data
    from ember.core import dtype as dt
    from ember.tensor import make_tensor
    t = make_tensor(storage, (storage.nbytes(),), (1,), 0, dt.uint8, storage.device)
    return t.cpu().untyped_storage().data


def _write_archive(obj, f, root: str) -> None:
    buf = io.BytesIO()
    pickler = CheckpointPickler(buf)
    pickler.dump(obj)
    data_pkl = buf.getvalue()
    z = ZipWriter(f)
    z.write_record(f"{root}/data.pkl", data_pkl)
    z.write_record(f"{root}/.format_version", b"1")
    z.write_record(f"{root}/.storage_alignment", b"64")
    z.write_record(f"{root}/byteorder", sys.byteorder.encode())
    digest = hashlib.sha1(data_pkl)
    for key, storage in pickler.storages:
        data = _host_bytes(storage) if storage.device is not META else None
        if data is None:
            raise RuntimeError("save: cannot save the data of a meta storage")
        z.write_record(f"{root}/data/{key}", data)
        digest.update(key.encode() + b":" + str(storage.nbytes()).encode())
    z.write_record(f"{root}/version", b"3\n")
    serial = str(int.from_bytes(digest.digest(), "big"))[:40].rjust(40, "0")
    z.write_record(f"{root}/.data/serialization_id", serial.encode())
    z.close()


def _archive_name(path: str) -> str:
    base = os.path.splitext(os.path.basename(path))[0]
    return base if base and base not in (".", "..") and "\\" not in base else "archive"


def _default_mode(path: str) -> int:
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def save_file(obj, f) -> None:
    """Write ``obj`` to a path (atomically) or to a binary file object."""
    if not isinstance(f, str | os.PathLike):
        _write_archive(obj, f, "archive")
        return
    path = os.fspath(f)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                               dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            _write_archive(obj, fh, _archive_name(path))
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _default_mode(path))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
