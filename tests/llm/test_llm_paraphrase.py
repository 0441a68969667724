"""``noise:paraphrase`` with the chat model embedbench.yaml names (``paraphrase:``), a real
small model (SmolLM2-135M under llama-cpp-python's server): every query rewritten or kept with a
counted reason, the paraphrases cached (a re-run calls no model), the hook still an override."""

from __future__ import annotations

import json

import pytest

from ..plugin.conftest import CONFTEST, QUERIES, write_tiny
from .conftest import LocalLLM

pytestmark = [pytest.mark.llm, pytest.mark.slow]

TEST = """
import pytest


@pytest.mark.embedbench(models=["bm25"], dataset="tiny", stress=["noise:paraphrase"])
def test_para(retrieval):
    clean = retrieval.clean.query_texts
    noisy = retrieval.query_texts
    assert set(noisy) == set(clean)
    assert all(text.strip() for text in noisy.values())
"""


@pytest.fixture
def project(pytester: pytest.Pytester, local_llm: LocalLLM) -> pytest.Pytester:
    write_tiny(pytester)
    pytester.makefile(
        ".yaml",
        embedbench=f"""
datasets:
  tiny: {{path: data/tiny}}
models: [bm25]
paraphrase:
  model: {local_llm.spec}
  host: {local_llm.base_url}
  seed: 3
  num_predict: 48
""",
    )
    pytester.makeini("[pytest]\nembedbench_cache_dir = .cache-embedbench\n")
    pytester.makepyfile(test_para=TEST)
    return pytester


def _counts(pytester: pytest.Pytester) -> dict[str, object]:
    report = json.loads((pytester.path / "report.json").read_text())
    (test,) = [t for t in report["tests"] if "paraphrase" in t["nodeid"]]
    return dict(test["result"]["stress"]["info"]["paraphrase"])


def test_paraphrase_noise_with_the_configured_chat_model(project: pytest.Pytester) -> None:
    first = project.runpytest_subprocess("--embedbench-json=report.json")
    first.assert_outcomes(passed=1)
    counts = _counts(project)
    assert counts["model"] == "openai:smollm2"
    assert counts["asked"] == len(QUERIES)
    assert counts["requested"] >= len(QUERIES) and not counts.get("cached")
    rejected = {
        k: v
        for k, v in counts.items()
        if k in ("empty", "identical", "copies_answer", "unreadable")
    }
    assert counts.get("kept", 0) + sum(rejected.values()) == len(QUERIES), counts  # type: ignore[arg-type]
    assert list((project.path / ".cache-embedbench" / "paraphrases").rglob("*.json"))
    # a re-run reads every paraphrase from the cache: no model call, the same counts
    second = project.runpytest_subprocess("--embedbench-json=report.json")
    second.assert_outcomes(passed=1)
    again = _counts(project)
    assert again["cached"] == len(QUERIES) and not again.get("requested")
    assert {k: v for k, v in again.items() if k not in ("cached", "requested")} == {
        k: v for k, v in counts.items() if k not in ("cached", "requested")
    }


def test_the_hook_still_overrides_the_configured_model(project: pytest.Pytester) -> None:
    project.makeconftest(
        CONFTEST
        + """

def pytest_embedbench_paraphraser(config):
    return lambda text: "please " + text
"""
    )
    project.makepyfile(
        test_para="""
import pytest


@pytest.mark.embedbench(models=["bm25"], dataset="tiny", stress=["noise:paraphrase"])
def test_para(retrieval):
    assert retrieval.query_texts["q2"] == "please export data csv"
"""
    )
    project.runpytest_subprocess().assert_outcomes(passed=1)
    assert not (project.path / ".cache-embedbench" / "paraphrases").exists()
