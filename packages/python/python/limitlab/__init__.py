"""limitlab for Python: the ``limitlab`` binary (a Redis 7.0 emulator with a virtual clock, on
``PATH`` once the wheel is installed) and a handle on ``limitlab serve`` for tests.

>>> import limitlab
>>> with limitlab.start() as server:            # limitlab serve --port 0
...     client = server.redis()                   # redis-py, if installed
...     server.clock.advance(60_000)              # a minute passes, instantly

The pytest plugin (``limitlab.pytest_plugin``, registered through the ``pytest11`` entry point)
gives the fixtures ``limitlab``, ``limitlab_session`` and ``limitlab_factory``.
"""

from ._resp import ResponseError
from ._server import Clock, LimitlabError, Server, find_binary, start

__all__ = ["Clock", "LimitlabError", "ResponseError", "Server", "find_binary", "start"]
