"""``embedbench stress needle|noise``: JSON and Markdown files, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_embedbench.cli import main


def test_needle_writes_json_and_markdown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["stress", "needle", "-m", "bm25", "--context-sizes", "512", "--depths", "0,1"]
    assert main([*args, "-o", str(tmp_path), "--no-cache", "--bootstrap", "100"]) == 0
    report = json.loads((tmp_path / "needle.json").read_text())
    assert [p["id"] for p in report["points"]] == ["needle-512-d0", "needle-512-d100"]
    assert report["points"][0]["info"]["length"] == 512
    md = (tmp_path / "needle.md").read_text()
    assert md.startswith("# embedbench stress needle")
    assert "| depth   | 512 tok   |" in md
    assert "wrote" in capsys.readouterr().out


def test_needle_in_chinese_haystacks(tmp_path: Path) -> None:
    args = ["stress", "needle", "-m", "bm25", "--context-sizes", "512", "--depths", "0"]
    assert main([*args, "--language", "zh", "-o", str(tmp_path), "--no-cache"]) == 0
    (point,) = json.loads((tmp_path / "needle.json").read_text())["points"]
    assert point["id"] == "needle-zh-512-d0" and point["params"]["language"] == "zh"


def test_noise_on_a_dataset(beir_folder: Path, tmp_path: Path) -> None:
    args = ["stress", "noise", "-m", "bm25", "--dataset", str(beir_folder), "--noise", "typo"]
    assert main([*args, "--seeds", "2", "-o", str(tmp_path), "--no-cache"]) == 0
    (point,) = json.loads((tmp_path / "noise.json").read_text())["points"]
    assert point["id"] == "typo-x2" and point["seeds"] == [0, 1]
    assert set(point["delta"]) == {"value", "low", "high", "n"}
    assert "Δ noisy - clean" in (tmp_path / "noise.md").read_text()


def test_bad_arguments_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["stress", "needle", "-m", "bm25", "--depths", "2", "-o", str(tmp_path)]
    assert main(args) == 2
    assert "depth '2' must be a fraction" in capsys.readouterr().err


def test_a_bad_k_names_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["stress", "needle", "-m", "bm25", "-o", str(tmp_path), "--k", "1,x"]
    assert main(args) == 2
    assert "--k '1,x': 'x' is not a whole number; give e.g. --k 1,10,100" in (
        capsys.readouterr().err
    )


def test_every_model_failing_exits_1_and_says_why(
    beir_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["stress", "noise", "-m", "bm-25", "--dataset", str(beir_folder), "--noise", "typo"]
    assert main([*args, "-o", str(tmp_path), "--no-cache"]) == 1
    err = capsys.readouterr().err
    assert (
        "- bm-25 typo: UnknownProviderError: unknown provider 'bm-25'; did you mean 'bm25'?" in err
    )
    (point,) = json.loads((tmp_path / "noise.json").read_text())["points"]
    assert point["status"] == "error"


def test_report_command_prints_the_stress_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    row = {
        "model": "bm25",
        "kind": "noise",
        "id": "typo",
        "params": {"noise": "typo"},
        "seeds": [0],
        "status": "passed",
        "metrics": {"ndcg@10": {"value": 0.5, "low": 0.4, "high": 0.6, "n": 4}},
        "clean": {"value": 0.6, "low": 0.5, "high": 0.7, "n": 4},
        "delta": {"value": -0.1, "low": -0.2, "high": -0.01, "n": 4},
        "info": {},
    }
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"tests": [], "stress": {"tiny": [row]}}))
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    assert "stress on 'tiny': query noise" in out
    assert "-0.1000 [-0.200, -0.010] worse" in out


def test_chunk_size_sweep(beir_folder: Path, tmp_path: Path) -> None:
    args = ["stress", "chunk-size", "-m", "bm25", "--dataset", str(beir_folder)]
    assert main([*args, "--chunk-sizes", "8,16", "-o", str(tmp_path), "--no-cache"]) == 0
    points = json.loads((tmp_path / "chunk-size.json").read_text())["points"]
    assert [p["id"] for p in points] == ["chunk-8", "chunk-16"]
    assert "chunk tokens" in (tmp_path / "chunk-size.md").read_text()


def test_a_report_over_a_symlink_updates_its_target_and_a_folder_in_its_way_exits_6(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the stress reports are written as every other report: through a link to its target,
    # atomically; a path that cannot take the file is one line naming it, exit 6
    out = tmp_path / "out"
    out.mkdir()
    target = tmp_path / "kept" / "needle.json"
    target.parent.mkdir()
    target.write_text("old\n")
    (out / "needle.json").symlink_to(target)
    args = ["stress", "needle", "-m", "bm25", "--context-sizes", "512", "--depths", "0"]
    assert main([*args, "-o", str(out), "--no-cache", "--bootstrap", "100"]) == 0
    assert (out / "needle.json").is_symlink()
    assert json.loads(target.read_text())["workload"] == "needle"
    (out / "needle.md").unlink()
    (out / "needle.md").mkdir()
    capsys.readouterr()
    assert main([*args, "-o", str(out), "--no-cache", "--bootstrap", "100"]) == 6
    err = capsys.readouterr().err
    assert f"the stress Markdown report {out / 'needle.md'} was NOT written" in err
    assert "Traceback" not in err and "--output-dir" in err
