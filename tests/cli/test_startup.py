"""The root group loads a command's module only when that command runs: a client verb does not import the
server side, `federation --help` imports no command module, and what it lists is what the commands say.

Each check runs in a fresh interpreter: in this one the other tests have imported everything already.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from federation.cli import cmd_join
from federation.cli.main import CLIENT_SIDE, COMMANDS, SERVER_SIDE, cli

REPO = Path(__file__).resolve().parents[2]
# What a client verb must not load: the API server, the store, the controllers, the member clients, settings.
SERVER_MODULES = (
    "alembic",
    "fastapi",
    "federation.api",
    "federation.controllers",
    "federation.settings",
    "federation.store",
    "kubernetes",
    "pydantic_settings",
    "sqlalchemy",
    "uvicorn",
)
INVOKE = """
import json, sys
from click.testing import CliRunner
from federation.cli.main import cli
{before}
result = CliRunner().invoke(cli, {args!r}, terminal_width=100)
modules = sorted(m for m in {modules!r} if m in sys.modules)
print(json.dumps({{"exit": result.exit_code, "output": result.output, "modules": modules}}))
"""


def child(args: list[str], before: str = "") -> dict[str, object]:
    """`federation ARGS` in a fresh interpreter: its exit code, its output, the server modules it loaded."""
    code = INVOKE.format(before=before, args=args, modules=SERVER_MODULES)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True, env=os.environ
    )
    found: dict[str, object] = json.loads(done.stdout)
    return found


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["--version"],
        ["get", "--help"],
        ["describe", "--help"],
        ["apply", "--help"],
        ["join", "--help"],
        ["taint", "--help"],
    ],
    ids=" ".join,
)
def test_a_client_verb_loads_no_server_module(args: list[str]) -> None:
    ran = child(args)
    assert ran["exit"] == 0, ran["output"]
    assert ran["modules"] == []


def test_a_client_verb_that_reaches_for_a_server_loads_no_server_module() -> None:
    """The whole client path: the kubeconfig's default place, the client, the refused connection's error."""
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    code = INVOKE.format(
        before="", args=["--server", "http://127.0.0.1:9", "get", "rb"], modules=SERVER_MODULES
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, env=env)
    ran = json.loads(done.stdout)
    assert ran["exit"] == 1, ran["output"]
    assert ran["modules"] == []


def test_help_lists_every_command_as_the_loaded_commands_would() -> None:
    lazy = child(["--help"])
    loaded = child(["--help"], before="for name in cli.list_commands(None): cli.get_command(None, name)")
    assert lazy["output"] == loaded["output"]
    listing = str(lazy["output"]).split("Commands:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in listing] == sorted(COMMANDS)


def test_each_summary_is_the_first_paragraph_of_its_commands_help() -> None:
    """What `--help` shows of a command not loaded is what click would show of the command itself."""
    for name, (_target, summary) in COMMANDS.items():
        command = cli.get_command(click.Context(cli), name)
        assert command is not None and command.name == name
        stand_in = click.Command(name, help=summary)
        for limit in range(20, 160, 7):
            assert stand_in.get_short_help_str(limit) == command.get_short_help_str(limit), (name, limit)


def test_client_verbs_take_the_connection_options_after_the_verb() -> None:
    assert not SERVER_SIDE.keys() & CLIENT_SIDE.keys()
    assert {command.name for command in cmd_join.COMMANDS} <= CLIENT_SIDE.keys()
    for name in CLIENT_SIDE:
        command = cli.get_command(click.Context(cli), name)
        assert command is not None
        flags = {opt for param in command.params for opt in getattr(param, "opts", [])}
        assert {"--kubeconfig", "--context"} <= flags, name


def test_an_unknown_command_still_suggests_one_not_loaded() -> None:
    ran = child(["tokn", "list"])
    assert ran["exit"] == 2
    assert "No such command 'tokn'. Did you mean 'token'?" in str(ran["output"])


def test_a_database_error_is_one_line_when_the_command_loads_sqlalchemy_itself() -> None:
    ran = child(["token", "list", "--database-url", "postgresql://nobody@127.0.0.1:9/none"])
    assert ran["exit"] == 1
    lines = str(ran["output"]).splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: the database is not available: "), lines


# What `serve` imports only after it launched its controllers' child (``cmd_serve``), so that the child's
# imports run beside its own: the store, the API, the controllers, the member clients, the migrations.
LAUNCH_BEFORE = ("alembic", "fastapi", "federation.api", "federation.controllers", "federation.store")
LAUNCH = """
import json, sys
from click.testing import CliRunner
from federation.cli import controller_process
from federation.cli.main import cli

at_launch = []

def launch(self):
    at_launch.append(sorted(m for m in {modules!r} if m in sys.modules))
    raise SystemExit(3)

controller_process.ControllerProcess.launch = launch
result = CliRunner().invoke(cli, ["serve", "--database-url", "postgresql://nobody@127.0.0.1:9/none"])
print(json.dumps({{"exit": result.exit_code, "at_launch": at_launch}}))
"""


def test_serve_launches_its_controllers_child_before_it_imports_the_server_side(tmp_path: Path) -> None:
    env = {**os.environ, "FEDERATION_DATA_DIR": str(tmp_path)}
    code = LAUNCH.format(modules=LAUNCH_BEFORE)
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, env=env)
    ran = json.loads(done.stdout.splitlines()[-1])
    assert ran["exit"] == 3, done.stderr  # it got to the launch
    assert ran["at_launch"] == [[]]


def test_the_server_module_leaves_the_api_and_the_controllers_to_later() -> None:
    """`serve`'s API process hands its child the settings before it imports the API, and never imports the
    controllers that run in the child (``ServerProcess.prepare``)."""
    modules = ("fastapi", "uvicorn", "federation.api", "federation.controllers.assembly")
    code = f"import json, sys; import federation.cli.server; print(json.dumps([m for m in {modules!r} if m in sys.modules]))"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []
