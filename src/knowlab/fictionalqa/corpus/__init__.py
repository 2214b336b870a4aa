"""FictionalQA's own items beside the fiction corpus (:mod:`knowlab.fiction`): the multiple-choice questions
built from its Q&A (:mod:`~knowlab.fictionalqa.corpus.mcq`) and the real-world questions of the control
(:mod:`~knowlab.fictionalqa.corpus.real_qa`)."""
