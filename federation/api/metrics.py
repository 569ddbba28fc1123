"""Prometheus metrics of the HTTP surface (requests by method/code, latency)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from fastapi import Request, Response
from prometheus_client import CollectorRegistry, Counter, Histogram


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

    async def middleware(
        self, request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        started = time.perf_counter()
        response = await call_next(request)
        self.latency.labels(request.method).observe(time.perf_counter() - started)
        self.requests.labels(request.method, str(response.status_code)).inc()
        return response
