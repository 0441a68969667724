"""core.yamlfile: the strict YAML loader (issue 42 item 4) without a pytest run."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pytest_embedbench.config.project import load_config
from pytest_embedbench.core.exceptions import ConfigError
from pytest_embedbench.core.yamlfile import YamlProblem, load_yaml


def _bomb(levels: int = 9) -> str:
    """Billion laughs: each anchor is nine aliases of the one before (9**levels values)."""
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("key", ["k", "subset", "thresholds"])
def test_an_alias_bomb_is_refused_at_once(tmp_path: Path, key: str) -> None:
    path = tmp_path / "embedbench.yaml"
    target = {
        "k": "k: *l8\n",
        "subset": "datasets:\n  d: {path: d, subset: *l8}\n",
        "thresholds": "thresholds:\n  defaults: *l8\n",
    }[key]
    path.write_text(_bomb() + target)
    start = time.perf_counter()
    with pytest.raises(
        ConfigError, match=r"embedbench.yaml line \d+: the alias \*l\d .*alias bomb"
    ):
        load_config(path)
    assert time.perf_counter() - start < 0.5


def test_ordinary_anchors_and_merge_keys_still_work() -> None:
    text = (
        "base: &b {batch_size: 8, timeout: 5}\nhf:\n  <<: *b\n  timeout: 9\nk: &k [1, 10]\nm: *k\n"
    )
    assert load_yaml(text) == {
        "base": {"batch_size": 8, "timeout": 5},
        "hf": {"batch_size": 8, "timeout": 9},
        "k": [1, 10],
        "m": [1, 10],
    }


def test_an_alias_inside_its_own_value_is_a_loop() -> None:
    with pytest.raises(YamlProblem, match=r"line 1: the alias \*a refers to a value it is part"):
        load_yaml("a: &a [1, *a]\n")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "models: [bm25]\nk: 5\nmodels: [x]\n",
            "line 3: key 'models' given twice (first at line 1)",
        ),
        ("d:\n  t: {path: a, path: b}\n", "line 2: key 'path' given twice (first at line 2)"),
        ("k: 1\n'k': 2\n", "line 2: key 'k' given twice (first at line 1)"),
        ("models:\n\t- bm25\n", "line 2: a tab indents this line; YAML allows spaces only"),
        ("k:\t5\n", "line 1: a tab at column 3; YAML separates with spaces only"),
    ],
)
def test_duplicates_and_tabs_name_the_line(text: str, message: str) -> None:
    with pytest.raises(YamlProblem) as info:
        load_yaml(text)
    assert str(info.value).startswith(message)
