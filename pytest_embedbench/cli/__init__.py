"""``embedbench``, the command line: report, generate-evalset, stress, embed, providers.

One module per command family (:mod:`.main` parses and dispatches; :mod:`.generate`,
:mod:`.stress`, :mod:`.embed`); ``python -m pytest_embedbench.cli`` runs it as the script does.
"""

from __future__ import annotations

from .main import main

__all__ = ["main"]
