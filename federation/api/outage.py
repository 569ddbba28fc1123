"""Database outages as the API answers and logs them.

Invariants:
- An error means "the database is unavailable" when SQLAlchemy could not get or keep a connection, or the
  server refused the work: ``OperationalError`` and ``InterfaceError`` (what DBAPIs raise for a refused,
  dropped or terminated connection, a server shutting down, SQLite's locked or unopenable file), any
  ``DBAPIError`` that invalidated its connection, and the pool's ``TimeoutError`` (no connection free).
  Every such request is answered 503 ServiceUnavailable with ``Retry-After``: retrying later is right.
- One outage is two log lines, whatever the number of requests: one when the first failure is seen (with
  the cause, no traceback) and one when the database answers again (how long, how many 503s). A request
  marks the database as answering only after a round trip that succeeded (``recovered``).
- Thread-safe: routes run on the event loop and in a thread pool.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from federation.api.status import StatusError, unavailable

log = logging.getLogger(__name__)

# kube-apiserver asks clients to retry overload after 1 s; a database outage lasts longer than a burst.
RETRY_AFTER_SECONDS = 5


def is_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` says the database cannot be reached or used right now (see the module docstring)."""
    if isinstance(exc, PoolTimeoutError | OperationalError | InterfaceError):
        return True
    return isinstance(exc, DBAPIError) and exc.connection_invalidated


def describe(exc: BaseException) -> str:
    """The cause in one line: the DBAPI's own first line, without SQLAlchemy's SQL and background link."""
    cause = getattr(exc, "orig", None) or exc
    lines = str(cause).strip().splitlines()
    return f"{type(cause).__name__}: {lines[0] if lines else ''}".rstrip(": ")


class DatabaseOutage:
    """Whether the database is answering, as the API last saw it; logs each change once."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._refused = 0

    @property
    def down(self) -> bool:
        return self._down_since is not None

    def failed(self, cause: str) -> StatusError:
        """Record a request the database failed; the 503 to answer it with."""
        with self._lock:
            if self._down_since is None:
                self._down_since = self._clock()
                self._refused = 0
                log.error("database unavailable, answering 503 until it is back: %s", cause)
            self._refused += 1
        return unavailable(
            "the database is unavailable; retry later (the server log has the cause)", RETRY_AFTER_SECONDS
        )

    def recovered(self) -> None:
        """Record a database round trip that succeeded (cheap while the database is up)."""
        if self._down_since is None:  # the common case, read without the lock: a stale read only delays
            return
        with self._lock:
            if self._down_since is None:
                return
            lasted = self._clock() - self._down_since
            log.warning(
                "database available again after %.1f s (%d request(s) answered 503)", lasted, self._refused
            )
            self._down_since = None
