"""Starting, driving and stopping one ``limitlab serve`` process."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sysconfig
import tempfile
import time
from typing import IO, TYPE_CHECKING, Any, List, Optional, Sequence, Tuple

from ._resp import Connection, Reply

if TYPE_CHECKING:  # pragma: no cover
    import redis


class LimitlabError(Exception):
    """The server could not be found, started or driven; the message carries its log."""


# The lines of the server's log kept in messages and failure reports.
_LOG_TAIL = 64 * 1024


def find_binary() -> str:
    """The ``limitlab`` executable: ``$LIMITLAB_BIN``, else the one installed beside this Python
    (the scripts directory of its environment, where the wheel puts it, also when that directory is
    not on ``PATH``), else ``limitlab`` on ``PATH``."""
    env = os.environ.get("LIMITLAB_BIN")
    if env:
        return env
    exe = "limitlab.exe" if os.name == "nt" else "limitlab"
    schemes = [None, f"{os.name}_user"]
    for scheme in schemes:
        try:
            scripts = sysconfig.get_path("scripts", scheme) if scheme else sysconfig.get_path("scripts")
        except KeyError:
            continue
        candidate = os.path.join(scripts, exe)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("limitlab")
    if found:
        return found
    raise LimitlabError(
        "the limitlab binary was not found: install the wheel (pip install limitlab), "
        "put limitlab on PATH, or set LIMITLAB_BIN"
    )


class Clock:
    """The server's virtual clock (shared by every node of a cluster), and, when the server was
    started with ``process_clock=True``, this process's clock too (through time-machine), so that a
    library passing ``time.time()`` into its script sees the same time as the server."""

    def __init__(self, server: "Server") -> None:
        self._server = server
        self._traveller: Any = None
        self._coordinates: Any = None

    def now(self) -> int:
        """The server's time in unix milliseconds (``CLOCK.GET``)."""
        reply = self._server.command("CLOCK.GET")
        assert isinstance(reply, int), reply
        return reply

    def advance(self, ms: int) -> int:
        """Moves the server's clock (and the process's, when it follows) forward by ``ms``
        milliseconds; keys whose deadline is passed expire. Returns the server's new time."""
        self._server.command("CLOCK.ADVANCE", int(ms))
        if self._coordinates is not None:
            self._coordinates.shift(int(ms) / 1000.0)
        return self.now()

    def set(self, unix_ms: int) -> int:
        """Sets the server's clock (and the process's, when it follows) to ``unix_ms``."""
        self._server.command("CLOCK.SET", int(unix_ms))
        if self._coordinates is not None:
            self._coordinates.move_to(int(unix_ms) / 1000.0)
        return self.now()

    @property
    def follows_process(self) -> bool:
        """Whether this process's clock is moved with the server's."""
        return self._coordinates is not None

    def _start_process_clock(self, tick: bool) -> None:
        try:
            import time_machine
        except ImportError as e:
            raise LimitlabError(
                "process_clock=True moves this process's clock with time-machine, which is not "
                "installed: pip install 'limitlab[time]' (or time-machine)"
            ) from e
        self._traveller = time_machine.travel(self.now() / 1000.0, tick=tick)
        self._coordinates = self._traveller.start()

    def _stop_process_clock(self) -> None:
        if self._traveller is not None:
            self._traveller.stop()
            self._traveller = None
            self._coordinates = None


