"""OpenAPI v3 documents of the served kinds, one per group/version, as kube-apiserver publishes them at
``/openapi/v3/apis/{group}/{version}``: ``kubectl explain`` reads the schemas, ``kubectl apply`` the PATCH
operations (which patch types a kind takes, and that the server checks ``fieldValidation`` itself).

Schemas come from our pydantic models (Karmada's and Kosmos' kinds), from an applied CRD's
``openAPIV3Schema``, or, for Kubernetes kinds (whose schemas are the members' business), a schema that
names the top-level fields and keeps everything under them.

Invariants:
- Every served kind has a component schema carrying ``x-kubernetes-group-version-kind`` (a list, as
  kube-apiserver writes it) and a PATCH operation on its named path carrying the same GVK (one object) and
  the ``fieldValidation`` query parameter.
- Strategic merge patch is declared for no kind: Karmada's and CRD kinds do not take it (kube-apiserver
  answers 415), and kubectl builds a strategic patch for a Kubernetes kind from its compiled-in types only
  when the document does not claim the schema for it; our thin schemas must not be the ones it uses.
- Pydantic's JSON Schema becomes structural OpenAPI 3.0: ``anyOf [X, null]`` is X, a reference with a
  description is ``allOf [ref]`` beside it, titles and null defaults go, ``extra="allow"`` models keep
  unknown fields (``x-kubernetes-preserve-unknown-fields``), int-or-string unions say so.
- Pure and deterministic: the same kinds give the same document, byte for byte (the index hashes it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from federation.model.kinds import KindInfo

REF_PREFIX = "#/components/schemas/"
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml")
API_VERSION_DOC = (
    "APIVersion defines the versioned schema of this representation of an object. Servers should convert "
    "recognized schemas to the latest internal value, and may reject unrecognized values."
)
KIND_DOC = (
    "Kind is a string value representing the REST resource this object represents. Servers may infer this "
    "from the endpoint the client submits requests to. Cannot be updated. In CamelCase."
)
METADATA_DOC = "Standard object's metadata."
PRESERVE = "x-kubernetes-preserve-unknown-fields"


@dataclass(frozen=True, slots=True)
class ServedKind:
    """One kind at one group/version: its pydantic model, or a ready schema (a CRD's), or neither."""

    info: KindInfo
    model: type[BaseModel] | None = None
    schema: Mapping[str, Any] | None = None


@dataclass
class _Document:
    prefix: str
    schemas: dict[str, Any] = field(default_factory=dict)
    paths: dict[str, Any] = field(default_factory=dict)


def schema_prefix(group: str, version: str) -> str:
    """kube-apiserver's component names: ``io.k8s.api.apps.v1`` for Kubernetes groups, the reversed group
    otherwise (``io.karmada.policy.v1alpha1``)."""
    if group == "" or group.endswith(".k8s.io") or "." not in group:
        return f"io.k8s.api.{group.split('.')[0] or 'core'}.{version}"
    return ".".join([*reversed(group.split(".")), version])


def group_version_document(group: str, version: str, served: Sequence[ServedKind]) -> dict[str, Any]:
    """The OpenAPI v3 document of one group/version."""
    document = _Document(schema_prefix(group, version))
    _model_schemas(document, [s for s in served if s.model is not None])
    for kind in served:
        if kind.model is None:
            document.schemas[_name(document, kind.info)] = _kind_schema(kind.info, kind.schema)
        _operations(document, kind.info)
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": version},
        "paths": dict(sorted(document.paths.items())),
        "components": {"schemas": dict(sorted(document.schemas.items()))},
    }


def _name(document: _Document, info: KindInfo) -> str:
    return f"{document.prefix}.{info.kind}"


def _gvk(info: KindInfo) -> dict[str, str]:
    return {"group": info.group, "kind": info.kind, "version": info.version}


# -- schemas -----------------------------------------------------------------------------------------


def _model_schemas(document: _Document, served: Sequence[ServedKind]) -> None:
    if not served:
        return
    models = {kind.info: kind.model for kind in served if kind.model is not None}
    unique = list(dict.fromkeys(models.values()))
    keys, top = models_json_schema([(m, "validation") for m in unique], ref_template=REF_PREFIX + "{model}")
    renamed = {name: f"{document.prefix}.{name}" for name in top.get("$defs", {})}
    for name, schema in top.get("$defs", {}).items():
        document.schemas[renamed[name]] = structural(schema, renamed)
    for kind in served:
        ref = keys[(models[kind.info], "validation")]["$ref"].removeprefix(REF_PREFIX)
        root = document.schemas.pop(renamed[ref])
        document.schemas[_name(document, kind.info)] = _with_type_meta(root, kind.info, document.prefix)


def _with_type_meta(root: Mapping[str, Any], info: KindInfo, prefix: str) -> dict[str, Any]:
    """A kind's root schema with Kubernetes' apiVersion/kind/metadata and its GVK."""
    schema = dict(root)
    properties = dict(schema.get("properties") or {})
    properties["apiVersion"] = {"type": "string", "description": API_VERSION_DOC}
    properties["kind"] = {"type": "string", "description": KIND_DOC}
    if "metadata" in properties:
        properties["metadata"] = {
            "allOf": [{"$ref": f"{REF_PREFIX}{prefix}.ObjectMeta"}],
            "description": METADATA_DOC,
        }
    schema["properties"] = properties
    schema["required"] = [r for r in schema.get("required") or [] if r not in ("apiVersion", "kind")] or None
    if schema["required"] is None:
        del schema["required"]
    schema["x-kubernetes-group-version-kind"] = [_gvk(info)]
    return schema


