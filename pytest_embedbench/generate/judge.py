"""An LLM judge for the holes in the judgments: it grades the unjudged documents of every
model's top ``depth`` on the 0-3 scale with one pinned prompt of the UMBRELA kind (Upadhyay et
al. 2024, reproducing Thomas et al.'s Bing assessor prompt), through the chat clients
generate-evalset uses (:mod:`.chat`: an OpenAI-compatible server, or Ollama), and keeps every
verdict in a judgments file beside the eval set, so a re-run replays them and asks nothing.

The human judgments are never changed: the official metrics stay on them; the metrics on human
plus LLM grades are reported beside them (``judge.metrics``), with the number of LLM grades
they used. The judge also grades a seeded sample of pairs the humans judged, and the report
gives Cohen's kappa on them (binary and graded) with the confusion counts.

The judgments file is TSV, one verdict a line::

    # embedbench judgments 1
    # prompt <sha256> <the prompt template, as JSON>
    query_id  doc_id  grade  judge_id  model  server_model  prompt_sha256  [note]

``grade`` is 0-3, or ``-`` for a pair the judge answered for good without a grade (an answer
that holds none, a request the server refused as invalid: at temperature 0 it would say the
same again), with the reason in the eighth column, ``note``: a replay asks nothing for it and
the figures count it unjudged. A fault that may pass (a 5xx or a timeout that outlasted the
retries, a lost connection) is not written, so the next run asks again. Query and document
ids that hold a tab or a line break cannot be written (a :class:`JudgmentsError` names them).
Two lines of one judge for the same pair with different grades (two branches merged) are an
error naming both lines; the same line twice is read once.

A verdict belongs to its ``judge_id`` (a hash of the prompt and the model): a file that holds
another judge's verdicts keeps them apart and never mixes them in. New verdicts are appended
whole under a file lock (``filelock``, as the baseline store and the generated eval sets do),
so several pytest-xdist workers or processes can append at once. Usage::

    settings = judge_settings({"model": "openai:qwen2.5", "base_url": "http://127.0.0.1:8000/v1"})
    judge_result(result, dataset, settings, Path("data/support/judgments.tsv"))
    result.judge.judged_after, result.judge.agreement.kappa_binary   # a JudgeData

A judge that cannot go on (an unreachable server, a model it does not serve, a refused key: a
:class:`~.settings.GenerationError`) stops there: the verdicts it gave are kept, the figures
cover them, and ``JudgeData.error`` says why, so the test keeps its official metrics and the
report names the judge's failure. A broken judgments file or a bad ``judge:`` setting is an
error of the test (the user fixes the file or the setting).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.exceptions import ConfigError, EmbedBenchError, did_you_mean
from ..core.io import append_text
from ..evaluation.metrics import score_run
from ..evaluation.stats import macro_mean
from ..records.resultdata import AgreementData, JudgeData, MetricData
from .chat import _backend, _Generator, server_message
from .report import GenerationReport
from .settings import GenerationError, GenerationSettings

if TYPE_CHECKING:
    from ..data.datasets import RetrievalDataset
    from ..evaluation.result import RetrievalResult

__all__ = [
    "JUDGE_PROMPT",
    "JUDGE_PROMPT_SHA256",
    "JudgeSettings",
    "JudgmentsError",
    "JudgmentsFile",
    "judge_result",
    "judge_settings",
    "parse_grade",
]

#: the first line of a judgments file: its format and version
HEADER_PREFIX = "# embedbench judgments "
#: the version this module writes and reads
VERSION = 1
HEADER = f"{HEADER_PREFIX}{VERSION}"
#: the columns of a verdict line
COLUMNS = ("query_id", "doc_id", "grade", "judge_id", "model", "server_model", "prompt_sha256")
#: the optional eighth column: why a ``-`` line has no grade
NOTE = "note"
#: the grade cell of a pair the judge answered without a grade
NO_GRADE = "-"

#: the relevance level of the official metrics: a human grade >= 1 is relevant (trec_eval's
#: default, :mod:`~pytest_embedbench.evaluation.metrics`' convention)
HUMAN_RELEVANT = 1
#: the judge's grade from which a document is relevant: UMBRELA's 2, "holds an answer" (1 is
#: "on topic but does not answer it"; TREC's 0-3 scales read binary relevance from 2 too)
JUDGE_RELEVANT = 2

_SYSTEM = "You are a search quality rater who judges how well a passage answers a search query."

#: the pinned prompt: the UMBRELA scale (0-3) and its instruction to think through intent and
#: trustworthiness before grading, in this project's words; ``{query}`` and ``{passage}`` are
#: filled in. Any change to it is another judge (its hash is part of the judge id).
JUDGE_PROMPT = (
    "Given a search query and a passage, grade how relevant the passage is to the query on "
    "an integer scale from 0 to 3:\n"
    "3 = the passage is dedicated to the query and contains its exact answer;\n"
    "2 = the passage holds an answer to the query, but it is unclear or buried in other "
    "information;\n"
    "1 = the passage is on the query's topic but does not answer it;\n"
    "0 = the passage has nothing to do with the query.\n"
    "Think first about what the person searching wants, then how well the passage meets that "
    "need, then whether it can be trusted, and only then decide.\n\n"
    "Query: {query}\n"
    "Passage: {passage}\n\n"
    'Answer with a JSON object and nothing else: {{"grade": G}} where G is 0, 1, 2 or 3.'
)
JUDGE_PROMPT_SHA256 = hashlib.sha256(JUDGE_PROMPT.encode("utf-8")).hexdigest()

GRADE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"grade": {"type": "integer", "minimum": 0, "maximum": 3}},
    "required": ["grade"],
    "additionalProperties": False,
}

#: characters of a document the prompt shows (a judge reads the start of a long document)
PASSAGE_CHARS = 2000
#: below this kappa the report says the judge cannot be trusted on this data (Landis and Koch's
#: "moderate" begins at 0.41)
LOW_KAPPA = 0.4


class JudgmentsError(EmbedBenchError):
    """A judgments file that cannot be read: the message names its file and line."""


@dataclass(frozen=True)
class JudgeSettings:
    """The LLM judge of a run (``judge:`` in embedbench.yaml, ``--embedbench-judge``).

    ``model``: ``openai:NAME`` (any OpenAI-compatible chat server at ``base_url``) or an Ollama
    model; ``depth``: how deep into each model's ranking unjudged documents are graded;
    ``agreement_sample``: human-judged pairs graded for the agreement figures (seeded by
    ``seed``); ``file``: the judgments file (default: beside the eval set);
    ``price_per_1m_tokens``: what the judge's tokens cost, for the report (None: unknown)."""

    model: str
    base_url: str | None = None
    depth: int = 10
    agreement_sample: int = 50
    seed: int = 0
    file: str | None = None
    max_tokens: int = 16
    request_timeout_s: float = 120.0
    max_retries: int = 2
    price_per_1m_tokens: float | None = None

    @property
    def chat(self) -> GenerationSettings:
        """The chat client's settings (temperature 0: one answer per prompt)."""
        return GenerationSettings(
            model=self.model if ":" in self.model else f"ollama:{self.model}",
            host=self.base_url,
            temperature=0.0,
            num_predict=self.max_tokens,
            request_timeout_s=self.request_timeout_s,
            max_retries=self.max_retries,
            seed=self.seed,
            max_generation_attempts=1,
        )

    @property
    def judge_id(self) -> str:
        """What a verdict belongs to: the prompt's hash and the model, hashed."""
        blob = json.dumps([JUDGE_PROMPT_SHA256, self.chat.model, self.max_tokens])
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


