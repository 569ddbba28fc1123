"""Reading manifests for `apply -f` and `delete -f`: a file, every *.yaml/*.yml/*.json in a directory
(sorted, not recursive, like kubectl), or standard input; multi-document YAML; `List` kinds unpacked.

YAML is read the way kubectl reads it (YAML → JSON), so what is sent is exactly what the user wrote:

- unquoted dates and times stay strings (`creationTimestamp: 2024-01-01`, a label value `2024-01-01`);
- a mapping key written twice is refused ("mapping key "x" already defined at line N"), as kubectl does;
- `.nan`/`.inf` and `!!binary` are refused: JSON cannot carry them;
- non-string keys become JSON's spelling of them (`1` → "1", `true` → "true"), as json.dumps would send.

Invariants:
- Every problem is a ``ManifestError`` whose message is one line naming the source (file, `<stdin>`) and,
  where the parser knows it, the line; the CLI prints it and exits 1, never a traceback.
- A document nested deeper than ``MAX_DEPTH`` is refused while it is read (PyYAML composes recursively).
- A document whose aliases would expand to more than ``MAX_EXPANDED_NODES`` nodes (a "billion laughs"
  alias bomb) or that refers to itself is refused before it is built. The count is taken over the composed
  node graph with every shared node counted once per use but visited once, so the check itself is linear
  in the size of the file, not of the expansion.
- Every manifest returned has a string `apiVersion` and `kind` and a `metadata.name`: anything else would
  fail later, half-way through applying the file.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Hashable, Iterator
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from federation.model import kinds
from federation.model.kinds import KindInfo

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
# Far above any real manifest (a 3 MiB request body holds fewer), far below what hurts a laptop.
MAX_EXPANDED_NODES = 500_000
# Deeper than any real manifest (a deep CRD schema is ~60), shallow enough for PyYAML's recursive composer.
MAX_DEPTH = 200
MERGE_TAG = "tag:yaml.org,2002:merge"


class ManifestError(Exception):
    """A manifest the CLI cannot even send: unreadable, not YAML, no kind, no name."""


class ManifestLoader(yaml.SafeLoader):
    """PyYAML's safe loader with kubectl's YAML → JSON semantics (see the module docstring)."""

    _depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        """Refuse nesting past ``MAX_DEPTH`` before Python's recursion limit would (with a line number)."""
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise ComposerError(None, None, f"nested more than {MAX_DEPTH} levels deep", mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_document(self, node: Node) -> Any:
        _check_expansion(node)
        return super().construct_document(node)

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        """SafeConstructor's mapping, with duplicates refused and keys spelled as JSON spells them (done
        while building it: `1` and `true` are equal as Python keys, "1" and "true" are not)."""
        _refuse_duplicate_keys(self, node)
        self.flatten_mapping(node)  # resolve `<<` merges, as SafeConstructor does
        mapping: dict[Hashable, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, Hashable):
                raise ConstructorError(None, None, "a mapping key must be a scalar", key_node.start_mark)
            mapping[_json_key(key)] = self.construct_object(value_node, deep=deep)
        return mapping

    def construct_yaml_float(self, node: ScalarNode) -> float:
        value: float = super().construct_yaml_float(node)
        if not math.isfinite(value):
            raise ConstructorError(
                None,
                None,
                f"{node.value!r} is not a number JSON can carry (NaN or infinite)",
                node.start_mark,
            )
        return value

    def construct_timestamp_text(self, node: Node) -> str:
        return str(node.value)  # the text as written, as kubectl's YAML → JSON conversion keeps it

    def construct_yaml_binary(self, node: Node) -> bytes:
        raise ConstructorError(
            None, None, "!!binary values are not supported; write base64 as a string", node.start_mark
        )


ManifestLoader.add_constructor("tag:yaml.org,2002:timestamp", ManifestLoader.construct_timestamp_text)
ManifestLoader.add_constructor("tag:yaml.org,2002:float", ManifestLoader.construct_yaml_float)
ManifestLoader.add_constructor("tag:yaml.org,2002:binary", ManifestLoader.construct_yaml_binary)


def _json_key(key: Hashable) -> Hashable:
    """The key as JSON spells it: bool and null by name, numbers as written by json.dumps."""
    if key is None or isinstance(key, bool):
        return {None: "null", True: "true", False: "false"}[key]
    if isinstance(key, int | float):
        return str(key) if isinstance(key, int) else repr(key)
    return key


def _refuse_duplicate_keys(loader: ManifestLoader, node: MappingNode) -> None:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == MERGE_TAG:
            continue  # `<<: *base` may override keys on purpose
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, Hashable):
            continue  # construct_mapping refuses it, naming the problem
        key = _json_key(key)
        if key in seen:
            raise ConstructorError(
                None,
                None,
                f'mapping key "{key}" already defined at line {seen[key] + 1}',
                key_node.start_mark,
            )
        seen[key] = key_node.start_mark.line


