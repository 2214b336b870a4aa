"""SORT (sequence order recall task): Book-SORT-style items, prompts, scoring and retrieval."""
