"""kube-apiserver's validation for the core kinds a federation propagates whole: ConfigMap, Secret, Service.

Sources: kubernetes ``pkg/apis/core/validation/validation.go`` (ValidateConfigMap, ValidateSecret,
ValidateService, ValidateServicePort), apimachinery ``IsConfigMapKey``, ``IsValidPortName``.

Invariants:
- ConfigMap ``data``/``binaryData`` and Secret ``data``/``stringData`` keys are config keys; their total size
  is at most 1 MiB (``MAX_DATA_SIZE``), counted as kube-apiserver counts it (decoded bytes for base64 data).
- Secret ``data`` and ConfigMap ``binaryData`` values are standard base64; a bad one is reported without its
  value, which may be secret.
- A Service needs ports unless it is ExternalName or headless (``clusterIP: None``); every port is in
  [1, 65535]; with several ports each has a unique DNS-1123 label name.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Mapping
from typing import Any, Final

from federation.model.labels import (
    is_config_map_key,
    is_dns1123_label,
    is_dns1123_subdomain,
    validate_labels,
)
from federation.model.meta import (
    REASON_INVALID,
    FieldError,
    duplicate,
    invalid,
    join_path,
    key_path,
    required,
    too_long,
)
from federation.model.rules_fields import (
    bool_field,
    enum_field,
    in_range,
    is_int,
    list_field,
    object_field,
    objects,
    string_field,
    string_map,
    type_error,
)

MAX_DATA_SIZE: Final = 1024 * 1024
SERVICE_TYPES: Final = ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")
PROTOCOLS: Final = ("TCP", "UDP", "SCTP")
_PORT_NAME_CHARS_RE: Final = re.compile(r"^[-a-z0-9]+$")


# ---------------------------------------------------------------------------------------------------------
# ConfigMap and Secret


def config_map(manifest: Mapping[str, Any]) -> list[FieldError]:
    data, errors = string_map(manifest, "data", "")
    binary, binary_errors = string_map(manifest, "binaryData", "")
    errors += binary_errors + bool_field(manifest, "immutable", "")
    size = 0
    for key, value in data.items():
        errors += _key("data", key)
        if key in binary:
            errors.append(invalid(key_path("data", key), key, "duplicate of key present in binaryData"))
        size += _utf8_size(value)
    for key, value in binary.items():
        errors += _key("binaryData", key)
        decoded, decode_errors = _base64(value, key_path("binaryData", key))
        errors += decode_errors
        size += decoded
    return errors + _size(size)


def secret(manifest: Mapping[str, Any]) -> list[FieldError]:
    data, errors = string_map(manifest, "data", "")
    plain, plain_errors = string_map(manifest, "stringData", "")
    errors += plain_errors + bool_field(manifest, "immutable", "") + string_field(manifest, "type", "")[1]
    sizes: dict[str, int] = {}
    for key, value in data.items():
        errors += _key("data", key)
        decoded, decode_errors = _base64(value, key_path("data", key))
        errors += decode_errors
        sizes[key] = decoded
    for key, value in plain.items():
        errors += _key("stringData", key)
        sizes[key] = _utf8_size(value)  # stringData overwrites data on write, as kube-apiserver merges it
    return errors + _size(sum(sizes.values()))


def _key(field: str, key: str) -> list[FieldError]:
    return [invalid(key_path(field, key), key, m) for m in is_config_map_key(key)]


def _utf8_size(value: str) -> int:
    return len(value.encode("utf-8", "surrogatepass"))


def _base64(value: str, path: str) -> tuple[int, list[FieldError]]:
    """The decoded size, or an error that does not repeat the (possibly secret) value."""
    try:
        return len(base64.b64decode(value.replace("\r", "").replace("\n", ""), validate=True)), []
    except (binascii.Error, ValueError):
        return 0, [FieldError(path, "Invalid value: illegal base64 data", REASON_INVALID)]


def _size(size: int) -> list[FieldError]:
    return [too_long("data", MAX_DATA_SIZE)] if size > MAX_DATA_SIZE else []


# ---------------------------------------------------------------------------------------------------------
# Service


def service(manifest: Mapping[str, Any]) -> list[FieldError]:
    spec, errors = object_field(manifest, "spec", "")
    if errors:
        return errors
    kind, kind_errors = enum_field(spec, "type", "spec", SERVICE_TYPES)
    cluster_ip, ip_errors = string_field(spec, "clusterIP", "spec")
    errors += kind_errors + ip_errors + _cluster_ip(cluster_ip)
    errors += enum_field(spec, "sessionAffinity", "spec", ("ClientIP", "None"))[1]
    selector, selector_errors = string_map(spec, "selector", "spec")
    errors += selector_errors + validate_labels(selector, "spec.selector")
    ports, port_errors = list_field(spec, "ports", "spec")
    errors += port_errors
    if kind == "ExternalName":
        errors += _external_name(spec)
    elif not ports and not port_errors and cluster_ip != "None":
        errors.append(required("spec.ports"))
    return errors + _ports(ports)


def _cluster_ip(value: str) -> list[FieldError]:
    if value in ("", "None"):
        return []
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return [
            invalid("spec.clusterIP", value, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")
        ]
    return []


def _external_name(spec: Mapping[str, Any]) -> list[FieldError]:
    name, errors = string_field(spec, "externalName", "spec")
    if errors:
        return errors
    if not name:
        return [required("spec.externalName")]
    return [invalid("spec.externalName", name, m) for m in is_dns1123_subdomain(name.removesuffix("."))]


def _ports(raw: list[Any]) -> list[FieldError]:
    ports, errors = objects(raw, "spec.ports")
    names: set[str] = set()
    for i, port in ports:
        errors += _port(port, join_path("spec.ports", i), names, named=len(raw) > 1)
    return errors


def _port(port: Mapping[str, Any], path: str, names: set[str], *, named: bool) -> list[FieldError]:
    name, errors = string_field(port, "name", path)
    name_path = join_path(path, "name")
    if named and not name and not errors:
        errors.append(required(name_path))
    elif name:
        errors += [invalid(name_path, name, m) for m in is_dns1123_label(name)]
        if name in names:
            errors.append(duplicate(name_path, name))
        names.add(name)
    number = port.get("port")
    errors += (
        [required(join_path(path, "port"))]
        if number is None
        else in_range(number, join_path(path, "port"), 1, 65535)
    )
    errors += enum_field(port, "protocol", path, PROTOCOLS)[1]
    node_port = port.get("nodePort")
    if node_port is not None and node_port != 0:
        errors += in_range(node_port, join_path(path, "nodePort"), 1, 65535)
    return errors + _target_port(port.get("targetPort"), join_path(path, "targetPort"))


def _target_port(value: Any, path: str) -> list[FieldError]:
    """An ``IntOrString``: a port number, or the name of a container port (``IsValidPortName``)."""
    if value is None or value == 0:
        return []
    if isinstance(value, str):
        return [invalid(path, value, m) for m in port_name(value)]
    if not is_int(value):
        return [type_error(path, value, "integer or string")]
    return in_range(value, path, 1, 65535)


def port_name(value: str) -> list[str]:
    """apimachinery ``IsValidPortName`` (an IANA_SVC_NAME)."""
    errors: list[str] = []
    if len(value) > 15:
        errors.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARS_RE.match(value):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search(r"[a-z]", value):
        errors.append("must contain at least one letter (a-z)")
    if "--" in value:
        errors.append("must not contain consecutive hyphens")
    if value.startswith("-") or value.endswith("-"):
        errors.append("must not begin or end with a hyphen")
    return errors
