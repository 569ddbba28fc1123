"""Prometheus metrics of the HTTP surface (requests by method/code, latency).

A plain ASGI middleware, not Starlette's ``BaseHTTPMiddleware``: that one runs every request through a task
group and memory streams (``call_next``), a cost paid by each of the 100 lease renewals a second that 1,000
pull agents send. The latency is the time to the response's start (its status line and headers), as
``call_next`` measured it; a watch's stream goes on after that.
"""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class RequestMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "federation_api_requests_total",
            "API requests by method and code",
            ["method", "code"],
            registry=registry,
        )
        self.latency = Histogram(
            "federation_api_request_duration_seconds", "API request latency", ["method"], registry=registry
        )

    def observe(self, method: str, code: int, seconds: float) -> None:
        self.latency.labels(method).observe(seconds)
        self.requests.labels(method, str(code)).inc()


class MetricsMiddleware:
    """Counts every HTTP request by method and status code and observes its latency (``RequestMetrics``)."""

    def __init__(self, app: ASGIApp, metrics: RequestMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        method = str(scope.get("method", ""))

        async def observed(message: Message) -> None:
            if message["type"] == "http.response.start":
                status: Any = message.get("status", 0)
                self.metrics.observe(method, int(status), time.perf_counter() - started)
            await send(message)

        await self.app(scope, receive, observed)
