"""LLM request backends (OpenAI-compatible chat, Batch API, local transformers, replay) and the content-addressed request cache."""