_LIMITS = {"depth": (1, 1000), "agreement_sample": (0, 100_000), "max_tokens": (1, 4096)}


def judge_settings(raw: Any, where: str = "judge") -> JudgeSettings:
    """:class:`JudgeSettings` from ``judge:`` (a mapping, or a model name); a bad key or value
    is a ConfigError naming ``where``, the key and the fix."""
    if isinstance(raw, str):
        raw = {"model": raw}
    if not isinstance(raw, Mapping):
        raise ConfigError(
            f"{where}: {raw!r}: give a mapping, e.g. judge: {{model: openai:qwen2.5, base_url: "
            "http://127.0.0.1:8000/v1, depth: 10}"
        )
    names = [f.name for f in dataclasses.fields(JudgeSettings)]
    for key in raw:
        if key not in names:
            raise ConfigError(
                f"{where}: unknown key {key!r}{did_you_mean(str(key), names)} (allowed: "
                f"{', '.join(sorted(names))})"
            )
    if not isinstance(raw.get("model"), str) or not raw["model"].split(":", 1)[-1]:
        raise ConfigError(f"{where}: model {raw.get('model')!r}: name the chat model that grades")
    for key, (low, high) in _LIMITS.items():
        value = raw.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high
        ):
            raise ConfigError(
                f"{where}: {key} {value!r} must be a whole number from {low} to {high}"
            )
    settings = JudgeSettings(**dict(raw))
    settings.chat.check(where)  # the chat client's own checks (provider, timeout, retries)
    return settings


