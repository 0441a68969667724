"""core.text.inert: every control character a terminal acts on shown as ``\\xNN``; printable
text of any script, tab and newline (in free text) unchanged (issue 42 item 3)."""

from __future__ import annotations

import unicodedata

from pytest_embedbench.core.text import inert


def test_escapes_osc_csi_bel_and_c1_as_visible_hex() -> None:
    assert inert("mod\x1b]0;pwned\x07\x1b[2J\x9b") == "mod\\x1b]0;pwned\\x07\\x1b[2J\\x9b"
    assert inert("ok\rFAILED\x00\x7f\x80\x85\x9f") == "ok\\x0dFAILED\\x00\\x7f\\x80\\x85\\x9f"


def test_free_text_keeps_tab_and_newline_a_line_does_not() -> None:
    assert inert("a\tb\nc") == "a\tb\nc"
    assert inert("a\tb\nc", keep="") == "a\\x09b\\x0ac"
    assert inert("a\r\nb\x1b", keep="\t\n\r") == "a\r\nb\\x1b"  # the CSV writer's choice


def test_every_control_and_nothing_else_is_replaced() -> None:
    controls = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == "Cc"]
    assert len(controls) == 65  # C0 (32), DEL, C1 (32): Unicode's whole Cc category
    for char in controls:
        shown = inert(char, keep="")
        assert shown == f"\\x{ord(char):02x}" and shown.isprintable() and shown.isascii()
    assert [c for c in controls if inert(c) == c] == ["\t", "\n"]
    text = "naïve 日本語 عربى Ελληνικά ✅ \\x1b already shown, \u00a0nbsp"
    assert inert(text) == text and inert(text, keep="") == text


def test_is_idempotent_and_deterministic() -> None:
    text = "".join(chr(c) for c in range(0x00, 0xA1))
    once = inert(text)
    assert inert(once) == once and inert(text) == once
    assert once.encode("utf-8") == inert(text).encode("utf-8")
