"""The options table: one entry per option drives the command line, the ini keys, Options and
the report's configuration block (issue 10 item 4), checked without a pytest run."""

from __future__ import annotations

import argparse
import re
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from pytest_embedbench.config.options import Options, option_specs
from pytest_embedbench.config.project import Options as ReExported
from pytest_embedbench.core.exceptions import ConfigError

REPO = Path(__file__).resolve().parents[2]


def _resolve(tmp_path: Path, cli: dict[str, Any] | None = None, **ini: Any) -> Options:
    return Options.resolve(
        cli=(cli or {}).get, ini=ini.get, cwd=tmp_path / "cwd", ini_base=tmp_path / "ini"
    )


def test_config_reexports_options() -> None:
    assert ReExported is Options


def test_every_option_field_is_in_the_table_and_the_report() -> None:
    specs = option_specs()
    assert set(specs) == {f.name for f in fields(Options)} - {"verbosity"}
    report = Options().configuration()
    assert list(report) == [spec.report or name for name, spec in specs.items()]
    assert report["json"] is None and report["priority"] == "balanced"


def test_the_flags_and_ini_keys_follow_one_naming_rule() -> None:
    for spec in option_specs().values():
        assert spec.flag.startswith("--embedbench-")
        if spec.ini is not None:
            assert spec.ini == spec.dest


