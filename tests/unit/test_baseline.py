"""Baseline files, the paired-bootstrap gate, gate settings and recommendations."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from pytest_embedbench import BaselineError, ConfigError
from pytest_embedbench.baseline import (
    BaselineEntry,
    BaselineFile,
    GateConfig,
    GateSettings,
    entry_from_record,
    gate,
)
from pytest_embedbench.baseline.store import entry_problem
from pytest_embedbench.report.summary.recommend import recommend


def record(
    scores: dict[str, float],
    *,
    fingerprint: str = "fp",
    p95: float = 10.0,
    latencies: list[float] | dict[str, float] | None = None,
    **extra,
) -> dict:
    per_query = {"ndcg@10": scores, "recall@100": {q: 1.0 for q in scores}}
    mean = float(np.mean(list(scores.values())))
    latency = {"p50_ms": p95 / 2, "p95_ms": p95, "p99_ms": p95}
    if latencies is not None:  # by query id (the timed sample), or a list (older versions)
        values = list(latencies.values()) if isinstance(latencies, dict) else latencies
        p50, p95 = np.percentile(values, [50, 95])
        latency = {"p50_ms": p50, "p95_ms": p95, "p99_ms": max(values)}
        latency["per_query_ms"] = latencies
    out = {
        "nodeid": "t.py::test_x[prod]",
        "model": "prod",
        "spec": extra.get("spec", "bm25"),
        "dataset": "d",
        "settings_fingerprint": extra.get("settings", "s1"),
        "machine_fingerprint": extra.get("machine", "m1"),
        "result": {
            "dataset_fingerprint": fingerprint,
            "queries": len(scores),
            "metrics": {"ndcg@10": {"value": mean, "low": mean, "high": mean, "n": len(scores)}},
            "latency": latency,
            "model_info": {"revision": extra.get("revision")},
            "per_query": per_query,
        },
    }
    for key in ("settings_detail", "dataset_parts"):
        if key in extra:
            out[key.replace("_detail", "")] = extra[key]
    return out


def scores(n: int, seed: int, shift: float = 0.0) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    values = np.clip(rng.random(n) * 0.6 + 0.3 + shift, 0, 1)
    return {f"q{i:03d}": float(v) for i, v in enumerate(values)}


def test_entry_is_rounded_and_keeps_per_query_scores() -> None:
    entry = entry_from_record(record({"q1": 0.123456789, "q2": 1.0}))
    assert entry.per_query["ndcg@10"] == {"q1": 0.123457, "q2": 1.0}
    assert entry.dataset_fingerprint == "fp" and entry.settings_fingerprint == "s1"
    assert entry.to_dict()["latency"] == {"p50_ms": 5.0, "p95_ms": 10.0, "p99_ms": 10.0}


def test_missing_entry() -> None:
    assert gate(record(scores(50, 0)), None, GateSettings()).status == "missing"


def test_same_scores_pass() -> None:
    current = record(scores(100, 0))
    outcome = gate(current, entry_from_record(current), GateSettings())
    assert outcome.status == "passed" and not outcome.failures and not outcome.changes
    assert outcome.deltas["ndcg@10"].difference == pytest.approx(0.0, abs=1e-6)


def test_a_real_drop_fails_with_values_interval_and_losers() -> None:
    base = record(scores(200, 1))
    worse = {q: max(0.0, v - 0.1) for q, v in scores(200, 1).items()}
    worse["q007"] = 0.0
    outcome = gate(record(worse), entry_from_record(base), GateSettings())
    assert outcome.status == "regressed"
    (message,) = outcome.failures
    assert message.startswith("ndcg@10 regressed: baseline 0.")
    assert "current 0." in message and "difference -0.1" in message
    assert "over 200 shared queries; tolerance 0.01" in message
    # under the figures: the per-query counts, then the most degraded queries, worst first
    lines = message.splitlines()
    assert lines[1] == (
        "    per query: 0 improved, 200 degraded, 0 unchanged of 200 (ndcg@10 changed by more "
        "than 0.001)"
    )
    assert lines[2] == "    most degraded (of 200):"
    assert lines[3].startswith("      q007: 0.") and "-> 0.000 (" in lines[3]
    assert len([line for line in lines if line.startswith("      q")]) == 5
    assert lines[-1] == (
        "    (the baseline entry keeps no retrieved lists, so the documents each query lost or "
        "gained are not known)"
    )


def test_a_drop_inside_noise_or_tolerance_passes() -> None:
    base = scores(60, 2)
    rng = np.random.default_rng(5)
    noisy = {q: float(np.clip(v + rng.normal(0, 0.05), 0, 1)) for q, v in base.items()}
    outcome = gate(record(noisy), entry_from_record(record(base)), GateSettings())
    assert not outcome.failures  # noise: never a failure
    assert outcome.status in ("passed", "inconclusive")
    # significant but smaller than a 5% relative tolerance
    small = {q: v - 0.005 for q, v in base.items()}
    relaxed = GateConfig.parse({"tolerance": "5%"}, "gate").defaults
    assert relaxed.relative and relaxed.tolerance == pytest.approx(0.05)
    assert gate(record(small), entry_from_record(record(base)), relaxed).status == "passed"
    strict = GateSettings(tolerance=0.001)
    assert gate(record(small), entry_from_record(record(base)), strict).status == "regressed"


def test_changes_are_listed_and_shared_queries_compared() -> None:
    base = scores(100, 3)
    current = {q: v for q, v in list(base.items())[:70]}  # 30 queries dropped from the set
    outcome = gate(
        record(current, fingerprint="other", settings="s2", revision="abc"),
        entry_from_record(record(base)),
        GateSettings(),
    )
    assert outcome.status == "passed"
    assert outcome.deltas["ndcg@10"].shared_queries == 70
    assert any("dataset changed" in c for c in outcome.changes)
    assert any("settings changed" in c for c in outcome.changes)
    assert any("revision changed (None -> 'abc')" in c for c in outcome.changes)


def test_most_queries_gone_is_stale_with_a_hint() -> None:
    base = scores(100, 4)
    current = {q: v for q, v in list(base.items())[:30]}
    outcome = gate(
        record(current, fingerprint="new"), entry_from_record(record(base)), GateSettings()
    )
    assert outcome.status == "stale"
    (message,) = outcome.failures
    assert "only 30 of its 100 queries remain; the dataset changed" in message
    assert "--embedbench-update-baseline" in message


def test_latency_gate_is_opt_in_and_needs_the_same_machine() -> None:
    base = record(scores(50, 6), p95=10.0)
    slow = record(scores(50, 6), p95=15.0)
    settings = GateSettings(latency_p95_pct=20)
    assert gate(slow, entry_from_record(base), GateSettings()).status == "passed"
    outcome = gate(slow, entry_from_record(base), settings)
    assert outcome.status == "regressed"
    assert "latency.p95_ms regressed: baseline 10.00 ms, current 15.00 ms" in outcome.failures[0]
    other = record(scores(50, 6), p95=15.0, machine="m2")
    outcome = gate(other, entry_from_record(base), settings)
    assert outcome.status == "passed"
    assert outcome.notes == ["latency gate skipped: this machine differs from the baseline's"]


def test_gate_settings_resolve_and_reject_typos() -> None:
    config = GateConfig.parse(
        {
            "tolerance": 0.02,
            "models": {"bm25": {"metrics": ["recall@10"]}},
            "tests": {"test_x": {"tolerance": "1%"}},
        },
        "embedbench.yaml: gate",
    )
    assert config.for_test("test_y", "bm25").metrics == ("recall@10",)
    assert config.for_test("test_y", "bm25").tolerance == 0.02
    resolved = config.for_test("test_x", "bm25", {"latency_p95_pct": 10})
    assert resolved.relative and resolved.latency_p95_pct == 10
    with pytest.raises(
        ConfigError, match=r"unknown gate key\(s\) \['tolerence'\] \(did you mean 'tolerance'\?\)"
    ):
        GateConfig.parse({"tolerence": 0.1}, "gate")
    with pytest.raises(ConfigError, match="'ndcg@5' cannot be gated"):
        GateConfig.parse({"metrics": ["ndcg@5"]}, "gate")
    with pytest.raises(ConfigError, match="tolerance: 'lots'"):
        GateConfig.parse({"tolerance": "lots"}, "gate")
    with pytest.raises(ConfigError, match=r"models\.bm25: unknown gate key"):
        GateConfig.parse({"models": {"bm25": {"x": 1}}}, "gate")


def test_baseline_file_round_trip_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "b" / "baseline.json"
    assert BaselineFile.load(path).entries == {}
    file = BaselineFile(path, {"z::t[b]": BaselineEntry(queries=1), "a::t[a]": {"queries": 2}})
    file.write()
    text = path.read_text()
    assert text.index('"a::t[a]"') < text.index('"z::t[b]"')  # sorted keys
    assert path.stat().st_mode & 0o777 == 0o644  # a file to commit, not a private temp file
    assert [p.name for p in path.parent.iterdir()] == ["baseline.json"]  # no temp left behind
    assert json.loads(text)["schema_version"] == 1
    assert BaselineFile.load(path).entries == file.entries
    path.write_text('{"schema_version": 1,\n "entries": {,}}')
    bad = BaselineFile.load(path)  # bad content is recorded with its fix, not raised
    assert bad.problem is not None and bad.replaceable and bad.entries == {}
    assert f"{path} line 2: not valid JSON" in bad.problem
    assert "--embedbench-update-baseline" in bad.problem
    path.write_text("[]")
    assert "not an embedbench baseline" in (BaselineFile.load(path).problem or "")


@pytest.mark.parametrize("version", [0, 2, "1", 1.5, None, True, -1])
def test_schema_versions_are_named_newer_or_unknown(tmp_path: Path, version: object) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"schema_version": version, "entries": {"t.py::a": {}}}))
    found = BaselineFile.load(path)
    assert found.problem is not None and str(path) in found.problem
    assert repr(version) in found.problem
    if version == 2:
        assert "written by a newer pytest-embedbench" in found.problem
        assert "upgrade" in found.problem and not found.replaceable
    else:
        assert "is not a schema this pytest-embedbench reads" in found.problem
        assert "--embedbench-update-baseline" in found.problem and found.replaceable
        # valid entries are kept for the rewrite
        assert found.entries == {"t.py::a": BaselineEntry()}


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ([1, 2], "it is a list, not a mapping"),
        ({"per_query": [1.0]}, "'per_query' is a list, not a mapping"),
        ({"per_query": {"ndcg@10": [1.0]}}, "per_query['ndcg@10'] is a list, not a mapping"),
        ({"per_query": {"ndcg@10": {"q1": "0.5"}}}, "per_query['ndcg@10']['q1'] is '0.5'"),
        ({"per_query": {"ndcg@10": {"q1": None}}}, "per_query['ndcg@10']['q1'] is None"),
        ({"latency": {"p95_ms": "fast"}}, "latency['p95_ms'] is 'fast', not a number"),
        (
            {"latency": {"per_query_ms": {"q1": "slow"}}},
            "latency['per_query_ms'] is {'q1': 'slow'}, not numbers by query id",
        ),
        ({"latency": {"per_query_ms": "slow"}}, "latency['per_query_ms'] is 'slow', not numbers"),
    ],
)
def test_a_damaged_entry_is_named_and_kept_apart(tmp_path: Path, entry: object, said: str) -> None:
    path = tmp_path / "baseline.json"
    good = {"per_query": {"ndcg@10": {"q1": 1.0}}, "extra_field": "kept"}
    path.write_text(
        json.dumps({"schema_version": 1, "entries": {"t.py::bad": entry, "t.py::good": good}})
    )
    found = BaselineFile.load(path)
    assert found.problem is None and found.entries == {"t.py::good": BaselineEntry.from_dict(good)}
    assert said in found.damaged["t.py::bad"]
    assert str(path) in found.damaged["t.py::bad"] and "'t.py::bad'" in found.damaged["t.py::bad"]
    # an update that does not touch the damaged entry keeps it as it was, byte for byte
    BaselineFile(path).update({"t.py::new": good})
    assert json.loads(path.read_text())["entries"]["t.py::bad"] == entry
    assert json.loads(path.read_text())["entries"]["t.py::good"] == good  # its extra_field too
    # an update that records it replaces it (and keeps a copy of the old file)
    done = BaselineFile(path).update({"t.py::bad": good}, replace=False)
    assert (done.added, done.replaced) == (0, 1)
    assert "re-recorded 1 damaged entry (t.py::bad)" in done.notes[0]
    assert BaselineFile.load(path).damaged == {}
    assert len(list(tmp_path.glob("baseline.json.bad-*"))) == 1


def test_update_repairs_an_unknown_schema_and_refuses_a_newer_one(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    old = {"schema_version": "1", "entries": {"t.py::a": {"x": 1}, "t.py::b": [1]}}
    path.write_text(json.dumps(old))
    done = BaselineFile(path).update({"t.py::c": {"x": 3}})
    assert "replaced its bad content" in done.notes[0] and "kept 1 valid entry" in done.notes[0]
    data = json.loads(path.read_text())
    assert data["schema_version"] == 1 and set(data["entries"]) == {"t.py::a", "t.py::b", "t.py::c"}
    (backup,) = tmp_path.glob("baseline.json.bad-*")
    assert json.loads(backup.read_text()) == old  # nothing the user wrote is lost
    assert BaselineFile.load(path).problem is None
    newer = json.dumps({"schema_version": 2, "entries": {"t.py::a": {"new": "format"}}})
    path.write_text(newer)
    with pytest.raises(BaselineError, match="newer pytest-embedbench.*nothing was written"):
        BaselineFile(path).update({"t.py::c": {"x": 3}})
    assert path.read_text() == newer


def row(model: str, ndcg: float, p95: float, spec: str = "hf:x", **metrics) -> dict:
    return {
        "model": model,
        "spec": spec,
        "status": "passed",
        "result": {
            "metrics": {
                "ndcg@10": {"value": ndcg},
                "recall@100": {"value": metrics.get("recall", 0.9)},
                "mrr@10": {"value": metrics.get("mrr", 0.5)},
            },
            "latency": {"p95_ms": p95},
            "cost": {"usd": metrics.get("cost_usd")},
        },
    }


def test_recommendation_weights_and_components() -> None:
    rows = [row("big", 0.70, 100.0), row("small", 0.60, 10.0), row("lex", 0.50, 1.0, "bm25")]
    rec = recommend(rows)
    assert rec is not None
    picks = rec["picks"]
    comp = rec["components"]
    assert comp["big"] == {"accuracy": 1.0, "speed": 0.0, "cost": 1.0}
    assert comp["small"]["accuracy"] == pytest.approx(0.5)
    assert comp["small"]["speed"] == pytest.approx(90 / 99)
    # accuracy-first: 0.80 x 1 + 0 + 0.05 = 0.85 for big against 0.80 x 0.5 + 0.15 x 0.909...
    assert picks["accuracy"]["model"] == "big"
    assert picks["accuracy"]["score"] == pytest.approx(0.85)
    # speed-first still weighs accuracy 0.20: 0.20 x 0.5 + 0.75 x 0.909 + 0.05 beats lex's 0.80
    assert picks["speed"]["model"] == "small"
    assert picks["speed"]["score"] == pytest.approx(0.1 + 0.75 * 90 / 99 + 0.05)
    # balanced: 0.55 + 0 + 0.15 = 0.70 for big against 0.275 + 0.273 + 0.15 = 0.698 for small
    assert picks["balanced"]["model"] == "big"
    assert picks["balanced"]["score"] == pytest.approx(0.70)
    assert picks["balanced"]["weights"] == {"accuracy": 0.55, "speed": 0.30, "cost": 0.15}


def test_recommendation_cost_and_ties() -> None:
    rows = [
        row("paid", 0.7, 10.0, "openai:x", cost_usd=2.0),
        row("cheap", 0.7, 10.0, "openai:y", cost_usd=0.5),
        row("unknown", 0.7, 10.0, "cohere:z"),
    ]
    rec = recommend(rows)
    assert rec is not None
    assert rec["components"]["unknown"]["cost"] == 0.5  # unknown price: neutral
    assert rec["components"]["cheap"]["cost"] == 1.0
    assert rec["picks"]["cost"]["model"] == "cheap"
    # identical on every component: nDCG ties, then the name decides
    tie = recommend([row("b", 0.5, 5.0), row("a", 0.5, 5.0)])
    assert tie is not None and tie["picks"]["balanced"]["model"] == "a"
    acc = recommend([row("b", 0.5, 5.0, recall=0.95), row("a", 0.5, 5.0, recall=0.9)])
    assert acc is not None and acc["picks"]["accuracy"]["model"] == "b"  # recall breaks it
    assert recommend([]) is None


def test_a_drop_beyond_tolerance_that_is_not_significant_is_inconclusive() -> None:
    """Three of 13 queries lost everything: -0.23, but the interval reaches 0 (issue 8 item 2)."""
    base = {f"q{i:02d}": 1.0 for i in range(13)}
    stubbed = dict(base, q03=0.0, q07=0.0, q11=0.0)
    texts = {q: f"how do I find topic {q} " + "and more words " * 10 for q in base}
    entry = entry_from_record(record(base))
    outcome = gate(record(stubbed), entry, GateSettings(), query_texts=texts)
    assert outcome.status == "inconclusive" and not outcome.failures
    delta = outcome.deltas["ndcg@10"]
    assert delta.inconclusive and not delta.regressed and delta.high >= 0
    # MDE = (z[0.975] + z[0.8]) * sd(d) / sqrt(n), d = 0 except three -1s
    d = np.array([-1.0 if q in ("q03", "q07", "q11") else 0.0 for q in sorted(base)])
    expected = (1.959964 + 0.841621) * d.std(ddof=1) / np.sqrt(13)
    assert delta.minimum_detectable == pytest.approx(expected, rel=1e-5)
    (warning,) = outcome.warnings
    assert warning.startswith("ndcg@10 inconclusive: baseline 1.0000, current 0.7692")
    assert f"the smallest drop these 13 queries can detect is about {expected:.4f}" in warning
    assert "(80% power, alpha 0.05)" in warning
    # each lost query with its text, cut to a readable length
    assert 'lost most: q03 "how do I find topic q03 and more words and more..." (-1.000)' in (
        warning
    )
    failing = GateConfig.parse({"inconclusive": "fail"}, "gate").defaults
    outcome = gate(record(stubbed), entry, failing)
    assert outcome.status == "inconclusive" and not outcome.warnings
    (failure,) = outcome.failures
    assert failure.startswith("ndcg@10 inconclusive:") and "(gate: inconclusive: fail)" in failure


def test_inconclusive_and_latency_floor_values_are_checked() -> None:
    with pytest.raises(ConfigError, match=r"embedbench.yaml: gate.inconclusive: 'maybe' is not"):
        GateConfig.parse({"inconclusive": "maybe"}, "embedbench.yaml: gate")
    with pytest.raises(ConfigError, match=r"gate.models.bm25.latency_floor_ms: -1 must be"):
        GateConfig.parse({"models": {"bm25": {"latency_floor_ms": -1}}}, "gate")
    config = GateConfig.parse({"inconclusive": "fail", "latency_floor_ms": 0.5}, "gate")
    assert config.defaults.inconclusive == "fail" and config.defaults.latency_floor_ms == 0.5
    assert GateSettings().inconclusive == "warn" and GateSettings().latency_floor_ms == 2.0


def test_changed_settings_and_dataset_parts_are_named() -> None:
    settings = {"spec": "bm25", "options": {"k1": 1.5}, "k": [10, 100]}
    parts = {"documents": {"count": 60, "fingerprint": "aaa"}, "queries": {"count": 60}}
    base = record(scores(40, 8), settings_detail=settings, dataset_parts=parts)
    entry = entry_from_record(base)
    assert entry.settings == settings and entry.dataset_parts == parts
    new_settings = {"spec": "bm25", "options": {"k1": 1.2, "b": 0.7}, "k": [10, 100]}
    new_parts = {"documents": {"count": 60, "fingerprint": "bbb"}, "queries": {"count": 60}}
    current = record(
        scores(40, 8),
        fingerprint="fp2",
        settings="s2",
        settings_detail=new_settings,
        dataset_parts=new_parts,
    )
    outcome = gate(current, entry, GateSettings())
    assert outcome.changes == [
        "the dataset changed: documents.fingerprint 'aaa' -> 'bbb'",
        "the settings changed: b 'unset' -> 0.7; k1 1.5 -> 1.2",
    ]
    # an entry recorded before settings were kept: only the fingerprints can be shown
    old = dataclasses.replace(entry, settings=None, dataset_parts=None)
    outcome = gate(current, old, GateSettings())
    assert outcome.changes == [
        "the dataset changed (fingerprint fp -> fp2); re-record to see which part",
        "the settings changed (fingerprint s1 -> s2); re-record to see which",
    ]


def bm25_settings(**options: float) -> dict:
    """A record's settings as :func:`~evaluation.record.settings_of` keeps them for
    ``bm25`` with ``options``: the user's options, and the provider's applied ones."""
    applied = {"k1": 1.5, "b": 0.75, "method": "lucene"} | options
    return {
        "spec": "bm25",
        "options": dict(options),
        "k": [10, 100],
        "applied": {
            "provider": "bm25",
            "model": "bm25",
            "options": dict(options),
            "settings": applied,
        },
    }


def test_each_changed_setting_is_named_once_in_the_words_the_user_writes() -> None:
    """Issue 31: ``applied.options.k1``, ``applied.settings.k1`` and ``options.k1`` were three
    lines for one change, repeated on every metric's line."""
    base = record(scores(40, 9), settings_detail=bm25_settings())
    worse = {q: (v - 0.5 if int(q[1:]) % 2 else v) for q, v in scores(40, 9).items()}
    current = record(worse, settings="s2", settings_detail=bm25_settings(k1=1.2))
    current["result"]["per_query"]["recall@100"] = {q: 0.0 for q in worse}  # a second drop
    outcome = gate(current, entry_from_record(base), GateSettings())
    assert outcome.changes == ["the settings changed: k1 1.5 -> 1.2"]
    assert outcome.status == "regressed"
    regressed, recall, changed = outcome.failures
    assert regressed.startswith("ndcg@10 regressed") and recall.startswith("recall@100 regressed")
    assert (
        changed == "compared with a baseline of other inputs: the settings changed: k1 1.5 -> 1.2"
    )
    assert "\n".join(outcome.failures).count("k1") == 1  # once for the test
    # a removed option: its default is back, named once
    back = gate(base, entry_from_record(current), GateSettings())
    assert back.changes == ["the settings changed: k1 1.2 -> 1.5"]
    # a new spec is one line; the provider, model and defaults it brings are not listed again
    other = record(
        worse,
        settings="s3",
        spec="hashing:weak",
        settings_detail={
            "spec": "hashing:weak",
            "options": {"dim": 4},
            "k": [10, 100],
            "applied": {"provider": "hashing", "model": "weak", "options": {"dim": 4}},
        },
    )
    changes = gate(other, entry_from_record(base), GateSettings()).changes
    assert changes[-1] == "the model spec changed ('bm25' -> 'hashing:weak')"
    assert not any("spec 'bm25'" in c or "provider" in c for c in changes)


