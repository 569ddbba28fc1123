"""The CLI never prints a traceback for a bad manifest: each case is one line on stderr naming the file and the
problem, exit 1, and nothing is sent (the server flag points at a closed port: a request would say so).
Plus the YAML that kubectl accepts and we must too: unquoted dates stay strings, keys are JSON's."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from federation.cli.main import cli
from federation.cli.manifests import MAX_EXPANDED_NODES
from tests.conftest import point_cli_at

NOWHERE = "http://127.0.0.1:9"  # discard port: nothing listens


def run(*args: str, input: bytes | str | None = None) -> Result:
    return CliRunner().invoke(cli, ["--server", NOWHERE, *args], input=input, catch_exceptions=False)


def configmap(extra: str = "", metadata: str = "  name: cfg\n") -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n{metadata}{extra}"


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """Billion laughs: `width ** levels` leaves from a few hundred bytes."""
    lines = ['a0: &a0 ["lol"]']
    for level in range(1, levels + 1):
        refs = ", ".join([f"*a{level - 1}"] * width)
        lines.append(f"a{level}: &a{level} [{refs}]")
    return "\n".join(lines) + "\n"


BAD: list[tuple[str, bytes, str]] = [
    # (case, file content, what the one line must say after the file name)
    ("nan", configmap("data:\n  ratio: .nan\n").encode(), "line 6, column 10: '.nan' is not a number JSON"),
    ("infinity", configmap("data:\n  big: -.inf\n").encode(), "'-.inf' is not a number JSON can carry"),
    ("overflowing float", configmap("spec:\n  x: 1.0e+999\n").encode(), "is not a number JSON can carry"),
    (
        "not utf-8",
        configmap("data:\n  k: caf\xe9\n").encode("latin-1"),
        "not UTF-8 text (byte 0xe9 at offset",
    ),
    (
        "duplicate key",
        configmap(metadata="  name: cfg\n  namespace: a\n  name: other\n").encode(),
        'line 6, column 3: mapping key "name" already defined at line 4',
    ),
    (
        "duplicate key after JSON spelling",
        configmap("data:\n  1: a\n  '1': b\n").encode(),
        'line 7, column 3: mapping key "1" already defined at line 6',
    ),
    (
        "alias bomb",
        alias_bomb().encode(),
        f"YAML aliases expand this document to more than {MAX_EXPANDED_NODES}",
    ),
    ("recursive alias", b"a: &x [*x]\n", "a YAML alias refers to a node that contains it"),
    (
        "configmap without a name",
        configmap(metadata="  labels: {a: b}\n").encode(),
        "metadata.name is required",
    ),
    (
        "name not a string",
        configmap(metadata="  name: [a]\n").encode(),
        "metadata.name is required and must be",
    ),
    (
        "metadata not a mapping",
        b"apiVersion: v1\nkind: ConfigMap\nmetadata: cfg\n",
        "metadata must be a mapping",
    ),
    ("no metadata", b"apiVersion: v1\nkind: ConfigMap\n", "document 1 (ConfigMap): metadata must be"),
    ("no kind", b"apiVersion: v1\nmetadata: {name: a}\n", "document 1: kind is required"),
    ("kind not a string", b"apiVersion: v1\nkind: [a]\nmetadata: {name: a}\n", "kind must be a string"),
    (
        "namespace not a string",
        configmap(metadata="  name: a\n  namespace: 7\n").encode(),
        "namespace must be",
    ),
    ("not a mapping", b"- a\n- b\n", "document 1 is not a mapping"),
    (
        "list item without a name",
        b"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {}}\n",
        "document 1, item 1 (ConfigMap): metadata.name is required",
    ),
    (
        "second document bad",
        (configmap() + "---\n" + "kind: X\n").encode(),
        "document 2: apiVersion is required",
    ),
    ("broken YAML", b"apiVersion: v1\nkind: [ConfigMap\n", "line 3, column 1: while parsing a flow sequence"),
    ("tab indentation", b"apiVersion: v1\nmetadata:\n\tname: a\n", "found character '\\t'"),
    ("binary value", configmap("data:\n  k: !!binary aGk=\n").encode(), "!!binary values are not supported"),
    ("unknown tag", configmap("data:\n  k: !vault secret\n").encode(), "could not determine a constructor"),
    (
        "nested too deeply",
        b"a: " + b"[" * 5000 + b"]" * 5000,
        "line 1, column 203: nested more than 200 levels",
    ),
    ("NUL character", configmap("data:\n  k: a\x00b\n").encode(), "unacceptable character #x0000"),
]


def assert_one_line_error(result: Result, origin: str, fragment: str) -> None:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {origin}: "), lines[0]
    assert fragment in lines[0], lines[0]
    assert "cannot reach" not in result.output  # refused before anything was sent
    assert result.stdout == ""


@pytest.mark.parametrize("verb", ["apply", "delete"])
@pytest.mark.parametrize(("case", "content", "fragment"), BAD, ids=[case for case, _, _ in BAD])
def test_a_bad_manifest_file_is_one_line_naming_file_and_problem(
    tmp_path: Path, verb: str, case: str, content: bytes, fragment: str
) -> None:
    path = tmp_path / "app.yaml"
    path.write_bytes(content)
    # The alias bomb is refused by its node count (its fragment names the cap), never expanded: that
    # it is fast is the benchmark's business, not a timed assertion's.
    result = run(verb, "-f", str(path))
    assert_one_line_error(result, str(path), fragment)


def test_standard_input_is_named_and_read_as_bytes() -> None:
    result = run("apply", "-f", "-", input=configmap("data:\n  k: caf\xe9\n").encode("latin-1"))
    assert_one_line_error(result, "<stdin>", "not UTF-8 text")


def test_in_a_directory_the_bad_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(configmap())
    (tmp_path / "b.yaml").write_text(configmap("data:\n  x: .NaN\n"))
    result = run("apply", "-f", str(tmp_path))
    assert_one_line_error(result, str(tmp_path / "b.yaml"), "'.NaN' is not a number")


def test_a_missing_path_is_one_line() -> None:
    result = run("apply", "-f", "/nonexistent/app.yaml")
    assert result.exit_code == 1
    assert result.stderr.strip() == "error: the path '/nonexistent/app.yaml' does not exist"


# -- what kubectl accepts -------------------------------------------------------------------------------------


def test_unquoted_dates_stay_strings_and_keys_are_json_keys(federation_server, tmp_path: Path) -> None:
    path = tmp_path / "cm.yaml"
    path.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dated\n  creationTimestamp: 2024-01-01\n"
        "  labels:\n    released: 2024-01-01\n"
        "data:\n  when: 2024-01-01T10:00:00Z\n  1: one\n  true: yes-key\n  ratio: '.nan'\n"
    )
    created = CliRunner().invoke(cli, ["apply", "-f", str(path)], catch_exceptions=False)
    assert created.exit_code == 0, created.output
    assert created.output.strip() == "configmap/dated created"
    shown = CliRunner().invoke(cli, ["get", "configmap", "dated", "-o", "yaml"], catch_exceptions=False)
    stored = yaml.safe_load(shown.output)
    assert stored["metadata"]["labels"] == {"released": "2024-01-01"}
    assert stored["data"] == {"when": "2024-01-01T10:00:00Z", "1": "one", "true": "yes-key", "ratio": ".nan"}
    again = CliRunner().invoke(cli, ["apply", "-f", str(path)], catch_exceptions=False)
    assert again.output.strip() == "configmap/dated unchanged"  # what was sent is what is stored


def test_merge_keys_may_override_without_being_duplicates(tmp_path: Path) -> None:
    from federation.cli.manifests import read_manifests

    path = tmp_path / "merge.yaml"
    path.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: m}\n"
        "data:\n  <<: &base {a: '1', b: '2'}\n  b: '3'\n"
    )
    assert read_manifests(str(path))[0]["data"] == {"a": "1", "b": "3"}


# -- the CLI's other inputs ------------------------------------------------------------------------------------

OTHER_INPUTS: list[tuple[str, list[str], str]] = [
    # (case, arguments with {dir} for the test's directory, what the one line says)
    ("kubeconfig not UTF-8", ["join", "m1", "--kubeconfig", "{dir}/latin.yaml"], "cannot read kubeconfig"),
    ("kubeconfig not YAML", ["join", "m1", "--kubeconfig", "{dir}/broken.yaml"], "while parsing a flow node"),
    ("settings not YAML", ["--config", "{dir}/broken.yaml", "db", "upgrade"], "bad settings: config file"),
    ("settings not UTF-8", ["--config", "{dir}/latin.yaml", "db", "upgrade"], "bad settings: 'utf-8' codec"),
    (
        "database unreachable",
        ["token", "list", "--database-url", "postgresql://nobody@127.0.0.1:9/none"],
        "error: the database is not available: connection failed",
    ),
    (
        "kubeconfig of the CLI not YAML",
        ["get", "pp"],
        "error: the kubeconfig {dir}/client.yaml cannot be read",
    ),
    (
        "extender CA file missing",
        [
            "--config",
            "{dir}/extenders.yaml",
            "serve",
            "--database-url",
            "sqlite:///{dir}/f.db",
            "--port",
            "0",
        ],
        "bad settings: scheduler.extenders[0]",
    ),
]


@pytest.mark.parametrize(("case", "args", "fragment"), OTHER_INPUTS, ids=[c for c, _, _ in OTHER_INPUTS])
def test_other_bad_inputs_are_one_line_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, args: list[str], fragment: str
) -> None:
    (tmp_path / "latin.yaml").write_bytes("a: caf\xe9\n".encode("latin-1"))
    (tmp_path / "broken.yaml").write_text("a: [\n")
    (tmp_path / "client.yaml").write_text("server: [\n")
    extender = {"urlPrefix": "https://127.0.0.1:9/x", "filterVerb": "filter", "enableHTTPS": True}
    extender["tlsConfig"] = {"caFile": str(tmp_path / "missing-ca.pem")}
    (tmp_path / "extenders.yaml").write_text(yaml.safe_dump({"scheduler": {"extenders": [extender]}}))
    point_cli_at(monkeypatch, tmp_path / "client.yaml")
    argv = [arg.format(dir=tmp_path) for arg in args]
    result = CliRunner().invoke(cli, argv, catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert fragment.format(dir=tmp_path) in lines[0]