def test_the_docs_document_every_option() -> None:
    """Every flag and ini key is named on a documentation page (docs/configuration.md has the
    table; docs/ci.md the CI outputs' options)."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted((REPO / "docs").glob("*.md")))
    for spec in option_specs().values():
        assert re.search(re.escape(spec.flag) + r"\b", text), spec.flag
        if spec.ini is not None:
            assert f"`{spec.ini}`" in text, spec.ini


def test_defaults_without_any_value(tmp_path: Path) -> None:
    assert _resolve(tmp_path, embedbench_no_cache=False) == Options()


def test_the_command_line_wins_over_ini(tmp_path: Path) -> None:
    options = _resolve(
        tmp_path,
        {"embedbench_seed": 7, "embedbench_models": ("bm25",)},
        embedbench_seed="3",
        embedbench_bootstrap="500",
        embedbench_models="hf:a, bm25",
    )
    assert options.seed == 7 and options.bootstrap == 500 and options.models == ("bm25",)
    assert _resolve(tmp_path, embedbench_models="hf:a, bm25").models == ("hf:a", "bm25")


def test_paths_are_relative_to_where_they_were_given(tmp_path: Path) -> None:
    options = _resolve(
        tmp_path, {"embedbench_json": "r.json"}, embedbench_baseline="b.json", embedbench_json="x"
    )
    assert options.json_path == (tmp_path / "cwd" / "r.json").resolve()
    assert options.baseline == (tmp_path / "ini" / "b.json").resolve()
    assert options.configuration()["json"] == options.json_path


def test_flags_and_empty_values(tmp_path: Path) -> None:
    assert _resolve(tmp_path, embedbench_no_cache=True).no_cache is True
    assert _resolve(tmp_path, {"embedbench_no_cache": True}).no_cache is True
    assert _resolve(tmp_path, embedbench_reference="").reference is None


def test_a_bad_ini_value_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"ini option embedbench_seed = 'one': .*not an integer"):
        _resolve(tmp_path, embedbench_seed="one")
    with pytest.raises(ConfigError, match=r"embedbench_priority = 'fast'"):
        _resolve(tmp_path, embedbench_priority="fast")


def test_a_missing_file_names_the_option(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--embedbench-thresholds '.*t\.yaml': no such file"):
        _resolve(tmp_path, {"embedbench_thresholds": "t.yaml"})


def test_no_cache_conflicts_with_a_cache_dir_on_the_command_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="conflict"):
        _resolve(tmp_path, {"embedbench_no_cache": True, "embedbench_cache_dir": "x"})
    # the ini's cache folder is simply not used
    assert _resolve(tmp_path, {"embedbench_no_cache": True}, embedbench_cache_dir="c").no_cache


def test_argparse_arguments_parse_through_the_table() -> None:
    parser = argparse.ArgumentParser()
    for spec in option_specs().values():
        parser.add_argument(spec.flag, **spec.addoption_kwargs())
    args = parser.parse_args(
        ["--embedbench-seed", "4", "--embedbench-update-baseline", "--embedbench-no-cache"]
    )
    assert args.embedbench_seed == 4 and args.embedbench_update_baseline == "all"
    assert args.embedbench_no_cache is True and args.embedbench_priority is None
    assert parser.parse_args(["--embedbench-update-baseline=new"]).embedbench_update_baseline == (
        "new"
    )


def test_the_ray_options_make_the_ray_settings(tmp_path: Path) -> None:
    from pytest_embedbench.distributed import RaySettings

    options = _resolve(
        tmp_path,
        {"embedbench_ray_workers": 8, "embedbench_ray_gpus_per_worker": 0.5},
        embedbench_ray="ray://head:10001",
        embedbench_ray_cpus_per_worker="4",
        embedbench_ray_batch_size="256",
        embedbench_ray_workers="3",  # the command line's 8 wins
    )
    assert options.ray_settings() == RaySettings(
        address="ray://head:10001",
        workers=8,
        cpus_per_worker=4.0,
        gpus_per_worker=0.5,
        batch_size=256,
    )
    # only the address: RaySettings' own defaults (2 workers, 1 CPU, no GPU, the model's batch)
    assert _resolve(tmp_path, embedbench_ray="local").ray_settings() == RaySettings("local")
    with pytest.raises(ConfigError, match="--embedbench-ray is not set"):
        Options().ray_settings()


def test_a_ray_setting_without_a_ray_address_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError,
        match=r"--embedbench-ray-workers = 4 has no effect without --embedbench-ray \(ini "
        r"embedbench_ray\)",
    ):
        _resolve(tmp_path, {"embedbench_ray_workers": 4})
    with pytest.raises(
        ConfigError, match=r"ini option embedbench_ray_gpus_per_worker = 1.0 has no effect"
    ):
        _resolve(tmp_path, embedbench_ray_gpus_per_worker="1")


def test_bad_ray_values_name_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"embedbench_ray_workers = '0': .*at least 1"):
        _resolve(tmp_path, embedbench_ray="auto", embedbench_ray_workers="0")
    for bad in ("-1", "nan", "inf", "one"):
        with pytest.raises(ConfigError, match=rf"embedbench_ray_cpus_per_worker = '{bad}'"):
            _resolve(tmp_path, embedbench_ray="auto", embedbench_ray_cpus_per_worker=bad)
    parser = argparse.ArgumentParser()
    spec = Options.spec("ray_gpus_per_worker")
    parser.add_argument(spec.flag, **spec.addoption_kwargs())
    assert parser.parse_args([spec.flag, "0.25"]).embedbench_ray_gpus_per_worker == 0.25
    with pytest.raises(SystemExit):
        parser.parse_args([spec.flag, "-2"])


def test_two_reports_given_one_file_are_an_error(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError,
        match=r"--embedbench-json and --embedbench-md both write .*same\.json: one would "
        r"overwrite the other",
    ):
        _resolve(tmp_path, {"embedbench_json": "same.json", "embedbench_md": "same.json"})
    # from ini and the command line alike: the ini's path is relative to the ini file's folder
    with pytest.raises(ConfigError, match=r"--embedbench-html and --embedbench-csv both write"):
        _resolve(
            tmp_path,
            {"embedbench_html": str(tmp_path / "ini" / "out" / "results.csv")},
            embedbench_csv="out",
        )
    ok = _resolve(tmp_path, {"embedbench_json": "r.json", "embedbench_md": "r.md"})
    assert ok.json_path != ok.md_path


def test_a_report_on_the_index_csv_is_an_error(tmp_path: Path) -> None:
    # --embedbench-csv writes indexes.csv too when a test has an index axis (issue 35)
    assert "indexes.csv" in Options.spec("csv_dir").help
    with pytest.raises(ConfigError, match=r"--embedbench-md and --embedbench-csv both write"):
        _resolve(
            tmp_path,
            {"embedbench_md": str(tmp_path / "ini" / "out" / "indexes.csv")},
            embedbench_csv="out",
        )


def test_the_indexes_option_splits_outside_parentheses_and_keeps_names(tmp_path: Path) -> None:
    pytest.importorskip("faiss", reason="the FAISS engine checks its parameters")
    from pytest_embedbench.config.options import parse_indexes_option

    parsed = parse_indexes_option(" exact, prod=faiss:hnsw(M=32, efSearch=16) ,")
    assert parsed == ("exact", "prod=faiss:hnsw(M=32,efSearch=16)")
    options = _resolve(tmp_path, embedbench_indexes="exact,faiss:ivf(nlist=4,nprobe=1)")
    assert options.indexes == ("exact", "faiss:ivf(nlist=4,nprobe=1)")
    assert options.configuration()["indexes"] == ["exact", "faiss:ivf(nlist=4,nprobe=1)"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "faiss:hnws",
            "--embedbench-indexes[0]: index 'faiss:hnws': engine 'faiss' has no kind "
            "'hnws'; did you mean 'hnsw'?",
        ),
        ("exact,exact", "--embedbench-indexes: index(es) ['exact'] appear more than once"),
        ("a=exact,a=faiss:flat", "index name(s) ['a'] appear more than once"),
        ("a b=exact", "index name 'a b': use letters, digits"),
        (" , ", "give comma-separated index specs"),
    ],
)
def test_a_bad_indexes_value_names_the_option(tmp_path: Path, value: str, message: str) -> None:
    pytest.importorskip("faiss", reason="the FAISS engine checks its parameters")
    from pytest_embedbench.config.options import parse_indexes_option

    with pytest.raises(argparse.ArgumentTypeError) as info:
        parse_indexes_option(value)
    assert message in str(info.value)
    with pytest.raises(ConfigError, match=r"ini option embedbench_indexes = "):
        _resolve(tmp_path, embedbench_indexes=value)


def test_the_storage_columns_take_their_threshold_names() -> None:
    from pytest_embedbench.config.options import parse_columns
    from pytest_embedbench.report.summary.columns import resolve_column

    assert parse_columns("bytes_per_doc,docs_per_s,cache_mb") == (
        "bytes_per_doc",
        "docs_per_s",
        "cache_mb",
    )
    assert resolve_column("bytes_per_doc") == resolve_column("bytes_per_document")
    assert resolve_column("docs_per_s") == resolve_column("documents_per_s")
    assert resolve_column("cache_mb").header == "cache MB"


def test_each_ini_key_is_named_after_its_flag() -> None:
    """The table names an option's ini key after its flag (``--embedbench-cache-dir``:
    ``embedbench_cache_dir``); --embedbench-update-baseline alone has none."""
    specs = option_specs()
    assert {name for name, spec in specs.items() if spec.ini is None} == {"update_baseline"}
    for spec in specs.values():
        assert spec.ini in (None, spec.flag.removeprefix("--").replace("-", "_")), spec.flag
    kinds = {name: spec.kind for name, spec in specs.items()}
    assert kinds["json_path"] == kinds["cache_dir"] == "path" and kinds["no_cache"] == "flag"
    assert specs["cache_dir"].metavar == "DIR" and specs["json_path"].metavar == "PATH"
