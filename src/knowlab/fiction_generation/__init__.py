"""The fiction generation pipeline (FictionalQA, seed 004, Sec. 3 and App. C): requests,
backends, the request cache, stages, parsers and annotation."""
