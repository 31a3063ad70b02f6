"""``TCPStore``: the small key/value store ranks meet at (torch.distributed.TCPStore's API).

The master (``is_master=True``, rank 0 under ``init_process_group``) serves the keys from a
thread of its own process; every instance, the master's included, is a client on one socket.
A request is one pickled ``(command, args)`` frame and gets one frame back; ``get`` and ``wait``
block on the server until the keys exist or the timeout passes. The store knows nothing of
tensors or collectives.
"""

from __future__ import annotations

import errno
import pickle
import socket
import struct
import threading
import time
from collections.abc import Iterable
from datetime import timedelta

from ember.distributed.errors import DistNetworkError, DistStoreError

__all__ = ["Store", "TCPStore", "PrefixStore"]

_LEN = struct.Struct("!Q")
_INIT_KEY = "init/"


def _seconds(timeout) -> float:
    return timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)


def _as_bytes(value) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return str(value).encode()


def _send(sock: socket.socket, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_LEN.pack(len(data)) + data)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        part = sock.recv(min(n - got, 1 << 20))
        if not part:
            raise ConnectionResetError("connection closed by the peer")
        chunks.append(part)
        got += len(part)
    return b"".join(chunks)


def _recv(sock: socket.socket):
    (n,) = _LEN.unpack(_recv_exact(sock, _LEN.size))
    return pickle.loads(_recv_exact(sock, n))


