"""``derive.manifest_hash``: orjson's bytes where they are the standard library's, the standard library's
elsewhere, so a Work's hash is the one every stored hash was made with, whatever the encoder."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from federation.store.derive import manifest_hash

# JSON as manifests hold it: any text (control characters, DEL, non-ASCII), integers past 64 bits, floats
# of every magnitude (finite: the API refuses NaN and the infinities).
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
JSON = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20,
)


def standard(manifests: Any) -> str:
    canonical = json.dumps(manifests, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def spec(manifests: Any) -> dict[str, Any]:
    return {"workload": {"manifests": manifests}}


@settings(max_examples=500)
@given(st.lists(JSON, max_size=3))
def test_the_hash_is_the_standard_librarys(manifests: list[Any]) -> None:
    assert manifest_hash(spec(manifests)) == standard(manifests)


def test_the_forms_where_the_encoders_differ_hash_as_the_standard_library_writes_them() -> None:
    for value in (1e-05, 2.5e-07, 1e16, -3.9e-08, 0.000015, "\x7f", "é", "日本", 2**64, {"b": 1, "a": 2}):
        manifests = [{"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": value}}]
        assert manifest_hash(spec(manifests)) == standard(manifests), value


def test_a_plain_deployment_hashes_as_before() -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}},
    }
    assert manifest_hash(spec([deployment])) == standard([deployment])
    assert manifest_hash({}) == standard([])
