"""A baseline entry whose values have the wrong type (checked as the typed entry is read, issue
42 item 7) is damaged like any other, named, kept apart and never raised."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_embedbench.baseline.store import BaselineEntry, BaselineFile


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ({"model": 5}, "BaselineEntry.model: expected a string or null, got the number 5"),
        ({"queries": "4"}, "BaselineEntry.queries: expected an integer or null, got the string"),
        (
            {"metrics": {"ndcg@10": {"value": "x"}}},
            "BaselineEntry.metrics['ndcg@10'].value: expected a number or null, got the string",
        ),
        ({"retrieved": {"q1": [3]}}, "BaselineEntry.retrieved['q1'][0]: expected a string"),
    ],
)
def test_an_entry_of_the_wrong_types_is_damaged_not_raised(
    tmp_path: Path, entry: dict, said: str
) -> None:
    path = tmp_path / "baseline.json"
    good = {"model": "bm25", "per_query": {"ndcg@10": {"q1": 1.0}}}
    path.write_text(
        json.dumps({"schema_version": 1, "entries": {"t.py::bad": entry, "t.py::good": good}})
    )
    found = BaselineFile.load(path)
    assert found.problem is None
    assert found.entries == {"t.py::good": BaselineEntry.from_dict(good)}
    assert found.damaged["t.py::bad"].startswith(
        f"{path}: the baseline entry 't.py::bad' is damaged: {said}"
    )
    assert found.damaged["t.py::bad"].endswith("re-record it with --embedbench-update-baseline")
