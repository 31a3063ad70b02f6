"""The ZIP container of PyTorch checkpoints: a writer with 64-byte aligned records and a reader
that trusts nothing.

NOTE [Aligned stored records]
PyTorch writes an uncompressed ("stored") ZIP whose every record payload starts on a 64-byte
boundary, so a loader may mmap the file and use records in place. The writer pads the local
header's extra field (id ``FB``, as PyTorch's writer) to reach the boundary, and switches to
ZIP64 fields only when a size or offset no longer fits in 32 bits.

NOTE [A reader that trusts nothing]
Every size and offset read from the file (end record, ZIP64 records, central directory, local
headers) is checked against the real file size before anything is read or allocated, so a lying
header can neither read out of range nor ask for a huge buffer. Member names are validated
(no absolute paths, no ``..``, no backslashes or NULs, no duplicates).
"""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass

from ember.serialization._common import CheckpointError

__all__ = ["ZipWriter", "ZipReader", "is_zipfile", "ALIGNMENT"]

ALIGNMENT = 64
_LOCAL = struct.Struct("<4sHHHHHIIIHH")          # 30 bytes
_CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")  # 46 bytes
_EOCD = struct.Struct("<4sHHHHIIH")              # 22 bytes
_EOCD64 = struct.Struct("<4sQHHIIQQQQ")          # 56 bytes
_LOC64 = struct.Struct("<4sIQI")                 # 20 bytes
_U32 = 0xFFFFFFFF
_U16 = 0xFFFF
ZIP64_LIMIT = _U32  # sizes/offsets from here on go into ZIP64 fields (tests lower it)
_FLAG_UTF8 = 0x800
_MAX_DEFLATE_RATIO = 1100  # deflate cannot expand more than ~1032x


def is_zipfile(head: bytes) -> bool:
    """PyTorch's rule: a checkpoint is a zip iff it starts with a local file header."""
    return head[:4] == b"PK\x03\x04"


class ZipWriter:
    """Writes stored records to a binary file object, each payload 64-byte aligned."""

    def __init__(self, f):
        self._f = f
        self._pos = 0
        self._entries: list[tuple[bytes, int, int, int]] = []  # name, crc, size, offset

    def _write(self, data) -> None:
        self._f.write(data)
        self._pos += len(memoryview(data).cast("B"))

    def write_record(self, name: str, data) -> None:
        """Append record ``name`` holding the bytes of ``data`` (any buffer)."""
        view = memoryview(data).cast("B")
        size, offset = len(view), self._pos
        crc = zlib.crc32(view)
        bname = name.encode("utf-8")
        zip64 = size >= ZIP64_LIMIT or offset >= ZIP64_LIMIT
        extra = struct.pack("<HHQQ", 1, 16, size, size) if zip64 else b""
        start = offset + _LOCAL.size + len(bname) + len(extra) + 4
        pad = (-start) % ALIGNMENT
        extra += struct.pack("<HH", 0x4246, pad) + b"Z" * pad
        s32 = _U32 if zip64 else size
        self._write(_LOCAL.pack(b"PK\x03\x04", 45 if zip64 else 20, _FLAG_UTF8, 0, 0, 0x21,
                                crc, s32, s32, len(bname), len(extra)))
        self._write(bname)
        self._write(extra)
        self._write(view)
        self._entries.append((bname, crc, size, offset))

    def close(self) -> None:
        """Write the central directory and the end records."""
        cd_start = self._pos
        for bname, crc, size, offset in self._entries:
            big_size, big_offset = size >= ZIP64_LIMIT, offset >= ZIP64_LIMIT
            fields = [size, size] if big_size else []
            fields += [offset] if big_offset else []
            extra = struct.pack(f"<HH{len(fields)}Q", 1, 8 * len(fields), *fields) \
                if fields else b""
            s32 = _U32 if big_size else size
            self._write(_CENTRAL.pack(
                b"PK\x01\x02", 45, 45 if fields else 20, _FLAG_UTF8, 0, 0, 0x21, crc, s32, s32,
                len(bname), len(extra), 0, 0, 0, 0, _U32 if big_offset else offset))
            self._write(bname)
            self._write(extra)
        cd_size, count = self._pos - cd_start, len(self._entries)
        zip64 = cd_start >= ZIP64_LIMIT or cd_size >= ZIP64_LIMIT or count >= _U16
        if zip64:
            eocd64 = self._pos
            self._write(_EOCD64.pack(b"PK\x06\x06", 44, 45, 45, 0, 0, count, count, cd_size,
                                     cd_start))
            self._write(_LOC64.pack(b"PK\x06\x07", 0, eocd64, 1))
        n16 = _U16 if zip64 else count
        self._write(_EOCD.pack(b"PK\x05\x06", 0, 0, n16, n16, _U32 if zip64 else cd_size,
                               _U32 if zip64 else cd_start, 0))


