"""A minimal RESP2 client over the standard library, enough for the server's own commands
(``CLOCK.*``, ``FLUSHALL``, ``PING``): the package depends on no Redis client."""

from __future__ import annotations

import socket
from typing import List, Optional, Union

Reply = Union[None, int, bytes, str, List["Reply"]]


class ResponseError(Exception):
    """An error reply (``-ERR ...``) from the server."""


class Connection:
    """One connection to one node, opened on first use, reopened once if it was closed."""

    def __init__(self, host: str, port: int, password: Optional[str] = None, timeout: float = 30.0) -> None:
        self.host = host
        self.port = port
        self.password = password
        self.timeout = timeout
        self._sock: Optional[socket.socket] = None
        self._buf = b""

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None
                self._buf = b""

    def command(self, *args: Union[str, bytes, int]) -> Reply:
        """Sends one command and returns its reply; an error reply raises :class:`ResponseError`."""
        try:
            return self._round_trip(args)
        except (ConnectionError, BrokenPipeError, EOFError):
            # The server closed an idle connection (or it is a fresh process): one new attempt.
            self.close()
            return self._round_trip(args)

    def _round_trip(self, args: tuple) -> Reply:
        if self._sock is None:
            self._sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
            if self.password is not None:
                self._sock.sendall(_encode(("AUTH", self.password)))
                self._read()
        self._sock.sendall(_encode(args))
        return self._read()

    def _line(self) -> bytes:
        while b"\r\n" not in self._buf:
            self._fill()
        line, self._buf = self._buf.split(b"\r\n", 1)
        return line

    def _fill(self) -> None:
        assert self._sock is not None
        chunk = self._sock.recv(65536)
        if not chunk:
            raise EOFError("the server closed the connection")
        self._buf += chunk

    def _read(self) -> Reply:
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise ResponseError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self._buf) < n + 2:
                self._fill()
            data, self._buf = self._buf[:n], self._buf[n + 2 :]
            return data
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._read() for _ in range(n)]
        raise ResponseError(f"unexpected reply line {line!r}")


def _encode(args: tuple) -> bytes:
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(parts)