def test_lost_most_names_only_queries_that_lost() -> None:
    """Issue 31: "lost most" listed queries whose change was +0.000 when fewer than three
    lost."""
    base = {f"q{i:03d}": 1.0 for i in range(40)}
    worse = base | {"q005": 0.0, "q011": 0.7}
    outcome = gate(record(worse), entry_from_record(record(base)), GateSettings())
    (line,) = outcome.failures + outcome.warnings
    lost = line.split("lost most: ")[1].split(". ")[0]
    assert lost == "q005 (-1.000), q011 (-0.300)"  # not a third with +0.000
    # the line says no loser when none lost (a drop of the mean needs one; a gain does not)
    from pytest_embedbench.baseline.compare import _lost_most, _Pairs

    same = _Pairs("ndcg@10", ["q1", "q2"], {"q1": 1.0, "q2": 0.5}, {"q1": 1.0, "q2": 0.25})
    assert _lost_most(same, None) == ""
    tiny = _Pairs("ndcg@10", ["q1"], {"q1": 0.9999}, {"q1": 1.0})
    assert _lost_most(tiny, None) == "; lost most: q1 (-1.0e-04)"


def test_latency_gate_ignores_jitter_below_the_floor() -> None:
    """bm25's p95 0.17 ms -> 0.21 ms failed a 20% gate (issue 8 item 3): under the floor."""
    rng = np.random.default_rng(0)
    base = [float(v) for v in rng.normal(0.15, 0.01, 60)]
    slower = [v + 0.04 for v in base]  # significant and +25%, but 0.04 ms
    settings = GateSettings(latency_p95_pct=20)
    outcome = gate(
        record(scores(60, 6), latencies=slower),
        entry_from_record(record(scores(60, 6), latencies=base)),
        settings,
    )
    assert outcome.status == "passed", outcome.failures
    assert outcome.deltas["latency.p95_ms"].p_value < 0.05
    listed = entry_from_record(record(scores(3, 6), latencies=[1.0, 2.0, 3.0]))
    assert listed.latency.per_query_ms == [1.0, 2.0, 3.0]


