"""The stress transforms: noise (typos, case, truncation, shuffle, paraphrase of the
queries), needle (a fact at a depth of a long haystack), chunks (the same documents re-chunked at
each size). The workloads that run them are evaluation/workloads.py."""