def _children(node: Node) -> list[Node]:
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, SequenceNode):
        return list(node.value)
    return []


def _check_expansion(root: Node) -> None:
    """Refuse a document that expands past the node budget or contains itself (iterative, memoized)."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()  # on the current path: meeting one again is a cycle
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            if sizes[key] > MAX_EXPANDED_NODES:
                raise ConstructorError(
                    None,
                    None,
                    f"YAML aliases expand this document to more than {MAX_EXPANDED_NODES} nodes",
                    node.start_mark,
                )
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise ConstructorError(
                None, None, "a YAML alias refers to a node that contains it", node.start_mark
            )
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)


# -- reading -----------------------------------------------------------------------------------------


def read_manifests(source: str) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    try:
        for origin, text in _sources(source):
            docs.extend(_parse(origin, text))
    except OSError as exc:  # unreadable file or directory, stdin closed...
        raise ManifestError(f"{exc.filename or source}: cannot read: {exc.strerror or exc}") from exc
    return docs


def _sources(source: str) -> Iterator[tuple[str, str]]:
    if source == "-":
        stdin = getattr(sys.stdin, "buffer", None)
        raw = stdin.read() if stdin is not None else sys.stdin.read().encode()
        yield "<stdin>", _decode("<stdin>", raw)
        return
    path = Path(source)
    if path.is_dir():
        for child in sorted(path.iterdir()):
            if child.suffix in MANIFEST_SUFFIXES and child.is_file():
                yield str(child), _read(child)
        return
    if not path.exists():
        raise ManifestError(f"the path {source!r} does not exist")
    yield source, _read(path)


def _read(path: Path) -> str:
    return _decode(str(path), path.read_bytes())


def _decode(origin: str, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestError(
            f"{origin}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
        ) from exc


def _parse(origin: str, text: str) -> Iterator[dict[str, Any]]:
    try:
        loaded = [doc for doc in yaml.load_all(text, Loader=ManifestLoader) if doc is not None]
    except yaml.YAMLError as exc:
        raise ManifestError(f"{origin}: {_yaml_problem(exc)}") from exc
    for index, doc in enumerate(loaded):
        where = f"{origin}: document {index + 1}"
        if not isinstance(doc, dict):
            raise ManifestError(f"{where} is not a mapping")
        if str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
            for position, item in enumerate(doc["items"]):
                yield _checked(item, f"{where}, item {position + 1}")
            continue
        yield _checked(doc, where)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """One line: `line L, column C: problem` where PyYAML knows the place, else its message flattened."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        problem = exc.problem or ""
        if exc.context:
            problem = f"{exc.context}: {problem}"
        return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"
    return f"not valid YAML: {' '.join(str(exc).split())}"


def _checked(doc: Any, where: str) -> dict[str, Any]:
    """The document, if it names what it is: apiVersion and kind strings, metadata with a name."""
    if not isinstance(doc, dict):
        raise ManifestError(f"{where} is not a mapping")
    for field in ("apiVersion", "kind"):
        if not doc.get(field):
            raise ManifestError(f"{where}: {field} is required")
        if not isinstance(doc[field], str):
            raise ManifestError(f"{where}: {field} must be a string")
    what = f"{where} ({doc['kind']})"
    metadata = doc.get("metadata")
    if not isinstance(metadata, dict):
        raise ManifestError(f"{what}: metadata must be a mapping with a name")
    name = metadata.get("name")
    if not name or not isinstance(name, str):
        raise ManifestError(f"{what}: metadata.name is required and must be a string")
    namespace = metadata.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        raise ManifestError(f"{what}: metadata.namespace must be a string")
    return doc


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
