"""The fiction corpus below the studies (Kirchenbauer et al. 2026, Sec. 3 and App. C): its schema
(:mod:`~knowlab.fiction.schema`), the loaders of the pipeline output and the released dataset
(:mod:`~knowlab.fiction.release`), the corpus as configured (:mod:`~knowlab.fiction.corpus`) and its
train/validation splits with the display names of the runs fine-tuned on them (:mod:`~knowlab.fiction.splits`).

FictionalQA, SORT on the FictionalQA documents, grounding's fiction-derived set and the generation
pipeline all read this corpus, so it imports only :mod:`knowlab.core` and no study imports another
(``tests/test_imports.py``).  FictionalQA's own corpus parts (MCQ distractors, real-world questions)
are :mod:`knowlab.fictionalqa.corpus`.
"""
