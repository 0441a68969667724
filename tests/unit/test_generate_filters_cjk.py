"""Issue 44: the generated-eval-set filters read Chinese, Japanese, Korean and Thai questions with
their language's words. Before, a Chinese question was one "word" (no spaces) and failed
too_short, a full-width '？' failed no_question_mark, the English stop words and patterns said
nothing of it, and a traditional copy of a simplified question was no near-duplicate."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pytest_embedbench.generate import GenerationError, GenerationSettings, filters, sidecar_path
from pytest_embedbench.generate.filters import _Candidate, _heuristic_reason, _Pool

from ..providers.servers import OllamaChatServer
from .test_generate import answers_by_passage, write_docs

pytest.importorskip("jieba")

CASES = [
    # Chinese: realistic questions pass every filter
    ("如何重置我的密码？", None),
    ("如何重置我的密碼？", None),  # traditional characters
    ("管理员如何在控制台中还原工作区的备份？", None),
    ("年度计划的退款是如何计算的？", None),
    ("日本文化有哪些特点？", None),  # 本文 ("this text") inside 日本文化 is not a word
    ("线上文档在哪里可以下载？", None),  # nor 上文 inside 线上文档
    ("如何重置我的密码", "no_question_mark"),
    ("密码？", "too_short"),
    ("这篇文章讲了什么？", "refers_to_source"),  # "what is this article about?"
    ("根据文章，备份会保留多长时间？", "refers_to_source"),
    ("请总结一下工作区备份的规则？", "generic"),
    ("工作区备份功能主要讲了什么？", "generic"),
    ("这是不是我们的那个呢？", "no_content_words"),
    # Japanese
    ("パスワードをリセットするにはどうすればいいですか？", None),
    ("バックアップは何日間保存されますか？", None),
    ("日本文学の代表的な作家は誰ですか？", None),
    ("バックアップは何日間保存されますか", "no_question_mark"),
    ("この文章は何について書かれていますか？", "refers_to_source"),
    ("バックアップ機能の主なポイントは何ですか？", "generic"),
    ("それは何ですか？", "no_content_words"),
    # Korean
    ("비밀번호를 어떻게 재설정하나요?", None),
    ("관리자는 콘솔에서 백업을 어떻게 복원하나요?", None),
    ("이글루는 어떻게 만드나요?", None),  # 이글 ("this text") is not a word of 이글루
    ("이 글은 무엇에 관한 것인가요?", "refers_to_source"),
    ("백업 기능의 주요 내용은 무엇인가요?", "generic"),
    ("이것은 무엇인가요?", "no_content_words"),
    # Thai
    ("จะรีเซ็ตรหัสผ่านได้อย่างไร?", None),
    ("ข้อมูลสำรองถูกเก็บไว้กี่วัน?", None),
    ("ตามบทความนี้ ข้อมูลสำรองถูกเก็บไว้กี่วัน?", "refers_to_source"),
    ("ช่วยสรุปวิธีการสำรองข้อมูลของระบบให้หน่อย?", "generic"),
    ("นี่คืออะไร?", "too_short"),
]


@pytest.mark.parametrize(("question", "reason"), CASES)
def test_each_language_s_questions_are_read_with_its_words(question: str, reason: str | None):
    if any("\u0e00" <= ch <= "\u0e7f" for ch in question):
        pytest.importorskip("pythainlp")
    assert _heuristic_reason(question, GenerationSettings()) == reason


def test_word_counts_count_segmented_words_particles_too() -> None:
    # 如何/重置/我/的/密码: 5 words, as "How do I reset my password?" is 6
    assert _heuristic_reason("如何重置我的密码？", GenerationSettings(min_question_words=5)) is None
    assert (
        _heuristic_reason("如何重置我的密码？", GenerationSettings(min_question_words=6))
        == "too_short"
    )
    assert (
        _heuristic_reason(
            "管理员如何在控制台中还原工作区的备份？", GenerationSettings(max_question_words=9)
        )
        == "too_long"
    )
    # パスワード/を/リセット/する/に/は/どう/すれ/ば/いい/です/か: the particles count
    ja = "パスワードをリセットするにはどうすればいいですか？"
    assert _heuristic_reason(ja, GenerationSettings(max_question_words=12)) is None
    assert _heuristic_reason(ja, GenerationSettings(max_question_words=11)) == "too_long"


@pytest.mark.parametrize("mark", ["?", "？", "﹖"])
def test_full_width_and_small_question_marks_end_a_question(mark: str) -> None:
    assert _heuristic_reason("如何重置我的密码" + mark, GenerationSettings()) is None


def test_a_semicolon_is_no_question_mark_but_greek_s_own_is() -> None:
    assert (
        _heuristic_reason("How are backups restored from the console;", GenerationSettings())
        == "no_question_mark"
    )
    assert (
        _heuristic_reason("How are backups restored from the console\u037e", GenerationSettings())
        is None
    )
    assert (
        _heuristic_reason("How are backups restored from the console？", GenerationSettings())
        is None
    )


def pool_statuses(questions: list[tuple[str, str]]) -> list[str | None]:
    pool = _Pool(0.85, per_chunk=5)
    candidates = [
        _Candidate(i, doc, f"{doc}#{i}", q, "-", 1) for i, (doc, q) in enumerate(questions)
    ]
    for candidate in candidates:
        pool.add(candidate)
    return [c.status for c in candidates]


def test_near_duplicate_chinese_questions_are_caught() -> None:
    # traditional and simplified, full-width and ASCII marks, spaces: one question (the
    # case-folded text compared them at 0.45 and 0.75)
    assert pool_statuses(
        [
            ("a.md", "為什麼我無法登錄帳號？"),
            ("b.md", "为什么我无法登录帐号?"),
            ("c.md", "如何重置我的密码？"),
            ("c.md", "如何 重置 我的 密码?"),
        ]
    ) == ["duplicate_across_documents", "duplicate_across_documents", None, "duplicate"]
    # different questions about one subject stay apart
    assert pool_statuses(
        [
            ("a.md", "如何重置我的密码？"),
            ("b.md", "如何修改我的用户名？"),
            ("a.md", "工作区备份会保留多长时间？"),
            ("a.md", "工作区备份多久运行一次？"),
        ]
    ) == [None, None, None, None]


def test_english_duplicate_keys_are_unchanged() -> None:
    assert _Pool.key("  How LONG are   backups kept? ") == "how long are backups kept?"


def test_a_missing_segmenter_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    filters._analyser.cache_clear()
    monkeypatch.setitem(sys.modules, "jieba", None)  # import jieba raises ImportError
    try:
        with pytest.raises(GenerationError) as info:
            _heuristic_reason("如何重置我的密码？", GenerationSettings())
    finally:
        filters._analyser.cache_clear()
    message = str(info.value)
    assert "Chinese questions ('如何重置我的密码？')" in message
    assert "pip install 'pytest-embedbench[zh]'" in message


ZH_DOCS = {
    "a-backups.md": "工作区备份每六小时运行一次，保留三十天。管理员可以在管理控制台的设置、备份、"
    "还原点中还原备份。",
    "b-refunds.md": "年度计划的退款按未使用的完整月份数按比例计算。月度计划不予退款，但取消后下次"
    "续订会立即停止。",
    "c-retention.md": "已删除的页面会在回收站中保留三十天，然后被永久清除。企业版计划可以设置一到十"
    "年之间的自定义保留期。",
}
ZH_ANSWERS = {
    "工作区备份": [
        ("管理员在哪里还原工作区的备份？", "管理控制台"),
        ("这篇文章讲了什么？", "备份"),  # refers_to_source
        ("备份多久运行一次", "每六小时"),  # no question mark
    ],
    "年度计划": [
        ("年度计划的退款是如何计算的？", "按比例"),
        ("请总结一下退款政策？", "-"),  # generic
        ("已删除的页面會在回收站中保留多久？", "三十天"),  # asked of c-retention.md too
    ],
    "已删除的页面": [
        ("已删除的页面会在回收站中保留多久?", "三十天"),
        ("企业版计划可以设置多长的保留期？", "一到十年"),
    ],
}


def test_generate_evalset_keeps_chinese_questions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through `embedbench generate-evalset` on a folder of Chinese documents: before, every
    Chinese question was one word (too_short) or had no '?' (no_question_mark): nothing kept."""
    from pytest_embedbench.cli import main

    for var in ("OLLAMA_HOST", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    docs = write_docs(tmp_path / "docs", ZH_DOCS)
    out = tmp_path / "generated.jsonl"
    with OllamaChatServer(answerer=answers_by_passage(ZH_ANSWERS)) as server:
        argv = ["generate-evalset", "--docs", str(docs), "--output", str(out)]
        argv += ["--host", server.url, "--questions-per-chunk", "3", "--min-chunk-chars", "20"]
        assert main([*argv, "--no-progress", "--request-timeout-s", "5"]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [(r["query"], r["relevant_doc_ids"]) for r in rows] == [
        ("管理员在哪里还原工作区的备份？", ["a-backups.md"]),
        ("年度计划的退款是如何计算的？", ["b-refunds.md"]),
        ("企业版计划可以设置多长的保留期？", ["c-retention.md"]),
    ]
    err = capsys.readouterr().err
    for reason, n in (
        ("refers_to_source", 1),
        ("no_question_mark", 1),
        ("generic", 1),
        ("duplicate_across_documents", 2),
    ):
        assert f"rejected {reason}: {n}" in err
    meta = json.loads(sidecar_path(out).read_text(encoding="utf-8"))
    assert meta["report"]["kept"] == 3


def test_a_chinese_chunk_is_eligible_by_its_weighted_length() -> None:
    """min_chunk_chars weighs a Han character as 3, as chunking does: a 50-character Chinese
    chunk holds what about 150 English characters do, and is asked about at the default 120;
    an English chunk is measured as before."""
    from pytest_embedbench.core.types import Chunk
    from pytest_embedbench.generate.sampling import sample_chunks

    zh = (
        "密码重置需要登录页面上的链接并且在十五分钟内完成"
        "否则链接会过期用户需要重新申请新的重置链接才能继续"
    )
    en_short, en_long = "x" * 119, "x" * 120
    chunks = [
        Chunk(doc, f"{doc}#0", text, 0, len(text))
        for doc, text in (("zh", zh), ("short", en_short), ("long", en_long))
    ]
    assert len(zh) < 120 <= 3 * len(zh)
    kept = sample_chunks(chunks, GenerationSettings())
    assert [c.doc_id for c in kept] == ["zh", "long"]