def _kind_schema(info: KindInfo, given: Mapping[str, Any] | None) -> dict[str, Any]:
    """A CRD's own schema, or one naming the top-level fields of an object whose schema we do not own."""
    if given:
        schema = dict(given)
    else:
        loose = {"type": "object", PRESERVE: True}
        schema = {
            "type": "object",
            "description": f"{info.kind} ({info.api_version}): its fields are the member clusters' API's.",
            "properties": {"metadata": {"type": "object", PRESERVE: True}, "spec": loose, "status": loose},
        }
    properties = dict(schema.get("properties") or {})
    properties.setdefault("apiVersion", {"type": "string", "description": API_VERSION_DOC})
    properties.setdefault("kind", {"type": "string", "description": KIND_DOC})
    schema["properties"] = properties
    schema["x-kubernetes-group-version-kind"] = [_gvk(info)]
    return schema


def structural(node: Any, renamed: Mapping[str, str]) -> Any:
    """Pydantic's JSON Schema (2020-12) as OpenAPI 3.0, references renamed to the document's names."""
    if isinstance(node, list):
        return [structural(item, renamed) for item in node]
    if not isinstance(node, Mapping):
        return node
    if "anyOf" in node:
        return _any_of(node, renamed)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" or (key == "default" and (value is None or isinstance(value, dict | list))):
            continue  # titles are pydantic's; an object default is a dumped empty model, not Karmada's
        if key == "$ref":
            out[key] = REF_PREFIX + renamed.get(
                value.removeprefix(REF_PREFIX), value.removeprefix(REF_PREFIX)
            )
        elif key == "const":
            out["enum"] = [value]
        elif key == "description" and isinstance(value, str):
            out[key] = prose(value)
        elif key == "additionalProperties" and value is True:
            out[PRESERVE] = True
        elif key in ("properties", "$defs"):
            out[key] = {name: structural(sub, renamed) for name, sub in value.items()}
        else:
            out[key] = structural(value, renamed)
    if "$ref" in out and len(out) > 1:  # OpenAPI 3.0 ignores siblings of $ref: kube wraps it in allOf
        out = {"allOf": [{"$ref": out.pop("$ref")}], **out}
    return out


def prose(text: str) -> str:
    """A docstring as one paragraph per blank-line-separated block (kubectl explain wraps lines itself)."""
    return "\n\n".join(" ".join(block.split()) for block in text.split("\n\n") if block.strip())


def _any_of(node: Mapping[str, Any], renamed: Mapping[str, str]) -> Any:
    options = [o for o in node["anyOf"] if o != {"type": "null"}]
    siblings = {k: v for k, v in node.items() if k != "anyOf"}
    if len(options) == 1:
        return structural({**options[0], **siblings}, renamed)
    types = {o.get("type") for o in options}
    rest = structural(siblings, renamed)
    if types == {"integer", "string"}:
        return {**rest, "x-kubernetes-int-or-string": True}
    return {**rest, PRESERVE: True}


# -- operations --------------------------------------------------------------------------------------


def _operations(document: _Document, info: KindInfo) -> None:
    ref = {"$ref": f"{REF_PREFIX}{_name(document, info)}"}
    base = info.path_prefix
    scoped = f"{base}/namespaces/{{namespace}}/{info.plural}" if info.namespaced else f"{base}/{info.plural}"
    path_params = [_path_param("namespace")] if info.namespaced else []
    if info.namespaced:
        document.paths[f"{base}/{info.plural}"] = {"get": _op("list", info, ref, "ListForAllNamespaces")}
    document.paths[scoped] = {
        "parameters": path_params,
        "get": _op("list", info, ref),
        "post": _op("post", info, ref, body=ref),
    }
    named = {
        "parameters": [_path_param("name"), *path_params],
        "get": _op("get", info, ref),
        "put": _op("put", info, ref, body=ref),
        "patch": _op("patch", info, ref, body=ref),
        "delete": _op("delete", info, ref),
    }
    document.paths[f"{scoped}/{{name}}"] = named
    if info.has_status:
        status = {k: v for k, v in named.items() if k in ("parameters", "get", "put", "patch")}
        document.paths[f"{scoped}/{{name}}/status"] = status


_VERBS = {
    "list": "list",
    "post": "create",
    "get": "read",
    "put": "replace",
    "patch": "patch",
    "delete": "delete",
}


def _op(
    action: str,
    info: KindInfo,
    ref: Mapping[str, Any],
    suffix: str = "",
    body: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    group = "".join(part.capitalize() for part in (info.group or "core").replace("-", ".").split("."))
    scope = "Namespaced" if info.namespaced and not suffix else ""
    operation: dict[str, Any] = {
        "operationId": f"{_VERBS[action]}{group}{info.version.capitalize()}{scope}{info.kind}{suffix}",
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(info),
        "parameters": [_query(name) for name in _QUERY[action]],
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": dict(ref)}}}},
    }
    if body is not None:
        types = PATCH_TYPES if action == "patch" else ("application/json",)
        content = {t: {"schema": {"type": "object"} if action == "patch" else dict(body)} for t in types}
        operation["requestBody"] = {"required": True, "content": content}
    return operation


_WRITE = ("dryRun", "fieldManager", "fieldValidation")
_QUERY: dict[str, tuple[str, ...]] = {
    "list": ("labelSelector", "fieldSelector", "limit", "continue", "resourceVersion", "watch"),
    "get": ("resourceVersion",),
    "post": _WRITE,
    "put": _WRITE,
    "patch": (*_WRITE, "force"),
    "delete": ("dryRun", "gracePeriodSeconds", "propagationPolicy"),
}
_QUERY_TYPES = {"limit": "integer", "gracePeriodSeconds": "integer", "watch": "boolean", "force": "boolean"}


def _query(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "schema": {"type": _QUERY_TYPES.get(name, "string"), "uniqueItems": True},
    }


def _path_param(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string", "uniqueItems": True}}
