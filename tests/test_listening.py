"""The listening socket the API server and the simulator serve on: accepted connections get TCP_NODELAY
(asyncio sets it only for sockets made with proto IPPROTO_TCP; without it a keep-alive response waits
for the client's delayed ACK)."""

from __future__ import annotations

import asyncio
import socket

from federation.listening import bind_socket


def test_asyncio_connections_accepted_on_it_have_tcp_nodelay() -> None:
    seen: list[int] = []

    async def main() -> None:
        sock = bind_socket("127.0.0.1", 0)
        port = sock.getsockname()[1]

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            accepted = writer.get_extra_info("socket")
            seen.append(accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(handle, sock=sock)
        async with server:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            await reader.read()  # the server closes once it has looked
            writer.close()

    asyncio.run(main())
    assert seen == [1]


def test_it_is_a_tcp_socket_with_the_option_set() -> None:
    sock = bind_socket("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    finally:
        sock.close()
