"""generate.py: questions from the real ``ollama`` and ``openai`` clients against loopback chat
servers that answer like small local models do (prose, extra questions, duplicates, "this
passage", no question mark, generic requests, 500s, timeouts), then the filters, the counts by
reason, the retries and byte-identical output."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_embedbench.core.exceptions import ConfigError
from pytest_embedbench.data.datasets import load_evalset
from pytest_embedbench.generate import (
    GenerationError,
    GenerationSettings,
    StaleEvalsetError,
    chat,
    ensure_generated_evalset,
    evalset_text,
    filters,
    generate_evalset,
    generate_or_reuse_evalset,
    parse_questions,
    redact_url,
    sample_chunks,
    sidecar_path,
    write_evalset,
)

from ..providers.servers import OllamaChatServer, OpenAIChatServer, chat_passage

SECRET = "s3cr3t-pw-0042"

# one chunk per document (each is shorter than the default 800-character chunks); the file
# names sort in the order the requests are scripted below
DOCS = {
    "a-backups.md": "Workspace backups run every six hours and are kept for thirty days. "
    "Owners restore a backup from the admin console under Settings, Backups, Restore point.",
    "b-export.md": "A workspace export produces a zip archive of Markdown pages and attachments. "
    "Exports larger than two gigabytes are split into several numbered archives.",
    "c-refunds.md": "Refunds for annual plans are prorated by the number of unused full months. "
    "Monthly plans are not refunded, but cancelling stops the next renewal at once.",
    "d-retention.md": "Deleted pages stay in the trash for thirty days before they are purged. "
    "Enterprise plans can set a custom retention period between one and ten years.",
    "e-sso.md": "SAML single sign-on is configured under Settings, Security, SSO. Okta, Azure AD "
    "and Google Workspace are supported identity providers with metadata upload.",
    "f-uptime.md": "The status page reports uptime for the editor, the API and search. Incidents "
    "are posted within fifteen minutes and credits follow the service level agreement.",
    "g-webhooks.md": "Webhooks deliver page events to your endpoint with an HMAC signature header. "
    "Failed deliveries are retried with exponential backoff for up to twenty-four hours.",
}


def qs(*pairs: tuple[str, str]) -> str:
    return json.dumps({"questions": [{"question": q, "answer": a} for q, a in pairs]})


REFUND_Q = "How are refunds for annual plans calculated when cancelling?"

# what the "model" says for each document, in order of attempts (the last one repeats)
ANSWERS: dict[str, list[str]] = {
    "backups run": [
        qs(
            ("How often do workspace backups run", "every six hours"),  # no '?'
            ("How long are workspace backups kept before they expire?", "thirty days"),
        )
    ],
    "workspace export": [  # a bare list: the schema is not followed, twice
        json.dumps([{"question": "What format does a workspace export use?", "answer": "zip"}])
    ],
    "Refunds for annual": [
        qs(
            (REFUND_Q, "prorated by unused months"),
            ("What does this passage say about monthly plans?", "not refunded"),
            # third of three, where two were asked: the filters reject the second, so it is
            # kept (the cap used to come first, call it extra and count no filter)
            ("Are monthly plans refunded after cancelling?", "no"),
        )
    ],
    "Deleted pages": [
        qs(  # the refunds question again, of another document: neither copy has one answer
            ("how are refunds for annual plans calculated when cancelling ?", "dup"),
            ("Is it what it was before then?", "?"),  # nothing but stop words
        )
    ],
    "SAML single": [
        "Sure! Here are two questions about SSO:\n1. Which identity providers are supported?",
        qs(
            ("Which identity providers are supported for SAML single sign-on?", "Okta..."),
            ("Summarize the single sign-on configuration steps?", "..."),  # generic
        ),
    ],
    "status page": [
        qs(
            ("How quickly are incidents posted on the status page?", "15 minutes"),
            ("Uptime?", "yes"),  # too short
        )
    ],
    "Webhooks deliver": [qs(("How long are failed webhook deliveries retried?", "24 hours"))],
}


def scripted_answerer() -> Callable[[Any], str]:
    calls: dict[str, int] = {}

    def answer(body: Any) -> str:
        passage = chat_passage(body)
        for key, replies in ANSWERS.items():
            if key in passage:
                n = calls.get(key, 0)
                calls[key] = n + 1
                return replies[min(n, len(replies) - 1)]
        return '{"questions": []}'

    return answer


# behaviours in request order: backups, export x2, refunds, retention, sso x2,
# uptime (500, 500, ok), webhooks (a timeout on every attempt)
SCRIPT = ["ok"] * 7 + ["500", "500", "ok"] + ["hang:0.6"] * 3


@pytest.fixture(autouse=True)
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OLLAMA_HOST", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text + "\n", encoding="utf-8")
    return folder


@pytest.fixture
def ollama_chat() -> Iterator[OllamaChatServer]:
    with OllamaChatServer(answerer=scripted_answerer()) as server:
        yield server


def fast(**kwargs: Any) -> GenerationSettings:
    values: dict[str, Any] = {
        "questions_per_chunk": 2,
        "retry_backoff_s": 0.0,
        "request_timeout_s": 0.25,
        "seed": 7,
    }
    values.update(kwargs)
    return GenerationSettings(**values)


EXPECTED_KEPT = [
    ("How long are workspace backups kept before they expire?", "a-backups.md"),
    ("Are monthly plans refunded after cancelling?", "c-refunds.md"),
    ("Which identity providers are supported for SAML single sign-on?", "e-sso.md"),
    ("How quickly are incidents posted on the status page?", "f-uptime.md"),
]
EXPECTED_REJECTED = {
    "no_question_mark": 1,
    "too_short": 1,
    "refers_to_source": 1,
    "duplicate_across_documents": 2,
    "no_content_words": 1,
    "generic": 1,
}


def test_ollama_mistakes_are_filtered_and_counted(docs: Path, ollama_chat: OllamaChatServer):
    ollama_chat.script(*SCRIPT)
    lines: list[str] = []
    result = generate_evalset(
        docs, fast(host=ollama_chat.url), progress=lambda r: lines.append(r.progress_line())
    )
    report = result.report
    assert [(r["query"], r["relevant_doc_ids"][0]) for r in result.rows] == EXPECTED_KEPT
    assert [r["query_id"] for r in result.rows] == ["q0001", "q0002", "q0003", "q0004"]
    assert dict(report.rejected) == EXPECTED_REJECTED
    # prose once (then fixed), a bare list twice (then given up); 500s and timeouts retried
    assert dict(report.bad_answers) == {"invalid_json": 1, "schema_mismatch": 2}
    assert dict(report.failed_chunks) == {"schema_mismatch": 1, "request_failed": 1}
    assert (report.requests, report.retries) == (13, 4)
    assert len(ollama_chat.chat_requests) == 13
    assert report.candidates == 11 and report.kept == 4
    assert len(lines) == 7 and lines[-1].startswith("chunks 7/7 · kept 4 · rejected 7")
    # what the model was asked: the schema as format, temperature 0, a per-chunk seed
    first = ollama_chat.chat_requests[0].body
    assert first["format"]["required"] == ["questions"]
    assert first["options"]["temperature"] == 0.0
    assert first["stream"] is False
    # a retry after an unreadable answer goes with another seed and says what went wrong
    sso = [r.body for r in ollama_chat.chat_requests if "SAML" in chat_passage(r.body)]
    assert sso[1]["options"]["seed"] == sso[0]["options"]["seed"] + 1
    assert "not JSON" in sso[1]["messages"][-1]["content"]
    row = result.rows[2]
    assert row["source_chunk_id"] == "e-sso.md#0"
    assert row["generator"] == {
        "provider": "ollama",
        "model": "llama3.2",
        "host": ollama_chat.url,
        "prompt_version": "1",
        "seed": sso[1]["options"]["seed"],
    }


def test_output_is_byte_identical_and_loads_as_an_evalset(
    docs: Path, ollama_chat: OllamaChatServer, tmp_path: Path
) -> None:
    texts = []
    for run in range(2):
        ollama_chat.answerer = scripted_answerer()
        path = write_evalset(
            tmp_path / f"run{run}.jsonl",
            generate_evalset(
                docs, fast(host=ollama_chat.url, max_retries=0, request_timeout_s=5.0)
            ).rows,
        )
        texts.append(path.read_bytes())
    assert texts[0] == texts[1]
    assert not list(tmp_path.glob("*.tmp"))  # the atomic write left nothing behind
    ds = load_evalset(tmp_path / "run0.jsonl", docs)
    assert [q.id for q in ds.queries] == ["q0001", "q0002", "q0003", "q0004", "q0005"]
    assert ds.qrels["q0002"] == {"c-refunds.md": 1}
    assert ds.queries[1].metadata["answer"] == "no"


def test_openai_compatible_server(docs: Path) -> None:
    with OpenAIChatServer(answerer=scripted_answerer()) as server:
        server.script(*SCRIPT)
        result = generate_evalset(
            docs, fast(model="openai:qwen2.5-7b-instruct", host=server.url + "/v1")
        )
        body = server.chat_requests[0].body
    assert [(r["query"], r["relevant_doc_ids"][0]) for r in result.rows] == EXPECTED_KEPT
    assert dict(result.report.rejected) == EXPECTED_REJECTED
    assert (result.report.requests, result.report.retries) == (13, 4)
    assert body["temperature"] == 0.0 and isinstance(body["seed"], int)
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["questions"]
    assert result.rows[0]["generator"]["provider"] == "openai"


def test_unreachable_server_and_missing_model_say_how_to_fix(docs: Path) -> None:
    with OllamaChatServer() as server:
        url = server.url
        secret_url = url.replace("http://", f"http://admin:{SECRET}@") + "/?token=" + SECRET
        with pytest.raises(GenerationError, match=r"`ollama pull mistral`") as missing:
            generate_evalset(docs, fast(host=secret_url, model="mistral"))
    with pytest.raises(GenerationError, match=r"cannot reach .*`ollama serve`") as gone:
        generate_evalset(docs, fast(host=secret_url))
    for exc in (missing.value, gone.value):
        assert SECRET not in str(exc) and "admin" not in str(exc)
        assert url in str(exc)


def test_no_secret_in_the_output(docs: Path, ollama_chat: OllamaChatServer) -> None:
    host = ollama_chat.url.replace("http://", f"http://admin:{SECRET}@") + "?key=" + SECRET
    result = generate_evalset(docs, fast(host=host, max_retries=0, request_timeout_s=5.0))
    text = evalset_text(result.rows) + json.dumps(result.report.to_dict())
    assert result.rows and SECRET not in text and "admin" not in text
    assert redact_url("https://u:p@box:8000/v1?api_key=x#f") == "https://box:8000/v1"


def test_no_secret_from_ollama_host_in_errors(docs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with OllamaChatServer() as server:
        url = server.url
    monkeypatch.setenv("OLLAMA_HOST", url.replace("http://", f"http://admin:{SECRET}@"))
    with pytest.raises(GenerationError, match="cannot reach") as gone:
        generate_evalset(docs, fast())
    assert SECRET not in str(gone.value) and url in str(gone.value)


def test_an_empty_list_of_questions_is_counted_not_lost(
    docs: Path, ollama_chat: OllamaChatServer
) -> None:
    # a model may answer a chunk with no question at all; the schema asks for at least one
    # (minItems), and a chunk that still gets none is counted under its reason and said
    ollama_chat.answerer = answers_by_passage(
        {"SAML": [("Which identity providers are supported for SAML single sign-on?", "Okta")]}
    )
    result = generate_evalset(docs, fast(host=ollama_chat.url, max_retries=0))
    report = result.report
    assert report.kept == 1
    assert dict(report.failed_chunks) == {"no_questions": report.sampled_chunks - 1}
    assert not report.bad_answers  # an empty list is an answer: not retried
    assert report.requests == report.sampled_chunks
    assert (
        f"  chunks without questions (no_questions): {report.sampled_chunks - 1} - the model "
        "answered with an empty list of questions" in report.summary_lines()
    )
    assert ollama_chat.chat_requests[0].body["format"]["properties"]["questions"]["minItems"] == 1


def test_judge_model_filters_unanswerable_and_round_trip(docs: Path, ollama_chat: OllamaChatServer):
    import tests.helpers  # noqa: F401  (registers the hashing provider)

    ollama_chat.answerer = lambda body: (
        qs(("Which identity providers are supported for SAML single sign-on?", "Okta"))
        if "SAML" in chat_passage(body)
        else qs(("Did hungry old yaks doze?", "no"))
        if "status page" in chat_passage(body)
        else qs(("Which identity providers support SAML single sign-on metadata?", "Okta"))
        if "Webhooks" in chat_passage(body)
        else '{"questions": []}'
    )
    settings = fast(
        host=ollama_chat.url,
        embedding_model="hashing:h",
        min_similarity=0.2,
        round_trip_k=1,
        dedupe_threshold=0.99,
        max_retries=0,
        request_timeout_s=5.0,
    )
    result = generate_evalset(docs, settings)
    assert [r["relevant_doc_ids"][0] for r in result.rows] == ["e-sso.md"]
    # unrelated words score low against their chunk; the SSO question asked of the webhooks
    # chunk finds the SSO document first
    assert dict(result.report.rejected) == {"unanswerable": 1, "round_trip": 1}
    assert result.report.judge == "hashing:h"
    assert any("judged by hashing:h" in line for line in result.report.summary_lines())


def test_reuse_and_stale_set(docs: Path, ollama_chat: OllamaChatServer, tmp_path: Path) -> None:
    config_dir = tmp_path / "project"
    settings = fast(host=ollama_chat.url, max_retries=0, request_timeout_s=5.0)
    path = ensure_generated_evalset(settings, docs, config_dir, name="handbook")
    assert path == (config_dir / "handbook.generated.jsonl").resolve()
    assert sidecar_path(path).is_file()
    assert sorted(p.name for p in config_dir.iterdir()) == [
        "handbook.generated.jsonl",
        "handbook.generated.jsonl.meta.json",
    ]  # no lock or temporary file left behind
    calls = len(ollama_chat.chat_requests)
    # unchanged documents and settings: reused, no request
    assert ensure_generated_evalset(settings, docs, config_dir, name="handbook") == path
    assert len(ollama_chat.chat_requests) == calls
    # a timeout is not part of the fingerprint
    ensure_generated_evalset(fast(host=ollama_chat.url), docs, config_dir, name="handbook")
    (docs / "c-refunds.md").write_text("Refunds are never given.\n", encoding="utf-8")
    (docs / "h-new.md").write_text("A new page about something else entirely.\n")
    with pytest.raises(StaleEvalsetError) as stale:
        ensure_generated_evalset(settings, docs, config_dir, name="handbook")
    message = str(stale.value)
    assert "1 document(s) added ('h-new.md')" in message
    assert "1 document(s) changed ('c-refunds.md')" in message
    assert "embedbench generate-evalset --config" in message and "--dataset handbook" in message
    assert len(ollama_chat.chat_requests) == calls  # never regenerated silently
    with pytest.raises(StaleEvalsetError, match=r"settings changed \(seed\)"):
        ensure_generated_evalset(
            fast(host=ollama_chat.url, seed=8), docs, config_dir, name="handbook"
        )


# ---------------------------------------------------------------------------------------------
# issue 31: judged, then counted


def answers_by_passage(replies: dict[str, list[tuple[str, str]]]) -> Callable[[Any], str]:
    """A model that answers each chunk whose passage holds a key with that key's questions."""

    def answer(body: Any) -> str:
        passage = chat_passage(body)
        for key, pairs in replies.items():
            if key in passage:
                return qs(*pairs)
        return '{"questions": []}'

    return answer


def write_docs(folder: Path, docs: dict[str, str]) -> Path:
    folder.mkdir()
    for name, text in docs.items():
        (folder / name).write_text(text + "\n", encoding="utf-8")
    return folder


def test_the_filters_judge_before_the_cap_counts(docs: Path) -> None:
    """Issue 31: the per-chunk cap came first: 62 of 122 questions were counted as "extra" and
    the filters showed 0. A question the filters reject is counted by its reason, and the cap
    takes only what they passed, so a good question after two bad ones is kept."""
    answerer = answers_by_passage(
        {
            "backups run": [
                ("What does this passage say about backups?", "-"),  # refers_to_source
                ("Summarize how the workspace backup schedule works?", "-"),  # generic
                ("How long are workspace backups kept before they expire?", "thirty days"),
            ],
            "workspace export": [
                ("What format does a workspace export produce?", "zip"),
                ("When is a workspace export split into several archives?", "over 2 GB"),
            ],
        }
    )
    with OllamaChatServer(answerer=answerer) as server:
        result = generate_evalset(docs, fast(host=server.url, questions_per_chunk=1))
    report = result.report
    assert [r["query"] for r in result.rows] == [
        "How long are workspace backups kept before they expire?",
        "What format does a workspace export produce?",
    ]
    # before: {"extra": 3, "refers_to_source": 1}, and nothing kept of the backups chunk
    assert dict(report.rejected) == {"refers_to_source": 1, "generic": 1, "extra": 1}
    assert (report.candidates, report.filtered, report.kept) == (5, 2, 2)
    assert report.counts_line() == (
        "kept 2 of 5 question(s) returned · the filters rejected 2 (refers_to_source 1, "
        "generic 1) · the per-chunk cap dropped 1 more (extra)"
    )
    reasons = [
        line.split(":")[0].split()[-1] for line in report.summary_lines() if "  rejected" in line
    ]
    assert reasons == ["refers_to_source", "generic", "extra"]  # the filters, then the cap