def test_latency_gate_compares_distributions_not_percentiles() -> None:
    rng = np.random.default_rng(1)
    base = [float(v) for v in rng.normal(20.0, 1.0, 60)]
    settings = GateSettings(latency_p95_pct=20)
    entry = entry_from_record(record(scores(60, 6), latencies=base))
    # four outliers lift p95 far beyond 20% and 2 ms; the other 56 queries are as fast
    spiky = base[:56] + [60.0, 61.0, 62.0, 63.0]
    outcome = gate(record(scores(60, 6), latencies=spiky), entry, settings)
    assert (
        outcome.deltas["latency.p95_ms"].current > 1.2 * outcome.deltas["latency.p95_ms"].baseline
    )
    assert outcome.status == "passed", outcome.failures
    # every query slower: significant, beyond the percentage and the floor
    slow = [v * 1.5 for v in base]
    outcome = gate(record(scores(60, 6), latencies=slow), entry, settings)
    assert outcome.status == "regressed"
    (failure,) = outcome.failures
    assert failure.startswith("latency.p95_ms regressed: baseline ")
    assert "more than 20% and 2 ms slower (one-sided Mann-Whitney U p=" in failure


def test_latency_gate_reads_latencies_by_query_id_and_old_lists() -> None:
    """Runs keep the timed sample's latencies by query id; entries recorded by older versions
    kept a list in query order: the gate compares the values of either."""
    rng = np.random.default_rng(1)
    base = [round(float(v), 3) for v in rng.normal(20.0, 1.0, 60)]

    def by_id(values: list[float]) -> dict[str, float]:
        return {f"q{i:03d}": v for i, v in enumerate(values)}

    settings = GateSettings(latency_p95_pct=20)
    old = entry_from_record(record(scores(60, 6), latencies=base))
    new = entry_from_record(record(scores(60, 6), latencies=by_id(base)))
    assert old.latency.per_query_ms == base
    assert new.latency.per_query_ms == by_id(base)
    assert entry_problem(old.to_dict()) is None and entry_problem(new.to_dict()) is None
    for entry in (old, new):
        same = gate(record(scores(60, 6), latencies=by_id(base)), entry, settings)
        assert same.status == "passed", same.failures
        assert same.deltas["latency.p95_ms"].p_value is not None  # not the p95-only rule
        slow = gate(
            record(scores(60, 6), latencies=by_id([v * 1.5 for v in base])), entry, settings
        )
        assert slow.status == "regressed"
        (failure,) = slow.failures
        assert "Mann-Whitney U" in failure and "over 60 and 60 queries" in failure
    # a current run recorded as a list (an older record) against a new entry works too
    listed = gate(record(scores(60, 6), latencies=[v * 1.5 for v in base]), new, settings)
    assert listed.status == "regressed"


