"""A watch stream read in a background thread, so a test writes while events arrive and waits for them
with a deadline (never a bare sleep)."""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

Event = dict[str, Any]
DEADLINE_SECONDS = 20.0


class WatchReader:
    """GET ``path`` with ``params`` (``watch=1`` added) on its own connection; events go to a queue.

    It asks for bookmarks (the test servers send one every fraction of a second) so that ``close`` is
    noticed between two lines: a blocking read cannot be interrupted from another thread.
    """

    def __init__(
        self,
        running: Any,
        path: str,
        headers: dict[str, str] | None = None,
        token: str | None = None,
        **params: str,
    ) -> None:
        self._client = running.client(token)
        self._events: queue.Queue[Event | None] = queue.Queue()
        self.status_code: int | None = None
        self.content_type: str | None = None
        self.error: Exception | None = None
        self._opened = threading.Event()
        self._closing = threading.Event()
        params = {"watch": "1", "allowWatchBookmarks": "true", **params}
        self._thread = threading.Thread(target=self._read, args=(path, params, headers or {}), daemon=True)
        self._thread.start()
        assert self._opened.wait(DEADLINE_SECONDS), "the watch did not answer"

    def _read(self, path: str, params: dict[str, str], headers: dict[str, str]) -> None:
        try:
            with self._client.stream("GET", path, params=params, headers=headers) as response:
                self.status_code = response.status_code
                self.content_type = response.headers.get("content-type")
                self._opened.set()
                for line in response.iter_lines():
                    if self._closing.is_set():
                        break  # leaving the block closes the connection: the server sees the client go
                    if line:
                        self._events.put(json.loads(line))
        except Exception as exc:  # the test closed the connection under the reader
            self.error = exc
        finally:
            # An idle keep-alive TLS connection would hold the server's graceful shutdown: close it now.
            self._client.close()
            self._opened.set()
            self._events.put(None)  # the stream ended

    def next(self) -> Event | None:
        """The next event, or None when the stream ended."""
        return self._events.get(timeout=DEADLINE_SECONDS)

    def take(
        self, count: int, keep: Callable[[Event], bool] = lambda e: e["type"] != "BOOKMARK"
    ) -> list[Event]:
        """The next ``count`` events ``keep`` accepts (bookmarks skipped by default)."""
        taken: list[Event] = []
        deadline = time.monotonic() + DEADLINE_SECONDS
        while len(taken) < count:
            event = self._events.get(timeout=max(0.01, deadline - time.monotonic()))
            assert event is not None, f"the stream ended after {taken}"
            if keep(event):
                taken.append(event)
        return taken

    def rest(self) -> list[Event]:
        """Every event but bookmarks until the stream ends (the server ends it: timeoutSeconds, shutdown)."""
        found: list[Event] = []
        while (event := self.next()) is not None:
            if event["type"] != "BOOKMARK":
                found.append(event)
        return found

    def close(self) -> None:
        self._closing.set()
        self._thread.join(timeout=DEADLINE_SECONDS)
        assert not self._thread.is_alive(), "the watch reader did not stop"


def summary(events: list[Event]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"].get("name", "")) for e in events]


def wait_until(probe: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while not probe():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)
