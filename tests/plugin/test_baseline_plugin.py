"""Baselines through real pytest runs: record, re-run, a real drop, noise, stale, =new."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .conftest import MODES, TOPIC_WORDS, make_dataset

TEST = """
import pytest
from pytest_embedbench import ModelSpec

PROD = ModelSpec({spec!r}, name="prod"{options})

@pytest.mark.embedbench(dataset="topics", models=[PROD])
def test_search(retrieval):
    pass
"""


def write_test(pytester: pytest.Pytester, spec: str, options: str = "", name: str = "test_gate"):
    pytester.makepyfile(**{name: TEST.format(spec=spec, options=options)})


def baseline(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / ".embedbench" / "baseline.json").read_text())


@pytest.mark.parametrize("mode", MODES)
def test_record_then_rerun_passes(gated: pytest.Pytester, mode: list[str]) -> None:
    write_test(gated, "bm25")
    first = gated.runpytest(*mode)
    first.assert_outcomes(passed=1)
    first.stdout.fnmatch_lines(
        [
            "1 test has no baseline (looked for *.embedbench?baseline.json, which does not exist); "
            "re-run with --embedbench-update-baseline*"
        ]
    )
    recorded = gated.runpytest("--embedbench-update-baseline", *mode)
    recorded.assert_outcomes(passed=1)
    recorded.stdout.fnmatch_lines(["baseline *baseline.json: 1 entry added, 0 replaced*"])
    data = baseline(gated)
    assert data["schema_version"] == 1
    (nodeid,) = data["entries"]
    assert nodeid == "test_gate.py::test_search[prod]"
    entry = data["entries"][nodeid]
    assert entry["model"] == "prod" and entry["spec"] == "bm25" and entry["queries"] == 60
    assert len(entry["per_query"]["ndcg@10"]) == 60
    again = gated.runpytest("--embedbench-json", "r.json", *mode)
    again.assert_outcomes(passed=1)
    assert "no baseline" not in again.stdout.str()
    report = json.loads((gated.path / "r.json").read_text())
    assert report["tests"][0]["baseline"]["status"] == "passed"
    again.stdout.fnmatch_lines(["*Δ nDCG@10 vs baseline*", "prod *+0.0000 ?+0.000, +0.000?*passed"])


@pytest.mark.parametrize("mode", MODES)
def test_a_real_drop_under_the_same_name_fails(gated: pytest.Pytester, mode: list[str]) -> None:
    write_test(gated, "bm25")
    gated.runpytest("--embedbench-update-baseline", *mode).assert_outcomes(passed=1)
    # "prod" now points at a much weaker model: 4-dimensional hashed bags of words
    write_test(gated, "hashing:weak", ", dim=4")
    result = gated.runpytest(*mode)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*embedbench checks failed for 'prod' on 'topics' (60 queries):",
            "*ndcg@10 regressed: baseline 1.0000, current 0.*, difference -0.* ?-0.*, -0.*? "
            "(95% paired bootstrap over 60 shared queries; tolerance 0.01)",
            # which queries got worse, and what they miss now (the top 5 of the summary's diff)
            "    per query: 0 improved, * degraded, * unchanged of 60 (ndcg@10 changed by more "
            "than 0.001)",
            "    most degraded (of *):",
            # the baseline entry keeps each query's top 10: what it lost and gained is named
            '      q* "where is zor* explained": 1.000 -> 0.* (-*); lost d*',
            # what changed, once for the test; no setting of only one of the two providers
            "  compared with a baseline of other inputs: the model spec changed ('bm25' -> "
            "'hashing:weak')",
        ]
    )
    result.stdout.fnmatch_lines(["prod *-0.* ?-0.*, -0.*? regressed*failed*"])


@pytest.mark.parametrize("mode", MODES)
def test_a_change_inside_noise_passes(gated: pytest.Pytester, mode: list[str]) -> None:
    write_test(gated, "bm25")
    gated.runpytest("--embedbench-update-baseline", *mode).assert_outcomes(passed=1)
    write_test(gated, "bm25", ", k1=1.2, b=0.7")  # a small tuning change
    result = gated.runpytest("--embedbench-json", "r.json", *mode)
    result.assert_outcomes(passed=1)
    outcome = json.loads((gated.path / "r.json").read_text())["tests"][0]["baseline"]
    assert outcome["status"] == "passed"
    assert any("settings changed" in c for c in outcome["changes"])


@pytest.mark.parametrize("mode", MODES)
def test_an_eval_set_that_lost_most_queries_is_stale(
    gated: pytest.Pytester, mode: list[str]
) -> None:
    write_test(gated, "bm25")
    gated.runpytest("--embedbench-update-baseline", *mode).assert_outcomes(passed=1)
    make_dataset(gated, n_queries=20)
    result = gated.runpytest(*mode)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*the baseline of test_gate.py::test_search?prod? is stale: only 20 of its 60 "
            "queries remain; the dataset changed*Re-record it with --embedbench-update-baseline*"
        ]
    )


@pytest.mark.parametrize("mode", MODES)
def test_update_new_only_adds_missing_entries(gated: pytest.Pytester, mode: list[str]) -> None:
    write_test(gated, "bm25")
    gated.runpytest("--embedbench-update-baseline", *mode).assert_outcomes(passed=1)
    before = baseline(gated)["entries"]["test_gate.py::test_search[prod]"]
    write_test(gated, "bm25", ", k1=0.9")  # the existing entry would change if replaced
    write_test(gated, "bm25", name="test_other")
    result = gated.runpytest("--embedbench-update-baseline=new", *mode)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*1 entry added, 0 replaced (mode 'new')*"])
    entries = baseline(gated)["entries"]
    assert set(entries) == {"test_gate.py::test_search[prod]", "test_other.py::test_search[prod]"}
    assert entries["test_gate.py::test_search[prod]"] == before
    # the default mode replaces
    gated.runpytest("--embedbench-update-baseline", *mode).assert_outcomes(passed=2)
    after = baseline(gated)["entries"]["test_gate.py::test_search[prod]"]
    assert after["settings_fingerprint"] != before["settings_fingerprint"]


def test_orphaned_entries_are_listed(gated: pytest.Pytester) -> None:
    write_test(gated, "bm25")
    write_test(gated, "bm25", name="test_other")
    gated.runpytest("--embedbench-update-baseline").assert_outcomes(passed=2)
    (gated.path / "test_other.py").unlink()
    result = gated.runpytest("-k", "nothing-matches")
    result.stdout.fnmatch_lines(
        ["1 baseline entry belongs to tests that no longer exist: test_other.py::test_search?prod?"]
    )


@pytest.mark.slow  # 3-7 s idle: the fast suite keeps it under three minutes
def test_gate_settings_from_marker_and_bad_baseline(gated: pytest.Pytester) -> None:
    write_test(gated, "bm25")
    gated.runpytest("--embedbench-update-baseline").assert_outcomes(passed=1)
    gated.makepyfile(
        test_gate="""
        import pytest
        from pytest_embedbench import ModelSpec

        WEAK = ModelSpec("hashing:weak", name="prod", dim=4)

        @pytest.mark.embedbench(dataset="topics", models=[WEAK], gate={"tolerance": "99%"})
        def test_search(retrieval):
            pass
        """
    )
    gated.runpytest().assert_outcomes(passed=1)  # a 99% relative tolerance forgives the drop
    (gated.path / ".embedbench" / "baseline.json").write_text("{not json")
    gated.makepyfile(test_plain="def test_plain():\n    pass\n")
    bad = gated.runpytest()
    bad.assert_outcomes(passed=1, failed=1)  # only the gated test fails, not every test
    bad.stdout.fnmatch_lines(
        ["*baseline.json line 1: not valid JSON*--embedbench-update-baseline*"]
    )
    typo = gated.runpytest("--embedbench-baseline", "other.json")
    typo.assert_outcomes(passed=2)  # another (absent) baseline file: nothing to gate
    # the advice works: the update replaces the bad content and keeps a copy of it
    fixed = gated.runpytest("--embedbench-update-baseline")
    fixed.assert_outcomes(passed=2)
    assert fixed.ret == 0
    fixed.stdout.fnmatch_lines(["*replaced its bad content*the old file is saved as *.bad-*"])
    (backup,) = (gated.path / ".embedbench").glob("baseline.json.bad-*")
    assert backup.read_text() == "{not json"
    gated.runpytest().assert_outcomes(passed=2)


@pytest.mark.parametrize("version", [0, 2, "1"])
def test_a_bad_schema_version_fails_gated_tests_and_only_an_older_one_is_replaced(
    gated: pytest.Pytester, version: object
) -> None:
    write_test(gated, "bm25")
    path = gated.path / ".embedbench" / "baseline.json"
    path.parent.mkdir()
    text = json.dumps({"schema_version": version, "entries": {}})
    path.write_text(text)
    result = gated.runpytest()
    result.assert_outcomes(failed=1)
    said = "was written by a newer" if version == 2 else "is not a schema this"
    result.stdout.fnmatch_lines([f"*{path}: schema_version {version!r} {said}*"])
    update = gated.runpytest("--embedbench-update-baseline")
    update.assert_outcomes(passed=1)
    if version == 2:  # never overwrite what a newer version wrote
        assert update.ret == 6
        update.stdout.fnmatch_lines(["*the baseline * was NOT written: *newer*upgrade it*"])
        assert path.read_text() == text
    else:
        assert update.ret == 0
        assert baseline(gated)["schema_version"] == 1
        gated.runpytest().assert_outcomes(passed=1)


@pytest.mark.slow  # 3-7 s idle: the fast suite keeps it under three minutes
def test_a_damaged_entry_fails_only_its_test_and_an_update_replaces_it(
    gated: pytest.Pytester,
) -> None:
    write_test(gated, "bm25")
    write_test(gated, "bm25", name="test_other")
    gated.runpytest("--embedbench-update-baseline").assert_outcomes(passed=2)
    path = gated.path / ".embedbench" / "baseline.json"
    data = json.loads(path.read_text())
    data["entries"]["test_gate.py::test_search[prod]"] = ["not", "an", "entry"]
    other = data["entries"]["test_other.py::test_search[prod]"]
    other["per_query"]["ndcg@10"]["q00"] = "high"
    path.write_text(json.dumps(data))
    result = gated.runpytest()
    result.assert_outcomes(failed=2)
    assert "INTERNALERROR" not in result.stdout.str() and "Traceback" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            f"*{path}: the baseline entry 'test_gate.py::test_search?prod?' is damaged: it is a "
            "list, not a mapping; re-record it with --embedbench-update-baseline",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*entry 'test_other.py::test_search?prod?' is damaged: per_query?'ndcg@10'??'q00'? is "
            "'high', not a number*"
        ]
    )
    only = gated.runpytest("-k", "test_gate")  # one test, one entry: the other is left alone
    only.assert_outcomes(failed=1)
    fixed = gated.runpytest("--embedbench-update-baseline", "-k", "test_gate")
    fixed.assert_outcomes(passed=1)
    fixed.stdout.fnmatch_lines(
        [
            "*re-recorded 1 damaged entry (test_gate.py::test_search?prod?)*",
            "*1 damaged entry was kept as they are (their tests did not run): test_other.py*",
        ]
    )
    after = gated.runpytest()
    after.assert_outcomes(passed=1, failed=1)
    gated.runpytest("--embedbench-update-baseline").assert_outcomes(passed=2)
    gated.runpytest().assert_outcomes(passed=2)


def make_docs_project(root, stubs: int = 0) -> None:
    """A documents folder and an eval set (the README's format), 15 topics; the first
    ``stubs`` documents replaced by a stub line, as a broken export would leave them."""
    docs = root / "help" / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, word in enumerate(TOPIC_WORDS[:15]):
        text = f"# {word}\n\nHow the {word} feature works and how to set up {word} for a team.\n"
        (docs / f"{word}.md").write_text("Stub.\n" if i < stubs else text)
        lines.append(
            json.dumps({"query": f"how do I set up {word}", "relevant_doc_ids": [f"{word}.md"]})
        )
    (root / "help" / "evalset.jsonl").write_text("\n".join(lines) + "\n")


DOCS_TEST = """
import pytest

@pytest.mark.embedbench(dataset="help", models=["bm25"])
def test_help_search(retrieval):
    pass
"""


@pytest.mark.parametrize("choice", ["default", "fail"])
def test_stubbed_documents_are_never_a_silent_pass(pytester: pytest.Pytester, choice: str) -> None:
    """Issue 8 item 2: three documents replaced by stubs dropped nDCG@10 by 0.2 and the gate
    said "passed". It must warn that the drop is inconclusive, or fail with inconclusive: fail."""
    make_docs_project(pytester.path)
    gate = "gate: {inconclusive: fail}\n" if choice == "fail" else ""
    pytester.makefile(".yaml", embedbench="datasets:\n  help: {path: help}\n" + gate)
    pytester.makeini("[pytest]\nembedbench_cache_dir = .cache-embedbench\n")
    pytester.makepyfile(test_help=DOCS_TEST)
    pytester.runpytest("--embedbench-update-baseline").assert_outcomes(passed=1)
    make_docs_project(pytester.path, stubs=3)
    result = pytester.runpytest("--embedbench-json", "r.json")
    outcome = json.loads((pytester.path / "r.json").read_text())["tests"][0]["baseline"]
    assert outcome["status"] == "inconclusive"
    text = result.stdout.str()
    assert "ndcg@10 inconclusive: baseline 1.0000, current 0.8000" in text
    assert "the smallest drop these 15 queries can detect is about 0." in text
    # the lost queries are named with their text, and the changed part of the dataset too
    assert "lost most: " in text and '"how do I set up zora"' in text
    assert "the dataset changed: documents.fingerprint" in text
    if choice == "fail":
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["*(gate: inconclusive: fail)*"])
    else:
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(
            [
                "bm25 *-0.2000 ?-0.*, +0.000? inconclusive*passed*",
                "test_help.py::test_help_search?bm25?: compared with a baseline of other "
                "inputs: the dataset changed: documents.fingerprint *",
                "test_help.py::test_help_search?bm25?: ndcg@10 inconclusive: *(a warning: the "
                "test passed)",
            ]
        )


def test_changed_settings_are_named_in_the_terminal(gated: pytest.Pytester) -> None:
    write_test(gated, "bm25")
    gated.runpytest("--embedbench-update-baseline").assert_outcomes(passed=1)
    write_test(gated, "bm25", ", k1=1.2")
    result = gated.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "test_gate.py::test_search?prod?: compared with a baseline of other inputs: the "
            "settings changed: k1 1.5 -> 1.2"
        ]
    )
    # one change, one name: not options.k1, applied.options.k1 and applied.settings.k1
    assert result.stdout.str().count("k1") == 1


def test_the_baseline_is_found_from_the_parent_folder(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 8 item 7: ``pytest myproj`` from the parent folder said "1 test has no baseline"."""
    project = pytester.path / "myproj"
    make_docs_project(project)
    (project / "embedbench.yaml").write_text("datasets:\n  help: {path: help}\n")
    (project / "test_help.py").write_text(DOCS_TEST)
    monkeypatch.chdir(project)  # no ini file: pytest's rootdir is where it starts
    missing = pytester.runpytest("--embedbench-no-cache", "-p", "no:cacheprovider")
    missing.assert_outcomes(passed=1)
    where = project / ".embedbench" / "baseline.json"
    missing.stdout.fnmatch_lines([f"1 test has no baseline (looked for {where}, which does not*"])
    recorded = pytester.runpytest(
        "--embedbench-update-baseline", "--embedbench-no-cache", "-p", "no:cacheprovider"
    )
    recorded.assert_outcomes(passed=1)
    assert where.is_file()
    monkeypatch.chdir(pytester.path)
    result = pytester.runpytest(
        "myproj", "--embedbench-no-cache", "-p", "no:cacheprovider", "--embedbench-json", "r.json"
    )
    result.assert_outcomes(passed=1)
    assert "no baseline" not in result.stdout.str()
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["tests"][0]["nodeid"] == "myproj/test_help.py::test_help_search[bm25]"
    assert report["tests"][0]["baseline"]["status"] == "passed"
    # recording from the parent folder updates the same file and the same entry
    pytester.runpytest(
        "myproj", "--embedbench-update-baseline", "--embedbench-no-cache", "-p", "no:cacheprovider"
    ).stdout.fnmatch_lines([f"baseline {where}: 0 entries added, 1 replaced*"])
    assert list(json.loads(where.read_text())["entries"]) == [
        "test_help.py::test_help_search[bm25]"
    ]
    assert not (pytester.path / ".embedbench").exists()


def test_a_damaged_entry_fails_its_test_from_the_parent_folder_too(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Entries are keyed relative to the project: ``pytest myproj`` from the parent folder must
    find a damaged entry under that key (it read as "no baseline" and the test passed)."""
    project = pytester.path / "myproj"
    make_docs_project(project)
    (project / "embedbench.yaml").write_text("datasets:\n  help: {path: help}\n")
    (project / "test_help.py").write_text(DOCS_TEST)
    monkeypatch.chdir(project)
    pytester.runpytest(
        "--embedbench-update-baseline", "--embedbench-no-cache", "-p", "no:cacheprovider"
    ).assert_outcomes(passed=1)
    where = project / ".embedbench" / "baseline.json"
    data = json.loads(where.read_text())
    data["entries"]["test_help.py::test_help_search[bm25]"] = ["not", "an", "entry"]
    where.write_text(json.dumps(data))
    monkeypatch.chdir(pytester.path)
    result = pytester.runpytest("myproj", "--embedbench-no-cache", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*{where}: the baseline entry 'test_help.py::test_help_search?bm25?' is damaged: it "
            "is a list, not a mapping; re-record it with --embedbench-update-baseline"
        ]
    )
    assert "no baseline" not in result.stdout.str()


TWO_MODELS = """
import pytest

@pytest.mark.embedbench(dataset="topics", models=["bm25", "hashing:h"])
def test_search(retrieval):
    pass

@pytest.mark.embedbench(dataset="topics", models=["bm25"])
def test_{other}(retrieval):
    pass
"""


@pytest.mark.slow  # 3-7 s idle: the fast suite keeps it under three minutes
def test_deselected_or_filtered_tests_are_not_orphans(gated: pytest.Pytester) -> None:
    """Issue 8 item 8: --embedbench-models=bm25 called the other model's entry an orphan."""
    gated.makepyfile(test_two=TWO_MODELS.format(other="more"))
    gated.runpytest("--embedbench-update-baseline").assert_outcomes(passed=3)
    for args in (["--embedbench-models=bm25"], ["-k", "bm25"], ["-k", "test_more"]):
        result = gated.runpytest(*args)
        assert result.ret == 0
        assert "no longer exist" not in result.stdout.str(), args
    # a test function that is gone is an orphan, whatever the selection
    gated.makepyfile(test_two=TWO_MODELS.format(other="renamed"))
    result = gated.runpytest("--embedbench-models=bm25")
    result.stdout.fnmatch_lines(
        ["1 baseline entry belongs to tests that no longer exist: test_two.py::test_more?bm25?"]
    )


def test_without_an_ini_file_the_baseline_stays_in_the_project(gated: pytest.Pytester) -> None:
    """Issue 28 item 4: with ``-c /dev/null --rootdir DIR`` (pytest without ini files) the
    baseline was written to ``/dev/.embedbench/baseline.json``, shared by every project run
    that way. It lives under the rootdir, as pytest's own cache does."""
    write_test(gated, "bm25")
    where = gated.path / ".embedbench" / "baseline.json"
    flags = ["-c", os.devnull, "--embedbench-no-cache", "-p", "no:cacheprovider"]
    recorded = gated.runpytest(*flags, "--rootdir", str(gated.path), "--embedbench-update-baseline")
    recorded.assert_outcomes(passed=1)
    recorded.stdout.fnmatch_lines([f"baseline {where}: 1 entry added, 0 replaced*"])
    assert list(json.loads(where.read_text())["entries"]) == ["test_gate.py::test_search[prod]"]
    assert not (Path(os.devnull).parent / ".embedbench").exists()
    # without --rootdir too (pytest roots where it starts): the same file is found
    again = gated.runpytest(*flags)
    again.assert_outcomes(passed=1)
    assert "no baseline" not in again.stdout.str()
    assert not (Path(os.devnull).parent / ".embedbench").exists()
