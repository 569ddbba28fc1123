"""Per-cluster clients: the ``MemberClient`` protocol and its implementation over the ``kubernetes`` package.

Invariants:
- Every request has a timeout (connect, read) and no hidden retries (urllib3 retries are off), so a dead
  member costs at most one timeout per call; callers decide about retrying.
- Every failure is a ``MemberError`` naming the cluster: ``kind`` is one of kubeconfig, unreachable, timeout,
  unauthorized, forbidden, not_found, conflict, invalid, api.
- ``apply`` is server-side apply with field manager ``federation`` and ``force=true``; server-owned fields
  are stripped from the manifest first. A namespace the client has not yet seen on the member is created
  before the first apply into it (201, or 409: it exists); one that went missing since (404) is created and
  the apply retried.
- Resource names come from discovery (cached per group/version, refreshed on a miss); a kind the member
  does not advertise falls back to Kubernetes' plural guess, so objects of unlisted kinds still round-trip.
- LISTs are paged (``LIST_PAGE`` objects, ``limit``/``continue`` as kubectl) and their pages handed over
  one at a time (``visit_labelled``, the pods of ``resource_summary``): at most one page of a member's
  objects is in memory (a decoded object is 6-9 KB), whatever the member holds.
- ``watch`` streams a WATCH's events a line at a time (the official client's ``iter_resp_lines``) with a
  read timeout past the server's ``timeoutSeconds``: a member that stops answering ends the stream with a
  ``MemberError`` instead of hanging it. A ``WatchStream`` is closed from another thread by its ``close``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol
from urllib.parse import quote

import httpx
import kubernetes.client
import kubernetes.config
import urllib3
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from kubernetes.watch.watch import iter_resp_lines

from federation import jsoncodec
from federation.members.discovery import Discovery, enablements_from
from federation.members.errors import KubeconfigError, MemberError
from federation.members.kubeconfig import Kubeconfig, load_kubeconfig
from federation.members.probe import ProbeResult, make_http_client, probe
from federation.members.summary import ClusterSummary, PodTotals, summarize_totals

FIELD_MANAGER = "federation"
APPLY_CONTENT_TYPE = "application/apply-patch+yaml"
_SERVER_METADATA = (
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
_KINDS = {401: "unauthorized", 403: "forbidden", 404: "not_found", 409: "conflict", 422: "invalid"}


class MemberClient(Protocol):
    """What the control plane needs from one member cluster."""

    name: str

    def probe(self) -> ProbeResult: ...

    def version(self) -> str: ...

    def api_enablements(self) -> list[dict[str, Any]]: ...

    def resource_summary(self) -> ClusterSummary: ...

    def apply(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """Server-side apply; ``manifest`` is read only (callers hand over a Work's own, shared)."""
        ...

    def delete(self, api_version: str, kind: str, namespace: str | None, name: str) -> bool: ...

    def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None: ...

    def list_labelled(self, api_version: str, kind: str, selector: str) -> list[dict[str, Any]]: ...

    def visit_labelled(
        self, api_version: str, kind: str, selector: str, visit: Callable[[list[dict[str, Any]]], None]
    ) -> None: ...

    def close(self) -> None: ...


def _build_api_client(name: str, config: Kubeconfig) -> kubernetes.client.ApiClient:
    configuration = kubernetes.client.Configuration()
    try:
        kubernetes.config.load_kube_config_from_dict(
            config.minimal, client_configuration=configuration, persist_config=False
        )
    except (ConfigException, ValueError, TypeError) as exc:
        raise KubeconfigError(name, f"kubeconfig rejected by the kubernetes client: {exc}") from exc
    configuration.retries = 0  # one attempt per call; the caller's loop retries with backoff
    # The loader installs a hook that re-applies the kubeconfig before every request, for tokens that expire
    # (exec plugins, auth providers). Ours are static (``load_kubeconfig`` accepts a token or a client
    # certificate, nothing that expires; new credentials replace the client), and the hook's re-application
    # walks the process environment for proxy settings on every call: a few percent of a busy controller
    # process's CPU, for nothing.
    configuration.refresh_api_key_hook = None
    return kubernetes.client.ApiClient(configuration)


LIST_PAGE = 500  # objects per LIST page (kubectl's chunk size)
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")  # in every cluster
Visit = Callable[[list[dict[str, Any]]], None]  # takes one LIST page's items


class KubernetesMemberClient:
    """A ``MemberClient`` over the official ``kubernetes`` client (requests) and httpx (probes)."""

    def __init__(
        self,
        name: str,
        kubeconfig: dict[str, Any],
        *,
        context: str | None = None,
        timeout: float = 10.0,
        connect_timeout: float = 5.0,
        probe_transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.name = name
        self.config = load_kubeconfig(kubeconfig, context, cluster=name)
        self.timeout = (connect_timeout, timeout)
        self._api = _build_api_client(name, self.config)
        self._headers: dict[str, dict[str, str]] = {}  # content type → the headers of every request with it
        self._http = make_http_client(self.config, timeout, probe_transport)
        self._discovery = Discovery(self._get_json)
        # Namespaces known to exist on the member (every cluster has the system ones); an apply into another
        # creates it first (``_create_namespace_first``).
        self._namespaces: set[str] = set(SYSTEM_NAMESPACES)
        self._streams: set[Any] = set()  # open WATCH responses, which ``interrupt`` ends
        self._streams_lock = threading.Lock()
        self.closed = False

    # --- plumbing ---------------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> Any:
        """One API call; returns the decoded JSON body. Raises ``MemberError`` for every failure."""
        try:
            url, headers = self._url(path, query), self._headers_for(content_type)
            response = self._api.call_api(method, url, headers, body, None, _request_timeout=self.timeout)
            response.read()
        except ApiException as exc:
            raise self._api_error(method, path, exc.status, exc.body or exc.reason) from exc
        except urllib3.exceptions.HTTPError as exc:
            raise self._transport_error(exc) from exc
        if not 200 <= response.status <= 299:
            raise self._api_error(method, path, response.status, response.data)
        return jsoncodec.loads(response.data) if response.data else None

    def _headers_for(self, content_type: str) -> dict[str, str]:
        """A fresh copy of the headers the client's ``param_serialize`` gives a request with this content
        type (Accept, User-Agent, the bearer token), made once per type: serialising them again for every
        call (sanitising, the auth settings' lookup) was ~10% of an apply's CPU on the client side. The
        token is static (``_build_api_client``): they never go stale. The copy is the caller's to change."""
        headers = self._headers.get(content_type)
        if headers is None:
            _, _, serialised, _, _ = self._api.param_serialize(
                "GET",
                "/",
                header_params={"Accept": "application/json", "Content-Type": content_type},
                auth_settings=["BearerToken"],
            )
            headers = self._headers[content_type] = dict(serialised)
        return dict(headers)

    def _url(self, path: str, query: list[tuple[str, str]] | None) -> str:
        """The request's URL as ``param_serialize`` writes it: the server, the path, each query value
        quoted (``urllib.parse.quote``, "/" kept)."""
        url = self._api.configuration.host + path
        if query:
            url += "?" + "&".join(f"{key}={quote(str(value))}" for key, value in query)
        return url

    def _get_json(self, path: str) -> Any:
        return self.request("GET", path)

    def _api_error(self, method: str, path: str, status: int | None, body: Any) -> MemberError:
        if not status:  # the client maps some transport failures (TLS) to status 0
            return MemberError(self.name, f"{method} {path} failed: {body}", kind="unreachable")
        message = _status_message(body)
        kind = _KINDS.get(status, "api")
        return MemberError(self.name, f"{method} {path}: {status} {message}", kind=kind, status=status)

    def _transport_error(self, exc: Exception) -> MemberError:
        reason = getattr(exc, "reason", None) or exc
        # NewConnectionError subclasses ConnectTimeoutError in urllib3, yet means "refused/unresolvable".
        if isinstance(reason, urllib3.exceptions.NewConnectionError):
            return MemberError(
                self.name, f"unreachable at {self.config.server}: {reason}", kind="unreachable"
            )
        if isinstance(reason, urllib3.exceptions.TimeoutError) or "timed out" in str(reason).lower():
            return MemberError(
                self.name,
                f"timed out after {self.timeout[1]}s talking to {self.config.server}",
                kind="timeout",
            )
        return MemberError(self.name, f"unreachable at {self.config.server}: {reason}", kind="unreachable")

    # --- the protocol -----------------------------------------------------------------------------

    def probe(self) -> ProbeResult:
        return probe(self._http)

    def version(self) -> str:
        return str((self.request("GET", "/version") or {}).get("gitVersion", ""))

    def api_enablements(self) -> list[dict[str, Any]]:
        return enablements_from(self._discovery.all_resource_lists())

    def resource_summary(self) -> ClusterSummary:
        nodes: list[dict[str, Any]] = []
        self._visit_pages("/api/v1/nodes", [], nodes.extend)
        pods = PodTotals()  # summed a page at a time: a member's pods are never all in memory
        self._visit_pages("/api/v1/pods", [], pods.add)
        return summarize_totals(nodes, pods)

    def apply(self, manifest: dict[str, Any]) -> dict[str, Any]:
        body = _applicable(manifest)
        meta = body["metadata"]
        _, namespaced = self._discovery.resolve(body["apiVersion"], body["kind"], meta.get("namespace"))
        if namespaced:
            meta.setdefault("namespace", "default")
        path = self._object_path(body["apiVersion"], body["kind"], meta.get("namespace"), meta["name"])
        query = [("fieldManager", FIELD_MANAGER), ("force", "true")]
        # Encoded here (JSON is YAML): the client sends bytes as they are, where it would walk a dict
        # (``sanitize_for_serialization``) and encode it with the standard library on every call.
        encoded = jsoncodec.dumps_bytes(body)
        patch = functools.partial(
            self.request, "PATCH", path, query=query, body=encoded, content_type=APPLY_CONTENT_TYPE
        )
        namespace = str(meta["namespace"]) if namespaced else None
        if namespace is not None and namespace not in self._namespaces:
            self._create_namespace_first(namespace)
        try:
            applied = dict(patch())
        except MemberError as err:
            if err.kind != "not_found" or namespace is None:
                raise
            self.ensure_namespace(namespace)  # deleted since this client saw it, or not ours to create
            applied = dict(patch())
        if namespace is not None:
            self._namespaces.add(namespace)
        return applied

    def _create_namespace_first(self, namespace: str) -> None:
        """Before the first apply into a namespace this client has not seen on the member: create it (201,
        or 409 where it exists). Where it is missing that is two calls (create, apply), not three (an apply
        answered 404, the create, the apply again); where it exists, one more call once per namespace in the
        client's life. An identity that may not create namespaces (403) applies as before."""
        try:
            self.ensure_namespace(namespace)
        except MemberError as err:
            if err.kind != "forbidden":
                raise

    def ensure_namespace(self, namespace: str) -> None:
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        try:
            self.request("POST", "/api/v1/namespaces", body=body)
        except MemberError as err:
            if err.kind != "conflict":
                raise
        self._namespaces.add(namespace)

    def delete(self, api_version: str, kind: str, namespace: str | None, name: str) -> bool:
        path = self._object_path(api_version, kind, namespace, name)
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
        try:
            self.request("DELETE", path, body=body)
        except MemberError as err:
            if err.kind == "not_found":
                return False
            raise
        return True

    def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        try:
            return dict(self.request("GET", self._object_path(api_version, kind, namespace, name)))
        except MemberError as err:
            if err.kind == "not_found":
                return None
            raise

    def list_labelled(self, api_version: str, kind: str, selector: str) -> list[dict[str, Any]]:
        """Every object of the kind, in all namespaces, that matches the label ``selector``: one LIST
        (paged by ``limit``/``continue`` as kube-apiserver pages), whatever the number of objects."""
        items: list[dict[str, Any]] = []
        self.visit_labelled(api_version, kind, selector, items.extend)
        return items

    def visit_labelled(self, api_version: str, kind: str, selector: str, visit: Visit) -> None:
        """``list_labelled`` a page at a time: ``visit`` gets each page's items, and the page is dropped
        before the next is read (what a caller that only matches or sums the objects needs)."""
        self._visit_pages(self._collection_path(api_version, kind), [("labelSelector", selector)], visit)

    def list_for_watch(self, api_version: str, kind: str, selector: str, visit: Visit) -> str:
        """``visit_labelled``, returning the LIST's resourceVersion (its first page's, as the API server
        serves every page of a LIST at the first one's): a ``watch`` from it sees every later change."""
        return self._visit_pages(
            self._collection_path(api_version, kind), [("labelSelector", selector)], visit
        )

    def watch(
        self, api_version: str, kind: str, selector: str, resource_version: str, timeout_seconds: int
    ) -> WatchStream:
        """The events of a WATCH from ``resource_version`` (bookmarks asked for), one decoded line at a
        time, until the server ends the stream after ``timeout_seconds`` or it is closed (``close``, from
        any thread). An ``ERROR`` event is handed over as it came (410 Expired: list again)."""
        path = self._collection_path(api_version, kind)
        query = [
            ("labelSelector", selector),
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(timeout_seconds)),
        ]
        try:
            url, headers = self._url(path, query), self._headers_for("application/json")
            # The server ends the stream at its timeout; reading longer than that means it went away.
            timeout = (self.timeout[0], timeout_seconds + self.timeout[1])
            response = self._api.call_api("GET", url, headers, None, None, _request_timeout=timeout).response
        except ApiException as exc:
            raise self._api_error("WATCH", path, exc.status, exc.body or exc.reason) from exc
        except urllib3.exceptions.HTTPError as exc:
            raise self._transport_error(exc) from exc
        if not 200 <= response.status <= 299:
            raise self._api_error("WATCH", path, response.status, response.data)
        stream = WatchStream(response, self._transport_error, lambda: self._streams.discard(stream))
        with self._streams_lock:
            self._streams.add(stream)
        return stream

    def interrupt(self) -> None:
        """Close every open ``watch`` stream of this client (when the client closes)."""
        with self._streams_lock:
            streams = list(self._streams)
        for stream in streams:
            stream.close()

    def _collection_path(self, api_version: str, kind: str) -> str:
        plural, _ = self._discovery.resolve(api_version, kind, None)
        prefix = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        return f"{prefix}/{plural}"

    def _visit_pages(self, path: str, query: list[tuple[str, str]], visit: Visit) -> str:
        """Every page of a LIST handed to ``visit``; the first page's resourceVersion."""
        token, version = "", None
        while True:
            paging = [("limit", str(LIST_PAGE))] + ([("continue", token)] if token else [])
            page = self.request("GET", path, query=[*query, *paging]) or {}
            meta = page.get("metadata") or {}
            token = str(meta.get("continue") or "")
            version = str(meta.get("resourceVersion") or "") if version is None else version
            items = page.get("items") or []
            del page
            visit(items)
            del items  # before the next page is read: one page in memory at a time
            if not token:
                return version

    def close(self) -> None:
        self.closed = True
        self.interrupt()
        self._http.close()
        self._api.close()

    def _object_path(self, api_version: str, kind: str, namespace: str | None, name: str) -> str:
        plural, namespaced = self._discovery.resolve(api_version, kind, namespace)
        prefix = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        scope = f"/namespaces/{namespace or 'default'}" if namespaced else ""
        return f"{prefix}{scope}/{plural}/{name}"


class WatchStream:
    """One open WATCH: iterating it yields its decoded events until the server ends it; ``close`` (from any
    thread) cuts it, and the iteration then ends. A transport failure while reading is a ``MemberError``."""

    def __init__(
        self, response: Any, transport_error: Callable[[Exception], MemberError], forget: Callable[[], None]
    ) -> None:
        self._response = response
        self._transport_error = transport_error
        self._forget = forget
        self._closed = False

    def __iter__(self) -> Iterator[dict[str, Any]]:
        try:
            for line in iter_resp_lines(self._response):
                if line:
                    yield jsoncodec.loads(line)
        except (urllib3.exceptions.HTTPError, OSError, AttributeError) as exc:
            if self._closed:  # cut on purpose: the end of the stream
                return
            # AttributeError: urllib3 reading a response whose socket was shut down under it.
            raise self._transport_error(exc) from exc
        finally:
            self._forget()
            self._response.release_conn()

    def close(self) -> None:
        self._closed = True
        # Shut down already, its socket gone, or its connection back in the pool (ValueError, OSError,
        # RuntimeError): nothing left to cut.
        with contextlib.suppress(ValueError, OSError, RuntimeError):
            self._response.shutdown()


def _applicable(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest without server-owned fields (status, resourceVersion, ...), validated for identity.

    A copy of the top level and of ``metadata`` (what is removed or set here); the rest is shared with
    ``manifest``, which is only read."""
    body = dict(manifest)
    meta = body.get("metadata")
    if isinstance(meta, dict):
        meta = body["metadata"] = dict(meta)
    if (
        not body.get("apiVersion")
        or not body.get("kind")
        or not isinstance(meta, dict)
        or not meta.get("name")
    ):
        raise ValueError("a manifest needs apiVersion, kind and metadata.name")
    for key in _SERVER_METADATA:
        meta.pop(key, None)
    body.pop("status", None)
    return body


def _status_message(body: Any) -> str:
    """The ``message`` of a Kubernetes Status body, else the body's first line."""
    text = body.decode(errors="replace") if isinstance(body, bytes) else str(body)
    try:
        decoded = json.loads(text)
    except ValueError:
        return text.strip().splitlines()[0] if text.strip() else ""
    if isinstance(decoded, dict):
        return str(decoded.get("message") or decoded.get("reason") or text)
    return text
