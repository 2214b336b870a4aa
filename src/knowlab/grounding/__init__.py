"""Grounding (Lee et al. 2024, "How Well Do Large Language Models Truly Ground?"): items, distractors,
generation, atomic facts, the evaluator M_eval and precision/recall/F1 of atomic facts."""
