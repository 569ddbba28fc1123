"""The store's JSON codec: orjson where it can, the standard library's answer where orjson refuses."""

from __future__ import annotations

import json
import math

import pytest
from sqlalchemy.orm import Session

from federation import jsoncodec
from federation.store import objects

from .factories import make_configmap


@pytest.mark.parametrize(
    "value",
    [
        {"a": 1, "b": [1.5, "ü", None, True], "c": {"d": {}}},
        {"big": 2**63 - 1, "small": -(2**63)},
        {"beyond64": 2**70},  # orjson refuses it; json writes it
        {1: "int key"},  # orjson refuses non-str keys; json turns them into strings
    ],
)
def test_dumps_says_what_the_standard_library_says(value: object) -> None:
    assert json.loads(jsoncodec.dumps(value)) == json.loads(json.dumps(value))
    # The bytes form (an HTTP body) is the same document, UTF-8 encoded.
    assert json.loads(jsoncodec.dumps_bytes(value).decode("utf-8")) == json.loads(json.dumps(value))


def test_loads_reads_what_the_standard_library_reads() -> None:
    assert jsoncodec.loads('{"a": [1, 2.5, "x"]}') == {"a": [1, 2.5, "x"]}
    assert jsoncodec.loads(b'{"n": 18446744073709551616}') == {"n": 2**64}
    assert math.isnan(jsoncodec.loads('{"v": NaN}')["v"])


def test_a_manifest_round_trips_through_the_database(session: Session) -> None:
    data = {"text": "héllo ✓", "big": str(2**70), "nested": {"list": [1, 2.25, None, False]}}
    objects(session, "v1", "ConfigMap").create(make_configmap(data=data))
    session.flush()
    session.expire_all()  # read back from the database, not the identity map
    stored = objects(session, "v1", "ConfigMap").get("default", "config")
    assert stored is not None and stored["data"] == {"key": "value", **data}


def test_kept_is_the_same_bytes() -> None:
    encoded = jsoncodec.dumps_bytes({"a": [1, "x"]})
    assert jsoncodec.kept(encoded) == encoded == b'{"a":[1,"x"]}'


def test_canonical_is_the_standard_librarys_sorted_compact_form() -> None:
    for value in ({"b": 1, "a": [2.5, None]}, {"big": 2**70}, {"text": "héllo"}, [1e-05, 2.5e-07, 1e16]):
        assert jsoncodec.canonical(value) == json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def test_compact_is_the_standard_librarys_compact_form_in_key_order() -> None:
    values = ({"b": 1, "a": [2.5, None]}, {"big": 2**70}, {"text": "héllo"}, [1e-05, 2.5e-07, 1e16], {1: "x"})
    for value in values:
        assert jsoncodec.compact(value) == json.dumps(value, separators=(",", ":"))
