"""``config.load_config`` without a pytest run: a valid file, and every error names the file
and the key (issue 10 item 7)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_embedbench.config.project import ProjectConfig, find_config, load_config
from pytest_embedbench.core.exceptions import ConfigError
from pytest_embedbench.evaluation.metrics import DEFAULT_K, parse_cutoffs
from pytest_embedbench.models.providers import ModelSpec

VALID = """
datasets:
  support: support
  scifact:
    path: ../data/scifact
    split: dev
    docs: docs
    name: SciFact
    subset: {n_queries: 50, n_distractors: 1000, seed: 0}
models:
  - bm25
  - {spec: "hf:sentence-transformers/all-MiniLM-L6-v2", name: minilm, options: {batch_size: 8}}
providers:
  hf: {batch_size: 64}
  bm25: {k1: 1.2}
k: [100, 1, 10, 10]
thresholds:
  defaults: {ndcg@10: ">= 0.5"}
gate: {metrics: [ndcg@10], tolerance: 0.02}
reference: bm25
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "proj" / "embedbench.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_valid_file(tmp_path: Path) -> None:
    path = _write(tmp_path, VALID)
    cfg = load_config(path)
    base = path.parent
    assert cfg.path == path
    support, scifact = cfg.datasets["support"], cfg.datasets["scifact"]
    assert support.path == (base / "support").resolve() and support.split == "test"
    assert scifact.name == "SciFact" and scifact.split == "dev"
    assert scifact.path == (base / "../data/scifact").resolve()
    assert scifact.docs == (base / "docs").resolve()
    assert scifact.subset == {"n_queries": 50, "n_distractors": 1000, "seed": 0}
    assert [m.short_name for m in cfg.models] == ["bm25", "minilm"]
    assert cfg.models[1].options == {"batch_size": 8}
    assert cfg.k == (1, 10, 100)  # sorted, repeats dropped, nothing added
    assert cfg.gate == {"metrics": ["ndcg@10"], "tolerance": 0.02}
    assert cfg.reference == "bm25" and cfg.raw["reference"] == "bm25"
    # the model's own options win over its provider's
    merged = cfg.apply_provider_options(cfg.models[1])
    assert merged.options == {"batch_size": 8}
    assert cfg.apply_provider_options(ModelSpec("bm25")).options == {"k1": 1.2}


def test_an_empty_file_is_an_empty_config(tmp_path: Path) -> None:
    path = _write(tmp_path, "")
    assert load_config(path) == ProjectConfig(path=path)


def test_k_is_optional_and_a_single_cutoff_is_itself(tmp_path: Path) -> None:
    assert load_config(_write(tmp_path, "models: [bm25]\n")).k is None
    assert load_config(_write(tmp_path, "k: 5\n")).k == (5,)


def test_find_config_walks_up_to_the_rootdir(tmp_path: Path) -> None:
    path = _write(tmp_path, "")
    deep = path.parent / "a" / "b"
    deep.mkdir(parents=True)
    assert find_config(deep, tmp_path) == path
    assert find_config(deep, deep) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- a\n- b\n", "expected a mapping at the top, got list"),
        (
            "datasets: {}\nmodel: [bm25]\n",
            "unknown key(s) ['model'] (did you mean 'models'?); allowed: ",
        ),
        (
            "datasets: {s: {path: s, subset: {n_querys: 5}}}\n",
            "datasets.s.subset: {'n_querys': 5} (did you mean 'n_queries'?): allowed keys",
        ),
        (
            "models: [{spec: bm25, option: {}}]\n",
            "models[0]: unknown key(s) ['option'] (did you mean 'options'?); use spec",
        ),
        ("datasets: [a]\n", "datasets: expected a mapping of name to {path: ...}"),
        ("datasets: {s: {path: s, splt: dev}}\n", "datasets.s: unknown key(s) ['splt'] (did you"),
        ("datasets: {s: 3}\n", "datasets.s: expected a path or a mapping, got 3"),
        ("datasets: {s: {split: dev}}\n", "datasets.s: needs 'path'"),
        ("datasets: {s: {path: s, subset: {n: 1}}}\n", "datasets.s.subset: {'n': 1}: allowed"),
        (
            "datasets: {s: {path: s, subset: {seed: x}}}\n",
            "datasets.s.subset.seed: 'x' must be an integer >= 0",
        ),
        ("models: 3\n", "models: expected a list of model specs, got 3"),
        ("models: [3]\n", "models[0]: 3: give a spec string or {spec: ..., name: ...}"),
        ("models: [{spec: bm25, opts: {}}]\n", "models[0]: unknown key(s) ['opts']"),
        ("models: [bm-25]\n", "models[0]: 'bm-25': unknown provider 'bm-25'"),
        ("providers: {hf: 3}\n", "providers: expected a mapping of provider or model name"),
        ("k: []\n", "k: [] computes nothing: list the cut-offs"),
        ("k: [0, 10]\n", "k: [0, 10]: cut-offs must be integers >= 1"),
        ("k: ten\n", "k: 'ten': cut-offs must be integers >= 1"),
        ("k: [true]\n", "k: [True]: cut-offs must be integers >= 1"),
        ("thresholds: [a]\n", "thresholds: expected a mapping"),
        ("gate: [ndcg@10]\n", "gate: ['ndcg@10'] is not a mapping; write e.g. gate: {metrics:"),
        ("gate: {metrics: [ndgc@10]}\n", "gate.metrics: 'ndgc@10' is not a metric"),
        (
            "gate: {models: {bm25: {metrics: [recal@100]}}}\n",
            "gate.models.bm25.metrics: 'recal@100' is not a metric",
        ),
        ("reference: [bm25]\n", "reference: ['bm25'] must be a model short name"),
        ("plugins: 3\n", "plugins: 3: give a list of .py files or module names"),
        ("plugins: [nothere.py]\n", "plugins: 'nothere.py': no such file"),
        ("plugins: [no_such_module_xyz]\n", "plugins: 'no_such_module_xyz' failed to import"),
        # chunking (issue 12): the key, the value and the fix
        ("datasets: {s: {path: s, chunking: 512}}\n", "datasets.s.chunking: 512 is not chunking"),
        (
            "datasets: {s: {path: s, chunking: {sise: 512}}}\n",
            "datasets.s.chunking: unknown key(s) ['sise']; did you mean 'size'? Allowed:",
        ),
        (
            "datasets: {s: {path: s, chunking: {strategy: recursiv}}}\n",
            "datasets.s.chunking.strategy: 'recursiv' is not a chunking strategy; did you mean "
            "'recursive'? Choose one of ['fixed', 'recursive', 'sentence']",
        ),
        (
            "datasets: {s: {path: s, chunking: {unit: words}}}\n",
            "datasets.s.chunking.unit: 'words' is not a chunking unit. Choose one of ['chars', ",
        ),
        (
            "datasets: {s: {path: s, chunking: {size: 0}}}\n",
            "datasets.s.chunking.size: 0 must be a whole number >= 1 (the most characters a "
            "chunk holds), e.g. size: 800",
        ),
        (
            "datasets: {s: {path: s, chunking: {size: '512'}}}\n",
            "datasets.s.chunking.size: '512' must be a whole number >= 1",
        ),
        (
            "datasets: {s: {path: s, chunking: {size: 100, overlap: 100}}}\n",
            "datasets.s.chunking.overlap: 100 is not below size 100",
        ),
        (
            "datasets: {s: {path: s, chunking: {min_chunk_chars: -1}}}\n",
            "datasets.s.chunking.min_chunk_chars: -1 must be a whole number >= 0",
        ),
        (
            "datasets: {s: {path: s, chunking: {tokenizer: bert-base-uncased}}}\n",
            "datasets.s.chunking.tokenizer: 'bert-base-uncased' with unit 'chars': a tokenizer "
            "counts tokens; set unit: tokens, or drop tokenizer",
        ),
        (
            "datasets: {s: {path: s, extensions: [.pdf, .doc]}}\n",
            "datasets.s.extensions: '.doc' is not a document type the reader knows; did you mean",
        ),
        ("datasets: {s: {path: s, extensions: []}}\n", "datasets.s.extensions: []: give a"),
        (
            "datasets: {s: {path: s, evalset: 3}}\n",
            "datasets.s.evalset: 3: give the eval-set .jsonl file's path",
        ),
        (
            "datasets: {s: {path: s, docs: d, evalset: e.jsonl}}\n",
            "datasets.s: both 'docs' ('d') and 'evalset' ('e.jsonl'): with 'evalset', 'path' is "
            "the documents folder; drop 'docs'",
        ),
    ],
)
def test_each_error_names_the_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: "), info.value
    assert message in str(info.value)


def test_bad_yaml_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "models: [bm25]\nk: [1, 5\n")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))} line \d+: not valid YAML"):
        load_config(path)


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "embedbench.yaml")


# -- the one validator of k -------------------------------------------------------------------


def test_parse_cutoffs() -> None:
    assert parse_cutoffs(None) == DEFAULT_K == (1, 5, 10, 100)
    assert parse_cutoffs(10) == (10,)
    assert parse_cutoffs((100, 1, 1)) == (1, 100)
    for bad in (0, -1, True, "10", [1.5], {"k": 1}, [10, None]):
        with pytest.raises(ConfigError, match=r"^where: .*cut-offs must be integers >= 1"):
            parse_cutoffs(bad, "where")
    with pytest.raises(ConfigError, match=r"^where: \[\] computes nothing"):
        parse_cutoffs([], "where")


def test_a_chunked_dataset_of_documents_and_an_evalset(tmp_path: Path) -> None:
    from pytest_embedbench.data.chunking import ChunkingSettings

    path = _write(
        tmp_path,
        "datasets:\n  manuals:\n    path: manuals/\n    evalset: evalset.jsonl\n"
        "    chunking: {strategy: recursive, size: 512, unit: tokens, overlap: 64,"
        " min_chunk_chars: 80}\n    extensions: [PDF, .docx, html]\n"
        "  plain: {path: support, chunking: true}\n",
    )
    cfg = load_config(path)
    entry = cfg.datasets["manuals"]
    assert entry.path == path.parent / "evalset.jsonl"
    assert entry.docs == path.parent / "manuals"
    assert entry.chunking == ChunkingSettings(
        strategy="recursive", size=512, unit="tokens", overlap=64, min_chunk_chars=80
    )
    assert entry.extensions == (".pdf", ".docx", ".html")
    assert cfg.datasets["plain"].chunking == ChunkingSettings()
    assert cfg.datasets["plain"].extensions is None


def test_the_hint_names_each_close_key_when_several_are_unknown() -> None:
    from pytest_embedbench.core.exceptions import unknown_hint

    keys = ["datasets", "models", "thresholds"]
    assert unknown_hint(["modles"], keys) == " (did you mean 'models'?)"
    assert unknown_hint(["modles", "zzz", "tresholds"], keys) == (
        " ('modles': did you mean 'models'?; 'tresholds': did you mean 'thresholds'?)"
    )
    assert unknown_hint(["zzz"], keys) == ""
