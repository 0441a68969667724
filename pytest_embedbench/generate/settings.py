"""Generation settings (``evalset: {generate: ...}``), their checks, and the errors that stop
a generation."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.exceptions import ConfigError, EmbedBenchError, did_you_mean
from ..data.chunking import ChunkingSettings

#: bumped whenever the words of the prompts (:mod:`.prompts`) change: a set records the version
#: that wrote it, and the version is part of a generated set's fingerprint (:meth:`identity`)
PROMPT_VERSION = "1"

#: prefixes of embedding providers, which write no questions (an Ollama tag looks the same)
_NOT_CHAT_PROVIDERS = frozenset({"hf", "cohere", "voyage", "bedrock", "bm25", "hybrid"})


class GenerationError(EmbedBenchError):
    """Generation cannot go on: the chat server is unreachable, the model is not there, or a
    setting is wrong. The message says how to fix it and holds no credentials."""


class StaleEvalsetError(GenerationError):
    """A generated eval set no longer matches its documents or settings; the message names
    what changed and the command that regenerates it."""


def import_extra(module: str, needs: str) -> Any:
    """Import ``module``, a package of the ``generate`` extra, or raise a GenerationError that
    says what ``needs`` it and the pip command (``"the near-duplicate filter needs
    rapidfuzz"``)."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise GenerationError(f"{needs}: pip install 'pytest-embedbench[generate]'") from None


_SETTING_LIMITS: dict[str, tuple[float, float]] = {
    "questions_per_chunk": (1, 5),
    "min_chunk_chars": (0, math.inf),
    "min_question_words": (1, math.inf),
    "max_question_words": (1, math.inf),
    "max_generation_attempts": (1, 10),
    "num_predict": (1, math.inf),
    "max_retries": (0, 20),
    "round_trip_k": (1, math.inf),
}


@dataclass(frozen=True)
class GenerationSettings:
    """How questions are generated and filtered (``evalset: {generate: ...}`` in the yaml).

    ``model`` is an Ollama model (``llama3.2`` or ``ollama:llama3.2``) or an OpenAI-compatible
    one (``openai:Qwen2.5-7B-Instruct``, with ``host`` its ``base_url``, e.g.
    ``http://127.0.0.1:8000/v1``; the key comes from ``OPENAI_API_KEY`` when set). ``host``
    defaults to ``OLLAMA_HOST``, else ``http://127.0.0.1:11434``. ``embedding_model`` (a model
    spec) turns on the answerability, round-trip and margin filters: the source document must
    be in the judge's top ``round_trip_k`` and score at least ``min_margin`` above every other
    document (a generic question that several documents answer does not).
    """

    model: str = "llama3.2"
    host: str | None = None
    questions_per_chunk: int = 1
    max_chunks: int | None = None
    min_chunk_chars: int = 120
    min_question_words: int = 5
    max_question_words: int = 40
    dedupe_threshold: float = 0.85
    max_generation_attempts: int = 2
    temperature: float = 0.0
    num_predict: int = 220
    request_timeout_s: float = 180.0
    max_retries: int = 2
    retry_backoff_s: float = 0.75
    seed: int = 42
    embedding_model: str | None = None
    min_similarity: float = 0.3
    round_trip_k: int = 5
    #: how far the source document must score above every other document in the round trip
    #: (the judge model's similarity units); None turns the margin off
    min_margin: float | None = 0.02
    chunking: ChunkingSettings = field(default_factory=ChunkingSettings)
    #: where ensure_generated_evalset writes the set, relative to the configuration's folder
    output: str | None = None

    def __post_init__(self) -> None:
        self.check("GenerationSettings")

    def check(self, where: str) -> None:
        """Raise a ConfigError naming ``where``, the key and its value for the first bad one."""
        for name, (low, high) in _SETTING_LIMITS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                span = f">= {low:g}" if high == math.inf else f"from {low:g} to {high:g}"
                raise ConfigError(f"{where}: {name} {value!r} must be a whole number {span}")
        if self.max_question_words < self.min_question_words:
            raise ConfigError(
                f"{where}: max_question_words {self.max_question_words!r} is below "
                f"min_question_words {self.min_question_words!r}"
            )
        if self.max_chunks is not None and (
            isinstance(self.max_chunks, bool)
            or not isinstance(self.max_chunks, int)
            or self.max_chunks < 1
        ):
            raise ConfigError(
                f"{where}: max_chunks {self.max_chunks!r} must be a whole number >= 1, or null "
                "for every eligible chunk"
            )
        if self.min_margin is not None and (
            isinstance(self.min_margin, bool)
            or not isinstance(self.min_margin, (int, float))
            or not -1.0 <= self.min_margin <= 1.0
        ):
            raise ConfigError(
                f"{where}: min_margin {self.min_margin!r} must be a number between -1.0 and "
                "1.0 (how far the source document must score above every other one, e.g. "
                "0.02), or null to turn the margin off"
            )
        for name, low, high in (
            ("dedupe_threshold", 0.5, 1.0),
            ("temperature", 0.0, 2.0),
            ("min_similarity", -1.0, 1.0),
            ("request_timeout_s", 0.001, math.inf),
            ("retry_backoff_s", 0.0, math.inf),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"{where}: {name} {value!r} must be a number")
            if not low <= value <= high:
                raise ConfigError(f"{where}: {name} {value!r} must be between {low} and {high}")
        if not isinstance(self.model, str) or not self.model.split(":", 1)[-1]:
            raise ConfigError(f"{where}: model {self.model!r} must name a chat model")
        if self.model.partition(":")[0] in _NOT_CHAT_PROVIDERS:
            raise ConfigError(
                f"{where}: model {self.model!r}: questions come from 'ollama:MODEL' (or a bare "
                "Ollama name) or 'openai:MODEL' with host set to the server's base_url"
            )
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ConfigError(f"{where}: seed {self.seed!r} must be a whole number")
        if self.output is not None and (not isinstance(self.output, str) or not self.output):
            raise ConfigError(
                f"{where}: output {self.output!r} must be a file path relative to the "
                "configuration's folder, e.g. handbook-evalset.jsonl"
            )

    @property
    def provider(self) -> str:
        """``"ollama"`` or ``"openai"``, from the model's prefix (none: Ollama)."""
        head, sep, _ = self.model.partition(":")
        return head if sep and head in ("ollama", "openai") else "ollama"

    @property
    def model_name(self) -> str:
        """The model name the server knows (without the provider prefix)."""
        head, sep, rest = self.model.partition(":")
        return rest if sep and head in ("ollama", "openai") else self.model

    @classmethod
    def from_mapping(
        cls, mapping: Mapping[str, Any] | None, where: str, **defaults: Any
    ) -> GenerationSettings:
        """Settings from a YAML mapping (``evalset: {generate: ...}``); unknown keys name the
        closest known one. ``chunking`` is a mapping read by
        :meth:`~pytest_embedbench.chunking.ChunkingSettings.from_mapping`; ``defaults``
        (e.g. the dataset's ``chunking`` or ``output``) apply where the mapping is silent.

        Usage::

            GenerationSettings.from_mapping({"model": "llama3.2", "max_chunks": 40}, "generate")
        """
        if mapping is None:
            mapping = {}
        if not isinstance(mapping, Mapping):
            raise ConfigError(
                f"{where}: expected a mapping of generation settings, got {mapping!r}"
            )
        names = [f.name for f in dataclasses.fields(cls)]
        aliases = {"ollama_model": "model", "ollama_host": "host", "base_url": "host"}
        values: dict[str, Any] = dict(defaults)
        for key, value in mapping.items():
            name = aliases.get(str(key), str(key))
            if name not in names:
                raise ConfigError(
                    f"{where}: unknown key {key!r}{did_you_mean(key, names)} "
                    f"(allowed: {', '.join(sorted(names))})"
                )
            values[name] = value
        chunking = values.get("chunking")
        if not isinstance(chunking, ChunkingSettings):
            values["chunking"] = ChunkingSettings.from_mapping(chunking, f"{where}: chunking")
        for name in ("request_timeout_s", "min_margin"):  # 0 and 0.0: one fingerprint
            if isinstance(values.get(name), int) and not isinstance(values.get(name), bool):
                values[name] = float(values[name])
        try:
            settings = cls(**values)
        except TypeError as exc:  # a value of a type the checks do not reach
            raise ConfigError(f"{where}: {exc}") from None
        except ConfigError as exc:  # the checks of __post_init__, named by the class
            raise ConfigError(str(exc).replace("GenerationSettings:", f"{where}:", 1)) from None
        settings.check(where)
        return settings

    def identity(self) -> dict[str, Any]:
        """What decides the questions: the fingerprint of a generated set is taken over this
        (timeouts, retries and the host are left out: they change no answer)."""
        out = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name
            not in ("host", "request_timeout_s", "max_retries", "retry_backoff_s", "output")
        }
        out["chunking"] = self.chunking.as_dict()
        out["prompt_version"] = PROMPT_VERSION
        if self.embedding_model is None:  # the judge's settings matter only with a judge
            out.pop("min_similarity")
            out.pop("round_trip_k")
            out.pop("min_margin")
        return out


