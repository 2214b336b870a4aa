"""Pinned resources: base models and webtext, each verified by sha256 before use."""
