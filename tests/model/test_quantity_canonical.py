"""Quantities print as kubectl prints them (Go's ``Quantity.String``): in the format they were written in."""

from __future__ import annotations

import pytest

from federation.model.quantity import canonical_quantity, parse_quantity, quantity_format
from federation.model.workload import resource_request_of


@pytest.mark.parametrize(
    ("written", "printed"),
    [
        ("128Mi", "128Mi"),
        ("1.5Gi", "1536Mi"),  # the largest binary suffix that keeps it whole
        ("1Gi", "1Gi"),
        ("1025Ki", "1025Ki"),
        ("0.5Ki", "512"),  # below 1024: decimal
        ("7981764Ki", "7981764Ki"),
        ("128M", "128M"),
        ("134217728", "134217728"),  # plain bytes stay plain, as kubectl keeps them
        ("2000", "2k"),
        ("1500", "1500"),
        ("0.5", "500m"),
        ("1.5", "1500m"),
        ("100m", "100m"),
        ("0.0001", "100u"),
        ("1e3", "1e3"),
        ("1500e2", "150e3"),
        ("0", "0"),
        ("0Mi", "0"),
        ("-1Gi", "-1Gi"),
        (2, "2"),
        (1.5, "1500m"),
    ],
)
def test_canonical_quantity_is_kubectls(written: str | int | float, printed: str) -> None:
    assert canonical_quantity(written) == printed
    assert parse_quantity(printed) == parse_quantity(written)  # printing never changes the amount


def test_formats_follow_the_suffix() -> None:
    assert [quantity_format(v) for v in ("1Ki", "1k", "1e3", "1", 1)] == [
        "BinarySI",
        "DecimalSI",
        "DecimalExponent",
        "DecimalSI",
        "DecimalSI",
    ]
    assert canonical_quantity("1073741824", "BinarySI") == "1Gi"


def pod_template(*containers: dict[str, str], init: dict[str, str] | None = None) -> dict:
    spec: dict = {
        "containers": [{"name": f"c{i}", "resources": {"requests": r}} for i, r in enumerate(containers)]
    }
    if init is not None:
        spec["initContainers"] = [{"name": "init", "resources": {"requests": init}}]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"template": {"spec": spec}},
    }


def test_a_replicas_request_prints_in_the_format_of_its_first_term() -> None:
    assert resource_request_of(pod_template({"cpu": "250m", "memory": "128Mi"})) == {
        "cpu": "250m",
        "memory": "128Mi",
    }
    summed = pod_template({"cpu": "1", "memory": "512Mi"}, {"cpu": "500m", "memory": "0.5Gi"})
    assert resource_request_of(summed) == {"cpu": "1500m", "memory": "1Gi"}
    decimal_first = pod_template({"memory": "100M"}, {"memory": "1Gi"})
    assert resource_request_of(decimal_first) == {
        "memory": "1173741824"
    }  # 100M + 1Gi, printed as 100M's kind
    init_wins = pod_template({"memory": "64Mi"}, init={"memory": "256Mi"})
    assert resource_request_of(init_wins) == {"memory": "256Mi"}