class Server:
    """A running ``limitlab serve``. Start one with :meth:`Server.start` (or the pytest fixtures);
    use it as a context manager or call :meth:`stop`.

    Attributes: ``host``, ``port`` (the first node's), ``ports`` (every node's), ``url``
    (``redis://host:port``), ``urls``, ``cluster`` (the number of masters, or ``None``),
    ``clock_mode`` (``"virtual"`` or ``"wall"``), ``clock`` (a :class:`Clock`), ``pid``, ``args``.
    """

    host: str
    port: int
    ports: List[int]
    cluster: Optional[int]
    clock_mode: str
    clock: Clock
    args: List[str]

    def __init__(self) -> None:  # use Server.start
        self._proc: Optional["subprocess.Popen[bytes]"] = None
        self._log: Optional[IO[bytes]] = None
        self._conns: List[Connection] = []
        self.password: Optional[str] = None

    @classmethod
    def start(
        cls,
        *,
        cluster: Optional[int] = None,
        clock: str = "virtual",
        at: Optional[int] = None,
        process_clock: bool = False,
        requirepass: Optional[str] = None,
        extra_args: Sequence[str] = (),
        binary: Optional[str] = None,
        startup_timeout: float = 30.0,
    ) -> "Server":
        """Starts ``limitlab serve --port 0`` and waits for its first line (``listening on ...``).

        ``cluster=3`` answers as a three-master Redis Cluster; ``clock="wall"`` follows the
        machine's clock (``advance`` then jumps it); ``at`` is the virtual start in unix ms;
        ``process_clock=True`` moves this process's clock with the server's (time-machine: frozen
        on the virtual clock, ticking on the wall clock). The server exits by itself when this
        process dies, however it dies (``--exit-with-stdin``: its stdin is a pipe from here).
        """
        if clock not in ("virtual", "wall"):
            raise ValueError(f"clock must be 'virtual' or 'wall', not {clock!r}")
        self = cls()
        self.cluster = cluster
        self.clock_mode = clock
        self.password = requirepass
        self.args = [binary or find_binary(), "serve", "--port", "0", "--exit-with-stdin", "--clock", clock]
        if cluster is not None:
            self.args += ["--cluster", str(int(cluster))]
        if at is not None:
            self.args += ["--at", str(int(at))]
        if requirepass is not None:
            self.args += ["--requirepass", requirepass]
        self.args += list(extra_args)
        self._log = tempfile.TemporaryFile(prefix="limitlab-serve-", suffix=".log")
        try:
            self._proc = subprocess.Popen(
                self.args,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._log,
                close_fds=True,
            )
        except OSError as e:
            self._log.close()
            raise LimitlabError(f"cannot run {self.args[0]}: {e}") from e
        line = self._first_line(startup_timeout)
        addrs = line[len("listening on ") :].split()
        try:
            parsed = [_split_addr(a) for a in addrs]
        except ValueError:
            self._fail(f"no address in its first line {line!r}")
        if not parsed:
            self._fail(f"no address in its first line {line!r}")
        self.host = parsed[0][0]
        self.ports = [p for _, p in parsed]
        self.port = self.ports[0]
        self._conns = [Connection(h, p, requirepass) for h, p in parsed]
        self.clock = Clock(self)
        if process_clock:
            try:
                self.clock._start_process_clock(tick=clock == "wall")
            except BaseException:
                self.stop()
                raise
        return self

    def _first_line(self, timeout: float) -> str:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        os.set_blocking(fd, False)
        deadline = time.monotonic() + timeout
        buf = b""
        import selectors

        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    self._fail(f"no line within {timeout} s")
                if not sel.select(min(left, 0.2)):
                    if self._proc.poll() is not None:
                        self._fail(f"it exited with status {self._proc.returncode}")
                    continue
                chunk = os.read(fd, 4096)
                if not chunk:
                    self._proc.wait(timeout=5)
                    self._fail(f"it exited with status {self._proc.returncode}")
                buf += chunk
        os.set_blocking(fd, True)
        line = buf.split(b"\n", 1)[0].decode(errors="replace").strip()
        if not line.startswith("listening on "):
            self._fail(f"its first line is {line!r}")
        return line

    def _fail(self, why: str) -> "Any":
        log = self.log()
        self.stop()
        raise LimitlabError(f"limitlab serve did not start ({' '.join(self.args)}): {why}\nits log:\n{log}")

    # -- addresses -------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``redis://host:port`` of the first node (a cluster client discovers the others)."""
        return self.urls[0]

    @property
    def urls(self) -> List[str]:
        """One ``redis://`` URL per node (with the password when ``requirepass`` was given)."""
        auth = f":{self.password}@" if self.password is not None else ""
        return [f"redis://{auth}{self.host}:{p}" for p in self.ports]

    @property
    def startup_nodes(self) -> List[Tuple[str, int]]:
        """``(host, port)`` of every node."""
        return [(self.host, p) for p in self.ports]

    @property
    def pid(self) -> int:
        """The server's process id."""
        assert self._proc is not None
        return self._proc.pid

    # -- commands --------------------------------------------------------------------------------

    def command(self, *args: Any, node: int = 0) -> Reply:
        """Sends one command to one node (the first by default) and returns its RESP2 reply
        (``str`` for a status, ``int``, ``bytes``, ``None``, lists); an error reply raises
        :class:`limitlab._resp.ResponseError`. The server's own commands (``CLOCK.*``) and
        keyless ones work on any node."""
        if not self.running:
            raise LimitlabError(f"limitlab serve is not running (its log:\n{self.log()})")
        return self._conns[node].command(*args)

    def flush(self) -> None:
        """``FLUSHALL`` on every node: every key gone (the clock is left where it is)."""
        for i in range(len(self._conns)):
            self.command("FLUSHALL", node=i)

    def redis(self, **kwargs: Any) -> "redis.Redis":
        """A redis-py client for this server (``redis.cluster.RedisCluster`` for a cluster);
        needs redis-py (``pip install 'limitlab[redis]'``). Keyword arguments go to the client."""
        try:
            import redis as redis_py
        except ImportError as e:
            raise LimitlabError("Server.redis() needs redis-py: pip install 'limitlab[redis]'") from e
        if self.password is not None:
            kwargs.setdefault("password", self.password)
        if self.cluster is not None:
            from redis.cluster import RedisCluster

            return RedisCluster(host=self.host, port=self.port, **kwargs)  # type: ignore[return-value]
        return redis_py.Redis(host=self.host, port=self.port, **kwargs)

    # -- life ------------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether the process is still running."""
        return self._proc is not None and self._proc.poll() is None

    def log(self) -> str:
        """What the server wrote to stderr (its last 64 KiB)."""
        if self._log is None or self._log.closed:
            return ""
        fd = self._log.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - _LOG_TAIL)
        # pread leaves the offset the server writes at alone (the file description is shared).
        return os.pread(fd, size - start, start).decode(errors="replace")

    def stop(self, timeout: float = 10.0) -> None:
        """Stops the server: closes its stdin (it exits by itself), then SIGTERM, then SIGKILL;
        and gives this process its own clock back. Calling it twice is harmless."""
        if hasattr(self, "clock"):
            self.clock._stop_process_clock()
        for c in self._conns:
            c.close()
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM if hasattr(signal, "SIGTERM") else signal.SIGINT)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        # The log stays readable for a failure report (a temporary file, already unlinked).

    def close_log(self) -> None:
        """Frees the log file (after :meth:`stop`, once nothing will read it)."""
        if self._log is not None:
            self._log.close()

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self.close_log()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        ports = getattr(self, "ports", [])
        return f"<limitlab.Server {state} ports={ports} clock={getattr(self, 'clock_mode', '?')}>"


def _split_addr(addr: str) -> Tuple[str, int]:
    host, _, port = addr.rpartition(":")
    if not host:
        raise ValueError(addr)
    return host.strip("[]"), int(port)


def start(**kwargs: Any) -> Server:
    """:meth:`Server.start` under a shorter name."""
    return Server.start(**kwargs)


__all__ = ["Clock", "LimitlabError", "Server", "find_binary", "start"]

