"""Evaluation suites of one checkpoint, item-level (Kirchenbauer et al. 2026, Sec. 4-5).

Each suite yields one row per item; all share the columns ``run, step,
checkpoint, suite, item_id``:

- ``fiction_doc`` (every fiction document, train and val alike; the split is
  joined downstream by ``item_id``): ``nll_sum`` (nats), ``n_tokens``, ``loss``
  (= nll_sum / n_tokens, the mean next-token negative log-likelihood of the
  document after the prefix token), and ``em<n>`` for each ``n`` of
  ``em_tokens`` (paper: 10, 25, 50) = verbatim exact match of the document's last
  ``n`` tokens *as the paper's code measures it*: teacher-forced, the argmax
  prediction at every position of that suffix equals the document's token (no
  free-running generation).  A document shorter than ``n`` tokens gets NaN.
- ``fictsheet_doc`` (every fictsheet, ``item_id`` = its ``event_id``): the same
  columns; the training and validation texts of the Fictsheets split (Fig. 5).
- ``webtext`` (held-out webtext paragraphs): ``nll_sum``, ``n_tokens``, ``loss``.
- ``fict_qa_nll`` (every fictional question): nll(answer | question) as in Kirchenbauer et al. 2026
  Sec. 4.2 / Fig. 6: context = ``qa_template`` filled with the question (default
  ``"Question: {question}\\n\\nAnswer:"``), continuation = ``" " + natural_answer``;
  ``nll_sum`` (nats), ``n_tokens`` and ``loss`` = per-token nll of the answer.
  Boundary: the separating space belongs to the continuation, and the answer's
  tokens are those of ``context + continuation`` after the context's tokens
  (harness pairing).  With byte-level BPE tokenizers (SmolLM2, Llama 3) the space
  merges into the first answer token ("ĠBr"), so no token spans the boundary;
  ``tests/fictionalqa/test_boundary.py`` checks this for every shipped question with the real
  SmolLM2 tokenizer.
- ``real_qa_nll`` (real-world questions: the shipped set or TriviaQA, App. C.7):
  the same nll(answer | question) with the same template, on ``answer``.
- ``mcq<k>``: context = the template filled with the question (default
  ``"Question: {question}\\nAnswer:"``), continuation = ``" " + choice``
  (lm-evaluation-harness ``target_delimiter``).  ``choice_loglik`` = summed
  log-likelihood per choice; ``acc`` = argmax of it is gold; ``acc_norm`` =
  argmax of loglik / ``len(choice)`` characters is gold (harness definitions);
  ``gold_logprob_norm`` = log softmax over the choices' logliks at the gold choice.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from knowlab.core.scoring import loglikelihood, prefix_token_id, score_token_ids
from knowlab.fiction.splits import scored_documents
from knowlab.fictionalqa.settings import DOCUMENT_SUITES

log = logging.getLogger(__name__)

MCQ_TEMPLATE = "Question: {question}\nAnswer:"
QA_TEMPLATE = "Question: {question}\n\nAnswer:"


def document_rows(model, tokenizer, items: Sequence[tuple[str, str]], em_tokens: Sequence[int], batch_size: int):
    """Loss (and ``em<n>``, exact match of the last ``n`` tokens, for each ``n`` in ``em_tokens``)
    of each ``(item_id, text)``."""
    pairs = [
        ([prefix_token_id(tokenizer)], tokenizer(text, add_special_tokens=False)["input_ids"]) for _, text in items
    ]
    scores = score_token_ids(model, pairs, batch_size=batch_size, desc="documents")
    rows = []
    for (item_id, _), s in zip(items, scores):
        nll = -float(s.logprobs.sum())
        row: dict[str, Any] = {
            "item_id": item_id,
            "nll_sum": nll,
            "n_tokens": len(s.logprobs),
            "loss": nll / len(s.logprobs),
        }
        for n in em_tokens:
            row[f"em{n}"] = float(s.greedy[-n:].all()) if len(s.greedy) >= n else math.nan
        rows.append(row)
    return rows


def qa_nll_rows(
    model, tokenizer, questions: Sequence[dict[str, Any]], answer_field: str, template: str, batch_size: int
):
    """nll(answer | question) of each Q&A record, answer in ``answer_field`` (see module docstring)."""
    requests = [(template.format(question=q["question"]), " " + q[answer_field].strip()) for q in questions]
    scored = loglikelihood(model, tokenizer, requests, batch_size=batch_size, desc="qa nll")
    return [
        {"item_id": q["question_id"], "nll_sum": -ll, "n_tokens": n, "loss": -ll / n}
        for q, (ll, n, _) in zip(questions, scored)
    ]


def mcq_rows(model, tokenizer, items: Sequence[dict[str, Any]], template: str, batch_size: int):
    """MCQ scores of each item (``question_id``, ``question``, ``choices``, ``gold``)."""
    requests, owners = [], []
    for k, item in enumerate(items):
        context = template.format(question=item["question"])
        for choice in item["choices"]:
            requests.append((context, " " + choice))
            owners.append(k)
    scored = loglikelihood(model, tokenizer, requests, batch_size=batch_size, desc="mcq")
    per_item: list[list[float]] = [[] for _ in items]
    for k, (ll, _, _) in zip(owners, scored):
        per_item[k].append(ll)
    rows = []
    for item, logliks in zip(items, per_item):
        ll = np.array(logliks)
        lengths = np.array([len(c) for c in item["choices"]], dtype=float)
        pred, pred_norm = int(ll.argmax()), int((ll / lengths).argmax())
        gold = int(item["gold"])
        rows.append(
            {
                "item_id": item["question_id"],
                "pred": pred,
                "pred_norm": pred_norm,
                "gold": gold,
                "acc": float(pred == gold),
                "acc_norm": float(pred_norm == gold),
                "gold_logprob_norm": float(ll[gold] - np.logaddexp.reduce(ll)),
                "choice_loglik": ll.tolist(),
            }
        )
    return rows


def evaluate_checkpoint(
    model,
    tokenizer,
    *,
    fictions: Sequence[dict[str, Any]],
    fictsheets: Sequence[dict[str, Any]],
    webtext: Sequence[dict[str, Any]],
    fict_qa: Sequence[dict[str, Any]],
    real_qa: Sequence[dict[str, Any]],
    mcq: Sequence[dict[str, Any]],
    em_tokens: Sequence[int],
    batch_size: int,
    mcq_template: str = MCQ_TEMPLATE,
    qa_template: str = QA_TEMPLATE,
    max_documents: int | None = None,
    documents: Sequence[str] = DOCUMENT_SUITES,
) -> pd.DataFrame:
    """All suites on one loaded model; returns the item-level table (see module docstring).

    ``max_documents``: score the loss and exact match of that many fiction documents
    (:func:`knowlab.fiction.splits.scored_documents`; None: all).  ``documents``: the
    document-loss suites to score (:func:`knowlab.fictionalqa.settings.document_suites`).  Every fictsheet, webtext
    paragraph and question is scored whatever it is.
    """
    frames = []

    def add(suite: str, rows: list[dict[str, Any]]) -> None:
        frame = pd.DataFrame(rows).assign(suite=suite)
        means = frame.drop(
            columns=["item_id", "suite", "nll_sum", "n_tokens", "pred", "pred_norm", "gold"], errors="ignore"
        )
        summary = ", ".join(f"{c} {frame[c].mean():.4f}" for c in means.columns if frame[c].dtype.kind == "f")
        log.info("%s (%d items): mean %s", suite, len(frame), summary)
        frames.append(frame)

    texts = {
        "fiction_doc": [(r["fiction_id"], r["fiction"]) for r in scored_documents(fictions, max_documents)],
        "fictsheet_doc": [(r["event_id"], r["fictsheet"]) for r in fictsheets],
    }
    for suite in documents:
        add(suite, document_rows(model, tokenizer, texts[suite], em_tokens, batch_size))
    add("webtext", document_rows(model, tokenizer, [(r["webtext_id"], r["text"]) for r in webtext], (), batch_size))
    for suite, questions, field in (("fict_qa_nll", fict_qa, "natural_answer"), ("real_qa_nll", real_qa, "answer")):
        add(suite, qa_nll_rows(model, tokenizer, questions, field, qa_template, batch_size))
    # every MCQ suite in one call: the choices MCQ-4 shares with MCQ-10 are scored once
    rows = mcq_rows(model, tokenizer, mcq, mcq_template, batch_size) if mcq else []
    for n_choices in sorted({int(item["n_choices"]) for item in mcq}):
        add(f"mcq{n_choices}", [row for row, item in zip(rows, mcq) if int(item["n_choices"]) == n_choices])
    table = pd.concat(frames, ignore_index=True)
    first = ["suite", "item_id"]
    return table[first + [c for c in table.columns if c not in first]]
