"""The typed Summary of a run, computed once: run (Summary, rows, comparisons, gates, notices),
values (the one rule for best, significant and verdict), columns (the figures a table shows),
recommend (tiers and picks), stress (stress grids, cut-offs), indexes (index rows). Imports
nothing of the writers."""
