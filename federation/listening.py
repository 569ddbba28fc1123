"""A listening socket bound before uvicorn starts, so port 0 resolves to a real port the caller can print
and write into a config (the API server and the member simulator both need that). Outside the layers:
it depends on nothing of ours.

Invariant: connections accepted on it have TCP_NODELAY. asyncio sets it only on sockets whose ``proto``
is IPPROTO_TCP (a socket made with proto 0 never gets it), and without it every small response of a
keep-alive connection waits ~40 ms for the client's delayed ACK (Nagle). The listening socket carries
the option too, which Linux copies to accepted sockets.

Idle connections are kept as kube-apiserver and client-go keep them: a server closes a connection idle for
``SERVER_IDLE_SECONDS``, a client drops one idle for ``CLIENT_IDLE_SECONDS``. Both outlast the 10 s between
a Pull agent's lease renewals and between a cluster's health probes; uvicorn's and httpx's default, 5 s, did
not, so each renewal and each probe opened a connection (and did a TLS handshake) of its own.
"""

from __future__ import annotations

import socket

# kube-apiserver's ``IdleTimeout`` ("matches http.DefaultTransport keep-alive timeout": client-go's).
SERVER_IDLE_SECONDS = 90
# Below the server's, and below the 60 s a load balancer in front of an API server commonly allows, so a
# client does not reuse a connection the other side is closing.
CLIENT_IDLE_SECONDS = 30.0


def bind_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock
