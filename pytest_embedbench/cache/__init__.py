"""The embedding cache: a SQLite index beside append-only segment files."""