def on_human_scale(grade: int) -> int:
    """A judge's grade (0-3) as the human qrels are read: moved down so that the judge's
    :data:`JUDGE_RELEVANT` lands on :data:`HUMAN_RELEVANT` (3 -> 2, 2 -> 1, 1 and 0 -> 0).
    The one rule for the metrics on human + LLM grades (their binary metrics count a judge's
    2 and 3 relevant, nDCG's gain starts at a judge's 2) and for the agreement's kappa."""
    return max(grade - (JUDGE_RELEVANT - HUMAN_RELEVANT), 0)


def parse_grade(content: str) -> int | None:
    """The grade (0-3) of an answer: ``{"grade": 2}``, else a lone digit from 0 to 3 (a small
    model that ignores the format); None when the answer holds no grade."""
    text = content.strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, Mapping):
        grade = data.get("grade")
        if isinstance(grade, int) and not isinstance(grade, bool) and 0 <= grade <= 3:
            return grade
        if isinstance(grade, str) and grade.strip() in ("0", "1", "2", "3"):
            return int(grade.strip())
        return None
    digits = [c for c in text if c.isdigit()]
    return int(digits[0]) if len(digits) == 1 and digits[0] in "0123" else None


def ask_grade(
    generator: _Generator, query: str, passage: str, seed: int, report: GenerationReport
) -> str:
    """The chat model's answer for one pair to the pinned prompt (the passage cut to
    :data:`PASSAGE_CHARS`), in the grade's structured form: what the judge and the ``llm:``
    reranker send alike. The chat client's errors go through."""
    prompt = JUDGE_PROMPT.format(query=query, passage=passage[:PASSAGE_CHARS])
    messages = [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": prompt}]
    return generator.request(messages, seed, report, GRADE_SCHEMA)


def _one_line(text: str, limit: int = 200) -> str:
    """``text`` on one line without tabs (a note of the judgments file), cut to ``limit``."""
    return " ".join(text.split())[:limit]


def check_id(value: str, what: str, path: Path | str) -> None:
    """A query or document id that a judgments file (TSV) can hold: one without a tab or a
    line break; else a :class:`JudgmentsError` naming the id, the file and the fix."""
    if any(c in value for c in "\t\n\r"):
        raise JudgmentsError(
            f"{path}: {what} id {value!r} holds a tab or a line break, which a judgments file "
            "(one tab-separated line per verdict) cannot hold; rename it in the eval set (its "
            "corpus, queries and qrels)"
        )


@dataclass(frozen=True)
class Verdict:
    """One line of a judgments file: ``grade`` None for a pair the judge answered without
    one (written ``-``, ``note`` says why)."""

    query_id: str
    doc_id: str
    grade: int | None
    judge_id: str
    model: str
    server_model: str
    prompt_sha256: str
    note: str = ""

    def line(self) -> str:
        grade = NO_GRADE if self.grade is None else str(self.grade)
        cells = [self.query_id, self.doc_id, grade, self.judge_id, self.model]
        cells += [self.server_model, self.prompt_sha256]
        if self.note:
            cells.append(_one_line(self.note))
        if any(c in cell for cell in cells for c in "\t\n\r"):
            raise JudgmentsError(
                f"a verdict with a tab or a line break in a field cannot be written: {cells!r}"
            )
        return "\t".join(cells) + "\n"


class JudgmentsFile:
    """The judgments file: read whole (a broken line is an error naming it), appended under a
    lock, never rewritten."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock_path = path.with_name(path.name + ".lock")

    def read(self) -> list[Verdict]:
        """Every verdict of the file (none when it does not exist or is empty), each once. A
        first line other than :data:`HEADER`, a broken line, or two lines of one judge that
        grade one pair differently are errors naming the file, the lines and the fix."""
        if not self.path.is_file():
            return []
        text = self.path.read_text(encoding="utf-8")
        # lines end with "\n" only (an id may hold other Unicode line breaks); "\r\n" too
        lines = [line.removesuffix("\r") for line in text.split("\n")]
        verdicts: list[Verdict] = []
        seen: dict[tuple[str, str, str], tuple[int, Verdict]] = {}
        header = False
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            if not header:
                self._check_header(line, number)
                header = True
                continue
            if line.startswith("#"):
                continue
            verdict = self._verdict(line, f"{self.path} line {number}")
            key = (verdict.judge_id, verdict.query_id, verdict.doc_id)
            if key in seen:
                first, before = seen[key]
                if before.grade != verdict.grade:
                    raise JudgmentsError(
                        f"{self.path} lines {first} and {number}: judge {verdict.judge_id} "
                        f"grades query {verdict.query_id!r}, document {verdict.doc_id!r} "
                        f"twice, {_grade_text(before.grade)} and {_grade_text(verdict.grade)} "
                        "(two runs' files merged?); delete the line you do not want, or both "
                        "(the pair is asked again on the next run)"
                    )
                continue  # the same grade twice (a merge of the same verdict): read once
            seen[key] = (number, verdict)
            verdicts.append(verdict)
        return verdicts

    def _check_header(self, line: str, number: int) -> None:
        """The first line: :data:`HEADER` (a newer version or another file is an error)."""
        version = line.removeprefix(HEADER_PREFIX).strip()
        if line.startswith(HEADER_PREFIX) and version.isdigit():
            if int(version) <= VERSION:
                return
            raise JudgmentsError(
                f"{self.path} line {number}: judgments file version {version}, newer than "
                f"the {VERSION} this pytest-embedbench reads; upgrade pytest-embedbench"
            )
        raise JudgmentsError(
            f"{self.path} line {number}: {line[:120]!r} is not a judgments file's first line "
            f"({HEADER!r}); point judge: {{file: ...}} at a judgments file, or move this file "
            "away (a new one is written)"
        )

    def _verdict(self, line: str, where: str) -> Verdict:
        """The verdict of one line (``where``: its file and line, for the errors)."""
        cells = line.split("\t")
        if len(cells) not in (len(COLUMNS), len(COLUMNS) + 1):
            raise JudgmentsError(
                f"{where}: {len(cells)} tab-separated fields, expected {len(COLUMNS)} "
                f"({', '.join(COLUMNS)}) or {len(COLUMNS) + 1} (and {NOTE}): {line[:120]!r}; "
                "fix or delete the line (it is asked again on the next run)"
            )
        if cells[2] not in ("0", "1", "2", "3", NO_GRADE):
            raise JudgmentsError(
                f"{where}: grade {cells[2]!r} is not 0, 1, 2, 3 or {NO_GRADE} (no grade); fix "
                "or delete the line"
            )
        grade = None if cells[2] == NO_GRADE else int(cells[2])
        return Verdict(cells[0], cells[1], grade, *cells[3:])

    def append(self, verdicts: Sequence[Verdict]) -> None:
        """Append ``verdicts`` that the file does not hold yet (another process may have added
        some meanwhile), whole or not at all, with the header and prompt lines a new file or
        a new prompt needs."""
        if not verdicts:
            return
        from filelock import FileLock

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.lock_path)):
            present = self.read()
            known = {(v.query_id, v.doc_id, v.judge_id) for v in present}
            new = [v for v in verdicts if (v.query_id, v.doc_id, v.judge_id) not in known]
            if not new:
                return
            for verdict in new:
                check_id(verdict.query_id, "query", self.path)
                check_id(verdict.doc_id, "document", self.path)
            text = self.path.read_text(encoding="utf-8") if self.path.is_file() else ""
            lines = [] if text.strip() else [HEADER + "\n"]
            if f"# prompt {JUDGE_PROMPT_SHA256} " not in text:
                lines.append(f"# prompt {JUDGE_PROMPT_SHA256} {json.dumps(JUDGE_PROMPT)}\n")
            lines += [v.line() for v in new]
            separator = "" if not text or text.endswith("\n") else "\n"
            append_text(self.path, separator + "".join(lines))


def _grade_text(grade: int | None) -> str:
    return NO_GRADE + " (no grade)" if grade is None else str(grade)


def judgments_path(dataset_path: Path | None, settings: JudgeSettings, base: Path) -> Path:
    """Where the verdicts are kept: ``settings.file`` (relative to ``base``), else beside the
    eval set: ``judgments.tsv`` in a dataset folder, ``<name>.judgments.tsv`` beside a file."""
    if settings.file:
        return (base / settings.file).resolve()
    if dataset_path is None:
        raise ConfigError(
            "judge: this dataset has no one eval set to keep the judgments beside (a dataset "
            "in several languages, or one given as Python objects); set judge: {file: "
            "judgments.tsv}"
        )
    if dataset_path.is_dir():
        return dataset_path / "judgments.tsv"
    return dataset_path.with_name(dataset_path.stem + ".judgments.tsv")


def case_judge(
    configured: JudgeSettings | None,
    model: str | None,
    depth: int | None,
    dataset_path: Path | None,
    base: Path,
) -> JudgeSettings | None:
    """The judge of a test: ``judge:`` of embedbench.yaml (``configured``) with
    ``--embedbench-judge`` (``model``) and ``--embedbench-judge-depth`` over it, its ``file``
    the judgments file (:func:`judgments_path`); None without a judge."""
    settings = configured
    if model:
        settings = dataclasses.replace(settings or JudgeSettings(model), model=model)
    if settings is None:
        if depth is not None:
            raise ConfigError(
                "--embedbench-judge-depth needs a judge: pass --embedbench-judge MODEL or set "
                "judge: {model: ...} in embedbench.yaml"
            )
        return None
    if depth is not None:
        settings = dataclasses.replace(settings, depth=depth)
    path = judgments_path(dataset_path, settings, base)
    return dataclasses.replace(settings, file=str(path))


class _Asker:
    """The requests of one judge: the chat client of generate-evalset, a grade per answer."""

    def __init__(self, settings: JudgeSettings) -> None:
        chat = settings.chat
        self.backend = _backend(chat)
        self.generator = _Generator(chat, self.backend, self.backend.secrets)
        self.report = GenerationReport.starting(chat, self.backend.host)
        self.settings = settings
        self.failures: dict[str, int] = {}
        self.server_errors: dict[str, int] = {}
        self.no_grade: list[str] = []

    def grade(self, query: str, passage: str) -> tuple[int | None, str, str | None]:
        """The grade of one pair, the server's model id, and why there is no grade: a note
        for a final answer (an answer without a grade, a refusal: recorded), None for a
        grade or a fault that may pass (not recorded: asked again next run). Every pair
        without a grade is counted in :attr:`failures`."""
        try:
            content = ask_grade(self.generator, query, passage, self.settings.seed, self.report)
        except GenerationError:
            raise
        except Exception as exc:
            reason = self.generator.count_failure(exc, self.report)
            self.failures[reason] = self.failures.get(reason, 0) + 1
            said = self.generator.scrub(server_message(exc))
            self.server_errors[said] = self.server_errors.get(said, 0) + 1
            # a request the server calls invalid gets the same answer again: recorded
            return None, "", f"{reason}: {said}" if reason == "request_refused" else None
        served = str(getattr(self.backend, "served_model", None) or self.settings.chat.model_name)
        served = _one_line(served)
        grade = parse_grade(content)
        if grade is None:  # an answer, but no grade: deterministic at temperature 0, not retried
            self.failures["no_grade"] = self.failures.get("no_grade", 0) + 1
            answer = self.generator.scrub(_one_line(content, 120))
            if len(self.no_grade) < 3:
                self.no_grade.append(answer)
            return None, served, f"no_grade: {answer!r}"
        return grade, served, None


def _pairs_to_grade(
    result: RetrievalResult, depth: int, sample: int, seed: int
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The unjudged pairs of the result's top ``depth`` (query order, then rank) and a seeded
    sample of ``sample`` human-judged pairs (for the agreement)."""
    qrels = result.qrels
    holes = [
        (qid, doc)
        for qid in result.query_ids
        for doc in result.rankings[qid][:depth]
        if doc not in qrels.get(qid, {})
    ]
    human = sorted((qid, doc) for qid, judged in qrels.items() for doc in judged)
    rng = np.random.default_rng(seed)
    picked: list[int] = []
    if human:
        picked = sorted(int(i) for i in rng.choice(len(human), min(sample, len(human)), False))
    return holes, [human[i] for i in picked]


def _kappa(
    human: Sequence[int], llm: Sequence[int], weights: str | None
) -> tuple[float | None, str]:
    """Cohen's kappa of two raters and how it was computed; None when it is undefined (one
    rater gave one label only, so chance agreement is total)."""
    if not human or len(set(human)) < 2 and set(human) == set(llm):
        return None, "undefined"
    try:
        from sklearn.metrics import cohen_kappa_score
    except ImportError:  # scikit-learn is not a dependency: numpy gives the same figure
        return _numpy_kappa(human, llm, weights), "numpy (scikit-learn is not installed)"
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a degenerate table: NaN, reported as undefined
        value = float(cohen_kappa_score(human, llm, weights=weights))
    return (None if math.isnan(value) else value), "sklearn.metrics.cohen_kappa_score"


def _numpy_kappa(human: Sequence[int], llm: Sequence[int], weights: str | None) -> float | None:
    labels = sorted(set(human) | set(llm))
    index = {label: i for i, label in enumerate(labels)}
    table = np.zeros((len(labels), len(labels)))
    for a, b in zip(human, llm, strict=True):
        table[index[a], index[b]] += 1
    n = table.sum()
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / n
    grid = np.abs(np.subtract.outer(np.arange(len(labels)), np.arange(len(labels))))
    w = grid.astype(float) if weights == "linear" else (grid > 0).astype(float)
    denominator = (w * expected).sum()
    return None if denominator == 0 else float(1 - (w * table).sum() / denominator)


def agreement(pairs: Sequence[tuple[int, int]]) -> AgreementData:
    """Cohen's kappa of the human grades against the judge's on the same pairs, the judge's
    read as the metrics on human + LLM grades read them (:func:`on_human_scale`): binary
    (relevant: a human grade >= :data:`HUMAN_RELEVANT`, a judge grade >= :data:`JUDGE_RELEVANT`,
    "holds an answer") and graded (the human grades clipped to 0-3 against the judge's on the
    human scale, linear weights), with the confusion counts (the judge's own grades)."""
    human = [min(h, 3) for h, _ in pairs]
    llm = [on_human_scale(g) for _, g in pairs]
    binary, how = _kappa(
        [int(h >= HUMAN_RELEVANT) for h in human], [int(g >= HUMAN_RELEVANT) for g in llm], None
    )
    graded, _ = _kappa(human, llm, "linear")
    confusion: dict[str, int] = {}
    for h, (_, g) in zip(human, pairs, strict=True):
        key = f"human {h} / judge {g}"
        confusion[key] = confusion.get(key, 0) + 1
    low = binary is None or binary < LOW_KAPPA
    return AgreementData(
        pairs=len(pairs),
        kappa_binary=binary,
        kappa_graded=graded,
        confusion=dict(sorted(confusion.items())),
        low=low,
        method=how,
    )


def judge_result(
    result: RetrievalResult, dataset: RetrievalDataset, settings: JudgeSettings, path: Path
) -> JudgeData:
    """Grade the holes of ``result``'s top ``settings.depth`` and a seeded sample of human
    pairs, replaying the verdicts ``path`` holds for this judge and appending the new ones;
    the figures (kept on ``result.judge``, in the JSON report's ``tests[].result.judge``). A
    judge that cannot go on stops with ``error`` set (module doc)."""
    depth = min(settings.depth, result.depth)
    holes, human_pairs = _pairs_to_grade(result, depth, settings.agreement_sample, settings.seed)
    file = JudgmentsFile(path)
    judge_id = settings.judge_id
    mine = {(v.query_id, v.doc_id): v for v in file.read() if v.judge_id == judge_id}
    texts = {d.id: d.embed_text if hasattr(d, "embed_text") else d.text for d in dataset.documents}
    wanted = list(dict.fromkeys([*holes, *human_pairs]))
    for qid, doc in wanted:  # before any request: a verdict the file cannot hold is not asked
        if (qid, doc) not in mine:
            check_id(qid, "query", path)
            check_id(doc, "document", path)
    replayed = sum(1 for pair in wanted if pair in mine)
    asker: _Asker | None = None
    new: list[Verdict] = []
    error: str | None = None
    try:
        for qid, doc in wanted:
            if (qid, doc) in mine:
                continue
            if asker is None:
                asker = _Asker(settings)
            grade, served, note = asker.grade(result.query_texts[qid], texts.get(doc, ""))
            if grade is None and note is None:  # a fault that may pass: asked again next run
                continue
            verdict = Verdict(
                qid,
                doc,
                grade,
                judge_id,
                settings.chat.model,
                served,
                JUDGE_PROMPT_SHA256,
                note or "",
            )
            mine[(qid, doc)] = verdict
            new.append(verdict)
    except GenerationError as exc:  # no later request can succeed: keep what was graded
        error = str(exc)
    file.append(new)
    requests = 0
    if asker is not None:  # every request sent: a structured-output form the server refused too
        requests = asker.report.requests + len(getattr(asker.backend, "refusals", []))
    tokens = int(getattr(asker.backend, "tokens", 0) or 0) if asker is not None else 0
    price = settings.price_per_1m_tokens
    found = JudgeData(
        judge_id=judge_id,
        model=settings.chat.model,
        server_model=tuple(sorted({v.server_model for v in mine.values() if v.server_model})),
        prompt_sha256=JUDGE_PROMPT_SHA256,
        file=str(path),
        depth=depth,
        asked=len(new),
        replayed=replayed,
        ungraded=sum(1 for pair in wanted if pair in mine and mine[pair].grade is None),
        requests=requests,
        requests_per_query=requests / len(result.query_ids) if result.query_ids else None,
        tokens=tokens,
        price_known=price is not None,
        cost_usd=None if price is None else tokens * float(price) / 1_000_000,
        failures=dict(sorted((asker.failures if asker else {}).items())),
        server_errors=dict(sorted((asker.server_errors if asker else {}).items())),
        no_grade_answers=tuple(asker.no_grade) if asker else (),
        error=error,
        **_figures(result, holes, human_pairs, mine, depth),
    )
    result.judge = found
    return found


def _figures(
    result: RetrievalResult,
    holes: Sequence[tuple[str, str]],
    human_pairs: Sequence[tuple[str, str]],
    verdicts: Mapping[tuple[str, str], Verdict],
    depth: int,
) -> dict[str, Any]:
    """judged@k before and after, every metric the result reports (``result.metrics()``) on
    human plus LLM grades (the human grades always win; the judge's on the human scale,
    :func:`on_human_scale`; a pair without a grade stays unjudged) and the agreement on the
    human pairs."""
    qrels = result.qrels
    filled = {qid: dict(judged) for qid, judged in qrels.items()}
    used = 0
    for qid, doc in holes:
        verdict = verdicts.get((qid, doc))
        if verdict is not None and verdict.grade is not None and doc not in filled[qid]:
            filled[qid][doc] = on_human_scale(verdict.grade)
            used += 1
    names = list(dict.fromkeys([*result.metrics(), f"judged@{depth}"]))
    scored = score_run(filled, result.run, names)
    before = score_run(qrels, result.run, [f"judged@{depth}"])[f"judged@{depth}"]
    metrics = {}
    for name in names:
        values = [scored[name][qid] for qid in result.query_ids]
        est = result.estimate(values, name)  # as the official metrics (macro over languages)
        metrics[name] = MetricData.of(est)
    pairs = [
        (qrels[qid][doc], grade)
        for qid, doc in human_pairs
        if (qid, doc) in verdicts and (grade := verdicts[(qid, doc)].grade) is not None
    ]
    at = f"judged@{depth}"
    before_values = [before[qid] for qid in result.query_ids]
    return {
        "llm_grades": used,
        "holes": len(holes),
        "judged_before": (
            (
                macro_mean(before_values, result.query_languages)
                if result.query_languages is not None
                else float(np.mean(before_values))
            )
            if result.query_ids
            else None
        ),
        "judged_after": metrics[at].value,
        "metrics": metrics,
        "agreement": agreement(pairs),
    }