def dataset_generation(
    entry: Mapping[str, Any], *, name: str, where: str, base: Path
) -> tuple[GenerationSettings, Path]:
    """The settings and documents folder of a dataset entry of ``embedbench.yaml`` that says
    ``evalset: {generate: {...}}`` (``path`` is then the documents folder, as with
    ``evalset: FILE``). The dataset's own ``chunking`` mapping is the generation's unless
    ``generate`` names one; the set goes to ``<name>.generated.jsonl`` beside the file unless
    ``output`` says otherwise. Shared by the config reader's hook and
    ``embedbench generate-evalset --config``, so both compute the same fingerprint.

    Usage::

        settings, docs = dataset_generation(raw["datasets"]["handbook"], name="handbook",
                                            where="embedbench.yaml: datasets.handbook", base=dir)
        path = ensure_generated_evalset(settings, docs, dir, name="handbook")
    """
    evalset = entry.get("evalset")
    if not isinstance(evalset, Mapping) or set(evalset) != {"generate"}:
        raise ConfigError(
            f"{where}.evalset: {evalset!r}: give a .jsonl path, or {{generate: {{model: ..., "
            "max_chunks: ...}}}} to generate the set from the documents"
        )
    if not isinstance(entry.get("path"), str):
        raise ConfigError(f"{where}: needs 'path': the documents folder the questions come from")
    generate = evalset["generate"]
    output = generate.get("output") if isinstance(generate, Mapping) else None
    if output is None:  # the name becomes the file's name: '<name>.generated.jsonl'
        fix = ", or name the file with evalset.generate.output"
        plain_name(name, where.removesuffix(f".{name}"), fix=fix)
    defaults: dict[str, Any] = {"output": f"{name}.generated.jsonl"}
    chunking = entry.get("chunking")
    if isinstance(chunking, Mapping):
        defaults["chunking"] = ChunkingSettings.from_mapping(chunking, f"{where}.chunking")
    settings = GenerationSettings.from_mapping(generate, f"{where}.evalset.generate", **defaults)
    inside(base, str(settings.output), f"{where}.evalset.generate.output")
    return settings, (base / entry["path"]).resolve()


