"""What every client-side command shares: the connection flags (server, token, kubeconfig, context, TLS)
and kind lookup."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import click

from federation.cli.client import FederationClient
from federation.cli.clientconfig import ClientConfig, ClientFlags, resolve
from federation.model import kinds
from federation.model.kinds import KindInfo

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(slots=True)
class CliContext:
    server: str | None = None
    token: str | None = None
    config_file: str | None = None
    kubeconfig: str | None = None
    context: str | None = None
    certificate_authority: str | None = None
    insecure_skip_tls_verify: bool = False
    transport: Any = None  # tests hand in an httpx transport; None means real sockets

    def client_config(self) -> ClientConfig:
        return resolve(
            ClientFlags(
                server=self.server,
                token=self.token,
                kubeconfig=self.kubeconfig,
                context=self.context,
                certificate_authority=self.certificate_authority,
                insecure_skip_tls_verify=self.insecure_skip_tls_verify,
            )
        )

    @contextmanager
    def client(self) -> Iterator[FederationClient]:
        client = FederationClient(self.client_config(), transport=self.transport)
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
