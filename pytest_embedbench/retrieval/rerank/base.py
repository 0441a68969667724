"""The reranker every second stage is: :class:`Reranker` scores one query's candidates.

A reranker sees a query's text and the first stage's top ``depth`` documents, and returns one
score per document, in the order given (higher is better). The stage (:mod:`.run`) sorts them
by the project's tie rule, times each query and checks what came back; a reranker only scores.

Usage::

    @register_reranker
    class Reversed(Reranker):
        name = "reversed"
        def score(self, query, documents):
            return [float(i) for i in range(len(documents))]   # the first stage, upside down
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from ...core.types import Document

__all__ = ["Reranker"]


class Reranker(ABC):
    """Scores a query's candidate documents (``score``), loaded once (``load``).

    ``model`` is what the spec names after the family (``hf-ce:/models/ce`` -> ``/models/ce``);
    ``options`` are the spec's keyword options. ``depth``, when a Python object is given in
    the marker (``rerankers=[Reversed(depth=20)]``), is how deep it reranks. ``free`` says
    whether scoring costs money (local models: no); ``price_per_1m_tokens`` is the list price
    of what :meth:`count_tokens` counts, for the cost per 1,000 queries."""

    #: the family name a spec starts with (``hf-ce``), the registry's key
    name: ClassVar[str] = ""
    #: options this family takes (a spec's ``name=`` options outside them are an error)
    options_taken: ClassVar[frozenset[str]] = frozenset()
    free: ClassVar[bool] = True
    #: what :meth:`count_units` counts, when the vendor bills by something else than tokens
    #: (``"search units"``); "" when it counts nothing
    unit: ClassVar[str] = ""

    def __init__(self, model: str = "", *, depth: int | None = None, **options: Any) -> None:
        self.model = model
        self.depth = depth
        self.options = dict(options)
        self.price_per_1m_tokens: float | None = options.get("price_per_1m_tokens")
        #: USD per 1,000 of :attr:`unit` (search units, queries), for the cost per 1,000 queries
        self.price_per_1k_units: float | None = None
        #: what the reports keep of this reranker beside its description (weights, prompt and
        #: its hash, requests and retries ...), filled once it has run
        self.info: dict[str, Any] = {}
        self._loaded = False

    @classmethod
    def handles(cls, model: str) -> bool:
        """Whether this family reranks with ``model`` (a family that is an embedding provider
        too, ``cohere``, reranks with its rerank models and rescores with the others)."""
        return True

    def ensure_loaded(self) -> None:
        """:meth:`load` once."""
        if not self._loaded:
            self.load()
            self._loaded = True

    def load(self) -> None:  # noqa: B027 - an optional hook, empty by default
        """Load weights or open a client (called once, before the first query)."""

    def begin_run(self) -> None:  # noqa: B027 - an optional hook, empty by default
        """Called before each run over a first stage (after :meth:`load`): a reranker that
        counts requests starts this run's count here."""

    @abstractmethod
    def score(self, query: str, documents: Sequence[Document]) -> Sequence[float]:
        """One score per document of ``documents`` (in their order; higher ranks first)."""

    def count_tokens(self, query: str, documents: Sequence[Document]) -> int | None:
        """The tokens scoring this query's candidates sends (None: not counted)."""
        return None

    def count_units(self, query: str, documents: Sequence[Document]) -> float | None:
        """The :attr:`unit` s scoring this query's candidates was billed (None: not counted)."""
        return None

    def is_free(self) -> bool:
        """Whether scoring costs nothing (a local model); a hosted reranker says no."""
        return self.free

    def describe(self) -> str:
        """What this reranker is, for the reports (its class and model)."""
        return f"{type(self).__name__}({self.model!r})" if self.model else type(self).__name__

    @property
    def short_name(self) -> str:
        """The name a test id shows: the model's last path part, else the family."""
        tail = self.model.rstrip("/").rsplit("/", 1)[-1] if self.model else ""
        return tail or self.name or type(self).__name__