@dataclass(frozen=True)
class Member:
    """One validated record: where its payload starts and how long it is."""

    name: str
    data_offset: int
    compressed_size: int
    size: int
    method: int
    crc: int


def _bad(what: str) -> CheckpointError:
    return CheckpointError(f"load: not a valid checkpoint archive: {what}")


class ZipReader:
    """Reads a ZIP archive from a seekable binary file object, validating every field.

    Raises:
        CheckpointError: the archive is truncated, corrupted, uses unsupported features, or
            has unsafe member names.
    """

    def __init__(self, f):
        self._f = f
        f.seek(0, os.SEEK_END)
        self.file_size = f.tell()
        self.members: dict[str, Member] = {}
        self._read_directory()

    # -- low-level reads, always inside the file ---------------------------------------------
    def _read_at(self, offset: int, n: int) -> bytes:
        if offset < 0 or n < 0 or offset + n > self.file_size:
            raise _bad(f"a record points outside the file (offset {offset}, {n} bytes, file "
                       f"is {self.file_size} bytes)")
        self._f.seek(offset)
        data = self._f.read(n)
        if len(data) != n:
            raise _bad("the file is truncated")
        return data

    def _find_eocd(self) -> int:
        tail_len = min(self.file_size, _EOCD.size + _U16)
        tail = self._read_at(self.file_size - tail_len, tail_len)
        pos = tail.rfind(b"PK\x05\x06")
        while pos >= 0:
            (comment_len,) = struct.unpack_from("<H", tail, pos + 20) \
                if pos + _EOCD.size <= len(tail) else (None,)
            if comment_len is not None and pos + _EOCD.size + comment_len == len(tail):
                return self.file_size - tail_len + pos
            pos = tail.rfind(b"PK\x05\x06", 0, pos)
        raise _bad("no end of central directory record (truncated file?)")

    def _read_directory(self) -> None:
        eocd = self._find_eocd()
        _, disk, _, _, count, cd_size, cd_off, _ = _EOCD.unpack(self._read_at(eocd, _EOCD.size))
        limit = eocd
        if count == _U16 or cd_size == _U32 or cd_off == _U32:
            count, cd_size, cd_off, limit = self._read_zip64_end(eocd)
        elif disk != 0:
            raise _bad("multi-disk archives are not supported")
        if cd_off + cd_size > limit or count * _CENTRAL.size > cd_size:
            raise _bad(f"central directory of {count} entries at {cd_off}+{cd_size} does not "
                       f"fit before offset {limit}")
        cd = self._read_at(cd_off, cd_size)
        pos = 0
        for _ in range(count):
            pos = self._read_central_entry(cd, pos, cd_off)

    def _read_zip64_end(self, eocd: int) -> tuple[int, int, int, int]:
        loc = eocd - _LOC64.size
        sig, _, eocd64, _ = _LOC64.unpack(self._read_at(loc, _LOC64.size))
        if sig != b"PK\x06\x07" or eocd64 + _EOCD64.size > loc:
            raise _bad("bad ZIP64 end of central directory locator")
        rec = _EOCD64.unpack(self._read_at(eocd64, _EOCD64.size))
        if rec[0] != b"PK\x06\x06":
            raise _bad("bad ZIP64 end of central directory record")
        return rec[7], rec[8], rec[9], eocd64

    def _read_central_entry(self, cd: bytes, pos: int, cd_off: int) -> int:
        if pos + _CENTRAL.size > len(cd):
            raise _bad("central directory is truncated")
        (sig, _, _, flags, method, _, _, crc, csize, size, nlen, elen, clen, _, _, _,
         offset) = _CENTRAL.unpack_from(cd, pos)
        end = pos + _CENTRAL.size + nlen + elen + clen
        if sig != b"PK\x01\x02" or end > len(cd):
            raise _bad("corrupted central directory entry")
        raw_name = cd[pos + _CENTRAL.size: pos + _CENTRAL.size + nlen]
        extra = cd[pos + _CENTRAL.size + nlen: pos + _CENTRAL.size + nlen + elen]
        size, csize, offset = _apply_zip64(extra, size, csize, offset)
        name = _decode_name(raw_name, flags)
        if flags & 0x1:
            raise _bad(f"record {name!r} is encrypted")
        if method not in (0, 8):
            raise _bad(f"record {name!r} uses compression method {method}; expected stored (0) "
                       "or deflate (8)")
        if method == 0 and csize != size:
            raise _bad(f"stored record {name!r} has compressed size {csize} != size {size}")
        if method == 8 and size > csize * _MAX_DEFLATE_RATIO + 1024:
            raise _bad(f"deflated record {name!r} claims an impossible size {size}")
        data_offset = self._local_data_offset(offset, name)
        if data_offset + csize > cd_off:
            raise _bad(f"record {name!r} ({csize} bytes at {data_offset}) overlaps the central "
                       "directory or runs past the end of the file")
        if name in self.members:
            raise _bad(f"duplicate record name {name!r}")
        self.members[name] = Member(name, data_offset, csize, size, method, crc)
        return end

    def _local_data_offset(self, offset: int, name: str) -> int:
        sig, *_, nlen, elen = _LOCAL.unpack(self._read_at(offset, _LOCAL.size))
        if sig != b"PK\x03\x04":
            raise _bad(f"record {name!r} has no local header at offset {offset}")
        return offset + _LOCAL.size + nlen + elen

    # -- public ------------------------------------------------------------------------------
    def get(self, name: str) -> Member:
        m = self.members.get(name)
        if m is None:
            raise CheckpointError(f"load: the checkpoint has no record {name!r}")
        return m

    def read(self, name: str, *, verify: bool = True) -> bytes:
        """The payload of record ``name`` (decompressed; CRC-checked)."""
        m = self.get(name)
        data = self._read_at(m.data_offset, m.compressed_size)
        if m.method == 8:
            data = _inflate(data, m)
        if verify and zlib.crc32(data) != m.crc:
            raise _bad(f"record {name!r} fails its CRC check (corrupted data)")
        return data

    def readinto(self, name: str, buf) -> None:
        """Fill ``buf`` (a writable buffer of exactly the record's size) with record ``name``."""
        m = self.get(name)
        view = memoryview(buf).cast("B")
        if len(view) != m.size:
            raise CheckpointError(f"load: record {name!r} holds {m.size} bytes; expected "
                                  f"{len(view)}")
        if m.method == 8:
            view[:] = self.read(name)
            return
        self._f.seek(m.data_offset)  # in range: checked when the directory was read
        got = self._f.readinto(view)
        if got != m.size:
            raise _bad("the file is truncated")
        if zlib.crc32(view) != m.crc:
            raise _bad(f"record {name!r} fails its CRC check (corrupted data)")


