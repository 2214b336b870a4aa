"""The fiction generation pipeline (FictionalQA, Kirchenbauer et al. 2026, Sec. 3 and App. C): requests,
backends, the request cache, stages, parsers and annotation."""
