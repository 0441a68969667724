"""data.stress."""
