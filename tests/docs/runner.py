"""Run the code blocks of a Markdown page as a reader would (issue 32), with Sybil.

Sybil parses each page into its fenced blocks and its ``<!-- skip: next "reason" -->`` and
``<!-- invisible-code-block: python -->`` comments (hidden from the reader, seen by this runner)
and evaluates them in page order in one namespace, so a block may use what an earlier block of
the same page defined. We use Sybil rather than pytest-examples because the pages hold YAML,
shell, TOML and JSON blocks as well as Python ones: Sybil takes one evaluator per language and
has the skip and invisible-setup directives a page needs, while pytest-examples runs Python
only and lints it with ruff and black.

What each block's language means:

- ``python``: run in the page's namespace, with the page's sandbox folder as the working
  directory. A block whose first line is a file name comment (``# test_search.py``) is that
  file instead: it is written into the sandbox, not run.
- ``yaml``: parsed. A file name comment writes it into the sandbox; an ``embedbench.yaml``
  (named so, or whose top-level keys are all configuration keys) is also loaded and checked by
  ``pytest_embedbench.config.project.load_config``, which names any unknown key or bad value.
- ``bash``: run by ``bash -eu -o pipefail`` in the sandbox, with this environment's ``pytest``
  and ``embedbench`` first on PATH; it must exit 0, or with the status its last line's comment
  names (``pytest test_x.py   # fails: exit status 1``). A ``text`` block right after it is its
  output, compared by shape (see :func:`same_shape`).
- ``toml``: parsed; ``ini``: parsed, and written when its first line names a file;
  ``json``: parsed (a JSON Lines block line by line).
- ``text``: an output; compared when a ``bash`` block precedes it, else only shown.

``<!-- expect-error: ConfigError -->`` before a block says it must raise that exception (a
page showing what a mistake gets you). Every other language is an error, so a block cannot
slip through unchecked.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import SkipTest

import yaml
from sybil import Document, Example, Region
from sybil.parsers.abstract.lexers import LexerCollection
from sybil.parsers.markdown import SkipParser
from sybil.parsers.markdown.lexers import DirectiveInHTMLCommentLexer, FencedCodeBlockLexer

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: tomli, which pytest itself needs there
    import tomli as tomllib

#: the languages a page may use, and what is done with each
LANGUAGES = ("python", "yaml", "bash", "toml", "ini", "json", "text")

#: a first line naming the file the block is (``# embedbench.yaml``, ``# handbook/a.md``)
_FILE_COMMENT = re.compile(r"#\s*(?P<name>[\w./-]+\.[A-Za-z]+)\s*$")

#: a shell block whose last line ends with "# ... exit status 1" must exit with that status
_EXIT_STATUS = re.compile(r"#.*\bexit status (?P<status>\d+)")

#: the top-level keys of embedbench.yaml (config._TOP_KEYS): a block made only of them is one
_CONFIG_KEYS = frozenset(
    {"datasets", "models", "providers", "k", "thresholds", "gate", "reference", "plugins"}
)


@dataclass
class PageRun:
    """What running one page did: counts by language, skips with their reasons, outputs."""

    path: Path
    sandbox: Path
    env: dict[str, str]
    ran: Counter[str] = field(default_factory=Counter)
    compared: int = 0
    shown: int = 0
    skipped: list[str] = field(default_factory=list)
    last_output: str | None = None
    #: the exception the next block must raise (``<!-- expect-error: ConfigError -->``)
    expect_error: str | None = None
    #: what an invisible block started (a loopback server), undone when the page ends
    cleanup: list[Callable[[], Any]] = field(default_factory=list)

    def setenv(self, name: str, value: str) -> None:
        """Set a variable for this page's shell blocks and, until the page ends, this process
        (an invisible block pointing the page at a loopback server)."""
        self.env[name] = value
        old = os.environ.get(name)
        os.environ[name] = value
        self.cleanup.append(
            lambda: os.environ.pop(name, None) if old is None else os.environ.update({name: old})
        )

    def summary(self) -> dict[str, Any]:
        return {
            "ran": dict(sorted(self.ran.items())),
            "outputs_compared": self.compared,
            "outputs_shown": self.shown,
            "skipped": list(self.skipped),
        }


class CodeBlocks:
    """Every fenced block of a page (any language) and every invisible code block."""

    def __init__(self, run: PageRun) -> None:
        self.run = run
        self.lexers = LexerCollection(
            [
                FencedCodeBlockLexer(
                    language=r"[\w+-]*", mapping={"language": "language", "source": "source"}
                ),
                DirectiveInHTMLCommentLexer(
                    directive=r"invisible-code-block",
                    arguments=r"\w+",
                    mapping={"arguments": "language", "source": "source"},
                ),
            ]
        )

    def __call__(self, document: Document) -> Any:
        for region in self.lexers(document):
            region.parsed = (str(region.lexemes["language"]).strip(), region.lexemes["source"])
            region.evaluator = self.evaluate
            yield region

    def evaluate(self, example: Example) -> None:
        language, source = example.parsed
        where = f"{example.path}, line {example.line}"
        output, self.run.last_output = self.run.last_output, None
        if language not in LANGUAGES:
            raise AssertionError(
                f"{where}: a ```{language or '(no language)'} block: name one of {LANGUAGES}"
            )
        if language == "text":
            if output is None:
                self.run.shown += 1
                return
            same_shape(source, output, where)
            self.run.compared += 1
            return
        self.run.ran[language] += 1
        expected, self.run.expect_error = self.run.expect_error, None
        if expected is None:
            getattr(self, f"_{language}")(example, str(source), where)
            return
        try:
            getattr(self, f"_{language}")(example, str(source), where)
        except Exception as exc:
            if type(exc).__name__ != expected:
                raise
        else:
            raise AssertionError(f"{where}: the page says this block raises {expected}; it did not")

    def _file(self, source: str) -> Path | None:
        """Write the block to the sandbox when its first line names a file."""
        first, _, rest = source.partition("\n")
        match = _FILE_COMMENT.fullmatch(first.strip())
        if match is None:
            return None
        target = self.run.sandbox / match["name"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source if target.suffix == ".py" else rest, encoding="utf-8")
        return target

    def _python(self, example: Example, source: str, where: str) -> None:
        if self._file(source) is not None:
            return
        # padded with blank lines so a traceback gives the line in the page
        code = compile("\n" * example.line + source, str(example.path), "exec")
        exec(code, example.namespace)

    def _yaml(self, example: Example, source: str, where: str) -> None:
        try:
            data = yaml.safe_load(source)
        except yaml.YAMLError as exc:
            raise AssertionError(f"{where}: not valid YAML: {exc}") from None
        target = self._file(source)
        is_config = isinstance(data, dict) and data and set(data) <= _CONFIG_KEYS
        if target is None and is_config:
            target = self.run.sandbox / f"embedbench-line{example.line}.yaml"
            target.write_text(source, encoding="utf-8")
        if target is not None and (target.name == "embedbench.yaml" or is_config):
            from pytest_embedbench.config.project import load_config

            load_config(target)

    def _bash(self, example: Example, source: str, where: str) -> None:
        last = source.rstrip().rsplit("\n", 1)[-1]
        said = _EXIT_STATUS.search(last)
        expected = int(said["status"]) if said else 0
        done = subprocess.run(
            ["bash", "-eu", "-o", "pipefail", "-c", source],
            cwd=self.run.sandbox,
            env=self.run.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=900,
        )
        if done.returncode != expected:
            raise AssertionError(
                f"{where}: exit status {done.returncode}, not {expected}:\n{source}\n"
                f"--- output ---\n"
                f"{done.stdout[-6000:]}"
            )
        self.run.last_output = done.stdout

    def _toml(self, example: Example, source: str, where: str) -> None:
        try:
            tomllib.loads(source)
        except tomllib.TOMLDecodeError as exc:
            raise AssertionError(f"{where}: not valid TOML: {exc}") from None

    def _ini(self, example: Example, source: str, where: str) -> None:
        parser = configparser.ConfigParser()
        try:
            parser.read_string(source)
        except configparser.Error as exc:
            raise AssertionError(f"{where}: not a valid ini file: {exc}") from None
        self._file(source)

    def _json(self, example: Example, source: str, where: str) -> None:
        try:
            json.loads(source)
            return
        except json.JSONDecodeError:
            pass
        for number, line in enumerate(source.splitlines(), 1):
            if line.strip():
                try:
                    json.loads(line)
                except json.JSONDecodeError as exc:
                    raise AssertionError(f"{where}: JSON line {number}: {exc}") from None


class ExpectError:
    """``<!-- expect-error: ConfigError -->``: the next block must raise that exception (a
    page showing what a mistake gets you)."""

    def __init__(self, run: PageRun) -> None:
        self.run = run
        self.lexer = DirectiveInHTMLCommentLexer(directive="expect-error", arguments=r"\w+")

    def __call__(self, document: Document) -> Any:
        for region in self.lexer(document):
            yield Region(region.start, region.end, str(region.lexemes["arguments"]), self.set)

    def set(self, example: Example) -> None:
        self.run.expect_error = example.parsed


def shape(line: str) -> str:
    """A line with what changes from run to run taken out: numbers, best marks, rule widths,
    the folders of a path (``/tmp/x/project/embedbench.yaml`` and ``.../embedbench.yaml`` are
    both ``/embedbench.yaml``)."""
    line = re.sub(r"[+-]?\d+(?:[.,]\d+)*", "#", line)
    line = line.replace(" *", " ").replace("*", "")
    line = re.sub(r"([=!_-])\1{2,}", r"\1", line)
    line = re.sub(r"\S*/", "/", line)
    return re.sub(r"\s+", " ", line).strip()


def same_shape(expected: str, actual: str, where: str) -> None:
    """Every line shown (but ``...``) appears in the actual output, in order, once numbers,
    best marks, column widths and absolute paths are taken out."""
    have = [shape(line) for line in actual.splitlines()]
    at = 0
    for line in expected.splitlines():
        want = shape(line)
        if not want or want == "...":
            continue
        try:
            at = have.index(want, at) + 1
        except ValueError:
            raise AssertionError(
                f"{where}: the output shown has a line the command did not print:\n  {line}\n"
                f"(compared as {want!r})\n--- the command printed ---\n{actual[-6000:]}"
            ) from None


def subprocess_env(sandbox: Path, cache: Path) -> dict[str, str]:
    """The environment a reader's shell would have: this interpreter's scripts first on PATH,
    no pytest or xdist variables of the run that tests the docs, a cache of the docs' own."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "EMBEDBENCH_")) and k != "COV_CORE_SOURCE"
    }
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env["EMBEDBENCH_CACHE_DIR"] = str(cache)
    env["GITHUB_STEP_SUMMARY"] = str(sandbox / "github-step-summary.md")
    env.setdefault("OMP_NUM_THREADS", "1")  # docs/caching-and-timings.md: stable timings
    env["COLUMNS"] = "120"
    return env


