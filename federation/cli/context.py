"""What every client-side command shares: the server/token flags and kind lookup."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import click

from federation.cli.client import FederationClient, resolve_client_config
from federation.model import kinds
from federation.model.kinds import KindInfo

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(slots=True)
class CliContext:
    server: str | None = None
    token: str | None = None
    config_file: str | None = None
    transport: Any = None  # tests hand in an httpx transport; None means real sockets

    @contextmanager
    def client(self) -> Iterator[FederationClient]:
        client = FederationClient(resolve_client_config(self.server, self.token), transport=self.transport)
        try:
            yield client
        finally:
            client.close()

    def kind(self, name: str) -> KindInfo:
        try:
            return kinds.lookup(name)
        except KeyError as exc:
            raise click.UsageError(f'the server doesn\'t have a resource type "{name}"') from exc


def pass_cli(func: F) -> F:
    return cast(F, click.pass_obj(func))
