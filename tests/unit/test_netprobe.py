"""The TCP probe before a client that would retry for minutes: a real listening socket, a
closed port, and Ray addresses nobody listens on, which are errors at once (Ray itself keeps
retrying such an address for minutes)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from pytest_embedbench.core.exceptions import ConfigError
from pytest_embedbench.core.netprobe import tcp_unreachable


@pytest.fixture
def listening() -> Iterator[int]:
    """A port on 127.0.0.1 with a server socket listening on it."""
    server = socket.create_server(("127.0.0.1", 0))
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        return int(server.getsockname()[1])


def test_a_listening_port_is_reachable(listening: int) -> None:
    assert tcp_unreachable("127.0.0.1", listening, 3.0) is None


def test_a_closed_port_says_why(closed_port: int) -> None:
    assert tcp_unreachable("127.0.0.1", closed_port, 3.0) == (
        f"127.0.0.1:{closed_port}: ConnectionRefusedError: [Errno 111] Connection refused"
    )


def test_ray_addresses(listening: int, closed_port: int) -> None:
    from pytest_embedbench.distributed import address_unreachable

    assert address_unreachable("auto") is None and address_unreachable("local") is None
    assert address_unreachable(f"127.0.0.1:{listening}") is None
    assert address_unreachable(f"ray://127.0.0.1:{listening}") is None
    assert address_unreachable(f"ray://127.0.0.1:{closed_port}") == (
        f"127.0.0.1:{closed_port}: ConnectionRefusedError: [Errno 111] Connection refused"
    )
    assert address_unreachable("ray://") == "'ray://' names no HOST:PORT"
    assert address_unreachable("head:port") == "'head:port' names no HOST:PORT"


@pytest.mark.parametrize("scheme", ["", "ray://"])
def test_connecting_to_a_ray_nobody_runs_is_an_error_at_once(scheme: str, closed_port: int) -> None:
    ray = pytest.importorskip(
        "ray", reason="Ray is not installed: pip install 'pytest-embedbench[ray]'"
    )
    from pytest_embedbench.distributed import connect

    if ray.is_initialized():
        pytest.skip("a Ray is running in this process: connect would use it")
    address = f"{scheme}127.0.0.1:{closed_port}"
    with pytest.raises(
        ConfigError,
        match=rf"cannot reach a Ray cluster at '{address}': 127\.0\.0\.1:{closed_port}: "
        r"ConnectionRefusedError.*or use 'local'",
    ):
        connect(address)
    assert not ray.is_initialized()
