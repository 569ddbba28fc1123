"""Where a JSON body is checked: on the event loop when it is small (a worker-thread round trip costs more
than the parse), in the thread pool when it is large enough to stall the loop."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from federation.api import bodies
from federation.api.status import StatusError


class _Request:
    """What ``read_json`` reads of a request: its body."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw

    async def body(self) -> bytes:
        return self.raw


@pytest.fixture
def pooled(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the bodies handed to the thread pool."""
    sizes: list[int] = []

    async def run_in_threadpool(function: Callable[[bytes], Any], raw: bytes) -> Any:
        sizes.append(len(raw))
        return function(raw)

    monkeypatch.setattr(bodies, "run_in_threadpool", run_in_threadpool)
    return sizes


def read(raw: bytes) -> Any:
    return asyncio.run(bodies.read_json(_Request(raw)))  # type: ignore[arg-type]


def test_a_small_body_is_parsed_on_the_loop(pooled: list[int]) -> None:
    document = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}}
    assert read(json.dumps(document).encode()) == document
    assert pooled == []


def test_a_small_bad_body_is_refused_on_the_loop(pooled: list[int]) -> None:
    with pytest.raises(StatusError) as refused:
        read(b'{"data": {"k": NaN}}')
    assert refused.value.code == 400 and "not valid JSON" in refused.value.message
    assert pooled == []


def test_a_large_body_is_parsed_in_the_pool(pooled: list[int]) -> None:
    document = {"data": {"k": "x" * bodies.INLINE_BODY_BYTES}}
    raw = json.dumps(document).encode()
    assert read(raw) == document
    assert pooled == [len(raw)]
