"""LLM requests and backends (OpenAI-compatible chat, Batch API, local transformers, replay), the
content-addressed request cache, and local transformers generation (:mod:`knowlab.core.llm.local`)."""
