"""Whether a TCP server answers, within a bound however slow name resolution is: the quick
check before a client library that would retry for minutes (the Hugging Face hub client, Ray's
GCS and Ray Client connections) is handed an address nobody listens on."""

from __future__ import annotations

import socket
import threading

__all__ = ["tcp_unreachable"]


def tcp_unreachable(host: str, port: int, timeout: float) -> str | None:
    """Why no TCP connection to ``host:port`` opens within ``timeout`` seconds, naming the
    address (None when one opens). The attempt runs in a daemon thread, so a name lookup that
    hangs is cut off too."""
    found: list[str | None] = []

    def probe() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            found.append(None)
        except OSError as exc:
            found.append(f"{host}:{port}: {type(exc).__name__}: {exc}")

    worker = threading.Thread(target=probe, daemon=True)
    worker.start()
    worker.join(timeout + 0.5)
    if not found:
        return f"no connection to {host}:{port} within {timeout:g} s"
    return found[0]
