"""The shape a kubeconfig sent in a join body must have before anything reads it.

Invariants:
- Only the fields the server reads are typed (the cluster's server, CA and TLS flag, the user's token and
  client certificate, the context's cluster/user/namespace, the named lists and current-context); every
  other field is kept and ignored, as client-go ignores fields it does not know.
- A wrong type is a list of causes at kubeconfig field paths (``kubeconfig.clusters``,
  ``kubeconfig.users[0].user.token``), never an exception in the code that reads it afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr

from federation.model.meta import FieldError
from federation.model.validation import pydantic_errors


class _Shape(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class _ClusterFields(_Shape):
    server: StrictStr | None = None
    certificate_authority: StrictStr | None = Field(None, alias="certificate-authority")
    certificate_authority_data: StrictStr | None = Field(None, alias="certificate-authority-data")
    insecure_skip_tls_verify: StrictBool | None = Field(None, alias="insecure-skip-tls-verify")


class _UserFields(_Shape):
    token: StrictStr | None = None
    token_file: StrictStr | None = Field(None, alias="tokenFile")
    client_certificate: StrictStr | None = Field(None, alias="client-certificate")
    client_certificate_data: StrictStr | None = Field(None, alias="client-certificate-data")
    client_key: StrictStr | None = Field(None, alias="client-key")
    client_key_data: StrictStr | None = Field(None, alias="client-key-data")


class _ContextFields(_Shape):
    cluster: StrictStr | None = None
    user: StrictStr | None = None
    namespace: StrictStr | None = None


class _NamedCluster(_Shape):
    name: StrictStr
    cluster: _ClusterFields | None = None


class _NamedUser(_Shape):
    name: StrictStr
    user: _UserFields | None = None


class _NamedContext(_Shape):
    name: StrictStr
    context: _ContextFields | None = None


class _Kubeconfig(_Shape):
    clusters: list[_NamedCluster] | None = None
    users: list[_NamedUser] | None = None
    contexts: list[_NamedContext] | None = None
    current_context: StrictStr | None = Field(None, alias="current-context")


def shape_errors(kubeconfig: Mapping[str, Any], path: str = "kubeconfig") -> list[FieldError]:
    """Every field of ``kubeconfig`` with the wrong type, at its path under ``path``."""
    return pydantic_errors(_Kubeconfig, kubeconfig, prefix=path)
