"""The pytest plugin (registered by the wheel through the ``pytest11`` entry point).

Fixtures:

- ``limitlab``: a server of the test's own (function scope), set by the ``limitlab`` marker:
  ``@pytest.mark.limitlab(cluster=3, clock="wall", at=UNIX_MS, process_clock=True,
  requirepass="pw", args=[...])``. Fresh keys, the clock at its start.
- ``limitlab_session``: one server for the whole session (``limitlab_cluster`` and
  ``limitlab_clock`` in the ini file set it); flushed before each test that uses it when
  ``limitlab_flush = true`` or the test is marked ``@pytest.mark.limitlab(flush=True)``.
- ``limitlab_factory``: ``limitlab_factory(**Server.start options)`` starts as many servers as a
  test wants, each stopped at its end.

Every server is stopped when its scope ends, and exits by itself if pytest is killed; the log of
each server a failing test used is attached to its report ("limitlab serve log" section).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, List

import pytest

from ._server import Server

_SERVERS = pytest.StashKey[List[Server]]()
_MARK_KEYS = {"cluster", "clock", "at", "process_clock", "requirepass", "args", "flush"}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("limitlab")
    group.addoption(
        "--limitlab-bin",
        default=None,
        help="the limitlab binary to run (default: $LIMITLAB_BIN, the wheel's, or PATH's)",
    )
    parser.addini("limitlab_cluster", "limitlab_session: masters of a cluster (empty: one node)", default="")
    parser.addini("limitlab_clock", "limitlab_session: 'virtual' (default) or 'wall'", default="virtual")
    parser.addini("limitlab_flush", "flush limitlab_session before each test using it", type="bool", default=False)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "limitlab(cluster=None, clock='virtual', at=None, process_clock=False, requirepass=None, args=(), "
        "flush=False): options of the limitlab fixture's server; flush=True empties limitlab_session first",
    )


def _record(item: pytest.Item, server: Server) -> None:
    servers = item.stash.setdefault(_SERVERS, [])
    if server not in servers:
        servers.append(server)


def _marker_options(request: pytest.FixtureRequest) -> Dict[str, Any]:
    opts: Dict[str, Any] = {}
    marker = request.node.get_closest_marker("limitlab")
    if marker is not None:
        if marker.args:
            raise pytest.UsageError("@pytest.mark.limitlab takes keyword arguments only")
        unknown = set(marker.kwargs) - _MARK_KEYS
        if unknown:
            raise pytest.UsageError(f"@pytest.mark.limitlab: unknown options {sorted(unknown)}")
        opts.update(marker.kwargs)
    return opts


def _start(config: pytest.Config, **opts: Any) -> Server:
    args = opts.pop("args", ())
    binary = opts.pop("binary", None) or config.getoption("limitlab_bin")
    return Server.start(extra_args=tuple(args), binary=binary, **opts)


@pytest.fixture
def limitlab(request: pytest.FixtureRequest) -> Iterator[Server]:
    """A ``limitlab serve`` of this test's own, configured by ``@pytest.mark.limitlab(...)``."""
    opts = _marker_options(request)
    opts.pop("flush", None)  # a fresh server is empty
    server = _start(request.config, **opts)
    _record(request.node, server)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def limitlab_session(pytestconfig: pytest.Config) -> Iterator[Server]:
    """One ``limitlab serve`` for the session (ini ``limitlab_cluster``, ``limitlab_clock``)."""
    cluster = str(pytestconfig.getini("limitlab_cluster")).strip()
    server = _start(
        pytestconfig,
        cluster=int(cluster) if cluster else None,
        clock=str(pytestconfig.getini("limitlab_clock")).strip() or "virtual",
    )
    try:
        yield server
    finally:
        server.stop()
        server.close_log()


@pytest.fixture(autouse=True)
def _limitlab_session_per_test(request: pytest.FixtureRequest) -> None:
    """Flushes the session server before a test that uses it, when asked, and ties its log to the
    test's report."""
    if "limitlab_session" not in request.fixturenames:
        return
    server: Server = request.getfixturevalue("limitlab_session")
    _record(request.node, server)
    flush = bool(request.config.getini("limitlab_flush"))
    marker = request.node.get_closest_marker("limitlab")
    if marker is not None and "flush" in marker.kwargs:
        flush = bool(marker.kwargs["flush"])
    if flush:
        server.flush()


@pytest.fixture
def limitlab_factory(request: pytest.FixtureRequest) -> Iterator[Callable[..., Server]]:
    """``limitlab_factory(cluster=..., clock=..., process_clock=..., ...)`` -> a started
    :class:`~limitlab.Server`, stopped at the end of the test."""
    started: List[Server] = []

    def make(**opts: Any) -> Server:
        server = _start(request.config, **opts)
        started.append(server)
        _record(request.node, server)
        return server

    try:
        yield make
    finally:
        for server in reversed(started):
            server.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    servers = item.stash.get(_SERVERS, [])
    if report.failed:
        for server in servers:
            log = server.log()
            ports = " ".join(str(p) for p in getattr(server, "ports", []))
            text = f"$ {' '.join(getattr(server, 'args', []))}\n{log if log else '(nothing on stderr)'}"
            report.sections.append((f"limitlab serve log (ports {ports})", text))
    if call.when == "teardown":
        for server in servers:
            if not server.running:
                server.close_log()