def run_page(
    path: Path,
    sandbox: Path,
    cache: Path,
    *,
    start: int = 0,
    stop: Callable[[str, str], bool] | None = None,
) -> PageRun:
    """Evaluate the blocks of the page at ``path`` in order, in ``sandbox``: those from line
    ``start`` on, up to the first one ``stop(language, source)`` is true of."""
    run = PageRun(path=path, sandbox=sandbox, env=subprocess_env(sandbox, cache))
    code = CodeBlocks(run)
    document = Document.parse(str(path), SkipParser(), ExpectError(run), code)
    document.namespace["__name__"] = f"docs_{path.stem.replace('-', '_')}"
    document.namespace["__docs__"] = run  # for invisible blocks: run.setenv, run.cleanup
    try:
        for example in document:
            if example.line < start:
                continue
            is_code = getattr(example.region.evaluator, "__self__", None) is code
            if stop is not None and is_code and stop(example.parsed[0], str(example.parsed[1])):
                break
            try:
                example.evaluate()
            except SkipTest as skip:
                run.skipped.append(f"line {example.line}: {skip}")
                run.last_output = None
    finally:
        for undo in reversed(run.cleanup):
            undo()
    return run


def blocks(path: Path) -> list[tuple[int, str, str]]:
    """The page's fenced blocks as (line, language, source), without running them."""
    document = Document.parse(str(path), _Listing())
    return [(e.line, *e.parsed) for e in document]


class _Listing:
    def __init__(self) -> None:
        self.lexer = FencedCodeBlockLexer(
            language=r"[\w+-]*", mapping={"language": "language", "source": "source"}
        )

    def __call__(self, document: Document) -> Any:
        for region in self.lexer(document):
            yield Region(
                region.start,
                region.end,
                (str(region.lexemes["language"]).strip(), str(region.lexemes["source"])),
                lambda example: None,
            )