def test_latency_gate_falls_back_for_entries_without_per_query_latencies() -> None:
    entry = entry_from_record(record(scores(50, 6), p95=10.0))
    settings = GateSettings(latency_p95_pct=20)
    jitter = gate(record(scores(50, 6), p95=11.5), entry, settings)  # +15%: inside the pct
    assert jitter.status == "passed"
    fast = gate(
        record(scores(50, 6), p95=0.21),
        entry_from_record(record(scores(50, 6), p95=0.17)),
        settings,
    )
    assert fast.status == "passed"  # +24%, but under the 2 ms floor
    assert any("no per-query latencies" in n and "re-record" in n for n in fast.notes)


def test_stale_temp_files_of_interrupted_writes_are_removed(tmp_path: Path) -> None:
    """Leftovers of killed writes go; a live process's write in progress and other files stay."""
    import os
    import subprocess
    import sys
    import time

    from pytest_embedbench.core.io import _HOST, atomic_write_json

    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead_pid = int(gone.stdout)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        for target in ("baseline.json", "r.json"):
            dead = tmp_path / f".{target}.{dead_pid}@{_HOST}.abc123.tmp"
            old = tmp_path / f".{target}.k2j4h5.tmp"  # the pre-pid name, two hours old
            running = tmp_path / f".{target}.{live.pid}@{_HOST}.def456.tmp"
            elsewhere = tmp_path / f".{target}.{dead_pid}@another-host.ghi789.tmp"
            for leftover in (dead, old, running, elsewhere):
                leftover.write_text("{half")
            two_hours_ago = time.time() - 7200
            os.utime(old, (two_hours_ago, two_hours_ago))
            unrelated = tmp_path / ".other.json.k2j4h5.tmp"
            unrelated.write_text("{}")
            os.utime(unrelated, (two_hours_ago, two_hours_ago))
            if target == "baseline.json":
                BaselineFile(tmp_path / target).update({"t.py::a": {}})
            else:
                atomic_write_json(tmp_path / target, {"ok": 1})
            assert not dead.exists() and not old.exists()
            assert running.exists() and elsewhere.exists() and unrelated.exists()
    finally:
        live.kill()
        live.wait()