#: a name from the configuration that may become a file name as it is
_PLAIN_NAME = re.compile(r"(?!\.)[\w.-]+")


def plain_name(name: str, where: str, *, fix: str = "") -> str:
    """``name``, when it can name a file as it is: letters, digits, ``-``, ``_`` and ``.``,
    not first (no folder separator, no ``..``, no hidden file). Else a ConfigError naming
    ``where`` (the file and key), the name and the fix (``fix`` adds another). Every
    configured name that becomes part of a path (a dataset's generated eval set) passes here,
    so none chooses the folder it is written in.

    Usage::

        plain_name("handbook", "embedbench.yaml: datasets")  # 'handbook'
    """
    if not isinstance(name, str) or not _PLAIN_NAME.fullmatch(name):
        raise ConfigError(
            f"{where}: name {name!r} would choose a path, not name a file; use a plain name "
            f"of letters, digits, '-', '_' and '.' (not first){fix}"
        )
    return name


def inside(folder: Path, relative: str, where: str) -> Path:
    """``folder / relative`` resolved, when it lies inside ``folder`` (links followed); else a
    ConfigError naming ``where`` and the folder: what a configuration writes stays beside it.

    Usage::

        inside(Path("proj"), "sets/handbook.jsonl", "embedbench.yaml: ...output")
    """
    root = Path(folder).resolve()
    target = (root / relative).resolve()
    if target == root or not target.is_relative_to(root):
        raise ConfigError(
            f"{where}: {relative!r} resolves to {target}, outside {root}, the configuration's "
            "folder; give a file name or a path inside it"
        )
    return target