GENERIC_Q = "What are the long-term health effects of dietary fiber?"
FIBER_DOCS = {
    "fiber-children.md": "Children eating whole grain fiber had fewer constipation episodes over "
    "one school year. Dietary fiber intake was measured by food diaries.",
    "fiber-elderly.md": "Psyllium fiber supplements reduced fasting glucose in elderly patients "
    "with type two diabetes. Dietary fiber slowed sugar absorption after meals.",
    "fiber-oats.md": "Oat bran fiber lowered LDL cholesterol by seven percent in adults after "
    "twelve weeks. Dietary fiber from oats binds bile acids in the gut.",
}
FIBER_ANSWERS = {
    "Oat bran": [
        (GENERIC_Q, "lower cholesterol"),
        ("How much did oat bran fiber lower LDL cholesterol in adults?", "seven percent"),
    ],
    "Children eating": [
        ("What are the long term health effects of dietary fibre?", "fewer episodes"),
        ("How did whole grain fiber change constipation episodes in children?", "fewer"),
    ],
    "Psyllium": [
        (GENERIC_Q.lower(), "lower glucose"),
        ("Which fiber supplements reduced fasting glucose in elderly patients?", "psyllium"),
    ],
}
FIBER_SPECIFIC = [
    ("How did whole grain fiber change constipation episodes in children?", "fiber-children.md"),
    ("Which fiber supplements reduced fasting glucose in elderly patients?", "fiber-elderly.md"),
    ("How much did oat bran fiber lower LDL cholesterol in adults?", "fiber-oats.md"),
]


def test_a_generic_question_asked_of_several_documents_loses_every_copy(tmp_path: Path) -> None:
    """Issue 31: "long-term health effects of dietary fiber", asked of several chunks, passed
    every filter: the near-duplicate filter kept its first copy (from whichever chunk came
    first) and labelled that one document as its only answer. Asked of chunks of different
    documents, no copy is kept, the first included; the sidecar counts them."""
    docs = write_docs(tmp_path / "fiber", FIBER_DOCS)
    with OllamaChatServer(answerer=answers_by_passage(FIBER_ANSWERS)) as server:
        settings = fast(host=server.url, min_chunk_chars=50)
        generated = generate_or_reuse_evalset(settings, docs, tmp_path, name="fiber")
        assert generated.written and generated.report is not None
        rows = load_evalset(generated.path, docs)
        assert [(q.text, next(iter(rows.qrels[q.id]))) for q in rows.queries] == FIBER_SPECIFIC
        assert dict(generated.report.rejected) == {"duplicate_across_documents": 3}
        meta = json.loads(sidecar_path(generated.path).read_text(encoding="utf-8"))
        assert meta["report"]["rejected"] == {"duplicate_across_documents": 3}
        assert meta["report"]["kept"] == 3
        # what pytest's terminal summary prints for a set embedbench.yaml generated
        assert generated.summary_lines() == [
            "embedbench: generated the eval set of dataset 'fiber' with ollama:llama3.2 from 3 "
            f"chunk(s) of 3 document(s): {generated.path}",
            "  kept 3 of 6 question(s) returned · the filters rejected 3 "
            "(duplicate_across_documents 3) · the per-chunk cap dropped 0 more (extra)",
            "  review fiber.generated.jsonl before you trust it as ground truth (the filters are "
            "heuristics): fix or delete bad questions, add real ones, then commit it with "
            "fiber.generated.jsonl.meta.json",
        ]
        again = generate_or_reuse_evalset(settings, docs, tmp_path, name="fiber")
    assert not again.written and again.path == generated.path
    assert again.summary_lines() == []  # reused: announced when it was written


def test_the_round_trip_margin_rejects_a_question_several_documents_answer(
    tmp_path: Path,
) -> None:
    """Issue 31: the round trip asked only that the source document be in the judge's top
    round_trip_k, so a generic question passed it for each chunk it was asked of. Its source
    must lead every other document by min_margin."""
    import tests.helpers  # noqa: F401  (registers the hashing provider)

    docs = write_docs(tmp_path / "fiber", FIBER_DOCS)
    with OllamaChatServer(answerer=answers_by_passage(FIBER_ANSWERS)) as server:
        judged = fast(host=server.url, min_chunk_chars=50, embedding_model="hashing:h")
        result = generate_evalset(docs, judged)
        # without the margin, the rank lets every copy through (its documents are 3 of 3)
        ranked = generate_evalset(docs, fast(**{**judged.__dict__, "min_margin": None}))
    assert [(r["query"], r["relevant_doc_ids"][0]) for r in result.rows] == FIBER_SPECIFIC
    assert dict(result.report.rejected) == {"low_margin": 3}
    assert dict(ranked.report.rejected) == {"duplicate_across_documents": 3}
    assert any("rejected low_margin: 3" in line for line in result.report.summary_lines())


def test_the_margin_is_the_lead_of_the_source_document() -> None:
    """Rank 1 is not enough: the source document must lead the next one by min_margin."""
    import tests.helpers  # noqa: F401
    from pytest_embedbench.core.types import Document
    from pytest_embedbench.data.chunking import chunk_documents_with
    from pytest_embedbench.generate.filters import _Judge

    documents = [Document(name, text) for name, text in FIBER_DOCS.items()]
    oats_q = "How much did oat bran fiber lower LDL cholesterol in adults?"

    def verdict(**settings: Any) -> str | None:
        s = GenerationSettings(embedding_model="hashing:h", **settings)
        chunks = chunk_documents_with(s.chunking, documents)
        oats = next(c for c in chunks if c.doc_id == "fiber-oats.md")
        return _Judge("hashing:h", chunks, s).reasons([oats_q], oats)[0]

    assert verdict() is None  # first, by a margin of about 0.15
    assert verdict(min_margin=0.2) == "low_margin"  # first, but not by 0.2
    assert verdict(min_margin=None) is None
    with pytest.raises(ConfigError, match=r"min_margin 1.5 must be a number between -1.0"):
        GenerationSettings(min_margin=1.5)
    s = GenerationSettings.from_mapping({"embedding_model": "hashing:h", "min_margin": 0}, "g")
    assert s.min_margin == 0.0 and isinstance(s.min_margin, float)
    assert "min_margin" in s.identity() and "min_margin" not in GenerationSettings().identity()


def test_near_duplicates_of_one_document_keep_the_first_and_the_cap_counts_last() -> None:
    from pytest_embedbench.generate.filters import _Candidate, _Pool
    from pytest_embedbench.generate.report import GenerationReport

    pool = _Pool(0.85, per_chunk=1)
    add = [
        (0, "a.md", "How long are backups kept?"),
        (1, "a.md", "How long are backups kept ?"),  # same document, overlapping chunk
        (1, "a.md", "Who can restore a backup?"),  # first left in chunk 1: kept
        (2, "b.md", "Which export formats exist?"),
        (2, "b.md", "How big can an export be?"),  # beyond the cap of chunk 2
        (3, "c.md", "Which export formats exist??"),  # asked of b.md too: both copies go
    ]
    for chunk, doc, question in add:
        pool.add(_Candidate(chunk, doc, f"{doc}#{chunk}", question, "-", 1))
    report = GenerationReport(model="m", provider="ollama", host="h", seed=1)
    kept = pool.tally(report)
    assert [c.question for c in kept] == [
        "How long are backups kept?",
        "Who can restore a backup?",
        "How big can an export be?",  # the cap no longer drops it: its rival was a duplicate
    ]
    assert dict(report.rejected) == {"duplicate": 1, "duplicate_across_documents": 2}
    assert report.kept == 3


# ---------------------------------------------------------------------------------------------
# the parts, without a server


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"questions": [{"question": "Q?", "answer": "A"}]}', ([("Q?", "A")], None)),
        ('```json\n{"questions": []}\n```', ([], None)),
        ("Here you go: What is X?", (None, "invalid_json")),
        ('{"questions": [{"q": "Q?"}]}', (None, "schema_mismatch")),
        ('{"question": "Q?"}', (None, "schema_mismatch")),
        ('{"questions": [{"question": "  Q \\n two?", "answer": 3}]}', (None, "schema_mismatch")),
    ],
)
def test_parse_questions(content: str, expected: tuple[Any, Any]) -> None:
    assert parse_questions(content) == expected