class _Server:
    """The master's key/value table and its accept loop (one thread per client)."""

    def __init__(self, port: int):
        self.data: dict[str, bytes] = {}
        self.cond = threading.Condition()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind(("", port))
            self.sock.listen(128)
        except OSError as e:
            self.sock.close()
            name = errno.errorcode.get(e.errno, "?")
            raise DistNetworkError(
                "The server socket has failed to listen on any local network address. "
                f"port: {port}, useIpv6: false, code: -{e.errno}, name: {name}, "
                f"message: {e.strerror.lower() if e.strerror else e}") from None
        self.port = self.sock.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True, name="ember-store-accept").start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._serve, args=(conn,), daemon=True,
                             name="ember-store-client").start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            while True:
                try:
                    cmd, args = _recv(conn)
                except (OSError, EOFError, pickle.UnpicklingError):
                    return
                try:
                    reply = ("ok", getattr(self, "do_" + cmd)(*args))
                except _Timeout as e:
                    reply = ("timeout", str(e))
                except Exception as e:  # noqa: BLE001 - reported to the client
                    reply = ("error", f"{type(e).__name__}: {e}")
                try:
                    _send(conn, reply)
                except OSError:
                    return

    def _wait_keys(self, keys: list[str], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not all(k in self.data for k in keys):
            left = deadline - time.monotonic()
            if left <= 0:
                missing = ", ".join("/" + k for k in keys if k not in self.data)
                raise _Timeout(f"wait timeout after {int(timeout * 1000)}ms, keys: {missing}")
            self.cond.wait(left)

    def do_set(self, key: str, value: bytes) -> None:
        with self.cond:
            self.data[key] = value
            self.cond.notify_all()

    def do_get(self, key: str, timeout: float) -> bytes:
        with self.cond:
            self._wait_keys([key], timeout)
            return self.data[key]

    def do_multi_get(self, keys: list[str], timeout: float) -> list[bytes]:
        with self.cond:
            self._wait_keys(keys, timeout)
            return [self.data[k] for k in keys]

    def do_add(self, key: str, amount: int) -> int:
        with self.cond:
            value = int(self.data.get(key, b"0")) + amount
            self.data[key] = str(value).encode()
            self.cond.notify_all()
            return value

    def do_append(self, key: str, value: bytes) -> None:
        with self.cond:
            self.data[key] = self.data.get(key, b"") + value
            self.cond.notify_all()

    def do_compare_set(self, key: str, expected: bytes, desired: bytes) -> bytes:
        with self.cond:
            current = self.data.get(key)
            if current is None:
                if expected:
                    return expected
            elif current != expected:
                return current
            self.data[key] = desired
            self.cond.notify_all()
            return desired

    def do_wait(self, keys: list[str], timeout: float) -> None:
        with self.cond:
            self._wait_keys(keys, timeout)

    def do_check(self, keys: list[str]) -> bool:
        with self.cond:
            return all(k in self.data for k in keys)

    def do_delete_key(self, key: str) -> bool:
        with self.cond:
            return self.data.pop(key, None) is not None

    def do_num_keys(self) -> int:
        with self.cond:
            return len(self.data)

    def close(self) -> None:
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class _Timeout(Exception):
    pass


class Store:
    """Base of the key/value stores (``torch.distributed.Store``): the interface only."""

    def set(self, key: str, value) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def get(self, key: str) -> bytes:  # pragma: no cover - interface
        raise NotImplementedError


class TCPStore(Store):
    """A key/value store served over TCP by the master (``torch.distributed.TCPStore``).

    Args:
        host_name: address of the master (clients connect there; the master listens on all
            interfaces).
        port: the master's port; 0 lets the master pick a free one (read it from ``port``).
        world_size: number of clients expected; with ``wait_for_workers`` the master's
            constructor returns once all have connected.
        is_master: serve the keys from this process.
        timeout: default wait for ``get``/``wait`` and for connecting (``timedelta`` or
            seconds; torch's default is 300 s).
        wait_for_workers: see ``world_size``.

    Raises:
        DistNetworkError: the master cannot listen on ``port`` (already in use), or a client
            cannot reach the master within ``timeout``.
        DistStoreError: ``get``/``wait`` timed out (``wait timeout after ...ms, keys: /k``),
            or the master went away.

    Example:
        >>> from ember.distributed import TCPStore
        >>> s = TCPStore("127.0.0.1", 0, 1, True)
        >>> s.set("k", "v"); s.get("k"), s.add("n", 2), s.add("n", 3)
        (b'v', 2, 5)
    """

    def __init__(self, host_name: str, port: int, world_size: int | None = None,
                 is_master: bool = False, timeout=timedelta(seconds=300),
                 wait_for_workers: bool = True, multi_tenant: bool = False,
                 master_listen_fd: int | None = None, use_libuv: bool = True):
        self.host = host_name
        self._timeout = _seconds(timeout)
        self._server = _Server(port) if is_master else None
        self.port = self._server.port if self._server is not None else port
        self._lock = threading.Lock()
        self._sock = self._connect()
        self.libuvBackend = use_libuv
        self._call("add", _INIT_KEY, 1)
        if is_master and wait_for_workers and world_size:
            self._wait_count(_INIT_KEY, world_size)

    def _connect(self) -> socket.socket:
        deadline = time.monotonic() + self._timeout
        delay = 0.01
        while True:
            try:
                sock = socket.create_connection((self.host, self.port), timeout=self._timeout)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.settimeout(None)
                return sock
            except OSError as e:
                if time.monotonic() + delay > deadline:
                    raise DistNetworkError(
                        f"TCPStore: cannot connect to {self.host}:{self.port} within "
                        f"{self._timeout:g}s; got {e}\nhint: is the master (rank 0) running, "
                        "and are MASTER_ADDR/MASTER_PORT the same on every rank?") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.5)

    def _wait_count(self, key: str, n: int) -> None:
        deadline = time.monotonic() + self._timeout
        while int(self._call("get", key, self._timeout)) < n:
            if time.monotonic() > deadline:
                raise DistStoreError(f"TCPStore: timed out after {self._timeout:g}s waiting for "
                                     f"{n} workers to connect")
            time.sleep(0.01)

    def _call(self, cmd: str, *args):
        with self._lock:
            try:
                _send(self._sock, (cmd, args))
                reply = _recv(self._sock)
            except OSError as e:
                raise DistStoreError(f"TCPStore: the connection to the store at "
                                     f"{self.host}:{self.port} was lost ({e}); the master "
                                     "(rank 0) has probably exited") from None
        if reply[0] == "ok":
            return reply[1]
        raise DistStoreError(reply[1])

    @property
    def timeout(self) -> timedelta:
        """The default timeout of ``get``/``wait``."""
        return timedelta(seconds=self._timeout)

    def set_timeout(self, timeout) -> None:
        """Change the default timeout of ``get``/``wait``."""
        self._timeout = _seconds(timeout)

    def set(self, key: str, value) -> None:
        """Store ``value`` (``str`` or ``bytes``) under ``key``, replacing any old value."""
        self._call("set", key, _as_bytes(value))

    def get(self, key: str) -> bytes:
        """The value of ``key``, waiting up to the timeout for it to be set."""
        return self._call("get", key, self._timeout)

    def multi_get(self, keys: list[str]) -> list[bytes]:
        """The values of several keys, waiting for all of them."""
        return self._call("multi_get", list(keys), self._timeout)

    def multi_set(self, keys: list[str], values: list) -> None:
        """Set several keys."""
        for k, v in zip(keys, values):
            self.set(k, v)

    def add(self, key: str, amount: int) -> int:
        """Add ``amount`` to the integer at ``key`` (0 when unset); returns the new value."""
        return self._call("add", key, int(amount))

    def append(self, key: str, value) -> None:
        """Append bytes to ``key``'s value (create it when unset)."""
        self._call("append", key, _as_bytes(value))

    def compare_set(self, key: str, expected_value, desired_value) -> bytes:
        """Set ``key`` to ``desired_value`` if its value is ``expected_value`` (an empty
        expected value matches an unset key); returns the value the key then has, or
        ``expected_value`` when the key is unset and something else was expected (torch's
        rule)."""
        return self._call("compare_set", key, _as_bytes(expected_value),
                          _as_bytes(desired_value))

    def wait(self, keys: Iterable[str], timeout=None) -> None:
        """Block until every key in ``keys`` is set, or raise ``DistStoreError``."""
        t = self._timeout if timeout is None else _seconds(timeout)
        self._call("wait", list(keys), t)

    def check(self, keys: Iterable[str]) -> bool:
        """Whether every key in ``keys`` is set (does not wait)."""
        return self._call("check", list(keys))

    def delete_key(self, key: str) -> bool:
        """Remove ``key``; returns whether it existed."""
        return self._call("delete_key", key)

    def num_keys(self) -> int:
        """Number of keys set, the store's own bookkeeping key included (as torch's)."""
        return self._call("num_keys")

    def close(self) -> None:
        """Close this client, and the server if this instance is the master."""
        try:
            self._sock.close()
        finally:
            if self._server is not None:
                self._server.close()
                self._server = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class PrefixStore(Store):
    """A view of another store whose keys all get ``prefix + "/"`` in front
    (``torch.distributed.PrefixStore``)."""

    def __init__(self, prefix: str, store: Store):
        self.prefix = prefix
        self.underlying_store = store

    def _k(self, key: str) -> str:
        return f"{self.prefix}/{key}"

    def set(self, key: str, value) -> None:
        self.underlying_store.set(self._k(key), value)

    def get(self, key: str) -> bytes:
        return self.underlying_store.get(self._k(key))

    def add(self, key: str, amount: int) -> int:
        return self.underlying_store.add(self._k(key), amount)

    def compare_set(self, key: str, expected_value, desired_value) -> bytes:
        return self.underlying_store.compare_set(self._k(key), expected_value, desired_value)

    def wait(self, keys: Iterable[str], timeout=None) -> None:
        self.underlying_store.wait([self._k(k) for k in keys], timeout)

    def check(self, keys: Iterable[str]) -> bool:
        return self.underlying_store.check([self._k(k) for k in keys])

    def delete_key(self, key: str) -> bool:
        return self.underlying_store.delete_key(self._k(key))

    def multi_get(self, keys: list[str]) -> list[bytes]:
        return self.underlying_store.multi_get([self._k(k) for k in keys])

    def num_keys(self) -> int:
        return self.underlying_store.num_keys()

    @property
    def timeout(self) -> timedelta:
        return self.underlying_store.timeout
