"""A local Ray for the Ray tests: two CPUs, no dashboard, started once per test module.

Ray's workers are separate processes: they import the providers the tests register
(``tests.helpers``) by module name, so the repository root goes on their ``PYTHONPATH``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
#: what the fast suite says when Ray is missing
SKIP_REASON = "Ray is not installed: pip install 'pytest-embedbench[ray]'"


def local_ray() -> Iterator[Any]:
    """Start a local Ray (num_cpus=2, no dashboard); yield the ray module; shut it down."""
    ray = pytest.importorskip("ray", reason=SKIP_REASON)
    pytest.importorskip("ray.data", reason=SKIP_REASON)
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), before) if p)
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    try:
        yield ray
    finally:
        ray.shutdown()
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before
