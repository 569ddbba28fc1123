"""A listening socket bound before uvicorn starts, so port 0 resolves to a real port the caller can print
and write into a config (the API server and the member simulator both need that). Outside the layers:
it depends on nothing of ours."""

from __future__ import annotations

import socket


def bind_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock
