"""Query noise per script (issue 44): a typo in a Chinese, Japanese, Korean or Thai query edits
one character of its script (no Latin letter typed into it, no whole-sentence 'word' changed),
and truncation of a query without spaces cuts characters, where it left the query whole."""

from __future__ import annotations

import difflib

import pytest

from pytest_embedbench.core.scripts import SEGMENTED_SCRIPT
from pytest_embedbench.data.datasets.core import Query
from pytest_embedbench.data.stress.noise import perturb
from tests.unit.test_bm25_language import messages

pytest.importorskip("django")


def queries(locale: str) -> list[str]:
    """Django's translations of 6 to 30 characters into ``locale``, with no Latin letter."""
    texts = sorted(set(messages(locale).values()))
    return [t for t in texts if 6 <= len(t) <= 30 and not any("a" <= c.lower() <= "z" for c in t)]


@pytest.mark.parametrize("locale", ["zh_Hans", "ja", "ko", "th"])
def test_a_typo_edits_one_character_of_the_querys_script(locale: str) -> None:
    found = queries(locale)[:60]
    assert len(found) >= 30
    changed = 0
    for i, text in enumerate(found):
        noisy = perturb(Query(f"q{i}", text), "typo", seed=0)
        assert not any("a" <= c.lower() <= "z" for c in noisy), (text, noisy)  # no Latin typed
        assert abs(len(noisy) - len(text)) <= 1
        # at most two characters differ (a swap), and the rest of the query is as it was
        matcher = difflib.SequenceMatcher(None, text, noisy, autojunk=False)
        kept = sum(block.size for block in matcher.get_matching_blocks())
        assert kept >= len(text) - 2, (text, noisy)
        edited = {c for tag, a, b, *_ in matcher.get_opcodes() if tag != "equal" for c in text[a:b]}
        assert all(SEGMENTED_SCRIPT.match(c) for c in edited | (set(noisy) - set(text)))
        changed += noisy != text
    assert changed >= 0.9 * len(found)


def test_truncating_a_chinese_query_cuts_characters() -> None:
    text = "如何把工作区的数据导出为表格文件"  # 16 characters, no space
    assert perturb(text, "truncate:0.5") == "如何把工作区的数"
    assert perturb(text, "truncate:0.25") == "如何把工"
    # a Latin word inside counts as one unit, and is never cut inside
    assert perturb("如何导出CSV文件", "truncate:0.5") == "如何导出"
    assert perturb("如何导出CSV文件", "truncate:0.6") == "如何导出CSV"


def test_japanese_and_thai_are_cut_by_characters_korean_by_words() -> None:
    assert perturb("パスワードをリセットする", "truncate:0.5") == "パスワードを"
    assert perturb("วิธีรีเซ็ตรหัสผ่าน", "truncate:0.5") == "วิธีรีเซ็"  # 9 of 18 characters
    # 8 of 18 would end before the mark on ซ: the mark stays with it
    assert perturb("วิธีรีเซ็ตรหัสผ่าน", "truncate:0.4") == "วิธีรีเซ็"
    assert perturb("비밀번호를 재설정하는 방법", "truncate:0.5") == "비밀번호를 재설정하는"


def test_english_noise_is_as_before() -> None:
    assert perturb("how do I reset my password", "typo", seed=0) == "how do I feset my password"
    assert perturb("how do I reset my password", "truncate:0.5") == "how do I"
