"""The three registries (providers, rerankers, index engines): how each finds a class by name,
what each says about a bad class or a broken entry point, and when each scans the entry
points. Real entry points: a ``*.dist-info`` folder on ``sys.path``, read by
``importlib.metadata`` as an installed package's would be."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_embedbench.core.exceptions import ConfigError, ProviderError, UnknownProviderError
from pytest_embedbench.models.providers import registry as providers
from pytest_embedbench.retrieval.indexes import registry as indexes
from pytest_embedbench.retrieval.rerank import registry as rerankers

#: the module the fake package's entry points name
MODULE = "embedbench_registry_probe"

SOURCE = """
from pytest_embedbench.models.providers.base import Provider
from pytest_embedbench.retrieval.indexes.registry import VectorIndex
from pytest_embedbench.retrieval.rerank.base import Reranker

LOADED = []


class ProbeProvider(Provider):
    name = "probe-provider"

    def load(self):
        pass

    def build(self, documents, *, cache=None, stats=None, progress=None):
        raise NotImplementedError


class ProbeReranker(Reranker):
    name = "probe-reranker"

    def score(self, query, documents):
        return [0.0 for _ in documents]


class ProbeIndex(VectorIndex):
    name = "probe-index"

    def build(self, vectors, ids):
        pass

    def search(self, queries, k):
        raise NotImplementedError


class NotAClass:
    name = "not-a-subclass"


def broken():
    raise RuntimeError("boom")