def _per_query(row_: dict, scores: list[float]) -> dict:
    row_["result"]["per_query"] = {"ndcg@10": {f"q{i:02d}": s for i, s in enumerate(scores)}}
    row_["result"]["metrics"]["ndcg@10"]["value"] = sum(scores) / len(scores)
    return row_


def test_models_the_queries_cannot_tell_apart_share_an_accuracy_tier() -> None:
    """Issue 31: two models 0.015 nDCG apart inside overlapping intervals scored 1.000 and
    0.000 on accuracy, and every priority picked the same one."""
    import random

    rng = random.Random(7)
    base = [0.2 + 0.6 * rng.random() for _ in range(40)]
    # +0.12 on half the queries, -0.10 on the other half: 0.01 better on average, by noise
    close = [v + (0.12 if i % 2 else -0.10) for i, v in enumerate(base)]
    worse = [v * 0.3 for v in base]
    rows = [
        _per_query(row("slow", 0.0, 100.0), base),
        _per_query(row("fast", 0.0, 10.0), close),
        _per_query(row("weak", 0.0, 1.0, "bm25"), worse),
    ]
    assert rows[0]["result"]["metrics"]["ndcg@10"]["value"] != pytest.approx(
        rows[1]["result"]["metrics"]["ndcg@10"]["value"]
    )
    rec = recommend(rows, seed=3, n_resamples=2000)
    assert rec is not None
    # 'slow' and 'fast' are indistinguishable on these queries, 'weak' is not
    assert [sorted(t) for t in rec["accuracy_tiers"]] == [["fast", "slow"], ["weak"]]
    assert rec["components"]["slow"]["accuracy"] == rec["components"]["fast"]["accuracy"] == 1.0
    assert rec["components"]["weak"]["accuracy"] == 0.0
    # equally accurate, so speed decides even for accuracy-first; 'slow' is never the pick
    assert "slow" not in {p["model"] for p in rec["picks"].values()}
    assert rec["picks"]["accuracy"]["model"] == "fast"
    assert rec["picks"]["balanced"]["model"] == "fast"
    # the same inputs and seed give the same tiers
    assert recommend(rows, seed=3, n_resamples=2000) == rec


