"""The fiction corpus in the FictionalQA release schema, webtext, and MCQ construction."""
