"""What the chat model is asked (the prompts, the JSON schema it is held to) and how its
answer is read (:func:`parse_questions`)."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from .settings import PROMPT_VERSION as PROMPT_VERSION

if TYPE_CHECKING:
    from ..core.types import Chunk
    from .settings import GenerationSettings

# PROMPT_VERSION (defined in settings.py, which puts it in a generated set's fingerprint) is
# bumped whenever the words of the prompts below change
DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"

#: the JSON schema the model is held to (Ollama ``format``, OpenAI ``response_format``); at
#: least one question, since a grammar-constrained small model otherwise takes the shortest
#: valid answer, ``{"questions": []}`` (SmolLM2-135M under llama.cpp did for 6 chunks of 8)
QUESTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "questions": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "question": {"type": "string"},
                    "answer": {"type": "string"},
                },
                "required": ["question", "answer"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["questions"],
    "additionalProperties": False,
}

_SYSTEM_PROMPT = (
    "You write search questions for testing a retrieval system. A user who has never seen the "
    "passage will type each question into a search box, so every question must stand on its "
    "own and be answered by the passage. Reply with JSON only."
)

_USER_PROMPT = """\
Write up to {n} question(s) that the passage below answers, each with its short answer taken \
from the passage.

Rules for every question:
- it is answered by the passage alone;
- it names its subject: never "this passage", "the document", "the text", "the author";
- it is specific: no "summarize", no "what is this about";
- it is between {min_words} and {max_words} words and ends with a question mark.

Reply with JSON only, in this form:
{{"questions": [{{"question": "...", "answer": "..."}}]}}

Passage (from {doc_id}):
<<<
{text}
>>>"""

_RETRY_PROMPT = (
    'That reply was not JSON of the form {"questions": [{"question": "...", "answer": "..."}]}. '
    "Reply again with that JSON only."
)


def _messages(chunk: Chunk, settings: GenerationSettings) -> list[dict[str, str]]:
    prompt = _USER_PROMPT.format(
        n=settings.questions_per_chunk,
        min_words=settings.min_question_words,
        max_words=settings.max_question_words,
        doc_id=chunk.doc_id,
        text=chunk.text,
    )
    return [{"role": "system", "content": _SYSTEM_PROMPT}, {"role": "user", "content": prompt}]


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def _first_json(text: str) -> Any:
    """The JSON value of ``text``: the whole text, else the inside of a Markdown code fence,
    else the first object that starts at a ``{`` with prose before or after it (a model asked
    for JSON by the prompt alone adds "Sure! Here they are:"). None when there is none."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    fenced = _FENCE.search(text)
    if fenced:
        try:
            return json.loads(fenced.group(1))
        except ValueError:
            pass
    start = text.find("{")
    if start >= 0:
        try:
            return json.JSONDecoder().raw_decode(text, start)[0]
        except ValueError:
            pass
    return None


def parse_questions(content: str) -> tuple[list[tuple[str, str]] | None, str | None]:
    """``([(question, answer)...], None)``, or ``(None, reason)`` with reason
    ``"invalid_json"`` or ``"schema_mismatch"``. A JSON object inside a Markdown code fence, or
    with prose around it, counts as JSON (small models add both even when told not to)."""
    data = _first_json(content.strip())
    if data is None:
        return None, "invalid_json"
    if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
        return None, "schema_mismatch"
    out = []
    for item in data["questions"]:
        if not isinstance(item, dict) or not isinstance(item.get("question"), str):
            return None, "schema_mismatch"
        answer = item.get("answer", "")
        if not isinstance(answer, str):
            return None, "schema_mismatch"
        out.append((" ".join(item["question"].split()), " ".join(answer.split())))
    return out, None
