"""bm25's ``language`` option on real text: the Chinese, Japanese, Korean and Thai translations
of Django's messages (the ``.po`` files inside the django wheel; Django is BSD-licensed).

Two sets are built from them, neither through a segmenter (a set cut by the tokeniser under test
would favour it):

- the *span* set: documents are one language's translations, each query is a part of one of
  them (its middle words where it has three or more, else its middle characters);
- the *term* set: each query is the translation of a short message (one or two English words,
  "Password"), and the documents relevant to it are the translations of the messages whose
  English text holds those words ("Your password was changed."): relevance comes from the English
  side, so it is the same for every tokeniser, and finding them takes the word out of its
  inflections and particles.

Placeholders (``%(name)s``, ``%d``, ``{name}``) are taken out of the texts first: they are
markup, not language.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from pytest_embedbench import ConfigError, Evaluator, ModelSpec
from pytest_embedbench.core.exceptions import MissingExtraError
from pytest_embedbench.data.datasets.core import RetrievalDataset
from pytest_embedbench.models.providers import create_provider
from pytest_embedbench.retrieval.lexical.languages import (
    LANGUAGES,
    AutoTokenizer,
    make_tokenizer,
    script_language,
)
from pytest_embedbench.retrieval.lexical.tokenize import Tokenizer

django = pytest.importorskip("django")
bm25s = pytest.importorskip("bm25s")
pytest.importorskip("Stemmer")
pytrec_eval = pytest.importorskip("pytrec_eval")

# plain bm25 beside each segmenter: on Thai (its vowels are combining marks, which bm25s's
# word pattern does not take) some texts give no word at all, which bm25 warns about
pytestmark = pytest.mark.filterwarnings("ignore:bm25. .* documents have letters but give no")

LOCALES = {"zh": "zh_Hans", "ja": "ja", "ko": "ko", "th": "th"}
PLACEHOLDER = re.compile(r"%\(\w+\)[sdrf]|%[sdrf]|\{\w*\}")


def read_po(path: Path) -> dict[str, str]:
    """A .po file's translated messages, msgid -> msgstr (plural forms left out)."""
    out: dict[str, str] = {}
    msgid: str | None = None
    msgstr = ""
    field = None
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line.startswith("msgid "):
            if msgid and msgstr:
                out[msgid] = msgstr
            msgid, msgstr, field = ast.literal_eval(line[6:]), "", "id"
        elif line.startswith("msgstr "):
            msgstr, field = ast.literal_eval(line[7:]), "str"
        elif line.startswith('"') and field == "id" and msgid is not None:
            msgid += ast.literal_eval(line)
        elif line.startswith('"') and field == "str":
            msgstr += ast.literal_eval(line)
        else:  # a comment, msgid_plural, msgstr[n] or a blank line ends the string
            field = None
    if msgid and msgstr:
        out[msgid] = msgstr
    return out


def messages(locale: str) -> dict[str, str]:
    """English -> ``locale``'s translation of every message of Django and its contrib apps,
    placeholders out, files in sorted order (the same set on every run)."""
    root = Path(django.__file__).parent
    found: dict[str, str] = {}
    for path in sorted(root.glob(f"**/locale/{locale}/LC_MESSAGES/django.po")):
        for english, text in read_po(path).items():
            text = " ".join(PLACEHOLDER.sub(" ", text).split())
            english = " ".join(PLACEHOLDER.sub(" ", english).split())
            if text and english:
                found.setdefault(english, text)
    return found


def part(text: str) -> str:
    """A query cut from ``text``: its middle words, or its middle half of characters."""
    words = text.split()
    if len(words) >= 3:
        return " ".join(words[1:-1])
    n = len(text)
    return text[n // 4 : n // 4 + n // 2]


def span_set(texts: Sequence[str], name: str) -> RetrievalDataset:
    """Documents ``texts``; a query per text of 12 characters or more, a part of it."""
    corpus = {f"d{i:04d}": t for i, t in enumerate(texts)}
    queries = {f"q{i:04d}": part(t) for i, t in enumerate(texts) if len(t) >= 12}
    qrels = {q: {f"d{q[1:]}": 1} for q in queries}
    return RetrievalDataset.from_dicts(corpus, queries, qrels, name=name)


def term_set(locale: str) -> RetrievalDataset:
    """Queries: the translations of one- or two-word messages; relevant: the other messages
    whose English holds those words (2 to 30 of them)."""
    items = sorted(messages(locale).items())
    corpus = {f"d{i:04d}": text for i, (_, text) in enumerate(items)}
    english = [e.lower() for e, _ in items]
    queries, qrels = {}, {}
    for i, (source, text) in enumerate(items):
        words = re.findall(r"[a-z]+", source.lower())
        if not 1 <= len(words) <= 2 or len(source) < 4:
            continue
        holds = re.compile(r"\b" + r"\W+".join(words) + r"\b").search
        relevant = {f"d{j:04d}": 1 for j, e in enumerate(english) if j != i and holds(e)}
        if 2 <= len(relevant) <= 30:
            queries[f"q{i:04d}"], qrels[f"q{i:04d}"] = text, relevant
    return RetrievalDataset.from_dicts(corpus, queries, qrels, name=f"terms-{locale}")


class Whitespace(Tokenizer):
    """The words between spaces, lower-cased: what BM25 does without a segmenter."""

    fingerprint = "whitespace"

    def split(self, texts: Sequence[str]) -> list[list[str]]:
        return [text.lower().split() for text in texts]

    def terms(self, words: Sequence[str]) -> list[str | None]:
        return list(words)


@pytest.fixture(scope="module")
def evaluator() -> Evaluator:
    return Evaluator(cache=False, latency_passes=0)


def ndcg10(evaluator: Evaluator, ds: RetrievalDataset, **options: object) -> float:
    """nDCG@10 of bm25 with ``options`` on ``ds``, through the provider."""
    return float(evaluator.evaluate(ModelSpec("bm25", **options), ds).ndcg10)


def trec_ndcg10(ds: RetrievalDataset, scores: dict[str, np.ndarray]) -> np.ndarray:
    """pytrec_eval's nDCG@10 per query (ds's query order) of every document's score."""
    ids = [d.id for d in ds.documents]
    run = {q: {i: float(s) for i, s in zip(ids, row, strict=True)} for q, row in scores.items()}
    qrels = {q: dict(judged) for q, judged in ds.qrels.items()}
    found = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"}).evaluate(run)
    return np.array([found[q.id]["ndcg_cut_10"] for q in ds.queries])


def bm25s_ndcg10(ds: RetrievalDataset, tokens: Callable[[str], list[str]]) -> np.ndarray:
    """bm25s itself (Lucene, k1 1.5, b 0.75, bm25's defaults) over ``tokens``' terms,
    judged by pytrec_eval."""
    model = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    model.index([tokens(d.text) for d in ds.documents], show_progress=False)
    vocab = model.vocab_dict
    scores = {}
    for q in ds.queries:
        known = [t for t in tokens(q.text) if t in vocab]
        scores[q.id] = model.get_scores(known) if known else np.zeros(len(ds.documents))
    return trec_ndcg10(ds, scores)


def whitespace_ndcg10(ds: RetrievalDataset) -> float:
    """nDCG@10 of BM25 over the words between spaces, through bm25s itself."""
    return float(bm25s_ndcg10(ds, lambda text: text.lower().split() or [""]).mean())


@pytest.fixture(scope="module")
def chinese() -> RetrievalDataset:
    return span_set(sorted(set(messages("zh_Hans").values())), "zh-spans")


@functools.cache
def t2s() -> Callable[[str], str]:
    import opencc

    convert: Callable[[str], str] = opencc.OpenCC("t2s").convert
    return convert


def jieba_opencc(text: str) -> list[str]:
    """The zh recipe, written out: OpenCC t2s, jieba's words, each cut at white space and ASCII
    punctuation, lower-cased, the parts with a letter or a digit."""
    import jieba

    out = []
    for piece in jieba.lcut(t2s()(text)):
        out += [
            w.lower() for w in re.split(r"[\s!-/:-@\[-^`{-~]+", piece) if re.search(r"[^\W_]", w)
        ]
    return out or [""]


def test_zh_equals_bm25s_over_jieba_opencc_words_and_is_far_above_whitespace(
    evaluator: Evaluator, chinese: RetrievalDataset
) -> None:
    result = evaluator.evaluate(ModelSpec("bm25", language="zh"), chinese)
    direct = bm25s_ndcg10(chinese, jieba_opencc)
    np.testing.assert_allclose(result.per_query("ndcg@10"), direct, rtol=0, atol=1e-6)
    assert abs(float(result.ndcg10) - direct.mean()) < 1e-6
    plain, spaces = ndcg10(evaluator, chinese), whitespace_ndcg10(chinese)
    assert float(result.ndcg10) > 0.7 and float(result.ndcg10) > max(plain, spaces) + 0.3, (
        result.ndcg10,
        plain,
        spaces,
    )


def test_traditional_and_simplified_score_alike_with_folding(
    evaluator: Evaluator, chinese: RetrievalDataset
) -> None:
    import opencc

    s2t = opencc.OpenCC("s2t").convert
    traditional = RetrievalDataset(
        [type(d)(d.id, s2t(d.text)) for d in chinese.documents],
        [type(q)(q.id, s2t(q.text)) for q in chinese.queries],
        chinese.qrels,
        name="zh-spans-traditional",
    )
    # the questions written in traditional characters, the passages in simplified
    asked = RetrievalDataset(
        chinese.documents, traditional.queries, chinese.qrels, name="zh-asked-traditional"
    )
    simplified = ndcg10(evaluator, chinese, language="zh")
    assert abs(ndcg10(evaluator, traditional, language="zh") - simplified) < 0.01
    assert abs(ndcg10(evaluator, asked, language="zh") - simplified) < 0.01
    unfolded = ndcg10(evaluator, asked, language="zh", fold=False)
    assert unfolded < simplified - 0.1, (unfolded, simplified)


@pytest.mark.parametrize("language", ["ja", "ko", "th"])
def test_ja_ko_th_segment_and_score_above_whitespace(evaluator: Evaluator, language: str) -> None:
    ds = term_set(LOCALES[language])
    assert len(ds.queries) >= 40
    segmented = ndcg10(evaluator, ds, language=language)
    plain, spaces = ndcg10(evaluator, ds), whitespace_ndcg10(ds)
    assert segmented > max(plain, spaces) + 0.05, (segmented, plain, spaces)
    # segmented: the terms of the corpus are far shorter than its words between spaces
    texts = [d.text for d in ds.documents]
    terms = [t for words in make_tokenizer(language).tokenize(texts) for t in words]
    words = [w for text in texts for w in text.split()]
    assert np.mean([len(t) for t in terms]) < 0.7 * np.mean([len(w) for w in words])


@pytest.mark.slow  # 3-7 s idle: the fast suite keeps it under three minutes
def test_auto_segments_a_mixed_corpus_text_by_text(evaluator: Evaluator) -> None:
    sets = {language: term_set(locale) for language, locale in LOCALES.items()}
    for language, ds in sets.items():  # each text's script names its language
        native = [d.text for d in ds.documents if re.search(r"[^\W\d_a-zA-Z]", d.text)]
        found = [script_language(text) for text in native]
        # a Japanese text of kanji alone (変更, 詳細設定: 125 of 740) reads as Chinese
        share = found.count(language) / len(found)
        assert share > (0.8 if language == "ja" else 0.999), (language, share)
        assert set(found) <= {language, "zh"}
    prefixed = [
        (f"{language}-{d.id}", d.text, language)
        for language, ds in sets.items()
        for d in ds.documents
    ]
    mixed = RetrievalDataset.from_dicts(
        {did: text for did, text, _ in prefixed},
        {f"{lang}-{q.id}": q.text for lang, ds in sets.items() for q in ds.queries},
        {
            f"{lang}-{qid}": {f"{lang}-{d}": g for d, g in judged.items()}
            for lang, ds in sets.items()
            for qid, judged in ds.qrels.items()
        },
        name="mixed",
    )
    auto = make_tokenizer("auto")
    assert isinstance(auto, AutoTokenizer)
    # a text of a segmented script gets its script's language's words (here: no Latin word
    # to stem); texts of every language, tokenised together, each as alone
    sample = [(did, text) for did, text, _ in prefixed[::25] if not re.search("[A-Za-z]", text)]
    together_terms = auto.tokenize([text for _, text in sample])
    for (did, text), terms in zip(sample, together_terms, strict=True):
        script = script_language(text)
        if script != "en":
            assert terms == make_tokenizer(script).tokenize([text])[0], did
    together = ndcg10(evaluator, mixed, language="auto")
    apart = np.mean([ndcg10(evaluator, ds, language=lang) for lang, ds in sets.items()])
    plain = ndcg10(evaluator, mixed)
    assert together > plain + 0.1 and together > apart - 0.1, (together, apart, plain)


def test_english_is_todays_default_and_each_tokenisation_has_its_own_key(
    evaluator: Evaluator,
) -> None:
    ds = term_set("de")  # Latin script: bm25's words, German stop words and stemmer
    default = evaluator.evaluate(ModelSpec("bm25"), ds)
    english = evaluator.evaluate(ModelSpec("bm25", language="en"), ds)
    assert english.rankings == default.rankings
    assert (english.per_query("ndcg@10") == default.per_query("ndcg@10")).all()
    german = make_tokenizer("de")
    assert german.tokenize(["Die Häuser"]) == [["haus"]]
    keys = {
        create_provider(ModelSpec("bm25", **options)).namespace_key()
        for options in (
            {},
            {"language": "zh"},
            {"language": "zh", "fold": False},
            {"language": "ja"},
            {"language": "auto"},
        )
    }
    assert len(keys) == 5
    zh = create_provider(ModelSpec("bm25", language="zh"))
    assert (
        zh.namespace()["tokenizer"].startswith("zh:jieba=0.")
        and "opencc" in zh.namespace()["tokenizer"]
    )
    assert "tokenizer" not in create_provider(ModelSpec("bm25")).namespace()


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"language": "xx"}, "bm25 language='xx' is not known; use one of ["),
        ({"language": "zh", "stemmer": "english"}, "option stemmer do not apply to language 'zh'"),
        ({"language": "th", "stopwords": "en", "fold": True}, "options fold, stopwords do not"),
        ({"fold": False}, "fold applies to language 'zh' or 'auto', not 'en'"),
        ({"language": "zh", "fold": "no"}, "bm25 fold='no': use true"),
    ],
)
def test_a_wrong_option_is_an_error_that_names_it(options: dict, says: str) -> None:
    with pytest.raises(ConfigError) as info:
        Evaluator(cache=False).provider(ModelSpec("bm25", **options))
    assert says in str(info.value)
    if "not known" in says:
        assert all(code in str(info.value) for code in LANGUAGES)


@pytest.mark.parametrize(
    ("language", "module", "extra"),
    [
        ("zh", "jieba", "zh"),
        ("zh", "opencc", "zh"),
        ("ja", "sudachipy", "ja"),
        ("ko", "kiwipiepy", "ko"),
        ("th", "pythainlp", "th"),
    ],
)
def test_a_missing_segmenter_names_its_extra(
    monkeypatch: pytest.MonkeyPatch, language: str, module: str, extra: str
) -> None:
    # the import fails as it does where the package is not installed (None in sys.modules)
    for name in list(sys.modules):
        if name == module or name.startswith(f"{module}."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, module, None)
    from pytest_embedbench.retrieval.lexical import languages

    for cached in (languages._jieba, languages._sudachi_dictionary, languages._kiwi):
        cached.cache_clear()
    with pytest.raises(MissingExtraError) as info:
        Evaluator(cache=False).provider(ModelSpec("bm25", language=language))
    assert f"pip install 'pytest-embedbench[{extra}]'" in str(info.value)
    for cached in (languages._jieba, languages._sudachi_dictionary, languages._kiwi):
        cached.cache_clear()


def test_the_lexical_leg_of_a_hybrid_takes_the_language(
    evaluator: Evaluator, chinese: RetrievalDataset
) -> None:
    hybrid = ModelSpec("hybrid:bm25+bm25", left={"language": "zh"}, right={"language": "zh"})
    both = float(evaluator.evaluate(hybrid, chinese).ndcg10)
    assert abs(both - ndcg10(evaluator, chinese, language="zh")) < 1e-9
    plain = float(evaluator.evaluate(ModelSpec("hybrid:bm25+bm25"), chinese).ndcg10)
    assert both > plain + 0.3
