"""Shared mechanisms: file I/O and provenance, keyed RNG, the scoring engine, the trainer and mixture sampler, statistics, plotting, retrieval, tables, LLM backends."""
