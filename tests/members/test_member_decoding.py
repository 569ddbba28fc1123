"""Member response bodies are decoded by orjson, and what it refuses by the standard library, as before."""

from __future__ import annotations

import math

from federation.members.client import _decoded


def test_a_body_orjson_reads_and_one_only_the_standard_library_reads_decode_alike() -> None:
    assert _decoded(b'{"items": [{"metadata": {"name": "a"}, "spec": {"replicas": 3}}]}') == {
        "items": [{"metadata": {"name": "a"}, "spec": {"replicas": 3}}]
    }
    odd = _decoded(b'{"ratio": NaN, "big": 123456789012345678901234567890}')
    assert math.isnan(odd["ratio"]) and odd["big"] == 123456789012345678901234567890