def test_a_pick_tied_with_another_model_names_it() -> None:
    scores = [0.2, 0.9, 0.5, 0.7, 0.1, 0.6]
    rows = [_per_query(row("b", 0.0, 5.0), scores), _per_query(row("a", 0.0, 5.0), scores)]
    rec = recommend(rows)
    assert rec is not None
    for pick in rec["picks"].values():
        assert pick["model"] == "a" and pick["tied_with"] == ["b"]
    apart = recommend([row("big", 0.70, 100.0), row("small", 0.60, 10.0)])
    assert apart is not None and all(p["tied_with"] == [] for p in apart["picks"].values())


# -- storage, indexing and index-axis figures in the gate (issues 33 and 35) -------------------


def sized(rec: dict, index_bytes: int, documents: int = 10, **index) -> dict:
    """``rec`` with an index of ``index_bytes`` over ``documents`` documents, a cache of the
    same bytes and, with ``index`` figures, an index axis."""
    rec["result"]["resources"] = {
        "index_bytes": index_bytes,
        "bytes_per_document": index_bytes / documents,
        "cache_bytes": index_bytes,
    }
    rec["result"]["documents_per_s"] = 100.0
    if index:
        rec["result"]["index"] = {
            "spec": index.get("spec", "faiss:hnsw(M=4,efSearch=64)"),
            "engine": "faiss",
            "bytes": index.get("nbytes", 1000),
            "qps": index.get("qps", 500.0),
            "neighbour_recall": {
                "neighbour_recall@10": {"value": index["recall"], "low": 0, "high": 1, "n": 3}
            },
            "delta": {"ndcg@10": {"value": index.get("delta", 0.0), "low": -1, "high": 1, "n": 3}},
        }
    return rec