@pytest.mark.parametrize(
    ("question", "reason"),
    [
        ("What is the refund window for annual plans?", None),
        ("According to the text, what is the refund window?", "refers_to_source"),
        ("What does the author recommend for backups here?", "refers_to_source"),
        ("In the document, how long is the retention period?", "refers_to_source"),
        ("Summarize how single sign-on is configured for Okta?", "generic"),
        ("What is this all about, in a few words?", "generic"),
        ("What are the main points made about exports?", "generic"),
        ("What is the refund window for annual plans", "no_question_mark"),
        ("Refund window?", "too_short"),
        (" ".join(["word"] * 41) + "?", "too_long"),
        ("Is it what it was before billing?", None),
        ("Is it what it was before that?", "no_content_words"),
    ],
)
def test_heuristic_filters(question: str, reason: str | None) -> None:
    from pytest_embedbench.generate.filters import _heuristic_reason

    assert _heuristic_reason(question, GenerationSettings()) == reason


def test_sample_is_seeded_and_in_corpus_order() -> None:
    from pytest_embedbench.data.chunking import Chunk

    chunks = [Chunk("d", f"d#{i}", "x" * (50 if i % 5 == 0 else 200), 0, 1) for i in range(40)]
    one = sample_chunks(chunks, GenerationSettings(max_chunks=10, seed=3))
    assert [c.id for c in one] == [
        c.id for c in sample_chunks(chunks, GenerationSettings(max_chunks=10, seed=3))
    ]
    assert len(one) == 10 and all(len(c.text) >= 120 for c in one)
    assert [c.id for c in one] == sorted((c.id for c in one), key=lambda i: int(i[2:]))
    assert one != sample_chunks(chunks, GenerationSettings(max_chunks=10, seed=4))
    assert len(sample_chunks(chunks, GenerationSettings())) == 32


def test_settings_from_mapping_name_the_bad_key() -> None:
    s = GenerationSettings.from_mapping(
        {"ollama_model": "qwen2.5:7b", "max_chunks": 4, "chunking": {"size": 300}}, "generate"
    )
    assert (s.model, s.model_name, s.provider, s.chunking.size) == (
        "qwen2.5:7b",
        "qwen2.5:7b",
        "ollama",
        300,
    )
    with pytest.raises(ConfigError, match=r"unknown key 'question_per_chunk'; did you mean"):
        GenerationSettings.from_mapping({"question_per_chunk": 2}, "generate")
    with pytest.raises(ConfigError, match=r"questions_per_chunk 6 must be a whole number from 1"):
        GenerationSettings(questions_per_chunk=6)
    with pytest.raises(ConfigError, match=r"dedupe_threshold 0.3"):
        GenerationSettings(dedupe_threshold=0.3)
    with pytest.raises(ConfigError, match=r"'cohere:command-r'"):
        GenerationSettings(model="cohere:command-r")
    assert GenerationSettings(model="openai:gpt-4o-mini").model_name == "gpt-4o-mini"


# ---------------------------------------------------------------------------------------------
# the command


def _generate_argv(docs: Path, out: Path, url: str, *, max_chunks: int) -> list[str]:
    """``generate-evalset`` over ``docs`` into ``out`` with the Ollama server at ``url``: two
    questions a chunk, seed 7, the first ``max_chunks`` chunks, a 5 s request timeout."""
    argv = ["generate-evalset", "--docs", str(docs), "--output", str(out), "--host", url]
    argv += ["--questions-per-chunk", "2", "--seed", "7", "--max-chunks", str(max_chunks)]
    return [*argv, "--request-timeout-s", "5"]


