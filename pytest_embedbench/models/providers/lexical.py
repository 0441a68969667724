"""``bm25`` (bm25s) and ``hybrid:A+B`` (reciprocal rank fusion of two models).

``bm25`` options: ``k1`` (1.5), ``b`` (0.75), ``method`` (``"lucene"``), ``stopwords``
(``"en"``; a list, or None), ``stemmer`` (``"english"``; None for none), ``language`` (unset:
English words, as before; ``zh``, ``ja``, ``ko``, ``th`` segment those languages, a Latin-script
code takes its stop words and stemmer, ``auto`` picks per text from its script: see
``retrieval/lexical/languages.py``; ``subword``: a model tokenizer's subword tokens, for a
language with no segmenter here), ``fold`` (``zh`` and ``auto``: traditional characters
folded to simplified, default true) and ``tokenizer`` (the subword tokenizer of ``subword``
and of ``auto``'s texts in a script with no segmenter: a tokenizer.json path or a packaged
model's name; default: on a hybrid's lexical leg the other leg's tokenizer.json where it has
one here, else ``all-MiniLM-L6-v2``; ``info["subword_tokenizer"]`` says which and why).

``hybrid:A+B`` options: ``fusion`` (``rrf``, the default, or ``convex``: the weighted sum of
each leg's normalised scores), ``norm`` (``convex``'s normalisation: ``minmax``, the default,
or ``zscore``), ``rrf_k`` (60), ``weights`` (``[1.0, 1.0]``), ``tune`` (tune the first leg's
weight ``w`` of ``[w, 1 - w]`` by grid search on a named split, ``tune: dev``, or a seeded
share of the queries, ``tune: {share: 0.2}``: the figures are then scored on the other queries;
see ``evaluation/tuning.py``), ``depth`` (how many results each leg contributes; default
``max(100, k)``), ``left`` / ``right``: option mappings for the two legs, e.g.
``ModelSpec("hybrid:hf:...+bm25", right={"k1": 1.2})``, and ``language``: the lexical leg's
``language`` (``ModelSpec("hybrid:hf:...+bm25", language="zh")``; a leg's own wins). In
embedbench.yaml, ``providers: {bm25: {language: zh}}`` reaches a hybrid's bm25 leg as well.

The providers only build: the tokeniser, the index and the retriever of ``bm25`` are in
``retrieval/lexical/`` (``tokenize``, ``bm25``), the fusing retriever of ``hybrid:`` in
``retrieval/fusion.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ...core.exceptions import ConfigError
from ...retrieval.base import BuildStats, Retriever
from ...retrieval.fusion import FUSIONS, NORMS, HybridRetriever, TuneSettings
from ...retrieval.lexical.bm25 import BM25Index, BM25Retriever
from ...retrieval.lexical.languages import make_tokenizer
from ...retrieval.lexical.subword import DEFAULT_SUBWORD
from ...retrieval.lexical.tokenize import Tokenizer, require_bm25s
from .base import Provider, RankingProvider
from .registry import create_provider, provider_class, register_provider
from .spec import ModelSpec, split_hybrid

if TYPE_CHECKING:
    from ...cache.store import EmbeddingCache
    from ...core.types import Document


@register_provider
class BM25Provider(RankingProvider):
    """Lexical BM25 through bm25s."""

    name = "bm25"
    extra = "bm25"
    sdk_module = "bm25s"
    option_names: ClassVar[frozenset[str]] = frozenset(
        {"k1", "b", "method", "stopwords", "stemmer", "language", "fold", "tokenizer"}
    )
    _words: Tokenizer | None = None
    #: the model this bm25 is fused with (a hybrid's other leg): its tokenizer.json, where it
    #: has one here, is the default subword tokenizer
    fused_with: Provider | None = None

    def load(self) -> None:
        bm25s = require_bm25s()
        self.info["bm25s"] = getattr(bm25s, "__version__", "unknown")
        # made now: a missing segmenter, stemmer or a wrong option fails here, not mid-run
        self.word_tokenizer()

    def word_tokenizer(self) -> Tokenizer:
        """The tokeniser of this model's options (made once): its documents and its queries
        alike go through it. Without ``language``, bm25's default English words."""
        if self._words is None:
            given = {
                k: self.options[k]
                for k in ("stopwords", "stemmer", "fold", "tokenizer")
                if k in self.options
            }
            language = self.options.get("language")
            model_file = None
            if str(language).lower() in ("subword", "auto") and "tokenizer" not in given:
                model_file = self._model_tokenizer(str(language).lower())
            self._words = make_tokenizer(language, model_tokenizer=model_file, **given)
        return self._words

    def _model_tokenizer(self, language: str) -> Path | None:
        """The fused model's tokenizer.json (None: the default's, or, for ``auto``, none),
        the choice kept in ``info["subword_tokenizer"]`` for the report."""
        other = self.fused_with
        found = other.tokenizer_file() if other is not None else None
        if found is not None and other is not None:
            self.info["subword_tokenizer"] = f"{other.name}:{other.model}'s tokenizer.json"
            return found
        why = (
            f"the fused model {other.name}:{other.model} has no tokenizer.json on this machine"
            if other is not None
            else "no tokenizer option and no fused model"
        )
        self.info["subword_tokenizer"] = (
            f"{DEFAULT_SUBWORD} (the default: {why})"
            if language == "subword"
            else f"none ({why}): a text of a script with no segmenter goes to the words"
        )
        return None

    def namespace(self) -> dict[str, Any]:
        ns = super().namespace()
        ns["settings"] = self._settings()
        if {"language", "fold", "tokenizer"} & set(self.options):
            # the tokenisation with its libraries' versions: an index or a record of another
            # tokenisation never shares this key (the default's stays as it was)
            ns["tokenizer"] = self.word_tokenizer().fingerprint
        ns["revision"] = self.info.get("bm25s")
        return ns

    def _settings(self) -> dict[str, Any]:
        return {
            "k1": float(self.options.get("k1", 1.5)),
            "b": float(self.options.get("b", 0.75)),
            "method": self.options.get("method", "lucene"),
            "stopwords": self.options.get("stopwords", "en"),
            "stemmer": self.options.get("stemmer", "english"),
        }

    def build(
        self,
        documents: Sequence[Document],
        *,
        cache: EmbeddingCache | None = None,
        stats: BuildStats | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> Retriever:
        stats = stats if stats is not None else BuildStats()
        self.ensure_loaded()
        t0 = time.perf_counter()
        settings = self._settings()
        index = BM25Index(
            [d.embed_text for d in documents],
            [d.id for d in documents],
            tokenizer=self.word_tokenizer(),
            k1=settings["k1"],
            b=settings["b"],
            method=settings["method"],
        )
        stats.index_build_s += time.perf_counter() - t0
        stats.documents += len(documents)
        if progress is not None:
            progress(len(documents), len(documents))
        return BM25Retriever(index)


@register_provider
class HybridProvider(RankingProvider):
    """Fusion of two models: ``hybrid:A+B`` (reciprocal rank fusion, or a convex combination
    of normalised scores with a given or tuned weight)."""

    name = "hybrid"
    needs_model = True
    option_names: ClassVar[frozenset[str]] = frozenset(
        {"rrf_k", "weights", "depth", "left", "right", "fusion", "norm", "tune", "language"}
    )

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)
        left, right = split_hybrid(model)
        specs = (left, right)
        legs = [dict(options.get("left") or {}), dict(options.get("right") or {})]
        if options.get("language") is not None:
            _pass_language(options["language"], specs, legs)
        self.legs: list[Provider] = [
            create_provider(ModelSpec(spec, **leg)) for spec, leg in zip(specs, legs, strict=True)
        ]
        for leg, other in zip(self.legs, self.legs[::-1], strict=True):
            if isinstance(leg, BM25Provider):  # its subword tokens default to the other's
                leg.fused_with = other
        self.fusion = str(options.get("fusion", "rrf"))
        if self.fusion not in FUSIONS:
            raise ConfigError(
                f"hybrid fusion={options['fusion']!r}: use rrf (reciprocal rank fusion) or "
                "convex (a weighted sum of normalised scores)"
            )
        self.norm = str(options.get("norm", "minmax"))
        if self.norm not in NORMS:
            raise ConfigError(f"hybrid norm={options['norm']!r}: use minmax or zscore")
        if "norm" in options and self.fusion != "convex":
            raise ConfigError(
                "hybrid norm: only the convex fusion normalises scores; add fusion: convex, "
                "or drop norm (rrf reads only ranks)"
            )
        self.tune = TuneSettings.parse(options.get("tune"))
        if self.tune is not None and "weights" in options:
            raise ConfigError(
                "hybrid: give weights or tune, not both (tune searches the first leg's weight "
                "w of [w, 1 - w] on its own queries)"
            )
        weights = options.get("weights", (1.0, 1.0))
        if len(weights) != 2 or any(float(w) < 0 for w in weights):
            raise ConfigError(
                f"hybrid weights {weights!r}: give two non-negative numbers, e.g. [1.0, 0.5]"
            )
        self.weights = [float(w) for w in weights]
        self.rrf_k = float(options.get("rrf_k", 60))
        depth = options.get("depth")
        self.depth = int(depth) if depth is not None else None
        if self.depth is not None and self.depth < 1:
            raise ConfigError(f"hybrid depth={depth!r} must be at least 1")

    def load(self) -> None:
        for leg in self.legs:
            leg.ensure_loaded()

    def encode_seconds(self) -> float:
        return sum(leg.encode_seconds() for leg in self.legs)

    def document_batch_seconds(self) -> list[float]:
        return [s for leg in self.legs for s in leg.document_batch_seconds()]

    def vector_dimension(self) -> int | None:
        return next((d for leg in self.legs if (d := leg.vector_dimension())), None)

    def reset_vram_peak(self) -> None:
        for leg in self.legs:
            leg.reset_vram_peak()

    def vram_peak_mb(self) -> tuple[float | None, str | None]:
        for leg in self.legs:
            found = leg.vram_peak_mb()
            if found[0] is not None:
                return found
        return None, None

    def tokenizer(self) -> Any:
        """The first leg's own tokenizer (both legs search the same chunks)."""
        for leg in self.legs:
            found = leg.tokenizer()
            if found is not None:
                return found
        return None

    def namespace(self) -> dict[str, Any]:
        ns = super().namespace()
        ns["legs"] = [leg.namespace() for leg in self.legs]
        return ns

    def build(
        self,
        documents: Sequence[Document],
        *,
        cache: EmbeddingCache | None = None,
        stats: BuildStats | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> Retriever:
        stats = stats if stats is not None else BuildStats()
        self.ensure_loaded()
        legs = [
            leg.build(documents, cache=cache, stats=stats, progress=progress) for leg in self.legs
        ]
        stats.documents = len(documents)
        self.info["legs"] = [dict(leg.info) for leg in self.legs]
        return HybridRetriever(
            legs,
            rrf_k=self.rrf_k,
            weights=self.weights,
            depth=self.depth,
            fusion=self.fusion,
            norm=self.norm,
            tune=self.tune,
        )


def _pass_language(language: Any, specs: Sequence[str], legs: list[dict[str, Any]]) -> None:
    """``hybrid``'s ``language``: given to each leg whose provider takes one (the lexical leg:
    ``bm25``), unless the leg's own options set it; a ConfigError when neither leg takes it."""
    taken = False
    for spec, leg in zip(specs, legs, strict=True):
        if "language" in provider_class(ModelSpec(spec).provider).all_option_names():
            leg.setdefault("language", language)
            taken = True
    if not taken:
        raise ConfigError(
            f"hybrid language={language!r}: neither leg ({', '.join(map(repr, specs))}) takes "
            "a language; it segments the lexical leg, e.g. hybrid:hf:...+bm25"
        )