def test_an_entry_keeps_the_storage_and_index_figures() -> None:
    entry = entry_from_record(sized(record(scores(20, 1)), 2560, recall=0.95))
    assert entry.figures == {
        "bytes_per_doc": 256.0,
        "index_mb": round(2560 / 2**20, 6),
        "cache_mb": round(2560 / 2**20, 6),
        "docs_per_s": 100.0,
    }
    assert entry.index is not None and entry.index.spec == "faiss:hnsw(M=4,efSearch=64)"
    assert entry.index.figures["neighbour_recall@10"] == 0.95
    assert entry.index.figures["delta.ndcg@10"] == 0.0
    data = entry.to_dict()
    assert entry_problem(data) is None
    assert "not a number" in (entry_problem({**data, "figures": {"bytes_per_doc": "big"}}) or "")
    assert "not a mapping" in (entry_problem({**data, "index": {"figures": [1]}}) or "")


def test_a_grown_index_fails_and_a_small_growth_passes() -> None:
    base = entry_from_record(sized(record(scores(20, 1)), 2560))
    grown = gate(sized(record(scores(20, 1)), 5120), base, GateSettings())
    assert grown.status == "regressed"
    assert grown.failures[0].startswith(
        "bytes_per_doc regressed: baseline 256, current 512 (+256, +100.0%): it grew by more "
        "than the tolerance 5% of the baseline (lower is better)."
    )
    assert "--embedbench-update-baseline" in grown.failures[0]
    assert {k for k, d in grown.deltas.items() if d.regressed} == {
        "bytes_per_doc",
        "index_mb",
        "cache_mb",
    }
    assert gate(sized(record(scores(20, 1)), 2600), base, GateSettings()).status == "passed"
    smaller = gate(sized(record(scores(20, 1)), 1280), base, GateSettings())
    assert smaller.status == "passed"  # smaller is better


