"""Reading request bodies: JSON or a clear 400 BadRequest Status."""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request

from federation.api.status import bad_request


async def read_json(request: Request) -> Any:
    raw = await request.body()
    if not raw:
        raise bad_request("the request body is empty")
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise bad_request(f"the request body is not valid JSON: {exc}") from exc
