"""A TCP listener on loopback that counts the connections it is given: a machine whose sshd is
broken (it hangs up at once) or stuck (it accepts and never speaks)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Listener:
    port: int
    accepted: int = 0
    _held: list[socket.socket] = field(default_factory=list)


@contextmanager
def counting_listener(silent: bool) -> Iterator[Listener]:
    """silent: keep each connection open without a word (a stuck server); else close it at once."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    listener = Listener(port=server.getsockname()[1])
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            listener.accepted += 1
            if silent:
                listener._held.append(conn)
            else:
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in listener._held:
            conn.close()
        server.close()