def test_rates_are_gated_only_when_named_and_on_the_same_machine() -> None:
    base = entry_from_record(sized(record(scores(20, 1)), 2560))
    slow = sized(record(scores(20, 1)), 2560)
    slow["result"]["documents_per_s"] = 10.0
    assert gate(slow, base, GateSettings()).status == "passed"  # not named: not gated
    named = GateConfig.parse({"figures": {"docs_per_s": "50%"}}, "gate").defaults
    outcome = gate(slow, base, named)
    assert outcome.status == "regressed"
    assert "docs_per_s regressed: baseline 100, current 10 (-90, -90.0%)" in outcome.failures[0]
    assert (
        "fell by more than the tolerance 50% of the baseline (higher is better)"
        in (outcome.failures[0])
    )
    elsewhere = sized(record(scores(20, 1), machine="m2"), 2560)
    elsewhere["result"]["documents_per_s"] = 10.0
    outcome = gate(elsewhere, base, named)
    assert outcome.status == "passed"
    assert "docs_per_s gate skipped: this machine differs from the baseline's" in outcome.notes


def test_neighbour_recall_falling_fails_with_the_index_change_named() -> None:
    base = entry_from_record(sized(record(scores(20, 1)), 2560, recall=0.98, delta=0.0))
    weak = sized(
        record(scores(20, 1)), 2560, recall=0.40, delta=-0.2, spec="faiss:hnsw(M=4,efSearch=1)"
    )
    outcome = gate(weak, base, GateSettings())
    assert outcome.status == "regressed"
    assert outcome.failures[1].startswith(
        "index.delta.ndcg@10 regressed: baseline 0.0000, current -0.2000 (-0.2): it fell"
    )
    assert any(
        f.startswith(
            "index.neighbour_recall@10 regressed: baseline 0.9800, current 0.4000 "
            "(-0.58, -59.2%): it fell by more than the tolerance 0.01"
        )
        for f in outcome.failures
    )
    assert outcome.failures[-1] == (
        "compared with a baseline of other inputs: the index changed "
        "('faiss:hnsw(M=4,efSearch=64)' -> 'faiss:hnsw(M=4,efSearch=1)')"
    )
    # an entry without figures (an older version) says so once and gates the rest
    old = dataclasses.replace(base, figures=None, index=None)
    outcome = gate(weak, old, GateSettings())
    assert outcome.status == "passed"
    assert sum("no storage figures" in n for n in outcome.notes) == 1


@pytest.mark.parametrize(
    ("figures", "message"),
    [
        ({"bytes_per_dox": "5%"}, "unknown figure 'bytes_per_dox'; did you mean 'bytes_per_doc'?"),
        ({"index.delta.ndgc@10": 0.01}, "gate.figures.index.delta.ndgc@10"),
        ({"index_mb": "lots"}, "gate.figures.index_mb.tolerance: 'lots'"),
        ([1], "must be a mapping of figure to tolerance"),
    ],
)
def test_bad_gate_figures_name_the_key(figures: object, message: str) -> None:
    with pytest.raises(ConfigError, match=None) as info:
        GateConfig.parse({"figures": figures}, "gate")
    assert message in str(info.value)


def test_gate_figures_merge_over_the_defaults() -> None:
    settings = GateConfig.parse(
        {"figures": {"cache_mb": None, "index.qps": "20%", "index.neighbour_recall@5": 0.02}},
        "gate",
    ).defaults
    keys = {rule.key: rule for rule in settings.figures}
    assert "cache_mb" not in keys and keys["index.qps"].relative
    assert keys["index.neighbour_recall@5"].tolerance == 0.02
    assert keys["bytes_per_doc"].describe() == "5% of the baseline"