LOADED.append("module")
"""


def _install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, groups: dict[str, str]) -> None:
    """A package named ``embedbench-registry-probe`` whose entry points are ``groups``
    (group -> the lines of its section), found by ``importlib.metadata``."""
    (tmp_path / f"{MODULE}.py").write_text(SOURCE)
    dist = tmp_path / "embedbench_registry_probe-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: embedbench-registry-probe\nVersion: 1.0\n"
    )
    text = "".join(f"[{group}]\n{textwrap.dedent(lines)}\n" for group, lines in groups.items())
    (dist / "entry_points.txt").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))


@pytest.fixture(autouse=True)
def _clean_registries() -> Iterator[None]:
    """Each test leaves the three registries as it found them."""
    saved = [(d, dict(d)) for d in (providers.PROVIDERS, rerankers.RERANKERS, indexes.INDEXES)]
    yield
    for registry, before in saved:
        registry.clear()
        registry.update(before)
    sys.modules.pop(MODULE, None)


# -- a class without a usable name ----------------------------------------------------------


def test_a_class_without_a_name_is_refused_naming_the_characters() -> None:
    class Nameless:
        name = ""
        __name__ = "Nameless"

    class Colon:
        name = "a:b"

    class Slash:
        name = "a/b"

    with pytest.raises(ConfigError) as caught:
        providers.register_provider(Colon)  # type: ignore[arg-type]
    assert str(caught.value) == "provider class Colon needs a 'name' without ':'"
    with pytest.raises(ConfigError) as caught:
        rerankers.register_reranker(Slash)  # type: ignore[arg-type]
    assert str(caught.value) == "reranker class Slash needs a 'name' without ':@=/'"
    with pytest.raises(ConfigError) as caught:
        indexes.register_index(Colon)  # type: ignore[arg-type]
    assert str(caught.value) == "index class Colon needs a 'name' without ':'"
    for register in (
        providers.register_provider,
        rerankers.register_reranker,
        indexes.register_index,
    ):
        with pytest.raises(ConfigError, match="class Nameless needs a 'name'"):
            register(Nameless)  # type: ignore[arg-type]


# -- entry points ---------------------------------------------------------------------------


def test_provider_entry_points_load_on_an_unknown_name(tmp_path, monkeypatch) -> None:
    _install(
        tmp_path,
        monkeypatch,
        {providers.ENTRY_POINT_GROUP: f"probe = {MODULE}:ProbeProvider\n"},
    )
    assert (
        providers.provider_class("hf").__name__ == "SentenceTransformersProvider"
    )  # known: nothing scanned
    assert MODULE not in sys.modules
    assert providers.provider_class("probe").__name__ == "ProbeProvider"  # the entry's name
    assert MODULE in sys.modules
    with pytest.raises(UnknownProviderError) as caught:
        providers.provider_class("prob")
    assert str(caught.value).startswith("unknown provider 'prob'; did you mean 'probe'? ")


def test_reranker_entry_points_load_on_an_unknown_name(tmp_path, monkeypatch) -> None:
    _install(
        tmp_path,
        monkeypatch,
        {rerankers.RERANKER_ENTRY_POINT_GROUP: f"probe = {MODULE}:ProbeReranker\n"},
    )
    assert rerankers.reranker_class("hf-ce").__name__ == "CrossEncoderReranker"  # type: ignore[union-attr]
    assert MODULE not in sys.modules
    assert rerankers.reranker_class("probe").__name__ == "ProbeReranker"  # type: ignore[union-attr]
    assert rerankers.reranker_class("hf") is None  # not a family: the caller decides
    assert "probe" in rerankers.reranker_names()


#: the two registries that read every entry point of their group when a name is unknown,
#: each checked and its failure wrapped: (noun, group, a lookup of an unknown name, the base)
CHECKED = [
    ("provider", providers.ENTRY_POINT_GROUP, providers.provider_class, "Provider"),
    ("reranker", rerankers.RERANKER_ENTRY_POINT_GROUP, rerankers.reranker_class, "Reranker"),
]
#: a broken entry point's object -> what the error says after its name and value
BROKEN = [("NotAClass", "is not a {base} subclass"), ("Missing", "failed to load: ")]


@pytest.mark.parametrize(("noun", "group", "lookup", "base"), CHECKED)
@pytest.mark.parametrize(("target", "said"), BROKEN)
def test_a_broken_entry_point_is_a_provider_error_naming_it(
    tmp_path, monkeypatch, noun, group, lookup, base, target, said
) -> None:
    _install(tmp_path, monkeypatch, {group: f"bad = {MODULE}:{target}\n"})
    with pytest.raises(ProviderError) as caught:
        lookup("unknown")
    assert str(caught.value).startswith(
        f"{noun} entry point 'bad' ({MODULE}:{target}) {said.format(base=base)}"
    )
    if target == "Missing":  # the import's own error is kept as the cause
        assert isinstance(caught.value.__cause__, AttributeError)


def test_index_entry_points_load_one_by_name_and_unwrapped(tmp_path, monkeypatch) -> None:
    """The index registry loads only the entry point of the name asked for, registers the
    class under its own ``name``, and lets a load error through as it is."""
    _install(
        tmp_path,
        monkeypatch,
        {
            indexes.INDEX_ENTRY_POINT_GROUP: (
                f"probe-index = {MODULE}:ProbeIndex\n"
                f"broken = {MODULE}:broken_missing\n"
                f"alias = {MODULE}:ProbeIndex\n"
            )
        },
    )
    assert indexes.index_class("exact").__name__ == "ExactVectorIndex"
    assert MODULE not in sys.modules
    assert indexes.index_class("probe-index").__name__ == "ProbeIndex"  # broken: not loaded
    with pytest.raises(AttributeError):  # not wrapped
        indexes.index_class("broken")
    with pytest.raises(ConfigError) as caught:  # registered as 'probe-index', not 'alias'
        indexes.index_class("alias", "index 'alias'")
    assert str(caught.value).startswith("index 'alias': unknown index engine 'alias'")
    assert str(caught.value).endswith(
        "(or one registered in the 'pytest_embedbench.indexes' entry point group)"
    )


def test_an_index_entry_point_is_registered_unchecked(tmp_path, monkeypatch) -> None:
    """An index entry point's object is registered as it is (no subclass check): a class
    whose name has a ':' is refused by name, a function fails on its missing ``name``."""
    _install(
        tmp_path,
        monkeypatch,
        {indexes.INDEX_ENTRY_POINT_GROUP: f"odd = {MODULE}:broken\n"},
    )
    with pytest.raises(AttributeError, match="name"):
        indexes.index_class("odd")
