"""Typed records and their serial form, read by the floors above.

serial (typed dataclasses to JSON data and back), resultdata (a result as a record keeps it,
GateOutcome), querydiff (per-query changes against a baseline or a reference).
"""
