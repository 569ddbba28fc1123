"""A listening socket bound before uvicorn starts, so port 0 resolves to a real port the caller can print
and write into a config (the API server and the member simulator both need that). Outside the layers:
it depends on nothing of ours.

Invariant: connections accepted on it have TCP_NODELAY. asyncio sets it only on sockets whose ``proto``
is IPPROTO_TCP (a socket made with proto 0 never gets it), and without it every small response of a
keep-alive connection waits ~40 ms for the client's delayed ACK (Nagle). The listening socket carries
the option too, which Linux copies to accepted sockets.
"""

from __future__ import annotations

import socket


def bind_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock
