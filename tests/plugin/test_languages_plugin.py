"""A dataset in three languages through a real pytest run (issue 44): English, Chinese and
Japanese span sets built from Django's translations (tests/unit/test_bm25_language.py builds
them), each a BEIR folder named under ``languages:`` in embedbench.yaml, bm25 with
``language: auto``. The test reports a row per language and their macro average, and the
gate's bootstrap resamples within each language."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from tests.plugin.conftest import CONFTEST, MODES, set_ini, write_dataset
from tests.unit.test_bm25_language import messages, span_set

pytest.importorskip("django")
pytest.importorskip("bm25s")
pytest.importorskip("jieba")
pytest.importorskip("opencc")
pytest.importorskip("sudachipy")

#: documents a language: small enough for the fast suite
PER_LANGUAGE = 60
LOCALES = {"en": "en_GB", "zh": "zh_Hans", "ja": "ja"}
RESAMPLES = 2000

TEST = """
import json
import pytest

@pytest.mark.embedbench(dataset="django", models=["bm25"])
def test_three_languages(retrieval, record_property):
    rows = {lang: part.ndcg10 for lang, part in retrieval.by_language.items()}
    record_property("rows", json.dumps({
        lang: [float(e), e.low, e.high, e.n] for lang, e in rows.items()
    }))
    macro = retrieval.ndcg10
    record_property("macro", json.dumps([float(macro), macro.low, macro.high, macro.n]))
    record_property("per_query", json.dumps(dict(zip(retrieval.query_ids, macro.per_query))))
    assert macro >= 0.3
"""


def three_languages(pytester: pytest.Pytester, extra: str = "") -> None:
    """The project: one BEIR folder a language and embedbench.yaml naming them."""
    for language, locale in LOCALES.items():
        texts = sorted(set(messages(locale).values()))[:PER_LANGUAGE]
        write_dataset(pytester.path / "data" / language, span_set(texts, language))
    pytester.makeconftest(CONFTEST)
    pytester.makefile(
        ".yaml",
        embedbench=(
            "datasets:\n  django:\n    languages:\n"
            + "".join(f"      {lang}: data/{lang}\n" for lang in LOCALES)
            + "providers:\n  bm25: {language: auto}\n"
            + extra
        ),
    )
    set_ini(pytester)
    pytester.makepyfile(test_languages=TEST)


def stratified_macro(values: np.ndarray, strata: list[str], seed: int, n: int) -> list[float]:
    """The 95% percentile interval of the macro mean, written out here: per resample, each
    language (in sorted order) draws its own queries with replacement from one seeded
    generator, the resample's value is the mean of the languages' means."""
    rng = np.random.default_rng(seed)
    labels = np.asarray(strata)
    total = np.zeros(n)
    languages = sorted(set(strata))
    for language in languages:
        members = np.flatnonzero(labels == language)
        idx = rng.integers(0, len(members), size=(n, len(members)))
        total += values[members[idx]].mean(axis=1)
    low, high = np.quantile(total / len(languages), [0.025, 0.975])
    return [float(low), float(high)]


def _properties(report: dict) -> dict:
    (test,) = report["tests"]
    return {name: json.loads(value) for name, value in test["user_properties"]}


@pytest.mark.parametrize("mode", MODES)
def test_three_languages_report_three_rows_and_their_macro_average(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    """Serially and under xdist (the workers send each result's languages to the controller)."""
    three_languages(pytester)
    result = pytester.runpytest(
        *mode, "--embedbench-json", "r.json", f"--embedbench-bootstrap={RESAMPLES}"
    )
    result.assert_outcomes(passed=1)
    report = json.loads((pytester.path / "r.json").read_text())
    (test,) = report["tests"]
    data = test["result"]
    assert sorted(data["languages"]) == ["en", "ja", "zh"]
    for language, row in data["languages"].items():
        assert row["documents"] == PER_LANGUAGE, language
    rows = {lang: row["metrics"]["ndcg@10"]["value"] for lang, row in data["languages"].items()}
    macro = data["metrics"]["ndcg@10"]
    assert macro["value"] == pytest.approx(np.mean(list(rows.values())), abs=1e-12)
    # not the mean over all queries: the languages have different numbers of queries
    counts = [row["queries"] for row in data["languages"].values()]
    assert len(set(counts)) > 1
    per_query = data["per_query"]["ndcg@10"]
    strata = [data["query_languages"][q] for q in per_query]
    values = np.array(list(per_query.values()))
    assert macro["value"] != pytest.approx(values.mean(), abs=1e-6)
    # the interval is the stratified bootstrap of the macro mean, with the run's seed
    low, high = stratified_macro(values, strata, seed=0, n=RESAMPLES)
    assert (macro["low"], macro["high"]) == pytest.approx((low, high), abs=1e-12)
    # each query id carries its language, and a language's documents are its own
    assert all(q.startswith(f"{data['query_languages'][q]}:") for q in per_query)
    for qid, top in data["retrieved"].items():
        assert all(doc.startswith(qid.split(":")[0] + ":") for doc in top)


def test_the_gate_bootstraps_within_languages(pytester: pytest.Pytester) -> None:
    """Record a baseline with whitespace bm25, then run bm25 language: auto against it: the
    gate's interval of the difference is the stratified bootstrap of the macro difference."""
    three_languages(
        pytester,
        "gate: {metrics: [ndcg@10], figures: {bytes_per_doc: null, index_mb: null}}\n",
    )
    yaml = pytester.path / "embedbench.yaml"
    segmented = yaml.read_text()
    yaml.write_text(segmented.replace("providers:\n  bm25: {language: auto}\n", ""))
    args = ("--embedbench-baseline", "base.json", f"--embedbench-bootstrap={RESAMPLES}")
    pytester.runpytest(*args, "--embedbench-update-baseline").assert_outcomes(passed=1)
    baseline = json.loads((pytester.path / "base.json").read_text())
    yaml.write_text(segmented)
    result = pytester.runpytest(*args, "--embedbench-json", "r.json")
    result.assert_outcomes(passed=1)
    report = json.loads((pytester.path / "r.json").read_text())
    (test,) = report["tests"]
    delta = test["baseline"]["deltas"]["ndcg@10"]
    (entry,) = _entries(baseline)
    old = entry["per_query"]["ndcg@10"]
    current = test["result"]["per_query"]["ndcg@10"]
    languages = test["result"]["query_languages"]
    shared = sorted(set(old) & set(current))
    diff = np.array([round(current[q], 6) - old[q] for q in shared])
    strata = [languages[q] for q in shared]
    assert delta["difference"] == pytest.approx(
        np.mean([diff[np.asarray(strata) == s].mean() for s in set(strata)]), abs=1e-9
    )
    low, high = stratified_macro(diff, strata, seed=0, n=RESAMPLES)
    assert (delta["low"], delta["high"]) == pytest.approx((low, high), abs=1e-9)


def _entries(baseline: dict) -> list[dict]:
    """The baseline file's entries, whatever their nesting (tests -> models -> datasets)."""
    found: list[dict] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "per_query" in node:
                found.append(node)
                return
            for value in node.values():
                walk(value)

    walk(baseline)
    return found


def test_a_language_that_is_no_code_names_the_key(pytester: pytest.Pytester) -> None:
    three_languages(pytester)
    yaml = pytester.path / "embedbench.yaml"
    yaml.write_text(yaml.read_text().replace("      ja: data/ja", "      Japanese: data/ja"))
    result = pytester.runpytest()
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        [
            "*embedbench.yaml: datasets.django.languages.Japanese: language 'Japanese' is not a "
            "language code*"
        ]
    )


def test_english_only_paths_are_unchanged(tmp_path: Path) -> None:
    """A dataset in one language keeps its fingerprint and plain means (nothing stratified)."""
    from pytest_embedbench import load_dataset

    texts = sorted(set(messages("en_GB").values()))[:20]
    write_dataset(tmp_path / "en", span_set(texts, "en"))
    ds = load_dataset(tmp_path / "en")
    assert ds.languages == ()
    assert not ds.separate_corpora


def test_every_writer_shows_the_language_table(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Terminal, JSON summary, HTML, Markdown, CSV, the GitHub job summary and the JUnit
    properties each show the rows of the summary's ``languages`` section, the same figures."""
    three_languages(pytester)
    step = pytester.path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    result = pytester.runpytest(
        "--embedbench-json=out/r.json",
        "--embedbench-html=out/r.html",
        "--embedbench-csv=out/csv",
        "--embedbench-md=out/r.md",
        "--junitxml=out/junit.xml",
        "-o",
        "junit_family=xunit1",  # the test module records properties of its own
    )
    result.assert_outcomes(passed=1)
    out = pytester.path / "out"
    report = json.loads((out / "r.json").read_text())
    (section,) = report["summary"]["languages"]
    assert section["dataset"] == "django" and section["languages"] == ["en", "ja", "zh"]
    rows = {r["language"]: r for r in section["rows"]}
    assert list(rows) == ["en", "ja", "zh", "macro"]
    data = report["tests"][0]["result"]
    for language in ("en", "ja", "zh"):
        ndcg = data["languages"][language]["metrics"]["ndcg@10"]
        assert rows[language]["figures"]["ndcg@10"]["value"] == ndcg["value"]
    macro = data["metrics"]["ndcg@10"]
    assert rows["macro"]["figures"]["ndcg@10"]["value"] == macro["value"]
    cell = f"{macro['value']:.4f} [{macro['low']:.3f}, {macro['high']:.3f}]"
    zh = data["languages"]["zh"]["metrics"]["ndcg@10"]
    zh_cell = f"{zh['value']:.4f} [{zh['low']:.3f}, {zh['high']:.3f}]"
    lines = result.stdout.lines
    basis = "metrics are the macro average over 3 languages (en, ja, zh)"
    assert any(line.startswith(basis) for line in lines)  # under the headline table
    assert "languages of 'django': en, ja, zh and their macro average" in lines
    zh_queries = data["languages"]["zh"]["queries"]
    assert any(
        ln.split()[:4] == ["bm25", "zh", str(zh_queries), "60"] and zh_cell in ln for ln in lines
    )
    macro_row = ["bm25", "macro", str(data["queries"]), str(3 * PER_LANGUAGE)]
    assert any(ln.split()[:4] == macro_row and cell in ln for ln in lines)
    # the job summary's Markdown escapes the intervals' brackets
    job = step.read_text().replace("\\[", "[").replace("\\]", "]")
    for text in ((out / "r.md").read_text(), job):
        assert "Metrics are the macro average over 3 languages (en, ja, zh)" in text
        assert "languages of 'django'" in text
        assert f"| bm25 | macro | {data['queries']} | {3 * PER_LANGUAGE} | {cell}" in text
        assert zh_cell in text
    html = (out / "r.html").read_text()
    assert '<section id="languages">' in html and "<b>macro</b>" in html
    assert "Metrics are the macro average over 3 languages (en, ja, zh)" in html
    assert f"{macro['value']:.4f}" in html and f"{zh['value']:.4f}" in html
    csv_rows = [
        line.split(",") for line in (out / "csv" / "languages.csv").read_text().splitlines()
    ]
    header = csv_rows[0]
    by = {(r[header.index("language")], r[header.index("metric")]): r for r in csv_rows[1:]}
    assert float(by[("macro", "ndcg@10")][header.index("value")]) == macro["value"]
    assert float(by[("zh", "ndcg@10")][header.index("low")]) == zh["low"]
    # queries.csv: each query's row names its language, the JSON report's
    query_lines = (out / "csv" / "queries.csv").read_text().splitlines()
    head = query_lines[0].split(",")
    assert head[:6] == ["test", "dataset", "model", "query_id", "query", "language"]
    shown = {}
    for line in query_lines[1:]:
        cells = next(csv.reader([line]))
        shown[cells[head.index("query_id")]] = cells[head.index("language")]
    assert shown == data["query_languages"]
    junit = (out / "junit.xml").read_text()
    assert f'name="embedbench.by_language.zh.ndcg@10" value="{zh["value"]}"' in junit
    assert f'name="embedbench.ndcg@10" value="{macro["value"]}"' in junit


def test_a_threshold_per_language(pytester: pytest.Pytester) -> None:
    """``by_language.zh.ndcg@10`` checks the Chinese mean alone: a limit above it fails the
    test naming the key, the value with its interval and the rule; one below passes; an
    unknown language fails the test naming the dataset's languages."""
    three_languages(
        pytester,
        'thresholds:\n  defaults: {by_language.zh.ndcg@10: ">= 0.99", '
        'by_language.en.ndcg@10: ">= 0.1", by_language.ko.ndcg@10: ">= 0.1"}\n',
    )
    result = pytester.runpytest("--embedbench-json=r.json")
    result.assert_outcomes(failed=1)
    zh = json.loads((pytester.path / "r.json").read_text())["tests"][0]["result"]["languages"]["zh"]
    ndcg = zh["metrics"]["ndcg@10"]
    shown = f"{ndcg['value']:.4f} [{ndcg['low']:.4f}, {ndcg['high']:.4f}]"
    out = result.stdout.str()
    assert f"by_language.zh.ndcg@10 = {shown} is not >= 0.99" in out
    assert "by_language.en.ndcg@10" not in out.split("short test summary")[0].split("FAILURES")[1]
    assert (
        "by_language.ko.ndcg@10: not measured, dataset 'django' has no language 'ko' (its "
        "languages: ['en', 'zh', 'ja'])" in out
    )


def test_subword_bm25_from_the_yaml(pytester: pytest.Pytester) -> None:
    """``language: subword`` (MiniLM's subword tokens) on the three languages: the index is
    keyed by the tokenizer's content and the library's version."""
    three_languages(pytester)
    yaml = pytester.path / "embedbench.yaml"
    yaml.write_text(yaml.read_text().replace("{language: auto}", "{language: subword}"))
    result = pytester.runpytest("--embedbench-json=r.json")
    result.assert_outcomes(passed=1)
    (test,) = json.loads((pytester.path / "r.json").read_text())["tests"]
    settings = test["result"]["model_info"]["settings"]
    assert settings["tokenizer"].startswith(
        "subword:default=all-MiniLM-L6-v2:tokenizer.json sha256="
    ), settings
    assert sorted(test["result"]["languages"]) == ["en", "ja", "zh"]


MORE = """
import pytest

@pytest.mark.embedbench(dataset="django", models=["hashing:h"], indexes=["faiss:flat"])
def test_index(retrieval):
    pass
"""


@pytest.mark.slow
def test_the_judge_on_three_languages_and_the_index_axis_error(pytester: pytest.Pytester) -> None:
    """The LLM judge on a dataset with a corpus per language (its judgments file named by
    ``file:``): its judged@5 before is the official macro judged@5, every hole graded. The
    index axis, one index over one corpus, is an error that says to name a language's dataset
    on its own."""
    pytest.importorskip("faiss")
    from tests.providers.servers import OpenAIChatServer

    with OpenAIChatServer(answerer=lambda body: '{"grade": 1}') as server:
        judge = {
            "model": "openai:qwen2.5-7b-instruct",
            "base_url": server.url + "/v1",
            "agreement_sample": 0,
            "depth": 5,
            "file": "judgments.tsv",
        }
        three_languages(pytester, "judge: " + json.dumps(judge) + "\n")
        pytester.makepyfile(test_more=MORE)
        result = pytester.runpytest("--embedbench-json", "r.json")
        result.assert_outcomes(passed=1, errors=1)
    report = json.loads((pytester.path / "r.json").read_text())
    data = next(t for t in report["tests"] if "three_languages" in t["nodeid"])["result"]
    found = data["judge"]
    assert found["judged_before"] == data["metrics"]["judged@5"]["value"]  # both macro
    assert found["judged_after"] == 1.0 and found["llm_grades"] == found["holes"] > 0
    lines = (pytester.path / "judgments.tsv").read_text().splitlines()
    assert len(lines) == 2 + found["holes"]
    result.stdout.fnmatch_lines(
        [
            "*indexes=: dataset 'django' keeps a corpus per language [[]'en', 'zh', 'ja'[]], and "
            "the index axis measures one index over one corpus: name each language as a dataset "
            "of its own in embedbench.yaml*"
        ]
    )
