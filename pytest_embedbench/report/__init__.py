"""Outputs: the terminal comparison table and the JSON report."""
