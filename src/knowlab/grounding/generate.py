"""Response generation for the grounding study: the input format, prompt fitting and the response records.

Sources (paper "How Well Do Large Language Models Truly Ground?", seed 002):

- *Input format* (App. C.2, Fig. 12): an instruction, ``[context]`` and the contexts,
  ``[question]`` and the question, a reminder that repeats the instruction, then ``[answer]``.
  :data:`INSTRUCTION` and :data:`REMINDER` say what Fig. 12 says in this project's own words;
  :func:`build_prompt` lays the parts out as Fig. 12 does (parts separated by blank lines,
  each context verbatim, contexts separated by blank lines).  For chat models the prompt is
  the user turn of the model's own chat template (:func:`knowlab.core.llm.local.render_chat`),
  as the paper changed the format to TULU's training format (App. C.2).
- *Inference configuration* (App. C.3): inputs and outputs limited to 2048 tokens
  (``max_input_tokens``, ``max_new_tokens``; the paper's outputs rarely approach the limit, the
  default here is 256 new tokens); decoding is greedy by default, sampling (the paper:
  top-k 10 for Llama-2/Vicuna/Falcon, temperature 0.6 for TULU) is configurable.  The paper's
  4-bit quantisation is not reproduced (models run in the dtype they are loaded in).

Truncation rule (:func:`fit_prompt`): the template (instruction, markers, question, reminder,
chat-template tokens) is never cut.  When the rendered prompt is longer than
``max_input_tokens``, context tokens are dropped from the end of the last context backwards
(then from the end of the context before it, ...), token-exactly, until the prompt fits; the
number of dropped context tokens is recorded.  Decoding is the shared local generation
mechanism, :func:`knowlab.core.llm.local.generate_texts` (batched, seeded sampling), which
only checks that its inputs fit and raises otherwise.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from knowlab.core.io import DataError
from knowlab.core.llm.local import count_tokens, generate_texts, model_name, render_chat

# Paper Fig. 12 (App. C.2), reworded; the bracketed markers are the paper's.
INSTRUCTION = (
    "Write an [answer] to the [question] below in full sentences. Use all the information in the [context] "
    "that is needed to answer it, and use no information that is not in the [context]. State every piece of "
    "information from the [context] that you use in your answer."
)
REMINDER = (
    "Remember: write the [answer] to the [question] in full sentences, using all the information from the "
    "[context] that is needed and only information from the [context]. Also state every piece of information "
    "from the [context] that you use."
)
CONTEXT_MARKER = "[context]"
QUESTION_MARKER = "[question]"
ANSWER_MARKER = "[answer]"
SEPARATOR = "\n\n"  # between the parts of the prompt and between contexts (Fig. 12)

#: defaults of :func:`generate_responses` (paper App. C.3: 2048-token inputs; greedy decoding here)
DEFAULT_CONFIG: dict[str, Any] = {
    "max_new_tokens": 256,
    "max_input_tokens": 2048,
    "do_sample": False,
    "temperature": 1.0,
    "top_k": None,
    "top_p": None,
    "seed": 0,
    "batch_size": 8,
    "system_prompt": None,
}


def build_prompt(question: str, contexts: Sequence[str]) -> str:
    """The paper's input format (App. C.2, Fig. 12) for one question, as plain text.

    Layout (parts separated by a blank line)::

        INSTRUCTION
        [context]
        <context 1>
        <context 2> ...          (each verbatim, separated by a blank line)
        [question]
        <question>
        REMINDER
        [answer]

    With no contexts the ``[context]`` part is empty (the marker stays).
    """
    parts = [INSTRUCTION, CONTEXT_MARKER, *contexts, QUESTION_MARKER, question, REMINDER, ANSWER_MARKER]
    return SEPARATOR.join(parts)


def fit_prompt(
    tokenizer,
    question: str,
    contexts: Sequence[str],
    max_input_tokens: int,
    render: Callable[[str], str] | None = None,
) -> tuple[str, int]:
    """The rendered prompt of :func:`build_prompt`, cut on the contexts to fit ``max_input_tokens``.

    Truncation rule: instruction, question, reminder and the chat template are kept whole;
    the contexts, each tokenized alone, are cut token-exactly from the end of the last
    context backwards (a context cut to nothing is left out) to the longest prefix of context
    tokens for which ``render(build_prompt(question, kept_contexts))`` is at most
    ``max_input_tokens`` tokens long (found by bisection, each candidate tokenized in full;
    a context is cut at the character end of its last kept token).

    Args:
        render: prompt -> the text the model reads; default
            ``knowlab.core.llm.local.render_chat(tokenizer, prompt)``.

    Returns:
        ``(text, n_dropped_tokens)``: the rendered prompt and the number of context tokens
        left out (0 when everything fits).

    Raises:
        ValueError: the prompt does not fit even with all contexts left out.
    """
    if render is None:
        render = lambda prompt: render_chat(tokenizer, prompt)

    def rendered(kept: Sequence[str]) -> str:
        return render(build_prompt(question, kept))

    text = rendered(contexts)
    if count_tokens(tokenizer, text) <= max_input_tokens:
        return text, 0
    ends: list[tuple[int, int]] = []  # (context index, character end) of every context token, in order
    for index, context in enumerate(contexts):
        offsets = tokenizer(context, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        ends.extend((index, end) for _, end in offsets)

    def cut(n_kept: int) -> list[str]:
        if n_kept == 0:
            return []
        index, end = ends[n_kept - 1]
        return [*contexts[:index], contexts[index][:end]]

    def fits(n_kept: int) -> bool:
        return count_tokens(tokenizer, rendered(cut(n_kept))) <= max_input_tokens

    if not fits(0):
        raise ValueError(
            f"the prompt template and question alone exceed max_input_tokens={max_input_tokens} "
            f"(question: {question[:80]!r})"
        )
    low, high = 0, len(ends)  # fits(low); not fits(high)
    while high - low > 1:
        middle = (low + high) // 2
        if fits(middle):
            low = middle
        else:
            high = middle
    return rendered(cut(low)), len(ends) - low


def response_id(model: str, prompt: str, params: Mapping[str, Any]) -> str:
    """Identifier of a generation request: first 16 hex digits of sha256 of JSON ``{model, prompt, params}``.

    ``params`` are the generation parameters (``max_new_tokens``, ``do_sample``, ``temperature``,
    ``top_k``, ``top_p``, ``seed``); JSON keys are sorted, so the id does not depend on order.
    """
    payload = json.dumps({"model": model, "prompt": prompt, "params": dict(params)}, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def generate_responses(
    model,
    tokenizer,
    items_with_contexts: Sequence[Mapping[str, Any]],
    cfg: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Generate a response for every record (paper Sec. 4 / App. C.2-C.3).

    Args:
        items_with_contexts: records with ``question`` (str) and ``contexts`` (list[str],
            already packed: gold contexts, with distractors where the condition has them);
            other fields are copied to the output.
        cfg: keys of :data:`DEFAULT_CONFIG` (missing keys take the defaults): ``max_new_tokens``,
            ``max_input_tokens``, ``do_sample``, ``temperature``, ``top_k``, ``top_p``,
            ``seed``, ``batch_size``, ``system_prompt``.

    Decoding: :func:`knowlab.core.llm.local.generate_texts` with the config's parameters.

    Returns:
        per record, in order, a copy with ``prompt`` (the rendered text the model read, after
        :func:`fit_prompt`), ``response``, ``n_input_tokens``, ``n_truncated_tokens`` (context
        tokens dropped to fit), ``n_new_tokens``, ``finished`` and ``response_id``
        (:func:`response_id` of the model name, the prompt and the generation parameters).

    Raises:
        DataError: a record without a string ``question`` or a list ``contexts`` (the message
            names its ``item_id`` or index).
        ValueError: an unknown cfg key, or a template + question longer than ``max_input_tokens``.
    """
    unknown = set(cfg or {}) - set(DEFAULT_CONFIG)
    if unknown:
        raise ValueError(f"unknown generation config keys {sorted(unknown)}; known: {sorted(DEFAULT_CONFIG)}")
    conf = {**DEFAULT_CONFIG, **(cfg or {})}
    prompts, dropped = [], []
    for index, record in enumerate(items_with_contexts):
        name = record.get("item_id", f"record {index}")
        if not isinstance(record.get("question"), str) or not isinstance(record.get("contexts"), list):
            raise DataError(f"{name}: a generation record needs a string 'question' and a list 'contexts'")
        text, n_dropped = fit_prompt(
            tokenizer,
            record["question"],
            record["contexts"],
            conf["max_input_tokens"],
            lambda prompt: render_chat(tokenizer, prompt, conf["system_prompt"]),
        )
        prompts.append(text)
        dropped.append(n_dropped)
    params = {key: conf[key] for key in ("max_new_tokens", "do_sample", "temperature", "top_k", "top_p", "seed")}
    outputs = generate_texts(
        model,
        tokenizer,
        prompts,
        max_input_tokens=conf["max_input_tokens"],
        batch_size=conf["batch_size"],
        **params,
    )
    name = model_name(model)
    return [
        {
            **record,
            "prompt": prompt,
            "response": out["text"],
            "n_input_tokens": out["n_input_tokens"],
            "n_truncated_tokens": n_dropped,
            "n_new_tokens": out["n_new_tokens"],
            "finished": out["finished"],
            "response_id": response_id(name, prompt, params),
        }
        for record, prompt, n_dropped, out in zip(items_with_contexts, prompts, dropped, outputs, strict=True)
    ]
