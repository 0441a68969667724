"""The writers: each formats a Summary and decides nothing (terminal, tabular: the CSV files,
markdown, html/, ci: job summary and PR comment, json_report, stress and index tables, text)."""
