"""Reading manifests for `apply -f` and `delete -f`: a file, every *.yaml/*.yml/*.json in a directory
(sorted, not recursive, like kubectl), or standard input; multi-document YAML; `List` kinds unpacked."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from federation.model import kinds
from federation.model.kinds import KindInfo

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


class ManifestError(Exception):
    """A manifest the CLI cannot even send: unreadable, not YAML, no kind."""


def read_manifests(source: str) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for origin, text in _sources(source):
        docs.extend(_parse(origin, text))
    return docs


def _sources(source: str) -> Iterator[tuple[str, str]]:
    if source == "-":
        yield "<stdin>", sys.stdin.read()
        return
    path = Path(source)
    if path.is_dir():
        for child in sorted(path.iterdir()):
            if child.suffix in MANIFEST_SUFFIXES and child.is_file():
                yield str(child), child.read_text()
        return
    if not path.exists():
        raise ManifestError(f"the path {source!r} does not exist")
    yield source, path.read_text()


def _parse(origin: str, text: str) -> Iterator[dict[str, Any]]:
    try:
        loaded = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as exc:
        raise ManifestError(f"{origin}: not valid YAML: {exc}") from exc
    for index, doc in enumerate(loaded):
        if not isinstance(doc, dict):
            raise ManifestError(f"{origin}: document {index + 1} is not a mapping")
        if str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
            yield from doc["items"]
            continue
        for field in ("apiVersion", "kind"):
            if not doc.get(field):
                raise ManifestError(f"{origin}: document {index + 1}: {field} is required")
        yield doc


def kind_of(manifest: dict[str, Any]) -> KindInfo:
    """The kind a manifest is of; an unregistered kind is a resource template like any other."""
    api_version, kind = manifest["apiVersion"], manifest["kind"]
    known = kinds.by_gvk(api_version, kind)
    if known is not None:
        return known
    namespaced = bool((manifest.get("metadata") or {}).get("namespace"))
    return kinds.template_kind(api_version, kind, namespaced=namespaced)


def identity(manifest: dict[str, Any], info: KindInfo) -> str:
    """kubectl's `kind.group/name` label for a result line, e.g. `deployment.apps/nginx`."""
    kind = f"{info.singular}.{info.group}" if info.group else info.singular
    return f"{kind}/{(manifest.get('metadata') or {}).get('name', '')}"