def _apply_zip64(extra: bytes, size: int, csize: int, offset: int) -> tuple[int, int, int]:
    pos = 0
    while pos + 4 <= len(extra):
        hid, hlen = struct.unpack_from("<HH", extra, pos)
        body = extra[pos + 4: pos + 4 + hlen]
        if hid == 1:
            vals = [v for (v,) in struct.iter_unpack("<Q", body[: len(body) // 8 * 8])]
            if size == _U32 and vals:
                size = vals.pop(0)
            if csize == _U32 and vals:
                csize = vals.pop(0)
            if offset == _U32 and vals:
                offset = vals.pop(0)
        pos += 4 + hlen
    return size, csize, offset


def _decode_name(raw: bytes, flags: int) -> str:
    try:
        name = raw.decode("utf-8" if flags & _FLAG_UTF8 else "cp437")
    except UnicodeDecodeError:
        raise _bad(f"record name {raw!r} is not valid UTF-8") from None
    parts = name.split("/")
    if (not name or name.startswith("/") or "\\" in name or "\0" in name or ".." in parts
            or (len(name) > 1 and name[1] == ":")):
        raise _bad(f"unsafe record name {name!r} (absolute path or path traversal)")
    return name


def _inflate(data: bytes, m: Member) -> bytes:
    d = zlib.decompressobj(-15)
    try:
        out = d.decompress(data, m.size + 1)
    except zlib.error as e:
        raise _bad(f"record {m.name!r} cannot be inflated ({e})") from None
    if len(out) != m.size:
        raise _bad(f"record {m.name!r} inflates to {len(out)} bytes; expected {m.size}")
    return out
