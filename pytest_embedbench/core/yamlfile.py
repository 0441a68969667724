"""The YAML loader of every file the user keeps (``embedbench.yaml``, a thresholds file).

PyYAML's ``SafeLoader`` builds only plain data, but on its own it lets three faults through:

- a key given twice in one mapping: the last silently wins, so a second ``models:`` further down
  the file replaces the first without a word;
- aliases that expand exponentially ("billion laughs": ``a: &a [x, x]``, ``b: &b [*a, *a]``,
  ...): loading is quick, since an alias is a shared reference, but every walk of the value
  (checks, the JSON report's copy of the file, redaction) visits each expansion, for minutes;
- a tab in the indentation, which YAML forbids, reported as "found character '\\t' that cannot
  start any token".

:class:`StrictLoader` refuses the first two while composing the document, and :func:`load_yaml`
turns the third into a sentence naming the line. Each is a :class:`YamlProblem` carrying the
1-based line and a message, which :func:`read_yaml` prefixes with the file. Anchors, aliases
and merge keys (``<<: *defaults``) of ordinary size keep working.

Imports nothing of the package, so every floor reads its YAML through :func:`read_yaml`::

    load_yaml("models: [bm25]\\nmodels: [hf:x]\\n")
    # YamlProblem: line 2: key 'models' given twice (first at line 1); keep one of them
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

__all__ = ["MAX_EXPANDED_NODES", "StrictLoader", "YamlProblem", "load_yaml", "read_yaml"]

#: the most values (scalars, lists and mappings, aliases counted as what they expand to) one
#: file may hold; a configuration holds hundreds, a billion-laughs file passes this within its
#: first few levels and is refused before anything walks it
MAX_EXPANDED_NODES = 100_000


class YamlProblem(yaml.YAMLError):
    """A YAML file this package refuses: ``line`` (1-based) and ``message`` (with the fix)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


class StrictLoader(yaml.SafeLoader):
    """``SafeLoader`` that refuses duplicate keys and caps what aliases expand to."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._expanded = 0  # values composed so far, each alias counted as its expansion
        self._sizes: dict[int, int] = {}  # id(node) -> its expanded size, once complete
        self._open: set[str | None] = set()  # anchors of the collections being composed

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            node = self.anchors.get(event.anchor)  # None: the composer's own error follows
            if node is not None:
                if event.anchor in self._open:
                    raise YamlProblem(
                        line,
                        f"the alias *{event.anchor} refers to a value it is part of (a loop); "
                        "write the value out instead",
                    )
                self._count(self._size(node), line, f"the alias *{event.anchor}")
            return super().compose_node(parent, index)
        # the composer registers a list's or mapping's anchor before composing what is inside,
        # so an alias in there would reach a value still open: a loop no walk would end
        anchor = getattr(event, "anchor", None)
        opens = anchor is not None and isinstance(event, yaml.CollectionStartEvent)
        if opens:
            self._open.add(anchor)
        try:
            composed = super().compose_node(parent, index)
        finally:
            if opens:
                self._open.discard(anchor)
        self._count(1, line, "this value")
        return composed

    def _size(self, node: yaml.Node) -> int:
        """How many values ``node`` stands for with every alias inside it expanded (memoised:
        linear in the distinct nodes, however often they are shared)."""
        known = self._sizes.get(id(node))
        if known is not None:
            return known
        size = 1
        if isinstance(node, yaml.SequenceNode):
            size += sum(self._size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            size += sum(self._size(k) + self._size(v) for k, v in node.value)
        self._sizes[id(node)] = size
        return size

    def _count(self, size: int, line: int, what: str) -> None:
        self._expanded += size
        if self._expanded > MAX_EXPANDED_NODES:
            raise YamlProblem(
                line,
                f"{what} takes the file past {MAX_EXPANDED_NODES:,} values once aliases are "
                "expanded (an alias bomb?); write the values out, or use fewer nested aliases",
            )

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # '<<: *defaults' may be overridden by the keys beside it
            key = self.construct_object(key_node, deep=True)
            try:
                seen = first.get(key)
            except TypeError:
                continue  # an unhashable key: SafeLoader's own error names it below
            line = key_node.start_mark.line + 1
            if seen is not None:
                raise YamlProblem(
                    line, f"key {key!r} given twice (first at line {seen}); keep one of them"
                )
            first[key] = line
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str) -> Any:
    """The one YAML document in ``text``, read by :class:`StrictLoader`; a tab where YAML wants
    spaces is a :class:`YamlProblem` naming its line (other bad YAML: PyYAML's own error)."""
    try:
        return yaml.load(text, Loader=StrictLoader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        if mark is None or "'\\t'" not in str(exc.problem):
            raise
        lines = text.splitlines()
        row = lines[mark.line] if mark.line < len(lines) else ""
        if not row[: mark.column].strip(" \t"):
            message = "a tab indents this line; YAML allows spaces only (indent with spaces)"
        else:
            message = (
                f"a tab at column {mark.column + 1}; YAML separates with spaces only "
                "(replace the tab with a space)"
            )
        raise YamlProblem(mark.line + 1, message) from None


def read_yaml(path: Path, what: str, error: Callable[[str], Exception]) -> Any:
    """A YAML file's content, read by :func:`load_yaml`; a missing file or bad YAML raises
    ``error(message)`` naming the file and line (``embedbench.yaml line 7: key 'models' given
    twice (first at line 3)``). ``error`` is the caller's exception type (``ConfigError``), so
    this module stays free of package imports."""
    try:
        return load_yaml(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(f"{path}: {what} not found") from None
    except YamlProblem as exc:
        raise error(f"{path} line {exc.line}: {exc.message}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        raise error(f"{path}{line}: not valid YAML ({exc})") from None
