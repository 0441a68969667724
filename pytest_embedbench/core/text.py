"""Text from the user's data made inert before a writer shows it: :func:`inert` replaces every
control character a terminal, a log viewer or a browser would act on with its visible escape.

A model, dataset, query or document name holding ``ESC ] 0 ; ... BEL`` would retitle a
terminal, ``ESC [ 2 J`` would clear a CI log viewer's screen, a CR would overwrite the line
before it. Every writer (terminal, HTML, Markdown, CSV, the GitHub texts) passes each text it
did not write itself through :func:`inert`, after redaction and before its own escaping (HTML
entities, Markdown punctuation, CSV formulas).

What is replaced: the C0 controls U+0000-U+001F, DEL U+007F and the C1 controls U+0080-U+009F
(CSI U+009B, OSC U+009D ... act like their ESC forms in many terminals), each by ``\\xNN``
(two lowercase hex digits, as pytest writes a test id and Python a ``repr``): ``ESC`` reads
``\\x1b``, so a name stays readable and the table says what the name holds. Free text (an
error message, a notice) keeps its tabs and newlines; ``keep=""`` (a table cell, one line)
replaces them as well, and the CSV writer keeps CR too (``keep="\\t\\n\\r"``: its cells are
quoted, so a reader takes them back whole). Nothing else changes, and the same text always
gives the same bytes.

Usage::

    inert("mod\\x1b]0;pwned\\x07")  # 'mod\\\\x1b]0;pwned\\\\x07': the bytes, shown, not run
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["FREE_TEXT", "inert"]

#: the characters replaced: C0, DEL and C1
_CONTROLS = (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0))
#: free text keeps its tabs and line breaks
FREE_TEXT = "\t\n"


@functools.lru_cache(maxsize=8)
def _table(keep: str) -> dict[int, str]:
    kept = {ord(c) for c in keep}
    return {code: f"\\x{code:02x}" for code in _CONTROLS if code not in kept}


def inert(text: str, *, keep: str = FREE_TEXT) -> str:
    """``text`` with every C0 control (but those in ``keep``: tab and newline unless told),
    DEL and C1 control replaced by its visible escape ``\\xNN``."""
    if text.isprintable():  # no control character at all: most names, at once
        return text
    return text.translate(_table(keep))


def print_inert(*values: object, file: Any = None, end: str = "\n", flush: bool = False) -> None:
    """``print`` with every value made :func:`inert` first: the command-line tools' messages
    quote paths, model names, server answers and questions that came from outside."""
    print(*(inert(str(v)) for v in values), file=file, end=end, flush=flush)
