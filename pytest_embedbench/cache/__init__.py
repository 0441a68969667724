"""The embedding cache: documents, and the queries of a scored pass, embedded once and stored,
safe when several processes share it.

Each namespace is the model's; each key the SHA-256 of the text that was embedded; no raw text
is stored. Each write (callers write once per provider batch) appends its vectors, as raw
float32 rows, to a segment file of the writer's own (``vectors-<16 hex>.f32``) and flushes it
to the disk; only then does one transaction of the SQLite index (``embeddings.sqlite3``, WAL)
record the batch, so an interrupted run keeps what it finished, readers never see half a batch,
and a crash between the two leaves bytes no row points to. The folder holds about 1.06x the raw
vector bytes at 384 dimensions. It is what diskcache does for large values, with one file per
writer rather than per value.

Rooms: :mod:`.store` (:class:`EmbeddingCache`: reads, writes and the faults of its files),
:mod:`.index` (the SQLite schema and the one way keys are found), :mod:`.segments` (the files
and the one way rows are read: sorted by file and offset, one ``preadv`` per run, their norms
and checksums taken as each arrives), :mod:`.migrate` (older schemas, on first open) and
:mod:`.compact` (space given back: files no batch points to, and files mostly dead).

Usage::

    cache = EmbeddingCache.open(True)            # default folder; False -> None; a path -> there
    vectors, missing = cache.get_many(namespace, keys, dim=384, unit_norm=True)
    cache.put_many(namespace, new_keys, new_vectors)

The default folder is ``$EMBEDBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/pytest-embedbench``,
else ``~/.cache/pytest-embedbench``.
"""

from .index import FILENAME, SCHEMA_VERSION, text_key
from .store import EmbeddingCache, default_cache_dir

__all__ = [
    "FILENAME",
    "SCHEMA_VERSION",
    "EmbeddingCache",
    "default_cache_dir",
    "text_key",
]