def test_cli_writes_the_set_with_progress_and_summary(
    docs: Path, ollama_chat: OllamaChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_embedbench.cli import main

    out = tmp_path / "generated.jsonl"
    argv = _generate_argv(docs, out, ollama_chat.url, max_chunks=7)
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "chunks 1/7 · kept 1 · rejected 1 (no_question_mark 1)" in err
    assert "chunks 7/7 · kept 5 · rejected 7" in err
    assert "rejected duplicate_across_documents: 2" in err
    assert "chunks without questions (schema_mismatch): 1" in err
    # the filters' counts first, then the cap's
    assert (
        "questions returned 12 · rejected by the filters 7 · dropped by the per-chunk cap 0" in err
    )
    assert "review them" in err
    assert [json.loads(line)["query_id"] for line in out.read_text().splitlines()] == [
        "q0001",
        "q0002",
        "q0003",
        "q0004",
        "q0005",
    ]
    assert sidecar_path(out).is_file()
    # an existing set (one the user reviewed and edited) is left alone without --regenerate
    out.write_text('{"query_id": "mine", "query": "kept?", "relevant": ["d1"]}\n')
    reviewed = out.read_bytes()
    assert main(argv) == 2
    assert f"{out} exists (a set you may have reviewed or edited); pass --regenerate" in (
        capsys.readouterr().err
    )
    assert out.read_bytes() == reviewed
    assert main([*argv, "--regenerate"]) == 0
    assert out.read_bytes() != reviewed and out.read_text().count("\n") == 5


def test_cli_messages_show_control_characters_inert(
    docs: Path, ollama_chat: OllamaChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the command's lines quote paths, names and a server's words: an ESC or BEL in them is
    # shown as \x1b, never sent raw to the terminal (issue 42 item 3)
    from pytest_embedbench.cli import main

    out = tmp_path / "evil\x1b]0;pwned\x07\x1b[2J.jsonl"
    assert main(_generate_argv(docs, out, ollama_chat.url, max_chunks=2)) == 0
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
    assert "evil\\x1b]0;pwned\\x07\\x1b[2J.jsonl" in err
    assert out.is_file()  # the file keeps the name it was given


def test_cli_exit_1_names_the_fix(
    docs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_embedbench.cli import main

    out = tmp_path / "x.jsonl"
    with OllamaChatServer() as server:
        url = server.url
        argv = ["generate-evalset", "--docs", str(docs), "--output", str(out), "--host", url]
        assert main([*argv, "--model", "qwen2.5:7b", "--no-progress"]) == 1
        assert "run `ollama pull qwen2.5:7b`" in capsys.readouterr().err
    assert main([*argv, "--no-progress"]) == 1
    assert "cannot reach the ollama server" in capsys.readouterr().err
    assert main([*argv, "--questions-per-chunk", "9"]) == 2
    assert "generate-evalset: --questions-per-chunk 9 must be" in capsys.readouterr().err
    assert not out.exists()


def handbook_config(folder: Path, evalset: str) -> Path:
    """``folder``'s embedbench.yaml: one dataset, ``handbook``, over ``docs/``, with the eval set
    ``evalset`` (the YAML after ``evalset:``)."""
    config = folder / "embedbench.yaml"
    config.write_text(
        "datasets:\n  handbook:\n    path: docs\n    evalset:" + evalset, encoding="utf-8"
    )
    return config


def test_cli_regenerates_a_configured_dataset(
    docs: Path, ollama_chat: OllamaChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_embedbench.cli import main

    config = handbook_config(
        tmp_path,
        f"\n      generate: {{host: '{ollama_chat.url}', questions_per_chunk: 2, seed: 7,\n"
        "                 request_timeout_s: 5}\n",
    )
    argv = ["generate-evalset", "--config", str(config), "--dataset", "handbook"]
    assert main(argv) == 0
    path = tmp_path / "handbook.generated.jsonl"
    assert path.is_file()
    (docs / "a-backups.md").write_text("Backups are now hourly and kept for a year.\n")
    assert main(argv) == 1
    assert "stale: 1 document(s) changed ('a-backups.md')" in capsys.readouterr().err
    assert main([*argv, "--regenerate"]) == 0
    assert main(argv) == 0
    assert main([*argv[:-1], "nope"]) == 2
    assert "--dataset 'nope' is not one of ['handbook']" in capsys.readouterr().err


def test_config_reader_generates_once_then_reuses_or_says_stale(
    docs: Path, ollama_chat: OllamaChatServer, tmp_path: Path
) -> None:
    from pytest_embedbench.config.project import load_config
    from pytest_embedbench.data.datasets import load_dataset

    config = handbook_config(
        tmp_path, f" {{generate: {{host: '{ollama_chat.url}', request_timeout_s: 5}}}}\n"
    )
    entry = load_config(config).datasets["handbook"]
    generated = tmp_path / "handbook.generated.jsonl"
    assert generated.is_file()
    calls = len(ollama_chat.chat_requests)
    assert calls == 9  # one a chunk, two for the bare list and the prose
    ds = load_dataset(entry.path, docs=entry.docs, name=entry.name)
    assert len(ds.queries) >= 3 and {d.id for d in ds.documents} == set(DOCS)
    load_config(config)  # unchanged: reused
    assert len(ollama_chat.chat_requests) == calls
    (docs / "g-webhooks.md").unlink()
    with pytest.raises(StaleEvalsetError, match=r"1 document\(s\) removed \('g-webhooks.md'\)"):
        load_config(config)
    assert len(ollama_chat.chat_requests) == calls


def test_openai_missing_model_and_a_refused_chunk(docs: Path) -> None:
    with OpenAIChatServer(answerer=scripted_answerer()) as server:
        base = server.url + "/v1"
        with pytest.raises(
            GenerationError,
            match=r"model 'nope' is not available at .*/v1: .*\(the server said: HTTP 404: The "
            r"model `nope` does not exist\)",
        ):
            generate_evalset(docs, fast(model="openai:nope", host=base))
        server.reset()
        server.script("400", "429")  # one chunk refused (counted), one rate-limited (retried)
        result = generate_evalset(docs, fast(model="openai:qwen2.5-7b-instruct", host=base))
    # a 400 is the server's decision: counted at once, not retried, its own words shown
    assert result.report.failed_chunks["request_refused"] == 1
    assert result.report.server_errors == {"HTTP 400: Bad request.": 1}
    assert "    the server said (1x): HTTP 400: Bad request." in result.report.summary_lines()
    assert result.report.retries == 1
    assert [r["relevant_doc_ids"][0] for r in result.rows][-1] == "g-webhooks.md"


class _LlamaCppLikeServer(OpenAIChatServer):
    """Answers as llama-cpp-python's server does: ``json_schema`` is refused with its pydantic
    validation error, as HTTP 500 (and, with ``refuse_objects``, ``json_object`` too)."""

    refuse_objects = False

    def _embed(self, request: Any, path: str) -> Any:
        body = request.body
        kind = (body.get("response_format") or {}).get("type") if isinstance(body, dict) else None
        if path.rstrip("/") == self.chat_route and (
            kind == "json_schema" or (kind == "json_object" and self.refuse_objects)
        ):
            return self._error(
                500,
                "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n  "
                f"Input should be 'text' or 'json_object' [type=literal_error, input_value='{kind}'"
                f", input_type=str] key={SECRET}",
            )
        return super()._embed(request, path)


def test_a_refused_json_schema_falls_back_once_and_is_remembered(
    docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # the server echoes it: never shown
    with _LlamaCppLikeServer(answerer=scripted_answerer()) as server:
        result = generate_evalset(
            docs, fast(model="openai:qwen2.5-7b-instruct", host=server.url + "/v1")
        )
        kinds = [(r.body.get("response_format") or {}).get("type") for r in server.chat_requests]
    # one refusal, then json_object (with the schema) for every later request: never retried
    assert kinds[0] == "json_schema" and set(kinds[1:]) == {"json_object"}
    assert result.report.retries == 0 and not result.report.failed_chunks.get("request_failed")
    assert result.report.structured_output == "json_object"
    (refusal,) = result.report.format_refusals
    assert refusal.startswith("json_schema: HTTP 500: 1 validation error") and SECRET not in refusal
    assert "Input should be 'text' or 'json_object'" in refusal
    assert [(r["query"], r["relevant_doc_ids"][0]) for r in result.rows][:2] == EXPECTED_KEPT[:2]
    assert any(
        line.startswith("  structured output: json_object")
        for line in (result.report.summary_lines())
    )


def test_a_server_refusing_both_forms_gets_the_json_by_prompt(
    docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with _LlamaCppLikeServer(answerer=scripted_answerer()) as server:
        server.refuse_objects = True
        result = generate_evalset(
            docs, fast(model="openai:qwen2.5-7b-instruct", host=server.url + "/v1")
        )
        bodies = [r.body for r in server.chat_requests]
    assert [b.get("response_format", {}).get("type") for b in bodies[:3]] == [
        "json_schema",
        "json_object",
        None,
    ]
    assert all("response_format" not in b for b in bodies[2:])
    assert result.report.structured_output == "prompt"
    assert len(result.report.format_refusals) == 2
    assert result.report.kept >= 3
    assert SECRET not in json.dumps(result.report.to_dict())


class _InvalidRequestServer(OpenAIChatServer):
    """Every chat request is answered with a validation error as HTTP 500."""

    def _embed(self, request: Any, path: str) -> Any:
        if path.rstrip("/") == self.chat_route:
            return self._error(
                500,
                "1 validation error for CreateChatCompletionRequest\nmax_tokens\n  Input should "
                "be greater than or equal to 1 [type=greater_than_equal]",
            )
        return super()._embed(request, path)


def test_a_validation_error_is_not_retried_and_its_words_are_shown(docs: Path) -> None:
    """A 500 that says the request is invalid is the server's decision, as a 400 is: one
    request per chunk, the reason quotes the server; a plain 500 is retried."""
    settings = {"model": "openai:qwen2.5-7b-instruct", "max_retries": 2}
    with _InvalidRequestServer() as server:
        result = generate_evalset(docs, fast(host=server.url + "/v1", **settings))
    report = result.report
    assert (report.requests, report.retries) == (len(DOCS), 0)
    assert report.failed_chunks == {"request_refused": len(DOCS)}
    (said,) = report.server_errors
    assert said.startswith("HTTP 500: 1 validation error for CreateChatCompletionRequest")
    assert f"    the server said ({len(DOCS)}x): {said}" in report.summary_lines()
    with OpenAIChatServer(answerer=scripted_answerer()) as plain:
        plain.script("500", "500", "500")  # the first chunk: retried twice, then counted
        retried = generate_evalset(docs, fast(host=plain.url + "/v1", **settings))
    assert retried.report.retries == 2
    assert retried.report.server_errors == {"HTTP 500: Internal server error.": 1}
    assert retried.report.failed_chunks["request_failed"] == 1


def test_a_refused_key_stops_the_run_with_the_servers_words(
    docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with OpenAIChatServer(answerer=scripted_answerer()) as server:
        server.script("401")
        with pytest.raises(GenerationError) as refused:
            generate_evalset(
                docs, fast(model="openai:qwen2.5-7b-instruct", host=server.url + "/v1")
            )
        assert len(server.chat_requests) == 1  # a 401 is never retried
    message = str(refused.value)
    assert "refused the request: HTTP 401: Invalid API key.; check OPENAI_API_KEY" in message
    assert SECRET not in message


@pytest.mark.parametrize(
    ("package", "build", "message"),
    [
        (
            "ollama",
            lambda: chat._OllamaChat(GenerationSettings(), "http://127.0.0.1:9"),
            "questions from Ollama need the ollama package: "
            "pip install 'pytest-embedbench[generate]'",
        ),
        (
            "openai",
            lambda: chat._OpenAIChat(GenerationSettings(), "http://127.0.0.1:9/v1"),
            "questions from an OpenAI-compatible server need the openai package: "
            "pip install 'pytest-embedbench[generate]'",
        ),
        (
            "rapidfuzz",
            lambda: filters._Pool(0.85, 2),
            "the near-duplicate filter needs rapidfuzz: pip install 'pytest-embedbench[generate]'",
        ),
    ],
)
def test_a_missing_generate_package_names_what_needs_it_and_the_pip_command(
    monkeypatch: pytest.MonkeyPatch, package: str, build: Callable[[], Any], message: str
) -> None:
    monkeypatch.setitem(sys.modules, package, None)  # its import fails, as when not installed
    with pytest.raises(GenerationError) as caught:
        build()
    assert str(caught.value) == message
