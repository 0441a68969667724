"""Reports: summary/ computes every figure a person reads, once; writers/ only format it
(terminal, CSV and Markdown, HTML, the GitHub texts, JSON); artifacts writes the files."""
