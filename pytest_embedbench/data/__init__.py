"""Data: what is retrieved and judged, before any model sees it.

datasets/ (RetrievalDataset, BEIR folders, eval sets), ingest and docformats (one reader of a
documents folder: txt, md, pdf, docx, html), chunking/ (settings, token counters, splitters),
stress/ (the transforms of queries and haystacks the stress workloads run).
"""
