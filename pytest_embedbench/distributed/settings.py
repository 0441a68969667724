"""Where and how wide a Ray embedding runs (:class:`RaySettings`), what one run did
(:class:`RayEmbedReport`), connecting to Ray, and which providers Ray is for."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.exceptions import ConfigError
from ..core.netprobe import tcp_unreachable

if TYPE_CHECKING:
    from ..models.providers import Provider

__all__ = [
    "RAY_INSTALL",
    "Progress",
    "RayEmbedReport",
    "RaySettings",
    "address_unreachable",
    "connect",
    "hosted_reason",
    "require_ray",
]

RAY_INSTALL = "pip install 'pytest-embedbench[ray]'"
Progress = Callable[[int, int], None]


def require_ray() -> Any:
    """The ``ray`` module (with Ray Data), or a ConfigError that names the pip command."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"embedding through Ray needs Ray Data ({exc}): {RAY_INSTALL}") from None
    return ray


@dataclass(frozen=True)
class RaySettings:
    """Where and how wide: ``address`` (``auto``, ``ray://HOST:PORT`` or ``local``), the
    number of ``workers`` (actors, each with its own copy of the model), the CPUs and GPUs each
    reserves, ``batch_size`` (texts per batch sent to a worker; default the provider's), and
    Ray's fault settings: ``max_restarts`` of a worker that dies, ``max_task_retries`` of its
    batch. ``local_cpus``: the CPUs a ``local`` Ray gets (default: all of this machine's)."""

    address: str = "auto"
    workers: int = 2
    cpus_per_worker: float = 1.0
    gpus_per_worker: float = 0.0
    batch_size: int | None = None
    max_restarts: int = 3
    max_task_retries: int = 3
    local_cpus: int | None = None

    def __post_init__(self) -> None:
        address = self.address.strip()
        if not address:
            raise ConfigError("Ray address is empty: use 'auto', 'local' or 'ray://HOST:PORT'")
        object.__setattr__(self, "address", address)
        if self.workers < 1:
            raise ConfigError(f"Ray workers={self.workers}: must be at least 1")
        if self.cpus_per_worker < 0 or self.gpus_per_worker < 0:
            raise ConfigError(
                f"Ray CPUs/GPUs per worker must be >= 0 (got {self.cpus_per_worker}, "
                f"{self.gpus_per_worker})"
            )
        if self.batch_size is not None and self.batch_size < 1:
            raise ConfigError(f"Ray batch_size={self.batch_size}: must be at least 1")
        if self.max_restarts < 0 or self.max_task_retries < 0:
            raise ConfigError("Ray max_restarts and max_task_retries must be >= 0")


@dataclass
class RayEmbedReport:
    """What one call did: documents in total, found in the cache, embedded through Ray (in
    ``batches`` batches) and the wall seconds of the Ray part."""

    model: str
    namespace: str
    documents: int
    cached: int
    embedded: int
    batches: int = 0
    seconds: float = 0.0
    workers: int = 0
    #: seconds from the start of the Ray part to the first batch back (actors loading models)
    first_batch_s: float | None = None
    batch_sizes: list[int] = field(default_factory=list)

    @property
    def documents_per_s(self) -> float | None:
        """Documents embedded per wall second through Ray (None when none were)."""
        return self.embedded / self.seconds if self.embedded and self.seconds > 0 else None

    def line(self) -> str:
        rate = self.documents_per_s
        speed = f", {rate:,.1f} documents/s" if rate else ""
        return (
            f"{self.model}: {self.documents:,} documents, {self.cached:,} already cached, "
            f"{self.embedded:,} embedded through Ray by {self.workers} worker(s) in "
            f"{self.seconds:.1f} s{speed}"
        )


def connect(address: str, *, num_cpus: int | None = None) -> bool:
    """Connect this process to Ray (``auto``, ``ray://...``) or start one here (``local``);
    a Ray already initialised is used as it is. Returns whether this call started it."""
    ray = require_ray()
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": "WARNING"}
    if address == "local":
        if num_cpus is not None:
            kwargs["num_cpus"] = num_cpus
    else:
        if not (address == "auto" or address.startswith("ray://") or ":" in address):
            raise ConfigError(
                f"Ray address {address!r}: use 'auto', 'local', 'ray://HOST:PORT' or HOST:PORT"
            )
        kwargs = {"address": address, "logging_level": "WARNING"}
        why = address_unreachable(address)
        if why is not None:
            raise ConfigError(
                f"cannot reach a Ray cluster at {address!r}: {why}. Check the address (Ray "
                "Client listens on port 10001, the GCS of ray start --head on 6379), or use "
                "'local' to start a Ray on this machine"
            )
    try:
        ray.init(**kwargs)
    except (ConnectionError, ValueError) as exc:  # ValueError: ray:// without ray[client]
        raise ConfigError(
            f"cannot reach a Ray cluster at {address!r}: {exc}. Start one (ray start --head), "
            "or use the address 'local' to start one on this machine"
        ) from None
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False  # the caller's progress is fed by the batches themselves
    ctx.print_on_execution_start = False
    return True


#: seconds to wait for a TCP connection to a Ray address before calling it unreachable
RAY_PROBE_TIMEOUT = 3.0


def address_unreachable(address: str) -> str | None:
    """Why nothing answers at a ``ray://HOST:PORT`` or ``HOST:PORT`` address (None when a TCP
    connection opens, and for ``auto``, which Ray looks up on this machine at once): Ray itself
    retries an address nobody listens on for minutes."""
    if address in ("auto", "local"):
        return None
    rest = address.removeprefix("ray://")
    host, colon, port = rest.rpartition(":")
    if not colon and rest != address:  # ray://HOST: Ray Client's default port
        host, port = rest, "10001"
    host = host.strip("[]")  # [::1]:10001
    if not host or not port.isdigit():
        return f"{address!r} names no HOST:PORT"
    return tcp_unreachable(host, int(port), RAY_PROBE_TIMEOUT)


def hosted_reason(provider: Provider) -> str | None:
    """Why ``provider`` is not embedded through Ray (None when it is)."""
    from ..models.providers.base import EmbeddingProvider

    if not isinstance(provider, EmbeddingProvider):
        return f"{provider.name!r} ranks documents itself and embeds nothing"
    if provider.hosted:
        return (
            f"{provider.name}:{provider.model} is a hosted API: Ray gains little for it (the "
            "work is on the vendor's side); raise its max_concurrency option instead"
        )
    return None
